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
:mod:`.schema` (the tables :func:`load` returns), :mod:`conditions` (the factors, the
baselines, the grid and the headline point), :mod:`.metrics` (one run's quantities),
:mod:`.attribution` (the trace), :mod:`.contrasts` (effects over runs, with CIs),
:mod:`.verdicts` (H2's verdicts) and :mod:`report.tables` (the report's tables).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rtstudy.data.io import (CellData, Dataset, read_cells, read_samples, set_aside_drift, stack,
                             wide)
from rtstudy.experiments.e2_rt_threads.analysis.attribution import (PARTS, PATTERNS, attribute_cell,
                                                           attribution_summary, mechanism_summary,
                                                           mechanism_totals, tracing_cost)
from rtstudy.experiments.e2_rt_threads.conditions import (BASELINE, PLAIN, SEED_BASELINE,
                                                          STARVED_OFFSET, SWITCH_INTERVAL_MS,
                                                          factor_levels, grid, headline_point)
from rtstudy.experiments.e2_rt_threads.analysis.contrasts import (DECIDED_SHARE, condition_summary,
                                                                  effects, floor_ratios, reductions,
                                                                  seed_compatible)
from rtstudy.experiments.e2_rt_threads.analysis.gil import GIL_TIMES
from rtstudy.experiments.e2_rt_threads.analysis.headline import (
    Design, E2Headline, FloorRatios, GilLoads, Mechanism, MessageLatency, PolicyGrid,
    Unattributed, Yardstick)
from rtstudy.experiments.e2_rt_threads.analysis.ladder import ladder, recommendations
from rtstudy.experiments.e2_rt_threads.analysis.metrics import (
    FIXED, PREVIOUS, RECORDED, RunFrames, RunMetrics, head_counts, release_grid,
    run_metrics)
from rtstudy.experiments.e2_rt_threads.params import POLICY_NAMES
from rtstudy.experiments.e2_rt_threads.analysis.schema import SCHEMA
from rtstudy.experiments.e2_rt_threads.analysis.verdicts import (CONTROL_FLOOR_MULTIPLE,
                                                                 MIN_REDUCTION, control_margin,
                                                                 h2_combine, h2_std, h2_verdict,
                                                                 null_verdict)
from rtstudy.inference import criteria
from rtstudy.inference.stats import CI, MIN_RUNS, DriftCheck, drift_check
from rtstudy.measure.realtime import DISPATCHER
from rtstudy.policies import BY_NUMBER, RT_POLICIES, SCHED_DEADLINE

# The experiment protocol's names (rtstudy.registry), and those the tests import from here
# though they live beside it (the H2 verdicts).
__all__ = ["CONTROL_FLOOR_MULTIPLE", "DRIFT_QUANTITY", "MESSAGES_FILE", "MIN_REDUCTION",
           "PLOT_FILE", "SAMPLES", "SCHEMA", "TABLES", "drift", "h2_combine", "h2_std",
           "h2_verdict", "headline", "load", "message_latency", "null_verdict", "plot_table",
           "power_plan"]

# The columns and Arrow types of samples.parquet, as app.py and floor.py write them (data/README.md).
SAMPLES = {"frame": "int64", "t_start_ns": "int64", "exec_ns": "int64"}
# The fragment fix's messages, beside its samples (app.py's "messages" table): per message the
# target's frame, when it left the target and when the load fragment's receiver got it (ns,
# CLOCK_MONOTONIC).
MESSAGES_FILE = "messages.parquet"
GIL_RATIO = criteria.value("e2_gil_ratio")  # RT std, Python over native loads: the GIL sets it
FLOOR_GOAL = criteria.value("e2_floor_goal")  # within this × the floor's std: "at the floor"
# The configurations compared with the floor, fixed before the data were seen: every real-time
# policy in the seeds' own layout (load operators in the app, Holoscan's dispatcher, native
# loads) at the headline point. The report names no "closest" configuration: the smallest of a
# dozen noisy ratios would be chosen by its noise.
FLOOR_CONFIGURATION = {**PLAIN, "load_work_model": "native", "topology": "dedicated"}
TABLES = tuple(SCHEMA)


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
        ``tables`` (:data:`SCHEMA`; ``runs`` from :func:`.metrics.run_metrics`,
        ``attribution`` from :func:`.attribution.attribute_run`), ``missing`` cell ids, and
        ``extra["messages"]``: one row per run of the fragment fix, its message latencies
        (:func:`message_latency`) beside the columns of ``runs``' conditions.
    """
    warmup_frames, late_threshold_ms = cfg["warmup_frames"], cfg["late_threshold_ms"]
    cells, missing = read_cells(directory, SAMPLES)
    frame_tables, rows, floor_rows, attributed, traces, messages = [], [], [], [], [], []
    for cell in cells:
        config = cell.config
        samples = cell.samples().sort_values("frame")
        base = cell.columns(**factor_levels(config), fps=config["fps"], pinned=config["pinned"],
                            dispatcher_read=_dispatcher_read(cell))
        frames = RunFrames.of(samples, warmup_frames, config["period_ns"],
                              release_grid(config["policy"], samples.columns))
        metrics = run_metrics(frames, config["period_ns"] / 1e6, late_threshold_ms)
        if config.get("trace_s"):
            # A traced run is set aside from the statistics: tracing costs the run time
            # (tracing_cost() says how much).
            frames_of = attribute_cell(cell, samples, warmup_frames)
            attributed.append((frames_of, base))
            traces.append(_trace_row(cell, base, metrics, int(len(samples)) - warmup_frames,
                                     int(len(frames_of))))
            continue
        row = {**base, **metrics, **head_counts(samples, config, cfg),
               "load_cpu": _load_cpu(cell)}
        if config.get("tool"):
            floor_rows.append(row)
            continue
        frame_tables.append((frames.table(), base))
        rows.append(row)
        if (cell.folder / MESSAGES_FILE).is_file() and not base["drift"]:
            messages.append({**base, **message_latency(read_samples(cell.folder / MESSAGES_FILE),
                                                       warmup_frames, config["frames"])})
    frames = stack(frame_tables)
    tables = {"frames": frames, "runs": pd.DataFrame(rows), "floor": pd.DataFrame(floor_rows),
              "traces": pd.DataFrame(traces), "attribution": _attribution_table(attributed)}
    # Not a table of SCHEMA: only the fragment fix's runs have messages.
    return Dataset(Path(directory), set_aside_drift(tables, "runs"), missing,
                   extra={"messages": pd.DataFrame(messages)})


def _trace_row(cell: CellData, base: dict, metrics: RunMetrics, frames: int, attributed: int
               ) -> dict[str, Any]:
    """A traced run's row of ``traces``: its condition (``base``), the trace's size, its
    ``frames`` after the warm-up and how many of them were ``attributed``, and a few of its
    :func:`.metrics.run_metrics` (``metrics``)."""
    trace = cell.sidecar["summary"].get("trace", {})
    return {**base, "events": int(trace.get("n_events", 0)), "frames": frames,
            "attributed": attributed, "gil_probed": bool(trace.get("gil", {}).get("probed")),
            "unavailable": str(trace.get("unavailable", "")),
            **{k: metrics[k] for k in ("n", "period_iqr_us", "late")}}


def _attribution_table(attributed: list[tuple[pd.DataFrame, dict]]) -> pd.DataFrame:
    """The ``attribution`` table from each traced run's attributed frames and its condition."""
    if not attributed:
        return pd.DataFrame()
    # int, float and bool: a traced run with no complete chain adds an empty (object) frame.
    return stack(attributed).astype(
        {"frame": int, "displaced_normal": bool,
         **{c: float for c in ["lateness_ms", "deviation_ms", *PARTS, *GIL_TIMES]}})


def message_latency(messages: pd.DataFrame, warmup_frames: int, frames: int) -> MessageLatency:
    """One run's message latencies (receipt − send, µs) over the frames after the warm-up.

    Parameters
    ----------
    messages : DataFrame
        The run's ``messages.parquet``: ``frame``, ``t_send_ns``, ``t_recv_ns``.
    warmup_frames : int
        Frames at the start whose messages are left out (the connection's start-up).
    frames : int
        The run's frames, the warm-up included.

    Returns
    -------
    MessageLatency
        ``messages`` (received), ``lost`` (frames after the warm-up whose message never came),
        ``message_p50_us``, ``message_p99_us``, ``message_max_us`` (NaN without messages).
    """
    kept = messages[messages["frame"] >= warmup_frames]
    latency_us = (kept["t_recv_ns"] - kept["t_send_ns"]).to_numpy() / 1e3
    p50, p99, top = np.percentile(latency_us, [50, 99, 100]) if len(kept) else (np.nan,) * 3
    return {"messages": int(len(kept)), "lost": int(frames - warmup_frames - len(kept)),
            "message_p50_us": float(p50), "message_p99_us": float(p99),
            "message_max_us": float(top)}


def _load_cpu(cell: CellData) -> float:
    """The CPUs' worth a loaded run's process and loads used (``runs``' ``load_cpu``).

    CPU time, not the loads' completed calls: a load busy for 20 ms of wall time completes its
    call whether or not it had a CPU meanwhile. The fragment fix's: each of its two processes'
    from the first frame to the last (app.py ``frames_window``), summed; its whole run holds
    the fragments' start-up."""
    summary = cell.sidecar.get("summary", {})
    window = summary.get("fragment", {}).get("frames_window")
    if window:
        return sum(w["cpu_s"] / w["seconds"] for w in window.values())
    seconds = summary.get("duration_s") or 0
    if not (cell.config.get("loads") and seconds and "cpu_s" in summary):
        return float("nan")
    return summary["cpu_s"] / seconds


def _dispatcher_read(cell: CellData) -> str:
    """The dispatcher's policy as read back on its thread ("" when it was not read)."""
    dispatcher = cell.sidecar["operators"].get(DISPATCHER, {}).get("sched") or {}
    return BY_NUMBER.get(dispatcher.get("policy"), "")


def headline(cfg: dict, ds_tables: dict, red: pd.DataFrame, ci: CI,
             messages: pd.DataFrame | None = None) -> E2Headline:
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
    messages : DataFrame, optional
        :func:`load`'s ``extra["messages"]``: the fragment fix's message latencies per run.

    Returns
    -------
    E2Headline
        Every number and table row the words quote, each field documented in
        :mod:`.headline`.
    """
    runs, frames = ds_tables["runs"], ds_tables["frames"]
    conditions = condition_summary(pd.concat([runs, ds_tables["floor"]], ignore_index=True), ci)
    policy = cfg["ladder_policy"]
    recs = recommendations(runs, policy, ci, messages).to_dict("records")
    return E2Headline(
        **_design(runs), ladder_policy=policy,
        ladder=ladder(runs, ds_tables["floor"], policy, ci).to_dict("records"),
        recommendations=recs, verdict=h2_verdict(recs), std=h2_std(red),
        late_threshold_ms=cfg["late_threshold_ms"], min_reduction=MIN_REDUCTION,
        min_runs=MIN_RUNS, baseline=BASELINE, seed_baseline=SEED_BASELINE,
        conditions=conditions.to_dict("records"), late=_typical_and_late(conditions),
        yardsticks=_yardsticks(runs),
        decided_share=DECIDED_SHARE, starved_offset=STARVED_OFFSET,
        zero=null_verdict(red, control_margin(ds_tables["floor"])),
        control_floor_multiple=CONTROL_FLOOR_MULTIPLE,
        one=_one_load_per_cpu(red), seed_style=_seed_style(runs, frames, red, ci),
        seeds=seed_compatible(runs, ci), gil=_gil(runs, red, conditions),
        effects=effects(runs, ci).to_dict("records"),
        floor=_floor(runs, ds_tables["floor"], ci), floor_goal=FLOOR_GOAL,
        attribution=attribution_summary(ds_tables["attribution"]).to_dict("records"),
        **_mechanism(ds_tables["attribution"], cfg["late_threshold_ms"]),
        patterns=PATTERNS, switch_interval_ms=SWITCH_INTERVAL_MS,
        tracing_cost=tracing_cost(runs, ds_tables.get("traces", pd.DataFrame()),
                                  ci).to_dict("records"),
        parts=PARTS, **_unattributed(ds_tables.get("traces", pd.DataFrame())))


def _design(runs: pd.DataFrame) -> Design:
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


def _gil(runs: pd.DataFrame, red: pd.DataFrame, conditions: pd.DataFrame) -> GilLoads | None:
    """GIL-holding (Python) loads at the highest factor: the reductions, the frames missed,
    each policy's late frames with Python and with native loads (``late``: policy →
    {model: :func:`.contrasts.summarize` row}), and each real-time policy's std over its std
    with native loads where neither starved; None without Python loads."""
    gil = red[(red["load_work_model"] == "python")
              & (red["load_factor"] == red["load_factor"].max())] if len(red) else red
    if not len(gil):
        return None
    factor = float(gil["load_factor"].iloc[0])
    g = grid(runs)
    late = g[(g["load_work_model"] == "python") & (g["load_factor"] == factor)]
    native = red[(red["load_work_model"] == "native")
                 & (red["load_factor"] == factor)].set_index("policy")
    cells = grid(conditions)
    cells = cells[cells["load_factor"] == factor]
    # A policy whose Python- or native-load condition starved has no std ratio.
    hungry = set(cells.loc[cells["starved"], "policy"])
    ratios = {r["policy"]: r["std_ms"] / native.loc[r["policy"], "std_ms"]
              for r in gil.to_dict("records")
              if r["policy"] in RT_POLICIES and r["policy"] in native.index
              and native.loc[r["policy"], "std_ms"] > 0 and r["policy"] not in hungry}
    return {"load_factor": factor, "rows": gil.to_dict("records"),
            "lost": {p: int(n) for p, n in late.groupby("policy")["missed"].sum().items()},
            "late": {p: {m: c for m, c in zip(h["load_work_model"], h.to_dict("records"))}
                     for p, h in _by_policy(cells)},
            "ratios": ratios, "gil_ratio": GIL_RATIO,
            "gil_bound": bool(ratios) and min(ratios.values()) > GIL_RATIO}


def _by_policy(conditions: pd.DataFrame):
    """``conditions`` grouped by policy, in the order the policies are named (params.py)."""
    order = {p: i for i, p in enumerate(POLICY_NAMES)}
    return sorted(conditions.groupby("policy"), key=lambda kv: order.get(kv[0], len(order)))


def _typical_and_late(conditions: pd.DataFrame) -> PolicyGrid | None:
    """The policy grid at the headline point: each policy's typical jitter and late frames
    (:func:`.contrasts.summarize` rows, in policy order), the real-time runs whose std the 2
    most extreme frames decide (and the frames of a run, on average), the real-time policies
    whose IQR CI lies apart from the baseline's (``iqr_apart``; NaN bounds, below 3 runs,
    compare false), and the floor at the same load factor; None without it. Late frames are
    compared by rate ratio (:func:`.verdicts.h2_verdict`), not here."""
    top = headline_point(grid(conditions)) if len(conditions) else conditions
    if not len(top):
        return None
    factor = float(top["load_factor"].iloc[0])
    rt = top[top["policy"].isin(RT_POLICIES)]
    floor = conditions[(conditions["topology"] == "floor") & (conditions["load_factor"] == factor)]
    base = top[top["policy"] == BASELINE]
    b = base.iloc[0] if len(base) else None
    apart = [r["policy"] for r in rt.to_dict("records")
             if b is not None and (r["iqr_high"] < b["iqr_low"] or r["iqr_low"] > b["iqr_high"])]
    return {"load_factor": factor,
            "rows": [h.iloc[0].to_dict() for _, h in _by_policy(top)],
            "rt_runs": int(rt["runs"].sum()), "rt_decided": int(rt["decided"].sum()),
            "frames_per_run": int(top["frames"].sum() // top["runs"].sum()),
            "iqr_apart": apart,
            "floor": floor.iloc[0].to_dict() if len(floor) else None}


def _yardsticks(runs: pd.DataFrame) -> dict[str, Yardstick] | None:
    """The late frames at the headline point on a second yardstick beside the source clock every
    policy is judged on (:func:`.metrics.release_grid`): Holoscan 4.x's SCHED_DEADLINE target on
    its own releases (``previous``: one period after its previous frame, as the kernel releases
    it) and Holoscan 5.0 on the fixed grid (``recorded``: judged on its clock's own releases, a
    skipped one counted late; on the fixed grid one skip makes every later frame late).

    Returns
    -------
    dict of str to Yardstick, or None
        Name → ``late`` (as judged), ``other`` (on the second yardstick), ``skipped`` (releases
        the clock skipped), ``frames`` (the releases judged) and ``runs``; those whose runs give
        the same count on both left out, None where none is left.
    """
    top = headline_point(grid(runs)) if len(runs) else runs
    out = {}
    if len(top) and "grid" in top:
        for name, rows, other in (
                (PREVIOUS, top[(top["grid"] == FIXED) & (top["policy"] == SCHED_DEADLINE)],
                 "late_previous"),
                (RECORDED, top[top["grid"] == RECORDED], "late_fixed")):
            if len(rows) and other in rows and not (rows[other] == rows["late"]).all():
                out[name] = {"late": int(rows["late"].sum()), "other": int(rows[other].sum()),
                             "skipped": int(rows["skipped"].sum()),
                             "frames": int(rows["n"].sum()), "runs": int(len(rows))}
    return out or None


def _floor(runs: pd.DataFrame, floor: pd.DataFrame, ci: CI) -> FloorRatios | None:
    """Every headline-point condition's ratio to the floor; the pre-specified ones
    (:data:`FLOOR_CONFIGURATION`, one per real-time policy) and those of them within
    :data:`FLOOR_GOAL` (whole CI) among those that did not starve; None without a floor."""
    ratios = floor_ratios(headline_point(runs), floor, ci)
    if not len(ratios):
        return None
    chosen = np.logical_and.reduce([ratios[k] == v for k, v in FLOOR_CONFIGURATION.items()]
                                   + [ratios["policy"].isin(RT_POLICIES)])
    ratios = ratios.assign(prespecified=chosen)
    kept = ratios[chosen & (ratios["void"].map(len) == 0)]
    return {"prespecified": kept.to_dict("records"), "rows": ratios.to_dict("records"),
            "floor_std_ms": float(ratios["floor_std_ms"].iloc[0]),
            "load_factor": ratios["load_factor"].iloc[0],
            "at_floor": [r["label"] for r in kept.to_dict("records")
                         if np.isfinite(r["high"]) and r["high"] <= FLOOR_GOAL]}


def _mechanism(att: pd.DataFrame, threshold_ms: float) -> Mechanism:
    """``mechanism`` (per traced condition) and ``mechanism_rt`` (the real-time ones pooled)."""
    m = mechanism_summary(att, threshold_ms)
    return {"mechanism": m.to_dict("records"), "mechanism_rt": mechanism_totals(m, RT_POLICIES)}


def _unattributed(traces: pd.DataFrame) -> Unattributed:
    """The traced conditions none of whose frames could be attributed, and their policies."""
    none = traces[traces["attributed"] == 0] if len(traces) else traces
    return {"unattributed": none["label"].str.replace("-trace", "").tolist() if len(none) else [],
            "unattributed_policies": sorted(set(none["policy"])) if len(none) else []}


# What the drift check compares (stats.drift_check): a name and its unit.
# The typical jitter, not the std: a few late frames decide a run's std (one condition's runs
# spread 0.03–1.44 ms on the reference host), so no drift could exceed the std's spread.
DRIFT_QUANTITY = ("frame-period IQR", "µs")


def drift(ds: Dataset) -> DriftCheck | None:
    """The sweep's drift check on the frame period's IQR (µs, the typical jitter); None
    without one."""
    return drift_check(ds.tables["runs"], ds.tables["drift"], "period_iqr_us")


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


def power_plan(ds: Dataset, cfg: dict, ci: CI, host_id: str) -> str:
    """The frames per condition each late-frame comparison needs to decide at 80 % power,
    from ``ds`` (:mod:`checks.power`), as ``rtstudy plan power`` prints it."""
    from rtstudy.experiments.e2_rt_threads.checks import power

    return power.text(power.plan(ds.tables["runs"], cfg, ci), cfg, host_id)
