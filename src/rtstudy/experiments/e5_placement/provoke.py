"""What E5's apps share: each provocation's requests, and how a cell provokes and observes.

Light on purpose: both apps import it (4.x's in the venv, 5.0's inside its root), so it
imports nothing of Holoscan. A *provocation* is a placement request the host cannot honour,
made on purpose (:data:`PROVOCATIONS`); ``control`` is the same request the host can honour.
"""
from __future__ import annotations

import ctypes
import os
import resource
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TypedDict

from rtstudy.machine import kernelfs
from rtstudy.measure.realtime import RealtimeRequest
from rtstudy.policies import SCHED_DEADLINE, SCHED_FIFO

# What each provocation asks for, in words (the report's list of them).
PROVOCATIONS = {
    "control": "SCHED_FIFO on the real-time CPU, which this process may use",
    "no_privilege": "SCHED_FIFO after the process dropped CAP_SYS_NICE (and RLIMIT_RTPRIO 0)",
    "over_admission": "SCHED_DEADLINE reservations that sum to more than the kernel admits",
    "absent_cpu": "SCHED_FIFO pinned to a CPU this host does not have online",
    "irq_isolation": "SCHED_FIFO on the real-time CPU with IRQ isolation preferred or required",
}
# 4.x has no failure policy and no IRQ isolation: its cells record these words instead.
NOT_IN_4X = "not in 4.x"
CAP_SYS_NICE = 23  # linux/capability.h
_CAP_VERSION_3 = 0x20080522  # _LINUX_CAPABILITY_VERSION_3: two 32-bit words per set


def requests(config: dict) -> list[RealtimeRequest]:
    """The threads a cell asks for, one per operator ``op0``, ``op1``, … (``config``: a cell's)."""
    if config["provocation"] == "over_admission":
        return [RealtimeRequest(f"op{i}", SCHED_DEADLINE, 0, config["runtime_ns"],
                                config["period_ns"], config["period_ns"])
                for i in range(config["threads"])]
    cpu = config["absent_cpu"] if config["provocation"] == "absent_cpu" else config["cpu"]
    return [RealtimeRequest("op0", SCHED_FIFO, config["priority"], cpus=(cpu,))]


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def drop_privilege() -> bool:
    """Drop CAP_SYS_NICE from this thread (threads it starts inherit that) and set
    RLIMIT_RTPRIO to 0: what a normal login has. Returns whether the provocation took, i.e.
    whether this thread may no longer set SCHED_FIFO (tried, and undone if it could)."""
    libc = ctypes.CDLL(None, use_errno=True)
    header, data = _Header(_CAP_VERSION_3, 0), (_Data * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget failed")
    bit = 1 << CAP_SYS_NICE
    data[0].effective &= ~bit
    data[0].permitted &= ~bit
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")
    resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except PermissionError:
        return True
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    return False


def admission_limit(root: Path = kernelfs.ROOT) -> float | None:
    """The SCHED_DEADLINE bandwidth the kernel admits over this process's CPUs (CPUs), or None
    where admission control is off (``sched_rt_runtime_us`` −1) or cannot be read."""
    runtime = kernelfs.text(root, "/proc/sys/kernel/sched_rt_runtime_us")
    period = kernelfs.text(root, "/proc/sys/kernel/sched_rt_period_us")
    if runtime is None or period is None or int(runtime) < 0:
        return None
    return int(runtime) / int(period) * len(os.sched_getaffinity(0))


def provoked(config: dict) -> bool:
    """Whether this cell's provocation takes on this host (before any Holoscan runs): the
    privilege dropped, the reservations over what is admitted, the CPU absent; ``control`` and
    ``irq_isolation`` (whose proof is 5.0's own) are never provocations of their own."""
    what = config["provocation"]
    if what == "no_privilege":
        return drop_privilege()
    if what == "over_admission":
        limit = admission_limit()
        return limit is not None and config["threads"] * config["runtime_ns"] / config[
            "period_ns"] > limit
    if what == "absent_cpu":
        return config["absent_cpu"] not in os.sched_getaffinity(0)
    return False


def irqs_on(cpu: int, root: Path = kernelfs.ROOT) -> int:
    """How many device IRQs may be delivered to ``cpu`` (their effective affinity, else their
    affinity, names it): 0 is what IRQ isolation of ``cpu`` means."""
    count = 0
    for irq in kernelfs.list_names(root, "/proc/irq", r"\d+") or []:
        for name in ("effective_affinity_list", "smp_affinity_list"):
            cpus = kernelfs.to_cpus(kernelfs.text(root, f"/proc/irq/{irq}/{name}"))
            if cpus is not None:
                count += cpu in cpus
                break
    return count


class Before(TypedDict):
    provoked: bool  # the provocation took (provoked)
    irqs_on_cpu: int  # device IRQs allowed on the real-time CPU


def before(config: dict) -> Before:
    """What a cell records before Holoscan runs (its summary's first keys): whether its
    provocation took (:func:`provoked`) and the device IRQs on its real-time CPU."""
    return {"provoked": provoked(config), "irqs_on_cpu": irqs_on(config["cpu"])}


class Samples(TypedDict):
    """samples.parquet: one row per requested thread (rtstudy.experiments.e5_placement.analysis)."""

    op: list[str]  # the operator
    requested_policy: list[str]  # what it asked for (SCHED_FIFO, SCHED_RR or SCHED_DEADLINE)
    ran: list[int]  # 1 if it ran
    policy: list[int]  # the policy number the kernel gave its thread (−1 if it never ran)
    priority: list[int]
    runtime_ns: list[int]
    cpus: list[str]  # its affinity, comma-separated ("" if it never ran)


SAMPLE_COLUMNS = tuple(Samples.__annotations__)


def samples_of(requests: list[RealtimeRequest], seen: dict) -> Samples:
    """One row per requested thread: what was asked, whether its operator ran, and what the
    kernel gave its thread (``seen``: operator name → its :func:`rtstudy.apps.child.thread_record`;
    −1 and "" for an operator that never ran)."""
    rows = []
    for r in requests:
        got = seen.get(r.operator)
        rows.append((r.operator, r.policy, int(got is not None),
                     got["policy"] if got else -1, got["priority"] if got else -1,
                     got["runtime_ns"] if got else -1,
                     ",".join(map(str, got["cpus"])) if got else ""))
    return Samples(**{name: list(values) for name, values in zip(SAMPLE_COLUMNS, zip(*rows))})


def cell_result(config: dict, requests: list[RealtimeRequest], seen: dict, summary: dict,
                api: int, start_ns: int) -> tuple[dict, dict]:
    """What either app returns to :func:`rtstudy.apps.child.main`: the samples
    (:func:`samples_of`) and the result: each operator's ticks and read-back, the configuration
    with its SDK's API generation ``api``, ``summary``, and the time since ``start_ns`` (s)."""
    operators = {r.operator: {"ticks": int(r.operator in seen), "sched": seen.get(r.operator)}
                 for r in requests}
    return samples_of(requests, seen), {
        "operators": operators, "effective": {**config, "sdk_api": api}, "summary": summary,
        "measured_s": (time.monotonic_ns() - start_ns) / 1e9}


@contextmanager
def captured_stderr():
    """Copy what this process writes to file descriptor 2 (the SDK's C++ log too) while inside;
    the yielded list receives the text when the block ends. It is written on to stderr too,
    so the cell's log keeps it."""
    sys.stderr.flush()
    saved = os.dup(2)
    text: list[str] = []
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield text
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text.append(tmp.read().decode(errors="replace"))
            os.write(2, text[0].encode())


def logged_errors(text: str) -> list[str]:
    """The SDK's ``[error]`` and ``[warning]`` lines about threads and policies in ``text``
    (not the CUDA and stack-size warnings every run on a GPU-less host prints)."""
    keys = ("sched", "policy", "affinity", "thread", "placement", "deadline", "priority")
    out = []
    for line in text.splitlines():
        if "[error]" not in line and "[warning]" not in line:
            continue
        message = line.rsplit("] ", 1)[-1].lower()  # after "[level] [file.cpp:line] "
        if any(k in message for k in keys) and "stack size" not in message:
            out.append(line.strip())
    return out
