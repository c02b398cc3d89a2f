"""What every cell records of when and from which code it was measured: the measuring session
(one ``dvc repro``, the level above runs) and the checkout's commit.

:func:`start_session` opens or resumes the session at the pipeline's first stage;
:func:`session_record` is what each sweep (:class:`rtstudy.measure.harness.SweepContext`) and so
each cell's sidecar records of it; :func:`git_state` is the checkout's commit, recorded by the
cells and the report alike.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import TypedDict

from rtstudy import atomic, paths
from rtstudy.machine import kernelfs

SESSION_VARIABLE = "RTSTUDY_SESSION"


class SessionRecord(TypedDict, total=False):
    """A measuring session as ``data/host/session.json`` and each cell's sidecar hold it."""

    id: str  # <started UTC>-<boot id's first 8 hex>, or RTSTUDY_SESSION's
    boot_id: str  # the kernel's, new at every boot
    started_utc: str  # when start_session began it
    resumed_utc: str  # when a make study that went on after an interruption resumed it
    stage_started_utc: str  # when the stage that reads it started (session_record)


class GitState(TypedDict):
    """The checkout a cell was measured with."""

    commit: str  # HEAD's hash, or "unknown" outside git
    dirty: bool | None  # uncommitted changes to code or parameters; None: git could not say


def _boot_and_now() -> tuple[str, str]:
    boot = kernelfs.text(kernelfs.ROOT, "/proc/sys/kernel/random/boot_id") or ""
    return boot, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def start_session(path: Path | None = None, resume: frozenset[str] | set[str] = frozenset()
                  ) -> SessionRecord:
    """Start a measuring session, or resume the open one: write its record to
    ``data/host/session.json`` (:func:`rtstudy.paths.session_file`), which every stage of the
    same ``dvc repro`` reads.

    The pipeline's first stage (``rtstudy host fingerprint``) calls it; DVC runs that stage in
    every ``dvc repro``, before any measuring stage. ``id`` is :data:`SESSION_VARIABLE` where
    the caller set it (``benchmarks/rerun_agreement.py`` names its clones' sessions so); else
    the recorded session's when ``resume`` holds it (the ids the current, not yet closed
    datasets record: :func:`rtstudy.data.sessions.open_ids`), so a ``make study`` that goes on after
    an interruption adds its cells to the same session, with the new boot recorded; else a new
    id from the start time and the boot. ``rtstudy session new`` closes the datasets, so the
    next call starts a new session.
    """
    path = path or paths.session_file()
    boot, started = _boot_and_now()
    before = _recorded(path)
    if not os.environ.get(SESSION_VARIABLE) and before.get("id") in resume:
        record = {**before, "boot_id": boot, "resumed_utc": started}
    else:
        record = {"id": os.environ.get(SESSION_VARIABLE) or f"{started}-{boot[:8]}",
                  "boot_id": boot, "started_utc": started}
    atomic.write_text(path, json.dumps(record, indent=2) + "\n")
    return record


def _recorded(path: Path) -> SessionRecord:
    """The session record at ``path``, or ``{}`` where there is none (or it is unreadable)."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def session_record(path: Path | None = None) -> SessionRecord:
    """The measuring session a sweep belongs to: one ``dvc repro`` (``make study`` runs one).

    ``id`` is :data:`SESSION_VARIABLE` where set, else the one :func:`start_session` wrote in
    this boot, else (a stage run outside the pipeline) this stage's own start and the boot;
    with ``boot_id`` (the kernel's, new at every boot) and ``stage_started_utc``. Sessions are
    the level above runs: what varies between two studies of one host state.
    """
    boot, started = _boot_and_now()
    record = _recorded(path or paths.session_file())
    # A session never outlives a reboot: a record of an earlier boot is stale (start_session
    # writes the new boot into a session it resumes).
    written = record.get("id", "") if record.get("boot_id") == boot else ""
    return {"id": os.environ.get(SESSION_VARIABLE) or written or f"{started}-{boot[:8]}",
            "boot_id": boot, "stage_started_utc": started}


def git_state() -> GitState:
    """The checkout's commit and whether it had uncommitted changes ("unknown" outside git)."""
    def git(*args: str) -> str | None:
        try:
            proc = subprocess.run(["git", *args], cwd=paths.root(), capture_output=True,
                                  text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return proc.stdout.strip() if proc.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    # dvc.lock and report/metrics.json are the pipeline's own records, rewritten by stages of
    # `dvc repro`: a change there does not make the code or parameters dirty.
    status = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)dvc.lock",
                 ":(exclude)report/metrics.json")
    return {"commit": commit or "unknown", "dirty": bool(status) if status is not None else None}
