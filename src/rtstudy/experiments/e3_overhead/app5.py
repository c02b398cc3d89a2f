"""E3 on Holoscan 5.0: the cost of one iteration in 5.0's executor, with E3's apps and records.

Same apps, same samples (``run``, ``iterations``, ``op``, ``tick``, ``t_ns``), same
``summary["runs"]`` keys and the same ``operators`` read-back as :mod:`.app` (4.x), so
E3's analysis (whole-app time against N: start-up + N × per-iteration cost; the compute
stamps for the steady cost) serves both SDKs. What maps to what:

- **the scheduler** → 5.0 has one executor: execution *lanes* (a thread each) run
  *partitions* of operators. The cell's ``scheduler`` is ``executor`` and ``workers`` its
  number of lanes: 1, every operator left to the compiler, which puts them all in one
  automatic partition (one thread running them in turn, as the GreedyScheduler does);
  2, one authored partition per operator (a thread each, as an EventBasedScheduler with a
  worker per operator). The plan's own record of it (lanes, workers, ready policy) is
  read back where 4.x's scheduler arguments were.
- ``ops``, two port-less operators with ``CountCondition(N)`` → two operators triggered by
  ``OnClock`` with a 1 ns period: always due, so each activation follows the last at
  once, as a 4.x operator with no other condition. 5.0 refuses ``complete_after`` for a
  port-less operator (OPERATOR_COMPLETION_PLACEMENT_UNSUPPORTED), so each records its
  first N activations and the second to get there ends the run
  (``request_completion``); the first is still activated meanwhile, recording nothing
  (counted in the summary as ``extra_activations``; 4.x stopped it): on a lane of its own it
  sleeps 1 ms in each, so it takes little from the other.
- ``ping``, ``PingTxOp`` with ``CountCondition(N)`` → ``PingRxOp``: the transmitter's
  contract ``complete_after(N)``, the receiver triggered ``OnEach`` message (5.0's default
  queue between them); the run ends ``COMPLETED`` once the receiver has taken the last
  message, as the 4.x app ended when nothing could tick. 5.0 usually holds the transmitter
  back while the queue is full, but on two lanes it can still activate it a moment early
  (seen once under load: ``emit`` raised ``BackpressuredError``); the transmitter then
  waits in that activation until the queue takes the message, as a 4.x transmitter waited
  for room before its tick (``blocked_emits`` in the summary counts the retries).
- the seed's whole-app time (constructor, compose, run, teardown) → building the graph,
  ``hs.compile`` (which calls ``compose``), the run, and the session's end.
- ``max_duration_ms`` → the time the app waits for a run before it stops it
  (``request_stop``); a stopped run fails the cell.

No counterpart, so not in the 5.0 plan: the choice of scheduler itself, EventBased's worker
counts beyond one per operator (a partition is one thread, and two operators make at most
two partitions; EventBased with one worker is the one-lane executor again), and
``stop_on_deadlock``/its timeout (a 5.0 run ends when its sources complete or one asks).
"""
from __future__ import annotations

import json
import threading
import time

# First: importing rtstudy.apps preloads libcudart, without which holoscan does not import.
from rtstudy.apps.child import main, thread_record  # noqa: I001
import holoscan as hs
from holoscan.errors import BackpressuredError

from rtstudy.apps.run5 import compile_checked, run_within

ALWAYS_DUE = hs.time.ns(1)  # a clock period every activation overruns: back to back
COLUMNS = ("run", "iterations", "op", "tick", "t_ns")
DONE_SLEEP_US = 1000  # an operator done first, on a lane of its own: 1 ms asleep per activation
RETRY_SLEEP_S = 10e-6  # between emits the queue refused: off the GIL, so the receiver can take one
RETRY_FOR_S = 5.0  # refused that long, the receiver is not coming (e.g. on the same lane): fail


class Stamped(hs.Operator):
    """Keeps the CLOCK_MONOTONIC start (ns) of its first ``iterations`` computes and its thread."""

    iterations = hs.Param(2, description="computes to record (N)")
    ran: dict = {}  # name → the instance that ran; compiling also builds instances that never do

    def __init__(self):
        super().__init__()
        self.stamps: list[int] = []
        self.first_thread: dict | None = None
        self.last_tid: int | None = None
        self.path = ""  # its name in the graph, known from its first compute
        self.extra = 0

    def stamp(self, ctx) -> bool:
        """Record this compute's start; False once ``iterations`` are recorded (nothing kept)."""
        now = time.monotonic_ns()
        if len(self.stamps) >= self.iterations:
            self.extra += 1
            return False
        if self.first_thread is None:
            self.first_thread = thread_record()
            self.path = ctx.operator_path
            Stamped.ran[self.path] = self
        self.stamps.append(now)
        self.last_tid = threading.get_native_id()
        return True


class IdleOp(Stamped):
    """A port-less operator recording its start times; the second of two to finish ends the run."""

    done_sleep_us = hs.Param(0, description="sleep (µs) in each activation after the N-th")

    def contract(self):
        return hs.Contract().trigger(hs.OnClock(period=ALWAYS_DUE))

    def compute(self, ctx):
        if not self.stamp(ctx):
            # Done, but still activated: off the CPU and the GIL, so that the operator still
            # counting runs nearly as it would beside 4.x's stopped one.
            time.sleep(self.done_sleep_us / 1e6)
        elif len(self.stamps) == self.iterations:
            done = [op for op in Stamped.ran.values() if len(op.stamps) >= op.iterations]
            if len(done) == 2:
                ctx.request_completion()


class PingTxOp(Stamped):
    """Emits its tick index on ``out``; its source completes after ``iterations`` activations."""

    out = hs.Output("out", hs.payload.int64)

    def setup(self, spec):
        spec.output(self.out)

    def contract(self):
        return hs.Contract().trigger(hs.OnClock(period=ALWAYS_DUE)).complete_after(self.iterations)

    def __init__(self):
        super().__init__()
        self.blocked = 0

    def compute(self, ctx):
        self.stamp(ctx)
        # complete_after counts activations, so a message refused here would be lost, not sent
        # later: wait for room within this activation instead.
        give_up = time.monotonic() + RETRY_FOR_S
        while True:
            try:
                self.out.emit(len(self.stamps))
                return
            except BackpressuredError:
                self.blocked += 1
                if time.monotonic() > give_up:
                    raise
                time.sleep(RETRY_SLEEP_S)


class PingRxOp(Stamped):
    """Takes each message from ``inp`` and counts them."""

    inp = hs.Input("inp", hs.payload.int64)

    def __init__(self):
        super().__init__()
        self.received = 0

    def setup(self, spec):
        spec.input(self.inp)

    def contract(self):
        return hs.Contract().trigger(hs.OnEach(self.inp))

    def compute(self, ctx):
        self.stamp(ctx)
        self.inp.receive()
        self.received += 1


class OverheadGraph(hs.Graph):
    """``ops`` or ``ping`` with ``iterations`` ticks, on ``lanes`` execution lanes (1 or 2)."""

    def __init__(self, kind: str, iterations: int, lanes: int):
        super().__init__(f"e3_{kind}", default_clock=hs.RealtimeClock)
        self.kind, self.iterations, self.lanes = kind, iterations, lanes

    def compose(self):
        if self.kind == "ops":
            # On one lane a sleep would hold up the other operator too; there, the one done
            # first gets at most one activation before the other is done as well.
            ops = [self.op(IdleOp, name, iterations=self.iterations,
                           done_sleep_us=DONE_SLEEP_US if self.lanes > 1 else 0)
                   for name in ("op1", "op2")]
        else:
            ops = [self.op(PingTxOp, "tx", iterations=self.iterations),
                   self.op(PingRxOp, "rx", iterations=self.iterations)]
            self.add_flow(ops[0].out, ops[1].inp)
        if self.lanes > 1:  # one lane each; left alone, the compiler makes one lane of all
            for index, op in enumerate(ops):
                self.partition(f"lane{index}").add(op)


def run_once(config: dict, n: int) -> tuple[object, list[Stamped]]:
    """Compile and run one app of ``n`` iterations, bounded by ``max_duration_ms``."""
    Stamped.ran = {}
    plan, _ = compile_checked(OverheadGraph(config["app"], n, config["workers"]))
    session, _ = run_within(plan, config["max_duration_ms"] / 1000)
    if session.termination.name not in ("COMPLETED", "REQUESTED_COMPLETED"):
        raise RuntimeError(f"a run of N = {n} ended {session.termination.name} (not completed "
                           f"within max_duration_ms = {config['max_duration_ms']}): "
                           + "; ".join(str(d) for d in session.diagnostics))
    order = ("op1", "op2") if config["app"] == "ops" else ("tx", "rx")
    return plan, [Stamped.ran[name] for name in order]


def timed_run(config: dict, n: int) -> tuple[object, list[Stamped], dict]:
    """One app of ``n`` iterations timed as the seed does, with :mod:`.app`'s summary keys (ns, s,
    ms, µs as named)."""
    t_begin = time.monotonic_ns()
    plan, ops = run_once(config, n)
    t_end = time.monotonic_ns()
    first = min(op.stamps[0] for op in ops)
    last = max(op.stamps[-1] for op in ops)
    lead = ops[0].stamps
    summary = {
        "iterations": n, "t_begin_ns": t_begin, "t_first_compute_ns": first,
        "t_last_compute_ns": last, "t_end_ns": t_end, "total_s": (t_end - t_begin) / 1e9,
        "whole_app_us_per_iter": (t_end - t_begin) / n / 1e3,
        "startup_ms": (first - t_begin) / 1e6, "teardown_ms": (t_end - last) / 1e6,
        "steady_us_per_iter": ((lead[-1] - lead[0]) / (len(lead) - 1) / 1e3
                               if len(lead) > 1 else None),
        "ticks": {op.path: len(op.stamps) for op in ops},
        "extra_activations": {op.path: op.extra for op in ops},
    }
    if config["app"] == "ping":
        summary["received"] = ops[1].received
        summary["blocked_emits"] = ops[0].blocked
    return plan, ops, summary


def run(config: dict, realtime) -> tuple[dict, dict]:
    """Warm up once, then time one app per entry of ``config["iterations"]``, in that order."""
    measured_ns = 0
    if config["warmup_iterations"] > 0:
        start = time.monotonic_ns()
        run_once(config, config["warmup_iterations"])
        measured_ns += time.monotonic_ns() - start
    columns: dict[str, list] = {name: [] for name in COLUMNS}
    runs, operators, threads = [], {}, set()
    for index, n in enumerate(config["iterations"]):
        plan, ops, summary = timed_run(config, n)
        measured_ns += summary["t_end_ns"] - summary["t_begin_ns"]
        runs.append({"run": index, **summary})
        for op in ops:
            rows = [(index, n, op.path, tick, t) for tick, t in enumerate(op.stamps)]
            for name, values in zip(COLUMNS, zip(*rows)):
                columns[name] += values
            record = operators.setdefault(op.path, {"ticks": 0, "sched": op.first_thread})
            record["ticks"] += len(rows)
            threads |= {op.first_thread["tid"], op.last_tid}
    readback = {"type": "executor", "args": json.loads(plan.json())["scheduler"],
                "partitions": [{"name": p.authored_name, "lane": p.execution_lane,
                                "operators": list(p.operator_paths)} for p in plan.partitions]}
    effective = {**config, "sdk_api": 5, "scheduler_readback": readback,
                 "distinct_worker_threads_seen": len(threads)}
    return columns, {"operators": operators, "effective": effective, "summary": {"runs": runs},
                     "measured_s": measured_ns / 1e9}


if __name__ == "__main__":
    main(run)
