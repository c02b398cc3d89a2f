"""The study on a shielded host: plan, ask, apply, measure, and always revert.

``rtstudy host study`` (``make study-tuned``) is the one command that moves
every task off a CPU. It prints the plan, asks (or takes ``--yes``), applies the
runtime shield (:mod:`rtstudy.machine.tuning`, which writes its revert file before the
first change), runs the measuring command (``dvc repro``: the shielded host has
its own fingerprint, so its data is a dataset of its own) under a time limit,
and reverts in a ``finally``. SIGTERM and SIGHUP are turned into an exception so
the revert runs on them as on Ctrl-C and on failure; only SIGKILL (or a power
cut) can leave the shield in place, and then the revert file says so: the next
apply refuses until `rtstudy host revert` has restored the host.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from rtstudy.machine import kernelfs, tuning
from rtstudy.measure.process import set_child_limits

DEFAULT_TIMEOUT_MIN = 90


class Interrupted(KeyboardInterrupt):
    """A signal asked the tuned study to stop; the host is reverted on the way out, and the
    command line reports it as it does Ctrl-C."""


def _raise_on(signum, frame) -> None:
    raise Interrupted(f"stopped by {signal.Signals(signum).name}")


def default_cpus() -> str:
    """The last online CPU: CPU 0 stays a housekeeping CPU."""
    online = kernelfs.online_cpus() or []
    return str(online[-1]) if len(online) > 1 else ""


def check(cpus: str, method: str = "auto", revert_file: Path | None = None,
          rt_throttling: str = "lift") -> tuning.Plan:
    """Everything that would stop the shield, checked before anything is measured.

    ``make study-tuned`` runs this first, so that a host that cannot be
    shielded (CPU 0 asked, no housekeeping CPU left, a cpuset that is not
    writable, no root, a shield or revert file left behind) is told so before
    the untuned study's minutes are spent.

    Raises
    ------
    TuningError
        Naming the problem and its fix.
    """
    if os.geteuid() != 0:
        raise tuning.TuningError("shielding CPUs changes other processes and kernel settings: run "
                                 "as root (`sudo make study-tuned`)")
    if not cpus:
        raise tuning.TuningError("this host has one CPU: nothing is left to shield (CPU 0 stays "
                                 "a housekeeping CPU)")
    plan = tuning.plan(cpus, shield=method, rt_throttling=rt_throttling)
    revert_file = Path(revert_file) if revert_file else tuning.default_revert_file()
    if revert_file.exists():
        raise tuning.TuningError(f"{revert_file} exists: an earlier apply has not been reverted; "
                                 "restore the host with `rtstudy host revert` first")
    return plan


def confirm(plan: tuning.Plan, yes: bool) -> None:
    """Print the plan; go on with ``yes``, else ask on a terminal, else refuse."""
    print(tuning.format_plan(plan), flush=True)
    if yes:
        return
    if not sys.stdin.isatty():
        raise tuning.TuningError("this changes the host (see the plan above): pass --yes "
                                 "(`make study-tuned YES=1`) to go on without a question")
    answer = input(f"\nShield CPU {plan.cpu_list}, run the study and revert? [y/N] ")
    if answer.strip().lower() not in ("y", "yes"):
        raise tuning.TuningError("not confirmed: nothing was changed")


def run(cpus: str, command: list[str], yes: bool = False, revert_file: Path | None = None,
        timeout_min: float = DEFAULT_TIMEOUT_MIN, only_this_process: bool = False,
        method: str = "auto", rt_throttling: str = "lift") -> int:
    """Shield ``cpus``, run ``command`` there, revert; the command's exit status.

    Parameters
    ----------
    cpus : str
        The CPUs to shield (CPU 0 never).
    command : list of str
        What to run on the shielded host (``dvc repro``); it runs in its own
        process group, killed with everything it started on timeout or signal.
    yes : bool
        Change the host without asking.
    revert_file : Path, optional
        Where apply records how to revert (default
        :func:`rtstudy.machine.tuning.default_revert_file`).
    timeout_min : float
        The bound on ``command``, in minutes.
    only_this_process : bool
        Move only this process (and so what it starts) off the shield, not
        every process: for tests, which must move no other process.
    method : str
        The shield's method (:mod:`rtstudy.machine.shield`): ``auto``, ``cpuset`` or ``affinity``.
    rt_throttling : str
        ``lift`` (``sched_rt_runtime_us`` to -1 while shielded) or ``keep`` (as it is).

    Raises
    ------
    TuningError
        A refused plan or an unconfirmed one (nothing changed), or an apply
        that failed part-way (reverted at once).
    """
    plan = check(cpus, method, revert_file, rt_throttling)
    confirm(plan, yes)
    revert_file = Path(revert_file) if revert_file else tuning.default_revert_file()
    previous = {sig: signal.signal(sig, _raise_on) for sig in (signal.SIGTERM, signal.SIGHUP)}
    proc = None
    try:
        _apply(plan, revert_file, only_this_process)
        print(f"shielded CPU {plan.cpu_list}; running: {' '.join(command)} "
              f"(at most {timeout_min:g} min)", flush=True)
        proc = subprocess.Popen(command, preexec_fn=set_child_limits)
        try:
            return proc.wait(timeout=timeout_min * 60)
        except subprocess.TimeoutExpired:
            print(f"rtstudy: the tuned study ran longer than {timeout_min:g} min and was stopped; "
                  "completed cells are kept", file=sys.stderr)
            return 124
    finally:
        if proc is not None and proc.poll() is None:
            _stop(proc)
        if revert_file.exists():
            steps = tuning.revert(revert_file)
            print(tuning.format_steps(steps))
            print(f"host restored; the record is kept as {revert_file}.reverted", flush=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _apply(plan: tuning.Plan, revert_file: Path, only_this_process: bool) -> None:
    """Make the shield (:func:`rtstudy.machine.tuning.apply`) and print its steps.

    Raises
    ------
    TuningError
        When a step failed that leaves a half-made shield; :func:`run` reverts it.
    """
    steps = tuning.apply(plan, revert_file=revert_file, yes=True,
                         tasks=[os.getpid()] if only_this_process else None)
    print(tuning.format_steps(steps), flush=True)
    # IRQs that refuse (per-CPU, managed) are expected; anything else means a half-made shield.
    failed = [s for s in steps if s.error and not s.target.startswith("/proc/irq/")]
    if failed:
        raise tuning.TuningError("applying the shield failed part-way ("
                                 + "; ".join(f"{s.target}: {s.error}" for s in failed)
                                 + "); the host is being restored, nothing was measured")


def _stop(proc: subprocess.Popen) -> None:
    """Stop the measuring command's process group: SIGINT, then SIGKILL after 30 s."""
    try:
        os.killpg(proc.pid, signal.SIGINT)  # the harness removes a partial cell on SIGINT
        proc.wait(timeout=30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
