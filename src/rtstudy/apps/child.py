"""What every app subprocess shares: its entry point and real-time thread set-up.

Usage (by the harness only): ``python -m <app module> SPEC.json WORKDIR``.
The app's ``run(config, realtime)`` returns its samples (a mapping of column
name to values) and a result dict; this module writes them to
``WORKDIR/samples.npz`` and ``WORKDIR/result.json``; a third item, if it
returns one, maps table names to further columns (``WORKDIR/<name>.npz``, kept
beside the samples as ``<name>.parquet``). The result holds ``operators`` (per operator: ticks
and the scheduling attributes read back on its own thread), ``effective``
(the configuration the app really used), ``summary`` and ``measured_s`` (time
spent inside Holoscan app runs, for the overhead benchmark).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Callable, TypedDict

import numpy as np

from rtstudy import _native
from rtstudy.measure.realtime import STEERING_PREFIXES, RealtimeRequest
from rtstudy.paths import RAW_SAMPLES_FILE, RESULT_FILE
from rtstudy.policies import SCHED_DEADLINE


class ThreadSched(TypedDict):
    """A thread's scheduling attributes as a cell records them (``_native.thread_sched``'s keys)."""

    tid: int
    policy: int  # SCHED_OTHER 0, FIFO 1, RR 2, DEADLINE 6
    priority: int
    nice: int
    runtime_ns: int  # SCHED_DEADLINE's reservation; 0 otherwise (or read from outside)
    deadline_ns: int
    period_ns: int
    cpus: list[int]  # its affinity


def thread_record() -> ThreadSched:
    """The calling thread's effective scheduling attributes (policy, priority, CPUs, ...)."""
    return _native.thread_sched()


def steering_env() -> dict[str, str]:
    """Every ``GXF_*`` / ``HOLOSCAN_*`` variable of this process, as the app runs with it (the
    harness passes none of the caller's but the logging ones: rtstudy.measure.harness.child_env)."""
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith(STEERING_PREFIXES)}


def task_record(tid: int) -> ThreadSched:
    """Another thread's scheduling attributes, in :func:`thread_record`'s keys (FIFO/RR/OTHER).

    Read from outside the thread (``sched_getscheduler`` and friends), so a
    SCHED_DEADLINE reservation is not read; its fields are 0.
    """
    return {"tid": tid, "policy": os.sched_getscheduler(tid),
            "priority": os.sched_getparam(tid).sched_priority, "nice": os.getpriority(
                os.PRIO_PROCESS, tid), "runtime_ns": 0, "deadline_ns": 0, "period_ns": 0,
            "cpus": sorted(os.sched_getaffinity(tid))}


def process_threads(pid: int | str = "self") -> list[dict]:
    """Every thread of process ``pid``: its name (``comm``) and :func:`task_record`."""
    rows = []
    for name in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
        try:
            comm = open(f"/proc/{pid}/task/{name}/comm").read().strip()
            rows.append({"comm": comm, **task_record(int(name))})
        except (OSError, ProcessLookupError):
            continue  # the thread ended while we looked
    return rows


def apply_dispatcher(request: RealtimeRequest) -> None:
    """Ask Holoscan for a real-time dispatcher: the variables its EventBasedScheduler reads at start.

    NVIDIA's scheduler documentation names them; holoscan-cu12 4.6.0 honours
    them in Python apps ("Dispatcher thread configured with SCHED_FIFO, priority 99").
    Whether it did is read back from the thread named ``dispatcher``, not trusted.
    """
    os.environ["GXF_EBS_DISPATCHER_SCHED_POLICY"] = request.policy
    os.environ["GXF_EBS_DISPATCHER_SCHED_PRIORITY"] = str(request.priority)
    if request.cpus:
        os.environ["GXF_EBS_DISPATCHER_CPU_CORE"] = str(request.cpus[0])


def apply_realtime(app, operator, request: RealtimeRequest) -> None:
    """Give ``operator`` its own worker thread with ``request``'s policy.

    ``pin_operator=True`` is what makes Holoscan apply the policy at all: an
    operator not pinned to its pool's thread silently runs with SCHED_OTHER.
    ``pin_cores`` empty leaves the thread free to run on any CPU.
    """
    from holoscan.resources import SchedulingPolicy

    pool = app.make_thread_pool(f"rt_{request.operator}", 1)
    kwargs = dict(pin_operator=True, pin_cores=list(request.cpus))
    if request.policy == SCHED_DEADLINE:
        kwargs.update(sched_runtime=request.runtime_ns, sched_deadline=request.deadline_ns,
                      sched_period=request.period_ns)
    else:
        kwargs.update(sched_priority=request.priority)
    pool.add_realtime(operator, getattr(SchedulingPolicy, request.policy), **kwargs)


def main(run: Callable) -> None:
    spec_path, workdir = Path(sys.argv[1]), Path(sys.argv[2])
    spec = json.loads(spec_path.read_text())
    requests = tuple(RealtimeRequest(**{**r, "cpus": tuple(r["cpus"])}) for r in spec["realtime"])
    samples, result, *extra = run(spec["config"], requests)
    # NumPy here; the harness converts to Parquet. pyarrow imports pandas when it
    # converts Python data, which would add ~0.35 s to every cell's subprocess.
    np.savez(workdir / RAW_SAMPLES_FILE, **{k: np.asarray(v) for k, v in samples.items()})
    for name, columns in (extra[0] if extra else {}).items():
        np.savez(workdir / f"{name}.npz", **{k: np.asarray(v) for k, v in columns.items()})
    (workdir / RESULT_FILE).write_text(json.dumps(result, indent=2, default=str))
