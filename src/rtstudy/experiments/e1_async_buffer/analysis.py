"""E1, async lock-free buffer vs default buffer: loading, statistics and the H1 verdict.

H1: with the default (double) buffer the fixed producer's latency and message
interval at ``rx`` grow with the *other* producer's period; with the async
buffer they stay flat. Quantified here as the slope of the fixed producer's
max latency against the varied period (ms per ms), with a CI, per buffer.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from rtstudy import paths
from rtstudy.data.io import Dataset, read_cells, set_aside_drift, stack, wide
from rtstudy.experiments.e1_async_buffer import published
from rtstudy.experiments.e1_async_buffer.headline import (E1Headline, ModeSummary,
                                                          ModesOverSessions, ScenarioVerdict)
from rtstudy.experiments.e1_async_buffer.plan import FIXED, VARIED
from rtstudy.experiments.e1_async_buffer.producers import columns_of, producer_run
from rtstudy.inference import criteria, judge
from rtstudy.inference.fits import linear_fit, robust_slope
from rtstudy.inference.stats import (CI, MIN_RUNS, DriftCheck, drift_check, holm, over_runs,
                                     rank_test, spread_test)

# The columns and Arrow types of samples.parquet, as app.py writes them (data/README.md).
SAMPLES = {"event": "string", "port": "string", "index": "int64", "t_start_ns": "int64",
           "t_emit_ns": "int64", "t_rx_ns": "int64"}

# H1's verdict (rtstudy.inference.criteria): the default buffer's slope's whole CI must reach
# DEFAULT_MIN_SLOPE ms/ms (an effect); the async buffer's whole CI must lie within
# ±FLAT_MARGIN ms/ms (equivalence, not a CI that happens to cover 0).
DEFAULT_MIN_SLOPE = criteria.value("h1_default_min_slope")
FLAT_MARGIN = criteria.value("h1_flat_margin")
# A run whose max latency is over OUTLIER_FACTOR times the median of the other runs at its
# point, and at least OUTLIER_MIN_MS above it, is listed with what its files say.
OUTLIER_FACTOR = criteria.value("e1_outlier_factor")
OUTLIER_MIN_MS = criteria.value("e1_outlier_min_ms")
# Lines of a run's log that explain a late message (CUDA's start-up warnings do not).
_LOG_CLUES = ("overrun", "throttl", "deadline", "miss", "error", "fail")


# What load() returns (rtstudy.data.schema adds the columns every table has): per table, what
# a row is and each column's (kind, unit, meaning).
_CONDITION = {
    "scenario": ("str", "", "`S1`: tx1 fixed, tx2 varied; `S2`: tx2 fixed, tx1 varied"),
    "buffer": ("str", "", "rx's inputs: `default` (Holoscan's double buffer) or `async` (the "
               "async lock-free buffer)"),
    "policy": ("str", "", "`deadline` (each operator on a SCHED_DEADLINE thread, deadline = "
               "period) or `none` (normal threads paced by PeriodicCondition)"),
    "work_model": ("str", "", "the operators' busy work: `native` (GIL released) or `python` "
                   "(GIL held)"),
    "pinned": ("bool", "", "whether the SCHED_DEADLINE threads were pinned to CPUs"),
    "placement": ("str", "", "where the pinned threads ran (`tx1 on CPU 1, ...`); empty when "
                  "unpinned"),
    "varied_period_ms": ("int", "ms", "the varied producer's period"),
    "producer": ("str", "", "the producer, `tx1` or `tx2`"),
    "role": ("str", "", "its role in the scenario: `fixed` or `varied`"),
}
SCHEMA = {
    "messages": ("one row per new message rx received from a producer, its first `discard_head` "
                 "and last `discard_tail` indices left out", {
        "index": ("int", "", "the message's index, from 0, per producer"),
        "latency_ms": ("float", "ms", "rx's read − the start of the producer's compute that "
                       "made it (the seed's latency)"),
        "latency_emit_ms": ("float", "ms", "rx's read − the producer's emit"),
        "interval_ms": ("float", "ms", "since rx read the producer's previous new message "
                        "(NaN for the first)"),
        **_CONDITION}),
    "cells": ("one row per run and producer", {
        **_CONDITION,
        "latency_max_ms": ("float", "ms", "the largest `latency_ms` of the run's messages"),
        "latency_p50_ms": ("float", "ms", "their median `latency_ms`"),
        "latency_p99_ms": ("float", "ms", "their P99 `latency_ms`"),
        "latency_emit_max_ms": ("float", "ms", "their largest `latency_emit_ms`"),
        "interval_max_ms": ("float", "ms", "their largest `interval_ms`"),
        "interval_p50_ms": ("float", "ms", "their median `interval_ms`"),
        "n_messages": ("int", "count", "the messages these are over"),
        "emit_period_ms": ("float", "ms", "the median time between the producer's successive "
                           "emits, every message counted"),
        "nominal_period_ms": ("int", "ms", "the producer's requested period"),
        "stale_reads": ("int", "count", "rx's reads of the producer's message it had read "
                        "already (the async buffer hands back the latest), in the whole run"),
        "duration_s": ("float", "s", "the app's run (`app.run()`)"),
        "first_wait_ms": ("float", "ms", "the start-up phase: rx's first read of the producer's "
                          "message − that message's emit (the first message counted)"),
        "backlog_at_first_read": ("int", "count", "the producer's messages emitted before rx's "
                                  "first read of it, less the one read: what queued at start-up"),
        "phase_switches": ("int", "count", "how often, from one kept message to the next, the "
                           "wait at rx (`latency_emit_ms`) crossed half rx's period: the phase of "
                           "rx's ticks against the producer's emits changing during the run"),
    }),
}
TABLES = tuple(SCHEMA)


def load(directory: Path, cfg: dict) -> Dataset:
    """Messages and per-cell metrics of the plan's completed cells: ``tables["messages"]`` and
    ``tables["cells"]`` (:data:`SCHEMA`; each producer's part by
    :func:`.producers.producer_run`), and ``missing`` cell ids. ``cfg``: E1's resolved
    parameters (``discard_head``, ``discard_tail``).
    """
    discard_head, discard_tail = cfg["discard_head"], cfg["discard_tail"]
    cells, missing = read_cells(directory, SAMPLES)
    msg_frames, rows = [], []
    for cell in cells:
        cfg, samples = cell.config, cell.samples()
        base = {**cell.columns(scenario=cfg["scenario"], buffer=cfg["buffer"],
                               policy=cfg["policy"], work_model=cfg["work_model"],
                               pinned=cfg["pinned"]),
                "placement": ", ".join(f"{r['operator']} on CPU {','.join(map(str, r['cpus']))}"
                                       for r in cell.sidecar["requested"].get("realtime", [])
                                       if r["cpus"]),
                "varied_period_ms": cfg[f"{VARIED[cfg['scenario']]}_period_ms"]}
        fixed_op, _ = FIXED[cfg["scenario"]]
        col = columns_of(samples)
        for producer, port in (("tx1", "in1"), ("tx2", "in2")):
            role = "fixed" if producer == fixed_op else "varied"
            m, metrics = producer_run(cell, col, producer, port, discard_head, discard_tail)
            msg_frames.append((m, {**base, "producer": producer, "role": role}))
            rows.append({**base, "producer": producer, "role": role, **metrics})
    messages = stack(msg_frames)
    tables = {"messages": messages, "cells": pd.DataFrame(rows)}
    return Dataset(Path(directory), set_aside_drift(tables, "cells"), missing)


def slopes(cells: pd.DataFrame, confidence: float, metric: str = "latency_max_ms") -> pd.DataFrame:
    """Slope of the fixed producer's ``metric`` against the varied period, per configuration.

    Each run's value is one point (the run is the unit): least squares with a
    t-based CI (``slope``, ``low``, ``high``), and beside it the Theil–Sen slope
    (``robust``, ``robust_low``, ``robust_high``), which one extreme run cannot
    drag. ``runs_min`` is the fewest runs at any period.
    """
    rows = []
    fixed = cells[cells["role"] == "fixed"]
    for key, g in fixed.groupby(["scenario", "buffer", "policy", "work_model"]):
        if g["varied_period_ms"].nunique() < 2:
            continue
        fit = linear_fit(g["varied_period_ms"], g[metric], confidence)
        robust = robust_slope(g["varied_period_ms"], g[metric], confidence)
        rows.append(dict(zip(["scenario", "buffer", "policy", "work_model"], key),
                         metric=metric, slope=fit.slope.value, low=fit.slope.low,
                         high=fit.slope.high, n=fit.slope.n, r_squared=fit.r_squared,
                         robust=robust.value, robust_low=robust.low, robust_high=robust.high,
                         runs_min=int(g.groupby("varied_period_ms")["cell_id"].nunique().min())))
    return pd.DataFrame(rows)


COUPLED = judge.Rule(judge.AT_LEAST, DEFAULT_MIN_SLOPE)


def h1_parts(d: dict, a: dict, runs: int, flat_margin: float = FLAT_MARGIN) -> list[judge.Part]:
    """H1's two parts in one scenario: the default buffer's max-latency slope against
    :data:`DEFAULT_MIN_SLOPE` (``shown`` / ``refuted``) and the async buffer's against
    ±``flat_margin`` (``equivalent`` / ``different``), each with its CI over runs."""
    return [judge.Part("default slope", COUPLED, d["slope"], d["low"], d["high"], runs),
            judge.Part("async slope", judge.Rule(judge.WITHIN, flat_margin), a["slope"],
                       a["low"], a["high"], runs)]


def h1_combine(parts: list[judge.Part]) -> tuple[judge.Verdict, str]:
    """H1's verdict from its parts (:func:`h1_parts`): reproduced when the default slope is
    shown and the async one equivalent to flat; not reproduced when either is refuted
    (``refuted`` / ``different``); else not settled, naming what would settle it."""
    states = {p.name: p.state for p in parts}
    if states.get("default slope") == judge.SHOWN and states.get("async slope") == judge.EQUIVALENT:
        return judge.Verdict.REPRODUCED, ""
    if states.get("default slope") == judge.REFUTED or states.get("async slope") == judge.DIFFERENT:
        return judge.Verdict.NOT_REPRODUCED, ""
    return judge.NOT_SETTLED, judge.unsettled_why(parts)


def h1_verdict(slope_df: pd.DataFrame, flat_margin: float = FLAT_MARGIN
               ) -> dict[str, ScenarioVerdict]:
    """H1 per scenario from the DEADLINE, native-work slopes of max latency, over runs.

    The default buffer *couples* when its slope's whole CI lies at or above
    :data:`DEFAULT_MIN_SLOPE` ms/ms, and does not when the whole CI lies below it; the
    async buffer is *flat* when its whole CI lies within ±``flat_margin`` ms/ms
    and not flat when it lies wholly outside (:func:`h1_combine`). Not settled where
    a CI straddles its edge, or with fewer than :data:`rtstudy.inference.stats.MIN_RUNS` runs at
    some period (no CI); not testable here without both buffers measured.
    """
    out = {}
    sel = slope_df[(slope_df["policy"] == "deadline") & (slope_df["work_model"] == "native")
                   & (slope_df["metric"] == "latency_max_ms")] if len(slope_df) else slope_df
    for scenario, g in (sel.groupby("scenario") if len(sel) else []):
        d = g[g["buffer"] == "default"]
        a = g[g["buffer"] == "async"]
        if d.empty or a.empty:
            out[scenario] = {"verdict": judge.NOT_TESTABLE, "why": "needs both buffers",
                             "parts": []}
            continue
        d, a = d.iloc[0].to_dict(), a.iloc[0].to_dict()
        runs = int(min(d["runs_min"], a["runs_min"]))
        # Below MIN_RUNS runs per period a slope's CI is not one over runs: none is judged.
        no_ci = {"low": np.nan, "high": np.nan} if runs < MIN_RUNS else {}
        parts = h1_parts({**d, **no_ci}, {**a, **no_ci}, runs, flat_margin)
        verdict, why = h1_combine(parts)
        if runs < MIN_RUNS:
            why = f"{runs} run(s) per period, fewer than {MIN_RUNS}: no CI"
        out[scenario] = {"default": d, "async": a, "runs": runs, "margin": flat_margin,
                         "verdict": verdict, "coupled": parts[0].state, "flat": parts[1].state,
                         "parts": parts, **({"why": why} if why else {})}
    return out


def modes_over_sessions(headlines: list[E1Headline]) -> ModesOverSessions:
    """:func:`mode_summary` over every session of a host (each one's ``headline.modes``):
    ``sessions`` with split points, ``runs`` of theirs, per rule ``<rule>_agree``, and
    ``decides`` only for the rule that classifies every such run of every session; empty with
    fewer than two sessions. One session's rule that holds in all of its runs may not hold
    in the next's: the words claim only what holds over them all."""
    found = [h.modes for h in headlines if h.modes.get("runs")]
    if len(headlines) < 2 or not found:
        return {}
    out = {"sessions": len(found), "of": len(headlines),
           "runs": sum(m["runs"] for m in found),
           **{f"{rule}_agree": sum(m[f"{rule}_agree"] for m in found) for rule in MODE_RULES}}
    out["decides"] = next((rule for rule in MODE_RULES if out[f"{rule}_agree"] == out["runs"]),
                          "")
    return out


def explain(cell_dir: Path) -> str:
    """What a run's own files say that could explain an extreme: log clues, duration, re-reads."""
    notes = []
    try:
        sidecar = json.loads((cell_dir / paths.SIDECAR_FILE).read_text())
        summary = sidecar.get("summary", {})
        notes.append(f"ran {summary.get('duration_s', float('nan')):.1f} s")
        stale = summary.get("stale_reads", {})
        if stale:
            notes.append("stale re-reads " + ", ".join(f"{k} {v}" for k, v in stale.items()))
    except (OSError, ValueError):
        notes.append("cell.json unreadable")
    try:
        lines = (cell_dir / paths.LOG_FILE).read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    clues = [ln.strip() for ln in lines if "cuda" not in ln.lower()
             and any(c in ln.lower() for c in _LOG_CLUES)]
    notes.append(f"run.log: {clues[0][:160]}" + (f" (+{len(clues) - 1} more)" if len(clues) > 1 else "")
                 if clues else "run.log: nothing about overruns, throttling or errors")
    return "; ".join(notes)


def outliers(cells: pd.DataFrame, directory: Path) -> pd.DataFrame:
    """Runs whose max latency is far off the other runs of their point, with what their files say.

    Far off: over :data:`OUTLIER_FACTOR` times the median of the point's other
    runs and at least :data:`OUTLIER_MIN_MS` above it (points with at least
    :data:`rtstudy.inference.stats.MIN_RUNS` runs). Listed, never dropped: the slopes keep them,
    and the Theil–Sen slope shows how much they weigh.
    """
    rows = []
    fixed = cells[cells["role"] == "fixed"] if len(cells) else cells
    for key, g in (fixed.groupby(["scenario", "buffer", "policy", "work_model", "varied_period_ms"])
                   if len(fixed) else []):
        if g["cell_id"].nunique() < MIN_RUNS:
            continue
        for r in g.to_dict("records"):
            median = float(g.loc[g["cell_id"] != r["cell_id"], "latency_max_ms"].median())
            if r["latency_max_ms"] > OUTLIER_FACTOR * median and \
                    r["latency_max_ms"] - median > OUTLIER_MIN_MS:
                rows.append({"scenario": key[0], "buffer": key[1],
                             "varied period (ms)": int(key[4]), "cell": r["cell_id"],
                             "max latency ms": round(r["latency_max_ms"], 1),
                             "median of the other runs ms": round(median, 1),
                             "what its files say": explain(Path(directory) / r["cell_id"])})
    return pd.DataFrame(rows)


def seed_table(cells: pd.DataFrame, ci: CI) -> pd.DataFrame:
    """Fixed producer's max latency per varied period and buffer (DEADLINE, native), beside the seed."""
    sel = cells[(cells["role"] == "fixed") & (cells["policy"] == "deadline")
                & (cells["work_model"] == "native")]
    rows = []
    for (scenario, varied), g in sel.groupby(["scenario", "varied_period_ms"]):
        row = {"scenario": scenario, "varied period (ms)": int(varied)}
        for buffer in ("default", "async"):
            values = g.loc[g["buffer"] == buffer, "latency_max_ms"]
            est = over_runs(values, ci)
            row[f"{buffer}: max latency ms"] = (est.format(1) if np.isfinite(est.low) else
                                                 ", ".join(f"{v:.1f}" for v in values) + " (no CI)")
            pub = published.MAX_LATENCY_MS.get(scenario, {}).get(buffer, {}).get(int(varied))
            row[f"seed {buffer} ms"] = pub or "—"
        rows.append(row)
    return pd.DataFrame(rows)


def buffer_tests(messages: pd.DataFrame) -> pd.DataFrame:
    """Default vs async buffer: the fixed producer's latencies at each varied period.

    One row per scenario and varied period (DEADLINE, native work; repetitions
    pooled): median latency of each buffer with its N, the Mann–Whitney p-value
    for equal location and the Brown–Forsythe p-value for equal spread, each also
    Holm-adjusted over the whole grid. Messages within a run are not independent
    (consecutive latencies are correlated), so read the p-values as a screen,
    and the slopes as the test of H1.
    """
    if messages.empty:
        return pd.DataFrame()
    sel = messages[(messages["role"] == "fixed") & (messages["policy"] == "deadline")
                   & (messages["work_model"] == "native")]
    rows = []
    for (scenario, varied), g in sel.groupby(["scenario", "varied_period_ms"]):
        d = g.loc[g["buffer"] == "default", "latency_ms"]
        a = g.loc[g["buffer"] == "async", "latency_ms"]
        if d.empty or a.empty:
            continue
        rows.append({"scenario": scenario, "varied period (ms)": int(varied),
                     "default P50 ms": round(float(d.median()), 2), "default N": int(d.size),
                     "async P50 ms": round(float(a.median()), 2), "async N": int(a.size),
                     "p location": rank_test(d, a), "p spread": spread_test(d, a)})
    out = pd.DataFrame(rows)
    if len(out):
        out["p location (Holm)"] = holm(out["p location"])
        out["p spread (Holm)"] = holm(out["p spread"])
    return out


# What might decide a run's mode, each a rule on the run's start-up (modes()): key → (what it
# says, the rule on a fixed producer's row and rx's period in ms).
MODE_RULES = {
    "first_wait": ("its first message waited at rx more than half rx's period: at start-up rx's "
                   "ticks fell just before the producer's emits, not just after",
                   lambda r, rx_ms: r["first_wait_ms"] > rx_ms / 2),
    "backlog": ("the producer had queued a message before rx's first read of it",
                lambda r, rx_ms: r["backlog_at_first_read"] > 0),
}


def modes(cells: pd.DataFrame, rx_period_ms: float) -> pd.DataFrame:
    """Which runs of each point sit in a slow mode, and whether their start-up said so.

    A run of the fixed producer is *slow* when its median latency lies more than half
    rx's period above the fastest run's of its point (scenario, buffer, policy, work
    model, varied period): half a period apart, two runs differ by whether rx's tick
    caught a message or the next tick did. Each :data:`MODE_RULES` rule classifies each
    run from its start-up alone; ``<rule>_agree`` counts the runs it classifies as the
    latencies do.

    Returns
    -------
    DataFrame
        One row per point: its keys, ``runs``, ``slow`` (runs in the slow mode),
        ``fast_p50_ms`` and ``slow_p50_ms`` (the modes' median latencies; NaN without
        slow runs), ``slow_max_ms`` (their largest max latency), ``switched`` (runs whose phase
        changed during the run: ``phase_switches`` > 0), and per rule ``<rule>_agree``.
    """
    keys = ["scenario", "buffer", "policy", "work_model", "varied_period_ms"]
    fixed = cells[cells["role"] == "fixed"] if len(cells) else cells
    rows = []
    for key, g in (fixed.groupby(keys) if len(fixed) else []):
        slow = g["latency_p50_ms"] > g["latency_p50_ms"].min() + rx_period_ms / 2
        row = {**dict(zip(keys, key)), "runs": int(len(g)), "slow": int(slow.sum()),
               "fast_p50_ms": float(g.loc[~slow, "latency_p50_ms"].median()),
               "slow_p50_ms": float(g.loc[slow, "latency_p50_ms"].median()) if slow.any()
               else np.nan,
               "slow_max_ms": float(g.loc[slow, "latency_max_ms"].max()) if slow.any()
               else np.nan,
               "switched": int((g["phase_switches"] > 0).sum())}
        for rule, (_, says) in MODE_RULES.items():
            predicted = np.array([bool(says(r, rx_period_ms)) for r in g.to_dict("records")])
            row[f"{rule}_agree"] = int((predicted == slow.to_numpy()).sum())
        rows.append(row)
    return pd.DataFrame(rows)


def mode_summary(table: pd.DataFrame) -> ModeSummary:
    """:func:`modes` over the points whose runs split into both modes: ``points`` (of
    ``all_points``), ``runs``, ``slow``, ``switched`` (those runs whose phase changed during
    the run), per rule ``<rule>_agree``, and ``decides`` (the rule that classifies every one of
    those runs, or "" when none does)."""
    if table.empty:
        return {}
    both = table[(table["slow"] > 0) & (table["slow"] < table["runs"])]
    out = {"points": int(len(both)), "all_points": int(len(table)),
           "runs": int(both["runs"].sum()), "slow": int(both["slow"].sum()),
           "switched": int(both["switched"].sum()),
           **{f"{rule}_agree": int(both[f"{rule}_agree"].sum()) for rule in MODE_RULES}}
    out["decides"] = next((rule for rule in MODE_RULES
                           if len(both) and out[f"{rule}_agree"] == out["runs"]), "")
    out["rules"] = {rule: what for rule, (what, _) in MODE_RULES.items()}
    out["where"] = [{k: (int(v) if k == "varied_period_ms" else v) for k, v in r.items()
                     if k in ("scenario", "buffer", "varied_period_ms", "runs", "slow",
                              "fast_p50_ms", "slow_p50_ms")}
                    for r in both.to_dict("records")]
    return out


def headline(cells: pd.DataFrame, slope_df: pd.DataFrame,
             flat_margin: float = FLAT_MARGIN, rx_period_ms: float = np.nan) -> E1Headline:
    """The numbers E1's prose quotes, all computed here from the cells and the slopes."""
    fixed = cells[cells["role"] == "fixed"]
    return E1Headline(
        n_cells=int(cells["cell_id"].nunique()),
        repetitions=int(cells["repetition"].nunique()),
        periods=sorted(int(p) for p in cells["varied_period_ms"].unique()),
        messages_per_cell=int(fixed["n_messages"].median()) if len(fixed) else 0,
        pinned=bool(cells["pinned"].any()),
        placement="; ".join(sorted(set(cells.loc[cells["pinned"], "placement"]))),
        stale_async=int(fixed.loc[fixed["buffer"] == "async", "stale_reads"].sum()),
        stale_default=int(fixed.loc[fixed["buffer"] == "default", "stale_reads"].sum()),
        verdict=h1_verdict(slope_df, flat_margin),
        default_min_slope=DEFAULT_MIN_SLOPE,
        flat_margin=flat_margin,
        min_runs=MIN_RUNS,
        outlier_factor=OUTLIER_FACTOR, outlier_min_ms=OUTLIER_MIN_MS,
        modes=mode_summary(modes(cells, rx_period_ms)) if np.isfinite(rx_period_ms) else {},
    )


# What the drift check compares (stats.drift_check): a name and its unit.
DRIFT_QUANTITY = ("fixed producer's max latency", "ms")


def drift(ds: Dataset) -> DriftCheck | None:
    """The sweep's drift check on the fixed producer's max latency (ms); None without one."""
    def fixed(t: pd.DataFrame) -> pd.DataFrame:
        return t[t["role"] == "fixed"] if len(t) else t
    return drift_check(fixed(ds.tables["cells"]), fixed(ds.tables["drift"]), "latency_max_ms")


# The table behind E1's figure that DVC plots (dvc.yaml `plots:`; `dvc plots show`): one row per
# run of a varied period, one column per scenario and buffer.
PLOT_FILE = "e1_max_latency.csv"


def plot_table(ds: Dataset) -> pd.DataFrame | None:
    """The fixed producer's max latency (ms) per run against the varied period (ms)."""
    cells = ds.tables["cells"]
    if not len(cells):
        return None
    fixed = cells[cells["role"] == "fixed"]
    return wide(fixed, ["varied_period_ms", "repetition"], fixed["scenario"] + "_" + fixed["buffer"],
                "latency_max_ms")
