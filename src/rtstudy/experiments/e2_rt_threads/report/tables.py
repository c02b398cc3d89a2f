"""E2's tables for the report: each formats what :mod:`analysis.contrasts` or :mod:`analysis.attribution`
computed, one function per table, as text with its CI and run counts.

Every change of a std reads the same way in every table: ``with / without − 1``,
"−" for less jitter (the seeds' convention); a comparison with a starved condition
reads "void" instead (:func:`conditions.starved`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rtstudy.experiments.e2_rt_threads import published
from rtstudy.experiments.e2_rt_threads.analysis.attribution import PARTS
from rtstudy.experiments.e2_rt_threads.conditions import PLAIN
from rtstudy.experiments.e2_rt_threads.analysis.metrics import PER_FRAMES
from rtstudy.experiments.e2_rt_threads.params import PLACEMENTS, POLICY_NAMES
from rtstudy.inference.stats import format_p

# What the seeds' rows say where this study has a quantity they did not publish.
NOT_PUBLISHED = "not published (std only)"


def _ci(low: float, high: float, fmt: str) -> str:
    return f" [{fmt.format(low)}, {fmt.format(high)}]" if np.isfinite(low) else " (no CI)"


def _void(void: dict) -> str:
    """Why a std comparison is void: the starved conditions and their mean periods."""
    return "void: " + "; ".join(f"{label} starved (mean period {ms:.2f} ms)"
                                for label, ms in void.items())


def std_change(r: dict, fmt: str = "{:+.0%}") -> str:
    """A std reduction record as its change, ``with / without − 1`` ("−" is less jitter),
    with its CI, or why it is void."""
    if r.get("void"):
        return _void(r["void"])
    if not pd.notna(r["reduction"]):
        return "n/a"
    return fmt.format(-r["reduction"]) + _ci(-r["high"], -r["low"], fmt)


def _num(x: float) -> str:
    """A rate or a spread as a reader scans it: one decimal below 10, thousands separated."""
    if x == 0:
        return "0"
    return f"{x:,.1f}" if abs(x) < 10 else f"{x:,.0f}"


def late_rate(r: dict) -> str:
    """A late-frame rate per 10 000 frames with its CI, its bound with none late, or no CI."""
    if r["late"] == r["frames"]:
        return f"{PER_FRAMES:,} (all {r['frames']:,} late)"
    if not np.isfinite(r["late_high"]):
        return f"{_num(r['late_rate'])} (no CI: {r['runs']} run{'s' if r['runs'] != 1 else ''})"
    if r["late"] == 0:
        return f"< {_num(r['late_high'])} (none late)"
    phi = f" (φ {r['dispersion']:.1f})" if round(r["dispersion"], 1) > 1 else ""
    return f"{_num(r['late_rate'])} [{_num(r['late_low'])}, {_num(r['late_high'])}]{phi}"


def iqr(r: dict) -> str:
    """A condition's typical jitter: the mean per-run period IQR (µs) with its CI over runs."""
    ci = f" [{_num(r['iqr_low'])}, {_num(r['iqr_high'])}]" if np.isfinite(r["iqr_low"]) \
        else " (no CI)"
    return _num(r["iqr_us"]) + ci


def _reading_order(r: dict) -> tuple:
    """Native loads first, by load factor; the floor first in each; then the policy grid's
    order, the dispatcher and the load placement varied last."""
    return (r["load_work_model"] != "native", r["load_factor"], r["topology"] != "floor",
            POLICY_NAMES.index(r["policy"]) if r["policy"] in POLICY_NAMES else len(POLICY_NAMES),
            r["dispatcher"] != PLAIN["dispatcher"], PLACEMENTS.index(r["load_placement"])
            if r["load_placement"] in PLACEMENTS else len(PLACEMENTS))


def late_table(conditions: pd.DataFrame, threshold_ms: float) -> pd.DataFrame:
    """Every condition's typical jitter beside its late frames, for the report.

    :func:`analysis.contrasts.condition_summary`'s rows. Typical jitter: the mean per-run period IQR
    (µs) with its CI over runs, the mean
    MAD and the mean P50 / P99 of |lateness| (µs). Late frames over ``threshold_ms``
    (ms): the count of all runs' frames, the rate per 10 000 frames with its CI (φ, the
    over-dispersion between runs, where above 1; with none late, the one-sided upper
    bound), the largest lateness (ms) and the quantile it bounds (Wilks). NVIDIA's
    tail and flatness of the period (µs). A starved condition's lateness grows with
    the run: it says so instead. The seeds' topologies are left to :func:`seed_table`.
    """
    if conditions.empty:
        return pd.DataFrame()
    rows = []
    for r in sorted(conditions[~conditions["topology"].str.startswith("seed")].to_dict("records"),
                    key=_reading_order):
        hungry = f"starved (mean period {r['mean_ms']:.2f} ms)"
        rows.append({
            "configuration": r["label"], "runs": r["runs"],
            "frames (s)": f"{r['frames']:,} ({r['duration_s']:.0f})",
            "period IQR µs": iqr(r), "period MAD µs": _num(r["mad_us"]),
            "|lateness| P50 / P99 µs": hungry if r["starved"] else
            f"{_num(r['p50_us'])} / {_num(r['p99_us'])}",
            f"late (> {threshold_ms:g} ms)": f"{r['late']:,} of {r['frames']:,}",
            "late per 10 000 frames": late_rate(r),
            "max lateness ms (bounds)": hungry if r["starved"] else
            f"{r['max_ms']:.1f} (P{r['max_quantile'] * 100:.1f})",
            "tail / flatness µs": f"{_num(r['tail_us'])} / {_num(r['flatness_us'])}"})
    return pd.DataFrame(rows)


def comparison_table(red: pd.DataFrame) -> pd.DataFrame:
    """Every policy of the grid against its baseline, for the report.

    The mean per-run std of each, its change with its CI over runs (none
    below 3 runs: "no CI"; void where a condition starved) and the source's
    rating of the reduction, then, as a screen over the
    pooled frames, the Holm-adjusted p-values of the spread (Brown–Forsythe)
    and location (Mann–Whitney) tests.
    """
    if red.empty:
        return pd.DataFrame()
    rows = []
    for r in red.sort_values(["load_work_model", "load_factor", "policy"]).to_dict("records"):
        rows.append({"loads": r["load_work_model"], "loads per CPU": f"{r['load_factor']:g}",
                     "policy": r["policy"], f"std {r['baseline']} ms": f"{r['std_normal_ms']:.3f}",
                     "std ms": f"{r['std_ms']:.3f}", "std change": std_change(r),
                     "rating": "" if r["void"] else r["rating"],
                     "runs": f"{r['n_runs']} vs {r['n_runs_normal']}",
                     "p spread, frames (Holm)": format_p(r["p_spread_holm"]),
                     "p location, frames (Holm)": format_p(r["p_location_holm"])})
    return pd.DataFrame(rows)


def seed_table(seeds: list[dict]) -> pd.DataFrame:
    """The seeds' published std changes beside this study's, measured with each seed's topology.

    Beside the std (the only quantity the seeds published), each mode's mean
    period, typical jitter (period IQR, µs) and late frames per 10 000; the
    seeds' rows say "not published" there. A mode that starved makes the std
    change void.
    """
    rows = [{"source": p["implementation"], "real-time policy": p["policy"],
             "normal std ms": f"{p['normal_ms']:.3f}",
             "real-time std ms": f"{p['realtime_ms']:.3f}",
             "std change": p["change"]} for p in published.STD_MS]
    for r in seeds:
        normal, rt = r["normal"] or {}, r["realtime"]
        rows.append({"source": f"this study, {r['topology']} ({r['loads']} {r['load_work_model']} "
                               f"loads; runs {r['n_runs']} vs {r['n_runs_normal']}"
                               f"{'' if r['pinned'] else '; target unpinned'})",
                     "real-time policy": r["policy"], "normal std ms": f"{r['std_normal_ms']:.3f}",
                     "real-time std ms": f"{r['std_ms']:.3f}",
                     "std change": std_change(r, "{:+.1%}"),
                     "mean period ms (normal → RT)":
                         f"{r['mean_normal_ms']:.2f} → {r['mean_ms']:.2f}",
                     "period IQR µs (normal → RT)":
                         f"{iqr(normal) if normal else 'n/a'} → {iqr(rt)}",
                     "late per 10 000 frames (normal → RT)":
                         f"{late_rate(normal) if normal else 'n/a'} → {late_rate(rt)}"})
    return pd.DataFrame(rows).fillna(NOT_PUBLISHED)


def effects_table(eff: pd.DataFrame) -> pd.DataFrame:
    """:func:`analysis.contrasts.effects` for the report: what changed, with what held, the std's change."""
    if eff.empty:
        return pd.DataFrame()
    rows = []
    for r in eff.to_dict("records"):
        held = ", ".join(f"{k.replace('load_', '')} {r[k]}" for k in
                         ("policy", "dispatcher", "load_placement") if k != r["factor"])
        rows.append({"factor": r["factor"].replace("load_", "load "),
                     "change": f"{r['reference']} → {r['level']}", "held": held,
                     "std ms": f"{r['std_reference_ms']:.3f} → {r['std_ms']:.3f}",
                     "std change": std_change(r),
                     "runs": f"{r['n_runs']} vs {r['n_reference']}"})
    return pd.DataFrame(rows)


def floor_table(ratios: pd.DataFrame) -> pd.DataFrame:
    """:func:`analysis.contrasts.floor_ratios` for the report, in the sweep's order (not by ratio: the
    pre-specified configurations are marked, none is picked by its result); an unpinned target
    (SCHED_DEADLINE where the host refuses it pinned) is said, a confound of its ratio."""
    if ratios.empty:
        return pd.DataFrame()
    return pd.DataFrame([{
        "configuration": r["label"] + (" (pre-specified)" if r.get("prespecified") else "")
        + ("" if r.get("pinned", True) else "; target unpinned"), "std ms": f"{r['std_ms']:.3f}",
        "floor std ms": f"{r['floor_std_ms']:.3f}",
        "ratio to floor": _void(r["void"]) if r["void"] else
        f"{r['ratio']:.1f}×{_ci(r['low'], r['high'], '{:.1f}')}",
        "runs": f"{r['n_runs']} vs {r['n_floor']}"} for r in ratios.to_dict("records")])


def attribution_table(summary: pd.DataFrame) -> pd.DataFrame:
    """:func:`analysis.attribution.attribution_summary` for the report: per traced condition, each
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


def _ratio(x: float) -> str:
    """Two decimals where a ratio is read to them (below 100), whole numbers above."""
    return f"{x:.2f}" if abs(x) < 100 or not np.isfinite(x) else f"{x:,.0f}"


def ratio_text(value: float, low: float, high: float) -> str:
    """A ratio with its CI as ×value [low, high]; n/a without a value. A rate that was 0
    before has an infinite ratio but a finite lower bound: ×∞ [low, ∞]."""
    if np.isposinf(value) and np.isfinite(low):
        return f"×∞ [{_ratio(low)}, ∞]"
    if not np.isfinite(value):
        return "n/a"
    return f"×{_ratio(value)}" + (f" [{_ratio(low)}, {_ratio(high)}]" if np.isfinite(low)
                                  else " (no CI)")



def ladder_table(ladder: pd.DataFrame, threshold_ms: float) -> pd.DataFrame:
    """The jitter ladder for the report: each rung's typical jitter (period IQR with its CI over
    runs, and its ratio to the rung below), |lateness| P50 / P99 and late frames per 10 000."""
    if ladder.empty:
        return pd.DataFrame()
    rows = []
    for i, r in enumerate(ladder.to_dict("records")):
        step = "" if i == 0 else ratio_text(r["step_iqr"], r["step_iqr_low"], r["step_iqr_high"])
        rows.append({"rung": f"{r['number']}. {r['name']}", "configuration": r["label"],
                     "runs": r["runs"], "frames": f"{r['frames']:,}",
                     "period IQR µs": iqr(r), "× the measured rung below": step,
                     "|lateness| P50 / P99 µs": f"{_num(r['p50_us'])} / {_num(r['p99_us'])}",
                     f"late (> {threshold_ms:g} ms) per 10 000": late_rate(r)})
    return pd.DataFrame(rows)


def message_cost(r: dict) -> str:
    """What a change's messages cost (the fragment fix's): the latency's mean per-run P50 with
    its CI and mean per-run P99 (µs), the messages and runs; "" for a change without them."""
    if not r.get("message_runs"):
        return ""
    lost = f", {r['lost']:,} lost" if r["lost"] else ""
    runs = f"{r['message_runs']} run{'s' if r['message_runs'] != 1 else ''}"
    return (f"message latency P50 {_num(r['message_p50_us'])} µs"
            f"{_ci(r['message_p50_low'], r['message_p50_high'], '{:,.0f}')}, P99 "
            f"{_num(r['message_p99_us'])} µs ({r['messages']:,} messages{lost}, {runs})")


def recommendation_table(recs: pd.DataFrame, changes: dict, over: dict | None = None
                         ) -> pd.DataFrame:
    """Each change at the headline point against its baseline: typical jitter, late frames and
    the CPU the loads got, each with its CI and what it shows; ``changes``: key → (what to do,
    what it costs), the measured message latency added where a change sends messages
    (:func:`message_cost`); with ``over`` (:func:`analysis.ladder.over_sessions`, several sessions),
    a
    last column counting what the sessions concluded."""
    if recs.empty:
        return pd.DataFrame()
    rows = []
    for r in recs.to_dict("records"):
        what, cost = changes.get(r["change"], (r["change"], ""))
        cost = "; ".join(part for part in (cost, message_cost(r)) if part)
        base = {"late": r["late_base"], "late_rate": r["late_base_rate"],
                "late_low": r["late_base_low"], "late_high": r["late_base_high"],
                "frames": r["frames_base"], "runs": r["runs_base"],
                "dispersion": r["dispersion_base"]}
        rows.append({"change": what, "against": r["baseline"], "runs": f"{r['runs']} vs "
                     f"{r['runs_base']}",
                     "typical jitter (period IQR)":
                         ratio_text(r["iqr_ratio"], r["iqr_low"], r["iqr_high"]),
                     "late per 10 000: before → after": f"{late_rate(base)} → {late_rate(r)}",
                     "late frames: rate ratio":
                         f"{ratio_text(r['late_ratio'], r['late_ratio_low'], r['late_ratio_high'])}"
                         f": {r['late_frames']}",
                     "CPU the loads got": ratio_text(r["cpu_ratio"], r["cpu_low"], r["cpu_high"]),
                     "other costs": cost})
        o = (over or {}).get(r["change"])
        if o:
            rows[-1]["pooled over the sessions"] = (
                f"typical jitter {ratio_text(o['iqr_ratio'], o['iqr_low'], o['iqr_high'])}; "
                "late frames "
                f"{ratio_text(o['late_ratio'], o['late_ratio_low'], o['late_ratio_high'])}: "
                f"{o['held']['late_frames']} ({o['sessions']} of {o['of']} sessions)")
    return pd.DataFrame(rows)


def mechanism_table(mechanism: pd.DataFrame, patterns: dict, threshold_ms: float) -> pd.DataFrame:
    """:func:`analysis.attribution.mechanism_summary` for the report: per traced condition, its late
    frames and how many each mechanism explains (the mechanisms no frame shows left out)."""
    if mechanism.empty:
        return pd.DataFrame()
    seen = [k for k in patterns if mechanism[k].sum() > 0]
    rows = []
    for r in mechanism.to_dict("records"):
        row = {"traced condition": r["label"].replace("-trace", ""),
               "runs (with late frames)": f"{r['runs']} ({r['late_runs']})",
               f"late (> {threshold_ms:g} ms) / frames": f"{r['late']} / {r['frames']:,}",
               "GIL probed": "yes" if r["gil_probed"] else "no",
               "mean GIL wait µs": _num(r["gil_wait_ms_mean"] * 1e3) if r["gil_probed"]
               else "n/a"}
        for k in seen:
            row[k.replace("_", " ")] = (f"{r[k]} ({r[k + '_share']:.0%})" if r["late"] else "0")
        rows.append(row)
    return pd.DataFrame(rows)


def tracing_cost_table(cost: pd.DataFrame) -> pd.DataFrame:
    """:func:`analysis.attribution.tracing_cost` for the report: typical jitter and late frames of each
    traced condition, untraced → traced."""
    if cost.empty:
        return pd.DataFrame()
    return pd.DataFrame([{
        "condition": r["label"], "runs: untraced / traced": f"{r['runs']} / {r['traced_runs']}",
        "period IQR µs: untraced → traced": f"{_num(r['iqr_us'])} → {_num(r['traced_iqr_us'])}",
        "traced / untraced": ratio_text(r["ratio"], r["low"], r["high"]),
        "late / frames: untraced → traced": f"{r['late']} / {r['frames']:,} → "
                                            f"{r['traced_late']} / {r['traced_frames']:,}"}
        for r in cost.to_dict("records")])


def lateness_us(r: dict) -> str:
    """A change's lateness as practitioners quote it (µs): P99 before → after (each the mean
    over runs with its CI), and the largest of all frames; empty where not measured."""
    if not np.isfinite(r.get("p99_us", np.nan)):
        return ""

    def p99(value: float, low: float, high: float) -> str:
        shown = f"{value:,.0f}"
        return shown + (f" [{low:,.0f}, {high:,.0f}]" if np.isfinite(low) else "")

    return (f"lateness P99 {p99(r['p99_base_us'], r['p99_base_low'], r['p99_base_high'])} → "
            f"{p99(r['p99_us'], r['p99_us_low'], r['p99_us_high'])} µs, max "
            f"{r['max_base_us']:,.0f} → {r['max_us']:,.0f} µs")
