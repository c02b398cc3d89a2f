"""The shared statistics (rtstudy.inference.stats): every test of them is here."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from rtstudy.inference import fits, stats, within
from rtstudy.inference.stats import CI, format_p, holm, rank_test, spread_test


def test_holm_matches_a_hand_computed_example_and_keeps_nans():
    # Sorted 0.01, 0.03, 0.04, 0.5 over m = 4 tests: ×4, ×3, ×2, ×1, then made monotone.
    adjusted = holm([0.01, 0.04, 0.03, np.nan, 0.5])
    np.testing.assert_allclose(adjusted, [0.04, 0.09, 0.09, np.nan, 0.5])
    assert np.all(holm([0.2, 0.9, 0.6]) <= 1)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([0.5, 1.5])



def _holm_by_steps(p: np.ndarray) -> np.ndarray:
    """Holm's procedure as written, not its closed form: at level α, reject the smallest p-values
    in turn while the k-th of m is ≤ α / (m − k + 1) (written as a product, so that α at a
    candidate is met exactly), and stop at the first that is not. A hypothesis's adjusted
    p-value is the smallest α at which it is rejected (1 where none is)."""
    m = p.size
    order = np.argsort(p, kind="stable")
    candidates = sorted({min(1.0, (m - k) * p[order[k]]) for k in range(m)})
    adjusted = np.ones(m)
    for alpha in reversed(candidates):  # the smallest level that rejects each one wins
        for k, i in enumerate(order):
            if (m - k) * p[i] > alpha:
                break
            adjusted[i] = alpha
    return adjusted


def test_holm_is_the_step_down_procedure_at_every_level():
    rng = np.random.default_rng(5)
    for _ in range(12):  # statsmodels computes it, with a gc.collect() per call (0.2 s here)
        m = int(rng.integers(1, 9))
        # Small and large p-values alike, ties among them (rounded to 2 decimals half the time).
        p = np.where(rng.random(m) < 0.5, rng.random(m) ** 4, rng.random(m))
        p = np.round(p, 2) if rng.random() < 0.5 else p
        np.testing.assert_allclose(holm(p), _holm_by_steps(p), rtol=1e-15)

def test_spread_and_rank_tests_tell_spread_from_location():
    rng = np.random.default_rng(1)
    a = rng.normal(10, 1, 400)
    wide = rng.normal(10, 4, 400)       # same centre, larger spread
    shifted = rng.normal(12, 1, 400)    # same spread, other centre
    assert spread_test(a, wide) < 0.001 and spread_test(a, shifted) > 0.01
    assert rank_test(a, shifted) < 0.001 and rank_test(a, wide) > 0.01
    assert np.isnan(spread_test([1.0], [2.0, 3.0])) and np.isnan(rank_test([], [1.0]))


def test_p_values_read_as_a_reader_expects():
    assert [format_p(p) for p in (1e-9, 0.0123, 0.43, np.nan)] == ["< 0.001", "0.012", "0.43",
                                                                     "n/a"]



def test_linear_fit_recovers_a_known_line():
    x = np.array([1000, 2000, 4000, 1000, 2000, 4000], dtype=float)
    rng = np.random.default_rng(0)
    y = 0.05 + 20e-6 * x + rng.normal(0, 1e-4, x.size)
    fit = fits.linear_fit(x, y)
    assert fit.slope.low < 20e-6 < fit.slope.high
    assert fit.intercept.low < 0.05 < fit.intercept.high
    with pytest.raises(ValueError, match="two distinct x"):
        fits.linear_fit([1, 1], [2, 3])


def test_t_intervals_over_runs_and_percentiles_behave():
    x = np.random.default_rng(1).normal(10, 1, 200)
    est = stats.over_runs(x, CI(0.95))
    # Over runs the interval is Student's exactly: mean ± t(n - 1) s / sqrt(n).
    half = sps.t.ppf(0.975, 199) * x.std(ddof=1) / np.sqrt(200)
    assert est.low == pytest.approx(x.mean() - half) and est.high == pytest.approx(x.mean() + half)
    assert est.n == 200
    assert np.isnan(stats.over_runs([3.0, 3.1], CI(0.95)).low), "below 3 runs there is no CI"
    assert np.isnan(stats.over_runs([3.0, 3.0, 3.0], CI(0.95)).low), "no spread, no CI"
    p = stats.percentiles(x, (50, 99, 99.9))
    assert p["p50"] <= p["p99"] <= p["p99.9"] <= p["max"] and p["n"] == 200


def test_two_group_difference_is_welchs_interval():
    a, b = np.array([1.0, 1.4, 0.9, 1.2]), np.array([0.3, 0.35, 0.2])
    est = stats.two_group_ci(a, b, lambda x, y: y.mean() - x.mean(), CI(0.9))
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    df = (va + vb) ** 2 / (va ** 2 / 3 + vb ** 2 / 2)
    half = sps.t.ppf(0.95, df) * np.sqrt(va + vb)
    assert (est.low, est.high) == pytest.approx((b.mean() - a.mean() - half,
                                                 b.mean() - a.mean() + half))
    assert np.isnan(stats.two_group_ci(a, b[:2], lambda x, y: 0.0, CI(0.9)).low)


def test_ci_settings_come_from_the_report_parameters():
    ci = CI.from_params({"confidence": 0.9})
    assert ci.confidence == 0.9 and ci.level == "90 %"
    with pytest.raises(ValueError):
        fits.linear_fit([1, 2, 3], [1, 2, 3], confidence=1.2)


def test_a_runs_own_sampling_variance_comes_from_its_frames():
    rng = np.random.default_rng(7)
    # The mean of 2 000 independent frames of sd 3 has variance 9 / 2 000. One run's estimate
    # scatters by ~15 % (its blocks' own autocovariances), so judge the average of 50 runs.
    runs = 3 * rng.standard_normal((50, 2000))
    ratio = [within.within_run_variance(f, lambda a: a.mean(axis=1)) / (9 / 2000) for f in runs]
    assert np.mean(ratio) == pytest.approx(1.0, abs=0.1)
    frames = runs[0]
    # Frames that move together (a slow wander): blocks keep neighbours, so the variance is
    # larger than independent frames of the same spread would give.
    wander = np.repeat(rng.standard_normal(200), 10) * 3
    iid = rng.permutation(wander)
    mean = lambda a: a.mean(axis=1)  # noqa: E731
    assert within.within_run_variance(wander, mean) > 2 * within.within_run_variance(iid, mean)
    assert np.isnan(within.within_run_variance(np.arange(9.0), mean))
    # The mean's closed form is what the resampling approximates, for frames that move together.
    assert within.block_mean_variance(wander) == pytest.approx(
        within.within_run_variance(wander, mean, n_boot=20_000), rel=0.05)
    assert np.isnan(within.block_mean_variance(np.arange(9.0)))
    # The same run always gives the same variance (a fixed seed), as the report needs.
    assert within.within_run_variance(frames, mean) == within.within_run_variance(frames, mean)



def test_the_block_means_closed_form_is_the_exact_bootstrap_variance():
    # 12 samples: blocks of ⌈12^(1/3)⌉ = 3, 4 blocks a replicate, so every one of the 12⁴
    # replicates (a start each, circular) can be drawn: their mean's variance is the exact
    # bootstrap variance the closed form claims.
    x = np.cumsum(np.random.default_rng(3).standard_normal(12))  # frames that move together
    n, block = 12, 3
    starts = np.indices((n,) * (n // block)).reshape(n // block, -1).T
    index = (starts[..., None] + np.arange(block)) % n
    assert within.block_mean_variance(x) == pytest.approx(
        x[index.reshape(len(starts), n)].mean(axis=1).var(), rel=1e-12)

def test_a_histograms_quantile_and_its_sampling_variance():
    values = np.arange(1.0, 11.0)
    counts = np.array([10, 20, 30, 40, 0, 0, 0, 0, 0, 100])
    # Cumulative shares 0.05 0.15 0.30 0.50 ... 1: the median is the first bin reaching 0.5.
    assert within.quantile_of_counts(values, counts, 0.5).tolist() == [4.0]
    assert within.quantile_of_counts(values, counts, 0.51).tolist() == [10.0]
    one_bin = within.within_run_variance_hist(values, np.array([0, 0, 50, 0, 0, 0, 0, 0, 0, 0]),
                                             lambda v, d: within.quantile_of_counts(v, d, 0.5))
    assert one_bin == 0.0
    # The share of samples in the last bin is a binomial proportion: p(1 − p) / N.
    share = within.within_run_variance_hist(values, counts * 10, lambda v, d: d[:, -1] / d.sum(1),
                                           n_boot=2000)
    assert share == pytest.approx(0.5 * 0.5 / 2000, rel=0.15)
    assert np.isnan(within.within_run_variance_hist(values, np.zeros(10), lambda v, d: d[:, 0]))
    # A P99 of 300 samples is the 3rd largest: too near the edge for its bootstrap.
    assert not within.quantile_bootstrappable(300, 0.99)
    assert within.quantile_bootstrappable(1000, 0.99) and within.quantile_bootstrappable(20, 0.5)


def test_a_runs_rate_has_the_binomial_variance_of_the_pooled_rate():
    # 3 late frames in 3 000: λ = 0.001 per frame, a run of 1 000 frames has variance
    # λ(1 − λ) / 1 000 per frame², 99.9 per (10 000 frames)².
    assert within.event_rate_variance([1, 0, 2], [1000] * 3, 10_000) == pytest.approx(99.9)
    assert within.event_rate_variance([1000, 1000], [1000, 1000], 10_000) == 0.0  # every one
    assert within.event_rate_variance([0, 0], [500, 1500], 10_000) == 0.0
    assert np.isnan(within.event_rate_variance([], [], 10_000))
