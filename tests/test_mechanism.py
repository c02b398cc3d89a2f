"""E2's late-frame mechanisms from a synthetic trace whose every interval is known.

One frame per mechanism (attribution.PATTERNS), built from the scheduler's and the GIL
probes' events exactly as `rtstudy.apps.trace.parse` gives them: each frame's lateness, its
GIL wait, what the GIL's holder did meanwhile and the mechanism are fixed to the nanosecond.
"""
import numpy as np
import pandas as pd
import pytest

from rtstudy.apps.trace import parse
from rtstudy.experiments.e2_rt_threads.analysis import attribution
from rtstudy.experiments.e2_rt_threads.analysis.headline import MechanismTotals
from rtstudy.inference.stats import CI

PERIOD, W, H, O = 10_000_000, 11, 99, 77  # the target's worker, a load (GIL holder), another
COLUMNS = ["t_ns", "event", "tid", "pid", "comm", "prev_pid", "prev_comm", "prev_state", "prio"]
NAMES = {W: "WorkerThread-1", H: "WorkerThread-2", O: "irq/9-acpi", 0: "swapper/1"}
# The kernel's priorities: the worker SCHED_FIFO 80, the IRQ thread FIFO 50, the load and the
# idle task normal.
PRIO = {W: 19, H: 120, O: 49, 0: 120}


def waking(t, who, by=0):
    return (t, "waking", by, who, NAMES[who], -1, "", "", PRIO[who])


def switch(t, out, into, state="S"):
    return (t, "switch", out, into, NAMES[into], out, NAMES[out], state, PRIO[into])


def gil(t, event, who):
    return (t, event, who, who, "", -1, "", "", -1)


def release(k):
    return k * PERIOD + 50_000


def target_frame(k, waits, start):
    """The worker's own events of frame k: ``waits`` (offsets from the release) then compute
    from ``start`` for 0.1 ms, the GIL dropped and back to sleep."""
    r = release(k)
    return [(r + dt, *rest) for dt, *rest in waits] + [
        gil(r + start + 100_000, "gil_drop", W), switch(r + start + 110_000, W, 0)]


def rows():
    """Frame 1 is on time (the grid's anchor); frames 2-9 are late, one mechanism each."""
    r = release
    ev = [switch(5_000_000, W, 0)]
    # 1: on time.
    ev += [(r(1) - 20_000, *waking(0, W)[1:]), (r(1) - 10_000, *switch(0, 0, W, "R")[1:]),
           (r(1) - 8_000, *gil(0, "gil_take", W)[1:]), (r(1) - 5_000, *gil(0, "gil_taken", W)[1:])]
    ev += [gil(r(1) + 100_000, "gil_drop", W), switch(r(1) + 110_000, W, 0)]

    def frame(k, steps, start):
        return [(r(k) + dt, *e[1:]) for dt, e in steps] + target_frame(k, [], start)

    take = [(0, waking(0, W)), (10_000, switch(0, 0, W, "R")), (20_000, gil(0, "gil_take", W)),
            (30_000, switch(0, W, 0))]
    # 2: the holder H took the GIL, was preempted by O, ran again only 2 ms after the release.
    ev += [switch(r(2) - 1_100_000, 0, H, "R"), gil(r(2) - 1_000_000, "gil_taken", H),
           switch(r(2) - 500_000, H, O, "R"), switch(r(2) + 2_000_000, O, H, "R"),
           gil(r(2) + 2_100_000, "gil_drop", H), switch(r(2) + 2_200_000, H, 0)]
    ev += frame(2, take + [(2_110_000, waking(0, W, by=H)), (2_120_000, switch(0, 0, W, "R")),
                           (2_130_000, gil(0, "gil_taken", W))], 2_150_000)
    # 3: H holds the GIL and runs until CPython's switch interval makes it drop it.
    ev += [waking(r(3) - 200_000, H), switch(r(3) - 190_000, 0, H, "R"),
           gil(r(3) - 100_000, "gil_taken", H), gil(r(3) + 5_020_000, "gil_drop", H),
           switch(r(3) + 5_100_000, H, 0)]
    ev += frame(3, take + [(5_030_000, waking(0, W, by=H)), (5_040_000, switch(0, 0, W, "R")),
                           (5_050_000, gil(0, "gil_taken", W))], 5_060_000)
    # 4: the GIL comes at once, then the worker blocks 1.5 ms on another lock.
    ev += frame(4, [(0, waking(0, W)), (10_000, switch(0, 0, W, "R")),
                    (20_000, gil(0, "gil_take", W)), (30_000, gil(0, "gil_taken", W)),
                    (40_000, switch(0, W, 0)), (1_540_000, waking(0, W, by=O)),
                    (1_550_000, switch(0, 0, W, "R"))], 1_560_000)
    # 5: woken on time, no CPU for 1.2 ms.
    ev += frame(5, [(0, waking(0, W)), (1_200_000, switch(0, O, W, "R")),
                    (1_210_000, gil(0, "gil_take", W)), (1_220_000, gil(0, "gil_taken", W))],
                1_230_000)
    # 6: woken 1.3 ms late.
    ev += frame(6, [(1_300_000, waking(0, W)), (1_310_000, switch(0, 0, W, "R")),
                    (1_315_000, gil(0, "gil_take", W)), (1_320_000, gil(0, "gil_taken", W))],
                1_330_000)
    # 7: H took the GIL and went to sleep holding it until O woke it.
    ev += [switch(r(7) - 400_000, 0, H, "R"), gil(r(7) - 300_000, "gil_taken", H),
           switch(r(7) - 200_000, H, 0), waking(r(7) + 1_800_000, H, by=O),
           switch(r(7) + 1_810_000, 0, H, "R"), gil(r(7) + 1_820_000, "gil_drop", H),
           switch(r(7) + 1_900_000, H, 0)]
    ev += frame(7, take + [(1_830_000, waking(0, W, by=H)), (1_840_000, switch(0, 0, W, "R")),
                           (1_850_000, gil(0, "gil_taken", W))], 1_860_000)
    # 8: H drops the GIL 40 µs after the release, but the worker is woken only 1.5 ms later.
    ev += [switch(r(8) - 400_000, 0, H, "R"), gil(r(8) - 300_000, "gil_taken", H),
           gil(r(8) + 40_000, "gil_drop", H), switch(r(8) + 100_000, H, 0)]
    ev += frame(8, take + [(1_540_000, waking(0, W, by=O)), (1_550_000, switch(0, 0, W, "R")),
                           (1_560_000, gil(0, "gil_taken", W))], 1_570_000)
    # 9: woken on time, no CPU for 1.4 ms while the load H, a normal thread, had it: throttled.
    ev += frame(9, [(0, waking(0, W)), (1_400_000, switch(0, H, W, "R")),
                    (1_410_000, gil(0, "gil_take", W)), (1_420_000, gil(0, "gil_taken", W))],
                1_430_000)
    return ev


STARTS = [release(0), release(1), release(2) + 2_150_000, release(3) + 5_060_000,
          release(4) + 1_560_000, release(5) + 1_230_000, release(6) + 1_330_000,
          release(7) + 1_860_000, release(8) + 1_570_000, release(9) + 1_430_000]
EXPECTED = {2: "gil_holder_preempted", 3: "gil_holder_running", 4: "blocked_not_gil",
            5: "cpu_wait", 6: "woken_late", 7: "gil_holder_asleep", 8: "gil_handover",
            9: "throttled"}


def sidecar(probed=True):
    return {"summary": {"threads": [{"tid": W, "comm": NAMES[W]}, {"tid": H, "comm": NAMES[H]}],
                        "trace": {"gil": {"probed": probed}}},
            "operators": {"target": {"sched": {"tid": W}}},
            "requested": {"config": {"period_ns": PERIOD, "policy": "SCHED_FIFO"}}}


def attributed(probed=True):
    trace = pd.DataFrame(rows(), columns=COLUMNS)
    if not probed:
        trace = trace[~trace["event"].str.startswith("gil_")]
    samples = pd.DataFrame({"frame": range(len(STARTS)), "t_start_ns": STARTS})
    return attribution.attribute_run(trace, samples, sidecar(probed), 0).set_index("frame")


def test_each_mechanism_is_attributed_exactly():
    att = attributed()
    assert list(att.index) == list(range(1, 10))
    assert att["pattern"].drop(1).to_dict() == EXPECTED
    assert att.loc[1, "lateness_ms"] == 0 and att.loc[1, "gil_wait_ms"] == 0
    assert np.allclose(att[list(attribution.PARTS)].sum(axis=1), att["lateness_ms"])
    # The GIL wait is split exactly among its holder's states and the free hand-over.
    split = ["holder_running_ms", "holder_preempted_ms", "holder_asleep_ms", "gil_free_ms"]
    assert np.allclose(att[split].sum(axis=1), att["gil_wait_ms"])
    ms = att[["lateness_ms", "gil_wait_ms", *split]].round(6)
    assert ms.loc[2].tolist() == [2.15, 2.11, 0.1, 1.98, 0.0, 0.03]
    assert ms.loc[3].tolist() == [5.06, 5.03, 5.0, 0.0, 0.0, 0.03]
    assert ms.loc[4].tolist() == [1.56, 0.01, 0.0, 0.0, 0.0, 0.01]
    assert ms.loc[7].tolist() == [1.86, 1.83, 0.01, 0.01, 1.78, 0.03]
    assert ms.loc[8].tolist() == [1.57, 1.54, 0.02, 0.0, 0.0, 1.52]
    assert att.loc[4, "blocked_ms"] == pytest.approx(1.5)
    loads = "the app's own threads (loads)"
    assert att.loc[2, "gil_holder"] == loads
    assert att.loc[2, "holder_preempted_by"] == "other tasks (kernel, system)"
    assert att.loc[3, "holder_preempted_by"] == "" and att.loc[5, "gil_holder"] == ""
    # Frame 7's holder slept holding the GIL until O (not of the app) woke it.
    assert att.loc[7, "holder_woken_by"] == "other tasks (kernel, system)"
    assert att.loc[2, "holder_woken_by"] == att.loc[3, "holder_woken_by"] == ""
    # A real-time worker kept from its CPU by a normal thread (9), not by a real-time one (5).
    assert att.loc[9, "displaced"] == loads and att.loc[9, "displaced_normal"]
    assert att.loc[5, "displaced"] == "other tasks (kernel, system)"
    assert not att.loc[5, "displaced_normal"]


def test_without_gil_probes_a_block_is_not_called_the_gil():
    att = attributed(probed=False)
    assert att["gil_wait_ms"].isna().all() and (att["gil_holder"] == "").all()
    assert att.loc[[2, 3, 4, 7, 8], "pattern"].eq("blocked").all()
    assert att.loc[5, "pattern"] == "cpu_wait" and att.loc[6, "pattern"] == "woken_late"
    assert att.loc[9, "pattern"] == "throttled"


def test_mechanism_summary_counts_late_frames_by_mechanism():
    att = attributed().reset_index().assign(
        label="SCHED_FIFO-lf3-native-trace", cell_id="c1", policy="SCHED_FIFO",
        topology="dedicated", dispatcher="other", load_placement="operators", load_factor=3.0,
        loads=6, load_work_model="native", switch_interval_ms=5.0, wake_mode="sleep", fps=60,
        pinned=True)
    (row,) = attribution.mechanism_summary(att, threshold_ms=1.0).to_dict("records")
    assert (row["frames"], row["late"], row["runs"], row["late_runs"]) == (9, 8, 1, 1)
    assert row["gil_probed"]
    assert {k: row[k] for k in attribution.PATTERNS} == {
        **dict.fromkeys(attribution.PATTERNS, 0), **dict.fromkeys(EXPECTED.values(), 1)}
    assert row["gil_holder_running_share"] == pytest.approx(1 / 8)
    # Above 2 ms only frames 2 and 3 are late.
    (row,) = attribution.mechanism_summary(att, threshold_ms=2.0).to_dict("records")
    assert row["late"] == 2 and row["gil_holder_preempted"] == row["gil_holder_running"] == 1
    # Pooled, with a key for each pattern: the record's keys are MechanismTotals' own.
    totals = attribution.mechanism_totals(attribution.mechanism_summary(att, 1.0), ["SCHED_FIFO"])
    assert list(totals) == list(MechanismTotals.__annotations__)
    assert (totals["late"], totals["gil"], totals["top"]) == (8, 4, "gil_holder_preempted")


def test_gil_probe_lines_are_parsed():
    text = "\n".join([
        "  4242 [001]  1234.000000100: rtstudy:gil_take: (7f0000001000)",
        "  4242 [001]  1234.000000300: rtstudy:gil_taken__return: (7f0000001000 <- 7f0000002000)",
        "  4243 [000]  1234.000000200: rtstudy:gil_drop: (7f0000003000)",
        "  4243 [000]  1234.000000250: probe_other:thing: (7f0000003000)"])
    cols = parse(text)
    assert cols["event"] == ["gil_take", "gil_taken", "gil_drop"]
    assert cols["tid"] == cols["pid"] == [4242, 4242, 4243]
    assert cols["t_ns"][1] == 1234 * 10**9 + 300


def test_tracing_cost_compares_traced_with_untraced_runs_of_a_condition():
    runs = pd.DataFrame({"label": ["a"] * 4, "period_iqr_us": [40.0, 50, 60, 50],
                         "late": [0, 1, 0, 0], "n": [240] * 4})
    traces = pd.DataFrame({"label": ["a-trace"] * 3, "period_iqr_us": [100.0, 90, 110],
                           "late": [2, 0, 1], "n": [150] * 3})
    (row,) = attribution.tracing_cost(runs, traces, CI(0.95)).to_dict("records")
    assert row["label"] == "a" and row["ratio"] == pytest.approx(2.0)
    assert row["low"] > 1 and (row["late"], row["frames"]) == (1, 960)
    assert (row["traced_late"], row["traced_frames"]) == (3, 450)
