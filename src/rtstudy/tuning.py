"""Plan, apply and revert the host tuning: a runtime CPU shield, and what only a reboot can do.

``plan`` checks a CPU list against the host and says what isolating it takes:
boot parameters (applied by the administrator, then a reboot) and runtime
settings. ``apply`` changes only the runtime settings, and only when asked with
``yes=True``: it first writes a revert file holding every file's previous
content, the services it stops and the shield it makes, then changes them.
``revert`` puts them back. The runtime settings:

- the *shield* (``shield=True``): two cgroup v1 cpusets, ``rtstudy-shield``
  (the CPUs, exclusive, not load-balanced) and ``rtstudy-system`` (the
  housekeeping CPUs), every movable process moved into the latter, and load
  balancing off at the cpuset root, so the shielded CPUs form their own
  scheduling domain that nothing runs on unless pinned there. This is what
  ``cset shield`` (Debian's ``cpuset``) does; it is written out here because
  the revert must be recorded before the first change and restore exactly
  what was there (``cset shield --reset`` keeps no record and moves every
  task to the root, including tasks that were in other cpusets), its sets'
  names ("system", "user") may collide with a host's own, and the tests must
  be able to move only their own processes. ``tuna --isolate`` instead
  rewrites every thread's affinity, which a revert could not restore exactly;
- every IRQ affinity (and the default one) off the CPUs; IRQs that refuse
  (per-CPU, managed) are listed;
- ``kernel.sched_rt_runtime_us = -1``: no real-time throttling, and
  SCHED_DEADLINE threads may be pinned (the kernel's admission control is off
  with it, so the experiments check their own bandwidth per CPU);
- the ``performance`` governor and no idle state deeper than polling on the
  CPUs, where the host exposes them;
- irqbalance stopped (it would move the IRQs back).

Paths are taken under ``root`` so tests work on a copy of a host's /proc and
/sys; the shield needs a real cpuset hierarchy, so it is tested on this host
with a cpuset that holds only the test's own process (``tasks``).
"""
from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rtstudy.audit import (CPU_DIR, GRUB_STEPS, cpu_mask, format_cpu_list, kernel_args, list_names,
                           mask_to_cpus, online_cpus, read_file, running, smt_siblings,
                           suggested_isolation, to_cpus)
from rtstudy.host import SHIELD_CPUSET, SYSTEM_CPUSET, cpuset_root

REVERT_SCHEMA = 2
CPU_LIST_SYNTAX = "comma-separated CPU numbers and ranges, e.g. '2-3', '1,3' or '2-3,6'"
RT_RUNTIME = "/proc/sys/kernel/sched_rt_runtime_us"
DEFAULT_AFFINITY = "/proc/irq/default_smp_affinity"
# Services that undo the tuning while they run (the quiet-core article).
SERVICES = ("irqbalance",)


class TuningError(ValueError):
    """A CPU list or request that cannot be planned, applied or reverted; the message says why."""


def parse_cpus(text: str) -> list[int]:
    """Parse a CPU list given by a user, strictly.

    Parameters
    ----------
    text : str
        CPU numbers and ranges, e.g. ``"2-3"`` or ``"1,3"``.

    Returns
    -------
    list of int
        The CPU numbers, sorted, without duplicates.

    Raises
    ------
    TuningError
        When ``text`` is not such a list or a range runs backwards.
    """
    if not re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", text.strip()):
        raise TuningError(f"CPU list {text!r} is malformed: expected {CPU_LIST_SYNTAX}")
    cpus = set()
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        if hi and int(hi) < int(lo):
            raise TuningError(f"CPU list {text!r} has the backward range {part!r}: expected "
                              f"{CPU_LIST_SYNTAX}")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return sorted(cpus)


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
    shield : bool
        Whether ``apply`` makes the cpuset shield (see the module docstring).
    """

    cpus: tuple[int, ...]
    housekeeping: tuple[int, ...]
    kernel_args: str
    boot: str
    commands: tuple[str, ...]
    warnings: tuple[str, ...]
    shield: bool = False

    @property
    def cpu_list(self) -> str:
        return format_cpu_list(self.cpus)


def _runtime_changes(cpus, housekeeping, root: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """The files ``apply`` would write, as (host path, new value), and the services it would stop.

    Files already holding the new value are left out, so a second apply of the
    same CPUs changes nothing.
    """
    writes = [(RT_RUNTIME, "-1")]
    writes += [(f"{CPU_DIR}/cpu{cpu}/cpufreq/scaling_governor", "performance") for cpu in cpus]
    for cpu in cpus:
        # Idle states with an exit latency (haltpoll's, C-states) off: the CPU polls when idle.
        for state in list_names(root, f"{CPU_DIR}/cpu{cpu}/cpuidle", r"state\d+") or []:
            latency = read_file(root, f"{CPU_DIR}/cpu{cpu}/cpuidle/{state}/latency").text
            if latency and latency.isdigit() and int(latency) > 0:
                writes.append((f"{CPU_DIR}/cpu{cpu}/cpuidle/{state}/disable", "1"))
    hk_list = format_cpu_list(housekeeping)
    for irq in list_names(root, "/proc/irq", r"\d+") or []:
        path = f"/proc/irq/{irq}/smp_affinity_list"
        if set(to_cpus(read_file(root, path).text) or []) & set(cpus):
            writes.append((path, hk_list))
    if set(mask_to_cpus(read_file(root, DEFAULT_AFFINITY).text) or []) & set(cpus):
        writes.append((DEFAULT_AFFINITY, cpu_mask(housekeeping)))
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
                 if p.startswith("/proc/irq/") or "/cpuidle/" in p]
    return commands


def _shield_commands(base: Path, cpus, housekeeping) -> list[str]:
    """The cpuset shield as the shell commands a person would type (``cset shield`` by hand)."""
    system, shield = base / SYSTEM_CPUSET, base / SHIELD_CPUSET
    mems = (base / "cpuset.mems").read_text().strip() if (base / "cpuset.mems").exists() else "0"
    return [f"mkdir {system} {shield}",
            f"echo {format_cpu_list(housekeeping)} > {system}/cpuset.cpus; "
            f"echo {mems} > {system}/cpuset.mems",
            f"echo {format_cpu_list(cpus)} > {shield}/cpuset.cpus; echo {mems} > {shield}/cpuset.mems; "
            f"echo 1 > {shield}/cpuset.cpu_exclusive; echo 0 > {shield}/cpuset.sched_load_balance",
            f"for p in $(cat {base}/cgroup.procs); do echo $p > {system}/cgroup.procs; done"
            "  # kernel threads bound to their CPUs refuse, and stay",
            f"echo 0 > {base}/cpuset.sched_load_balance"]


def shield_problem(root: Path = Path("/")) -> str | None:
    """Why a cpuset shield cannot be made on the host under ``root``, with the fix; None if it can."""
    base = cpuset_root(root)
    if base is None:
        v2 = (Path(root) / "sys/fs/cgroup/cgroup.controllers").exists()
        return ("no cgroup v1 cpuset hierarchy is mounted (see /proc/mounts)"
                + ("; this host has cgroup v2 only, whose isolated cpuset partitions rtstudy does "
                   "not make yet" if v2 else "")
                + ": mount one (`mkdir -p /sys/fs/cgroup/cpuset && mount -t cgroup -o cpuset "
                  "cpuset /sys/fs/cgroup/cpuset`), or plan without the shield (--no-shield)")
    if not (base / "cpuset.cpus").is_file() or not os.access(base, os.W_OK):
        return (f"the cpuset hierarchy at {base} is not writable by this user: run as root (in a "
                "container: --privileged), or plan without the shield (--no-shield)")
    if (base / SHIELD_CPUSET).exists() or (base / SYSTEM_CPUSET).exists():
        return (f"{base / SHIELD_CPUSET} or {base / SYSTEM_CPUSET} already exists: an earlier "
                "shield was not reverted; undo it with `rtstudy host revert` (or, without a "
                f"revert file, move its tasks back to {base}/cgroup.procs and rmdir both)")
    return None


def plan(cpus: str, root: Path = Path("/"), shield: bool = False) -> Plan:
    """Check ``cpus`` against the host under ``root`` and plan their isolation.

    Parameters
    ----------
    cpus : str
        The CPUs to isolate, e.g. ``"2-3"`` (see ``CPU_LIST_SYNTAX``).
    root : Path
        The file-system root whose /proc and /sys describe the host.
    shield : bool
        Also shield the CPUs with cpusets (the module docstring); the CLI's
        default, refused where no writable cpuset hierarchy exists.

    Returns
    -------
    Plan

    Raises
    ------
    TuningError
        When ``cpus`` is malformed, names a CPU that is not online, names
        every online CPU (the kernel needs at least one housekeeping CPU) or
        CPU 0, or (with ``shield``) the host cannot make the shield.
    """
    root = Path(root)
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
    if shield and (problem := shield_problem(root)):
        raise TuningError(f"cannot shield CPU {format_cpu_list(wanted)}: {problem}")
    warnings = []
    for cpu, siblings in smt_siblings(root, wanted).items():
        left = [s for s in siblings if s not in wanted]
        if left:
            warnings.append(f"CPU {cpu} shares its core with CPU {format_cpu_list(left)} (SMT), which "
                            f"stays a housekeeping CPU, so its work will disturb CPU {cpu}: isolate "
                            f"whole cores ({format_cpu_list(set(wanted) | set(left))}) or turn SMT off")
    args = kernel_args(wanted, housekeeping)
    writes, services = _runtime_changes(wanted, housekeeping, root)
    commands = _commands(writes, services)
    if shield:
        commands = _shield_commands(cpuset_root(root), wanted, housekeeping) + commands
    if all(read_file(root, f"{CPU_DIR}/cpu{c}/cpufreq/scaling_governor").missing for c in wanted):
        commands.append("# no cpufreq: the firmware or hypervisor sets the CPU frequency")
    return Plan(tuple(wanted), tuple(housekeeping), args, GRUB_STEPS.format(args=args),
                tuple(commands), tuple(warnings), shield)


def format_plan(p: Plan) -> str:
    """The plan as text for a person to read and act on."""
    lines = [f"isolate CPUs {p.cpu_list}; housekeeping CPUs {format_cpu_list(p.housekeeping)}"]
    lines += [f"warning: {w}" for w in p.warnings]
    lines += ["", "kernel command line (takes effect after a reboot):", f"  {p.kernel_args}",
              f"  {p.boot}", "",
              f"runtime settings (`rtstudy host apply --cpus {p.cpu_list} --yes` makes these changes "
              "and records how to revert them):"]
    lines += [f"  {c}" for c in p.commands] or ["  nothing to change"]
    if p.shield:
        lines += ["", "runtime shielding cannot stop the scheduler tick, RCU callbacks or per-CPU "
                  "kernel threads on the shielded CPUs: only the kernel command line above can"]
    lines += ["", "then check the host with `rtstudy host audit`"]
    return "\n".join(lines)


@dataclass(frozen=True)
class Step:
    """One change made by ``apply`` or ``revert``.

    Attributes
    ----------
    action : str
        ``write``, ``stop``, ``start``, ``mkdir``, ``rmdir`` or ``move`` (processes between cpusets).
    target : str
        The file (its path on the host), the service or the cpuset folder.
    value : str
        What was written, or what was moved; empty for a service.
    error : str
        Why it failed, empty when it succeeded.
    """

    action: str
    target: str
    value: str = ""
    error: str = ""


def systemctl(action: str, name: str) -> None:
    """Run ``systemctl ACTION NAME``; RuntimeError with systemctl's message when it fails."""
    proc = subprocess.run(["systemctl", action, name], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip() or f"systemctl {action} {name} exited {proc.returncode}")


def default_revert_file(root: Path = Path("/")) -> Path:
    """Where ``apply`` records how to revert, unless told otherwise: a host path, as it is host state."""
    return Path(root) / "var/lib/rtstudy/tuning-revert.json"


def _write_file(path: Path, text: str) -> None:
    """Write ``text`` in one write(2), as ``echo`` does: procfs and sysfs take one value per write.

    No O_CREAT: a kernel file that is not there is an error, not a file to create.
    """
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _write(path: Path, text: str, shown: str) -> Step:
    """Write ``text`` to ``path`` as one Step named ``shown``; a refusal is the Step's error."""
    try:
        _write_file(path, text)
    except OSError as exc:
        # EINVAL/EIO on some IRQs is normal (per-CPU and managed IRQs refuse).
        return Step("write", shown, text.strip(), f"{exc.strerror} (errno {exc.errno})")
    return Step("write", shown, text.strip())


def _write_step(root: Path, path: str, text: str) -> Step:
    """Write the host file ``path`` (as named on the host) under ``root``."""
    return _write(root / path.lstrip("/"), text, path)


def _service_step(service: Callable[[str, str], None], action: str, name: str) -> Step:
    try:
        service(action, name)
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        return Step(action, name, error=str(exc))
    return Step(action, name)


def _write_atomic(path: Path, text: str) -> None:
    """Write ``path`` so that it is complete on disk or absent, even if the host hangs next."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def _move_processes(pids, into: Path) -> Step:
    """Move each process of ``pids`` into the cpuset ``into``; those that refuse stay, and are named.

    Kernel threads bound to their CPUs (per-CPU workers, kthreadd, workqueue
    rescuers) refuse (EINVAL). A process that exited meanwhile (ESRCH) is no
    longer there to move.
    """
    moved, refused = 0, []
    for pid in pids:
        try:
            _write_file(into / "cgroup.procs", f"{pid}\n")
            moved += 1
        except OSError as exc:
            if exc.errno != errno.ESRCH:
                refused.append(f"{_comm(pid)}[{pid}]")
    value = f"{moved} of {len(pids)} processes"
    if refused:
        shown = ", ".join(refused[:8]) + (f" and {len(refused) - 8} more" if len(refused) > 8 else "")
        value += f"; {len(refused)} kernel threads refuse to move and stay: {shown}"
    return Step("move", str(into), value)


def _procs(cpuset: Path) -> list[int]:
    try:
        return [int(x) for x in (cpuset / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def _make_shield(base: Path, plan: Plan, tasks: list[int] | None) -> list[Step]:
    """Make the cpuset shield of ``plan`` under ``base``; stops at the first step that fails."""
    mems = (base / "cpuset.mems").read_text().strip()
    system, shield = base / SYSTEM_CPUSET, base / SHIELD_CPUSET
    steps = []
    for folder, settings in ((system, [("cpuset.cpus", format_cpu_list(plan.housekeeping)),
                                       ("cpuset.mems", mems)]),
                             (shield, [("cpuset.cpus", format_cpu_list(plan.cpus)),
                                       ("cpuset.mems", mems), ("cpuset.cpu_exclusive", "1"),
                                       ("cpuset.sched_load_balance", "0")])):
        try:
            folder.mkdir()
            steps.append(Step("mkdir", str(folder)))
        except OSError as exc:
            return steps + [Step("mkdir", str(folder), error=f"{exc.strerror} (errno {exc.errno})")]
        for name, value in settings:
            steps.append(_write(folder / name, value + "\n", str(folder / name)))
            if steps[-1].error:
                return steps
    steps.append(_move_processes(_procs(base) if tasks is None else tasks, system))
    balance = base / "cpuset.sched_load_balance"
    steps.append(_write(balance, "0\n", str(balance)))
    return steps


def _remove_shield(record: dict) -> list[Step]:
    """Undo :func:`_make_shield`: every process back to the root cpuset, both cpusets removed,
    the root's load balancing as it was."""
    base = Path(record["base"])
    steps = []
    for folder in (base / SHIELD_CPUSET, base / SYSTEM_CPUSET):
        if not folder.exists():
            continue
        # A process forked into the cpuset while we move the others keeps it busy: try again.
        for attempt in range(20):
            pids = _procs(folder)
            if pids:
                steps.append(_move_processes(pids, base))
            try:
                folder.rmdir()
                steps.append(Step("rmdir", str(folder)))
                break
            except OSError as exc:
                if exc.errno != errno.EBUSY or attempt == 19:
                    steps.append(Step("rmdir", str(folder),
                                      error=f"{exc.strerror} (errno {exc.errno})"))
                    break
                time.sleep(0.05)
    balance = base / "cpuset.sched_load_balance"
    steps.append(_write(balance, record["root_load_balance"] + "\n", str(balance)))
    return steps


def apply(plan: Plan, root: Path = Path("/"), revert_file: Path | None = None, yes: bool = False,
          service: Callable[[str, str], None] | None = None,
          tasks: list[int] | None = None) -> list[Step]:
    """Apply ``plan``'s runtime settings under ``root``, recording first how to revert them.

    With ``plan.shield``, makes the cpuset shield (the module docstring). Sets
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
        With a shield: the processes to move into the housekeeping cpuset;
        None moves every process of the cpuset root (the shield's purpose). A
        test passes its own processes, so no other process moves.

    Returns
    -------
    list of Step
        Every service stop, cpuset step and file write, with its error if it failed.

    Raises
    ------
    TuningError
        Without ``yes=True``, or when ``revert_file`` already exists.
    """
    root = Path(root)
    if not yes:
        raise TuningError(f"refusing to change the host under {root} without yes=True (the CLI's --yes)")
    revert_file = Path(revert_file) if revert_file else default_revert_file(root)
    if revert_file.exists():
        raise TuningError(f"{revert_file} exists: an earlier apply has not been reverted; revert it "
                          "first, or name another revert file")
    service = service or systemctl
    writes, services = _runtime_changes(plan.cpus, plan.housekeeping, root)
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
    shield = None
    if plan.shield:
        if problem := shield_problem(root):
            raise TuningError(f"cannot shield CPU {plan.cpu_list}: {problem}")
        base = cpuset_root(root)
        shield = {"base": str(base),
                  "root_load_balance": (base / "cpuset.sched_load_balance").read_text().strip()}
    if not files and not services and not shield:
        return steps
    record = {"schema": REVERT_SCHEMA, "root": str(root.resolve()), "cpus": plan.cpu_list,
              "files": files, "services": services, "shield": shield}
    _write_atomic(revert_file, json.dumps(record, indent=2) + "\n")
    # irqbalance first: running, it would move the IRQs back as they are written.
    steps += [_service_step(service, "stop", name) for name in services]
    if shield:
        steps += _make_shield(Path(shield["base"]), plan, tasks)
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
    if record.get("schema") not in (1, REVERT_SCHEMA):  # 1: before the shield, no "shield" key
        raise TuningError(f"{revert_file} has schema {record.get('schema')!r}, expected {REVERT_SCHEMA}")
    if record["root"] != str(root.resolve()):
        raise TuningError(f"{revert_file} records changes under {record['root']}, not under {root}")
    service = service or systemctl
    steps = _remove_shield(record["shield"]) if record.get("shield") else []
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
        elif s.action == "move":
            what = f"move {s.value} -> {s.target}"
        else:
            what = f"{s.action} {s.target}"
        lines.append(f"FAILED  {what}: {s.error}" if s.error else f"ok      {what}")
    return "\n".join(lines) or "nothing to change"
