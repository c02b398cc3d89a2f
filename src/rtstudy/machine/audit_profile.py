"""The audit items that follow tuned's realtime profile beyond isolating CPUs.

tuned's ``realtime`` profile includes ``network-latency``, which includes
``latency-performance``; between them they hold idle states to state 1 through PM QoS
(``force_latency=cstate.id_no_zero:1|3``), set ``kernel.timer_migration=0``,
``vm.stat_interval=10`` and ``kernel.numa_balancing=0``, and boot with ``skew_tick=1
tsc=reliable rcupdate.rcu_normal_after_boot=1 nosoftlockup``. Each item here reads what
the host has and says what tuned would set; docs/tuned-host.md maps every audit item
to the tuned option or guide section it follows. The last item, "boot line", gathers
every boot parameter the other items ask for and says once where this host takes them.
"""
from __future__ import annotations

from rtstudy.machine import idle
from rtstudy.machine.audit_host import (BOOTLOADERS, UNREADABLE_REMEDY, AuditItem, Host, boot_args,
                                        boot_fix, boot_steps, bootloader, revert)
from rtstudy.machine.kernelfs import CPU_DIR, cmdline_value, format_cpu_list, read as read_file

# (sysctl, tuned's value, what it changes); network-latency sets all three.
TUNED_SYSCTLS = (
    ("kernel.timer_migration", 0, "timers armed on a CPU stay there instead of moving to a busy "
     "CPU, such as a real-time one"),
    ("vm.stat_interval", 10, "each CPU's vmstat update runs every 10 s instead of every second"),
    ("kernel.numa_balancing", 0, "no NUMA-balancing page faults in running tasks"),
)
# (boot parameter, what it changes); tuned's realtime and network-latency profiles set each.
TUNED_BOOT = (
    ("skew_tick=1", "each CPU's tick at its own offset, so the ticks do not contend for the same "
     "locks at once"),
    ("nosoftlockup", "no soft-lockup watchdog timer on every CPU"),
    ("tsc=reliable", "no clocksource watchdog timer re-checking the TSC"),
    ("rcupdate.rcu_normal_after_boot=1", "no expedited RCU grace periods after boot, whose IPIs "
     "reach every CPU"),
)
# Clocksources read in user space through the vDSO, without a system call.
FAST_CLOCKS = ("tsc", "arch_sys_counter", "kvm-clock", "hyperv_clocksource_tsc_page")


def _label(state: idle.IdleState) -> str:
    return f"{state.name} ({state.latency_us} µs exit latency)"


def _grouped(by_label: dict[str, list[int]]) -> str:
    return ", ".join(f"{label} on CPUs {format_cpu_list(cpus)}" for label, cpus in by_label.items())


def cstate_item(h: Host) -> AuditItem:
    """Idle states deeper than state 1 that a target CPU may still enter (disable files and
    PM QoS both considered); the boot fix follows the idle driver."""
    name = "C-states"
    cmdline = h.cmdline.text or ""
    driver = idle.driver(h.root)
    limits = " ".join(f"{k}={v}" for k in ("idle", "processor.max_cstate", "intel_idle.max_cstate")
                      if (v := cmdline_value(cmdline, k)) is not None)
    context = f"idle driver {driver}" + (f"; command line: {limits}" if limits else "")
    if cmdline_value(cmdline, "idle") == "poll":
        return AuditItem(name, "PASS", f"{context}: CPUs poll instead of sleeping")
    system_us, _ = idle.system_request(h.root)
    allowed, deeper, held, disabled, commands, undo = {}, {}, {}, 0, [], []
    per_cpu = {cpu: idle.states(h.root, cpu) for cpu in h.targets}
    for cpu, states in per_cpu.items():
        limit = idle.limit_us(system_us, idle.resume_limit(h.root, cpu))
        for s in states:
            if s.polls:
                continue
            if s.disabled:
                disabled += 1
            elif limit is not None and s.latency_us > limit:
                held.setdefault(_label(s), []).append(cpu)
            elif s.latency_us <= idle.allowed_us(states):
                allowed.setdefault(_label(s), []).append(cpu)
            else:
                deeper.setdefault(_label(s), []).append(cpu)
                commands.append(f"echo 1 > {CPU_DIR}/cpu{cpu}/cpuidle/state{s.index}/disable")
                undo.append(f"echo 0 > {CPU_DIR}/cpu{cpu}/cpuidle/state{s.index}/disable")
    if not any(per_cpu.values()):
        return AuditItem(name, "N/A", f"no {CPU_DIR}/cpu*/cpuidle states for CPUs "
                         f"{format_cpu_list(h.targets)}; {context}")
    parts = [context]
    parts += [f"may sleep in {_grouped(allowed)} (state 1, as deep as tuned's realtime profile "
              "allows)"] if allowed else ["only POLL is usable"]
    parts += [f"held off by PM QoS: {_grouped(held)}"] if held else []
    parts += [f"{disabled} state(s) disabled"] if disabled else []
    facts = {"driver": driver, "deeper": deeper}
    if not deeper:
        return AuditItem(name, "PASS", "; ".join(parts), facts=facts)
    at_boot, leaves = idle.BOOT_LIMIT.get(driver, ("idle=poll", "polling only; it burns the CPU "
                                                   "while idle"))
    return AuditItem(name, "WARN", "; ".join(parts) + f"; deeper: {_grouped(deeper)}, whose wake-up "
                     "delays the first instruction after an idle period",
                     "at run time, until reboot: " + "; ".join(commands) + revert("; ".join(undo))
                     + ", or a PM QoS limit "
                     f"(the PM QoS item); at boot ({driver}, {leaves}): " + boot_fix(at_boot),
                     facts=facts)


def pm_qos_item(h: Host) -> AuditItem:
    """What PM QoS holds (/dev/cpu_dma_latency, each CPU's resume latency) and whether it keeps
    the target CPUs out of states deeper than state 1, as tuned's force_latency does."""
    name = "PM QoS"
    if cmdline_value(h.cmdline.text or "", "idle") == "poll":
        return AuditItem(name, "PASS", "idle=poll on the command line: the CPUs never sleep, so "
                         "there is no idle state to limit")
    system_us, why = idle.system_request(h.root)
    per_cpu = {cpu: idle.states(h.root, cpu) for cpu in h.targets}
    if not any(per_cpu.values()):
        return AuditItem(name, "N/A", f"no idle states on CPUs {format_cpu_list(h.targets)}: nothing "
                         "for PM QoS to limit")
    system = (why or f"{idle.CPU_DMA_LATENCY}: " + ("no request held" if system_us == idle.NO_REQUEST_US
                                                    else f"{system_us} µs held"))
    resume: dict[str, list[int]] = {}
    needs, missing, was = {}, [], {}
    for cpu, states in per_cpu.items():
        shown = idle.resume_limit(h.root, cpu)
        was[cpu] = shown
        resume.setdefault(shown or "not present", []).append(cpu)
        allowed = idle.allowed_us(states)
        if any(not s.disabled and s.latency_us > allowed for s in states):
            needs[cpu] = allowed
            limit = idle.limit_us(system_us, shown)
            if limit is None or limit > allowed:
                missing.append(cpu)
    evidence = (f"{system}; pm_qos_resume_latency_us: " + ", ".join(
        f"{value} on CPUs {format_cpu_list(cpus)}" for value, cpus in resume.items()))
    facts = {"cpu_dma_latency_us": system_us, "resume": resume}
    if not needs:
        return AuditItem(name, "PASS", evidence + "; no limit needed: no enabled state deeper than "
                         "state 1", facts=facts)
    if not missing:
        return AuditItem(name, "PASS", evidence + f"; CPUs {format_cpu_list(list(needs))} held to "
                         "state 1's exit latency or less", facts=facts)
    return AuditItem(name, "WARN", evidence + f"; nothing holds CPUs {format_cpu_list(missing)} out of "
                     "the states deeper than state 1",
                     "as tuned does: `tuned-adm profile realtime` (its latency-performance part holds "
                     f"{idle.CPU_DMA_LATENCY} at state 1's exit latency while tuned runs); without "
                     "tuned, until reboot: " + "; ".join(
                         f"echo {needs[c]} > {CPU_DIR}/cpu{c}/power/pm_qos_resume_latency_us"
                         for c in missing) + revert("; ".join(
                             f"echo {was[c]} > {CPU_DIR}/cpu{c}/power/pm_qos_resume_latency_us"
                             for c in missing if was[c])) + " (`n/a` instead allows polling "
                     "only). A program may "
                     f"hold its own request: open {idle.CPU_DMA_LATENCY}, write the µs as a 32-bit "
                     "integer and keep it open (cyclictest does, at 0 µs)", facts=facts)


def sysctl_item(h: Host) -> AuditItem:
    """The sysctls tuned's network-latency profile sets for latency."""
    name = "latency sysctls"
    shown, wrong, problems, before = [], [], [], {}
    for key, value, why in TUNED_SYSCTLS:
        f = read_file(h.root, "/proc/sys/" + key.replace(".", "/"))
        if f.missing:
            shown.append(f"{key} absent (not in this kernel)")
        elif f.text is None:
            problems.append(f.problem)
        else:
            shown.append(f"{key}={f.text}")
            ok = f.text.isdigit() and (int(f.text) >= value if key == "vm.stat_interval"
                                       else int(f.text) == value)
            if not ok:
                wrong.append((key, value, why))
                before[key] = f.text
    if problems:
        return AuditItem(name, "WARN", "; ".join(shown + problems), UNREADABLE_REMEDY)
    if not wrong:
        status = "PASS" if any("=" in s for s in shown) else "N/A"
        return AuditItem(name, status, ", ".join(shown) + " (as tuned's network-latency profile sets)")
    sets = " ".join(f"{k}={v}" for k, v, _ in wrong)
    return AuditItem(name, "WARN", ", ".join(shown) + "; tuned's network-latency profile sets " + "; ".join(
        f"{k}={v}: {why}" for k, v, why in wrong),
        f"sysctl -w {sets} (until reboot"
        + revert("sysctl -w " + " ".join(f"{k}={before[k]}" for k, _, _ in wrong))
        + "; to keep: one `key = value` per line in /etc/sysctl.d/90-realtime.conf, revert: "
        "remove those lines)", facts={"differ": [k for k, _, _ in wrong]})


def boot_params_item(h: Host) -> AuditItem:
    """tuned's boot parameters beyond isolation: skew_tick, nosoftlockup, tsc=reliable (only
    where the TSC is the clocksource) and rcu_normal_after_boot."""
    name = "tuned's boot parameters"
    if h.cmdline.text is None:
        return AuditItem(name, "WARN", h.cmdline.problem, UNREADABLE_REMEDY)
    clock = read_file(h.root, "/sys/devices/system/clocksource/clocksource0/current_clocksource").text
    soft = read_file(h.root, "/proc/sys/kernel/soft_watchdog").text
    tokens = h.cmdline.text.split()
    present, missing = [], []
    for param, why in TUNED_BOOT:
        if param == "tsc=reliable" and (clock != "tsc" or h.guest):
            continue  # only the TSC has that watchdog, and a guest needs it (boot_line_item)
        if param in tokens:
            present.append(param)
        elif param == "nosoftlockup" and soft == "0":
            present.append("kernel.soft_watchdog=0 (set at run time)")
        else:
            missing.append((param, why))
    evidence = "present: " + (", ".join(present) if present else "none")
    if not missing:
        return AuditItem(name, "PASS", evidence)
    args = " ".join(p for p, _ in missing)
    runtime = (" (nosoftlockup at run time: `sysctl -w kernel.soft_watchdog=0`"
               + revert(f"sysctl -w kernel.soft_watchdog={soft}") + ")"
               if any(p == "nosoftlockup" for p, _ in missing) else "")
    return AuditItem(name, "WARN", evidence + "; missing: " + "; ".join(f"{p} ({why})" for p, why in missing),
                     boot_fix(args) + runtime, facts={"missing": [p for p, _ in missing]})


def clocksource_item(h: Host) -> AuditItem:
    """The clocksource: one that user space reads through the vDSO, or a slow fallback."""
    name = "clocksource"
    base = "/sys/devices/system/clocksource/clocksource0"
    f = read_file(h.root, f"{base}/current_clocksource")
    if f.missing:
        return AuditItem(name, "N/A", f"{f.problem}: no clocksource in sysfs")
    if f.text is None:
        return AuditItem(name, "WARN", f.problem, UNREADABLE_REMEDY)
    available = (read_file(h.root, f"{base}/available_clocksource").text or "").split()
    evidence = f"{f.path}: {f.text} (available: {' '.join(available) or 'not shown'})"
    if f.text in FAST_CLOCKS:
        return AuditItem(name, "PASS", evidence + "; read in user space without a system call",
                         facts={"clocksource": f.text})
    fix = (f"echo tsc > {f.path} (until reboot" + revert(f"echo {f.text} > {f.path}")
           + "); at boot: " + boot_fix("clocksource=tsc" if h.guest else
                                       "clocksource=tsc tsc=reliable")
           if "tsc" in available else
           "the kernel fell back from its fast clock: `dmesg | grep -i clocksource` says why "
           "(often a TSC it judged unstable)")
    return AuditItem(name, "WARN", evidence + "; every clock read is a system call and a slow device "
                     "read, and the study's time stamps take it", fix, facts={"clocksource": f.text})


def boot_line_item(h: Host, items: list[AuditItem]) -> AuditItem:
    """Every boot parameter the other items ask for, merged into one line, and where this host
    takes it (its boot loader, or a VM's launcher where it has none)."""
    name = "boot line"
    merged: dict[str, str] = {}
    asking = []
    # What this kernel or machine cannot take is left out: nohz_full and rcu_nocbs without
    # CONFIG_NO_HZ_FULL (ignored), tsc=reliable in a guest (its TSC is the hypervisor's: the
    # clocksource watchdog is what catches a TSC the hypervisor let drift).
    cannot = ({"nohz_full", "rcu_nocbs"} if h.nohz_file.missing else set()) | \
        ({"tsc"} if h.guest else set())
    for item in items:
        args = [a for a in (boot_args(item.remedy) if item.status in ("WARN", "FAIL") else [])
                if a.split("=")[0] not in cannot]
        if args:
            asking.append(item.name)
        for arg in args:
            merged.setdefault(arg.split("=")[0], arg)
    loader = bootloader(h.root)
    looked = ", ".join(m for _, m, _ in BOOTLOADERS)
    where = f"boot loader: {loader[0]}" if loader else f"no boot loader found (looked for {looked})"
    if not merged:
        return AuditItem(name, "PASS", f"no item asks for a boot parameter; {where}")
    line = " ".join(merged.values())
    return AuditItem(name, "WARN", f"asked for by: {', '.join(asking)}; {where}",
                     f"add `{line}` to the kernel command line: {boot_steps(h.root, line)}"
                     + revert("remove them from the kernel command line the same way, and "
                              "reboot"),
                     facts={"args": line, "bootloader": loader[0] if loader else None})
