"""What ``notebooks/explore.ipynb`` shows of an E2 run: its frame periods, beside the frame-period
std the seed's benchmark published."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rtstudy.experiments.e2_rt_threads import published
from rtstudy.experiments.e2_rt_threads.conditions import grid, headline_point
from rtstudy.policies import SCHED_DEADLINE
from rtstudy.report.figstyle import PALETTE, SEED_COLOR
from rtstudy.view import View

VIEW = View(table="frames", value="period_ms", value_label="frame period (ms)", time="t_s",
            time_label="time since the first kept frame (s)")
# The headline run's policy: the one the seed's Python benchmark names for its real-time run.
HEADLINE_POLICY = SCHED_DEADLINE


def default_condition(tables: dict[str, pd.DataFrame]) -> str | None:
    """H2's headline point (:func:`conditions.headline_point`) under the seed's real-time
    policy."""
    point = headline_point(grid(tables["runs"]))
    if point.empty:
        return None
    chosen = point[point["policy"] == HEADLINE_POLICY]
    return str((chosen if len(chosen) else point)["label"].iloc[0])


def seed(ax, run: dict[str, pd.DataFrame]) -> str:
    """On ``ax``, the seed's frame-period std, normal and real-time thread (C++ and Python
    versions), with that of ``run`` (its rows of every table) as a line."""
    names = [p["implementation"].removesuffix(" version") for p in published.STD_MS]
    x = np.arange(len(names))
    ax.bar(x - 0.2, [p["normal_ms"] for p in published.STD_MS], 0.4, color=SEED_COLOR,
           label="seed, normal thread")
    ax.bar(x + 0.2, [p["realtime_ms"] for p in published.STD_MS], 0.4, color=SEED_COLOR,
           hatch="///", edgecolor="white", label="seed, real-time thread")
    ax.set_xticks(x, names)
    for _, row in run["runs"].iterrows():
        ax.axhline(row["period_std_ms"], color=PALETTE[0], lw=1.5,
                   label=f"this run ({row['policy']}): {row['period_std_ms']:.3f} ms")
    ax.set_ylabel("frame-period std (ms)")
    return ""  # every run's frame-period std compares with the seed's
