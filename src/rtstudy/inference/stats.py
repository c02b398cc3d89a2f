"""Statistics shared by every experiment's analysis: estimates always come with N and a CI.

Functions take arrays or data frames, never file names.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

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


@dataclass(frozen=True)
class LinearFit:
    """``y = intercept + slope * x`` by least squares, with t-based CIs."""

    slope: Estimate
    intercept: Estimate
    r_squared: float


def linear_fit(x, y, confidence: float = 0.95) -> LinearFit:
    """Ordinary least squares of ``y`` on ``x`` with CIs for slope and intercept.

    Needs at least two distinct ``x``; the CIs need at least three points.
    """
    _check_confidence(confidence)
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    n = int(x.size)
    if n < 2 or np.ptp(x) == 0:
        raise ValueError(f"a linear fit needs at least two distinct x values, got {np.unique(x)}")
    res = sps.linregress(x, y)
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
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
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
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    n = int(x.size)
    if n < 2 or np.ptp(x) == 0:
        raise ValueError(f"a linear fit needs at least two distinct x values, got {np.unique(x)}")
    res = sps.linregress(x, y)
    value = float(res.intercept + res.slope * x0)
    if n < 3:
        return Estimate(value, np.nan, np.nan, n, confidence)
    resid = y - (res.intercept + res.slope * x)
    s2 = float((resid ** 2).sum() / (n - 2))
    se = np.sqrt(s2 * (1 / n + (x0 - x.mean()) ** 2 / ((x - x.mean()) ** 2).sum()))
    t = sps.t.ppf(0.5 + confidence / 2, n - 2)
    return Estimate(value, value - t * se, value + t * se, n, confidence)


def percentiles(values, qs=(50, 99, 99.9)) -> dict:
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
    m = idx.size
    if m == 0:
        return out
    order = idx[np.argsort(p[idx], kind="stable")]
    # Step-down: the k-th smallest is multiplied by (m - k), then made monotone.
    adjusted = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    out[order] = adjusted
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


def drift_check(runs, drift, value: str) -> dict | None:
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


WITHIN_BOOT = 200  # bootstrap replicates of one run's statistic: a variance, not a tail
MIN_WITHIN = 10    # a run's fewest samples for its within-run variance
MIN_BEYOND = 10    # samples past a quantile for its bootstrap (quantile_bootstrappable)


def _blocked(samples) -> tuple[np.ndarray, int] | None:
    """A run's finite samples and the circular block bootstrap's block length, ⌈n^(1/3)⌉
    (the usual length for a variance); None below :data:`MIN_WITHIN` samples."""
    x = np.asarray(samples, dtype=float)
    x = x[np.isfinite(x)]
    return (x, int(np.ceil(x.size ** (1 / 3)))) if x.size >= MIN_WITHIN else None


def within_run_variance(samples, statistic, n_boot: int = WITHIN_BOOT, seed: int = 0) -> float:
    """The sampling variance of one run's statistic from the run's own samples (unit²).

    A circular block bootstrap (Politis & Romano 1992) with blocks of ⌈n^(1/3)⌉ successive
    samples, the usual length for a variance: frame periods are not independent (a late
    frame makes one period long and the next short), and blocks keep such neighbours
    together. What it measures is how far the statistic would move had the run drawn other
    frames from the same process: the *within-run* part of the variation between runs.
    Not for a maximum, whose bootstrap is known to fail; NaN below :data:`MIN_WITHIN` samples.

    Parameters
    ----------
    samples : array_like of float
        The run's samples in time order (non-finite ones are left out).
    statistic : callable
        Maps a (replicates × n) array to one value per row (e.g. an IQR along ``axis=1``).
    n_boot : int
        Replicates.
    seed : int
        The generator's seed: the same run gives the same variance in every report.
    """
    blocked = _blocked(samples)
    if blocked is None:
        return np.nan
    x, block = blocked
    n = x.size
    blocks = int(np.ceil(n / block))
    starts = np.random.default_rng(seed).integers(0, n, size=(n_boot, blocks))
    index = (starts[..., None] + np.arange(block)) % n
    replicates = np.asarray(statistic(x[index.reshape(n_boot, -1)[:, :n]]), dtype=float)
    return float(replicates.var(ddof=1))


def block_mean_variance(samples) -> float:
    """:func:`within_run_variance` of the samples' mean, in closed form (unit²): the circular
    block bootstrap's mean is the mean of n / L independent block means, each block's start
    uniform over the n samples, so its variance is the n circular block means' variance × L / n.
    Exact where the resampling only approximates it, and cheap for runs of 10⁴ samples and
    more. NaN below :data:`MIN_WITHIN` samples."""
    blocked = _blocked(samples)
    if blocked is None:
        return np.nan
    x, block = blocked
    n = x.size
    sums = np.concatenate([[0.0], np.cumsum(np.concatenate([x, x[:block - 1]]))])
    means = (sums[block:block + n] - sums[:n]) / block
    return float(means.var() * block / n)


def within_run_variance_hist(values, counts, statistic, n_boot: int = WITHIN_BOOT,
                             seed: int = 0) -> float:
    """:func:`within_run_variance` for a run recorded as a histogram (unit²).

    Multinomial resampling of the counts: the samples are taken as independent, because a
    histogram keeps no order to draw blocks from (so this can understate the variance of
    a run whose rare long samples cluster). NaN below :data:`MIN_WITHIN` samples.

    Parameters
    ----------
    values, counts : array_like
        The bins' values and how many samples fell in each.
    statistic : callable
        Maps ``(values, counts)``, ``counts`` a (replicates × bins) array, to one value per row.
    n_boot, seed :
        As for :func:`within_run_variance`.
    """
    v = np.asarray(values, dtype=float)
    c = np.asarray(counts, dtype=float)
    total = int(c.sum())
    if total < MIN_WITHIN:
        return np.nan
    draws = np.random.default_rng(seed).multinomial(total, c / c.sum(), size=n_boot)
    return float(np.asarray(statistic(v, draws), dtype=float).var(ddof=1))


def quantile_of_counts(values, counts, q: float) -> np.ndarray:
    """The ``q``-quantile (0–1) of each row of ``counts`` over the bins' ``values`` (sorted):
    the value of the first bin whose cumulative count reaches ``q`` × the row's total."""
    c = np.atleast_2d(np.asarray(counts, dtype=float))
    reached = np.cumsum(c, axis=1) >= q * c.sum(axis=1, keepdims=True)
    return np.asarray(values, dtype=float)[np.argmax(reached, axis=1)]


def event_rate_variance(events, exposure, per: float = 1.0) -> float:
    """The within-run variance of one run's event rate (``per`` units of exposure), averaged
    over runs: each unit (a frame) has the event or not, at the runs' pooled rate
    λ = ΣK / ΣN, so a run's rate K / N has the binomial variance λ(1 − λ) / N (λ / N, the
    Poisson one, for rare events). The over-dispersion between runs is what is left over."""
    k = np.asarray(events, dtype=float)
    n = np.asarray(exposure, dtype=float)
    if n.size == 0 or not (n > 0).all():
        return np.nan
    rate = min(k.sum() / n.sum(), 1.0)
    return float(np.mean(rate * (1 - rate) / n) * per ** 2)


def quantile_bootstrappable(n: int, q: float) -> bool:
    """Whether the bootstrap can give a ``q``-quantile's (0–1) variance from ``n`` samples: at
    least :data:`MIN_BEYOND` of them on each side of it. Nearer the edge, the quantile is one
    of a few extreme samples, and its bootstrap fails as a maximum's does."""
    return n * min(q, 1 - q) >= MIN_BEYOND


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
        (:func:`within_run_variance`). NaN where a session's runs gave no CI; ω² NaN where
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
    t-intervals of :func:`over_runs`; for an asymmetric interval, a rate's or a ratio's, the
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
    CI was made with (n − 1 df, :func:`over_runs`), else by the normal one. τ², the variance
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
    v, lo, hi = (np.asarray(x, dtype=float) for x in (values, lows, highs))
    n = np.full(v.shape, np.nan) if runs is None else np.asarray(runs, dtype=float)
    ok = np.isfinite(v) & np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
    if log:
        ok &= (v > 0) & (lo > 0)
    if not ok.any():
        return np.nan, np.nan, np.nan
    v, lo, hi, n = v[ok], lo[ok], hi[ok], n[ok]
    if v.size == 1:
        return float(v[0]), float(lo[0]), float(hi[0])
    if log:
        v, lo, hi = np.log(v), np.log(lo), np.log(hi)
    z = float(sps.norm.ppf(0.5 + confidence / 2))
    q = np.where(np.isfinite(n) & (n >= 2),
                 sps.t.ppf(0.5 + confidence / 2, np.maximum(n - 1, 1)), z)
    var = ((hi - lo) / (2 * q)) ** 2
    w = 1 / var
    mean = float((w * v).sum() / w.sum())
    k = v.size
    qstat = float((w * (v - mean) ** 2).sum())
    c = float(w.sum() - (w ** 2).sum() / w.sum())
    two = _two_sessions(v, var, n, confidence) if k == 2 else None
    if two:
        mean, half = two
    else:
        tau2 = max(0.0, (qstat - (k - 1)) / c) if c > 0 else 0.0
        w_star = 1 / (var + tau2)
        mean = float((w_star * v).sum() / w_star.sum())
        hk = float((w_star * (v - mean) ** 2).sum() / ((k - 1) * w_star.sum()))
        half = float(sps.t.ppf(0.5 + confidence / 2, k - 1)) * np.sqrt(max(hk,
                                                                           1 / w_star.sum()))
    out = (mean, mean - half, mean + half)
    return tuple(float(np.exp(x)) for x in out) if log else tuple(float(x) for x in out)


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
