"""The drawing of a run's rows as its :class:`rtstudy.view.View` says: a time series, a
histogram, shared bins. Knows no experiment: :mod:`rtstudy.explore` lays these out in its
figures."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rtstudy.report.figstyle import PALETTE
from rtstudy.view import View

LINESTYLES = ("-", "--", ":", "-.")
FEW_POINTS = 50  # a series shorter than this gets markers: each point is a timed run


def series_groups(rows: pd.DataFrame, view: View) -> list[tuple[object, pd.DataFrame]]:
    """``rows`` split by :attr:`View.series`, as (name, rows) pairs; one ("", rows) without."""
    return list(rows.groupby(view.series)) if view.series else [("", rows)]


def series(ax, rows: pd.DataFrame, view: View, color=None) -> None:
    """One run's observations in order, a line per :attr:`View.series`; ``color`` None: a
    colour per series, else that colour with a line style per series."""
    for k, (name, g) in enumerate(series_groups(rows, view)):
        g = g.sort_values(view.time)
        few = len(g) < FEW_POINTS
        ax.plot(g[view.time], g[view.value], lw=0.7, marker="o" if few else None, ms=3,
                color=PALETTE[k % len(PALETTE)] if color is None else color,
                ls="-" if color is None else LINESTYLES[k % len(LINESTYLES)],
                label=str(name) or None)
    ax.set_xlabel(view.time_label)
    ax.set_ylabel(view.value_label)
    if view.log:
        ax.set_yscale("log")


def bins(rows: pd.DataFrame, view: View) -> np.ndarray:
    """Shared bin edges for ``rows``' values (log-spaced on a log axis)."""
    values = rows[view.value].to_numpy(dtype=float)
    low, high = np.nanmin(values), np.nanmax(values)
    if high <= low:
        low, high = low - 0.5, high + 0.5
    return np.geomspace(max(low, 1e-9), high, 61) if view.log else np.linspace(low, high, 61)


def histogram(ax, rows: pd.DataFrame, view: View, color, label: str = "", share: bool = False,
              edges: np.ndarray | None = None) -> None:
    """``rows``' values as a histogram, log counts; ``share`` normalises to a share of the
    observations, so hosts with different numbers of them compare; ``edges`` None: the bins
    of ``rows`` alone (:func:`bins`)."""
    if view.count:  # the table is a histogram already: its bins, drawn as they are
        counts = rows.groupby(view.value)[view.count].sum().sort_index()
        counts = counts[counts > 0]
        y = counts / counts.sum() if share else counts
        # Dots, not steps: its bins are sparse in the tail, and a step would bridge the gaps.
        ax.plot(counts.index.to_numpy(dtype=float), y.to_numpy(), ls="none", marker=".", ms=3,
                color=color, label=label or None)
    else:
        ax.hist(rows[view.value], bins=bins(rows, view) if edges is None else edges,
                histtype="step" if share else "stepfilled", lw=1.1, color=color,
                alpha=1 if share else 0.8, label=label or None,
                weights=np.full(len(rows), 1 / max(len(rows), 1)) if share else None)
    if view.log:
        ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(view.value_label)
    ax.set_ylabel("share of observations" if share else "observations")
