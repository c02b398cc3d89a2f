"""E2: a periodic target operator under CPU contention, normal vs real-time thread (HoloHub benchmark).

The target runs at ``fps`` and stamps the start of every ``compute``
(frame period = difference of consecutive starts) and the duration of a
fixed amount of native work (its execution time). Load operators have no
condition, so they run back to back, ``load_work_ms`` of work per call, until
the target has produced its frames and disables them.

Topologies (``policy``):

- ``normal``: the seed's baseline: target and loads share the default pool.
- ``normal_dedicated``: the target alone on its own normal thread, loads on the
  default pool (separates the effect of a dedicated thread from that of a policy).
- ``SCHED_FIFO`` / ``SCHED_RR`` / ``SCHED_DEADLINE``: the target alone on its
  own real-time thread, loads on the default pool. FIFO and RR are paced by
  ``PeriodicCondition``; a DEADLINE worker is periodic by itself.
"""
from __future__ import annotations

import time

# First: importing rtstudy.apps preloads libcudart, without which holoscan does not import.
from rtstudy.apps.child import apply_realtime, main, thread_record  # noqa: I001
from holoscan.conditions import BooleanCondition, CountCondition, PeriodicCondition
from holoscan.core import Application, Operator
from holoscan.schedulers import EventBasedScheduler

from rtstudy.work import busy_for, fixed_work

MS = 1_000_000


class TargetOp(Operator):
    """Stamps each compute start (ns) and times a fixed workload; stops the loads when done."""

    def __init__(self, fragment, *args, frames: int, work_iterations: int, work_model: str,
                 loads_done: list, **kwargs):
        self.frames = frames
        self.work_iterations = work_iterations
        self.work_model = work_model
        self.loads_done = loads_done
        self.t_start: list[int] = []
        self.exec_ns: list[int] = []
        self.sched: dict | None = None
        super().__init__(fragment, *args, **kwargs)

    def compute(self, op_input, op_output, context):
        t0 = time.monotonic_ns()
        fixed_work(self.work_iterations, self.work_model)
        t1 = time.monotonic_ns()
        self.t_start.append(t0)
        self.exec_ns.append(t1 - t0)
        if self.sched is None:
            self.sched = thread_record()
        if len(self.t_start) == self.frames:
            for condition in self.loads_done:
                condition.disable_tick()


class LoadOp(Operator):
    """Back-to-back CPU work, ``work_ms`` per call, until its condition is disabled."""

    def __init__(self, fragment, *args, work_ms: float, work_model: str, **kwargs):
        self.work_ns = int(work_ms * MS)
        self.work_model = work_model
        self.ticks = 0
        super().__init__(fragment, *args, **kwargs)

    def compute(self, op_input, op_output, context):
        busy_for(self.work_ns, self.work_model)
        self.ticks += 1


class ContentionApp(Application):
    def __init__(self, config: dict, realtime):
        self.config, self.realtime = config, realtime
        super().__init__()

    def compose(self):
        c = self.config
        self.loads, done = [], []
        for i in range(c["loads"]):
            flag = BooleanCondition(self, enable_tick=True, name=f"load{i}_on")
            done.append(flag)
            self.loads.append(LoadOp(self, flag, name=f"load{i}", work_ms=c["load_work_ms"],
                                     work_model=c["load_work_model"]))
            self.add_operator(self.loads[-1])
        conditions = [CountCondition(self, c["frames"])]
        if c["policy"] != "SCHED_DEADLINE":
            conditions.append(PeriodicCondition(self, c["period_ns"]))
        self.target = TargetOp(self, *conditions, name="target", frames=c["frames"],
                               work_iterations=c["target_work_iterations"],
                               work_model="native", loads_done=done)
        self.add_operator(self.target)
        if c["policy"] == "normal_dedicated":
            self.make_thread_pool("target_pool", 1).add(self.target, pin_operator=True)
        for request in self.realtime:
            apply_realtime(self, self.target, request)


def run(config: dict, realtime) -> tuple[dict, dict]:
    app = ContentionApp(config, realtime)
    # "normal" shares the default pool with the loads: one thread each, as the OS sees them.
    shared = 1 if config["policy"] == "normal" else 0
    workers = max(1, config["loads"] + shared)
    app.scheduler(EventBasedScheduler(app, name="ebs", worker_thread_number=workers,
                                      stop_on_deadlock=True, stop_on_deadlock_timeout=100,
                                      max_duration_ms=config["max_duration_ms"]))
    start = time.monotonic_ns()
    app.run()
    measured_s = (time.monotonic_ns() - start) / 1e9
    target = app.target
    columns = {"frame": list(range(len(target.t_start))), "t_start_ns": target.t_start,
               "exec_ns": target.exec_ns}
    summary = {"frames": len(target.t_start), "load_ticks": [op.ticks for op in app.loads],
               "duration_s": measured_s, "default_pool_workers": workers}
    return columns, {"operators": {"target": {"ticks": len(target.t_start), "sched": target.sched}},
                     "effective": {**config, "default_pool_workers": workers},
                     "summary": summary, "measured_s": measured_s}


if __name__ == "__main__":
    main(run)
