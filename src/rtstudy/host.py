"""The host fingerprint and the preflight check.

The fingerprint is what a measurement depends on and nothing else: kernel and
its preemption model, boot command line, CPUs and their isolation, governors,
real-time throttling, which real-time policies this process may really use
(probed on a real thread), and the software versions. No timestamps and no
load figures, so it is byte-identical until the host's configuration changes;
every measuring DVC stage depends on it, and the host id is derived from it.
"""
from __future__ import annotations

import errno
import hashlib
import importlib.metadata
import json
import os
import platform
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rtstudy import _native, atomic, kernelfs, paths, shield
from rtstudy.holo import STACK_BYTES
from rtstudy.process import set_child_limits

SCHEMA_VERSION = 1
PACKAGES = ("rtstudy", "holoscan-cu12", "nvidia-cuda-runtime-cu12", "numpy", "scipy", "pandas",
            "pyarrow", "dvc", "papermill", "nbconvert", "matplotlib", "seaborn")

# The probes use the most demanding settings the experiments use: FIFO/RR at
# the seed's priority 99, DEADLINE with a 1 ms runtime in a 10 ms period.
PROBES = {
    "SCHED_FIFO": dict(policy=_native.SCHED_FIFO, priority=99),
    "SCHED_RR": dict(policy=_native.SCHED_RR, priority=99),
    "SCHED_DEADLINE": dict(policy=_native.SCHED_DEADLINE, runtime_ns=1_000_000,
                           deadline_ns=10_000_000, period_ns=10_000_000),
}


def probe_realtime() -> dict[str, str]:
    """Try each real-time policy on a real thread; ``"ok"`` or the refusal.

    ``SCHED_DEADLINE pinned`` pins the probe thread to the last CPU this process
    may use first: the kernel refuses that (EPERM) while ``sched_rt_runtime_us``
    is not -1, which decides whether experiments may pin their DEADLINE threads.
    (On a shielded host this process runs on the housekeeping CPUs; the cells
    may also use the shield, :func:`rtstudy.shield.enter_layout`.)
    """
    results = {}
    probes = dict(PROBES)
    probes["SCHED_DEADLINE pinned"] = dict(PROBES["SCHED_DEADLINE"], cpu=max(os.sched_getaffinity(0)))
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


def fingerprint() -> dict:
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


def write_fingerprint(path: Path | None = None) -> dict:
    """Measure the fingerprint and write it (with its ``host_id``) only if it changed."""
    path = path or paths.fingerprint_file()
    fp = fingerprint()
    record = {"host_id": host_id(fp), **fp}
    text = canonical(record)
    if not path.exists() or path.read_text() != text:
        atomic.write_text(path, text)
    return record


def current() -> dict:
    """This host's fingerprint measured now, with its ``host_id``.

    It always measures (about a second: the real-time probes run); it never reads
    the recorded ``data/host/fingerprint.json``, which :func:`write_fingerprint` writes.
    """
    fp = fingerprint()
    return {"host_id": host_id(fp), **fp}


# ---------------------------------------------------------------------------
# Preflight


@dataclass(frozen=True)
class Check:
    """One preflight item: ``status`` is PASS, WARN or FAIL; ``fix`` says what to do."""

    name: str
    status: str
    detail: str
    fix: str = ""


# Never a file capability on the interpreter: .venv/bin/python links to the system-wide one
# (/usr/bin/python3.X), so every script on the machine would gain CAP_SYS_NICE, and the next
# package update drops it silently. The capability goes to the process that runs the study.
REALTIME_FIX = {
    "SCHED_FIFO": "run the study as root (`sudo make study`); or give your user an rtprio limit "
                  "(`@realtime - rtprio 99` in /etc/security/limits.d/rtstudy.conf, your user in "
                  "group realtime, log in again), which FIFO and RR need and nothing else; or run "
                  "it from a systemd unit with `AmbientCapabilities=CAP_SYS_NICE` "
                  "(`sudo systemd-run --pty --uid=$USER -p AmbientCapabilities=CAP_SYS_NICE make "
                  "study`); in Docker add `--cap-add=SYS_NICE --ulimit rtprio=99`. Never setcap "
                  "the venv's python: it is the system-wide interpreter",
    "SCHED_DEADLINE": "run as root or with CAP_SYS_NICE in the study's own process (an rtprio "
                      "limit is not enough for DEADLINE): `sudo make study`, or a systemd unit "
                      "with `AmbientCapabilities=CAP_SYS_NICE`; in Docker `--cap-add=SYS_NICE`; "
                      "a container's cgroup may also need real-time bandwidth",
    "SCHED_DEADLINE pinned": "the kernel admits a SCHED_DEADLINE thread pinned to one CPU only when "
                             "kernel.sched_rt_runtime_us = -1 (`sysctl -w kernel.sched_rt_runtime_us=-1`, "
                             "which also removes RT throttling) or in an exclusive cpuset; until then "
                             "the experiments run DEADLINE threads unpinned and record it",
}
REALTIME_FIX["SCHED_RR"] = REALTIME_FIX["SCHED_FIFO"]


def realtime_checks(fp: dict) -> list[Check]:
    checks = []
    for name, result in fp["realtime"].items():
        if result == "ok":
            checks.append(Check(name, "PASS", "applied and read back on a probe thread"))
        else:
            # Unpinned DEADLINE is what the experiments fall back to; only a
            # refused unpinned policy stops a real-time experiment.
            status = "WARN" if name == "SCHED_DEADLINE pinned" else "FAIL"
            checks.append(Check(name, status, result, REALTIME_FIX[name]))
    return checks


def holoscan_check() -> Check:
    """Import Holoscan in a subprocess exactly as an experiment cell does."""
    code = "from rtstudy.holo import import_holoscan; print(import_holoscan().__version__)"
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=120, preexec_fn=set_child_limits)
    except subprocess.TimeoutExpired:
        return Check("holoscan import", "FAIL", "timed out after 120 s", "reinstall with `make setup`")
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return Check("holoscan import", "FAIL", last,
                     "run `make setup` (installs holoscan-cu12 and nvidia-cuda-runtime-cu12 into .venv)")
    return Check("holoscan import", "PASS", f"holoscan {proc.stdout.strip()} (CPU-only is expected)")


def stack_check() -> Check:
    hard = resource.getrlimit(resource.RLIMIT_STACK)[1]
    if hard == resource.RLIM_INFINITY or hard >= STACK_BYTES:
        return Check("stack limit", "PASS", "cells get a 32 MiB stack")
    return Check("stack limit", "WARN", f"hard limit {hard} bytes < 32 MiB; Holoscan may crash",
                 "raise the hard limit: `ulimit -Hs 32768` before `make`, or in Docker "
                 "`--ulimit stack=33554432`")


# Errors that mean the data directory itself cannot be written, and how to fix each ({d}: the
# folder). The preflight names them before measuring; the harness stops a sweep on them.
STORAGE_FIXES = {
    errno.ENOSPC: "free space on its file system (`df -h {d}`), or move the checkout to a larger disk",
    errno.EDQUOT: "free space, or raise your disk quota",
    errno.EROFS: "its file system is mounted read-only: remount it read-write, or run from a "
                 "checkout on a writable disk",
    errno.EACCES: "make {d} writable by this user (`ls -ld {d}` shows its owner and mode), or "
                  "run from a checkout you own",
}


def writable_check(directory: Path, min_free_mb: int = 200) -> Check:
    """Can cells be written under ``directory`` (created if needed), with room to spare?"""
    name = f"data directory {directory}"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".write-test-"):
            pass
    except OSError as exc:
        # The deepest folder that exists is the one whose permissions stop us.
        existing = next((p for p in (directory, *directory.parents) if p.exists()), directory)
        fix = STORAGE_FIXES.get(exc.errno, STORAGE_FIXES[errno.EACCES])
        return Check(name, "FAIL", f"not writable: {exc.strerror}", fix.format(d=existing))
    free_mb = shutil.disk_usage(directory).free // 2**20
    if free_mb < min_free_mb:
        return Check(name, "FAIL", f"only {free_mb} MiB free (need {min_free_mb} MiB)",
                     "free disk space, or move the checkout to a larger disk")
    return Check(name, "PASS", f"writable, {free_mb} MiB free")


def tools_check() -> Check:
    """The system tools the measurements use (:mod:`rtstudy.sysdeps`): what each missing one
    costs, and this distribution's command that installs it."""
    from rtstudy import sysdeps  # kept local: this check is host.py's only use of it

    tools = [t.name for t in sysdeps.tools_for("study")]
    missing = [t for t in tools if sysdeps.which(t) is None]
    if not missing:
        return Check("system tools", "PASS", f"{', '.join(tools)} found")
    distro = sysdeps.detect()
    return Check("system tools", "WARN", "missing: " + ", ".join(missing),
                 " | ".join(sysdeps.advice(distro, t, root=os.geteuid() == 0) for t in missing))


def preflight(fp: dict, data_directory: Path, need_realtime: tuple[str, ...] = ()) -> list[Check]:
    """Everything a stage needs before it measures; ``need_realtime`` names policies it uses."""
    checks = [stack_check(), writable_check(data_directory), holoscan_check()]
    checks += [c for c in realtime_checks(fp) if c.name in need_realtime]
    return checks


def format_checks(checks: list[Check]) -> str:
    width = max(len(c.name) for c in checks)
    lines = []
    for c in checks:
        lines.append(f"{c.status:<4}  {c.name:<{width}}  {c.detail}")
        if c.fix and c.status != "PASS":
            lines.append(f"{'':<4}  {'':<{width}}  fix: {c.fix}")
    return "\n".join(lines)
