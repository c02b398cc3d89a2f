"""E4's figures: one function per figure, named after the file it writes."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from rtstudy.experiments.e4_host import published
from rtstudy.report.figstyle import PALETTE, save, style

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
    """The percentile ladder (P50 … max) per CPU and load, beside the published untuned and tuned cores."""
    style()
    jitter = stats[stats["kind"] == "jitter"].sort_values(["load", "cpu"])
    steps = ["p50", "p99", "p99.9", "p99.99", "max"]
    fig, ax = plt.subplots(figsize=(5.6, 3.6), layout="constrained")
    # One color per CPU and load, a line per run; the legend names each group once.
    for k, ((load, cpu), g) in enumerate(jitter.groupby(["load", "cpu"], sort=False)):
        for j, (_, r) in enumerate(g.iterrows()):
            ax.plot(steps, [r[s] for s in steps], marker="o", ms=3, lw=1, alpha=0.8,
                    color=PALETTE[k % len(PALETTE)],
                    label=f"CPU {int(cpu)}, {load} ({len(g)} runs)" if j == 0 else None)
    for name, values, ls in (("published, untuned core", published.LADDER_NS["untuned"], "--"),
                             ("published, tuned core", published.LADDER_NS["tuned"], ":")):
        ax.plot(steps[:3] + ["max"], [values[s] for s in ("p50", "p99", "p99.9", "max")],
                ls=ls, color="#707070", marker="s", ms=3, label=name)
    ax.set_yscale("log")
    ax.set_ylabel("loop-to-loop delta (ns, log)")
    ax.legend(fontsize="x-small", ncol=2)
    ax.set_title("Percentile ladder: a quiet core keeps its tail near its median", fontsize="medium")
    save(fig, "e4_ladder", directory)
    return fig
