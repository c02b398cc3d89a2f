"""The shared statistics (rtstudy.stats): every test of them is here."""
from __future__ import annotations

import numpy as np
import pytest

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


def test_bootstrap_ci_and_percentiles_behave():
    x = np.random.default_rng(1).normal(10, 1, 200)
    est = stats.bootstrap_ci(x, np.mean, 0.95, 500, 0)
    assert est.low < est.value < est.high and est.n == 200
    assert np.isnan(stats.bootstrap_ci([3.0]).low)
    p = stats.percentiles(x, (50, 99, 99.9))
    assert p["p50"] <= p["p99"] <= p["p99.9"] <= p["max"] and p["n"] == 200
    with pytest.raises(ValueError):
        stats.bootstrap_ci(x, confidence=1.2)


def test_ci_settings_come_from_the_report_parameters():
    ci = CI.from_params({"confidence": 0.9, "bootstrap_resamples": 300, "random_seed": 4})
    assert ci.kwargs == {"confidence": 0.9, "n_resamples": 300, "seed": 4}
    assert ci.level == "90 %"
