"""The one style of every figure, and how figures are written.

Every figure uses :func:`style` and is written by :func:`save` as PDF (fonts
embedded as TrueType), PNG (300 dpi) and SVG under ``report/figures/`` (or only the formats
``$RTSTUDY_FIGURE_FORMATS`` names, e.g. ``png``: a quicker render, see :func:`formats`); the report
shows it as :func:`to_html` makes it, with its words (:func:`alt_text`) for readers who
cannot see it. The figures themselves live with their experiment
(``rtstudy/experiments/<name>/figures.py``): one function per figure, named after the file it
writes, taking data frames.
"""
from __future__ import annotations

import base64
import html
import io
import os
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib import ticker
import seaborn as sns

from rtstudy import paths

FORMATS = ("pdf", "png", "svg")
FORMATS_ENV = "RTSTUDY_FIGURE_FORMATS"
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


def log_axis(ax: plt.Axes, which: str = "x") -> None:
    """Label a log axis in plain numbers: 1, 2 and 5 per decade where it spans two decades or
    less, else each decade. Matplotlib labels a span under a decade at its minor ticks (2×10¹,
    3×10¹ …), which overlap."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    low, high = ax.get_xlim() if which == "x" else ax.get_ylim()
    subs = (1.0, 2.0, 5.0) if high <= 100 * low else (1.0,)
    axis.set_major_locator(ticker.LogLocator(subs=subs))
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(ticker.NullFormatter())


def formats() -> tuple[str, ...]:
    """The formats :func:`save` writes: all of :data:`FORMATS`, or those ``$RTSTUDY_FIGURE_FORMATS``
    names (comma-separated).

    Writing the PDF (its fonts subset and embedded) and the SVG takes about half of drawing the
    figures (docs/benchmarks.md, "The report's render time"); a render to read, not to publish
    from, can skip them. The report's page and numbers are the same either way.
    """
    value = os.environ.get(FORMATS_ENV, "").strip()
    if not value:
        return FORMATS
    chosen = tuple(dict.fromkeys(f.strip().lower() for f in value.split(",") if f.strip()))
    unknown = [f for f in chosen if f not in FORMATS]
    problem = (f"{', '.join(unknown)} is not one of them" if unknown else "it names no format"
               if not chosen else "")
    if problem:
        raise ValueError(f"{FORMATS_ENV}={value!r}: the figure formats are {', '.join(FORMATS)} "
                         f"and {problem}; name some of them (e.g. png), or unset it for all three")
    return chosen


def save(fig: plt.Figure, name: str, directory: Path | None = None) -> list[Path]:
    """Write ``fig`` as ``name``.pdf, .png and .svg (or the :func:`formats` chosen); return the
    paths."""
    directory = directory or paths.figures_dir()
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for ext in formats():
        path = directory / f"{name}.{ext}"
        fig.savefig(path, metadata={"Creator": "rtstudy"} if ext != "png" else None)
        written.append(path)
    return written


def alt_text(fig: plt.Figure) -> str:
    """The figure in words, for an image's alt text: its title, then each panel's title and
    what it plots against what, from the figure's own labels (so they cannot drift apart)."""
    parts = [fig.get_suptitle()]
    for ax in fig.axes:
        if ax.get_visible():
            axes = " against ".join(label for label in (ax.get_ylabel(), ax.get_xlabel()) if label)
            parts.append(": ".join(p for p in (ax.get_title() or ax.get_title("left"), axes) if p))
    # Once each (panels often share a label), on one line.
    text = ". ".join(dict.fromkeys(" ".join(p.split()) for p in parts if p.strip()))
    return text or "A figure without a title"


def to_html(fig: plt.Figure) -> str:
    """The figure as an HTML image: a PNG at the figure's own dpi (as Jupyter shows it),
    embedded, with :func:`alt_text` as its ``alt``."""
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=fig.dpi, bbox_inches="tight")
    data = base64.b64encode(png.getvalue()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt_text(fig))}">'
