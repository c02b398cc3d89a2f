"""Running one measuring stage: preflight, then the sweep; and executing notebooks.

The DVC stages call :func:`execute_notebook` (through ``rtstudy run``), and the
executed notebook calls :func:`run_experiment`: papermill drives the experiment
and the notebook is the lab book of the run.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rtstudy import e1, e2, e3, e4, host, params, paths
from rtstudy.harness import CellOutcome, SweepContext, run_sweep


@dataclass(frozen=True)
class Experiment:
    """How to run one measuring stage.

    ``plan(cfg, fp)`` gives the cells; ``realtime(cfg)`` names the policies
    they need (checked by the preflight); ``host_problems(cfg, fp)`` lists what
    this host cannot run (e.g. more SCHED_DEADLINE bandwidth than it admits).
    """

    plan: Callable[[dict, dict], list]
    realtime: Callable[[dict], tuple[str, ...]] = lambda cfg: ()
    host_problems: Callable[[dict, dict], list[str]] = lambda cfg, fp: []


EXPERIMENTS: dict[str, Experiment] = {
    e3.EXPERIMENT: Experiment(plan=lambda cfg, fp: e3.plan(cfg)),
    e1.EXPERIMENT: Experiment(
        plan=e1.plan,
        realtime=lambda cfg: ("SCHED_DEADLINE",) if "deadline" in cfg["policies"] else (),
        host_problems=e1.host_problems),
    e2.EXPERIMENT: Experiment(plan=e2.plan, realtime=e2.needed_policies,
                              host_problems=e2.host_problems),
    # The floor runs at E2's period and priority, so E4 reads E2's parameters too.
    e4.EXPERIMENT: Experiment(
        plan=lambda cfg, fp: e4.plan(cfg, fp, params.stage_config(e2.EXPERIMENT, cfg["profile"])),
        realtime=e4.needed_policies, host_problems=e4.host_problems),
}


class PreflightError(RuntimeError):
    """The host cannot run a stage as configured; nothing was measured."""


def out_dir(stage: str, profile: str, fp: dict | None = None) -> Path:
    """Where ``stage``'s cells for this host and ``profile`` live."""
    fp = fp or host.current()
    return paths.raw_dir(stage, fp["host_id"], profile)


def preflight(stage: str, cfg: dict, fp: dict) -> list[host.Check]:
    """Run the stage's checks; raise :class:`PreflightError` if any fails."""
    exp = EXPERIMENTS[stage]
    checks = host.preflight(fp, out_dir(stage, cfg["profile"], fp), need_realtime=exp.realtime(cfg))
    problems = exp.host_problems(cfg, fp)
    if problems or any(c.status == "FAIL" for c in checks):
        text = host.format_checks(checks)
        if problems:
            text += "\n" + "\n".join(f"FAIL  {p}" for p in problems)
        raise PreflightError(f"{stage} cannot run on this host; nothing was measured:\n{text}")
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
    preflight(stage, cfg, fp)
    stream = sys.__stderr__ if progress == "terminal" else sys.stderr
    return run_sweep(EXPERIMENTS[stage].plan(cfg, fp), out_dir(stage, cfg["profile"], fp),
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
                               # The kernel's own log (a TCP-transport warning at start, a ZMQ
                               # error when an interrupt shuts it down) is noise on a terminal;
                               # the notebook's errors still reach the user through papermill.
                               extra_arguments=["--IPKernelApp.log_level=CRITICAL"])
    return output
