"""A one-operator app that asks for a real-time policy: the harness's own check.

It is what the tests use to show that a refused policy is caught (Holoscan
logs the failure, never ticks the operator and hangs until
``max_duration_ms``) and that a granted one is verified from the operator's
own thread.
"""
from __future__ import annotations

import time

from holoscan.conditions import CountCondition, PeriodicCondition
from holoscan.core import Application, Operator
from holoscan.schedulers import EventBasedScheduler

from rtstudy.apps.child import apply_realtime, main, thread_record
from rtstudy.policies import SCHED_DEADLINE


class StampOp(Operator):
    """Records the CLOCK_MONOTONIC start of every compute (ns) and its thread's policy."""

    def __init__(self, fragment, *args, **kwargs):
        self.stamps: list[int] = []
        self.sched: dict | None = None
        super().__init__(fragment, *args, **kwargs)

    def compute(self, op_input, op_output, context):
        self.stamps.append(time.monotonic_ns())
        if self.sched is None:
            self.sched = thread_record()


class ProbeApp(Application):
    def __init__(self, config: dict, realtime):
        self.config, self.realtime = config, realtime
        super().__init__()

    def compose(self):
        period_ns = self.config["period_ns"]
        conditions = [CountCondition(self, self.config["ticks"])]
        if not any(r.policy == SCHED_DEADLINE for r in self.realtime):
            # A DEADLINE worker is periodic by itself; others need pacing.
            conditions.append(PeriodicCondition(self, period_ns))
        self.target = StampOp(self, *conditions, name="target")
        self.add_operator(self.target)
        for request in self.realtime:
            apply_realtime(self, self.target, request)


def run(config: dict, realtime) -> tuple[dict, dict]:
    app = ProbeApp(config, realtime)
    app.scheduler(EventBasedScheduler(app, name="ebs", worker_thread_number=1,
                                      max_duration_ms=config["max_duration_ms"]))
    start = time.monotonic_ns()
    app.run()
    measured_s = (time.monotonic_ns() - start) / 1e9
    op = app.target
    samples = {"tick": list(range(len(op.stamps))), "t_ns": op.stamps}
    return samples, {
        "operators": {"target": {"ticks": len(op.stamps), "sched": op.sched}},
        "effective": {"scheduler": "EventBasedScheduler", "workers": 1, **config},
        "summary": {},
        "measured_s": measured_s,
    }


if __name__ == "__main__":
    main(run)
