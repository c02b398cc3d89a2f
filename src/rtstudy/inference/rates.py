"""Rare events compared between two conditions: a rate ratio with a CI made for counts, the
word a pre-registered margin gives it, and the frames per condition a decision needs.

Late frames are counts of rare events in runs of frames. Two conditions are compared by the
ratio of their rates, never by whether their two CIs overlap (a test at about p < 0.006 that
throws power away). The interval is the exact conditional one: given K = K_a + K_b events,
K_b is binomial with p = N_b·ρ / (N_a + N_b·ρ), so a Clopper–Pearson interval for p is one for ρ.
Runs whose rates differ more than Poisson's (late frames come in some runs only) widen it by the
Pearson over-dispersion φ of the runs' counts, pooled over both conditions: the counts and the
exposure are divided by φ, the quasi-Poisson interval (:func:`rtstudy.inference.events.pooled_rate`
treats one rate the same way). It holds with zero events on one side (a one-sided bound) and
has no answer with none on either.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy import special as spc
from scipy import stats as sps

from rtstudy.inference import criteria
from rtstudy.inference.events import event_counts
from rtstudy.inference.meta import random_effects
from rtstudy.inference.stats import MIN_RUNS

# The words, in one place: what a rate ratio's CI shows against the margin (protocol v1: each
# word says exactly what its sentence does). FEWER / MORE: at least halved / doubled, the whole
# CI past the margin (the smallest change worth making: a "Do" or an "Avoid"); SOME_FEWER /
# SOME_MORE: a decided change decidedly smaller than that (the whole CI between the margin's
# end and 1); EQUIVALENT: the whole CI inside the margin, across 1.
FEWER, SOME_FEWER, EQUIVALENT, SOME_MORE, MORE, NOT_SETTLED, TOO_FEW, NO_CI = (
    "fewer", "fewer, by less than half", "equivalent", "more, by less than double", "more",
    "not settled", "too few late frames to compare", "no CI")
DECIDED = (FEWER, SOME_FEWER, EQUIVALENT, SOME_MORE, MORE)


@dataclass(frozen=True)
class RateRatio:
    """Condition b's event rate over condition a's, with its CI.

    Attributes
    ----------
    value, low, high : float
        The ratio (b over a) and its CI; ``high`` is inf where a had no event, ``low`` 0 where
        b had none; all NaN where neither had one.
    events_a, events_b : int
        Events counted in each condition (over all its runs).
    exposure_a, exposure_b : float
        Units (frames) each was counted in.
    dispersion : float
        φ ≥ 1, the pooled Pearson over-dispersion of the runs' counts (NaN with < 2 runs
        per condition having events).
    confidence : float
        The CI's level.
    df : int
        The degrees of freedom behind φ: the runs of both conditions less 2 (0 where not
        counted), which weigh each session's φ when sessions are pooled
        (:func:`pooled_over_sessions`).
    """

    value: float
    low: float
    high: float
    events_a: int
    events_b: int
    exposure_a: float
    exposure_b: float
    dispersion: float
    confidence: float
    df: int = 0


def _pearson(k: np.ndarray, n: np.ndarray) -> tuple[float, int]:
    """The Pearson χ² of one condition's run counts around its pooled rate, and its df."""
    if k.size < 2 or k.sum() == 0:
        return 0.0, max(k.size - 1, 0)
    expected = k.sum() / n.sum() * n
    return float(((k - expected) ** 2 / expected).sum()), k.size - 1


def _counts(events, exposure, what: str) -> tuple[np.ndarray, np.ndarray]:
    """One condition's runs (:func:`rtstudy.inference.events.event_counts`), at least one."""
    try:
        k, n = event_counts(events, exposure)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None
    if k.size == 0:
        raise ValueError(f"{what}: no run")
    return k, n


def dispersion(*conditions: tuple) -> float:
    """φ = max(1, ΣX² / Σdf) pooled over conditions, each ``(events, exposure)`` per run;
    1 where no condition has two runs with events to judge it by."""
    chi2, df = 0.0, 0
    for k, n in conditions:
        c, d = _pearson(np.asarray(k, dtype=float), np.asarray(n, dtype=float))
        chi2, df = chi2 + c, df + d
    return max(1.0, chi2 / df) if df else 1.0


def ratio_from_totals(k_a: float, n_a: float, k_b: float, n_b: float, phi: float,
                      confidence: float) -> RateRatio:
    """:class:`RateRatio` from each condition's total events and exposure and a known φ."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    nan = float("nan")
    if k_a + k_b == 0:
        return RateRatio(nan, nan, nan, int(k_a), int(k_b), n_a, n_b, phi, confidence)
    value = (k_b / n_b) / (k_a / n_a) if k_a else float("inf")
    low, high = _bounds(k_a / phi, k_b / phi, n_a / n_b, confidence)
    return RateRatio(value, float(low), float(high), int(k_a), int(k_b), n_a, n_b, phi,
                     confidence)


# By hand: statsmodels' confint_poisson_2indep has no exact conditional interval; its
# test_poisson_2indep("exact-cond") reaches its level at these bounds (tests/test_statsmodels.py).
def _bounds(a, b, scale: float, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The CI of the ratio from the quasi-Poisson counts before (``a``) and after (``b``):
    φ times the Poisson variance is Poisson of K/φ, so the counts come divided by φ; their sum
    is what the binomial conditions on, and the exposures' ratio ``scale`` = N_a / N_b is
    unchanged by the scaling. Arrays or scalars alike."""
    return _low(a, b, scale, confidence), _high(a, b, scale, confidence)


# Each bound on its own: the power search asks for one at a time, thousands of times, and the
# beta quantile is most of the report's arithmetic. They are taken from scipy.special: the
# function scipy.stats.beta.ppf calls (the same values), without its per-call checks.
def _low(a, b, scale: float, confidence: float) -> np.ndarray:
    """:func:`_bounds`' lower bound."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_low = np.where(b > 0, spc.betaincinv(b, a + 1, (1 - confidence) / 2), 0.0)
        return p_low / (1 - p_low) * scale


def _high(a, b, scale: float, confidence: float) -> np.ndarray:
    """:func:`_bounds`' upper bound (inf where ``a`` is 0)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_high = np.where(a > 0, spc.betaincinv(b + 1, a, 1 - (1 - confidence) / 2), 1.0)
        return np.where(p_high < 1, p_high / (1 - p_high) * scale, np.inf)


def _words(events, low, high, margin: tuple[float, float], min_events: int) -> np.ndarray:
    """:func:`word`'s rule on arrays: events seen in both conditions, the CI's bounds."""
    events, low, high = (np.asarray(x, dtype=float) for x in (events, low, high))
    return np.select([events < min_events, np.isnan(low), high <= margin[0], low >= margin[1],
                      (margin[0] <= low) & (high < 1), (low > 1) & (high <= margin[1]),
                      (margin[0] <= low) & (high <= margin[1])],
                     [TOO_FEW, NO_CI, FEWER, MORE, SOME_FEWER, SOME_MORE, EQUIVALENT],
                     NOT_SETTLED)


def rate_ratio(events_a, exposure_a, events_b, exposure_b, confidence: float) -> RateRatio:
    """Condition b's rate of rare events over condition a's, from each run's counts.

    Parameters
    ----------
    events_a, events_b : array_like of int
        Events in each run of condition a (the baseline) and b (the change).
    exposure_a, exposure_b : array_like of float
        Units each run counted them in (frames), aligned with the events.
    confidence : float
        The CI's level, in (0, 1).

    Returns
    -------
    RateRatio
        The ratio with the exact conditional CI, widened by the runs' pooled φ.
    """
    ka, na = _counts(events_a, exposure_a, "condition a")
    kb, nb = _counts(events_b, exposure_b, "condition b")
    rr = replace(ratio_from_totals(ka.sum(), na.sum(), kb.sum(), nb.sum(),
                                   dispersion((ka, na), (kb, nb)), confidence),
                 df=max(ka.size + kb.size - 2, 0))
    if min(ka.size, kb.size) < MIN_RUNS:
        # Neither the spread between runs nor the frames' independence can be judged.
        return replace(rr, low=float("nan"), high=float("nan"))
    return rr


def word(rr: RateRatio, margin: tuple[float, float] | None = None,
         min_events: int | None = None) -> str:
    """What ``rr`` shows, against the pre-registered margin (``criteria: e2_late_ratio_margin``
    and ``e2_min_late_events``).

    ``fewer`` / ``more``: the whole CI at or past the margin's lower / upper end (at least
    halved / doubled: a change worth making or avoiding); ``fewer, by less than half`` /
    ``more, by less than double``: the whole CI between the margin's end and 1 (a decided
    change smaller than that); ``equivalent``: the whole CI inside the margin, across 1
    (neither halved nor doubled); ``not settled``: the CI reaches past one of the margin's ends
    and is not wholly past it; ``too few late frames to compare``: fewer events than
    ``min_events`` in both conditions together, too few for any interval to say; ``no CI``:
    fewer than :data:`rtstudy.inference.stats.MIN_RUNS` runs in a condition.
    """
    margin = margin or criteria.value("e2_late_ratio_margin")
    min_events = criteria.value("e2_min_late_events") if min_events is None else min_events
    return str(_words(rr.events_a + rr.events_b, rr.low, rr.high, margin, min_events))


def decision(state: str) -> str:
    """What a :func:`word` decides for a reader choosing what to do: too few late frames is
    a comparison not yet settled (more frames would settle it), the other words as they are.
    H2 keeps the difference (a policy with too few late frames gets its upper bound); the
    recommendation table and the re-run checks compare decisions."""
    return NOT_SETTLED if state == TOO_FEW else state


def reason(state: str) -> str:
    """Why :func:`decision` leaves ``state`` not settled where its CI does not say so: the
    too-few word itself; empty for every other word."""
    return state if state == TOO_FEW else ""


def _z(p: float) -> float:
    return float(sps.norm.ppf(p))


def _target(ratio: float, margin: tuple[float, float]) -> str:
    """The decision a true ``ratio`` should get: past the margin's ends fewer / more; within
    it, a CI within the margin (``equivalent``, or a smaller change on the ratio's side of 1:
    each a right answer, planned as :data:`EQUIVALENT`)."""
    if margin[0] < ratio < margin[1]:
        return EQUIVALENT
    return FEWER if ratio < 1 else MORE


def decision_power(rate_a: float, ratio: float, frames: float, phi: float = 1.0,
                   confidence: float = 0.95, margin: tuple[float, float] | None = None,
                   min_events: int | None = None) -> float:
    """The probability that :func:`word` gives a true ``ratio`` its word (:func:`_target`)
    with ``frames`` per condition, computed exactly: the total of late frames is Poisson,
    the change's share of them binomial, and the rule itself (:func:`_bounds`,
    :func:`_words`) finds, per total, where the word's outcomes begin and end.

    φ > 1 is taken as Poisson counts of K/φ events (the quasi-Poisson scaling the interval
    uses), so the result is exact for φ = 1 and close otherwise.
    """
    # By hand: statsmodels' power_poisson_ratio_2indep is the Wald test's, not this rule's (close
    # at large counts: tests/test_statsmodels.py).
    margin = margin or criteria.value("e2_late_ratio_margin")
    min_events = criteria.value("e2_min_late_events") if min_events is None else min_events
    target = _target(ratio, margin)
    mu = frames * rate_a * (1 + ratio) / phi
    spread = 8 * np.sqrt(mu) + 10
    totals = np.arange(max(1, int(mu - spread)), int(mu + spread) + 1)
    # Given K total late frames, the CI's bounds rise with k_b, the change's share, so each
    # word is one run of k_b: found by bisection, its chance is a difference of binomial
    # CDFs (the same sum as judging every outcome, in a thousandth of the time).
    def low(kb):
        return _low(totals - kb, kb, 1.0, confidence)

    def high(kb):
        return _high(totals - kb, kb, 1.0, confidence)

    if target == EQUIVALENT:
        # The CI within the margin: equivalent, or a smaller change either side of 1.
        start = _first_k(totals, lambda kb: low(kb) >= margin[0])
        stop = _first_k(totals, lambda kb: high(kb) > margin[1])
    elif target == FEWER:
        start = np.zeros_like(totals)
        stop = _first_k(totals, lambda kb: high(kb) > margin[0])
    else:
        start = _first_k(totals, lambda kb: low(kb) >= margin[1])
        stop = totals + 1
    p_b = ratio / (1 + ratio)
    inside = np.where(stop > start, sps.binom.cdf(stop - 1, totals, p_b)
                      - sps.binom.cdf(start - 1, totals, p_b), 0.0)
    # Too few late frames seen (K·φ of them) is no decision, whatever the split.
    inside = np.where(totals * phi < min_events, 0.0, inside)
    return float((sps.poisson.pmf(totals, mu) * inside).sum())


def _first_k(totals: np.ndarray, holds) -> np.ndarray:
    """Per total K, the least k_b in [0, K + 1] at which ``holds(k_b)`` (monotone in k_b:
    false, then true) is true; K + 1 where it never is. All totals bisected at once."""
    low = np.full(totals.shape, -1)  # holds nowhere at or below low
    high = totals + 1                # holds at high (K + 1 stands for "never")
    while np.any(high - low > 1):
        mid = (low + high) // 2
        ok = np.where(high - low > 1, holds(np.clip(mid, 0, totals)), False)
        high = np.where(ok, mid, high)
        low = np.where(~ok & (high - low > 1), mid, low)
    return high


def frames_needed(rate_a: float, ratio: float, phi: float = 1.0, confidence: float = 0.95,
                  power: float = 0.8, margin: tuple[float, float] | None = None) -> float:
    """Frames per condition for :func:`word` to decide with probability ``power``.

    Where the true ratio is outside the margin, the frames for the whole CI to lie past the
    margin's end (``fewer`` or ``more``); inside it, the frames for the CI to fit within the
    margin (``equivalent``, or a smaller change on the ratio's side of 1).
    The normal approximation of the log rate ratio, SE² = φ (1/(λ_a n) + 1/(λ_b n)), brackets
    the answer; :func:`decision_power` (the rule itself, exactly) then finds it, to 2 %.
    φ is taken as known; the rule estimates it from the runs (never below 1), so with 5 runs
    per condition it decides about 72 % of the time at this size (docs/benchmarks.md).

    Parameters
    ----------
    rate_a : float
        The baseline's events per frame (> 0).
    ratio : float
        The true ratio to plan for (> 0), e.g. the margin's 0.5 for "a fix that halves".
    phi : float
        The over-dispersion to expect (≥ 1).

    Returns
    -------
    float
        Frames per condition (inf where no size decides, e.g. a ratio on the margin's edge).
    """
    if rate_a <= 0 or ratio <= 0:
        raise ValueError(f"rate_a and ratio must be > 0, got {rate_a} and {ratio}")
    margin = margin or criteria.value("e2_late_ratio_margin")
    z_alpha = _z(1 - (1 - confidence) / 2)
    unit_var = phi * (1 / rate_a + 1 / (rate_a * ratio))  # n · SE² of the log ratio
    log_r = np.log(ratio)
    if _target(ratio, margin) == EQUIVALENT:
        room = min(log_r - np.log(margin[0]), np.log(margin[1]) - log_r)
        z_beta = _z(1 - (1 - power) / 2) if np.isclose(log_r, 0) else _z(power)
    else:
        # The whole CI past the margin's end (protocol v1's fewer / more).
        room = np.log(margin[0]) - log_r if ratio < 1 else log_r - np.log(margin[1])
        z_beta = _z(power)
    if room <= 0:
        return float("inf")
    guess = float(unit_var * (z_alpha + z_beta) ** 2 / room ** 2)

    def enough(n: float) -> bool:
        return decision_power(rate_a, ratio, n, phi, confidence, margin) >= power

    low, high = guess / 4, guess
    while not enough(high):
        low, high = high, high * 2
        if high > 1e3 * guess:
            return float("inf")
    while high / low > 1.02:
        mid = np.sqrt(low * high)
        low, high = (low, mid) if enough(mid) else (mid, high)
    return float(high)


def exact_test_power(late_a: float, late_b: float, share: float, alpha: float) -> float:
    """The chance that the exact conditional test of two rates (the re-run check's, in
    :func:`rtstudy.experiments.e2_rt_threads.checks.recheck.session_test`) rejects at level
    ``alpha``, at its best: Poisson counts (φ = 1) and no other test in its family.

    No check can do better, so where this is below the power wanted, an injection into that
    condition cannot show whether the check has power (the exchange's ``powerable``).
    Computed exactly: the total of late frames is Poisson, the second session's share of it
    binomial, and the test rejects where its two-sided exact p (the check's, φ = 1) is at
    most ``alpha``.

    Parameters
    ----------
    late_a, late_b : float
        The late frames expected in each session's runs of the condition (≥ 0).
    share : float
        The second session's share of the condition's frames (0 < share < 1).
    alpha : float
        The level the test must reach, e.g. Holm's strictest, ``e2_rerun_alpha`` / tests.

    Returns
    -------
    float
        The probability of a rejection (0 where no late frame is expected).
    """
    # By hand: statsmodels plans two rates by the normal approximation only (this matches its
    # exact tests' rejections on drawn counts: tests/test_statsmodels.py).
    mu = late_a + late_b
    if mu <= 0:
        return 0.0
    spread = 8 * np.sqrt(mu) + 10
    totals = np.arange(max(1, int(mu - spread)), int(mu + spread) + 1)
    half = alpha / 2
    # Per total, the test rejects at and below k_lo and at and above k_hi: its two tails
    # under the null (the frames' share), each at most alpha / 2 (the check's 2 · min(...)).
    j = sps.binom.ppf(half, totals, share)
    k_lo = np.where(sps.binom.cdf(j, totals, share) <= half, j, j - 1)
    k_hi = sps.binom.isf(half, totals, share) + 1
    p_b = late_b / mu
    inside = sps.binom.cdf(k_lo, totals, p_b) + sps.binom.sf(k_hi - 1, totals, p_b)
    return float(min(1.0, (sps.poisson.pmf(totals, mu) * inside).sum()))


def frames_to_decide(rr: RateRatio, confidence: float) -> float:
    """Frames per condition for :func:`word` to decide ``rr``, planned for the ratio seen (for
    the margin's lower end where the change had no event) by :func:`frames_needed`; NaN where
    the word is decided or the baseline has no event to plan from."""
    if word(rr) not in (NOT_SETTLED, TOO_FEW) or rr.events_a == 0:
        return float("nan")
    # With no event in the change, plan for a change that quarters the rate: one that halves it
    # exactly sits on the margin's edge, which no size decides.
    planned = rr.value if rr.events_b else criteria.value("e2_late_ratio_margin")[0] / 2
    return frames_needed(rr.events_a / rr.exposure_a, planned, rr.dispersion, confidence)


def pooled_over_sessions(rows: list[RateRatio], confidence: float) -> RateRatio:
    """One rate ratio from several sessions' counts of the same comparison: sessions are
    pooled, never required to agree, so each new session narrows the CI.

    Parameters
    ----------
    rows : list of RateRatio
        Per session, its comparison: the totals over its runs, its runs' φ (``dispersion``,
        NaN or 1 where not estimable) and the degrees of freedom behind it (``df``).

    Returns
    -------
    RateRatio
        The pooled ratio; its ``df`` the sessions' together.

    Notes
    -----
    φ is the sessions' own, weighted by their df: over-dispersion within sessions. A shift of
    both conditions' rates from one session to the next (a host that is busier one day) cancels
    in each session's ratio, so it does not widen the pooled one.
    """
    if not rows:
        raise ValueError("no session to pool")
    tot = {k: float(sum(getattr(r, k) for r in rows))
           for k in ("events_a", "exposure_a", "events_b", "exposure_b")}
    df = sum(r.df for r in rows)
    within = (sum(r.df * (r.dispersion if np.isfinite(r.dispersion) else 1.0)
                  for r in rows) / df) if df else 1.0
    # Protocol v1: φ from within the sessions only. The sessions are strata of one
    # comparison (each compares its two arms in one sitting, balanced): a drift of both arms'
    # rates between sessions cancels in the ratio and must not widen it.
    phi = max(1.0, within)
    return replace(ratio_from_totals(tot["events_a"], tot["exposure_a"], tot["events_b"],
                                     tot["exposure_b"], phi, confidence), df=df)


def pooled_log_ratio(values, lows, highs, confidence: float) -> tuple[float, float, float]:
    """One ratio from several sessions' ratios with their CIs: a random-effects (DerSimonian–
    Laird) mean on the log scale (:func:`rtstudy.inference.meta.random_effects`), each session's
    standard error read off its CI with the normal quantile (wider than its t-interval's, so
    the pooled CI errs wide).

    Returns
    -------
    tuple of float
        The pooled ratio and its CI; NaN where no session has a CI.
    """
    return random_effects(values, lows, highs, confidence, log=True)
