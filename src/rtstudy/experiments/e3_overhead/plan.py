"""E3's sweep plan: which apps and schedulers run, at which N.

The measuring side of E3 (a dependency of its DVC stage, with ``app.py``).
"""
from __future__ import annotations

import random
from pathlib import Path

from rtstudy.experiments.e3_overhead import plan5
from rtstudy.measure.harness import Cell, with_drift_check
from rtstudy.sdks import sdk

EXPERIMENT = "e3_overhead"
APP = "e3_overhead"  # the name cells record (part of every cell id): never change it
MODULE = "rtstudy.experiments.e3_overhead.app"
SDK_APIS = (4, 5)  # Holoscan 4.x (app) and 5.x (app5, planned by plan5)


def realtime(cfg: dict) -> tuple[str, ...]:
    """E3 asks for no real-time policy."""
    return ()


def host_problems(cfg: dict, fp: dict) -> list[str]:
    """E3 runs on any host that runs Holoscan (the preflight checks that)."""
    return []


def after_sweep(directory: Path) -> None:
    """Nothing to record beside E3's cells."""


def schedulers(cfg: dict) -> list[tuple[str, int | None]]:
    """(scheduler, workers) pairs of the sweep; Greedy is single-threaded (workers None)."""
    pairs: list[tuple[str, int | None]] = []
    for name in cfg["schedulers"]:
        if name == "greedy":
            pairs.append(("greedy", None))
        else:
            pairs += [(name, w) for w in cfg["event_based_workers"]]
    return pairs


def plan(cfg: dict, fp: dict, configs: dict) -> list[Cell]:
    """One cell per app × scheduler × repetition; each times every N, in a seeded order.

    Parameters
    ----------
    cfg : dict
        E3's resolved parameters.
    fp : dict
        The host fingerprint (only its SDK: Holoscan 5.0's cells come from :mod:`.plan5`).
    configs : dict
        Every group's resolved parameters (E3 reads none of the others).
    """
    cells = []
    per_run_s = cfg["max_duration_ms"] / 1000
    for app in cfg["apps"]:
        for scheduler, workers in schedulers(cfg):
            label = f"{app}-{'greedy' if workers is None else f'ebs{workers}'}"
            for rep in range(cfg["repetitions"]):
                order = list(cfg["iterations"])
                random.Random(f"{cfg['order_seed']}/{label}/{rep}").shuffle(order)
                config = {
                    "app": app, "scheduler": scheduler, "workers": workers,
                    "iterations": order,
                    "warmup_iterations": cfg["warmup_iterations"],
                    "stop_on_deadlock_timeout_ms": cfg["stop_on_deadlock_timeout_ms"],
                    "max_duration_ms": cfg["max_duration_ms"],
                }
                timeout = (len(order) + 1) * per_run_s + cfg["timeout_margin_s"]
                cells.append(Cell(EXPERIMENT, APP, label, config, rep, timeout, module=MODULE))
    if sdk.api_of(fp) == 5:
        return plan5.cells(cells, cfg)  # what of it Holoscan 5.0 can express
    return with_drift_check(cells, cfg)
