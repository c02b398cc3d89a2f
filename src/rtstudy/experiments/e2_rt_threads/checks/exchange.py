"""Would two sessions agree if the session did not matter? The first re-run check under exchange.

The study's first re-run criterion asked of two fresh sessions that every ladder rung's
typical jitter and every late-frame rate at the headline point land inside the other session's
CI, and that the recommendation table conclude the same in both. :func:`rerun_check` computes
exactly those numbers from one session's runs, and :func:`compare` judges a pair by them. Even
with no session effect at all, two sessions of 5 normal runs agree both ways on a quantity only
81 % of the time (:func:`rtstudy.inference.stats.agreement_chance`), so a check over many
quantities fails by chance alone; how often, with these runs, is the question
:func:`exchange_test` answers. The re-run check that replaces it, one with power, is
:mod:`.recheck`'s; it deals pairs with :func:`deal` too.

Both checks are judged by permutation, with the session as the label: if the session did not
matter, a run of one condition could as well have been measured in either session. Each draw
pools the two sessions' runs of every condition (a run keeps its condition) and deals them at
random into two sessions of the original sizes (:func:`deal`), then judges that pair as the real
one. The share of draws that pass is the check's chance of passing with no session effect; the
share of draws with at least as many misses as the real pair is the real pair's p-value for a
session effect (small: the sessions differ by more than their runs do).
"""
from __future__ import annotations

from typing import TypedDict

import numpy as np
import pandas as pd

from rtstudy.experiments.e2_rt_threads.conditions import grid, headline_point
from rtstudy.experiments.e2_rt_threads.analysis.contrasts import condition_summary
from rtstudy.experiments.e2_rt_threads.analysis.ladder import (finding, ladder, late_name,
                                                               recommendations, rung_name)
from rtstudy.inference.stats import CI


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
        names them (:func:`analysis.ladder.rung_name`, :func:`analysis.ladder.late_name`).
    findings : dict
        Change → the recommendation table's words for it (:func:`analysis.ladder.finding`).
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


class Compared(TypedDict):
    """Two sessions judged by the first re-run check's rule (:func:`compare`)."""

    misses: list[str]  # quantities where either estimate lies outside the other's CI
    differ: list[str]  # changes whose words differ
    judged: int  # quantities both sessions have
    changes: int  # changes both sessions have (of those judged alike)
    passed: bool  # neither a miss nor a difference


class Exchange(TypedDict):
    """The first re-run check on a real pair and on pairs dealt by exchange (:func:`exchange_test`)."""

    observed: Compared
    draws: int
    pass_rate: float
    land_rate: float
    same_rate: float
    misses: np.ndarray  # each dealt pair's count
    differ: np.ndarray
    p_misses: float
    p_differ: float
    miss_rate: dict[str, float]


def compare(first: tuple[dict, dict], second: tuple[dict, dict],
            alike: set[str] | None = None) -> Compared:
    """Judge two sessions' :func:`rerun_check` by the first re-run check's rule, the words of
    the changes in ``alike`` only (:func:`alike_changes`; None: every change both have).

    Returns
    -------
    Compared
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
                  ci: CI, draws: int = 1000, seed: int = 0) -> Exchange:
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
    Exchange
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
