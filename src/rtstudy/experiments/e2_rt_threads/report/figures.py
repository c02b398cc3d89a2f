"""E2's figures: one function per figure, named after the file it writes."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from rtstudy.experiments.e2_rt_threads.conditions import (PLAIN, SWITCH_INTERVAL_MS, grid,
                                                          headline_point)
from rtstudy.experiments.e2_rt_threads.params import PLACEMENTS, POLICY_NAMES
from rtstudy.inference.stats import CI, MIN_RUNS, over_runs
from rtstudy.policies import short
from rtstudy.report.figstyle import PALETTE, log_axis, save, style

POLICY_ORDER = list(POLICY_NAMES)


def _policies(frames: pd.DataFrame) -> list[str]:
    present = set(frames["policy"])
    return [p for p in POLICY_ORDER if p in present]


def _e2_top(frames: pd.DataFrame) -> pd.DataFrame:
    """Grid frames at the highest load factor with native loads: where contention is strongest."""
    frames = grid(frames)
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
                ax.set_title(short(policy), fontsize="medium")
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
        ax.set_ylabel(short(policy), fontsize="small")
    axes[-1][0].set_xlabel("time since the first measured frame (s, CLOCK_MONOTONIC)")
    fig.suptitle("Frame period (ms) over time, measured time stamps, highest load factor",
                 fontsize="medium")
    save(fig, "e2_time_series", directory)
    return fig


def _condition_name(r: dict) -> str:
    """A condition as a reader names it: its policy, then what differs from the policy grid."""
    if r["topology"] == "floor":
        return "floor: cyclictest"
    name = short(r["policy"]).replace("normal_dedicated", "normal, own thread")
    if r["dispatcher"] != PLAIN["dispatcher"]:
        name += ", FIFO dispatcher" + (" pinned" if r["dispatcher"] == "fifo_pinned" else "")
    if r["load_placement"] != PLAIN["load_placement"]:
        name += f", load {r['load_placement'].replace('_', ' ')}"
    if r.get("switch_interval_ms", SWITCH_INTERVAL_MS) != SWITCH_INTERVAL_MS:
        name += f", switch interval {r['switch_interval_ms']:g} ms"
    return name


def _typical_and_late_axes(rows: list[dict], colors: list[str], runs: pd.DataFrame,
                           threshold_ms: float, names: list[str]) -> tuple[plt.Figure, np.ndarray]:
    """Two panels, one row per condition (``rows``: :func:`analysis.contrasts.summarize` records with
    ``label``): left its runs' period IQRs (dots) and their mean with its CI (diamond), log µs;
    right its late frames per 10 000 with their CI, or the one-sided bound with none late."""
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 0.32 * len(rows) + 1.8), layout="constrained",
                             sharey=True)
    for i, (r, color) in enumerate(zip(rows, colors)):
        per_run = runs.loc[runs["label"] == r["label"], "period_iqr_us"]
        axes[0].scatter(per_run, [i - 0.15] * len(per_run), s=9, color=color, alpha=0.6, zorder=3)
        err = ([[r["iqr_us"] - r["iqr_low"]], [r["iqr_high"] - r["iqr_us"]]]
               if np.isfinite(r["iqr_low"]) else None)
        axes[0].errorbar([r["iqr_us"]], [i + 0.15], xerr=err, fmt="D", ms=3.5, color=color,
                         capsize=2, zorder=4)
        if r["late"] == 0:
            axes[1].plot([1, r["late_high"]], [i, i], color=color, lw=1.2, alpha=0.6)
            axes[1].plot([r["late_high"]], [i], marker="<", color=color, ms=5, ls="none")
        else:
            err = ([[r["late_rate"] - r["late_low"]], [r["late_high"] - r["late_rate"]]]
                   if np.isfinite(r["late_low"]) else None)
            axes[1].errorbar([r["late_rate"]], [i], xerr=err, fmt="o", ms=4, color=color,
                             capsize=2, zorder=4)
    axes[0].set_xscale("log")
    axes[0].set_title("typical jitter", fontsize="medium")
    axes[0].set_xlabel("frame-period IQR (µs, log)")
    axes[1].set_xscale("log")
    axes[1].set_xlim(1, 1e4)
    axes[1].set_title(f"late frames (lateness > {threshold_ms:g} ms)", fontsize="medium")
    axes[1].set_xlabel("per 10 000 frames (log)\n◀ none late: the upper bound")
    for ax in axes:
        ax.grid(axis="x", lw=0.3, alpha=0.5)
    axes[0].set_yticks(np.arange(len(rows)), names, fontsize="small")
    axes[0].invert_yaxis()
    log_axis(axes[0])
    return fig, axes


def e2_ladder(ladder: pd.DataFrame, runs: pd.DataFrame, threshold_ms: float, policy: str,
              ci: CI, directory: Path | None = None) -> plt.Figure:
    """The jitter ladder: each rung's typical jitter beside its late-frame rate, floor drawn.

    One row per rung from the floor up (:data:`analysis.ladder.RUNGS`), each adding one factor;
    left the period IQR (µs, log: each run, and the mean with its CI over runs), right
    the late frames per 10 000 (log, the CI for rare counts; with none late, the
    one-sided upper bound). The floor (cyclictest, the first rung) is a dashed line.

    Parameters
    ----------
    ladder : DataFrame
        :func:`rtstudy.experiments.e2_rt_threads.analysis.ladder.ladder`'s rows.
    runs : DataFrame
        The ``runs`` and ``floor`` tables together (each run's ``period_iqr_us``).
    threshold_ms : float
        The lateness above which a frame is late (ms).
    policy : str
        The ladder's policy, for the title.
    ci : CI
        The report's CI settings (the level in the title).
    directory : Path, optional
        Where to write the files (default ``report/figures``).
    """
    style()
    rows = ladder.to_dict("records")
    # Grey for the rungs without Holoscan, then one colour per kind of load.
    colors = ["#404040" if r["rung"] in ("cyclictest", "python_thread") else
              PALETTE[(i - 2) % len(PALETTE)] for i, r in enumerate(rows)]
    names = [f"{r['number']}. {r['name']}" for r in rows]
    fig, axes = _typical_and_late_axes(rows, colors, runs, threshold_ms, names)
    floor = [r for r in rows if r["rung"] == "cyclictest"]
    if floor:
        axes[0].axvline(floor[0]["iqr_us"], color="#404040", lw=0.8, ls="--")
        axes[0].set_xlabel("frame-period IQR (µs, log)\ndashed: the floor (cyclictest)")
    loaded = [r["load_factor"] for r in rows if r["load_factor"] > 0]
    at = f", loads {loaded[0]:g} per CPU" if loaded else ""
    fig.suptitle(f"The jitter ladder: {policy.replace('SCHED_', '')} at one period, priority and "
                 f"CPU{at}; runs (dots), their mean (diamond), {ci.level} CIs", fontsize="medium")
    save(fig, "e2_ladder", directory)
    return fig


def e2_typical_and_late(runs: pd.DataFrame, conditions: pd.DataFrame, threshold_ms: float,
                        ci: CI, directory: Path | None = None) -> plt.Figure:
    """At the headline point: each condition's typical jitter beside its late-frame rate.

    Left, the period IQR (µs, log): each run (dots) and their mean (diamond, CI over
    runs). Right, the late frames per 10 000 frames pooled over runs with their CI for
    rare counts (log); with none late, a bar up to the one-sided upper bound. The floor
    (cyclictest at the same load factor) is a row of its own and a dashed line.

    Parameters
    ----------
    runs : DataFrame
        :func:`rtstudy.experiments.e2_rt_threads.analysis.dataset.load`'s ``runs`` (its
        ``period_iqr_us``) with the floor's runs.
    conditions : DataFrame
        :func:`rtstudy.experiments.e2_rt_threads.analysis.contrasts.condition_summary` of them.
    threshold_ms : float
        The lateness above which a frame is late (ms), for the axis label.
    ci : CI
        The report's CI settings (the level in the title).
    directory : Path, optional
        Where to write the files (default ``report/figures``).
    """
    style()
    top = headline_point(conditions)
    factor = top["load_factor"].max()
    floor = conditions[(conditions["topology"] == "floor") & (conditions["load_factor"] == factor)]
    order = {p: i for i, p in enumerate(POLICY_ORDER)}
    placements = {p: i for i, p in enumerate(PLACEMENTS)}
    rows = sorted(top.to_dict("records"),
                  key=lambda r: (order.get(r["policy"], len(order)),
                                 r["dispatcher"] != PLAIN["dispatcher"],
                                 placements.get(r["load_placement"], len(placements))))
    rows += floor.to_dict("records")
    colors = ["#404040" if r["topology"] == "floor" else
              PALETTE[order.get(r["policy"], 0) % len(PALETTE)] for r in rows]
    fig, axes = _typical_and_late_axes(rows, colors, runs, threshold_ms,
                                       [_condition_name(r) for r in rows])
    for r in floor.to_dict("records"):
        axes[0].axvline(r["iqr_us"], color="#404040", lw=0.8, ls="--")
    axes[0].set_xlabel("frame-period IQR (µs, log)\ndashed: the floor's")
    fig.suptitle(f"Each condition at {factor:g} native loads per CPU: runs (dots), their mean "
                 f"(diamond) and the rate pooled over runs, with {ci.level} CIs", fontsize="medium")
    save(fig, "e2_typical_and_late", directory)
    return fig


def e2_std(frames: pd.DataFrame, runs: pd.DataFrame, ci: CI,
           directory: Path | None = None) -> plt.Figure:
    """Frame-period std per policy and load factor: each run, and their mean with a CI over runs.

    Parameters
    ----------
    frames, runs : DataFrame
        :func:`rtstudy.experiments.e2_rt_threads.analysis.dataset.load` output (periods and std in ms).
    ci : CI
        The level of the t-interval over runs (the report's parameters); below
        three runs the diamond has no whisker.
    directory : Path, optional
        Where to write the files (default ``report/figures``).
    """
    style()
    runs = grid(runs)
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
        ax.set_xticks(range(len(policies)), [short(p).replace("_", "\n")
                                             for p in policies], fontsize="small")
        ax.set_yscale("log")
        ax.set_title(f"{model} loads")
    axes[0][0].set_ylabel("frame-period std (ms, log)")
    axes[0][0].legend(fontsize="x-small")
    fig.suptitle("Jitter of the target operator: each run (dots) and their mean (diamond, "
                 f"{ci.level} t-interval over runs, none below {MIN_RUNS} runs)",
                 fontsize="medium")
    save(fig, "e2_std", directory)
    return fig


def e2_factorial(runs: pd.DataFrame, floor: pd.DataFrame, ci: CI,
                 directory: Path | None = None) -> plt.Figure:
    """At the headline point: the target's frame-period std per policy, dispatcher and load
    placement (each run, and their mean with a CI over runs), beside the floor measured the same way.

    Parameters
    ----------
    runs, floor : DataFrame
        :func:`rtstudy.experiments.e2_rt_threads.analysis.dataset.load`'s ``runs`` and ``floor`` (ms).
    ci : CI
        The report's CI settings; below three runs there is no whisker.
    directory : Path, optional
        Where to write the files (default ``report/figures``).
    """
    style()
    top = headline_point(runs)
    placements = [p for p in ("operators", "threads", "process") if p in set(top["load_placement"])]
    conditions = [(pol, disp) for pol in POLICY_ORDER for disp in ("other", "fifo")
                  if ((top["policy"] == pol) & (top["dispatcher"] == disp)).any()]
    fig, ax = plt.subplots(figsize=(8.4, 3.8), layout="constrained")
    width = 0.8 / max(len(placements), 1)
    labelled: set[str] = set()
    for j, placement in enumerate(placements):
        color = PALETTE[j % len(PALETTE)]
        for i, (policy, disp) in enumerate(conditions):
            sel = top[(top["policy"] == policy) & (top["dispatcher"] == disp)
                      & (top["load_placement"] == placement)]["period_std_ms"]
            if sel.empty:
                continue
            x = i - 0.4 + width * (j + 0.5)
            ax.scatter([x - width / 4] * len(sel), sel, s=9, color=color, alpha=0.6, zorder=3,
                       label=None if placement in labelled else f"load: {placement}")
            labelled.add(placement)
            est = over_runs(sel, ci)
            err = ([[est.value - est.low], [est.high - est.value]] if np.isfinite(est.low)
                   else None)
            ax.errorbar([x + width / 4], [est.value], yerr=err, fmt="D", ms=3, color=color,
                        capsize=2, zorder=4)
    if len(floor):
        f = floor[floor["load_factor"] == top["load_factor"].max()]["period_std_ms"]
        if len(f):
            ax.axhline(f.mean(), color="#404040", lw=0.9, ls="--",
                       label=f"floor: cyclictest, same period/priority/CPU, stress-ng ({f.mean() * 1000:.0f} µs)")
    names = {"normal_dedicated": "normal,\nown thread", "normal": "normal,\nshared pool"}
    ax.set_xticks(range(len(conditions)),
                  [f"{names.get(p, p.replace('SCHED_', ''))}\ndispatcher {d}"
                   for p, d in conditions], fontsize="x-small")
    ax.set_yscale("log")
    ax.set_ylabel("frame-period std (ms, log)")
    ax.legend(fontsize="x-small", loc="upper right")
    ax.set_title(f"Policy × dispatcher × load placement at {top['load_factor'].max():g} loads per "
                 f"CPU (native): each run (dots), mean (diamond, {ci.level} CI over runs)",
                 fontsize="medium")
    save(fig, "e2_factorial", directory)
    return fig


def e2_attribution(att: pd.DataFrame, parts: dict, directory: Path | None = None) -> plt.Figure:
    """Where each traced frame's lateness accrues: per traced run, the typical (RMS) and the P99
    time of each part, beside the lateness's own (their sum).

    Times in µs on a log axis; the table beside the figure gives each part's mean, maximum
    and share of the lateness's variance.

    Parameters
    ----------
    att : DataFrame
        :func:`rtstudy.experiments.e2_rt_threads.analysis.dataset.load`'s ``attribution`` (ms per part).
    parts : dict
        Part column → its readable name (``attribution.PARTS``), in the order they happen.
    directory : Path, optional
        Where to write the files (default ``report/figures``).
    """
    style()
    labels = list(dict.fromkeys(att["label"]))
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 0.36 * len(labels) + 2.2), layout="constrained",
                             sharey=True, sharex=True)
    y = np.arange(len(labels))
    columns = {**parts, "lateness_ms": "the frame's lateness against its release (their sum)"}
    for k, (part, name) in enumerate(columns.items()):
        rms, p99 = [], []
        for label in labels:
            x = att.loc[att["label"] == label, part].to_numpy(dtype=float) * 1000
            rms.append(np.sqrt(np.mean(x ** 2)) if x.size else np.nan)
            p99.append(np.percentile(x, 99) if x.size else np.nan)
        total = part == "lateness_ms"
        color = "#202020" if total else PALETTE[k % len(PALETTE)]
        offset = 0 if total else (k - 1.5) * 0.14
        for ax, values in zip(axes, (rms, p99)):
            ax.scatter(np.clip(values, 0.1, None), y + offset, s=30 if total else 14,
                       color=color, marker="|" if total else "o", zorder=3,
                       label=name if ax is axes[0] else None)
    for ax, what in zip(axes, ("RMS", "P99")):
        ax.set_xscale("log")
        ax.set_xlabel(f"{what} (µs, log; below 0.1 shown at 0.1)")
        ax.grid(axis="x", lw=0.3, alpha=0.5)
    axes[0].set_yticks(y, [short(label).replace("-trace", "") for label in labels],
                       fontsize="x-small")
    axes[0].invert_yaxis()
    fig.legend(fontsize="x-small", loc="outside lower center", ncol=2)
    fig.suptitle("Where the delay accrues: kernel scheduler trace of one run per condition",
                 fontsize="medium")
    save(fig, "e2_attribution", directory)
    return fig
