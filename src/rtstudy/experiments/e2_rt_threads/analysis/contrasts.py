"""E2 over runs: each condition's typical jitter and late frames, and its contrasts.

The unit of replication is the run. :func:`condition_summary` gives each condition
its typical jitter (the mean of per-run period IQRs, t-interval over runs) and
its late frames pooled over runs (a rate with a CI for rare counts,
:func:`rtstudy.inference.events.pooled_rate`). Each contrast compares the mean of per-run
frame-period stds (``runs``'s ``period_std_ms``) of two groups of runs, with a Welch
t-interval over the runs of both (:func:`rtstudy.inference.stats.two_group_ci`): :func:`reductions`
is the policy grid against a baseline, :func:`effects` one factor at a time at the headline
point, :func:`seed_compatible` the seeds' own topologies, :func:`floor_ratios`
every condition against the floor (cyclictest in the same sweep). A contrast with a
condition that starved (:func:`conditions.starved`) says so in its ``void``.
"""
from __future__ import annotations

from typing import TypedDict

import numpy as np
import pandas as pd

from rtstudy.experiments.e2_rt_threads import published
from rtstudy.experiments.e2_rt_threads.conditions import (BASELINE, FACTORS, PLAIN, grid,
                                                          headline_point, starved)
from rtstudy.experiments.e2_rt_threads.analysis.metrics import PER_FRAMES
from rtstudy.inference import criteria
from rtstudy.inference.events import pooled_rate, wilks_quantile
from rtstudy.inference.stats import (CI, Estimate, holm, over_runs, rank_test, ratio_ci,
                                     spread_test, two_group_ci)
from rtstudy.inference.within import event_rate_variance

# A run's std is "decided by a few frames" when its 2 most extreme periods carry more than
# this share of its squared deviations (metrics.run_metrics' std_top2_share;
# rtstudy.inference.criteria).
DECIDED_SHARE = criteria.value("e2_decided_share")


class Summary(TypedDict):
    """One group of runs over its runs (:func:`summarize`: each key documented there)."""

    runs: int
    frames: int
    duration_s: float
    iqr_us: float
    iqr_low: float
    iqr_high: float
    iqr_within: float
    late_within: float
    mad_us: float
    p50_us: float
    p99_us: float
    tail_us: float
    flatness_us: float
    late: int
    late_rate: float
    late_low: float
    late_high: float
    dispersion: float
    max_ms: float
    max_quantile: float
    std_ms: float
    decided: int
    mean_ms: float
    nominal_ms: float


def summarize(runs: pd.DataFrame, ci: CI) -> Summary:
    """One group of runs' typical jitter and late frames, over its runs.

    Parameters
    ----------
    runs : DataFrame
        One row per run (:func:`.metrics.run_metrics` columns).
    ci : CI
        The report's CI settings.

    Returns
    -------
    Summary
        ``runs``, ``frames`` (periods over all runs), ``duration_s`` (their total, s);
        ``iqr_us`` (mean of per-run period IQRs, µs) with ``iqr_low`` / ``iqr_high``
        (t-interval over runs, NaN below 3 runs) and ``iqr_within`` (µs², the mean of the
        runs' ``period_iqr_within_us2``), the means of ``mad_us``,
        ``p50_us`` / ``p99_us`` (|lateness|), ``tail_us`` and ``flatness_us`` (µs);
        ``late`` (late frames over all runs), ``late_rate`` / ``late_low`` /
        ``late_high`` (per :data:`.metrics.PER_FRAMES` frames,
        :func:`rtstudy.inference.events.pooled_rate`; with none late, ``late_high`` is the
        one-sided bound), ``dispersion`` (its φ), ``late_within`` (a run's rate's binomial
        variance, :func:`rtstudy.inference.within.event_rate_variance`); ``max_ms`` (the largest
        lateness of all frames) and ``max_quantile`` (the quantile it bounds at the CI's
        level, :func:`rtstudy.inference.events.wilks_quantile`, were frames independent);
        ``std_ms`` (mean per-run std, ms), ``decided`` (runs whose std the 2 most
        extreme frames decide, :data:`DECIDED_SHARE`), ``mean_ms`` and ``nominal_ms``.
    """
    iqr = over_runs(runs["period_iqr_us"], ci)
    rate = pooled_rate(runs["late"], runs["n"], ci.confidence).per(PER_FRAMES)
    frames = int(runs["n"].sum())
    return {"runs": int(len(runs)), "frames": frames, "duration_s": float(runs["duration_s"].sum()),
            "iqr_us": iqr.value, "iqr_low": iqr.low, "iqr_high": iqr.high,
            "iqr_within": float(runs["period_iqr_within_us2"].mean()),
            "late_within": event_rate_variance(runs["late"], runs["n"], PER_FRAMES),
            "mad_us": float(runs["period_mad_us"].mean()),
            "p50_us": float(runs["lateness_p50_us"].mean()),
            "p99_us": float(runs["lateness_p99_us"].mean()),
            "tail_us": float(runs["period_tail_us"].mean()),
            "flatness_us": float(runs["period_flatness_us"].mean()),
            # A frame is late or not: the rate cannot pass one per frame, where the Poisson
            # model, made for rare events, would.
            "late": rate.events, "late_rate": rate.value, "late_low": rate.low,
            "late_high": float(np.minimum(rate.high, PER_FRAMES)), "dispersion": rate.dispersion,
            "max_ms": float(runs["lateness_max_ms"].max()),
            "max_quantile": wilks_quantile(frames, ci.confidence) if frames else np.nan,
            "std_ms": float(runs["period_std_ms"].mean()),
            "decided": int((runs["std_top2_share"] > DECIDED_SHARE).sum()),
            "mean_ms": float(runs["period_mean_ms"].mean()),
            "nominal_ms": float(runs["nominal_ms"].iloc[0])}


def condition_summary(runs: pd.DataFrame, ci: CI) -> pd.DataFrame:
    """Every condition's (``label``'s) factors and :func:`summarize`, one row each,
    with ``starved`` (:func:`conditions.starved`)."""
    if runs.empty:
        return pd.DataFrame()
    hungry = starved(runs)
    return pd.DataFrame([{"label": label, **{k: g[k].iloc[0] for k in FACTORS},
                          "load_factor": g["load_factor"].iloc[0], **summarize(g, ci),
                          "starved": label in hungry}
                         for label, g in runs.groupby("label", sort=False)])


def _void(hungry: dict[str, float], *groups: pd.DataFrame) -> dict[str, float]:
    """The starved conditions among the groups compared: label → mean period (ms)."""
    labels = {str(lab) for g in groups for lab in g["label"].unique()}
    return {lab: hungry[lab] for lab in sorted(labels) if lab in hungry}


def rating(reduction: float) -> str:
    """The source benchmark's name for a std reduction (excellent, good, modest, limited)."""
    for threshold, name in published.RATING_BANDS:
        if reduction > threshold:
            return name
    return "limited"


def std_reduction(a, b, ci: CI) -> Estimate:
    """``1 − mean(b) / mean(a)`` of per-run frame-period stds, with a t-interval over runs.

    ``a`` and ``b`` hold one std per independent run (the baseline's and the
    policy's). Positive means ``b`` (e.g. a real-time policy) has the smaller
    jitter. The ratio's t-interval on the log scale (:func:`rtstudy.inference.stats.ratio_ci`);
    below :data:`rtstudy.inference.stats.MIN_RUNS` runs in either group there is no CI.
    """
    ratio = ratio_ci(a, b, ci)
    return Estimate(1 - ratio.value, 1 - ratio.high, 1 - ratio.low, ratio.n, ratio.confidence)


def std_difference(a, b, ci: CI) -> Estimate:
    """``mean(b) − mean(a)`` of per-run frame-period stds (ms), t-interval over runs."""
    return two_group_ci(a, b, lambda x, y: y.mean() - x.mean(), ci)


def std_ratio(a, b, ci: CI) -> Estimate:
    """``mean(b) / mean(a)`` of per-run frame-period stds, t-interval over runs (log scale)."""
    return ratio_ci(a, b, ci)


def reductions(runs: pd.DataFrame, frames: pd.DataFrame, ci: CI,
               baseline: str = BASELINE) -> pd.DataFrame:
    """Every policy of the grid vs ``baseline``, per load factor and load work model, over runs.

    Columns: the mean per-run std of each (``std_normal_ms``, ``std_ms``) and
    their run counts (``n_runs_normal``, ``n_runs``); the ``reduction`` of the
    std with its CI over runs (``low``, ``high``; NaN below 3 runs each) and the
    difference in ms (``diff_ms``, ``diff_low``, ``diff_high``), ``void`` (the
    starved conditions compared: label → mean period, ms). As a screen,
    the Brown–Forsythe (spread, ``p_spread``) and Mann–Whitney (location,
    ``p_location``) p-values over the pooled frames, Holm-adjusted over the
    grid (``*_holm``): frames of one run are not independent, so they are no
    test of H2.
    """
    rows = []
    runs = grid(runs)
    frames = grid(frames) if len(frames) else frames
    hungry = starved(runs)
    for (factor, model), g in runs.groupby(["load_factor", "load_work_model"]):
        base_runs = g[g["policy"] == baseline]
        base = base_runs["period_std_ms"]
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
                         "rating": rating(est.value), "void": _void(hungry, base_runs, h),
                         "p_spread": spread_test(base_frames, policy_frames),
                         "p_location": rank_test(base_frames, policy_frames)})
    out = pd.DataFrame(rows)
    if len(out):
        out["p_spread_holm"] = holm(out["p_spread"])
        out["p_location_holm"] = holm(out["p_location"])
    return out


def seed_compatible(runs: pd.DataFrame, ci: CI) -> list[dict]:
    """Each seed topology's reduction (its own normal mode → its real-time mode), over runs.

    Beside the std reduction (the seeds' quantity; ``void`` names a mode that
    starved), each mode's :func:`summarize` (``normal`` and ``realtime``): the
    seeds published only the std, this study reads their topologies in the
    typical jitter and the late frames too.
    """
    out = []
    for topology, g in runs.groupby("topology", sort=True) if len(runs) else []:
        if not str(topology).startswith("seed"):
            continue
        hungry = starved(g)
        normal = g[g["policy"] == "normal"]
        base = normal["period_std_ms"]
        for policy, h in g[g["policy"] != "normal"].groupby("policy"):
            est = std_reduction(base, h["period_std_ms"], ci)
            out.append({"topology": topology, "policy": policy,
                        "load_work_model": h["load_work_model"].iloc[0],
                        "nominal_ms": float(h["nominal_ms"].iloc[0]),
                        "mean_normal_ms": float(normal["period_mean_ms"].mean()),
                        "mean_ms": float(h["period_mean_ms"].mean()),
                        "loads": int(h["loads"].iloc[0]), "pinned": bool(h["pinned"].all()),
                        "std_normal_ms": float(base.mean()) if len(base) else np.nan,
                        "std_ms": float(h["period_std_ms"].mean()), "reduction": est.value,
                        "low": est.low, "high": est.high, "void": _void(hungry, normal, h),
                        "normal": summarize(normal, ci) if len(normal) else None,
                        "realtime": summarize(h, ci),
                        "n_runs": int(len(h)), "n_runs_normal": int(len(base))})
    return out


def floor_ratios(runs: pd.DataFrame, floor: pd.DataFrame, ci: CI) -> pd.DataFrame:
    """Every Holoscan condition's frame-period std over the floor's at the same load factor.

    The floor is cyclictest in the same sweep (``floor.py``): the same period,
    priority and pinning, with ``loads`` stress-ng workers beside it. The ratio
    of mean per-run stds has a t-interval over the runs of both.
    """
    if runs.empty or floor.empty:
        return pd.DataFrame()
    rows = []
    hungry = starved(runs)
    for label, g in runs.groupby("label", sort=False):
        f = floor.loc[floor["load_factor"] == g["load_factor"].iloc[0], "period_std_ms"]
        if f.empty:
            continue
        est = std_ratio(f, g["period_std_ms"], ci)
        rows.append({"label": label, **{k: g[k].iloc[0] for k in FACTORS},
                     "std_ms": float(g["period_std_ms"].mean()), "floor_std_ms": float(f.mean()),
                     "ratio": est.value, "low": est.low, "high": est.high,
                     "void": _void(hungry, g), "n_runs": int(len(g)), "n_floor": int(len(f)),
                     "pinned": bool(g["pinned"].all())})
    return pd.DataFrame(rows)


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
    # Each factor against its reference: the policy against the baseline, the dispatcher and
    # the load placement against the plain layout's.
    contrasts = [("policy", BASELINE), *PLAIN.items()]
    keys = ["policy", "dispatcher", "load_placement"]
    hungry = starved(top)
    by_key = dict(list(top.groupby(keys)))
    groups = {k: g["period_std_ms"] for k, g in by_key.items()}
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
                         "void": _void(hungry, by_key[ref_key], by_key[key]),
                         "n_runs": int(len(values)), "n_reference": int(len(groups[ref_key]))})
    return pd.DataFrame(rows)
