"""The kernel's files and the CPU lists in them: the one copy host, audit, shield and tuning use.

Every file is named as it is on the host (``/proc/cmdline``) and read under a
``root``, so a test reads a copy of a host's /proc and /sys (``tests/fixtures/host``)
exactly as the study reads the real one. Reading never raises for a missing or
unreadable file: :func:`read` says why in the returned :class:`HostFile`.

CPU lists come in two forms: the kernel's (``"0-3,8"``, read from its files,
parsed by :func:`parse_cpu_list`) and a user's (``--cpus 2-3`` or ``params.yaml``,
parsed strictly by :func:`parse_user_cpus`, whose errors say what was expected).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/")
CPU_DIR = "/sys/devices/system/cpu"
CPU_LIST_SYNTAX = "comma-separated CPU numbers and ranges, e.g. '2-3', '1,3' or '2-3,6'"


class CpuListError(ValueError):
    """A CPU list given by a user is malformed; the message says what was expected."""


# ---------------------------------------------------------------------------
# Files


def _read_text(path: Path) -> str:
    """The only place a kernel file is read (tests replace it to simulate errors)."""
    return path.read_text(errors="replace")


@dataclass(frozen=True)
class HostFile:
    """A file's stripped text, or ``None`` and the reason (``problem``) it could not be read.

    ``path`` is the file's name on the host (``/proc/cmdline``), whatever the
    root it was read under; ``missing`` tells a FileNotFoundError from other errors.
    """

    path: str
    text: str | None
    problem: str = ""
    missing: bool = False


def read(root: Path, path: str) -> HostFile:
    """Read ``path`` (as named on the host, e.g. ``/proc/cmdline``) under ``root``."""
    try:
        return HostFile(path, _read_text(Path(root) / path.lstrip("/")).strip())
    except FileNotFoundError:
        return HostFile(path, None, f"{path}: not present (FileNotFoundError)", missing=True)
    except PermissionError:
        return HostFile(path, None, f"{path}: permission denied (PermissionError)")
    except OSError as exc:
        return HostFile(path, None, f"{path}: unreadable ({type(exc).__name__}: {exc.strerror})")


def write(path: Path, value: str) -> None:
    """Write ``value`` to a kernel file in one write(2), as ``echo`` does.

    procfs, sysfs and cgroupfs take one value per write. No O_CREAT: a kernel
    file that is not there is an error, not a file to create.
    """
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def text(root: Path, path: str) -> str | None:
    """The stripped text of ``path`` under ``root``, or None when it cannot be read."""
    return read(root, path).text


def list_names(root: Path, directory: str, pattern: str) -> list[str] | None:
    """Entries of ``directory`` matching the regular expression ``pattern``, in natural order.

    ``None`` when the directory is missing or cannot be listed.
    """
    try:
        names = os.listdir(Path(root) / directory.lstrip("/"))
    except OSError:
        return None
    found = [n for n in names if re.fullmatch(pattern, n)]
    return sorted(found, key=lambda n: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", n)])


# ---------------------------------------------------------------------------
# CPU lists and masks


def parse_cpu_list(value: str | None) -> list[int]:
    """Expand a kernel CPU list such as ``"0-3,8,10-11"`` (sorted, no repeats).

    Empty or None gives []. Raises ValueError on anything that is not such a
    list (``"all"`` included: see :func:`cmdline_cpus`).
    """
    cpus: set[int] = set()
    for part in (value or "").strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"{value!r} is not a CPU list: {part!r}")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return sorted(cpus)


def to_cpus(value: str | None) -> list[int] | None:
    """A kernel CPU list as sorted CPU numbers; ``None`` for an unread file or a non-list."""
    if value is None:
        return None
    try:
        return parse_cpu_list(value)
    except ValueError:
        return None


def parse_user_cpus(value: str) -> list[int]:
    """Parse a CPU list given by a user, strictly.

    Parameters
    ----------
    value : str
        CPU numbers and ranges, e.g. ``"2-3"`` or ``"1,3"``.

    Returns
    -------
    list of int
        The CPU numbers, sorted, without duplicates.

    Raises
    ------
    CpuListError
        When ``value`` is not such a list or a range runs backwards.
    """
    if not re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", str(value).strip()):
        raise CpuListError(f"CPU list {value!r} is malformed: expected {CPU_LIST_SYNTAX}")
    for part in str(value).strip().split(","):
        lo, _, hi = part.partition("-")
        if hi and int(hi) < int(lo):
            raise CpuListError(f"CPU list {value!r} has the backward range {part!r}: expected "
                               f"{CPU_LIST_SYNTAX}")
    return parse_cpu_list(value)


def format_cpu_list(cpus) -> str:
    """The kernel's compact form of CPU numbers: ``[0, 1, 2, 5]`` -> ``"0-2,5"``."""
    ranges: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in ranges)


def cpu_mask(cpus) -> str:
    """The hexadecimal affinity mask of ``cpus`` as /proc/irq/*/smp_affinity takes it.

    Above 32 CPUs the kernel groups the mask in comma-separated 32-bit words.
    """
    digits = f"{sum(1 << c for c in set(cpus)):x}"
    head = len(digits) % 8 or 8
    return ",".join([digits[:head]] + [digits[i:i + 8] for i in range(head, len(digits), 8)])


def mask_to_cpus(value: str | None) -> list[int] | None:
    """CPUs of a hexadecimal affinity mask such as ``"00000000,0000000f"``; ``None`` if not one."""
    if value is None:
        return None
    try:
        number = int(value.replace(",", ""), 16)
    except ValueError:
        return None
    return [bit for bit in range(number.bit_length()) if number >> bit & 1]


# ---------------------------------------------------------------------------
# The boot command line


def cmdline_value(cmdline: str, key: str) -> str | None:
    """The value of ``key=`` on a kernel command line (the last one wins, as in the kernel)."""
    values = re.findall(rf"(?:^|\s){re.escape(key)}=(\S+)", cmdline)
    return values[-1] if values else None


def cmdline_cpus(value: str | None, online: list[int]) -> list[int] | None:
    """CPUs of an isolcpus/nohz_full/rcu_nocbs value; flags (``domain``) are dropped.

    ``all`` means every online CPU; no value gives []; an unparseable value gives ``None``.
    """
    if value is None:
        return []
    if value == "all":
        return sorted(online)
    # isolcpus takes leading flags: "managed_irq,domain,2-3".
    spec = ",".join(p for p in value.split(",") if not re.fullmatch(r"[a-z_]+", p))
    return to_cpus(spec)


def boot_cpus(root: Path, key: str, online: list[int] | None = None) -> list[int] | None:
    """The CPUs a boot parameter (``isolcpus``, ``nohz_full``, ``rcu_nocbs``) names on this host."""
    online = online_cpus(root) or [] if online is None else online
    return cmdline_cpus(cmdline_value(text(root, "/proc/cmdline") or "", key), online)


# ---------------------------------------------------------------------------
# CPUs, their topology and the kernel's preemption model


def online_cpus(root: Path = ROOT) -> list[int] | None:
    """The online CPUs under ``root``; ``None`` when the list cannot be read."""
    return to_cpus(text(root, f"{CPU_DIR}/online"))


def isolated_cpus(root: Path = ROOT) -> list[int]:
    """The CPUs the kernel isolates from the scheduler's domains (isolcpus, isolated partitions)."""
    return to_cpus(text(root, f"{CPU_DIR}/isolated")) or []


def smt_siblings(root: Path, cpus) -> dict[int, list[int]]:
    """Each CPU's hardware-thread siblings (itself excluded); unreadable ones are left out."""
    siblings = {}
    for cpu in cpus:
        found = to_cpus(text(root, f"{CPU_DIR}/cpu{cpu}/topology/thread_siblings_list"))
        if found is not None:
            siblings[cpu] = [c for c in found if c != cpu]
    return siblings


def preempt_model(root: Path = ROOT) -> tuple[str, str]:
    """The kernel's preemption model under ``root`` and the file that told.

    debugfs shows a PREEMPT_DYNAMIC kernel's current mode; otherwise
    /sys/kernel/realtime and the ``uname -v`` text (/proc/sys/kernel/version) do.
    """
    dyn = read(root, "/sys/kernel/debug/sched/preempt")
    match = re.search(r"\((\w+)\)", dyn.text or "")
    if match:
        return f"PREEMPT_DYNAMIC ({match.group(1)})", f"{dyn.path}: {dyn.text}"
    version = read(root, "/proc/sys/kernel/version")
    evidence = f"{version.path}: {version.text}" if version.text is not None else version.problem
    if text(root, "/sys/kernel/realtime") == "1" or "PREEMPT_RT" in (version.text or ""):
        return "PREEMPT_RT", evidence
    for model in ("PREEMPT_DYNAMIC", "PREEMPT_LAZY", "PREEMPT"):
        if re.search(rf"\b{model}\b", version.text or ""):
            return model, evidence
    return "none or voluntary", evidence


# ---------------------------------------------------------------------------
# Processes and threads


@dataclass(frozen=True)
class Process:
    """One process (or, from :func:`threads`, one thread) as /proc shows it."""

    pid: int
    comm: str
    kthread: bool
    cpus: list[int] | None  # Cpus_allowed_list; None when the status file could not be read


def _status(root: Path, base: str, pid: str) -> Process | None:
    comm = read(root, f"{base}/comm")
    if comm.text is None:
        return None
    status = text(root, f"{base}/status") or ""
    fields = dict(re.findall(r"^(\w+):\s*(.*)$", status, re.M))
    # Kernels before 6.0 have no "Kthread:" field; there, kernel threads are
    # kthreadd (pid 2) and its children.
    kthread = fields.get("Kthread") == "1" or fields.get("PPid") == "2" or pid == "2"
    return Process(int(pid), comm.text, kthread, to_cpus(fields.get("Cpus_allowed_list")))


def processes(root: Path = ROOT) -> tuple[list[Process], int]:
    """Every process under ``root/proc``, and how many could not be read.

    A process that exited between listing and reading is not counted; one
    hidden from this user is.
    """
    found, unreadable = [], 0
    for pid in list_names(root, "/proc", r"\d+") or []:
        proc = _status(root, f"/proc/{pid}", pid)
        if proc is None:
            unreadable += 0 if read(root, f"/proc/{pid}/comm").missing else 1
            continue
        found.append(proc)
    return found, unreadable


def threads(root: Path, pid: int) -> list[Process]:
    """Every thread of process ``pid`` (empty when it has exited)."""
    out = []
    for tid in list_names(root, f"/proc/{pid}/task", r"\d+") or []:
        thread = _status(root, f"/proc/{pid}/task/{tid}", tid)
        if thread is not None:
            out.append(thread)
    return out


def running(root: Path, comm: str) -> list[int]:
    """PIDs whose ``/proc/<pid>/comm`` under ``root`` is ``comm``."""
    return [p.pid for p in processes(root)[0] if p.comm == comm]


def thread_cpu(tid: int) -> int | None:
    """The CPU a thread of this host last ran on (field 39 of /proc/<tid>/stat), None if gone."""
    try:
        stat = Path(f"/proc/{tid}/stat").read_text()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: count fields after its last ')'.
    return int(stat.rsplit(")", 1)[1].split()[36])
