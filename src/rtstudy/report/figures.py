"""The report's own figures (beyond the experiments'): hosts compared."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from rtstudy.report.figstyle import PALETTE, save, style

def cross_host(xh: pd.DataFrame, directory: Path | None = None) -> plt.Figure | None:
    """Each experiment's headline figure per host, side by side (one panel per experiment).

    Parameters
    ----------
    xh : DataFrame
        :meth:`rtstudy.report.study.Study.cross_host` rows; nothing is drawn when it is empty
        (a single host).
    """
    if xh.empty:
        return None
    style()
    experiments = sorted(xh["experiment"].unique())
    hosts = sorted(xh["host_id"].unique())
    heights = [max(1.6, 0.32 * xh.loc[xh["experiment"] == e, "quantity"].nunique()) for e in experiments]
    fig, axes = plt.subplots(len(experiments), 1, figsize=(7.0, sum(heights) + 0.6),
                             layout="constrained", squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    offsets = np.linspace(-0.25, 0.25, len(hosts)) if len(hosts) > 1 else [0.0]
    for ax, experiment in zip(axes[:, 0], experiments):
        g = xh[xh["experiment"] == experiment]
        quantities = list(dict.fromkeys(g["quantity"]))
        for k, (host_id, off) in enumerate(zip(hosts, offsets)):
            h = g[g["host_id"] == host_id].set_index("quantity").reindex(quantities)
            y = np.arange(len(quantities)) + off
            err = np.vstack([h["value"] - h["low"], h["high"] - h["value"]])
            ax.errorbar(h["value"], y, xerr=np.where(np.isfinite(err), err, 0), fmt="o", ms=4,
                        capsize=2, color=PALETTE[k % len(PALETTE)], label=host_id)
        ax.set_yticks(range(len(quantities)), quantities, fontsize="small")
        ax.invert_yaxis()
        positive = g["value"][g["value"] > 0]
        if len(positive) == len(g) and positive.max() / positive.min() > 30:
            ax.set_xscale("log")  # e.g. E4's ratios and µs side by side
        units = ", ".join(dict.fromkeys(g["unit"]))
        ax.set_title(f"{experiment} ({units})", loc="left")
    axes[0, 0].legend(title="host", fontsize="small", loc="best")
    fig.suptitle("Hosts compared: each experiment's headline, with its CI where defined",
                 fontsize="medium")
    save(fig, "cross_host", directory)
    return fig
