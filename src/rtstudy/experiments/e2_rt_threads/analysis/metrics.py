"""E2's per-run quantities: what one run's frames say about its timing.

A run's frames are the compute start times (``t_start_ns``) and execution times
(``exec_ns``) its app recorded; every quantity here is computed from the frames
after the warm-up, for a Holoscan run and a cyclictest run (the floor) alike.

Each frame's **lateness** is its start minus its release (:func:`lateness_ns`, the one
definition the trace attribution uses too). A run gives two different answers from it:
its *typical jitter* (a robust spread of the period, the median and P99 of the lateness)
and its *late frames* (lateness above a threshold: rare events, counted). The period's
standard deviation mixes both, and a run's few late frames decide it; it is kept to
compare with the seeds, which published only the std.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import numpy as np
import pandas as pd

from rtstudy.inference.stats import percentiles
from rtstudy.inference.within import quantile_bootstrappable, within_run_variance

# How a run's frames are released (lateness_ns()). Every policy is judged on one yardstick,
# the source clock a pipeline's frames arrive on (protocol v1): FIXED, the grid T_0 + k·P —
# Holoscan 4.x's PeriodicCondition (it catches up missed ticks: a late frame is followed by
# early ones), cyclictest's sleep to an absolute time, and Holoscan 4.x's SCHED_DEADLINE target
# too, although the kernel paces it (app.py: no PeriodicCondition). A 4.6 DEADLINE worker runs
# its operator once per kernel period and never catches up: a late frame moves every later one
# (fed by a source operator on a 60 Hz clock, a probe of 2026-12-07 saw every frame processed
# 14.9 ms after its release, P50), so on the source's clock each later frame is late, as a
# consumer on a fixed clock sees it. PREVIOUS, one period after the previous frame's start (the
# kernel's own releases of a DEADLINE target, and the seeds' frame-period yardstick), is kept
# as DEADLINE's second reading (``late_previous``). RECORDED: the release each activation
# recorded — Holoscan 5.0's OnClock, which skips a tick it missed instead of catching up (in the
# reference data its releases are always 1, 2, 3, 4 or 6 periods apart, never less than one),
# a skipped release counted as a late frame: 5.0's source clock.
FIXED, PREVIOUS, RECORDED = "fixed", "previous", "recorded"
GRIDS = (FIXED, PREVIOUS, RECORDED)
# A column of samples that only Holoscan 5.0's app writes (its clock's activation times).
CLOCK_RELEASES = "release_ns"
# Late frames are counted per this many frames.
PER_FRAMES = 10_000


def release_grid(policy: str | None, columns) -> str:
    """How a run's frames were released: :data:`FIXED`, :data:`PREVIOUS` or :data:`RECORDED`
    (module comment).

    Parameters
    ----------
    policy : str or None
        The target's policy (the cell's ``policy``; None for a tool such as cyclictest).
    columns : iterable of str
        The run's samples columns: Holoscan 5.0's app paces every policy on a clock and
        records its releases (:data:`CLOCK_RELEASES`).
    """
    if CLOCK_RELEASES in columns:
        return RECORDED
    return FIXED


def lateness_ns(t_ns, period_ns: int, grid: str = FIXED, fit=None,
                releases_ns=None) -> np.ndarray:
    """Each frame's lateness against its release (ns): its start minus its release.

    Parameters
    ----------
    t_ns : array_like of int
        The frames' starts (ns, CLOCK_MONOTONIC), in frame order.
    period_ns : int
        The nominal period P (ns).
    grid : str
        :data:`FIXED`: frame k is released at T_0 + k·P, T_0 making the earliest
        frame's lateness 0 (so every lateness is ≥ 0 and a frame's deviation from the
        period is the difference of two latenesses). :data:`PREVIOUS`: frame k is
        released at t_{k−1} + P (lateness = period − P, of either sign; the first
        frame has none, NaN). :data:`RECORDED`: frame k is released at ``releases_ns[k]``
        plus one offset, the clocks' difference, that makes the earliest frame's lateness 0
        as on the fixed grid.
    fit : array_like of bool, optional
        The frames T_0 (or the offset) is fitted on (default all; e.g. those inside a trace);
        the others' lateness is against the same grid.
    releases_ns : array_like of int, optional
        The release each frame recorded (ns, on the clock's own time base); needed for
        :data:`RECORDED` only.

    Returns
    -------
    ndarray of float
        One lateness per frame (ns).
    """
    t = np.asarray(t_ns, dtype=np.int64)
    if grid == PREVIOUS:
        out = np.full(t.size, np.nan)
        out[1:] = (np.diff(t) - period_ns).astype(float)
        return out
    if grid == FIXED:
        offset = t - np.arange(t.size, dtype=np.int64) * int(period_ns)
    elif grid == RECORDED:
        if releases_ns is None:
            raise ValueError("the recorded grid needs each frame's release (releases_ns)")
        offset = t - np.asarray(releases_ns, dtype=np.int64)
    else:
        raise ValueError(f"grid must be one of {', '.join(map(repr, GRIDS))}, got {grid!r}")
    fitted = offset if fit is None else offset[np.asarray(fit, dtype=bool)]
    if not fitted.size:
        return np.full(t.size, np.nan)
    return (offset - fitted.min()).astype(float)


def kept_releases(samples: pd.DataFrame, warmup_frames: int, grid: str) -> np.ndarray | None:
    """The releases the frames from ``warmup_frames`` on recorded (ns, in frame order) where
    ``grid`` is :data:`RECORDED`, else None (the other grids need none)."""
    if grid != RECORDED:
        return None
    kept = samples[samples["frame"] >= warmup_frames].sort_values("frame")
    return kept[CLOCK_RELEASES].to_numpy()


def skipped_per_gap(releases_ns, period_ns: int) -> np.ndarray:
    """The releases a clock skipped in each gap between two recorded ones: a gap of m periods
    skipped m − 1 (Holoscan 5.0's OnClock skips a tick it missed; module comment).

    Parameters
    ----------
    releases_ns : array_like of int
        The releases the frames recorded (ns), in frame order.
    period_ns : int
        The nominal period P (ns).

    Returns
    -------
    ndarray of int
        One count per gap (one fewer than the releases).
    """
    gaps = np.diff(np.asarray(releases_ns, dtype=np.int64)) / period_ns
    return np.clip(np.round(gaps) - 1, 0, None).astype(int)


def skipped_releases(releases_ns, period_ns: int) -> int:
    """The releases a clock skipped between the recorded ones (:func:`skipped_per_gap`)."""
    return int(skipped_per_gap(releases_ns, period_ns).sum())


@dataclass(frozen=True)
class RunFrames:
    """One run's kept frames (after the warm-up), in frame order.

    Attributes
    ----------
    t_ns : ndarray
        Each frame's compute start (ns, CLOCK_MONOTONIC).
    period_ms : ndarray
        The period before each frame but the first (ms).
    exec_ms : ndarray
        The execution time of each frame but the first (ms), aligned with ``period_ms``.
    lateness_ms : ndarray
        The lateness of each frame but the first against its release (ms,
        :func:`lateness_ns`), aligned with ``period_ms``.
    grid : str
        The releases ``lateness_ms`` is against (:func:`release_grid`).
    skipped : int
        The releases the clock skipped between the kept frames (:func:`skipped_releases`;
        0 but on :data:`RECORDED`): frames that never came.
    """

    t_ns: np.ndarray
    period_ms: np.ndarray
    exec_ms: np.ndarray
    lateness_ms: np.ndarray
    grid: str = FIXED
    skipped: int = 0

    @classmethod
    def of(cls, samples: pd.DataFrame, warmup_frames: int, period_ns: int,
           grid: str = FIXED) -> "RunFrames":
        """The frames of ``samples`` (sorted by ``frame``) from frame ``warmup_frames`` on,
        released every ``period_ns`` on ``grid`` (:func:`release_grid`; :data:`RECORDED`
        reads each frame's release from :data:`CLOCK_RELEASES`)."""
        kept = samples[samples["frame"] >= warmup_frames]
        t = kept["t_start_ns"].to_numpy()
        releases = kept_releases(kept, warmup_frames, grid)
        return cls(t, np.diff(t) / 1e6, kept["exec_ns"].to_numpy()[1:] / 1e6,
                   lateness_ns(t, period_ns, grid, releases_ns=releases)[1:] / 1e6, grid,
                   skipped_releases(releases, period_ns) if grid == RECORDED else 0)

    def abs_lateness_ms(self) -> np.ndarray:
        """The |lateness| (ms) of the frames that have one: what late frames are judged on."""
        return np.abs(self.lateness_ms[np.isfinite(self.lateness_ms)])

    def table(self) -> pd.DataFrame:
        """One row per frame but the first: ``t_s`` (s since the first kept frame, measured),
        ``period_ms``, ``exec_ms`` and ``lateness_ms``."""
        return pd.DataFrame({"t_s": (self.t_ns[1:] - self.t_ns[0]) / 1e9,
                             "period_ms": self.period_ms, "exec_ms": self.exec_ms,
                             "lateness_ms": self.lateness_ms})


def _iqr_us(periods_ms: np.ndarray) -> np.ndarray:
    """Each row's P75 − P25 (µs) of frame periods in ms: the bootstrap's statistic."""
    p75, p25 = np.percentile(periods_ms, (75, 25), axis=1)
    return (p75 - p25) * 1e3


class TypicalJitter(TypedDict):
    period_iqr_us: float
    period_iqr_within_us2: float  # its sampling variance from the run's own frames
    period_mad_us: float
    lateness_p50_us: float
    lateness_p99_us: float


class LateFrames(TypedDict):
    late: int
    late_fixed: int
    late_per_10k: float
    lateness_max_ms: float


# Functional syntax: "period_p99.9_ms" is no identifier.
PeriodShape = TypedDict("PeriodShape", {
    "period_tail_us": float, "period_flatness_us": float, "period_mean_ms": float,
    "period_std_ms": float, "std_top2_share": float, "period_min_ms": float,
    "period_max_ms": float, "period_p50_ms": float, "period_p99_ms": float,
    "period_p99.9_ms": float})


class ExecTimes(TypedDict):
    exec_mean_ms: float
    exec_std_ms: float
    exec_p99_ms: float
    exec_max_ms: float


class RunMetrics(TypicalJitter, LateFrames, PeriodShape, ExecTimes):
    """One run's metrics (:func:`run_metrics`), a row of E2's ``runs`` table (each key
    documented there)."""

    nominal_ms: float
    n: int
    duration_s: float
    grid: str
    skipped: int
    late_previous: int
    missed: int


def run_metrics(frames: RunFrames, nominal_ms: float, late_threshold_ms: float) -> RunMetrics:
    """One run's frame-period, lateness and execution-time metrics.

    Parameters
    ----------
    frames : RunFrames
        The run's kept frames.
    nominal_ms : float
        The nominal frame period (ms).
    late_threshold_ms : float
        A frame whose lateness against its release exceeds this (ms) is late.

    Returns
    -------
    RunMetrics
        ``nominal_ms``, ``n`` (the releases judged: the frames but the first, plus the
        releases the clock skipped), ``duration_s`` (first to last kept frame, measured),
        ``grid`` (the releases' yardstick, :func:`release_grid`) and ``skipped``
        (:attr:`RunFrames.skipped`);
        typical jitter: the period's ``period_iqr_us`` (P75 − P25) with
        ``period_iqr_within_us2``, its sampling variance from the run's own frames
        (:func:`rtstudy.inference.within.within_run_variance`), and ``period_mad_us``
        (median absolute deviation from the median, unscaled), the |lateness|'s
        ``lateness_p50_us`` and ``lateness_p99_us``;
        late frames: ``late`` (lateness above the threshold, or a release skipped: that
        frame never came), ``late_per_10k`` (per :data:`PER_FRAMES` releases) and
        ``lateness_max_ms``; ``late_fixed``, the late frames on the fixed grid (:data:`FIXED`),
        what a consumer on a fixed clock sees: the same as ``late`` but for a run released
        by a clock that skips (:data:`RECORDED`); ``late_previous``, the frames whose period
        exceeds the nominal one by more than the threshold (lateness against one period after
        the previous frame, :data:`PREVIOUS`: a 4.x SCHED_DEADLINE target's own releases);
        NVIDIA's flow benchmarking's ``period_tail_us`` (P100 − P95) and
        ``period_flatness_us`` (P90 − P10), percentiles interpolated linearly;
        the period's mean / std / min / max / P50 / P99 / P99.9 (ms) and
        ``std_top2_share``, the share of its squared deviations from the mean that its
        2 most extreme periods carry (how far a few frames decide the std); the
        execution time's mean / std / P99 / max (ms); ``missed`` (frames expected
        over the measured span minus frames seen).
    """
    t, period, execs = frames.t_ns, frames.period_ms, frames.exec_ms
    late = frames.abs_lateness_ms()
    count, judged = late_and_judged(frames, late_threshold_ms)
    nominal_ns = int(round(nominal_ms * 1e6))
    fixed = lateness_ns(t, nominal_ns, FIXED)[1:] / 1e6 if t.size else t
    previous = lateness_ns(t, nominal_ns, PREVIOUS)[1:] / 1e6 if t.size else t
    p = percentiles(period, (10, 25, 50, 75, 90, 95, 99, 99.9))
    lp = percentiles(late, (50, 99))
    span_s = (t[-1] - t[0]) / 1e9 if t.size > 1 else 0.0
    expected = int(round(span_s * 1e3 / nominal_ms))
    return {"nominal_ms": nominal_ms, "n": judged, "duration_s": span_s,
            "grid": frames.grid, "skipped": frames.skipped, **_typical_jitter(period, p, lp),
            **_late_frames(late, fixed, late_threshold_ms, lp, count, frames.skipped),
            "late_previous": int((previous > late_threshold_ms).sum()),
            **_period_shape(period, p), **_exec_times(execs),
            "missed": max(0, expected - int(period.size))}


def _typical_jitter(period: np.ndarray, p: dict[str, float], lp: dict[str, float]
                    ) -> TypicalJitter:
    """:func:`run_metrics`' typical jitter (µs) from the periods (ms), their percentiles ``p``
    and the |lateness|'s ``lp`` (:func:`rtstudy.inference.stats.percentiles`, ms)."""
    return {"period_iqr_us": (p["p75"] - p["p25"]) * 1e3,
            "period_iqr_within_us2": (within_run_variance(period, _iqr_us)
                                      if quantile_bootstrappable(period.size, 0.25) else np.nan),
            "period_mad_us": (float(np.median(np.abs(period - p["p50"]))) * 1e3
                              if period.size else np.nan),
            "lateness_p50_us": lp["p50"] * 1e3, "lateness_p99_us": lp["p99"] * 1e3}


def late_and_judged(frames: RunFrames, late_threshold_ms: float) -> tuple[int, int]:
    """A run's late frames (|lateness| above ``late_threshold_ms``, ms, on its release grid, or
    a release its clock skipped: that frame never came) and the releases judged (its frames
    but the first, plus the skipped releases): :func:`run_metrics`' ``late`` and ``n``."""
    return (int((frames.abs_lateness_ms() > late_threshold_ms).sum()) + frames.skipped,
            int(np.isfinite(frames.period_ms).sum()) + frames.skipped)


def _late_frames(late: np.ndarray, fixed: np.ndarray, late_threshold_ms: float,
                 lp: dict[str, float], count: int, skipped: int = 0) -> LateFrames:
    """:func:`run_metrics`' late frames from the |lateness| ``late`` (ms) on the run's release
    grid, the lateness ``fixed`` (ms) on the fixed grid, ``late``'s percentiles ``lp``, the
    late frames' ``count`` (:func:`late_and_judged`) and the ``skipped`` releases."""
    return {"late": count,
            "late_fixed": int((np.abs(fixed) > late_threshold_ms).sum()),
            "late_per_10k": float(count / (late.size + skipped) * PER_FRAMES)
            if late.size else np.nan,
            "lateness_max_ms": lp["max"]}


def _period_shape(period: np.ndarray, p: dict[str, float]) -> PeriodShape:
    """:func:`run_metrics`' flow-benchmarking spreads (µs) and the periods' moments, extremes
    and percentiles (ms), from the periods (ms) and their percentiles ``p``."""
    squares = np.sort((period - period.mean()) ** 2)[::-1] if period.size else period
    return {"period_tail_us": (p["max"] - p["p95"]) * 1e3,
            "period_flatness_us": (p["p90"] - p["p10"]) * 1e3,
            "period_mean_ms": float(period.mean()) if period.size else np.nan,
            "period_std_ms": float(period.std(ddof=1)) if period.size > 1 else np.nan,
            "std_top2_share": (float(squares[:2].sum() / squares.sum())
                               if period.size > 2 and squares.sum() > 0 else np.nan),
            "period_min_ms": float(period.min()) if period.size else np.nan,
            "period_max_ms": p["max"], "period_p50_ms": p["p50"],
            "period_p99_ms": p["p99"], "period_p99.9_ms": p["p99.9"]}


def _exec_times(execs: np.ndarray) -> ExecTimes:
    """:func:`run_metrics`' execution-time mean, std, P99 and maximum (ms) from ``execs`` (ms)."""
    e = percentiles(execs, (50, 99))
    return {"exec_mean_ms": float(execs.mean()) if execs.size else np.nan,
            "exec_std_ms": float(execs.std(ddof=1)) if execs.size > 1 else np.nan,
            "exec_p99_ms": e["p99"], "exec_max_ms": e["max"]}


class HeadCounts(TypedDict):
    """A run's late frames on the span policies are compared on (:func:`head_counts`)."""

    late_head: int
    n_head: int  # its frames judged


def head_counts(samples: pd.DataFrame, config: dict, cfg: dict) -> HeadCounts:
    """A run's late frames (``late_head``) among its first ``headline_duration_s`` of releases
    after the warm-up (``n_head``): what a policy is compared on, so that a run sized for the
    fixes (``fix_duration_s``) and its baseline's, sized for the policy grid, weigh alike
    (balanced arms, protocol v1). A run no longer than that: its whole ``late`` and ``n``.

    ``config`` is the run's app configuration (``fps``, ``period_ns``, ``policy``), ``cfg``
    E2's resolved parameters."""
    warmup = cfg["warmup_frames"]
    kept = samples[samples["frame"] < warmup + int(cfg["headline_duration_s"] * config["fps"]) + 1]
    # The counts alone: run_metrics' other statistics (its bootstrap above all) took 11 s of
    # a render of the reference here, for nothing.
    late, judged = late_and_judged(RunFrames.of(kept, warmup, config["period_ns"],
                                                release_grid(config["policy"], kept.columns)),
                                   cfg["late_threshold_ms"])
    return {"late_head": late, "n_head": judged}
