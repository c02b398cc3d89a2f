"""How many frames E2's late-frame comparisons need: the power plan from the study's own data.

Late frames vary mostly within a run (the binomial count of rare events: docs/benchmarks.md,
variance components), so they want more frames per condition, and it matters little whether
they come as longer runs or as more runs of the same length. For each change at the headline
point the plan takes its baseline's measured late-frame rate and the runs' over-dispersion φ,
and gives the frames per condition with which :func:`rtstudy.inference.rates.word` decides at 80 %
power (:func:`rtstudy.inference.rates.frames_needed`, computed from the rule itself): to show a
change that quarters the late frames (:data:`WORTHWHILE`) as ``fewer`` (at least halved, the
whole CI past the margin: protocol v1; a true halving sits on that edge, which no size decides),
and to show one that changes nothing as ``equivalent``. ``rtstudy plan power`` prints it.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rtstudy.experiments.e2_rt_threads.analysis.ladder import recommendations
from rtstudy.inference import criteria, rates
from rtstudy.inference.stats import CI

# The change the plan sizes a comparison for: a quarter of the baseline's late frames, half the
# margin's lower end (protocol v1).
WORTHWHILE = criteria.value("e2_late_ratio_margin")[0] / 2


def plan(runs: pd.DataFrame, cfg: dict, ci: CI, power: float = 0.8) -> pd.DataFrame:
    """The frames per condition each change at the headline point needs, from ``runs``.

    Parameters
    ----------
    runs : DataFrame
        E2's ``runs`` table (one row per run) of the dataset to plan from.
    cfg : dict
        E2's parameters (``ladder_policy``, ``fps``, ``headline_duration_s``).
    ci : CI
        The level the decision is made at.
    power : float
        The chance of deciding to plan for.

    Returns
    -------
    DataFrame
        One row per change: ``change``, ``baseline``, ``late_base`` / ``frames_base`` (what the
        baseline measured), ``rate_per_10k``, ``phi``, ``frames_now`` (per condition, as
        measured), ``worthwhile`` (a change of :data:`WORTHWHILE`) and ``no_change`` (frames
        per condition to decide each; inf
        where the baseline had no late frame to plan from), and each as ``*_runs`` (runs of
        ``headline_duration_s``) and ``*_min`` (minutes of frames at ``fps``).
    """
    recs = recommendations(runs, cfg["ladder_policy"], ci)
    if recs.empty:
        return pd.DataFrame()
    per_run = cfg["fps"] * cfg["headline_duration_s"]
    rows = []
    for r in recs.to_dict("records"):
        rate = r["late_base"] / r["frames_base"] if r["frames_base"] else 0.0
        phi = r["late_phi"] if np.isfinite(r["late_phi"]) else 1.0
        need = {"worthwhile": WORTHWHILE, "no_change": 1.0}
        row = {"change": r["change"], "baseline": r["baseline"], "late_base": r["late_base"],
               "frames_base": r["frames_base"], "rate_per_10k": rate * 1e4, "phi": phi,
               "frames_now": min(r["frames"], r["frames_base"]),
               "late_frames": r["late_frames"]}
        for key, ratio in need.items():
            n = rates.frames_needed(rate, ratio, phi, ci.confidence, power) if rate > 0 \
                else float("inf")
            row[key] = n
            row[f"{key}_runs"] = np.ceil(n / per_run) if np.isfinite(n) else float("inf")
            row[f"{key}_min"] = n / cfg["fps"] / 60
        rows.append(row)
    return pd.DataFrame(rows)


def text(table: pd.DataFrame, cfg: dict, host_id: str) -> str:
    """:func:`plan` as a plain table for the terminal."""
    if table.empty:
        return f"{host_id}: no change measured at the headline point: nothing to plan from"
    def need(r: dict, key: str) -> str:
        if not np.isfinite(r[key]):
            return "no late frame in the baseline to plan from"
        return f"{r[key]:,.0f} frames ({r[f'{key}_runs']:g} runs, {r[f'{key}_min']:.1f} min)"

    lines = [f"E2 power plan from {host_id}'s data: frames per condition for 80 % power "
             f"({cfg['fps']} FPS, runs of {cfg['headline_duration_s']:g} s)", ""]
    for r in table.to_dict("records"):
        lines += [f"{r['change']} against {r['baseline']}: now {r['late_frames']}; baseline "
                  f"{r['late_base']} late in {r['frames_base']:,} frames "
                  f"({r['rate_per_10k']:.1f} per 10 000, φ {r['phi']:.2f}); measured "
                  f"{r['frames_now']:,} per condition",
                  f"    ×{WORTHWHILE:g} shown as fewer:        {need(r, 'worthwhile')}",
                  f"    no change shown as equivalent: {need(r, 'no_change')}"]
    return "\n".join(lines)
