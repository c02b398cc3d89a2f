"""E3, Holoscan scheduler overhead: the sweep plan and the analysis.

H3 (DESIGN.md §1): Greedy costs ~10 µs per iteration without messages and
~17 µs with a Tx→Rx message; EventBased ~11–15 and ~25–62 µs. The seed divides
the whole app's wall time by N, which folds start-up into the figure; here each
cell times several N, so a straight line ``total = start-up + N × per-iteration``
separates the two, and compute time stamps give the per-iteration cost directly.
"""
from __future__ import annotations

import random

import numpy as np
import pandas as pd

from rtstudy import data, seeds
from rtstudy.harness import Cell
from rtstudy.stats import bootstrap_ci, linear_fit, percentiles

EXPERIMENT = "e3_overhead"
LEAD_OP = {"ops": "op1", "ping": "tx"}


def schedulers(cfg: dict) -> list[tuple[str, int | None]]:
    """(scheduler, workers) pairs of the sweep; Greedy is single-threaded (workers None)."""
    pairs: list[tuple[str, int | None]] = []
    for name in cfg["schedulers"]:
        if name == "greedy":
            pairs.append(("greedy", None))
        else:
            pairs += [(name, w) for w in cfg["event_based_workers"]]
    return pairs


def scheduler_label(scheduler: str, workers) -> str:
    if scheduler == "greedy" or workers is None or (isinstance(workers, float) and np.isnan(workers)):
        return "Greedy"
    return f"EventBased ×{int(workers)}"


def plan(cfg: dict) -> list[Cell]:
    """One cell per app × scheduler × repetition; each times every N, in a seeded order."""
    cells = []
    per_run_s = cfg["max_duration_ms"] / 1000
    for app in cfg["apps"]:
        for scheduler, workers in schedulers(cfg):
            label = f"{app}-{'greedy' if workers is None else f'ebs{workers}'}"
            for rep in range(cfg["repetitions"]):
                order = list(cfg["iterations"])
                random.Random(f"{cfg['order_seed']}/{label}/{rep}").shuffle(order)
                config = {
                    "app": app, "scheduler": scheduler, "workers": workers,
                    "iterations": order,
                    "warmup_iterations": cfg["warmup_iterations"],
                    "stop_on_deadlock_timeout_ms": cfg["stop_on_deadlock_timeout_ms"],
                    "max_duration_ms": cfg["max_duration_ms"],
                }
                timeout = (len(order) + 1) * per_run_s + cfg["timeout_margin_s"]
                cells.append(Cell(EXPERIMENT, "e3_overhead", label, config, rep, timeout))
    return cells


# ---------------------------------------------------------------------------
# Analysis

def load_runs(out_dir) -> tuple[pd.DataFrame, list[str]]:
    """One row per timed app run of the plan's completed cells, and the missing cell ids.

    Columns: configuration (app, scheduler, workers, scheduler_label, repetition,
    iterations), the run's timings (total_s, whole_app_us_per_iter, startup_ms,
    teardown_ms, steady_us_per_iter) and, from the compute stamps of the lead
    operator, the per-iteration interval's median and P99 with its N.
    """
    cells, missing = data.completed_cells(out_dir)
    rows = []
    for cell in cells:
        cfg = cell["requested"]["config"]
        samples = data.read_samples(f"{cell['_dir']}/samples.parquet")
        lead = samples[samples["op"] == LEAD_OP[cfg["app"]]]
        for run in cell["summary"]["runs"]:
            stamps = lead.loc[lead["run"] == run["run"], "t_ns"].to_numpy()
            gaps_us = np.diff(stamps) / 1e3
            p = percentiles(gaps_us, (50, 99))
            rows.append({
                "cell_id": cell["cell_id"], "host_id": cell["host_id"], "profile": cell["profile"],
                "app": cfg["app"], "scheduler": cfg["scheduler"], "workers": cfg["workers"],
                "scheduler_label": scheduler_label(cfg["scheduler"], cfg["workers"]),
                "repetition": cell["repetition"], "order_index": cell["order_index"],
                "iterations": run["iterations"], "total_s": run["total_s"],
                "whole_app_us_per_iter": run["whole_app_us_per_iter"],
                "startup_ms": run["startup_ms"], "teardown_ms": run["teardown_ms"],
                "steady_us_per_iter": run["steady_us_per_iter"],
                "tick_p50_us": p["p50"], "tick_p99_us": p["p99"], "tick_n": p["n"],
            })
    return pd.DataFrame(rows), missing


def label_order(runs: pd.DataFrame) -> list[str]:
    """Scheduler labels in display order: Greedy, then EventBased by worker count."""
    labels = runs[["scheduler_label", "workers"]].drop_duplicates()
    labels = labels.assign(k=labels["workers"].fillna(0)).sort_values("k")
    return list(labels["scheduler_label"])


def fits(runs: pd.DataFrame, confidence: float) -> pd.DataFrame:
    """Per app × scheduler: ``total_s = startup + N × per_iteration`` over all runs and repetitions."""
    rows = []
    for (app, label), g in runs.groupby(["app", "scheduler_label"], sort=False):
        if g["iterations"].nunique() < 2:
            continue
        fit = linear_fit(g["iterations"], g["total_s"], confidence)
        rows.append({"app": app, "scheduler_label": label,
                     "per_iter_us": fit.slope.value * 1e6, "per_iter_low": fit.slope.low * 1e6,
                     "per_iter_high": fit.slope.high * 1e6,
                     "startup_ms": fit.intercept.value * 1e3, "startup_low": fit.intercept.low * 1e3,
                     "startup_high": fit.intercept.high * 1e3,
                     "r_squared": fit.r_squared, "n_runs": fit.slope.n})
    return pd.DataFrame(rows)


def published_range(app: str, scheduler: str) -> tuple[float, float]:
    return seeds.E3_PUBLISHED_US[(app, scheduler)]


def summary_table(runs: pd.DataFrame, fit_df: pd.DataFrame, confidence: float,
                  n_resamples: int, seed: int) -> pd.DataFrame:
    """The E3 table, one row per app × scheduler, every cell "value [CI] (n = ...)".

    Columns: the seed's method and the steady in-run cost at the largest N
    (mean over repetitions), the slope of the fit over N, the start-up
    (constructor to first compute) and teardown (last compute to the end of
    ``run()``) over every run, and the seed's published figure.
    """
    n_max = runs["iterations"].max()
    order = label_order(runs)

    def ci(values, digits=1):
        return bootstrap_ci(values, np.mean, confidence, n_resamples, seed).format(digits)

    rows = []
    for (app, label), g in runs.groupby(["app", "scheduler_label"], sort=False):
        at_max = g[g["iterations"] == n_max]
        fit = fit_df[(fit_df["app"] == app) & (fit_df["scheduler_label"] == label)]
        lo, hi = published_range(app, g["scheduler"].iloc[0])
        rows.append({
            "app": app, "scheduler": label,
            f"seed method µs/iter (N = {n_max:,})": ci(at_max["whole_app_us_per_iter"]),
            f"steady µs/iter (N = {n_max:,})": ci(at_max["steady_us_per_iter"]),
            "per-iteration µs (fit over N)": _fit_text(fit, 1),
            "start-up ms (all runs)": ci(g["startup_ms"]),
            "teardown ms (all runs)": ci(g["teardown_ms"]),
            "seed published µs/iter": f"~{lo:g}" if lo == hi else f"~{lo:g}–{hi:g}",
            "_app": app, "_order": order.index(label),
        })
    table = pd.DataFrame(rows).sort_values(["_app", "_order"]).drop(columns=["_app", "_order"])
    return table.reset_index(drop=True)


def _fit_text(fit: pd.DataFrame, digits: int) -> str:
    if fit.empty:
        return "n/a (needs two N)"
    r = fit.iloc[0]
    if np.isfinite(r["per_iter_low"]) and np.isfinite(r["per_iter_high"]):
        return (f"{r['per_iter_us']:.{digits}f} [{r['per_iter_low']:.{digits}f}, "
                f"{r['per_iter_high']:.{digits}f}] (n = {int(r['n_runs'])})")
    return f"{r['per_iter_us']:.{digits}f} (n = {int(r['n_runs'])}, no CI)"


def headline(runs: pd.DataFrame) -> dict:
    """Numbers the report's prose quotes, all computed here from the runs."""
    n_max = int(runs["iterations"].max())
    at_max = runs[runs["iterations"] == n_max]
    means = at_max.groupby(["app", "scheduler_label"])[
        ["whole_app_us_per_iter", "steady_us_per_iter"]].mean()
    # Share of the seed-method figure that is start-up and teardown, per run at N max.
    fixed_share = (at_max["startup_ms"] + at_max["teardown_ms"]) / 1e3 / at_max["total_s"]

    def pick(app: str, column: str) -> float:
        key = (app, "Greedy")
        return float(means.loc[key, column]) if key in means.index else float("nan")

    return {
        "n_max": n_max,
        "n_runs": int(len(runs)),
        "n_cells": int(runs["cell_id"].nunique()),
        "repetitions": int(runs["repetition"].nunique()),
        "iterations": sorted(int(n) for n in runs["iterations"].unique()),
        "greedy_ops": pick("ops", "whole_app_us_per_iter"),
        "greedy_ping": pick("ping", "whole_app_us_per_iter"),
        "greedy_ops_steady": pick("ops", "steady_us_per_iter"),
        "greedy_ping_steady": pick("ping", "steady_us_per_iter"),
        "fixed_share": (float(fixed_share.min()), float(fixed_share.max())),
        "startup_ms": (float(runs["startup_ms"].min()), float(runs["startup_ms"].max())),
    }


def h3_verdict(runs: pd.DataFrame) -> dict:
    """H3 against the seed: Greedy's steady cost vs the published ~10 / ~17 µs, and the ordering.

    Reproduced when Greedy is within 0.5–2× of the seed's figure in both apps and
    the seed's ordering holds (Greedy below every EventBased configuration, the
    message costing more); partly reproduced when only the ordering holds.
    """
    n_max = runs["iterations"].max()
    steady = runs[runs["iterations"] == n_max].groupby(["app", "scheduler_label"])[
        "steady_us_per_iter"].mean()
    ratios = {}
    for app in ("ops", "ping"):
        if (app, "Greedy") in steady.index:
            ratios[app] = float(steady[(app, "Greedy")] / seeds.E3_PUBLISHED_US[(app, "greedy")][0])
    ordering = all(steady[(app, "Greedy")] < steady[(app, label)]
                   for (app, label) in steady.index if label != "Greedy" and (app, "Greedy") in steady.index)
    if ("ops", "Greedy") in steady.index and ("ping", "Greedy") in steady.index:
        ordering = ordering and steady[("ping", "Greedy")] > steady[("ops", "Greedy")]
    close = bool(ratios) and all(0.5 <= r <= 2 for r in ratios.values())
    verdict = "reproduced" if ordering and close else ("partly reproduced" if ordering
                                                       else "not reproduced")
    return {"verdict": verdict, "ratios": ratios, "ordering": ordering,
            "greedy_us": {app: float(steady[(app, "Greedy")]) for app in ratios}}
