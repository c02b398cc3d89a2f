"""What ``notebooks/explore.ipynb`` shows of an E3 run: the cost per iteration of each timed app
run, beside the cost the SDK guide published."""
from __future__ import annotations

import pandas as pd

from rtstudy.experiments.e3_overhead import published
from rtstudy.experiments.e3_overhead.analysis import counterpart
from rtstudy.report.figstyle import PALETTE, SEED_COLOR
from rtstudy.view import View

# A run is a few timed app runs of different lengths: a histogram of three values says nothing.
VIEW = View(table="runs", value="steady_us_per_iter", value_label="steady cost per iteration (µs)",
            time="iterations", time_label="iterations of the timed app run", histogram=False)


def default_condition(tables: dict[str, pd.DataFrame]) -> str | None:
    """Tx→Rx under Greedy: the guide's headline figure."""
    runs = tables["runs"]
    if runs.empty:
        return None
    chosen = runs[(runs["app"] == "ping") & (runs["scheduler"] == "greedy")]
    return str(chosen["label"].iloc[0]) if len(chosen) else None


def seed(ax, run: dict[str, pd.DataFrame]) -> str:
    """On ``ax``, the guide's cost per iteration of each app and scheduler (a range where it
    gives one), with the steady cost of ``run`` (its rows of every table) at its counterpart."""
    keys = list(published.US_PER_ITERATION)
    for k, key in enumerate(keys):
        low, high = published.US_PER_ITERATION[key]
        ax.bar(k, high - low or 0.6, bottom=low if high > low else low - 0.3, width=0.5,
               color=SEED_COLOR, label="seed (value or range)" if k == 0 else None)
    ax.set_xticks(range(len(keys)), [f"{app}\n{sched.replace('_', ' ')}" for app, sched in keys],
                  fontsize="x-small")
    rows = run["runs"]
    if len(rows):
        first = rows.iloc[0]
        k = keys.index((first["app"], counterpart(first["scheduler"], first["workers"])))
        ax.plot([k] * len(rows), rows["steady_us_per_iter"], ls="none", marker="o", ms=5,
                color=PALETTE[0], label=f"this run ({first['scheduler_label']})")
    ax.set_ylabel("cost per iteration (µs)")
    ax.set_ylim(bottom=0)
    return ""  # every configuration has a published counterpart
