"""Plan, apply and revert the host tuning: a runtime CPU shield, and what only a reboot can do.

``plan`` checks a CPU list against the host and says what isolating it takes:
boot parameters (applied by the administrator, then a reboot) and runtime
settings. ``apply`` changes only the runtime settings, and only when asked with
``yes=True``: it first writes a revert file holding every file's previous
content, the services it stops and the shield it makes, then changes them.
``revert`` puts them back. The runtime settings:

- the *shield* (``method``): every task but the study's pinned threads off the CPUs,
  by a cgroup v1 cpuset or by thread affinity (:mod:`rtstudy.machine.shield`);
- every IRQ affinity (and the default one) off the CPUs; IRQs that refuse
  (per-CPU, managed) are listed;
- ``kernel.sched_rt_runtime_us = -1``: no real-time throttling, and
  SCHED_DEADLINE threads may be pinned (the kernel's admission control is off
  with it, so the experiments check their own bandwidth per CPU); as it is with ``keep``;
- the ``performance`` governor and no idle state deeper than polling on the
  CPUs, where the host exposes them;
- unbound workqueues on the housekeeping CPUs (/sys/devices/virtual/workqueue/cpumask);
- irqbalance stopped (it would move the IRQs back).

Paths are taken under ``root`` so tests work on a copy of a host's /proc and
/sys; the shield acts on real processes, so it is tested on this host moving
only the test's own processes (``tasks``).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rtstudy import atomic
from rtstudy.machine import idle, kernelfs, shield as shielding
from rtstudy.machine.audit_host import boot_steps, kernel_args, suggested_isolation
from rtstudy.machine.kernelfs import (CPU_DIR, CpuListError, cpu_mask, format_cpu_list, list_names,
                                      mask_to_cpus, online_cpus, read as read_file, running,
                                      smt_siblings, to_cpus)
from rtstudy.machine.shield import Step

REVERT_SCHEMA = 3  # 2: the cpuset shield's record had no method; 1: no shield at all
RT_RUNTIME = "/proc/sys/kernel/sched_rt_runtime_us"
DEFAULT_AFFINITY = "/proc/irq/default_smp_affinity"
WORKQUEUE_MASK = "/sys/devices/virtual/workqueue/cpumask"
# Services that undo the tuning while they run (the quiet-core article).
SERVICES = ("irqbalance",)
RT_THROTTLING = ("lift", "keep")  # sched_rt_runtime_us to -1 (the default), or as it is


class TuningError(ValueError):
    """A CPU list or request that cannot be planned, applied or reverted; the message says why."""


def parse_cpus(text: str) -> list[int]:
    """A user's CPU list (:func:`rtstudy.machine.kernelfs.parse_user_cpus`); TuningError when
    malformed."""
    try:
        return kernelfs.parse_user_cpus(text)
    except CpuListError as exc:
        raise TuningError(str(exc)) from None


@dataclass(frozen=True)
class Plan:
    """What isolating ``cpus`` takes on one host.

    Attributes
    ----------
    cpus, housekeeping : tuple of int
        The CPUs to isolate, and the online CPUs left for everything else.
    kernel_args : str
        The kernel command-line fragment (isolcpus, nohz_full, rcu_nocbs, irqaffinity).
    boot : str
        Where to put ``kernel_args`` (GRUB or extlinux) and how to activate it.
    commands : tuple of str
        The runtime settings as shell commands, as ``apply`` would change them now.
    warnings : tuple of str
        Problems that do not stop the plan, such as SMT siblings left unisolated.
    shield : str or None
        The shield ``apply`` makes (``cpuset`` or ``affinity``, :mod:`rtstudy.machine.shield`), or
        None.
    rt_throttling : str
        ``lift`` (``sched_rt_runtime_us`` to -1) or ``keep`` (left as it is).
    """

    cpus: tuple[int, ...]
    housekeeping: tuple[int, ...]
    kernel_args: str
    boot: str
    commands: tuple[str, ...]
    warnings: tuple[str, ...]
    shield: str | None = None
    rt_throttling: str = "lift"

    @property
    def cpu_list(self) -> str:
        return format_cpu_list(self.cpus)


def _runtime_changes(cpus, housekeeping, root: Path,
                     rt_throttling: str = "lift") -> tuple[list[tuple[str, str]], list[str]]:
    """The files ``apply`` would write, as (host path, new value), and the services it would stop.

    Files already holding the new value are left out, so a second apply of the
    same CPUs changes nothing.
    """
    writes = [(RT_RUNTIME, "-1")] if rt_throttling == "lift" else []
    writes += [(f"{CPU_DIR}/cpu{cpu}/cpufreq/scaling_governor", "performance") for cpu in cpus]
    for cpu in cpus:
        # Idle states with an exit latency (haltpoll's, C-states) off: the CPU polls when idle.
        writes += [(f"{CPU_DIR}/cpu{cpu}/cpuidle/state{s.index}/disable", "1")
                   for s in idle.states(root, cpu) if s.latency_us > 0]
    hk_list = format_cpu_list(housekeeping)
    for irq in list_names(root, "/proc/irq", r"\d+") or []:
        path = f"/proc/irq/{irq}/smp_affinity_list"
        if set(to_cpus(read_file(root, path).text) or []) & set(cpus):
            writes.append((path, hk_list))
    if set(mask_to_cpus(read_file(root, DEFAULT_AFFINITY).text) or []) & set(cpus):
        writes.append((DEFAULT_AFFINITY, cpu_mask(housekeeping)))
    if set(mask_to_cpus(read_file(root, WORKQUEUE_MASK).text) or []) & set(cpus):
        writes.append((WORKQUEUE_MASK, cpu_mask(housekeeping)))
    # A missing file (no cpufreq, say) is a setting this host does not have.
    writes = [(path, value) for path, value in writes
              if (current := read_file(root, path)).text is not None and current.text != value]
    services = [name for name in SERVICES if running(root, name)]
    return writes, services


def _commands(writes: list[tuple[str, str]], services: list[str]) -> list[str]:
    """The shell commands a person would type for ``writes`` and ``services``."""
    commands = [f"sysctl -w kernel.sched_rt_runtime_us={v}" for p, v in writes if p == RT_RUNTIME]
    governed = [int(m.group(1)) for p, _ in writes if (m := re.search(r"/cpu(\d+)/cpufreq/", p))]
    if governed:
        commands.append(f"cpupower -c {format_cpu_list(governed)} frequency-set -g performance")
    commands += [f"systemctl stop {name}" for name in services]
    commands += [f"echo {v} > {p}" for p, v in writes
                 if p.startswith("/proc/irq/") or "/cpuidle/" in p or p == WORKQUEUE_MASK]
    return commands


def _checked_cpus(cpus: str, root: Path) -> tuple[list[int], list[int]]:
    """The CPUs ``cpus`` names and the online CPUs it leaves for housekeeping.

    Raises
    ------
    TuningError
        When ``cpus`` is malformed, names a CPU that is not online, every online CPU or CPU 0.
    """
    wanted = parse_cpus(cpus)
    online = online_cpus(root)
    if online is None:
        raise TuningError(f"cannot read {CPU_DIR}/online under {root} to check {cpus!r}")
    unknown = [c for c in wanted if c not in online]
    if unknown:
        raise TuningError(f"CPU {format_cpu_list(unknown)} in {cpus!r} is not online on this host "
                          f"(online CPUs: {format_cpu_list(online)})")
    housekeeping = [c for c in online if c not in wanted]
    if not housekeeping:
        hint = (f", e.g. {format_cpu_list(suggested_isolation(online))!r}"
                if suggested_isolation(online) else "")
        raise TuningError(f"{cpus!r} names every online CPU ({format_cpu_list(online)}): leave at "
                          "least one housekeeping CPU for the kernel, IRQs and unpinned threads"
                          + hint)
    if 0 in wanted:
        raise TuningError(f"{cpus!r} names CPU 0, which stays a housekeeping CPU (it keeps the "
                          "boot CPU's timekeeping and the IRQs that cannot move); shield other "
                          f"CPUs, e.g. {format_cpu_list(online[1:])!r}")
    return wanted, housekeeping


def _smt_warnings(wanted: list[int], root: Path) -> list[str]:
    """A warning for each CPU of ``wanted`` whose SMT sibling stays a housekeeping CPU."""
    warnings = []
    for cpu, siblings in smt_siblings(root, wanted).items():
        left = [s for s in siblings if s not in wanted]
        if left:
            warnings.append(f"CPU {cpu} shares its core with CPU {format_cpu_list(left)} (SMT), which "
                            f"stays a housekeeping CPU, so its work will disturb CPU {cpu}: isolate "
                            f"whole cores ({format_cpu_list(set(wanted) | set(left))}) or turn SMT off")
    return warnings


def plan(cpus: str, root: Path = Path("/"), shield: str | None = None,
         rt_throttling: str = "lift") -> Plan:
    """Check ``cpus`` against the host under ``root`` and plan their isolation.

    Parameters
    ----------
    cpus : str
        The CPUs to isolate, e.g. ``"2-3"`` (see ``CPU_LIST_SYNTAX``).
    root : Path
        The file-system root whose /proc and /sys describe the host.
    shield : str, optional
        Also shield the CPUs (:mod:`rtstudy.machine.shield`): ``cpuset``, ``affinity``
        or ``auto`` (a writable cgroup v1 cpuset, else affinity); the CLI's
        default is ``auto``. None: no shield.
    rt_throttling : str
        ``lift`` (``sched_rt_runtime_us`` to -1) or ``keep``: left as it is, to measure a
        shielded CPU with the kernel's throttling on too.

    Returns
    -------
    Plan

    Raises
    ------
    TuningError
        When ``cpus`` is malformed, names a CPU that is not online, names
        every online CPU (the kernel needs at least one housekeeping CPU) or
        CPU 0, or (with ``shield``) the host cannot make that shield, or ``rt_throttling`` is
        neither ``lift`` nor ``keep``.
    """
    if rt_throttling not in RT_THROTTLING:
        raise TuningError(f"RT throttling {rt_throttling!r}: expected one of "
                          f"{', '.join(RT_THROTTLING)}")
    root = Path(root)
    wanted, housekeeping = _checked_cpus(cpus, root)
    if shield == "auto":
        shield = shielding.choose(root)
    if shield and (problem := shielding.problem(shield, root)):
        raise TuningError(f"cannot shield CPU {format_cpu_list(wanted)}: {problem}")
    warnings = _smt_warnings(wanted, root)
    args = kernel_args(wanted, housekeeping)
    writes, services = _runtime_changes(wanted, housekeeping, root, rt_throttling)
    commands = _commands(writes, services)
    if shield:
        commands = shielding.commands(shield, wanted, housekeeping, root) + commands
    if all(read_file(root, f"{CPU_DIR}/cpu{c}/cpufreq/scaling_governor").missing for c in wanted):
        commands.append("# no cpufreq: the firmware or hypervisor sets the CPU frequency")
    return Plan(tuple(wanted), tuple(housekeeping), args, boot_steps(root, args), tuple(commands),
                tuple(warnings), shield, rt_throttling)


SHIELD_WORDS = {
    "cpuset": "a cgroup v1 cpuset of its own, without load balancing",
    "affinity": "every movable thread's CPU affinity, as `tuna isolate` does; the scheduler's "
                "load balancing stays on",
}


def format_plan(p: Plan) -> str:
    """The plan as text for a person to read and act on."""
    lines = [f"isolate CPUs {p.cpu_list}; housekeeping CPUs {format_cpu_list(p.housekeeping)}"]
    lines += [f"warning: {w}" for w in p.warnings]
    lines += ["", "kernel command line (takes effect after a reboot):", f"  {p.kernel_args}",
              f"  {p.boot}", "",
              f"runtime settings (`rtstudy host apply --cpus {p.cpu_list} --yes` makes these changes "
              "and records how to revert them):"]
    lines += [f"  {c}" for c in p.commands] or ["  nothing to change"]
    if p.rt_throttling == "keep":
        lines += ["", "real-time throttling kept: kernel.sched_rt_runtime_us stays as it is, so "
                  "the shield admits SCHED_DEADLINE as a root domain of its own: E1 refuses to "
                  "run (--rt-throttling lift, the default, sets it to -1)"]
    if p.shield:
        lines += ["", f"shield method: {p.shield} ({SHIELD_WORDS[p.shield]}); runtime shielding "
                  "cannot stop the scheduler tick, RCU callbacks or per-CPU kernel threads on the "
                  "shielded CPUs: only the kernel command line above can"]
    lines += ["", "then check the host with `rtstudy host audit`"]
    return "\n".join(lines)


def systemctl(action: str, name: str) -> None:
    """Run ``systemctl ACTION NAME``; RuntimeError with systemctl's message when it fails."""
    proc = subprocess.run(["systemctl", action, name], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip() or f"systemctl {action} {name} exited {proc.returncode}")


def default_revert_file(root: Path = Path("/")) -> Path:
    """Where ``apply`` records how to revert, unless told otherwise: a host path, as it is host state."""
    return Path(root) / "var/lib/rtstudy/tuning-revert.json"


def _write_step(root: Path, path: str, text: str) -> Step:
    """Write the host file ``path`` (as named on the host) under ``root``."""
    return shielding.write(root / path.lstrip("/"), text, path)


def _service_step(service: Callable[[str, str], None], action: str, name: str) -> Step:
    try:
        service(action, name)
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        return Step(action, name, error=str(exc))
    return Step(action, name)


def _new_revert_file(root: Path, revert_file: Path | None, yes: bool) -> Path:
    """Where ``apply`` records how to revert; TuningError without ``yes`` or when it exists."""
    if not yes:
        raise TuningError(f"refusing to change the host under {root} without yes=True (the CLI's --yes)")
    revert_file = Path(revert_file) if revert_file else default_revert_file(root)
    if revert_file.exists():
        raise TuningError(f"{revert_file} exists: an earlier apply has not been reverted; revert it "
                          "first, or name another revert file")
    return revert_file


def _recorded_writes(writes: list[tuple[str, str]], root: Path) -> tuple[list[dict], list[Step]]:
    """The revert file's record of each write (path, previous and new content), and a failed
    Step for each file whose previous content could not be read."""
    files, steps = [], []
    for path, value in writes:
        try:
            previous = (root / path.lstrip("/")).read_text()
        except OSError as exc:
            # Never change what could not be recorded: it could not be reverted.
            steps.append(Step("write", path, value, f"not changed, previous value unreadable: "
                                                    f"{exc.strerror}"))
            continue
        files.append({"path": path, "previous": previous, "new": value})
    return files, steps


def _shield_record(plan: Plan, root: Path, tasks: list[int] | None) -> shielding.ShieldRecord | None:
    """The revert file's record of the shield ``plan`` asks for (None: no shield).

    Raises
    ------
    TuningError
        When the host under ``root`` cannot make that shield.
    """
    if not plan.shield:
        return None
    if problem := shielding.problem(plan.shield, root):
        raise TuningError(f"cannot shield CPU {plan.cpu_list}: {problem}")
    return shielding.record(plan.shield, plan.cpus, plan.housekeeping, root, tasks)


def apply(plan: Plan, root: Path = Path("/"), revert_file: Path | None = None, yes: bool = False,
          service: Callable[[str, str], None] | None = None,
          tasks: list[int] | None = None) -> list[Step]:
    """Apply ``plan``'s runtime settings under ``root``, recording first how to revert them.

    With ``plan.shield``, makes that shield (:mod:`rtstudy.machine.shield`). Sets
    kernel.sched_rt_runtime_us to -1, the ``performance`` governor and no idle
    state deeper than polling on the plan's CPUs (where the host has them),
    every IRQ affinity that includes them (and the default one) to the
    housekeeping CPUs, and stops irqbalance (which would move the IRQs back).
    Boot parameters are never touched. A write that fails is recorded in its
    Step and the others go on.

    Parameters
    ----------
    plan : Plan
        From ``plan()``; the files to change are found again, as they are now.
    root : Path
        The file-system root; anything but ``/`` is a sandbox copy of a host.
    revert_file : Path, optional
        Where to record the previous values (default ``default_revert_file(root)``);
        it must not exist yet, so an earlier apply's record is never lost.
    yes : bool
        Must be True: changing the host is never implicit.
    service : callable, optional
        ``service(action, name)`` starts or stops a service; default ``systemctl``.
    tasks : list of int, optional
        With a shield: the processes to move off the shielded CPUs; None moves
        every process (the shield's purpose). A test passes its own processes,
        so no other process moves.

    Returns
    -------
    list of Step
        Every service stop, shield step and file write, with its error if it failed.

    Raises
    ------
    TuningError
        Without ``yes=True``, or when ``revert_file`` already exists.
    """
    root = Path(root)
    revert_file = _new_revert_file(root, revert_file, yes)
    service = service or systemctl
    writes, services = _runtime_changes(plan.cpus, plan.housekeeping, root, plan.rt_throttling)
    files, steps = _recorded_writes(writes, root)
    shield = _shield_record(plan, root, tasks)
    if not files and not services and not shield:
        return steps
    record = {"schema": REVERT_SCHEMA, "root": str(root.resolve()), "cpus": plan.cpu_list,
              "files": files, "services": services, "shield": shield}
    atomic.write_text(revert_file, json.dumps(record, indent=2) + "\n")
    # irqbalance first: running, it would move the IRQs back as they are written.
    steps += [_service_step(service, "stop", name) for name in services]
    if shield:
        steps += shielding.make(shield, root, tasks)
    steps += [_write_step(root, f["path"], f["new"] + "\n") for f in files]
    return steps


def revert(revert_file: Path | None = None, root: Path = Path("/"),
           service: Callable[[str, str], None] | None = None) -> list[Step]:
    """Restore what ``apply`` recorded in ``revert_file``, then rename it ``*.reverted``.

    Parameters
    ----------
    revert_file : Path, optional
        The record written by ``apply`` (default ``default_revert_file(root)``).
    root : Path
        The file-system root; must be the one the record was made under.
    service : callable, optional
        ``service(action, name)``; default ``systemctl``. Stopped services are started again.

    Returns
    -------
    list of Step
        Every file restored and service started, with its error if it failed.

    Raises
    ------
    TuningError
        When there is no revert file, or it was made under another root (a
        sandbox's record must never be replayed on the real host, nor the reverse).
    """
    root = Path(root)
    revert_file = Path(revert_file) if revert_file else default_revert_file(root)
    try:
        record = json.loads(revert_file.read_text())
    except FileNotFoundError:
        raise TuningError(f"no revert file {revert_file}: nothing to revert") from None
    if record.get("schema") not in (1, 2, REVERT_SCHEMA):
        raise TuningError(f"{revert_file} has schema {record.get('schema')!r}, expected {REVERT_SCHEMA}")
    if record["root"] != str(root.resolve()):
        raise TuningError(f"{revert_file} records changes under {record['root']}, not under {root}")
    service = service or systemctl
    steps = shielding.remove(record["shield"], root) if record.get("shield") else []
    for f in record["files"]:
        # A file that still holds its previous value needs nothing: apply's write to it failed
        # (a managed IRQ refuses every write, the old value included).
        current = read_file(root, f["path"]).text
        if current is None or current != f["previous"].strip():
            steps.append(_write_step(root, f["path"], f["previous"]))
    steps += [_service_step(service, "start", name) for name in record["services"]]
    os.replace(revert_file, revert_file.with_name(revert_file.name + ".reverted"))
    return steps


def format_steps(steps: list[Step]) -> str:
    """One line per step: ``ok`` or ``FAILED`` with the reason."""
    lines = []
    for s in steps:
        if s.action == "write":
            what = f"write {s.value} -> {s.target}"
        elif s.action in ("move", "affinity"):
            what = f"{s.action} {s.value} -> {s.target}"
        else:
            what = f"{s.action} {s.target}"
        lines.append(f"FAILED  {what}: {s.error}" if s.error else f"ok      {what}")
    return "\n".join(lines) or "nothing to change"
