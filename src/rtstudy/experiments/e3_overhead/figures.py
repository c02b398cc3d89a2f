"""E3's figures: one function per figure, named after the file it writes."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from rtstudy.experiments.e3_overhead.analysis import label_order, published_range
from rtstudy.inference.stats import CI
from rtstudy.report.figstyle import PALETTE, SEED_COLOR, save, style


def short_label(label: str) -> str:
    """``EventBased ×2`` → ``EBS ×2``: tick labels that fit side by side."""
    return label.replace("EventBased", "EBS")


def e3_overhead(runs: pd.DataFrame, fit_df: pd.DataFrame, ci: CI,
                directory: Path | None = None) -> plt.Figure:
    """Scheduler cost per iteration, by scheduler, next to the seed's published figure.

    Parameters
    ----------
    runs : DataFrame
        :func:`rtstudy.experiments.e3_overhead.analysis.load` rows (``whole_app_us_per_iter`` in
        µs).
    fit_df : DataFrame
        :func:`rtstudy.experiments.e3_overhead.analysis.fits` rows (``per_iter_us`` and its CI in
        µs).
    ci : CI
        The level the fit's CI was made at (the report's parameters).
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
            _scheduler_column(ax, i, app, label, g, fit_df, n_max, ci)
        ax.set_xticks(range(len(order)), [short_label(label) for label in order])
        ax.set_xlabel("scheduler (EBS = EventBased × worker threads)", fontsize="small")
        ax.set_xlim(-0.6, len(order) - 0.4)
        ax.set_title(titles[app])
        ax.autoscale_view()
        ax.set_ylim(bottom=0)
    axes[0][0].set_ylabel("µs per iteration")
    handles, labels = axes[0][0].get_legend_handles_labels()
    handles.append(plt.Rectangle((0, 0), 1, 1, color=SEED_COLOR, alpha=0.6))
    labels.append("published (value or range)")
    fig.legend(handles, labels, loc="outside lower center", ncol=2, fontsize="small")
    fig.suptitle(f"Holoscan scheduling cost per iteration (N max = {n_max:,})")
    save(fig, "e3_overhead", directory)
    return fig


def _scheduler_column(ax: plt.Axes, i: int, app: str, label: str, g: pd.DataFrame,
                      fit_df: pd.DataFrame, n_max: int, ci: CI) -> None:
    """Column ``i`` of :func:`e3_overhead`'s panel for ``app``: the scheduler ``label``'s
    published value or range, each run's whole app / N at N = ``n_max`` from ``g`` (the app's
    runs), and the fit's per-iteration cost with its CI from ``fit_df`` (all in µs)."""
    sched = g.loc[g["scheduler_label"] == label, ["scheduler", "workers"]]
    if sched.empty:
        return
    lo, hi = published_range(app, *sched.iloc[0])
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
                    label=f"per iteration, fit over N ({ci.level} CI)" if i == 0 else None)


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
