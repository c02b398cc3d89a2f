"""The one style of every figure, and how figures are written.

Every figure uses :func:`style` and is written by :func:`save` as PDF (fonts
embedded as TrueType), PNG (300 dpi) and SVG under ``report/figures/``. The
figures themselves live with their experiment (``rtstudy/experiments/<name>/figures.py``):
one function per figure, named after the file it writes, taking data frames.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import seaborn as sns

from rtstudy import paths

PALETTE = sns.color_palette("colorblind")
SEED_COLOR = "#b0b0b0"  # the source documents' published figures


def style() -> None:
    """The one style of every figure: paper context, embedded TrueType fonts."""
    sns.set_theme(context="paper", style="ticks", palette=PALETTE, font_scale=1.1)
    plt.rcParams.update({
        "pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none",
        "figure.dpi": 110, "savefig.dpi": 300, "savefig.bbox": "tight",
        "axes.spines.top": False, "axes.spines.right": False,
        "axes.titleweight": "bold", "legend.frameon": False,
    })


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
