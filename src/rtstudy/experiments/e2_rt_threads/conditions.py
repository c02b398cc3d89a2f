"""E2's conditions as the analysis sees them: the factors a run's configuration sets, the
baselines it is compared with, and the two slices of the design the report reads (the policy
grid and the headline point)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import pandas as pd

from rtstudy.inference import criteria

# The factor columns of every per-run and per-frame table, in the order tables show them.
FACTORS = ["policy", "topology", "dispatcher", "load_placement", "load_factor", "load_work_model",
           "switch_interval_ms", "wake_mode"]
# Python's GIL switch interval (ms) where a run set none (plan.DEFAULT_SWITCH_INTERVAL_MS).
SWITCH_INTERVAL_MS = 5.0
# How the target's thread waits between frames (Holoscan 5.0's ThreadPlacement wake modes): the
# one list params.yaml's `wake_modes` is checked against. Adding one touches this list, its
# mapping in measuring/app5.py (WAKE_MODES) and its words (analysis/ladder.py's CHANGES).
WAKE_MODES = ("sleep", "busy_poll")
# Where a run chose none: sleeping (Holoscan 4.x always; 5.0's default SLEEPING_WAITSET).
WAKE_DEFAULT = "sleep"
# 5.0's BUSY_POLL spins: a fix at the headline point, whose row H5c judges (verdicts.h5c_parts).
BUSY_POLL = "busy_poll"
# A traced condition's label: its untraced condition's, then this.
TRACE_SUFFIX = "-trace"
# The seeds' plain layout: Holoscan's dispatcher left normal, the loads as operators in the app
# (every other dispatcher and load placement is a change against it).
PLAIN = {"dispatcher": "other", "load_placement": "operators"}


@dataclass(frozen=True)
class Fix:
    """A change for late frames, measured one factor away from the headline point."""

    name: str
    factor: str  # the cell configuration's key, and the runs table's column
    level: str | None  # its value at the fix; None: params.yaml's shorter switch interval
    rotates: bool = True  # planned through params.yaml's `fixes`, some each session (rotation)


# Every fix, in the order the report's table lists them: the one list the parameters, the plan,
# the rotation and the ladder read.
FIX_LIST = (
    Fix("operators_pinned", "load_placement", "operators_pinned"),
    Fix("dispatcher_pinned", "dispatcher", "fifo_pinned"),
    Fix("switch_interval", "switch_interval_ms", None),
    # Holoscan 5.0's busy polling: a wake mode the plan measures at the headline point on 5.0,
    # not one of params.yaml's rotating fixes; H5c judges its row (verdicts.h5c_parts).
    Fix("busy_poll", "wake_mode", "busy_poll", rotates=False),
    Fix("fragment", "load_placement", "fragment"),
)
BASELINE = "normal_dedicated"     # H2's baseline: only the policy differs
SEED_BASELINE = "normal"          # the seed's: target and loads share one pool
# A condition whose mean frame period (over its runs) is more than this fraction off the
# nominal one lost frames: its target could not keep the rate, so its std describes only the
# frames that came, and a std comparison with it is void. The reference data split cleanly:
# every condition but one within 0.3 % of the nominal period (that one 2.2 %), the starved
# ones 17 % to 142 % off (seed_python's normal mode: 40.3 ms of 16.7). A criterion
# (rtstudy.inference.criteria), with when it was set.
STARVED_OFFSET = criteria.value("h2_starved_offset")


class FactorLevels(TypedDict):
    """A cell's factor levels (:func:`factor_levels`): :data:`FACTORS` and its loads."""

    policy: str
    topology: str
    dispatcher: str
    load_placement: str
    load_factor: float
    loads: int
    load_work_model: str
    switch_interval_ms: float
    wake_mode: str


def factor_levels(config: dict) -> FactorLevels:
    """A cell's factor levels (and its number of loads); data measured before the factors
    existed reads as their defaults. The load factor is a float whatever params.yaml wrote,
    so every table's column has one type."""
    policy = config["policy"]
    return {"policy": policy,
            "topology": config.get("topology", "shared" if policy == "normal" else "dedicated"),
            "dispatcher": config.get("dispatcher", "other"),
            "load_placement": config.get("load_placement", "operators"),
            "load_factor": float(config["load_factor"]), "loads": config["loads"],
            "load_work_model": config["load_work_model"],
            "switch_interval_ms": float(config.get("switch_interval_ms", SWITCH_INTERVAL_MS)),
            "wake_mode": config.get("wake_mode", WAKE_DEFAULT)}


def is_plain(x):
    """Whether a configuration (a dict) is in the plain layout (:data:`PLAIN`); for a table,
    the mask of its rows that are."""
    if isinstance(x, pd.DataFrame):
        return ((x["dispatcher"] == PLAIN["dispatcher"])
                & (x["load_placement"] == PLAIN["load_placement"]))
    return all(x.get(k) == v for k, v in PLAIN.items())


def one_off_plain(effect: dict) -> bool:
    """Whether an effect (a :func:`analysis.contrasts.effects` row) varies one factor of :data:`PLAIN`
    with the other held at its plain level: the dispatcher with load operators, or the load
    placement with Holoscan's own dispatcher."""
    factor = effect["factor"]
    return factor in PLAIN and all(effect[k] == v for k, v in PLAIN.items() if k != factor)


def grid(runs: pd.DataFrame) -> pd.DataFrame:
    """The policy grid's runs: load operators, Holoscan's own dispatcher, the study's topologies,
    Python's own GIL switch interval, a sleeping target thread."""
    if runs.empty:
        return runs
    return runs[is_plain(runs) & runs["topology"].isin(["dedicated", "shared"])
                & (runs["switch_interval_ms"] == SWITCH_INTERVAL_MS)
                & (runs["wake_mode"] == WAKE_DEFAULT)]


def headline_point(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs of the dedicated topology at the highest load factor with native loads (and
    Python's own GIL switch interval and a sleeping target thread: a shorter interval and 5.0's
    busy polling are fixes, :mod:`analysis.ladder`)."""
    if runs.empty:
        return runs
    g = runs[(runs["topology"] == "dedicated") & (runs["load_work_model"] == "native")
             & (runs["switch_interval_ms"] == SWITCH_INTERVAL_MS)
             & (runs["wake_mode"] == WAKE_DEFAULT)]
    return g[g["load_factor"] == g["load_factor"].max()] if len(g) else g


def starved(runs: pd.DataFrame) -> dict[str, float]:
    """The conditions among ``runs`` that starved (:data:`STARVED_OFFSET`): label → mean period, ms.

    ``runs`` holds one row per run with ``label``, ``period_mean_ms`` and ``nominal_ms``.
    """
    if runs.empty:
        return {}
    mean = runs.groupby("label", sort=False)[["period_mean_ms", "nominal_ms"]].mean()
    off = (mean["period_mean_ms"] / mean["nominal_ms"] - 1).abs() > STARVED_OFFSET
    return {str(label): float(m) for label, m in mean.loc[off, "period_mean_ms"].items()}
