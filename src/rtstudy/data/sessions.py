"""Measuring sessions: the level above runs, kept side by side in one host's dataset.

A *session* is one ``dvc repro`` (``make study`` runs one): its first stage starts it
(:func:`rtstudy.measure.harness.start_session`) and every cell's sidecar records its id
(:func:`rtstudy.measure.harness.session_record`). ``make study`` resumes the current session: cells
already measured are skipped. ``rtstudy session new`` (``make new-session``) closes it: every
dataset of this checkout for the profile moves, whole, into its own folder

    data/raw/<experiment>/<host id>/<profile>/sessions/<session>/

(plan, host fingerprint, cells, failed cells, E4's audit), and the next ``make study`` measures
every cell again as a new session of the same host state. The dataset folder keeps only the
current session's cells, so every reader that does not ask for sessions (the report's sections,
:func:`rtstudy.data.load`) sees one session, as before; :func:`folders` and :func:`load` give
them all, oldest first. Closed sessions travel with the dataset (``make push``/``pull``,
``rtstudy data import``) because they live inside it.
"""
from __future__ import annotations

import collections
import json
import os
import re
import shutil
from pathlib import Path
from typing import TypedDict

from rtstudy import data, params, paths, protocol, registry
from rtstudy.data.io import DataError, Dataset, read_plan
from rtstudy.measure import integrity
from rtstudy.paths import PLAN_FILE, SESSIONS_DIR, SIDECAR_FILE


def folder_name(session_id: str) -> str:
    """A session id as a folder name: ``2026-11-26T13:48:23Z`` → ``2026-11-26T134823Z``
    (no ``:``, which some file systems and tools refuse)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "", session_id)
    if not name or name.startswith("."):
        raise ValueError(f"session id {session_id!r} gives no usable folder name")
    return name


def _read(directory: Path) -> tuple[str, str]:
    """``(session, first)`` of the cells in a dataset folder, from one pass over their sidecars:
    the session most of them record (``before-sessions-<date>`` for cells measured before
    sessions were recorded, empty with no cell) and the first one's finish time (UTC)."""
    ids: collections.Counter = collections.Counter()
    finished = []
    for sidecar in Path(directory).glob(f"*/{SIDECAR_FILE}"):
        try:
            sc = json.loads(sidecar.read_text())
        except (OSError, json.JSONDecodeError):
            continue  # a damaged cell: the loaders name it; it does not decide the session
        ids[(sc.get("session") or {}).get("id", "")] += 1
        finished.append(sc.get("finished_utc", ""))
    first = min((f for f in finished if f), default="")
    if not ids:
        return "", first
    best = ids.most_common(1)[0][0]
    return best or f"before-sessions-{first[:10] or 'unknown'}", first


def session_of(directory: Path) -> str:
    """The session that measured the cells in ``directory`` (a dataset folder).

    The id most of its cells' sidecars record; cells measured before sessions were recorded
    give ``before-sessions-<first cell's finish date>``. Empty when the folder holds no cell.
    """
    return _read(directory)[0]


def started(directory: Path) -> str:
    """When the session that measured the cells in ``directory`` (a dataset folder) began: its
    first cell's finish time (ISO 8601, UTC), which orders sessions oldest first. Empty when
    the folder holds no cell."""
    return _read(directory)[1]


def _closed_plans(directory: Path) -> list[Path]:
    """The plan files of a dataset folder's closed sessions, by name."""
    return sorted((Path(directory) / SESSIONS_DIR).glob(f"*/{PLAN_FILE}"))


class SessionPlans(TypedDict):
    """What each session of a dataset folder planned (:func:`plans`): its plan's cells."""

    closed: list[list[dict]]  # each closed session's, oldest first
    current: list[dict] | None  # the current session's (None before it began)


def plans(directory: Path) -> SessionPlans:
    """What each session of a dataset folder planned, by which a plan may choose what a new
    session measures (E2's rotating fixes): ``closed``, each closed session's plan cells
    (by name: oldest first), and ``current``, the current session's (None before it began).
    A damaged plan counts as one with no cell (the loaders name it)."""
    def cells(folder: Path) -> list[dict]:
        try:
            return read_plan(folder)["cells"]
        except DataError:
            return []
    current = Path(directory)
    return {"closed": [cells(p.parent) for p in _closed_plans(directory)],
            "current": cells(current) if (current / PLAN_FILE).is_file() else None}


def closed(directory: Path) -> int:
    """How many closed sessions a dataset folder holds (0 for a host state's first)."""
    return len(_closed_plans(directory))


def folders(experiment: str, host_id: str, profile: str | None = None,
            root: Path | None = None) -> dict[str, Path]:
    """Every session of ``host_id``'s dataset of ``experiment``: session id → folder, oldest first.

    The closed sessions (``sessions/*/``, each with its ``plan.json``), then the current one
    (the dataset folder itself) if it holds cells. Empty when the host has no such dataset.
    """
    directory = data.dataset_base(experiment, host_id, profile, root)
    if directory is None:
        return {}
    found = {}  # session → (first cell's finish, folder)
    for plan in _closed_plans(directory):
        session, first = _read(plan.parent)
        found[session or plan.parent.name] = (first, plan.parent)
    current, first = _read(directory)
    if current:
        found[current] = (first, directory)
    # Oldest first: by the first cell's finish time of each session.
    return {s: folder for s, (_, folder) in sorted(found.items(), key=lambda item: item[1][0])}


def protocol_of(directory: Path) -> int | None:
    """The protocol version every cell of a dataset folder was measured under
    (:func:`rtstudy.protocol.version_of`); None where the folder holds no cell, a cell measured
    before versions were recorded, cells of two versions, or a sidecar that cannot be read."""
    versions = set()
    for sidecar in Path(directory).glob(f"*/{SIDECAR_FILE}"):
        try:
            versions.add(protocol.version_of(json.loads(sidecar.read_text())))
        except (OSError, ValueError):
            return None
    return versions.pop() if len(versions) == 1 else None


def confirmatory(found: dict[str, Path]) -> dict[str, Path]:
    """The sessions of ``found`` (session → folder, :func:`folders`) measured wholly under the
    protocol version in force: the only ones a confirmatory verdict pools."""
    return {s: f for s, f in found.items() if protocol_of(f) == protocol.VERSION}


def load(experiment: str, host_id: str, profile: str | None = None,
         root: Path | None = None) -> dict[str, Dataset]:
    """Each session of ``host_id``'s dataset of ``experiment``, loaded by the experiment's own
    loader (as :func:`rtstudy.data.load_dataset` loads the current one): session id → Dataset,
    oldest first. A closed session is analysed with today's parameters, like the current one.

    Raises
    ------
    DataError
        A session's files are missing, corrupt or of the wrong schema.
    """
    exp = registry.get(experiment)
    config = params.stage_config(experiment, profile)  # params.yaml read once
    return {session: exp.analysis.load(folder, config)
            for session, folder in folders(experiment, host_id, config["profile"], root).items()}


def close(directory: Path) -> Path | None:
    """Move the current session's data out of a dataset folder into ``sessions/<session>/``.

    Everything in the folder moves but ``sessions/`` itself and the work folders of a run
    in progress (``.tmp-*``); the move is into a staging folder renamed into place at the
    end, so an interruption leaves either the old layout or the new one, never a session
    split in two (a staging folder left behind is removed by the next call).

    Returns
    -------
    Path or None
        The closed session's folder; None when ``directory`` held no cell.

    Raises
    ------
    DataError
        A run is measuring into the folder (a ``.tmp-*`` work folder of a live process), or
        a session of that id was closed before.
    """
    directory = Path(directory)
    session = session_of(directory)
    if not session:
        return None
    live = [p.name for p in directory.glob(".tmp-*") if _alive(p.name)]
    if live:
        raise DataError(f"{directory}: a run is measuring into it ({', '.join(live)}); let it "
                        "finish (or stop it), then start the new session")
    # A session is closed as it was measured: sealed (one measured before seals, as DVC
    # recorded it), so that its folder is checked like any other once it has moved.
    damaged = integrity.adopt(directory)
    if damaged:
        raise DataError(f"{directory}: not the dataset that was measured, so its session was "
                        "not closed:\n  " + "\n  ".join(damaged))
    archive = directory / SESSIONS_DIR
    final = archive / folder_name(session)
    if final.exists():
        raise DataError(f"{final}: session {session} was closed before, yet {directory} holds "
                        "cells of it again; move one of the two away by hand")
    staging = archive / f".closing-{folder_name(session)}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for entry in sorted(directory.iterdir()):
        if entry.name == SESSIONS_DIR or entry.name.startswith(".tmp-"):
            continue
        os.replace(entry, staging / entry.name)
    os.replace(staging, final)
    return final


def open_ids(host_id: str, profile: str, root: Path | None = None) -> set[str]:
    """The sessions the current (not yet closed) datasets of this checkout's ``host_id`` record
    for ``profile``: what ``make study`` resumes (:func:`rtstudy.measure.harness.start_session`)."""
    raw = (Path(root) if root is not None else paths.data_dir()) / "raw"
    found = {session_of(raw / experiment / host_id / profile) for experiment in registry.REGISTRY}
    return found - {""}


def _alive(work_name: str) -> bool:
    """Whether the process that owns work folder ``.tmp-<cell id>-<pid>`` still runs."""
    pid = work_name.rsplit("-", 1)[-1]
    return pid.isdigit() and Path(f"/proc/{pid}").exists()


def new(profile: str | None = None, root: Path | None = None) -> list[Path]:
    """Close the current session of every dataset of this checkout (``data/raw``) for
    ``profile``: :func:`close` on each. Imported datasets are a colleague's and are left as
    they are. Returns the closed sessions' folders."""
    profile = profile or params.load().get("profile")
    raw = (Path(root) if root is not None else paths.data_dir()) / "raw"
    closed = []
    for experiment in registry.REGISTRY:
        for plan in sorted((raw / experiment).glob(f"*/{profile}/{PLAN_FILE}")):
            folder = close(plan.parent)
            if folder is not None:
                closed.append(folder)
    return closed


def describe(profile: str | None = None, root: Path | None = None) -> str:
    """What ``rtstudy session list`` prints: per host, its sessions with their cells."""
    lines = []
    profile = profile or params.load().get("profile")
    for experiment in registry.REGISTRY:
        for directory in data.datasets(experiment, profile, root):
            host_id = directory.parent.name
            for session, folder in folders(experiment, host_id, profile, root).items():
                cells = sum(1 for p in folder.glob(f"*/{SIDECAR_FILE}"))
                where = "current" if folder == directory else "closed"
                lines.append(f"{host_id}  {experiment:<16} {session:<34} {where:<7} "
                             f"{cells} cells")
    return "\n".join(lines) if lines else (
        f"no dataset for profile {profile!r}; `make study` measures one")
