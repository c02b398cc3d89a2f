"""The preflight check: everything a measuring stage needs, checked before it measures.

Each item is a :class:`Check` with a status (PASS, WARN, FAIL) and, unless it passed, the fix:
the stack limit, a writable data directory with room, Holoscan importable as a cell imports it,
the real-time policies the stage uses (from the host's fingerprint, :mod:`rtstudy.machine.host`)
and the system tools.
"""
from __future__ import annotations

import errno
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rtstudy.measure.process import set_child_limits
from rtstudy.policies import SCHED_DEADLINE, SCHED_FIFO, SCHED_RR
from rtstudy.sdks.holo import STACK_BYTES


@dataclass(frozen=True)
class Check:
    """One preflight item: ``status`` is PASS, WARN or FAIL; ``fix`` says what to do."""

    name: str
    status: str
    detail: str
    fix: str = ""


# The privilege routes, narrowest first; each says what it grants and to whom
# (docs/troubleshooting.md, "Privileges"). The measuring command alone gets CAP_SYS_NICE: set up
# first as yourself, so pip, the venv and the SDK root are never built with it. Root is the
# last resort (pip, DVC and Jupyter as root; the checkout's new files root's). Never a file
# capability on the interpreter: .venv/bin/python links to the system-wide one
# (/usr/bin/python3.X), so every script on the machine would gain CAP_SYS_NICE.
MEASURING_WITH_CAP = ("`make setup sdk` as yourself, then only the measuring command with "
                      "CAP_SYS_NICE: `sudo systemd-run --pty --same-dir --uid=$USER "
                      "--setenv=PATH=$PWD/.venv/bin:/usr/bin:/bin "
                      "-p AmbientCapabilities=CAP_SYS_NICE dvc repro` (it reaches dvc repro and "
                      "what it starts: the stages, their notebooks' kernels and the cells; not pip "
                      "or the set-up; it ends with the command)")
REALTIME_FIX = {
    SCHED_FIFO: "give your user an rtprio limit, which FIFO and RR need and nothing else "
                  "(`@realtime - rtprio 99` in /etc/security/limits.d/rtstudy.conf, your user "
                  "in group realtime, log in again; it grants every process of that group's "
                  "users real-time priorities up to 99; revert: remove the file); or "
                  + MEASURING_WITH_CAP + "; in Docker add `--cap-add=SYS_NICE --ulimit "
                  "rtprio=99`; last, the whole study as root (`make study` as root: pip, DVC "
                  "and Jupyter then run as root too). Never setcap the venv's python: it is the "
                  "system-wide interpreter",
    SCHED_DEADLINE: "CAP_SYS_NICE in the measuring processes (an rtprio limit is not enough "
                      "for DEADLINE): " + MEASURING_WITH_CAP + "; in Docker "
                      "`--cap-add=SYS_NICE` (a container's cgroup may also need real-time "
                      "bandwidth); last, the whole study as root",
    "SCHED_DEADLINE pinned": "the kernel admits a SCHED_DEADLINE thread pinned to one CPU only "
                             "when kernel.sched_rt_runtime_us = -1 (which also removes RT "
                             "throttling: a busy real-time thread can then starve its CPU) or "
                             "in an exclusive cpuset; `make study-tuned` sets it for the tuned "
                             "run and reverts it. Until then the experiments run DEADLINE "
                             "threads unpinned and record it",
}
REALTIME_FIX[SCHED_RR] = REALTIME_FIX[SCHED_FIFO]


def realtime_checks(fp: dict) -> list[Check]:
    checks = []
    for name, result in fp["realtime"].items():
        if result == "ok":
            checks.append(Check(name, "PASS", "applied and read back on a probe thread"))
        else:
            # Unpinned DEADLINE is what the experiments fall back to; only a
            # refused unpinned policy stops a real-time experiment.
            status = "WARN" if name == "SCHED_DEADLINE pinned" else "FAIL"
            fix = REALTIME_FIX[name]
            if name == "SCHED_DEADLINE pinned":
                now = (fp.get("sched") or {}).get("rt_runtime_us")
                fix += ("; by hand: `sysctl -w kernel.sched_rt_runtime_us=-1`, revert: "
                        f"`sysctl -w kernel.sched_rt_runtime_us={now}`") if now is not None else ""
            checks.append(Check(name, status, result, fix))
    return checks


def holoscan_check() -> Check:
    """Import Holoscan in a subprocess exactly as an experiment cell does."""
    code = "from rtstudy.sdks.holo import import_holoscan; print(import_holoscan().__version__)"
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
    """The system tools the measurements use (:mod:`rtstudy.machine.sysdeps`): what each missing one
    costs, and this distribution's command that installs it."""
    from rtstudy.machine import sysdeps  # kept local: this check is host.py's only use of it

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
