"""E1, async lock-free buffer vs default buffer: the sweep plan and the analysis.

H1 (DESIGN.md §1): with the default (double) buffer the fixed producer's
latency and message interval at ``rx`` grow with the *other* producer's period;
with the async buffer they stay flat. Quantified here as the slope of the fixed
producer's max latency against the varied period (ms per ms), with a CI, per buffer.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rtstudy import data
from rtstudy.harness import Cell
from rtstudy.realtime import RealtimeRequest
from rtstudy.stats import bootstrap_ci, holm, linear_fit, percentiles, rank_test, spread_test

EXPERIMENT = "e1_async_buffer"
MS = 1_000_000
OPERATORS = ("tx1", "tx2", "rx")
# Which producer is fixed in each scenario, and the port where its messages arrive.
FIXED = {"S1": ("tx1", "in1"), "S2": ("tx2", "in2")}
VARIED = {"S1": "tx2", "S2": "tx1"}


def periods(cfg: dict, scenario: str, varied_ms: int) -> dict[str, int]:
    """Periods in ms of tx1, tx2 and rx for one point of a scenario."""
    fixed_op = FIXED[scenario][0]
    return {fixed_op: cfg["fixed_period_ms"], VARIED[scenario]: varied_ms, "rx": cfg["rx_period_ms"]}


def bandwidth(cfg: dict, scenario: str, varied_ms: int) -> float:
    """Total SCHED_DEADLINE bandwidth (CPUs) that one point requests: sum of runtime / period."""
    p = periods(cfg, scenario, varied_ms)
    return sum(cfg[f"{op}_runtime_ms"] / p[op] for op in OPERATORS)


def host_limit(fp: dict) -> float:
    """CPUs' worth of SCHED_DEADLINE bandwidth the kernel admits on this host."""
    rt = fp["sched"]["rt_runtime_us"]
    cpus = fp["cpu"]["count"]
    if rt < 0:
        return float(cpus)
    return rt / fp["sched"]["rt_period_us"] * cpus


def pin_cpus(cfg: dict, fp: dict) -> dict[str, tuple[int, ...]]:
    """Distinct CPUs per operator when pinning is wanted and possible, else unpinned (empty)."""
    allowed = fp["realtime"].get("SCHED_DEADLINE pinned") == "ok"
    cpus = fp["cpu"]["online"]
    if cfg["pin"] == "never" or (cfg["pin"] == "auto" and (not allowed or len(cpus) < 3)):
        return {op: () for op in OPERATORS}
    # Keep CPU 0 for the OS when there is room: the last three CPUs.
    chosen = cpus[-3:]
    return {op: (cpu,) for op, cpu in zip(OPERATORS, chosen)}


def host_problems(cfg: dict, fp: dict) -> list[str]:
    """What this host cannot run of ``cfg``; empty when everything fits."""
    problems = []
    if "deadline" not in cfg["policies"]:
        return problems
    limit = host_limit(fp)
    for scenario in cfg["scenarios"]:
        for varied in cfg["periods_ms"]:
            bw = bandwidth(cfg, scenario, varied)
            if bw > limit:
                p = periods(cfg, scenario, varied)
                problems.append(
                    f"e1_async_buffer: {scenario} at {VARIED[scenario]} = {varied} ms asks for "
                    f"{bw:.2f} CPUs of SCHED_DEADLINE bandwidth (tx1_runtime_ms/{p['tx1']} + "
                    f"tx2_runtime_ms/{p['tx2']} + rx_runtime_ms/{p['rx']}), but this host admits "
                    f"{limit:.2f} (sched_rt_runtime_us {fp['sched']['rt_runtime_us']} / "
                    f"sched_rt_period_us {fp['sched']['rt_period_us']} x {fp['cpu']['count']} CPUs); "
                    "lower the runtimes or lengthen the periods")
    if cfg["pin"] == "always":
        if fp["realtime"].get("SCHED_DEADLINE pinned") != "ok":
            problems.append("e1_async_buffer.pin = 'always', but this host refuses SCHED_DEADLINE "
                            "threads pinned to one CPU (see `rtstudy host check`); use pin: auto")
        elif len(fp["cpu"]["online"]) < 3:
            problems.append("e1_async_buffer.pin = 'always' needs 3 CPUs (one per operator); "
                            f"this host has {len(fp['cpu']['online'])}")
    return problems


def plan(cfg: dict, fp: dict) -> list[Cell]:
    """Scenario × buffer × varied period × policy × work model × repetition."""
    cpus = pin_cpus(cfg, fp)
    cells = []
    for scenario in cfg["scenarios"]:
        for varied in cfg["periods_ms"]:
            p = periods(cfg, scenario, varied)
            for buffer in cfg["buffers"]:
                for policy in cfg["policies"]:
                    for model in cfg["work_models"]:
                        config = {
                            "scenario": scenario, "buffer": buffer, "policy": policy,
                            "work_model": model,
                            "tx1_period_ms": p["tx1"], "tx2_period_ms": p["tx2"],
                            "rx_period_ms": p["rx"],
                            "tx1_work_ms": cfg["tx1_work_ms"], "tx2_work_ms": cfg["tx2_work_ms"],
                            "rx_work_ms": cfg["rx_work_ms"], "messages": cfg["messages"],
                            "pinned": any(cpus.values()) if policy == "deadline" else False,
                        }
                        # The slower producer sets the run's length; 3x plus a margin.
                        expect_s = cfg["messages"] * max(p["tx1"], p["tx2"]) / 1000
                        config["max_duration_ms"] = int((3 * expect_s + 10) * 1000)
                        realtime = ()
                        if policy == "deadline":
                            realtime = tuple(
                                RealtimeRequest(op, "SCHED_DEADLINE",
                                                runtime_ns=int(cfg[f"{op}_runtime_ms"] * MS),
                                                deadline_ns=p[op] * MS, period_ns=p[op] * MS,
                                                cpus=cpus[op])
                                for op in OPERATORS)
                        label = f"{scenario}-{buffer}-{policy}-{model}-{VARIED[scenario]}{varied}"
                        timeout = config["max_duration_ms"] / 1000 + cfg["timeout_margin_s"]
                        for rep in range(cfg["repetitions"]):
                            cells.append(Cell(EXPERIMENT, "e1_async_buffer", label, config, rep,
                                              timeout, realtime))
    return cells


# ---------------------------------------------------------------------------
# Analysis

def load(out_dir, discard_head: int, discard_tail: int) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Messages and per-cell metrics of the plan's completed cells, and missing cell ids.

    Returns
    -------
    messages : DataFrame
        One row per new message received, after discarding the first
        ``discard_head`` and last ``discard_tail`` indices of each producer:
        configuration columns, ``producer``, ``role`` (fixed/varied),
        ``latency_ms`` (rx time − t_start, as the seed), ``latency_emit_ms``
        (rx time − t_emit) and ``interval_ms`` (between consecutive arrivals).
    cells : DataFrame
        One row per cell and producer role: max / P50 / P99 of both latencies and
        of the interval with their N, the producer's median emit period, stale reads.
    missing : list of str
    """
    sidecars, missing = data.completed_cells(out_dir)
    msg_frames, rows = [], []
    for sc in sidecars:
        cfg = sc["requested"]["config"]
        samples = data.read_samples(f"{sc['_dir']}/samples.parquet")
        base = {"cell_id": sc["cell_id"], "host_id": sc["host_id"], "scenario": cfg["scenario"],
                "buffer": cfg["buffer"], "policy": cfg["policy"], "work_model": cfg["work_model"],
                "pinned": cfg["pinned"], "repetition": sc["repetition"],
                "varied_period_ms": cfg[f"{VARIED[cfg['scenario']]}_period_ms"]}
        fixed_op, _ = FIXED[cfg["scenario"]]
        n = cfg["messages"]
        for producer, port in (("tx1", "in1"), ("tx2", "in2")):
            role = "fixed" if producer == fixed_op else "varied"
            rx = samples[(samples["event"] == "receive") & (samples["port"] == port)]
            rx = rx.sort_values("index")
            interval = rx["t_rx_ns"].diff() / 1e6
            keep = (rx["index"] >= discard_head) & (rx["index"] < n - discard_tail)
            m = pd.DataFrame({
                "index": rx["index"][keep],
                "latency_ms": ((rx["t_rx_ns"] - rx["t_start_ns"]) / 1e6)[keep],
                "latency_emit_ms": ((rx["t_rx_ns"] - rx["t_emit_ns"]) / 1e6)[keep],
                "interval_ms": interval[keep],
            }).assign(**base, producer=producer, role=role)
            msg_frames.append(m)
            emits = samples[(samples["event"] == "emit") & (samples["port"] == producer)]
            emit_period = np.diff(np.sort(emits["t_emit_ns"].to_numpy())) / 1e6
            lat, lat_e, itv = (percentiles(m[c], (50, 99)) for c in
                               ("latency_ms", "latency_emit_ms", "interval_ms"))
            rows.append({**base, "producer": producer, "role": role,
                         "latency_max_ms": lat["max"], "latency_p50_ms": lat["p50"],
                         "latency_p99_ms": lat["p99"], "latency_emit_max_ms": lat_e["max"],
                         "interval_max_ms": itv["max"], "interval_p50_ms": itv["p50"],
                         "n_messages": lat["n"],
                         "emit_period_ms": float(np.median(emit_period)) if emit_period.size else np.nan,
                         "nominal_period_ms": cfg[f"{producer}_period_ms"],
                         "stale_reads": sc["summary"]["stale_reads"][port],
                         "duration_s": sc["summary"]["duration_s"]})
    messages = pd.concat(msg_frames, ignore_index=True) if msg_frames else pd.DataFrame()
    return messages, pd.DataFrame(rows), missing


def slopes(cells: pd.DataFrame, confidence: float, metric: str = "latency_max_ms") -> pd.DataFrame:
    """Slope of the fixed producer's ``metric`` against the varied period, per configuration."""
    rows = []
    fixed = cells[cells["role"] == "fixed"]
    for key, g in fixed.groupby(["scenario", "buffer", "policy", "work_model"]):
        if g["varied_period_ms"].nunique() < 2:
            continue
        fit = linear_fit(g["varied_period_ms"], g[metric], confidence)
        rows.append(dict(zip(["scenario", "buffer", "policy", "work_model"], key),
                         metric=metric, slope=fit.slope.value, low=fit.slope.low,
                         high=fit.slope.high, n=fit.slope.n, r_squared=fit.r_squared))
    return pd.DataFrame(rows)


def h1_verdict(slope_df: pd.DataFrame) -> dict:
    """H1 per scenario from the DEADLINE, native-work slopes of max latency.

    Reproduced when the default buffer's slope is >= 0.8 ms/ms with its CI above 0
    and the async buffer's |slope| < 0.1 ms/ms with its CI covering 0.
    """
    out = {}
    sel = slope_df[(slope_df["policy"] == "deadline") & (slope_df["work_model"] == "native")
                   & (slope_df["metric"] == "latency_max_ms")]
    for scenario, g in sel.groupby("scenario"):
        d = g[g["buffer"] == "default"]
        a = g[g["buffer"] == "async"]
        if d.empty or a.empty:
            out[scenario] = {"verdict": "inconclusive", "why": "needs both buffers"}
            continue
        d, a = d.iloc[0], a.iloc[0]
        if not (np.isfinite(d["low"]) and np.isfinite(a["low"])):
            out[scenario] = {"verdict": "inconclusive", "why": "too few points for a CI",
                             "default": d.to_dict(), "async": a.to_dict()}
            continue
        default_ok = d["slope"] >= 0.8 and d["low"] > 0
        async_ok = abs(a["slope"]) < 0.1 and a["low"] <= 0 <= a["high"]
        verdict = "reproduced" if default_ok and async_ok else "not reproduced"
        out[scenario] = {"verdict": verdict, "default": d.to_dict(), "async": a.to_dict()}
    return out


def seed_table(cells: pd.DataFrame, confidence: float, n_resamples: int, seed: int) -> pd.DataFrame:
    """Fixed producer's max latency per varied period and buffer (DEADLINE, native), beside the seed."""
    from rtstudy.seeds import E1_PUBLISHED_MAX_LATENCY_MS

    sel = cells[(cells["role"] == "fixed") & (cells["policy"] == "deadline")
                & (cells["work_model"] == "native")]
    rows = []
    for (scenario, varied), g in sel.groupby(["scenario", "varied_period_ms"]):
        row = {"scenario": scenario, "varied period (ms)": int(varied)}
        for buffer in ("default", "async"):
            values = g.loc[g["buffer"] == buffer, "latency_max_ms"]
            row[f"{buffer}: max latency ms"] = bootstrap_ci(values, np.mean, confidence,
                                                           n_resamples, seed).format(1)
            pub = E1_PUBLISHED_MAX_LATENCY_MS.get(scenario, {}).get(buffer, {}).get(int(varied))
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


def headline(cells: pd.DataFrame, slope_df: pd.DataFrame) -> dict:
    fixed = cells[cells["role"] == "fixed"]
    return {
        "n_cells": int(cells["cell_id"].nunique()),
        "repetitions": int(cells["repetition"].nunique()),
        "periods": sorted(int(p) for p in cells["varied_period_ms"].unique()),
        "messages_per_cell": int(fixed["n_messages"].median()) if len(fixed) else 0,
        "pinned": bool(cells["pinned"].any()),
        "stale_async": int(fixed.loc[fixed["buffer"] == "async", "stale_reads"].sum()),
        "stale_default": int(fixed.loc[fixed["buffer"] == "default", "stale_reads"].sum()),
        "verdict": h1_verdict(slope_df),
    }
