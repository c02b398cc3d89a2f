"""Reading what the harness wrote: a sweep's plan, its completed cells, their files.

Every file is checked before it is analysed: a missing or corrupt file, a
sidecar without the keys the loaders read, or a ``samples.parquet`` whose
columns or types differ from the experiment's schema is a :class:`DataError`
naming the file, what is wrong and the fix. :func:`completed_cells` checks a
whole dataset and reports every damaged file at once, so one repair pass fixes
it. The experiments' loaders (``rtstudy/experiments/<name>/analysis.py``) build
on these; :mod:`rtstudy.data` is the public API over them. This module knows
no experiment.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from rtstudy.machine.host import HostRecord, host_id as id_of
from rtstudy.measure import integrity
from rtstudy.paths import HOST_FILE, PLAN_FILE, SAMPLES_FILE, SESSIONS_DIR, SIDECAR_FILE

if TYPE_CHECKING:  # the cell's records, as the harness writes them
    from rtstudy.measure.records import PlanRecord, Sidecar

# Sidecar (cell.json) keys the loaders read; the harness writes these and more.
SIDECAR_KEYS = ("cell_id", "experiment", "host_id", "profile", "repetition", "requested",
                "summary", "status", "order_index")

# Arrow types accepted for each schema type (Parquet may store text as large_string).
_ARROW_TYPES = {"int64": (pa.int64(),), "string": (pa.string(), pa.large_string())}

REMEASURE = "delete the cell's folder and re-run its stage to measure it again"
REFETCH = ("the dataset was copied or edited by hand: get a fresh copy from whoever measured it "
           "(`make pull`, or their `make push`)")

# The columns CellData.columns gives every loader's rows, as (kind, unit, meaning): the schema
# of what every table shares (rtstudy.data.schema, which also declares host_id).
CELL_COLUMNS = {
    "cell_id": ("str", "", "the run: its cell folder's name, `<label>-r<repetition>-<digest>`"),
    "repetition": ("int", "", "which run of its condition, from 0"),
    "label": ("str", "", "the condition's readable name (the cell id without run and digest)"),
    "drift": ("str", "", "`start` or `end` for the drift check's two runs, else empty; always "
              "empty here, as the loaders set those runs aside"),
    "finished_utc": ("str", "", "when the cell was written: UTC, ISO 8601 (wall clock, for "
                     "people only)"),
    "session": ("str", "", "the measuring session (one `dvc repro`: harness.session_record); "
                "empty for a cell measured before sessions were recorded"),
}


class DataError(RuntimeError):
    """A dataset on disk is missing, incomplete or corrupt."""


@dataclass
class Dataset:
    """One experiment's data from one folder, as its loader returns it.

    Attributes
    ----------
    directory : Path
        ``data/raw/<experiment>/<host id>/<profile>/``.
    tables : dict of str to DataFrame
        The loader's tidy tables, configuration as columns.
    missing : list of str
        Cell ids of the plan not measured yet.
    extra : dict
        What the experiment recorded beside its cells (e.g. E4's host audit).
    """

    directory: Path
    tables: dict[str, pd.DataFrame]
    missing: list[str] = field(default_factory=list)
    extra: dict = field(default_factory=dict)


def read_json(path: Path) -> dict[str, Any]:
    """A JSON file as a mapping; :class:`DataError` names the file if it is missing or invalid."""
    try:
        value = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise DataError(f"{path}: missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not valid JSON ({exc}); {REMEASURE}") from None
    if not isinstance(value, dict):
        raise DataError(f"{path}: expected a JSON object, got {type(value).__name__}; {REMEASURE}")
    return value


def read_samples(path: Path) -> pd.DataFrame:
    """A cell's ``samples.parquet`` as a DataFrame; :class:`DataError` names an unreadable file."""
    try:
        # One file, read in this thread: a file is a few kB to a few hundred, and pyarrow's
        # thread pool took half the time of reading one (6,527 in a render of the reference).
        with pq.ParquetFile(path, page_checksum_verification=True) as f:
            table = f.read(use_threads=False, use_pandas_metadata=True)
        return table.to_pandas(use_threads=False)
    except FileNotFoundError:
        raise DataError(f"{path}: missing") from None
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise DataError(f"{path}: unreadable Parquet ({exc}); {REMEASURE}") from None


def check_schema(path: Path, schema: dict[str, str], experiment: str) -> None:
    """Check that ``path`` has the columns and types of ``schema``.

    Only the file's footer is read. Extra columns are allowed. A file with no
    rows is checked for its columns only: an app that recorded nothing (E4's
    cyclicdeadline keeps no histogram) writes empty float64 columns.

    Parameters
    ----------
    path : Path
        A ``samples.parquet``.
    schema : dict of str to str
        Column name → ``int64`` or ``string`` (the experiment's ``SAMPLES``).
    experiment : str
        Named in the message.

    Raises
    ------
    DataError
        The file is missing or unreadable, lacks a column, or a column has
        another type; the message names the file, the column, the expected
        and the actual type.
    """
    try:
        meta = pq.read_metadata(path)
        arrow = meta.schema.to_arrow_schema()
    except FileNotFoundError:
        raise DataError(f"{path}: missing") from None
    except Exception as exc:  # a truncated or garbage file fails on its footer
        raise DataError(f"{path}: unreadable Parquet ({exc}); {REMEASURE}") from None
    problems = [f"column {name!r} missing (expected type {kind})"
                for name, kind in schema.items() if name not in arrow.names]
    if meta.num_rows:
        for name, kind in schema.items():
            if name in arrow.names and arrow.field(name).type not in _ARROW_TYPES[kind]:
                problems.append(f"column {name!r} has type {arrow.field(name).type}, "
                                f"expected {kind}")
    if problems:
        have = ", ".join(f"{f.name} ({f.type})" for f in arrow)
        raise DataError(f"{path}: not a {experiment} samples file: " + "; ".join(problems)
                        + f" (the file has: {have}); {REMEASURE}")


def read_plan(directory: Path) -> PlanRecord:
    """The plan of the sweep stored in ``directory`` (which cells make up its configuration)."""
    directory = Path(directory)
    if not (directory / PLAN_FILE).exists():
        raise DataError(f"{directory}: no {PLAN_FILE}; this experiment has not been run here for "
                        "this host and profile (run `make study`, or `make pull` a shared dataset)")
    record = read_json(directory / PLAN_FILE)
    if not isinstance(record.get("cells"), list):
        raise DataError(f"{directory / PLAN_FILE}: no list of 'cells'; re-run the stage to rewrite it")
    return record


def _check_cell(d: Path, schema: dict[str, str] | None, experiment: str) -> Sidecar:
    """The sidecar of the completed cell in ``d``, checked; :class:`DataError` if damaged."""
    if not (d / SIDECAR_FILE).is_file():
        # The harness renames a cell into place only when complete, so this
        # folder was damaged or copied in part (an interrupted pull, say).
        raise DataError(f"{d}: a cell folder without its sidecar {SIDECAR_FILE}, so it is "
                        f"incomplete or damaged; {REMEASURE}")
    sidecar = read_json(d / SIDECAR_FILE)
    absent = [k for k in SIDECAR_KEYS if k not in sidecar]
    requested = sidecar.get("requested")
    if requested is not None and not (isinstance(requested, dict) and "config" in requested):
        absent.append("requested.config")
    if absent:
        raise DataError(f"{d / SIDECAR_FILE}: keys {absent} missing (expected "
                        f"{list(SIDECAR_KEYS)}); {REMEASURE}")
    if sidecar["status"] != "ok":
        raise DataError(f"{d / SIDECAR_FILE}: status {sidecar['status']!r}, expected 'ok'; "
                        f"{REMEASURE}")
    if not (d / SAMPLES_FILE).is_file():
        raise DataError(f"{d / SAMPLES_FILE}: missing (the cell's sidecar exists without samples); "
                        f"{REMEASURE}")
    if schema is not None:
        check_schema(d / SAMPLES_FILE, schema, experiment)
    damaged = integrity.problems(d, sidecar)
    if damaged:
        raise DataError("\n  - ".join(damaged))
    sidecar["_dir"] = str(d)
    return sidecar


def completed_cells(directory: Path, schema: dict[str, str] | None = None
                    ) -> tuple[list[dict], list[str]]:
    """Sidecars of the plan's completed cells, and the ids of cells not on disk.

    Each sidecar gets ``_dir``, its cell's folder. Every completed cell is
    checked: its sidecar exists, holds :data:`SIDECAR_KEYS` and status ``ok``,
    and its samples have ``schema`` (:func:`check_schema`; None skips that).

    Raises
    ------
    DataError
        Listing every file of the dataset that is missing, unreadable or wrong,
        each with its fix.
    """
    directory = Path(directory)
    record = read_plan(directory)
    experiment = record.get("experiment") or directory.parent.parent.name
    cells, missing, problems = [], [], []
    for entry in record["cells"]:
        d = directory / entry["cell_id"]
        if not d.exists():
            missing.append(entry["cell_id"])
            continue
        try:
            cells.append(_check_cell(d, schema, experiment))
        except DataError as exc:
            problems.append(str(exc))
    if len(problems) == 1:
        raise DataError(problems[0])
    if problems:
        raise DataError(f"{directory}: {len(problems)} damaged cells (every one is listed; the "
                        "others are intact):\n  - " + "\n  - ".join(problems))
    return cells, missing


@dataclass(frozen=True)
class CellData:
    """One completed cell as a loader reads it (:func:`read_cells`): its checked sidecar."""

    sidecar: Sidecar  # with "_dir", the cell's folder

    @property
    def config(self) -> dict[str, Any]:
        """The configuration the cell's app received."""
        return self.sidecar["requested"]["config"]

    @property
    def folder(self) -> Path:
        return Path(self.sidecar["_dir"])

    def samples(self) -> pd.DataFrame:
        """The cell's ``samples.parquet`` (its columns checked by :func:`read_cells`)."""
        return read_samples(self.folder / SAMPLES_FILE)

    def columns(self, **factors) -> dict[str, Any]:
        """The columns every loader gives each of the cell's rows.

        ``cell_id``, ``host_id``, then the experiment's ``factors`` in the order
        given, ``repetition``, the condition's ``label``, its ``drift`` role
        (``"start"``/``"end"`` for a drift check, else empty), when it
        finished (``finished_utc``, UTC, ISO 8601) and its measuring ``session``:
        :data:`CELL_COLUMNS`.
        """
        sc = self.sidecar
        return {"cell_id": sc["cell_id"], "host_id": sc["host_id"], **factors,
                "repetition": sc["repetition"], "label": sc.get("label", ""),
                "drift": sc.get("drift") or "", "finished_utc": sc.get("finished_utc", ""),
                "session": (sc.get("session") or {}).get("id", "")}


def read_cells(directory: Path, schema: dict[str, str]) -> tuple[list[CellData], list[str]]:
    """The plan's completed cells, each checked (:func:`completed_cells`), and the ids of cells
    not on disk: where every experiment's loader starts."""
    sidecars, missing = completed_cells(directory, schema)
    return [CellData(sc) for sc in sidecars], missing


def stack(parts: list[tuple[pd.DataFrame, dict]]) -> pd.DataFrame:
    """Many cells' tables as one, every row given its cell's columns.

    What ``pd.concat([t.assign(**columns) for t, columns in parts], ignore_index=True)`` gives,
    with each column set once for all cells instead of once per cell: a dataset of a hundred
    cells and twenty columns took two thousand insertions, a tenth of the report's time.

    Parameters
    ----------
    parts : list of (DataFrame, dict)
        Each cell's table and its columns (name → one value for all its rows); a name the
        table already has is replaced in place, as ``assign`` does.
    """
    if not parts:
        return pd.DataFrame()
    tables = pd.concat([t for t, _ in parts], ignore_index=True)
    if not len(tables):
        return pd.concat([t.assign(**columns) for t, columns in parts], ignore_index=True)
    rows = np.repeat(np.arange(len(parts)), [len(t) for t, _ in parts])
    columns = pd.DataFrame([c for _, c in parts]).iloc[rows].reset_index(drop=True)
    for name in columns.columns:
        tables[name] = columns[name]
    return tables


def set_aside_drift(tables: dict[str, pd.DataFrame], per_run: str) -> dict[str, pd.DataFrame]:
    """``tables`` without the drift check's runs, and ``"drift"``: their rows of ``per_run``.

    The drift check's two runs (:func:`rtstudy.measure.harness.with_drift`) measure the
    host, not the condition: no statistic of the condition may count them.

    Parameters
    ----------
    tables : dict of str to DataFrame
        A loader's tables; those with a ``drift`` column (:meth:`CellData.columns`) are filtered.
    per_run : str
        The table with one row per run, whose drift rows become ``"drift"``.
    """
    out = {name: (t[t["drift"] == ""].reset_index(drop=True) if "drift" in t.columns else t)
           for name, t in tables.items()}
    runs = tables[per_run]
    out["drift"] = (runs[runs["drift"] != ""].reset_index(drop=True) if "drift" in runs.columns
                    else pd.DataFrame())
    return out


def wide(table: pd.DataFrame, index: list[str], series: pd.Series, values: str) -> pd.DataFrame:
    """``table``'s ``values`` with one column per distinct ``series`` value and ``index`` as
    plain columns: the shape of a DVC plot table (``dvc plots show``, one y column a series)."""
    return (table.assign(series=series)
            .pivot_table(index=index, columns="series", values=values)
            .reset_index().rename_axis(columns=None))


def host_of(directory: Path) -> str:
    """The host id a dataset folder is filed under: ``<experiment>/<host id>/<profile>/``, or
    ``…/<profile>/sessions/<session>/`` for a closed session."""
    directory = Path(directory)
    closed = directory.parent.name == SESSIONS_DIR
    return (directory.parents[2] if closed else directory.parent).name


def identity_problems(directory: Path) -> list[str]:
    """Where a dataset folder's records disagree with the host it is filed under: its plan's
    ``host_id``, its ``host.json`` (its ``host_id``, and the id its fingerprint hashes to), and
    every cell's sidecar. One sentence each, with the fix."""
    directory = Path(directory)
    filed = host_of(directory)
    fix = REFETCH
    found = []
    try:
        planned = read_plan(directory).get("host_id")
    except DataError:
        planned = filed  # read_plan's own problem is named by the loaders
    if planned != filed:
        found.append(f"{directory / PLAN_FILE}: plans for host {planned}, but the dataset is "
                     f"filed under {filed}; {fix}")
    try:
        fingerprint = read_host(directory)
    except DataError as exc:
        found.append(str(exc))
        fingerprint = None
    if fingerprint is not None:
        claimed = fingerprint.get("host_id")
        hashed = id_of({k: v for k, v in fingerprint.items() if k != "host_id"})
        if claimed != filed or hashed != filed:
            found.append(f"{directory / HOST_FILE}: describes host {claimed} (its fingerprint "
                         f"hashes to {hashed}), but the dataset is filed under {filed}; {fix}")
    for sidecar in sorted(directory.glob(f"*/{SIDECAR_FILE}")):
        try:
            measured_on = json.loads(sidecar.read_text()).get("host_id")
        except (OSError, ValueError):
            continue  # a damaged sidecar: the loaders name it
        if measured_on != filed:
            found.append(f"{sidecar}: measured on host {measured_on}, but filed under {filed}; "
                         f"{fix}")
    return found


def dataset_folders(experiment_dir: Path, profile: str = "*") -> list[Path]:
    """The dataset folders (``<host id>/<profile>/``) under one experiment's folder, sorted:
    each holding a current session (its ``plan.json``), closed ones (``sessions/*/plan.json``),
    or both. A dataset whose current session was closed (``rtstudy session new`` closes every
    dataset of a checkout) and not measured since holds closed sessions only."""
    plans = [*Path(experiment_dir).glob(f"*/{profile}/{PLAN_FILE}"),
             *Path(experiment_dir).glob(f"*/{profile}/{SESSIONS_DIR}/*/{PLAN_FILE}")]
    return sorted({p.parent if p.parent.parent.name != SESSIONS_DIR else p.parent.parent.parent
                   for p in plans})


def session_folders(directory: Path) -> list[Path]:
    """A dataset folder's sessions, each a folder with its ``plan.json``: the closed ones
    (``sessions/*/``, by name: oldest first), then the current one (``directory`` itself) if it
    has begun. The last is the dataset's latest session."""
    closed = sorted(p.parent for p in (Path(directory) / SESSIONS_DIR).glob(f"*/{PLAN_FILE}"))
    return closed + [Path(directory)] * (Path(directory) / PLAN_FILE).is_file()


def read_host(directory: Path) -> HostRecord | None:
    """The fingerprint of the host that measured the dataset in ``directory``, or None."""
    path = Path(directory) / HOST_FILE
    return read_json(path) if path.is_file() else None
