"""The records a sweep writes beside its cells, as types: each cell's ``cell.json``
(:func:`rtstudy.measure.harness._sidecar`) and the sweep's ``plan.json``
(:func:`rtstudy.measure.harness.write_plan`). The readers (:mod:`rtstudy.data.io`) read them
back as these."""
from __future__ import annotations

from typing import Any, TypedDict

from rtstudy.measure.cell import CellSpec
from rtstudy.measure.readback import PlacementRecord
from rtstudy.measure.session import GitState, SessionRecord
from rtstudy.protocol import ProtocolRecord


class Timing(TypedDict):
    measured_s: float | None  # the app's own measured span (its result's), None if it gave none
    child_wall_s: float  # the cell's process from start to end, as the harness timed it


class Sidecar(TypedDict):
    """A cell's ``cell.json`` (:func:`_sidecar`): what was asked, what was got, where and how it
    ran. Readers add ``_dir``, the cell's folder (:func:`rtstudy.data.io.completed_cells`)."""

    cell_id: str
    experiment: str
    label: str
    repetition: int
    drift: str
    profile: str
    host_id: str
    versions: dict[str, str]
    git: GitState
    requested: CellSpec
    effective: dict[str, Any]  # what the app read back of its configuration
    operators: dict[str, Any]  # each operator's read-back scheduling (ThreadSched's keys)
    summary: dict[str, Any]  # the app's summary: counts, sizes, the trace's record
    realtime_verified: bool
    env_cleared: dict[str, str]
    env: dict[str, str]
    placement: PlacementRecord
    order_index: int
    status: str  # "ok" or "failed"
    reason: str
    finished_utc: str
    session: SessionRecord
    protocol: ProtocolRecord
    timing: Timing


class PlannedCell(TypedDict, total=False):
    cell_id: str
    label: str
    repetition: int
    config: dict[str, Any]
    drift: str  # a drift check's "start" or "end" (absent otherwise)


class PlanRecord(TypedDict):
    """A sweep's ``plan.json``: which cells make up its configuration, in their run order."""

    experiment: str | None
    profile: str
    host_id: str
    order_seed: int
    cells: list[PlannedCell]
