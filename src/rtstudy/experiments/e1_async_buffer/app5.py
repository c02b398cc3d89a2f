"""E1 on Holoscan 5.0: a latest-value connection vs the default queue, under SCHED_DEADLINE.

Same graph, same samples (``event``, ``port``, ``index``, ``t_start_ns``, ``t_emit_ns``,
``t_rx_ns``), same summary and ``operators``/``sched`` read-back as :mod:`.app` (4.x), so
E1's analysis serves both SDKs. 5.0 has no AsyncBuffer connector and no conditions; what
maps to what:

- **async buffer** (4.x: the lock-free buffer hands back the latest message on every read)
  → a latest-value connection: ``add_flow(queue_policy=DROP_OLDEST, queue_depth=1)`` (a
  new message replaces the unread one) and ``rx``'s contract ``LatestWithin`` with
  ``ReuseLast`` on each input (the newest unread message, else the last one again:
  counted as a stale re-read, as in 4.x). ``LatestWithin`` selects only messages with a
  capture time, so the producers emit with ``EmitOptions(capture_time=...)``.
- **default buffer** (4.x: a one-message queue; ``rx`` runs only with a message on both
  inputs; a producer does not run while its queue is full) → 5.0's default queue policy
  (BLOCKING, lossless) at 4.x's depth of one, and ``rx`` triggered ``OnAligned`` on both
  inputs (one message from each, first in first out; 5.0's join: its window is the whole
  run, so every pair aligns). 5.0 does not hold a producer back while the queue is full:
  its ``emit`` raises ``BackpressuredError``. The producer then keeps the message and
  starts no new work, retrying at each activation until it goes (``blocked_activations``
  in the summary): the same throttling. ``t_emit`` is when the queue took the message, so
  ``t_rx − t_emit`` compares with 4.x's; ``t_rx − t_start`` also holds the time it waited
  for room, which a 4.x producer spent before ``t_start``, not running.
- **pacing**: every operator is triggered ``OnClock`` at its period (4.x: its
  SCHED_DEADLINE period, or a PeriodicCondition in the control), except the default
  buffer's ``rx``, which runs when a pair is there (4.x: at its next period after that),
  with its reservation unchanged.
- **threads**: each operator is an execution partition of its own (a thread); under
  ``deadline`` each is bound to a ``ThreadPlacement`` with SCHED_DEADLINE (runtime,
  deadline = period, period), never pinned to one CPU (5.0's run fails,
  RUNTIME_LANE_STARTUP_FAILED); the control (``none``) leaves them SCHED_OTHER.
- **stop**: producers stop after ``messages`` and ``rx`` ends the run
  (``request_completion``) once both last indices arrived, as 4.x's BooleanCondition;
  ``max_duration_ms`` stops it otherwise (then ``complete`` is false).

Nothing of E1's plan is left out: both buffers, both policies and both work models map.
The placement records the compiler accepted and each connection's queue policy and depth
(read back from the plan) are in the summary.
"""
from __future__ import annotations

import json
import time
from datetime import timedelta

# First: importing rtstudy.apps preloads libcudart, without which holoscan does not import.
from rtstudy.apps.child import main, thread_record  # noqa: I001
import holoscan as hs
from holoscan import execution as ex
from holoscan.errors import BackpressuredError

from rtstudy.apps.run5 import compile_checked, run_within, thread_placement
from rtstudy.experiments.e1_async_buffer.receipts import PRODUCERS, Receipts, columns
from rtstudy.measure.work import busy_for

MS = 1_000_000
CHOSEN = (hs.InputState.SELECTED, hs.InputState.REUSED)  # states that hand compute a message


class PingTxOp(hs.Operator):
    """Works ``work_ms``, then emits ``(index, t_start_ns, t_emit_ns)`` on ``out``; ``messages``
    times."""

    out = hs.Output("out", hs.payload.pyobject)
    period_ms = hs.Param(10.0, description="activation period (ms)")
    work_ms = hs.Param(0.0, description="work before each message (ms)")
    work_model = hs.Param("native", description="rtstudy.measure.work model: native or python")
    messages = hs.Param(1, description="messages to emit, then idle")
    ran: dict = {}  # name → the instance that ran; compiling also builds instances that never do

    def __init__(self):
        super().__init__()
        self.t_start: list[int] = []
        self.t_emit: list[int] = []
        self.pending: tuple[int, int] | None = None  # (index, t_start) of a message not taken yet
        self.blocked = 0
        self.sched: dict | None = None

    def setup(self, spec):
        spec.output(self.out)

    def contract(self):
        return hs.Contract().trigger(hs.OnClock(period=timedelta(milliseconds=self.period_ms)))

    def compute(self, ctx):
        if self.sched is None:
            self.sched = thread_record()
            PingTxOp.ran[ctx.operator_path] = self
        if self.pending is None:
            if len(self.t_emit) >= self.messages:
                return
            t_start = time.monotonic_ns()
            busy_for(int(self.work_ms * MS), self.work_model)
            self.pending = (len(self.t_emit), t_start)
        index, t_start = self.pending
        t_emit = time.monotonic_ns()
        try:
            self.out.emit((index, t_start, t_emit),
                          options=hs.EmitOptions(capture_time=ctx.clock().now()))
        except BackpressuredError:
            self.blocked += 1  # the blocking queue is full: this message again next time
            return
        self.pending = None
        self.t_start.append(t_start)
        self.t_emit.append(t_emit)


class PingRxOp(hs.Operator):
    """Records latency and arrival per new index on ``in1`` and ``in2``, then works ``work_ms``."""

    in1 = hs.Input("in1", hs.payload.pyobject)
    in2 = hs.Input("in2", hs.payload.pyobject)
    buffer = hs.Param("default", description="default (a pair, FIFO) or async (latest value)")
    period_ms = hs.Param(10.0, description="activation period of the async consumer (ms)")
    horizon_ms = hs.Param(1000.0, description="age (ms) within which any message counts: the run")
    work_ms = hs.Param(0.0, description="work after reading both inputs (ms)")
    work_model = hs.Param("native", description="rtstudy.measure.work model: native or python")
    last_index = hs.Param(0, description="index of each producer's last message")
    last: "PingRxOp | None" = None

    def __init__(self):
        super().__init__()
        self.receipts: Receipts | None = None  # made at the first compute, with its parameters
        self.ticks = 0
        self.sched: dict | None = None
        PingRxOp.last = self

    def setup(self, spec):
        spec.input(self.in1)
        spec.input(self.in2)

    def contract(self):
        horizon = timedelta(milliseconds=self.horizon_ms)
        if self.buffer == "default":
            return (hs.Contract().trigger(hs.OnAligned(ports=[self.in1, self.in2], window=horizon))
                    .input(self.in1, hs.Exact()).input(self.in2, hs.Exact()))
        contract = hs.Contract().trigger(hs.OnClock(period=timedelta(milliseconds=self.period_ms)))
        for port in (self.in1, self.in2):
            contract = (contract.input(port, hs.LatestWithin(max_age=horizon))
                        .on_missing(port, hs.ReuseLast(max_age=horizon)))
        return contract

    def compute(self, ctx):
        self.ticks += 1
        if self.sched is None:
            self.sched = thread_record()
            self.receipts = Receipts(self.last_index)
        for name, port in (("in1", self.in1), ("in2", self.in2)):
            chosen = port.selection().state in CHOSEN
            msg = port.selected_sample().data if chosen else None
            self.receipts.record(name, msg, time.monotonic_ns())
        busy_for(int(self.work_ms * MS), self.work_model)
        if self.receipts.complete:
            ctx.request_completion()


class AsyncBufferGraph(hs.Graph):
    def __init__(self, config: dict):
        super().__init__("e1_async_buffer", default_clock=hs.RealtimeClock)
        self.config = config

    def compose(self):
        c = self.config
        common = {"work_model": c["work_model"]}
        rx = self.op(PingRxOp, "rx", buffer=c["buffer"], period_ms=float(c["rx_period_ms"]),
                     horizon_ms=float(c["max_duration_ms"]), work_ms=float(c["rx_work_ms"]),
                     last_index=c["messages"] - 1, **common)
        self.partition("rx").add(rx)
        # The default queue's policy (BLOCKING) at 4.x's capacity of one, or latest-value.
        flow = {"queue_depth": 1}
        if c["buffer"] == "async":
            flow["queue_policy"] = hs.QueuePolicy.DROP_OLDEST
        for name, port in PRODUCERS.items():
            tx = self.op(PingTxOp, name, period_ms=float(c[f"{name}_period_ms"]),
                         work_ms=float(c[f"{name}_work_ms"]), messages=c["messages"], **common)
            self.add_flow(tx.out, getattr(rx, port), **flow)
            self.partition(name).add(tx)


def run(config: dict, realtime) -> tuple[dict, dict]:
    PingTxOp.ran = {}
    binding = ex.DeploymentBinding()
    for request in realtime:
        binding = binding.bind_thread_placement(request.operator, thread_placement(request))
    plan, placements = compile_checked(AsyncBufferGraph(config), binding)
    session, measured_s = run_within(plan, config["max_duration_ms"] / 1000)
    rx, producers = PingRxOp.last, {name: PingTxOp.ran.get(name) for name in PRODUCERS}
    if rx.sched is None or None in producers.values():
        raise RuntimeError(f"an operator never ran (run ended {session.termination.name}): "
                           + "; ".join(str(d) for d in session.diagnostics))
    samples = columns({name: (op.t_start, op.t_emit) for name, op in producers.items()},
                      rx.receipts)
    operators = {name: {"ticks": len(op.t_emit), "sched": op.sched}
                 for name, op in producers.items()}
    operators["rx"] = {"ticks": rx.ticks, "sched": rx.sched}
    edges = json.loads(plan.json()).get("payload_edges", [])
    summary = {**rx.receipts.summary(), "duration_s": measured_s,
               "blocked_activations": {name: op.blocked for name, op in producers.items()},
               "termination": session.termination.name,
               "diagnostics": [str(d) for d in session.diagnostics],
               # What 5.0 accepted: each partition's thread, each connection's queue.
               "placements": placements,
               "queues": [{"policy": hs.QueuePolicy(e["queue_policy"]).name,
                           "depth": e["queue_depth"]} for e in edges]}
    return samples, {"operators": operators, "effective": {**config, "sdk_api": 5},
                     "summary": summary, "measured_s": measured_s}


if __name__ == "__main__":
    main(run)
