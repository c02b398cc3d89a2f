"""Rare-event rates and the quantile a maximum bounds, on synthetic counts (nothing measured)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from rtstudy.stats import MIN_RUNS, pooled_rate, wilks_quantile


def test_zero_late_frames_in_n_is_the_exact_one_sided_bound():
    r = pooled_rate([0, 0, 0], [149, 149, 149], 0.95)
    assert r.bound_only and r.value == 0 and r.low == 0
    assert r.high == pytest.approx(-np.log(0.05) / 447)            # 2.996 / N
    assert r.high == pytest.approx(2.9957 / 447, rel=1e-4)          # ≈ the rule of three
    # The bound is where seeing none has probability 1 − γ.
    assert np.exp(-r.high * 447) == pytest.approx(0.05)


def test_poisson_counts_get_the_exact_garwood_interval():
    # 2 late frames in each of 3 runs of 1000: no spread beyond Poisson, φ = 1.
    r = pooled_rate([2, 2, 2], [1000, 1000, 1000], 0.95)
    assert r.value == pytest.approx(6 / 3000) and r.dispersion == 1 and r.events == 6
    assert r.low == pytest.approx(sps.chi2.ppf(0.025, 12) / 2 / 3000)
    assert r.high == pytest.approx(sps.chi2.ppf(0.975, 14) / 2 / 3000)


def test_late_frames_in_one_run_only_widen_the_interval_by_their_dispersion():
    # 12 late frames, all in one of 3 runs: expected 4 per run, Pearson χ² = (16 + 16 + 64) / 4
    # = 24 over 2 degrees of freedom, φ = 12: the interval of 1 event in 250 frames.
    r = pooled_rate([0, 0, 12], [1000, 1000, 1000], 0.95)
    assert r.value == pytest.approx(0.004) and r.dispersion == pytest.approx(12)
    assert r.low == pytest.approx(sps.gamma.ppf(0.025, 1) / 250)
    assert r.high == pytest.approx(sps.gamma.ppf(0.975, 2) / 250)
    even = pooled_rate([4, 4, 4], [1000, 1000, 1000], 0.95)
    assert r.high > 2 * even.high and r.low < even.low


def test_below_three_runs_a_rate_has_no_ci_and_bad_counts_are_refused():
    for events in ([0, 0], [3, 1]):
        r = pooled_rate(events, [149] * len(events), 0.95)
        assert r.runs < MIN_RUNS and np.isnan(r.low) and np.isnan(r.high)
        assert r.value == pytest.approx(sum(events) / (149 * len(events)))
    per = pooled_rate([1, 0, 2], [100, 100, 100], 0.95).per(10_000)
    assert per.value == pytest.approx(100) and per.events == 3
    with pytest.raises(ValueError, match="counts >= 0"):
        pooled_rate([1.5, 0, 0], [10, 10, 10], 0.95)
    with pytest.raises(ValueError, match="> 0 in every run"):
        pooled_rate([0, 0, 0], [10, 0, 10], 0.95)
    with pytest.raises(ValueError, match="aligned"):
        pooled_rate([0, 0], [10, 10, 10], 0.95)


def test_the_maximum_of_n_frames_bounds_the_quantile_wilks_gives():
    p = wilks_quantile(149, 0.95)
    assert p == pytest.approx(0.98, abs=5e-4)
    # N is exactly the size Wilks' condition asks for that quantile.
    assert 149 == pytest.approx(np.log(1 - 0.95) / np.log(p))
    assert wilks_quantile(745, 0.95) > 0.995 > p
    with pytest.raises(ValueError, match="n >= 1"):
        wilks_quantile(0, 0.95)
