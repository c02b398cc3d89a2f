"""E2 on Holoscan 5.0: the same periodic target under the same contention, in 5.0's execution API.

Same spec, same samples (``frame``, ``t_start_ns``, ``exec_ns``), same read-back as
:mod:`.app` (4.x), so one analysis serves both SDKs. What maps to what:

- 4.x's PeriodicCondition → a ``contract()`` with ``OnClock(period)`` on a real-time clock;
  5.0 paces every policy this way, SCHED_DEADLINE included (4.x let the DEADLINE server pace
  it instead). The release time of each activation is kept as ``release_ns`` (the clock's
  ``activation_time``; its own time base, so only its differences are comparable with
  ``t_start_ns``'s).
- a thread pool with a pinned real-time thread → an execution *partition* holding the target,
  bound to a ``ThreadPlacement`` (CPU affinity, policy, priority or DEADLINE reservation, wake
  mode). ``wake_mode`` ``busy_poll`` makes the target's thread spin between activations
  instead of sleeping on a wait set (5.0's new option against wake-up latency).
- load operators (``load_placement: operators``) → one partition each, unpinned, activated on
  a clock whose period is their work (busy back to back, as 4.x's condition-less loads); the
  target's last frame stops the run (``request_stop``), as 4.x's disabled conditions did.
- ``process`` and ``threads`` loads are the same helpers as in 4.x.

A real-time request 5.0 cannot honour fails the cell with 5.0's own words, where 4.x ran
the thread with SCHED_OTHER silently: without the privilege, the compiler rejects the
placement (THREAD_PLACEMENT_REJECTED, under the default ``probe_failure_policy``
WARN_AND_RECORD_FALLBACK too); a DEADLINE reservation the kernel refuses ends the run
FAILED before any activation (RUNTIME_LANE_STARTUP_FAILED). The compiler's placement record
(requested vs accepted) is kept in the summary, and the policy read back on the thread is
still what the harness verifies, as for 4.x.
Topologies other than ``dedicated`` (the seeds' pools and 4.x's default pool) have no 5.0
counterpart: the plan does not ask for them.
"""
from __future__ import annotations

import contextlib
import time
from datetime import timedelta

# First: importing rtstudy.apps preloads libcudart, without which holoscan does not import.
from rtstudy.apps.child import main, process_threads, steering_env, thread_record  # noqa: I001
import holoscan as hs
from holoscan import execution as ex

from rtstudy.apps.loads import beside
from rtstudy.apps.run5 import compile_checked, run_within, thread_placement
from rtstudy.apps.trace import sched_trace
from rtstudy.measure.work import busy_for, fixed_work

MS = 1_000_000
WAKE_MODES = {"sleep": ex.WakeMode.SLEEPING_WAITSET, "busy_poll": ex.WakeMode.BUSY_POLL}


class TargetOp(hs.Operator):
    """Stamps each compute start (ns) and times a fixed workload; stops the run when done."""

    last: "TargetOp | None" = None  # the graph builds the instance; the app reads it back here
    # 5.0 passes an operator's settings as declared parameters (Graph.op's keywords).
    frames = hs.Param(1, description="frames to record, then stop the run")
    period_ns = hs.Param(16_666_667, description="activation period (ns)")
    work_iterations = hs.Param(0, description="fixed native work per frame (iterations)")

    def __init__(self):
        super().__init__()
        self.t_start: list[int] = []
        self.exec_ns: list[int] = []
        self.release_ns: list[int] = []
        self.sched: dict | None = None
        self.threads: list[dict] | None = None
        TargetOp.last = self

    def contract(self):
        return hs.Contract().trigger(hs.OnClock(period=timedelta(microseconds=self.period_ns / 1e3)))

    def compute(self, ctx):
        t0 = time.monotonic_ns()
        fixed_work(self.work_iterations, "native")
        t1 = time.monotonic_ns()
        self.t_start.append(t0)
        self.exec_ns.append(t1 - t0)
        self.release_ns.append(ctx.activation_time.timestamp_ns)
        if self.sched is None:
            self.sched = thread_record()
        elif self.threads is None:
            self.threads = process_threads()  # on the second frame, as in 4.x
        if len(self.t_start) >= self.frames:
            ctx.request_completion()  # ends the whole run (REQUESTED_COMPLETED)


class LoadOp(hs.Operator):
    """CPU work of ``work_ms`` per activation, activated every ``work_ms``: busy back to back."""

    made: list["LoadOp"] = []
    work_ms = hs.Param(1.0, description="CPU work per activation, and the activation period (ms)")
    work_model = hs.Param("native", description="rtstudy.measure.work model: native or python")

    def __init__(self):
        super().__init__()
        self.ticks = 0
        LoadOp.made.append(self)

    def contract(self):
        return hs.Contract().trigger(hs.OnClock(period=timedelta(milliseconds=self.work_ms)))

    def compute(self, ctx):
        busy_for(int(self.work_ms * MS), self.work_model)
        self.ticks += 1


class ContentionGraph(hs.Graph):
    def __init__(self, config: dict):
        super().__init__("e2_contention", default_clock=hs.RealtimeClock)
        self.config = config

    def compose(self):
        c = self.config
        target = self.op(TargetOp, "target", frames=c["frames"], period_ns=c["period_ns"],
                         work_iterations=c["target_work_iterations"])
        self.partition("target").add(target)
        if c["load_placement"] == "operators":
            for i in range(c["loads"]):
                self.partition(f"load{i}").add(self.op(
                    LoadOp, f"load{i}", work_ms=c["load_work_ms"], work_model=c["load_work_model"]))


def placement(config: dict, realtime) -> ex.ThreadPlacement:
    """The target partition's thread: its CPUs, policy and wake mode, from the spec."""
    request = next((r for r in realtime if r.operator == "target"), None)
    if request:
        where = thread_placement(request)
    else:  # normal_dedicated: SCHED_OTHER, pinned as the real-time ones
        cpus = list(config["target_cpus"])
        where = ex.ThreadPlacement(affinity=ex.CPUAffinity(cpus) if cpus else None,
                                   policy=ex.SchedulingPolicy.OTHER)
    where.wake_mode = WAKE_MODES[config.get("wake_mode", "sleep")]
    return where


def run(config: dict, realtime) -> tuple[dict, dict, dict]:
    if config["topology"] != "dedicated":
        raise ValueError(f"topology {config['topology']!r} has no Holoscan 5.0 counterpart "
                         "(only `dedicated`)")
    binding = ex.DeploymentBinding().bind_thread_placement("target", placement(config, realtime))
    plan, placements = compile_checked(ContentionGraph(config), binding)
    limit_s = config["max_duration_ms"] / 1000
    trace, loads = {}, {}
    with beside(config, limit_s, loads):
        with sched_trace(limit_s, trace) if config.get("trace_s") else contextlib.nullcontext():
            session, measured_s = run_within(plan, limit_s)
    process, chunks = loads["stress_ng"], loads["load_thread_chunks"]
    target = TargetOp.last
    columns = {"frame": list(range(len(target.t_start))), "t_start_ns": target.t_start,
               "exec_ns": target.exec_ns, "release_ns": target.release_ns}
    # Compiling builds throw-away instances too: the last `loads` made are the ones that ran.
    ran = LoadOp.made[len(LoadOp.made) - config["loads"]:] \
        if config["load_placement"] == "operators" else []
    summary = {"frames": len(target.t_start), "load_ticks": [op.ticks for op in ran],
               "load_thread_chunks": chunks, "stress_ng": process, "duration_s": measured_s,
               "threads": target.threads or [], "env": steering_env(),
               "termination": session.termination.name,
               "diagnostics": [str(d) for d in session.diagnostics],
               "partitions": [{"name": p.authored_name, "operators": list(p.operator_paths)}
                              for p in plan.partitions],
               # What 5.0's compiler accepted for each partition's thread, against the request.
               "placements": placements}
    extra = {}
    if "columns" in trace:  # absent where the trace is unavailable (its record says why)
        extra["trace"] = trace.pop("columns")
    if trace:
        summary["trace"] = trace
    return columns, {"operators": {"target": {"ticks": len(target.t_start), "sched": target.sched}},
                     "effective": {**config, "sdk_api": 5},
                     "summary": summary, "measured_s": measured_s}, extra


if __name__ == "__main__":
    main(run)
