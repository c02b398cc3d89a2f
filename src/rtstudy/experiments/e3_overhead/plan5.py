"""E3's plan on Holoscan 5.0 (:mod:`.app5`): the 4.x plan's schedulers as 5.0's executor lanes.

Each 4.x cell becomes the 5.0 cell with as many execution lanes (threads) as its scheduler
had threads for the two operators: Greedy → one lane (``executor1``); EventBased with
``w`` workers → ``min(w, 2)`` lanes, one partition per operator when two. Cells that map
to the same lanes are one 5.0 condition (EventBased ×1 is the one-lane executor again;
×2 and ×4 are both a thread per operator). Same apps, N, warm-up, repetitions, per-run
limit and timeouts as 4.x, so E3's analysis compares like with like.
"""
from __future__ import annotations

import random
from dataclasses import replace

from rtstudy.measure.harness import Cell, with_drift_check

MODULE = "rtstudy.experiments.e3_overhead.app5"
OPERATORS = 2  # each app has two operators: at most a lane each


def lanes(scheduler: str, workers: int | None) -> int:
    """Execution lanes of the 5.0 counterpart of a 4.x scheduler (with ``workers`` threads)."""
    return 1 if scheduler == "greedy" else min(workers, OPERATORS)


def cells(cells4: list[Cell], cfg: dict) -> list[Cell]:
    """The 5.0 cells made from the 4.x plan's cells ``cells4`` (module docstring).

    Parameters
    ----------
    cells4 : list of Cell
        E3's 4.x plan of the same configuration, before its drift check.
    cfg : dict
        E3's resolved parameters (``order_seed``, ``drift_check``).
    """
    out: dict[tuple[str, int], Cell] = {}
    for cell in cells4:
        k = cell.config
        n_lanes = lanes(k["scheduler"], k["workers"])
        label = f"{k['app']}-executor{n_lanes}"
        if (label, cell.repetition) in out:
            continue
        order = sorted(k["iterations"])
        random.Random(f"{cfg['order_seed']}/{label}/{cell.repetition}").shuffle(order)
        config = {"app": k["app"], "scheduler": "executor", "workers": n_lanes,
                  "iterations": order, "warmup_iterations": k["warmup_iterations"],
                  "max_duration_ms": k["max_duration_ms"], "sdk_api": 5}
        out[label, cell.repetition] = replace(cell, label=label, config=config, module=MODULE)
    return with_drift_check(list(out.values()), cfg)
