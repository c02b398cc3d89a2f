"""The read-only host audit of experiment E4: is this host tuned for real-time work?

Each item reads kernel files and says PASS, WARN, FAIL or N/A, what it read
(``evidence``) and the exact fix (``remedy``): the boot line, sysctl, cpupower
or smp_affinity command of the Holoscan SDK guide ("Host CPU Isolation") and the
quiet-core article. Every file is read relative to ``root``, so tests audit a copy of a
host's /proc and /sys. A file that is missing or unreadable turns its item into
N/A or WARN with the reason in the evidence; the audit never fails on it and
never writes anything.

Long because: it is a catalogue (about 600 lines) of seventeen items, each a short
function with its own evidence and remedy, run in one list by :func:`audit`, and read
best side by side. What tuned's realtime profile sets beyond isolation (idle states and
PM QoS, sysctls, boot parameters, the clocksource, the merged boot line) is
:mod:`rtstudy.machine.audit_profile`'s; the item type and the host's facts are
:mod:`rtstudy.machine.audit_host`'s; the kernel files they read are
:mod:`rtstudy.machine.kernelfs`'s.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import asdict
from pathlib import Path
from typing import TypedDict

from rtstudy.machine import audit_profile, shield as shielding
from rtstudy.machine.audit_host import (STATUSES, UNREADABLE_REMEDY, AuditItem, Host, boot_fix,
                                        isolation_fix, load, revert, suggested_isolation)
from rtstudy.machine.kernelfs import (CPU_DIR, cmdline_cpus, cmdline_value, cpu_mask,
                                      format_cpu_list, list_names, mask_to_cpus, preempt_model,
                                      read as read_file, smt_siblings, to_cpus)

# The items that make a host "tuned" in summary(): what those two sources say a
# quiet core needs. THP, C-states, the NMI watchdog, SMT and the preemption
# model are reported too but are refinements on top of these.
CORE_ITEMS = ("kernel command line", "isolated CPUs", "nohz_full CPUs", "rcu_nocbs CPUs",
              "isolation consistency", "CPU governor", "sched_rt_runtime_us", "irqbalance daemon",
              "tuned daemon", "IRQ affinity", "IRQ counts on isolated CPUs",
              "kernel threads on isolated CPUs", "RCU callback threads")

# A kernel whose code is preemptible everywhere, by distribution.
RT_KERNELS = ("Debian: `apt install linux-image-rt-amd64` (arm64: linux-image-rt-arm64); Ubuntu: "
              "`pro enable realtime-kernel` (Ubuntu Pro's real-time kernel); RHEL: `dnf install "
              "kernel-rt` (the Real Time repository); IGX/Jetson: NVIDIA's real-time kernel "
              "(IGX OS and JetPack ship one)")

# tuned's profiles that isolate CPUs themselves (their isolated_cores variable): a tuning, not
# a daemon to stop.
TUNED_RT_PROFILES = ("realtime", "realtime-virtual-host", "realtime-virtual-guest",
                     "cpu-partitioning")


# ---------------------------------------------------------------------------
# The items


def _cmdline_item(h: Host) -> AuditItem:
    name = "kernel command line"
    if h.cmdline.text is None:
        return AuditItem(name, "WARN", h.cmdline.problem, UNREADABLE_REMEDY)
    params = {k: cmdline_value(h.cmdline.text, k) for k in ("isolcpus", "nohz_full", "rcu_nocbs")}
    shown = ", ".join(f"{k}={v}" if v else f"no {k}" for k, v in params.items())
    evidence = f"{shown} in /proc/cmdline: {h.cmdline.text}"
    if all(params.values()):
        return AuditItem(name, "PASS", evidence, facts=params)
    asked = cmdline_cpus(params["isolcpus"], h.online)
    return AuditItem(name, "WARN", evidence, isolation_fix(h.online, asked), facts=params)


def _isolated_item(h: Host) -> AuditItem:
    name = "isolated CPUs"
    if h.isolated_file.text is None:
        return AuditItem(name, "WARN", h.isolated_file.problem, UNREADABLE_REMEDY)
    facts = {"cpus": h.isolated, "shielded": h.shielded}
    evidence = (f"{h.isolated_file.path}: {h.isolated_file.text or '(empty)'}; "
                f"online {format_cpu_list(h.online)}")
    if h.shielded:
        how = (f"cpuset {shielding.SHIELD_CPUSET}, not load-balanced, every movable task moved off"
               if h.shield_method == "cpuset" else
               "every movable thread's affinity moved off; load balancing stays on")
        evidence += (f"; runtime shield ({how}): CPU {format_cpu_list(h.shielded)} — the tick, RCU "
                     "callbacks and per-CPU kernel threads stay (only boot parameters move them)")
    if not h.isolated:
        return AuditItem(name, "WARN", evidence + "; no CPU is isolated from the scheduler",
                         isolation_fix(h.online), facts=facts)
    if not h.housekeeping:
        return AuditItem(name, "FAIL", evidence + "; every CPU is isolated, none is left for the "
                         "kernel, IRQs and unpinned threads",
                         "isolate fewer CPUs: " + isolation_fix(h.online), facts=facts)
    return AuditItem(name, "PASS", evidence + f"; housekeeping {format_cpu_list(h.housekeeping)}",
                     facts=facts)


def _nohz_item(h: Host) -> AuditItem:
    name = "nohz_full CPUs"
    f = h.nohz_file
    facts = {"cpus": h.nohz}
    if f.missing:
        # No boot parameter helps this kernel: nohz_full is ignored without CONFIG_NO_HZ_FULL,
        # so the remedy names the kernel, and the boot line item leaves nohz_full out.
        kernel = ("this guest's kernel is the virtual machine's: only a guest kernel built with "
                  "CONFIG_NO_HZ_FULL=y (from whoever provides the VM, or one you build for it) "
                  "can stop the tick" if h.guest else
                  "boot a kernel built with CONFIG_NO_HZ_FULL=y (check with "
                  "`grep NO_HZ_FULL /boot/config-$(uname -r)`); nohz_full= is ignored until then")
        return AuditItem(name, "WARN", f"{f.problem}: the kernel is built without CONFIG_NO_HZ_FULL, "
                         "so every CPU keeps its periodic tick", kernel, facts=facts)
    if f.text is None:
        return AuditItem(name, "WARN", f.problem, UNREADABLE_REMEDY, facts=facts)
    if not h.nohz:
        # Seed 000: an empty file means nohz_full was not given or was ignored.
        return AuditItem(name, "WARN", f"{f.path}: (empty); every CPU keeps its periodic tick",
                         isolation_fix(h.online, h.isolated), facts=facts)
    return AuditItem(name, "PASS", f"{f.path}: {f.text} (tick stopped while one task runs)", facts=facts)


def _rcu_nocbs(h: Host) -> tuple[list[int] | None, str]:
    """The CPUs whose RCU callbacks are offloaded, and how that was decided.

    Linux has no file for this set; it is ``rcu_nocbs=`` plus, since the kernel
    offloads them too (rcu_init_nohz), the nohz_full CPUs.
    """
    value = cmdline_value(h.cmdline.text or "", "rcu_nocbs")
    explicit = cmdline_cpus(value, h.online)
    if explicit is None:
        return None, f"rcu_nocbs={value} is not a CPU list"
    effective = sorted(set(explicit) | set(h.nohz))
    if value and set(h.nohz) <= set(explicit):
        return effective, f"rcu_nocbs={value} on the command line"
    if value:
        return effective, (f"rcu_nocbs={value} on the command line, plus nohz_full CPUs "
                           f"{format_cpu_list(h.nohz)}")
    if h.nohz:
        return effective, ("no rcu_nocbs on the command line; implied by nohz_full="
                           f"{format_cpu_list(h.nohz)} (the kernel offloads nohz_full CPUs too)")
    return effective, "no rcu_nocbs on the command line"


def _rcu_item(h: Host) -> AuditItem:
    name = "rcu_nocbs CPUs"
    if h.cmdline.text is None:
        return AuditItem(name, "WARN", h.cmdline.problem, UNREADABLE_REMEDY)
    cpus, how = _rcu_nocbs(h)
    if cpus is None:
        return AuditItem(name, "WARN", how, isolation_fix(h.online, h.isolated))
    if not cpus:
        return AuditItem(name, "WARN", how + "; RCU callbacks run on every CPU",
                         isolation_fix(h.online, h.isolated), facts={"cpus": cpus})
    return AuditItem(name, "PASS", f"{format_cpu_list(cpus)}: {how}", facts={"cpus": cpus})


def _consistency_item(h: Host) -> AuditItem:
    name = "isolation consistency"
    unreadable = [f.problem for f in (h.cmdline, h.isolated_file, h.nohz_file)
                  if f.text is None and not f.missing]
    if unreadable:
        return AuditItem(name, "WARN", "; ".join(unreadable), UNREADABLE_REMEDY)
    rcu, _ = _rcu_nocbs(h)
    sets = {"isolated": h.isolated, "nohz_full": h.nohz, "rcu_nocbs": rcu or []}
    shown = ", ".join(f"{k} {format_cpu_list(v) or '(none)'}" for k, v in sets.items())
    union = sorted(set().union(*sets.values()))
    if not union:
        return AuditItem(name, "N/A", f"{shown}: nothing to compare")
    if not [c for c in h.online if c not in union]:
        return AuditItem(name, "FAIL", f"{shown}: no housekeeping CPU is left (online "
                         f"{format_cpu_list(h.online)})",
                         "isolate fewer CPUs: " + isolation_fix(h.online))
    if len({tuple(v) for v in sets.values()}) > 1:
        # Seed 004: a CPU in one list but not the others keeps its tick, its RCU
        # callbacks or its load balancing, so it is not quiet.
        return AuditItem(name, "FAIL", f"{shown}: the three lists differ",
                         "use one list for all three: " + isolation_fix(h.online, union))
    return AuditItem(name, "PASS", f"{shown}: the same CPUs, housekeeping "
                     f"{format_cpu_list([c for c in h.online if c not in union])}")


def _governor_item(h: Host) -> AuditItem:
    name = "CPU governor"
    files = {cpu: read_file(h.root, f"{CPU_DIR}/cpu{cpu}/cpufreq/scaling_governor")
             for cpu in h.targets}
    if all(f.missing for f in files.values()):
        return AuditItem(name, "N/A", f"no {CPU_DIR}/cpu*/cpufreq for CPUs "
                         f"{format_cpu_list(h.targets)}: the firmware or hypervisor sets the frequency")
    problems = [f.problem for f in files.values() if f.text is None and not f.missing]
    governors = {cpu: f.text for cpu, f in files.items() if f.text is not None}
    evidence = ", ".join(f"cpu{c}={g}" for c, g in governors.items())
    slow = [c for c, g in governors.items() if g != "performance"]
    facts = {"governors": {str(c): g for c, g in governors.items()}}
    if slow:
        return AuditItem(name, "WARN", evidence + "; frequency scaling adds wake-up and ramp latency",
                         f"cpupower -c {format_cpu_list(slow)} frequency-set -g performance"
                         + revert("; ".join(f"cpupower -c {c} frequency-set -g {governors[c]}"
                                            for c in slow)),
                         facts=facts)
    if problems:
        return AuditItem(name, "WARN", "; ".join([evidence] + problems), UNREADABLE_REMEDY, facts=facts)
    return AuditItem(name, "PASS", evidence, facts=facts)


def _thp_item(h: Host) -> AuditItem:
    name = "transparent hugepages"
    f = read_file(h.root, "/sys/kernel/mm/transparent_hugepage/enabled")
    if f.missing:
        return AuditItem(name, "N/A", f"{f.problem}: kernel without transparent hugepages")
    if f.text is None:
        return AuditItem(name, "WARN", f.problem, UNREADABLE_REMEDY)
    if "[always]" in f.text:
        return AuditItem(name, "WARN", f"{f.path}: {f.text}; khugepaged compaction and huge-page "
                         "faults stall threads at random",
                         f"echo madvise > {f.path} (or never)" + revert(f"echo always > {f.path}")
                         + "; at boot: transparent_hugepage=never")
    return AuditItem(name, "PASS", f"{f.path}: {f.text}")


def _rt_runtime_item(h: Host) -> AuditItem:
    name = "sched_rt_runtime_us"
    f = read_file(h.root, "/proc/sys/kernel/sched_rt_runtime_us")
    period = read_file(h.root, "/proc/sys/kernel/sched_rt_period_us").text
    if f.text is None:
        return AuditItem(name, "WARN", f.problem, UNREADABLE_REMEDY)
    try:
        value = int(f.text)
    except ValueError:
        return AuditItem(name, "WARN", f"{f.path}: {f.text!r} is not a number",
                         "sysctl -w kernel.sched_rt_runtime_us=-1")
    if value == -1:
        return AuditItem(name, "PASS", f"{f.path}: -1 (no RT throttling; SCHED_DEADLINE threads may "
                         "be pinned to one CPU)", facts={"value": value})
    return AuditItem(name, "WARN", f"{f.path}: {value} of every {period} µs: RT throttling is on "
                     f"(real-time threads may run {value} µs of each {period} µs period on a CPU; "
                     "only past that do they wait for the next period), and SCHED_DEADLINE "
                     "threads cannot be pinned to one CPU (sched_setattr fails with EPERM) except "
                     "in an exclusive cpuset without load balancing (`rtstudy host apply --method "
                     "cpuset` makes one), whose CPUs are a root domain of their own, admission "
                     "control kept",
                     "sysctl -w kernel.sched_rt_runtime_us=-1 (until reboot"
                     + revert(f"sysctl -w kernel.sched_rt_runtime_us={value}") + "; to persist: "
                     "echo kernel.sched_rt_runtime_us=-1 > /etc/sysctl.d/90-realtime.conf, revert: "
                     "remove that file). It also removes the safety net that stops a runaway "
                     "FIFO thread from hanging a CPU: this study's own busy-polling runs (H5c) "
                     "spin a real-time thread that only throttling interrupts. `make "
                     "study-tuned` sets it for its run and reverts it",
                     facts={"value": value})


def _daemon_item(h: Host, daemon: str, why: str) -> AuditItem:
    name = f"{daemon} daemon"
    if not h.processes:
        return AuditItem(name, "WARN", "/proc: no process could be read", UNREADABLE_REMEDY)
    pids = [p.pid for p in h.processes if p.comm == daemon]
    facts = {"pids": pids}
    if pids:
        return AuditItem(name, "WARN", f"{daemon} is running (pid {', '.join(map(str, pids))}): {why}",
                         f"systemctl disable --now {daemon}"
                         + revert(f"systemctl enable --now {daemon}"), facts=facts)
    return AuditItem(name, "PASS", f"no {daemon} among {len(h.processes)} processes{h.process_note}",
                     facts=facts)


# Where irqbalance reads its environment: Debian and Ubuntu, RHEL and Fedora.
IRQBALANCE_CONFIGS = ("/etc/default/irqbalance", "/etc/sysconfig/irqbalance")


def _irqbalance_banned(h: Host) -> tuple[list[int] | None, str]:
    """The CPUs irqbalance's configuration bans (``IRQBALANCE_BANNED_CPULIST``, or the hex
    mask ``IRQBALANCE_BANNED_CPUS``) and the file that says so; (None, "") where none does."""
    for path in IRQBALANCE_CONFIGS:
        text = read_file(h.root, path).text or ""
        values = dict(re.findall(r'^\s*(IRQBALANCE_BANNED_CPU(?:LIST|S))\s*=\s*"?([^"\s#]*)"?',
                                 text, re.M))
        if values.get("IRQBALANCE_BANNED_CPULIST"):
            return to_cpus(values["IRQBALANCE_BANNED_CPULIST"]) or [], path
        if values.get("IRQBALANCE_BANNED_CPUS"):
            return mask_to_cpus(values["IRQBALANCE_BANNED_CPUS"]) or [], path
    return None, ""


def _irqbalance_item(h: Host) -> AuditItem:
    """irqbalance may run where it keeps off the real-time CPUs, as tuned's realtime profile
    sets it (``IRQBALANCE_BANNED_CPULIST``); stopping it would leave every IRQ where it lies,
    on CPU 0 of a large host."""
    item = _daemon_item(h, "irqbalance", "it spreads IRQs over every CPU it is not banned from")
    if not item.facts.get("pids"):
        return item
    cpus = h.isolated or suggested_isolation(h.online)
    banned, where = _irqbalance_banned(h)
    facts = {**item.facts, "banned": banned, "config": where}
    missing = [c for c in cpus if c not in (banned or [])]
    if cpus and not missing:
        return AuditItem(item.name, "PASS", f"irqbalance runs, banned from CPUs "
                         f"{format_cpu_list(banned)} ({where}), which holds the real-time CPUs "
                         f"{format_cpu_list(cpus)}", facts=facts)
    shown = (f"; {where} bans CPUs {format_cpu_list(banned)}" if banned else
             "; no IRQBALANCE_BANNED_CPULIST in " + " or ".join(IRQBALANCE_CONFIGS))
    return AuditItem(item.name, "WARN", item.evidence + shown + f", not CPUs "
                     f"{format_cpu_list(missing)}",
                     f"ban the real-time CPUs, as tuned's realtime profile does: "
                     f"IRQBALANCE_BANNED_CPULIST={format_cpu_list(cpus)} in /etc/default/irqbalance "
                     "(RHEL, Fedora: /etc/sysconfig/irqbalance), then `systemctl restart "
                     "irqbalance`" + revert("remove that line, `systemctl restart irqbalance`")
                     + ". Stopping irqbalance instead leaves every IRQ where it lies, often all "
                     "on CPU 0", facts=facts)


def tuned_verify() -> tuple[bool, str] | None:
    """``tuned-adm verify`` on this host: (passed, its last line); None where tuned-adm is absent."""
    if shutil.which("tuned-adm") is None:
        return None
    try:
        proc = subprocess.run(["tuned-adm", "verify"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"tuned-adm verify could not run: {exc}"
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    return proc.returncode == 0, lines[-1] if lines else f"exit status {proc.returncode}"


def _tuned_item(h: Host) -> AuditItem:
    """tuned's real-time profiles are a tuning (they isolate CPUs themselves); others undo one."""
    item = _daemon_item(h, "tuned", "its profiles reset governors and IRQ affinities")
    if not item.facts.get("pids"):
        return item
    profile = read_file(h.root, "/etc/tuned/active_profile").text or ""
    facts = {**item.facts, "profile": profile}
    if not set(profile.split()) & set(TUNED_RT_PROFILES):
        return AuditItem(item.name, "WARN", item.evidence + f"; active profile {profile or '(none)'}",
                         "either let tuned do the tuning: put the CPUs in isolated_cores= of "
                         "/etc/tuned/realtime-variables.conf, `tuned-adm profile realtime` "
                         "(realtime-virtual-host on a KVM host), reboot"
                         + revert(f"`tuned-adm profile {profile or 'balanced'}`, reboot")
                         + "; or `systemctl disable --now tuned`"
                         + revert("systemctl enable --now tuned"), facts=facts)
    evidence = f"tuned runs the {profile} profile, which isolates CPUs itself"
    # tuned-adm verify checks the running host, so only when auditing this host.
    verified = tuned_verify() if h.root == Path("/") else None
    if verified is None:
        return AuditItem(item.name, "PASS", evidence, facts=facts)
    passed, last = verified
    facts["verify"] = last
    if passed:
        return AuditItem(item.name, "PASS", f"{evidence}; tuned-adm verify: {last}", facts=facts)
    return AuditItem(item.name, "WARN", f"{evidence}, but tuned-adm verify fails: {last}",
                     "see `tuned-adm verify` and /var/log/tuned/tuned.log (a reboot applies the "
                     "profile's boot parameters)", facts=facts)


def _nmi_item(h: Host) -> AuditItem:
    name = "NMI watchdog"
    f = read_file(h.root, "/proc/sys/kernel/nmi_watchdog")
    if f.missing:
        return AuditItem(name, "N/A", f"{f.problem}: kernel without the hard-lockup detector")
    if f.text is None:
        return AuditItem(name, "WARN", f.problem, UNREADABLE_REMEDY)
    if f.text != "0":
        return AuditItem(name, "WARN", f"{f.path}: {f.text}; its periodic NMIs reach isolated CPUs too",
                         "sysctl -w kernel.nmi_watchdog=0" + revert(
                             f"sysctl -w kernel.nmi_watchdog={f.text}") + "; at boot: nmi_watchdog=0")
    return AuditItem(name, "PASS", f"{f.path}: 0")


def _no_isolation(name: str, h: Host) -> AuditItem:
    why = h.isolated_file.problem or "no isolated CPUs"
    return AuditItem(name, "N/A", f"{why}: nothing to keep quiet")


def parse_interrupts(text: str) -> dict[str, dict]:
    """/proc/interrupts as ``{label: {"counts": {cpu: n}, "what": description}}``.

    The header names the CPU of each column (offline CPUs have none); rows such
    as ``ERR`` have a single total and are left out.
    """
    lines = text.splitlines()
    if not lines:
        return {}
    columns = [int(c[3:]) for c in lines[0].split()]
    rows = {}
    for line in lines[1:]:
        label, _, rest = line.partition(":")
        fields = rest.split()
        numbers = [int(x) for x in fields[:len(columns)] if x.isdigit()]
        if len(numbers) < len(columns):
            continue
        rows[label.strip()] = {"counts": dict(zip(columns, numbers)),
                               "what": " ".join(fields[len(columns):])}
    return rows


def _irq_count_item(h: Host) -> AuditItem:
    name = "IRQ counts on isolated CPUs"
    if not h.isolated:
        return _no_isolation(name, h)
    f = read_file(h.root, "/proc/interrupts")
    if f.text is None:
        return AuditItem(name, "WARN", f.problem, UNREADABLE_REMEDY)
    rows = parse_interrupts(f.text)
    devices, system = [], []
    for label, row in rows.items():
        hits = {c: n for c, n in row["counts"].items() if c in h.isolated and n}
        if not hits:
            continue
        shown = ", ".join(f"{n} on CPU{c}" for c, n in hits.items())
        (devices if label.isdigit() else system).append(f"{label} ({row['what']}): {shown}")
    # Local timer, rescheduling and function-call interrupts cannot be moved;
    # they are shown for reference and do not change the status.
    context = ("; per-CPU interrupts: " + "; ".join(system)) if system else ""
    facts = {"device_irqs": devices}
    if devices:
        return AuditItem(name, "WARN", "device IRQs counted on isolated CPUs since boot: "
                         + "; ".join(devices) + context,
                         "move them to housekeeping CPUs (see 'IRQ affinity'), then check that the "
                         "counts stop growing: `watch -d -n1 cat /proc/interrupts`", facts=facts)
    return AuditItem(name, "PASS", f"no device IRQ counted on CPUs {format_cpu_list(h.isolated)}"
                     + context, facts=facts)


def _irq_affinity_item(h: Host) -> AuditItem:
    name = "IRQ affinity"
    if not h.isolated:
        return _no_isolation(name, h)
    irqs = list_names(h.root, "/proc/irq", r"\d+")
    if irqs is None:
        return AuditItem(name, "WARN", "/proc/irq: cannot be listed", UNREADABLE_REMEDY)
    mask = cpu_mask(h.housekeeping)
    offending, commands, undo, problems = [], [], [], []
    for irq in irqs:
        f = read_file(h.root, f"/proc/irq/{irq}/smp_affinity_list")
        cpus = to_cpus(f.text)
        if cpus is None:
            problems.append(f.problem or f"{f.path}: {f.text!r}")
        elif set(cpus) & set(h.isolated):
            offending.append(f"{irq}->{f.text}")
            commands.append(f"echo {mask} > /proc/irq/{irq}/smp_affinity")
            undo.append(f"echo {f.text} > /proc/irq/{irq}/smp_affinity_list")
    default = read_file(h.root, "/proc/irq/default_smp_affinity")
    default_cpus = mask_to_cpus(default.text)
    if default_cpus and set(default_cpus) & set(h.isolated):
        offending.append(f"default_smp_affinity->{default.text}")
        commands.append(f"echo {mask} > /proc/irq/default_smp_affinity")
        undo.append(f"echo {default.text} > /proc/irq/default_smp_affinity")
    facts = {"irqs": offending}
    if offending:
        return AuditItem(name, "WARN", "IRQs allowed on isolated CPUs "
                         f"{format_cpu_list(h.isolated)}: " + ", ".join(offending),
                         "; ".join(commands) + revert("; ".join(undo))
                         + " (EIO on a managed IRQ is normal; the kernel keeps "
                         "those off isolated CPUs when booted with isolcpus=managed_irq,...); at boot: "
                         f"irqaffinity={format_cpu_list(h.housekeeping)}", facts=facts)
    if problems:
        return AuditItem(name, "WARN", "; ".join(problems), UNREADABLE_REMEDY, facts=facts)
    return AuditItem(name, "PASS", f"every IRQ and the default affinity avoid CPUs "
                     f"{format_cpu_list(h.isolated)}", facts=facts)


WORKQUEUE_MASK = "/sys/devices/virtual/workqueue/cpumask"


def _kthread_item(h: Host) -> AuditItem:
    name = "kernel threads on isolated CPUs"
    if not h.isolated:
        return _no_isolation(name, h)
    hk = format_cpu_list(h.housekeeping)
    bound, movable = [], []
    for p in h.processes:
        if not p.kthread or p.cpus is None or p.comm.startswith("rcuo"):
            continue
        if not set(p.cpus) & set(h.isolated):
            continue
        # A thread bound to exactly one CPU (ksoftirqd/2, migration/2, kworker/2:1)
        # serves that CPU and cannot move; it only runs when that CPU needs it.
        (bound if len(p.cpus) == 1 else movable).append(p)
    context = f"; per-CPU threads (expected): {', '.join(p.comm for p in bound)}" if bound else ""
    facts = {"movable": [p.comm for p in movable], "per_cpu": [p.comm for p in bound]}
    if movable:
        commands = [f"taskset -pc {hk} {p.pid}" for p in movable]
        undo = [f"taskset -pc {format_cpu_list(p.cpus or [])} {p.pid}" for p in movable]
        if any(p.comm.startswith("kworker/u") for p in movable):
            commands.append(f"echo {cpu_mask(h.housekeeping)} > {WORKQUEUE_MASK}")
            was = read_file(h.root, WORKQUEUE_MASK).text
            if was:
                undo.append(f"echo {was} > {WORKQUEUE_MASK}")
        return AuditItem(name, "WARN", "unbound kernel threads allowed on isolated CPUs: "
                         + ", ".join(f"{p.comm} (pid {p.pid}, CPUs {format_cpu_list(p.cpus)})"
                                     for p in movable) + context,
                         "; ".join(commands) + revert("; ".join(undo))
                         + f" (booting with isolcpus=domain,... keeps them on {hk})",
                         facts=facts)
    return AuditItem(name, "PASS", f"no unbound kernel thread may run on CPUs "
                     f"{format_cpu_list(h.isolated)}{context}", facts=facts)


def _rcu_thread_item(h: Host) -> AuditItem:
    name = "RCU callback threads"
    if not h.isolated:
        return _no_isolation(name, h)
    rcuo = [p for p in h.processes if p.kthread and p.comm.startswith("rcuo")]
    offloaded = {int(m.group(1)) for p in rcuo if (m := re.fullmatch(r"rcuo[pbs]/(\d+)", p.comm))}
    misplaced = [p for p in rcuo if p.cpus is not None and set(p.cpus) & set(h.isolated)]
    not_offloaded = [c for c in h.isolated if c not in offloaded]
    shown = ", ".join(f"{p.comm} on {format_cpu_list(p.cpus or [])}" for p in rcuo) or "no rcuo* threads"
    facts = {"offloaded": sorted(offloaded)}
    if misplaced:
        return AuditItem(name, "WARN", f"{shown}; callback threads may run on isolated CPUs",
                         "; ".join(f"taskset -pc {format_cpu_list(h.housekeeping)} {p.pid}"
                                   for p in misplaced)
                         + revert("; ".join(f"taskset -pc {format_cpu_list(p.cpus or [])} {p.pid}"
                                            for p in misplaced)), facts=facts)
    if not_offloaded:
        return AuditItem(name, "WARN", f"{shown}; no callback thread for CPUs "
                         f"{format_cpu_list(not_offloaded)}, so their callbacks run on them",
                         "boot with the same rcu_nocbs list as isolcpus, on a kernel with "
                         "CONFIG_RCU_NOCB_CPU=y: " + isolation_fix(h.online, h.isolated), facts=facts)
    return AuditItem(name, "PASS", f"{shown}: every isolated CPU is offloaded to housekeeping CPUs",
                     facts=facts)


def _smt_item(h: Host) -> AuditItem:
    name = "SMT siblings"
    control = read_file(h.root, f"{CPU_DIR}/smt/control")
    siblings = smt_siblings(h.root, h.online)
    pairs = sorted({tuple(sorted([c, *s])) for c, s in siblings.items() if s})
    shown = f"smt/control {control.text or control.problem}; " + (
        "siblings " + " ".join(format_cpu_list(p) for p in pairs) if pairs
        else "every CPU is its own core")
    if not pairs:
        return AuditItem(name, "PASS", shown)
    if not h.isolated:
        return AuditItem(name, "N/A", shown + "; no isolated CPUs")
    split = {c: s for c, s in siblings.items() if c in h.isolated and not set(s) <= set(h.isolated)}
    if split:
        whole = sorted(set(h.isolated).union(*split.values()))
        return AuditItem(name, "WARN", shown + "; " + ", ".join(
            f"isolated CPU {c} shares its core with housekeeping CPU {format_cpu_list(s)}"
            for c, s in split.items()),
            f"isolate whole cores ({format_cpu_list(whole)}) or turn SMT off: "
            f"echo off > {CPU_DIR}/smt/control" + revert(f"echo on > {CPU_DIR}/smt/control")
            + " (at boot: nosmt)", facts={"split": list(split)})
    return AuditItem(name, "PASS", shown + "; isolated CPUs hold whole cores")


# Models under which kernel code yields at once to a waking real-time thread
# (lazy preemption defers only for normal tasks).
PREEMPTIBLE = ("PREEMPT_RT", "PREEMPT", "PREEMPT_LAZY", "PREEMPT_DYNAMIC (full)",
               "PREEMPT_DYNAMIC (lazy)")


def _preempt_item(h: Host) -> AuditItem:
    name = "preemption model"
    model, evidence = preempt_model(h.root)
    boot_mode = cmdline_value(h.cmdline.text or "", "preempt")
    facts = {"model": model}
    remedy = (f"boot a PREEMPT_RT kernel ({RT_KERNELS}), or on a PREEMPT_DYNAMIC kernel "
              + boot_fix("preempt=full"))
    if model in PREEMPTIBLE or (model == "PREEMPT_DYNAMIC" and boot_mode in ("full", "lazy")):
        suffix = f" with preempt={boot_mode}" if model == "PREEMPT_DYNAMIC" else ""
        return AuditItem(name, "PASS", f"{model}{suffix}: {evidence}", facts=facts)
    if model == "PREEMPT_DYNAMIC":
        return AuditItem(name, "WARN", f"{model}, mode not shown (debugfs not mounted, no preempt= "
                         f"on the command line): {evidence}",
                         "see the mode: `mount -t debugfs none /sys/kernel/debug; cat "
                         "/sys/kernel/debug/sched/preempt`; for full preemption " + remedy, facts=facts)
    return AuditItem(name, "WARN", f"{model}: {evidence}; kernel code is preempted only at "
                     "explicit points, so a waking real-time thread may wait for it", remedy,
                     facts=facts)


def audit(root: Path = Path("/")) -> list[AuditItem]:
    """Audit the host whose /proc and /sys are under ``root``, reading only.

    Parameters
    ----------
    root : Path
        The file-system root to read from; a directory holding a copy of a
        host's ``proc/`` and ``sys/`` files in tests.

    Returns
    -------
    list of AuditItem
        One item per setting the sources name (README "Citing"), in a fixed order.
    """
    h = load(Path(root))
    items = [
        _cmdline_item(h), _isolated_item(h), _nohz_item(h), _rcu_item(h), _consistency_item(h),
        _governor_item(h), audit_profile.cstate_item(h), audit_profile.pm_qos_item(h), _thp_item(h),
        _rt_runtime_item(h), _irqbalance_item(h), _tuned_item(h), _nmi_item(h),
        audit_profile.sysctl_item(h), audit_profile.boot_params_item(h),
        audit_profile.clocksource_item(h), _irq_count_item(h), _irq_affinity_item(h),
        _kthread_item(h), _rcu_thread_item(h), _smt_item(h), _preempt_item(h),
    ]
    return items + [audit_profile.boot_line_item(h, items)]


class AuditSummary(TypedDict):
    """The audit in brief (:func:`summary`)."""

    counts: dict[str, int]  # status → items
    isolated_cpus: list[int]
    shielded_cpus: list[int]
    tuned: bool  # CPUs isolated and no core item WARN or FAIL


def summary(items: list[AuditItem]) -> AuditSummary:
    """Counts per status, the isolated CPUs, and whether the core items all pass.

    ``tuned`` is true when CPUs are isolated and no item of ``CORE_ITEMS`` is
    WARN or FAIL.
    """
    counts = {s: sum(i.status == s for i in items) for s in STATUSES}
    by_name = {i.name: i for i in items}
    facts = by_name["isolated CPUs"].facts if "isolated CPUs" in by_name else {}
    isolated = facts.get("cpus", [])
    tuned = bool(isolated) and not any(by_name[n].status in ("WARN", "FAIL")
                                       for n in CORE_ITEMS if n in by_name)
    return {"counts": counts, "isolated_cpus": list(isolated),
            "shielded_cpus": list(facts.get("shielded", [])), "tuned": tuned}


def to_json(items: list[AuditItem]) -> str:
    """The audit as JSON text: ``{"summary": ..., "items": [...]}``."""
    return json.dumps({"summary": summary(items), "items": [asdict(i) for i in items]}, indent=2) + "\n"


def format_table(items: list[AuditItem]) -> str:
    """A readable table: status, name and evidence, with ``fix:`` under each WARN or FAIL."""
    width = max(len(i.name) for i in items)
    indent = " " * (4 + 2 + width + 2)
    lines = []
    for i in items:
        lines.append(f"{i.status:<4}  {i.name:<{width}}  {i.evidence}")
        if i.remedy and i.status in ("WARN", "FAIL"):
            lines.append(f"{indent}fix: {i.remedy}")
    s = summary(items)
    counts = ", ".join(f"{n} {status}" for status, n in s["counts"].items() if n)
    lines.append(f"{counts}; isolated CPUs: {format_cpu_list(s['isolated_cpus']) or 'none'}; "
                 f"tuned: {'yes' if s['tuned'] else 'no'}")
    return "\n".join(lines)
