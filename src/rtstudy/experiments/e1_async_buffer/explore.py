"""What ``notebooks/explore.ipynb`` shows of an E1 run: each producer's latency at rx, beside
the seed's scenario S1 figure."""
from __future__ import annotations

import re

import pandas as pd

from rtstudy.experiments.e1_async_buffer import published
from rtstudy.report.figstyle import PALETTE, SEED_COLOR
from rtstudy.view import View

VIEW = View(table="messages", value="latency_ms", value_label="latency at rx (ms, from t_start)",
            time="index", time_label="message index", series="producer")
BUFFER_MARKERS = {"default": "s", "async": "D"}


def default_condition(tables: dict[str, pd.DataFrame]) -> str | None:
    """The seed's coupled case: S1, default buffer, SCHED_DEADLINE, native work, tx2 slowest."""
    cells = tables["cells"]
    if cells.empty:
        return None
    coupled = cells[(cells["scenario"] == "S1") & (cells["buffer"] == "default")
                    & (cells["policy"] == "deadline") & (cells["work_model"] == "native")]
    if coupled.empty:
        return None
    return str(coupled.loc[coupled["varied_period_ms"].idxmax(), "label"])


def _approx(text: str) -> tuple[float, float]:
    """``"~30"`` → (30, 30), ``"~13–15"`` → (13, 15): read off the seed's plots (ms)."""
    values = [float(v) for v in re.findall(r"\d+(?:\.\d+)?", text)]
    return min(values), max(values)


def seed(ax, run: dict[str, pd.DataFrame]) -> str:
    """On ``ax``, the seed's S1 figure (tx1's max latency against tx2's period, per buffer) with
    the fixed producer's max latency of ``run`` (its rows of every table), if it is of S1; else
    says why not."""
    for buffer, points in published.MAX_LATENCY_MS["S1"].items():
        periods = sorted(points)
        low, high = zip(*(_approx(points[p]) for p in periods))
        ax.vlines(periods, low, high, color=SEED_COLOR, lw=3)
        ax.plot(periods, [(a + b) / 2 for a, b in zip(low, high)], color=SEED_COLOR,
                marker=BUFFER_MARKERS[buffer], ms=4, lw=0.8, label=f"seed, {buffer} buffer")
    fixed = run["cells"][(run["cells"]["role"] == "fixed") & (run["cells"]["scenario"] == "S1")]
    for _, row in fixed.iterrows():
        ax.plot(row["varied_period_ms"], row["latency_max_ms"], ls="none", ms=7,
                marker=BUFFER_MARKERS.get(row["buffer"], "o"), color=PALETTE[0],
                label=f"this run, {row['buffer']} buffer")
    ax.set_xlabel("tx2 period (ms)")
    ax.set_ylabel("tx1 max latency (ms)")
    ax.set_ylim(bottom=0)
    return "" if len(fixed) else "this run is not of S1, the scenario the seed plotted"
