"""The processes the study starts: how each is set up before it runs, and how it is ended.

A cell's app, a load, a tracer or a probe must never outlive the process that
started it: a real-time thread left running unsupervised would disturb every
measurement after it. So each child dies with its parent (:func:`die_with_parent`),
a cell runs in its own process group that :func:`kill_group` ends whole, and a
helper we started is asked to end before it is killed (:func:`end_process`).
"""
from __future__ import annotations

import ctypes
import os
import resource
import signal
import subprocess

from rtstudy.machine import shield
from rtstudy.sdks.holo import STACK_BYTES

# prctl(2), looked up once in the parent: a child between fork and exec should not load libraries.
_prctl = ctypes.CDLL(None, use_errno=True).prctl
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In a child process before exec: the kernel sends it SIGKILL when its parent thread dies."""
    _prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))


def set_child_limits(layout: dict | None = None) -> None:
    """In a child process before exec: 32 MiB stack (Holoscan's minimum), own process group,
    killed when the thread that started it dies; placed on its CPUs as a cell is
    (``layout``: a runtime shield, :func:`rtstudy.machine.shield.enter_layout`, or ``{"cpus":
    [...]}``, the CPUs for what the cell does not pin).

    The own process group lets the harness kill a cell with everything it
    started. It also keeps signals sent to the parent's group away from the
    child, so when the parent dies without cleaning up (SIGKILL, or a papermill
    kernel shut down) the kernel sends the child SIGKILL; otherwise it would run
    on unsupervised, a real-time thread included, until its own time limit.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    want = STACK_BYTES if hard == resource.RLIM_INFINITY else min(STACK_BYTES, hard)
    if soft == resource.RLIM_INFINITY or soft < want:
        resource.setrlimit(resource.RLIMIT_STACK, (want, hard))
    os.setpgrp()
    die_with_parent()
    if layout and "housekeeping" in layout:
        shield.enter_layout(layout)
    elif layout:
        os.sched_setaffinity(0, layout["cpus"])


def end_process(proc: subprocess.Popen, timeout_s: float = 10) -> None:
    """Ask a process we started to end (SIGTERM), wait ``timeout_s`` (s), then kill it."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def kill_group(proc: subprocess.Popen) -> None:
    """Kill a process started with :func:`set_child_limits` and everything in its group, and
    reap it (a group already gone is no error)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
