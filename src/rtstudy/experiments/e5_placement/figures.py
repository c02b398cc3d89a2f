"""E5's figure: one function, named after the file it writes."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from rtstudy.experiments.e5_placement import analysis
from rtstudy.experiments.e5_placement.provoke import NOT_IN_4X
from rtstudy.report.figstyle import PALETTE, save, style

# One colour per outcome kind: as requested, a recorded fallback, refused, not as requested.
COLOURS = {analysis.RAN: PALETTE[2], analysis.FALLBACK: PALETTE[1],
           analysis.REJECTED: PALETTE[0], analysis.FAILED: PALETTE[3]}
OTHER = "#b0b0b0"


def e5_outcomes(table: pd.DataFrame, directory: Path | None = None) -> plt.Figure:
    """Each condition's promise beside what Holoscan did, coloured by outcome."""
    style()
    fig, ax = plt.subplots(figsize=(7.5, 0.32 * len(table) + 1.2), layout="constrained")
    for y, (_, r) in enumerate(table.iterrows()):
        for x, word in enumerate((r["promise"], r["outcome"])):
            if not word:
                continue
            colour = COLOURS.get(word, OTHER)
            ax.barh(y, 1, left=x, color=colour, edgecolor="white")
            ax.text(x + 0.5, y, word, ha="center", va="center", fontsize=6.5)
    labels = [r["provocation"] + ("" if r["probe_failure_policy"] == NOT_IN_4X else
                                  f", {r['probe_failure_policy']}")
              + (f", {r['irq_isolation']}" if r["provocation"] == "irq_isolation" else "")
              for _, r in table.iterrows()]
    ax.set_yticks(range(len(table)), labels, fontsize=7)
    ax.set_xticks([0.5, 1.5], ["the reference's promise", "what Holoscan did"])
    ax.set_xlim(0, 2)
    ax.invert_yaxis()
    ax.set_title("E5: placements Holoscan cannot give, and what it did with them",
                 fontsize="medium")
    save(fig, "e5_outcomes", directory)
    return fig
