"""E1's figures: one function per figure, named after the file it writes."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from rtstudy.inference.stats import CI, MIN_RUNS, over_runs
from rtstudy.report.figstyle import PALETTE, SEED_COLOR, save, style

BUFFER_COLORS = {"default": PALETTE[3], "async": PALETTE[2]}
E1_PANELS = [("S1", "latency_max_ms", "tx1 max latency (ms)"),
             ("S1", "interval_max_ms", "in1 max interval (ms)"),
             ("S2", "latency_max_ms", "tx2 max latency (ms)"),
             ("S2", "interval_max_ms", "in2 max interval (ms)")]


def _e1_fixed(cells: pd.DataFrame) -> pd.DataFrame:
    return cells[(cells["role"] == "fixed") & (cells["policy"] == "deadline")
                 & (cells["work_model"] == "native")]


def _e1_scenario_axes(fixed: pd.DataFrame):
    """One panel per scenario present, sharing y: (figure, axes, scenarios)."""
    scenarios = [s for s in ("S1", "S2") if s in set(fixed["scenario"])]
    fig, axes = plt.subplots(1, len(scenarios), figsize=(3.6 * len(scenarios), 3.2),
                             layout="constrained", squeeze=False, sharey=True)
    for ax, scenario in zip(axes[0], scenarios):
        fixed_op, varied_op = ("tx1", "tx2") if scenario == "S1" else ("tx2", "tx1")
        ax.set_title(f"{scenario}: {fixed_op} (fixed)")
        ax.set_xlabel(f"{varied_op} period (ms)")
    return fig, axes, scenarios


def _mean_with_ci(ax, g: pd.DataFrame, metric: str, color, label: str, ci: CI) -> None:
    """Every repetition as a point; the mean per period as a line with whiskers.

    Whiskers are the t-interval over runs (:func:`rtstudy.inference.stats.over_runs`, at ``ci``'s
    level) where a period has at least :data:`MIN_RUNS` repetitions, else the
    repetitions' range: two values give a range, not a CI.
    """
    ax.scatter(g["varied_period_ms"], g[metric], s=12, color=color, alpha=0.7, zorder=3)
    rows = []
    for period, h in g.groupby("varied_period_ms"):
        values = h[metric].to_numpy(dtype=float)
        if len(values) >= MIN_RUNS:
            est = over_runs(values, ci)
            value, low, high = est.value, est.low, est.high
        else:
            value, low, high = values.mean(), values.min(), values.max()
        low = low if np.isfinite(low) else value
        high = high if np.isfinite(high) else value
        rows.append((period, value, value - low, high - value))
    x, y, below, above = (np.array(v) for v in zip(*rows))
    ax.errorbar(x, y, yerr=[below, above], color=color, lw=1.5, capsize=2, label=label, zorder=2)


def e1_seed_figures(cells: pd.DataFrame, ci: CI, directory: Path | None = None) -> plt.Figure:
    """The seed's four figures: the fixed producer's max latency and max interval vs the varied period.

    Parameters
    ----------
    cells : DataFrame
        :func:`rtstudy.experiments.e1_async_buffer.analysis.load` per-cell rows (latencies and
        intervals in ms).
    directory : Path, optional
        Where to write the files (default ``report/figures``).
    ci : CI
        The CIs' level (the report's parameters).
    """
    style()
    fixed = _e1_fixed(cells)
    fig, axes = plt.subplots(2, 2, figsize=(7.2, 5.6), layout="constrained", squeeze=False)
    for ax, (scenario, metric, ylabel) in zip(axes.flat, E1_PANELS):
        g = fixed[fixed["scenario"] == scenario]
        varied = "tx2" if scenario == "S1" else "tx1"
        for buffer in ("default", "async"):
            h = g[g["buffer"] == buffer]
            if not h.empty:
                _mean_with_ci(ax, h, metric, BUFFER_COLORS[buffer], f"{buffer} buffer", ci)
        ax.set_xlabel(f"{varied} period (ms)")
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        if not g.empty:
            ax.set_title(f"{scenario}: {'tx1' if scenario == 'S1' else 'tx2'} fixed at "
                         f"{g['nominal_period_ms'].iloc[0]:g} ms")
    axes[0][0].legend(loc="upper left")
    n = int(fixed["repetition"].nunique()) if len(fixed) else 0
    whiskers = (f"{ci.level} t-interval over runs" if n >= MIN_RUNS
                else "whiskers: range of the repetitions")
    # One session's runs: the verdicts above the figure pool every session of the host state.
    fig.suptitle(f"Fixed producer vs the other's period, SCHED_DEADLINE (points: the latest "
                 f"session's {n} repetition(s); line: mean, {whiskers})", fontsize="medium")
    save(fig, "e1_seed_figures", directory)
    return fig


def e1_latency_percentiles(cells: pd.DataFrame, directory: Path | None = None) -> plt.Figure:
    """The fixed producer's latency distribution: P50, P99 and max against the varied period."""
    style()
    fixed = _e1_fixed(cells)
    fig, axes, scenarios = _e1_scenario_axes(fixed)
    styles = {"latency_p50_ms": ("P50", ":"), "latency_p99_ms": ("P99", "--"),
              "latency_max_ms": ("max", "-")}
    for ax, scenario in zip(axes[0], scenarios):
        g = fixed[fixed["scenario"] == scenario]
        for buffer in ("default", "async"):
            h = g[g["buffer"] == buffer].groupby("varied_period_ms").mean(numeric_only=True)
            for metric, (name, ls) in styles.items():
                ax.plot(h.index, h[metric], ls=ls, color=BUFFER_COLORS[buffer], marker="o", ms=3,
                        label=f"{buffer} {name}")
        ax.set_ylim(bottom=0)
    axes[0][0].set_ylabel("latency from t_start (ms)")
    axes[0][-1].legend(fontsize="x-small", ncol=2)
    n = int(fixed["n_messages"].median()) if len(fixed) else 0
    fig.suptitle(f"Latency percentiles of the fixed producer (N ≈ {n} messages per run, "
                 "mean over repetitions)", fontsize="medium")
    save(fig, "e1_latency_percentiles", directory)
    return fig


def e1_emit_period(cells: pd.DataFrame, directory: Path | None = None) -> plt.Figure:
    """The fixed producer's actual emit period: the default buffer throttles it to the slower rate."""
    style()
    fixed = _e1_fixed(cells)
    fig, axes, scenarios = _e1_scenario_axes(fixed)
    for ax, scenario in zip(axes[0], scenarios):
        g = fixed[fixed["scenario"] == scenario]
        xs = np.sort(g["varied_period_ms"].unique())
        ax.plot(xs, xs, color=SEED_COLOR, lw=1, ls="--", label="varied producer's period")
        ax.axhline(g["nominal_period_ms"].iloc[0], color="#606060", lw=1, ls=":",
                   label="own nominal period")
        for buffer in ("default", "async"):
            h = g[g["buffer"] == buffer]
            ax.scatter(h["varied_period_ms"], h["emit_period_ms"], s=14,
                       color=BUFFER_COLORS[buffer], label=f"{buffer} buffer", zorder=3)
        ax.set_ylim(bottom=0)
    axes[0][0].set_ylabel("median emit period (ms)")
    axes[0][0].legend(fontsize="x-small")
    fig.suptitle("What the fixed producer actually did", fontsize="medium")
    save(fig, "e1_emit_period", directory)
    return fig
