"""What every audit item shares: the item, the host's facts read once, and the boot fix.

:mod:`rtstudy.machine.audit` (isolation, IRQs, kernel threads, daemons) and
:mod:`rtstudy.machine.audit_profile` (what tuned's realtime profile sets beyond isolation) both
build their items from these. A boot parameter is named in an item's remedy with
:func:`boot_fix`; where and how to add them all is said once, by the audit's last
item, "boot line" (:func:`bootloader` finds where this host takes them).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from rtstudy.machine import shield as shielding
from rtstudy.machine.kernelfs import (CPU_DIR, HostFile, Process, format_cpu_list, online_cpus,
                                      processes, read as read_file, to_cpus)

STATUSES = ("PASS", "WARN", "FAIL", "N/A")
UNREADABLE_REMEDY = ("re-run the audit as root (`sudo .venv/bin/rtstudy host audit`) so the file "
                     "can be read")

# Where each family of distributions takes boot parameters.
GRUB_FAMILIES = ("Debian/Ubuntu: append it to GRUB_CMDLINE_LINUX in /etc/default/grub and run "
                 "`update-grub`; RHEL/Rocky/Fedora: `grubby --update-kernel=ALL --args=\"{args}\"`; "
                 "IGX/Jetson: append it to the APPEND line of the active entry in "
                 "/boot/extlinux/extlinux.conf")
# How each boot loader the audit recognises takes them: (what it is, the file or program
# that shows it is there, the steps). grubby first: RHEL has an /etc/default/grub too.
BOOTLOADERS = (
    ("GRUB via grubby (RHEL, Rocky, Fedora)", "/usr/sbin/grubby",
     "`grubby --update-kernel=ALL --args=\"{args}\"`, reboot"),
    ("GRUB (Debian, Ubuntu)", "/etc/default/grub",
     "append them to GRUB_CMDLINE_LINUX in /etc/default/grub, run `update-grub`, reboot"),
    ("extlinux (IGX, Jetson)", "/boot/extlinux/extlinux.conf",
     "append them to the APPEND line of the active entry in /boot/extlinux/extlinux.conf, reboot"),
    ("systemd-boot", "/etc/kernel/cmdline",
     "append them to /etc/kernel/cmdline, run `kernel-install add $(uname -r) "
     "/boot/vmlinuz-$(uname -r)` (or reinstall the kernel package), reboot"),
)
NO_BOOTLOADER = ("this host's kernel command line is set by whatever boots it. On a virtual "
                 "machine that is the launcher: Firecracker's `boot_args`, QEMU's `-append`, "
                 "libvirt's `<cmdline>`, or the cloud image's settings; add them there and restart "
                 "the VM")
_BOOT_FIX = ("add `{args}` to the kernel command line and reboot (how on this host, and how to "
             "remove it again: the boot line item)")


def revert(command: str) -> str:
    """The words after a run-time change that say how to undo it: `` (revert: command)``."""
    return f" (revert: {command})" if command else ""


def boot_fix(args: str) -> str:
    """An item's boot remedy: the parameters, with where to add them left to the boot line item."""
    return _BOOT_FIX.format(args=args)


def boot_args(remedy: str) -> list[str]:
    """The boot parameters an item's remedy asks for (what :func:`boot_fix` wrote), in order."""
    pattern = re.escape(_BOOT_FIX).replace(re.escape("{args}"), "([^`]+)")
    return [a for m in re.finditer(pattern, remedy) for a in m.group(1).split()]


def bootloader(root: Path) -> tuple[str, str] | None:
    """This host's boot loader and how to add ``{args}`` with it; None where none is found."""
    for what, marker, steps in BOOTLOADERS:
        if (Path(root) / marker.lstrip("/")).exists():
            return f"{what}: {marker}", steps
    return None


def boot_steps(root: Path, args: str) -> str:
    """How to add the boot parameters ``args`` on the host under ``root``: its boot loader's
    steps, or, where none is found, the VM launcher's and every family's."""
    loader = bootloader(root)
    if loader:
        return loader[1].format(args=args)
    return NO_BOOTLOADER + "; on an installed system: " + GRUB_FAMILIES.format(args=args)


def kernel_args(cpus, housekeeping) -> str:
    """The boot parameters that isolate ``cpus`` and keep IRQs on ``housekeeping``.

    ``managed_irq`` and ``domain`` also keep managed device IRQs and the
    scheduler's load balancing off the CPUs; the three lists are the same, as
    both seeds require.
    """
    cpu_list = format_cpu_list(cpus)
    return (f"isolcpus=managed_irq,domain,{cpu_list} nohz_full={cpu_list} rcu_nocbs={cpu_list} "
            f"irqaffinity={format_cpu_list(housekeeping)}")


def suggested_isolation(online: list[int]) -> list[int]:
    """The CPUs to isolate when nothing is: all but CPU 0 (and CPU 1 from 4 CPUs up).

    Seed 000: reserve core 0, and ideally one more, for the OS.
    """
    keep = 1 if len(online) < 4 else 2
    return sorted(online)[keep:]


def isolation_fix(online: list[int], cpus: list[int] | None = None) -> str:
    """The boot fix that isolates ``cpus`` (default :func:`suggested_isolation`)."""
    cpus = cpus or suggested_isolation(online)
    if not cpus:
        return "a single-CPU host cannot isolate a CPU: it needs at least one housekeeping CPU"
    return boot_fix(kernel_args(cpus, [c for c in online if c not in cpus]))


@dataclass(frozen=True)
class AuditItem:
    """One audited setting.

    Attributes
    ----------
    name : str
        What is audited, e.g. ``"sched_rt_runtime_us"``.
    status : str
        ``PASS``, ``WARN``, ``FAIL`` or ``N/A`` (the setting does not exist on this host).
    evidence : str
        What was read, and from which file, or why it could not be read.
    remedy : str
        The exact commands or boot parameters that fix a WARN or FAIL; empty on PASS.
    facts : dict
        Machine-readable values behind the status (CPU lists, numbers), for JSON and ``summary``.
    """

    name: str
    status: str
    evidence: str
    remedy: str = ""
    facts: dict = field(default_factory=dict, kw_only=True)


@dataclass
class Host:
    """What several items share, read once."""

    root: Path
    cmdline: HostFile
    online: list[int]
    isolated_file: HostFile
    isolated: list[int]
    nohz_file: HostFile
    nohz: list[int]
    processes: list[Process]
    process_note: str
    shielded: list[int] = field(default_factory=list)  # CPUs of a runtime shield (rtstudy host apply)
    shield_method: str = ""  # how the shield keeps tasks off them: cpuset or affinity
    # A virtual machine's guest (the CPU's `hypervisor` flag): the hypervisor owns its clock and
    # its kernel is often the VM provider's, so some host advice does not apply to it.
    guest: bool = False

    @property
    def housekeeping(self) -> list[int]:
        return [c for c in self.online if c not in self.isolated]

    @property
    def targets(self) -> list[int]:
        """The CPUs whose settings matter: the isolated ones, else every online CPU."""
        return self.isolated or self.online


def load(root: Path) -> Host:
    """Read what the items share from the host whose /proc and /sys are under ``root``."""
    isolated_file = read_file(root, f"{CPU_DIR}/isolated")
    nohz_file = read_file(root, f"{CPU_DIR}/nohz_full")
    procs, unreadable = processes(root)
    note = f"; {unreadable} processes unreadable" if unreadable else ""
    shield = shielding.state(root)
    shielded = shield["cpus"] if shield else []
    # A runtime shield isolates its CPUs from the scheduler's load balancing and every movable
    # task, as isolcpus=domain does at boot: the items about isolated CPUs judge them too.
    isolated = sorted(set(to_cpus(isolated_file.text) or []) | set(shielded))
    flags = re.search(r"^flags\s*:(.*)$", read_file(root, "/proc/cpuinfo").text or "", re.M)
    return Host(root, read_file(root, "/proc/cmdline"), online_cpus(root) or [], isolated_file,
                isolated, nohz_file, to_cpus(nohz_file.text) or [], procs, note, shielded,
                shielding.method_of(shield) if shield else "",
                guest=bool(flags and "hypervisor" in flags.group(1).split()))
