"""Loads that run beside an experiment's measurement: stress-ng processes and plain threads.

Shared by E2 (load placement) and E4 (the floor under stress). Both are started
from the cell's main thread, which runs with the normal policy, so nothing they
start inherits a real-time policy.
"""
from __future__ import annotations

import contextlib
import subprocess
import threading
import time

from rtstudy.process import die_with_parent, end_process
from rtstudy.work import busy_for

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


def stop_stress(proc: subprocess.Popen | None) -> dict:
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
    :class:`BusyThreads` of ``config["load_work_ms"]`` chunks; anything else: none.
    On exit ``record`` gets ``stress_ng`` (:func:`stop_stress`'s record) and
    ``load_thread_chunks`` (chunks each thread completed), the same for Holoscan 4.x and 5.x.
    """
    stress = threads = None
    if config["load_placement"] == "process" and config["loads"]:
        stress = start_stress(config["loads"], limit_s + 30)
    elif config["load_placement"] == "threads" and config["loads"]:
        threads = BusyThreads(config["loads"], config["load_work_ms"],
                              config["load_work_model"]).start()
    try:
        yield record
    finally:
        record["stress_ng"] = stop_stress(stress)
        record["load_thread_chunks"] = threads.stop() if threads else []


class BusyThreads:
    """``count`` plain Python threads (not operators), each busy in ``work_ms`` chunks until stopped.

    ``model`` is the work model (:mod:`rtstudy.work`): ``native`` releases the
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
