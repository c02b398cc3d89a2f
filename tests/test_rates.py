"""Rate ratios of late frames: the CI's coverage, the margin's words, the power plan against a
simulation of the rule itself, and sessions pooled (rtstudy.inference.rates). Synthetic counts
only."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy import stats as sps

from rtstudy.inference import criteria, rates


def _runs(rng, rate, frames, runs, shape=None):
    """Late frames of ``runs`` runs of ``frames`` each; with ``shape``, each run's rate drawn
    from a gamma of that shape around ``rate`` (late frames that come in some runs more)."""
    per_run = rng.gamma(shape, rate / shape, runs) if shape else np.full(runs, rate)
    return rng.poisson(per_run * frames), np.full(runs, float(frames))


@pytest.mark.parametrize("ratio,shape", [(0.5, None), (1.0, None), (0.3, 4.0), (2.0, 4.0)])
def test_the_ci_covers_the_true_ratio_about_as_often_as_it_says(ratio, shape):
    rng = np.random.default_rng(11)
    hits = n = 0
    for _ in range(1500):
        ka, na = _runs(rng, 0.01, 2000, 5, shape)
        kb, nb = _runs(rng, 0.01 * ratio, 2000, 5, shape)
        rr = rates.rate_ratio(ka, na, kb, nb, 0.95)
        if np.isfinite(rr.low):
            n += 1
            hits += rr.low <= ratio <= rr.high
    assert n > 1400
    assert 0.93 <= hits / n <= 0.99, hits / n


@pytest.mark.parametrize("low,high,events,expected", [
    (0.6, 1.8, 200, rates.EQUIVALENT),
    (0.1, 0.5, 200, rates.FEWER),        # the whole CI at or past a halving: worth doing
    (0.1, 0.7, 200, rates.NOT_SETTLED),  # decidedly below 1, not decidedly halved (protocol v1)
    (0.6, 0.9, 200, rates.SOME_FEWER),   # decidedly fewer, decidedly by less than half
    (1.2, 1.9, 200, rates.SOME_MORE),
    (2.0, 5.0, 200, rates.MORE),
    (1.2, 5.0, 200, rates.NOT_SETTLED),
    (0.3, 1.4, 200, rates.NOT_SETTLED),
    (0.0, 0.2, 9, rates.TOO_FEW),
    (0.0, 0.2, 10, rates.FEWER),
])
def test_each_word_is_the_margins(low, high, events, expected):
    rr = rates.RateRatio((low + high) / 2, low, high, events, 0, 1e4, 1e4, 1.0, 0.95)
    assert rates.word(rr, margin=(0.5, 2.0), min_events=10) == expected


def test_too_few_late_frames_is_a_comparison_not_settled_for_a_reader_choosing():
    """The recommendation table decides on fewer / equivalent / more; too few late frames to
    compare is one reason it has not decided yet, as a straddling CI is another."""
    assert rates.decision(rates.TOO_FEW) == rates.NOT_SETTLED
    assert rates.reason(rates.TOO_FEW) == rates.TOO_FEW
    for w in (rates.FEWER, rates.EQUIVALENT, rates.MORE, rates.NOT_SETTLED, rates.NO_CI):
        assert (rates.decision(w), rates.reason(w)) == (w, "")


def test_the_words_use_the_dated_criteria():
    assert criteria.value("e2_late_ratio_margin") == (0.5, 2.0)
    rr = rates.RateRatio(0.9, 0.7, 1.3, 500, 450, 1e5, 1e5, 1.0, 0.95)
    assert rates.word(rr) == rates.EQUIVALENT


def test_no_late_frame_after_a_change_is_a_one_sided_bound():
    rr = rates.rate_ratio([20, 15, 18], [3000] * 3, [0, 0, 0], [3000] * 3, 0.95)
    assert rr.value == 0 and rr.low == 0 and 0 < rr.high < 0.1
    assert rates.word(rr) == rates.FEWER
    none = rates.rate_ratio([0, 0, 0], [3000] * 3, [0, 0, 0], [3000] * 3, 0.95)
    assert np.isnan(none.value) and rates.word(none) == rates.TOO_FEW


def test_over_dispersion_widens_the_interval():
    even = rates.rate_ratio([10, 10, 10, 10], [1000] * 4, [5, 5, 5, 5], [1000] * 4, 0.95)
    lumpy = rates.rate_ratio([40, 0, 0, 0], [1000] * 4, [20, 0, 0, 0], [1000] * 4, 0.95)
    assert even.dispersion == 1 and lumpy.dispersion > 1
    assert even.value == lumpy.value == 0.5
    assert lumpy.high / lumpy.low > even.high / even.low


def _decided(rng, rate, ratio, frames, word, runs=5, draws=600):
    per_run = max(int(frames / runs), 1)
    got = 0
    for _ in range(draws):
        ka, na = _runs(rng, rate, per_run, runs)
        kb, nb = _runs(rng, rate * ratio, per_run, runs)
        got += rates.word(rates.rate_ratio(ka, na, kb, nb, 0.95)) == word
    return got / draws


@pytest.mark.parametrize("ratio,word", [(0.25, rates.FEWER), (0.2, rates.FEWER),
                                        (1.0, rates.EQUIVALENT), (4.0, rates.MORE)])
def test_the_power_plan_gives_the_frames_that_decide_80_percent_of_the_time(ratio, word):
    rate = 0.01  # 100 late frames per 10 000, as a busy host's normal thread
    n = rates.frames_needed(rate, ratio, power=0.8)
    assert np.isfinite(n) and n > 0
    power = _decided(np.random.default_rng(5), rate, ratio, n, word)
    assert 0.7 <= power <= 0.92, (ratio, n, power)
    # Half as many frames decide clearly less often.
    assert _decided(np.random.default_rng(6), rate, ratio, n / 2, word) < power - 0.1


def _session(late_a: int, late_b: int) -> rates.RateRatio:
    """One session's comparison as pooling reads it: its counts in 3 000 frames a side, φ 1,
    5 + 5 runs (8 df); the ratio and its CI are not read."""
    return rates.RateRatio(np.nan, np.nan, np.nan, late_a, late_b, 3000.0, 3000.0, 1.0, 0.95, 8)


def test_a_third_session_can_settle_what_two_left_open():
    """Sessions pool: each narrows the CI; unanimity could only unsettle."""
    session = _session(20, 5)
    one = rates.pooled_over_sessions([session], 0.95)
    two = rates.pooled_over_sessions([session] * 2, 0.95)
    three = rates.pooled_over_sessions([session] * 3, 0.95)
    assert rates.word(one) == rates.word(two) == rates.NOT_SETTLED
    assert rates.word(three) == rates.FEWER
    assert three.high - three.low < two.high - two.low < one.high - one.low


def test_a_drift_both_arms_share_between_sessions_does_not_widen_the_pooled_interval():
    """Protocol v1: φ within sessions. Two sessions whose rates differ tenfold but whose ratio
    is the same give the interval of two that agree; a session more dispersed within widens it."""
    agree = [_session(30, 12)] * 2
    drift = [_session(55, 22), _session(5, 2)]
    a, d = (rates.pooled_over_sessions(rows, 0.95) for rows in (agree, drift))
    assert a.value == pytest.approx(d.value)
    assert d.dispersion == a.dispersion == 1 and (d.low, d.high) == pytest.approx((a.low, a.high))
    lumpy = [agree[0], replace(agree[0], dispersion=3.0)]
    w = rates.pooled_over_sessions(lumpy, 0.95)
    assert w.dispersion == 2.0 and w.high / w.low > a.high / a.low


def test_the_pooled_log_ratio_is_the_inverse_variance_mean_when_sessions_agree():
    value, low, high = rates.pooled_log_ratio([0.8] * 4, [0.6] * 4, [1.0666] * 4, 0.95)
    assert value == pytest.approx(0.8)
    # Four agreeing sessions narrow it; two too (their runs pooled), unless they disagree.
    assert high / low < 1.0666 / 0.6
    two = rates.pooled_log_ratio([0.8] * 2, [0.6] * 2, [1.0666] * 2, 0.95)
    assert two[0] == pytest.approx(0.8) and two[2] / two[1] < 1.0666 / 0.6
    apart = rates.pooled_log_ratio([0.8, 2.0], [0.6, 1.5], [1.0666, 2.666], 0.95)
    assert apart[2] / apart[1] > 2.666 / 1.5
    assert np.isnan(rates.pooled_log_ratio([0.8], [np.nan], [np.nan], 0.95)[0])


def _power_by_every_outcome(rate_a, ratio, frames, phi=1.0, confidence=0.95,
                            margin=(0.5, 2.0), min_events=10):
    """decision_power's sum the long way: every (K, k_b) outcome judged by the rule."""
    mu = frames * rate_a * (1 + ratio) / phi
    totals = np.arange(max(1, int(mu - 8 * np.sqrt(mu) - 10)), int(mu + 8 * np.sqrt(mu) + 10) + 1)
    total = np.repeat(totals, totals + 1)
    kb = np.concatenate([np.arange(t + 1) for t in totals])
    prob = sps.poisson.pmf(total, mu) * sps.binom.pmf(kb, total, ratio / (1 + ratio))
    low, high = rates._bounds(total - kb, kb, 1.0, confidence)
    words = rates._words(total * phi, low, high, margin, min_events)
    target = rates._target(ratio, margin)
    # Within the margin any CI inside it is right: equivalent, or a smaller change.
    right = ({rates.EQUIVALENT, rates.SOME_FEWER, rates.SOME_MORE} if target == rates.EQUIVALENT
             else {target})
    return float(prob[np.isin(words, list(right))].sum())


@pytest.mark.parametrize("rate_a,ratio,frames,phi", [
    (0.01, 0.5, 3000, 1.0), (0.02, 0.25, 1200, 1.0), (0.01, 1.0, 9000, 1.0),
    (0.005, 3.0, 4000, 1.0), (0.03, 0.66, 2000, 2.5), (0.002, 0.5, 2000, 1.0)])
def test_decision_power_finds_the_same_outcomes_as_judging_each_one(rate_a, ratio, frames, phi):
    fast = rates.decision_power(rate_a, ratio, frames, phi, margin=(0.5, 2.0), min_events=10)
    assert fast == pytest.approx(
        _power_by_every_outcome(rate_a, ratio, frames, phi, margin=(0.5, 2.0), min_events=10),
        abs=1e-12)
    assert 0 < fast < 1


@pytest.mark.parametrize("ka,na,kb,nb", [
    (20, 3000, 7, 2500), (3, 1000, 12, 4000), (40, 9000, 41, 9000), (1, 500, 1, 800)])
def test_the_interval_is_the_exact_binomial_test_inverted(ka, na, kb, nb):
    # Given K = k_a + k_b events, k_b is binomial with p(ρ) = N_b·ρ / (N_a + N_b·ρ): each bound
    # is the ratio at which k_b is just at the edge of an equal-tailed 95 % test.
    rr = rates.ratio_from_totals(ka, na, kb, nb, 1.0, 0.95)
    total = ka + kb

    def p(rho):
        return nb * rho / (na + nb * rho)

    assert sps.binom.sf(kb - 1, total, p(rr.low)) == pytest.approx(0.025, rel=1e-9)
    assert sps.binom.cdf(kb, total, p(rr.high)) == pytest.approx(0.025, rel=1e-9)
    assert rr.value == pytest.approx((kb / nb) / (ka / na), rel=1e-12)


@pytest.mark.parametrize("late_a,ratio,share,alpha", [
    (33, 2.0, 0.5, 0.05 / 21), (12, 0.0, 0.5, 0.05 / 21), (20, 2.0, 0.6, 0.05 / 13)])
def test_the_exact_tests_power_is_the_rerun_checks_own_rejection_rate(late_a, ratio, share, alpha):
    """At its best (Poisson counts, φ = 1: one run per session), the re-run check's late-frame
    test rejects as often as :func:`rates.exact_test_power` says."""
    import pandas as pd

    from rtstudy.experiments.e2_rt_threads.checks import recheck

    rng = np.random.default_rng(5)
    frames_a = 10_000
    frames_b = frames_a * share / (1 - share)
    late_b = late_a * ratio * frames_b / frames_a
    draws = 1000
    rejected = sum(
        recheck._late_p(pd.DataFrame({"late": [rng.poisson(late_a)], "n": [frames_a]}),
                         pd.DataFrame({"late": [rng.poisson(late_b)], "n": [frames_b]})) <= alpha
        for _ in range(draws))
    expected = rates.exact_test_power(late_a, late_b, share, alpha)
    # Within four binomial standard errors of the simulation.
    assert rejected / draws == pytest.approx(expected, abs=4 * np.sqrt(0.25 / draws) + 1e-9)


def test_no_late_frame_expected_gives_no_power():
    assert rates.exact_test_power(0, 0, 0.5, 0.05) == 0.0
    # More late frames, more power; a stricter level, less.
    assert rates.exact_test_power(20, 40, 0.5, 0.01) < rates.exact_test_power(60, 120, 0.5, 0.01)
    assert rates.exact_test_power(60, 120, 0.5, 0.001) < rates.exact_test_power(60, 120, 0.5, 0.01)
