"""E5's plan on Holoscan 5.0 (:mod:`.app5`): the same cells, run by the 5.0 app.

Only 5.0 has the failure policies and IRQ isolation E5 provokes; :mod:`.plan` lists them for
5.0 and leaves them out for 4.x, so here each cell only changes its app.
"""
from __future__ import annotations

from dataclasses import replace

from rtstudy.measure.harness import Cell

MODULE = "rtstudy.experiments.e5_placement.app5"


def cells(cells4: list[Cell]) -> list[Cell]:
    """``cells4`` (already 5.0's conditions) run by the 5.0 app."""
    return [replace(c, config={**c.config, "sdk_api": 5}, module=MODULE) for c in cells4]
