"""The statistics kept by hand, checked against statsmodels (and what statsmodels does for us).

Where the study keeps its own version, a one-line reason beside the code says why (a method
statsmodels lacks, real-valued quasi-Poisson counts, a frozen protocol v1 rule, speed: its Holm
adjustment runs gc.collect() on every call); these tests hold each one to the library where both
compute the same thing.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.meta_analysis import combine_effects
from statsmodels.stats.multitest import multipletests
from statsmodels.stats import rates as sm_rates

from rtstudy.experiments.e2_rt_threads.checks import recheck
from rtstudy.inference import events, meta, rates
from rtstudy.inference.stats import holm


def test_holm_is_statsmodels_to_the_bit_and_skips_nan():
    p = np.array([0.01, np.nan, 0.04, 0.03, 0.2])
    got = holm(p)
    expected = multipletests(p[[0, 2, 3, 4]], method="holm")[1]
    assert np.isnan(got[1])
    np.testing.assert_array_equal(got[[0, 2, 3, 4]], expected)
    # Random families, with ties and with adjusted values above 1 (each multipletests call
    # collects the garbage: why stats.holm is by hand).
    rng = np.random.default_rng(11)
    for _ in range(12):
        m = int(rng.integers(1, 15))
        q = np.where(rng.random(m) < 0.5, rng.random(m) ** 6, rng.random(m))
        q = np.round(q, 2) if rng.random() < 0.5 else q
        np.testing.assert_array_equal(holm(q), multipletests(q, method="holm")[1])
    # The step-down by hand, as it stood before statsmodels computed it.
    order = np.argsort(p[[0, 2, 3, 4]])
    by_hand = np.maximum.accumulate(np.minimum(1, (4 - np.arange(4)) * p[[0, 2, 3, 4]][order]))
    np.testing.assert_array_equal(expected[order], by_hand)


def _runs(late, n=10_000):
    return pd.DataFrame({"label": "RT", "late": late, "n": n, "period_iqr_us": 50.0})


def test_rerun_checks_holm_by_hand_rejects_what_statsmodels_does():
    rng = np.random.default_rng(7)
    # Ties on a level's edge, then random families (each multipletests call collects the
    # garbage: 0.2 s in a test worker).
    cases = [(np.array([0.0125, 0.0125, 0.0125, 0.9]), 0.05), (np.array([0.02, 0.025, 0.5]), 0.05)]
    for _ in range(10):
        m = int(rng.integers(1, 12))
        p = np.where(rng.random(m) < 0.5, rng.random(m) ** 6, rng.random(m))
        p = np.round(p, 3) if rng.random() < 0.5 else p  # ties
        cases.append((p, float(rng.choice([0.001, 0.01, 0.05]))))
    for p, alpha in cases:
        reject = multipletests(p, alpha, method="holm")[0]
        assert sorted(recheck._holm(p, alpha)) == sorted(np.flatnonzero(reject).tolist())


def test_rerun_check_rejects_the_changed_condition_only():
    # Three conditions, one clearly changed: Holm rejects it and only it.
    a = pd.concat([_runs([5, 6, 4, 5, 5]).assign(label=s) for s in "xyz"])
    b = pd.concat([_runs([5, 4, 6, 5, 5]).assign(label="x"),
                   _runs([6, 5, 4, 5, 5]).assign(label="y"),
                   _runs([30, 28, 33, 31, 29]).assign(label="z")])
    out = recheck.session_test(a, b)
    assert out["differ"] == ["z: late frames"]
    assert not out["passed"]


@pytest.mark.parametrize("ka, kb", [(7, 2), (3, 11), (0, 5), (40, 25)])
def test_exact_conditional_tails_are_statsmodels(ka, kb):
    # Kept by hand (real-valued counts, the central two-sided p); with whole counts and φ = 1
    # each tail is statsmodels' one-sided exact conditional test.
    share = 0.4
    na, nb = 600.0, 400.0
    with np.errstate(divide="ignore"):  # its ratio estimate, with no event in one session
        larger, smaller = (sm_rates.test_poisson_2indep(kb, nb, ka, na, method="exact-cond",
                                                        alternative=side).pvalue
                           for side in ("larger", "smaller"))
    assert recheck._exact_p(ka, kb, share) == pytest.approx(min(1, 2 * min(larger, smaller)),
                                                            rel=1e-9)


@pytest.mark.parametrize("ka, kb", [(20, 8), (5, 30), (1, 0)])
def test_rate_ratio_ci_ends_where_statsmodels_exact_test_reaches_its_level(ka, kb):
    rr = rates.ratio_from_totals(ka, 1000.0, kb, 1500.0, 1.0, 0.95)
    if kb:
        p = sm_rates.test_poisson_2indep(kb, 1500.0, ka, 1000.0, value=rr.low,
                                         method="exact-cond", alternative="larger").pvalue
        assert p == pytest.approx(0.025, rel=1e-7)
    p = sm_rates.test_poisson_2indep(kb, 1500.0, ka, 1000.0, value=rr.high,
                                     method="exact-cond", alternative="smaller").pvalue
    assert p == pytest.approx(0.025, rel=1e-7)


@pytest.mark.parametrize("counts", [[3, 4, 0], [1, 0, 0], [10, 12, 11]])
def test_rate_ci_is_garwoods_for_poisson_counts(counts):
    r = events.pooled_rate(counts, [100.0, 100.0, 100.0], 0.95)
    k, n = sum(counts) / r.dispersion, 300.0 / r.dispersion
    low, high = sm_rates.confint_poisson(k, n, method="exact-c", alpha=0.05)
    assert (r.low, r.high) == pytest.approx((low, high), rel=1e-9)


@pytest.mark.parametrize("ratio, frames", [(0.25, 60_000.0), (4.0, 20_000.0)])
def test_decision_power_near_statsmodels_wald_power_at_large_counts(ratio, frames):
    # Kept by hand: the rule's own power, exactly. With thousands of events the rule's exact
    # conditional CI and the Wald test statsmodels plans for agree: the whole 95 % CI past the
    # margin's end is a one-sided test at 2.5 % against it.
    margin = (0.5, 2.0)
    rate = 1e-3  # the baseline's late frames per frame: 60 and 20 late frames
    ours = rates.decision_power(rate, ratio, frames, margin=margin, min_events=1)
    end = margin[0] if ratio < 1 else margin[1]
    theirs = sm_rates.power_poisson_ratio_2indep(
        rate * ratio, rate, frames, value=end, alpha=0.025,
        alternative="smaller" if ratio < 1 else "larger", return_results=False)
    assert 0.2 < theirs < 0.98
    assert ours == pytest.approx(theirs, abs=0.05)


def test_exact_test_power_matches_statsmodels_tests_drawn():
    # Kept by hand (statsmodels plans two rates by the normal approximation only): the exact
    # test's power, against the rejections of statsmodels' one-sided exact tests on drawn counts.
    rng = np.random.default_rng(3)
    late_a, late_b, share, alpha = 12.0, 30.0, 0.5, 0.01
    ka, kb = rng.poisson(late_a, 1500), rng.poisson(late_b, 1500)
    rejected = 0
    for x, y in zip(ka, kb):
        one = [sm_rates.test_poisson_2indep(y, share, x, 1 - share, method="exact-cond",
                                   alternative=side).pvalue for side in ("larger", "smaller")]
        rejected += 2 * min(one) <= alpha
    drawn = rejected / ka.size
    assert rates.exact_test_power(late_a, late_b, share, alpha) == pytest.approx(drawn, abs=0.04)


# The sessions' own intervals, which the summary also lists, want each one's runs: not asked for.
@pytest.mark.filterwarnings("ignore:`use_t=True` requires")
def test_pooling_is_statsmodels_dl_and_hksj():
    # Kept by hand: protocol v1 floors the HKSJ interval at DerSimonian–Laird's and pools two
    # sessions with the runs as the unit, neither of which combine_effects does. Where neither
    # rule applies (four sessions, the HKSJ interval the wider), they are the same numbers.
    v = np.array([0.1, 0.5, 0.3, 0.9])
    var = np.array([0.01, 0.02, 0.015, 0.03])
    res = combine_effects(v, var, method_re="dl", use_t=True)
    row = res.summary_frame().loc["random effect wls"]
    mean, half = meta._hksj(v, var, 0.95)
    assert mean == pytest.approx(row["eff"], rel=1e-12)
    assert (mean - half, mean + half) == pytest.approx((row["ci_low"], row["ci_upp"]), rel=1e-9)
