"""E4, host tuning audit, jitter probe and platform floor: the sweep plan and the analysis.

H4 (DESIGN.md §1): an isolated, tickless, RCU-offloaded, IRQ-free core has a
tail (P99, P99.9, max) close to its median; a default core does not (seed 004:
P99 1248 ns → 91 ns, max 62 µs → 0.4 µs). The floor (cyclictest and
cyclicdeadline at E2's period and priority, idle and under stress-ng) is what
the operating system alone achieves; E2's Holoscan target is compared with it.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from rtstudy import audit, data
from rtstudy.harness import Cell

EXPERIMENT = "e4_host"
LADDER = (50, 99, 99.9, 99.99)


def plan(cfg: dict, fp: dict, e2_cfg: dict) -> list[Cell]:
    """Jitter probe per CPU × load, and the rt-tests floor at E2's period × load."""
    cpus = fp["cpu"]["online"] if cfg["jitter_cpus"] == "all" else cfg["jitter_cpus"]
    stress_workers = int(round(cfg["stress_load_factor"] * fp["cpu"]["count"]))
    interval_us = round(1e6 / e2_cfg["fps"])
    cells = []
    for rep in range(cfg["repetitions"]):
        for load in cfg["loads"]:
            common = {"load": load, "stress_workers": stress_workers}
            for cpu in cpus:
                config = {**common, "kind": "jitter", "cpu": cpu, "seconds": cfg["jitter_seconds"],
                          "fifo_priority": cfg["jitter_fifo_priority"]}
                cells.append(Cell(EXPERIMENT, "e4_floor", f"jitter-cpu{cpu}-{load}", config, rep,
                                  cfg["jitter_seconds"] + cfg["timeout_margin_s"]))
            for tool in cfg["floor_tools"]:
                config = {**common, "kind": tool, "seconds": cfg["floor_seconds"],
                          "interval_us": interval_us, "priority": e2_cfg["priority"],
                          "histogram_us": cfg["histogram_us"],
                          # Pinned like E2's FIFO target: the last CPU.
                          "cpu": fp["cpu"]["online"][-1] if tool == "cyclictest" else None}
                cells.append(Cell(EXPERIMENT, "e4_floor", f"{tool}-{load}", config, rep,
                                  cfg["floor_seconds"] + cfg["timeout_margin_s"]))
    return cells


def needed_policies(cfg: dict) -> tuple[str, ...]:
    needs = ["SCHED_FIFO"] if "cyclictest" in cfg["floor_tools"] or cfg["jitter_fifo_priority"] else []
    if "cyclicdeadline" in cfg["floor_tools"]:
        needs.append("SCHED_DEADLINE")
    return tuple(needs)


def host_problems(cfg: dict, fp: dict) -> list[str]:
    problems = []
    tools = list(cfg["floor_tools"]) + (["stress-ng"] if "stress" in cfg["loads"] else [])
    for tool in tools:
        if shutil.which(tool) is None:
            pkg = "rt-tests" if tool.startswith("cyclic") else tool
            problems.append(f"e4_host needs {tool}: `sudo apt-get install {pkg}` (make setup "
                            "installs it when run as root), or remove it from e4_host.floor_tools / loads")
    if cfg["jitter_cpus"] != "all":
        unknown = sorted(set(cfg["jitter_cpus"]) - set(fp["cpu"]["online"]))
        if unknown:
            problems.append(f"e4_host.jitter_cpus names CPUs {unknown} that are not online "
                            f"(online: {fp['cpu']['online']})")
    return problems


def kernel_config(option: str) -> str | None:
    """``y``/``m``/``n`` for a kernel build option, or None when the config cannot be read."""
    import gzip
    import platform

    for path in (Path("/proc/config.gz"), Path(f"/boot/config-{platform.release()}")):
        try:
            text = (gzip.open(path, "rt") if path.suffix == ".gz" else open(path)).read()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith(f"{option}="):
                return line.split("=", 1)[1]
        return "n"
    return None


def osnoise_status() -> dict:
    """Whether ``rtla osnoise`` can run here, and if not, exactly why.

    Measuring it is left for hosts that have it; the study records the reason.
    """
    if kernel_config("CONFIG_OSNOISE_TRACER") == "n":
        return {"available": False, "why": "the kernel is built without CONFIG_OSNOISE_TRACER "
                "(no osnoise tracer to run)"}
    if shutil.which("rtla") is None:
        return {"available": False, "why": "rtla is not installed (Debian package rtla)"}
    tracers = Path("/sys/kernel/tracing/available_tracers")
    try:
        have = "osnoise" in tracers.read_text()
    except OSError as exc:
        return {"available": False, "why": f"cannot read {tracers} ({exc.strerror}); tracefs "
                "may not be mounted: mount -t tracefs nodev /sys/kernel/tracing"}
    return {"available": have, "why": "" if have else "the kernel has no osnoise tracer"}


def write_audit(out_dir) -> dict:
    """Record this host's audit (read-only, from /) and osnoise availability beside the data."""
    record = {**json.loads(audit.to_json(audit.audit())), "osnoise": osnoise_status()}
    path = out_dir / "audit.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    os.replace(tmp, path)
    return record


# ---------------------------------------------------------------------------
# Analysis

def hist_percentiles(latency_ns, count, qs=LADDER) -> dict:
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
    cum = np.cumsum(c)
    for q in qs:
        out[f"p{q:g}"] = float(v[np.searchsorted(cum, q / 100 * n)])
    mean = float((v * c).sum() / n)
    out.update(max=float(v[-1]), mean=mean,
               std=float(np.sqrt(((v - mean) ** 2 * c).sum() / max(n - 1, 1))))
    return out


def load(out_dir) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Histograms and one row of statistics per measurement, and missing cell ids."""
    sidecars, missing = data.completed_cells(out_dir)
    hists, rows = [], []
    for sc in sidecars:
        cfg = sc["requested"]["config"]
        s = data.read_samples(f"{sc['_dir']}/samples.parquet")
        base = {"cell_id": sc["cell_id"], "host_id": sc["host_id"], "kind": cfg["kind"],
                "load": cfg["load"], "cpu": cfg.get("cpu"), "repetition": sc["repetition"]}
        hists.append(s.assign(**base))
        stats = hist_percentiles(s["latency_ns"], s["count"])
        summary = sc["summary"]
        if cfg["kind"] != "jitter" and not summary.get("has_histogram"):
            # cyclicdeadline reports only min / avg / max (µs): no percentiles, no std.
            stats.update(n=int(summary["cycles"]), max=summary["max_us"] * 1e3,
                         mean=summary["avg_us"] * 1e3)
        rows.append({**base, **stats, "summary": json.dumps(summary)})
    h = pd.concat(hists, ignore_index=True) if hists else pd.DataFrame()
    return h, pd.DataFrame(rows), missing


def read_audit(out_dir) -> dict:
    """The recorded audit: ``{"summary": {...}, "items": [...]}`` (empty if not recorded)."""
    path = out_dir / "audit.json"
    return data.read_json(path) if path.exists() else {"summary": {}, "items": [], "osnoise": {}}


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
    """The jitter probe's percentile ladder per CPU and load (ns), beside seed 004's."""
    from rtstudy.seeds import E4_PUBLISHED_NS

    rows = []
    for _, r in stats[stats["kind"] == "jitter"].sort_values(["load", "cpu"]).iterrows():
        rows.append({"measurement": f"CPU {int(r['cpu'])}, {r['load']}", "N": f"{r['n']:,}",
                     **{k.upper(): f"{r[k]:,.0f}" for k in ("p50", "p99", "p99.9", "p99.99", "max")}})
    for name, v in E4_PUBLISHED_NS.items():
        rows.append({"measurement": f"seed 004, {name}", "N": "not stated",
                     **{k.upper(): f"{v[k]:,.1f}" if k in v else "—"
                        for k in ("p50", "p99", "p99.9", "p99.99", "max")}})
    return pd.DataFrame(rows)


def floor_std_ms(stats: pd.DataFrame, kind: str = "cyclictest", load: str = "stress") -> float:
    """The floor's latency standard deviation in ms (mean over repetitions)."""
    sel = stats[(stats["kind"] == kind) & (stats["load"] == load)]
    return float(sel["std"].mean() / 1e6) if len(sel) else float("nan")


def h4_verdict(record: dict, stats: pd.DataFrame) -> dict:
    """H4 needs an isolated CPU to compare with a housekeeping one; tail/median ratios per CPU."""
    jitter = stats[stats["kind"] == "jitter"]
    ratios = {f"CPU {int(r['cpu'])}, {r['load']}": float(r["p99.99"] / r["p50"])
              for _, r in jitter.iterrows() if r["p50"] > 0}
    isolated = set(record.get("summary", {}).get("isolated_cpus") or [])
    measured = set(int(c) for c in jitter["cpu"].dropna())
    if not isolated & measured or not measured - isolated:
        return {"verdict": "inconclusive", "why": "no isolated CPU was measured beside a "
                "housekeeping one on this host", "ratios": ratios}
    idle = jitter[jitter["load"] == jitter["load"].iloc[0]]
    iso = idle[idle["cpu"].isin(isolated)]
    hk = idle[~idle["cpu"].isin(isolated)]

    def tail(g: pd.DataFrame) -> float:
        return float((g["p99.9"] / g["p50"]).mean())

    better = tail(iso) < tail(hk)
    return {"verdict": "reproduced" if better else "not reproduced", "ratios": ratios,
            "isolated_tail": tail(iso), "housekeeping_tail": tail(hk)}
