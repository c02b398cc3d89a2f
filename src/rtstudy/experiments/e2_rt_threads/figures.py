"""E2's figures: one function per figure, named after the file it writes."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from rtstudy.figstyle import PALETTE, save, style
from rtstudy.stats import CI, MIN_RUNS, over_runs

POLICY_ORDER = ["normal", "normal_dedicated", "SCHED_FIFO", "SCHED_RR", "SCHED_DEADLINE"]


def _policies(frames: pd.DataFrame) -> list[str]:
    present = set(frames["policy"])
    return [p for p in POLICY_ORDER if p in present]


def _e2_top(frames: pd.DataFrame) -> pd.DataFrame:
    """Frames at the highest load factor with native loads: where contention is strongest."""
    native = frames[frames["load_work_model"] == "native"]
    return native[native["load_factor"] == native["load_factor"].max()]


def e2_period_histograms(frames: pd.DataFrame, directory: Path | None = None) -> plt.Figure:
    """Frame-period histograms per policy, full range and zoomed around the nominal period, log y."""
    style()
    top = _e2_top(frames)
    policies = _policies(top)
    nominal = 1e3 / top["fps"].iloc[0]
    fig, axes = plt.subplots(2, len(policies), figsize=(2.3 * len(policies), 4.4),
                             layout="constrained", squeeze=False, sharey="row")
    lo, hi = top["period_ms"].min(), top["period_ms"].max()
    for k, policy in enumerate(policies):
        x = top.loc[top["policy"] == policy, "period_ms"]
        for row, (rng, bins) in enumerate([((lo, hi), 60), ((nominal - 1, nominal + 1), 80)]):
            ax = axes[row][k]
            ax.hist(x.clip(*rng), bins=np.linspace(*rng, bins), color=PALETTE[k % len(PALETTE)])
            ax.set_yscale("log")
            ax.axvline(nominal, color="#404040", lw=0.8, ls=":")
            if row == 0:
                ax.set_title(policy.replace("SCHED_", ""), fontsize="medium")
        axes[1][k].set_xlabel("frame period (ms)")
    axes[0][0].set_ylabel("frames (full range)")
    axes[1][0].set_ylabel("frames (±1 ms, clipped)")
    fig.suptitle(f"Frame periods at load factor {top['load_factor'].iloc[0]:g} (native loads), "
                 f"{top['fps'].iloc[0]} FPS, all repetitions", fontsize="medium")
    save(fig, "e2_period_histograms", directory)
    return fig


def e2_time_series(frames: pd.DataFrame, directory: Path | None = None) -> plt.Figure:
    """Frame period against the measured time of each frame (first repetition), per policy."""
    style()
    top = _e2_top(frames)
    top = top[top["repetition"] == top["repetition"].min()]
    policies = _policies(top)
    fig, axes = plt.subplots(len(policies), 1, figsize=(7.2, 1.2 * len(policies) + 0.8),
                             layout="constrained", squeeze=False, sharex=True, sharey=True)
    for k, policy in enumerate(policies):
        ax = axes[k][0]
        g = top[top["policy"] == policy]
        ax.plot(g["t_s"], g["period_ms"], lw=0.6, color=PALETTE[k % len(PALETTE)])
        ax.set_ylabel(policy.replace("SCHED_", ""), fontsize="small")
    axes[-1][0].set_xlabel("time since the first measured frame (s, CLOCK_MONOTONIC)")
    fig.suptitle("Frame period (ms) over time, measured time stamps, highest load factor",
                 fontsize="medium")
    save(fig, "e2_time_series", directory)
    return fig


def e2_std(frames: pd.DataFrame, runs: pd.DataFrame, ci: CI,
           directory: Path | None = None) -> plt.Figure:
    """Frame-period std per policy and load factor: each run, and their mean with a CI over runs.

    Parameters
    ----------
    frames, runs : DataFrame
        :func:`rtstudy.experiments.e2_rt_threads.analysis.load` output (periods and std in ms).
    ci : CI
        How the bootstrap CI over runs is made (the report's parameters); below
        three runs the diamond has no whisker.
    directory : Path, optional
        Where to write the files (default ``report/figures``).
    """
    style()
    models = [m for m in ("native", "python") if m in set(runs["load_work_model"])]
    policies = _policies(runs)
    factors = sorted(runs["load_factor"].unique())
    fig, axes = plt.subplots(1, len(models), figsize=(4.2 * len(models), 3.4),
                             layout="constrained", squeeze=False, sharey=True)
    width = 0.8 / max(len(factors), 1)
    for ax, model in zip(axes[0], models):
        g = runs[runs["load_work_model"] == model]
        for j, factor in enumerate(factors):
            color = PALETTE[j % len(PALETTE)]
            for i, policy in enumerate(policies):
                sel = (g["policy"] == policy) & (g["load_factor"] == factor)
                x = i - 0.4 + width * (j + 0.5)
                ax.scatter([x - width / 4] * int(sel.sum()), g.loc[sel, "period_std_ms"], s=10,
                           color=color, alpha=0.6, zorder=3,
                           label=f"{factor:g} loads per CPU" if i == 0 else None)
                est = over_runs(g.loc[sel, "period_std_ms"], ci)
                if np.isfinite(est.value):
                    err = ([[est.value - est.low], [est.high - est.value]]
                           if np.isfinite(est.low) else None)
                    ax.errorbar([x + width / 4], [est.value], yerr=err, fmt="D", ms=3,
                                color=color, capsize=2, zorder=4)
        ax.set_xticks(range(len(policies)), [p.replace("SCHED_", "").replace("_", "\n")
                                             for p in policies], fontsize="small")
        ax.set_yscale("log")
        ax.set_title(f"{model} loads")
    axes[0][0].set_ylabel("frame-period std (ms, log)")
    axes[0][0].legend(fontsize="x-small")
    fig.suptitle("Jitter of the target operator: each run (dots) and their mean (diamond, "
                 f"{ci.level} bootstrap CI over runs, none below {MIN_RUNS} runs)",
                 fontsize="medium")
    save(fig, "e2_std", directory)
    return fig
