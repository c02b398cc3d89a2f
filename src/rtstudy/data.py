"""Reading what the harness wrote: datasets, the plan of a sweep and its completed cells.

Exploring the data takes two calls::

    from rtstudy import data
    data.datasets("e2_rt_threads")            # every host's folder for the current profile
    tables = data.load("e2_rt_threads")       # {"frames": DataFrame, "runs": DataFrame}

:func:`load` returns tidy frames (one row per observation, the configuration
as columns, a ``host_id`` column) built by the experiments' own loaders.
Every file is checked before it is analysed: a missing or corrupt file, a
sidecar without the keys the loaders read, or a ``samples.parquet`` whose
columns or types differ from :data:`SAMPLE_SCHEMAS` raises :class:`DataError`
naming the file and what is wrong, so a damaged or half-copied dataset is
never silently analysed. ``data/README.md`` documents the layout and schemas.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Callable, Iterable

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from rtstudy import params, paths
from rtstudy.harness import PLAN_FILE, SAMPLES, SIDECAR

# The columns and Arrow types of each experiment's samples.parquet, as its app
# writes them (src/rtstudy/apps/). Units are in the names: *_ns are
# CLOCK_MONOTONIC nanoseconds. data/README.md describes every column.
SAMPLE_SCHEMAS: dict[str, dict[str, str]] = {
    "e1_async_buffer": {"event": "string", "port": "string", "index": "int64",
                        "t_start_ns": "int64", "t_emit_ns": "int64", "t_rx_ns": "int64"},
    "e2_rt_threads": {"frame": "int64", "t_start_ns": "int64", "exec_ns": "int64"},
    "e3_overhead": {"run": "int64", "iterations": "int64", "op": "string", "tick": "int64",
                    "t_ns": "int64"},
    "e4_host": {"latency_ns": "int64", "count": "int64"},
}
EXPERIMENTS = tuple(SAMPLE_SCHEMAS)

# Sidecar (cell.json) keys the loaders read; the harness writes these and more.
SIDECAR_KEYS = ("cell_id", "experiment", "host_id", "profile", "repetition", "requested",
                "summary", "status", "order_index")

# Arrow types accepted for each schema type (Parquet may store text as large_string).
_ARROW_TYPES = {"int64": (pa.int64(),), "string": (pa.string(), pa.large_string())}

# The frames load() returns per experiment, in the order its loader returns them.
TABLES = {"e1_async_buffer": ("messages", "cells"), "e2_rt_threads": ("frames", "runs"),
          "e3_overhead": ("runs",), "e4_host": ("histograms", "stats")}

REMEASURE = "delete the cell's folder and re-run its stage to measure it again"


class DataError(RuntimeError):
    """A dataset on disk is missing, incomplete or corrupt."""


def read_json(path: Path) -> dict:
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
        return pq.read_table(path).to_pandas()
    except FileNotFoundError:
        raise DataError(f"{path}: missing") from None
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise DataError(f"{path}: unreadable Parquet ({exc}); {REMEASURE}") from None


def check_schema(path: Path, experiment: str) -> None:
    """Check that ``path`` has the columns and types of ``experiment``'s samples.

    Only the file's footer is read. Extra columns are allowed. A file with no
    rows is checked for its columns only: an app that recorded nothing (E4's
    cyclicdeadline keeps no histogram) writes empty float64 columns.

    Raises
    ------
    DataError
        The file is missing or unreadable, lacks a column, or a column has
        another type; the message names the file, the column, the expected
        and the actual type.
    """
    expected = SAMPLE_SCHEMAS[experiment]
    try:
        meta = pq.read_metadata(path)
        schema = meta.schema.to_arrow_schema()
    except FileNotFoundError:
        raise DataError(f"{path}: missing") from None
    except Exception as exc:  # a truncated or garbage file fails on its footer
        raise DataError(f"{path}: unreadable Parquet ({exc}); {REMEASURE}") from None
    problems = [f"column {name!r} missing (expected type {kind})"
                for name, kind in expected.items() if name not in schema.names]
    if meta.num_rows:
        for name, kind in expected.items():
            if name in schema.names and schema.field(name).type not in _ARROW_TYPES[kind]:
                problems.append(f"column {name!r} has type {schema.field(name).type}, "
                                f"expected {kind}")
    if problems:
        have = ", ".join(f"{f.name} ({f.type})" for f in schema)
        raise DataError(f"{path}: not a {experiment} samples file: " + "; ".join(problems)
                        + f" (the file has: {have}); {REMEASURE}")


def plan(out_dir: Path) -> dict:
    """The plan of the sweep stored in ``out_dir`` (which cells make up its configuration)."""
    out_dir = Path(out_dir)
    if not (out_dir / PLAN_FILE).exists():
        raise DataError(f"{out_dir}: no {PLAN_FILE}; this experiment has not been run here for "
                        "this host and profile (run `make study`, or `make pull` a shared dataset)")
    record = read_json(out_dir / PLAN_FILE)
    if not isinstance(record.get("cells"), list):
        raise DataError(f"{out_dir / PLAN_FILE}: no list of 'cells'; re-run the stage to rewrite it")
    return record


def completed_cells(out_dir: Path) -> tuple[list[dict], list[str]]:
    """Sidecars of the plan's completed cells, and the ids of cells not on disk.

    Each sidecar gets ``_dir``, its cell's folder. Every completed cell is
    checked: its sidecar exists, holds :data:`SIDECAR_KEYS` and status ``ok``,
    and its samples have the experiment's schema (:func:`check_schema`).

    Raises
    ------
    DataError
        Naming the first file that is missing, unreadable or wrong.
    """
    out_dir = Path(out_dir)
    record = plan(out_dir)
    experiment = record.get("experiment")
    cells, missing = [], []
    for entry in record["cells"]:
        d = out_dir / entry["cell_id"]
        if not d.exists():
            missing.append(entry["cell_id"])
            continue
        if not (d / SIDECAR).is_file():
            # The harness renames a cell into place only when complete, so this
            # folder was damaged or copied in part (an interrupted pull, say).
            raise DataError(f"{d}: a cell folder without its sidecar {SIDECAR}, so it is incomplete "
                            f"or damaged; {REMEASURE}")
        sidecar = read_json(d / SIDECAR)
        absent = [k for k in SIDECAR_KEYS if k not in sidecar]
        requested = sidecar.get("requested")
        if requested is not None and not (isinstance(requested, dict) and "config" in requested):
            absent.append("requested.config")
        if absent:
            raise DataError(f"{d / SIDECAR}: keys {absent} missing (expected {list(SIDECAR_KEYS)}); "
                            f"{REMEASURE}")
        if sidecar["status"] != "ok":
            raise DataError(f"{d / SIDECAR}: status {sidecar['status']!r}, expected 'ok'")
        if not (d / SAMPLES).is_file():
            raise DataError(f"{d / SAMPLES}: missing (the cell's sidecar exists without samples); "
                            f"{REMEASURE}")
        if experiment in SAMPLE_SCHEMAS:
            check_schema(d / SAMPLES, experiment)
        sidecar["_dir"] = str(d)
        cells.append(sidecar)
    return cells, missing


# ---------------------------------------------------------------------------
# Datasets for exploration

def _check_experiment(experiment: str) -> None:
    if experiment not in SAMPLE_SCHEMAS:
        raise ValueError(f"unknown experiment {experiment!r}; allowed: {', '.join(EXPERIMENTS)}")


def _resolve_profile(profile: str | None) -> str:
    if profile is None:
        profile = params.load().get("profile")
    if profile not in params.PROFILES:
        raise ValueError(f"profile = {profile!r}: expected one of {', '.join(params.PROFILES)}")
    return profile


def datasets(experiment: str, profile: str | None = None) -> list[Path]:
    """Every host's dataset folder of ``experiment`` for ``profile``, sorted by host id.

    Parameters
    ----------
    experiment : str
        One of :data:`EXPERIMENTS`.
    profile : str, optional
        ``smoke``, ``default`` or ``seed``; None uses ``params.yaml``'s profile.

    Returns
    -------
    list of Path
        ``data/raw/<experiment>/<host id>/<profile>/`` for each host whose
        folder holds a ``plan.json``; empty when nothing was measured.
    """
    _check_experiment(experiment)
    profile = _resolve_profile(profile)
    found = [p.parent for p in paths.raw_root(experiment).glob(f"*/{profile}/{PLAN_FILE}")]
    return sorted(found, key=lambda d: d.parent.name)


def _readers(experiment: str, profile: str) -> Callable[[Path], tuple[tuple, list[str]]]:
    """The experiment's loader, bound to its stage's discard parameters for ``profile``."""
    # Imported here: the experiment modules import this one.
    from rtstudy import e1, e2, e3, e4

    cfg = params.stage_config(experiment, profile)
    if experiment == e1.EXPERIMENT:
        def read(d):
            messages, cells, missing = e1.load(d, cfg["discard_head"], cfg["discard_tail"])
            return (messages, cells), missing
    elif experiment == e2.EXPERIMENT:
        def read(d):
            frames, runs, missing = e2.load(d, cfg["warmup_frames"], cfg["late_threshold_ms"])
            return (frames, runs), missing
    elif experiment == e3.EXPERIMENT:
        def read(d):
            runs, missing = e3.load_runs(d)
            return (runs,), missing
    else:
        def read(d):
            histograms, stats, missing = e4.load(d)
            return (histograms, stats), missing
    return read


def load(experiment: str, profile: str | None = None,
         hosts: str | Iterable[str] | None = None) -> dict[str, pd.DataFrame]:
    """Tidy DataFrames of ``experiment``, concatenated over hosts.

    Parameters
    ----------
    experiment : str
        One of :data:`EXPERIMENTS`.
    profile : str, optional
        ``smoke``, ``default`` or ``seed``; None uses ``params.yaml``'s profile.
    hosts : str or iterable of str, optional
        Host ids to include; None includes every host with a dataset.

    Returns
    -------
    dict of str to DataFrame
        ``e1_async_buffer``: ``messages``, ``cells`` (:func:`rtstudy.e1.load`);
        ``e2_rt_threads``: ``frames``, ``runs`` (:func:`rtstudy.e2.load`);
        ``e3_overhead``: ``runs`` (:func:`rtstudy.e3.load_runs`);
        ``e4_host``: ``histograms``, ``stats`` (:func:`rtstudy.e4.load`).
        Each has the configuration as columns and ``host_id`` and ``profile``
        columns. Warm-up and tail discards come from the stage's parameters
        in ``params.yaml``. Cells of the plan not yet measured are left out,
        with a warning.

    Raises
    ------
    ValueError
        An unknown experiment, profile or host.
    DataError
        No dataset exists, or a file in one is missing, corrupt or of the
        wrong schema (the message names the file).
    """
    _check_experiment(experiment)
    profile = _resolve_profile(profile)
    found = {d.parent.name: d for d in datasets(experiment, profile)}
    if not found:
        raise DataError(f"{paths.raw_root(experiment)}: no {experiment} dataset for profile "
                        f"{profile!r} (no <host id>/{profile}/{PLAN_FILE} below it); run `make study` "
                        "to measure it on this host, or `make pull` to fetch a shared dataset")
    if hosts is None:
        chosen = list(found)
    else:
        chosen = [hosts] if isinstance(hosts, str) else list(hosts)
        unknown = [h for h in chosen if h not in found]
        if unknown:
            raise ValueError(f"no {experiment} dataset for profile {profile!r} from host(s) "
                             f"{unknown}; available: {', '.join(found)}")
    read = _readers(experiment, profile)
    parts: dict[str, list[pd.DataFrame]] = {name: [] for name in TABLES[experiment]}
    for host_id in chosen:
        frames, missing = read(found[host_id])
        if missing:
            warnings.warn(f"{found[host_id]}: {len(missing)} cell(s) of the plan not measured yet "
                          "(run `make study` to complete the dataset)", stacklevel=2)
        for name, frame in zip(TABLES[experiment], frames):
            if len(frame):
                parts[name].append(frame.assign(host_id=host_id, profile=profile))
    return {name: pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
            for name, frames in parts.items()}
