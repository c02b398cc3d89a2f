"""Meta-analysis over measuring sessions: the level above runs, pooled by a random-effects mean
(sessions that differ more than their runs widen the CI), with a prediction interval for the
next session.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from rtstudy.inference.stats import _check_confidence


@dataclass(frozen=True)
class SessionEstimate:
    """One quantity estimated at the session level (:func:`over_sessions`).

    Attributes
    ----------
    value, low, high : float
        The mean of the sessions' estimates and its CI (t over sessions, k − 1 df).
    next_low, next_high : float
        The prediction interval of one more session's estimate: where a new session of the
        same host state should land (half-width t·s·√(1 + 1/k), against the CI's t·s/√k).
    sessions : int
        k, the sessions with an estimate.
    between_sessions, between_runs, within_run : float
        Variance components (the quantity's unit squared): τ², the variance of a session's
        true value around the host state's; σ², the variance of one run's true value within
        a session; ω², the sampling variance of one run's value from its own frames
        (:func:`rtstudy.inference.within.within_run_variance`). NaN where a session's runs gave no CI; ω² NaN where
        the quantity has no within-run variance of its own (a contrast, a maximum), and
        then σ² holds it.
    confidence : float
        The level of both intervals.
    """

    value: float
    low: float
    high: float
    next_low: float
    next_high: float
    sessions: int
    between_sessions: float
    between_runs: float
    confidence: float
    within_run: float = np.nan

    @property
    def shares(self) -> tuple[float, float, float]:
        """τ², σ² and ω² as shares of their sum: all NaN where τ² or σ² is not known; ω²'s NaN
        where it is not (σ² then holds it)."""
        parts = np.array([self.between_sessions, self.between_runs,
                          self.within_run if np.isfinite(self.within_run) else 0.0])
        total = parts.sum()
        if not (np.isfinite(total) and total > 0):
            return (np.nan, np.nan, np.nan)
        shares = parts / total
        return (float(shares[0]), float(shares[1]),
                float(shares[2]) if np.isfinite(self.within_run) else np.nan)


def over_sessions(values, lows, highs, runs, confidence: float,
                  within=None) -> SessionEstimate:
    """A quantity estimated at the highest level that has variance: the measuring session.

    Kalibera & Jones (2013) replicate at every level and estimate at the highest: each
    session's estimate (from its runs) is one observation. The estimate is their plain mean,
    its CI Student's t over sessions (k − 1 df), and a new session is predicted to land in
    mean ± t·s·√(1 + 1/k). With 2 sessions t has 1 df (12.7 at 95 %): the interval is honest
    about how little two sessions say. Below 2 sessions there is no session-level interval.

    The variance components come from the method of moments. Each session's CI over its
    ``runs`` gives its standard error, SE = (high − low) / (2 t(n − 1)) (exact for the
    t-intervals of :func:`~rtstudy.inference.stats.over_runs`; for an asymmetric interval, a rate's or a ratio's, the
    average half-width), so σ² (between runs) = mean(n × SE²) and τ² (between sessions)
    = max(0, s² − mean(SE²)), s² being the sessions' estimates' variance. A run's value
    is itself an estimate from its frames (an IQR, a rate): with each session's ``within``
    (ω², the mean over its runs of that value's sampling variance), the variation between
    runs splits into ω² and σ² = max(0, mean(n × SE²) − mean(ω²)), the runs' own.

    Parameters
    ----------
    values, lows, highs : array_like of float
        Each session's estimate and CI bounds (NaN bounds: that session had no CI).
    runs : array_like of int
        The runs behind each session's estimate.
    confidence : float
        The level, in (0, 1); also the level the sessions' CIs were made at.
    within : array_like of float, optional
        Each session's ω² (NaN or omitted: not known, and σ² holds it).
    """
    _check_confidence(confidence)
    v = np.asarray(values, dtype=float)
    lo, hi = np.asarray(lows, dtype=float), np.asarray(highs, dtype=float)
    n = np.asarray(runs, dtype=float)
    w = np.full(v.shape, np.nan) if within is None else np.asarray(within, dtype=float)
    keep = np.isfinite(v)
    v, lo, hi, n, w = v[keep], lo[keep], hi[keep], n[keep], w[keep]
    k = int(v.size)
    nan = np.nan
    if k == 0:
        return SessionEstimate(nan, nan, nan, nan, nan, 0, nan, nan, confidence)
    mean = float(v.mean())
    s2 = float(v.var(ddof=1)) if k >= 2 else nan
    if not s2 > 0:
        # One session, or sessions that all gave one value (no late frame in any): no spread
        # to judge an interval from, as over_runs() with runs of one value.
        return SessionEstimate(mean, nan, nan, nan, nan, k, nan, nan, confidence)
    t = float(sps.t.ppf(0.5 + confidence / 2, k - 1))
    half, ahead = t * np.sqrt(s2 / k), t * np.sqrt(s2 * (1 + 1 / k))
    tau2 = sigma2 = nan
    if np.isfinite(lo).all() and np.isfinite(hi).all() and (n >= 2).all():
        se2 = ((hi - lo) / (2 * sps.t.ppf(0.5 + confidence / 2, n - 1))) ** 2
        sigma2 = float((n * se2).mean())
        tau2 = max(0.0, s2 - float(se2.mean()))
    omega2 = float(w.mean()) if k and np.isfinite(w).all() else np.nan
    if np.isfinite(omega2) and np.isfinite(sigma2):
        sigma2 = max(0.0, sigma2 - omega2)
    return SessionEstimate(mean, mean - half, mean + half, mean - ahead, mean + ahead, k,
                           tau2, sigma2, confidence, omega2)


def random_effects(values, lows, highs, confidence: float, runs=None,
                   log: bool = False) -> tuple[float, float, float]:
    """One estimate from several sessions' estimates with their CIs: a random-effects mean,
    the session a random effect, with the Hartung–Knapp–Sidik–Jonkman interval.

    Each session's standard error is read off its CI: with ``runs``, by the t-quantile the
    CI was made with (n − 1 df, :func:`~rtstudy.inference.stats.over_runs`), else by the normal one. τ², the variance
    between sessions beyond what their CIs explain (DerSimonian–Laird), widens every
    session's variance before they are weighted. The interval is t with k − 1 df around the
    weighted mean, its variance the weighted spread of the sessions around it (never below
    the DerSimonian–Laird variance): the normal-theory DerSimonian–Laird interval covers
    about 89 % at a nominal 95 % with 4 sessions of 5 runs (tests/test_judge.py), because
    each session's variance is itself estimated from a few runs. One session is its own CI.

    Two sessions cannot estimate the variance between sessions: t would have 1 df (12.7 at
    95 %), so two that agree would say less than either alone and a second session would
    unsettle what the first decided. Below three sessions the runs stay the unit, as below
    three runs there is no CI: the mean of every run of both, their variance pooled, t with
    Σ(n − 1) df (inverse-variance and normal without ``runs``). Where the two differ beyond
    that (a two-sample test at ``confidence``) the random-effects interval is kept: two
    sessions that disagree settle little. With a true session effect, two sessions that pass
    that check cover less than stated (the test says how much); a third session restores it.

    Parameters
    ----------
    values, lows, highs : array_like of float
        Each session's estimate and CI bounds; sessions without a CI are left out.
    confidence : float
        The level of the sessions' CIs and of the pooled one, in (0, 1).
    runs : array_like of int, optional
        The runs behind each session's CI.
    log : bool
        Pool on the log scale (ratios; every value and bound must be > 0).

    Returns
    -------
    tuple of float
        The pooled estimate and its CI; NaN where no session has a CI.
    """
    _check_confidence(confidence)
    v, lo, hi, n = _with_ci(values, lows, highs, runs, log)
    if not v.size:
        return np.nan, np.nan, np.nan
    if v.size == 1:
        return float(v[0]), float(lo[0]), float(hi[0])
    if log:
        v, lo, hi = np.log(v), np.log(lo), np.log(hi)
    var = _variances(lo, hi, n, confidence)
    two = _two_sessions(v, var, n, confidence) if v.size == 2 else None
    mean, half = two if two else _hksj(v, var, confidence)
    out = (mean, mean - half, mean + half)
    return tuple(float(np.exp(x)) for x in out) if log else tuple(float(x) for x in out)


def _with_ci(values, lows, highs, runs, log: bool) -> tuple[np.ndarray, ...]:
    """The sessions :func:`random_effects` pools: each one's estimate, CI bounds and runs (NaN:
    not given), of those with a CI (and with ``log``, with a positive estimate and bounds)."""
    v, lo, hi = (np.asarray(x, dtype=float) for x in (values, lows, highs))
    n = np.full(v.shape, np.nan) if runs is None else np.asarray(runs, dtype=float)
    ok = np.isfinite(v) & np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
    if log:
        ok &= (v > 0) & (lo > 0)
    return v[ok], lo[ok], hi[ok], n[ok]


def _variances(lo: np.ndarray, hi: np.ndarray, n: np.ndarray, confidence: float) -> np.ndarray:
    """Each session's squared standard error, read off its CI: by the t-quantile with n − 1 df
    where its runs are known (two or more), else by the normal one."""
    z = float(sps.norm.ppf(0.5 + confidence / 2))
    q = np.where(np.isfinite(n) & (n >= 2),
                 sps.t.ppf(0.5 + confidence / 2, np.maximum(n - 1, 1)), z)
    return ((hi - lo) / (2 * q)) ** 2


def _hksj(v: np.ndarray, var: np.ndarray, confidence: float) -> tuple[float, float]:
    """The sessions' random-effects mean (τ² by DerSimonian–Laird) and the half-width of its
    Hartung–Knapp–Sidik–Jonkman CI (t with k − 1 df, never narrower than the DerSimonian–Laird
    one): :func:`random_effects` for three sessions or more, or two that disagree."""
    # By hand: protocol v1's floor (never narrower than DerSimonian–Laird's) is not statsmodels'
    # combine_effects; without it they agree (tests/test_statsmodels.py).
    w = 1 / var
    mean = float((w * v).sum() / w.sum())
    k = v.size
    qstat = float((w * (v - mean) ** 2).sum())
    c = float(w.sum() - (w ** 2).sum() / w.sum())
    tau2 = max(0.0, (qstat - (k - 1)) / c) if c > 0 else 0.0
    w_star = 1 / (var + tau2)
    mean = float((w_star * v).sum() / w_star.sum())
    hk = float((w_star * (v - mean) ** 2).sum() / ((k - 1) * w_star.sum()))
    half = float(sps.t.ppf(0.5 + confidence / 2, k - 1)) * np.sqrt(max(hk, 1 / w_star.sum()))
    return mean, half


def _two_sessions(v: np.ndarray, var: np.ndarray, n: np.ndarray,
                  confidence: float) -> tuple[float, float] | None:
    """Two sessions' mean and CI half-width with the runs as the unit (:func:`random_effects`):
    with ``runs``, every run of both weighted alike, their variance pooled (t with Σ(n − 1)
    df, exact with no session effect); without, inverse-variance and normal. None where the
    two differ beyond that (the two-sample test at ``confidence``)."""
    if np.all(np.isfinite(n) & (n >= 2)):
        df = float((n - 1).sum())
        s2 = float(((n - 1) * var * n).sum() / df)  # a run's variance, pooled
        mean = float((n * v).sum() / n.sum())
        se, se_diff = np.sqrt(s2 / n.sum()), np.sqrt(s2 * (1 / n).sum())
    else:
        df, w = np.inf, 1 / var
        mean = float((w * v).sum() / w.sum())
        se, se_diff = np.sqrt(1 / w.sum()), np.sqrt(var.sum())
    q = float(sps.t.ppf(0.5 + confidence / 2, df))
    if abs(v[0] - v[1]) > q * se_diff:
        return None
    return mean, q * se
