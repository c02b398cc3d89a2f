"""E2's tables for the report: each formats what :mod:`.contrasts` or :mod:`.attribution`
computed, one function per table, as text with its CI and run counts."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rtstudy.experiments.e2_rt_threads import published
from rtstudy.experiments.e2_rt_threads.attribution import PARTS
from rtstudy.stats import format_p


def _ci(low: float, high: float, fmt: str) -> str:
    return f" [{fmt.format(low)}, {fmt.format(high)}]" if np.isfinite(low) else " (no CI)"


def comparison_table(red: pd.DataFrame) -> pd.DataFrame:
    """Every policy of the grid against its baseline, for the report.

    The mean per-run std of each, the reduction with its CI over runs (none
    below 3 runs: "no CI") and the source's rating, then, as a screen over the
    pooled frames, the Holm-adjusted p-values of the spread (Brown–Forsythe)
    and location (Mann–Whitney) tests.
    """
    if red.empty:
        return pd.DataFrame()
    rows = []
    for r in red.sort_values(["load_work_model", "load_factor", "policy"]).to_dict("records"):
        reduction = (f"{r['reduction']:+.0%}{_ci(r['low'], r['high'], '{:+.0%}')}"
                     if pd.notna(r["reduction"]) else "n/a")
        rows.append({"loads": r["load_work_model"], "loads per CPU": f"{r['load_factor']:g}",
                     "policy": r["policy"], f"std {r['baseline']} ms": f"{r['std_normal_ms']:.3f}",
                     "std ms": f"{r['std_ms']:.3f}", "std reduction": reduction,
                     "rating": r["rating"], "runs": f"{r['n_runs']} vs {r['n_runs_normal']}",
                     "p spread, frames (Holm)": format_p(r["p_spread_holm"]),
                     "p location, frames (Holm)": format_p(r["p_location_holm"])})
    return pd.DataFrame(rows)


def seed_table(seeds: list[dict]) -> pd.DataFrame:
    """The seeds' published reductions beside this study's, measured with each seed's topology."""
    rows = [{"source": p["implementation"], "real-time policy": p["policy"],
             "normal std ms": p["normal_ms"], "real-time std ms": p["realtime_ms"],
             "change": p["change"]} for p in published.STD_MS]
    for r in seeds:
        ci = (f" [{-r['high']:+.1%}, {-r['low']:+.1%}]" if np.isfinite(r["low"])
              else f" (no CI: {min(r['n_runs'], r['n_runs_normal'])} runs)")
        rows.append({"source": f"this study, {r['topology']} ({r['loads']} {r['load_work_model']} "
                               f"loads; runs {r['n_runs']} vs {r['n_runs_normal']}"
                               f"{'' if r['pinned'] else '; target unpinned'})",
                     "real-time policy": r["policy"], "normal std ms": round(r["std_normal_ms"], 3),
                     "real-time std ms": round(r["std_ms"], 3),
                     "change": f"{-r['reduction']:+.1%}{ci}",
                     "mean period ms (normal → RT)": f"{r['mean_normal_ms']:.2f} → {r['mean_ms']:.2f}"})
    column = "mean period ms (normal → RT)"
    out = pd.DataFrame(rows)
    out[column] = out[column].fillna("not published") if column in out else "not published"
    return out


def effects_table(eff: pd.DataFrame) -> pd.DataFrame:
    """:func:`.contrasts.effects` for the report: what changed, with what held, and the reduction."""
    if eff.empty:
        return pd.DataFrame()
    rows = []
    for r in eff.to_dict("records"):
        held = ", ".join(f"{k.replace('load_', '')} {r[k]}" for k in
                         ("policy", "dispatcher", "load_placement") if k != r["factor"])
        rows.append({"factor": r["factor"].replace("load_", "load "),
                     "change": f"{r['reference']} → {r['level']}", "held": held,
                     "std ms": f"{r['std_reference_ms']:.3f} → {r['std_ms']:.3f}",
                     "std reduction": f"{r['reduction']:+.0%}{_ci(r['low'], r['high'], '{:+.0%}')}",
                     "runs": f"{r['n_runs']} vs {r['n_reference']}"})
    return pd.DataFrame(rows)


def floor_table(ratios: pd.DataFrame) -> pd.DataFrame:
    """:func:`.contrasts.floor_ratios` for the report, closest to the floor first."""
    if ratios.empty:
        return pd.DataFrame()
    return pd.DataFrame([{
        "configuration": r["label"], "std ms": f"{r['std_ms']:.3f}",
        "floor std ms": f"{r['floor_std_ms']:.3f}",
        "ratio to floor": f"{r['ratio']:.1f}×{_ci(r['low'], r['high'], '{:.1f}')}",
        "runs": f"{r['n_runs']} vs {r['n_floor']}"} for r in ratios.to_dict("records")])


def attribution_table(summary: pd.DataFrame) -> pd.DataFrame:
    """:func:`.attribution.attribution_summary` for the report: per traced condition, each
    part's mean / max (µs) and share of the lateness's variance, how often it was blocked and by
    whom, and who had the CPU it waited for."""
    if summary.empty:
        return pd.DataFrame()
    rows = []
    for r in summary.to_dict("records"):
        top_who = max(r["displaced"].items(), key=lambda kv: kv[1]) if r["displaced"] else ("", 0)
        row = {"traced run": r["label"].replace("-trace", ""), "frames": r["frames"],
               "lateness std / max, µs": f"{r['lateness_std_ms'] * 1000:.0f} / "
                                         f"{r['lateness_max_ms'] * 1000:.0f}"}
        for part, name in PARTS.items():
            row[name] = (f"{r[f'{part}_mean'] * 1000:.0f} / {r[f'{part}_max'] * 1000:.0f}; "
                         f"{r[f'{part}_share']:.0%}" if np.isfinite(r[f"{part}_share"])
                         else f"{r[f'{part}_mean'] * 1000:.0f} / {r[f'{part}_max'] * 1000:.0f}")
        row["blocked frames (woken by)"] = (
            f"{r['blocked_frames']} (" + ", ".join(f"{k} {v}" for k, v in r["blocked_by"].items())
            + ")" if r["blocked_frames"] else "0")
        row["woken by dispatcher"] = f"{r['by_dispatcher']:.0%}"
        row["who had the CPU it waited for"] = (f"{top_who[0]} ({top_who[1]:.0%})" if top_who[0]
                                                 else "(never waited)")
        rows.append(row)
    return pd.DataFrame(rows)
