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

from rtstudy.measure.readback import FIX_ADMISSION, FIX_PINNED_DEADLINE, FIX_PRIVILEGE
from rtstudy.policies import SCHED_DEADLINE, SCHED_FIFO, SCHED_RR

# 5.0's refusals (a diagnostic's token) and how to fix each, in the words 4.x's refusals get.
FIXES = {
    # The compiler probes whether this process may apply the placement (CAP_SYS_NICE, rtprio).
    "THREAD_PLACEMENT_REJECTED": FIX_PRIVILEGE,
    # The kernel refused a thread's reservation when its lane started: pinned, or over admission.
    "RUNTIME_LANE_STARTUP_FAILED": f"{FIX_PINNED_DEADLINE}; or {FIX_ADMISSION}",
}


class RefusedError(RuntimeError):
    """Holoscan 5.0 refused the requested placement (at compile) or could not start it (at run)."""


def describe(diagnostic) -> str:
    """A diagnostic as one line: its token, the operator, 5.0's message and its error code
    (the diagnostic's repr gives only the token; its ``detail`` may be None)."""
    text = str(getattr(diagnostic, "token", "") or diagnostic)
    detail = getattr(diagnostic, "detail", None)
    where = getattr(detail, "operator_path", "") if detail is not None else ""
    error = getattr(detail, "error", None) if detail is not None else None
    message = getattr(error, "message", "") if error is not None else ""
    code = getattr(error, "code", None) if error is not None else None
    if where:
        text += f" at {where}"
    if message:
        text += f": {message}"
    if code is not None:
        text += f" ({getattr(code, 'name', code)})"
    return text


def refusal(what: str, diagnostics) -> str:
    """What :class:`RefusedError` says: ``what``, every diagnostic, and the fix of each token."""
    diagnostics = list(diagnostics)
    fixes = dict.fromkeys(FIXES[t] for t in (str(getattr(d, "token", "")) for d in diagnostics)
                          if t in FIXES)
    return (f"{what}: " + "; ".join(describe(d) for d in diagnostics)
            + "".join(f". Fix: {fix}" for fix in fixes))


def thread_placement(request):
    """The ``ThreadPlacement`` of a :class:`rtstudy.measure.realtime.RealtimeRequest` (its CPUs, if
    any)."""
    from holoscan import execution as ex

    kwargs = {"affinity": ex.CPUAffinity(list(request.cpus)) if request.cpus else None}
    if request.policy == SCHED_DEADLINE:
        kwargs.update(policy=ex.SchedulingPolicy.DEADLINE, deadline=ex.DeadlineScheduling(
            runtime_ns=request.runtime_ns, deadline_ns=request.deadline_ns,
            period_ns=request.period_ns))
    else:
        kwargs.update(policy={SCHED_FIFO: ex.SchedulingPolicy.FIFO,
                              SCHED_RR: ex.SchedulingPolicy.ROUND_ROBIN}[request.policy],
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
        raise RefusedError(refusal("Holoscan 5.0 rejected the plan at compile", plan.errors)
                           + f". Placements: {json.dumps(placements)}")
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
        raise RefusedError(refusal("Holoscan 5.0's run FAILED", session.diagnostics))
    return session, measured_s
