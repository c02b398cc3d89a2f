"""E2's jitter ladder and its fixes: which factor adds typical jitter, which one late frames,
and what removes them.

The ladder (``params.yaml: e2_rt_threads.ladder``; :mod:`measuring.plan` measures it) climbs from
the operating system's floor to the seeds' layout one factor per rung, every rung with the
ladder's policy at the same period, priority and CPU (:data:`RUNGS`). The fixes
(:data:`conditions.FIX_LIST`) are each one factor away from the headline point (the ladder's
policy with load operators free to use its CPU), and the real-time policies are compared with
``normal_dedicated`` there, so :func:`recommendations` can say for each what it does to
typical jitter and to late frames, with CIs over runs, and what it costs.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from rtstudy.experiments.e2_rt_threads.conditions import (
    BASELINE, BUSY_POLL, FIX_LIST, PLAIN, SWITCH_INTERVAL_MS as DEFAULT_SWITCH_INTERVAL_MS,
    WAKE_DEFAULT, is_plain)
from rtstudy.experiments.e2_rt_threads.analysis.contrasts import summarize
from rtstudy.experiments.e2_rt_threads.analysis.headline import (Comparison, E2Headline, MessageCost,
                                                                Pooled, Recommendation)
from rtstudy.inference import criteria, judge, rates
from rtstudy.inference.stats import CI, over_runs, ratio_ci
from rtstudy.policies import RT_POLICIES, SCHED_DEADLINE, SCHED_FIFO, SCHED_RR

# Late frames after a change over before, judged by the dated margin (criteria).
LATE_RULE = judge.Rule(judge.RATE, criteria.value("e2_late_ratio_margin"))

# The rungs in order: (key, what the rung adds). The report's figure and table name them so.
RUNGS = (
    ("cyclictest", "cyclictest (C), idle"),
    ("python_thread", "a Python thread, idle"),
    ("alone", "Holoscan target alone"),
    ("outside", "+ load in a process of its own"),
    ("threads", "+ the same load as threads in the app"),
    ("operators_pinned", "+ load operators on other CPUs"),
    ("operators", "+ load operators free to use its CPU"),
)
# What a reader does for each change, and what it costs beside what the table measures.
CHANGES = {
    SCHED_FIFO: ("give the operator SCHED_FIFO (its own pinned thread)",
                   "CAP_SYS_NICE or root"),
    SCHED_RR: ("give the operator SCHED_RR (its own pinned thread)", "CAP_SYS_NICE or root"),
    SCHED_DEADLINE: ("give the operator SCHED_DEADLINE (its own thread)",
                       "CAP_SYS_NICE or root; a runtime budget per period"),
    "operators_pinned": ("pin the other operators off the real-time CPU (a thread pool with "
                         "pin_cores)", "the loads lose that CPU"),
    "dispatcher_pinned": ("a SCHED_FIFO dispatcher pinned to a housekeeping CPU",
                          "a priority-99 thread on that CPU"),
    "switch_interval": ("a shorter GIL switch interval (sys.setswitchinterval)",
                        "more GIL hand-overs in every Python thread"),
    BUSY_POLL: ("Holoscan 5.0: the operator's thread busy-polls between frames "
                  "(WakeMode.BUSY_POLL)", "a CPU spinning at the operator's priority"),
    "fragment": ("put the operator in a Holoscan fragment of its own (a distributed "
                 "application: the other operators in a second process, sharing no GIL with it)",
                 "a second process; every message between the fragments crosses UCX"),
}


# The names of the quantities and findings two sessions are compared by: section.py gives them
# to the report's metrics, exchange.py judges a pair of sessions by them.
def rung_name(r: dict) -> str:
    """A :func:`ladder` row's name: ``ladder 3. Holoscan target alone``."""
    return f"ladder {r['number']}. {r['name']}"


def late_name(policy: str, load_factor: float, threshold_ms: float) -> str:
    """The name of a policy's late-frame rate at a load factor."""
    return (f"{policy}: late frames (> {threshold_ms:g} ms) per 10 000 at {load_factor:g} "
            "loads/CPU")


def finding(r: dict) -> str:
    """What a :func:`recommendations` row decided, in words: its late frames' word against the
    margin (:func:`rtstudy.inference.rates.decision`). Typical jitter has no word: no margin
    the budget reaches decides it (``criteria: e2_typical_words``), so it is shown as a ratio
    with its CI, never as a finding."""
    return f"late frames {rates.decision(r['late_frames'])}"


def _plain(runs: pd.DataFrame, policy: str) -> pd.DataFrame:
    """``policy``'s dedicated runs with native loads, Holoscan's dispatcher, Python's default
    switch interval: the ladder's and the fixes' common ground."""
    if runs.empty:
        return runs
    return runs[(runs["policy"] == policy) & (runs["topology"] == "dedicated")
                & (runs["load_work_model"] == "native")
                & (runs["dispatcher"] == PLAIN["dispatcher"])
                & (runs["switch_interval_ms"] == DEFAULT_SWITCH_INTERVAL_MS)
                & (runs["wake_mode"] == WAKE_DEFAULT)]


def rung_runs(runs: pd.DataFrame, floor: pd.DataFrame, policy: str) -> dict[str, pd.DataFrame]:
    """Each rung's runs (:data:`RUNGS`; rungs without runs left out).

    Parameters
    ----------
    runs, floor : DataFrame
        E2's ``runs`` and ``floor`` tables (one row per run).
    policy : str
        The ladder's policy (``params.yaml: e2_rt_threads.ladder_policy``).
    """
    out = {}
    if len(floor):
        idle = floor[(floor["topology"] == "floor") & (floor["load_factor"] == 0)]
        out["cyclictest"] = idle
    if len(runs):
        out["python_thread"] = runs[(runs["topology"] == "python_thread")
                                    & (runs["policy"] == policy)]
        plain = _plain(runs, policy)
        if len(plain):
            top = plain["load_factor"].max()
            out["alone"] = plain[plain["load_factor"] == 0]
            for key in ("outside", "threads", "operators_pinned", "operators"):
                out[key] = plain[(plain["load_factor"] == top) & (plain["load_placement"] == key)
                                 & (top > 0)]
    return {key: out[key] for key, _ in RUNGS if key in out and len(out[key])}


def ladder(runs: pd.DataFrame, floor: pd.DataFrame, policy: str, ci: CI) -> pd.DataFrame:
    """The ladder: one row per measured rung, in order, with its typical jitter and late frames.

    Returns
    -------
    DataFrame
        ``rung``, ``number`` (its place in :data:`RUNGS`, from 1, whether or not the rungs
        below were measured), ``name``, ``label`` (the condition), ``load_factor``,
        and :func:`.contrasts.summarize`'s columns (``iqr_us`` with its CI over runs,
        ``p50_us`` / ``p99_us`` of |lateness|, ``late_rate`` per 10 000 frames with its CI,
        ``runs``, ``frames``, ...); ``step_iqr`` / ``step_iqr_low`` / ``step_iqr_high``: the
        typical jitter's ratio to the measured rung below (t-interval over runs on the log
        scale).
    """
    rungs = rung_runs(runs, floor, policy)
    number = {key: i + 1 for i, (key, _) in enumerate(RUNGS)}
    names = dict(RUNGS)
    rows, below = [], None
    for key, g in rungs.items():
        step = ratio_ci(below["period_iqr_us"], g["period_iqr_us"], ci) if below is not None \
            else None
        rows.append({"rung": key, "number": number[key], "name": names[key],
                     "label": str(g["label"].iloc[0]),
                     "load_factor": float(g["load_factor"].iloc[0]), **summarize(g, ci),
                     "step_iqr": step.value if step else np.nan,
                     "step_iqr_low": step.low if step else np.nan,
                     "step_iqr_high": step.high if step else np.nan})
        below = g
    return pd.DataFrame(rows)


def _compare(base: pd.DataFrame, other: pd.DataFrame, ci: CI, late: judge.Part) -> Comparison:
    """``other`` against ``base``: typical jitter, |lateness| P99 and the CPU the loads got as
    ratios with CIs over runs, late-frame rates side by side and their ratio (``late``,
    :func:`late_part`) with its word."""
    a, b = summarize(base, ci), summarize(other, ci)
    p99_a, p99_b = over_runs(base["lateness_p99_us"], ci), over_runs(other["lateness_p99_us"], ci)
    iqr = ratio_ci(base["period_iqr_us"], other["period_iqr_us"], ci)
    p99 = ratio_ci(base["lateness_p99_us"], other["lateness_p99_us"], ci)
    cpu = ratio_ci(base["load_cpu"], other["load_cpu"], ci) \
        if "load_cpu" in base and base["load_cpu"].notna().any() else None
    return {"runs": b["runs"], "runs_base": a["runs"], "frames": b["frames"],
            "frames_base": a["frames"], "dispersion": b["dispersion"],
            "dispersion_base": a["dispersion"],
            "iqr_us": b["iqr_us"], "iqr_base_us": a["iqr_us"],
            "iqr_ratio": iqr.value, "iqr_low": iqr.low, "iqr_high": iqr.high,
            "p99_ratio": p99.value, "p99_low": p99.low, "p99_high": p99.high,
            # The lateness in µs practitioners quote (cyclictest, HoloHub): P99, mean over runs
            # with its CI, and the largest of all frames.
            "p99_us": p99_b.value, "p99_us_low": p99_b.low, "p99_us_high": p99_b.high,
            "p99_base_us": p99_a.value, "p99_base_low": p99_a.low, "p99_base_high": p99_a.high,
            "max_us": b["max_ms"] * 1e3, "max_base_us": a["max_ms"] * 1e3,
            "late": b["late"], "late_rate": b["late_rate"], "late_low": b["late_low"],
            "late_high": b["late_high"], "late_base": a["late"],
            "late_base_rate": a["late_rate"], "late_base_low": a["late_low"],
            "late_base_high": a["late_high"],
            "late_ratio": late.value, "late_ratio_low": late.low, "late_ratio_high": late.high,
            "late_phi": late.rate.dispersion, "late_frames": late.state,
            "late_frames_needed": late.frames_needed,
            "cpu_ratio": cpu.value if cpu else np.nan,
            "cpu_low": cpu.low if cpu else np.nan, "cpu_high": cpu.high if cpu else np.nan}


def late_part(change: str, base: pd.DataFrame, other: pd.DataFrame, ci: CI,
              sizes: bool = True) -> judge.Part:
    """``change``'s late frames (its runs ``other``) against its baseline's (``base``) as a rate
    part (:mod:`rtstudy.inference.judge`): the rate ratio
    (:func:`rtstudy.inference.rates.rate_ratio`) and its word against the pre-registered
    margin, made once here; what the row shows, H2 judges and the sessions pool. Where the word
    is not decided, the frames per condition that would decide it at 80 % power
    (``frames_needed``; NaN without ``sizes``: the search costs about 0.5 s a comparison)."""
    rr = rates.rate_ratio(base["late"], base["n"], other["late"], other["n"], ci.confidence)
    return judge.Part(change, LATE_RULE, rr.value, rr.low, rr.high,
                      int(min(len(other), len(base))), "runs", rr,
                      rates.frames_to_decide(rr, ci.confidence) if sizes else np.nan)


def _message_cost(g: pd.DataFrame, messages: pd.DataFrame | None, ci: CI) -> MessageCost:
    """What the messages of ``g``'s runs cost (the fragment fix's; analysis.message_latency):
    ``message_runs``, ``messages`` and ``lost`` (summed over runs), the mean per-run P50
    (``message_p50_us`` with ``message_p50_low`` / ``_high``, a t-interval over runs) and
    P99 (``message_p99_us``) of the latency, its largest (``message_max_us``); NaN and 0
    where its runs sent none."""
    m = messages[messages["cell_id"].isin(g["cell_id"])] \
        if messages is not None and len(messages) and "cell_id" in g else pd.DataFrame()
    if m.empty:
        return {"message_runs": 0, "messages": 0, "lost": 0, "message_p50_us": np.nan,
                "message_p50_low": np.nan, "message_p50_high": np.nan,
                "message_p99_us": np.nan, "message_max_us": np.nan}
    p50 = over_runs(m["message_p50_us"], ci)
    return {"message_runs": int(len(m)), "messages": int(m["messages"].sum()),
            "lost": int(m["lost"].sum()), "message_p50_us": p50.value,
            "message_p50_low": p50.low, "message_p50_high": p50.high,
            "message_p99_us": float(m["message_p99_us"].mean()),
            "message_max_us": float(m["message_max_us"].max())}


def recommendations(runs: pd.DataFrame, policy: str, ci: CI,
                    messages: pd.DataFrame | None = None, sizes: bool = True) -> pd.DataFrame:
    """At the headline point: each real-time policy against ``normal_dedicated``, then each
    fix against the ladder policy's headline condition where both ran one length
    (:func:`_one_length`), with :func:`_compare`'s columns.

    Parameters
    ----------
    runs : DataFrame
        E2's ``runs`` table.
    policy : str
        The ladder's policy, the fixes' (``params.yaml: e2_rt_threads.ladder_policy``).
    ci : CI
        How CIs over runs are made.
    messages : DataFrame, optional
        The fragment fix's message latencies per run (``analysis.load``'s ``extra``).
    sizes : bool
        Whether to plan the frames an undecided comparison needs (``late_frames_needed``);
        the re-run checks, which read only the words, leave it out.

    Returns
    -------
    DataFrame
        One row per measured change: ``change`` (the policy, or the :data:`conditions.FIX_LIST` key),
        ``kind`` (``policy`` or ``fix``), ``label`` and ``baseline`` (the two conditions),
        then :func:`_compare`'s columns and :func:`_message_cost`'s (what the fragment's
        messages cost; NaN for every other change).
    """
    if runs.empty:
        return pd.DataFrame()
    native = runs[(runs["topology"] == "dedicated") & (runs["load_work_model"] == "native")]
    if native.empty:
        return pd.DataFrame()
    top = native[native["load_factor"] == native["load_factor"].max()]
    seeds_layout = top[is_plain(top) & (top["switch_interval_ms"] == DEFAULT_SWITCH_INTERVAL_MS)
                       & (top["wake_mode"] == WAKE_DEFAULT)]
    rows = []
    base = seeds_layout[seeds_layout["policy"] == BASELINE]
    for pol in RT_POLICIES:
        g = seeds_layout[seeds_layout["policy"] == pol]
        if len(g) and len(base):
            # Balanced arms: every run's late frames over the same span of releases.
            rows.append(_change_row(pol, "policy", _heads(g), _heads(base), ci, sizes, None))
    head = seeds_layout[seeds_layout["policy"] == policy]
    mine = top[top["policy"] == policy]
    for fix in FIX_LIST:
        g = _fix_runs(mine, fix.factor, fix.level)
        if len(g) and len(head) and _one_length(g, head):
            rows.append(_change_row(fix.name, "fix", g, head, ci, sizes, messages))
    return pd.DataFrame(rows)


def _heads(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with each run's late frames and releases over its first headline span only
    (``late_head``, ``n_head``: :func:`.metrics.head_counts`), where the table has them."""
    if "late_head" not in runs:
        return runs
    return runs.assign(late=runs["late_head"], n=runs["n_head"])


def _one_length(fix: pd.DataFrame, base: pd.DataFrame) -> bool:
    """Whether a fix's runs and its baseline's ran one length (their median measured span, in
    whole seconds), as the plan sizes a fix and its baseline together (``fix_duration_s``).

    The ladder's pinned-loads rung is one fix's condition, run at the ladder's length beside
    a baseline sized for the session's rotating fix: a session that did not choose that fix
    gives the ladder its numbers, not the table a word (on the reference's 1,195 frames the
    word was fewer in one session and not settled in the next: ``criteria:
    e2_late_ratio_margin``). Datasets without ``duration_s`` are taken as one length."""
    if "duration_s" not in fix or "duration_s" not in base:
        return True
    return round(fix["duration_s"].median()) == round(base["duration_s"].median())


def _fix_runs(mine: pd.DataFrame, column: str, value) -> pd.DataFrame:
    """The runs of the fix that sets ``column`` to ``value`` (:data:`conditions.FIX_LIST`)
    among ``mine`` (the ladder policy's at the headline point): every other factor at the seeds'
    layout, a switch interval shorter than Python's own for ``switch_interval_ms``."""
    if column == "switch_interval_ms":
        return mine[(mine["switch_interval_ms"] < DEFAULT_SWITCH_INTERVAL_MS) & is_plain(mine)
                    & (mine["wake_mode"] == WAKE_DEFAULT)]
    others = {**PLAIN, "wake_mode": WAKE_DEFAULT}
    others.pop(column)
    g = mine[(mine[column] == value) & (mine["switch_interval_ms"] == DEFAULT_SWITCH_INTERVAL_MS)]
    for k, v in others.items():
        g = g[g[k] == v]
    return g


def _change_row(change: str, kind: str, g: pd.DataFrame, base: pd.DataFrame, ci: CI,
                sizes: bool, messages: pd.DataFrame | None) -> Recommendation:
    """A :func:`recommendations` row: ``change``'s runs ``g`` against ``base``; ``late_part``
    holds its late frames' rate part (:func:`late_part`), which the row's late columns show."""
    late = late_part(change, base, g, ci, sizes)
    return {"change": change, "kind": kind, "label": str(g["label"].iloc[0]),
            "baseline": str(base["label"].iloc[0]), **_compare(base, g, ci, late),
            **_message_cost(g, messages, ci), "late_part": late}


def over_sessions(headlines: list[E2Headline], confidence: float) -> dict[str, Pooled]:
    """Each change's conclusion over every session of the host: pooled, never by unanimity.

    Late frames: the sessions' counts pooled into one rate ratio
    (:func:`rtstudy.inference.rates.pooled_over_sessions`: a session that differs more than its runs
    widens the CI), judged by the same margin as one session's. Typical jitter: the sessions'
    ratios pooled on the log scale with a random session effect
    (:func:`rtstudy.inference.rates.pooled_log_ratio`). Each new session narrows both, so it can
    settle a word that fewer sessions left open, where unanimity could only unsettle one.

    Parameters
    ----------
    headlines : list of E2Headline
        E2's ``headline`` per session, oldest first (``Section.session_headlines``).
    confidence : float
        The CIs' level.

    Returns
    -------
    dict
        change → ``late_frames`` (word → in how many sessions, each on its own), ``held``
        (the late frames' word over the pooled sessions), the pooled ``iqr_ratio`` /
        ``late_ratio`` with their CIs, ``sessions`` (how many measured the change) and ``of``
        (how many sessions there are). Empty with fewer than two sessions.
    """
    if len(headlines) < 2:
        return {}
    by_change: dict[str, list[dict]] = {}
    for h in headlines:
        for r in h.recommendations:
            by_change.setdefault(r["change"], []).append(r)
    out: dict[str, Pooled] = {}
    for change, rows in by_change.items():
        late = judge.pool([r["late_part"] for r in rows], confidence)
        iqr = rates.pooled_log_ratio([r["iqr_ratio"] for r in rows],
                                     [r["iqr_low"] for r in rows],
                                     [r["iqr_high"] for r in rows], confidence)
        out[change] = {"late_frames": Counter(r["late_frames"] for r in rows),
                       "sessions": len(rows), "of": len(headlines),
                       "held": {"late_frames": late.state},
                       "iqr_ratio": iqr[0], "iqr_low": iqr[1], "iqr_high": iqr[2],
                       "late_ratio": late.value, "late_ratio_low": late.low,
                       "late_ratio_high": late.high, "late": late.rate.events_b,
                       "late_frames_needed": late.frames_needed,
                       "late_base": late.rate.events_a,
                       "frames": late.rate.exposure_b,
                       "frames_base": late.rate.exposure_a}
    return out
