"""E2 with real policies at smoke size: every factor, the dispatcher read back, the floor, the
trace and its attribution; its checks before running; and its statistics."""
from __future__ import annotations

import copy
import json
import os
import subprocess

import numpy as np
import pandas as pd
import pytest

from helpers import require_policy
from rtstudy import params
from rtstudy.apps.trace import PROBE_GROUP, parse as trace_parse
from rtstudy.experiments.e2_rt_threads import conditions
from rtstudy.experiments.e2_rt_threads.analysis import (dataset as analysis, attribution, contrasts,
                                                        ladder)
from rtstudy.experiments.e2_rt_threads.measuring import plan
from rtstudy.experiments.e2_rt_threads.params import FIXES
from rtstudy.inference.stats import CI
from rtstudy.machine import placement, tracefs
from rtstudy.machine.sysdeps import which
from rtstudy.measure.readback import verify_realtime
from rtstudy.measure.realtime import RealtimeRequest
from rtstudy.policies import BY_NUMBER, RT_POLICIES

pytestmark = pytest.mark.cells


def smoke_cfg(**changes) -> dict:
    cfg = params.stage_config("e2_rt_threads", "smoke")
    cfg.update(policies=["normal", "normal_dedicated", "SCHED_FIFO", "SCHED_DEADLINE"],
               load_factors=[0, 1], duration_s=0.5, dispatchers=["other", "fifo"],
               load_placements=["operators", "process", "threads", "outside"],
               contrast_policies=["SCHED_FIFO"], seed_topologies=["seed_python"],
               ladder=True, fixes=list(FIXES))
    cfg.update(changes)
    return cfg


def sidecar(out, cell) -> dict:
    return json.loads((out / cell.cell_id / "cell.json").read_text())


@pytest.fixture(scope="module")
def e2_run(tmp_path_factory, fingerprint, sweep):
    for policy in ("SCHED_FIFO", "SCHED_DEADLINE"):
        require_policy(fingerprint, policy)
    before = tracefs.mounts()
    cfg = smoke_cfg()
    out = tmp_path_factory.mktemp("e2")
    cells = plan.plan(cfg, fingerprint, {})
    sweep(cells, out, cfg["order_seed"])
    return cfg, cells, out, before


def holoscan_cells(cells):
    return [c for c in cells if c.module == plan.MODULE]


def test_each_policy_is_applied_and_produces_frames(e2_run):
    cfg, cells, out, _ = e2_run
    for cell in holoscan_cells(cells):
        sc = sidecar(out, cell)
        policy = cell.config["policy"]
        got = BY_NUMBER[sc["operators"]["target"]["sched"]["policy"]]
        assert got == (policy if policy.startswith("SCHED_") else "SCHED_OTHER"), cell.cell_id
        assert sc["realtime_verified"] is bool(cell.realtime)
        assert sc["summary"]["frames"] == cell.config["frames"]
        if cell.config["load_placement"] == "operators":
            assert all(t > 0 for t in sc["summary"]["load_ticks"]), "loads must have run"
        if cell.config["pinned"]:
            assert sc["operators"]["target"]["sched"]["cpus"] == cell.config["target_cpus"]


def test_a_fifo_dispatcher_is_read_back_on_its_thread(e2_run):
    cfg, cells, out, _ = e2_run
    fifo = [c for c in holoscan_cells(cells) if c.config["dispatcher"] == "fifo"]
    other = [c for c in holoscan_cells(cells) if c.config["dispatcher"] == "other"]
    assert fifo and other
    for cell in fifo:
        sc = sidecar(out, cell)
        d = sc["operators"]["dispatcher"]["sched"]
        assert (BY_NUMBER[d["policy"]], d["priority"]) == ("SCHED_FIFO",
                                                              cfg["dispatcher_priority"])
        assert sc["realtime_verified"] and \
            sc["summary"]["env"]["GXF_EBS_DISPATCHER_SCHED_POLICY"] == "SCHED_FIFO"
    for cell in other:
        d = sidecar(out, cell)["operators"]["dispatcher"]["sched"]
        assert BY_NUMBER[d["policy"]] == "SCHED_OTHER", cell.cell_id


def test_a_dispatcher_that_did_not_get_its_policy_fails_the_run():
    request = RealtimeRequest(plan.DISPATCHER, "SCHED_FIFO", priority=99)
    sched = {"tid": 1, "policy": 0, "priority": 0, "cpus": [0, 1]}
    problems = verify_realtime((request,), {"operators": {plan.DISPATCHER: {"ticks": 1,
                                                                             "sched": sched}}}, "")
    assert problems and "'dispatcher' requested SCHED_FIFO but its thread ran with SCHED_OTHER" \
        in problems[0]
    missing = verify_realtime((request,), {"operators": {}}, "")
    assert missing and "never ran" in missing[0]


def test_an_out_of_process_load_runs_during_the_cell_and_is_gone_after(e2_run):
    _, cells, out, _ = e2_run
    process = [c for c in cells if c.config["load_placement"] == "process"]
    assert process
    for cell in process:
        stress = sidecar(out, cell)["summary"]["stress_ng"]
        assert stress["running_at_stop"] is True, cell.cell_id
        assert not os.path.exists(f"/proc/{stress['pid']}") or \
            "stress-ng" not in open(f"/proc/{stress['pid']}/comm").read()


def test_plain_threads_load_the_process_without_being_operators(e2_run):
    _, cells, out, _ = e2_run
    threads = [c for c in holoscan_cells(cells) if c.config["load_placement"] == "threads"]
    assert threads
    for cell in threads:
        sc = sidecar(out, cell)
        assert len(sc["summary"]["load_thread_chunks"]) == cell.config["loads"]
        assert min(sc["summary"]["load_thread_chunks"]) > 0 and sc["summary"]["load_ticks"] == []


def test_the_ladder_python_thread_is_read_back_and_paced_on_the_grid(e2_run):
    cfg, cells, out, _ = e2_run
    (cell,) = [c for c in cells if c.module == plan.PYTHREAD_MODULE]
    sc = sidecar(out, cell)
    got = sc["operators"]["python_thread"]["sched"]
    assert (BY_NUMBER[got["policy"]], got["priority"]) == (cfg["ladder_policy"],
                                                                  cfg["priority"])
    assert got["cpus"] == cell.config["target_cpus"] and sc["realtime_verified"]
    t = pd.read_parquet(out / cell.cell_id / "samples.parquet")["t_start_ns"].to_numpy()
    assert len(t) == cell.config["frames"]
    # Slept to absolute times on the grid: the mean period is the nominal one within 1 %.
    assert abs(np.diff(t).mean() / cell.config["period_ns"] - 1) < 0.01


def test_outside_loads_are_the_same_threads_in_another_process(e2_run):
    _, cells, out, _ = e2_run
    outside = [c for c in holoscan_cells(cells) if c.config["load_placement"] == "outside"]
    assert outside
    for cell in outside:
        sc = sidecar(out, cell)
        chunks = sc["summary"]["load_thread_chunks"]
        assert len(chunks) == cell.config["loads"] and min(chunks) > 0
        assert not any(t["comm"].startswith("load") for t in sc["summary"]["threads"])


def test_each_fix_is_one_factor_away_from_the_headline_and_applied(e2_run):
    cfg, cells, out, _ = e2_run
    by_label = {c.label: c for c in holoscan_cells(cells)}
    head = next(c for c in by_label.values() if c.config["policy"] == cfg["ladder_policy"]
                and c.config["load_placement"] == "operators"
                and c.config["dispatcher"] == "other" and c.config["loads"]
                and "switch_interval_ms" not in c.config and not c.config.get("trace_s"))
    pinned = by_label[head.label + "-operators_pinned"]
    sc = sidecar(out, pinned)
    load_cpus = pinned.config["load_cpus"]
    assert load_cpus and pinned.config["target_cpus"][0] not in load_cpus
    # The load pool's threads (one per load) are pinned off the target's CPU.
    assert sum(t["cpus"] == load_cpus for t in sc["summary"]["threads"]) >= pinned.config["loads"]
    assert min(sc["summary"]["load_ticks"]) > 0
    dispatcher = by_label[head.label + "-dfifo_pinned"]
    d = sidecar(out, dispatcher)["operators"]["dispatcher"]["sched"]
    assert BY_NUMBER[d["policy"]] == "SCHED_FIFO" and len(d["cpus"]) == 1
    interval = by_label[f"{head.label}-si{cfg['switch_interval_ms']:g}"]
    assert sidecar(out, interval)["summary"]["switch_interval_s"] == \
        pytest.approx(cfg["switch_interval_ms"] / 1000)
    assert sidecar(out, head)["summary"]["switch_interval_s"] == pytest.approx(0.005)


def test_the_ladder_and_the_fixes_reach_the_analysis(e2_run):
    cfg, cells, out, _ = e2_run
    ds = analysis.load(out, cfg)
    ci = CI(0.95)
    rungs = ladder.ladder(ds.tables["runs"], ds.tables["floor"], cfg["ladder_policy"], ci)
    assert list(rungs["rung"]) == [key for key, _ in ladder.RUNGS]
    # Each rung's typical jitter and late-frame rate carry their within-run variance.
    assert (rungs["iqr_within"] > 0).all() and (rungs["late_within"] >= 0).all()
    recs = ladder.recommendations(ds.tables["runs"], cfg["ladder_policy"], ci)
    assert {"SCHED_FIFO", *cfg["fixes"]} <= set(recs["change"])
    # The CPU the loads got, as a ratio to the baseline's: computed for the pinned loads (how
    # much less they get is a measured effect, for the report, not for a test at smoke size).
    pinned = recs.set_index("change").loc["operators_pinned"]
    assert np.isfinite(pinned["cpu_ratio"]) and pinned["cpu_ratio"] > 0


def test_the_floor_is_cyclictest_read_back_as_requested(e2_run):
    cfg, cells, out, _ = e2_run
    floor = [c for c in cells if c.module == plan.FLOOR_MODULE]
    assert floor
    for cell in floor:
        sc = sidecar(out, cell)
        got = sc["operators"]["cyclictest"]["sched"]
        assert (BY_NUMBER[got["policy"]], got["priority"]) == ("SCHED_FIFO", cfg["priority"])
        assert sc["realtime_verified"] and sc["summary"]["frames"] == cell.config["frames"]
        # --laptop: no PM QoS request of its own; the host's, before it started, is recorded.
        pm_qos = sc["summary"]["pm_qos"]
        assert pm_qos["held_us"] is None and "--laptop" in sc["summary"]["command"]
        assert set(pm_qos["cpus"]) == {str(c) for c in cell.config["target_cpus"]} or not cell.config["target_cpus"]


def test_frames_runs_floor_and_attribution(e2_run):
    cfg, cells, out, before = e2_run
    ds = analysis.load(out, cfg)
    frames, runs, floor, att = (ds.tables[k] for k in ("frames", "runs", "floor", "attribution"))
    traced = [c for c in cells if c.config.get("trace_s")]
    python = [c for c in cells if c.module == plan.PYTHREAD_MODULE]  # the ladder's, no Holoscan
    assert ds.missing == [] and \
        len(runs) == len(holoscan_cells(cells)) - len(traced) + len(python)
    assert len(floor) == len([c for c in cells if c.module == plan.FLOOR_MODULE])
    for _, r in runs.iterrows():
        assert r["period_p50_ms"] <= r["period_p99_ms"] <= r["period_p99.9_ms"] <= r["period_max_ms"]
    assert (np.diff(frames.groupby("cell_id")["t_s"].apply(list).iloc[0]) > 0).all()
    if which("perf") is None:
        pytest.skip("perf is not installed: no trace to attribute")
    assert traced and set(att["label"]) <= {c.label for c in traced} and len(att)
    # The parts add up to each frame's lateness against its release, exactly.
    assert np.allclose(att[list(attribution.PARTS)].sum(axis=1), att["lateness_ms"], atol=1e-9)
    assert (att[list(attribution.PARTS)] >= 0).all().all()
    assert len(ds.tables["traces"]) == len(traced)
    # Every traced policy has attributed frames, SCHED_DEADLINE's too (its threads' priority
    # prints as -1, which the trace parser once dropped).
    assert {c.config["policy"] for c in traced} == set(att["policy"])
    assert tracefs.mounts() == before  # what perf mounted for the trace was unmounted
    # The GIL probes: recorded where the interpreter has its symbol table (else the sidecar says
    # why), removed after the trace, and the GIL wait split exactly among its holders' states.
    for cell in traced:
        gil = sidecar(out, cell)["summary"]["trace"]["gil"]
        assert gil["probed"] or ("take_gil" in gil["why"] and gil["file"] in gil["why"])
    probes = subprocess.run(["perf", "probe", "-l"], capture_output=True, text=True).stdout
    assert f"{PROBE_GROUP}:" not in probes
    assert set(att["pattern"]) <= set(attribution.PATTERNS)
    if ds.tables["traces"]["gil_probed"].all():
        split = ["holder_running_ms", "holder_preempted_ms", "holder_asleep_ms", "gil_free_ms"]
        assert np.allclose(att[split].sum(axis=1), att["gil_wait_ms"], atol=1e-9)
        assert (att["gil_wait_ms"] <= att["lateness_ms"] + 1e-9).all()
        # The worker takes the GIL for every compute: some frames wait for it, however briefly.
        assert (att["gil_wait_ms"] > 0).any()


def test_the_section_compares_the_prespecified_configurations_with_the_floor(e2_run):
    from rtstudy.experiments.e2_rt_threads.report import section

    cfg, _, out, _ = e2_run
    ds = analysis.load(out, cfg)
    built = section.build(ds, cfg, CI(0.95))
    text = "\n".join(b.text for b in built.blocks if hasattr(b, "text"))
    ratios = contrasts.floor_ratios(conditions.headline_point(ds.tables["runs"]), ds.tables["floor"],
                                    CI(0.95))
    fixed = ratios[(ratios["load_placement"] == "operators") & (ratios["dispatcher"] == "other")
                   & ratios["policy"].isin(RT_POLICIES) & (ratios["void"].map(len) == 0)]
    assert len(fixed) and "Each real-time policy in the seeds' layout" in text
    assert "Closest to the floor" not in text  # no configuration picked by its own result
    named = {q.quantity: q for q in built.quantities if "ratio to the floor" in q.quantity}
    assert set(named) == {f"{r['policy']}: std ratio to the floor at {r['load_factor']:g} loads/CPU"
                          for r in fixed.to_dict("records")}
    for r in fixed.to_dict("records"):
        q = named[f"{r['policy']}: std ratio to the floor at {r['load_factor']:g} loads/CPU"]
        assert q.value == r["ratio"] and f"{r['ratio']:.1f}×" in text
    assert "seed_python" in text and f"at least {analysis.MIN_REDUCTION:.0%}" in text


def test_trace_lines_of_a_deadline_thread_are_parsed():
    """The kernel prints a SCHED_DEADLINE thread's priority as -1; its events must not be lost
    (they were, before: no SCHED_DEADLINE frame could be attributed)."""
    text = "\n".join([
        "  4242 [001]  1234.000000100: sched:sched_waking: comm=WorkerThread-7 "
        "pid=4242 prio=-1 target_cpu=001",
        "     0 [001]  1234.000000200: sched:sched_switch: prev_comm=swapper/1 "
        "prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=WorkerThread-7 next_pid=4242 "
        "next_prio=-1",
        "  4242 [001]  1234.000000900: sched:sched_switch: prev_comm=WorkerThread-7 "
        "prev_pid=4242 prev_prio=-1 prev_state=S ==> next_comm=swapper/1 next_pid=0 "
        "next_prio=120"])
    cols = trace_parse(text)
    assert cols["event"] == ["waking", "switch", "switch"]
    assert cols["pid"] == [4242, 4242, 0] and cols["prev_pid"] == [-1, 0, 4242]
    assert cols["prio"] == [-1, -1, 120] and cols["t_ns"][0] == 1234 * 10**9 + 100


def test_a_stray_gxf_variable_is_cleared_and_recorded(tmp_path, fingerprint, monkeypatch, sweep):
    require_policy(fingerprint, "SCHED_FIFO")
    cfg = smoke_cfg(policies=["normal_dedicated"], contrast_policies=["normal_dedicated"],
                    dispatchers=["other"], load_placements=["operators"], seed_topologies=[],
                    floor=False, trace_seconds=0, ladder=False, fixes=[])
    cells = plan.plan(cfg, fingerprint, {})[:1]
    monkeypatch.setenv("GXF_EBS_DISPATCHER_SCHED_POLICY", "SCHED_FIFO")
    monkeypatch.setenv("GXF_EBS_DISPATCHER_SCHED_PRIORITY", "99")
    sweep(cells, tmp_path)
    sc = sidecar(tmp_path, cells[0])
    assert sc["env_cleared"] == {"GXF_EBS_DISPATCHER_SCHED_POLICY": "SCHED_FIFO",
                                 "GXF_EBS_DISPATCHER_SCHED_PRIORITY": "99"}
    assert "GXF_EBS_DISPATCHER_SCHED_POLICY" not in sc["summary"]["env"]
    assert BY_NUMBER[sc["operators"]["dispatcher"]["sched"]["policy"]] == "SCHED_OTHER"


def test_attribution_splits_a_synthetic_trace_exactly():
    """Release grid 10 ms; frame 2 wakes late, waits for a CPU, runs, blocks on a lock, runs."""
    period, w, load = 10_000_000, 11, 99
    starts = [50_000, 10_060_000, 21_500_000, 30_050_000]

    # Every thread of a normal policy (kernel priority 120): no CPU wait is throttling.
    def waking(t, ctx):
        return (t, "waking", ctx, w, "", -1, "", "", 120)

    def switch_in(t, prev=load):
        return (t, "switch", prev, w, "", prev, "load", "R", 120)

    def switch_out(t, state="S"):
        return (t, "switch", w, load, "load", w, "", state, 120)

    rows = [switch_out(5_000_000),
            waking(10_040_000, load), switch_in(10_045_000), switch_out(10_070_000),
            waking(20_150_000, load), switch_in(20_170_000), switch_out(20_200_000),
            waking(21_400_000, load), switch_in(21_450_000), switch_out(21_510_000),
            waking(29_990_000, load), switch_in(30_000_000), switch_out(30_100_000)]
    trace = pd.DataFrame(rows, columns=["t_ns", "event", "tid", "pid", "comm", "prev_pid",
                                        "prev_comm", "prev_state", "prio"])
    sc = {"summary": {"threads": [{"tid": 22, "comm": "dispatcher"}, {"tid": w, "comm": "w"},
                                  {"tid": load, "comm": "load"}]},
          "operators": {"target": {"sched": {"tid": w}}},
          "requested": {"config": {"period_ns": period}}}
    att = attribution.attribute_run(trace, pd.DataFrame({"frame": range(4), "t_start_ns": starts}),
                                 sc, warmup_frames=0).set_index("frame")
    assert list(att.index) == [1, 2, 3]  # frame 0 comes before the trace starts
    assert np.allclose(att[list(attribution.PARTS)].sum(axis=1), att["lateness_ms"])
    assert att["lateness_ms"].tolist() == pytest.approx([0.01, 1.45, 0.0])
    f2 = att.loc[2]
    assert (f2["wake_ms"], f2["cpu_wait_ms"], f2["blocked_ms"], f2["running_ms"]) == \
        pytest.approx((0.1, 0.07, 1.2, 0.08))
    assert f2["blocked_by"] == "the app's own threads (loads)" and f2["waker"] != "dispatcher"
    assert att.loc[1, "running_ms"] == pytest.approx(0.01) and att.loc[1, "blocked_by"] == ""
    assert f2["deviation_ms"] == pytest.approx(1.44)


@pytest.mark.parametrize("key,value,words", [
    ("priority", 0, ["e2_rt_threads.priority", ">= 1"]),
    ("priority", None, ["e2_rt_threads.priority"]),
    ("deadline_runtime_fraction", 1.0, ["deadline_runtime_fraction", "runtime >= the period"]),
    ("policies", ["SCHED_FIFO"], ["must include 'normal_dedicated'"]),
    ("policies", ["normal", "SCHED_IDLE"], ["e2_rt_threads.policies", "SCHED_IDLE"]),
    ("dispatcher_priority", 50, ["dispatcher_priority = 50", "above the worker's priority = 80"]),
    ("dispatchers", ["fifo", "rr"], ["e2_rt_threads.dispatchers", "'rr'"]),
    ("load_placements", ["process"], ["must include 'operators'"]),
    ("contrast_policies", ["SCHED_RR", "SCHED_OTHER"], ["e2_rt_threads.contrast_policies"]),
    ("seed_topologies", ["seed_rust"], ["e2_rt_threads.seed_topologies", "'seed_rust'"]),
    ("trace_seconds", 60, ["e2_rt_threads.trace_seconds = 60", "<= 30"]),
])
def test_bad_settings_are_rejected_before_running(key, value, words):
    data = copy.deepcopy(params.load())
    if value is None:
        del data["e2_rt_threads"][key]
    else:
        data["e2_rt_threads"][key] = value
    with pytest.raises(params.ParamError) as info:
        params.validate(data)
    for word in words:
        assert word in str(info.value)


def test_std_reduction_is_over_runs_with_no_ci_below_three():
    ci = CI(0.95)
    normal, rt = [0.30, 0.32, 0.28, 0.31], [0.05, 0.04, 0.06, 0.05]
    better = contrasts.std_reduction(normal, rt, ci)
    assert better.value == pytest.approx(1 - np.mean(rt) / np.mean(normal))
    # A t-interval of the log ratio (rtstudy.inference.stats): asymmetric, never past 100 %.
    assert 0.75 < better.low <= better.value <= better.high < 0.9 and better.n == 4
    worse = contrasts.std_reduction(rt, normal, ci)
    assert worse.value < 0 and worse.high < 0
    two = contrasts.std_reduction(normal[:2], rt[:2], ci)
    assert np.isfinite(two.value) and np.isnan(two.low) and np.isnan(two.high)
    assert np.isnan(contrasts.std_reduction([], [1.0], ci).value)


def test_rating_bands_follow_the_seed():
    assert [contrasts.rating(x) for x in (0.9, 0.3, 0.1, 0.01, -0.5)] == \
        ["excellent", "good", "modest", "limited", "limited"]


def test_a_pinned_dispatcher_goes_to_a_housekeeping_cpu(fingerprint):
    cfg = smoke_cfg(dispatcher_pin=True, trace_seconds=0)
    cells = plan.plan(cfg, fingerprint, {})
    pins = {r.cpus for c in cells for r in c.realtime if r.operator == plan.DISPATCHER}
    assert pins == {(fingerprint["cpu"]["online"][0],)}
    assert all(not r.cpus for c in plan.plan(smoke_cfg(trace_seconds=0), fingerprint, {})
               for r in c.realtime
               if r.operator == plan.DISPATCHER and c.config["dispatcher"] == "fifo")


def test_an_override_keeps_loads_on_the_housekeeping_cpu_as_read_back(tmp_path, fingerprint,
                                                                      sweep):
    """cpus: realtime 1, housekeeping 0: the target runs on CPU 1, every other thread on CPU 0."""
    require_policy(fingerprint, "SCHED_FIFO")
    online = fingerprint["cpu"]["online"]
    if len(online) < 2:
        pytest.skip("needs 2 CPUs")
    rt, hk = online[-1], online[0]
    configs = {"cpus": {"realtime": str(rt), "housekeeping": str(hk)}}
    where = placement.resolve(configs["cpus"], fingerprint)
    cfg = smoke_cfg(trace_seconds=0, floor=False)
    cells = [c for c in plan.plan(cfg, fingerprint, configs)
             if c.config["policy"] == "SCHED_FIFO" and c.config["loads"] > 0]
    assert cells and all(c.config["target_cpus"] == [rt] for c in cells)
    assert all(c.config["loads"] == round(c.config["load_factor"] * 1) for c in cells)
    sweep(cells[:1], tmp_path, cfg["order_seed"], where)
    seen = sidecar(tmp_path, cells[0])["placement"]
    assert (seen["realtime"], seen["housekeeping"], seen["source"]) == ([rt], [hk], "params")
    # Only the real-time target's thread ran on the real-time CPU; loads and pools stayed off it.
    assert seen["held"] and len(seen["outside"]) == 1, seen
    assert sum(t["cpus"] == [hk] and t["samples"] > 1 for t in seen["threads"]) >= 2


def test_the_fragment_fix_runs_the_target_in_a_process_of_its_own(tmp_path, fingerprint, sweep):
    """The fragment fix at smoke size (1 s, 1 run): the target's policy is read back in the
    cell's process, the same loads ran in the load fragment's process, and every frame's
    message reached the receiver there, its latency recorded."""
    require_policy(fingerprint, "SCHED_FIFO")
    cfg = smoke_cfg(policies=["normal_dedicated", "SCHED_FIFO"], dispatchers=["other"],
                    load_placements=["operators"], seed_topologies=[], floor=False,
                    trace_seconds=0, ladder=False, fixes=["fragment"], headline_duration_s=1)
    cells = plan.plan(cfg, fingerprint, {})
    (cell,) = [c for c in cells if c.config["load_placement"] == "fragment"]
    head = next(c for c in cells if c.label == cell.label.removesuffix("-fragment"))
    assert cell.config["loads"] == head.config["loads"] > 0
    sweep([cell], tmp_path)
    sc = sidecar(tmp_path, cell)
    got = sc["operators"]["target"]["sched"]
    assert sc["realtime_verified"] and BY_NUMBER[got["policy"]] == "SCHED_FIFO"
    assert got["cpus"] == cell.config["target_cpus"]
    summary, frames = sc["summary"], cell.config["frames"]
    assert summary["frames"] == frames
    far = summary["fragment"]["load_process"]
    assert far["exit_code"] == 0 and not os.path.exists(f"/proc/{far['pid']}")
    assert len(summary["load_ticks"]) == cell.config["loads"] and min(summary["load_ticks"]) > 0
    # The samples keep the experiment's schema; the messages are a table of their own.
    samples = pd.read_parquet(tmp_path / cell.cell_id / "samples.parquet")
    assert set(samples.columns) == set(analysis.SAMPLES)
    messages = pd.read_parquet(tmp_path / cell.cell_id / analysis.MESSAGES_FILE)
    assert messages["frame"].tolist() == list(range(frames))
    latency_ms = (messages["t_recv_ns"] - messages["t_send_ns"]) / 1e6
    assert (latency_ms > 0).all() and latency_ms.max() < 1000
    warmup = cfg["warmup_frames"]
    assert summary["messages"]["count"] == frames - warmup
    assert 0 < summary["messages"]["p50_us"] < 100_000  # plausible on one host: under 100 ms
    assert summary["messages"]["p50_us"] <= summary["messages"]["p99_us"] <= \
        summary["messages"]["max_us"]
    # The analysis reads them beside the runs.
    ds = analysis.load(tmp_path, cfg)
    (row,) = ds.extra["messages"].to_dict("records")
    assert (row["cell_id"], row["messages"], row["lost"]) == (cell.cell_id, frames - warmup, 0)
    assert row["message_p50_us"] == pytest.approx(summary["messages"]["p50_us"])
    assert ds.tables["runs"]["load_placement"].tolist() == ["fragment"]
    # The CPU both processes used between the first frame and the last: the loads' share.
    (load_cpu,) = ds.tables["runs"]["load_cpu"]
    assert 0.5 < load_cpu < len(fingerprint["cpu"]["online"]) + 0.25


def test_a_load_process_that_wrote_nothing_fails_the_cell_quoting_its_last_lines(tmp_path,
                                                                               capsys):
    """Its output reaches the cell's log whole, and the failure's one line quotes its end: the
    cell's reason keeps only the cell's last lines, so a CI log would otherwise say nothing."""
    from rtstudy.experiments.e2_rt_threads.measuring import fragments
    log = tmp_path / "load.log"
    log.write_text("[warning] noise\n\nTraceback (most recent call last):\n  File x\n"
                   "ValueError: the receiver saw 3 of 70 frames\n")
    tail = fragments.relay(log)
    assert capsys.readouterr().err == log.read_text()
    assert tail == ("[warning] noise | Traceback (most recent call last): |   File x | "
                    "ValueError: the receiver saw 3 of 70 frames")
    far = {"load_process": {"pid": 1, "exit_code": 1, "ports": {}, "last_lines": tail}}
    with pytest.raises(RuntimeError, match=r"exit status 1\); its last lines: .*3 of 70") as err:
        fragments.add_results(far, None, 0, {}, {}, {})
    assert "\n" not in str(err.value)
    assert fragments.relay(tmp_path / "absent.log") == ""


def test_the_fragment_ports_are_free_and_outside_the_kernels_ephemeral_range(tmp_path):
    """Outgoing connections take their ports from the ephemeral range: the fragments' ports
    come from below it, so nothing on the machine takes one before Holoscan binds it."""
    import socket

    from rtstudy.experiments.e2_rt_threads.measuring import fragments
    low = fragments.ephemeral_low()
    ports = fragments.free_ports(4)
    assert len(set(ports)) == 4 and all(1024 <= p < low for p in ports)
    for port in ports:
        with socket.socket() as s:
            s.bind((fragments.HOST, port))  # free: binding it raises nothing
    (tmp_path / "range").write_text("40000\t60999\n")
    assert fragments.ephemeral_low(str(tmp_path / "range")) == 40000
    assert fragments.ephemeral_low(str(tmp_path / "absent")) == 32768
