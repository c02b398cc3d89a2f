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
from rtstudy.io import Dataset, completed_cells, read_samples
from rtstudy.stats import CI, Estimate, format_p, holm, percentiles, rank_test, spread_test

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
                "pinned": cfg["pinned"], "repetition": sc["repetition"]}
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
    return Dataset(Path(directory), {"frames": frames, "runs": pd.DataFrame(rows)}, missing)


def std_reduction(a, b, confidence: float, n_resamples: int, seed: int) -> Estimate:
    """``1 − std(b) / std(a)`` with a percentile bootstrap CI (frames resampled in each group).

    Positive means ``b`` (e.g. a real-time policy) has the smaller spread than
    ``a`` (the baseline). Frames are treated as independent, which a periodic
    series is only roughly; repetitions are pooled.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size < 3 or b.size < 3:
        return Estimate(np.nan, np.nan, np.nan, int(min(a.size, b.size)), confidence)
    value = 1 - b.std(ddof=1) / a.std(ddof=1)
    rng = np.random.default_rng(seed)
    boots = np.empty(n_resamples)
    for i in range(n_resamples):
        boots[i] = 1 - (rng.choice(b, b.size).std(ddof=1) / rng.choice(a, a.size).std(ddof=1))
    lo, hi = np.percentile(boots, [50 * (1 - confidence), 50 * (1 + confidence)])
    return Estimate(float(value), float(lo), float(hi), int(min(a.size, b.size)), confidence)


def reductions(frames: pd.DataFrame, ci: CI) -> pd.DataFrame:
    """Every policy vs ``normal``, per load factor and load work model.

    Columns: ``reduction`` of the frame-period std with its bootstrap CI
    (``low``, ``high``), the Brown–Forsythe p-value for equal spread
    (``p_spread``) and the Mann–Whitney p-value for equal location
    (``p_location``), each also Holm-adjusted over the whole grid
    (``p_spread_holm``, ``p_location_holm``), since one sweep makes many
    comparisons at once.
    """
    rows = []
    for (factor, model), g in frames.groupby(["load_factor", "load_work_model"]):
        base = g.loc[g["policy"] == BASELINE, "period_ms"]
        if base.empty:
            continue
        for policy, h in g.groupby("policy"):
            if policy == BASELINE:
                continue
            est = std_reduction(base, h["period_ms"], **ci.kwargs)
            rows.append({"load_factor": factor, "load_work_model": model, "policy": policy,
                         "std_normal_ms": float(base.std(ddof=1)),
                         "std_ms": float(h["period_ms"].std(ddof=1)),
                         "reduction": est.value, "low": est.low, "high": est.high,
                         "n_frames": est.n, "rating": rating(est.value),
                         "p_spread": spread_test(base, h["period_ms"]),
                         "p_location": rank_test(base, h["period_ms"])})
    out = pd.DataFrame(rows)
    if len(out):
        out["p_spread_holm"] = holm(out["p_spread"])
        out["p_location_holm"] = holm(out["p_location"])
    return out


def h2_verdict(red: pd.DataFrame) -> dict:
    """At the highest native load factor: every RT policy cuts std by >= :data:`MIN_REDUCTION`, CI > 0."""
    native = red[red["load_work_model"] == "native"]
    if native.empty:
        return {"verdict": "inconclusive", "why": "no native-load runs"}
    top = native[native["load_factor"] == native["load_factor"].max()]
    rt = top[top["policy"].isin(RT_POLICIES)]
    if rt.empty:
        return {"verdict": "inconclusive", "why": "no real-time policy measured"}
    ok = (rt["reduction"] >= MIN_REDUCTION) & (rt["low"] > 0)
    verdict = "reproduced" if ok.all() else ("partly reproduced" if ok.any() else "not reproduced")
    return {"verdict": verdict, "load_factor": float(top["load_factor"].iloc[0]),
            "rows": rt.to_dict("records")}


def comparison_table(red: pd.DataFrame) -> pd.DataFrame:
    """Every policy against ``normal`` over the whole grid, for the report.

    The reduction of the frame-period std with its CI and the seeds' rating,
    then the Holm-adjusted p-values of the spread (Brown–Forsythe) and location
    (Mann–Whitney) tests.
    """
    if red.empty:
        return pd.DataFrame()
    rows = []
    for r in red.sort_values(["load_work_model", "load_factor", "policy"]).to_dict("records"):
        ci = f" [{r['low']:+.0%}, {r['high']:+.0%}]" if pd.notna(r["low"]) else ""
        reduction = f"{r['reduction']:+.0%}{ci}" if pd.notna(r["reduction"]) else "n/a"
        rows.append({"loads": r["load_work_model"], "loads per CPU": f"{r['load_factor']:g}",
                     "policy": r["policy"], "std normal ms": f"{r['std_normal_ms']:.3f}",
                     "std ms": f"{r['std_ms']:.3f}", "std reduction": reduction,
                     "rating": r["rating"], "N frames": r["n_frames"],
                     "p spread (Holm)": format_p(r["p_spread_holm"]),
                     "p location (Holm)": format_p(r["p_location_holm"])})
    return pd.DataFrame(rows)


def seed_table(red: pd.DataFrame) -> pd.DataFrame:
    """Our normal and real-time frame-period std at the highest native load, beside the published."""
    rows = [{"source": p["implementation"], "real-time policy": p["policy"],
             "normal std ms": p["normal_ms"], "real-time std ms": p["realtime_ms"],
             "change": p["change"]} for p in published.STD_MS]
    top = red[(red["load_work_model"] == "native") & (red["load_factor"] == red["load_factor"].max())]
    for r in top.to_dict("records"):
        rows.append({"source": f"this study, {r['load_factor']:g} loads/CPU (n = {r['n_frames']} "
                               "frames)",
                     "real-time policy": r["policy"], "normal std ms": round(r["std_normal_ms"], 3),
                     "real-time std ms": round(r["std_ms"], 3),
                     "change": f"{-r['reduction']:+.1%} [{-r['high']:+.0%}, {-r['low']:+.0%}]"})
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
        ``verdict`` (:func:`h2_verdict`), ``zero`` (the lowest load factor: its
        rows and whether the data resolves a difference), ``gil`` (GIL-holding
        loads at the highest factor: rows, frames missed, std ratios to native
        loads), ``floor`` (each real-time policy's std over the period floor)
        and the counts the prose states.
    """
    nominal_ms = 1000 / cfg["fps"]
    out = {"factors": sorted(float(f) for f in runs["load_factor"].unique()),
           "pinned": sorted(runs.loc[runs["pinned"], "policy"].unique()),
           "n_runs": int(len(runs)), "verdict": h2_verdict(red), "min_reduction": MIN_REDUCTION,
           "zero": None, "gil": None, "floor": None}
    zero = red[red["load_factor"] == red["load_factor"].min()] if len(red) else red
    if len(zero):
        rows = zero.to_dict("records")
        with_ci = [r for r in rows if pd.notna(r["low"])]
        base_ms = float(zero["std_normal_ms"].iloc[0])
        status = ("no_ci" if not with_ci else
                  "covers_zero" if all(r["low"] <= 0 <= r["high"] for r in with_ci) else "changes")
        out["zero"] = {"load_factor": float(zero["load_factor"].iloc[0]), "rows": rows,
                       "status": status, "base_ms": base_ms, "min_ms": float(zero["std_ms"].min()),
                       "max_ms": float(zero["std_ms"].max()), "nominal_ms": nominal_ms,
                       "max_share": max(base_ms, float(zero["std_ms"].max())) / nominal_ms}
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
