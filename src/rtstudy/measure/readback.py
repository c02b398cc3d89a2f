"""What a cell really got, read back from outside it: its real-time policies and its CPUs.

Holoscan 4.6 fails silently when it cannot apply a real-time policy: it logs
``Failed to set SCHED_...``, raises nothing and never ticks the operator. So the
harness trusts no request: :func:`verify_realtime` compares each with Holoscan's
log, the operator's tick count and the policy the operator read back from its own
thread, and says how to fix a refusal (:func:`realtime_fix`). Likewise
:class:`ThreadWatch` samples which CPU each of the cell's threads runs on while
it runs, and :func:`placement_record` sets that beside the placement planned.
"""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import TypedDict

from rtstudy.machine.kernelfs import thread_cpu
from rtstudy.machine.placement import Placement
from rtstudy.measure.realtime import RealtimeRequest
from rtstudy.policies import BY_NUMBER, PRIORITY_POLICIES, SCHED_DEADLINE


def log_failures(log_text: str) -> list[str]:
    """The lines of a cell's log where Holoscan says it could not set a scheduling policy."""
    markers = ("Failed to set SCHED", "Failed to configure worker thread")
    return [line.strip() for line in log_text.splitlines() if any(m in line for m in markers)]


# How to fix each way a host refuses a real-time policy (4.x's log lines and 5.0's diagnostics
# lead to the same fixes: rtstudy.apps.run5).
FIX_PINNED_DEADLINE = (
    "the kernel refuses a SCHED_DEADLINE thread pinned to one CPU unless "
    "kernel.sched_rt_runtime_us = -1; run DEADLINE unpinned (the experiments do so when "
    "`rtstudy host check` shows 'SCHED_DEADLINE pinned' refused) or set "
    "`sysctl -w kernel.sched_rt_runtime_us=-1`")
FIX_PRIVILEGE = (
    "this process may not use real-time policies: run as root or grant CAP_SYS_NICE and an "
    "rtprio limit (see `rtstudy host check`; in Docker: --cap-add=SYS_NICE --ulimit rtprio=99)")
FIX_ADMISSION = (
    "SCHED_DEADLINE admission control refused the reservation: the total runtime/period of all "
    "DEADLINE threads exceeds sched_rt_runtime_us/sched_rt_period_us x CPUs; lower the runtimes "
    "or lengthen the periods")


def realtime_fix(request: RealtimeRequest, log_lines: list[str]) -> str:
    """How to fix a refused policy, from the request and Holoscan's own error line."""
    text = " ".join(log_lines)
    if request.policy == SCHED_DEADLINE and request.cpus and "not permitted" in text:
        return FIX_PINNED_DEADLINE
    if "not permitted" in text or "permission" in text.lower():
        return FIX_PRIVILEGE
    if "busy" in text.lower() or "Device or resource busy" in text:
        return FIX_ADMISSION
    return "see the cell's run.log; check `rtstudy host check` for which policies this host allows"


def verify_realtime(requests: tuple[RealtimeRequest, ...], result: dict | None,
                    log_text: str) -> list[str]:
    """Problems that make a run not verifiably real-time; empty when all is well.

    A request passes only if Holoscan logged no scheduling failure for it, the
    operator ticked, and the policy (and priority, reservation and CPUs) that
    the operator read back from its own thread match the request.
    """
    problems = []
    log_lines = log_failures(log_text)
    operators = (result or {}).get("operators", {})
    for req in requests:
        op = operators.get(req.operator)
        where = f"operator {req.operator!r} requested {req.policy}"
        if not op or op.get("ticks", 0) == 0 or not op.get("sched"):
            detail = ("; Holoscan logged: " + " | ".join(log_lines)) if log_lines else ""
            problems.append(f"{where} but never ran{detail}. Fix: {realtime_fix(req, log_lines)}")
            continue
        sched = op["sched"]
        got = BY_NUMBER.get(sched["policy"], str(sched["policy"]))
        if got != req.policy:
            problems.append(f"{where} but its thread ran with {got}. Fix: check that the operator "
                            "is pinned to its own worker thread (pin_operator=True) and see run.log")
            continue
        if req.policy in PRIORITY_POLICIES and sched["priority"] != req.priority:
            problems.append(f"{where} priority {req.priority} but got {sched['priority']}")
        if req.policy == SCHED_DEADLINE:
            want = (req.runtime_ns, req.deadline_ns, req.period_ns)
            have = (sched["runtime_ns"], sched["deadline_ns"], sched["period_ns"])
            if want != have:
                problems.append(f"{where} runtime/deadline/period {want} ns but got {have} ns")
        if req.cpus and sorted(sched["cpus"]) != sorted(req.cpus):
            problems.append(f"{where} pinned to CPUs {list(req.cpus)} but ran on {sched['cpus']}")
    if log_lines and not problems and requests:
        problems.append("Holoscan logged scheduling failures: " + " | ".join(log_lines))
    return problems


class ThreadWatch:
    """Where each thread of a running cell runs, sampled from outside the cell.

    The parent reads the CPU each thread last ran on (/proc/<tid>/stat) every
    ``interval_s`` while it waits: nothing runs inside the measured process (a
    sampling thread there would take its GIL). A thread that lives shorter than
    the interval may be missed; ``samples`` says how often each was seen.
    Only ``active`` where a placement confines the cell, the one case where the
    record shows something (and on a shielded or boot-isolated host the parent
    runs on the housekeeping CPUs itself); on an untuned host it could wake on
    the real-time CPU during a run, so there it waits as before.
    """

    def __init__(self, pid: int, active: bool, interval_s: float = 0.1):
        self.pid, self.active, self.interval_s = pid, active, interval_s
        self.seen: dict[int, dict] = {}

    def sample(self) -> None:
        try:
            tids = [int(t) for t in os.listdir(f"/proc/{self.pid}/task")]
        except OSError:
            return
        for tid in tids:
            cpu = thread_cpu(tid)
            if cpu is None:
                continue
            row = self.seen.get(tid)
            if row is None:
                try:
                    comm = Path(f"/proc/{self.pid}/task/{tid}/comm").read_text().strip()
                except OSError:
                    continue
                row = self.seen[tid] = {"tid": tid, "comm": comm, "cpus": set(), "samples": 0}
            row["cpus"].add(cpu)
            row["samples"] += 1

    def wait(self, proc: subprocess.Popen, timeout_s: float) -> int:
        """``proc.wait(timeout_s)``, sampling meanwhile; TimeoutExpired as ``wait`` raises it."""
        if not self.active:
            return proc.wait(timeout=timeout_s)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                return proc.wait(timeout=min(self.interval_s, max(deadline - time.monotonic(), 0)))
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    raise
                self.sample()

    def threads(self) -> list[dict]:
        return [{**row, "cpus": sorted(row["cpus"])} for row in self.seen.values()]


class PlacementRecord(TypedDict, total=False):
    """Where a cell's threads were meant to run and were seen running (its sidecar's
    ``placement``: :func:`placement_record`)."""

    realtime: list[int]  # the CPUs the plan gave the real-time threads
    housekeeping: list[int]  # the CPUs for everything else
    source: str  # where the placement came from (params.yaml's cpus, a shield, ...)
    sampled: bool  # whether the threads were watched (something confined the cell)
    threads: list[dict]  # each thread seen: comm, tid, cpus
    outside: list[str]  # the threads seen off the housekeeping CPUs
    held: bool  # no more outside than real-time requests that pin one, each where allowed


def placement_record(where: Placement | None, watch: ThreadWatch,
                     requests: tuple[RealtimeRequest, ...]) -> PlacementRecord:
    """The cell's placement as planned and as seen (:class:`ThreadWatch`).

    ``outside`` names the threads seen off the housekeeping CPUs. ``held`` says
    the placement held: no more threads outside than real-time requests that
    pin one, each only on the housekeeping CPUs and those pins. Where nothing
    confines the cell (``sampled`` false) only the plan is recorded.
    """
    threads = watch.threads()
    if where is None or not watch.active:
        return {**({"realtime": list(where.realtime), "housekeeping": list(where.housekeeping),
                    "source": where.source} if where else {}), "sampled": False}
    hk = set(where.housekeeping)
    pins = {c for r in requests for c in r.cpus}
    outside = [t for t in threads if set(t["cpus"]) - hk]
    held = len(outside) <= sum(bool(r.cpus) for r in requests) and \
        all(set(t["cpus"]) <= hk | pins for t in outside)
    return {"realtime": list(where.realtime), "housekeeping": list(where.housekeeping),
            "source": where.source, "sampled": True, "threads": threads,
            "outside": sorted(t["comm"] for t in outside), "held": held}
