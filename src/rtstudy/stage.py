"""Running one measuring stage: preflight, then the sweep; and executing notebooks.

The DVC stages call :func:`execute_notebook` (through ``rtstudy run``), and the
executed notebook calls :func:`run_experiment`: papermill drives the experiment
and the notebook is the lab book of the run.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

from rtstudy import e3, host, paths
from rtstudy.harness import CellOutcome, SweepContext, run_sweep

# stage name -> (plan function, real-time policies its cells need)
EXPERIMENTS: dict[str, tuple[Callable, tuple[str, ...]]] = {
    e3.EXPERIMENT: (e3.plan, ()),
}


class PreflightError(RuntimeError):
    """The host cannot run a stage as configured; nothing was measured."""


def out_dir(stage: str, profile: str, fp: dict | None = None) -> Path:
    """Where ``stage``'s cells for this host and ``profile`` live."""
    fp = fp or host.current()
    return paths.raw_dir(stage, fp["host_id"], profile)


def preflight(stage: str, profile: str, fp: dict) -> list[host.Check]:
    """Run the stage's checks; raise :class:`PreflightError` if any fails."""
    _, realtime = EXPERIMENTS[stage]
    checks = host.preflight(fp, out_dir(stage, profile, fp), need_realtime=realtime)
    if any(c.status == "FAIL" for c in checks):
        raise PreflightError(f"{stage} cannot run on this host; nothing was measured:\n"
                             + host.format_checks(checks))
    return checks


def run_experiment(stage: str, cfg: dict, progress: str = "terminal") -> list[CellOutcome]:
    """Preflight, then run every missing cell of ``stage`` with the resolved ``cfg``.

    Parameters
    ----------
    stage : str
        A measuring stage (a key of :data:`EXPERIMENTS`).
    cfg : dict
        The stage's validated parameters (:func:`rtstudy.params.stage_config`).
    progress : str
        ``terminal``: the progress bar goes to the process's real stderr (the
        terminal that runs papermill); ``notebook``: to the notebook's output.
    """
    fp = host.current()
    preflight(stage, cfg["profile"], fp)
    plan, _ = EXPERIMENTS[stage]
    stream = sys.__stderr__ if progress == "terminal" else sys.stderr
    return run_sweep(plan(cfg), out_dir(stage, cfg["profile"], fp),
                     SweepContext.from_fingerprint(fp, cfg["profile"]), cfg["order_seed"],
                     progress=stream)


def execute_notebook(name: str, parameters: dict) -> Path:
    """Execute ``notebooks/<name>.ipynb`` with papermill into ``experiments/``."""
    import papermill

    output = paths.executed_notebook(name)
    output.parent.mkdir(parents=True, exist_ok=True)
    papermill.execute_notebook(str(paths.notebook(name)), str(output), parameters=parameters,
                               cwd=str(paths.notebooks_dir()), progress_bar=False,
                               kernel_name="rtstudy",
                               # The kernel's own start-up warning about TCP transport is noise
                               # on a terminal; errors still show.
                               extra_arguments=["--IPKernelApp.log_level=ERROR"])
    return output
