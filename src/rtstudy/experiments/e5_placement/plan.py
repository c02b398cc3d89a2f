"""E5's sweep plan: each provocation under each of 5.0's failure policies; 4.x beside it.

The measuring side of E5 (a dependency of its DVC stage, with ``app.py``, ``app5.py`` and
``provoke.py``). A cell is one short process: it provokes (or not), asks Holoscan for the
placement, runs for ``run_ms`` if Holoscan lets it, and records what Holoscan said and did
and what the kernel applied. Nothing on the host is changed: the privilege is dropped inside
the cell's own process, the reservations are refused by the kernel's admission test, the
CPU does not exist; so there is nothing to restore.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import TypedDict

from rtstudy.experiments.e5_placement import plan5
from rtstudy.experiments.e5_placement.provoke import NOT_IN_4X
from rtstudy.machine import placement
from rtstudy.measure.harness import Cell, with_drift_check
from rtstudy.policies import SCHED_FIFO
from rtstudy.sdks import sdk

EXPERIMENT = "e5_placement"
APP = "e5_placement"  # the name cells record (part of every cell id): never change it
MODULE = "rtstudy.experiments.e5_placement.app"
SDK_APIS = (4, 5)  # Holoscan 4.x (app) and 5.x (app5, planned by plan5)
# The kernel's default admission for SCHED_DEADLINE: sched_rt_runtime_us / sched_rt_period_us
# of every CPU. The cell reads the host's own and records whether its reservations exceed it.
DEFAULT_ADMITTED = 0.95


def realtime(cfg: dict) -> tuple[str, ...]:
    """The control asks for SCHED_FIFO, which the preflight must find allowed."""
    return (SCHED_FIFO,)


def host_problems(cfg: dict, fp: dict) -> list[str]:
    """E5 runs on any host that runs Holoscan with real-time privileges (the preflight)."""
    return []


def after_sweep(directory: Path) -> None:
    """Nothing to record beside E5's cells."""


class BaseConfig(TypedDict):
    """What every E5 cell of a host shares (:func:`base_config`)."""

    cpu: int  # the real-time CPU
    absent_cpu: int  # a CPU the host does not have
    priority: int
    period_ns: int  # SCHED_DEADLINE's
    runtime_ns: int
    threads: int  # enough DEADLINE threads to exceed the default admission
    run_ms: int


def base_config(cfg: dict, fp: dict, configs: dict) -> BaseConfig:
    """What every cell of this host shares: the real-time CPU, a CPU it does not have, the
    priority, and enough SCHED_DEADLINE threads to exceed the default admission."""
    where = placement.resolve(configs.get("cpus"), fp)
    online = list(fp["cpu"]["online"])
    period_ns = cfg["deadline_period_ms"] * 1_000_000
    utilization = cfg["deadline_utilization"]
    return {"cpu": where.realtime[0], "absent_cpu": max(online) + 1,
            "priority": cfg["priority"], "period_ns": period_ns,
            "runtime_ns": int(period_ns * utilization),
            "threads": int(len(online) * DEFAULT_ADMITTED / utilization) + 1,
            "run_ms": cfg["run_ms"]}


def conditions(cfg: dict, api: int) -> list[tuple[str, str, str]]:
    """(provocation, probe failure policy, IRQ isolation) of each condition on SDK ``api``."""
    if api < 5:
        return [(p, NOT_IN_4X, NOT_IN_4X) for p in cfg["provocations"] if p != "irq_isolation"]
    out = []
    for provocation in cfg["provocations"]:
        irq = cfg["irq_isolation"] if provocation == "irq_isolation" else ["not_requested"]
        out += [(provocation, policy, i) for policy in cfg["probe_failure_policies"] for i in irq]
    return out


def plan(cfg: dict, fp: dict, configs: dict) -> list[Cell]:
    """One cell per condition (:func:`conditions`) and repetition, in a seeded order.

    Parameters
    ----------
    cfg : dict
        E5's resolved parameters.
    fp : dict
        The host fingerprint (its CPUs and its SDK).
    configs : dict
        Every group's resolved parameters (``cpus``: where the real-time CPU is).
    """
    api = sdk.api_of(fp)
    base = base_config(cfg, fp, configs)
    timeout = cfg["run_ms"] / 1000 + cfg["timeout_margin_s"]
    cells = []
    for rep in range(cfg["repetitions"]):
        for provocation, policy, irq in conditions(cfg, api):
            label = provocation if api < 5 else f"{provocation}-{policy}-{irq}"
            config = {"provocation": provocation, "probe_failure_policy": policy,
                      "irq_isolation": irq, **base}
            cells.append(Cell(EXPERIMENT, APP, label, config, rep, timeout, module=MODULE))
    random.Random(cfg["order_seed"]).shuffle(cells)
    if api == 5:
        cells = plan5.cells(cells)
    return with_drift_check(cells, cfg)
