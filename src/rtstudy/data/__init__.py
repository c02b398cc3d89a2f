"""The datasets of every registered experiment: find them, load them, one way for all.

Exploring the data takes a few calls::

    from rtstudy import data
    data.EXPERIMENTS                  # the registered experiments' names
    data.hosts()                      # every host with data, with a readable label
    data.datasets(name)               # every host's folder of one, for the current profile
    tables = data.load(name)          # {table name: DataFrame}, as data.tables(name) lists
    data.schema(name)                 # each table's columns: kind, unit, meaning

Datasets are this checkout's (``data/raw/``) and colleagues' brought in with
``rtstudy data import`` (``data/imported/<name>/``, :mod:`rtstudy.data.sharing`); every
function takes ``root=``, a data folder anywhere, so the API works outside a checkout too.

This package is the data room: :mod:`~rtstudy.data.io` reads what the harness wrote (a
sweep's plan, its cells, their files, checked), :mod:`~rtstudy.data.sessions` keeps a host's
measuring sessions side by side, :mod:`~rtstudy.data.sharing` brings a colleague's datasets in,
:mod:`~rtstudy.data.schemas` declares every table's columns.

:func:`load` returns tidy frames (one row per observation, the configuration
as columns, ``host_id`` and ``profile`` columns) built by the experiment's own
loader (``rtstudy/experiments/<name>/analysis.py``), with the warm-up and tail
discards of its ``params.yaml`` group. Every file is checked first
(:mod:`rtstudy.data.io`): a damaged or half-copied dataset is never silently
analysed. ``data/README.md`` documents the layout and the schemas.
"""
from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Iterable

import pandas as pd

from rtstudy import params, paths, registry
from rtstudy.data.io import DataError, Dataset, dataset_folders, read_host, session_folders
from rtstudy.data.schemas import (KINDS, Column, Table, schema, schema_markdown, schema_problems,
                                  with_schema_docs)
from rtstudy.machine import kernelfs, shield
from rtstudy.paths import PLAN_FILE
from rtstudy.sdks import sdk

__all__ = ["Column", "DataError", "Dataset", "EXPERIMENTS", "KINDS", "Table", "dataset_dir",
           "datasets", "has_dataset", "hosts", "label", "load", "load_dataset", "schema",
           "schema_markdown", "schema_problems", "sources", "tables", "verify", "with_schema_docs"]

EXPERIMENTS = registry.REGISTRY


def _resolve_profile(profile: str | None) -> str:
    if profile is None:
        profile = params.load().get("profile")
    if profile not in params.PROFILES:
        raise ValueError(f"profile = {profile!r}: expected one of {', '.join(params.PROFILES)}")
    return profile


def tables(experiment: str) -> tuple[str, ...]:
    """The names of the tables :func:`load` returns for ``experiment``."""
    return registry.get(experiment).analysis.TABLES


THIS_CHECKOUT = "this checkout"


def sources(root: Path | None = None) -> dict[str, Path]:
    """Where datasets live under a data folder: source name → folder of experiment folders.

    Parameters
    ----------
    root : Path, optional
        A data folder (a checkout's ``data/``, or a copy of one anywhere); None is this
        checkout's.

    Returns
    -------
    dict of str to Path
        ``"this checkout"`` → ``root/raw`` (what this checkout measured or pulled), then
        ``"imported: <name>"`` → ``root/imported/<name>`` for each imported dataset
        (``rtstudy data import``), in name order. Each holds
        ``<experiment>/<host id>/<profile>/``.
    """
    root = Path(root) if root is not None else paths.data_dir()
    found = {THIS_CHECKOUT: root / "raw"}
    imported = root / paths.imported_dir().name
    if imported.is_dir():
        # A dot folder is an import still being staged (rtstudy.data.sharing), not a dataset.
        for folder in sorted(p for p in imported.iterdir() if p.is_dir() and p.name[0] != "."):
            found[f"imported: {folder.name}"] = folder
    return found


def _located(experiment: str, profile: str, root: Path | None) -> dict[str, list[Path]]:
    """Host id → every dataset folder of ``experiment`` and ``profile`` it has, over sources."""
    found: dict[str, list[Path]] = {}
    for folder in sources(root).values():
        for directory in dataset_folders(folder / experiment, profile):
            found.setdefault(directory.parent.name, []).append(directory)
    return found


def _one(host_id: str, folders: list[Path]) -> Path:
    if len(folders) > 1:
        raise DataError(f"host {host_id} has a dataset in {len(folders)} places "
                        f"({', '.join(map(str, folders))}); one host's cells must live in one: "
                        "remove the copy you do not want (an imported one with `dvc remove "
                        "data/imported/<name>.dvc`)")
    return folders[0]


def datasets(experiment: str, profile: str | None = None, root: Path | None = None) -> list[Path]:
    """Every host's dataset folder of ``experiment`` for ``profile``, sorted by host id.

    Parameters
    ----------
    experiment : str
        A registered experiment (:data:`EXPERIMENTS`).
    profile : str, optional
        ``smoke``, ``default`` or ``seed``; None uses ``params.yaml``'s profile.
    root : Path, optional
        A data folder (:func:`sources`); None is this checkout's ``data/``.

    Returns
    -------
    list of Path
        ``<source>/<experiment>/<host id>/<profile>/`` for each host whose folder
        holds a ``plan.json``, this checkout's and imported ones alike; empty when
        nothing was measured.

    Raises
    ------
    DataError
        A host's dataset is in two sources (say, measured here and imported too).
    """
    registry.get(experiment)
    profile = _resolve_profile(profile)
    return [_one(h, folders) for h, folders in sorted(_located(experiment, profile, root).items())]


def dataset_base(experiment: str, host_id: str, profile: str | None = None,
                 root: Path | None = None) -> Path | None:
    """The folder of ``host_id``'s dataset of ``experiment`` for ``profile`` (its closed
    sessions under ``sessions/``), or None."""
    profile = _resolve_profile(profile)
    folders = _located(experiment, profile, root).get(host_id)
    return _one(host_id, folders) if folders else None


def dataset_dir(experiment: str, host_id: str, profile: str | None = None,
                root: Path | None = None) -> Path | None:
    """The folder of ``host_id``'s current session of ``experiment`` for ``profile``, or None:
    the dataset folder, or, where its current session was closed and nothing measured since,
    its latest closed session (``sessions/<newest>/``)."""
    base = dataset_base(experiment, host_id, profile, root)
    return session_folders(base)[-1] if base is not None else None


def has_dataset(experiment: str, host_id: str, profile: str, root: Path | None = None) -> bool:
    """Whether ``host_id`` has a dataset of ``experiment`` for ``profile`` (its ``plan.json``)."""
    return dataset_dir(experiment, host_id, profile, root) is not None


def load_dataset(experiment: str, host_id: str, profile: str | None = None,
                 root: Path | None = None, cfg: dict | None = None) -> Dataset:
    """One host's dataset of ``experiment``, as its loader returns it (tables, missing, extra).

    ``cfg`` is the experiment's parameter group as the command read it (:func:`rtstudy.params.read`);
    None reads ``params.yaml``.

    Raises
    ------
    DataError
        No such dataset, or files in it are missing, corrupt or of the wrong
        schema (every one is named).
    """
    exp = registry.get(experiment)
    profile = _resolve_profile(profile)
    directory = dataset_dir(experiment, host_id, profile, root)
    if directory is None:
        raise DataError(f"no {experiment} data from host {host_id} for profile {profile!r} "
                        f"under {root or paths.data_dir()}; run `make study` there (or "
                        "`make pull`, or `rtstudy data import`)")
    return exp.analysis.load(directory, params.stage_config(experiment, profile)
                             if cfg is None else cfg)


def verify(profile: str | None = None, root: Path | None = None
           ) -> tuple[int, list[str], list[Path]]:
    """Check every dataset of ``profile``, of every host and session, this checkout's and
    imported: its seal (every file a reader reads, no cell missing or added:
    :func:`rtstudy.measure.integrity.seal_problems`), that it is filed under the host that
    measured it (:func:`rtstudy.data.io.identity_problems`), and each cell's sidecar, samples'
    schema and checksums.

    Returns
    -------
    tuple of (int, list of str, list of Path)
        How many cells were checked; one message per damaged cell, file or folder (empty when
        every dataset is what was measured), each naming the file and the fix; and the dataset
        folders nothing vouches for (no seal, and no DVC record of their files).
    """
    from rtstudy.data.io import completed_cells, identity_problems
    from rtstudy.measure import integrity

    profile = _resolve_profile(profile)
    project = Path(root).resolve().parent if root is not None else None
    checked, found, unvouched = 0, [], []
    for experiment in EXPERIMENTS:
        schema = registry.get(experiment).analysis.SAMPLES
        for located in _located(experiment, profile, root).values():
            for directory in located:
                for folder in session_folders(directory):
                    sealed, vouched = integrity.seal_problems(folder, project)
                    found += sealed
                    if not vouched:
                        unvouched.append(folder)
                    found += identity_problems(folder)
                    try:
                        cells, _ = completed_cells(folder, schema)
                        checked += len(cells)
                    except DataError as exc:
                        found.append(str(exc))
    return checked, _once_per_file(found), unvouched


def _once_per_file(messages: list[str]) -> list[str]:
    """``messages`` without those about a file an earlier one names (the seal and a cell's own
    checksums may both see one edit)."""
    named, out = set(), []
    for message in messages:
        lines = message.splitlines()
        files = {line.strip().lstrip("- ").split(": ")[0] for line in lines}
        if len(lines) == 1 and files <= named:
            continue
        named |= files
        out.append(message)
    return out


def _state(fp: dict) -> str:
    """``untuned``, ``shielded CPU 1 (affinity)`` or ``isolated at boot CPU 1``; with
    ``, RT throttling on`` (tuned) or ``, RT throttling off`` (untuned) where
    ``sched_rt_runtime_us`` is not what that state has by default (``rtstudy host study
    --rt-throttling keep``, or a sysctl set by hand)."""
    held = shield.of(fp)
    isolated = (fp.get("isolation") or {}).get("isolated") or []
    lifted = (fp.get("sched") or {}).get("rt_runtime_us") == -1
    if held:
        state = f"shielded CPU {kernelfs.format_cpu_list(held['cpus'])} ({shield.method_of(held)})"
    elif isolated:
        state = f"isolated at boot CPU {kernelfs.format_cpu_list(isolated)}"
    else:
        return "untuned" + (", RT throttling off" if lifted else "")
    return state + ("" if lifted else ", RT throttling on")


def _cpu_model(fp: dict) -> str:
    """The CPU model without trademarks and clock: ``Intel Xeon Platinum 8375C``."""
    model = re.sub(r"\((R|TM|tm)\)|\bCPU\b|@.*$|\s\d+-Core Processor", "",
                   (fp.get("cpu") or {}).get("model", "unknown"))
    return re.sub(r"\s+", " ", model).strip()


def hosts(profile: str | None = None, root: Path | None = None) -> pd.DataFrame:
    """Every host with data for ``profile`` under ``root`` (both as :func:`datasets` takes
    them), described so a reader can tell them apart.

    Returns
    -------
    DataFrame
        One row per host id, sorted by label: ``host_id``; ``label``, unique and readable
        (``vm · AMD EPYC · untuned · Holoscan 4.6.0 · kernel 6.18.0``, with the source when
        imported, and the host id only where that still leaves two alike); ``hostname``;
        ``state`` (:func:`_state`); ``cpu_model``; ``kernel`` (release); ``sdk`` (Holoscan
        version); ``source`` (``this checkout`` or ``imported: <name>``); ``experiments``
        (comma-separated). A host whose datasets record no fingerprint has ``unknown`` in its
        description.
    """
    profile = _resolve_profile(profile)
    names = {folder: name for name, folder in sources(root).items()}
    rows: dict[str, dict] = {}
    for experiment in EXPERIMENTS:
        for directory in datasets(experiment, profile, root):
            host_id = directory.parent.name
            row = rows.get(host_id)
            if row is None:
                fp = read_host(dataset_dir(experiment, host_id, profile, root)) or {}
                row = rows[host_id] = {
                    "host_id": host_id, "hostname": fp.get("hostname", "unknown"),
                    "state": _state(fp) if fp else "unknown",
                    "cpu_model": _cpu_model(fp) if fp else "unknown",
                    "kernel": (fp.get("kernel") or {}).get("release", "unknown"),
                    "sdk": sdk.version_of(fp) if fp else "unknown",
                    "source": names[directory.parents[2]], "experiments": []}
            row["experiments"].append(experiment)
    for row in rows.values():
        row["experiments"] = ", ".join(row["experiments"])
        row["label"] = " · ".join([row["hostname"], row["cpu_model"], row["state"],
                                   f"Holoscan {row['sdk']}", f"kernel {row['kernel']}"]
                                  + ([row["source"]] if row["source"] != THIS_CHECKOUT else []))
    labels = [row["label"] for row in rows.values()]
    for row in rows.values():
        if labels.count(row["label"]) > 1:  # same description, measured twice: the id tells
            row["label"] += f" · {row['host_id']}"
    columns = ["host_id", "label", "hostname", "state", "cpu_model", "kernel", "sdk", "source",
               "experiments"]
    return pd.DataFrame(list(rows.values()), columns=columns).sort_values(
        "label", ignore_index=True)


def label(host_id: str, profile: str | None = None, root: Path | None = None) -> str:
    """``host_id``'s readable label (:func:`hosts`); ``ValueError`` if it has no data."""
    table = hosts(profile, root)
    match = table.loc[table["host_id"] == host_id, "label"]
    if match.empty:
        raise ValueError(f"no data from host {host_id} for profile {_resolve_profile(profile)!r};"
                         f" hosts with data: {', '.join(table['host_id']) or 'none'}")
    return str(match.iloc[0])


def _chosen_hosts(experiment: str, profile: str, hosts: str | Iterable[str] | None,
            root: Path | None) -> list[str]:
    """The host ids :func:`load` reads: ``hosts``, each checked to have a dataset, or every
    host that has one (None)."""
    found = [d.parent.name for d in datasets(experiment, profile, root)]
    if not found:
        raise DataError(f"{sources(root)[THIS_CHECKOUT] / experiment}: no {experiment} dataset "
                        f"for profile {profile!r} (no <host id>/{profile}/{PLAN_FILE} below it, nor "
                        "in an imported dataset); run `make study` to measure it on this host, "
                        "`make pull` to fetch a shared dataset or `rtstudy data import` to add a "
                        "colleague's")
    if hosts is None:
        return found
    chosen = [hosts] if isinstance(hosts, str) else list(hosts)
    unknown = [h for h in chosen if h not in found]
    if unknown:
        raise ValueError(f"no {experiment} dataset for profile {profile!r} from host(s) "
                         f"{unknown}; available: {', '.join(found)}")
    return chosen


def load(experiment: str, profile: str | None = None,
         hosts: str | Iterable[str] | None = None, root: Path | None = None
         ) -> dict[str, pd.DataFrame]:
    """Tidy DataFrames of ``experiment``, concatenated over hosts.

    Parameters
    ----------
    experiment, profile, root
        As :func:`datasets` takes them.
    hosts : str or iterable of str, optional
        Host ids to include; None includes every host with a dataset.

    Returns
    -------
    dict of str to DataFrame
        The experiment's tables (:func:`tables`), each with the columns of
        :func:`schema` (``host_id`` and ``profile`` among them; a table without
        rows too). Cells of the plan not yet measured are left out, with a warning.

    Raises
    ------
    ValueError
        An unknown experiment, profile or host.
    DataError
        No dataset exists, or a file in one is missing, corrupt or of the
        wrong schema (the message names every such file).
    """
    names = tables(experiment)
    profile = _resolve_profile(profile)
    parts: dict[str, list[pd.DataFrame]] = {name: [] for name in names}
    cfg = params.stage_config(experiment, profile)  # read once, for every host's dataset
    for host_id in _chosen_hosts(experiment, profile, hosts, root):
        ds = load_dataset(experiment, host_id, profile, root, cfg)
        if ds.missing:
            warnings.warn(f"{ds.directory}: {len(ds.missing)} cell(s) of the plan not measured yet "
                          "(run `make study` to complete the dataset)", stacklevel=2)
        for name in names:
            frame = ds.tables[name]
            if len(frame):
                parts[name].append(frame.assign(host_id=host_id, profile=profile))
    declared = schema(experiment)
    return {name: pd.concat(frames, ignore_index=True) if frames
            else pd.DataFrame(columns=list(declared[name].columns)) for name, frames in parts.items()}
