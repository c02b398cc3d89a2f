"""The run harness: one sweep cell = one Holoscan app in its own subprocess.

A cell runs ``python -m <its app module> SPEC WORKDIR`` with a 32 MiB stack,
in its own process group, under a hard timeout (the app also sets Holoscan's
``max_duration_ms``). The child writes ``samples.npz`` and ``result.json``;
its stdout and stderr (Holoscan's log, CUDA warnings included) go to
``run.log``. The parent then

1. verifies every requested real-time policy was really applied — Holoscan
   4.6 fails silently — from the log, the tick counts and the policy each
   operator read back from its own thread (:mod:`rtstudy.measure.readback`, which also
   watches where the cell's threads run);
2. adds the sidecar ``cell.json`` (requested and effective configuration,
   host id, profile, versions, git commit, timings, and the ``GXF_*`` /
   ``HOLOSCAN_*`` variables the app got and those of the caller's shell it did
   not: :func:`child_env` clears them, so nothing steers an app unrecorded);
3. renames the finished work directory to ``<cell_id>/`` in one step, so a
   cell on disk is always complete. A failed cell goes to ``_failed/<cell_id>/``
   with its log and the reason, and the sweep goes on.

A sweep runs its cells in a seeded random order, skips cells already on disk,
and shows a progress bar with ETA. Interrupted (Ctrl-C), it kills the running
app and removes its work directory; killed outright, its app dies with it (see
:func:`rtstudy.measure.process.set_child_limits`) and the next sweep removes the leftover
``.tmp-*`` folder. A data directory that cannot be written (full, read-only, not
permitted) stops the sweep at once with :class:`DataDirError`.

This module holds the steps of one cell (:func:`run_cell`) and the order of a sweep
(:func:`run_sweep`). What a cell is and its id are :mod:`rtstudy.measure.cell`'s; the
session and commit each cell records, :mod:`rtstudy.measure.session`'s; its files and the
rename that completes it, :mod:`rtstudy.measure.store`'s. What a cell got is read back in
:mod:`rtstudy.measure.readback`, its process is set up and ended by
:mod:`rtstudy.measure.process`. The names the plans, stages, report and tests import from
here stay importable from here (:data:`__all__`).
"""
from __future__ import annotations

import errno
import json
import os
import random
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO

from tqdm import tqdm

from rtstudy import protocol
from rtstudy.machine import shield
from rtstudy.measure import integrity
from rtstudy.machine.placement import Placement
from rtstudy.measure.cell import Cell, CellOutcome, with_drift, with_drift_check
from rtstudy.measure.preflight import STORAGE_FIXES
from rtstudy.measure.process import kill_group, set_child_limits
from rtstudy.measure.readback import ThreadWatch, log_failures, placement_record, verify_realtime
from rtstudy.measure.realtime import STEERING_PREFIXES
from rtstudy.measure.records import PlanRecord, Sidecar
from rtstudy.measure.session import GitState, SessionRecord, git_state, session_record, start_session
from rtstudy.measure.store import (convert_samples, is_complete, store, store_failed, write_json,
                                   write_samples)
from rtstudy.paths import HOST_FILE, LOG_FILE, PLAN_FILE, RAW_SAMPLES_FILE, RESULT_FILE, SPEC_FILE
from rtstudy.sdks.sdk import Environment

# What other modules import from here, those defined elsewhere included.
__all__ = [
    "Cell", "CellOutcome", "DataDirError", "MIN_FREE_BYTES", "MeasuringRefused", "NO_MEASURE_ENV",
    "PASSED_THROUGH", "SweepContext", "SweepError", "child_env", "cleared_env", "git_state",
    "is_complete", "refuse_if_measuring_is_off", "run_cell", "run_order", "run_sweep",
    "session_record", "start_session", "with_drift", "with_drift_check", "write_json",
    "write_plan", "write_samples",
]


# Below this much free space (bytes) after an app failed, the full disk is taken as the cause:
# the app's own traceback may not even have reached run.log.
MIN_FREE_BYTES = 1 << 20


# Set to anything but "" or "0", nothing may be measured in this process or its children: a
# sweep, a cell and a stage refuse to start (a test of a notebook that must only read data
# sets it, so a cell that would measure fails loudly instead).
NO_MEASURE_ENV = "RTSTUDY_NO_MEASURE"


class SweepError(RuntimeError):
    """Some cells of a sweep failed; completed cells are kept on disk."""


class MeasuringRefused(SweepError):
    """:data:`NO_MEASURE_ENV` forbids measuring here; nothing was started."""


def refuse_if_measuring_is_off(what: str) -> None:
    """Raise :class:`MeasuringRefused` before ``what`` starts, if :data:`NO_MEASURE_ENV` is set."""
    value = os.environ.get(NO_MEASURE_ENV, "")
    if value not in ("", "0"):
        raise MeasuringRefused(f"{what}: not started, because {NO_MEASURE_ENV}={value!r} forbids "
                               "measuring in this environment; unset it to measure")


class DataDirError(SweepError):
    """The data directory cannot be written (full, read-only, not permitted); the sweep stopped.

    Nothing partial is left behind and completed cells are kept, so a re-run
    after the fix resumes.
    """


@dataclass(frozen=True)
class SweepContext:
    """What every cell of a sweep records about where and how it was measured."""

    host_id: str
    profile: str
    versions: dict
    git: GitState
    fingerprint: dict = field(default_factory=dict)
    placement: Placement | None = None
    # The SDK's environment (rtstudy.sdks.sdk): the cell's command is built by it; None: this venv.
    environment: Environment | None = None
    # The measuring session the sweep belongs to (session_record()).
    session: SessionRecord = field(default_factory=session_record)

    @classmethod
    def from_fingerprint(cls, fp: dict, profile: str, where: Placement | None = None,
                         environment: Environment | None = None) -> "SweepContext":
        return cls(host_id=fp["host_id"], profile=profile, versions=fp["versions"], git=git_state(),
                   fingerprint=fp, placement=where, environment=environment)

    def command(self, argv: list[str]) -> list[str]:
        """The command that runs ``python argv…`` for a cell: in this venv, or in the SDK's root."""
        return self.environment.command(argv) if self.environment else [sys.executable, *argv]

    @property
    def layout(self) -> shield.ShieldState | None:
        """Where a cell's process runs what it does not pin
        (:func:`rtstudy.measure.process.set_child_limits`): a runtime shield's layout, the
        housekeeping CPUs where the placement confines cells to them, or None (anywhere)."""
        if shielded := shield.of(self.fingerprint):
            return shielded
        if self.placement is not None and self.placement.confines:
            return {"cpus": list(self.placement.housekeeping)}
        return None


# ---------------------------------------------------------------------------
# One cell

# Variables of the caller's shell that steer Holoscan or GXF (the dispatcher's policy, for one)
# would reach every app silently. The harness clears them all, records which it cleared in each
# cell's sidecar, and warns once per sweep; only these, which change nothing but the log, pass.
PASSED_THROUGH = ("HOLOSCAN_LOG_LEVEL", "HOLOSCAN_LOG_FORMAT")


def cleared_env() -> dict[str, str]:
    """The caller's ``GXF_*`` / ``HOLOSCAN_*`` variables a cell does not get (name → value)."""
    return {k: v for k, v in sorted(os.environ.items())
            if k.startswith(STEERING_PREFIXES) and k not in PASSED_THROUGH}


def child_env() -> dict[str, str]:
    """A cell's environment: the caller's, without :func:`cleared_env`, logging at WARN."""
    cleared = cleared_env()
    env = {k: v for k, v in os.environ.items() if k not in cleared}
    env.setdefault("HOLOSCAN_LOG_LEVEL", "WARN")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_cell(cell: Cell, out_dir: Path, context: SweepContext, order_index: int = 0) -> CellOutcome:
    """Run one cell in a subprocess and store it atomically; never raises for a failed run.

    It raises only when it cannot go on: an interrupt (KeyboardInterrupt) or a
    data directory it cannot write (OSError). The app is then killed and the
    cell's work directory removed, so nothing half-written is left.
    """
    refuse_if_measuring_is_off(f"cell {cell.cell_id}")
    work = out_dir / f".tmp-{cell.cell_id}-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    try:
        return _run_cell(work, cell, out_dir, context, order_index)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def _run_cell(work: Path, cell: Cell, out_dir: Path, context: SweepContext,
              order_index: int) -> CellOutcome:
    """:func:`run_cell`'s steps: run the app, judge what it left, convert its samples, record
    the sidecar, store the cell (complete, or failed with its reason)."""
    work.mkdir(parents=True)
    run = _run_app(work, cell, context)
    result, reason = _judge(work, cell, run, out_dir)
    write_started = time.monotonic()
    if not reason:
        reason = convert_samples(work)
    sidecar = _sidecar(cell, context, run, result, reason, order_index)
    (work / SPEC_FILE).unlink()
    (work / RESULT_FILE).unlink(missing_ok=True)
    if reason:
        return store_failed(work, out_dir, cell, sidecar)
    sidecar["timing"]["write_s"] = time.monotonic() - write_started
    return store(work, out_dir, cell, sidecar)


@dataclass
class _AppRun:
    """One run of a cell's app: its exit status (None: killed at the timeout), why it failed
    if it timed out, its wall time (s) and where its threads were seen running."""

    rc: int | None
    reason: str
    wall_s: float
    watch: ThreadWatch


def _run_app(work: Path, cell: Cell, context: SweepContext) -> _AppRun:
    """Run the cell's app in its own process group with its spec, its log in ``run.log``, under
    the cell's timeout; killed with everything it started on a timeout or an interrupt."""
    spec_path = work / SPEC_FILE
    write_json(spec_path, cell.spec)
    cmd = context.command(["-m", cell.module, str(spec_path), str(work)])
    started = time.monotonic()
    reason = ""
    with open(work / LOG_FILE, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=child_env(),
                                preexec_fn=partial(set_child_limits, context.layout))
        watch = ThreadWatch(proc.pid, active=context.layout is not None)
        try:
            rc = watch.wait(proc, cell.timeout_s)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            rc = None
            reason = (f"timed out after {cell.timeout_s:.0f} s and was killed (Holoscan's "
                      "max_duration_ms safety net did not stop it; a real-time thread that was "
                      "refused its policy hangs this way)")
        except BaseException:
            kill_group(proc)
            raise
    return _AppRun(rc, reason, time.monotonic() - started, watch)


def _judge(work: Path, cell: Cell, run: _AppRun, out_dir: Path) -> tuple[dict | None, str]:
    """The app's ``result.json`` (None if it wrote none) and why the cell failed ("" if it did
    not): a timeout, an exit status, missing results, or a real-time request not verifiably
    applied (:func:`rtstudy.measure.readback.verify_realtime`).

    Raises
    ------
    OSError
        ENOSPC when the app failed on a nearly full disk: the sweep stops instead of failing
        every remaining cell the same way.
    """
    log_text = (work / LOG_FILE).read_text(errors="replace")
    reason, result = run.reason, None
    if (work / RESULT_FILE).is_file():
        try:
            result = json.loads((work / RESULT_FILE).read_text())
        except json.JSONDecodeError as exc:
            reason = reason or f"the app wrote an unreadable result.json ({exc})"
    if run.rc is None and cell.realtime and log_failures(log_text):
        reason += "; " + "; ".join(verify_realtime(cell.realtime, None, log_text))
    if not reason and run.rc != 0:
        last = [ln for ln in log_text.strip().splitlines() if ln.strip()][-3:]
        reason = f"the app exited with status {run.rc}: " + " | ".join(last)
    if not reason and (result is None or not (work / RAW_SAMPLES_FILE).is_file()):
        reason = "the app exited without writing its results"
    if reason and shutil.disk_usage(out_dir).free < MIN_FREE_BYTES:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(out_dir))
    if not reason:
        problems = verify_realtime(cell.realtime, result, log_text)
        if problems:
            reason = "real-time policy not verifiably applied: " + "; ".join(problems)
    return result, reason


def _sidecar(cell: Cell, context: SweepContext, run: _AppRun, result: dict | None, reason: str,
             order_index: int) -> Sidecar:
    """The cell's ``cell.json``: what was asked, what was got, where and how it ran."""
    return {
        "cell_id": cell.cell_id,
        "experiment": cell.experiment,
        "label": cell.label,
        "repetition": cell.repetition,
        "drift": cell.drift,
        "profile": context.profile,
        "host_id": context.host_id,
        "versions": context.versions,
        "git": context.git,
        "requested": cell.spec,
        "effective": (result or {}).get("effective", {}),
        "operators": (result or {}).get("operators", {}),
        "summary": (result or {}).get("summary", {}),
        "realtime_verified": bool(cell.realtime) and not reason,
        # The caller's GXF_*/HOLOSCAN_* variables this cell did not get, and those it got
        # (child_env); an app that sets its own (E2's dispatcher) records them in its summary.
        "env_cleared": cleared_env(),
        "env": {k: v for k, v in sorted(child_env().items()) if k.startswith(STEERING_PREFIXES)},
        # Where the cell's threads were meant to run and where they were seen running.
        "placement": placement_record(context.placement, run.watch, cell.realtime),
        "order_index": order_index,
        "status": "failed" if reason else "ok",
        "reason": reason,
        "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "session": context.session,
        # The frozen protocol in force (rtstudy.protocol): what decides whether the cell's
        # verdicts are confirmatory.
        "protocol": protocol.record(),
        "timing": {"measured_s": (result or {}).get("measured_s"), "child_wall_s": run.wall_s},
    }


# ---------------------------------------------------------------------------
# A sweep

def run_order(cells: list[Cell], seed: int) -> list[Cell]:
    """The cells in a seeded random order (independent of the order given).

    A drift check's start cell runs first and its end cell last (:func:`with_drift`).
    """
    ordered = sorted((c for c in cells if not c.drift), key=lambda c: c.cell_id)
    random.Random(seed).shuffle(ordered)
    start = [c for c in cells if c.drift == "start"]
    end = [c for c in cells if c.drift == "end"]
    return start + ordered + end


def write_plan(out_dir: Path, cells: list[Cell], context: SweepContext, seed: int) -> None:
    """Record which cells make up the current configuration (the loader reads only those)."""
    plan: PlanRecord = {
        "experiment": cells[0].experiment if cells else None,
        "profile": context.profile,
        "host_id": context.host_id,
        "order_seed": seed,
        "cells": [{"cell_id": c.cell_id, "label": c.label, "repetition": c.repetition,
                   "config": c.config, **({"drift": c.drift} if c.drift else {})}
                  for c in run_order(cells, seed)],
    }
    write_json(out_dir / PLAN_FILE, plan)
    if context.fingerprint:
        # The measuring host travels with its data, so a report rendered elsewhere
        # (after `make pull`) describes the host that measured, not the one rendering.
        write_json(out_dir / HOST_FILE, context.fingerprint)
    integrity.seal(out_dir, [PLAN_FILE, HOST_FILE])


def run_sweep(cells: list[Cell], out_dir: Path, context: SweepContext, order_seed: int,
              progress: IO | None = None) -> list[CellOutcome]:
    """Run every cell not yet on disk, in a seeded random order.

    Parameters
    ----------
    cells : list of Cell
        The whole plan; completed cells are skipped.
    out_dir : Path
        The experiment's directory for this host and profile.
    context : SweepContext
        Recorded in every cell's sidecar.
    order_seed : int
        Seed of the run order.
    progress : file, optional
        Where the progress bar goes (default: stderr).

    Returns
    -------
    list of CellOutcome
        One per cell, in run order.

    Raises
    ------
    SweepError
        After the sweep, if any cell failed; it names each one and its log.
    DataDirError
        At once, if the data directory cannot be written (full, read-only, not
        permitted); it names the directory, the problem and the fix.
    KeyboardInterrupt
        On Ctrl-C, once the running cell is killed and its work directory removed.
    """
    refuse_if_measuring_is_off(f"the sweep into {out_dir}")
    ids = [c.cell_id for c in cells]
    if len(set(ids)) != len(ids):
        raise ValueError("the plan holds duplicate cells; check the parameter lists for repeats")
    try:
        outcomes = _run_cells(cells, out_dir, context, order_seed, progress)
    except OSError as exc:
        if exc.errno not in STORAGE_FIXES:
            raise
        fix = STORAGE_FIXES[exc.errno].format(d=out_dir)
        raise DataDirError(
            f"{out_dir}: cannot write the data directory: {exc.strerror}. The sweep stopped; no "
            "partial cell was kept and completed cells are untouched, so a re-run resumes where "
            f"it stopped. Fix: {fix}") from exc
    failed = [o for o in outcomes if o.status == "failed"]
    if failed:
        lines = [f"{o.cell_id}: {o.reason} (log: {o.path / LOG_FILE})" for o in failed]
        raise SweepError(f"{len(failed)} of {len(cells)} cells failed; completed cells are kept "
                         "and a re-run retries only the failed ones:\n  " + "\n  ".join(lines))
    return outcomes


def _run_cells(cells: list[Cell], out_dir: Path, context: SweepContext, order_seed: int,
               progress: IO | None) -> list[CellOutcome]:
    out_dir.mkdir(parents=True, exist_ok=True)
    for leftover in out_dir.glob(".tmp-*"):
        # Work directories of an interrupted run: never complete, safe to drop.
        shutil.rmtree(leftover, ignore_errors=True)
    # Nothing is added to a dataset that is not what was measured; one measured before seals
    # is sealed as DVC recorded it. The plan's cells not complete on disk (missing, or a folder
    # without its sidecar) are about to be measured again, its plan and host files written again.
    damaged = integrity.adopt(out_dir, remeasured=frozenset(
        c.cell_id for c in cells if not is_complete(out_dir, c)), rewritten=(PLAN_FILE, HOST_FILE))
    if damaged:
        raise SweepError(f"{out_dir} is not the dataset that was measured, so nothing was "
                         "measured into it:\n  " + "\n  ".join(damaged))
    write_plan(out_dir, cells, context, order_seed)
    ordered = run_order(cells, order_seed)
    outcomes: list[CellOutcome] = []
    todo = [c for c in ordered if not is_complete(out_dir, c)]
    done = len(ordered) - len(todo)
    experiment = cells[0].experiment if cells else "sweep"
    if todo and cleared_env():
        print(f"NOTE: {experiment}: not passed to the apps (recorded in each cell.json as "
              f"env_cleared): {', '.join(cleared_env())}. The study sets what it varies itself.",
              file=progress or sys.stderr)
    bar = tqdm(total=len(ordered), initial=done, desc=experiment, unit="cell",
               file=progress or sys.stderr, dynamic_ncols=True, smoothing=0.1)
    try:
        for cell in ordered:
            if cell not in todo:
                outcomes.append(CellOutcome(cell.cell_id, "skipped", path=out_dir / cell.cell_id))
                continue
            bar.set_postfix_str(cell.label, refresh=True)
            outcome = run_cell(cell, out_dir, context, order_index=ordered.index(cell))
            outcomes.append(outcome)
            if outcome.status == "failed":
                bar.write(f"FAILED {cell.cell_id}: {outcome.reason}\n"
                          f"  log: {outcome.path / LOG_FILE}")
            bar.update(1)
    finally:
        bar.close()
    return outcomes
