"""E2's per-frame lateness, typical jitter and late frames, on synthetic frames (nothing measured).

The CI of a late-frame rate is fixed exactly (0 of N included), and a run whose std two late
frames decide while its IQR does not move shows why the std is kept for the seeds only.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from rtstudy.experiments.e2_rt_threads import conditions
from rtstudy.experiments.e2_rt_threads.analysis import attribution, contrasts
from rtstudy.experiments.e2_rt_threads.report import tables
from rtstudy.experiments.e2_rt_threads.analysis.metrics import (FIXED, PREVIOUS, RECORDED,
                                                                RunFrames, head_counts,
                                                                lateness_ns, release_grid,
                                                                run_metrics,
                                                                skipped_per_gap, skipped_releases)
from rtstudy.inference.events import pooled_rate, wilks_quantile
from rtstudy.inference.stats import CI, MIN_RUNS

P = 16_666_667  # ns: 60 FPS
CI95 = CI(0.95)


def test_zero_late_frames_in_n_is_the_exact_one_sided_bound():
    r = pooled_rate([0, 0, 0], [149, 149, 149], 0.95)
    assert r.bound_only and r.value == 0 and r.low == 0
    assert r.high == pytest.approx(-np.log(0.05) / 447)            # 2.996 / N
    assert r.high == pytest.approx(2.9957 / 447, rel=1e-4)          # ≈ the rule of three
    # The bound is where seeing none has probability 1 − γ.
    assert np.exp(-r.high * 447) == pytest.approx(0.05)


def test_poisson_counts_get_the_exact_garwood_interval():
    # 2 late frames in each of 3 runs of 1000: no spread beyond Poisson, φ = 1.
    r = pooled_rate([2, 2, 2], [1000, 1000, 1000], 0.95)
    assert r.value == pytest.approx(6 / 3000) and r.dispersion == 1 and r.events == 6
    assert r.low == pytest.approx(sps.chi2.ppf(0.025, 12) / 2 / 3000)
    assert r.high == pytest.approx(sps.chi2.ppf(0.975, 14) / 2 / 3000)


def test_late_frames_in_one_run_only_widen_the_interval_by_their_dispersion():
    # 12 late frames, all in one of 3 runs: expected 4 per run, Pearson χ² = (16 + 16 + 64) / 4
    # = 24 over 2 degrees of freedom, φ = 12: the interval of 1 event in 250 frames.
    r = pooled_rate([0, 0, 12], [1000, 1000, 1000], 0.95)
    assert r.value == pytest.approx(0.004) and r.dispersion == pytest.approx(12)
    assert r.low == pytest.approx(sps.gamma.ppf(0.025, 1) / 250)
    assert r.high == pytest.approx(sps.gamma.ppf(0.975, 2) / 250)
    even = pooled_rate([4, 4, 4], [1000, 1000, 1000], 0.95)
    assert r.high > 2 * even.high and r.low < even.low


def test_below_three_runs_a_rate_has_no_ci_and_bad_counts_are_refused():
    for events in ([0, 0], [3, 1]):
        r = pooled_rate(events, [149] * len(events), 0.95)
        assert r.runs < MIN_RUNS and np.isnan(r.low) and np.isnan(r.high)
        assert r.value == pytest.approx(sum(events) / (149 * len(events)))
    per = pooled_rate([1, 0, 2], [100, 100, 100], 0.95).per(10_000)
    assert per.value == pytest.approx(100) and per.events == 3
    with pytest.raises(ValueError, match="counts >= 0"):
        pooled_rate([1.5, 0, 0], [10, 10, 10], 0.95)
    with pytest.raises(ValueError, match="> 0 in every run"):
        pooled_rate([0, 0, 0], [10, 0, 10], 0.95)
    with pytest.raises(ValueError, match="aligned"):
        pooled_rate([0, 0], [10, 10, 10], 0.95)


def test_the_maximum_of_n_frames_bounds_the_quantile_wilks_gives():
    p = wilks_quantile(149, 0.95)
    assert p == pytest.approx(0.98, abs=5e-4)
    # N is exactly the size Wilks' condition asks for that quantile.
    assert 149 == pytest.approx(np.log(1 - 0.95) / np.log(p))
    assert wilks_quantile(745, 0.95) > 0.995 > p
    with pytest.raises(ValueError, match="n >= 1"):
        wilks_quantile(0, 0.95)


def frames_of(offsets_us, late: dict[int, float] | None = None) -> pd.DataFrame:
    """Samples of one run on the 60 FPS grid: each frame ``offsets_us`` late, plus ``late``
    (frame → ms) for the late ones; the periodic condition catches up after each."""
    offsets = np.asarray(offsets_us, dtype=float) * 1e3
    for k, ms in (late or {}).items():
        offsets[k] += ms * 1e6
    t = 10**12 + np.arange(offsets.size) * P + offsets.astype(np.int64)
    return pd.DataFrame({"frame": np.arange(offsets.size), "t_start_ns": t,
                         "exec_ns": np.full(offsets.size, 100_000)})


def test_lateness_is_against_the_release_grid_or_the_previous_start():
    samples = frames_of([30, 10, 50, 20])
    t = samples["t_start_ns"].to_numpy()
    assert lateness_ns(t, P).tolist() == [20_000, 0, 40_000, 10_000]
    # Fitted on some frames only, the others are measured against the same grid.
    assert lateness_ns(t, P, fit=[False, False, True, True]).tolist() == \
        [10_000, -10_000, 30_000, 0]
    prev = lateness_ns(t, P, PREVIOUS)
    assert np.isnan(prev[0]) and prev[1:].tolist() == [-20_000, 40_000, -30_000]
    # One yardstick, the source clock, for every policy: 4.x's DEADLINE target too.
    assert release_grid("SCHED_DEADLINE", ["frame", "t_start_ns"]) == FIXED
    assert release_grid("SCHED_DEADLINE", ["frame", "t_start_ns", "release_ns"]) == RECORDED
    assert release_grid("SCHED_FIFO", ["frame", "release_ns"]) == RECORDED
    assert release_grid("SCHED_FIFO", ["frame"]) == release_grid(None, []) == FIXED
    # Against recorded releases (another clock's time base: one offset apart).
    releases = 5_000 + np.arange(4) * P
    assert lateness_ns(t, P, RECORDED, releases_ns=releases).tolist() == \
        [20_000, 0, 40_000, 10_000]
    with pytest.raises(ValueError, match="releases_ns"):
        lateness_ns(t, P, RECORDED)


def test_a_clock_that_skips_a_missed_tick_counts_one_late_frame_not_a_late_tail():
    # Holoscan 5.0's clock: frame 60 misses its tick by 1.2 ms and the clock drops it, so the
    # next frame is released a period later and every later frame is a period off the grid.
    release = np.arange(150, dtype=np.int64) * P
    release[60:] += P
    t = 10**12 + release + 50_000
    t[60] += 1_200_000
    samples = pd.DataFrame({"frame": range(150), "t_start_ns": t, "exec_ns": 100_000,
                            "release_ns": release})
    grid = release_grid("SCHED_FIFO", samples.columns)
    assert grid == RECORDED and skipped_releases(release, P) == 1
    m = run_metrics(RunFrames.of(samples, 0, P, grid), P / 1e6, 1.0)
    # Frame 60 started 1.2 ms after its release, and the skipped release's frame never came.
    assert (m["late"], m["skipped"], m["n"], m["grid"]) == (2, 1, 150, RECORDED)
    assert m["late_per_10k"] == pytest.approx(2 / 150 * 1e4)
    # On the fixed grid every frame from the skip on is a period late.
    assert m["late_fixed"] == 90
    # The span policies are compared on counts alike: the whole run, where it is no longer...
    cfg = {"warmup_frames": 0, "late_threshold_ms": 1.0}
    config = {"fps": 60, "period_ns": P, "policy": "SCHED_FIFO"}
    assert head_counts(samples, config, {**cfg, "headline_duration_s": 10}) == {
        "late_head": 2, "n_head": 150}
    # ...and its first second's releases where it is longer: frames 0-60, whose 60 periods end
    # with the late frame 60 after the skipped release (2 late in 61 releases), as run_metrics
    # counts those frames.
    head = head_counts(samples, config, {**cfg, "headline_duration_s": 1})
    first = run_metrics(RunFrames.of(samples[samples["frame"] <= 60], 0, P, grid), P / 1e6, 1.0)
    assert head == {"late_head": first["late"], "n_head": first["n"]} == {
        "late_head": 2, "n_head": 61}
    # Gaps of whole periods skip one release fewer than they span; none when on time.
    assert skipped_releases([0, P, 3 * P, 7 * P], P) == 4
    assert skipped_per_gap([0, P, 3 * P, 7 * P], P).tolist() == [0, 1, 3]
    assert skipped_releases(np.arange(10) * P, P) == 0


def test_two_late_frames_decide_the_std_not_the_typical_jitter():
    """The issue's point: a run's std is an event detector, its IQR is not."""
    rng = np.random.default_rng(7)
    jitter = rng.normal(40, 12, 150).clip(0)
    clean = run_metrics(RunFrames.of(frames_of(jitter), 0, P), P / 1e6, 1.0)
    late = run_metrics(RunFrames.of(frames_of(jitter, {40: 5.0, 110: 8.0}), 0, P), P / 1e6, 1.0)
    assert (clean["late"], late["late"]) == (0, 2)
    assert late["late_per_10k"] == pytest.approx(2 / 149 * 1e4)
    assert late["lateness_max_ms"] == pytest.approx(8.0, abs=0.1)
    # The std grows more than tenfold; the IQR and MAD barely move (within 15 %).
    assert late["period_std_ms"] > 10 * clean["period_std_ms"]
    assert late["period_iqr_us"] == pytest.approx(clean["period_iqr_us"], rel=0.15)
    assert late["period_mad_us"] == pytest.approx(clean["period_mad_us"], rel=0.15)
    assert late["lateness_p50_us"] == pytest.approx(clean["lateness_p50_us"], rel=0.15)
    # Caught up, each late frame makes a long period and a short one: the two late frames'
    # four periods carry nearly all the variance, the two most extreme a good half of it.
    period = np.diff(frames_of(jitter, {40: 5.0, 110: 8.0})["t_start_ns"].to_numpy()) / 1e6
    dev2 = (period - period.mean()) ** 2
    assert dev2[[39, 40, 109, 110]].sum() / dev2.sum() > 0.95
    assert late["std_top2_share"] > contrasts.DECIDED_SHARE > clean["std_top2_share"]
    # NVIDIA's tail (P100 − P95) sees the late frames, its flatness (P90 − P10) does not.
    assert late["period_tail_us"] > 5000 > 10 * late["period_flatness_us"]


def test_a_deadline_run_that_slips_once_is_late_on_the_source_clock_from_then_on():
    # Holoscan 4.x's DEADLINE target never catches up: one long period, then regular ones. On
    # the source clock every frame after the slip reaches the pipeline late; on its own releases
    # (the previous frame's start plus a period) one frame is.
    t = 10**12 + np.arange(150) * P
    t[60:] += 5_000_000
    samples = pd.DataFrame({"frame": range(150), "t_start_ns": t, "exec_ns": 100_000})
    m = run_metrics(RunFrames.of(samples, 0, P, release_grid("SCHED_DEADLINE", samples)),
                    P / 1e6, 1.0)
    assert (m["grid"], m["late"], m["late_fixed"], m["late_previous"]) == (FIXED, 90, 90, 1)
    assert m["std_top2_share"] > 0.99


def test_yardsticks_at_the_headline_point():
    from rtstudy.experiments.e2_rt_threads.analysis import dataset as analysis

    rows = [{"policy": p, "topology": "dedicated", "dispatcher": "other",
             "load_placement": "operators", "load_factor": 3.0, "load_work_model": "native",
             "switch_interval_ms": 5.0, "wake_mode": "sleep", "n": 239, "late": late,
             "late_fixed": late, "late_previous": previous, "grid": FIXED, "skipped": 0}
            for p, late, previous in (
                ("SCHED_DEADLINE", 150, 1), ("SCHED_DEADLINE", 0, 0), ("SCHED_FIFO", 2, 2))]
    y = analysis._yardsticks(pd.DataFrame(rows))
    assert y == {PREVIOUS: {"late": 150, "other": 1, "skipped": 0, "frames": 478, "runs": 2}}
    # Every run counting the same on its own releases: nothing to add.
    same = [dict(r, late_previous=r["late"]) for r in rows]
    assert analysis._yardsticks(pd.DataFrame(same)) is None
    # Holoscan 5.0: every policy on the releases its clock recorded, the fixed grid second.
    five = [dict(r, grid=RECORDED, skipped=1, late=r["late"] + 1, late_fixed=r["late"] + 50)
            for r in rows]
    y = analysis._yardsticks(pd.DataFrame(five))
    assert y == {RECORDED: {"late": 155, "other": 302, "skipped": 3, "frames": 717, "runs": 3}}


def run_rows(label: str, late: list[int], mean_ms: float = 16.667, n: int = 149, **factors):
    """One row per run as analysis.load gives them, enough for the summaries and contrasts."""
    base = {"policy": "SCHED_FIFO", "topology": "dedicated", "dispatcher": "other",
            "load_placement": "operators", "load_factor": 3.0, "load_work_model": "native",
            "loads": 6, "pinned": True, "switch_interval_ms": 5.0, "wake_mode": "sleep", **factors}
    return [{**base, "label": label, "n": n, "duration_s": n * mean_ms / 1e3, "late": k,
             "period_iqr_us": 40.0 + i, "period_iqr_within_us2": 4.0, "period_mad_us": 20.0,
             "lateness_p50_us": 30.0,
             "lateness_p99_us": 100.0, "lateness_max_ms": 0.2 + k, "period_tail_us": 50.0,
             "period_flatness_us": 80.0, "period_std_ms": 0.03 + 0.3 * k,
             "std_top2_share": 0.9 if k else 0.2, "period_mean_ms": mean_ms,
             "nominal_ms": 16.667} for i, k in enumerate(late)]


def test_each_condition_pools_its_runs_late_frames_with_the_rare_count_ci():
    runs = pd.DataFrame(run_rows("fifo", [1, 0, 1, 3, 0])
                        + run_rows("base", [19, 17, 15, 19, 10], policy="normal_dedicated")
                        + run_rows("two", [0, 0], policy="SCHED_RR"))
    s = contrasts.condition_summary(runs, CI95).set_index("label")
    exact = pooled_rate([1, 0, 1, 3, 0], [149] * 5, 0.95).per(10_000)
    assert s.loc["fifo", "late"] == 5 and s.loc["fifo", "frames"] == 745
    assert (s.loc["fifo", "late_rate"], s.loc["fifo", "late_low"], s.loc["fifo", "late_high"]) \
        == pytest.approx((exact.value, exact.low, exact.high))
    assert s.loc["fifo", "dispersion"] == pytest.approx(1.5)
    assert s.loc["fifo", "decided"] == 3
    assert s.loc["fifo", "max_quantile"] == pytest.approx(wilks_quantile(745, 0.95))
    assert s.loc["base", "late_low"] > s.loc["fifo", "late_high"]
    assert np.isnan(s.loc["two", "late_high"]) and np.isnan(s.loc["two", "iqr_low"])
    text = tables.late_table(s.reset_index(), 1.0).set_index("configuration")
    assert text.loc["two", "late per 10 000 frames"] == "0 (no CI: 2 runs)"
    assert text.loc["fifo", "late per 10 000 frames"].startswith("67 [")
    zero = contrasts.condition_summary(pd.DataFrame(run_rows("none", [0, 0, 0])), CI95)
    assert tables.late_rate(zero.iloc[0]) == f"< {-np.log(0.05) / 447 * 1e4:.0f} (none late)"


def test_a_starved_seed_baseline_voids_the_std_comparison():
    """seed_python's normal mode starved (mean period 40.3 ms): no "+35732 %"."""
    runs = pd.DataFrame(run_rows("seed_python-normal", [149] * 5, mean_ms=40.3, policy="normal",
                                 topology="seed_python")
                        + run_rows("seed_python-SCHED_DEADLINE", [60] * 5, mean_ms=16.8,
                                   policy="SCHED_DEADLINE", topology="seed_python"))
    assert conditions.starved(runs) == {"seed_python-normal": pytest.approx(40.3)}
    seed = contrasts.seed_compatible(runs, CI95)[0]
    assert seed["void"] == {"seed_python-normal": pytest.approx(40.3)}
    assert seed["normal"]["late"] == 745 and seed["realtime"]["late"] == 300
    table = tables.seed_table([seed])
    ours = table.iloc[-1]
    assert ours["std change"] == "void: seed_python-normal starved (mean period 40.30 ms)"
    assert "%" not in ours["std change"]
    assert table.iloc[0]["std change"] == "−83.6 %"
    assert table.iloc[0]["late per 10 000 frames (normal → RT)"] == tables.NOT_PUBLISHED
    assert ours["late per 10 000 frames (normal → RT)"].startswith("10,000 (all 745 late) → ")


def test_one_sign_convention_minus_is_less_jitter():
    less = {"reduction": 0.8, "low": 0.7, "high": 0.9, "void": {}}
    assert tables.std_change(less) == "-80% [-90%, -70%]"
    more = {"reduction": -0.5, "low": -0.9, "high": -0.1, "void": {}}
    assert tables.std_change(more, "{:+.1%}") == "+50.0% [+10.0%, +90.0%]"


def test_attribution_judges_a_deadline_frame_on_the_source_clock_as_the_statistics_do():
    """The trace attribution uses the statistics' lateness: for DEADLINE too, against the fixed
    grid (the worker starts 0.3 ms late in frame 2 and never catches up: frame 3 is late too)."""
    w = 11
    starts = [50_000, 10_050_000, 20_350_000, 30_350_000]
    trace = pd.DataFrame(
        [(s - 100_000, "waking", 99, w, "", -1, "", "", -1) for s in starts]
        + [(s - 90_000, "switch", 99, w, "", 99, "load", "R", -1) for s in starts]
        + [(s + 100_000, "switch", w, 99, "load", w, "", "S", 120) for s in starts],
        columns=["t_ns", "event", "tid", "pid", "comm", "prev_pid", "prev_comm", "prev_state",
                 "prio"])
    sidecar = {"summary": {"threads": [{"tid": w, "comm": "w"}]},
               "operators": {"target": {"sched": {"tid": w}}},
               "requested": {"config": {"period_ns": 10_000_000, "policy": "SCHED_DEADLINE"}}}
    att = attribution.attribute_run(trace, pd.DataFrame({"frame": range(4), "t_start_ns": starts}),
                                    sidecar, warmup_frames=0).set_index("frame")
    assert att["lateness_ms"].to_dict() == pytest.approx({1: 0.0, 2: 0.3, 3: 0.3})
