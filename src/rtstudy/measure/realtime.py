"""Real-time policy requests, shared by the harness and the app subprocesses.

Kept free of heavy imports: every cell's subprocess imports it.
"""
from __future__ import annotations

from dataclasses import dataclass

# The EventBasedScheduler's dispatcher thread: its name as Linux shows it, and the "operator" a
# request for its policy names (Holoscan applies it through GXF_EBS_DISPATCHER_* variables).
DISPATCHER = "dispatcher"
# Environment variables that steer Holoscan or GXF (the dispatcher's policy among them).
STEERING_PREFIXES = ("GXF_", "HOLOSCAN_")


@dataclass(frozen=True)
class RealtimeRequest:
    """A real-time policy requested for one operator's dedicated worker thread.

    Parameters
    ----------
    operator : str
        The operator's name in the app.
    policy : str
        ``SCHED_FIFO``, ``SCHED_RR`` or ``SCHED_DEADLINE``.
    priority : int
        FIFO/RR priority (1-99); 0 for DEADLINE.
    runtime_ns, deadline_ns, period_ns : int
        SCHED_DEADLINE reservation in ns; 0 for FIFO/RR.
    cpus : tuple of int
        CPUs to pin the thread to; empty for unpinned.
    """

    operator: str
    policy: str
    priority: int = 0
    runtime_ns: int = 0
    deadline_ns: int = 0
    period_ns: int = 0
    cpus: tuple[int, ...] = ()
