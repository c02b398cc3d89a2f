"""What the Holoscan 5.0 apps share: a compile that refuses what 5.0 refuses, a bounded run.

5.0 reports a real-time request it cannot honour itself, where 4.x ran the thread with
SCHED_OTHER and said nothing: without the privilege the compiler rejects the placement
(THREAD_PLACEMENT_REJECTED), and a SCHED_DEADLINE reservation the kernel refuses (over
admission, or pinned to one CPU) ends the run FAILED before any activation
(RUNTIME_LANE_STARTUP_FAILED). Both become :class:`RefusedError`, which fails the cell
with 5.0's own words; the policy read back on each thread is still what the harness checks.
"""
from __future__ import annotations

import json
import time

import holoscan as hs  # the package's import preloads libcudart first (rtstudy.apps)


class RefusedError(RuntimeError):
    """Holoscan 5.0 refused the requested placement (at compile) or could not start it (at run)."""


def describe(diagnostic) -> str:
    """A diagnostic's code and its details, as one line (5.0's repr gives only the code)."""
    detail = getattr(diagnostic, "detail", None) or getattr(diagnostic, "message", "")
    return f"{diagnostic} {detail}".strip()


def thread_placement(request):
    """The ``ThreadPlacement`` of a :class:`rtstudy.realtime.RealtimeRequest` (its CPUs, if any)."""
    from holoscan import execution as ex

    kwargs = {"affinity": ex.CPUAffinity(list(request.cpus)) if request.cpus else None}
    if request.policy == "SCHED_DEADLINE":
        kwargs.update(policy=ex.SchedulingPolicy.DEADLINE, deadline=ex.DeadlineScheduling(
            runtime_ns=request.runtime_ns, deadline_ns=request.deadline_ns,
            period_ns=request.period_ns))
    else:
        kwargs.update(policy={"SCHED_FIFO": ex.SchedulingPolicy.FIFO,
                              "SCHED_RR": ex.SchedulingPolicy.ROUND_ROBIN}[request.policy],
                      priority=request.priority)
    return ex.ThreadPlacement(**kwargs)


def compile_checked(graph, binding=None) -> tuple[object, list[dict]]:
    """The compiled plan of ``graph`` and its placement records (requested vs accepted).

    Raises
    ------
    RefusedError
        5.0 rejected the plan (the diagnostics and the placement records in its message).
    """
    options = hs.CompileOptions(deployment=binding) if binding is not None else hs.CompileOptions()
    plan = hs.compile(graph, options)
    placements = json.loads(plan.json()).get("partition_placements", [])
    if not plan.ok:
        raise RefusedError("Holoscan 5.0 rejected the plan at compile: "
                           + "; ".join(describe(d) for d in plan.errors)
                           + f"; placements {json.dumps(placements)}")
    return plan, placements


def run_within(plan, limit_s: float) -> tuple[object, float]:
    """Run ``plan``, stopping it after ``limit_s`` seconds (4.x's ``max_duration_ms``).

    Returns
    -------
    session : holoscan.RunSession
        Its ``termination`` says how it ended (``STOPPED`` when the limit stopped it).
    measured_s : float
        From the start of the run to its end (CLOCK_MONOTONIC, s).

    Raises
    ------
    RefusedError
        The run FAILED (a reservation the kernel refused, an operator's exception).
    """
    start = time.monotonic_ns()
    session = hs.run_async(plan)
    if not session.wait(timeout=limit_s):
        session.request_stop()
        session.wait()
    measured_s = (time.monotonic_ns() - start) / 1e9
    if session.termination.name == "FAILED":
        raise RefusedError("Holoscan 5.0's run FAILED: "
                           + "; ".join(describe(d) for d in session.diagnostics))
    return session, measured_s
