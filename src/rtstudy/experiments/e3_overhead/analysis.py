"""E3, Holoscan scheduler overhead: loading, the fits over N and the H3 verdict.

H3: Holoscan's scheduling cost per iteration is as published (``published.py``) for
Greedy and EventBased, with and without a Tx→Rx message. The seed divides
the whole app's wall time by N, which folds start-up into the figure; here each
cell times several N, so a straight line ``total = start-up + N × per-iteration``
separates the two, and compute time stamps give the per-iteration cost directly.

Holoscan 5.0 has no choice of scheduler: its cells (``app5.py``) run 5.0's executor on
one lane (one thread running both operators in turn, as Greedy does) or one lane per
operator (a thread each, as EventBased). Each is compared with the published figure of
its 4.x counterpart (:func:`counterpart`), and H3 is judged on the single-threaded one.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import numpy as np
import pandas as pd

from rtstudy.data.io import Dataset, read_cells, set_aside_drift, wide
from rtstudy.experiments.e3_overhead import published
from rtstudy.inference import criteria, judge
from rtstudy.inference.fits import fit_at, linear_fit
from rtstudy.inference.stats import CI, MIN_RUNS, DriftCheck, drift_check, over_runs, percentiles
from rtstudy.inference.within import block_mean_variance

# The columns and Arrow types of samples.parquet, as app.py writes them (data/README.md).
SAMPLES = {"run": "int64", "iterations": "int64", "op": "string", "tick": "int64", "t_ns": "int64"}
LEAD_OP = {"ops": "op1", "ping": "tx"}
# H3's verdict (rtstudy.inference.criteria): the seed's method within this band around the published
# figure (CLOSE_RATIO[0] × its low end to CLOSE_RATIO[1] × its high end), CI and all.
CLOSE_RATIO = criteria.value("h3_close_band")


# The single-threaded configuration of each SDK: the one H3 reads the seed's Greedy figure
# against (Holoscan 5.0's executor with one lane stands in for Greedy).
SINGLE_THREADED = ("Greedy", "Executor ×1")
# The configurations H3 reads each published scheduler's figure against: the seed ran
# EventBased with `--workers 1`; on Holoscan 5.0, a lane per operator stands in for it.
JUDGED = {"greedy": SINGLE_THREADED, "event_based": ("EventBased ×1", "Executor ×2")}


def scheduler_label(scheduler: str, workers) -> str:
    """``Greedy``, ``EventBased ×N`` (worker threads) or, on Holoscan 5.0, ``Executor ×N``
    (execution lanes): how tables and figures name a configuration."""
    if scheduler == "executor":
        return f"Executor ×{int(workers)}"
    if scheduler == "greedy" or workers is None or (isinstance(workers, float) and np.isnan(workers)):
        return "Greedy"
    return f"EventBased ×{int(workers)}"


# What load() returns (rtstudy.data.schema adds the columns every table has): per table, what
# a row is and each column's (kind, unit, meaning).
SCHEMA = {
    "runs": ("one row per timed app run (one per N) of each cell", {
        "app": ("str", "", "`ops` (two operators without ports) or `ping` (tx → rx)"),
        "scheduler": ("str", "", "`greedy`, `event_based` or, on Holoscan 5.0, `executor`"),
        "workers": ("float", "count", "EventBased's worker threads or the executor's lanes; "
                    "NaN for Greedy"),
        "scheduler_label": ("str", "", "how tables name the scheduler: `Greedy`, "
                            "`EventBased ×N`, `Executor ×N`"),
        "order_index": ("int", "", "the cell's place in the sweep's seeded run order"),
        "iterations": ("int", "count", "N: the run's iterations"),
        "total_s": ("float", "s", "the whole app: constructor, compose, run and teardown"),
        "whole_app_us_per_iter": ("float", "µs", "`total_s` / N (the seed's figure)"),
        "startup_ms": ("float", "ms", "from before the constructor to the first compute"),
        "teardown_ms": ("float", "ms", "from the last compute's start to the end of `run()`"),
        "steady_us_per_iter": ("float", "µs", "from the lead operator's first compute start to "
                               "its last, over N − 1 (NaN with one compute)"),
        "tick_p50_us": ("float", "µs", "the median interval between the lead operator's "
                        "successive compute starts (`op1`, or `tx`)"),
        "tick_p99_us": ("float", "µs", "their P99"),
        "tick_n": ("int", "count", "those intervals"),
        "steady_within_us2": ("float", "µs²", "the sampling variance of `steady_us_per_iter` "
                              "from the run's own intervals (a block bootstrap of their mean): "
                              "its within-run part"),
    }),
}
TABLES = tuple(SCHEMA)


def load(directory: Path, cfg: dict) -> Dataset:
    """One row per timed app run of the plan's completed cells (``tables["runs"]``,
    :data:`SCHEMA`): its configuration, its timings and, from the compute stamps of the
    lead operator, the per-iteration interval's median and P99 with its N.
    """
    cells, missing = read_cells(directory, SAMPLES)
    rows = []
    for cell in cells:
        cfg, samples = cell.config, cell.samples()
        lead = samples[samples["op"] == LEAD_OP[cfg["app"]]]
        base = cell.columns(profile=cell.sidecar["profile"], app=cfg["app"],
                            scheduler=cfg["scheduler"],
                            # NaN for Greedy: one column type, with or without Greedy cells.
                            workers=np.nan if cfg["workers"] is None else float(cfg["workers"]),
                            scheduler_label=scheduler_label(cfg["scheduler"], cfg["workers"]),
                            order_index=cell.sidecar["order_index"])
        for run in cell.sidecar["summary"]["runs"]:
            stamps = lead.loc[lead["run"] == run["run"], "t_ns"].to_numpy()
            gaps_us = np.diff(stamps) / 1e3
            p = percentiles(gaps_us, (50, 99))
            rows.append({
                **base,
                "iterations": run["iterations"], "total_s": run["total_s"],
                "whole_app_us_per_iter": run["whole_app_us_per_iter"],
                "startup_ms": run["startup_ms"], "teardown_ms": run["teardown_ms"],
                "steady_us_per_iter": run["steady_us_per_iter"],
                "tick_p50_us": p["p50"], "tick_p99_us": p["p99"], "tick_n": p["n"],
                "steady_within_us2": block_mean_variance(gaps_us),
            })
    return Dataset(Path(directory), set_aside_drift({"runs": pd.DataFrame(rows)}, "runs"), missing)


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


def counterpart(scheduler: str, workers) -> str:
    """The 4.x scheduler whose published figure a configuration is read against: itself on
    4.x; on 5.0, Greedy for the one-lane executor, EventBased for a lane per operator."""
    if scheduler == "executor":
        return "greedy" if int(workers) == 1 else "event_based"
    return scheduler


def single_threaded(runs: pd.DataFrame) -> str:
    """The label of ``runs``' single-threaded configuration (:data:`SINGLE_THREADED`)."""
    seen = set(runs["scheduler_label"])
    return next((label for label in SINGLE_THREADED if label in seen), SINGLE_THREADED[0])


def published_range(app: str, scheduler: str, workers=None) -> tuple[float, float]:
    """The published cost (low, high) in µs of ``app`` under ``scheduler`` (its 4.x
    :func:`counterpart`)."""
    return published.US_PER_ITERATION[(app, counterpart(scheduler, workers))]


def summary_table(runs: pd.DataFrame, fit_df: pd.DataFrame, ci: CI) -> pd.DataFrame:
    """The E3 table, one row per app × scheduler, every cell "value [CI] (n = ...)".

    Columns: the seed's method and the steady in-run cost at the largest N
    (mean over repetitions), the slope of the fit over N, the start-up
    (constructor to first compute) and teardown (last compute to the end of
    ``run()``) over every run, and the seed's published figure.
    """
    n_max = runs["iterations"].max()
    order = label_order(runs)

    def mean(values, digits=1):
        est = over_runs(values, ci)
        return est.format(digits) if np.isfinite(est.low) else \
            ", ".join(f"{v:.{digits}f}" for v in values) + " (no CI)"

    rows = []
    for (app, label), g in runs.groupby(["app", "scheduler_label"], sort=False):
        at_max = g[g["iterations"] == n_max]
        fit = fit_df[(fit_df["app"] == app) & (fit_df["scheduler_label"] == label)]
        lo, hi = published_range(app, g["scheduler"].iloc[0], g["workers"].iloc[0])
        rows.append({
            "app": app, "scheduler": label,
            f"seed method µs/iter (N = {n_max:,})": mean(at_max["whole_app_us_per_iter"]),
            f"steady µs/iter (N = {n_max:,})": mean(at_max["steady_us_per_iter"]),
            "per-iteration µs (fit over N)": _fit_text(fit, 1),
            "start-up ms (all runs)": mean(g["startup_ms"]),
            "teardown ms (all runs)": mean(g["teardown_ms"]),
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


@dataclass(frozen=True)
class E3Headline:
    """What E3's report words and summary row read (``h`` in ``report.md.j2``); the
    ``greedy_*`` costs are the single-threaded configuration's mean at N max."""

    n_max: int  # the largest N measured (iterations)
    n_runs: int  # the timed app runs (one per N of each cell)
    n_cells: int  # the cells measured
    repetitions: int  # the repetitions of each configuration
    iterations: list[int]  # every N measured (iterations), ascending
    greedy_ops: float  # ops' whole-app cost, the seed's method (µs per iteration)
    greedy_ping: float  # ping's whole-app cost, the seed's method (µs per iteration)
    greedy_ops_steady: float  # ops' steady cost, start-up left out (µs per iteration)
    greedy_ping_steady: float  # ping's steady cost (µs per iteration)
    # The share of the seed's figure that is start-up and teardown at N max: (min, max) over
    # runs (fraction).
    fixed_share: tuple[float, float]
    startup_ms: tuple[float, float]  # start-up: (min, max) over runs (ms)
    published_greedy_us: dict[str, float]  # app → the published Greedy figure (µs per iteration)
    # What the greedy_* figures were read from: Greedy, or 5.0's one-lane executor.
    single_threaded: str
    verdict: H3Verdict  # H3 (:func:`h3_verdict`)
    close_ratio: tuple[float, float]  # H3's band around the published figure (×)


def headline(runs: pd.DataFrame, ci: CI) -> E3Headline:
    """Numbers the report's prose quotes, all computed here from the runs."""
    n_max = int(runs["iterations"].max())
    at_max = runs[runs["iterations"] == n_max]
    means = at_max.groupby(["app", "scheduler_label"])[
        ["whole_app_us_per_iter", "steady_us_per_iter"]].mean()
    # Share of the seed-method figure that is start-up and teardown, per run at N max.
    fixed_share = (at_max["startup_ms"] + at_max["teardown_ms"]) / 1000 / at_max["total_s"]
    single = single_threaded(runs)

    def pick(app: str, column: str) -> float:
        key = (app, single)
        return float(means.loc[key, column]) if key in means.index else float("nan")

    return E3Headline(
        n_max=n_max,
        n_runs=int(len(runs)),
        n_cells=int(runs["cell_id"].nunique()),
        repetitions=int(runs["repetition"].nunique()),
        iterations=sorted(int(n) for n in runs["iterations"].unique()),
        greedy_ops=pick("ops", "whole_app_us_per_iter"),
        greedy_ping=pick("ping", "whole_app_us_per_iter"),
        greedy_ops_steady=pick("ops", "steady_us_per_iter"),
        greedy_ping_steady=pick("ping", "steady_us_per_iter"),
        fixed_share=(float(fixed_share.min()), float(fixed_share.max())),
        startup_ms=(float(runs["startup_ms"].min()), float(runs["startup_ms"].max())),
        published_greedy_us={app: published.US_PER_ITERATION[(app, "greedy")][0]
                             for app in ("ops", "ping")},
        single_threaded=single,
        verdict=h3_verdict(runs, ci),
        close_ratio=CLOSE_RATIO,
    )


class SeedMethod(TypedDict):
    """A configuration's whole-app µs per iteration at the source's N (:func:`seed_method_at_seed_n`)."""

    value: float
    low: float
    high: float
    how: str  # "measured", "extrapolated", "one N only" or "not measured"
    runs: int  # repetitions


class H3Verdict(TypedDict, total=False):
    """H3 like with like (:func:`h3_verdict`)."""

    verdict: judge.Verdict
    why: str
    ordering: bool  # the published ordering held (on the steady in-run cost)
    parts: list[dict]  # each judged configuration: its SeedMethod, app, scheduler, band, word
    judged: list[judge.Part]
    runs: int  # the fewest repetitions of a configuration
    close_ratio: tuple[float, float]
    n: int  # the source's N
    greedy_us: dict[str, float]  # app → the single-threaded steady cost (µs per iteration)


def seed_method_at_seed_n(runs: pd.DataFrame, app: str, ci: CI, label: str | None = None
                          ) -> SeedMethod:
    """A configuration's whole-app µs per iteration at the source's N, like with like.

    ``label`` is the scheduler label (default: the single-threaded configuration,
    Greedy or 5.0's one-lane executor). Measured where the sweep ran that N (mean
    over repetitions, t-interval over them), else extrapolated from the
    least-squares line of whole-app time against N (mean response at the source's N,
    t-based CI; each repetition is one run).
    """
    g = runs[(runs["app"] == app) & (runs["scheduler_label"] == (label or single_threaded(runs)))]
    n = published.N
    if g.empty:
        return {"value": np.nan, "low": np.nan, "high": np.nan, "how": "not measured", "runs": 0}
    reps = int(g["repetition"].nunique())
    at = g[g["iterations"] == n]
    if len(at):
        est = over_runs(at["whole_app_us_per_iter"], ci)
        return {"value": est.value, "low": est.low, "high": est.high, "how": "measured",
                "runs": reps}
    if g["iterations"].nunique() < 2:
        return {"value": np.nan, "low": np.nan, "high": np.nan, "how": "one N only", "runs": reps}
    est = fit_at(g["iterations"], g["total_s"], n, ci.confidence)
    scale = 1e6 / n
    low, high = (est.low * scale, est.high * scale) if reps >= MIN_RUNS else (np.nan, np.nan)
    return {"value": est.value * scale, "low": low, "high": high, "how": "extrapolated",
            "runs": reps}


def closeness(low: float, high: float, band: tuple[float, float]) -> str:
    """``close`` when the CI [low, high] lies within ``band``, ``far`` when wholly outside it,
    else (or without a CI) ``not settled`` (:meth:`rtstudy.inference.judge.Rule.state`)."""
    return judge.Rule(judge.BAND, band).state(low, high)


def h3_verdict(runs: pd.DataFrame, ci: CI) -> H3Verdict:
    """H3 like with like, on both schedulers: the seed's method at the seed's N against its
    published figure, and the ordering.

    For Greedy and for EventBased ×1 (the published `--workers 1`; on 5.0 one lane and
    a lane per operator, :data:`JUDGED`), in both apps, the whole-app µs per
    iteration at the source's N (:func:`seed_method_at_seed_n`) is *close* when its
    whole CI lies within :data:`CLOSE_RATIO` × the published figure (its low end times
    the first, its high end times the second) and *far* when wholly outside
    (:func:`closeness`). The ordering (Greedy below every EventBased configuration,
    on 5.0 one lane below a lane per operator, the message costing more) is judged on
    the steady in-run cost, our own metric. The verdict is :func:`h3_combine`'s: reproduced,
    differs or not settled (also below :data:`rtstudy.inference.stats.MIN_RUNS` repetitions); not
    testable here when a judged configuration was not measured.
    """
    n_max = runs["iterations"].max()
    steady = runs[runs["iterations"] == n_max].groupby(["app", "scheduler_label"])[
        "steady_us_per_iter"].mean()
    single = single_threaded(runs)
    seen = set(runs["scheduler_label"])
    parts = []
    for scheduler, labels in JUDGED.items():
        label = next((x for x in labels if x in seen), None)
        for app in ("ops", "ping"):
            lo, hi = published.US_PER_ITERATION[(app, scheduler)]
            band = (CLOSE_RATIO[0] * lo, CLOSE_RATIO[1] * hi)
            seed = (seed_method_at_seed_n(runs, app, ci, label) if label else
                    {"value": np.nan, "low": np.nan, "high": np.nan, "how": "not measured",
                     "runs": 0})
            parts.append({**seed, "app": app, "scheduler": label or labels[0],
                          "published": (lo, hi), "band": band,
                          "state": closeness(seed["low"], seed["high"], band)})
    ordering = all(steady[(app, single)] < steady[(app, label)] for (app, label) in steady.index
                   if label != single and (app, single) in steady.index)
    if ("ops", single) in steady.index and ("ping", single) in steady.index:
        ordering = ordering and steady[("ping", single)] > steady[("ops", single)]
    reps = int(runs.groupby(["app", "scheduler_label"])["repetition"].nunique().min())
    out = {"ordering": ordering, "parts": parts, "runs": reps, "close_ratio": CLOSE_RATIO,
           "n": published.N,
           "greedy_us": {app: float(steady[(app, single)]) for app in ("ops", "ping")
                         if (app, single) in steady.index}}
    unmeasured = [f"{p['app']} {p['scheduler']}" for p in parts if p["how"] == "not measured"]
    if unmeasured:
        return {**out, "verdict": judge.NOT_TESTABLE, "judged": [],
                "why": f"{', '.join(unmeasured)} not measured"}
    judged = [judge.Part(f"{p['app']} {p['scheduler']}", judge.Rule(judge.BAND, p["band"]),
                         p["value"], p["low"], p["high"], int(p["runs"])) for p in parts]
    verdict, why = h3_combine(judged, ordering)
    if reps < MIN_RUNS:
        why = f"{reps} repetition(s), fewer than {MIN_RUNS}: no CI"
    return {**out, "verdict": verdict, "judged": judged, **({"why": why} if why else {})}


def h3_combine(parts: list[judge.Part],
               ordering: bool = True) -> tuple[judge.Verdict, str]:
    """H3's verdict from each judged cost against its band (:func:`h3_verdict`): reproduced
    when every one is close and the published ordering holds; *differs* when any lies wholly
    outside its band (the why says by how much) or, all close, the ordering does not hold;
    else not settled (a CI across a band's edge)."""
    far = [p for p in parts if p.state == judge.FAR]
    if far:
        return judge.Verdict.DIFFERS, "; ".join(
            f"{p.name} {p.value / (p.rule.threshold[1] / CLOSE_RATIO[1]):.1f}× the published "
            f"high end" if p.value > p.rule.threshold[1] else
            f"{p.name} {p.value / (p.rule.threshold[0] / CLOSE_RATIO[0]):.2f}× the published "
            f"low end" for p in far)
    if not all(p.decided for p in parts):
        return judge.NOT_SETTLED, judge.unsettled_why(parts)
    return (judge.Verdict.REPRODUCED, "") if ordering else (judge.Verdict.DIFFERS, "the ordering differs")


# What the drift check compares (stats.drift_check): a name and its unit.
DRIFT_QUANTITY = ("steady cost per iteration at the largest N", "µs")


def drift(ds: Dataset) -> DriftCheck | None:
    """The sweep's drift check on the steady cost per iteration at the largest N (µs)."""
    runs, checks = ds.tables["runs"], ds.tables["drift"]
    if not len(runs) or not len(checks):
        return None
    n = runs["iterations"].max()
    return drift_check(runs[runs["iterations"] == n], checks[checks["iterations"] == n],
                       "steady_us_per_iter")


# The table behind E3's fit figure that DVC plots (dvc.yaml `plots:`): one row per N and
# repetition, one column per app and scheduler.
PLOT_FILE = "e3_whole_app.csv"


def plot_table(ds: Dataset) -> pd.DataFrame | None:
    """Whole-app time (s) per timed run against N, the data of the per-iteration fit."""
    runs = ds.tables["runs"]
    if not len(runs):
        return None
    short = (runs["scheduler_label"].str.replace("EventBased ×", "ebs")
             .str.replace("Executor ×", "executor").str.lower())
    return wide(runs, ["iterations", "repetition"], runs["app"] + "_" + short, "total_s")
