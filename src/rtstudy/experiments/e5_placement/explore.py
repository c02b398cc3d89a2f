"""What ``notebooks/explore.ipynb`` shows of an E5 run: each requested thread's priority as the
kernel gave it (−1: its operator never ran). E5's results are outcomes, not time series: its
report table says more."""
from __future__ import annotations

import pandas as pd

from rtstudy.view import View

VIEW = View(table="threads", value="priority", value_label="priority read back (−1: never ran)",
            time="ran", time_label="operator ran (1) or not (0)", histogram=False)


def default_condition(tables: dict[str, pd.DataFrame]) -> str | None:
    """The control: what the host can give."""
    outcomes = tables["outcomes"]
    control = outcomes[outcomes["provocation"] == "control"] if len(outcomes) else outcomes
    return str(control["label"].iloc[0]) if len(control) else None


def seed(ax, run: dict[str, pd.DataFrame]) -> str:
    """E5's source published sentences, not a figure: nothing to draw beside the run."""
    ax.set_axis_off()
    return "the source (NVIDIA's 5.0 API reference) published sentences, not a figure"
