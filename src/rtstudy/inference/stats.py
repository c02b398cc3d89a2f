"""Statistics shared by every experiment's analysis: estimates always come with N and a CI.

Here: an estimate over runs (the run is the unit), two groups and a ratio compared, the
tests and their Holm correction, percentiles, the drift check. Beside it in this room: lines
fitted (:mod:`.fits`), rare events as rates (:mod:`.events`), a run's own variance
(:mod:`.within`) and estimates over sessions (:mod:`.meta`). Functions take arrays or data
frames, never file names.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TypedDict

import numpy as np
from scipy import stats as sps

from rtstudy.inference import criteria


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its confidence interval and the number of values behind it."""

    value: float
    low: float
    high: float
    n: int
    confidence: float

    def format(self, digits: int = 1, unit: str = "") -> str:
        """``12.3 [11.9, 12.8] unit (n = 6)``; the CI is omitted where it is undefined."""
        unit = f" {unit}" if unit else ""
        if not np.isfinite(self.value):
            return "n/a"
        if np.isfinite(self.low) and np.isfinite(self.high):
            return (f"{self.value:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"
                    f"{unit} (n = {self.n})")
        return f"{self.value:.{digits}f}{unit} (n = {self.n}, no CI)"


@dataclass(frozen=True)
class CI:
    """How every confidence interval is made: its level.

    The report's group of ``params.yaml`` is its one source (:meth:`from_params`).
    """

    confidence: float

    @classmethod
    def from_params(cls, report_cfg: dict) -> "CI":
        """From the resolved ``report`` group (``confidence``)."""
        return cls(report_cfg["confidence"])

    @property
    def level(self) -> str:
        """The level in words, e.g. ``95 %``."""
        return f"{self.confidence * 100:g} %"


# The unit of replication is the independent run: below this many runs of a condition no
# interval is called a confidence interval, and no verdict rests on it (rtstudy.inference.criteria).
MIN_RUNS = criteria.value("min_runs")


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def _jackknife_var(x: np.ndarray, statistic) -> float:
    """The jackknife variance of ``statistic(x)``: (n − 1)/n Σ (θ₋ᵢ − θ̄₋)²; s²/n for a mean."""
    loo = np.array([statistic(np.delete(x, i)) for i in range(x.size)], dtype=float)
    return float((x.size - 1) / x.size * ((loo - loo.mean()) ** 2).sum())


def _t_interval(value: float, var: float, df: float, n: int, confidence: float) -> Estimate:
    if not (np.isfinite(var) and var > 0 and np.isfinite(df) and df > 0):
        return Estimate(value, np.nan, np.nan, n, confidence)
    half = float(sps.t.ppf(0.5 + confidence / 2, df) * np.sqrt(var))
    return Estimate(value, value - half, value + half, n, confidence)


def over_runs(values, ci: "CI", statistic=np.mean) -> Estimate:
    """``statistic`` of one value per independent run, with a t-interval over runs.

    The interval is studentized: ``value ± t(n − 1) × se`` with the jackknife's
    standard error, which for the mean is ``s / √n`` (Student's interval exactly).
    A bootstrap over 3–10 runs is not used: its percentile or BCa interval is
    about the runs' range and covers ~70 % (n = 3) to ~89 % (n = 10) instead of
    95 % (tests/test_coverage.py shows both). ``statistic`` must be smooth in the
    values (a mean, a ratio of means), not a median or a maximum.
    Below :data:`MIN_RUNS` runs, or when every run gave the same value, the
    bounds are NaN: there is no spread to judge the CI from.

    Parameters
    ----------
    values : array_like
        One value per run; NaNs are dropped.
    ci : CI
        The level.
    statistic : callable
        Reduces a 1-D array to a number.
    """
    x = _finite(values)
    if x.size == 0:
        return Estimate(np.nan, np.nan, np.nan, 0, ci.confidence)
    value = float(statistic(x))
    if x.size < MIN_RUNS:
        return Estimate(value, np.nan, np.nan, int(x.size), ci.confidence)
    return _t_interval(value, _jackknife_var(x, statistic), x.size - 1, int(x.size),
                       ci.confidence)


@lru_cache(maxsize=None)
def agreement_chance(n: int, confidence: float, draws: int = 200_000, seed: int = 0) -> float:
    """How often two sessions agree on a quantity when nothing differs between them.

    Both sessions draw ``n`` runs from one normal distribution; they agree when each one's mean
    lies inside the other's t-interval over runs (:func:`over_runs`), as
    ``benchmarks/rerun_agreement.py`` judges a pair. Far below the CI's level, because each
    interval is made to hold the true mean, not another estimate with an error of its own: at
    95 %, 0.84 with 3 runs, 0.81 with 5, 0.80 with 10. Monte Carlo, seeded (its SE about 0.001
    at 200 000 draws).

    Returns
    -------
    float
        The probability, in [0, 1]; NaN below :data:`MIN_RUNS` runs (no interval).
    """
    _check_confidence(confidence)
    if n < MIN_RUNS:
        return np.nan
    rng = np.random.default_rng(seed)
    t = sps.t.ppf(0.5 + confidence / 2, n - 1) / np.sqrt(n)
    agree = 0
    for size in np.diff(np.linspace(0, draws, 5).astype(int)):  # in parts: memory stays small
        a, b = rng.standard_normal((2, size, n))
        apart = np.abs(a.mean(axis=1) - b.mean(axis=1))
        agree += int(((apart <= t * a.std(axis=1, ddof=1))
                      & (apart <= t * b.std(axis=1, ddof=1))).sum())
    return agree / draws


def two_group_ci(a, b, statistic, ci: "CI") -> Estimate:
    """``statistic(a, b)`` of two groups of per-run values, with a Welch t-interval over runs.

    Each group's part of the variance is its jackknife variance with the other
    group held (for a difference of means ``s²/n``, so the interval is Welch's
    exactly); the degrees of freedom are Welch–Satterthwaite's. For a smooth function
    of the means this is the delta method's interval, which covers within a few
    points of its level at 3–10 runs per group where a percentile bootstrap covers
    70–90 % (tests/test_coverage.py); a ratio has its own, :func:`ratio_ci`.
    Below :data:`MIN_RUNS` runs in either group, or without spread, the bounds are NaN.

    Parameters
    ----------
    a, b : array_like
        One value per run of each group (e.g. each run's frame-period std, ms).
    statistic : callable
        ``statistic(a, b) -> float`` on two 1-D arrays, smooth in their values.
    ci : CI
        The level.
    """
    a, b = _finite(a), _finite(b)
    if a.size == 0 or b.size == 0:
        return Estimate(np.nan, np.nan, np.nan, int(min(a.size, b.size)), ci.confidence)
    value = float(statistic(a, b))
    n = int(min(a.size, b.size))
    if n < MIN_RUNS:
        return Estimate(value, np.nan, np.nan, n, ci.confidence)
    va = _jackknife_var(a, lambda x: statistic(x, b))
    vb = _jackknife_var(b, lambda y: statistic(a, y))
    if not va + vb > 0:
        return Estimate(value, np.nan, np.nan, n, ci.confidence)
    df = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
    return _t_interval(value, va + vb, df, n, ci.confidence)


def ratio_ci(a, b, ci: "CI") -> Estimate:
    """``mean(b) / mean(a)`` of two groups of positive per-run values, with its t-interval
    on the log scale.

    :func:`two_group_ci` of ``log(mean(b) / mean(a))``, its bounds exponentiated: a
    ratio's interval is not symmetric, and on the log scale it stays positive (a
    reduction ``1 − ratio`` never passes 100 %). It covers 95–96.5 % at 3–10 runs per
    group (tests/test_coverage.py). NaN bounds when a mean is not positive.

    Parameters
    ----------
    a, b : array_like
        One positive value per run of each group (e.g. each run's frame-period std, ms).
    ci : CI
        The level.
    """
    a, b = _finite(a), _finite(b)
    if a.size == 0 or b.size == 0 or a.mean() <= 0 or b.mean() <= 0:
        value = float(b.mean() / a.mean()) if a.size and b.size and a.mean() else np.nan
        return Estimate(value, np.nan, np.nan, int(min(a.size, b.size)), ci.confidence)
    est = two_group_ci(a, b, lambda x, y: np.log(y.mean() / x.mean()), ci)
    return Estimate(float(np.exp(est.value)), float(np.exp(est.low)), float(np.exp(est.high)),
                    est.n, ci.confidence)


def percentiles(values, qs=(50, 99, 99.9)) -> dict[str, float]:
    """Percentiles of ``values`` keyed ``p50``, ``p99``, ``p99.9``, plus ``n`` and ``max``."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    out = {"n": int(x.size)}
    if x.size == 0:
        out.update({f"p{q:g}": np.nan for q in qs})
        out["max"] = np.nan
        return out
    for q, v in zip(qs, np.percentile(x, qs)):
        out[f"p{q:g}"] = float(v)
    out["max"] = float(x.max())
    return out


def spread_test(a, b) -> float:
    """Brown–Forsythe test that ``a`` and ``b`` have equal spread: the two-sided p-value.

    Levene's test centred on the median, which stays valid for the skewed,
    heavy-tailed distributions that latencies and periods have. NaN when either
    sample has fewer than two values or both are constant.
    """
    a, b = _finite(a), _finite(b)
    if a.size < 2 or b.size < 2 or (np.ptp(a) == 0 and np.ptp(b) == 0):
        return float("nan")
    return float(sps.levene(a, b, center="median").pvalue)


def rank_test(a, b) -> float:
    """Mann–Whitney U test of equal location of ``a`` and ``b``: the two-sided p-value.

    NaN when either sample is empty.
    """
    a, b = _finite(a), _finite(b)
    if a.size == 0 or b.size == 0:
        return float("nan")
    return float(sps.mannwhitneyu(a, b, alternative="two-sided").pvalue)


def holm(pvalues) -> np.ndarray:
    """Holm–Bonferroni adjusted p-values, for the tests of one sweep grid taken together.

    Controls the family-wise error rate without assuming the tests are
    independent. NaN p-values stay NaN and do not count as tests.

    Parameters
    ----------
    pvalues : array_like
        Raw p-values in [0, 1].

    Returns
    -------
    ndarray
        Adjusted p-values in the input's order; reject at level alpha where
        adjusted <= alpha.
    """
    p = np.asarray(pvalues, dtype=float)
    bad = p[np.isfinite(p) & ((p < 0) | (p > 1))]
    if bad.size:
        raise ValueError(f"p-values must lie in [0, 1], got {bad[:3].tolist()}")
    out = np.full(p.shape, np.nan)
    idx = np.flatnonzero(np.isfinite(p))
    if idx.size:
        # By hand for speed, step for step as statsmodels' multipletests(method="holm") (equal
        # to it: tests/test_statsmodels.py), which runs gc.collect() on every call: 15 s of
        # the reference report's 2 min (docs/benchmarks.md).
        q = p[idx]
        order = np.argsort(q)
        out[idx[order]] = np.minimum(np.maximum.accumulate(q[order] * np.arange(q.size, 0, -1)),
                                     1)
    return out


def _finite(values) -> np.ndarray:
    x = np.asarray(values, dtype=float)
    return x[np.isfinite(x)]


def format_p(p: float) -> str:
    """A p-value as a reader scans it: ``< 0.001``, ``0.012``, ``0.43``; ``n/a`` for NaN."""
    if not np.isfinite(p):
        return "n/a"
    if p < 0.001:
        return "< 0.001"
    return f"{p:.3f}" if p < 0.1 else f"{p:.2f}"


class DriftCheck(TypedDict):
    """How far a sweep's drift check moved (:func:`drift_check`), in the compared column's unit."""

    label: str  # the condition run first and last
    start: float
    end: float
    difference: float  # end − start
    relative: float  # difference over the ordinary runs' median (NaN without runs)
    minutes: float  # between the two runs' ends
    runs: int  # the condition's ordinary runs
    low: float  # their range
    high: float
    moved: bool | None  # |difference| beyond their spread; None below 2 ordinary runs


def drift_check(runs, drift, value: str) -> DriftCheck | None:
    """How far a sweep's drift check moved, against how far the same condition's runs spread.

    A sweep with a drift check ran one condition once more first and once
    more last (:func:`rtstudy.measure.harness.with_drift`); ``end - start`` is how far
    the host moved over the sweep. One pair has no CI, so the scale it is
    judged on is the spread (max - min) of that condition's ordinary runs.

    Parameters
    ----------
    runs : DataFrame
        One row per ordinary run, with ``label`` and ``value`` columns.
    drift : DataFrame
        The drift check's rows (``drift`` is ``"start"`` or ``"end"``), with
        ``label``, ``finished_utc`` and ``value`` columns.
    value : str
        The column compared, in the unit its experiment reports.

    Returns
    -------
    dict or None
        ``label``, ``start``, ``end``, ``difference`` (end - start),
        ``relative`` (difference over the ordinary runs' median), ``minutes``
        between the two runs' ends, ``runs`` (how many ordinary runs),
        ``low``/``high`` (their range) and ``moved``: True when ``|difference|``
        exceeds their spread, False when it does not, None below 2 ordinary runs.
        None when the sweep had no drift check or one of its two runs is missing.
    """
    if drift is None or len(drift) == 0 or "drift" not in drift.columns:
        return None
    ends = {role: drift[drift["drift"] == role] for role in ("start", "end")}
    if any(len(rows) != 1 for rows in ends.values()):
        return None
    start, end = (ends[role].iloc[0] for role in ("start", "end"))
    same = _finite(runs.loc[runs["label"] == start["label"], value]) if len(runs) else np.array([])
    difference = float(end[value] - start[value])
    minutes = (np.datetime64(end["finished_utc"].rstrip("Z"))
               - np.datetime64(start["finished_utc"].rstrip("Z"))) / np.timedelta64(1, "m")
    median = float(np.median(same)) if same.size else np.nan
    return {"label": start["label"], "start": float(start[value]), "end": float(end[value]),
            "difference": difference,
            "relative": difference / median if same.size and median else np.nan,
            "minutes": float(minutes), "runs": int(same.size),
            "low": float(same.min()) if same.size else np.nan,
            "high": float(same.max()) if same.size else np.nan,
            "moved": None if same.size < 2 else bool(abs(difference) > same.max() - same.min())}
