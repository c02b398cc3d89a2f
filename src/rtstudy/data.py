"""The datasets of every registered experiment: find them, load them, one way for all.

Exploring the data takes two calls::

    from rtstudy import data
    data.EXPERIMENTS                  # the registered experiments' names
    data.datasets(name)               # every host's folder of one, for the current profile
    tables = data.load(name)          # {table name: DataFrame}, as data.tables(name) lists

:func:`load` returns tidy frames (one row per observation, the configuration
as columns, ``host_id`` and ``profile`` columns) built by the experiment's own
loader (``rtstudy/experiments/<name>/analysis.py``), with the warm-up and tail
discards of its ``params.yaml`` group. Every file is checked first
(:mod:`rtstudy.io`): a damaged or half-copied dataset is never silently
analysed. ``data/README.md`` documents the layout and the schemas.
"""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import Iterable

import pandas as pd

from rtstudy import params, paths, registry
from rtstudy.paths import PLAN_FILE
from rtstudy.io import DataError, Dataset

__all__ = ["DataError", "Dataset", "EXPERIMENTS", "datasets", "has_dataset", "load", "load_dataset",
           "tables"]

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


def datasets(experiment: str, profile: str | None = None) -> list[Path]:
    """Every host's dataset folder of ``experiment`` for ``profile``, sorted by host id.

    Parameters
    ----------
    experiment : str
        A registered experiment (:data:`EXPERIMENTS`).
    profile : str, optional
        ``smoke``, ``default`` or ``seed``; None uses ``params.yaml``'s profile.

    Returns
    -------
    list of Path
        ``data/raw/<experiment>/<host id>/<profile>/`` for each host whose
        folder holds a ``plan.json``; empty when nothing was measured.
    """
    registry.get(experiment)
    profile = _resolve_profile(profile)
    hosts = sorted(p.parent.parent.name for p in
                   paths.raw_root(experiment).glob(f"*/{profile}/{PLAN_FILE}"))
    return [paths.dataset_dir(experiment, h, profile) for h in hosts]


def has_dataset(experiment: str, host_id: str, profile: str) -> bool:
    """Whether ``host_id`` has a dataset of ``experiment`` for ``profile`` (its ``plan.json``)."""
    return (paths.dataset_dir(experiment, host_id, profile) / PLAN_FILE).is_file()


def load_dataset(experiment: str, host_id: str, profile: str | None = None) -> Dataset:
    """One host's dataset of ``experiment``, as its loader returns it (tables, missing, extra).

    Raises
    ------
    DataError
        No such dataset, or files in it are missing, corrupt or of the wrong
        schema (every one is named).
    """
    exp = registry.get(experiment)
    profile = _resolve_profile(profile)
    directory = paths.dataset_dir(experiment, host_id, profile)
    if not has_dataset(experiment, host_id, profile):
        raise DataError(f"{directory}: no {experiment} data from host {host_id} for profile "
                        f"{profile!r}; run `make study` there (or `make pull`)")
    return exp.analysis.load(directory, params.stage_config(experiment, profile))


def load(experiment: str, profile: str | None = None,
         hosts: str | Iterable[str] | None = None) -> dict[str, pd.DataFrame]:
    """Tidy DataFrames of ``experiment``, concatenated over hosts.

    Parameters
    ----------
    experiment : str
        A registered experiment (:data:`EXPERIMENTS`).
    profile : str, optional
        ``smoke``, ``default`` or ``seed``; None uses ``params.yaml``'s profile.
    hosts : str or iterable of str, optional
        Host ids to include; None includes every host with a dataset.

    Returns
    -------
    dict of str to DataFrame
        The experiment's tables (:func:`tables`; each experiment's ``load`` in
        its ``analysis.py`` documents their columns), each with ``host_id`` and
        ``profile`` columns. Cells of the plan not yet measured are left out,
        with a warning.

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
    found = [d.parent.name for d in datasets(experiment, profile)]
    if not found:
        raise DataError(f"{paths.raw_root(experiment)}: no {experiment} dataset for profile "
                        f"{profile!r} (no <host id>/{profile}/{PLAN_FILE} below it); run `make study` "
                        "to measure it on this host, or `make pull` to fetch a shared dataset")
    if hosts is None:
        chosen = found
    else:
        chosen = [hosts] if isinstance(hosts, str) else list(hosts)
        unknown = [h for h in chosen if h not in found]
        if unknown:
            raise ValueError(f"no {experiment} dataset for profile {profile!r} from host(s) "
                             f"{unknown}; available: {', '.join(found)}")
    parts: dict[str, list[pd.DataFrame]] = {name: [] for name in names}
    for host_id in chosen:
        ds = load_dataset(experiment, host_id, profile)
        if ds.missing:
            warnings.warn(f"{ds.directory}: {len(ds.missing)} cell(s) of the plan not measured yet "
                          "(run `make study` to complete the dataset)", stacklevel=2)
        for name in names:
            frame = ds.tables[name]
            if len(frame):
                parts[name].append(frame.assign(host_id=host_id, profile=profile))
    return {name: pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
            for name, frames in parts.items()}
