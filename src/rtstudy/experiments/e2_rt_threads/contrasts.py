"""E2's contrasts over runs: a group of runs against its reference, with a bootstrap CI.

The unit of replication is the run: each contrast compares the mean of per-run
frame-period stds (``runs``'s ``period_std_ms``) of two groups of runs, resampling
runs in each group (:func:`rtstudy.stats.two_group_ci`). :func:`reductions` is the
policy grid against a baseline, :func:`effects` one factor at a time at the headline
point, :func:`seed_compatible` the seeds' own topologies, :func:`floor_ratios`
every condition against the floor (cyclictest in the same sweep).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rtstudy.experiments.e2_rt_threads import published
from rtstudy.experiments.e2_rt_threads.conditions import BASELINE, FACTORS, grid, headline_point
from rtstudy.stats import CI, Estimate, holm, rank_test, spread_test, two_group_ci


def rating(reduction: float) -> str:
    """The source benchmark's name for a std reduction (excellent, good, modest, limited)."""
    for threshold, name in published.RATING_BANDS:
        if reduction > threshold:
            return name
    return "limited"


def std_reduction(a, b, ci: CI) -> Estimate:
    """``1 − mean(b) / mean(a)`` of per-run frame-period stds, with a bootstrap CI over runs.

    ``a`` and ``b`` hold one std per independent run (the baseline's and the
    policy's). Positive means ``b`` (e.g. a real-time policy) has the smaller
    jitter. Runs are resampled in each group; below
    :data:`rtstudy.stats.MIN_RUNS` runs in either group there is no CI.
    """
    return two_group_ci(a, b, lambda x, y: 1 - y.mean() / x.mean(), ci)


def std_difference(a, b, ci: CI) -> Estimate:
    """``mean(b) − mean(a)`` of per-run frame-period stds (ms), bootstrap CI over runs."""
    return two_group_ci(a, b, lambda x, y: y.mean() - x.mean(), ci)


def std_ratio(a, b, ci: CI) -> Estimate:
    """``mean(b) / mean(a)`` of per-run frame-period stds, bootstrap CI over runs."""
    return two_group_ci(a, b, lambda x, y: y.mean() / x.mean(), ci)


def reductions(runs: pd.DataFrame, frames: pd.DataFrame, ci: CI,
               baseline: str = BASELINE) -> pd.DataFrame:
    """Every policy of the grid vs ``baseline``, per load factor and load work model, over runs.

    Columns: the mean per-run std of each (``std_normal_ms``, ``std_ms``) and
    their run counts (``n_runs_normal``, ``n_runs``); the ``reduction`` of the
    std with its CI over runs (``low``, ``high``; NaN below 3 runs each) and the
    difference in ms (``diff_ms``, ``diff_low``, ``diff_high``). As a screen,
    the Brown–Forsythe (spread, ``p_spread``) and Mann–Whitney (location,
    ``p_location``) p-values over the pooled frames, Holm-adjusted over the
    grid (``*_holm``): frames of one run are not independent, so they are no
    test of H2.
    """
    rows = []
    runs = grid(runs)
    frames = grid(frames) if len(frames) else frames
    for (factor, model), g in runs.groupby(["load_factor", "load_work_model"]):
        base = g.loc[g["policy"] == baseline, "period_std_ms"]
        if base.empty:
            continue
        f = frames[(frames["load_factor"] == factor) & (frames["load_work_model"] == model)]
        base_frames = f.loc[f["policy"] == baseline, "period_ms"]
        for policy, h in g.groupby("policy"):
            if policy == baseline:
                continue
            est = std_reduction(base, h["period_std_ms"], ci)
            diff = std_difference(base, h["period_std_ms"], ci)
            policy_frames = f.loc[f["policy"] == policy, "period_ms"]
            rows.append({"load_factor": factor, "load_work_model": model, "policy": policy,
                         "baseline": baseline,
                         "std_normal_ms": float(base.mean()), "std_ms": float(h["period_std_ms"].mean()),
                         "n_runs_normal": int(base.size), "n_runs": int(h["period_std_ms"].size),
                         "reduction": est.value, "low": est.low, "high": est.high,
                         "diff_ms": diff.value, "diff_low": diff.low, "diff_high": diff.high,
                         "rating": rating(est.value),
                         "p_spread": spread_test(base_frames, policy_frames),
                         "p_location": rank_test(base_frames, policy_frames)})
    out = pd.DataFrame(rows)
    if len(out):
        out["p_spread_holm"] = holm(out["p_spread"])
        out["p_location_holm"] = holm(out["p_location"])
    return out


def seed_compatible(runs: pd.DataFrame, ci: CI) -> list[dict]:
    """Each seed topology's reduction (its own normal mode → its real-time mode), over runs."""
    out = []
    for topology, g in runs.groupby("topology", sort=True) if len(runs) else []:
        if not str(topology).startswith("seed"):
            continue
        base = g.loc[g["policy"] == "normal", "period_std_ms"]
        for policy, h in g[g["policy"] != "normal"].groupby("policy"):
            est = std_reduction(base, h["period_std_ms"], ci)
            out.append({"topology": topology, "policy": policy,
                        "load_work_model": h["load_work_model"].iloc[0],
                        "nominal_ms": float(h["nominal_ms"].iloc[0]),
                        "mean_normal_ms": float(g.loc[g["policy"] == "normal",
                                                      "period_mean_ms"].mean()),
                        "mean_ms": float(h["period_mean_ms"].mean()),
                        "loads": int(h["loads"].iloc[0]), "pinned": bool(h["pinned"].all()),
                        "std_normal_ms": float(base.mean()) if len(base) else np.nan,
                        "std_ms": float(h["period_std_ms"].mean()), "reduction": est.value,
                        "low": est.low, "high": est.high,
                        "n_runs": int(len(h)), "n_runs_normal": int(len(base))})
    return out


def floor_ratios(runs: pd.DataFrame, floor: pd.DataFrame, ci: CI) -> pd.DataFrame:
    """Every Holoscan condition's frame-period std over the floor's at the same load factor.

    The floor is cyclictest in the same sweep (``floor.py``): the same period,
    priority and pinning, with ``loads`` stress-ng workers beside it. The ratio
    of mean per-run stds has a bootstrap CI over the runs of both.
    """
    if runs.empty or floor.empty:
        return pd.DataFrame()
    rows = []
    for label, g in runs.groupby("label", sort=False):
        f = floor.loc[floor["load_factor"] == g["load_factor"].iloc[0], "period_std_ms"]
        if f.empty:
            continue
        est = std_ratio(f, g["period_std_ms"], ci)
        rows.append({"label": label, **{k: g[k].iloc[0] for k in FACTORS},
                     "std_ms": float(g["period_std_ms"].mean()), "floor_std_ms": float(f.mean()),
                     "ratio": est.value, "low": est.low, "high": est.high,
                     "n_runs": int(len(g)), "n_floor": int(len(f))})
    return pd.DataFrame(rows).sort_values("ratio", kind="stable").reset_index(drop=True)


def effects(runs: pd.DataFrame, ci: CI) -> pd.DataFrame:
    """At the headline point, the effect of each factor with the others held, over runs.

    For every pair of conditions that differ in one factor only — the policy
    (against ``normal_dedicated``), the dispatcher (FIFO against Holoscan's
    own) or the load placement (process or threads against operators) — the
    std reduction ``1 − mean(std with) / mean(std without)`` with its CI.
    """
    top = headline_point(runs)
    if top.empty:
        return pd.DataFrame()
    contrasts = [("policy", BASELINE), ("dispatcher", "other"), ("load_placement", "operators")]
    keys = ["policy", "dispatcher", "load_placement"]
    groups = {k: g["period_std_ms"] for k, g in top.groupby(keys)}
    rows = []
    for factor, reference in contrasts:
        held = [k for k in keys if k != factor]
        for key, values in groups.items():
            level = dict(zip(keys, key))
            if level[factor] == reference or (factor == "policy" and level["policy"] == "normal"):
                continue
            ref_key = tuple(reference if k == factor else level[k] for k in keys)
            if ref_key not in groups:
                continue
            est = std_reduction(groups[ref_key], values, ci)
            rows.append({"factor": factor, "level": level[factor], "reference": reference,
                         **{k: level[k] for k in held},
                         "std_reference_ms": float(groups[ref_key].mean()),
                         "std_ms": float(values.mean()), "reduction": est.value,
                         "low": est.low, "high": est.high,
                         "n_runs": int(len(values)), "n_reference": int(len(groups[ref_key]))})
    return pd.DataFrame(rows)
