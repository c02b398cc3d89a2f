"""E2's headline: the numbers its words quote, as :func:`.analysis.headline` makes them.

A record, not a dict: every field is named here with what it holds. The tables' rows stay
lists of dicts (``DataFrame.to_dict("records")``), their columns documented where they are made.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class E2Headline:
    """What E2's report words, tables and summary rows read (``h`` in ``report.md.j2``)."""

    # What was measured (analysis._design).
    factors: list[float]  # the load factors measured (loads per CPU), ascending
    pinned: list[str]  # the policies with a pinned target in some run
    n_runs: int  # the untraced runs (not the floor's)
    dispatchers_read: dict[str, list[str]]  # dispatcher level → the policies read back on it
    # What to do (.ladder).
    ladder_policy: str  # the real-time policy the fixes are measured with (SCHED_FIFO, …)
    ladder: list[dict]  # the ladder's rungs in order (.ladder.ladder rows)
    recommendations: list[dict]  # each policy and fix at the headline point (.ladder rows)
    # H2 and its thresholds (.verdicts, .conditions, .contrasts).
    verdict: dict  # H2 on late frames (.verdicts.h2_verdict)
    std: dict  # H2 on the std as the seeds read it (.verdicts.h2_std)
    late_threshold_ms: float  # a frame is late this far after its release (ms)
    min_reduction: float  # the std cut the seeds' reading asks (fraction)
    min_runs: int  # the runs a CI over runs needs
    baseline: str  # H2's baseline condition (normal_dedicated)
    seed_baseline: str  # the seeds' baseline condition (normal: one shared pool)
    conditions: list[dict]  # each condition's typical jitter and late frames, the floor's too
    late: dict | None  # the policy grid at the headline point (analysis._typical_and_late)
    yardsticks: dict | None  # late frames on both grids where they differ (analysis._yardsticks)
    decided_share: float  # a run's std is decided by its 2 worst frames above this (fraction)
    starved_offset: float  # starved: mean period off by more than this (fraction of the period)
    zero: dict  # the control without contention (.verdicts.null_verdict)
    control_floor_multiple: float  # the control's margin (× the floor's std)
    one: list[dict]  # each real-time policy's std reduction at 1 native load per CPU
    seed_style: list[dict]  # the std reductions against the seeds' baseline, top native load
    seeds: list[dict]  # each seed topology's reduction (.contrasts.seed_compatible)
    gil: dict | None  # GIL-holding Python loads at the top factor (analysis._gil); None without
    effects: list[dict]  # each factor's effect with the others held (.contrasts.effects rows)
    # The floor (cyclictest measured like with like).
    floor: dict | None  # every headline-point condition's ratio to it (analysis._floor)
    floor_goal: float  # at the floor: the whole CI of the std ratio at or below this (×)
    # Where the late frames' delay accrued (.attribution, the traced runs).
    attribution: list[dict]  # per traced condition (.attribution.attribution_summary rows)
    mechanism: list[dict]  # per traced condition, its late frames' mechanisms
    mechanism_rt: dict  # the real-time conditions' mechanisms pooled (.attribution)
    patterns: dict[str, str]  # each mechanism's name → its words (.attribution.PATTERNS)
    switch_interval_ms: float  # Python's GIL switch interval where a run set none (ms)
    tracing_cost: list[dict]  # each traced condition's typical jitter over its untraced runs'
    parts: dict[str, str]  # each part of a frame's lateness → its words (.attribution.PARTS)
    unattributed: list[str]  # the traced conditions none of whose frames could be attributed
    unattributed_policies: list[str]  # their policies
