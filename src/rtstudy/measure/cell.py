"""What a sweep cell is: one configuration and one repetition of an experiment, named by an id
that changes with anything its app receives (:class:`Cell`); the drift check's two extra runs
(:func:`with_drift`); and how a cell's run ended (:class:`CellOutcome`).

The harness (:mod:`rtstudy.measure.harness`) runs cells; the experiments' plans make them.
"""
from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TypedDict

from rtstudy.machine.host import canonical
from rtstudy.measure.realtime import RealtimeRequest


class CellSpec(TypedDict, total=False):
    """What a cell asks its app for (``spec.json``, and ``requested`` in its sidecar): the cell id
    is the hash of it."""

    app: str
    config: dict[str, Any]  # the experiment's configuration of the cell (its plan's)
    repetition: int
    realtime: list[dict]  # each RealtimeRequest as a dict: the policies to read back
    drift: str  # "start" or "end": a drift check's (absent otherwise)


@dataclass(frozen=True)
class Cell:
    """One configuration and one repetition of an experiment.

    ``label`` is a readable name of the configuration; ``cell_id`` adds the
    repetition and a digest of everything the app receives, so a changed
    parameter is a new cell and never mistaken for a completed one.
    ``app`` is the app's name as recorded in the cell (part of that digest);
    ``module`` is where its code lives, run with ``python -m``. They are kept
    apart so that moving code never changes a cell's id: data measured before
    a move still counts as complete. ``drift`` is ``"start"`` or ``"end"`` for
    the two extra runs of a sweep's drift check (:func:`with_drift`), empty for
    every other cell; it is part of the spec only when set, so the ids of the
    other cells are those they always had.
    """

    experiment: str
    app: str
    label: str
    config: dict
    repetition: int
    timeout_s: float
    realtime: tuple[RealtimeRequest, ...] = ()
    module: str = ""
    drift: str = ""

    def __post_init__(self) -> None:
        if not self.module:
            raise ValueError(f"cell {self.label!r}: no app module to run (Cell.module)")

    @property
    def spec(self) -> CellSpec:
        spec: CellSpec = {"app": self.app, "config": self.config, "repetition": self.repetition,
                "realtime": [asdict(r) for r in self.realtime]}
        if self.drift:
            spec["drift"] = self.drift
        return spec

    @property
    def cell_id(self) -> str:
        digest = hashlib.sha256(canonical(self.spec).encode()).hexdigest()[:8]
        run = f"drift{self.drift}" if self.drift else f"r{self.repetition}"
        return f"{self.label}-{run}-{digest}"


DRIFT_ROLES = ("start", "end")


def with_drift(cells: list[Cell], label: str) -> list[Cell]:
    """``cells`` plus the drift check: the condition ``label`` run once more first and once last.

    The two extra runs (:data:`DRIFT_ROLES`) repeat the configuration of the
    ``label`` cells exactly; :func:`rtstudy.measure.harness.run_order` puts them at the two
    ends of the sweep, so their difference is how far the host moved while it ran. They are
    not repetitions: the analyses set them aside (:func:`rtstudy.data.io.set_aside_drift`).

    Raises
    ------
    ValueError
        When no cell has the label (a plan naming a condition it does not run).
    """
    reference = next((c for c in cells if c.label == label), None)
    if reference is None:
        raise ValueError(f"drift check: no cell labelled {label!r} in the plan")
    return cells + [replace(reference, repetition=0, drift=role) for role in DRIFT_ROLES]


def with_drift_check(cells: list[Cell], cfg: dict, label: str | None = None) -> list[Cell]:
    """A plan's last step: ``cells`` with the drift check (:func:`with_drift`) where the
    experiment's ``cfg["drift_check"]`` asks for it and the plan has cells.

    ``label`` is the condition repeated; None: the plan's first condition.
    """
    if not cfg["drift_check"] or not cells:
        return cells
    return with_drift(cells, cells[0].label if label is None else label)


@dataclass
class CellOutcome:
    """How one cell of a sweep ended, where it is on disk and its timings (s)."""

    cell_id: str
    status: str  # "ok", "failed" or "skipped"
    reason: str = ""
    path: Path | None = None
    timing: dict = field(default_factory=dict)
