"""The work an operator "does": native (GIL released) or pure Python (GIL held).

``native`` is the study's default and behaves like a C++ operator: two
operators working at once use two CPUs. ``python`` is kept as a study factor
(E1 and E2 vary it): its busy loops hold the GIL and so couple every Python
operator in the process.
"""
from __future__ import annotations

import time

from rtstudy import _native

WORK_MODELS = ("native", "python")


def busy_until(deadline_ns: int, model: str = "native") -> int:
    """Spin until CLOCK_MONOTONIC reaches ``deadline_ns``.

    Parameters
    ----------
    deadline_ns : int
        Absolute CLOCK_MONOTONIC time in ns (as ``time.monotonic_ns()``).
    model : str
        ``native`` (GIL released) or ``python`` (GIL held).

    Returns
    -------
    int
        The CLOCK_MONOTONIC time in ns at which the spin ended (>= deadline_ns).
    """
    if model == "native":
        return _native.busy_until(deadline_ns)
    if model == "python":
        now = time.monotonic_ns()
        while now < deadline_ns:
            now = time.monotonic_ns()
        return now
    raise ValueError(f"work model {model!r}: expected one of {WORK_MODELS}")


def busy_for(duration_ns: int, model: str = "native") -> int:
    """Spin for ``duration_ns`` of CLOCK_MONOTONIC time; return the end time in ns."""
    if duration_ns < 0:
        raise ValueError(f"duration_ns must be >= 0, got {duration_ns}")
    return busy_until(time.monotonic_ns() + duration_ns, model)


def fixed_work(iterations: int, model: str = "native") -> int:
    """A fixed amount of CPU work (not time): ``iterations`` xorshift64 steps.

    Its duration grows when the thread is preempted, which is what an
    execution-time measurement around it should see. Returns the checksum.
    """
    if model == "native":
        return _native.fixed_work(iterations)
    if model == "python":
        if iterations < 0:
            raise ValueError(f"iterations must be >= 0, got {iterations}")
        x, mask = 0x9E3779B97F4A7C15, (1 << 64) - 1
        for _ in range(iterations):
            x ^= (x << 13) & mask
            x ^= x >> 7
            x ^= (x << 17) & mask
        return x
    raise ValueError(f"work model {model!r}: expected one of {WORK_MODELS}")
