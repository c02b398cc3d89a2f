"""E2: a periodic target operator under CPU contention, normal vs real-time thread (HoloHub benchmark).

The target runs at ``fps`` and stamps the start of every ``compute``
(frame period = difference of consecutive starts) and the duration of a
fixed amount of native work (its execution time). The competing load runs for
the whole measurement, placed as ``load_placement`` says:

- ``operators``: load operators with no condition, run back to back,
  ``load_work_ms`` of work per call, on the default pool (one worker each), until
  the target has produced its frames and disables them (the seed's way);
- ``operators_pinned``: the same operators in a pool of their own whose threads are
  pinned to ``load_cpus`` (every CPU but the target's): a fix, measured as a factor;
- ``process``: ``loads`` stress-ng CPU workers beside the app (normal policy, nice 0);
- ``threads``: ``loads`` plain threads of the app's process that are not operators,
  busy in ``load_work_ms`` chunks of the load work model;
- ``outside``: the same threads in a process of their own (:mod:`rtstudy.apps.loads`);
- ``fragment``: a fix: the app as a Holoscan distributed application of two fragments, each
  in a process of its own, so the loads share no GIL with the target. Fragment ``rt`` (this
  process, the driver) holds the target as at the headline point; fragment ``load`` (a
  process this one starts, :func:`.fragments.load_worker`) holds the same load operators
  as ``operators`` and a :class:`.ReceiverOp`. The target sends one small message per frame
  through a :class:`.SenderOp` of its fragment over UCX on 127.0.0.1; the receiver stamps
  its receipt, and after the last frame stops the loads. The messages' latencies
  (CLOCK_MONOTONIC, one clock for both processes) are kept as the cell's ``messages``
  table: what the fix costs a pipeline that crosses it.

``switch_interval_ms``, when given, is the interpreter's GIL switch interval
(``sys.setswitchinterval``; CPython's default is 5 ms), set before the app starts.

Where the target runs (``topology``):

- ``dedicated``: the target alone on its own worker thread, pinned to
  ``target_cpus`` when given; ``policy`` ``normal_dedicated`` leaves it SCHED_OTHER, FIFO /
  RR / DEADLINE make it real-time. Only the policy differs between them.
- ``shared``: the seed's normal baseline: the target shares the default pool with the loads.
- ``seed_python``: NVIDIA's Python benchmark. Normal: target and loads in a 2-thread
  ``shared_pool`` allowed on CPUs [0, 1]; real-time: the target in a 1-thread
  ``realtime_pool`` (pinned as ``target_cpus``), the loads in a 1-thread ``load_pool`` on CPU 1.
- ``seed_cpp``: NVIDIA's C++ benchmark: target and loads on 2 default workers; real-time:
  the target on its own pinned real-time thread.

``dispatcher``: ``fifo`` asks the EventBasedScheduler for a SCHED_FIFO dispatcher
(a ``dispatcher`` real-time request; see :func:`rtstudy.apps.child.apply_dispatcher`).
Every thread's policy is read back during the run and the dispatcher's is recorded
like an operator's, so the harness verifies it. ``trace_s`` > 0 records a kernel
scheduler trace (:mod:`rtstudy.apps.trace`) of the measured frames.
"""
from __future__ import annotations

import contextlib
import resource
import sys
import time

# First: importing rtstudy.apps preloads libcudart, without which holoscan does not import.
from rtstudy.apps.child import apply_dispatcher, apply_realtime, main, steering_env  # noqa: I001
from holoscan.core import Application
from holoscan.schedulers import EventBasedScheduler

from rtstudy.apps.loads import beside
from rtstudy.apps.trace import sched_trace
from rtstudy.experiments.e2_rt_threads.measuring import fragments
from rtstudy.experiments.e2_rt_threads.measuring.fragments import FRAGMENT, LOAD_WORKER, load_worker
from rtstudy.experiments.e2_rt_threads.measuring.operators import make_loads, make_target
from rtstudy.measure.realtime import DISPATCHER

SEED_CPUS = [0, 1]    # NVIDIA's Python benchmark: its shared pool's CPUs; loads on the last one


class ContentionApp(Application):
    def __init__(self, config: dict, realtime):
        self.config = config
        self.realtime = [r for r in realtime if r.operator != DISPATCHER]
        super().__init__()

    def compose(self):
        c = self.config
        self.loads, done = [], []
        if c["load_placement"] in ("operators", "operators_pinned"):
            self.loads, done = make_loads(self, c)
        self.target = make_target(self, c, done)
        topology, cpus = c["topology"], list(c["target_cpus"])
        if topology == "dedicated" and c["policy"] == "normal_dedicated":
            self.make_thread_pool("target_pool", 1).add(self.target, pin_operator=True,
                                                         pin_cores=cpus)
        elif topology == "seed_python" and not self.realtime:
            shared = self.make_thread_pool("shared_pool", 2)
            for op in [self.target, *self.loads]:
                shared.add(op, pin_cores=SEED_CPUS)
        elif topology == "seed_python" and self.loads:
            load_pool = self.make_thread_pool("load_pool", 1)
            for op in self.loads:
                load_pool.add(op, pin_cores=SEED_CPUS[-1:])
        if c["load_placement"] == "operators_pinned" and self.loads:
            # pin_operator: without it Holoscan 4.6 runs the operators on its default workers and
            # ignores pin_cores (read back: the loads' threads kept every CPU).
            load_pool = self.make_thread_pool("load_pool", len(self.loads))
            for op in self.loads:
                load_pool.add(op, pin_operator=True, pin_cores=list(c["load_cpus"]))
        for request in self.realtime:
            apply_realtime(self, self.target, request)


def default_workers(config: dict) -> int:
    """The default pool's worker threads: one per load operator it runs, plus the target's when
    it shares them; the C++ seed's 2; never below 1."""
    topology, loads = config["topology"], config["loads"]
    # (The fragment placement's loads have the default pool of their own process.)
    in_pool = loads if config["load_placement"] == "operators" else 0
    if topology == "seed_cpp":
        return 2
    if topology == "seed_python":
        return 1  # the seed's pools hold every operator; the default pool idles
    shared = 1 if topology == "shared" else 0
    return max(1, in_pool + shared)


def cpu_seconds() -> float:
    """CPU time (s) this process and its waited-for children have used so far: what the loads
    got (the target's fixed work is ~0.1 ms a frame)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def make_app(config: dict, realtime, workers: int, far: dict):
    """The app a cell runs (``workers`` default workers) and the context its loads in another
    process run in: the ``fragment`` placement's load process (which leaves its results in
    ``far``), else none."""
    if config["load_placement"] == FRAGMENT:
        return fragments.driver_app(config, realtime, workers, far)
    app = ContentionApp(config, realtime)
    app.scheduler(EventBasedScheduler(app, name="ebs", worker_thread_number=workers,
                                      stop_on_deadlock=True, stop_on_deadlock_timeout=100,
                                      max_duration_ms=config["max_duration_ms"]))
    return app, contextlib.nullcontext()


def run(config: dict, realtime) -> tuple[dict, dict, dict]:
    if config.get("switch_interval_ms"):
        sys.setswitchinterval(config["switch_interval_ms"] / 1000)
    for request in realtime:
        if request.operator == DISPATCHER:
            apply_dispatcher(request)
    workers = default_workers(config)
    fragment = config["load_placement"] == FRAGMENT
    trace, loads, far = {}, {}, {}
    app, far_loads = make_app(config, realtime, workers, far)
    limit_s = config["max_duration_ms"] / 1000
    cpu0 = cpu_seconds()
    with beside(config, limit_s, loads), far_loads:
        start = time.monotonic_ns()
        try:
            with sched_trace(limit_s, trace) if config.get("trace_s") else contextlib.nullcontext():
                app.run()
        finally:
            measured_s = (time.monotonic_ns() - start) / 1e9
    # After beside() and load_process(): the loads they started have been waited for, so
    # their time is counted.
    cpu_s = cpu_seconds() - cpu0
    process, chunks = loads["stress_ng"], loads["load_thread_chunks"]
    target = app.rt.target if fragment else app.target
    columns = {"frame": list(range(len(target.t_start))), "t_start_ns": target.t_start,
               "exec_ns": target.exec_ns}
    every = target.threads or []
    dispatcher = next((t for t in every if t["comm"] == DISPATCHER), None)
    operators = {"target": {"ticks": len(target.t_start), "sched": target.sched}}
    if dispatcher:
        # Recorded like an operator, so the harness verifies a requested dispatcher policy.
        operators[DISPATCHER] = {"ticks": 1, "sched": dispatcher}
    summary = {"frames": len(target.t_start), "load_ticks": [op.ticks for op in app.loads],
               "load_thread_chunks": chunks, "stress_ng": process, "duration_s": measured_s,
               "default_pool_workers": workers, "threads": every, "env": steering_env(),
               "switch_interval_s": sys.getswitchinterval(), "cpu_s": cpu_s}
    extra = {}
    if fragment:
        fragments.add_results(far, target, start, config, summary, extra)
    if "columns" in trace:  # absent where the trace is unavailable (its record says why)
        extra["trace"] = trace.pop("columns")
    if trace:
        summary["trace"] = trace
    return columns, {"operators": operators,
                     "effective": {**config, "default_pool_workers": workers},
                     "summary": summary, "measured_s": measured_s}, extra


if __name__ == "__main__":
    if sys.argv[1] == LOAD_WORKER:
        load_worker(*sys.argv[2:])
    else:
        main(run)
