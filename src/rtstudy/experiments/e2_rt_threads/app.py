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
  process this one starts, :func:`load_worker`) holds the same load operators as
  ``operators`` and a :class:`ReceiverOp`. The target sends one small message per frame
  through a :class:`SenderOp` of its fragment over UCX on 127.0.0.1; the receiver stamps
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
import json
import os
import random
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

# First: importing rtstudy.apps preloads libcudart, without which holoscan does not import.
from rtstudy.apps.child import (apply_dispatcher, apply_realtime, main,  # noqa: I001
                                process_threads, steering_env, thread_record)
from holoscan.conditions import BooleanCondition, CountCondition, PeriodicCondition
from holoscan.core import Application, ConditionType, Fragment, IOSpec, Operator
from holoscan.schedulers import EventBasedScheduler

from rtstudy.apps.loads import beside
from rtstudy.apps.trace import sched_trace
from rtstudy.measure.process import die_with_parent, end_process
from rtstudy.measure.realtime import DISPATCHER
from rtstudy.measure.work import busy_for, fixed_work
from rtstudy.policies import SCHED_DEADLINE

MS = 1_000_000
SEED_CPUS = [0, 1]    # NVIDIA's Python benchmark: its shared pool's CPUs; loads on the last one
FRAGMENT = "fragment"  # the load placement whose loads run in a fragment of their own
TARGET_FRAGMENT, LOAD_FRAGMENT = "rt", "load"
LOAD_WORKER = "--load-fragment"  # argv[1] of the load fragment's process (see __main__)
HOST = "127.0.0.1"
# The load fragment stops this long (ms) after its loads are disabled and no message is left.
# Holoscan waits network_connection_timeout (5 s by default) before it calls a distributed
# fragment idle, which would add 5 s to every cell; the loads keep the fragment busy from its
# start to the last frame, so a short wait cannot end it before the target has connected.
LOAD_IDLE_MS = 100
# How long (s) the load fragment's process may take to exit once the target's fragment is done.
LOAD_EXIT_S = 20
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


class TargetFragment(Fragment):
    """Fragment ``rt``: the target, with the headline point's policy, CPU and pacing, and the
    :class:`SenderOp` of its messages."""

    def __init__(self, app, name: str, config: dict, realtime, workers: int):
        # Not self.config: Fragment.config() is Holoscan's.
        self.cfg, self.realtime, self.workers = config, realtime, workers
        super().__init__(app, name)

    def compose(self):
        c = self.cfg
        self.target = make_target(self, c, [], emit=True)
        # On the default pool's worker (normal policy): see SenderOp.
        self.add_flow(self.target, SenderOp(self, name="sender"), {("out", "in")})
        if c["policy"] == "normal_dedicated":
            self.make_thread_pool("target_pool", 1).add(self.target, pin_operator=True,
                                                         pin_cores=list(c["target_cpus"]))
        for request in self.realtime:
            apply_realtime(self, self.target, request)
        self.scheduler(EventBasedScheduler(self, name="ebs", worker_thread_number=self.workers,
                                          stop_on_deadlock=True, stop_on_deadlock_timeout=100,
                                          max_duration_ms=c["max_duration_ms"]))


class LoadFragment(Fragment):
    """Fragment ``load``: the headline point's load operators (unpinned, one default worker
    each) and the :class:`ReceiverOp`."""

    def __init__(self, app, name: str, config: dict):
        self.cfg = config
        super().__init__(app, name)

    def compose(self):
        c = self.cfg
        self.loads, done = make_loads(self, c)
        self.receiver = ReceiverOp(self, name="receiver", frames=c["frames"], loads_done=done)
        self.add_operator(self.receiver)
        # A thread of its own (normal policy, any CPU): in the default pool a message would
        # wait for a worker to finish a load's call.
        self.make_thread_pool("receiver_pool", 1).add(self.receiver, pin_operator=True)
        self.scheduler(EventBasedScheduler(self, name="ebs",
                                          worker_thread_number=max(1, c["loads"]),
                                          stop_on_deadlock=True,
                                          stop_on_deadlock_timeout=LOAD_IDLE_MS,
                                          network_connection_timeout=LOAD_IDLE_MS,
                                          max_duration_ms=c["max_duration_ms"]))


class FragmentApp(Application):
    """The ``fragment`` placement: fragments ``rt`` and ``load``, the target's messages from one
    to the other. Each process runs the fragment its Holoscan arguments (``argv``) name."""

    def __init__(self, config: dict, realtime, argv: list[str], workers: int = 1):
        self.cfg, self.workers = config, workers  # Application.config() is Holoscan's
        self.realtime = [r for r in realtime if r.operator != DISPATCHER]
        self.loads: list[LoadOp] = []  # none in the target's process
        super().__init__(argv)

    def compose(self):
        self.rt = TargetFragment(self, TARGET_FRAGMENT, self.cfg, self.realtime, self.workers)
        self.load = LoadFragment(self, LOAD_FRAGMENT, self.cfg)
        self.add_flow(self.rt, self.load, {("sender.out", "receiver.in")})


def ephemeral_low(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> int:
    """The lowest port the kernel gives outgoing connections (32768 where unreadable)."""
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports(n: int, span: int = 12_000) -> list[int]:
    """``n`` distinct TCP ports free on :data:`HOST` now, drawn at random from the ``span``
    ports just below the kernel's ephemeral range.

    Not the kernel's own choice (port 0): that comes from the ephemeral range, from which any
    outgoing connection on the machine may take the port between this check and Holoscan's
    bind, seconds later (seen once: UCX's bind refused with EADDRINUSE while pip downloaded
    beside the cell, and the cell failed).
    """
    high = ephemeral_low()
    draw, ports = random.Random(), []
    while len(ports) < n:
        port = draw.randrange(max(1024, high - span), high)
        with socket.socket() as s:
            try:
                s.bind((HOST, port))
            except OSError:
                continue
        if port not in ports:
            ports.append(port)
    return ports


def holoscan_args(role: str, driver: int, worker: int) -> list[str]:
    """A fragment's process's Holoscan arguments: ``rt`` is the driver and a worker, ``load`` a
    worker; ``driver`` and ``worker`` are TCP ports on :data:`HOST`."""
    driver_args = ["--driver"] if role == TARGET_FRAGMENT else []
    return [*driver_args, "--worker", "--address", f"{HOST}:{driver}",
            "--worker-address", f"{HOST}:{worker}", "--fragments", role]


@contextlib.contextmanager
def load_process(config: dict, ports: dict, record: dict):
    """The load fragment's process (:func:`load_worker`) for the whole block, then its results.

    It connects to the driver at ``ports["driver"]``, so the block runs the driver; it listens
    at ``ports["load_worker"]`` and receives the target's messages at ``ports["load_ucx"]``
    (:data:`HOST`). Started with ``die_with_parent`` (a killed cell leaves no load), waited
    for at most :data:`LOAD_EXIT_S` after the block, then ended. A watch thread ends this
    process if the load process fails first: the driver would otherwise wait for its worker
    until the cell's timeout. On exit ``record`` gets ``load_process`` (pid, exit code,
    ports) and, where it wrote them, the load process's results (``load``).
    """
    out = Path(tempfile.mkdtemp(prefix="e2-load-")) / "load.json"
    # A real-time dispatcher is the target's process's request, not the loads'.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GXF_EBS_DISPATCHER_")}
    # HOLOSCAN_UCX_PORTS: the receiver's UCX port (else Holoscan takes 10000 and up).
    proc = subprocess.Popen([sys.executable, "-m", __spec__.name, LOAD_WORKER, json.dumps(config),
                             str(out), *holoscan_args(LOAD_FRAGMENT, ports["driver"],
                                                      ports["load_worker"])],
                            env={**env, "HOLOSCAN_UCX_PORTS": str(ports["load_ucx"])},
                            stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
    done = threading.Event()

    def watch() -> None:
        rc = proc.wait()  # blocked in waitpid, without the GIL
        if rc != 0 and not done.is_set():
            print(f"ERROR: the load fragment's process exited with status {rc} before the "
                  "target's fragment finished; see its lines above", file=sys.stderr, flush=True)
            shutil.rmtree(out.parent, ignore_errors=True)
            os._exit(1)

    threading.Thread(target=watch, name="load_watch", daemon=True).start()
    try:
        yield record
    finally:
        done.set()
        try:
            proc.wait(timeout=LOAD_EXIT_S)
        except subprocess.TimeoutExpired:
            end_process(proc)
        record["load_process"] = {"pid": proc.pid, "exit_code": proc.returncode,
                                  "ports": ports}
        if out.is_file():
            record["load"] = json.loads(out.read_text())
            out.unlink()
        out.parent.rmdir()


def listening(port: int) -> bool:
    """Whether a TCP socket of this host listens at ``port`` (/proc/net/tcp and tcp6), without
    connecting to it."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as f:
            for line in list(f)[1:]:
                local, state = line.split()[1], line.split()[3]
                if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                    return True
    return False


def load_worker(config_json: str, result_path: str, *args: str) -> None:
    """The load fragment's process: run fragment ``load`` (Holoscan arguments ``args``), then
    write its loads' ticks, its receiver's records and thread to ``result_path`` (JSON).

    It starts with the driver, to import meanwhile, but connects only once the driver
    listens: Holoscan 4.6 retries a refused connection only after 1 s. (The driver's own
    worker, in the cell's process, has the same race and sometimes loses it: +1 or 2 s.)
    """
    driver = int(args[args.index("--address") + 1].rsplit(":", 1)[1])
    deadline = time.monotonic() + LOAD_EXIT_S
    while not listening(driver) and time.monotonic() < deadline:
        time.sleep(0.01)
    app = FragmentApp(json.loads(config_json), (), [sys.executable, sys.argv[0], *args])
    app.run()
    fragment = app.load
    receiver = fragment.receiver
    Path(result_path).write_text(json.dumps({
        "load_ticks": [op.ticks for op in fragment.loads],
        "load_pool_workers": max(1, fragment.cfg["loads"]),
        "receiver_sched": receiver.sched,
        "cpu_marks": receiver.cpu_marks,
        "messages": {"frame": receiver.frame, "t_send_ns": receiver.t_send_ns,
                     "t_recv_ns": receiver.t_recv_ns}}))


def message_summary(messages: dict, warmup_frames: int) -> dict:
    """The latencies (µs, receipt − send) of the messages of the frames after the first
    ``warmup_frames``: their ``count``, ``p50_us``, ``p99_us`` and ``max_us`` (NaN without any)."""
    kept = np.asarray(messages["frame"]) >= warmup_frames
    sent, received = np.asarray(messages["t_send_ns"]), np.asarray(messages["t_recv_ns"])
    latency_us = (received - sent)[kept] / 1e3
    p50, p99, top = (np.percentile(latency_us, [50, 99, 100]) if len(latency_us)
                     else (np.nan,) * 3)
    return {"warmup_frames": warmup_frames, "count": int(kept.sum()), "p50_us": float(p50),
            "p99_us": float(p99), "max_us": float(top)}


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


def process_cpu_s() -> float:
    """CPU time (s) this process has used so far, all its threads."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime


def frames_window(target_marks: list, load_marks: list) -> dict | None:
    """The CPU each fragment's process used from its first frame to its last, as the target
    stamped them and as the receiver got them: per process (``target``, ``load``) the
    ``seconds`` between the two and the ``cpu_s`` used meanwhile; None where a mark is missing.

    The fragment's run also holds its start-up (the load process importing, the fragments
    connecting: 1.4–3.2 s), so the CPU over the whole run would understate what the loads got.
    """
    if len(target_marks) != 2 or len(load_marks) != 2:
        return None
    return {name: {"seconds": (t1 - t0) / 1e9, "cpu_s": cpu1 - cpu0}
            for name, ((t0, cpu0), (t1, cpu1)) in (("target", target_marks),
                                                   ("load", load_marks))}


def cpu_seconds() -> float:
    """CPU time (s) this process and its waited-for children have used so far: what the loads
    got (the target's fixed work is ~0.1 ms a frame)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def run(config: dict, realtime) -> tuple[dict, dict, dict]:
    if config.get("switch_interval_ms"):
        sys.setswitchinterval(config["switch_interval_ms"] / 1000)
    for request in realtime:
        if request.operator == DISPATCHER:
            apply_dispatcher(request)
    workers = default_workers(config)
    fragments = config["load_placement"] == FRAGMENT
    trace, loads, far = {}, {}, {}
    if fragments:
        # All at once, so that no two are the same.
        ports = dict(zip(("driver", "rt_worker", "load_worker", "load_ucx"), free_ports(4)))
        app = FragmentApp(config, realtime, [sys.executable, sys.argv[0], *holoscan_args(
            TARGET_FRAGMENT, ports["driver"], ports["rt_worker"])], workers)
        far_loads = load_process(config, ports, far)
    else:
        app = ContentionApp(config, realtime)
        app.scheduler(EventBasedScheduler(app, name="ebs", worker_thread_number=workers,
                                          stop_on_deadlock=True, stop_on_deadlock_timeout=100,
                                          max_duration_ms=config["max_duration_ms"]))
        far_loads = contextlib.nullcontext()
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
    target = app.rt.target if fragments else app.target
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
    if fragments:
        if "load" not in far:
            raise RuntimeError(f"the load fragment's process wrote no results (exit status "
                               f"{far['load_process']['exit_code']}); see run.log")
        load = far.pop("load")
        extra["messages"] = load.pop("messages")
        summary["load_ticks"] = load.pop("load_ticks")  # the load fragment's operators
        # From the driver's start to the target's first frame (s): the fragments' start-up.
        startup_s = (target.t_start[0] - start) / 1e9 if target.t_start else None
        window = frames_window(target.cpu_marks, load.pop("cpu_marks"))
        summary["fragment"] = {**far, **load, "startup_s": startup_s, "frames_window": window}
        summary["messages"] = message_summary(extra["messages"], config["warmup_frames"])
    if trace:
        extra["trace"] = trace.pop("columns")
        summary["trace"] = trace
    return columns, {"operators": operators,
                     "effective": {**config, "default_pool_workers": workers},
                     "summary": summary, "measured_s": measured_s}, extra


if __name__ == "__main__":
    if sys.argv[1] == LOAD_WORKER:
        load_worker(*sys.argv[2:])
    else:
        main(run)
