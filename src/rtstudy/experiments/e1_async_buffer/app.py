"""E1: async lock-free buffer vs the default buffer under SCHED_DEADLINE (HoloHub tutorial).

Graph: ``tx1 → rx.in1``, ``tx2 → rx.in2``. Each producer stamps ``t_start``,
works (5 ms and 10 ms by default), stamps ``t_emit`` and emits
``(index, t_start_ns, t_emit_ns)``. ``rx`` reads both ports on every tick,
records each *new* index once (the async buffer hands back the latest message
on every read, so repeats are counted as stale re-reads, not messages), works
1 ms, and disables its ``BooleanCondition`` once both producers' last indices
have arrived. Every operator runs on its own SCHED_DEADLINE thread (deadline =
period) or, for the control, on normal threads paced by ``PeriodicCondition``.
"""
from __future__ import annotations

import time

# First: importing rtstudy.apps preloads libcudart, without which holoscan does not import.
from rtstudy.apps.child import apply_realtime, main, thread_record  # noqa: I001
from holoscan.conditions import BooleanCondition, CountCondition, PeriodicCondition
from holoscan.core import Application, IOSpec, Operator
from holoscan.schedulers import EventBasedScheduler

from rtstudy.experiments.e1_async_buffer.receipts import Receipts, columns
from rtstudy.measure.work import busy_for

MS = 1_000_000


class PingTxOp(Operator):
    """Works ``work_ms``, then emits ``(index, t_start_ns, t_emit_ns)`` on ``out``."""

    def __init__(self, fragment, *args, work_ms: float, work_model: str, **kwargs):
        self.work_ns = int(work_ms * MS)
        self.work_model = work_model
        self.t_start: list[int] = []
        self.t_emit: list[int] = []
        self.sched: dict | None = None
        super().__init__(fragment, *args, **kwargs)

    def setup(self, spec):
        spec.output("out")

    def compute(self, op_input, op_output, context):
        t_start = time.monotonic_ns()
        if self.sched is None:
            self.sched = thread_record()
        busy_for(self.work_ns, self.work_model)
        index = len(self.t_emit)
        t_emit = time.monotonic_ns()
        op_output.emit((index, t_start, t_emit), "out")
        self.t_start.append(t_start)
        self.t_emit.append(t_emit)


class PingRxOp(Operator):
    """Records latency and arrival per new index on ``in1`` and ``in2``, then works ``work_ms``."""

    def __init__(self, fragment, *args, done: BooleanCondition, last_index: int, work_ms: float,
                 work_model: str, **kwargs):
        self.done = done
        self.work_ns = int(work_ms * MS)
        self.work_model = work_model
        self.receipts = Receipts(last_index)
        self.ticks = 0
        self.sched: dict | None = None
        super().__init__(fragment, *args, **kwargs)

    def setup(self, spec):
        spec.input("in1")
        spec.input("in2")

    def compute(self, op_input, op_output, context):
        self.ticks += 1
        if self.sched is None:
            self.sched = thread_record()
        for port in ("in1", "in2"):
            msg = op_input.receive(port)
            self.receipts.record(port, msg, time.monotonic_ns())
        busy_for(self.work_ns, self.work_model)
        if self.receipts.complete:
            self.done.disable_tick()


class AsyncBufferApp(Application):
    def __init__(self, config: dict, realtime):
        self.config, self.realtime = config, realtime
        super().__init__()

    def compose(self):
        c = self.config
        periodic = c["policy"] == "none"

        def pacing(period_ms: float) -> list:
            # A DEADLINE worker is periodic by itself; the control needs a clock.
            return [PeriodicCondition(self, int(period_ms * MS))] if periodic else []

        self.tx1 = PingTxOp(self, CountCondition(self, c["messages"]), *pacing(c["tx1_period_ms"]),
                            name="tx1", work_ms=c["tx1_work_ms"], work_model=c["work_model"])
        self.tx2 = PingTxOp(self, CountCondition(self, c["messages"]), *pacing(c["tx2_period_ms"]),
                            name="tx2", work_ms=c["tx2_work_ms"], work_model=c["work_model"])
        done = BooleanCondition(self, enable_tick=True, name="is_done")
        self.rx = PingRxOp(self, done, *pacing(c["rx_period_ms"]), name="rx", done=done,
                           last_index=c["messages"] - 1, work_ms=c["rx_work_ms"],
                           work_model=c["work_model"])
        if c["buffer"] == "async":
            self.add_flow(self.tx1, self.rx, {("out", "in1")}, IOSpec.ConnectorType.ASYNC_BUFFER)
            self.add_flow(self.tx2, self.rx, {("out", "in2")}, IOSpec.ConnectorType.ASYNC_BUFFER)
        else:
            self.add_flow(self.tx1, self.rx, {("out", "in1")})
            self.add_flow(self.tx2, self.rx, {("out", "in2")})
        ops = {"tx1": self.tx1, "tx2": self.tx2, "rx": self.rx}
        for request in self.realtime:
            apply_realtime(self, ops[request.operator], request)


def run(config: dict, realtime) -> tuple[dict, dict]:
    app = AsyncBufferApp(config, realtime)
    # One worker per operator for the control; DEADLINE operators get their own pool threads.
    app.scheduler(EventBasedScheduler(app, name="ebs", worker_thread_number=3 if not realtime else 1,
                                      stop_on_deadlock=True, stop_on_deadlock_timeout=100,
                                      max_duration_ms=config["max_duration_ms"]))
    start = time.monotonic_ns()
    app.run()
    measured_s = (time.monotonic_ns() - start) / 1e9

    samples = columns({name: (op.t_start, op.t_emit) for name, op in (("tx1", app.tx1),
                                                                       ("tx2", app.tx2))},
                      app.rx.receipts)
    operators = {
        "tx1": {"ticks": len(app.tx1.t_emit), "sched": app.tx1.sched},
        "tx2": {"ticks": len(app.tx2.t_emit), "sched": app.tx2.sched},
        "rx": {"ticks": app.rx.ticks, "sched": app.rx.sched},
    }
    summary = {**app.rx.receipts.summary(), "duration_s": measured_s}
    return samples, {"operators": operators, "effective": dict(config), "summary": summary,
                     "measured_s": measured_s}


if __name__ == "__main__":
    main(run)
