"""The Linux scheduling policies the study requests, named once.

A leaf module (no imports from the package), so every room may use it: the host's probes,
the plans, the apps' subprocesses and the report. The names are the kernel's own
(``sched(7)``); the numbers are what ``sched_getattr`` reads back.
"""
from __future__ import annotations

SCHED_OTHER = "SCHED_OTHER"
SCHED_FIFO = "SCHED_FIFO"
SCHED_RR = "SCHED_RR"
SCHED_DEADLINE = "SCHED_DEADLINE"

# Each policy's number in the kernel's ABI (include/uapi/linux/sched.h).
NUMBERS = {SCHED_OTHER: 0, SCHED_FIFO: 1, SCHED_RR: 2, SCHED_DEADLINE: 6}
BY_NUMBER = {v: k for k, v in NUMBERS.items()}
# The real-time policies, in the order the study shows them; the first two take a priority.
RT_POLICIES = (SCHED_FIFO, SCHED_RR, SCHED_DEADLINE)
PRIORITY_POLICIES = RT_POLICIES[:2]


def short(policy: str) -> str:
    """A policy's name as figures and tables show it: ``SCHED_FIFO`` → ``FIFO``."""
    return str(policy).replace("SCHED_", "")
