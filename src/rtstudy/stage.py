"""Running one measuring stage: preflight, then the sweep; and executing notebooks.

The DVC stages call :func:`execute_notebook` (through ``rtstudy run NAME``) on
the one experiment notebook, parameterized with the experiment's name; the
executed notebook calls :func:`run_experiment`, so papermill drives the
experiment and the notebook is the lab book of the run. Everything an
experiment contributes comes through the registry (:mod:`rtstudy.registry`).
"""
from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from rtstudy.machine import host, placement
from rtstudy import params, paths, registry
from rtstudy.sdks import sdk
from rtstudy.sdks.kernelspec import without_iri_checker
from rtstudy.data import sessions
from rtstudy.measure import preflight as checks  # stage.preflight is this stage's own
from rtstudy.measure.harness import CellOutcome, SweepContext, refuse_if_measuring_is_off, run_sweep

EXPERIMENT_NOTEBOOK = "experiment"  # notebooks/experiment.ipynb runs every measuring stage
REPORT_NOTEBOOK = "report"


class PreflightError(RuntimeError):
    """The host cannot run a stage as configured; nothing was measured."""


def preflight(name: str, cfg: dict, fp: dict, cpus: dict) -> list[checks.Check]:
    """Run the stage's checks; raise :class:`PreflightError` if any fails.

    ``cpus`` is the resolved ``cpus`` group, as the command read it."""
    exp = registry.get(name)
    directory = paths.dataset_dir(name, fp["host_id"], cfg["profile"])
    found = checks.preflight(fp, directory, need_realtime=exp.plan.realtime(cfg))
    problems = placement.problems(cpus, fp)
    problems += exp.plan.host_problems(cfg, fp)
    if problems or any(c.status == "FAIL" for c in found):
        text = checks.format_checks(found)
        if problems:
            text += "\n" + "\n".join(f"FAIL  {p}" for p in problems)
        raise PreflightError(f"{name} cannot run on this host; nothing was measured:\n{text}")
    return found


def run_experiment(name: str, cfg: dict, progress: str, configs: Mapping[str, dict],
                   here: dict | None = None) -> list[CellOutcome]:
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
    configs : mapping of str to dict
        Every parameter group resolved for ``cfg``'s profile (:func:`rtstudy.params.read`),
        as ``rtstudy run`` read and checked them once and handed them down.
    here : dict, optional
        The host's fingerprint (:func:`rtstudy.machine.host.current`) ``rtstudy run`` took
        for its own preflight; None takes it.
    """
    refuse_if_measuring_is_off(f"stage {name}")  # before an SDK root is built, too
    exp = registry.get(name)
    stream = sys.__stderr__ if progress == "terminal" else sys.stderr
    # What the plan reads: the groups it USES, and where threads go.
    used = {group: configs[group] for group in (*exp.params.USES, params.CPUS)}
    # Every SDK environment is checked (and a missing root built) before anything is measured.
    here, runs = here or host.current(), []  # one host state for every environment's sweep
    for env in environments(name, cfg, stream, configs[params.SDK]):
        fp = env.fingerprint(here)
        preflight(name, cfg, fp, used[params.CPUS])
        runs.append((env, fp))
    outcomes = []
    for env, fp in runs:
        env.prepare()
        directory = paths.dataset_dir(name, fp["host_id"], cfg["profile"])
        where = placement.resolve(used[params.CPUS], fp)
        print(f"{name}: Holoscan {sdk.version_of(fp)} ({env.name}); {where.describe()}",
              file=stream, flush=True)
        shared = placement.overlap(used[params.CPUS])
        if shared:
            print(f"{name}: warning: {shared}", file=stream, flush=True)
        session = {params.SESSION: sessions.plans(directory)}
        outcomes += run_sweep(exp.plan.plan(cfg, fp, {**used, **session}), directory,
                              SweepContext.from_fingerprint(fp, cfg["profile"], where, env),
                              cfg["order_seed"], progress=stream)
        exp.plan.after_sweep(directory)
    return outcomes


def environments(name: str, cfg: dict, stream, sdk_cfg: dict) -> list[sdk.Environment]:
    """The SDK environments experiment ``name`` runs in: ``params.yaml: sdk`` versions it has an
    app for (its plan's ``SDK_APIS``; empty: it runs no Holoscan, so once, in the study's
    venv), each built if needed; the rest skipped with a sentence.

    A version this host cannot run (no root or debootstrap for the Debian 13 root) is skipped
    with its reason, so the other versions are still measured; a version listed but unknown,
    or a build that fails, stops the stage before anything is measured. ``sdk_cfg`` is the
    resolved ``sdk`` group, as the command read it.
    """
    apis = registry.get(name).plan.SDK_APIS
    if not apis:  # an experiment without Holoscan (E4) measures the host once
        return [sdk.venv()]
    found = []
    for version in sdk_cfg["versions"]:
        if sdk.known(version).api not in apis:
            print(f"{name}: not ported to Holoscan {version}'s API yet: measured on the other "
                  "versions only", file=stream, flush=True)
            continue
        cannot = sdk.problems([version])
        if cannot:
            print(f"{name}: skipping Holoscan {version}: " + "; ".join(cannot), file=stream,
                  flush=True)
            continue
        try:
            found.append(sdk.environment(version, build=True))
        except sdk.SdkError as exc:
            raise PreflightError(f"{name} cannot run Holoscan {version}; nothing was measured: "
                                 f"{exc}") from None
    return found


def execute_notebook(notebook: str, output: str, parameters: dict) -> Path:
    """Execute ``notebooks/<notebook>.ipynb`` with papermill into ``executed/<output>.ipynb``."""
    without_iri_checker()
    import papermill

    out = paths.executed_notebook(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    papermill.execute_notebook(str(paths.notebook(notebook)), str(out), parameters=parameters,
                               cwd=str(paths.notebooks_dir()), progress_bar=False,
                               kernel_name="rtstudy",
                               # Unix sockets of its own, not TCP ports (rtstudy.sdks.kernelspec).
                               kernel_manager_class="rtstudy.sdks.kernelspec.IpcKernelManager",
                               # The kernel's own log (a TCP-transport warning at start, a ZMQ
                               # error when an interrupt shuts it down) is noise on a terminal;
                               # the notebook's errors still reach the user through papermill.
                               extra_arguments=["--IPKernelApp.log_level=CRITICAL"])
    return out
