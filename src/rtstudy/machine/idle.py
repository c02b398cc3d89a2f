"""A CPU's idle states and the PM QoS limits that keep it out of the deep ones.

An idle CPU sleeps in one of its cpuidle states; waking from a deeper one takes
longer (its ``latency``, the exit latency in µs), and that delay lands on the
first instruction of the thread that wakes it. Three things limit the depth:

- a state's own ``disable`` file (per CPU, until reboot);
- the system-wide PM QoS request, ``/dev/cpu_dma_latency``: the smallest value any
  process holding the file open wrote (tuned's ``force_latency``; cyclictest writes
  0 unless given ``--laptop``); 2,000,000,000 µs when no one holds it;
- the per-CPU limit ``/sys/devices/system/cpu/cpuN/power/pm_qos_resume_latency_us``
  (``0``: no limit; ``n/a``: polling only; N: states with an exit latency of at most N µs).

The cpuidle governor skips every state whose exit latency is above the smaller of
the two limits. tuned's latency-performance profile (which its realtime profile
includes) holds ``force_latency=cstate.id_no_zero:1|3``: the exit latency of state 1
(the shallowest state that sleeps, C1 or haltpoll), else 3 µs. The audit uses the same
line. Every file is read under a ``root``, as :mod:`rtstudy.machine.kernelfs` reads.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from rtstudy.machine.kernelfs import CPU_DIR, list_names, read as read_file

CPU_DMA_LATENCY = "/dev/cpu_dma_latency"
# The value /dev/cpu_dma_latency reads when no process holds a request (PM_QOS_CPU_LATENCY_DEFAULT_VALUE).
NO_REQUEST_US = 2_000_000_000
# tuned's fallback when a host has no state 1 (force_latency=cstate.id_no_zero:1|3).
TUNED_FALLBACK_US = 3
# The boot parameter that keeps each idle driver to its first sleeping state, and what it leaves.
BOOT_LIMIT = {
    "intel_idle": ("intel_idle.max_cstate=1", "C1 only"),
    "acpi_idle": ("processor.max_cstate=1", "C1 only"),
}


@dataclass(frozen=True)
class IdleState:
    """One cpuidle state of one CPU.

    Attributes
    ----------
    index : int
        The N of ``stateN`` (0 is POLL on x86).
    name : str
        Its name, e.g. ``"C1"``, ``"haltpoll idle"``, ``"POLL"``.
    latency_us : int
        Exit latency, µs.
    disabled : bool
        Its ``disable`` file reads 1.
    """

    index: int
    name: str
    latency_us: int
    disabled: bool

    @property
    def polls(self) -> bool:
        return self.name == "POLL" or self.latency_us == 0


def states(root: Path, cpu: int) -> list[IdleState]:
    """The idle states of ``cpu`` in index order; [] where it has none (no cpuidle, ``idle=poll``)."""
    found = []
    for state in list_names(root, f"{CPU_DIR}/cpu{cpu}/cpuidle", r"state\d+") or []:
        base = f"{CPU_DIR}/cpu{cpu}/cpuidle/{state}"
        try:
            latency = int(read_file(root, f"{base}/latency").text or "")
        except ValueError:
            continue
        found.append(IdleState(int(state[5:]), read_file(root, f"{base}/name").text or state,
                               latency, read_file(root, f"{base}/disable").text == "1"))
    return found


def driver(root: Path) -> str:
    """The cpuidle driver (``intel_idle``, ``acpi_idle``, ``haltpoll``, ...), or ``"none"``."""
    return read_file(root, f"{CPU_DIR}/cpuidle/current_driver").text or "none"


def allowed_us(cpu_states: list[IdleState]) -> int:
    """The deepest exit latency tuned's realtime profile lets a CPU sleep with, µs: state 1's."""
    first = [s.latency_us for s in cpu_states if s.index == 1 and s.latency_us > 0]
    return first[0] if first else TUNED_FALLBACK_US


def system_request(root: Path) -> tuple[int | None, str]:
    """The system-wide PM QoS limit (µs) from /dev/cpu_dma_latency, or None and why not.

    The device reads as one native-endian 32-bit integer; reading needs root.
    """
    path = Path(root) / CPU_DMA_LATENCY.lstrip("/")
    try:
        with open(path, "rb") as f:
            raw = f.read(4)
    except FileNotFoundError:
        return None, f"{CPU_DMA_LATENCY}: not present"
    except PermissionError:
        return None, f"{CPU_DMA_LATENCY}: permission denied (root reads it)"
    except OSError as exc:
        return None, f"{CPU_DMA_LATENCY}: unreadable ({exc.strerror})"
    if len(raw) != 4:
        return None, f"{CPU_DMA_LATENCY}: {len(raw)} bytes, not a 32-bit value"
    return int.from_bytes(raw, "little", signed=True), ""


def resume_limit(root: Path, cpu: int) -> str | None:
    """``pm_qos_resume_latency_us`` of ``cpu`` as the kernel shows it (``0``, ``n/a``, ``20``)."""
    return read_file(root, f"{CPU_DIR}/cpu{cpu}/power/pm_qos_resume_latency_us").text


def limit_us(system_us: int | None, resume: str | None) -> int | None:
    """The exit latency the governor allows on a CPU, µs (0: polling only); None: no limit."""
    limits = []
    if system_us is not None and system_us < NO_REQUEST_US:
        limits.append(max(system_us, 0))
    if resume == "n/a":
        limits.append(0)
    elif resume and resume.isdigit() and int(resume) > 0:
        limits.append(int(resume))
    return min(limits) if limits else None


class IdleRecord(TypedDict):
    """What a measurement records about idle and PM QoS (:func:`record`)."""

    driver: str  # the cpuidle driver, or "none"
    cpu_dma_latency_us: int | None  # the system-wide PM QoS request; None: unreadable (why)
    why: str
    cpus: dict[str, dict]  # CPU → resume_latency_us, limit_us, usable [name, exit latency µs]


def record(root: Path, cpus) -> IdleRecord:
    """What a measurement records about idle and PM QoS on ``cpus`` (JSON-ready).

    ``cpu_dma_latency_us`` is None where it could not be read (``why`` says so); per CPU,
    the resume limit as shown, the governor's effective limit (None: none) and the
    states it may enter (name, exit latency µs).
    """
    system_us, why = system_request(root)
    per_cpu = {}
    for cpu in cpus:
        resume = resume_limit(root, cpu)
        limit = limit_us(system_us, resume)
        usable = [[s.name, s.latency_us] for s in states(root, cpu) if not s.disabled
                  and (limit is None or s.latency_us <= limit)]
        per_cpu[str(cpu)] = {"resume_latency_us": resume, "limit_us": limit, "usable": usable}
    return {"driver": driver(root), "cpu_dma_latency_us": system_us, "why": why, "cpus": per_cpu}
