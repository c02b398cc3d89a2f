"""H5a's check (rtstudy.inference.records): Holoscan 5.0's accepted placement record against the
kernel's read-back of each thread, on synthetic cells (a match, and each kind of mismatch found)."""
from __future__ import annotations

import copy

from rtstudy.inference import records

FIFO = {"affinity": [1], "irq_isolation": 0, "probe_failure_policy": 0, "wake_mode": 0,
        "scheduling": {"policy": "fifo", "priority": 80, "deadline": None}}
DEADLINE = {"affinity": None, "irq_isolation": 0, "probe_failure_policy": 0, "wake_mode": 0,
            "scheduling": {"policy": "deadline", "priority": None,
                           "deadline": {"runtime_ns": 3_000_000, "deadline_ns": 10_000_000,
                                        "period_ns": 10_000_000}}}
OTHER = {"affinity": [1], "scheduling": {"policy": "other", "priority": None, "deadline": None}}


def sched(policy, priority=0, cpus=(0, 1), runtime=0, deadline=0, period=0) -> dict:
    return {"policy": policy, "priority": priority, "cpus": list(cpus), "nice": 0, "tid": 7,
            "runtime_ns": runtime, "deadline_ns": deadline, "period_ns": period}


def cell(cell_id: str, placed: dict[str, dict], read: dict[str, dict]) -> dict:
    return {"cell_id": cell_id,
            "summary": {"placements": [{"authored_name": n, "accepted": a, "requested": a}
                                       for n, a in placed.items()]},
            "operators": {n: {"sched": s} for n, s in read.items()}}


def test_threads_that_ran_as_recorded_match():
    assert records.thread_mismatches(FIFO, sched(1, 80, cpus=[1])) == []
    # No affinity asked for: the thread keeps the process's CPUs, whichever they are.
    assert records.thread_mismatches(DEADLINE, sched(6, cpus=[0], runtime=3_000_000,
                                                     deadline=10_000_000, period=10_000_000)) == []
    # The kernel keeps a slice in runtime for SCHED_OTHER: not a reservation, not compared.
    assert records.thread_mismatches(OTHER, sched(0, cpus=[1], runtime=1_400_000)) == []


def test_each_field_that_differs_is_named():
    assert records.thread_mismatches(FIFO, sched(0, 0, cpus=[1])) == [
        "policy: recorded 1, kernel 0", "priority: recorded 80, kernel 0"]
    assert records.thread_mismatches(FIFO, sched(1, 80, cpus=[0, 1])) == [
        "cpus: recorded [1], kernel [0, 1]"]
    assert records.thread_mismatches(DEADLINE, sched(6, runtime=2_000_000, deadline=10_000_000,
                                                     period=20_000_000)) == [
        "runtime_ns: recorded 3000000, kernel 2000000",
        "period_ns: recorded 10000000, kernel 20000000"]
    assert records.thread_mismatches(FIFO, None) == ["thread not read back"]


def test_an_audit_counts_every_record_and_names_the_cell_of_a_mismatch():
    good = cell("c1", {"rx": DEADLINE, "tx": DEADLINE},
                {n: sched(6, runtime=3_000_000, deadline=10_000_000, period=10_000_000)
                 for n in ("rx", "tx")})
    bad = cell("c2", {"target": FIFO}, {"target": sched(0, cpus=[1])})
    four_x = {"cell_id": "c3", "summary": {}, "operators": {"target": {"sched": sched(1, 80)}}}
    result = records.audit([good, bad, four_x])
    assert (result["cells"], result["threads"]) == (2, 3)
    assert result["mismatches"] == ["c2 target: policy: recorded 1, kernel 0; "
                                    "priority: recorded 80, kernel 0"]
    assert records.verdict(result) == records.FAILS
    assert records.finding(result).startswith("fails: 2 of 3 threads in 2 cells")
    assert "c2 target" in records.finding(result)
    assert records.verdict(records.audit([good])) == records.HOLDS
    # 4.x cells only: nothing to compare, no verdict either way.
    assert records.verdict(records.audit([four_x])) == records.NOTHING


def test_a_finding_names_the_first_mismatches_and_counts_the_rest():
    bad = [cell(f"c{i}", {"target": FIFO}, {"target": sched(1, 70, cpus=[1])}) for i in range(5)]
    text = records.finding(records.audit(bad))
    assert text.count("priority: recorded 80, kernel 70") == records.NAMED
    assert text.endswith(f"and {5 - records.NAMED} more")


def test_the_record_is_read_not_changed():
    c = cell("c1", {"target": FIFO}, {"target": sched(1, 80, cpus=[1])})
    before = copy.deepcopy(c)
    records.audit([c])
    assert c == before
