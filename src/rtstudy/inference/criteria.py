"""Every criterion a verdict applies, with when it was set and what data existed then.

The one place the study's thresholds, margins, bands and metrics live: each
experiment's analysis reads its criteria here, the report prints this table
beside the date its data was measured (:func:`table`), and ``report/metrics.json``
carries each verdict's criterion in words. A criterion chosen or changed after
data existed is not a pre-registered one: its ``history`` says so, with the
commit, so a reader can weigh it. Changing a value or a rule means adding a
:class:`Change` (never editing an old one); tests/test_criteria.py checks every
commit and date against git.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

import pandas as pd


@dataclass(frozen=True)
class Change:
    """One commit that set or changed a criterion.

    Attributes
    ----------
    utc : str
        The commit's author date, ``YYYY-MM-DDTHH:MMZ`` (UTC).
    commit : str
        Its abbreviated hash.
    what : str
        What it set or changed, in words.
    """

    utc: str
    commit: str
    what: str

    @property
    def time(self) -> datetime:
        return datetime.strptime(self.utc, "%Y-%m-%dT%H:%MZ").replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class Criterion:
    """A threshold, margin, band or metric a verdict applies.

    Attributes
    ----------
    name : str
        Its key (:data:`CRITERIA`).
    claim : str
        What it decides: ``H1`` … ``H4``, ``H2 control``, an experiment's prose
        (``E1``, ``E2``), ``drift`` or ``every claim``.
    value : object
        The number (or band) the code applies; None for a rule without a number.
    unit : str
        Its unit (``ms/ms``, ``fraction``, ``×``, ``ns``, ``runs``).
    rule : str
        The rule as it stands, in words.
    history : tuple of Change
        Oldest first; the last one set the rule as it stands.
    """

    name: str
    claim: str
    value: object
    unit: str
    rule: str
    history: tuple[Change, ...]

    @property
    def set(self) -> Change:
        """The change that made the criterion what it is now."""
        return self.history[-1]


# The first dataset recorded in the repository (the default study): a criterion set after it
# may have been chosen knowing what the data looked like.
FIRST_DATA = Change("2026-11-22T14:43Z", "1f76049", "the full default study, the first data "
                    "recorded in the repository")

CRITERIA: dict[str, Criterion] = {c.name: c for c in (
    Criterion(
        "min_runs", "every claim", 3, "runs",
        "below this many independent runs of a condition no CI is given and no verdict rests on "
        "it (not settled); at 3 runs a t-interval has 2 degrees of freedom",
        (Change("2026-11-22T15:00Z", "be5726b", "E1's whiskers: the range below 3 repetitions, "
                "not a CI"),
         Change("2026-11-23T15:04Z", "3b9899f", "MIN_RUNS = 3: no CI and no verdict below 3 "
                "runs, every CI over runs"))),
    Criterion(
        "h1_default_min_slope", "H1", 0.8, "ms/ms",
        "the default buffer couples: the whole CI of its max-latency slope at or above this "
        "(the CI's lower bound, not the point estimate); the whole CI below it refutes",
        (Change("2026-11-21T19:55Z", "254e3b0", "slope >= 0.8 with its CI above 0, before any "
                "data was recorded"),
         Change("2026-11-23T15:19Z", "ff552fb", "each run one point of the fit (CI over runs), "
                "after data existed"),
         Change("2026-11-25T05:39Z", "9e591f9", "strict: the CI's lower bound must reach 0.8"))),
    Criterion(
        "h1_flat_margin", "H1", 0.1, "ms/ms",
        "the async buffer is flat: the whole CI of its slope within ±this (equivalence); "
        "wholly outside: not flat",
        (Change("2026-11-21T19:55Z", "254e3b0", "|slope| < 0.1 and a CI covering 0, before "
                "any data was recorded"),
         Change("2026-11-23T15:19Z", "ff552fb", "equivalence: the whole CI within ±0.1 "
                "(params.yaml, E1's flat_margin), after data existed"),
         Change("2026-11-25T05:39Z", "9e591f9", "moved here from params.yaml (a criterion, not a "
                "measuring parameter); value unchanged"))),
    Criterion(
        "h2_min_reduction", "H2 (std)", 0.5, "fraction",
        "the seeds' reading of H2, shown beside its verdict: every real-time policy cuts the "
        "frame-period std by at least this against normal_dedicated at the highest native load "
        "factor: the whole CI at or above it; the whole CI below refutes; a CI across it is "
        "not settled",
        (Change("2026-11-21T20:05Z", "c43831a", "reduction >= 0.5 with its CI above 0 against "
                "`normal`, before any data was recorded"),
         Change("2026-11-23T15:19Z", "ff552fb", "CI over runs (each run's std one value), after "
                "data existed"),
         Change("2026-11-23T20:36Z", "6f4dbcf", "baseline `normal_dedicated` (only the policy "
                "differs), after data existed"),
         Change("2026-11-25T05:39Z", "9e591f9", "strict: the CI's lower bound must reach 0.5"),
         Change("2026-11-27T18:01Z", "9ffb688", "a reading beside H2, no longer its verdict: H2 is "
                "judged on late frames (e2_late_ratio_margin), after data existed"))),
    Criterion(
        "h2_control_floor_multiple", "H2 control", 1.0, "× the floor's std",
        "without contention a real-time policy's jitter equals normal_dedicated's when the "
        "whole CI of the difference in mean per-run std lies within ± this many times the "
        "floor's frame-period std (cyclictest in the same sweep, the lowest load factor): a "
        "difference below what the operating system alone shows is none a policy could remove",
        (Change("2026-11-23T15:19Z", "ff552fb", "a fixed ±0.1 ms (params.yaml "
                "E2's null_margin_ms), after data existed; 76 % of the 0.132 ms "
                "baseline it was applied to"),
         Change("2026-11-25T05:39Z", "9e591f9", "the margin is the floor's std at the lowest "
                "load factor (about 0.010 ms on the reference host), after data existed"))),
    Criterion(
        "h3_close_band", "H3", (0.5, 2.0), "× the published figure",
        "the seed's method (whole app / N) at the seed's N, Greedy and EventBased ×1 (the "
        "published `--workers 1`) in both apps: close when the whole CI lies within this band "
        "around the published figure (0.5 × its low end to 2 × its high end), far when wholly "
        "outside; every cost close and the published ordering held: reproduced; any far, or "
        "the ordering not held: differs; else not settled",
        (Change("2026-11-21T20:18Z", "d0b9b03", "Greedy's steady cost within 0.5–2× the "
                "published figure (point estimate), before any data was recorded"),
         Change("2026-11-23T15:19Z", "ff552fb", "the seed's method at the seed's N, its whole "
                "CI in the band, after data existed"),
         Change("2026-11-25T05:39Z", "eabb0ed", "judged on both schedulers (EventBased ×1 too), "
                "after data existed"),
         Change("2026-11-27T18:01Z", "9ffb688", "any cost far, or the ordering not held: differs "
                "(it was partly reproduced while any other was close), after data existed"))),
    Criterion(
        "h4_interruption_ns", "H4", 1000, "ns",
        "H4's second reading, shown beside its verdict: the share of the jitter probe's time in "
        "loop-to-loop gaps longer than this; housekeeping minus isolated CPU, CI over "
        "repetitions, like with like: idle, and under a load only when the load ran on both "
        "CPUs or the probe outranked it (a real-time probe)",
        (Change("2026-11-21T20:18Z", "d0b9b03", "P99.99 / P50 per CPU, before any data was "
                "recorded"),
         Change("2026-11-23T17:55Z", "be2305f", "the share of time lost to gaps over 1 µs, "
                "after the shielded dataset it judges was measured (17:36–17:52)"),
         Change("2026-11-25T05:39Z", "eabb0ed", "like with like: a load placed on the "
                "housekeeping CPU only is not compared with the shielded CPU"),
         Change("2026-12-07T00:16Z", "0ac9bdd", "protocol v1: a reading beside H4, no longer its verdict; H4 is "
                "judged on its pre-registered P99.99 / P50 again (h4_min_tail_cut)"))),
    Criterion(
        "h4_min_difference", "H4", 0.01, "fraction of the probe's time",
        "the lost-share reading's smallest difference that matters, shown beside H4 (no "
        "verdict): the isolated CPU loses at least this share of its time less than the "
        "housekeeping CPU; 1 % of a 60 FPS frame is 0.17 ms, a sixth of E2's late threshold",
        (Change("2026-11-27T18:01Z", "9ffb688", "a minimum instead of any difference above 0, after "
                "data existed"),
         Change("2026-12-07T00:16Z", "0ac9bdd", "protocol v1: a reading beside H4, not its verdict"))),
    Criterion(
        "h4_min_tail_cut", "H4", 0.5, "fraction",
        "H4's verdict on its pre-registered metric, the jitter probe's P99.99 / P50: the "
        "isolated (or shielded) CPU's over the housekeeping CPU's as a ratio with its CI over "
        "repetitions, per load judged like with like; reproduced when every ratio's whole CI is "
        "at or below 1 − this (the tail at least halved relative to the median, as the seed's "
        "P99 1247 → 91 ns is more than tenfold), not reproduced when every one is wholly above "
        "it, partly when some; a CI across it: not settled",
        (Change("2026-12-07T00:16Z", "0ac9bdd", "protocol v1: the metric first written down (d0b9b03, before any data) "
                "with a smallest effect, replacing the lost share chosen after the shielded data"),)),
    Criterion(
        "h2_starved_offset", "H2", 0.05, "fraction of the nominal period",
        "a condition whose mean frame period (over its runs) is more than this off the nominal "
        "one starved: a std comparison with it is void, and H2's std reading not settled",
        (Change("2026-11-25T05:20Z", "0d4c341", "set from the reference data's split (every "
                "condition but one within 0.3 %, the starved ones 17–142 % off), after data "
                "existed"),)),
    Criterion(
        "e2_late_threshold_ms", "E2", 1.0, "ms",
        "a frame is late when its lateness (start of its compute minus its release on the "
        "source clock) exceeds this (params.yaml: E2's late_threshold_ms, which must equal it); "
        "the source clock is the fixed grid of one period for every Holoscan 4.x policy, "
        "SCHED_DEADLINE's included, and on Holoscan 5.0 the releases its clock recorded, a "
        "release the clock skipped a late frame",
        (Change("2026-11-21T20:05Z", "c43831a", "a frame period over the nominal period + 2 ms, "
                "before any data was recorded"),
         Change("2026-11-25T05:20Z", "7166b10", "lateness against each frame's release over "
                "1 ms, after data existed"),
         Change("2026-11-29T07:26Z", "db36d6d", "Holoscan 5.0's frames against the releases its "
                "clock recorded, each skipped release one late frame (was: the fixed grid, on "
                "which one skipped tick made every later frame late); the threshold unchanged; "
                "after data existed"),
         Change("2026-12-07T00:16Z", "0ac9bdd", "protocol v1: one yardstick, the source clock: Holoscan 4.x's "
                "SCHED_DEADLINE target on the fixed grid too (was: one period after its "
                "previous frame, which forgets the delay it adds to a pipeline fed on a fixed "
                "clock); that reading kept beside it"))),
    Criterion(
        "e2_typical_words", "E2", None, "",
        "a change's typical jitter (period IQR) gets no word: it is shown as its ratio to the "
        "baseline with its CI (with sessions, pooled over them, a random session effect), and "
        "the recommendation's words rest on late frames; no margin the default profile's 5 "
        "runs per condition reach decides it (equivalence within [0.5, 2] needs the runs' log "
        "IQR to spread by at most about 0.3 at 80 % power; on the reference's untuned 4.6 and 5.0 "
        "hosts of 2026-11-28 it spreads 0.26 and 0.32, the median over conditions)",
        (Change("2026-11-25T07:30Z", "87a59d3", "the recommendation table's words, with one "
                "session, after data existed"),
         Change("2026-11-29T12:30Z", "e775014", "no word (was lower / higher where the CI "
                "excludes 1, else no clear change: on untuned 5.0 the words of two exchangeable "
                "halves of one host's runs differed in 66-88 % of dealt pairs per policy; with a "
                "[0.5, 2] margin they agreed in 0-16 % on the untuned hosts; "
                "benchmarks/typical_words.py), after data existed"))),
    Criterion(
        "e2_late_ratio_margin", "H2", (0.5, 2.0), "× (rate ratio)",
        "late frames after a change over before, as a rate ratio with an exact CI for counts "
        "widened by the runs' over-dispersion (estimated within sessions); fewer / more when "
        "the whole CI lies at or past the band's lower / upper end (at least halved / doubled: "
        "the smallest change a practitioner would make, or avoid, a scheduling change for); "
        "fewer by less than half / more by less than double when it lies between the band's "
        "end and 1; equivalent when it lies in the band across 1; else not settled. The "
        "policies are compared on each run's first headline_duration_s of releases (balanced "
        "arms); the power plan sizes a comparison for a change of a quarter",
        (Change("2026-11-27T13:24Z", "c532982", "replaces two CIs that do not overlap; after "
                "data existed (the reference sessions it judges), before any session was sized "
                "by its plan"),
         Change("2026-11-27T18:01Z", "9ffb688", "H2's verdict: each real-time policy against "
                "normal_dedicated at the headline point (every one fewer: reproduced, none: not "
                "reproduced, some: partly; every one with too few late frames: not "
                "applicable, no contention reached the target), after data existed"),
         Change("2026-11-30T03:14Z", "22ffc49", "a fix judged in a session only where it and "
                "its baseline ran one length (was: also the ladder's 4 s pinned-loads rung "
                "beside a baseline sized for another fix, which dealt pairs of untuned 4.6's "
                "newest two sessions worded alike in 38 of 100); after the sessions it judges "
                "existed"),
         Change("2026-12-07T00:16Z", "0ac9bdd", "protocol v1: each word what its sentence says (fewer: the whole CI "
                "past ×0.5, was: below 1 and reaching past it), a smaller decided change a word "
                "of its own, φ within sessions (was: also between them), balanced arms"))),
    Criterion(
        "e2_min_late_events", "H2", 10, "late frames",
        "a rate ratio is judged only where both conditions together had at least this many "
        "late frames; below, too few to compare: a comparison not settled, with that reason "
        "and the change's upper bound (at most N late per 10 000 frames); the same for H2 on "
        "every host",
        (Change("2026-11-27T13:24Z", "c532982", "with the rate ratio, after data existed"),
         Change("2026-11-29T12:30Z", "e775014", "the recommendation table's word for too few is "
                "not settled (was a word of its own, which two halves of one host's runs gave "
                "and withheld by chance near the threshold), after data existed"),
         Change("2026-11-29T22:51Z", "1f20971", "H2 not applicable where the baseline had "
                "fewer (was: where every policy had too few together with it, so a baseline "
                "never late beside a policy's long runs read not settled); as methods.md said, "
                "after the sessions it judges existed"),
         Change("2026-12-07T00:16Z", "0ac9bdd", "protocol v1: no gate read from the outcome: too few for H2 is not "
                "settled with each policy's upper bound (was: not applicable)"))),
    Criterion(
        "e2_rerun_alpha", "re-run", 0.05, "family-wise level",
        "two sessions of a host state differ when any condition both measured (at least "
        "min_runs runs each) differs between them at this family-wise level (Holm over two "
        "tests per condition: its late frames as a quasi-Poisson rate ratio with one φ for "
        "the pair, its typical jitter by Welch's t on the runs' log period IQR; and one of the "
        "conditions' mean shift in log period IQR together; a late-frame test that cannot "
        "reach its level set aside by Tarone's rule); calibrated by exchange and by "
        "injected changes (benchmarks/rerun_exchange.py --record: pass at least 90 % of "
        "unchanged pairs, fail at least 80 % of changed ones wherever a check could: an exact "
        "test of the changed condition alone at the strictest Holm level would, on its late "
        "frames divided by the pair's φ, at least 80 % of the time; the others are reported "
        "as not powered, with their late frames)",
        (Change("2026-11-28T04:28Z", "2f78edc", "replaces 'every quantity inside the other "
                "session's CI', which no dealt pair passed; after the reference sessions "
                "existed, before the sessions it is meant to judge"),
         Change("2026-11-28T04:42Z", "be3436f", "one more test: every condition's typical "
                "jitter at once (a shift everywhere that no single condition's 5 runs show); "
                "before it judged a session"),
         Change("2026-11-29T15:19Z", "5b12aa0", "its power judged only on the changes a check "
                "could catch (a doubling of 5 late frames no test shows); after the reference "
                "sessions existed, before the sessions it is meant to judge"),
         Change("2026-11-29T22:48Z", "74f4f6b", "one φ pooled over the pair's conditions "
                "instead of one per condition, Tarone's rule, and 'could catch' judged on the "
                "late frames divided by φ; after the four fresh sessions it judges existed and "
                "had failed its power on the untuned states"),
         Change("2026-11-30T00:44Z", "6d71005", "its power measured with an injected doubling "
                "that has a doubled quasi-Poisson rate's variance (2φμ; it added each run's own "
                "count again, 5μ on Poisson counts); the check unchanged; after the sessions it "
                "judged existed and had failed its power on untuned 4.6"))),
    Criterion(
        "e2_decided_share", "E2", 0.5, "fraction",
        "a run's std is decided by a few frames when its 2 most extreme periods carry more "
        "than this share of its squared deviations",
        (Change("2026-11-25T05:20Z", "0d4c341", "set with the typical-jitter quantities, after "
                "data existed"),)),
    Criterion(
        "e2_floor_goal", "E2", 2.0, "× the floor's std",
        "a configuration is at the floor when the whole CI of its std over the floor's lies "
        "at or below this",
        (Change("2026-11-23T20:36Z", "6f4dbcf", "set with the floor in the same sweep, after "
                "data existed"),)),
    Criterion(
        "e2_gil_ratio", "E2", 2.0, "×",
        "GIL-bound: with Python loads every real-time policy's std over its std with native "
        "loads is above this",
        (Change("2026-11-22T15:00Z", "be5726b", "set after the first default study"),)),
    Criterion(
        "e1_outlier_factor", "E1", 1.5, "× the median",
        "a run is listed as far off when its max latency is over this times the median of the "
        "other runs at its point (and e1_outlier_min_ms above it); listed, never dropped",
        (Change("2026-11-23T15:58Z", "c871fd8", "set with the re-measured reference, after "
                "data existed"),)),
    Criterion(
        "e1_outlier_min_ms", "E1", 5.0, "ms",
        "with e1_outlier_factor: at least this far above the median of the other runs",
        (Change("2026-11-23T15:58Z", "c871fd8", "set with the re-measured reference, after "
                "data existed"),)),
    Criterion(
        "drift", "drift", None, "",
        "the host moved during a sweep when the drift check's two runs (first and last) differ "
        "by more than the range of the condition's ordinary runs, on a per-run quantity that "
        "rare events do not dominate (E2: the frame periods' IQR; E4: H4's lost share)",
        (Change("2026-11-23T16:50Z", "5ed2ef7", "beyond the ordinary runs' range, on E2's "
                "frame-period std and E4's P99.99"),
         Change("2026-11-25T05:46Z", "b8ca390", "robust quantities: E2's std spans 0.03–1.44 ms "
                "over one condition's runs, so no drift could exceed it"))),
    Criterion(
        "over_sessions", "every claim", None, "",
        "with two sessions or more of a host state, each part a claim rests on is pooled over "
        "them (from three, a DerSimonian–Laird mean, the session a random effect; two pool "
        "their runs unless they differ beyond them; late frames' counts in one rate ratio, "
        "its over-dispersion from within the sessions) and the claim's rule judges the pooled "
        "parts; E2's recommendations likewise; each headline is estimated over sessions (t "
        "over sessions, k − 1 df). A verdict is confirmatory when every session it pools was "
        "measured under the protocol version in force (rtstudy protocol), else exploratory",
        (Change("2026-11-26T16:54Z", "fa37c46", "sessions as a level, after data of two "
                "sessions existed"),
         Change("2026-11-27T13:24Z", "c532982", "E2's recommendations pooled over sessions (late "
                "frames: one rate ratio of the pooled counts; typical jitter: a random-effects "
                "mean of the sessions' ratios) instead of unanimity; the claims H1-H4 still by "
                "unanimity"),
         Change("2026-11-27T18:01Z", "9ffb688", "H1-H4 pooled too: each part's estimate over the "
                "sessions (random effect), the claim's rule applied to the pooled parts, "
                "instead of unanimity; after data of several sessions existed"),
         Change("2026-11-28T10:37Z", "569e917", "two sessions pool their runs (t with the runs' "
                "df) unless they differ beyond them: the random-effects interval with 2 sessions "
                "(t with 1 df) was wider than either session's, so H3 'differs' in both of a "
                "host's sessions read 'not settled' over them; after the re-measured reference "
                "existed"),
         Change("2026-12-07T00:16Z", "0ac9bdd", "protocol v1: late frames' φ within sessions; confirmatory verdicts "
                "pool only sessions measured under the protocol in force"))),
    Criterion(
        "h5a_record", "H5a", None, "",
        "Holoscan 5.0's accepted placement record holds when every thread of every 5.0 cell "
        "read back from the kernel the record's policy, priority (FIFO, RR), SCHED_DEADLINE "
        "runtime, deadline and period, and CPUs (where the record asks for an affinity); one "
        "thread that differs fails it, named with its cell",
        (Change("2026-11-28T13:48Z", "7d2c1b8", "set with the check, after the reference's 5.0 "
                "data existed (no margin: an equality)"),)),
    Criterion(
        "h5b_promises", "H5b", None, "",
        "H5b holds when every Holoscan 5.0 condition E5 provokes, and its control, ends in "
        "every repetition as NVIDIA's 5.0 API reference says for its probe failure policy and "
        "IRQ isolation: rejected at compile under fail_admission or require_isolated; run with "
        "an accepted placement other than the request (a recorded fallback) under "
        "warn_and_record_fallback or prefer_isolated; run as requested where nothing is "
        "provoked (IRQ isolation is provable only where no device IRQ may reach the CPU). One "
        "condition that ends otherwise fails it, named with what happened; a provocation that "
        "does not take on a host is not counted",
        (Change("2026-11-28T15:10Z", "ab5159d", "set with E5, before any E5 data was recorded (after "
                "probes on one VM had shown how a few conditions end)"),)),
    Criterion(
        "h5c_min_jitter_reduction", "H5c", 0.5, "fraction",
        "Holoscan 5.0's busy polling (WakeMode.BUSY_POLL) against sleeping wake-up, the contrast "
        "policy at the headline point: it hurts when its late frames are more (the rate-ratio "
        "words of e2_late_ratio_margin); it helps when they are fewer, or when they are "
        "equivalent or too few to compare (each rate's upper bound shown) and its typical "
        "jitter (period IQR) is cut by at least this much (the whole CI of 1 − the IQR ratio "
        "at or above it: H2's std margin, a halving, which the default profile's 5 runs reach "
        "for an effect this large); no clear gain when its late frames are not more and the "
        "cut's whole CI lies below it; else not settled. Its late frames' mechanism is read from "
        "traced runs (attribution.PATTERNS), beside the verdict, not in it",
        (Change("2026-11-29T19:31Z", "7e24221", "set with the traced busy-poll runs, before "
                "they were measured; after the untraced busy-poll data of the reference existed"),)),
    Criterion(
        "verdict_words", "every claim", None, "",
        "a claim this host cannot test (a condition not measured, no isolated CPU) is not "
        "testable here, with the reason; one whose CI straddles its edge (or has none, below "
        "min_runs) is not settled, with about how many runs or sessions would settle it at "
        "the effect seen",
        (Change("2026-11-27T18:01Z", "9ffb688", "inconclusive, the one word for both since the first "
                "verdicts, split into not testable here and not settled, after data existed"),)),
)}


def value(name: str):
    """The value the code applies for criterion ``name``."""
    try:
        return CRITERIA[name].value
    except KeyError:
        raise KeyError(f"no criterion {name!r}; known: {', '.join(CRITERIA)}") from None


def _ago(delta_h: float) -> str:
    return f"{delta_h / 24:.1f} d" if abs(delta_h) >= 48 else f"{delta_h:.1f} h"


def relative(change: Change, measured: datetime | None) -> str:
    """``before the data (2.1 d)`` / ``after the data (3.0 h)``; with no date, the first data."""
    ref, what = (measured, "this data") if measured else (FIRST_DATA.time, "the first data")
    hours = (change.time - ref).total_seconds() / 3600
    return f"{'after' if hours > 0 else 'before'} {what} ({_ago(abs(hours))})"


def table(measured: datetime | None) -> pd.DataFrame:
    """Every criterion with when it was set, relative to the data measured at ``measured``.

    Parameters
    ----------
    measured : datetime or None
        When the data the report shows was measured (its first run, UTC); None if unknown.

    Returns
    -------
    DataFrame
        One row per criterion: its claim, value, rule, the change that set it as it
        stands and the first one, each relative to the data, and ``after_any_data``:
        whether it stands as set after the first data existed (:data:`FIRST_DATA`).
    """
    rows = []
    for c in CRITERIA.values():
        first, now = c.history[0], c.set
        value_text = ("—" if c.value is None else
                      "–".join(f"{v:g}" for v in c.value) if isinstance(c.value, tuple)
                      else f"{c.value:g}")
        rows.append({
            "claim": c.claim, "criterion": c.name,
            "value": f"{value_text} {c.unit}".strip(), "rule": c.rule,
            "first set": f"{first.utc} {first.commit}: {relative(first, measured)}",
            "as it stands": (f"{now.utc} {now.commit}: {relative(now, measured)} — {now.what}"
                             if len(c.history) > 1 else "unchanged"),
            "after_any_data": now.time > FIRST_DATA.time})
    return pd.DataFrame(rows)
