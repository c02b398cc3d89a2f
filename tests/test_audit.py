"""The host audit reads a host's /proc and /sys, judges each E4 item and names the fix.

Fixtures under tests/fixtures/host are fake file-system roots: ``untuned`` is a
copy of this study's 2-vCPU VM, ``stock`` a default 4-CPU Debian host with SMT,
``isolated`` the same kind of host tuned as the SDK guide and the quiet-core article describe.
"""
from __future__ import annotations

import re

import json
import shutil
from pathlib import Path

import pytest

from rtstudy.machine import audit, kernelfs

FIXTURES = Path(__file__).parent / "fixtures" / "host"


def items_by_name(root: Path) -> dict[str, audit.AuditItem]:
    return {i.name: i for i in audit.audit(root)}


def copy_fixture(tmp_path: Path, scenario: str) -> Path:
    root = tmp_path / scenario
    shutil.copytree(FIXTURES / scenario, root)
    return root


def test_tuned_host_passes_every_item():
    items = audit.audit(FIXTURES / "isolated")
    assert {i.name: i.status for i in items if i.status != "PASS"} == {}
    by_name = {i.name: i for i in items}
    assert "2-3" in by_name["isolated CPUs"].evidence
    assert "housekeeping 0-1" in by_name["isolation consistency"].evidence
    assert "rcuop/2 on 0-1" in by_name["RCU callback threads"].evidence
    assert by_name["preemption model"].facts["model"] == "PREEMPT_RT"
    assert audit.summary(items) == {"counts": {"PASS": len(items), "WARN": 0, "FAIL": 0, "N/A": 0},
                                    "isolated_cpus": [2, 3], "shielded_cpus": [], "tuned": True}


def test_untuned_vm_is_reported_as_it_is():
    by_name = items_by_name(FIXTURES / "untuned")
    assert by_name["isolated CPUs"].status == "WARN"
    nohz = by_name["nohz_full CPUs"]
    assert nohz.status == "WARN" and "FileNotFoundError" in nohz.evidence
    assert "CONFIG_NO_HZ_FULL" in nohz.evidence
    rt = by_name["sched_rt_runtime_us"]
    assert rt.status == "WARN" and rt.facts["value"] == 950000
    assert "SCHED_DEADLINE threads cannot be pinned to one CPU" in rt.evidence
    assert "sysctl -w kernel.sched_rt_runtime_us=-1" in rt.remedy
    assert by_name["CPU governor"].status == "N/A"
    smt = by_name["SMT siblings"]
    assert smt.status == "PASS" and "notsupported" in smt.evidence
    for name in ("IRQ counts on isolated CPUs", "IRQ affinity", "kernel threads on isolated CPUs",
                 "RCU callback threads", "isolation consistency"):
        assert by_name[name].status == "N/A", name
    assert by_name["NMI watchdog"].status == "PASS"
    # This VM leaves only CPU 0 for housekeeping when CPU 1 is isolated.
    assert ("`isolcpus=managed_irq,domain,1 nohz_full=1 rcu_nocbs=1 irqaffinity=0`"
            in by_name["kernel command line"].remedy)
    assert audit.summary(list(by_name.values()))["tuned"] is False


def test_stock_host_warns_with_the_exact_commands():
    by_name = items_by_name(FIXTURES / "stock")
    expected = {
        "kernel command line": "add `isolcpus=managed_irq,domain,2-3 nohz_full=2-3 rcu_nocbs=2-3 "
                               "irqaffinity=0-1` to the kernel command line",
        "CPU governor": "cpupower -c 0-3 frequency-set -g performance",
        "C-states": "echo 1 > /sys/devices/system/cpu/cpu3/cpuidle/state3/disable",
        "transparent hugepages": "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled",
        "sched_rt_runtime_us": "sysctl -w kernel.sched_rt_runtime_us=-1",
        "irqbalance daemon": "IRQBALANCE_BANNED_CPULIST=2-3 in /etc/default/irqbalance",
        "tuned daemon": "systemctl disable --now tuned",
        "NMI watchdog": "sysctl -w kernel.nmi_watchdog=0",
        "preemption model": "linux-image-rt-amd64",
    }
    for name, remedy in expected.items():
        assert by_name[name].status == "WARN", name
        assert remedy in by_name[name].remedy, name
    assert "C6 (133 µs exit latency) on CPUs 0-3" in by_name["C-states"].evidence
    assert "pid 612" in by_name["irqbalance daemon"].evidence
    assert "no IRQBALANCE_BANNED_CPULIST" in by_name["irqbalance daemon"].evidence
    assert "voluntary" in by_name["preemption model"].evidence


@pytest.mark.parametrize("scenario", ["untuned", "stock", "isolated", "noisy", "real host"])
def test_every_warning_and_failure_names_a_remedy(scenario, tmp_path):
    root = {"real host": Path("/"), "noisy": None}.get(scenario, FIXTURES / scenario)
    if scenario == "noisy":
        root = make_noisy(tmp_path)
    for item in audit.audit(root):
        assert item.status in audit.STATUSES
        assert item.evidence, item.name
        if item.status in ("WARN", "FAIL"):
            assert item.remedy, item.name
            # Every change it suggests says how to undo it (a boot parameter: the boot line
            # item says how to remove it again).
            changes = re.findall(r"sysctl -w|echo \S+ >|cpupower|taskset|systemctl disable|"
                                 r"tuned-adm profile", item.remedy)
            if changes:
                assert "revert:" in item.remedy, (item.name, item.remedy)
            if "kernel command line" in item.remedy:
                assert "remove" in item.remedy, (item.name, item.remedy)


def make_noisy(tmp_path: Path) -> Path:
    """The isolated host with every kind of leak the audit should catch."""
    root = copy_fixture(tmp_path, "isolated")
    cpu = root / "sys/devices/system/cpu"
    (cpu / "nohz_full").write_text("2\n")
    (cpu / "cpu2/topology/thread_siblings_list").write_text("0,2\n")
    (root / "proc/irq/124/smp_affinity_list").write_text("0-3\n")
    (root / "proc/irq/default_smp_affinity").write_text("f\n")
    interrupts = root / "proc/interrupts"
    interrupts.write_text(interrupts.read_text().replace(
        " 124:    1234567          0          0", " 124:    1234567          0        815"))
    for pid in ("61", "52"):  # kworker/u8:2 and rcuop/3
        status = root / f"proc/{pid}/status"
        text = status.read_text().replace("Cpus_allowed_list:\t0-1", "Cpus_allowed_list:\t0-3")
        status.write_text(text)
    return root


def test_leaks_onto_isolated_cpus_are_found(tmp_path):
    by_name = items_by_name(make_noisy(tmp_path))
    consistency = by_name["isolation consistency"]
    assert consistency.status == "FAIL" and "nohz_full 2," in consistency.evidence
    assert "nohz_full=2-3" in consistency.remedy
    irq = by_name["IRQ affinity"]
    assert irq.status == "WARN" and "124->0-3" in irq.evidence
    assert "echo 3 > /proc/irq/124/smp_affinity" in irq.remedy
    assert "echo 3 > /proc/irq/default_smp_affinity" in irq.remedy
    counts = by_name["IRQ counts on isolated CPUs"]
    assert counts.status == "WARN" and "815 on CPU2" in counts.evidence
    kthreads = by_name["kernel threads on isolated CPUs"]
    assert kthreads.status == "WARN" and "kworker/u8:2-events_unbound (pid 61" in kthreads.evidence
    assert "taskset -pc 0-1 61" in kthreads.remedy and "workqueue/cpumask" in kthreads.remedy
    assert "ksoftirqd/2" in kthreads.evidence  # per-CPU threads are listed, not blamed
    rcu = by_name["RCU callback threads"]
    assert rcu.status == "WARN" and "taskset -pc 0-1 52" in rcu.remedy
    smt = by_name["SMT siblings"]
    assert smt.status == "WARN"
    assert "isolated CPU 2 shares its core with housekeeping CPU 0" in smt.evidence
    assert audit.summary(list(by_name.values()))["tuned"] is False


def test_isolating_every_cpu_fails(tmp_path):
    root = copy_fixture(tmp_path, "isolated")
    for name in ("isolated", "nohz_full"):
        (root / "sys/devices/system/cpu" / name).write_text("0-3\n")
    by_name = items_by_name(root)
    assert by_name["isolated CPUs"].status == "FAIL"
    assert "none is left" in by_name["isolated CPUs"].evidence
    assert by_name["isolation consistency"].status == "FAIL"


def test_rcu_nocbs_implied_by_nohz_full(tmp_path):
    root = copy_fixture(tmp_path, "isolated")
    cmdline = root / "proc/cmdline"
    cmdline.write_text(cmdline.read_text().replace(" rcu_nocbs=2-3", ""))
    by_name = items_by_name(root)
    assert by_name["rcu_nocbs CPUs"].status == "PASS"
    assert "implied by nohz_full=2-3" in by_name["rcu_nocbs CPUs"].evidence
    assert by_name["kernel command line"].status == "WARN"


def test_a_missing_file_is_reported_not_raised(tmp_path):
    root = copy_fixture(tmp_path, "untuned")
    (root / "proc/sys/kernel/sched_rt_runtime_us").unlink()
    (root / "proc/sys/kernel/nmi_watchdog").unlink()
    shutil.rmtree(root / "sys/kernel/mm")
    by_name = items_by_name(root)
    rt = by_name["sched_rt_runtime_us"]
    assert rt.status == "WARN"
    assert rt.evidence == "/proc/sys/kernel/sched_rt_runtime_us: not present (FileNotFoundError)"
    assert by_name["NMI watchdog"].status == "N/A"
    assert by_name["transparent hugepages"].status == "N/A"


def test_a_permission_error_is_reported_not_raised(monkeypatch):
    # Tests run as root, so the reader itself is made to refuse.
    real = kernelfs._read_text
    denied = ("sched_rt_runtime_us", "cmdline", "nmi_watchdog", "smp_affinity_list")

    def refusing(path: Path) -> str:
        if path.name in denied:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(kernelfs, "_read_text", refusing)
    by_name = items_by_name(FIXTURES / "isolated")
    for name in ("sched_rt_runtime_us", "kernel command line", "NMI watchdog", "IRQ affinity",
                 "rcu_nocbs CPUs", "isolation consistency"):
        assert by_name[name].status == "WARN", name
        assert "permission denied (PermissionError)" in by_name[name].evidence, name
        assert "root" in by_name[name].remedy, name


def test_real_host_audit_reads_without_error():
    items = audit.audit()
    summary = audit.summary(items)
    kernel_isolated = kernelfs.to_cpus(Path("/sys/devices/system/cpu/isolated").read_text())
    assert summary["isolated_cpus"] == kernel_isolated  # [] on the study's untuned VM
    assert sum(summary["counts"].values()) == len(items) == len(audit.audit(FIXTURES / "isolated"))
    rt = Path("/proc/sys/kernel/sched_rt_runtime_us").read_text().strip()
    by_name = {i.name: i for i in items}
    assert by_name["sched_rt_runtime_us"].facts["value"] == int(rt)
    assert by_name["sched_rt_runtime_us"].status == ("PASS" if rt == "-1" else "WARN")


def test_json_and_table_carry_every_item():
    items = audit.audit(FIXTURES / "stock")
    data = json.loads(audit.to_json(items))
    assert [i["name"] for i in data["items"]] == [i.name for i in items]
    assert data["summary"]["counts"]["WARN"] == 16
    table = audit.format_table(items)
    for item in items:
        assert item.name in table
    assert table.count("fix: ") == 16
    assert table.splitlines()[-1] == "1 PASS, 16 WARN, 6 N/A; isolated CPUs: none; tuned: no"


def test_parse_interrupts_names_cpus_by_column():
    rows = audit.parse_interrupts((FIXTURES / "untuned/proc/interrupts").read_text())
    assert rows["36"]["counts"] == {0: 0, 1: 156308}
    assert rows["36"]["what"].endswith("virtio1-req.0")
    assert "ERR" not in rows and rows["LOC"]["counts"][0] > 0


def test_remedies_name_debian_ubuntu_rhel_and_igx_commands():
    by_name = items_by_name(FIXTURES / "stock")  # no boot loader in the fixture: every family
    boot = by_name["boot line"].remedy
    for command in ("update-grub", "grubby --update-kernel=ALL", "extlinux.conf"):
        assert command in boot
    for kernel in ("linux-image-rt-amd64", "realtime-kernel", "kernel-rt"):
        assert kernel in by_name["preemption model"].remedy


@pytest.mark.parametrize("profile, status", [("realtime", "PASS"), ("realtime-virtual-host", "PASS"),
                                             ("throughput-performance", "WARN")])
def test_tuned_running_a_realtime_profile_is_a_tuning(tmp_path, profile, status):
    """A host tuned with tuned's realtime profile is tuned, not told to disable tuned."""
    root = tmp_path / "root"
    shutil.copytree(FIXTURES / "isolated", root)
    (root / "proc/900").mkdir()
    (root / "proc/900/comm").write_text("tuned\n")
    (root / "proc/900/status").write_text("Name:\ttuned\nPPid:\t1\nCpus_allowed_list:\t0-1\n")
    (root / "etc/tuned").mkdir(parents=True)
    (root / "etc/tuned/active_profile").write_text(profile + "\n")
    items = audit.audit(root)
    item = {i.name: i for i in items}["tuned daemon"]
    assert item.status == status and item.facts["profile"] == profile
    assert audit.summary(items)["tuned"] is (status == "PASS")
    if status == "WARN":
        assert "tuned-adm profile realtime" in item.remedy


@pytest.mark.parametrize("config, text, status", [
    ("default", "IRQBALANCE_BANNED_CPULIST=2-3\n", "PASS"),              # as tuned sets it
    ("sysconfig", 'IRQBALANCE_BANNED_CPUS="0000000c"\n', "PASS"),        # RHEL's mask form
    ("default", "# IRQBALANCE_BANNED_CPULIST=2-3\nIRQBALANCE_BANNED_CPULIST=3\n", "WARN"),
])
def test_irqbalance_may_run_where_it_is_banned_from_the_realtime_cpus(tmp_path, config, text,
                                                                      status):
    """tuned's realtime profile keeps irqbalance and bans the isolated CPUs; stopping it would
    leave every IRQ where it lies."""
    root = copy_fixture(tmp_path, "stock")
    (root / "etc" / config).mkdir(parents=True)
    (root / "etc" / config / "irqbalance").write_text(text)
    item = items_by_name(root)["irqbalance daemon"]
    assert item.status == status, item
    if status == "PASS":
        assert item.facts["banned"] == [2, 3] and "2-3" in item.evidence
    else:
        assert "bans CPUs 3, not CPUs 2" in item.evidence
        assert "IRQBALANCE_BANNED_CPULIST=2-3" in item.remedy
        assert "disable" not in item.remedy


def test_rt_throttling_is_described_as_it_works():
    """950000 of 1000000 µs: throttled only past 950 ms of real-time work in a period, and
    pinned SCHED_DEADLINE admitted in an exclusive cpuset without load balancing."""
    rt = items_by_name(FIXTURES / "untuned")["sched_rt_runtime_us"]
    assert "may run 950000 µs of each 1000000 µs period" in rt.evidence
    assert "stopped for the rest" not in rt.evidence
    assert "exclusive cpuset without load balancing" in rt.evidence


# ---------------------------------------------------------------------------
# What tuned's realtime profile sets beyond isolation (rtstudy.machine.audit_profile)


def set_idle_states(root: Path, driver: str, states: list[tuple[str, int]], cpus=range(4)) -> None:
    """Give ``cpus`` of a fixture the idle states ``(name, exit latency µs)``, state0 first."""
    cpu_dir = root / "sys/devices/system/cpu"
    (cpu_dir / "cpuidle/current_driver").write_text(driver + "\n")
    for cpu in cpus:
        idle_dir = cpu_dir / f"cpu{cpu}/cpuidle"
        shutil.rmtree(idle_dir, ignore_errors=True)
        for i, (name, latency) in enumerate(states):
            (idle_dir / f"state{i}").mkdir(parents=True)
            for key, value in (("name", name), ("latency", latency), ("disable", 0)):
                (idle_dir / f"state{i}" / key).write_text(f"{value}\n")


@pytest.mark.parametrize("driver, states, status, boot", [
    ("haltpoll", [("POLL", 0), ("haltpoll idle", 1)], "PASS", None),     # this VM: nothing deeper
    ("intel_idle", [("POLL", 0), ("C1", 2), ("C1E", 10), ("C6", 133)], "WARN", "intel_idle.max_cstate=1"),
    ("acpi_idle", [("POLL", 0), ("C1", 1), ("C2", 18), ("C3", 350)], "WARN", "processor.max_cstate=1"),
    ("acpi_idle", [("POLL", 0), ("C1", 1)], "PASS", None),              # processor.max_cstate=1 applied
])
def test_c_states_follow_tuned_and_the_idle_driver(tmp_path, driver, states, status, boot):
    """State 1 (C1, haltpoll) is as deep as tuned's realtime profile lets a CPU sleep; the boot
    fix is the driver's own, and once applied the item passes (it does not then warn about C1)."""
    root = copy_fixture(tmp_path, "stock")
    set_idle_states(root, driver, states)
    by_name = items_by_name(root)
    item = by_name["C-states"]
    assert item.status == status and f"idle driver {driver}" in item.evidence
    assert f"{states[1][0]} ({states[1][1]} µs exit latency) on CPUs 0-3 (state 1" in item.evidence
    if boot:
        assert f"add `{boot}` to the kernel command line" in item.remedy
        assert f"echo 1 > /sys/devices/system/cpu/cpu2/cpuidle/state{len(states) - 1}/disable" in item.remedy
        assert boot in by_name["boot line"].remedy
    assert by_name["PM QoS"].status == status


@pytest.mark.parametrize("how", ["cpu_dma_latency", "resume latency", "n/a", "disabled"])
def test_a_pm_qos_limit_or_disabled_states_keep_cpus_out_of_deep_states(tmp_path, how):
    """tuned's force_latency holds /dev/cpu_dma_latency at state 1's exit latency; a per-CPU
    resume latency limit or disabling the deeper states does the same."""
    root = copy_fixture(tmp_path, "stock")  # C1 2 µs, C1E 10 µs, C6 133 µs
    cpu_dir = root / "sys/devices/system/cpu"
    for cpu in range(4):
        if how == "cpu_dma_latency":
            (root / "dev/cpu_dma_latency").write_bytes((2).to_bytes(4, "little"))
        elif how in ("resume latency", "n/a"):
            (cpu_dir / f"cpu{cpu}/power/pm_qos_resume_latency_us").write_text(
                "2\n" if how == "resume latency" else "n/a\n")
        else:
            for state in (2, 3):
                (cpu_dir / f"cpu{cpu}/cpuidle/state{state}/disable").write_text("1\n")
    by_name = items_by_name(root)
    assert by_name["C-states"].status == "PASS", by_name["C-states"]
    assert by_name["PM QoS"].status == "PASS", by_name["PM QoS"]
    if how == "disabled":
        assert "8 state(s) disabled" in by_name["C-states"].evidence
        assert "no limit needed" in by_name["PM QoS"].evidence
    else:
        held = by_name["C-states"].evidence.split("held off by PM QoS: ")[1]
        assert "C1E (10 µs exit latency) on CPUs 0-3" in held and "C6 (133" in held
    if how == "cpu_dma_latency":
        assert "/dev/cpu_dma_latency: 2 µs held" in by_name["PM QoS"].evidence
    if how == "n/a":
        assert "only POLL is usable" in by_name["C-states"].evidence


def test_pm_qos_names_tuned_and_the_per_cpu_limit(tmp_path):
    by_name = items_by_name(FIXTURES / "stock")
    item = by_name["PM QoS"]
    assert item.status == "WARN" and "/dev/cpu_dma_latency: no request held" in item.evidence
    assert "tuned-adm profile realtime" in item.remedy
    assert "echo 2 > /sys/devices/system/cpu/cpu3/power/pm_qos_resume_latency_us" in item.remedy
    root = copy_fixture(tmp_path, "stock")
    (root / "dev/cpu_dma_latency").unlink()
    assert "/dev/cpu_dma_latency: not present" in items_by_name(root)["PM QoS"].evidence


def test_latency_sysctls_are_tuneds():
    item = items_by_name(FIXTURES / "untuned")["latency sysctls"]
    assert item.status == "WARN" and "kernel.timer_migration=1" in item.evidence
    assert "sysctl -w kernel.timer_migration=0 vm.stat_interval=10" in item.remedy
    assert "numa_balancing" not in item.remedy  # already 0 on this VM
    assert items_by_name(FIXTURES / "isolated")["latency sysctls"].status == "PASS"


def test_tuneds_boot_parameters(tmp_path):
    item = items_by_name(FIXTURES / "stock")["tuned's boot parameters"]
    assert item.status == "WARN"
    assert ("add `skew_tick=1 nosoftlockup tsc=reliable rcupdate.rcu_normal_after_boot=1` to the "
            "kernel command line") in item.remedy
    assert "kernel.soft_watchdog=0" in item.remedy
    root = copy_fixture(tmp_path, "stock")
    (root / "proc/sys/kernel/soft_watchdog").write_text("0\n")
    clock = root / "sys/devices/system/clocksource/clocksource0/current_clocksource"
    clock.write_text("kvm-clock\n")  # tsc=reliable concerns the TSC only
    item = items_by_name(root)["tuned's boot parameters"]
    assert item.facts["missing"] == ["skew_tick=1", "rcupdate.rcu_normal_after_boot=1"]
    assert "kernel.soft_watchdog=0 (set at run time)" in item.evidence


def test_a_slow_clocksource_is_named_with_the_fix(tmp_path):
    root = copy_fixture(tmp_path, "stock")
    (root / "sys/devices/system/clocksource/clocksource0/current_clocksource").write_text("hpet\n")
    item = items_by_name(root)["clocksource"]
    assert item.status == "WARN" and "hpet" in item.evidence
    assert "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource" in item.remedy


@pytest.mark.parametrize("marker, words", [
    (None, "Firecracker's `boot_args`"),
    ("etc/default/grub", "run `update-grub`"),
    ("usr/sbin/grubby", "grubby --update-kernel=ALL --args=\"isolcpus=managed_irq,domain,2-3"),
    ("etc/default/grub usr/sbin/grubby", "grubby --update-kernel=ALL"),   # RHEL has both
    ("boot/extlinux/extlinux.conf", "APPEND line"),
])
def test_the_boot_line_is_said_once_for_this_hosts_boot_loader(tmp_path, marker, words):
    """Every boot parameter the items ask for, merged into one line, with the steps of the boot
    loader found (a VM with none is told its launcher sets the command line)."""
    root = copy_fixture(tmp_path, "stock")
    for path in (marker or "").split():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("")
    items = audit.audit(root)
    line = {i.name: i for i in items}["boot line"]
    assert line.status == "WARN" and words in line.remedy
    assert line.facts["args"] == ("isolcpus=managed_irq,domain,2-3 nohz_full=2-3 rcu_nocbs=2-3 "
                                  "irqaffinity=0-1 intel_idle.max_cstate=1 skew_tick=1 nosoftlockup "
                                  "tsc=reliable rcupdate.rcu_normal_after_boot=1 preempt=full")
    table = audit.format_table(items)
    assert table.count(words) == 1  # the steps once, not under every item
    assert table.count("/etc/default/grub") <= 2  # the boot line's evidence and fix
    assert items_by_name(FIXTURES / "isolated")["boot line"].status == "PASS"


def test_idle_record_says_what_a_floor_ran_under():
    from rtstudy.machine import idle
    record = idle.record(FIXTURES / "stock", [2])
    assert record["driver"] == "intel_idle" and record["cpu_dma_latency_us"] == idle.NO_REQUEST_US
    assert record["cpus"]["2"] == {"resume_latency_us": "0", "limit_us": None,
                                   "usable": [["POLL", 0], ["C1", 2], ["C1E", 10], ["C6", 133]]}


def test_a_guest_without_no_hz_full_is_not_advised_what_it_cannot_take(tmp_path):
    """The untuned VM: a kernel built without NO_HZ_FULL ignores nohz_full= (the boot line
    leaves it out; the nohz item names the kernel), and a guest's TSC is the hypervisor's
    (no tsc=reliable)."""
    root = copy_fixture(tmp_path, "untuned")
    (root / "proc" / "cpuinfo").write_text("processor\t: 0\nflags\t\t: fpu tsc hypervisor\n\n")
    clock = root / "sys/devices/system/clocksource/clocksource0"
    clock.mkdir(parents=True, exist_ok=True)
    (clock / "current_clocksource").write_text("tsc\n")
    (clock / "available_clocksource").write_text("tsc kvm-clock\n")
    assert not (root / "sys/devices/system/cpu/nohz_full").exists()
    by_name = items_by_name(root)
    line = by_name["boot line"]
    assert "nohz_full" not in line.remedy and "rcu_nocbs" not in line.remedy
    assert "tsc=reliable" not in line.remedy and "isolcpus=" in line.remedy
    nohz = by_name["nohz_full CPUs"]
    assert "guest kernel built with CONFIG_NO_HZ_FULL=y" in nohz.remedy
    assert "nohz_full=" not in nohz.remedy.split("the VM")[0]
    assert "tsc=reliable" not in by_name["tuned's boot parameters"].remedy
