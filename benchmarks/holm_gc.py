"""The report's parts built from the data present, with Holm's adjustment by hand (the study's)
or by statsmodels' ``multipletests``, which runs ``gc.collect()`` on every call.

    .venv/bin/python benchmarks/holm_gc.py byhand|statsmodels

Builds what notebooks/report.ipynb shows (``Study.load`` and every block, no HTML written) in
this process and prints its wall time and the time spent collecting garbage (``gc.callbacks``),
both in s, and how many Holm adjustments it made. Run each choice in a process of its own,
one after the other: one process per render, since the garbage collected depends on everything
the process has built.
"""
from __future__ import annotations

import gc
import os
import sys
import time

import numpy as np


def statsmodels_holm(pvalues) -> np.ndarray:
    """``stats.holm`` as it was before 2026-12-07: statsmodels' adjustment of the finite p's."""
    from statsmodels.stats.multitest import multipletests
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    idx = np.flatnonzero(np.isfinite(p))
    if idx.size:
        out[idx] = multipletests(p[idx], method="holm")[1]
    return out


def main() -> int:
    choice = sys.argv[1] if len(sys.argv) > 1 else ""
    if choice not in ("byhand", "statsmodels"):
        print("usage: .venv/bin/python benchmarks/holm_gc.py byhand|statsmodels", file=sys.stderr)
        return 2
    os.environ.setdefault("RTSTUDY_FIGURE_FORMATS", "png")
    import matplotlib
    matplotlib.use("Agg")
    from rtstudy.experiments.e1_async_buffer import analysis as e1
    from rtstudy.experiments.e2_rt_threads.analysis import contrasts
    from rtstudy.inference import stats
    from rtstudy.report.study import Study

    chosen, calls = (statsmodels_holm if choice == "statsmodels" else stats.holm), [0]

    def holm(pvalues) -> np.ndarray:
        calls[0] += 1
        return chosen(pvalues)

    # Every module that imported holm by name, as well as its own.
    stats.holm = e1.holm = contrasts.holm = holm

    collecting, started = [0.0], [0.0]

    def clock(phase, info) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            collecting[0] += time.perf_counter() - started[0]

    gc.callbacks.append(clock)
    t = time.perf_counter()
    study = Study.load(None, None)
    study.title()
    study.front()
    study.verdict_blocks()
    for section in study.sections.values():
        study.section_blocks(section)
    study.hosts_blocks()
    study.sdk_blocks()
    study.lab_book()
    study.footer()
    print(f"{choice}: {time.perf_counter() - t:.1f} s, of which collecting garbage "
          f"{collecting[0]:.1f} s; {calls[0]} Holm adjustments")
    return 0


if __name__ == "__main__":
    sys.exit(main())
