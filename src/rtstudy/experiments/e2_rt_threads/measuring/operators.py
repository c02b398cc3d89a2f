"""E2's Holoscan 4.x operators: the periodic target, the load, and the two ends of the target's
messages in the ``fragment`` placement (:mod:`.fragments`); and the helpers that add them."""
from __future__ import annotations

import resource
import time

# First: importing rtstudy.apps preloads libcudart, without which holoscan does not import.
from rtstudy.apps.child import process_threads, thread_record  # noqa: I001
from holoscan.conditions import BooleanCondition, CountCondition, PeriodicCondition
from holoscan.core import ConditionType, IOSpec, Operator

from rtstudy.measure.work import busy_for, fixed_work
from rtstudy.policies import SCHED_DEADLINE

MS = 1_000_000
# The sender's queue (messages): frames that arrive while it waits for UCX.
SENDER_QUEUE = 64


class TargetOp(Operator):
    """Stamps each compute start (ns) and times a fixed workload; stops the loads when done."""

    def __init__(self, fragment, *args, frames: int, work_iterations: int, loads_done: list,
                 emit: bool = False, **kwargs):
        self.frames = frames
        self.work_iterations = work_iterations
        self.loads_done = loads_done
        self.emit = emit
        self.cpu_marks: list[tuple[int, float]] = []  # (ns, process CPU s) at the first, last frame
        self.t_start: list[int] = []
        self.exec_ns: list[int] = []
        self.sched: dict | None = None
        self.threads: list[dict] | None = None
        super().__init__(fragment, *args, **kwargs)

    def setup(self, spec):
        if self.emit:
            # No condition on the port: the target's next tick never waits for the receiver.
            spec.output("out").condition(ConditionType.NONE)

    def compute(self, op_input, op_output, context):
        t0 = time.monotonic_ns()
        fixed_work(self.work_iterations, "native")
        t1 = time.monotonic_ns()
        self.t_start.append(t0)
        self.exec_ns.append(t1 - t0)
        if self.sched is None:
            self.sched = thread_record()
        elif self.threads is None:
            # Every thread of the process as it runs (the dispatcher's policy among them); on
            # the second frame, so it is never the first frame's period that pays for it.
            self.threads = process_threads()
        if self.emit and len(self.t_start) in (1, self.frames):
            self.cpu_marks.append((t0, process_cpu_s()))
        if self.emit:
            # Stamped as it leaves the target: the latency is the way to the receiver alone.
            op_output.emit({"frame": len(self.t_start) - 1, "t_send_ns": time.monotonic_ns()},
                           "out")
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


class SenderOp(Operator):
    """Forwards the target's messages over UCX to the load fragment from the fragment's default
    worker (normal policy), not the target's thread: whatever has queued, as one list.

    Holoscan 4.6 completes a UCX send on the sending operator's thread, and under load that
    waits for the busy receiving process. Sent from the real-time target's own thread, it held
    the target for tens of ms (5 s probes with 3 loads, the host busy with other work:
    frame-period std 20–27 ms sending directly, 2–3 ms through this operator, 1–2 ms sending
    nothing; the target was seen running, polling, two thirds of the time). GXF's C++
    ``Forward`` codelet, one send per message, fell behind at 6 loads (a 4 s run: P50 latency
    0.36 s, and growing): this operator sends what has queued at once. It is the one Python
    operator beside the target in its process, one short ``compute`` after each frame.
    """

    def setup(self, spec):
        # Full, the oldest message is dropped (the receiver counts it lost), never the target
        # held up.
        spec.input("in", size=SENDER_QUEUE, policy=IOSpec.QueuePolicy.POP).condition(
            ConditionType.MESSAGE_AVAILABLE, min_size=1)
        spec.output("out")

    def compute(self, op_input, op_output, context):
        # With a queue above one, receive() gives every message waiting, as a tuple.
        op_output.emit(list(op_input.receive("in")), "out")


class ReceiverOp(Operator):
    """The load fragment's end of the target's messages: stamps each one's receipt (ns) and,
    after the target's last frame, stops the loads."""

    def __init__(self, fragment, *args, frames: int, loads_done: list, **kwargs):
        self.frames = frames
        self.loads_done = loads_done
        self.frame: list[int] = []
        self.t_send_ns: list[int] = []
        self.t_recv_ns: list[int] = []
        self.cpu_marks: list[tuple[int, float]] = []  # (ns, process CPU s) at the first, last
        self.sched: dict | None = None
        super().__init__(fragment, *args, **kwargs)

    def setup(self, spec):
        spec.input("in")

    def compute(self, op_input, op_output, context):
        t = time.monotonic_ns()
        messages = op_input.receive("in")  # the list SenderOp sent
        for m in messages:
            self.frame.append(m["frame"])
            self.t_send_ns.append(m["t_send_ns"])
            self.t_recv_ns.append(t)
        if self.sched is None:
            self.sched = thread_record()
            self.cpu_marks.append((t, process_cpu_s()))
        if any(m["frame"] == self.frames - 1 for m in messages):
            self.cpu_marks.append((t, process_cpu_s()))
            for condition in self.loads_done:
                condition.disable_tick()


def make_loads(fragment, c: dict) -> tuple[list[LoadOp], list]:
    """``c["loads"]`` load operators added to ``fragment``, each with the condition that stops
    it."""
    loads, done = [], []
    for i in range(c["loads"]):
        flag = BooleanCondition(fragment, enable_tick=True, name=f"load{i}_on")
        done.append(flag)
        loads.append(LoadOp(fragment, flag, name=f"load{i}", work_ms=c["load_work_ms"],
                            work_model=c["load_work_model"]))
        fragment.add_operator(loads[-1])
    return loads, done


def make_target(fragment, c: dict, loads_done: list, emit: bool = False) -> TargetOp:
    """The target added to ``fragment``: ``c["frames"]`` frames, paced by a periodic condition
    (the kernel paces SCHED_DEADLINE's)."""
    conditions = [CountCondition(fragment, c["frames"])]
    if c["policy"] != SCHED_DEADLINE:
        conditions.append(PeriodicCondition(fragment, c["period_ns"]))
    target = TargetOp(fragment, *conditions, name="target", frames=c["frames"],
                      work_iterations=c["target_work_iterations"], loads_done=loads_done,
                      emit=emit)
    fragment.add_operator(target)
    return target


def process_cpu_s() -> float:
    """CPU time (s) this process has used so far, all its threads."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime

