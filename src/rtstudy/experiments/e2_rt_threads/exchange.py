"""Would two sessions agree if the session did not matter? Two re-run checks under exchange.

The study's first re-run criterion asked of two fresh sessions that every ladder rung's
typical jitter and every late-frame rate at the headline point land inside the other
session's CI, and that the recommendation table conclude the same in both. :func:`rerun_check` computes exactly those numbers from one
session's runs, and :func:`compare` judges a pair by them. Even with no session effect at all,
two sessions of 5 normal runs agree both ways on a quantity only 81 % of the time
(:func:`rtstudy.inference.stats.agreement_chance`), so a check over many quantities fails by chance
alone; how often, with these runs, is the question :func:`exchange_test` answers.

:func:`session_test` is the re-run check that replaces it, one with power: a test per
condition both sessions measured (its late frames as a rate ratio between the sessions, the
quasi-Poisson one :mod:`rtstudy.inference.rates` uses; its typical jitter by Welch's t on the runs'
log period IQR) and one of every condition's typical jitter at once (their mean shift), the pair
failing when any test rejects at the family-wise level ``criteria: e2_rerun_alpha`` (Holm).
:func:`calibrate` measures it on a recorded pair: how often it passes dealt pairs (no session
effect: its calibration) and fails pairs with a known change injected into one session
(:data:`INJECTIONS`: its power).

Both are permutation tests with the session as the label: if the session did not matter, a run
of one condition could as well have been measured in either session. Each draw pools the two
sessions' runs of every condition (a run keeps its condition) and deals them at random into
two sessions of the original sizes (:func:`deal`), then judges that pair as the real one. The
share of draws that pass is the check's chance of passing with no session effect; the share of
draws with at least as many misses as the real pair is the real pair's p-value for a session
effect (small: the sessions differ by more than their runs do).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from rtstudy.experiments.e2_rt_threads.conditions import grid, headline_point
from rtstudy.experiments.e2_rt_threads.contrasts import condition_summary
from rtstudy.experiments.e2_rt_threads.ladder import (finding, ladder, late_name, recommendations,
                                                      rung_name)
from rtstudy.inference import criteria, rates
from rtstudy.inference.stats import CI, MIN_RUNS


def rerun_check(runs: pd.DataFrame, floor: pd.DataFrame, cfg: dict,
                ci: CI) -> tuple[dict[str, tuple[float, float, float]], dict[str, str]]:
    """One session's numbers that the first re-run check judges.

    Parameters
    ----------
    runs, floor : DataFrame
        E2's ``runs`` and ``floor`` tables of one session (one row per run).
    cfg : dict
        E2's resolved parameters (``ladder_policy``, ``late_threshold_ms``).
    ci : CI
        How CIs over runs are made (the report's).

    Returns
    -------
    quantities : dict
        Name → (estimate, CI low, CI high): every ladder rung's period IQR (µs) and every
        policy's late frames per 10 000 at the headline point, named as ``metrics.json``
        names them (:func:`.ladder.rung_name`, :func:`.ladder.late_name`).
    findings : dict
        Change → the recommendation table's words for it (:func:`.ladder.finding`).
    """
    policy = cfg["ladder_policy"]
    quantities = {}
    for r in ladder(runs, floor, policy, ci).to_dict("records"):
        quantities[f"{rung_name(r)}: period IQR"] = (r["iqr_us"], r["iqr_low"], r["iqr_high"])
    for r in condition_summary(headline_point(grid(runs)), ci).to_dict("records"):
        quantities[late_name(r["policy"], r["load_factor"], cfg["late_threshold_ms"])] = (
            r["late_rate"], r["late_low"], r["late_high"])
    findings = {r["change"]: finding(r)
                for r in recommendations(runs, policy, ci, sizes=False).to_dict("records")}
    return quantities, findings


def run_lengths(runs: pd.DataFrame) -> dict[str, float]:
    """Each condition's run length: the median of its runs' measured spans (s), in whole
    seconds, so the grid's 4 s runs and a fix's 48 s runs of one label tell apart."""
    if runs.empty or "duration_s" not in runs:
        return {}
    return runs.groupby("label")["duration_s"].median().round().to_dict()


def alike_changes(first: pd.DataFrame, second: pd.DataFrame, policy: str, ci: CI) -> set[str]:
    """The changes two sessions' ``runs`` measured alike: the change's condition and its
    baseline with runs of the same length in both. A fix measured as one session's rotating
    fix runs longer than the same condition measured for the grid in another: its words in
    the two sessions answer different designs, and are not compared."""
    la, lb = run_lengths(first), run_lengths(second)
    return {r["change"] for r in recommendations(first, policy, ci, sizes=False).to_dict("records")
            if all(k in la and la[k] == lb.get(k) for k in (r["label"], r["baseline"]))}


def _inside(x: float, low: float, high: float) -> bool:
    """Inside a CI; never where the CI is missing (fewer than 3 runs), as the check cannot pass
    a quantity it cannot judge."""
    return bool(np.isfinite(low) and np.isfinite(high) and low <= x <= high)


def compare(first: tuple[dict, dict], second: tuple[dict, dict],
            alike: set[str] | None = None) -> dict:
    """Judge two sessions' :func:`rerun_check` by the first re-run check's rule, the words of
    the changes in ``alike`` only (:func:`alike_changes`; None: every change both have).

    Returns
    -------
    dict
        ``misses``: the quantities of both where either estimate lies outside the other's CI;
        ``differ``: the changes whose words differ; ``judged`` / ``changes``: how many of
        each both sessions have; ``passed``: neither a miss nor a difference.
    """
    (qa, fa), (qb, fb) = first, second
    common = [k for k in qa if k in qb]
    misses = [k for k in common if not (_inside(qa[k][0], *qb[k][1:])
                                        and _inside(qb[k][0], *qa[k][1:]))]
    changes = [k for k in fa if k in fb and (alike is None or k in alike)]
    differ = [k for k in changes if fa[k] != fb[k]]
    return {"misses": misses, "differ": differ, "judged": len(common), "changes": len(changes),
            "passed": not misses and not differ}


def deal(a: pd.DataFrame, b: pd.DataFrame,
         rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two sessions' runs dealt again at random, condition by condition.

    Every ``label`` (condition) present in both keeps its runs, pooled and split into groups
    of its sizes in ``a`` and ``b``; a condition only one session measured stays where it was.
    Runs of one label but another length (a rotating fix's long runs against the grid's short
    ones, :func:`run_lengths`) are not exchangeable: each length is dealt on its own.
    """
    if a.empty or b.empty:
        return a, b
    pooled = pd.concat([a, b], ignore_index=True)
    key, key_a = _deal_key(pooled), _deal_key(a)
    to_a, to_b = [], []
    for label, rows in pooled.groupby(key, sort=False).indices.items():
        n_a = int((key_a == label).sum())
        if n_a == 0 or n_a == len(rows):
            (to_a if n_a else to_b).extend(rows)
            continue
        shuffled = rng.permutation(rows)
        to_a.extend(shuffled[:n_a])
        to_b.extend(shuffled[n_a:])
    return pooled.iloc[sorted(to_a)], pooled.iloc[sorted(to_b)]


def _deal_key(runs: pd.DataFrame) -> pd.Series:
    """What :func:`deal` exchanges runs within: the label, with the run's length where known."""
    if "duration_s" not in runs:
        return runs["label"]
    return runs["label"] + " @" + runs["duration_s"].round().astype(str)


def exchange_test(first: dict[str, pd.DataFrame], second: dict[str, pd.DataFrame], cfg: dict,
                  ci: CI, draws: int = 1000, seed: int = 0) -> dict:
    """The re-run check of a real pair of sessions and of ``draws`` pairs dealt by exchange.

    Parameters
    ----------
    first, second : dict
        Each session's E2 tables ``runs`` and ``floor``.
    cfg, ci
        As :func:`rerun_check`.
    draws : int
        Pairs dealt (:func:`deal`).
    seed : int
        The generator's seed: the same seed deals the same pairs.

    Returns
    -------
    dict
        ``observed`` (:func:`compare` of the real pair); ``draws``; ``pass_rate``: the share of
        dealt pairs that pass the whole check, ``land_rate`` (every quantity lands) and
        ``same_rate`` (every conclusion the same); ``misses`` and ``differ``: each dealt pair's
        counts (arrays); ``p_misses`` / ``p_differ``: the share of dealt pairs with at least as
        many as the real pair (a permutation p-value, counting the real pair among them);
        ``miss_rate``: each quantity → the share of dealt pairs where it missed.
    """
    alike = alike_changes(first["runs"], second["runs"], cfg["ladder_policy"], ci)
    mine = rerun_check(first["runs"], first["floor"], cfg, ci)
    observed = compare(mine, rerun_check(second["runs"], second["floor"], cfg, ci), alike)
    rng = np.random.default_rng(seed)
    misses, differ, passed, landed, same = [], [], 0, 0, 0
    per_quantity: dict[str, int] = {}
    for _ in range(draws):
        runs_a, runs_b = deal(first["runs"], second["runs"], rng)
        floor_a, floor_b = deal(first["floor"], second["floor"], rng)
        c = compare(rerun_check(runs_a, floor_a, cfg, ci),
                    rerun_check(runs_b, floor_b, cfg, ci), alike)
        misses.append(len(c["misses"]))
        differ.append(len(c["differ"]))
        passed += c["passed"]
        landed += not c["misses"]
        same += not c["differ"]
        for k in c["misses"]:
            per_quantity[k] = per_quantity.get(k, 0) + 1
    misses_a, differ_a = np.array(misses), np.array(differ)
    return {"observed": observed, "draws": draws, "pass_rate": passed / draws,
            "land_rate": landed / draws, "same_rate": same / draws,
            "misses": misses_a, "differ": differ_a,
            # The real pair counts as one of the exchanges (Phipson & Smyth 2010): never 0.
            "p_misses": (1 + int((misses_a >= len(observed["misses"])).sum())) / (draws + 1),
            "p_differ": (1 + int((differ_a >= len(observed["differ"])).sum())) / (draws + 1),
            "miss_rate": {k: per_quantity.get(k, 0) / draws for k in mine[0]}}


def _late_p(a: pd.DataFrame, b: pd.DataFrame) -> float:
    """Two-sided p of the same late-frame rate in two sessions' runs of one condition: the
    exact conditional test on the quasi-Poisson counts (:mod:`rtstudy.inference.rates`: the counts
    and frames divided by the runs' pooled φ, the second session's share of the events binomial
    given their total). 1 without a late frame."""
    phi = rates.dispersion((a["late"].to_numpy(), a["n"].to_numpy()),
                           (b["late"].to_numpy(), b["n"].to_numpy()))
    ka, kb = a["late"].sum() / phi, b["late"].sum() / phi
    if ka + kb == 0:
        return 1.0
    share = b["n"].sum() / (a["n"].sum() + b["n"].sum())
    # The binomial's tails for real-valued counts (the regularized incomplete beta).
    upper = sps.beta.cdf(share, kb, ka + 1) if kb > 0 else 1.0
    lower = sps.beta.sf(share, kb + 1, ka) if ka > 0 else 1.0
    return float(min(1.0, 2 * min(upper, lower)))


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


def session_test(a: pd.DataFrame, b: pd.DataFrame, alpha: float | None = None) -> dict:
    """The re-run check with power: do two sessions' runs differ in any condition?

    Parameters
    ----------
    a, b : DataFrame
        E2's ``runs`` of each session (``label``, ``late``, ``n``, ``period_iqr_us``).
    alpha : float, optional
        The family-wise level (default ``criteria: e2_rerun_alpha``).

    Returns
    -------
    dict
        ``tests``: how many (two per condition both sessions measured in at least
        ``MIN_RUNS`` runs, and one of every condition's typical jitter at once); ``differ``:
        the quantities Holm's procedure rejects, each ``"<label>: late frames"`` or
        ``"<label>: typical jitter"``; ``passed``: none rejected.
    """
    alpha = criteria.value("e2_rerun_alpha") if alpha is None else alpha
    names, ps, shifts = [], [], []
    by_b = dict(tuple(b.groupby("label", sort=False)))
    for label, ra in a.groupby("label", sort=False):
        rb = by_b.get(label)
        if rb is None or min(len(ra), len(rb)) < MIN_RUNS:
            continue
        names += [f"{label}: late frames", f"{label}: typical jitter"]
        ps += [_late_p(ra, rb), _jitter_p(ra, rb)]
        shifts.append(_log_shift(ra, rb))
    if len(shifts) > 1:
        # A host whose typical jitter moved everywhere a little: the conditions' mean shifts
        # of log IQR together (each condition's runs independent of the others').
        d, v = np.array(shifts).T
        names.append("every condition: typical jitter")
        ps.append(float(2 * sps.norm.sf(abs(d.mean()) / np.sqrt(v.sum()) * len(d)))
                  if v.sum() > 0 else 1.0)
    order = np.argsort(ps)
    differ = []
    for rank, i in enumerate(order):  # Holm: stop at the first p above its step's level
        if ps[i] > alpha / (len(ps) - rank):
            break
        differ.append(names[i])
    return {"tests": len(ps), "differ": differ, "passed": not differ}


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
            twice: set[str] | None = None) -> dict[str, str | None]:
    """The conditions :data:`INJECTIONS` change, by label (None where a session has none):
    ``h2`` (normal_dedicated at the headline point), ``fixes`` (the ladder policy there, the
    fixes' baseline) and ``fix`` (the fix with the most late frames among ``twice``, the
    labels both sessions measured, when given: a fix only one session measured, as the
    default profile's rotation gives, has no second session to differ from)."""
    recs = recommendations(runs, cfg["ladder_policy"], ci, sizes=False)
    out: dict[str, str | None] = {"h2": None, "fixes": None, "fix": None}
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


def powerable(first: pd.DataFrame, second: pd.DataFrame, where: dict, tests: int,
              alpha: float | None = None) -> dict[str, dict | None]:
    """Per injection into one condition (:data:`TARGET_OF`), whether any check could catch it.

    Parameters
    ----------
    first, second : DataFrame
        The two sessions' E2 ``runs``.
    where : dict
        :func:`targets`.
    tests : int
        The check's tests per pair: its strictest Holm level is ``alpha / tests``.
    alpha : float, optional
        The family-wise level (default ``criteria: e2_rerun_alpha``).

    Returns
    -------
    dict
        Injection → None where there is nothing to inject into, else ``late_frames`` (expected
        in the condition over both sessions once injected: the two sessions' pooled rate at
        each one's frames, the second's times :data:`RATIO_OF`) and ``best_power``
        (:func:`rates.exact_test_power` at Holm's strictest level; 0 where a session has fewer than
        ``MIN_RUNS`` runs of it, which the check does not test), and ``phi``: the runs'
        over-dispersion there (:func:`rates.dispersion`), which the check divides the late
        frames by and this best case does not.
    """
    alpha = criteria.value("e2_rerun_alpha") if alpha is None else alpha
    out: dict[str, dict | None] = {}
    for injection, key in TARGET_OF.items():
        label = where.get(key)
        a, b = (runs[runs["label"] == label] for runs in (first, second))
        if label is None or a.empty or b.empty:
            out[injection] = None
            continue
        n_a, n_b = float(a["n"].sum()), float(b["n"].sum())
        rate = (a["late"].sum() + b["late"].sum()) / (n_a + n_b)
        late_a, late_b = rate * n_a, rate * n_b * RATIO_OF[injection]
        best = (rates.exact_test_power(late_a, late_b, n_b / (n_a + n_b), alpha / max(tests, 1))
                if min(len(a), len(b)) >= MIN_RUNS else 0.0)
        phi = rates.dispersion((a["late"], a["n"]), (b["late"], b["n"]))
        out[injection] = {"late_frames": round(late_a + late_b, 1), "best_power": best,
                          "phi": round(phi, 2)}
    return out


def inject(runs: pd.DataFrame, injection: str, where: dict, rng: np.random.Generator
           ) -> pd.DataFrame:
    """``runs`` with ``injection`` (:data:`INJECTIONS`) done to it: late ×2 adds to each run as
    many late frames again, drawn binomially at the run's own rate (a doubled rate with the
    runs' spread kept); a fix removing its late frames sets them to 0; typical jitter ×1.5
    scales every run's period IQR."""
    out = runs.copy()
    key = TARGET_OF.get(injection)
    if injection == "typical jitter ×1.5":
        out["period_iqr_us"] = out["period_iqr_us"] * 1.5
    elif key and where.get(key) is not None:
        rows = out["label"] == where[key]
        if key == "fix":
            out.loc[rows, "late"] = 0
        else:
            late, n = out.loc[rows, "late"].to_numpy(), out.loc[rows, "n"].to_numpy()
            extra = rng.binomial(np.maximum(n - late, 0), np.where(n > 0, late / n, 0.0))
            out.loc[rows, "late"] = np.minimum(late + extra, n)
    return out


def calibrate(first: dict[str, pd.DataFrame], second: dict[str, pd.DataFrame], cfg: dict,
              ci: CI, draws: int = 1000, seed: int = 0) -> dict:
    """:func:`session_test` and the recommendation words on a recorded pair and on dealt pairs.

    Each draw deals the two sessions' runs again (:func:`deal`: no session effect), then judges
    the dealt pair as it is (``none``) and with each of :data:`INJECTIONS` done to its second
    session.

    Returns
    -------
    dict
        ``observed``: :func:`session_test` of the real pair; ``targets``; ``draws``;
        ``words_agree``: the share of dealt pairs whose recommendation words all agree (the
        changes both sessions measured alike, :func:`alike_changes`);
        ``calibration``: the share of dealt pairs the check passes; ``power``: injection →
        the share of injected pairs it fails (None where the pair has nothing to inject into);
        ``powerable``: :func:`powerable` (an injection no check could catch shows nothing of
        this one's power); ``tests``: the check's tests per pair.
    """
    observed = session_test(first["runs"], second["runs"])
    twice = set(first["runs"]["label"]) & set(second["runs"]["label"])
    where = targets(pd.concat([first["runs"], second["runs"]]), cfg, ci, twice)
    alike = alike_changes(first["runs"], second["runs"], cfg["ladder_policy"], ci)
    rng = np.random.default_rng(seed)
    failed = {k: 0 for k in INJECTIONS}
    agree, tests = 0, observed["tests"]
    for _ in range(draws):
        runs_a, runs_b = deal(first["runs"], second["runs"], rng)
        floor_a, floor_b = deal(first["floor"], second["floor"], rng)
        words = compare(rerun_check(runs_a, floor_a, cfg, ci),
                        rerun_check(runs_b, floor_b, cfg, ci), alike)
        agree += not words["differ"]
        for injection in INJECTIONS:
            failed[injection] += not session_test(
                runs_a, inject(runs_b, injection, where, rng))["passed"]
    power = {k: (None if k in TARGET_OF and where[TARGET_OF[k]] is None else failed[k] / draws)
             for k in INJECTIONS if k != "none"}
    return {"observed": observed, "targets": where, "draws": draws,
            "words_agree": agree / draws, "calibration": 1 - failed["none"] / draws,
            "power": power, "powerable": powerable(first["runs"], second["runs"], where, tests),
            "tests": tests}
