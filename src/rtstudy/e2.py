"""E2, real-time vs normal thread under CPU contention: the sweep plan and the analysis.

H2 (DESIGN.md §1): under contention a real-time policy cuts the frame-period
standard deviation of a periodic operator (seeds: 0.297 → 0.049 ms, −83.6 %,
Python; 0.257 → 0.013 ms, −94.8 %, C++; 60 FPS). Contention is a sweep axis
here (loads per CPU): with no more runnable threads than CPUs there is nothing
for a policy to win.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rtstudy import data
from rtstudy.harness import Cell
from rtstudy.realtime import RealtimeRequest
from rtstudy.stats import Estimate, format_p, holm, percentiles, rank_test, spread_test

EXPERIMENT = "e2_rt_threads"
RT_POLICIES = ("SCHED_FIFO", "SCHED_RR", "SCHED_DEADLINE")
BASELINE = "normal"
# The seeds' rating of a std reduction (seed 001/003, "Performance Rating").
RATING_BANDS = ((0.50, "excellent"), (0.20, "good"), (0.05, "modest"))


def period_ns(fps: int) -> int:
    return round(1e9 / fps)


def rating(reduction: float) -> str:
    for threshold, name in RATING_BANDS:
        if reduction > threshold:
            return name
    return "limited"


def target_cpus(cfg: dict, fp: dict, policy: str) -> tuple[int, ...]:
    """The CPU to pin the real-time target to (the last one), or () where not allowed."""
    if cfg["pin"] == "never" or policy not in RT_POLICIES:
        return ()
    if policy == "SCHED_DEADLINE" and fp["realtime"].get("SCHED_DEADLINE pinned") != "ok":
        return ()
    return (fp["cpu"]["online"][-1],)


def host_problems(cfg: dict, fp: dict) -> list[str]:
    problems = []
    if cfg["pin"] == "always" and "SCHED_DEADLINE" in cfg["policies"] and \
            fp["realtime"].get("SCHED_DEADLINE pinned") != "ok":
        problems.append("e2_rt_threads.pin = 'always', but this host refuses SCHED_DEADLINE "
                        "threads pinned to one CPU (see `rtstudy host check`); use pin: auto")
    return problems


def needed_policies(cfg: dict) -> tuple[str, ...]:
    return tuple(p for p in cfg["policies"] if p in RT_POLICIES)


def plan(cfg: dict, fp: dict) -> list[Cell]:
    """Policy × load factor × load work model × repetition."""
    p_ns = period_ns(cfg["fps"])
    frames = cfg["warmup_frames"] + int(cfg["duration_s"] * cfg["fps"])
    cells = []
    for policy in cfg["policies"]:
        cpus = target_cpus(cfg, fp, policy)
        realtime = ()
        if policy in ("SCHED_FIFO", "SCHED_RR"):
            realtime = (RealtimeRequest("target", policy, priority=cfg["priority"], cpus=cpus),)
        elif policy == "SCHED_DEADLINE":
            runtime = int(p_ns * cfg["deadline_runtime_fraction"])
            realtime = (RealtimeRequest("target", policy, runtime_ns=runtime, deadline_ns=p_ns,
                                        period_ns=p_ns, cpus=cpus),)
        for factor in cfg["load_factors"]:
            loads = int(round(factor * fp["cpu"]["count"]))
            # With no loads the load work model is moot: measure it once.
            models = cfg["load_work_models"] if loads else cfg["load_work_models"][:1]
            for model in models:
                config = {
                    "policy": policy, "load_factor": factor, "loads": loads,
                    "load_work_model": model, "load_work_ms": cfg["load_work_ms"],
                    "fps": cfg["fps"], "period_ns": p_ns, "frames": frames,
                    "target_work_iterations": cfg["target_work_iterations"],
                    "pinned": bool(cpus),
                    # Three times the nominal duration, then Holoscan stops it.
                    "max_duration_ms": int(3000 * frames / cfg["fps"]) + 10_000,
                }
                label = f"{policy}-lf{factor:g}-{model}"
                timeout = config["max_duration_ms"] / 1000 + cfg["timeout_margin_s"]
                for rep in range(cfg["repetitions"]):
                    cells.append(Cell(EXPERIMENT, "e2_rt_threads", label, config, rep, timeout,
                                      realtime))
    return cells


# ---------------------------------------------------------------------------
# Analysis

def load(out_dir, warmup_frames: int, late_threshold_ms: float
         ) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Frames and per-run metrics of the plan's completed cells, and missing cell ids.

    Returns
    -------
    frames : DataFrame
        One row per kept frame: configuration, ``t_s`` (seconds since the first
        kept frame, measured), ``period_ms`` (to the previous frame) and ``exec_ms``.
    runs : DataFrame
        One row per run: frame period mean/std/min/max/P50/P99/P99.9, execution
        time mean/std/P99/max, ``late`` (period > nominal + threshold), ``missed``
        (frames expected over the measured span minus frames seen), N.
    missing : list of str
    """
    sidecars, missing = data.completed_cells(out_dir)
    frame_frames, rows = [], []
    for sc in sidecars:
        cfg = sc["requested"]["config"]
        s = data.read_samples(f"{sc['_dir']}/samples.parquet").sort_values("frame")
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
    return frames, pd.DataFrame(rows), missing


def std_reduction(a, b, confidence: float = 0.95, n_resamples: int = 2000,
                  seed: int = 0) -> Estimate:
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


def reductions(frames: pd.DataFrame, confidence: float, n_resamples: int, seed: int) -> pd.DataFrame:
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
            est = std_reduction(base, h["period_ms"], confidence, n_resamples, seed)
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
    """At the highest load factor with native loads: every RT policy cuts std by >= 50 %, CI > 0."""
    native = red[red["load_work_model"] == "native"]
    if native.empty:
        return {"verdict": "inconclusive", "why": "no native-load runs"}
    top = native[native["load_factor"] == native["load_factor"].max()]
    rt = top[top["policy"].isin(RT_POLICIES)]
    if rt.empty:
        return {"verdict": "inconclusive", "why": "no real-time policy measured"}
    ok = (rt["reduction"] >= 0.5) & (rt["low"] > 0)
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
