"""E2's headline: the numbers its words quote, as :func:`dataset.headline` makes them, and the
record types its fields hold.

A record, not a dict: every field is named here with what it holds, and so is every record in it
(a recommendations row, the policy grid, the floor's ratios, …), each a TypedDict: they are
tables' rows (``DataFrame.to_dict("records")``) that the words and the tables read by key.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from rtstudy.inference import judge

if TYPE_CHECKING:  # the records its fields hold, made in this room
    from rtstudy.experiments.e2_rt_threads.analysis.verdicts import ClaimResult


class Design(TypedDict):
    """What was measured (dataset._design)."""

    factors: list[float]
    pinned: list[str]
    n_runs: int
    dispatchers_read: dict[str, list[str]]


class GilLoads(TypedDict):
    """GIL-holding Python loads at the top load factor (dataset._gil)."""

    load_factor: float
    rows: list[dict]  # the reductions with Python loads (.contrasts.reductions rows)
    lost: dict[str, int]  # policy → frames missed
    late: dict[str, dict[str, dict]]  # policy → load model → its .contrasts.summarize row
    ratios: dict[str, float]  # policy → its std with Python loads over native ones
    gil_ratio: float  # the ratio above which the GIL binds (verdicts.GIL_RATIO)
    gil_bound: bool  # every ratio above it


class PolicyGrid(TypedDict):
    """The policy grid at the headline point (dataset._typical_and_late)."""

    load_factor: float
    rows: list[dict]  # each policy's condition summary, in policy order
    rt_runs: int
    rt_decided: int  # real-time runs whose std its 2 most extreme frames decide
    frames_per_run: int
    iqr_apart: list[str]  # real-time policies whose IQR CI lies apart from the baseline's
    floor: dict | None  # the floor's condition summary at that load factor


class Yardstick(TypedDict):
    """The late frames at the headline point on a second yardstick (dataset._yardsticks)."""

    late: int  # as judged
    other: int  # on the second yardstick
    skipped: int  # releases the clock skipped
    frames: int  # releases judged
    runs: int


class FloorRatios(TypedDict):
    """Every headline-point condition's ratio to the floor (dataset._floor)."""

    prespecified: list[dict]  # the pre-specified ones that did not starve
    rows: list[dict]  # every condition's (.contrasts.floor_ratios rows)
    floor_std_ms: float
    load_factor: float
    at_floor: list[str]  # those within FLOOR_GOAL (whole CI)


class MechanismTotals(TypedDict, total=False):
    """The late frames of some traced conditions, pooled (.attribution.mechanism_totals); empty
    without any."""

    late: int
    frames: int
    runs: int
    gil_probed: bool  # every run had GIL probes
    # The late frames each mechanism explains, one key per .attribution.PATTERNS.
    gil_holder_preempted: int
    gil_holder_running: int
    gil_holder_asleep: int
    gil_handover: int
    blocked_not_gil: int
    blocked: int
    throttled: int
    cpu_wait: int
    woken_late: int
    running: int
    gil: int  # the GIL patterns' sum
    top: str  # the most frequent pattern ("" without late frames)


class Mechanism(TypedDict):
    mechanism: list[dict]  # per traced condition (.attribution.mechanism_summary rows)
    mechanism_rt: MechanismTotals  # the real-time ones pooled


class Unattributed(TypedDict):
    unattributed: list[str]  # traced conditions none of whose frames could be attributed
    unattributed_policies: list[str]


class MessageLatency(TypedDict):
    """One run's message latencies over its frames after the warm-up (µs)."""

    messages: int  # received
    lost: int  # frames whose message never came
    message_p50_us: float
    message_p99_us: float
    message_max_us: float


class Comparison(TypedDict):
    """A change's runs against its baseline's (ladder._compare): each quantity of the change,
    its baseline's (``*_base*``) and their ratio with its CI."""

    runs: int
    runs_base: int
    frames: int
    frames_base: int
    dispersion: float
    dispersion_base: float
    iqr_us: float
    iqr_base_us: float
    iqr_ratio: float
    iqr_low: float
    iqr_high: float
    p99_ratio: float
    p99_low: float
    p99_high: float
    p99_us: float
    p99_us_low: float
    p99_us_high: float
    p99_base_us: float
    p99_base_low: float
    p99_base_high: float
    max_us: float
    max_base_us: float
    late: int
    late_rate: float
    late_low: float
    late_high: float
    late_base: int
    late_base_rate: float
    late_base_low: float
    late_base_high: float
    late_ratio: float
    late_ratio_low: float
    late_ratio_high: float
    late_phi: float
    late_frames: str  # the late-frame ratio's word (the rate part's)
    late_frames_needed: float
    cpu_ratio: float
    cpu_low: float
    cpu_high: float


class MessageCost(TypedDict):
    """What a change's messages cost (ladder._message_cost; the fragment fix's)."""

    message_runs: int
    messages: int
    lost: int
    message_p50_us: float
    message_p50_low: float
    message_p50_high: float
    message_p99_us: float
    message_max_us: float


class Pooled(TypedDict):
    """A change's conclusion over every session of a host (ladder.over_sessions)."""

    late_frames: Counter  # word → in how many sessions, each on its own
    sessions: int  # those that measured the change
    of: int  # the host's sessions
    held: dict[str, str]  # "late_frames" → the word over the pooled sessions
    iqr_ratio: float
    iqr_low: float
    iqr_high: float
    late_ratio: float
    late_ratio_low: float
    late_ratio_high: float
    late: int
    late_frames_needed: float
    late_base: int
    frames: float
    frames_base: float


class Recommendation(Comparison, MessageCost):
    """A ladder.recommendations row: a policy or fix at the headline point against its baseline."""

    change: str  # the policy, or the fix's name (conditions.FIX_LIST)
    kind: str  # "policy" or "fix"
    label: str  # the change's condition
    baseline: str  # its baseline's
    late_part: judge.Part  # its late frames' rate part, which the late columns show


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
    recommendations: list[Recommendation]  # each policy and fix at the headline point (.ladder)
    # H2 and its thresholds (.verdicts, .conditions, .contrasts).
    verdict: ClaimResult  # H2 on late frames (.verdicts.h2_verdict)
    std: ClaimResult  # H2 on the std as the seeds read it (.verdicts.h2_std)
    late_threshold_ms: float  # a frame is late this far after its release (ms)
    min_reduction: float  # the std cut the seeds' reading asks (fraction)
    min_runs: int  # the runs a CI over runs needs
    baseline: str  # H2's baseline condition (normal_dedicated)
    seed_baseline: str  # the seeds' baseline condition (normal: one shared pool)
    conditions: list[dict]  # each condition's typical jitter and late frames, the floor's too
    late: PolicyGrid | None  # the policy grid at the headline point (analysis._typical_and_late)
    yardsticks: dict[str, Yardstick] | None  # late frames on both grids where they differ
    decided_share: float  # a run's std is decided by its 2 worst frames above this (fraction)
    starved_offset: float  # starved: mean period off by more than this (fraction of the period)
    zero: ClaimResult  # the control without contention (.verdicts.null_verdict)
    control_floor_multiple: float  # the control's margin (× the floor's std)
    one: list[dict]  # each real-time policy's std reduction at 1 native load per CPU
    seed_style: list[dict]  # the std reductions against the seeds' baseline, top native load
    seeds: list[dict]  # each seed topology's reduction (.contrasts.seed_compatible)
    gil: GilLoads | None  # GIL-holding Python loads at the top factor; None without
    effects: list[dict]  # each factor's effect with the others held (.contrasts.effects rows)
    # The floor (cyclictest measured like with like).
    floor: FloorRatios | None  # every headline-point condition's ratio to it
    floor_goal: float  # at the floor: the whole CI of the std ratio at or below this (×)
    # Where the late frames' delay accrued (.attribution, the traced runs).
    attribution: list[dict]  # per traced condition (.attribution.attribution_summary rows)
    mechanism: list[dict]  # per traced condition, its late frames' mechanisms
    mechanism_rt: MechanismTotals  # the real-time ones' mechanisms pooled
    patterns: dict[str, str]  # each mechanism's name → its words (.attribution.PATTERNS)
    switch_interval_ms: float  # Python's GIL switch interval where a run set none (ms)
    tracing_cost: list[dict]  # each traced condition's typical jitter over its untraced runs'
    parts: dict[str, str]  # each part of a frame's lateness → its words (.attribution.PARTS)
    unattributed: list[str]  # the traced conditions none of whose frames could be attributed
    unattributed_policies: list[str]  # their policies
