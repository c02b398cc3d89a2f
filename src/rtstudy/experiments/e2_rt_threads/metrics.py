"""E2's per-run quantities: what one run's frames say about its timing.

A run's frames are the compute start times (``t_start_ns``) and execution times
(``exec_ns``) its app recorded; every quantity here is computed from the frames
after the warm-up, for a Holoscan run and a cyclictest run (the floor) alike.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rtstudy.stats import percentiles


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
    """

    t_ns: np.ndarray
    period_ms: np.ndarray
    exec_ms: np.ndarray

    @classmethod
    def of(cls, samples: pd.DataFrame, warmup_frames: int) -> "RunFrames":
        """The frames of ``samples`` (sorted by ``frame``) from frame ``warmup_frames`` on."""
        kept = samples[samples["frame"] >= warmup_frames]
        t = kept["t_start_ns"].to_numpy()
        return cls(t, np.diff(t) / 1e6, kept["exec_ns"].to_numpy()[1:] / 1e6)

    def table(self) -> pd.DataFrame:
        """One row per frame but the first: ``t_s`` (s since the first kept frame, measured),
        ``period_ms`` and ``exec_ms``."""
        return pd.DataFrame({"t_s": (self.t_ns[1:] - self.t_ns[0]) / 1e9,
                             "period_ms": self.period_ms, "exec_ms": self.exec_ms})


def run_metrics(frames: RunFrames, nominal_ms: float, late_threshold_ms: float) -> dict:
    """One run's frame-period and execution-time metrics.

    Parameters
    ----------
    frames : RunFrames
        The run's kept frames.
    nominal_ms : float
        The nominal frame period (ms).
    late_threshold_ms : float
        A period longer than ``nominal_ms`` by more than this (ms) counts as late.

    Returns
    -------
    dict
        ``nominal_ms``, ``n`` (periods), the period's mean / std / min / max /
        P50 / P99 / P99.9 and the execution time's mean / std / P99 / max (ms),
        ``late`` (periods over nominal + threshold) and ``missed`` (frames expected
        over the measured span minus frames seen).
    """
    t, period, execs = frames.t_ns, frames.period_ms, frames.exec_ms
    p = percentiles(period, (50, 99, 99.9))
    e = percentiles(execs, (50, 99))
    span_s = (t[-1] - t[0]) / 1e9 if t.size > 1 else 0.0
    expected = int(round(span_s * 1e3 / nominal_ms))
    return {"nominal_ms": nominal_ms, "n": p["n"],
            "period_mean_ms": float(period.mean()) if period.size else np.nan,
            "period_std_ms": float(period.std(ddof=1)) if period.size > 1 else np.nan,
            "period_min_ms": float(period.min()) if period.size else np.nan,
            "period_max_ms": p["max"], "period_p50_ms": p["p50"],
            "period_p99_ms": p["p99"], "period_p99.9_ms": p["p99.9"],
            "exec_mean_ms": float(execs.mean()) if execs.size else np.nan,
            "exec_std_ms": float(execs.std(ddof=1)) if execs.size > 1 else np.nan,
            "exec_p99_ms": e["p99"], "exec_max_ms": e["max"],
            "late": int((period > nominal_ms + late_threshold_ms).sum()),
            "missed": max(0, expected - int(period.size))}
