"""E1's plan on Holoscan 5.0 (:mod:`.app5`): the 4.x plan's cells, with the 5.0 app, unpinned.

Every 4.x condition has a 5.0 counterpart (:mod:`.app5`'s docstring): both buffers, both
policies, both work models, the same periods, runtimes, messages and timeouts, the same
labels, so E1's analysis compares both SDKs. Where ``periods_ms_sdk5`` is set (the default
profile: the shortest and longest period, a slope's two ends, to fit the budget), only those
varied periods run. One change: SCHED_DEADLINE threads are never pinned (``pinned`` false, no CPUs in the requests), since 5.0 fails a run whose DEADLINE
lane is pinned to one CPU (RUNTIME_LANE_STARTUP_FAILED) where 4.x, with
``sched_rt_runtime_us = -1``, accepted it.
"""
from __future__ import annotations

from dataclasses import replace

from rtstudy.measure.harness import Cell, with_drift_check

MODULE = "rtstudy.experiments.e1_async_buffer.app5"


def cells(cells4: list[Cell], cfg: dict) -> list[Cell]:
    """The 5.0 cells made from ``cells4``, E1's 4.x plan before its drift check (module
    docstring), with the drift check ``cfg`` (E1's resolved parameters) asks for."""
    periods = set(cfg.get("periods_ms_sdk5") or cfg["periods_ms"])
    return with_drift_check([
        replace(cell, module=MODULE, realtime=tuple(replace(r, cpus=()) for r in cell.realtime),
                config={**cell.config, "pinned": False, "sdk_api": 5})
        for cell in cells4 if varied_ms(cell) in periods], cfg)


def varied_ms(cell: Cell) -> int:
    """The period (ms) a cell's scenario varies: tx2's in S1, tx1's in S2."""
    k = cell.config
    return k["tx2_period_ms"] if k["scenario"] == "S1" else k["tx1_period_ms"]
