"""H5a: what Holoscan 5.0 records is what the kernel applied.

5.0's compiler freezes, for each execution partition, a *requested* and an *accepted*
placement record (``ThreadPlacement``: CPU affinity, scheduling policy, priority or
SCHED_DEADLINE reservation, wake mode, IRQ isolation, probe policy; NVIDIA's Holoscan 5.0 API
reference, "ThreadPlacement"). Its 5.0 apps keep the plan's records in each cell's summary
(``placements``, :func:`rtstudy.apps.run5.compile_checked`), and the harness reads back from
the kernel what each operator's thread really ran with (``operators.<name>.sched``:
``sched_getattr`` and ``sched_getaffinity`` on the thread itself).

:func:`thread_mismatches` compares the two for one thread, field by field
(:data:`FIELDS`); :func:`audit` does so for every thread of every cell of a dataset. The
claim holds where no thread differs; any difference is a finding with its cell named. The
wake mode, IRQ isolation and probe policy have no kernel read-back and are not compared.
An accepted record without an affinity asks for none: the thread keeps the process's CPUs,
which are then not compared either. Holoscan 4.x records no placement plan, so its cells
have nothing to compare.
"""
from __future__ import annotations

from typing import TypedDict

from rtstudy.inference import judge

# 5.0's policy names in a placement record → Linux's SCHED_* numbers (sched_getattr's policy).
POLICIES = {"other": 0, "fifo": 1, "round_robin": 2, "deadline": 6}
# What is compared, in the order a mismatch names them.
FIELDS = ("policy", "priority", "runtime_ns", "deadline_ns", "period_ns", "cpus")
# The claim's words (a deterministic check: no CI, no margin).
HOLDS, FAILS, NOTHING = judge.HOLDS, judge.FAILS, judge.NOT_TESTABLE
# How many mismatches a finding names before it counts the rest.
NAMED = 3


class Expected(TypedDict):
    """What the kernel should report of a placed thread (:func:`expected`); None: not asked."""

    policy: int | str | None  # the kernel's number where known, else the record's name
    priority: int | None
    cpus: list[int] | None
    runtime_ns: int | None
    deadline_ns: int | None
    period_ns: int | None


class Audit(TypedDict):
    """Every 5.0 placement record of some cells against its thread (:func:`audit`)."""

    cells: int  # cells with placement records
    threads: int  # records compared
    mismatches: list[str]  # one line per thread that differs: "cell_id operator: field …"


def expected(accepted: dict) -> Expected:
    """What the kernel should report for a thread placed by the ``accepted`` record
    (:data:`FIELDS`; ``cpus`` None where the record asks for no affinity)."""
    scheduling = accepted.get("scheduling") or {}
    policy = scheduling.get("policy")
    deadline = scheduling.get("deadline") or {}
    out: Expected = {"policy": POLICIES.get(policy, policy),
           # The kernel reports priority 0 for every policy but FIFO and RR.
           "priority": scheduling.get("priority") if policy in ("fifo", "round_robin") else 0,
           "cpus": sorted(accepted["affinity"]) if accepted.get("affinity") is not None else None}
    # A reservation's three numbers only mean something under SCHED_DEADLINE (the kernel keeps
    # a slice in runtime for SCHED_OTHER).
    for key in ("runtime_ns", "deadline_ns", "period_ns"):
        out[key] = deadline.get(key) if policy == "deadline" else None
    return out


def thread_mismatches(accepted: dict, sched: dict | None) -> list[str]:
    """Each field of one partition's ``accepted`` record that the kernel's read-back ``sched``
    of its thread contradicts, as ``"policy: recorded 6, kernel 0"``; every one when the
    thread was not read back at all."""
    if not sched:
        return ["thread not read back"]
    want = expected(accepted)
    got = {**sched, "cpus": sorted(sched.get("cpus") or [])}
    return [f"{key}: recorded {want[key]}, kernel {got.get(key)}" for key in FIELDS
            if want[key] is not None and want[key] != got.get(key)]


def audit(sidecars: list[dict]) -> Audit:
    """Every 5.0 placement record of ``sidecars`` (cells' ``cell.json``) against its thread.

    Returns
    -------
    Audit
    """
    cells, threads, mismatches = 0, 0, []
    for sidecar in sidecars:
        placements = (sidecar.get("summary") or {}).get("placements") or []
        if not placements:
            continue
        cells += 1
        operators = sidecar.get("operators") or {}
        for record in placements:
            name = record.get("authored_name", "?")
            threads += 1
            wrong = thread_mismatches(record.get("accepted") or {},
                                      (operators.get(name) or {}).get("sched"))
            if wrong:
                mismatches.append(f"{sidecar.get('cell_id', '?')} {name}: {'; '.join(wrong)}")
    return {"cells": cells, "threads": threads, "mismatches": mismatches}


def verdict(result: Audit) -> str:
    """:data:`HOLDS` where every record matched, :data:`FAILS` where one did not,
    :data:`NOTHING` where the data has no 5.0 placement record."""
    if not result["threads"]:
        return NOTHING
    return FAILS if result["mismatches"] else HOLDS


def finding(result: Audit) -> str:
    """The audit in one sentence, naming the first mismatches."""
    word = verdict(result)
    if word == NOTHING:
        return f"{word}: no Holoscan 5.0 placement record in this data"
    text = (f"{word}: {result['threads'] - len(result['mismatches'])} of {result['threads']} "
            f"threads in {result['cells']} cells ran as 5.0's accepted record says")
    named = result["mismatches"][:NAMED]
    if named:
        more = len(result["mismatches"]) - len(named)
        text += "; differing: " + " | ".join(named) + (f" and {more} more" if more else "")
    return text
