"""What ``notebooks/explore.ipynb`` shows of an E5 run: each requested thread's priority as the
kernel gave it (−1: its operator never ran). E5's results are outcomes, not time series: its
report table says more."""
from __future__ import annotations

import pandas as pd

from rtstudy.report.figstyle import PALETTE
from rtstudy.view import View

VIEW = View(table="threads", value="priority", value_label="priority read back (−1: never ran)",
            time="ran", time_label="operator ran (1) or not (0)", histogram=False)


def default_condition(tables: dict[str, pd.DataFrame]) -> str | None:
    """The control: what the host can give (4.x's label; a 5.0 host falls back to its first)."""
    labels = set(tables["outcomes"]["label"]) if len(tables["outcomes"]) else set()
    return "control" if "control" in labels else next(
        (label for label in sorted(labels) if label.startswith("control")), None)


def seed(ax, run: dict[str, pd.DataFrame]) -> str:
    """E5's source published sentences, not a figure: beside them, whether each requested
    thread's operator ran, and what Holoscan did with the request."""
    threads = run["threads"]
    ax.bar(threads["op"], threads["ran"], color=PALETTE[0], label="its operator ran (1) or not (0)")
    ax.set_ylim(0, 1.2)
    ax.set_ylabel("ran")
    outcome = run["outcomes"]
    did = outcome["outcome"].iloc[0] if len(outcome) else "not recorded"
    ax.set_title(f"Holoscan: {did}", fontsize="small", loc="left")
    return "the source published sentences, not a figure"
