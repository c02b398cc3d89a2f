"""Rare events as rates: events per unit of exposure pooled over runs with an honest CI (an upper
bound where none occurred), and the quantile a run's worst value bounds (Wilks).

Functions take arrays, never file names.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from rtstudy.inference.stats import MIN_RUNS, _check_confidence


@dataclass(frozen=True)
class Rate:
    """Events per unit of exposure pooled over runs (e.g. late frames per frame), with its CI.

    Attributes
    ----------
    value, low, high : float
        The pooled rate and its CI (events per unit); NaN bounds below :data:`MIN_RUNS` runs.
    events : int
        The events counted over all runs.
    exposure : float
        The units they were counted in, over all runs (e.g. frames).
    runs : int
        The independent runs pooled.
    dispersion : float
        The over-dispersion factor φ ≥ 1 the CI is widened by (NaN with no event).
    confidence : float
        The CI's level; with no event the CI is one-sided, ``low`` 0 and ``high`` an upper bound.
    """

    value: float
    low: float
    high: float
    events: int
    exposure: float
    runs: int
    dispersion: float
    confidence: float

    @property
    def bound_only(self) -> bool:
        """No event: the CI is the one-sided upper bound ``high``."""
        return self.events == 0

    def per(self, scale: float) -> "Rate":
        """The same rate per ``scale`` units (e.g. 10 000 frames)."""
        return Rate(self.value * scale, self.low * scale, self.high * scale, self.events,
                    self.exposure, self.runs, self.dispersion, self.confidence)


def event_counts(events, exposure) -> tuple[np.ndarray, np.ndarray]:
    """Runs' event counts and exposures as float arrays, checked: 1-D and aligned, counts whole
    and ≥ 0, exposure > 0; :class:`ValueError` says which and shows the values."""
    k = np.asarray(events, dtype=float)
    n = np.asarray(exposure, dtype=float)
    if k.shape != n.shape or k.ndim != 1:
        raise ValueError(f"events and exposure must be 1-D and aligned, got shapes {k.shape} "
                         f"and {n.shape}")
    if (k < 0).any() or (k != np.round(k)).any() or not np.isfinite(k).all():
        raise ValueError(f"events must be counts >= 0, got {k[:5].tolist()}")
    if (n <= 0).any() or not np.isfinite(n).all():
        raise ValueError(f"exposure must be > 0 in every run, got {n[:5].tolist()}")
    return k, n


def pooled_rate(events, exposure, confidence: float) -> Rate:
    """The rate of rare events pooled over runs, with a CI honest for small counts.

    The rate is ΣK / ΣN over runs (K events in N units each). Within a run the
    events are taken as a Poisson process; between runs the rate may differ
    (late frames come in some runs only), which the Pearson dispersion of the
    counts measures: φ = max(1, Σ (K_i − λN_i)² / (λN_i) / (R − 1)). The CI is
    the exact Poisson (Garwood) interval of ΣK/φ events in ΣN/φ units: for φ = 1
    the exact interval, for φ > 1 the quasi-Poisson interval whose variance is φ
    times the Poisson one. With no event at all the CI is one-sided: 0 to
    −ln(1 − confidence) / ΣN, the exact Poisson upper bound (≈ 3 / ΣN at 95 %,
    the rule of three). Below :data:`MIN_RUNS` runs there is no CI: neither the
    spread between runs nor the frames' independence can be judged.

    Parameters
    ----------
    events : array_like of int
        Events of each run (counts ≥ 0).
    exposure : array_like of float
        Units each run counted them in (> 0, e.g. frames), aligned with ``events``.
    confidence : float
        The CI's level, in (0, 1).

    Returns
    -------
    Rate
        Per unit of ``exposure``; :meth:`Rate.per` rescales it.

    Notes
    -----
    φ estimated from R − 1 degrees of freedom is itself uncertain with a few runs;
    the interval takes it at its estimate.
    """
    _check_confidence(confidence)
    k, n = event_counts(events, exposure)
    total_k, total_n, runs = int(k.sum()), float(n.sum()), int(k.size)
    if runs == 0:
        return Rate(np.nan, np.nan, np.nan, 0, 0.0, 0, np.nan, confidence)
    value = total_k / total_n
    if total_k == 0:
        high = -np.log(1 - confidence) / total_n if runs >= MIN_RUNS else np.nan
        return Rate(0.0, 0.0 if runs >= MIN_RUNS else np.nan, high, 0, total_n, runs, np.nan,
                    confidence)
    expected = value * n
    phi = (max(1.0, float(((k - expected) ** 2 / expected).sum() / (runs - 1)))
           if runs > 1 else np.nan)
    if runs < MIN_RUNS:
        return Rate(value, np.nan, np.nan, total_k, total_n, runs, phi, confidence)
    alpha = 1 - confidence
    # By hand, not statsmodels' confint_poisson: ΣK/φ is real-valued (equal for whole counts:
    # tests/test_statsmodels.py).
    k_eff, n_eff = total_k / phi, total_n / phi
    low = float(sps.gamma.ppf(alpha / 2, k_eff)) / n_eff
    high = float(sps.gamma.ppf(1 - alpha / 2, k_eff + 1)) / n_eff
    return Rate(value, low, high, total_k, total_n, runs, phi, confidence)


def wilks_quantile(n: int, confidence: float) -> float:
    """The quantile that the largest of ``n`` independent values bounds with ``confidence``.

    The maximum of n values lies above the p-quantile with probability 1 − pⁿ,
    which reaches γ = ``confidence`` when n ≥ ln(1 − γ) / ln p (Wilks' one-sided
    tolerance bound): p = (1 − γ)^(1/n). E.g. 149 frames at 95 %: p = 0.980, so a
    run's worst frame is an upper bound of its P98, not of its P99.9.

    Parameters
    ----------
    n : int
        How many values the maximum is taken over (≥ 1).
    confidence : float
        γ, in (0, 1).

    Returns
    -------
    float
        p, in (0, 1).
    """
    _check_confidence(confidence)
    if n < 1:
        raise ValueError(f"the maximum of n values needs n >= 1, got {n}")
    return float((1 - confidence) ** (1 / n))
