"""The report's figures: one function per figure, named after the file it writes.

Every figure uses :func:`style` and is written by :func:`save` as PDF (fonts
embedded as TrueType), PNG (300 dpi) and SVG under ``report/figures/``.
Functions take data frames, never file names.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from rtstudy import paths
from rtstudy.e3 import label_order, published_range

PALETTE = sns.color_palette("colorblind")
SEED_COLOR = "#b0b0b0"


def style() -> None:
    """The one style of every figure: paper context, embedded TrueType fonts."""
    sns.set_theme(context="paper", style="ticks", palette=PALETTE, font_scale=1.1)
    plt.rcParams.update({
        "pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none",
        "figure.dpi": 110, "savefig.dpi": 300, "savefig.bbox": "tight",
        "axes.spines.top": False, "axes.spines.right": False,
        "axes.titleweight": "bold", "legend.frameon": False,
    })


def short_label(label: str) -> str:
    """``EventBased ×2`` → ``EBS ×2``: tick labels that fit side by side."""
    return label.replace("EventBased", "EBS")


def save(fig: plt.Figure, name: str, directory: Path | None = None) -> list[Path]:
    """Write ``fig`` as ``name``.pdf, .png and .svg; return the paths."""
    directory = directory or paths.figures_dir()
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for ext in ("pdf", "png", "svg"):
        path = directory / f"{name}.{ext}"
        fig.savefig(path, metadata={"Creator": "rtstudy"} if ext != "png" else None)
        written.append(path)
    return written


def e3_overhead(runs: pd.DataFrame, fit_df: pd.DataFrame, directory: Path | None = None) -> plt.Figure:
    """Scheduler cost per iteration, by scheduler, next to the seed's published figure.

    Parameters
    ----------
    runs : DataFrame
        :func:`rtstudy.e3.load_runs` rows (``whole_app_us_per_iter`` in µs).
    fit_df : DataFrame
        :func:`rtstudy.e3.fits` rows (``per_iter_us`` and its CI in µs).
    """
    style()
    apps = [a for a in ("ops", "ping") if a in set(runs["app"])]
    order = label_order(runs)
    n_max = runs["iterations"].max()
    fig, axes = plt.subplots(1, len(apps), figsize=(3.8 * len(apps), 3.8), squeeze=False,
                             layout="constrained")
    titles = {"ops": "Two operators, no messages", "ping": "Tx → Rx, one message per iteration"}
    for ax, app in zip(axes[0], apps):
        g = runs[runs["app"] == app]
        for i, label in enumerate(order):
            sched = g.loc[g["scheduler_label"] == label, "scheduler"]
            if sched.empty:
                continue
            lo, hi = published_range(app, sched.iloc[0])
            if lo == hi:
                ax.plot([i - 0.4, i + 0.4], [lo, lo], color=SEED_COLOR, lw=3, zorder=1)
            else:
                ax.add_patch(plt.Rectangle((i - 0.4, lo), 0.8, hi - lo, color=SEED_COLOR,
                                           alpha=0.6, lw=0, zorder=0))
            whole = g.loc[(g["scheduler_label"] == label) & (g["iterations"] == n_max),
                          "whole_app_us_per_iter"]
            jitter = np.linspace(-0.12, 0.12, len(whole)) if len(whole) > 1 else [0.0]
            ax.scatter(i - 0.15 + np.asarray(jitter), whole, s=14, color=PALETTE[0], zorder=3,
                       label="seed method (whole app / N), each run" if i == 0 else None)
            f = fit_df[(fit_df["app"] == app) & (fit_df["scheduler_label"] == label)]
            if not f.empty:
                r = f.iloc[0]
                err = None
                if np.isfinite(r["per_iter_low"]):
                    err = [[r["per_iter_us"] - r["per_iter_low"]], [r["per_iter_high"] - r["per_iter_us"]]]
                ax.errorbar(i + 0.15, r["per_iter_us"], yerr=err, fmt="D", ms=5, color=PALETTE[1],
                            capsize=3, zorder=4,
                            label="per iteration, fit over N (95% CI)" if i == 0 else None)
        ax.set_xticks(range(len(order)), [short_label(label) for label in order])
        ax.set_xlabel("scheduler (EBS = EventBased × worker threads)", fontsize="small")
        ax.set_xlim(-0.6, len(order) - 0.4)
        ax.set_title(titles[app])
        ax.autoscale_view()
        ax.set_ylim(bottom=0)
    axes[0][0].set_ylabel("µs per iteration")
    handles, labels = axes[0][0].get_legend_handles_labels()
    handles.append(plt.Rectangle((0, 0), 1, 1, color=SEED_COLOR, alpha=0.6))
    labels.append("seed 000 published (value or range)")
    fig.legend(handles, labels, loc="outside lower center", ncol=2, fontsize="small")
    fig.suptitle(f"Holoscan scheduling cost per iteration (N max = {n_max:,})")
    save(fig, "e3_overhead", directory)
    return fig


def e3_fit(runs: pd.DataFrame, fit_df: pd.DataFrame, directory: Path | None = None) -> plt.Figure:
    """Whole-app time against N with the fitted lines: intercept = start-up, slope = per iteration."""
    style()
    apps = [a for a in ("ops", "ping") if a in set(runs["app"])]
    order = label_order(runs)
    fig, axes = plt.subplots(1, len(apps), figsize=(3.6 * len(apps), 3.2), sharey=False,
                             squeeze=False)
    for ax, app in zip(axes[0], apps):
        g = runs[runs["app"] == app]
        for k, label in enumerate(order):
            h = g[g["scheduler_label"] == label]
            if h.empty:
                continue
            color = PALETTE[k % len(PALETTE)]
            ax.scatter(h["iterations"], h["total_s"], s=12, color=color, label=short_label(label))
            f = fit_df[(fit_df["app"] == app) & (fit_df["scheduler_label"] == label)]
            if not f.empty:
                r = f.iloc[0]
                xs = np.array([0, h["iterations"].max()])
                ax.plot(xs, r["startup_ms"] / 1e3 + r["per_iter_us"] / 1e6 * xs, color=color, lw=1)
        ax.set_title(app)
        ax.set_xlabel("iterations N")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
    axes[0][0].set_ylabel("whole-app time (s)")
    axes[0][-1].legend(loc="upper left", fontsize="small")
    fig.suptitle("Start-up vs per-iteration cost: time = start-up + N × cost", y=1.02)
    save(fig, "e3_fit", directory)
    return fig


BUFFER_COLORS = {"default": PALETTE[3], "async": PALETTE[2]}
E1_PANELS = [("S1", "latency_max_ms", "tx1 max latency (ms)"),
             ("S1", "interval_max_ms", "in1 max interval (ms)"),
             ("S2", "latency_max_ms", "tx2 max latency (ms)"),
             ("S2", "interval_max_ms", "in2 max interval (ms)")]


def _e1_fixed(cells: pd.DataFrame) -> pd.DataFrame:
    return cells[(cells["role"] == "fixed") & (cells["policy"] == "deadline")
                 & (cells["work_model"] == "native")]


def _mean_with_range(ax, g: pd.DataFrame, metric: str, color, label: str) -> None:
    """Every repetition as a point; the mean per period as a line with min–max whiskers."""
    ax.scatter(g["varied_period_ms"], g[metric], s=12, color=color, alpha=0.7, zorder=3)
    stats = g.groupby("varied_period_ms")[metric].agg(["mean", "min", "max"]).reset_index()
    ax.errorbar(stats["varied_period_ms"], stats["mean"],
                yerr=[stats["mean"] - stats["min"], stats["max"] - stats["mean"]],
                color=color, lw=1.5, capsize=2, label=label, zorder=2)


def e1_seed_figures(cells: pd.DataFrame, directory: Path | None = None) -> plt.Figure:
    """The seed's four figures: the fixed producer's max latency and max interval vs the varied period.

    Parameters
    ----------
    cells : DataFrame
        :func:`rtstudy.e1.load` per-cell rows (latencies and intervals in ms).
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
                _mean_with_range(ax, h, metric, BUFFER_COLORS[buffer], f"{buffer} buffer")
        ax.set_xlabel(f"{varied} period (ms)")
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        if not g.empty:
            ax.set_title(f"{scenario}: {'tx1' if scenario == 'S1' else 'tx2'} fixed at "
                         f"{g['nominal_period_ms'].iloc[0]:g} ms")
    axes[0][0].legend(loc="upper left")
    n = int(fixed["repetition"].nunique()) if len(fixed) else 0
    fig.suptitle(f"Fixed producer vs the other's period, SCHED_DEADLINE (points: {n} repetition(s); "
                 "whiskers: min–max)", fontsize="medium")
    save(fig, "e1_seed_figures", directory)
    return fig


def e1_latency_percentiles(cells: pd.DataFrame, directory: Path | None = None) -> plt.Figure:
    """The fixed producer's latency distribution: P50, P99 and max against the varied period."""
    style()
    fixed = _e1_fixed(cells)
    scenarios = [s for s in ("S1", "S2") if s in set(fixed["scenario"])]
    fig, axes = plt.subplots(1, len(scenarios), figsize=(3.6 * len(scenarios), 3.2),
                             layout="constrained", squeeze=False, sharey=True)
    styles = {"latency_p50_ms": ("P50", ":"), "latency_p99_ms": ("P99", "--"),
              "latency_max_ms": ("max", "-")}
    for ax, scenario in zip(axes[0], scenarios):
        g = fixed[fixed["scenario"] == scenario]
        for buffer in ("default", "async"):
            h = g[g["buffer"] == buffer].groupby("varied_period_ms").mean(numeric_only=True)
            for metric, (name, ls) in styles.items():
                ax.plot(h.index, h[metric], ls=ls, color=BUFFER_COLORS[buffer], marker="o", ms=3,
                        label=f"{buffer} {name}")
        ax.set_title(f"{scenario}: {'tx1' if scenario == 'S1' else 'tx2'} (fixed)")
        ax.set_xlabel(f"{'tx2' if scenario == 'S1' else 'tx1'} period (ms)")
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
    scenarios = [s for s in ("S1", "S2") if s in set(fixed["scenario"])]
    fig, axes = plt.subplots(1, len(scenarios), figsize=(3.6 * len(scenarios), 3.2),
                             layout="constrained", squeeze=False, sharey=True)
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
        ax.set_title(f"{scenario}: {'tx1' if scenario == 'S1' else 'tx2'} (fixed)")
        ax.set_xlabel(f"{'tx2' if scenario == 'S1' else 'tx1'} period (ms)")
        ax.set_ylim(bottom=0)
    axes[0][0].set_ylabel("median emit period (ms)")
    axes[0][0].legend(fontsize="x-small")
    fig.suptitle("What the fixed producer actually did", fontsize="medium")
    save(fig, "e1_emit_period", directory)
    return fig
