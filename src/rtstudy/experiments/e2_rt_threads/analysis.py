"""E2, real-time vs normal thread under CPU contention: loading, the H2 verdicts and the headline.

H2: under contention a real-time policy cuts the frame-period standard
deviation of a periodic operator (the published figures are in
``published.py``). It is judged against ``normal_dedicated``: the same thread
of its own and the same pinning, only the policy differs. Beside it: the
effect of a real-time dispatcher and of where the load runs, every
configuration's ratio to the operating system's floor (cyclictest measured like
with like in the same sweep), the seeds' own topologies, and per frame where the
delay accrues (a kernel scheduler trace).

This module is E2's side of the experiment protocol (:mod:`rtstudy.experiments`):
what the data and report layers read. The parts live beside it:
:mod:`.conditions` (the factors, the baselines, the grid and the headline point),
:mod:`.metrics` (one run's quantities), :mod:`.attribution` (the trace),
:mod:`.contrasts` (effects over runs, with CIs) and :mod:`.tables` (the report's tables).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rtstudy.experiments.e2_rt_threads.attribution import PARTS, attribute_cell, attribution_summary
from rtstudy.experiments.e2_rt_threads.conditions import (BASELINE, SEED_BASELINE, factor_levels,
                                                         grid, headline_point)
from rtstudy.experiments.e2_rt_threads.contrasts import (effects, floor_ratios, reductions,
                                                        seed_compatible)
from rtstudy.experiments.e2_rt_threads.metrics import RunFrames, run_metrics
from rtstudy.experiments.e2_rt_threads.plan import RT_POLICIES
from rtstudy.io import CellData, Dataset, read_cells, set_aside_drift, wide
from rtstudy.realtime import DISPATCHER, POLICY_BY_NUMBER
from rtstudy.stats import (CI, MIN_RUNS, Estimate, drift_check, effect_verdict,
                           equivalence_verdict)

# The columns and Arrow types of samples.parquet, as app.py and floor.py write them (data/README.md).
SAMPLES = {"frame": "int64", "t_start_ns": "int64", "exec_ns": "int64"}
TABLES = ("frames", "runs", "floor", "attribution", "traces")
# H2's verdict: at the highest native load factor every real-time policy must cut the
# frame-period std by at least MIN_REDUCTION, with its CI above 0.
MIN_REDUCTION = 0.5
GIL_RATIO = 2  # RT std with Python loads over native loads above this: the GIL sets the jitter
FLOOR_GOAL = 2  # a configuration within 2x the floor's frame-period std is "at the floor"


def load(directory: Path, cfg: dict) -> Dataset:
    """Frames and per-run metrics of the plan's completed cells, the floor, and the attribution.

    Parameters
    ----------
    directory : Path
        The dataset folder.
    cfg : dict
        E2's resolved parameters (``warmup_frames``, ``late_threshold_ms``).

    Returns
    -------
    Dataset
        ``tables`` (below), ``missing`` cell ids.

    Notes
    -----
    frames : DataFrame
        One row per kept frame of a Holoscan run: its factors
        (:data:`.conditions.FACTORS`), ``t_s`` (seconds since the first kept
        frame, measured), ``period_ms`` (to the previous frame) and ``exec_ms``.
    runs : DataFrame
        One row per Holoscan run: its factors, ``dispatcher_read`` (the
        dispatcher's policy as read back on its thread) and
        :func:`.metrics.run_metrics` (frame period and execution time, late and
        missed frames, N).
    floor : DataFrame
        The same metrics for each cyclictest run (its "frame" is one loop).
    attribution : DataFrame
        One row per frame of each traced run (:func:`.attribution.attribute_run`):
        its lateness against its release, the parts (:data:`.attribution.PARTS`,
        ms) and who woke, blocked and preceded the worker.
    traces : DataFrame
        One row per traced run: its events, frames and the frames attributed.
    """
    warmup_frames, late_threshold_ms = cfg["warmup_frames"], cfg["late_threshold_ms"]
    cells, missing = read_cells(directory, SAMPLES)
    frame_tables, rows, floor_rows, attributed, traces = [], [], [], [], []
    for cell in cells:
        config = cell.config
        samples = cell.samples().sort_values("frame")
        base = cell.columns(**factor_levels(config), fps=config["fps"], pinned=config["pinned"],
                            dispatcher_read=_dispatcher_read(cell))
        if config.get("trace_s"):
            # A traced run is set aside from the statistics: tracing costs the run time.
            frames_of = attribute_cell(cell, samples, warmup_frames)
            attributed.append(frames_of.assign(**base))
            traces.append({**base, "events": int(cell.sidecar["summary"].get("trace", {})
                                                 .get("n_events", 0)),
                           "frames": int(len(samples)) - warmup_frames,
                           "attributed": int(len(frames_of))})
            continue
        frames = RunFrames.of(samples, warmup_frames)
        row = {**base, **run_metrics(frames, config["period_ns"] / 1e6, late_threshold_ms)}
        if config.get("tool"):
            floor_rows.append(row)
            continue
        frame_tables.append(frames.table().assign(**base))
        rows.append(row)
    frames = pd.concat(frame_tables, ignore_index=True) if frame_tables else pd.DataFrame()
    tables = {"frames": frames, "runs": pd.DataFrame(rows), "floor": pd.DataFrame(floor_rows),
              "traces": pd.DataFrame(traces),
              # int and float: a traced run with no complete chain adds an empty (object) frame.
              "attribution": (pd.concat(attributed, ignore_index=True).astype(
                  {"frame": int, **{c: float for c in ["lateness_ms", "deviation_ms", *PARTS]}})
                  if attributed else pd.DataFrame())}
    return Dataset(Path(directory), set_aside_drift(tables, "runs"), missing)


def _dispatcher_read(cell: CellData) -> str:
    """The dispatcher's policy as read back on its thread ("" when it was not read)."""
    dispatcher = cell.sidecar["operators"].get(DISPATCHER, {}).get("sched") or {}
    return POLICY_BY_NUMBER.get(dispatcher.get("policy"), "")


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
    (policy − baseline), CI over runs (:func:`rtstudy.stats.equivalence_verdict`):
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


def headline(cfg: dict, ds_tables: dict, red: pd.DataFrame, ci: CI) -> dict:
    """The numbers E2's prose quotes, all computed here, one step per part.

    Parameters
    ----------
    cfg : dict
        E2's resolved parameters.
    ds_tables : dict
        :func:`load`'s tables.
    red : DataFrame
        :func:`.contrasts.reductions` against ``normal_dedicated``.
    ci : CI
        How CIs over runs are made.

    Returns
    -------
    dict
        ``verdict`` (:func:`h2_verdict`), ``zero`` (:func:`null_verdict`),
        ``one`` (each real-time policy at 1 load per CPU), ``gil`` (GIL-holding
        loads at the highest factor), ``seed_style`` (the reductions against the
        seed's shared-pool baseline), ``seeds`` (:func:`.contrasts.seed_compatible`),
        ``effects`` (:func:`.contrasts.effects`), ``floor``
        (:func:`.contrasts.floor_ratios`, the closest configuration),
        ``attribution`` and the counts the prose states.
    """
    runs, frames = ds_tables["runs"], ds_tables["frames"]
    return {**_design(runs), "verdict": h2_verdict(red), "min_reduction": MIN_REDUCTION,
            "min_runs": MIN_RUNS, "baseline": BASELINE, "seed_baseline": SEED_BASELINE,
            "zero": null_verdict(red, cfg["null_margin_ms"]),
            "one": _one_load_per_cpu(red), "seed_style": _seed_style(runs, frames, red, ci),
            "seeds": seed_compatible(runs, ci), "gil": _gil(runs, red),
            "effects": effects(runs, ci).to_dict("records"),
            "floor": _closest_to_floor(runs, ds_tables["floor"], ci), "floor_goal": FLOOR_GOAL,
            "attribution": attribution_summary(ds_tables["attribution"]).to_dict("records"),
            "parts": PARTS, **_unattributed(ds_tables.get("traces", pd.DataFrame()))}


def _design(runs: pd.DataFrame) -> dict:
    """What was measured: the load factors, the policies pinned, the runs, and each
    dispatcher level's policies as read back."""
    if not len(runs):
        return {"factors": [], "pinned": [], "n_runs": 0, "dispatchers_read": {}}
    return {"factors": sorted(float(f) for f in runs["load_factor"].unique()),
            "pinned": sorted(runs.loc[runs["pinned"], "policy"].unique()),
            "n_runs": int(len(runs)),
            "dispatchers_read": {d: sorted(set(g["dispatcher_read"]) - {""})
                                 for d, g in runs.groupby("dispatcher")}}


def _one_load_per_cpu(red: pd.DataFrame) -> list[dict]:
    """Each real-time policy's reduction at 1 native load per CPU."""
    if not len(red):
        return []
    native = red[red["load_work_model"] == "native"]
    return native[(native["load_factor"] == 1)
                  & native["policy"].isin(RT_POLICIES)].to_dict("records")


def _seed_style(runs: pd.DataFrame, frames: pd.DataFrame, red: pd.DataFrame, ci: CI) -> list[dict]:
    """The reductions against the seed's baseline (the shared pool) at the highest native load."""
    if not len(red):
        return []
    seed_style = reductions(runs, frames, ci, SEED_BASELINE)
    if not len(seed_style):
        return []
    s = seed_style[(seed_style["load_work_model"] == "native")]
    return s[s["load_factor"] == s["load_factor"].max()].to_dict("records")


def _gil(runs: pd.DataFrame, red: pd.DataFrame) -> dict | None:
    """GIL-holding (Python) loads at the highest factor: the reductions, the frames missed, and
    each real-time policy's std over its std with native loads; None without Python loads."""
    gil = red[(red["load_work_model"] == "python")
              & (red["load_factor"] == red["load_factor"].max())] if len(red) else red
    if not len(gil):
        return None
    factor = float(gil["load_factor"].iloc[0])
    g = grid(runs)
    late = g[(g["load_work_model"] == "python") & (g["load_factor"] == factor)]
    native = red[(red["load_work_model"] == "native")
                 & (red["load_factor"] == factor)].set_index("policy")
    ratios = {r["policy"]: r["std_ms"] / native.loc[r["policy"], "std_ms"]
              for r in gil.to_dict("records")
              if r["policy"] in RT_POLICIES and r["policy"] in native.index
              and native.loc[r["policy"], "std_ms"] > 0}
    return {"load_factor": factor, "rows": gil.to_dict("records"),
            "lost": {p: int(n) for p, n in late.groupby("policy")["missed"].sum().items()},
            "ratios": ratios, "gil_ratio": GIL_RATIO,
            "gil_bound": bool(ratios) and min(ratios.values()) > GIL_RATIO}


def _closest_to_floor(runs: pd.DataFrame, floor: pd.DataFrame, ci: CI) -> dict | None:
    """Every headline-point condition's ratio to the floor, the closest one and those within
    :data:`FLOOR_GOAL` (whole CI); None without a floor."""
    ratios = floor_ratios(headline_point(runs), floor, ci)
    if not len(ratios):
        return None
    best = ratios.iloc[0].to_dict()
    return {"best": best, "rows": ratios.to_dict("records"),
            "floor_std_ms": best["floor_std_ms"], "load_factor": best["load_factor"],
            "at_floor": [r["label"] for r in ratios.to_dict("records")
                         if np.isfinite(r["high"]) and r["high"] <= FLOOR_GOAL]}


def _unattributed(traces: pd.DataFrame) -> dict:
    """The traced conditions none of whose frames could be attributed, and their policies."""
    none = traces[traces["attributed"] == 0] if len(traces) else traces
    return {"unattributed": none["label"].str.replace("-trace", "").tolist() if len(none) else [],
            "unattributed_policies": sorted(set(none["policy"])) if len(none) else []}


# What the drift check compares (stats.drift_check): a name and its unit.
DRIFT_QUANTITY = ("frame-period std", "ms")


def drift(ds: Dataset) -> dict | None:
    """The sweep's drift check on the frame-period std (ms); None without one."""
    return drift_check(ds.tables["runs"], ds.tables["drift"], "period_std_ms")


# The table behind E2's figure that DVC plots (dvc.yaml `plots:`): one row per run of a load
# factor (native loads, the policy grid), one column per policy.
PLOT_FILE = "e2_period_std.csv"


def plot_table(ds: Dataset) -> pd.DataFrame | None:
    """The frame-period std (ms) per run against the load factor, native loads, the policy grid."""
    runs = grid(ds.tables["runs"])
    if not len(runs):
        return None
    native = runs[runs["load_work_model"] == "native"]
    return wide(native, ["load_factor", "repetition"], native["policy"], "period_std_ms")
