"""Straight lines through a sweep's points: least squares and Theil–Sen, each with its CI, and
a fitted value at one x.

Functions take arrays, never file names.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from rtstudy.inference.stats import Estimate, _check_confidence


@dataclass(frozen=True)
class LinearFit:
    """``y = intercept + slope * x`` by least squares, with t-based CIs."""

    slope: Estimate
    intercept: Estimate
    r_squared: float


def _finite_pairs(x, y) -> tuple[np.ndarray, np.ndarray]:
    """The ``(x, y)`` pairs where both are finite, as float arrays."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    return x[keep], y[keep]


def _least_squares(x, y):
    """The finite pairs, their count and :func:`scipy.stats.linregress` of them; ValueError
    below two distinct ``x``."""
    x, y = _finite_pairs(x, y)
    n = int(x.size)
    if n < 2 or np.ptp(x) == 0:
        raise ValueError(f"a linear fit needs at least two distinct x values, got {np.unique(x)}")
    return x, y, n, sps.linregress(x, y)


def linear_fit(x, y, confidence: float = 0.95) -> LinearFit:
    """Ordinary least squares of ``y`` on ``x`` with CIs for slope and intercept.

    Needs at least two distinct ``x``; the CIs need at least three points.
    """
    _check_confidence(confidence)
    _, _, n, res = _least_squares(x, y)
    if n > 2:
        t = sps.t.ppf(0.5 + confidence / 2, n - 2)
        slope = Estimate(res.slope, res.slope - t * res.stderr, res.slope + t * res.stderr, n,
                         confidence)
        icpt = Estimate(res.intercept, res.intercept - t * res.intercept_stderr,
                        res.intercept + t * res.intercept_stderr, n, confidence)
    else:
        slope = Estimate(res.slope, np.nan, np.nan, n, confidence)
        icpt = Estimate(res.intercept, np.nan, np.nan, n, confidence)
    return LinearFit(slope, icpt, float(res.rvalue ** 2))


def robust_slope(x, y, confidence: float) -> Estimate:
    """Theil–Sen slope of ``y`` on ``x`` with its CI: the median of pairwise slopes.

    Beside least squares it shows whether one extreme run drives a fit.
    """
    _check_confidence(confidence)
    x, y = _finite_pairs(x, y)
    if x.size < 2 or np.ptp(x) == 0:
        return Estimate(np.nan, np.nan, np.nan, int(x.size), confidence)
    slope, _, low, high = sps.theilslopes(y, x, alpha=confidence)
    return Estimate(float(slope), float(low), float(high), int(x.size), confidence)


def fit_at(x, y, x0: float, confidence: float) -> Estimate:
    """The least-squares line's mean response at ``x0``, with its t-based CI.

    ``Var = s² (1/n + (x0 − x̄)² / Sxx)``: how well the line is known at ``x0``
    (an extrapolation's CI widens with the distance from the data).
    """
    _check_confidence(confidence)
    x, y, n, res = _least_squares(x, y)
    value = float(res.intercept + res.slope * x0)
    if n < 3:
        return Estimate(value, np.nan, np.nan, n, confidence)
    resid = y - (res.intercept + res.slope * x)
    s2 = float((resid ** 2).sum() / (n - 2))
    se = np.sqrt(s2 * (1 / n + (x0 - x.mean()) ** 2 / ((x - x.mean()) ** 2).sum()))
    t = sps.t.ppf(0.5 + confidence / 2, n - 2)
    return Estimate(value, value - t * se, value + t * se, n, confidence)
