"""Tuning: plan checks the CPU list; apply records then changes; revert restores exactly.

apply and revert run only on a copy of a fixture host in tmp_path: an autouse
fixture fails any write outside it and any real systemctl call.
"""
from __future__ import annotations

import errno
import json
import shutil
from pathlib import Path

import pytest

from rtstudy.machine import audit, kernelfs, tuning

FIXTURES = Path(__file__).parent / "fixtures" / "host"


@pytest.fixture(autouse=True)
def sandbox_only(monkeypatch, tmp_path):
    real_write = kernelfs.write

    def guarded(path: Path, text: str) -> None:
        inside = Path(path).resolve().is_relative_to(tmp_path.resolve())
        assert inside, f"write outside the sandbox: {path}"
        real_write(path, text)

    def no_systemctl(action: str, name: str) -> None:
        raise AssertionError(f"a test ran systemctl {action} {name}")

    monkeypatch.setattr(kernelfs, "write", guarded)
    monkeypatch.setattr(tuning, "systemctl", no_systemctl)


def sandbox(tmp_path: Path, scenario: str, name: str = "root") -> Path:
    root = tmp_path / name
    shutil.copytree(FIXTURES / scenario, root)
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


class FakeServices:
    """Records ``service(action, name)`` calls and whether the revert file existed at the time."""

    def __init__(self, revert_file: Path):
        self.revert_file = revert_file
        self.calls: list[tuple[str, str, bool]] = []

    def __call__(self, action: str, name: str) -> None:
        self.calls.append((action, name, self.revert_file.exists()))


def test_plan_gives_boot_line_and_runtime_commands():
    p = tuning.plan("2-3", FIXTURES / "stock")
    assert p.cpus == (2, 3) and p.housekeeping == (0, 1)
    assert p.kernel_args == "isolcpus=managed_irq,domain,2-3 nohz_full=2-3 rcu_nocbs=2-3 irqaffinity=0-1"
    assert f"--args=\"{p.kernel_args}\"" in p.boot and "grubby" in p.boot
    assert "update-grub" in p.boot and "/boot/extlinux/extlinux.conf" in p.boot
    for command in ("sysctl -w kernel.sched_rt_runtime_us=-1",
                    "cpupower -c 2-3 frequency-set -g performance",
                    "systemctl stop irqbalance",
                    "echo 0-1 > /proc/irq/124/smp_affinity_list",
                    "echo 3 > /proc/irq/default_smp_affinity"):
        assert command in p.commands
    # IRQ 0 is already on CPU 0 only.
    assert not any("/proc/irq/0/" in c for c in p.commands)
    assert p.kernel_args in tuning.format_plan(p)


def test_plan_refuses_to_isolate_every_cpu():
    with pytest.raises(tuning.TuningError, match=r"'0-3' names every online CPU \(0-3\).*housekeeping"):
        tuning.plan("0-3", FIXTURES / "stock")


def test_plan_of_every_cpu_of_this_host_is_refused():
    online = kernelfs.format_cpu_list(kernelfs.online_cpus())
    with pytest.raises(tuning.TuningError, match="housekeeping"):
        tuning.plan(online)


def test_plan_names_an_unknown_cpu():
    with pytest.raises(tuning.TuningError, match=r"CPU 7 in '2,7' is not online.*online CPUs: 0-3"):
        tuning.plan("2,7", FIXTURES / "stock")


@pytest.mark.parametrize("text", ["2-", "two", "1;3", "3-2", "", "-1"])
def test_plan_names_a_malformed_list_and_the_syntax(text):
    with pytest.raises(tuning.TuningError) as err:
        tuning.plan(text, FIXTURES / "stock")
    assert repr(text) in str(err.value) and "expected comma-separated CPU numbers" in str(err.value)


def test_plan_warns_when_smt_siblings_are_split():
    split = tuning.plan("2-3", FIXTURES / "stock")  # siblings 0,2 and 1,3
    assert len(split.warnings) == 2
    assert split.warnings[0].startswith("CPU 2 shares its core with CPU 0 (SMT)")
    assert tuning.plan("2-3", FIXTURES / "isolated").warnings == ()  # siblings 0-1 and 2-3


def test_apply_without_yes_refuses_and_changes_nothing(tmp_path):
    root = sandbox(tmp_path, "stock")
    before = snapshot(root)
    with pytest.raises(tuning.TuningError, match="yes=True"):
        tuning.apply(tuning.plan("2-3", root), root=root, revert_file=tmp_path / "revert.json")
    assert snapshot(root) == before and not (tmp_path / "revert.json").exists()


def test_apply_on_the_real_root_without_yes_refuses(tmp_path):
    with pytest.raises(tuning.TuningError, match="yes=True"):
        tuning.apply(tuning.plan("1", FIXTURES / "untuned"), revert_file=tmp_path / "revert.json")


def test_apply_records_first_then_changes_the_sandbox(tmp_path, monkeypatch):
    root = sandbox(tmp_path, "stock")
    revert_file = tmp_path / "revert.json"
    services = FakeServices(revert_file)
    writes_seen = []
    guarded = kernelfs.write

    def recording(path, text):
        writes_seen.append((str(path), revert_file.exists()))
        guarded(path, text)

    monkeypatch.setattr(kernelfs, "write", recording)
    steps = tuning.apply(tuning.plan("2-3", root), root=root, revert_file=revert_file, yes=True,
                         service=services)

    assert writes_seen and all(recorded for _, recorded in writes_seen)
    assert services.calls == [("stop", "irqbalance", True)]
    assert [s for s in steps if s.error] == []
    assert (root / "proc/sys/kernel/sched_rt_runtime_us").read_text() == "-1\n"
    cpu = root / "sys/devices/system/cpu"
    assert (cpu / "cpu2/cpufreq/scaling_governor").read_text() == "performance\n"
    assert (cpu / "cpu0/cpufreq/scaling_governor").read_text() == "schedutil\n"
    assert (root / "proc/irq/124/smp_affinity_list").read_text() == "0-1\n"
    assert (root / "proc/irq/0/smp_affinity_list").read_text() == "0\n"
    assert (root / "proc/irq/default_smp_affinity").read_text() == "3\n"

    record = json.loads(revert_file.read_text())
    assert record["root"] == str(root.resolve()) and record["services"] == ["irqbalance"]
    previous = {f["path"]: f["previous"] for f in record["files"]}
    assert previous["/proc/sys/kernel/sched_rt_runtime_us"] == "950000\n"
    assert previous["/proc/irq/124/smp_affinity_list"] == "0-3\n"
    assert len(previous) == len(steps) - 1  # every write, plus the irqbalance stop

    # The audit of the sandbox sees the runtime part of the tuning.
    by_name = {i.name: i for i in audit.audit(root)}
    assert by_name["sched_rt_runtime_us"].status == "PASS"


def test_rt_throttling_kept_leaves_sched_rt_runtime_us_and_changes_the_rest(tmp_path):
    """The shield with the kernel's throttling on, for comparing a shielded CPU both ways."""
    root = sandbox(tmp_path, "stock")
    lifted, kept = (tuning.plan("2-3", root, rt_throttling=r) for r in ("lift", "keep"))
    assert "sysctl -w kernel.sched_rt_runtime_us=-1" in lifted.commands
    assert [c for c in kept.commands if "sched_rt_runtime_us" in c] == []
    assert set(kept.commands) == set(lifted.commands) - {"sysctl -w kernel.sched_rt_runtime_us=-1"}
    assert "real-time throttling kept" in tuning.format_plan(kept)
    assert "throttling kept" not in tuning.format_plan(lifted)
    revert_file = tmp_path / "revert.json"
    tuning.apply(kept, root=root, revert_file=revert_file, yes=True,
                 service=FakeServices(revert_file))
    assert (root / "proc/sys/kernel/sched_rt_runtime_us").read_text() == "950000\n"
    assert (root / "proc/irq/124/smp_affinity_list").read_text() == "0-1\n"
    paths = [f["path"] for f in json.loads(revert_file.read_text())["files"]]
    assert "/proc/sys/kernel/sched_rt_runtime_us" not in paths and paths
    with pytest.raises(tuning.TuningError, match="expected one of lift, keep"):
        tuning.plan("2-3", root, rt_throttling="off")


def test_revert_restores_every_file_byte_for_byte(tmp_path):
    root = sandbox(tmp_path, "stock")
    revert_file = tmp_path / "revert.json"
    before = snapshot(root)
    services = FakeServices(revert_file)
    tuning.apply(tuning.plan("2-3", root), root=root, revert_file=revert_file, yes=True,
                 service=services)
    assert snapshot(root) != before

    steps = tuning.revert(revert_file, root=root, service=services)
    assert [s for s in steps if s.error] == []
    assert snapshot(root) == before
    assert services.calls[-1][:2] == ("start", "irqbalance")
    assert not revert_file.exists()
    assert json.loads((tmp_path / "revert.json.reverted").read_text())["cpus"] == "2-3"


def test_failed_writes_are_recorded_not_fatal(tmp_path, monkeypatch):
    root = sandbox(tmp_path, "stock")
    guarded = kernelfs.write

    def eio_on_irq_125(path, text):
        if "/irq/125/" in str(path):
            raise OSError(errno.EIO, "Input/output error")
        guarded(path, text)

    monkeypatch.setattr(kernelfs, "write", eio_on_irq_125)
    steps = tuning.apply(tuning.plan("2-3", root), root=root, revert_file=tmp_path / "r.json",
                         yes=True, service=FakeServices(tmp_path / "r.json"))
    failed = [s for s in steps if s.error]
    assert [(s.target, s.error) for s in failed] == [("/proc/irq/125/smp_affinity_list",
                                                       "Input/output error (errno 5)")]
    assert (root / "proc/irq/126/smp_affinity_list").read_text() == "0-1\n"
    assert "FAILED" in tuning.format_steps(steps)


def test_a_second_apply_is_refused_until_reverted(tmp_path):
    root = sandbox(tmp_path, "stock")
    revert_file = tmp_path / "revert.json"
    services = FakeServices(revert_file)
    tuning.apply(tuning.plan("2-3", root), root=root, revert_file=revert_file, yes=True,
                 service=services)
    with pytest.raises(tuning.TuningError, match="has not been reverted"):
        tuning.apply(tuning.plan("3", root), root=root, revert_file=revert_file, yes=True,
                     service=services)


def test_revert_refuses_a_record_from_another_root(tmp_path):
    root = sandbox(tmp_path, "stock")
    other = sandbox(tmp_path, "stock", name="other")
    revert_file = tmp_path / "revert.json"
    tuning.apply(tuning.plan("2-3", root), root=root, revert_file=revert_file, yes=True,
                 service=FakeServices(revert_file))
    before = snapshot(other)
    with pytest.raises(tuning.TuningError, match="records changes under"):
        tuning.revert(revert_file, root=other, service=FakeServices(revert_file))
    assert snapshot(other) == before and revert_file.exists()


def test_nothing_to_change_writes_no_revert_file(tmp_path):
    root = sandbox(tmp_path, "isolated")
    steps = tuning.apply(tuning.plan("2-3", root), root=root, revert_file=tmp_path / "r.json",
                         yes=True, service=FakeServices(tmp_path / "r.json"))
    assert steps == [] and not (tmp_path / "r.json").exists()


def test_default_revert_file_lives_under_the_root(tmp_path):
    root = sandbox(tmp_path, "untuned")
    steps = tuning.apply(tuning.plan("1", root), root=root, yes=True,
                         service=FakeServices(tmp_path / "unused"))
    assert steps and (root / "var/lib/rtstudy/tuning-revert.json").exists()
    tuning.revert(root=root, service=FakeServices(tmp_path / "unused"))
    assert (root / "var/lib/rtstudy/tuning-revert.json.reverted").exists()
    with pytest.raises(tuning.TuningError, match="nothing to revert"):
        tuning.revert(root=root)
