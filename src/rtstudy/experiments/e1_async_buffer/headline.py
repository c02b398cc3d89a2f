"""E1's headline: the numbers its words quote, as :func:`.analysis.headline` makes them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from rtstudy.inference import judge


# H1 in one scenario (:func:`.analysis.h1_verdict`): its verdict and why (where not settled or
# not testable), its parts (the default slope's coupling, the async slope's flatness) and their
# words (coupled, flat), each buffer's slope row, the fewest runs per period of the two and the
# flatness margin (ms/ms). Functional syntax: "async" is a keyword.
ScenarioVerdict = TypedDict("ScenarioVerdict", {
    "verdict": judge.Verdict, "why": str, "parts": list[judge.Part],
    "default": dict[str, Any], "async": dict[str, Any], "runs": int, "margin": float,
    "coupled": str, "flat": str}, total=False)


class ModeSummary(TypedDict, total=False):
    """The bimodal runs and what decides them (:func:`.analysis.mode_summary`); empty without
    rx's period or runs."""

    points: int  # the points whose runs split into both modes
    all_points: int
    runs: int  # those points' runs
    slow: int  # of them in the slow mode
    switched: int  # of them whose phase changed during the run
    first_wait_agree: int  # the runs each rule of .analysis.MODE_RULES classifies
    backlog_agree: int
    decides: str  # the rule that classifies every one of those runs ("" when none does)
    rules: dict[str, str]  # rule → what it says
    where: list[dict]  # per such point: its condition, runs, slow runs and both modes' P50


class ModesOverSessions(TypedDict, total=False):
    """:class:`ModeSummary` over a host's sessions (:func:`.analysis.modes_over_sessions`);
    empty with fewer than two sessions."""

    sessions: int  # the sessions with such runs
    of: int  # of all its sessions
    runs: int
    first_wait_agree: int
    backlog_agree: int
    decides: str  # the rule that classifies every such run of every session ("" when none)


@dataclass(frozen=True)
class E1Headline:
    """What E1's report words and summary rows read (``h`` in ``report.md.j2``)."""

    n_cells: int  # the runs (cells) measured
    repetitions: int  # the repetitions of each point
    periods: list[int]  # the varied producer's periods measured (ms), ascending
    messages_per_cell: int  # the fixed producer's messages in a run (median over runs)
    pinned: bool  # whether any run pinned its SCHED_DEADLINE threads
    # Where the pinned SCHED_DEADLINE threads ran (one placement for the whole sweep).
    placement: str
    stale_async: int  # stale re-reads of the fixed producer with the async buffer (all runs)
    stale_default: int  # the same with the default buffer
    verdict: dict[str, ScenarioVerdict]  # scenario → H1 there (.analysis.h1_verdict)
    default_min_slope: float  # the default buffer couples at this slope or above (ms/ms)
    flat_margin: float  # the async buffer is flat within ± this slope (ms/ms)
    min_runs: int  # the runs a CI over runs needs
    outlier_factor: float  # a run is far off over this × its point's median max latency
    outlier_min_ms: float  # and at least this far above it (ms)
    modes: ModeSummary  # the bimodal runs and what decides them
