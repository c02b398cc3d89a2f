"""E4, host tuning audit, jitter probe and platform floor: loading, tables and the H4 verdict.

H4: an isolated, tickless, RCU-offloaded, IRQ-free core has a tail (P99,
P99.9, max) close to its median; a default core does not. The floor (cyclictest and
cyclicdeadline at E2's period and priority, idle and under stress-ng) is what
the operating system alone achieves; E2's Holoscan target is compared with it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import pandas as pd

from rtstudy.data.io import Dataset, read_cells, read_json, set_aside_drift, stack, wide
from rtstudy.experiments.e4_host import published
from rtstudy.experiments.e4_host.plan import AUDIT
from rtstudy.inference import criteria, judge
from rtstudy.inference.stats import CI, MIN_RUNS, DriftCheck, drift_check, ratio_ci, two_group_ci
from rtstudy.inference.within import (quantile_bootstrappable, quantile_of_counts,
                                      within_run_variances_hist)

# The columns and Arrow types of samples.parquet, as app.py writes them (data/README.md).
SAMPLES = {"latency_ns": "int64", "count": "int64"}
LADDER = (50, 99, 99.9, 99.99)
# H4's metric (rtstudy.inference.criteria): a gap between two of the jitter probe's loops longer
# than this is an interruption (the tick, an IRQ, another task, the hypervisor): the loop takes
# about 10 ns.
INTERRUPTION_NS = criteria.value("h4_interruption_ns")
# H4's smallest effect that matters: the isolated CPU loses at least this share of its time
# less (1 % is 0.17 ms of a 60 FPS frame, a sixth of E2's late threshold).
MIN_DIFFERENCE = criteria.value("h4_min_difference")
# H4's verdict (protocol v1: its pre-registered metric): the isolated CPU's P99.99 / P50 over the
# housekeeping CPU's, cut by at least this much (1 − the ratio of the two, whole CI).
MIN_TAIL_CUT = criteria.value("h4_min_tail_cut")
TAIL_CLOSER = judge.Rule(judge.AT_LEAST, MIN_TAIL_CUT)

def hist_percentiles(latency_ns, count, qs=LADDER) -> dict[str, float]:
    """Percentiles, max, mean and std of a histogram (values in ns, with counts)."""
    v = np.asarray(latency_ns, dtype=float)
    c = np.asarray(count, dtype=float)
    order = np.argsort(v)
    v, c = v[order], c[order]
    n = c.sum()
    out = {"n": int(n)}
    if n == 0:
        return {**out, **{f"p{q:g}": np.nan for q in qs}, "max": np.nan, "mean": np.nan,
                "std": np.nan}
    for q in qs:
        out[f"p{q:g}"] = float(quantile_of_counts(v, c, q / 100)[0])
    mean = float((v * c).sum() / n)
    out.update(max=float(v[-1]), mean=mean,
               std=float(np.sqrt(((v - mean) ** 2 * c).sum() / max(n - 1, 1))))
    return out


def lost_share(latency_ns, count) -> float:
    """The share of the probe's time lost to interruptions: the time in loop-to-loop gaps longer
    than :data:`INTERRUPTION_NS` over all the time measured (0–1), what a real-time thread on
    that CPU would have lost. Interruptions are rare (about a thousand in 2 s of 10 ns loops),
    so they sit far beyond P99.99; this is where the tail shows."""
    v = np.asarray(latency_ns, dtype=float)
    c = np.asarray(count, dtype=float)
    total = float((v * c).sum())
    return float((v * c)[v > INTERRUPTION_NS].sum() / total) if total > 0 else float("nan")


class WithinRun(TypedDict):
    """A measurement's within-run sampling variances (:func:`within_run`); NaN where not defined."""

    p99_within_us2: float  # of its P99 (µs²)
    ratio_within: float  # of its P99.99 / P50 (the jitter probe's)
    lost_within_pct2: float  # of its lost share (%², the jitter probe's)


def within_run(latency_ns, count, jitter: bool) -> WithinRun:
    """The sampling variance of a measurement's headlines from its own histogram
    (:func:`rtstudy.inference.within.within_run_variance_hist`): ``p99_within_us2`` (of the P99 in
    µs), and for the jitter probe ``ratio_within`` (P99.99 / P50) and ``lost_within_pct2`` (of
    :func:`lost_share` in %); NaN where not defined, or where a quantile is too near the
    edge of the samples for its bootstrap (:func:`rtstudy.inference.within.quantile_bootstrappable`).
    """
    v = np.asarray(latency_ns, dtype=float)
    order = np.argsort(v)
    v, c = v[order], np.asarray(count, dtype=float)[order]
    nan = float("nan")
    out = WithinRun(p99_within_us2=nan, ratio_within=nan, lost_within_pct2=nan)
    n = int(c.sum())
    statistics = {}
    if quantile_bootstrappable(n, 0.99):
        statistics["p99_within_us2"] = lambda v, d: quantile_of_counts(v, d, 0.99) / 1e3
    if jitter and quantile_bootstrappable(n, 0.9999):
        statistics["ratio_within"] = (
            lambda v, d: quantile_of_counts(v, d, 0.9999) / quantile_of_counts(v, d, 0.5))
    if jitter and n:
        statistics["lost_within_pct2"] = (
            lambda v, d: (d * v)[:, v > INTERRUPTION_NS].sum(1) / (d * v).sum(1) * 100)
    # One set of replicates for all three: each drew the same ones (the same seed) alone.
    out.update(within_run_variances_hist(v, c, statistics))
    return out


# What load() returns (rtstudy.data.schema adds the columns every table has): per table, what
# a row is and each column's (kind, unit, meaning).
_MEASUREMENT = {
    "kind": ("str", "", "`jitter` (the jitter probe), `cyclictest` or `cyclicdeadline`"),
    "load": ("str", "", "`idle`, or `stress` (stress-ng CPU workers during the measurement)"),
    "cpu": ("float", "", "the CPU measured (the probe's, or cyclictest's pinned CPU); NaN for "
            "cyclicdeadline, which is not pinned"),
}
SCHEMA = {
    "histograms": ("one row per bucket of each measurement's histogram (the jitter probe's "
                   "deltas beyond its histogram: one row each); none for cyclicdeadline", {
        "latency_ns": ("int", "ns", "the bucket: the jitter probe's loop-to-loop delta, or "
                       "cyclictest's wake-up latency (1 µs buckets up to `histogram_us`)"),
        "count": ("int", "count", "the samples in the bucket"),
        **_MEASUREMENT}),
    "stats": ("one row per measurement", {
        **_MEASUREMENT,
        "n": ("int", "count", "the samples: the histogram's count; cyclicdeadline's cycles"),
        **{f"p{q:g}": ("float", "ns", f"the histogram's P{q:g} (NaN for cyclicdeadline, which "
                                      "keeps no histogram)") for q in LADDER},
        "max": ("float", "ns", "the histogram's largest sample (cyclicdeadline: its own "
                "maximum)"),
        "mean": ("float", "ns", "the histogram's mean (cyclicdeadline: its own average)"),
        "std": ("float", "ns", "the histogram's standard deviation (NaN for cyclicdeadline)"),
        "lost_share": ("float", "fraction", "the jitter probe's share of the time in "
                       f"loop-to-loop gaps over {INTERRUPTION_NS} ns (what a real-time thread "
                       "on that CPU would lose); NaN for the others"),
        # Each headline's sampling variance from the measurement's own histogram
        # (within_run_variance_hist): the within-run part of the variation between runs.
        "p99_within_us2": ("float", "µs²", "of the P99 in µs (NaN without a histogram)"),
        "ratio_within": ("float", "", "of P99.99 / P50 (NaN but for the jitter probe)"),
        "lost_within_pct2": ("float", "%²", "of `lost_share` in % (NaN but for the jitter probe)"),
        "summary": ("str", "", "the cell's summary (`cell.json`): the tool's own figures, as "
                    "JSON"),
    }),
}
TABLES = tuple(SCHEMA)


def load(directory: Path, cfg: dict) -> Dataset:
    """Histograms and one row of statistics per measurement (:data:`SCHEMA`; the percentiles
    by :func:`hist_percentiles`, ``lost_share`` by :func:`lost_share`); the recorded audit
    as ``extra["audit"]`` (:func:`read_audit`).
    """
    cells, missing = read_cells(directory, SAMPLES)
    hists, rows = [], []
    for cell in cells:
        # int64 and float even where a tool recorded nothing (empty float64 columns) or no CPU:
        # every table's column has one type.
        cfg, s = cell.config, cell.samples().astype({"latency_ns": "int64", "count": "int64"})
        cpu = cfg.get("cpu")
        base = cell.columns(kind=cfg["kind"], load=cfg["load"],
                            cpu=np.nan if cpu is None else float(cpu))
        hists.append((s, base))
        stats = hist_percentiles(s["latency_ns"], s["count"])
        stats.update(within_run(s["latency_ns"], s["count"], cfg["kind"] == "jitter"))
        if cfg["kind"] == "jitter":
            stats["lost_share"] = lost_share(s["latency_ns"], s["count"])
        summary = cell.sidecar["summary"]
        if cfg["kind"] != "jitter" and not summary.get("has_histogram"):
            # cyclicdeadline reports only min / avg / max (µs): no percentiles, no std.
            stats.update(n=int(summary["cycles"]), max=summary["max_us"] * 1e3,
                         mean=summary["avg_us"] * 1e3)
        rows.append({**base, **stats, "summary": json.dumps(summary)})
    h = stack(hists)
    tables = {"histograms": h, "stats": pd.DataFrame(rows)}
    return Dataset(Path(directory), set_aside_drift(tables, "stats"), missing,
                   {"audit": read_audit(directory)})


class AuditRecord(TypedDict):
    """The host audit recorded beside the data (plan.after_sweep; :func:`read_audit`)."""

    summary: dict[str, Any]  # machine.audit.AuditSummary (empty where none was recorded)
    items: list[dict]  # each AuditItem
    osnoise: dict[str, Any]  # plan.Osnoise (empty where not recorded)


class H4Verdict(TypedDict, total=False):
    """H4 (:func:`h4_verdict`)."""

    verdict: judge.Verdict
    why: str
    ratios: dict[str, float]  # "CPU n, load" → P99.99 / P50, mean over repetitions
    loads: dict[str, dict]  # load → the lost share's difference (housekeeping − isolated)
    tails: dict[str, dict]  # load → the P99.99 / P50 ratio (isolated over housekeeping)
    runs: int
    above: list[str]  # the loads whose cut is shown
    below: list[str]  # refuted
    judged: list[str]  # the loads judged like with like
    not_judged: dict[str, str]  # load → why not
    parts: list[judge.Part]
    min_tail_cut: float
    min_difference: float


def read_audit(directory: Path) -> AuditRecord:
    """The recorded audit: ``{"summary": {...}, "items": [...], "osnoise": {...}}`` (empty if none)."""
    path = Path(directory) / AUDIT
    return read_json(path) if path.exists() else {"summary": {}, "items": [], "osnoise": {}}


def floor_table(stats: pd.DataFrame) -> pd.DataFrame:
    """The rt-tests floor, one row per tool and load, in µs with N."""
    rows = []
    for (kind, load), g in stats[stats["kind"] != "jitter"].groupby(["kind", "load"]):
        r = g.mean(numeric_only=True)
        rows.append({"tool": kind, "load": load, "N (cycles)": int(g["n"].sum()),
                     "mean µs": r["mean"] / 1e3, "P50 µs": r["p50"] / 1e3,
                     "P99 µs": r["p99"] / 1e3, "P99.9 µs": r["p99.9"] / 1e3,
                     "max µs": g["max"].max() / 1e3, "std µs": r["std"] / 1e3})
    # NaN marks what a tool does not report (cyclicdeadline has no histogram).
    return pd.DataFrame(rows).round(1).astype(object).fillna("n/a")


def ladder_table(stats: pd.DataFrame) -> pd.DataFrame:
    """The jitter probe's percentile ladder per CPU and load (ns), beside the published ones."""
    rows = []
    for _, r in stats[stats["kind"] == "jitter"].sort_values(["load", "cpu"]).iterrows():
        rows.append({"measurement": f"CPU {int(r['cpu'])}, {r['load']}", "N": f"{r['n']:,}",
                     **{k.upper(): f"{r[k]:,.0f}" for k in ("p50", "p99", "p99.9", "p99.99", "max")}})
    for name, v in published.LADDER_NS.items():
        rows.append({"measurement": f"published, {name} core", "N": "not stated",
                     **{k.upper(): f"{v[k]:,.1f}" if k in v else "—"
                        for k in ("p50", "p99", "p99.9", "p99.99", "max")}})
    return pd.DataFrame(rows)


def like_with_like(load: str, probe_realtime: bool) -> bool:
    """Whether the isolated and the housekeeping CPU are compared like with like under ``load``.

    Idle, always. Under stress-ng, only when the probe outranks the load (a real-time
    probe): stress-ng is not pinned, and a shield (or boot isolation) keeps it off the
    isolated CPU, so a normal-policy probe on the housekeeping CPU shares its CPU with
    the load (it loses 6/7 of its time to 6 workers) while the isolated one does not —
    a comparison of where the load ran, not of how quiet the CPUs are.
    """
    return load == "idle" or probe_realtime


def h4_verdict(record: AuditRecord, stats: pd.DataFrame, ci: CI, probe_realtime: bool = False
               ) -> H4Verdict:
    """H4: an isolated (or shielded) CPU's tail is closer to its median than a housekeeping
    CPU's, over runs, judged like with like.

    The quantity is its pre-registered metric (protocol v1), the jitter probe's P99.99 / P50
    per repetition (each repetition one run). For each load measured, the isolated CPU's over
    the housekeeping CPU's is a ratio with its CI over repetitions (:func:`ratio_ci`); only the
    loads :func:`like_with_like` judges comparable count (``judged``; the others in
    ``not_judged`` with the reason), each a part: the cut, 1 − that ratio, against
    :data:`MIN_TAIL_CUT` (:func:`h4_combine`). Beside it, not in it, the share of time each CPU
    lost to gaps over :data:`INTERRUPTION_NS` (``loads``: the housekeeping minus isolated
    difference with its CI). Not testable here without an isolated CPU measured beside a
    housekeeping one or a load measured like with like; not settled where a CI straddles the
    minimum (or below :data:`rtstudy.inference.stats.MIN_RUNS` repetitions). ``ratios`` gives each
    CPU and load's P99.99 / P50 (mean over repetitions).

    Parameters
    ----------
    probe_realtime : bool
        Whether the probe ran at a real-time priority (above stress-ng's normal policy).
    """
    jitter = stats[stats["kind"] == "jitter"] if len(stats) else stats
    jitter = jitter[jitter["p50"] > 0] if len(jitter) else jitter
    ratios = {}
    if len(jitter):
        for (cpu, load), g in jitter.groupby(["cpu", "load"]):
            ratios[f"CPU {int(cpu)}, {load}"] = float((g["p99.99"] / g["p50"]).mean())
    isolated = set(record.get("summary", {}).get("isolated_cpus") or [])
    measured = set(int(c) for c in jitter["cpu"].dropna()) if len(jitter) else set()
    if not isolated & measured or not measured - isolated:
        return {"verdict": judge.NOT_TESTABLE, "why": "no isolated CPU was measured beside a "
                "housekeeping one on this host", "ratios": ratios, "parts": []}
    loads, tails, parts, not_judged = {}, {}, [], {}
    for load, g in jitter.groupby("load", sort=False):
        loads[load], tails[load] = _isolated_vs_housekeeping(g, isolated, ci)
        if not like_with_like(load, probe_realtime):
            not_judged[load] = ("stress-ng ran on the housekeeping CPU only, and the probe "
                                "(normal policy) shared that CPU with it")
            continue
        t = tails[load]
        parts.append(judge.Part(load, TAIL_CLOSER, 1 - t["ratio"], 1 - t["high"], 1 - t["low"],
                                int(t["runs"])))
    judged = [p.name for p in parts]
    out = {"ratios": ratios, "loads": loads, "tails": tails,
           "runs": min((p.runs for p in parts), default=0),
           "above": [p.name for p in parts if p.state == judge.SHOWN],
           "below": [p.name for p in parts if p.state == judge.REFUTED], "judged": judged,
           "not_judged": not_judged, "parts": parts, "min_tail_cut": MIN_TAIL_CUT,
           "min_difference": MIN_DIFFERENCE}
    if not judged:
        return {**out, "verdict": judge.NOT_TESTABLE, "why": "no load was measured like with like"}
    verdict, why = h4_combine(parts)
    if out["runs"] < MIN_RUNS:
        why = f"{out['runs']} repetition(s) per CPU, fewer than {MIN_RUNS}: no CI"
    return {**out, "verdict": verdict, **({"why": why} if why else {})}


def _isolated_vs_housekeeping(g: pd.DataFrame, isolated: set, ci: CI) -> tuple[dict, dict]:
    """One load's jitter probe runs ``g``, the isolated CPUs' against the others': the lost
    share's difference (housekeeping minus isolated, its CI) and the P99.99 / P50 ratio
    (isolated over housekeeping, its CI), each with both means and the runs."""
    on_iso = g["cpu"].isin(isolated)
    iso, hk = g.loc[on_iso, "lost_share"], g.loc[~on_iso, "lost_share"]
    diff = two_group_ci(iso, hk, lambda a, b: b.mean() - a.mean(), ci)
    tail = g["p99.99"] / g["p50"]
    ratio = ratio_ci(tail[~on_iso], tail[on_iso], ci)
    return ({"isolated": float(iso.mean()), "housekeeping": float(hk.mean()),
             "difference": diff.value, "low": diff.low, "high": diff.high, "runs": diff.n},
            {"isolated": float(tail[on_iso].mean()), "housekeeping": float(tail[~on_iso].mean()),
             "ratio": ratio.value, "low": ratio.low, "high": ratio.high, "runs": ratio.n})


def h4_combine(parts: list[judge.Part]) -> tuple[judge.Verdict, str]:
    """H4's verdict from each judged load's tail cut (:func:`h4_verdict`): reproduced when
    every one is at least :data:`MIN_TAIL_CUT` (``shown``), not reproduced when every one is
    below it (``refuted``), partly when some each; else not settled."""
    if not all(p.decided for p in parts):
        return judge.NOT_SETTLED, judge.unsettled_why(parts)
    shown = [p.name for p in parts if p.state == judge.SHOWN]
    if len(shown) == len(parts):
        return judge.Verdict.REPRODUCED, ""
    if not shown:
        return judge.Verdict.NOT_REPRODUCED, ""
    return judge.Verdict.PARTLY, "tail not closer " + ", ".join(p.name for p in parts
                                                               if p.name not in shown)


def audit_table(record: dict) -> pd.DataFrame:
    """The recorded audit as a table: status, item, evidence, remedy."""
    return pd.DataFrame([{"status": i["status"], "item": i["name"], "evidence": i["evidence"],
                          "remedy": i.get("remedy", "")} for i in record.get("items", [])])


@dataclass(frozen=True)
class E4Headline:
    """What E4's report words and summary row read (``h`` in ``report.md.j2``)."""

    counts: dict[str, int]  # the audit's items per status (PASS, WARN, …), those with any
    isolated: list[int]  # the CPUs isolated on the boot line
    tuned: bool  # whether the host was tuned when audited
    shielded: list[int]  # the CPUs of the runtime shield
    # The jitter probe's worst CPU and load by P99 (ns): ``p99``, ``p50``, ``cpu``, ``load``,
    # ``max_us`` (the largest latency of any, µs), ``loops``, ``median_p50`` (ns); None
    # without probe runs.
    worst: dict | None
    osnoise: dict  # the audit's osnoise run: ``available`` (None: not recorded), ``why``, …
    warn: list[str]  # the audit items that warned or failed
    verdict: H4Verdict  # H4 (:func:`h4_verdict`)


def headline(record: dict, stats: pd.DataFrame, ci: CI,
             probe_realtime: bool = False) -> E4Headline:
    """The numbers E4's prose quotes, computed here (``probe_realtime``: :func:`h4_verdict`)."""
    summary = record.get("summary", {})
    jitter = stats[stats["kind"] == "jitter"] if len(stats) else stats
    worst = None
    if len(jitter):
        w = jitter.loc[jitter["p99"].idxmax()]
        worst = {"p99": float(w["p99"]), "p50": float(w["p50"]), "cpu": int(w["cpu"]),
                 "load": w["load"], "max_us": float(jitter["max"].max()) / 1000,
                 "loops": int(jitter["n"].sum()), "median_p50": float(jitter["p50"].median())}
    return E4Headline(
        counts={s: n for s, n in summary.get("counts", {}).items() if n},
        isolated=summary.get("isolated_cpus") or [], tuned=bool(summary.get("tuned")),
        shielded=summary.get("shielded_cpus") or [],
        # An audit recorded without osnoise (or none at all) says so, rather than failing.
        worst=worst, osnoise={"available": None, "why": "", **record.get("osnoise", {})},
        warn=[i["name"] for i in record.get("items", []) if i["status"] in ("WARN", "FAIL")],
        verdict=h4_verdict(record, stats, ci, probe_realtime))


# What the drift check compares (stats.drift_check): a name and its unit. H4's metric: P99.99
# moves in whole ns steps of a quantized histogram (40, 40, 40 then 34), a step it cannot judge.
DRIFT_QUANTITY = ("time lost to interruptions", "fraction")


def drift(ds: Dataset) -> DriftCheck | None:
    """The sweep's drift check on the share of time lost to interruptions (H4's metric) of its
    condition; None without one."""
    return drift_check(ds.tables["stats"], ds.tables["drift"], "lost_share")


# The table that DVC plots (dvc.yaml `plots:`): one row per repetition, one column per CPU and
# load, H4's quantity.
PLOT_FILE = "e4_lost_share.csv"


def plot_table(ds: Dataset) -> pd.DataFrame | None:
    """The jitter probe's share of time lost to interruptions (%) per repetition."""
    stats = ds.tables["stats"]
    jitter = stats[stats["kind"] == "jitter"] if len(stats) else stats
    if not len(jitter):
        return None
    series = "cpu" + jitter["cpu"].astype(int).astype(str) + "_" + jitter["load"]
    return wide(jitter.assign(lost_pct=jitter["lost_share"] * 100), ["repetition"], series,
                "lost_pct")
