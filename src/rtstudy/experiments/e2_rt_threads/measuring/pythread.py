"""E2's jitter ladder, rung 2: a plain Python thread, no Holoscan, at the target's period.

One ``threading.Thread`` asks for the target's real-time policy, priority and CPU
itself (``sched_setscheduler`` and ``sched_setaffinity`` on its own thread), then for
each frame sleeps with ``clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`` to the next
release on the fixed grid ``T_0 + k·P`` and stamps its start, doing the same fixed
native work as the Holoscan target (``target_work_iterations``). It is what Python alone
costs above cyclictest's C loop, before Holoscan's periodic path is added: the rung
between the floor and the Holoscan target (docs/methods.md "The jitter ladder").
The thread's policy is read back on the thread and recorded as the ``python_thread``
operator, so the harness verifies it like any real-time request. The main thread only
waits (a ``join`` holds no GIL), so nothing competes with the thread.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
import time

from rtstudy.apps.child import main, thread_record
from rtstudy.measure.work import fixed_work
from rtstudy.policies import NUMBERS

OPERATOR = "python_thread"
CLOCK_MONOTONIC, TIMER_ABSTIME = 1, 1


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.clock_nanosleep.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Timespec),
                                  ctypes.POINTER(_Timespec)]


def sleep_until(t_ns: int) -> None:
    """Sleep until CLOCK_MONOTONIC reaches ``t_ns`` (ns), absolute; the GIL released (ctypes).

    An absolute time, as cyclictest's: a late wake-up does not move the next release.
    """
    ts = _Timespec(t_ns // 1_000_000_000, t_ns % 1_000_000_000)
    while (err := _libc.clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, ctypes.byref(ts),
                                        None)) != 0:
        if err != 4:  # EINTR: a signal; sleep on to the same time
            raise OSError(err, os.strerror(err))


def periodic(config: dict, request, out: dict) -> None:
    """The thread's body: policy, pinning, then ``config["frames"]`` periodic frames."""
    try:
        if request is not None:
            if request.cpus:
                os.sched_setaffinity(0, request.cpus)
            os.sched_setscheduler(0, NUMBERS[request.policy],
                                  os.sched_param(request.priority))
    except OSError as exc:  # recorded: the harness then reports the refusal, not a number
        out["error"] = f"{type(exc).__name__}: {exc}"
        return
    out["sched"] = thread_record()
    period, work = config["period_ns"], config["target_work_iterations"]
    release = time.monotonic_ns() + period
    for _ in range(config["frames"]):
        sleep_until(release)
        t0 = time.monotonic_ns()
        fixed_work(work, "native")
        out["t_start"].append(t0)
        out["exec"].append(time.monotonic_ns() - t0)
        release += period


def run(config: dict, realtime) -> tuple[dict, dict]:
    request = next((r for r in realtime if r.operator == OPERATOR), None)
    out = {"t_start": [], "exec": [], "sched": None}
    thread = threading.Thread(target=periodic, args=(config, request, out), name=OPERATOR)
    start = time.monotonic_ns()
    thread.start()
    thread.join(config["max_duration_ms"] / 1000)
    measured_s = (time.monotonic_ns() - start) / 1e9
    if thread.is_alive():
        raise RuntimeError(f"the periodic thread did not finish within "
                           f"{config['max_duration_ms']} ms")
    if "error" in out:
        raise SystemExit(f"the Python thread could not get {request.policy}: {out['error']}; "
                         "see `rtstudy host check`")
    n = len(out["t_start"])
    operators = {OPERATOR: {"ticks": n, "sched": out["sched"]}}
    return ({"frame": list(range(n)), "t_start_ns": out["t_start"], "exec_ns": out["exec"]},
            {"operators": operators, "effective": config,
             "summary": {"frames": n, "duration_s": measured_s}, "measured_s": measured_s})


if __name__ == "__main__":
    main(run)
