"""A claim's parts and its verdict over sessions (rtstudy.inference.judge): each rule's words, what
would settle a part, and pooling that lets a new session settle what fewer sessions left open."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats as sps

from rtstudy.experiments.e2_rt_threads.analysis.ladder import LATE_RULE
from rtstudy.inference import judge, meta, rates, stats

AT_LEAST = judge.Rule(judge.AT_LEAST, 0.5)
WITHIN = judge.Rule(judge.WITHIN, 0.1)
BAND = judge.Rule(judge.BAND, (5.0, 40.0))


@pytest.mark.parametrize("rule,low,high,word", [
    (AT_LEAST, 0.55, 0.90, "shown"),           # the whole CI past the threshold
    (AT_LEAST, 0.425, 0.934, "not settled"),   # FIFO's 71 % [42.5, 93.4] against 50 %
    (AT_LEAST, 0.10, 0.45, "refuted"),
    (AT_LEAST, np.nan, np.nan, "not settled"),  # no CI below 3 runs
    (WITHIN, -0.05, 0.08, "equivalent"),
    (WITHIN, -0.05, 0.15, "not settled"),       # merely covering 0 shows nothing
    (WITHIN, 0.12, 0.3, "different"),
    (BAND, 6.0, 30.0, "close"),
    (BAND, 41.0, 60.0, "far"),
    (BAND, 30.0, 60.0, "not settled"),
])
def test_each_rule_gives_its_word_from_the_whole_ci(rule, low, high, word):
    assert rule.state(low, high) == word


def test_an_equivalence_margin_must_be_positive():
    with pytest.raises(ValueError, match="margin"):
        judge.Rule(judge.WITHIN, 0.0).state(-1, 1)


def test_runs_to_settle_follow_the_half_width_at_the_effect_seen():
    # 0.71 [0.425, 0.995] against 0.5 at 5 runs: half-width 0.285, 0.21 from the edge.
    part = judge.Part("FIFO", AT_LEAST, 0.71, 0.425, 0.995, 5)
    assert part.state == "not settled"
    assert part.to_settle() == np.ceil(5 * (0.285 / 0.21) ** 2)
    assert part.to_settle_text() == "about 10 runs in all"
    # Decided parts need nothing; no CI needs the minimum runs; an estimate on the edge never
    # settles.
    assert np.isnan(judge.Part("x", AT_LEAST, 0.8, 0.6, 1.0, 5).to_settle())
    assert judge.Part("x", AT_LEAST, 0.8, np.nan, np.nan, 1).to_settle() == stats.MIN_RUNS
    assert judge.Part("x", AT_LEAST, 0.5, 0.3, 0.7, 5).to_settle_text() == \
        f"more than {judge.MAX_TO_SETTLE} runs"


def test_the_planned_runs_settle_the_part_about_as_often_as_a_coin_or_better():
    # The plan assumes the effect seen is the truth: at that truth, the planned runs' CI
    # excludes the edge in roughly half the draws or more (the estimate lands either side).
    rng = np.random.default_rng(3)
    truth, sd, n0 = 0.62, 0.25, 5
    seen = judge.Part("x", AT_LEAST, truth, *(truth + np.array([-1, 1]) * sps.t.ppf(0.975, 4)
                                             * sd / np.sqrt(n0)), n0)
    n = int(seen.to_settle())
    decided = 0
    for _ in range(2000):
        x = truth + sd * rng.standard_normal(n)
        est = stats.over_runs(x, stats.CI(0.95))
        decided += AT_LEAST.state(est.low, est.high) != "not settled"
    assert n > n0 and decided / 2000 > 0.4


def test_random_effects_pools_agreeing_sessions_to_a_narrower_ci():
    v, lo, hi = [0.6, 0.65, 0.62], [0.45, 0.48, 0.44], [0.75, 0.82, 0.80]
    mean, low, high = meta.random_effects(v, lo, hi, 0.95, runs=[5, 5, 5])
    assert low < mean < high
    assert high - low < min(h - l for l, h in zip(lo, hi))
    # Sessions that disagree more than their CIs allow: τ² widens the pooled CI.
    _, dlow, dhigh = meta.random_effects([0.2, 1.1, 0.6], lo, hi, 0.95, runs=[5, 5, 5])
    assert dhigh - dlow > high - low
    # The log scale for ratios; nothing to pool without a CI.
    r = meta.random_effects([2.0, 2.2, 2.1, 2.0], [1.5, 1.6, 1.6, 1.5], [2.7, 3.0, 2.8, 2.7],
                             0.95, log=True)
    assert 1.5 < r[1] < r[0] < r[2] < 3.0
    assert meta.random_effects([2.0], [1.5], [2.7], 0.95) == (2.0, 1.5, 2.7)  # one is itself
    assert np.isnan(meta.random_effects([1.0], [np.nan], [np.nan], 0.95)[0])


@pytest.mark.parametrize("k,tau", [(2, 0.0), (3, 0.1), (4, 0.05), (4, 0.3)])
def test_the_pooled_ci_covers_the_host_states_value_about_as_stated(k, tau):
    # Sessions of 5 runs each, with and without a session effect.
    rng = np.random.default_rng(11)
    mu, sd, n, sims = 1.0, 0.3, 5, 1500
    t = sps.t.ppf(0.975, n - 1)
    covered = 0
    for _ in range(sims):
        means = mu + tau * rng.standard_normal(k)
        runs = means[:, None] + sd * rng.standard_normal((k, n))
        v, se = runs.mean(axis=1), runs.std(axis=1, ddof=1) / np.sqrt(n)
        _, low, high = meta.random_effects(v, v - t * se, v + t * se, 0.95, runs=[n] * k)
        covered += low <= mu <= high
    # Three sessions say little about the variance between sessions (t with 2 df): their CI
    # errs wide; from four the coverage is about as stated. Two pool their runs: as stated
    # without a session effect.
    assert 0.93 <= covered / sims <= (1.0 if k == 3 else 0.99), covered / sims


def test_two_sessions_with_a_session_effect_cover_less_than_stated():
    """What pooling two sessions' runs costs where sessions differ (random_effects' note):
    a session effect 0.75 × one session's SE keeps ~0.91 (0.95 stated), 2.2 × keeps ~0.78;
    a third session is what restores the stated coverage."""
    rng = np.random.default_rng(11)
    mu, sd, n, sims = 1.0, 0.3, 5, 1500
    t = sps.t.ppf(0.975, n - 1)
    for tau, lowest, highest in ((0.1, 0.88, 0.95), (0.3, 0.74, 0.82)):
        covered = 0
        for _ in range(sims):
            runs = (mu + tau * rng.standard_normal(2))[:, None] + sd * rng.standard_normal((2, n))
            v, se = runs.mean(axis=1), runs.std(axis=1, ddof=1) / np.sqrt(n)
            _, low, high = meta.random_effects(v, v - t * se, v + t * se, 0.95, runs=[n] * 2)
            covered += low <= mu <= high
        assert lowest <= covered / sims <= highest, (tau, covered / sims)


def h1_session(default, asynchronous):
    """One session's H1 parts: (value, half-width) of each slope at 3 runs."""
    from rtstudy.experiments.e1_async_buffer import analysis as e1

    d, a = default, asynchronous
    return e1.h1_parts({"slope": d[0], "low": d[0] - d[1], "high": d[0] + d[1]},
                       {"slope": a[0], "low": a[0] - a[1], "high": a[0] + a[1]}, 3)


def test_a_second_session_can_settle_what_one_left_open_and_a_disagreeing_one_cannot():
    from rtstudy.experiments.e1_async_buffer import analysis as e1

    # Each session alone: the async slope's CI straddles the ±0.1 margin.
    sessions = [h1_session((1.2, 0.1), (0.03, 0.09)), h1_session((1.2, 0.1), (0.04, 0.09)),
                h1_session((1.2, 0.1), (0.035, 0.09))]
    assert all(e1.h1_combine(s)[0] == judge.NOT_SETTLED for s in sessions)
    one = judge.pool_by_name(sessions[:1], 0.95)
    assert e1.h1_combine(one)[0] == judge.NOT_SETTLED  # one session alone says so
    # Two that agree: their runs pooled (the session effect needs three to estimate).
    assert e1.h1_combine(judge.pool_by_name(sessions[:2], 0.95))[0] == "reproduced"
    # Two that differ beyond their runs settle nothing.
    apart = [sessions[0], h1_session((1.2, 0.1), (0.3, 0.09))]
    verdict, why = e1.h1_combine(judge.pool_by_name(apart, 0.95))
    assert verdict == judge.NOT_SETTLED and "sessions would settle it" in why
    three = judge.pool_by_name(sessions, 0.95)
    assert e1.h1_combine(three)[0] == "reproduced"
    assert all(p.level == "sessions" and p.runs == 3 for p in three)


def late(change, base, after, frames=1200, runs=5, frames_after=None):
    """H2's rate part of a change: late frames before and after, spread over ``runs`` runs."""
    frames_after = frames if frames_after is None else frames_after
    rr = rates.rate_ratio([base // runs] * runs, [frames // runs] * runs,
                          [after // runs] * runs, [frames_after // runs] * runs, 0.95)
    return judge.Part(change, LATE_RULE, rr.value, rr.low, rr.high, runs, "runs", rr)


def test_h2_is_judged_on_late_frames_and_pooled_as_counts():
    from rtstudy.experiments.e2_rt_threads.analysis import dataset as e2

    assert e2.h2_combine([late("SCHED_FIFO", 100, 5), late("SCHED_RR", 100, 10)])[0] == \
        "reproduced"
    assert e2.h2_combine([late("SCHED_FIFO", 100, 5), late("SCHED_RR", 100, 95)])[0] == \
        "partly reproduced"
    assert e2.h2_combine([late("SCHED_FIFO", 100, 100)])[0] == "not reproduced"
    # Too few late frames to compare: the same rule as everywhere (no gate read from the
    # outcome), not settled, each such policy's upper bound said.
    verdict, why = e2.h2_combine([late("SCHED_FIFO", 5, 0), late("SCHED_RR", 0, 0)])
    assert verdict == judge.NOT_SETTLED
    assert why.startswith("5 of 1,200 normal_dedicated frames late, too few to compare a policy")
    assert "SCHED_FIFO at most 31 late per 10 000 frames (95% upper bound, 0 in 1,200)" in why
    # A baseline late 5 times, a policy 60 times in 10× the frames: a ratio not settled.
    few = late("SCHED_FIFO", 5, 60, frames_after=12_000)
    assert few.state == rates.NOT_SETTLED
    assert e2.h2_combine([few])[0] == judge.NOT_SETTLED
    # ... and a policy decidedly later than a baseline that was hardly ever late is judged.
    assert e2.h2_combine([late("SCHED_FIFO", 5, 100)])[0] == "not reproduced"
    # 20 → 5 late in 1 200 frames straddles a halving; more sessions like it, pooled, decide.
    session = [late("SCHED_FIFO", 20, 5)]
    assert e2.h2_combine(session)[0] == judge.NOT_SETTLED
    pooled = judge.pool_by_name([session] * 4, 0.95)
    assert pooled[0].rate.events_a == 80 and pooled[0].level == "sessions"
    assert pooled[0].rate.df == 4 * 8  # each session's 5 + 5 runs less 2
    assert e2.h2_combine(pooled)[0] == "reproduced"


def test_a_claim_no_session_could_test_is_not_testable_here():
    from rtstudy.report.section import Verdict
    from rtstudy.report.study_sessions import pooled_verdict

    untestable = Verdict("H4", "", "", judge.NOT_TESTABLE)
    assert pooled_verdict([untestable, untestable], 0.95)[0] == judge.NOT_TESTABLE
    with pytest.raises(ValueError):
        pooled_verdict([], 0.95)


def test_an_equality_holds_over_sessions_only_where_it_held_in_each():
    from rtstudy.report.section import Verdict
    from rtstudy.report.study_sessions import pooled_verdict

    holds, fails = Verdict("H5b", "", "", judge.HOLDS), Verdict("H5b", "", "", judge.FAILS)
    untestable = Verdict("H5b", "", "", judge.NOT_TESTABLE)
    assert pooled_verdict([holds, untestable, holds], 0.95) == (judge.HOLDS, "")
    assert pooled_verdict([holds, fails, holds], 0.95) == (judge.FAILS,
                                                           "failed in 1 of 3 sessions")


def test_e1s_mode_rule_is_claimed_only_where_it_holds_over_every_session():
    from rtstudy.experiments.e1_async_buffer import analysis as e1

    # Each session's headline, as far as modes_over_sessions reads it.
    whole = SimpleNamespace(modes={"runs": 6, "first_wait_agree": 6, "backlog_agree": 4})
    part = SimpleNamespace(modes={"runs": 6, "first_wait_agree": 4, "backlog_agree": 5})
    assert e1.modes_over_sessions([whole]) == {}  # one session: its own words
    over = e1.modes_over_sessions([whole, part, SimpleNamespace(modes={})])
    assert over == {"sessions": 2, "of": 3, "runs": 12, "first_wait_agree": 10,
                    "backlog_agree": 9, "decides": ""}
    assert list(over) == list(e1.ModesOverSessions.__annotations__)
    assert e1.modes_over_sessions([whole] * 2)["decides"] == "first_wait"


def test_a_verdict_is_its_word_wherever_it_goes():
    """The type is for the code; the report, metrics.json and data already written see the word."""
    v = judge.Verdict.NOT_SETTLED
    assert v == "not settled" and f"{v}" == str(v) == "%s" % v == "not settled"
    assert json.dumps({"verdict": v}) == '{"verdict": "not settled"}'
    assert {"not settled": 1}[v] == 1 and judge.Verdict("not settled") is v
    assert judge.NOT_SETTLED is v and judge.NOT_TESTABLE is judge.Verdict.NOT_TESTABLE
