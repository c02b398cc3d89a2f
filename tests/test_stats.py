"""The shared statistics (rtstudy.stats): every test of them is here."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from rtstudy import stats
from rtstudy.stats import CI, format_p, holm, rank_test, spread_test


def test_holm_matches_a_hand_computed_example_and_keeps_nans():
    # Sorted 0.01, 0.03, 0.04, 0.5 over m = 4 tests: ×4, ×3, ×2, ×1, then made monotone.
    adjusted = holm([0.01, 0.04, 0.03, np.nan, 0.5])
    np.testing.assert_allclose(adjusted, [0.04, 0.09, 0.09, np.nan, 0.5])
    assert np.all(holm([0.2, 0.9, 0.6]) <= 1)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([0.5, 1.5])


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
    fit = stats.linear_fit(x, y)
    assert fit.slope.low < 20e-6 < fit.slope.high
    assert fit.intercept.low < 0.05 < fit.intercept.high
    with pytest.raises(ValueError, match="two distinct x"):
        stats.linear_fit([1, 1], [2, 3])


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


@pytest.mark.parametrize("low,high,verdict", [
    (0.55, 0.90, "shown"),          # the whole CI past the threshold
    (0.425, 0.934, "inconclusive"),  # FIFO's 71 % [42.5, 93.4] against 50 %: straddles
    (0.10, 0.45, "refuted"),
    (np.nan, np.nan, "inconclusive"),
])
def test_an_effect_is_shown_only_when_the_cis_far_bound_passes_the_threshold(low, high, verdict):
    assert stats.effect_verdict(stats.Estimate(0.71, low, high, 5, 0.95), 0.5) == verdict


def test_ci_settings_come_from_the_report_parameters():
    ci = CI.from_params({"confidence": 0.9})
    assert ci.confidence == 0.9 and ci.level == "90 %"
    with pytest.raises(ValueError):
        stats.linear_fit([1, 2, 3], [1, 2, 3], confidence=1.2)
