"""E2's ``fragment`` placement (a fix): the app as a Holoscan distributed application of two
fragments, each in a process of its own, so the loads share no GIL with the target.

Fragment ``rt`` (the cell's process, the driver) holds the target and its :class:`.SenderOp`;
fragment ``load`` (a process the cell starts, :func:`load_worker`) holds the load operators and
the :class:`.ReceiverOp`. Here: the two fragments and their application, the ports and
arguments that connect them, the load process's life, and what the cell records of it
(module docstring of :mod:`.app`).
"""
from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TypedDict

import numpy as np

# First: importing rtstudy.apps preloads libcudart, without which holoscan does not import.
from rtstudy.apps.child import apply_realtime  # noqa: I001
from holoscan.core import Application, Fragment
from holoscan.schedulers import EventBasedScheduler

from rtstudy.experiments.e2_rt_threads.measuring.operators import (LoadOp, ReceiverOp, SenderOp,
                                                         make_loads, make_target)
from rtstudy.measure.process import die_with_parent, end_process
from rtstudy.measure.realtime import DISPATCHER

FRAGMENT = "fragment"  # the load placement whose loads run in a fragment of their own
TARGET_FRAGMENT, LOAD_FRAGMENT = "rt", "load"
# The load fragment's process runs the cell's app module; its __main__ hands argv[2:] to
# load_worker when argv[1] is LOAD_WORKER.
APP_MODULE = f"{__package__}.app"
LOAD_WORKER = "--load-fragment"
HOST = "127.0.0.1"
# The load fragment stops this long (ms) after its loads are disabled and no message is left.
# Holoscan waits network_connection_timeout (5 s by default) before it calls a distributed
# fragment idle, which would add 5 s to every cell; the loads keep the fragment busy from its
# start to the last frame, so a short wait cannot end it before the target has connected.
LOAD_IDLE_MS = 100
# How long (s) the load fragment's process may take to exit once the target's fragment is done.
LOAD_EXIT_S = 20


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
    ports, its output's last lines: :func:`relay`) and, where it wrote them, the load
    process's results (``load``).
    """
    out = Path(tempfile.mkdtemp(prefix="e2-load-")) / "load.json"
    log = out.with_name("load.log")
    # A real-time dispatcher is the target's process's request, not the loads'.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GXF_EBS_DISPATCHER_")}
    # HOLOSCAN_UCX_PORTS: the receiver's UCX port (else Holoscan takes 10000 and up). Its output
    # goes to a file of its own, relayed to the cell's log when it ends, so that a failure's
    # reason can quote the load process's last lines rather than the cell's.
    with open(log, "wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", APP_MODULE, LOAD_WORKER,
                                 json.dumps(config), str(out),
                                 *holoscan_args(LOAD_FRAGMENT, ports["driver"],
                                                ports["load_worker"])],
                                env={**env, "HOLOSCAN_UCX_PORTS": str(ports["load_ucx"])},
                                stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                                preexec_fn=die_with_parent)
    done = threading.Event()

    def watch() -> None:
        rc = proc.wait()  # blocked in waitpid, without the GIL
        if rc != 0 and not done.is_set():
            tail = relay(log)
            print(f"ERROR: the load fragment's process exited with status {rc} before the "
                  f"target's fragment finished: {tail}", file=sys.stderr, flush=True)
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
                                  "ports": ports, "last_lines": relay(log)}
        if out.is_file():
            record["load"] = json.loads(out.read_text())
        shutil.rmtree(out.parent, ignore_errors=True)


def relay(log: Path, lines: int = 4) -> str:
    """Copy the load process's output (``log``) to this process's stderr, the cell's log, and
    return its last ``lines`` non-blank lines joined by `` | `` (what a failure quotes)."""
    text = log.read_text(errors="replace") if log.is_file() else ""
    sys.stderr.write(text)
    sys.stderr.flush()
    return " | ".join([ln for ln in text.splitlines() if ln.strip()][-lines:])


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


class MessageSummary(TypedDict):
    """The fragment's messages after the warm-up (:func:`message_summary`), µs."""

    warmup_frames: int
    count: int
    p50_us: float
    p99_us: float
    max_us: float


class Window(TypedDict):
    seconds: float  # from the first frame to the last
    cpu_s: float  # the CPU the process used meanwhile


def message_summary(messages: dict, warmup_frames: int) -> MessageSummary:
    """The latencies (µs, receipt − send) of the messages of the frames after the first
    ``warmup_frames``: their ``count``, ``p50_us``, ``p99_us`` and ``max_us`` (NaN without any)."""
    kept = np.asarray(messages["frame"]) >= warmup_frames
    sent, received = np.asarray(messages["t_send_ns"]), np.asarray(messages["t_recv_ns"])
    latency_us = (received - sent)[kept] / 1e3
    p50, p99, top = (np.percentile(latency_us, [50, 99, 100]) if len(latency_us)
                     else (np.nan,) * 3)
    return {"warmup_frames": warmup_frames, "count": int(kept.sum()), "p50_us": float(p50),
            "p99_us": float(p99), "max_us": float(top)}


def frames_window(target_marks: list, load_marks: list) -> dict[str, Window] | None:
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


def driver_app(config: dict, realtime, workers: int, record: dict):
    """The cell's side of the placement: the :class:`FragmentApp` that runs fragment ``rt`` (the
    driver, ``workers`` default workers) and the :func:`load_process` to run it in, which
    leaves the load process's results in ``record``."""
    # All at once, so that no two are the same.
    ports = dict(zip(("driver", "rt_worker", "load_worker", "load_ucx"), free_ports(4)))
    app = FragmentApp(config, realtime, [sys.executable, sys.argv[0], *holoscan_args(
        TARGET_FRAGMENT, ports["driver"], ports["rt_worker"])], workers)
    return app, load_process(config, ports, record)


def add_results(far: dict, target, start_ns: int, config: dict, summary: dict,
                extra: dict) -> None:
    """Put what the load process recorded (``far``, :func:`load_process`'s ``record``) into
    the cell's ``summary`` (its ``load_ticks``, ``fragment`` and ``messages``) and ``extra``
    (the ``messages`` table); ``start_ns`` is when the driver started (monotonic ns)."""
    if "load" not in far:
        process = far["load_process"]
        raise RuntimeError(f"the load fragment's process wrote no results (exit status "
                           f"{process['exit_code']}); its last lines: {process['last_lines']}")
    load = far.pop("load")
    extra["messages"] = load.pop("messages")
    summary["load_ticks"] = load.pop("load_ticks")  # the load fragment's operators
    # From the driver's start to the target's first frame (s): the fragments' start-up.
    startup_s = (target.t_start[0] - start_ns) / 1e9 if target.t_start else None
    window = frames_window(target.cpu_marks, load.pop("cpu_marks"))
    summary["fragment"] = {**far, **load, "startup_s": startup_s, "frames_window": window}
    summary["messages"] = message_summary(extra["messages"], config["warmup_frames"])
