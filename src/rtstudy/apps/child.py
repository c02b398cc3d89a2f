"""What every app subprocess shares: its entry point and real-time thread set-up.

Usage (by the harness only): ``python -m <app module> SPEC.json WORKDIR``.
The app's ``run(config, realtime)`` returns its samples (a mapping of column
name to values) and a result dict; this module writes them to
``WORKDIR/samples.npz`` and ``WORKDIR/result.json``. The result holds ``operators`` (per operator: ticks
and the scheduling attributes read back on its own thread), ``effective``
(the configuration the app really used), ``summary`` and ``measured_s`` (time
spent inside Holoscan app runs, for the overhead benchmark).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Callable

import numpy as np

from rtstudy import _native
from rtstudy.realtime import RealtimeRequest


def thread_record() -> dict:
    """The calling thread's effective scheduling attributes (policy, priority, CPUs, ...)."""
    return _native.thread_sched()


def apply_realtime(app, operator, request: RealtimeRequest) -> None:
    """Give ``operator`` its own worker thread with ``request``'s policy.

    ``pin_operator=True`` is what makes Holoscan apply the policy at all: an
    operator not pinned to its pool's thread silently runs with SCHED_OTHER.
    ``pin_cores`` empty leaves the thread free to run on any CPU.
    """
    from holoscan.resources import SchedulingPolicy

    pool = app.make_thread_pool(f"rt_{request.operator}", 1)
    kwargs = dict(pin_operator=True, pin_cores=list(request.cpus))
    if request.policy == "SCHED_DEADLINE":
        kwargs.update(sched_runtime=request.runtime_ns, sched_deadline=request.deadline_ns,
                      sched_period=request.period_ns)
    else:
        kwargs.update(sched_priority=request.priority)
    pool.add_realtime(operator, getattr(SchedulingPolicy, request.policy), **kwargs)


def main(run: Callable) -> None:
    spec_path, workdir = Path(sys.argv[1]), Path(sys.argv[2])
    spec = json.loads(spec_path.read_text())
    requests = tuple(RealtimeRequest(**{**r, "cpus": tuple(r["cpus"])}) for r in spec["realtime"])
    samples, result = run(spec["config"], requests)
    # NumPy here; the harness converts to Parquet. pyarrow imports pandas when it
    # converts Python data, which would add ~0.35 s to every cell's subprocess.
    np.savez(workdir / "samples.npz", **{k: np.asarray(v) for k, v in samples.items()})
    (workdir / "result.json").write_text(json.dumps(result, indent=2, default=str))
