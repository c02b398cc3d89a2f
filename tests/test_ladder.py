"""E2's jitter ladder and fixes: what the plan measures, and what the analysis concludes from
synthetic runs (nothing here measures)."""
from __future__ import annotations

import copy
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from rtstudy import params
from rtstudy.experiments.e2_rt_threads import conditions
from rtstudy.experiments.e2_rt_threads.checks import exchange, recheck
from rtstudy.experiments.e2_rt_threads.analysis import ladder, verdicts
from rtstudy.experiments.e2_rt_threads.measuring import plan, plan5, rotation
from rtstudy.experiments.e2_rt_threads.report import section, tables
from rtstudy.inference import judge, rates
from rtstudy.inference.stats import CI
from rtstudy.report import study

CI95 = CI(0.95)


def host(api: int = 4) -> dict:
    """A 2-CPU untuned host that allows every policy pinned (what the plan reads of it)."""
    return {"cpu": {"online": [0, 1]}, "realtime": {"SCHED_DEADLINE pinned": "ok"},
            "sdk": {"version": "5.0.0" if api == 5 else "4.6.0"}}


@pytest.fixture(scope="module")
def default_plan(fingerprint):
    cfg = params.stage_config("e2_rt_threads", "default")
    return cfg, plan.plan(cfg, fingerprint, params.read("default"))


def labels(cells) -> dict[str, list]:
    out: dict[str, list] = {}
    for c in cells:
        out.setdefault(c.label, []).append(c)
    return out


def test_every_rung_runs_long_and_every_fix_and_its_baseline_at_the_fixes_size(default_plan):
    cfg, _ = default_plan
    cfg = {**cfg, "fixes_per_session": 0}  # every fix in one session
    by = labels(plan.plan(cfg, host(), {}))
    rt, top = cfg["ladder_policy"], max(cfg["load_factors"])
    head = f"{rt}-lf{top:g}-native"
    rungs = ["floor-cyclictest-lf0", f"python_thread-{rt}-lf0", f"{rt}-lf0-native"]
    fixes = [f"{head}-operators_pinned", f"{head}-dfifo_pinned",
             f"{head}-si{cfg['switch_interval_ms']:g}", f"{head}-fragment"]
    long = cfg["warmup_frames"] + int(cfg["headline_duration_s"] * cfg["fps"])
    sized = cfg["warmup_frames"] + int(cfg["fix_duration_s"] * cfg["fps"])
    for label, frames, reps in [*((r, long, cfg["headline_repetitions"]) for r in rungs),
                                *((f, sized, cfg["fix_repetitions"]) for f in [head, *fixes])]:
        assert label in by, label
        runs = [c for c in by[label] if not c.drift]
        assert len(runs) == reps and all(c.config["frames"] == frames for c in runs), label
    # One factor away: the fixes' configurations differ from the headline's in their factor only.
    base = by[head][0].config
    for label, key in ((fixes[0], "load_placement"), (fixes[1], "dispatcher"),
                       (fixes[3], "load_placement")):
        # load_cpus and warmup_frames say how, not what: where the loads are pinned, and
        # which messages the fragment's summary leaves out.
        diff = {k for k, v in by[label][0].config.items() if base.get(k) != v} - {
            "load_cpus", "warmup_frames"}
        assert diff == {key}, (label, diff)
    assert by[fixes[3]][0].config["load_placement"] == "fragment"
    assert by[fixes[2]][0].config["switch_interval_ms"] == cfg["switch_interval_ms"]
    # Short runs elsewhere: the grid without contention.
    assert by["normal_dedicated-lf0-native"][0].config["frames"] < long
    # The drift check repeats a headline condition of the ladder's length, not the baseline.
    (drift,) = {c.label for cells in by.values() for c in cells if c.drift}
    assert drift != head and by[drift][0].config["frames"] == long


def test_the_fixes_rotate_over_a_host_states_sessions(default_plan):
    cfg, _ = default_plan
    cfg = {**cfg, "fixes": ["operators_pinned", "dispatcher_pinned", "switch_interval"],
           "fixes_per_session": 2}

    def planned(closed: list, current: list | None = None) -> list[dict]:
        """A session's plan.json cells, given what the host state's sessions planned."""
        cells = plan.plan(cfg, host(), {params.SESSION: {"closed": closed, "current": current}})
        return [{"label": c.label, "config": c.config} for c in cells]

    first = planned([])
    second = planned([first])
    third = planned([first, second])
    assert [rotation.fixes_measured(cfg, s) for s in (first, second, third)] == [
        {"operators_pinned", "dispatcher_pinned"}, {"switch_interval", "operators_pinned"},
        {"dispatcher_pinned", "switch_interval"}]
    # A session that has begun keeps its fixes, whatever sessions were merged in meanwhile.
    assert rotation.fixes_measured(cfg, planned([first, second, third], current=second)) == \
        {"switch_interval", "operators_pinned"}
    # A clone holding only another clone's session starts where that one left off.
    assert rotation.session_fixes(cfg, {"closed": [second]}) == ["dispatcher_pinned",
                                                             "operators_pinned"]
    assert rotation.session_fixes({**cfg, "fixes_per_session": 0}, {"closed": [first]}) == \
        cfg["fixes"]
    # The third plans the ladder's pinned loads too, shorter than a fix: not a fix measured.
    assert any(c["label"].endswith("-operators_pinned") for c in third)
    head = f"{cfg['ladder_policy']}-lf{max(cfg['load_factors']):g}-native"
    sized = cfg["warmup_frames"] + int(cfg["fix_duration_s"] * cfg["fps"])
    one = {**cfg, "fixes_per_session": 1}
    first = [{"label": c.label, "config": c.config} for c in plan.plan(one, host(), {})]
    second = labels(plan.plan(one, host(), {params.SESSION: {"closed": [first]}}))
    assert f"{head}-dfifo_pinned" in second and f"{head}-si{cfg['switch_interval_ms']:g}" \
        not in second
    # The pinned loads stay a ladder rung of the headline's length when not the session's fix.
    assert second[f"{head}-operators_pinned"][0].config["frames"] < sized
    assert second[head][0].config["frames"] == sized
    # Holoscan 5.0 runs no fix: its headline point keeps the ladder's length.
    five = labels(plan.plan({**cfg, "drift_check": False}, host(5), {}))
    assert five[head][0].config["frames"] < sized


def test_traced_conditions_get_their_repetitions(default_plan):
    cfg, cells = default_plan
    traced = labels([c for c in cells if c.config.get("trace_s")])
    assert set(traced) == {f"{p}-lf{max(cfg['load_factors']):g}-native-trace"
                           for p in (cfg["ladder_policy"], "SCHED_DEADLINE")}
    assert all(len(v) == cfg["trace_repetitions"] for v in traced.values())
    # Holoscan 5.0 traces the wake modes it adds where its plan measures them: the contrast
    # policies with load operators (H5c), each traced run an untraced condition's label + -trace.
    top = max(cfg["load_factors"])
    cells5 = plan5.cells(cells, cfg, lambda f, m: f == top and m == "native")
    traced5 = labels([c for c in cells5 if c.config.get("trace_s")])
    assert set(traced5) == {f"{p}-lf{top:g}-native-{w}-trace" for p in cfg["contrast_policies"]
                            for w in cfg["wake_modes"] if w != conditions.WAKE_DEFAULT}
    assert all(c.config["wake_mode"] != conditions.WAKE_DEFAULT and c.module == plan5.MODULE
               for v in traced5.values() for c in v)
    assert {label.removesuffix("-trace") for label in traced5} <= {c.label for c in cells5}


def test_loads_are_pinned_off_the_target_only_where_it_is_pinned():
    cfg = params.stage_config("e2_rt_threads", "default")
    pinned = plan.plan(cfg, host(), {})
    (cell,) = {c.label: c for c in pinned if c.config["load_placement"] == "operators_pinned"
               }.values()
    assert cell.config["load_cpus"] == [0] and cell.config["target_cpus"] == [1]
    never = plan.plan({**cfg, "pin": "never"}, host(), {})
    assert not [c for c in never if c.config["load_placement"] == "operators_pinned"]


def test_holoscan_5_plans_only_what_its_app_runs():
    cfg = params.stage_config("e2_rt_threads", "default")
    cells4 = plan.plan({**cfg, "drift_check": False, "fixes_per_session": 0}, host(), {})
    cells5 = plan5.cells(cells4, cfg, lambda f, m: f == max(cfg["load_factors"]) and m == "native")
    assert cells5 and all(c.module == plan5.MODULE for c in cells5)
    assert {c.config["load_placement"] for c in cells5} <= set(plan5.PLACEMENTS5)
    assert not [c for c in cells5 if "switch_interval_ms" in c.config]
    # The ladder's loaded rungs are 4.x's only since the budget cut (plan5's docstring).
    seed = {**cfg, "load_placements": ["operators", "operators_pinned", "threads", "outside"]}
    seed4 = plan.plan({**seed, "drift_check": False}, host(), {})
    assert {"outside", "threads"} <= {c.config["load_placement"] for c in seed4}
    assert "outside" not in {c.config["load_placement"] for c in
                             plan5.cells(seed4, seed, lambda f, m: f == max(cfg["load_factors"]))}
    # In the focused design 5.0's unloaded grid is the ladder's policy only (no H2 control).
    low = {c.config["policy"] for c in cells5 if c.config["load_factor"] < max(cfg["load_factors"])}
    assert low == {cfg["ladder_policy"]}
    # app5 has no distributed fragments: the fragment fix is a 4.6 cell only.
    assert "fragment" in {c.config["load_placement"] for c in cells4}
    assert "fragment" not in {c.config["load_placement"] for c in cells5}
    seed_sdk = plan.plan({**cfg, "drift_check": False, "fixes_per_session": 0},
                         {**host(), "sdk": {"version": "3.5.0"}}, {})
    assert seed_sdk and "fragment" not in {c.config["load_placement"] for c in seed_sdk}


def runs_of(label: str, iqr: list[float], late: list[int], n: int = 240, cpu: float = 1.8,
            **factors) -> list[dict]:
    """Runs as analysis.load gives them, with the columns the ladder reads."""
    base = {"policy": "SCHED_FIFO", "topology": "dedicated", "dispatcher": "other",
            "load_placement": "operators", "load_factor": 3.0, "load_work_model": "native",
            "switch_interval_ms": 5.0, "wake_mode": "sleep", "loads": 6, "pinned": True, **factors}
    return [{**base, "label": label, "n": n, "duration_s": n / 60, "late": k,
             "period_iqr_us": q, "period_iqr_within_us2": q / 10, "period_mad_us": q / 2,
             "lateness_p50_us": q,
             "lateness_p99_us": 3 * q, "lateness_max_ms": 0.1 + k, "period_tail_us": 50.0,
             "period_flatness_us": 80.0, "period_std_ms": 0.05 + 0.3 * k,
             "std_top2_share": 0.5, "period_mean_ms": 16.667, "nominal_ms": 16.667,
             "load_cpu": cpu} for q, k in zip(iqr, late)]


def synthetic_runs() -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = (runs_of("py", [30, 31, 29, 30, 30], [0] * 5, topology="python_thread",
                    load_factor=0.0, loads=0, dispatcher="none", load_placement="none")
            + runs_of("alone", [60, 62, 58, 61, 59], [0] * 5, load_factor=0.0, loads=0)
            + runs_of("threads", [61, 63, 60, 62, 59], [0] * 5, load_placement="threads")
            + runs_of("head", [80, 82, 79, 81, 78], [6, 4, 5, 7, 3])
            + runs_of("pinned", [61, 60, 62, 59, 61], [0] * 5, load_placement="operators_pinned",
                      cpu=0.9)
            + runs_of("si", [79, 83, 80, 81, 77], [5, 6, 4, 3, 7], switch_interval_ms=0.1)
            + runs_of("nd", [90, 95, 85, 92, 88], [40, 35, 45, 38, 42], policy="normal_dedicated"))
    floor = runs_of("floor", [20, 21, 19, 20, 20], [0] * 5, topology="floor", load_factor=0.0,
                    loads=0, dispatcher="none", load_placement="none")
    return pd.DataFrame(rows), pd.DataFrame(floor)


def test_the_ladder_orders_its_rungs_and_measures_each_step():
    runs, floor = synthetic_runs()
    table = ladder.ladder(runs, floor, "SCHED_FIFO", CI95)
    assert list(table["rung"]) == ["cyclictest", "python_thread", "alone", "threads",
                                   "operators_pinned", "operators"]
    step = table.set_index("rung").loc["alone"]
    assert step["step_iqr"] == pytest.approx(60 / 30)
    assert step["step_iqr_low"] > 1
    assert np.isnan(table["step_iqr"].iloc[0])
    assert table.set_index("rung").loc["operators", "late"] == 25


def test_the_recommendations_say_what_each_change_shows():
    runs, _ = synthetic_runs()
    recs = ladder.recommendations(runs, "SCHED_FIFO", CI95).set_index("change")
    assert list(recs.index) == ["SCHED_FIFO", "operators_pinned", "switch_interval"]
    assert recs.loc["SCHED_FIFO", "baseline"] == "nd"
    assert recs.loc["SCHED_FIFO", "late_frames"] == "fewer"
    pinned = recs.loc["operators_pinned"]
    assert (pinned["baseline"], pinned["late_frames"]) == ("head", "fewer")
    assert pinned["iqr_high"] < 1, "typical jitter shown as a ratio with its CI, lower here"
    assert "typical" not in pinned, "typical jitter has no word (criteria: e2_typical_words)"
    assert ladder.finding(pinned) == "late frames fewer"
    assert pinned["cpu_ratio"] == pytest.approx(0.5)
    interval = recs.loc["switch_interval"]
    # 25 late frames in 1,200 on each side: a rate ratio of 1 whose CI fits the margin.
    assert interval["iqr_low"] < 1 < interval["iqr_high"]
    assert interval["late_frames"] == "equivalent"
    assert interval["late_ratio"] == pytest.approx(1.0)
    assert 0.5 <= interval["late_ratio_low"] < 1 < interval["late_ratio_high"] <= 2
    assert np.isnan(interval["late_frames_needed"])


def test_below_three_runs_nothing_is_concluded():
    runs, _ = synthetic_runs()
    few = runs.groupby("label").head(2)
    recs = ladder.recommendations(few, "SCHED_FIFO", CI95)
    assert recs["iqr_low"].isna().all()
    assert set(recs["late_frames"]) <= {"no CI", "too few late frames to compare"}
    assert {ladder.finding(r) for r in recs.to_dict("records")} <= {
        "late frames no CI", "late frames not settled"}


def test_a_config_whose_ladder_policy_is_not_measured_is_refused():
    data = copy.deepcopy(params.load())
    data["e2_rt_threads"]["ladder_policy"] = "SCHED_RR"
    data["e2_rt_threads"]["policies"] = ["normal", "normal_dedicated", "SCHED_FIFO"]
    data["e2_rt_threads"]["contrast_policies"] = ["SCHED_FIFO"]
    with pytest.raises(params.ParamError, match="ladder_policy = SCHED_RR is not in policies"):
        params.stage_config("e2_rt_threads", "default", data)


def test_holoscan_5_busy_polling_is_a_change_of_its_own_never_pooled_with_sleeping():
    """5.0's BUSY_POLL runs share the plain FIFO condition's other factors: they must stay out of
    its statistics (they once were pooled into it) and be compared with it as a change."""
    runs, _ = synthetic_runs()
    spin = pd.DataFrame(runs_of("head-busy_poll", [12, 13, 11, 12, 14], [180, 200, 170, 190, 185],
                                wake_mode="busy_poll"))
    both = pd.concat([runs, spin], ignore_index=True)
    assert set(conditions.headline_point(both)["label"]) == set(
        conditions.headline_point(runs)["label"])
    recs = ladder.recommendations(both, "SCHED_FIFO", CI95).set_index("change")
    spun = recs.loc["busy_poll"]
    assert (spun["label"], spun["baseline"]) == ("head-busy_poll", "head")
    assert spun["iqr_high"] < 1 and spun["late_frames"] == "more"
    # The plain condition's numbers are what they were without the busy-polling runs.
    assert recs.loc["SCHED_FIFO", "late"] == ladder.recommendations(
        runs, "SCHED_FIFO", CI95).set_index("change").loc["SCHED_FIFO", "late"]
    # H5c reads the same row: more late frames, so busy polling hurts here.
    h5c = verdicts.h5c_parts(recs.reset_index().to_dict("records"))
    assert verdicts.h5c_combine(h5c)[0] == judge.Verdict.HURTS


def test_a_ratio_from_no_late_frames_shows_its_lower_bound():
    # 0 → 59 late frames: the ratio is infinite, its CI's lower bound is what it says.
    rr = rates.rate_ratio(np.array([0] * 5), np.array([239] * 5), np.array([12] * 5),
                          np.array([247] * 5), 0.95)
    assert np.isposinf(rr.value) and np.isfinite(rr.low) and rr.low > 1
    assert tables.ratio_text(rr.value, rr.low, rr.high) == f"×∞ [{rr.low:.2f}, ∞]"
    assert tables.ratio_text(np.nan, np.nan, np.nan) == "n/a"
    assert tables.ratio_text(0.5, 0.25, 1.0) == "×0.50 [0.25, 1.00]"


def spin_row(late_base, late, iqr, low, high, runs=5, frames=1200):
    """A busy_poll recommendations row: its late frames against sleeping wake-up's, its IQR
    ratio with CI; the rate ratio and its CI from the counts spread over ``runs`` runs."""
    def spread(n):  # the late frames over the runs, as evenly as they go
        return [n // runs + (i < n % runs) for i in range(runs)]
    rr = rates.rate_ratio(spread(late_base), [frames] * runs, spread(late), [frames] * runs,
                          confidence=0.95)
    return {"change": "busy_poll", "runs": runs, "runs_base": runs, "iqr_ratio": iqr,
            "iqr_low": low, "iqr_high": high, "late_ratio": rr.value,
            "late_ratio_low": rr.low, "late_ratio_high": rr.high, "late_base": late_base,
            "frames_base": frames * runs, "late": late, "frames": frames * runs,
            "late_phi": 1.0, "late_frames_needed": np.nan,
            "late_part": judge.Part("busy_poll", ladder.LATE_RULE, rr.value, rr.low, rr.high,
                                    runs, "runs", rr)}


@pytest.mark.parametrize("row, word", [
    # No late frame either way and the jitter cut far past the margin: helps (the shielded case).
    (spin_row(0, 0, 0.16, 0.12, 0.22), judge.Verdict.HELPS),
    # Too few late frames to compare (0 → 1), the cut short of the margin: no clear gain.
    (spin_row(0, 1, 0.8, 0.6, 0.95), judge.Verdict.NO_GAIN),
    # Many more late frames, whatever the jitter does: hurts (the untuned case).
    (spin_row(2, 120, 0.5, 0.3, 0.8), judge.Verdict.HURTS),
    # Far fewer late frames: helps.
    (spin_row(200, 10, 1.0, 0.8, 1.2), judge.Verdict.HELPS),
    # Too few late frames to compare and a cut that straddles the margin: not settled.
    (spin_row(0, 2, 0.5, 0.2, 0.9), judge.NOT_SETTLED),
])
def test_h5c_busy_polling_helps_hurts_or_is_not_settled_by_its_margin(row, word):
    verdict, why = verdicts.h5c_combine(verdicts.h5c_parts([row]))
    assert verdict == word
    if word == judge.NOT_SETTLED:
        assert "straddles" in why and "too few late frames" in why


def test_h5c_is_not_testable_without_busy_polling_and_pools_over_sessions():
    assert verdicts.h5c_combine(verdicts.h5c_parts([]))[0] == judge.NOT_TESTABLE
    # Each session's cut straddles the margin; the two sessions pooled settle it.
    one = verdicts.h5c_parts([spin_row(0, 0, 0.3, 0.1, 0.55)])
    two = verdicts.h5c_parts([spin_row(0, 0, 0.31, 0.11, 0.56)])
    assert verdicts.h5c_combine(one)[0] == verdicts.h5c_combine(two)[0] == judge.NOT_SETTLED
    pooled = judge.pool_by_name([one, two], 0.95)
    assert verdicts.h5c_combine(pooled)[0] == judge.Verdict.HELPS


def test_the_fragment_fix_is_recommended_with_its_message_latency():
    """The fragment fix is one more FIXES level: its row compares it with the headline
    condition, and its cost carries the measured message latency (mean per-run P50 with its
    CI, P99); no other change gets one."""
    runs, _ = synthetic_runs()
    frag = pd.DataFrame(runs_of("head-fragment", [40, 41, 39, 42, 40], [0] * 5,
                                load_placement="fragment", cpu=1.9))
    frag["cell_id"] = [f"fragment-r{i}" for i in range(5)]
    messages = pd.DataFrame({"cell_id": frag["cell_id"], "messages": 240, "lost": [0, 0, 1, 0, 0],
                             "message_p50_us": [700.0, 650, 720, 680, 690],
                             "message_p99_us": [5000.0] * 5, "message_max_us": [9000.0] * 5})
    recs = ladder.recommendations(pd.concat([runs, frag], ignore_index=True), "SCHED_FIFO",
                                  CI95, messages)
    by = recs.set_index("change")
    r = by.loc["fragment"]
    assert (r["label"], r["baseline"], r["late_frames"]) == ("head-fragment", "head", "fewer")
    assert r["iqr_high"] < 1
    assert r["message_p50_us"] == pytest.approx(688)
    assert r["message_p50_low"] < 688 < r["message_p50_high"]
    assert (r["messages"], r["lost"], r["message_runs"]) == (1200, 1, 5)
    assert np.isnan(by.loc["operators_pinned", "message_p50_us"])
    table = tables.recommendation_table(recs, ladder.CHANGES).set_index("change")
    cost = table.loc[ladder.CHANGES["fragment"][0], "other costs"]
    assert cost.startswith(ladder.CHANGES["fragment"][1])
    assert "message latency P50 688 µs [" in cost
    assert "], P99 5,000 µs (1,200 messages, 1 lost, 5 runs)" in cost
    assert "message latency" not in table.loc[ladder.CHANGES["operators_pinned"][0], "other costs"]


def test_sessions_are_pooled_so_each_one_narrows_the_answer():
    """Two sessions: pinning the loads off lowers typical jitter in both; its late frames are
    fewer in one and about as many as the headline's in the other, so pooled they are not settled,
    with the frames that would settle them. The table's last column and the report's "What
    to do" say exactly that, and one session alone keeps its own words."""
    runs, _ = synthetic_runs()
    first = ladder.recommendations(runs, "SCHED_FIFO", CI95).to_dict("records")
    # The second session: pinned runs as late as the headline's, and the fragment measured.
    again = runs[runs["label"] != "pinned"]
    late_pinned = pd.DataFrame(runs_of("pinned", [61, 60, 62, 59, 61], [5, 4, 5, 6, 3],
                                       load_placement="operators_pinned", cpu=0.9))
    frag = pd.DataFrame(runs_of("head-fragment", [40, 41, 39, 42, 40], [0] * 5,
                                load_placement="fragment", cpu=1.9))
    second = ladder.recommendations(pd.concat([again, late_pinned, frag], ignore_index=True),
                                    "SCHED_FIFO", CI95).to_dict("records")
    # Each session's headline, as far as over_sessions reads it.
    one, two = SimpleNamespace(recommendations=first), SimpleNamespace(recommendations=second)
    assert ladder.over_sessions([one], 0.95) == {}
    over = ladder.over_sessions([one, two], 0.95)
    pinned = over["operators_pinned"]
    assert pinned["held"] == {"late_frames": "not settled"}
    assert pinned["iqr_high"] < 1, "typical jitter pooled as a ratio (no word)"
    assert (pinned["late_base"], pinned["late"]) == (50, 23)
    assert pinned["late_ratio"] == pytest.approx(0.46)
    assert np.isfinite(pinned["late_frames_needed"]) and pinned["late_frames_needed"] > 2400
    assert pinned["sessions"] == 2 and dict(pinned["late_frames"]) == {"fewer": 1,
                                                                         "not settled": 1}
    # Measured in one session: its pooled words are that session's.
    frag_over = over["fragment"]
    assert frag_over["held"] == {"late_frames": "fewer"}
    assert frag_over["sessions"] == 1

    table = tables.recommendation_table(pd.DataFrame(second), ladder.CHANGES, over)
    row = table.set_index("change").loc[ladder.CHANGES["operators_pinned"][0]]
    assert row["pooled over the sessions"].startswith("typical jitter ×")
    assert "]; late frames ×" in row["pooled over the sessions"]
    assert row["pooled over the sessions"].endswith(": not settled (2 of 2 sessions)")
    assert "pooled over the sessions" not in tables.recommendation_table(
        pd.DataFrame(second), ladder.CHANGES).columns

    # The report's "What to do": the pooled words where the sessions have them, what cuts late
    # frames first, and each change's typical jitter beside it.
    rows = {a.change: a for a in section.advice(second, over, "SCHED_FIFO")}
    what = {k: v[0] for k, v in ladder.CHANGES.items()}
    pinned_row = rows[what["operators_pinned"]]
    assert (pinned_row.word, pinned_row.sessions) == ("not settled", 2)
    assert pinned_row.why == (f"about {pinned['late_frames_needed']:,.0f} frames per condition "
                              f"would settle it ({pinned['frames']:,.0f} so far); the plan sizes "
                              "a fix to show a change of ×0.25 as at least halved, and ×0.46 is "
                              "nearer the margin")
    assert pinned_row.typical.startswith("×")
    assert pinned_row.late == "50 → 23 in " + f"{pinned['frames_base']:,.0f} frames each"
    # Unequal sizes (a fix measured longer, releases a 5.0 clock skipped) are shown as they are.
    assert section._counts({"late_base": 1, "late": 61, "frames_base": 1195,
                            "frames": 1236}) == "1 → 61 in 1,195 → 1,236 frames"
    assert pinned_row.against == "FIFO without it"
    assert [a.word for a in section.advice(second, over, "SCHED_FIFO")][:2] == ["fewer", "fewer"]
    assert rows[what["fragment"]].sessions == 1
    alone = section.advice(second, {}, "SCHED_FIFO")
    assert {a.sessions for a in alone} == {1}
    assert {a.change: a.word for a in alone}[what["operators_pinned"]] == \
        {r["change"]: r["late_frames"] for r in second}["operators_pinned"]


def test_a_fix_only_an_earlier_session_measured_stays_in_what_to_do():
    """The fixes rotate: the latest session did not measure pinning the loads off, the one
    before did. "What to do" and the pooled findings still give its answer, from that session."""
    runs, _ = synthetic_runs()
    first = ladder.recommendations(runs, "SCHED_FIFO", CI95).to_dict("records")
    second = ladder.recommendations(runs[runs["label"] != "pinned"], "SCHED_FIFO",
                                    CI95).to_dict("records")
    assert "operators_pinned" not in {r["change"] for r in second}
    heads = [SimpleNamespace(recommendations=first), SimpleNamespace(recommendations=second)]
    over = ladder.over_sessions(heads, 0.95)
    what = ladder.CHANGES["operators_pinned"][0]
    rows = {a.change: a for a in section.advice(second, over, "SCHED_FIFO", heads)}
    mine = next(r for r in first if r["change"] == "operators_pinned")
    assert rows[what].sessions == 1 and rows[what].word == rates.decision(mine["late_frames"])
    assert what not in {a.change for a in section.advice(second, over, "SCHED_FIFO")}
    found = section.pooled_findings(heads, 0.95)
    assert any(k.startswith("operators_pinned against ") for k in found)
    assert len(found) == len({r["change"] for r in first + second})


def test_what_to_do_gives_each_change_a_line_of_its_own():
    from rtstudy.report.section import Advice

    def row(change: str, word: str, when: str = "") -> Advice:
        return Advice(change, "FIFO without it", "9 → 1", "×0.1 [0.0, 0.5]", word, "×1.0", "",
                      when=when)

    advice = [row("a", "fewer", when="helps on 2 shielded"), row("b", "fewer"),
              row("c", "more", when="helps on 3 shielded"), row("d", "more"),
              row("e", "not settled"), row("f", "not settled")]
    lines = study.words("what_to_do", advice=advice, ci=CI95, scope="").splitlines()
    assert [x[:7] for x in lines if x[:2] in ("1.", "2.")] == ["1. **a*", "2. **b*"]
    assert sum(x.startswith("- **Avoid** ") for x in lines) == 2
    assert sum(x.startswith("- **Not settled yet**: ") for x in lines) == 2
    # One story per line: what holds elsewhere stands on a line of its own, never beside
    # this host's "Avoid".
    assert not [x for x in lines if "Avoid" in x and "helps" in x]
    assert "   - On the other host states: helps on 3 shielded." in lines


def test_changes_whose_cis_overlap_are_named_as_tied_not_ranked():
    from rtstudy.report.section import Advice

    def row(change: str, value: float, low: float, high: float) -> Advice:
        return Advice(change, "a normal thread", "9 → 1", f"×{value}", "fewer", "×1.0", "",
                      value=value, low=low, high=high)

    advice = [row("RR", 0.03, 0.01, 0.08), row("FIFO", 0.04, 0.02, 0.09),
              row("DEADLINE", 0.30, 0.15, 0.45)]
    lines = study.words("what_to_do", advice=advice, ci=CI95, scope="").splitlines()
    fifo = next(x for x in lines if x.startswith("2. **FIFO**"))
    assert fifo.endswith("Tied with 1: their CIs overlap, so their order is not measured.")
    assert "Tied" not in next(x for x in lines if x.startswith("3. **DEADLINE**"))


def test_a_fix_not_settled_says_what_would_settle_it_and_why_its_size_fell_short():
    pooled = {"late_frames_needed": 95_000.0, "frames": 28_790, "frames_base": 28_790,
              "late_ratio": 0.74}
    assert section._to_settle(pooled, "fix") == (
        "about 95,000 frames per condition would settle it (28,790 so far); the plan sizes a "
        "fix to show a change of ×0.25 as at least halved, and ×0.74 is nearer the margin")
    assert section._to_settle(pooled, "policy").endswith("(28,790 so far)")
    assert section._to_settle({**pooled, "late_frames_needed": np.nan}, "fix") == ""


def test_a_change_with_too_few_late_frames_is_not_settled_yet_with_the_reason():
    runs, _ = synthetic_runs()
    rare = runs.assign(late=0)
    recs = ladder.recommendations(rare, "SCHED_FIFO", CI95).to_dict("records")
    assert {r["late_frames"] for r in recs} == {"too few late frames to compare"}
    assert {ladder.finding(r) for r in recs} == {"late frames not settled"}
    advice = section.advice(recs, {}, "SCHED_FIFO")
    assert {(a.word, a.why) for a in advice} == {("not settled",
                                                  "too few late frames to compare")}
    shown = study.advice_table(advice)
    assert set(shown["decided"]) == {"not settled (too few late frames to compare)"}


# The first re-run check, and the same check on pairs dealt by exchange (exchange.py).
CFG = {"ladder_policy": "SCHED_FIFO", "late_threshold_ms": 1.0}

def test_dealing_keeps_every_condition_its_runs_and_each_session_its_sizes():
    runs, _ = synthetic_runs()
    a, b = runs.iloc[::2], runs.iloc[1::2]     # each condition split 3 / 2 or 2 / 3
    da, db = exchange.deal(a, b, np.random.default_rng(1))
    assert da["label"].value_counts().to_dict() == a["label"].value_counts().to_dict()
    assert db["label"].value_counts().to_dict() == b["label"].value_counts().to_dict()
    key = ["label", "period_iqr_us", "late"]
    both = pd.concat([da, db]).sort_values(key).reset_index(drop=True)
    assert both.equals(runs.sort_values(key).reset_index(drop=True))
    assert not da.sort_values(key).reset_index(drop=True).equals(
        a.sort_values(key).reset_index(drop=True)), "a deal that moves no run"
    # A condition only one session measured stays there.
    only = pd.DataFrame(runs_of("new", [1, 2, 3], [0, 0, 0]))
    da, db = exchange.deal(pd.concat([a, only]), b, np.random.default_rng(1))
    assert (da["label"] == "new").sum() == 3 and "new" not in set(db["label"])


def test_a_fix_measured_longer_in_one_session_is_dealt_apart_and_its_words_not_compared():
    # Session a measured the operators_pinned fix as its rotating fix (48 s runs, and its
    # baseline too), session b the switch interval; b has the pinned loads for the ladder only
    # (4 s runs): not exchangeable, not the same design.
    runs, _ = synthetic_runs()
    runs = runs.assign(duration_s=4.0)
    a, b = runs.iloc[::2].copy(), runs.iloc[1::2].copy()
    a.loc[a["label"].isin(["pinned", "head"]), "duration_s"] = 48.0
    b.loc[b["label"].isin(["si", "head"]), "duration_s"] = 48.0
    for seed in range(5):
        da, db = exchange.deal(a, b, np.random.default_rng(seed))
        assert (da.loc[da["label"] == "pinned", "duration_s"] == 48).all()
        assert (db.loc[db["label"] == "pinned", "duration_s"] == 4).all()
    alike = exchange.alike_changes(a, b, "SCHED_FIFO", CI95)
    assert alike == {"SCHED_FIFO"}
    one = exchange.rerun_check(a, runs.iloc[0:0], CFG, CI95)
    assert set(one[1]) == {"SCHED_FIFO", "operators_pinned"}
    other = (one[0], {**one[1], "operators_pinned": "late frames more"})
    assert exchange.compare(one, other)["differ"] == ["operators_pinned"]
    assert exchange.compare(one, other, alike)["differ"] == []
    assert exchange.compare(one, other, alike)["changes"] == 1
    # Without run lengths (older tables), every run of a label is dealt together.
    assert exchange.run_lengths(runs.drop(columns="duration_s")) == {}


def test_a_fix_gets_a_word_only_where_it_ran_as_long_as_its_baseline():
    # The ladder's pinned-loads rung (4 s) beside a baseline sized for another fix (48 s): the
    # ladder's numbers, no recommendation row; at one length, a row.
    runs, _ = synthetic_runs()
    runs = runs.assign(duration_s=4.0)
    assert "operators_pinned" in set(ladder.recommendations(runs, "SCHED_FIFO", CI95)["change"])
    runs.loc[runs["label"].isin(["head", "si"]), "duration_s"] = 48.0
    recs = ladder.recommendations(runs, "SCHED_FIFO", CI95)
    assert set(recs["change"]) == {"SCHED_FIFO", "switch_interval"}
    rungs = ladder.ladder(runs, runs.iloc[0:0], "SCHED_FIFO", CI95)
    assert "operators_pinned" in set(rungs["rung"])


def test_the_rerun_check_judges_the_ladder_and_the_headline_late_rates_by_name():
    runs, floor = synthetic_runs()
    one = exchange.rerun_check(runs, floor, CFG, CI95)
    assert list(one[0]) == [
        "ladder 1. cyclictest (C), idle: period IQR", "ladder 2. a Python thread, idle: period IQR",
        "ladder 3. Holoscan target alone: period IQR",
        "ladder 5. + the same load as threads in the app: period IQR",
        "ladder 6. + load operators on other CPUs: period IQR",
        "ladder 7. + load operators free to use its CPU: period IQR",
        "SCHED_FIFO: late frames (> 1 ms) per 10 000 at 3 loads/CPU",
        "normal_dedicated: late frames (> 1 ms) per 10 000 at 3 loads/CPU"]
    assert one[0]["SCHED_FIFO: late frames (> 1 ms) per 10 000 at 3 loads/CPU"][0] == \
        pytest.approx(25 / 1200 * 10_000)
    assert one[1]["operators_pinned"] == "late frames fewer"
    same = exchange.compare(one, one)
    assert same == {"misses": [], "differ": [], "judged": 8, "changes": 3, "passed": True}
    # The target alone three times as jittery in a second session: that rung, and it alone.
    moved = runs.assign(period_iqr_us=runs["period_iqr_us"].where(runs["label"] != "alone",
                                                                   runs["period_iqr_us"] * 3))
    c = exchange.compare(one, exchange.rerun_check(moved, floor, CFG, CI95))
    assert c["misses"] == ["ladder 3. Holoscan target alone: period IQR"]
    assert c["differ"] == [] and not c["passed"]
    # Two runs of a condition: no CI, so the check cannot pass it.
    few = exchange.rerun_check(runs.groupby("label").head(2), floor, CFG, CI95)
    assert "ladder 3. Holoscan target alone: period IQR" in exchange.compare(few, few)["misses"]


def test_exchange_tells_sessions_that_differ_from_sessions_dealt_at_random():
    runs, floor = synthetic_runs()
    first = {"runs": runs, "floor": floor}
    # Every Holoscan condition twice as jittery and with twice the late frames in the second.
    second = {"runs": runs.assign(period_iqr_us=runs["period_iqr_us"] * 2, late=runs["late"] * 2),
              "floor": floor}
    r = exchange.exchange_test(first, second, CFG, CI95, draws=20, seed=3)
    assert len(r["observed"]["misses"]) == 7 and not r["observed"]["passed"]
    assert r["p_misses"] == pytest.approx(1 / 21)      # no dealt pair misses as much
    assert len(r["misses"]) == 20 and set(r["miss_rate"]) == set(
        exchange.rerun_check(runs, floor, CFG, CI95)[0])
    assert 0 <= r["pass_rate"] <= min(r["land_rate"], r["same_rate"]) <= 1
    # Seeded: the same seed deals the same pairs.
    again = exchange.exchange_test(first, second, CFG, CI95, draws=3, seed=3)
    assert again["misses"].tolist() == r["misses"][:3].tolist()


def test_the_rerun_check_with_power_names_the_conditions_two_sessions_differ_in():
    runs, _ = synthetic_runs()
    same = recheck.session_test(runs, runs, alpha=0.05)
    # 7 conditions × 2 quantities, and every condition's typical jitter at once; the late frames
    # of the 4 conditions without one could never reject, and Tarone's rule sets them aside.
    assert same == {"tests": 11, "set_aside": 4, "phi": 1.0, "differ": [], "passed": True}
    # normal_dedicated with 4× its late frames; the pinned loads twice as jittery.
    nd, pinned = runs["label"] == "nd", runs["label"] == "pinned"
    changed = runs.assign(late=np.where(nd, runs["late"] * 4, runs["late"]),
                          period_iqr_us=np.where(pinned, runs["period_iqr_us"] * 2,
                                                 runs["period_iqr_us"]))
    r = recheck.session_test(runs, changed, alpha=0.05)
    assert sorted(r["differ"]) == ["every condition: typical jitter", "nd: late frames",
                                   "pinned: typical jitter"]
    assert not r["passed"]
    # Every condition 3 % more jittery: too little for one condition's 5 runs, not for all.
    wider = recheck.session_test(runs, runs.assign(period_iqr_us=runs["period_iqr_us"] * 1.03),
                                  alpha=0.05)
    assert wider["differ"] == ["every condition: typical jitter"]
    # Fewer than 3 runs of a condition in either session: not tested.
    assert recheck.session_test(runs, runs.groupby("label").head(2), alpha=0.05)["tests"] == 0


def test_tarone_counts_only_the_tests_that_could_reach_their_level():
    # Two continuous tests (least p 0), late-frame tests with too few, some and many late frames.
    least = np.array([0.0, 0.0, 0.5, 0.01, 1e-6])
    # K = 1 and 2: more tests than K could reach 0.05 / K; K = 3: three can reach 0.0167.
    assert recheck._tarone(least, 0.05).tolist() == [True, True, False, True, True]
    assert recheck._tarone(np.zeros(4), 0.05).all()


def test_the_rerun_check_pools_one_dispersion_over_the_pair():
    runs, _ = synthetic_runs()
    # One condition's runs far more dispersed than Poisson in the second session.
    wild = runs.assign(late=np.where(runs["label"] == "head", [0, 0, 0, 0, 25] * 7, runs["late"]))
    r = recheck.session_test(runs, wild, alpha=0.05)
    pairs = [(x["late"], x["n"]) for s in (runs, wild) for _, x in s.groupby("label")
             if x["late"].sum()]
    assert r["phi"] == pytest.approx(rates.dispersion(*pairs))
    assert r["phi"] > 2


def test_the_rerun_check_keeps_its_level_on_pairs_without_a_session_effect():
    """Two sessions drawn from one model (gamma-Poisson late frames, log-normal IQR): the
    check fails about as often as its family-wise level allows, or less."""
    rng = np.random.default_rng(11)
    runs, _ = synthetic_runs()
    mean = runs.groupby("label")["late"].transform("mean").to_numpy()

    def session() -> pd.DataFrame:
        rate = rng.gamma(2.0, np.maximum(mean, 1e-9) / 2.0)
        return runs.assign(late=rng.poisson(rate),
                           period_iqr_us=runs["period_iqr_us"] * rng.lognormal(0, 0.05, len(runs)))

    draws = 200
    failed = sum(not recheck.session_test(session(), session(), alpha=0.05)["passed"]
                 for _ in range(draws))
    assert failed / draws <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / draws)


def test_injections_change_only_what_they_name():
    runs, _ = synthetic_runs()
    where = recheck.targets(runs, CFG, CI95)
    assert where == {"h2": "nd", "fixes": "head", "fix": "si"}
    # A fix that one session of the pair measured (the rotation) is no target to remove.
    assert recheck.targets(runs, CFG, CI95, twice=set(runs["label"]) - {"si"})["fix"] == "pinned"
    assert recheck.targets(runs, CFG, CI95, twice={"nd", "head"})["fix"] is None
    rng = np.random.default_rng(0)
    doubled = recheck.inject(runs, "late ×2 at H2's baseline", where, rng)
    nd = runs["label"] == "nd"
    assert (doubled.loc[nd, "late"] >= runs.loc[nd, "late"]).all()
    assert doubled.loc[nd, "late"].sum() > runs.loc[nd, "late"].sum()
    assert doubled.loc[~nd].equals(runs.loc[~nd])
    removed = recheck.inject(runs, "a fix removes its late frames", where, rng)
    assert (removed.loc[runs["label"] == "si", "late"] == 0).all()
    assert recheck.inject(runs, "typical jitter ×1.5", where, rng)["period_iqr_us"].tolist() == \
        pytest.approx((runs["period_iqr_us"] * 1.5).tolist())
    assert recheck.inject(runs, "none", where, rng).equals(runs)


def test_a_doubling_has_the_mean_and_variance_of_a_doubled_quasi_poisson_rate():
    """Late ×2 adds an independent run's worth at the given rate and φ: a run of μ = 10 late
    frames and φ = 2 ends with mean 2μ and variance 2φμ (its own count doubled: 4φμ + μ)."""
    rng = np.random.default_rng(5)
    size, mu, phi = 40_000, 10.0, 2.0
    own = recheck._overdispersed(np.full(size, mu), phi, rng)
    assert own.mean() == pytest.approx(mu, rel=0.02)
    assert own.var() == pytest.approx(phi * mu, rel=0.05)
    runs = pd.DataFrame({"label": "nd", "late": own, "n": 1000, "period_iqr_us": 1.0})
    doubled = recheck.inject(runs, "late ×2 at H2's baseline", {"h2": "nd"}, rng,
                             rate={"nd": mu / 1000}, phi=phi)["late"]
    assert doubled.mean() == pytest.approx(2 * mu, rel=0.02)
    assert doubled.var() == pytest.approx(2 * phi * mu, rel=0.05)
    # Poisson counts (φ = 1) stay Poisson.
    poisson = recheck._overdispersed(np.full(size, mu), 1.0, rng)
    assert poisson.var() == pytest.approx(mu, rel=0.05)


def test_calibrate_reports_calibration_and_power_per_injection():
    runs, floor = synthetic_runs()
    pair = {"runs": runs, "floor": floor}
    r = recheck.calibrate(pair, pair, CFG, CI95, draws=5, seed=1)
    assert set(r["power"]) == set(recheck.INJECTIONS) - {"none"}
    assert r["observed"]["passed"] and r["draws"] == 5
    assert all(0 <= x <= 1 for x in [r["words_agree"], r["calibration"], *r["power"].values()])
    # Whether any check could catch each injection: normal_dedicated's 200 late frames of
    # 1,200 per session, doubled in the second, at Holm's strictest level.
    h2 = r["powerable"]["late ×2 at H2's baseline"]
    assert h2["late_frames"] == pytest.approx(600)
    assert h2["best_power"] == pytest.approx(
        rates.exact_test_power(200, 400, 0.5, 0.05 / r["tests"]))
    assert set(r["powerable"]) == set(recheck.TARGET_OF)
    # Runs twice as dispersed as Poisson carry half the late frames' information.
    where = recheck.targets(runs, CFG, CI95)
    h2 = recheck.powerable(runs, runs, where, 11, phi=2.0, alpha=0.05)["late ×2 at H2's baseline"]
    assert h2["best_power"] == pytest.approx(rates.exact_test_power(100, 200, 0.5, 0.05 / 11))
    # No fix measured: nothing to remove, no power to give.
    no_fix = runs[~runs["label"].isin(["si", "pinned"])]
    r = recheck.calibrate({"runs": no_fix, "floor": floor}, {"runs": no_fix, "floor": floor},
                           CFG, CI95, draws=2)
    assert r["power"]["a fix removes its late frames"] is None
    assert r["powerable"]["a fix removes its late frames"] is None


def test_the_power_plan_sizes_each_comparison_from_its_baseline():
    from rtstudy.experiments.e2_rt_threads.checks import power

    runs, _ = synthetic_runs()
    cfg = {"ladder_policy": "SCHED_FIFO", "fps": 60, "headline_duration_s": 4}
    table = power.plan(runs, cfg, CI95).set_index("change")
    fifo = table.loc["SCHED_FIFO"]
    # normal_dedicated: 200 late in 1,200 frames.
    assert fifo["rate_per_10k"] == pytest.approx(200 / 1200 * 1e4)
    # Planned for a change that quarters them, shown as at least halved (protocol v1).
    assert fifo["worthwhile"] == pytest.approx(
        rates.frames_needed(200 / 1200, 0.25, fifo["phi"], 0.95), rel=1e-9)
    assert fifo["worthwhile_runs"] == np.ceil(fifo["worthwhile"] / 240)
    assert fifo["worthwhile_min"] == pytest.approx(fifo["worthwhile"] / 3600)
    # The fixes' baseline (25 late in 1,200) is rarer: more frames to decide.
    assert table.loc["switch_interval", "worthwhile"] > fifo["worthwhile"]
    text = power.text(table.reset_index(), cfg, "vm-test")
    assert "×0.25 shown as fewer:" in text and "vm-test" in text
