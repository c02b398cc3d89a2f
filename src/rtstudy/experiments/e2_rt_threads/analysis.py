"""E2, real-time vs normal thread under CPU contention: loading, reductions and the H2 verdict.

H2: under contention a real-time policy cuts the frame-period
standard deviation of a periodic operator (the published figures are in
``published.py``). Contention is a sweep axis
here (loads per CPU): with no more runnable threads than CPUs there is nothing
for a policy to win.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rtstudy.experiments.e2_rt_threads import published
from rtstudy.experiments.e2_rt_threads.plan import RT_POLICIES
from rtstudy.io import (Dataset, completed_cells, read_samples, run_columns, set_aside_drift,
                        wide)
from rtstudy.stats import (CI, MIN_RUNS, Estimate, drift_check, effect_verdict,
                           equivalence_verdict, format_p, holm, percentiles, rank_test,
                           spread_test, two_group_ci)

# The columns and Arrow types of samples.parquet, as app.py writes them (data/README.md).
SAMPLES = {"frame": "int64", "t_start_ns": "int64", "exec_ns": "int64"}
TABLES = ("frames", "runs")
BASELINE = "normal"
# H2's verdict: at the highest native load factor every real-time policy must cut the
# frame-period std by at least MIN_REDUCTION, with its CI above 0.
MIN_REDUCTION = 0.5
GIL_RATIO = 2  # RT std with Python loads over native loads above this: the GIL sets the jitter


def rating(reduction: float) -> str:
    """The source benchmark's name for a std reduction (excellent, good, modest, limited)."""
    for threshold, name in published.RATING_BANDS:
        if reduction > threshold:
            return name
    return "limited"


def load(directory: Path, cfg: dict) -> Dataset:
    """Frames and per-run metrics of the plan's completed cells.

    Parameters
    ----------
    directory : Path
        The dataset folder.
    cfg : dict
        E2's resolved parameters (``warmup_frames``, ``late_threshold_ms``).

    Returns
    -------
    Dataset
        ``tables["frames"]`` and ``tables["runs"]`` (below), ``missing`` cell ids.

    Notes
    -----
    frames : DataFrame
        One row per kept frame: configuration, ``t_s`` (seconds since the first
        kept frame, measured), ``period_ms`` (to the previous frame) and ``exec_ms``.
    runs : DataFrame
        One row per run: frame period mean/std/min/max/P50/P99/P99.9, execution
        time mean/std/P99/max, ``late`` (period > nominal + threshold), ``missed``
        (frames expected over the measured span minus frames seen), N.
    """
    warmup_frames, late_threshold_ms = cfg["warmup_frames"], cfg["late_threshold_ms"]
    sidecars, missing = completed_cells(directory, SAMPLES)
    frame_frames, rows = [], []
    for sc in sidecars:
        cfg = sc["requested"]["config"]
        s = read_samples(Path(sc["_dir"]) / "samples.parquet").sort_values("frame")
        s = s[s["frame"] >= warmup_frames]
        t = s["t_start_ns"].to_numpy()
        period = np.diff(t) / 1e6
        execs = s["exec_ns"].to_numpy()[1:] / 1e6
        nominal = cfg["period_ns"] / 1e6
        base = {"cell_id": sc["cell_id"], "host_id": sc["host_id"], "policy": cfg["policy"],
                "load_factor": cfg["load_factor"], "loads": cfg["loads"],
                "load_work_model": cfg["load_work_model"], "fps": cfg["fps"],
                "pinned": cfg["pinned"], "repetition": sc["repetition"], **run_columns(sc)}
        frame_frames.append(pd.DataFrame({"t_s": (t[1:] - t[0]) / 1e9, "period_ms": period,
                                          "exec_ms": execs}).assign(**base))
        p = percentiles(period, (50, 99, 99.9))
        e = percentiles(execs, (50, 99))
        span_s = (t[-1] - t[0]) / 1e9 if t.size > 1 else 0.0
        expected = int(round(span_s * 1e3 / nominal))
        rows.append({**base, "nominal_ms": nominal, "n": p["n"],
                     "period_mean_ms": float(period.mean()) if period.size else np.nan,
                     "period_std_ms": float(period.std(ddof=1)) if period.size > 1 else np.nan,
                     "period_min_ms": float(period.min()) if period.size else np.nan,
                     "period_max_ms": p["max"], "period_p50_ms": p["p50"],
                     "period_p99_ms": p["p99"], "period_p99.9_ms": p["p99.9"],
                     "exec_mean_ms": float(execs.mean()) if execs.size else np.nan,
                     "exec_std_ms": float(execs.std(ddof=1)) if execs.size > 1 else np.nan,
                     "exec_p99_ms": e["p99"], "exec_max_ms": e["max"],
                     "late": int((period > nominal + late_threshold_ms).sum()),
                     "missed": max(0, expected - int(period.size))})
    frames = pd.concat(frame_frames, ignore_index=True) if frame_frames else pd.DataFrame()
    tables = {"frames": frames, "runs": pd.DataFrame(rows)}
    return Dataset(Path(directory), set_aside_drift(tables, "runs"), missing)


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


def reductions(runs: pd.DataFrame, frames: pd.DataFrame, ci: CI) -> pd.DataFrame:
    """Every policy vs ``normal``, per load factor and load work model, over runs.

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
    for (factor, model), g in runs.groupby(["load_factor", "load_work_model"]):
        base = g.loc[g["policy"] == BASELINE, "period_std_ms"]
        if base.empty:
            continue
        f = frames[(frames["load_factor"] == factor) & (frames["load_work_model"] == model)]
        base_frames = f.loc[f["policy"] == BASELINE, "period_ms"]
        for policy, h in g.groupby("policy"):
            if policy == BASELINE:
                continue
            est = std_reduction(base, h["period_std_ms"], ci)
            diff = std_difference(base, h["period_std_ms"], ci)
            policy_frames = f.loc[f["policy"] == policy, "period_ms"]
            rows.append({"load_factor": factor, "load_work_model": model, "policy": policy,
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


def h2_verdict(red: pd.DataFrame) -> dict:
    """H2 at the highest native load factor, each real-time policy judged over runs.

    A policy *shows* H2 when its std reduction reaches :data:`MIN_REDUCTION` with
    its CI (over runs) above 0, and *refutes* it when the whole CI lies below
    :data:`MIN_REDUCTION` (:func:`rtstudy.stats.effect_verdict`). Reproduced when
    every policy shows it; not reproduced when every one refutes it; partly
    reproduced when some show and the rest refute it; otherwise, and below
    3 runs, inconclusive.
    """
    native = red[red["load_work_model"] == "native"] if len(red) else red
    if native.empty:
        return {"verdict": "inconclusive", "why": "no native-load runs"}
    top = native[native["load_factor"] == native["load_factor"].max()]
    rt = top[top["policy"].isin(RT_POLICIES)]
    if rt.empty:
        return {"verdict": "inconclusive", "why": "no real-time policy measured"}
    each = {r["policy"]: effect_verdict(Estimate(r["reduction"], r["low"], r["high"],
                                                 min(r["n_runs"], r["n_runs_normal"]), 0),
                                        MIN_REDUCTION) for r in rt.to_dict("records")}
    states = set(each.values())
    if states == {"shown"}:
        verdict = "reproduced"
    elif states == {"refuted"}:
        verdict = "not reproduced"
    elif states == {"shown", "refuted"}:
        verdict = "partly reproduced"
    else:
        verdict = "inconclusive"
    out = {"verdict": verdict, "load_factor": float(top["load_factor"].iloc[0]),
           "rows": rt.to_dict("records"), "each": each,
           "runs": int(min(rt["n_runs"].min(), rt["n_runs_normal"].min()))}
    if verdict == "inconclusive":
        few = out["runs"] < MIN_RUNS
        out["why"] = (f"fewer than {MIN_RUNS} runs per policy, so no CI" if few else
                      "a reduction's CI straddles the " f"{MIN_REDUCTION:.0%} threshold")
    return out


def null_verdict(red: pd.DataFrame, margin_ms: float) -> dict:
    """Without contention (the lowest load factor), is each real-time policy's jitter the same?

    Equivalence within ±``margin_ms`` of the difference in mean per-run std
    (policy − normal), CI over runs (:func:`rtstudy.stats.equivalence_verdict`):
    ``equivalent`` for every policy → "no difference"; any ``different`` → "differs";
    otherwise inconclusive.
    """
    if red.empty:
        return {"verdict": "inconclusive", "why": "no runs", "margin_ms": margin_ms, "rows": [],
                "each": {}, "load_factor": float("nan")}
    zero = red[(red["load_factor"] == red["load_factor"].min()) & red["policy"].isin(RT_POLICIES)]
    each = {r["policy"]: equivalence_verdict(Estimate(r["diff_ms"], r["diff_low"], r["diff_high"],
                                                      min(r["n_runs"], r["n_runs_normal"]), 0),
                                             margin_ms) for r in zero.to_dict("records")}
    states = set(each.values())
    verdict = ("no difference" if states == {"equivalent"} else
               "differs" if "different" in states else "inconclusive")
    return {"verdict": verdict, "each": each, "margin_ms": margin_ms, "rows": zero.to_dict("records"),
            "load_factor": float(zero["load_factor"].iloc[0]) if len(zero) else float("nan")}


def comparison_table(red: pd.DataFrame) -> pd.DataFrame:
    """Every policy against ``normal`` over the whole grid, for the report.

    The mean per-run std of each, the reduction with its CI over runs (none
    below 3 runs: "no CI") and the source's rating, then, as a screen over the
    pooled frames, the Holm-adjusted p-values of the spread (Brown–Forsythe)
    and location (Mann–Whitney) tests.
    """
    if red.empty:
        return pd.DataFrame()
    rows = []
    for r in red.sort_values(["load_work_model", "load_factor", "policy"]).to_dict("records"):
        ci = f" [{r['low']:+.0%}, {r['high']:+.0%}]" if pd.notna(r["low"]) else " (no CI)"
        reduction = f"{r['reduction']:+.0%}{ci}" if pd.notna(r["reduction"]) else "n/a"
        rows.append({"loads": r["load_work_model"], "loads per CPU": f"{r['load_factor']:g}",
                     "policy": r["policy"], "std normal ms": f"{r['std_normal_ms']:.3f}",
                     "std ms": f"{r['std_ms']:.3f}", "std reduction": reduction,
                     "rating": r["rating"], "runs": f"{r['n_runs']} vs {r['n_runs_normal']}",
                     "p spread, frames (Holm)": format_p(r["p_spread_holm"]),
                     "p location, frames (Holm)": format_p(r["p_location_holm"])})
    return pd.DataFrame(rows)


def seed_table(red: pd.DataFrame) -> pd.DataFrame:
    """Our normal and real-time frame-period std at the highest native load, beside the published."""
    rows = [{"source": p["implementation"], "real-time policy": p["policy"],
             "normal std ms": p["normal_ms"], "real-time std ms": p["realtime_ms"],
             "change": p["change"]} for p in published.STD_MS]
    top = red[(red["load_work_model"] == "native") & (red["load_factor"] == red["load_factor"].max())]
    for r in top.to_dict("records"):
        ci = (f" [{-r['high']:+.0%}, {-r['low']:+.0%}]" if pd.notna(r["low"])
              else f" (no CI: {min(r['n_runs'], r['n_runs_normal'])} runs)")
        rows.append({"source": f"this study, {r['load_factor']:g} loads/CPU (runs: {r['n_runs']} "
                               f"vs {r['n_runs_normal']}; mean of per-run stds)",
                     "real-time policy": r["policy"], "normal std ms": round(r["std_normal_ms"], 3),
                     "real-time std ms": round(r["std_ms"], 3),
                     "change": f"{-r['reduction']:+.1%}{ci}"})
    return pd.DataFrame(rows)


def headline(cfg: dict, runs: pd.DataFrame, red: pd.DataFrame, floor_std_ms: float) -> dict:
    """The numbers E2's prose quotes, all computed here.

    Parameters
    ----------
    cfg : dict
        E2's resolved parameters (``fps`` sets the nominal period).
    runs, red : DataFrame
        :func:`load`'s runs and :func:`reductions` of its frames.
    floor_std_ms : float
        The platform floor's wake-up latency std in ms (E4's cyclictest under
        load), NaN when it was not measured.

    Returns
    -------
    dict
        ``verdict`` (:func:`h2_verdict`), ``zero`` (:func:`null_verdict` at the
        lowest load factor, within ``cfg["null_margin_ms"]``), ``gil`` (GIL-holding
        loads at the highest factor: rows, frames missed, std ratios to native
        loads), ``floor`` (each real-time policy's std over the period floor)
        and the counts the prose states.
    """
    out = {"factors": sorted(float(f) for f in runs["load_factor"].unique()),
           "pinned": sorted(runs.loc[runs["pinned"], "policy"].unique()),
           "n_runs": int(len(runs)), "verdict": h2_verdict(red), "min_reduction": MIN_REDUCTION,
           "min_runs": MIN_RUNS,
           "zero": null_verdict(red, cfg["null_margin_ms"]), "gil": None, "floor": None}
    gil = red[(red["load_work_model"] == "python")
              & (red["load_factor"] == red["load_factor"].max())] if len(red) else red
    if len(gil):
        factor = float(gil["load_factor"].iloc[0])
        late = runs[(runs["load_work_model"] == "python") & (runs["load_factor"] == runs["load_factor"].max())]
        native = red[(red["load_work_model"] == "native")
                     & (red["load_factor"] == factor)].set_index("policy")
        ratios = {r["policy"]: r["std_ms"] / native.loc[r["policy"], "std_ms"]
                  for r in gil.to_dict("records")
                  if r["policy"] in RT_POLICIES and r["policy"] in native.index
                  and native.loc[r["policy"], "std_ms"] > 0}
        out["gil"] = {"load_factor": factor, "rows": gil.to_dict("records"),
                      "lost": {p: int(n) for p, n in late.groupby("policy")["missed"].sum().items()},
                      "ratios": ratios, "gil_ratio": GIL_RATIO,
                      "gil_bound": bool(ratios) and min(ratios.values()) > GIL_RATIO}
    rt_top = red[(red["policy"].isin(RT_POLICIES)) & (red["load_work_model"] == "native")
                 & (red["load_factor"] == red["load_factor"].max())] if len(red) else red
    if np.isfinite(floor_std_ms) and floor_std_ms > 0 and len(rt_top):
        # A period is the difference of two wake-ups: with independent wake-up latencies of
        # std s its std is sqrt(2) s, so that is the floor a frame period can reach.
        period_floor_ms = np.sqrt(2) * floor_std_ms
        out["floor"] = {"std_us": floor_std_ms * 1000, "period_floor_us": period_floor_ms * 1000,
                        "load_factor": float(rt_top["load_factor"].iloc[0]),
                        "ratios": {r["policy"]: r["std_ms"] / period_floor_ms
                                   for r in rt_top.to_dict("records")}}
    return out


# What the drift check compares (stats.drift_check): a name and its unit.
DRIFT_QUANTITY = ("frame-period std", "ms")


def drift(ds: Dataset) -> dict | None:
    """The sweep's drift check on the frame-period std (ms); None without one."""
    return drift_check(ds.tables["runs"], ds.tables["drift"], "period_std_ms")


# The table behind E2's figure that DVC plots (dvc.yaml `plots:`): one row per run of a load
# factor (native loads), one column per policy.
PLOT_FILE = "e2_period_std.csv"


def plot_table(ds: Dataset) -> pd.DataFrame | None:
    """The frame-period std (ms) per run against the load factor, native loads."""
    runs = ds.tables["runs"]
    if not len(runs):
        return None
    native = runs[runs["load_work_model"] == "native"]
    return wide(native, ["load_factor", "repetition"], native["policy"], "period_std_ms")
