"""E3: Holoscan's scheduling overhead per iteration (Holoscan SDK guide).

Two apps, as the seed's ``scheduler_overhead_benchmark.py``:

- ``ops``: two port-less operators, each with ``CountCondition(N)``; no messages.
- ``ping``: ``PingTxOp → PingRxOp``, the transmitter with ``CountCondition(N)``.

Operators do no work: every microsecond measured is the scheduler's. One cell
runs one untimed warm-up app and then one timed app per N of a list, timing
as the seed does (constructor + compose + run + teardown, divided by N) and,
beyond the seed, stamping the start of every ``compute`` so the steady
per-iteration cost is separated from start-up and teardown.
"""
from __future__ import annotations

import threading
import time
from typing import TypedDict

# First: importing rtstudy.apps preloads libcudart, without which holoscan does not import.
from rtstudy.apps.child import main, thread_record  # noqa: I001
from holoscan.conditions import CountCondition
from holoscan.core import Application, Operator
from holoscan.schedulers import EventBasedScheduler, GreedyScheduler



class StampMixin:
    """Keeps the CLOCK_MONOTONIC start (ns) of every compute, and the thread it ran on."""

    def _init_stamps(self) -> None:
        # Before Operator.__init__, which calls setup() (Holoscan's rule for attributes).
        self.stamps: list[int] = []
        self.first_thread: dict | None = None
        self.last_tid: int | None = None

    def _stamp(self) -> None:
        self.stamps.append(time.monotonic_ns())
        if self.first_thread is None:
            self.first_thread = thread_record()
        self.last_tid = threading.get_native_id()


class IdleOp(StampMixin, Operator):
    """A port-less operator whose compute does nothing but record its start time."""

    def __init__(self, fragment, *args, **kwargs):
        self._init_stamps()
        super().__init__(fragment, *args, **kwargs)

    def compute(self, op_input, op_output, context):
        self._stamp()


class PingTxOp(StampMixin, Operator):
    """Emits its tick index on ``out``."""

    def __init__(self, fragment, *args, **kwargs):
        self._init_stamps()
        super().__init__(fragment, *args, **kwargs)

    def setup(self, spec):
        spec.output("out")

    def compute(self, op_input, op_output, context):
        self._stamp()
        op_output.emit(len(self.stamps), "out")


class PingRxOp(StampMixin, Operator):
    """Receives from ``in`` and counts what arrived."""

    def __init__(self, fragment, *args, **kwargs):
        self._init_stamps()
        self.received = 0
        super().__init__(fragment, *args, **kwargs)

    def setup(self, spec):
        spec.input("in")

    def compute(self, op_input, op_output, context):
        self._stamp()
        if op_input.receive("in") is not None:
            self.received += 1


class OverheadApp(Application):
    """``ops`` or ``ping`` with ``iterations`` ticks; ``self.ops`` lists its operators."""

    def __init__(self, kind: str, iterations: int):
        self.kind, self.iterations = kind, iterations
        self.ops: list = []
        super().__init__()

    def compose(self):
        if self.kind == "ops":
            a = IdleOp(self, CountCondition(self, self.iterations), name="op1")
            b = IdleOp(self, CountCondition(self, self.iterations), name="op2")
            self.add_operator(a)
            self.add_operator(b)
            self.ops = [a, b]
        else:
            tx = PingTxOp(self, CountCondition(self, self.iterations), name="tx")
            rx = PingRxOp(self, name="rx")
            self.add_flow(tx, rx)
            self.ops = [tx, rx]


def make_app(config: dict, iterations: int) -> OverheadApp:
    app = OverheadApp(config["app"], iterations)
    if config["scheduler"] == "greedy":
        scheduler = GreedyScheduler(app, name="greedy", max_duration_ms=config["max_duration_ms"],
                                    stop_on_deadlock=True)
    else:
        scheduler = EventBasedScheduler(
            app, name="event_based", worker_thread_number=config["workers"],
            stop_on_deadlock=True, stop_on_deadlock_timeout=config["stop_on_deadlock_timeout_ms"],
            max_duration_ms=config["max_duration_ms"])
    app.scheduler(scheduler)
    return app


class SchedulerArgs(TypedDict):
    type: str  # the scheduler's class
    args: dict[str, str]  # each argument's value as Holoscan holds it


def scheduler_args(app) -> SchedulerArgs:
    """The scheduler's arguments as Holoscan holds them (read back, not as requested)."""
    sched = app.scheduler()
    args = {}
    for arg in sched.args:
        text = repr(arg)
        value = text.split("value:", 1)[1].strip() if "value:" in text else text
        args[arg.name] = value
    return {"type": type(sched).__name__, "args": args}


def timed_run(config: dict, n: int) -> tuple[OverheadApp, dict]:
    """Build and run one app of ``n`` iterations; its timings in ns and derived figures."""
    t_begin = time.monotonic_ns()
    app = make_app(config, n)
    t_built = time.monotonic_ns()
    app.run()
    t_end = time.monotonic_ns()
    first = min(op.stamps[0] for op in app.ops if op.stamps)
    last = max(op.stamps[-1] for op in app.ops if op.stamps)
    lead = app.ops[0].stamps
    summary = {
        "iterations": n,
        "t_begin_ns": t_begin,
        "t_built_ns": t_built,
        "t_first_compute_ns": first,
        "t_last_compute_ns": last,
        "t_end_ns": t_end,
        "total_s": (t_end - t_begin) / 1e9,
        # The seed's figure: the whole app (construct, compose, run, teardown) / N.
        "whole_app_us_per_iter": (t_end - t_begin) / n / 1e3,
        "startup_ms": (first - t_begin) / 1e6,
        "teardown_ms": (t_end - last) / 1e6,
        # Beyond the seed: first to last compute of the lead operator / (N - 1).
        "steady_us_per_iter": (lead[-1] - lead[0]) / (len(lead) - 1) / 1e3 if len(lead) > 1 else None,
        "ticks": {op.name: len(op.stamps) for op in app.ops},
    }
    if config["app"] == "ping":
        summary["received"] = app.ops[1].received
    return app, summary


def run(config: dict, realtime) -> tuple[dict, dict]:
    """Warm up once, then time one app per entry of ``config["iterations"]``, in that order.

    Several N in one process keep the subprocess start-up (~0.5 s) small next
    to the measurement, and give each cell its own start-up vs per-iteration fit.
    """
    measured_ns = 0
    if config["warmup_iterations"] > 0:
        start = time.monotonic_ns()
        make_app(config, config["warmup_iterations"]).run()
        measured_ns += time.monotonic_ns() - start

    columns: dict[str, list] = {"run": [], "iterations": [], "op": [], "tick": [], "t_ns": []}
    runs, operators, threads = [], {}, set()
    for index, n in enumerate(config["iterations"]):
        app, summary = timed_run(config, n)
        measured_ns += summary["t_end_ns"] - summary["t_begin_ns"]
        runs.append({"run": index, **summary})
        for op in app.ops:
            k = len(op.stamps)
            columns["run"] += [index] * k
            columns["iterations"] += [n] * k
            columns["op"] += [op.name] * k
            columns["tick"] += list(range(k))
            columns["t_ns"] += op.stamps
            record = operators.setdefault(op.name, {"ticks": 0, "sched": op.first_thread})
            record["ticks"] += k
            threads |= {t for t in (op.first_thread and op.first_thread["tid"], op.last_tid) if t}
    effective = {**config, "scheduler_readback": scheduler_args(app),
                 "distinct_worker_threads_seen": len(threads)}
    return columns, {"operators": operators, "effective": effective, "summary": {"runs": runs},
                     "measured_s": measured_ns / 1e9}


if __name__ == "__main__":
    main(run)
