"""The runtime CPU shield: every task but the study's real-time threads kept off some CPUs.

Two methods, one revert record (:mod:`rtstudy.machine.tuning` writes it before the first change):

``cpuset`` (cgroup v1, where its cpuset hierarchy is mounted and writable)
    Two cpusets under the hierarchy's root, ``rtstudy-shield`` (the CPUs,
    exclusive, not load-balanced) and ``rtstudy-system`` (the housekeeping
    CPUs), every movable process moved into the latter, and load balancing off
    at the root: the shielded CPUs form their own scheduling domain. This is what
    ``cset shield`` does, written out so that the revert is recorded first and
    restores exactly what was there (``cset shield --reset`` keeps no record).
``affinity`` (every host: cgroup v2 systems, containers without cgroupfs)
    Every movable thread's CPU affinity loses the shielded CPUs, as ``tuna
    isolate`` does; the revert record holds each thread's previous affinity,
    and a state file under /run says the shield is in place (the fingerprint
    reads it; /run is gone after a reboot, as is the shield). Threads born while
    the shield stands inherit their parent's affinity, so they stay off too.
    Unlike a cpuset it leaves the scheduler's load balancing on, and a process
    may widen its own affinity again; the audit and the report say so.

A cgroup v2 ``cpuset.cpus.partition=isolated`` partition is not made: its CPUs
are reachable only by tasks inside the partition, so one process cannot keep
its real-time thread there and its load threads on the housekeeping CPUs, and
Holoscan pins its worker threads itself as they start, before the study could
move one into the partition. ``affinity`` is the method on such hosts.

A cell on a shielded host runs on the housekeeping CPUs (:func:`enter_layout`);
only the threads it pins itself (its real-time operators, E4's probe) reach the shield.
"""
from __future__ import annotations

import errno
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from rtstudy import atomic
from rtstudy.machine import kernelfs
from rtstudy.machine.kernelfs import ROOT, format_cpu_list

SHIELD_CPUSET = "rtstudy-shield"
SYSTEM_CPUSET = "rtstudy-system"
# Where the affinity shield records that it stands (tmpfs: a reboot removes it with the shield).
STATE_FILE = "/run/rtstudy/shield.json"
METHODS = ("cpuset", "affinity")


@dataclass(frozen=True)
class Step:
    """One change made to the host by ``apply`` or ``revert``.

    Attributes
    ----------
    action : str
        ``write``, ``stop``, ``start``, ``mkdir``, ``rmdir``, ``move`` (processes
        between cpusets) or ``affinity`` (threads' CPU affinities).
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


def write(path: Path, value: str, shown: str | None = None) -> Step:
    """Write ``value`` to ``path`` as one Step (named ``shown``); a refusal is the Step's error."""
    try:
        kernelfs.write(path, value)
    except OSError as exc:
        # EINVAL/EIO on some IRQs is normal (per-CPU and managed IRQs refuse).
        return Step("write", shown or str(path), value.strip(), f"{exc.strerror} (errno {exc.errno})")
    return Step("write", shown or str(path), value.strip())


# ---------------------------------------------------------------------------
# Finding the shield


def cpuset_root(root: Path = ROOT) -> Path | None:
    """Where the cgroup v1 cpuset hierarchy is mounted (under ``root``), or None."""
    for line in (kernelfs.text(root, "/proc/mounts") or "").splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[2] == "cgroup" and "cpuset" in fields[3].split(","):
            return Path(root) / fields[1].lstrip("/")
    return None


def cpuset_problem(root: Path = ROOT) -> str | None:
    """Why the ``cpuset`` method cannot be used on the host under ``root``; None if it can."""
    base = cpuset_root(root)
    if base is None:
        return "no cgroup v1 cpuset hierarchy is mounted (see /proc/mounts)"
    if not (base / "cpuset.cpus").is_file() or not os.access(base, os.W_OK):
        return f"the cpuset hierarchy at {base} is not writable by this user"
    return None


def choose(root: Path = ROOT) -> str:
    """The method for this host: a writable cgroup v1 cpuset, else thread affinity."""
    return "cpuset" if cpuset_problem(root) is None else "affinity"


def problem(method: str, root: Path = ROOT) -> str | None:
    """Why a shield of ``method`` cannot be made on the host under ``root``, with the fix."""
    if method not in METHODS:
        return f"unknown shield method {method!r}; allowed: auto, {', '.join(METHODS)}"
    base = cpuset_root(root)
    leftover = base is not None and any((base / name).exists()
                                        for name in (SHIELD_CPUSET, SYSTEM_CPUSET))
    if leftover or state(root) is not None:
        return ("a shield is already in place (an earlier one was not reverted): undo it with "
                "`rtstudy host revert`")
    if method == "cpuset" and (why := cpuset_problem(root)):
        return why + ": use the affinity method (--method affinity), which needs no cgroup"
    if method == "affinity" and os.geteuid() != 0 and Path(root) == ROOT:
        return ("moving other users' threads off a CPU needs root (or CAP_SYS_NICE): run "
                "`sudo .venv/bin/rtstudy host ...`")
    return None


class ShieldState(TypedDict, total=False):
    """A runtime shield in place, as the fingerprint records it (:func:`state`)."""

    method: str  # "affinity"; absent for a cpuset (recorded before there were two methods)
    cpus: list[int]  # shielded
    housekeeping: list[int]  # where every other task runs
    irq_default: list[int]  # /proc/irq/default_smp_affinity's CPUs
    irqs_on_shield: list[int]  # IRQs still allowed on a shielded CPU (per-CPU, managed)


class ShieldRecord(TypedDict, total=False):
    """What the revert file holds of a shield before it is made (:func:`record`)."""

    method: str  # "cpuset" or "affinity"
    cpus: list[int]
    housekeeping: list[int]
    base: str  # cpuset: the cgroup v1 cpuset root
    root_load_balance: str | None  # cpuset: the root's cpuset.sched_load_balance before
    state_file: str  # affinity: where the shield is recorded while it stands
    threads: list[dict]  # affinity: each moved thread's pid, tid, comm, previous and after CPUs


def state(root: Path = ROOT) -> ShieldState | None:
    """The runtime shield in place on the host under ``root``, or None when there is none.

    Returns
    -------
    dict or None
        ``method`` (``cpuset`` or ``affinity``), ``cpus`` (shielded),
        ``housekeeping`` (where every other task runs), ``irq_default`` (the
        CPUs of /proc/irq/default_smp_affinity) and ``irqs_on_shield`` (IRQs
        still allowed on a shielded CPU: per-CPU and managed IRQs refuse to
        move). Part of the fingerprint, so a shielded host's data is a dataset
        of its own.
    """
    found = None
    base = cpuset_root(root)
    if base is not None and (base / SHIELD_CPUSET).is_dir():
        cpus = kernelfs.to_cpus(kernelfs.text(base, SHIELD_CPUSET + "/cpuset.cpus")) or []
        if cpus:
            found = {"cpus": cpus, "housekeeping": kernelfs.to_cpus(
                kernelfs.text(base, SYSTEM_CPUSET + "/cpuset.cpus")) or []}
    recorded = kernelfs.text(root, STATE_FILE)
    if found is None and recorded:
        try:
            data = json.loads(recorded)
            found = {"method": "affinity", "cpus": list(data["cpus"]),
                     "housekeeping": list(data["housekeeping"])}
        except (ValueError, KeyError, TypeError):
            found = None
    if found is None:
        return None
    irqs = []
    for irq in kernelfs.list_names(root, "/proc/irq", r"\d+") or []:
        if set(kernelfs.to_cpus(kernelfs.text(root, f"/proc/irq/{irq}/smp_affinity_list")) or []) \
                & set(found["cpus"]):
            irqs.append(int(irq))
    # A cpuset shield is recorded without a method, as it was before there were two, so a
    # shielded host keeps its fingerprint.
    return {**found,
            "irq_default": kernelfs.mask_to_cpus(
                kernelfs.text(root, "/proc/irq/default_smp_affinity")) or [],
            "irqs_on_shield": irqs}


def of(fp: dict | None) -> ShieldState | None:
    """The runtime shield a fingerprint records (:func:`state`), None for an unshielded host
    or a fingerprint from before the shield was recorded."""
    return ((fp or {}).get("isolation") or {}).get("shield")


def method_of(shield: dict) -> str:
    """A recorded shield's method (those recorded before there were two are cpusets)."""
    return shield.get("method", "cpuset")


# ---------------------------------------------------------------------------
# A cell's layout on a shielded host


def enter_layout(shield: dict) -> None:
    """In a cell's process before exec, on a shielded host: the cell's own CPU layout.

    A cpuset shield moved every task, this one's parent included, into the
    housekeeping cpuset, where pinning a thread to a shielded CPU fails: the
    cell joins the cpuset root (every CPU) first. Either way the cell runs on
    the housekeeping CPUs; only the threads it pins itself run on the shield.
    """
    if method_of(shield) == "cpuset":
        base = cpuset_root()
        if base is not None:
            with open(base / "tasks", "w") as f:
                f.write(str(os.getpid()))
    os.sched_setaffinity(0, shield["housekeeping"])


# ---------------------------------------------------------------------------
# Making and removing it


def commands(method: str, cpus, housekeeping, root: Path = ROOT) -> list[str]:
    """The shield as the shell commands a person would type."""
    if method == "affinity":
        hk = format_cpu_list(housekeeping)
        cpu_list = format_cpu_list(cpus)
        # tuna's two syntaxes: options up to 0.17 (Debian 12's 0.15), sub-commands from 0.18.
        return [f"tuna --cpus={cpu_list} --isolate  # tuna 0.18 and later: tuna isolate "
                f"--cpus {cpu_list}; or, thread by thread: "
                f"for t in /proc/[0-9]*/task/*; do taskset -pc {hk} ${{t##*/}}; done "
                "(per-CPU kernel threads refuse, and stay)"]
    base = cpuset_root(root)
    system, shield = base / SYSTEM_CPUSET, base / SHIELD_CPUSET
    mems = kernelfs.text(base, "cpuset.mems") or "0"
    return [f"mkdir {system} {shield}",
            f"echo {format_cpu_list(housekeeping)} > {system}/cpuset.cpus; "
            f"echo {mems} > {system}/cpuset.mems",
            f"echo {format_cpu_list(cpus)} > {shield}/cpuset.cpus; echo {mems} > {shield}/cpuset.mems; "
            f"echo 1 > {shield}/cpuset.cpu_exclusive; echo 0 > {shield}/cpuset.sched_load_balance",
            f"for p in $(cat {base}/cgroup.procs); do echo $p > {system}/cgroup.procs; done"
            "  # kernel threads bound to their CPUs refuse, and stay",
            f"echo 0 > {base}/cpuset.sched_load_balance"]


def record(method: str, cpus, housekeeping, root: Path = ROOT,
           tasks: list[int] | None = None) -> ShieldRecord:
    """What the revert file must hold before the shield is made (read only, changes nothing).

    For ``affinity``: every thread that would move (of ``tasks`` only, when
    given: tests move nothing but their own processes) with its affinity now
    and after, so the revert can put each back.
    """
    if method == "cpuset":
        base = cpuset_root(root)
        return {"method": "cpuset", "base": str(base), "cpus": sorted(cpus),
                "housekeeping": sorted(housekeeping),
                "root_load_balance": kernelfs.text(base, "cpuset.sched_load_balance")}
    pids = tasks if tasks is not None else [p.pid for p in kernelfs.processes(root)[0]]
    moved = []
    for pid in pids:
        for t in kernelfs.threads(root, pid):
            if t.cpus is None or not set(t.cpus) & set(cpus):
                continue
            after = [c for c in t.cpus if c not in cpus]
            # A thread allowed only on shielded CPUs (a per-CPU kernel thread, or one its
            # owner pinned there) stays where it is.
            if after:
                moved.append({"pid": pid, "tid": t.pid, "comm": t.comm, "previous": t.cpus,
                              "after": after})
    return {"method": "affinity", "state_file": STATE_FILE, "threads": moved,
            "cpus": sorted(cpus), "housekeeping": sorted(housekeeping)}


def _each(items: list, act, name) -> tuple[int, list[str]]:
    """``act(item)`` for each item: how many took it, and the names of those that refused.

    A thread or process that exited meanwhile (ESRCH) is neither: nothing is left to move.
    """
    done, refused = 0, []
    for item in items:
        try:
            act(item)
            done += 1
        except OSError as exc:
            if exc.errno != errno.ESRCH:
                refused.append(name(item))
    return done, refused


def _set_affinity(threads: list[dict], key: str, what: str) -> Step:
    """Set each thread's affinity to its ``key`` CPUs; those that refuse stay, and are named."""
    done, refused = _each(threads, lambda t: os.sched_setaffinity(t["tid"], t[key]),
                          lambda t: f"{t['comm']}[{t['tid']}]")
    value = f"{done} of {len(threads)} threads {what}"
    if refused:
        value += f"; {len(refused)} refuse (kernel threads that may not move) and stay: " \
                 + _named(refused)
    return Step("affinity", "threads", value)


def _named(refused: list[str]) -> str:
    """The first eight of ``refused``, and how many more."""
    return ", ".join(refused[:8]) + (f" and {len(refused) - 8} more" if len(refused) > 8 else "")


def make(rec: dict, root: Path = ROOT, tasks: list[int] | None = None) -> list[Step]:
    """Make the shield that :func:`record` described; stops at the first step that fails."""
    if rec["method"] == "affinity":
        atomic.write_text(Path(root) / STATE_FILE.lstrip("/"),
                          json.dumps({"cpus": rec["cpus"], "housekeeping": rec["housekeeping"]}) + "\n")
        return [Step("write", STATE_FILE, "affinity shield in place"),
                _set_affinity(rec["threads"], "after", "moved to the housekeeping CPUs")]
    base = Path(rec["base"])
    mems = kernelfs.text(base, "cpuset.mems")
    system, shield = base / SYSTEM_CPUSET, base / SHIELD_CPUSET
    steps = []
    for folder, settings in ((system, [("cpuset.cpus", format_cpu_list(rec["housekeeping"])),
                                       ("cpuset.mems", mems)]),
                             (shield, [("cpuset.cpus", format_cpu_list(rec["cpus"])),
                                       ("cpuset.mems", mems), ("cpuset.cpu_exclusive", "1"),
                                       ("cpuset.sched_load_balance", "0")])):
        try:
            folder.mkdir()
            steps.append(Step("mkdir", str(folder)))
        except OSError as exc:
            return steps + [Step("mkdir", str(folder), error=f"{exc.strerror} (errno {exc.errno})")]
        for name, value in settings:
            steps.append(write(folder / name, value + "\n"))
            if steps[-1].error:
                return steps
    steps.append(_move_processes(_procs(base) if tasks is None else tasks, system))
    steps.append(write(base / "cpuset.sched_load_balance", "0\n"))
    return steps


def remove(rec: dict, root: Path = ROOT) -> list[Step]:
    """Undo :func:`make`: the shield as it was before, exactly where the record can tell."""
    if rec.get("method", "cpuset") == "affinity":
        return _remove_affinity(rec, root)
    base = Path(rec["base"])
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
    steps.append(write(base / "cpuset.sched_load_balance", rec["root_load_balance"] + "\n"))
    return steps


def _remove_affinity(rec: dict, root: Path) -> list[Step]:
    """Every moved thread back to its previous affinity, and threads born meanwhile too.

    A thread or process born while the shield stood inherited the moved
    affinity of the thread that made it: where a thread not in the record has
    exactly that affinity, and its process or parent process is in the record,
    it gets that one's previous affinity back.
    """
    threads = list(rec["threads"])
    recorded = {t["tid"] for t in threads}
    by_pid = {t["pid"]: t for t in threads if t["pid"] == t["tid"]}
    for proc in kernelfs.processes(root)[0]:
        status = kernelfs.text(root, f"/proc/{proc.pid}/status") or ""
        ppid = next((int(line.split()[1]) for line in status.splitlines()
                     if line.startswith("PPid:")), 0)
        origin = by_pid.get(proc.pid) or by_pid.get(ppid)
        if origin is None:
            continue
        for t in kernelfs.threads(root, proc.pid):
            if t.pid not in recorded and t.cpus == origin["after"]:
                threads.append({**origin, "pid": proc.pid, "tid": t.pid, "comm": t.comm})
    steps = [_set_affinity(threads, "previous", "back to their previous CPUs")]
    path = Path(root) / rec["state_file"].lstrip("/")
    path.unlink(missing_ok=True)
    steps.append(Step("rm", rec["state_file"]))
    return steps


def _comm(pid: int) -> str:
    return kernelfs.text(ROOT, f"/proc/{pid}/comm") or "?"


def _move_processes(pids, into: Path) -> Step:
    """Move each process of ``pids`` into the cpuset ``into``; those that refuse stay, and are named.

    Kernel threads bound to their CPUs (per-CPU workers, kthreadd, workqueue
    rescuers) refuse (EINVAL). A process that exited meanwhile (ESRCH) is no
    longer there to move.
    """
    moved, refused = _each(pids, lambda pid: kernelfs.write(into / "cgroup.procs", f"{pid}\n"),
                           lambda pid: f"{_comm(pid)}[{pid}]")
    value = f"{moved} of {len(pids)} processes"
    if refused:
        value += f"; {len(refused)} kernel threads refuse to move and stay: {_named(refused)}"
    return Step("move", str(into), value)


def _procs(cpuset: Path) -> list[int]:
    try:
        return [int(x) for x in (cpuset / "cgroup.procs").read_text().split()]
    except OSError:
        return []
