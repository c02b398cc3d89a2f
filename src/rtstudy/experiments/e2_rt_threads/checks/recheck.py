"""The re-run check with power: do two sessions of one host state differ by more than their
runs do?

:func:`session_test` tests every condition both sessions measured: its late frames as a rate
ratio between the sessions (the exact conditional test on quasi-Poisson counts that
:mod:`rtstudy.inference.rates` makes its CIs from), its typical jitter by Welch's t on the runs'
log period IQR, and every condition's typical jitter at once (their mean shift). The pair fails
when any test rejects at the family-wise level ``criteria: e2_rerun_alpha``.

Two choices give it the power its data allow:

- **One over-dispersion φ for the pair**, pooled over every condition's runs in both sessions,
  as a quasi-Poisson model of the whole pair has. φ from one condition's 2 × 5 runs has 8
  degrees of freedom and swings widely; a change that doubles a rate also raises its own
  runs' φ (their spread grows with the rate), and would widen its own test.
- **Tarone's rule for discrete tests** (Tarone 1990, "A modified Bonferroni method for discrete
  data", Biometrics 46:515-522): a late-frame test whose smallest possible p (every late frame in
  one session) cannot reach its level is set aside before Holm's procedure counts the family. Its
  total of late frames, which the exact test conditions on, decides that, not its p; with φ
  estimated the level is approximate, and the calibration below measures it.

:func:`calibrate` measures it on a recorded pair: how often it passes pairs dealt at random
(:func:`.exchange.deal`: no session effect, its calibration) and fails pairs with a known change
injected into one session (:data:`INJECTIONS`: its power); :func:`powerable` says where any check
could catch a change at all.
"""
from __future__ import annotations

from typing import TypedDict

import numpy as np
import pandas as pd
from scipy import stats as sps

from rtstudy.experiments.e2_rt_threads.checks.exchange import (alike_changes, compare, deal,
                                                               rerun_check)
from rtstudy.experiments.e2_rt_threads.analysis.ladder import recommendations
from rtstudy.inference import criteria, rates
from rtstudy.inference.stats import CI, MIN_RUNS


def _exact_p(ka: float, kb: float, share: float) -> float:
    """Two-sided p of the exact conditional test: ``kb`` of ``ka + kb`` events (counts already
    divided by φ, so real-valued) in the second session, which holds ``share`` of the frames.
    1 without an event."""
    if ka + kb <= 0:
        return 1.0
    # By hand: statsmodels' exact-cond test takes whole counts and its two-sided p is the
    # minlike one; its one-sided tails are these (tests/test_statsmodels.py).
    # The binomial's tails for real-valued counts (the regularized incomplete beta).
    upper = sps.beta.cdf(share, kb, ka + 1) if kb > 0 else 1.0
    lower = sps.beta.sf(share, kb + 1, ka) if ka > 0 else 1.0
    return float(min(1.0, 2 * min(upper, lower)))


def _counts(a: pd.DataFrame, b: pd.DataFrame, phi: float) -> tuple[float, float, float]:
    """Each session's late frames divided by φ, and the second session's share of the frames."""
    return (a["late"].sum() / phi, b["late"].sum() / phi,
            b["n"].sum() / (a["n"].sum() + b["n"].sum()))


def _late_p(a: pd.DataFrame, b: pd.DataFrame, phi: float | None = None) -> float:
    """Two-sided p of the same late-frame rate in two sessions' runs of one condition: the
    exact conditional test on the quasi-Poisson counts (the counts divided by φ, the second
    session's share of the events binomial given their total). ``phi`` defaults to the φ of
    this condition's runs alone (:func:`rtstudy.inference.rates.dispersion`)."""
    phi = _dispersion([(a, b)]) if phi is None else phi
    return _exact_p(*_counts(a, b, phi))


def _least_p(a: pd.DataFrame, b: pd.DataFrame, phi: float) -> float:
    """The smallest p :func:`_late_p` could give with this condition's total of late frames:
    every one of them in one session."""
    ka, kb, share = _counts(a, b, phi)
    return min(_exact_p(ka + kb, 0, share), _exact_p(0, ka + kb, share))


def _dispersion(pairs: list[tuple[pd.DataFrame, pd.DataFrame]]) -> float:
    """φ pooled over every condition's runs in each session of ``pairs`` (each condition's two
    sessions apart, each around its own rate). A session's condition without a late frame
    says nothing of their spread and is left out: its degrees of freedom would pull φ to 1."""
    return rates.dispersion(*[(r["late"].to_numpy(), r["n"].to_numpy())
                              for pair in pairs for r in pair if r["late"].sum() > 0])


def _tarone(least: np.ndarray, alpha: float) -> np.ndarray:
    """Which tests count (Tarone 1990): the smallest K for which at most K tests can reach
    ``alpha / K`` at all (their ``least`` p); those are the family. A continuous test's least p
    is 0: it always counts."""
    for k in range(1, least.size + 1):
        if (least <= alpha / k).sum() <= k:
            return least <= alpha / k
    return np.ones(least.size, bool)


def _holm(ps: np.ndarray, alpha: float) -> list[int]:
    """The tests Holm's step-down procedure rejects at family-wise level ``alpha``, smallest p
    first. By hand for speed: statsmodels' multipletests runs gc.collect() on every call (40 ms
    here) and :func:`calibrate` tests thousands of pairs; equal to it (tests/test_statsmodels.py)."""
    order = sorted(range(ps.size), key=lambda i: ps[i])
    for rank, i in enumerate(order):
        if ps[i] > alpha / (ps.size - rank):  # stop at the first p above its level
            return order[:rank]
    return order


def _log_iqr(a: pd.DataFrame, b: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each session's runs' log period IQR (the scale the report's jitter ratios are on)."""
    return np.log(a["period_iqr_us"].to_numpy()), np.log(b["period_iqr_us"].to_numpy())


def _jitter_p(a: pd.DataFrame, b: pd.DataFrame) -> float:
    """Two-sided p of the same typical jitter: Welch's t on the runs' log period IQR."""
    x, y = _log_iqr(a, b)
    if np.ptp(np.r_[x, y]) == 0:
        return 1.0
    p = sps.ttest_ind(x, y, equal_var=False).pvalue
    return float(p) if np.isfinite(p) else 1.0


def _log_shift(a: pd.DataFrame, b: pd.DataFrame) -> tuple[float, float]:
    """The second session's mean log period IQR minus the first's, and its variance."""
    x, y = _log_iqr(a, b)
    return float(y.mean() - x.mean()), float(x.var(ddof=1) / x.size + y.var(ddof=1) / y.size)


class SessionTest(TypedDict):
    """The re-run check with power on two sessions (:func:`session_test`)."""

    tests: int  # Holm's family
    set_aside: int  # late-frame tests Tarone's rule set aside
    phi: float  # the pair's φ
    differ: list[str]  # the quantities Holm's procedure rejects
    passed: bool  # none rejected


class Powerable(TypedDict):
    """Whether any check could catch an injection into one condition (:func:`powerable`)."""

    late_frames: float  # expected over both sessions once injected
    best_power: float  # the exact test's at Holm's strictest level
    phi: float


class Targets(TypedDict):
    """The conditions :data:`INJECTIONS` change, by label (None where a session has none)."""

    h2: str | None  # normal_dedicated at the headline point
    fixes: str | None  # the fixes' baseline
    fix: str | None  # the fix with the most late frames that both sessions measured


class Calibration(TypedDict):
    """The re-run check on a recorded pair and on dealt pairs (:func:`calibrate`)."""

    observed: SessionTest
    targets: Targets
    draws: int
    words_agree: float
    calibration: float
    power: dict[str, float | None]
    tests: int
    powerable: dict[str, Powerable | None]  # injection → whether any check could catch it
    power_each: dict[str, float]
    powerable_each: dict[str, Powerable | None]


def session_test(a: pd.DataFrame, b: pd.DataFrame, alpha: float | None = None) -> SessionTest:
    """The re-run check with power: do two sessions' runs differ in any condition?

    Parameters
    ----------
    a, b : DataFrame
        E2's ``runs`` of each session (``label``, ``late``, ``n``, ``period_iqr_us``).
    alpha : float, optional
        The family-wise level (default ``criteria: e2_rerun_alpha``).

    Returns
    -------
    SessionTest
        ``tests``: how many count in Holm's family (two per condition both sessions measured
        in at least ``MIN_RUNS`` runs, and one of every condition's typical jitter at once;
        less the late-frame tests Tarone's rule sets aside, ``set_aside``); ``phi``: the
        pair's φ; ``differ``: the quantities Holm's procedure rejects, each ``"<label>: late
        frames"`` or ``"<label>: typical jitter"``; ``passed``: none rejected.
    """
    alpha = criteria.value("e2_rerun_alpha") if alpha is None else alpha
    by_b = dict(tuple(b.groupby("label", sort=False)))
    both = [(label, ra, by_b[label]) for label, ra in a.groupby("label", sort=False)
            if label in by_b and min(len(ra), len(by_b[label])) >= MIN_RUNS]
    phi = _dispersion([(ra, rb) for _, ra, rb in both])
    names, ps, least, shifts = [], [], [], []
    for label, ra, rb in both:
        names += [f"{label}: late frames", f"{label}: typical jitter"]
        ps += [_late_p(ra, rb, phi), _jitter_p(ra, rb)]
        least += [_least_p(ra, rb, phi), 0.0]
        shifts.append(_log_shift(ra, rb))
    if len(shifts) > 1:
        # A host whose typical jitter moved everywhere a little: the conditions' mean shifts
        # of log IQR together (each condition's runs independent of the others').
        d, v = np.array(shifts).T
        names.append("every condition: typical jitter")
        ps.append(float(2 * sps.norm.sf(abs(d.mean()) / np.sqrt(v.sum()) * len(d)))
                  if v.sum() > 0 else 1.0)
        least.append(0.0)
    family = np.flatnonzero(_tarone(np.array(least), alpha))
    differ = [names[family[i]] for i in _holm(np.array(ps)[family], alpha)]
    return {"tests": int(family.size), "set_aside": len(ps) - int(family.size), "phi": phi,
            "differ": differ, "passed": not differ}


# The changes :func:`calibrate` injects into the second session of a pair: name → what it does
# to that session's runs (``targets`` names the conditions: :func:`targets`).
INJECTIONS = ("none", "late ×2 at H2's baseline", "late ×2 at the fixes' baseline",
              "a fix removes its late frames", "typical jitter ×1.5")
# The injections into one condition: injection → the key of :func:`targets` naming it.
TARGET_OF = {"late ×2 at H2's baseline": "h2", "late ×2 at the fixes' baseline": "fixes",
             "a fix removes its late frames": "fix"}
# ... and the rate ratio each makes there between the sessions.
RATIO_OF = {"late ×2 at H2's baseline": 2.0, "late ×2 at the fixes' baseline": 2.0,
            "a fix removes its late frames": 0.0}


def targets(runs: pd.DataFrame, cfg: dict, ci: CI,
            twice: set[str] | None = None) -> Targets:
    """The conditions :data:`INJECTIONS` change, by label (None where a session has none):
    ``h2`` (normal_dedicated at the headline point), ``fixes`` (the ladder policy there, the
    fixes' baseline) and ``fix`` (the fix with the most late frames among ``twice``, the
    labels both sessions measured, when given: a fix only one session measured, as the
    default profile's rotation gives, has no second session to differ from)."""
    recs = recommendations(runs, cfg["ladder_policy"], ci, sizes=False)
    out = Targets(h2=None, fixes=None, fix=None)
    if recs.empty:
        return out
    policy = recs[recs["kind"] == "policy"]
    fixes = recs[recs["kind"] == "fix"]
    if len(policy):
        out["h2"] = str(policy["baseline"].iloc[0])
    if len(fixes):
        out["fixes"] = str(fixes["baseline"].iloc[0])
        labels = [x for x in fixes["label"] if twice is None or x in twice]
        late = runs[runs["label"].isin(labels)].groupby("label")["late"].sum()
        out["fix"] = str(late.idxmax()) if len(late) else None
    return out


def powerable(first: pd.DataFrame, second: pd.DataFrame, where: dict, tests: int, phi: float,
              alpha: float | None = None) -> dict[str, Powerable | None]:
    """Per injection into one condition (:data:`TARGET_OF`), whether any check could catch it.

    Parameters
    ----------
    first, second : DataFrame
        The two sessions' E2 ``runs``.
    where : dict
        :func:`targets`.
    tests : int
        The check's tests per pair: its strictest Holm level is ``alpha / tests``.
    phi : float
        The pair's over-dispersion (:func:`session_test`'s ``phi``): runs whose late frames
        vary φ times more than Poisson's carry the information of 1/φ as many late frames, to
        this check or any other that takes the run as its unit.
    alpha : float, optional
        The family-wise level (default ``criteria: e2_rerun_alpha``).

    Returns
    -------
    dict
        Injection → None where there is nothing to inject into, else ``late_frames`` (expected
        in the condition over both sessions once injected: the two sessions' pooled rate at
        each one's frames, the second's times :data:`RATIO_OF`), ``phi`` and ``best_power``
        (:func:`rates.exact_test_power` of those late frames divided by φ at Holm's strictest
        level; 0 where a session has fewer than ``MIN_RUNS`` runs of it, which the check does
        not test).
    """
    alpha = criteria.value("e2_rerun_alpha") if alpha is None else alpha
    out: dict[str, Powerable | None] = {}
    for injection, key in TARGET_OF.items():
        label = where.get(key)
        a, b = (runs[runs["label"] == label] for runs in (first, second))
        if label is None or a.empty or b.empty:
            out[injection] = None
            continue
        n_a, n_b = float(a["n"].sum()), float(b["n"].sum())
        rate = (a["late"].sum() + b["late"].sum()) / (n_a + n_b)
        late_a, late_b = rate * n_a, rate * n_b * RATIO_OF[injection]
        best = (rates.exact_test_power(late_a / phi, late_b / phi, n_b / (n_a + n_b),
                                       alpha / max(tests, 1))
                if min(len(a), len(b)) >= MIN_RUNS else 0.0)
        out[injection] = {"late_frames": round(late_a + late_b, 1), "best_power": best,
                          "phi": round(phi, 2)}
    return out


def _overdispersed(mu: np.ndarray, phi: float, rng: np.random.Generator) -> np.ndarray:
    """Counts of mean ``mu`` and variance ``phi * mu`` (gamma-Poisson; Poisson at φ ≤ 1)."""
    mu = np.maximum(np.asarray(mu, dtype=float), 0.0)
    if phi <= 1:
        return rng.poisson(mu)
    return rng.poisson(rng.gamma(np.maximum(mu / (phi - 1), 1e-300), phi - 1))


def inject(runs: pd.DataFrame, injection: str, where: dict, rng: np.random.Generator,
           rate: dict[str, float] | None = None, phi: float = 1.0) -> pd.DataFrame:
    """``runs`` with ``injection`` (:data:`INJECTIONS`) done to it.

    Parameters
    ----------
    runs : DataFrame
        One session's E2 ``runs``.
    injection : str
        One of :data:`INJECTIONS`; ``where`` (:func:`targets`) names its condition.
    rng : Generator
    rate : dict, optional
        Label → the condition's late frames per frame, known apart from ``runs`` (in
        :func:`calibrate`, over both recorded sessions); default: its rate in ``runs``.
    phi : float
        The over-dispersion of a run's late frames (the pair's φ).

    Returns
    -------
    DataFrame
        Late ×2: each run of the condition gains as many late frames as a second, independent
        run of its frames would hold (mean μ = rate × frames, variance φμ), so its count has
        the mean and variance of a quasi-Poisson count at twice the rate (2μ, 2φμ). Adding a
        run's own count again would give variance 4φμ + μ and understate the power. A fix
        removing its late frames sets them to 0; typical jitter ×1.5 scales every run's
        period IQR.
    """
    out = runs.copy()
    key = TARGET_OF.get(injection)
    if injection == "typical jitter ×1.5":
        out["period_iqr_us"] = out["period_iqr_us"] * 1.5
    elif key and where.get(key) is not None:
        label = where[key]
        rows = out["label"] == label
        if key == "fix":
            out.loc[rows, "late"] = 0
        else:
            late, n = out.loc[rows, "late"].to_numpy(), out.loc[rows, "n"].to_numpy()
            per_frame = (rate or {}).get(label, late.sum() / max(n.sum(), 1))
            out.loc[rows, "late"] = np.minimum(late + _overdispersed(per_frame * n, phi, rng), n)
    return out


def calibrate(first: dict[str, pd.DataFrame], second: dict[str, pd.DataFrame], cfg: dict,
              ci: CI, draws: int = 1000, seed: int = 0) -> Calibration:
    """:func:`session_test` and the recommendation words on a recorded pair and on dealt pairs.

    Each draw deals the two sessions' runs again (:func:`.exchange.deal`: no session effect),
    then judges the dealt pair as it is (``none``) and with each of :data:`INJECTIONS` done to
    its second session, and with each condition's late frames doubled, one at a time.
    Long because: one loop deals each pair once for every judgement made of it, so that every
    share comes from the same dealt pairs.

    Returns
    -------
    Calibration
        ``observed``: :func:`session_test` of the real pair; ``targets``; ``draws``;
        ``power_each`` / ``powerable_each``: per condition both sessions measured in at least
        ``MIN_RUNS`` runs, the share of pairs with its late frames doubled that the check fails,
        and whether any check could catch that (:func:`powerable`);
        ``words_agree``: the share of dealt pairs whose recommendation words all agree (the
        changes both sessions measured alike, :func:`alike_changes`);
        ``calibration``: the share of dealt pairs the check passes; ``power``: injection →
        the share of injected pairs it fails (None where the pair has nothing to inject into);
        ``powerable``: :func:`powerable` (an injection no check could catch shows nothing of
        this one's power); ``tests``: the check's tests per pair (its Holm family).
    """
    observed = session_test(first["runs"], second["runs"])
    twice = set(first["runs"]["label"]) & set(second["runs"]["label"])
    both = pd.concat([first["runs"], second["runs"]])
    where = targets(both, cfg, ci, twice)
    alike = alike_changes(first["runs"], second["runs"], cfg["ladder_policy"], ci)
    # What a doubling adds is drawn at the recorded pair's rate, the same in every draw: a
    # dealt session's own rate would make it track that session's count.
    recorded = both.groupby("label")[["late", "n"]].sum()
    rate = {label: float(recorded.loc[label, "late"] / recorded.loc[label, "n"])
            for label in where.values() if label is not None and recorded.loc[label, "n"] > 0}
    # Each condition both sessions measured gets a doubling of its own (protocol v1: the
    # injections include every single condition, each fix among them where both measured it).
    each = sorted(label for label in twice
                  if min((first["runs"]["label"] == label).sum(),
                         (second["runs"]["label"] == label).sum()) >= MIN_RUNS)
    for label in each:
        rate.setdefault(label, float(recorded.loc[label, "late"] / recorded.loc[label, "n"])
                        if recorded.loc[label, "n"] > 0 else 0.0)
    rng = np.random.default_rng(seed)
    failed = {k: 0 for k in INJECTIONS}
    failed_each = {label: 0 for label in each}
    agree, tests = 0, observed["tests"]
    for _ in range(draws):
        runs_a, runs_b = deal(first["runs"], second["runs"], rng)
        floor_a, floor_b = deal(first["floor"], second["floor"], rng)
        words = compare(rerun_check(runs_a, floor_a, cfg, ci),
                        rerun_check(runs_b, floor_b, cfg, ci), alike)
        agree += not words["differ"]
        for injection in INJECTIONS:
            failed[injection] += not session_test(
                runs_a, inject(runs_b, injection, where, rng, rate, observed["phi"]))["passed"]
        for label in each:
            failed_each[label] += not session_test(runs_a, inject(
                runs_b, DOUBLED, {"h2": label}, rng, rate, observed["phi"]))["passed"]
    power = {k: (None if k in TARGET_OF and where[TARGET_OF[k]] is None else failed[k] / draws)
             for k in INJECTIONS if k != "none"}
    return {"observed": observed, "targets": where, "draws": draws,
            "words_agree": agree / draws, "calibration": 1 - failed["none"] / draws,
            "power": power, "tests": tests,
            "powerable": powerable(first["runs"], second["runs"], where, tests, observed["phi"]),
            "power_each": {label: failed_each[label] / draws for label in each},
            "powerable_each": {label: powerable(first["runs"], second["runs"], {"h2": label},
                                                tests, observed["phi"])[DOUBLED]
                               for label in each}}


# The doubling :func:`calibrate` injects into every condition both sessions measured, one at a
# time (:func:`inject` with the condition as ``where["h2"]``).
DOUBLED = "late ×2 at H2's baseline"
