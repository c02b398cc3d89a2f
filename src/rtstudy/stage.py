"""Running one measuring stage: preflight, then the sweep; and executing notebooks.

The DVC stages call :func:`execute_notebook` (through ``rtstudy run NAME``) on
the one experiment notebook, parameterized with the experiment's name; the
executed notebook calls :func:`run_experiment`, so papermill drives the
experiment and the notebook is the lab book of the run. Everything an
experiment contributes comes through the registry (:mod:`rtstudy.experiments`).
"""
from __future__ import annotations

import sys
from pathlib import Path

from rtstudy import experiments, host, params, paths, placement
from rtstudy.harness import CellOutcome, SweepContext, run_sweep

EXPERIMENT_NOTEBOOK = "experiment"  # notebooks/experiment.ipynb runs every measuring stage
REPORT_NOTEBOOK = "report"


class PreflightError(RuntimeError):
    """The host cannot run a stage as configured; nothing was measured."""


def preflight(name: str, cfg: dict, fp: dict) -> list[host.Check]:
    """Run the stage's checks; raise :class:`PreflightError` if any fails."""
    plan = experiments.get(name).plan
    directory = paths.dataset_dir(name, fp["host_id"], cfg["profile"])
    checks = host.preflight(fp, directory, need_realtime=plan.realtime(cfg))
    problems = placement.problems(params.stage_config(params.CPUS, cfg["profile"]), fp)
    problems += plan.host_problems(cfg, fp)
    if problems or any(c.status == "FAIL" for c in checks):
        text = host.format_checks(checks)
        if problems:
            text += "\n" + "\n".join(f"FAIL  {p}" for p in problems)
        raise PreflightError(f"{name} cannot run on this host; nothing was measured:\n{text}")
    return checks


def run_experiment(name: str, cfg: dict, progress: str = "terminal") -> list[CellOutcome]:
    """Preflight, then run every missing cell of experiment ``name`` with the resolved ``cfg``.

    Parameters
    ----------
    name : str
        A registered experiment.
    cfg : dict
        Its validated parameters (:func:`rtstudy.params.stage_config`).
    progress : str
        ``terminal``: the progress bar goes to the process's real stderr (the
        terminal that runs papermill); ``notebook``: to the notebook's output.
    """
    plan = experiments.get(name).plan
    fp = host.current()
    preflight(name, cfg, fp)
    stream = sys.__stderr__ if progress == "terminal" else sys.stderr
    configs = {group: params.stage_config(group, cfg["profile"])
               for group in (*experiments.get(name).params.USES, params.CPUS)}
    directory = paths.dataset_dir(name, fp["host_id"], cfg["profile"])
    where = placement.resolve(configs[params.CPUS], fp)
    print(f"{name}: {where.describe()}", file=stream, flush=True)
    outcomes = run_sweep(plan.plan(cfg, fp, configs), directory,
                         SweepContext.from_fingerprint(fp, cfg["profile"], where), cfg["order_seed"],
                         progress=stream)
    plan.after_sweep(directory)
    return outcomes


def execute_notebook(notebook: str, output: str, parameters: dict) -> Path:
    """Execute ``notebooks/<notebook>.ipynb`` with papermill into ``experiments/<output>.ipynb``."""
    import papermill

    out = paths.executed_notebook(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    papermill.execute_notebook(str(paths.notebook(notebook)), str(out), parameters=parameters,
                               cwd=str(paths.notebooks_dir()), progress_bar=False,
                               kernel_name="rtstudy",
                               # The kernel's own log (a TCP-transport warning at start, a ZMQ
                               # error when an interrupt shuts it down) is noise on a terminal;
                               # the notebook's errors still reach the user through papermill.
                               extra_arguments=["--IPKernelApp.log_level=CRITICAL"])
    return out
