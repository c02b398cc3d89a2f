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
from rtstudy.stats import bootstrap_ci

PALETTE = sns.color_palette("colorblind")
MIN_CI_N = 3  # fewer values per point: whiskers show their range, not a CI
DEFAULT_CI = {"confidence": 0.95, "n_resamples": 2000, "seed": 7}
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


def _mean_with_ci(ax, g: pd.DataFrame, metric: str, color, label: str, ci: dict) -> None:
    """Every repetition as a point; the mean per period as a line with whiskers.

    Whiskers are the bootstrap CI (``ci``: confidence, n_resamples, seed) where a
    period has at least :data:`MIN_CI_N` repetitions, else the repetitions' range:
    a bootstrap of two values is only their range, not a CI.
    """
    ax.scatter(g["varied_period_ms"], g[metric], s=12, color=color, alpha=0.7, zorder=3)
    rows = []
    for period, h in g.groupby("varied_period_ms"):
        values = h[metric].to_numpy(dtype=float)
        if len(values) >= MIN_CI_N:
            est = bootstrap_ci(values, np.mean, ci["confidence"], ci["n_resamples"], ci["seed"])
            value, low, high = est.value, est.low, est.high
        else:
            value, low, high = values.mean(), values.min(), values.max()
        low = low if np.isfinite(low) else value
        high = high if np.isfinite(high) else value
        rows.append((period, value, value - low, high - value))
    x, y, below, above = (np.array(v) for v in zip(*rows))
    ax.errorbar(x, y, yerr=[below, above], color=color, lw=1.5, capsize=2, label=label, zorder=2)


def e1_seed_figures(cells: pd.DataFrame, directory: Path | None = None,
                    ci: dict | None = None) -> plt.Figure:
    """The seed's four figures: the fixed producer's max latency and max interval vs the varied period.

    Parameters
    ----------
    cells : DataFrame
        :func:`rtstudy.e1.load` per-cell rows (latencies and intervals in ms).
    directory : Path, optional
        Where to write the files (default ``report/figures``).
    ci : dict, optional
        ``confidence``, ``n_resamples`` and ``seed`` of the bootstrap CIs
        (the report's parameters; default :data:`DEFAULT_CI`).
    """
    ci = ci or DEFAULT_CI
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
    whiskers = (f"{ci['confidence']:.0%} bootstrap CI" if n >= MIN_CI_N
                else "whiskers: range of the repetitions")
    fig.suptitle(f"Fixed producer vs the other's period, SCHED_DEADLINE (points: {n} repetition(s); "
                 f"line: mean, {whiskers})", fontsize="medium")
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


def _std(x, axis=-1):
    return np.std(x, ddof=1, axis=axis)


def e2_std(frames: pd.DataFrame, runs: pd.DataFrame, directory: Path | None = None,
           ci: dict | None = None) -> plt.Figure:
    """Frame-period std per policy and load factor: each run, and all frames pooled with a CI.

    Parameters
    ----------
    frames, runs : DataFrame
        :func:`rtstudy.e2.load` output (periods and std in ms).
    directory : Path, optional
        Where to write the files (default ``report/figures``).
    ci : dict, optional
        ``confidence``, ``n_resamples`` and ``seed`` of the bootstrap CI of each
        pooled std (default :data:`DEFAULT_CI`).
    """
    ci = ci or DEFAULT_CI
    style()
    models = [m for m in ("native", "python") if m in set(runs["load_work_model"])]
    policies = _policies(runs)
    factors = sorted(runs["load_factor"].unique())
    fig, axes = plt.subplots(1, len(models), figsize=(4.2 * len(models), 3.4),
                             layout="constrained", squeeze=False, sharey=True)
    width = 0.8 / max(len(factors), 1)
    for ax, model in zip(axes[0], models):
        g = runs[runs["load_work_model"] == model]
        f = frames[frames["load_work_model"] == model]
        for j, factor in enumerate(factors):
            color = PALETTE[j % len(PALETTE)]
            for i, policy in enumerate(policies):
                sel = (g["policy"] == policy) & (g["load_factor"] == factor)
                x = i - 0.4 + width * (j + 0.5)
                ax.scatter([x - width / 4] * int(sel.sum()), g.loc[sel, "period_std_ms"], s=10,
                           color=color, alpha=0.6, zorder=3,
                           label=f"{factor:g} loads per CPU" if i == 0 else None)
                pooled = f.loc[(f["policy"] == policy) & (f["load_factor"] == factor), "period_ms"]
                est = bootstrap_ci(pooled, _std, ci["confidence"], ci["n_resamples"], ci["seed"])
                if np.isfinite(est.low):
                    ax.errorbar([x + width / 4], [est.value], yerr=[[est.value - est.low],
                                                                     [est.high - est.value]],
                                fmt="D", ms=3, color=color, capsize=2, zorder=4)
        ax.set_xticks(range(len(policies)), [p.replace("SCHED_", "").replace("_", "\n")
                                             for p in policies], fontsize="small")
        ax.set_yscale("log")
        ax.set_title(f"{model} loads")
    axes[0][0].set_ylabel("frame-period std (ms, log)")
    axes[0][0].legend(fontsize="x-small")
    fig.suptitle("Jitter of the target operator: each run (dots) and all frames pooled "
                 f"(diamond, {ci['confidence']:.0%} bootstrap CI)", fontsize="medium")
    save(fig, "e2_std", directory)
    return fig


def e4_jitter_histograms(hists: pd.DataFrame, directory: Path | None = None) -> plt.Figure:
    """Loop-to-loop delta histograms of the jitter probe, per CPU and load, log-log."""
    style()
    jitter = hists[hists["kind"] == "jitter"]
    loads = [l for l in ("idle", "stress") if l in set(jitter["load"])]
    cpus = sorted(jitter["cpu"].dropna().unique())
    fig, axes = plt.subplots(1, len(loads), figsize=(3.8 * len(loads), 3.2), layout="constrained",
                             squeeze=False, sharey=True)
    for ax, load in zip(axes[0], loads):
        for k, cpu in enumerate(cpus):
            g = jitter[(jitter["load"] == load) & (jitter["cpu"] == cpu)]
            g = g.groupby("latency_ns")["count"].sum().sort_index()
            ax.step(np.clip(g.index.to_numpy(), 1, None), g.to_numpy(), where="mid", lw=0.8,
                    color=PALETTE[k % len(PALETTE)], label=f"CPU {int(cpu)}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("loop-to-loop delta (ns)")
        ax.set_title(load)
    axes[0][0].set_ylabel("count")
    axes[0][0].legend(fontsize="small")
    fig.suptitle("Jitter probe: how long each CPU was taken from a tight loop", fontsize="medium")
    save(fig, "e4_jitter_histograms", directory)
    return fig


def e4_ladder(stats: pd.DataFrame, directory: Path | None = None) -> plt.Figure:
    """The percentile ladder (P50 … max) per CPU and load, beside seed 004's untuned and tuned cores."""
    from rtstudy.seeds import E4_PUBLISHED_NS

    style()
    jitter = stats[stats["kind"] == "jitter"].sort_values(["load", "cpu"])
    steps = ["p50", "p99", "p99.9", "p99.99", "max"]
    fig, ax = plt.subplots(figsize=(5.6, 3.6), layout="constrained")
    for k, (_, r) in enumerate(jitter.iterrows()):
        ax.plot(steps, [r[s] for s in steps], marker="o", ms=4, color=PALETTE[k % len(PALETTE)],
                label=f"CPU {int(r['cpu'])}, {r['load']}")
    for name, values, ls in (("seed 004 untuned", E4_PUBLISHED_NS["untuned"], "--"),
                             ("seed 004 tuned", E4_PUBLISHED_NS["tuned"], ":")):
        ax.plot(steps[:3] + ["max"], [values[s] for s in ("p50", "p99", "p99.9", "max")],
                ls=ls, color="#707070", marker="s", ms=3, label=name)
    ax.set_yscale("log")
    ax.set_ylabel("loop-to-loop delta (ns, log)")
    ax.legend(fontsize="x-small", ncol=2)
    ax.set_title("Percentile ladder: a quiet core keeps its tail near its median", fontsize="medium")
    save(fig, "e4_ladder", directory)
    return fig


def cross_host(xh: pd.DataFrame, directory: Path | None = None) -> plt.Figure | None:
    """Each experiment's headline figure per host, side by side (one panel per experiment).

    Parameters
    ----------
    xh : DataFrame
        :func:`rtstudy.report.cross_host` rows; nothing is drawn when it is empty
        (a single host).
    """
    if xh.empty:
        return None
    style()
    experiments = sorted(xh["experiment"].unique())
    hosts = sorted(xh["host_id"].unique())
    heights = [max(1.6, 0.32 * xh.loc[xh["experiment"] == e, "quantity"].nunique()) for e in experiments]
    fig, axes = plt.subplots(len(experiments), 1, figsize=(7.0, sum(heights) + 0.6),
                             layout="constrained", squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    offsets = np.linspace(-0.25, 0.25, len(hosts)) if len(hosts) > 1 else [0.0]
    for ax, experiment in zip(axes[:, 0], experiments):
        g = xh[xh["experiment"] == experiment]
        quantities = list(dict.fromkeys(g["quantity"]))
        for k, (host_id, off) in enumerate(zip(hosts, offsets)):
            h = g[g["host_id"] == host_id].set_index("quantity").reindex(quantities)
            y = np.arange(len(quantities)) + off
            err = np.vstack([h["value"] - h["low"], h["high"] - h["value"]])
            ax.errorbar(h["value"], y, xerr=np.where(np.isfinite(err), err, 0), fmt="o", ms=4,
                        capsize=2, color=PALETTE[k % len(PALETTE)], label=host_id)
        ax.set_yticks(range(len(quantities)), quantities, fontsize="small")
        ax.invert_yaxis()
        positive = g["value"][g["value"] > 0]
        if len(positive) == len(g) and positive.max() / positive.min() > 30:
            ax.set_xscale("log")  # e.g. E4's ratios and µs side by side
        units = ", ".join(dict.fromkeys(g["unit"]))
        ax.set_title(f"{experiment} ({units})", loc="left")
    axes[0, 0].legend(title="host", fontsize="small", loc="best")
    fig.suptitle("Hosts compared: each experiment's headline, with its CI where defined",
                 fontsize="medium")
    save(fig, "cross_host", directory)
    return fig
