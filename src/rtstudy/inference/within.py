"""Variance within one run: a run's statistic's sampling variance from its own samples (a
circular block bootstrap), for histograms too, and when a quantile has enough samples past it.

The between-run and within-run shares of the report's variance components come from here.
"""
from __future__ import annotations

import numpy as np



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
    return within_run_variances_hist(values, counts, {"": statistic}, n_boot, seed)[""]


def within_run_variances_hist(values, counts, statistics: dict, n_boot: int = WITHIN_BOOT,
                              seed: int = 0) -> dict[str, float]:
    """:func:`within_run_variance_hist` of several statistics of one histogram, name → variance,
    from one set of replicates: the same draws (the same seed) each would have made alone, made
    once."""
    v = np.asarray(values, dtype=float)
    c = np.asarray(counts, dtype=float)
    total = int(c.sum())
    if total < MIN_WITHIN or not statistics:
        return {name: np.nan for name in statistics}
    draws = np.random.default_rng(seed).multinomial(total, c / c.sum(), size=n_boot)
    return {name: float(np.asarray(statistic(v, draws), dtype=float).var(ddof=1))
            for name, statistic in statistics.items()}


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
