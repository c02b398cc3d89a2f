"""Loads that run beside an experiment's measurement: stress-ng, plain threads, a process of them.

Shared by E2 (load placement) and E4 (the floor under stress). All are started
from the cell's main thread, which runs with the normal policy, so nothing they
start inherits a real-time policy. ``python -m rtstudy.apps.loads COUNT WORK_MS MODEL
SECONDS`` is the ``outside`` placement's process: :class:`BusyThreads` until SIGTERM.
"""
from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import threading
import time
from typing import TypedDict

from rtstudy.measure.process import die_with_parent, end_process
from rtstudy.measure.work import busy_for

MS = 1_000_000


def start_stress(workers: int, seconds: float) -> subprocess.Popen:
    """``workers`` stress-ng CPU workers (normal policy, nice 0) for at most ``seconds`` (s).

    The time limit is a safety net; :func:`stop_stress` ends them as soon as the
    measurement does. ``die_with_parent``: a cell killed from outside must not
    leave its load running.
    """
    return subprocess.Popen(["stress-ng", "--cpu", str(workers), "--timeout", f"{int(seconds)}s",
                             "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=die_with_parent)


class StressRecord(TypedDict, total=False):
    """What happened to stress-ng (:func:`stop_stress`); empty where none ran."""

    pid: int
    running_at_stop: bool  # it loaded the whole measurement
    exit_code: int | None


def stop_stress(proc: subprocess.Popen | None) -> StressRecord:
    """End stress-ng and wait for it; what happened, for the cell's record.

    Returns
    -------
    dict
        ``pid``, ``running_at_stop`` (it was still running when the measurement
        ended, i.e. it loaded the whole measurement) and ``exit_code``.
    """
    if proc is None:
        return {}
    running = proc.poll() is None
    end_process(proc)
    return {"pid": proc.pid, "running_at_stop": running, "exit_code": proc.returncode}


@contextlib.contextmanager
def beside(config: dict, limit_s: float, record: dict):
    """E2's loads that are not operators, for the whole block, per ``config["load_placement"]``.

    ``process``: ``config["loads"]`` stress-ng workers; ``threads``: as many
    :class:`BusyThreads` of ``config["load_work_ms"]`` chunks; ``outside``: the same
    threads in a process of their own (:func:`start_outside`), so only the placement differs
    from ``threads``, not the work; anything else: none. On exit ``record`` gets
    ``stress_ng`` (:func:`stop_stress`'s record) and ``load_thread_chunks`` (chunks each
    thread completed, in the app or outside), the same for Holoscan 4.x and 5.x.
    """
    stress = threads = outside = None
    placement, n = config["load_placement"], config["loads"]
    if placement == "process" and n:
        stress = start_stress(n, limit_s + 30)
    elif placement == "threads" and n:
        threads = BusyThreads(n, config["load_work_ms"], config["load_work_model"]).start()
    elif placement == "outside" and n:
        outside = start_outside(n, config["load_work_ms"], config["load_work_model"], limit_s + 30)
    try:
        yield record
    finally:
        record["stress_ng"] = stop_stress(stress)
        record["load_thread_chunks"] = (threads.stop() if threads else
                                        stop_outside(outside) if outside else [])


def start_outside(count: int, work_ms: float, model: str, seconds: float) -> subprocess.Popen:
    """``count`` :class:`BusyThreads` in a process of their own (normal policy) for at most
    ``seconds`` (s); it has started them when this returns, so they load the whole measurement.

    ``die_with_parent``: a cell killed from outside must not leave its load running.
    """
    proc = subprocess.Popen([sys.executable, "-m", "rtstudy.apps.loads", str(count), str(work_ms),
                             model, str(seconds)], stdout=subprocess.PIPE, text=True,
                            preexec_fn=die_with_parent)
    if proc.stdout.readline().strip() != "started":
        end_process(proc)
        raise RuntimeError(f"the outside load process did not start (exit {proc.returncode})")
    return proc


def stop_outside(proc: subprocess.Popen) -> list[int]:
    """End :func:`start_outside`'s process (SIGTERM) and return the chunks each thread did."""
    proc.terminate()
    try:
        out, _ = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return []
    lines = [line for line in out.splitlines() if line.startswith("[")]
    return json.loads(lines[-1]) if lines else []


class BusyThreads:
    """``count`` plain Python threads (not operators), each busy in ``work_ms`` chunks until stopped.

    ``model`` is the work model (:mod:`rtstudy.measure.work`): ``native`` releases the
    GIL while it spins, ``python`` holds it, as E2's load operators do.
    """

    def __init__(self, count: int, work_ms: float, model: str):
        self.stop_flag = threading.Event()
        self.chunks = [0] * count
        self.threads = [threading.Thread(target=self._spin, args=(i, int(work_ms * MS), model),
                                         name=f"load{i}", daemon=True) for i in range(count)]

    def _spin(self, i: int, work_ns: int, model: str) -> None:
        while not self.stop_flag.is_set():
            busy_for(work_ns, model)
            self.chunks[i] += 1

    def start(self) -> "BusyThreads":
        for t in self.threads:
            t.start()
        return self

    def stop(self) -> list[int]:
        """Stop every thread and wait for it; the chunks of work each did."""
        self.stop_flag.set()
        deadline = time.monotonic() + 10
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return list(self.chunks)


def _outside_main(count: str, work_ms: str, model: str, seconds: str) -> None:
    """The ``outside`` load process: busy threads until SIGTERM or ``seconds``, then their chunks."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    threads = BusyThreads(int(count), float(work_ms), model).start()
    print("started", flush=True)
    stop.wait(float(seconds))
    print(json.dumps(threads.stop()), flush=True)


if __name__ == "__main__":
    _outside_main(*sys.argv[1:5])
