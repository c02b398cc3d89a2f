"""What ``notebooks/explore.ipynb`` shows of an E4 run: its latency histogram, beside the
percentile ladders the source published for an untuned and a tuned core."""
from __future__ import annotations

import pandas as pd

from rtstudy.experiments.e4_host import published
from rtstudy.report.figstyle import PALETTE, SEED_COLOR
from rtstudy.view import View

VIEW = View(table="histograms", value="latency_ns", count="count", log=True,
            value_label="latency, or the probe's loop-to-loop delta (ns)")
STEPS = ("p50", "p99", "p99.9", "max")  # the rungs the source gives


def default_condition(tables: dict[str, pd.DataFrame]) -> str | None:
    """The jitter probe under load on the highest CPU: where a shielded CPU would show."""
    stats = tables["stats"]
    if stats.empty:
        return None
    probe = stats[(stats["kind"] == "jitter") & (stats["load"] == "stress")]
    return str(probe.loc[probe["cpu"].idxmax(), "label"]) if len(probe) else None


def seed(ax, run: dict[str, pd.DataFrame]) -> str:
    """On ``ax``, the source's jitter-probe ladders (untuned and tuned core) with that of ``run``
    (its rows of every table), if it is a jitter-probe run; else says why not."""
    for (name, ladder), ls in zip(published.LADDER_NS.items(), ("--", ":")):
        ax.plot(STEPS, [ladder[s] for s in STEPS], ls=ls, marker="s", ms=3, color=SEED_COLOR,
                label=f"seed, {name} core")
    probe = run["stats"][run["stats"]["kind"] == "jitter"]
    for _, row in probe.iterrows():
        ax.plot(STEPS, [row[s] for s in STEPS], marker="o", ms=4, color=PALETTE[0],
                label=f"this run (CPU {int(row['cpu'])}, {row['load']})")
    ax.set_yscale("log")
    ax.set_ylabel("loop-to-loop delta (ns)")
    return "" if len(probe) else "the source published the jitter probe's ladder only"
