"""The host fingerprint: what a measurement depends on, and the host id derived from it.

The fingerprint is what a measurement depends on and nothing else: kernel and
its preemption model, boot command line, CPUs and their isolation, governors,
real-time throttling, which real-time policies this process may really use
(probed on a real thread), and the software versions. No timestamps and no
load figures, so it is byte-identical until the host's configuration changes;
every measuring DVC stage depends on it, and the host id is derived from it.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import re
import resource
import socket
from pathlib import Path
from typing import TypedDict

from rtstudy import _native, atomic, paths
from rtstudy.machine import kernelfs, shield
from rtstudy.policies import SCHED_DEADLINE, SCHED_FIFO, SCHED_RR

SCHEMA_VERSION = 1
PACKAGES = ("rtstudy", "holoscan-cu12", "nvidia-cuda-runtime-cu12", "numpy", "scipy", "pandas",
            "pyarrow", "dvc", "papermill", "nbconvert", "matplotlib", "seaborn")

# The probes use the most demanding settings the experiments use: FIFO/RR at
# the seed's priority 99, DEADLINE with a 1 ms runtime in a 10 ms period.
PROBES = {
    SCHED_FIFO: dict(policy=_native.SCHED_FIFO, priority=99),
    SCHED_RR: dict(policy=_native.SCHED_RR, priority=99),
    SCHED_DEADLINE: dict(policy=_native.SCHED_DEADLINE, runtime_ns=1_000_000,
                         deadline_ns=10_000_000, period_ns=10_000_000),
}


class Kernel(TypedDict):
    release: str
    version: str
    preempt_model: str  # PREEMPT_RT, PREEMPT, PREEMPT_DYNAMIC's current model, ...
    arch: str


class Cpus(TypedDict):
    model: str
    count: int | None  # os.cpu_count()
    online: list[int]
    smt: str  # /sys/devices/system/cpu/smt/control, or "n/a"


class Isolation(TypedDict):
    isolated: list[int]  # isolcpus and isolated partitions
    nohz_full: list[int]
    rcu_nocbs: list[int] | None  # None: the boot line's value is not a CPU list
    shield: shield.ShieldState | None  # the runtime shield (rtstudy host apply); None untuned


class Sched(TypedDict):
    rt_runtime_us: int  # -1: real-time throttling lifted
    rt_period_us: int


class Rlimits(TypedDict):
    rtprio: int  # the hard RLIMIT_RTPRIO
    stack_hard: int


class Fingerprint(TypedDict):
    """What a measurement depends on (the module docstring): ``data/host/fingerprint.json``
    without its ``host_id``."""

    schema: int
    hostname: str
    machine: str  # /etc/machine-id hashed (12 hex), or "unknown"
    kernel: Kernel
    cmdline: str
    cpu: Cpus
    isolation: Isolation
    governors: dict[str, str]  # CPU → its cpufreq governor, or "n/a (no cpufreq)"
    sched: Sched
    realtime: dict[str, str]  # policy → "ok" or the refusal (probe_realtime)
    rlimits: Rlimits
    versions: dict[str, str]  # package → version, or "not installed"


class HostRecord(Fingerprint):
    """A fingerprint with the host id derived from it (:func:`host_id`)."""

    host_id: str


class SdkHostRecord(HostRecord, total=False):
    """A host record as a Holoscan environment of its own sees it
    (:meth:`rtstudy.sdks.sdk.Environment.fingerprint`): its versions, and the environment."""

    sdk: dict  # version, environment, glibc, built_utc; root_key and suite, or venv_key


def probe_realtime() -> dict[str, str]:
    """Try each real-time policy on a real thread; ``"ok"`` or the refusal.

    ``SCHED_DEADLINE pinned`` pins the probe thread to the last CPU this process
    may use first: the kernel refuses that (EPERM) while ``sched_rt_runtime_us``
    is not -1, which decides whether experiments may pin their DEADLINE threads.
    (On a shielded host this process runs on the housekeeping CPUs; the cells
    may also use the shield, :func:`rtstudy.machine.shield.enter_layout`.)
    """
    results = {}
    probes = dict(PROBES)
    probes["SCHED_DEADLINE pinned"] = dict(PROBES[SCHED_DEADLINE], cpu=max(os.sched_getaffinity(0)))
    for name, kwargs in probes.items():
        err = _native.probe_policy(**kwargs)
        results[name] = "ok" if err == 0 else f"refused: {os.strerror(err)} (errno {err})"
    return results


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def fingerprint() -> Fingerprint:
    """The host's stable description (see the module docstring), without its id."""
    uname = os.uname()
    root = kernelfs.ROOT
    cmdline = kernelfs.text(root, "/proc/cmdline") or ""
    cpuinfo = kernelfs.text(root, "/proc/cpuinfo") or ""
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    online = kernelfs.online_cpus(root) or []
    governors = {}
    for cpu in online:
        gov = kernelfs.text(root, f"{kernelfs.CPU_DIR}/cpu{cpu}/cpufreq/scaling_governor")
        governors[str(cpu)] = gov if gov is not None else "n/a (no cpufreq)"
    machine_id = kernelfs.text(root, "/etc/machine-id") or ""
    return {
        "schema": SCHEMA_VERSION,
        "hostname": socket.gethostname(),
        # Hashed: identifies the machine without publishing its id.
        "machine": hashlib.sha256(machine_id.encode()).hexdigest()[:12] if machine_id else "unknown",
        "kernel": {
            "release": uname.release,
            "version": uname.version,
            "preempt_model": kernelfs.preempt_model(root)[0],
            "arch": uname.machine,
        },
        "cmdline": cmdline,
        "cpu": {
            "model": model.group(1).strip() if model else "unknown",
            "count": os.cpu_count(),
            "online": online,
            "smt": kernelfs.text(root, f"{kernelfs.CPU_DIR}/smt/control") or "n/a",
        },
        "isolation": {
            "isolated": kernelfs.isolated_cpus(root),
            "nohz_full": kernelfs.to_cpus(kernelfs.text(root, f"{kernelfs.CPU_DIR}/nohz_full")) or [],
            # None when the boot line's value is not a CPU list ("all" is one: every CPU).
            "rcu_nocbs": kernelfs.boot_cpus(root, "rcu_nocbs", online),
            # Runtime shielding (`rtstudy host apply`); None on an untuned host.
            "shield": shield.state(root),
        },
        "governors": governors,
        "sched": {
            "rt_runtime_us": int(kernelfs.text(root, "/proc/sys/kernel/sched_rt_runtime_us") or 0),
            "rt_period_us": int(kernelfs.text(root, "/proc/sys/kernel/sched_rt_period_us") or 0),
        },
        "realtime": probe_realtime(),
        "rlimits": {
            "rtprio": resource.getrlimit(resource.RLIMIT_RTPRIO)[1],
            "stack_hard": resource.getrlimit(resource.RLIMIT_STACK)[1],
        },
        "versions": versions(),
    }


def canonical(data: dict) -> str:
    return json.dumps(data, sort_keys=True, indent=2) + "\n"


def host_id(fp: dict) -> str:
    """``<hostname>-<8 hex>``: the hash changes whenever anything in the fingerprint does."""
    digest = hashlib.sha256(canonical(fp).encode()).hexdigest()[:8]
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", fp["hostname"])[:32] or "host"
    return f"{name}-{digest}"


def write_fingerprint(path: Path | None = None) -> HostRecord:
    """Measure the fingerprint and write it (with its ``host_id``) only if it changed."""
    path = path or paths.fingerprint_file()
    fp = fingerprint()
    record = {"host_id": host_id(fp), **fp}
    text = canonical(record)
    if not path.exists() or path.read_text() != text:
        atomic.write_text(path, text)
    return record


def current() -> HostRecord:
    """This host's fingerprint measured now, with its ``host_id``.

    It always measures (about a second: the real-time probes run); it never reads
    the recorded ``data/host/fingerprint.json``, which :func:`write_fingerprint` writes.
    """
    fp = fingerprint()
    return {"host_id": host_id(fp), **fp}
