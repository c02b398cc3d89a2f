"""The runtime CPU shield on this host: apply, what it looks like, revert to exactly what was there.

A shield acts on real processes, so these tests change this host, within the
limits the project sets for tests: a sysctl, IRQ affinities, the workqueue
mask, an idle state, and a cpuset or CPU affinities that hold only the test's
own processes (``tasks=[...]``, the CLI's ``--only-this-process``); no other
process moves. Both methods are tested for real here (this VM has a writable
cgroup v1 cpuset; the affinity method needs none). Every test reverts, and
checks that /proc and /sys read exactly as before.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest

from helpers import default_signals
from rtstudy.machine import audit, host, shield as shielding, tuning
from rtstudy.measure import process

BASE = shielding.cpuset_root()
ONLINE = tuning.online_cpus() or []
CPU = ONLINE[-1] if len(ONLINE) > 1 else None

pytestmark = [pytest.mark.cells,
              pytest.mark.skipif(os.geteuid() != 0 or CPU is None, reason="needs root and 2+ CPUs")]

needs_cpuset = pytest.mark.skipif(
    shielding.cpuset_problem() is not None,
    reason=f"needs a writable cgroup v1 cpuset ({shielding.cpuset_problem()})")


def host_state() -> dict[str, str]:
    """Every file the shield, the IRQ and the sysctl steps touch, and the cpusets that exist."""
    files = [Path(tuning.RT_RUNTIME), Path(tuning.DEFAULT_AFFINITY), Path(tuning.WORKQUEUE_MASK),
             Path(shielding.STATE_FILE)]
    files += sorted(Path("/proc/irq").glob("*/smp_affinity_list"))
    files += sorted(Path("/sys/devices/system/cpu").glob("cpu*/cpuidle/state*/disable"))
    # memory_pressure is a running average, not a setting.
    if BASE is not None:
        files += sorted(f for f in BASE.glob("cpuset.*") if f.name != "cpuset.memory_pressure")
    state = {}
    for f in files:
        try:
            state[str(f)] = f.read_text()
        except OSError as exc:
            state[str(f)] = f"unreadable: {exc.strerror}"
    if BASE is not None:
        state["cpusets"] = " ".join(sorted(p.name for p in BASE.iterdir() if p.is_dir()))
    return state


def assert_cell_layout(shield: dict, housekeeping: list[int]) -> None:
    """A cell starts on the housekeeping CPUs for what it does not pin, and may pin to the shield."""
    probe = ("import os; print(sorted(os.sched_getaffinity(0))); "
             f"os.sched_setaffinity(0, {{{CPU}}}); print(sorted(os.sched_getaffinity(0)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         preexec_fn=partial(process.set_child_limits, shield), timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == [str(housekeeping), str([CPU])]


def no_services(action: str, name: str) -> None:
    raise AssertionError(f"a test would run systemctl {action} {name}")


@pytest.fixture()
def sleeper():
    proc = subprocess.Popen(["sleep", "120"])
    yield proc
    proc.kill()
    proc.wait()


def procs(cpuset: Path) -> list[int]:
    return [int(x) for x in (cpuset / "cgroup.procs").read_text().split()]


@needs_cpuset
def test_apply_shields_the_cpu_and_revert_restores_proc_and_sys_exactly(tmp_path, sleeper):
    if tuning.running(Path("/"), "irqbalance"):
        pytest.skip("irqbalance runs here; apply would stop it (systemctl)")
    before = host_state()
    revert_file = tmp_path / "revert.json"
    plan = tuning.plan(str(CPU), shield="cpuset")
    housekeeping = [c for c in ONLINE if c != CPU]
    try:
        steps = tuning.apply(plan, revert_file=revert_file, yes=True, tasks=[sleeper.pid],
                             service=no_services)
        assert revert_file.exists()
        assert [s for s in steps if s.error and not s.target.startswith("/proc/irq/")] == []
        assert any(s.action == "move" and s.value.startswith("1 of 1 processes") for s in steps)

        # Only the test's process moved, and it may no longer run on the shielded CPU.
        assert procs(BASE / shielding.SYSTEM_CPUSET) == [sleeper.pid]
        assert os.sched_getaffinity(sleeper.pid) == set(housekeeping)
        assert os.getpid() in procs(BASE)

        # The host state is part of the fingerprint (a dataset of its own), and the audit sees it.
        shield = host.fingerprint()["isolation"]["shield"]
        assert shield["cpus"] == [CPU] and shield["housekeeping"] == housekeeping
        assert shield["irq_default"] == housekeeping
        assert host.fingerprint()["sched"]["rt_runtime_us"] == -1
        items = {i.name: i for i in audit.audit()}
        assert items["isolated CPUs"].status == "PASS"
        assert "runtime shield" in items["isolated CPUs"].evidence
        assert audit.summary(list(items.values()))["shielded_cpus"] == [CPU]
        assert items["nohz_full CPUs"].status == "WARN", "runtime shielding cannot do nohz_full"

        assert_cell_layout(shield, housekeeping)
    finally:
        steps = tuning.revert(revert_file)
    assert [s for s in steps if s.error] == []
    assert host_state() == before
    assert sleeper.pid in procs(BASE)
    assert shielding.state() is None
    assert (tmp_path / "revert.json.reverted").exists()


@needs_cpuset
def test_refusals_change_nothing(tmp_path):
    before = host_state()
    for cpus, message in [(",".join(map(str, ONLINE)), "names every online CPU"),
                          ("0", "stays a housekeeping CPU"),
                          (str(max(ONLINE) + 1), "is not online"),
                          ("1-", "malformed")]:
        with pytest.raises(tuning.TuningError, match=message):
            tuning.plan(cpus, shield="cpuset")
    # A host without a cpuset hierarchy (a copied /proc without one mounted).
    fake = tmp_path / "root"
    (fake / "proc").mkdir(parents=True)
    (fake / "proc/mounts").write_text("proc /proc proc rw 0 0\n")
    (fake / "sys/devices/system/cpu").mkdir(parents=True)
    (fake / "sys/devices/system/cpu/online").write_text("0-1\n")
    with pytest.raises(tuning.TuningError, match="no cgroup v1 cpuset hierarchy"):
        tuning.plan("1", root=fake, shield="cpuset")
    # A shield left behind (a SIGKILLed tuned study), and a pending revert file.
    (BASE / shielding.SHIELD_CPUSET).mkdir()
    try:
        with pytest.raises(tuning.TuningError, match="already in place.*rtstudy host revert"):
            tuning.plan(str(CPU), shield="cpuset")
    finally:
        (BASE / shielding.SHIELD_CPUSET).rmdir()
    pending = tmp_path / "pending.json"
    pending.write_text("{}")
    proc = subprocess.run([sys.executable, "-m", "rtstudy.cli", "host", "study", "--cpus", str(CPU),
                           "--yes", "--revert-file", str(pending), "--", "true"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "has not been reverted" in proc.stderr
    assert host_state() == before


def tuned_study(tmp_path: Path, *command: str) -> subprocess.Popen:
    """``rtstudy host study`` moving only its own processes, running ``command``."""
    return subprocess.Popen(
        [sys.executable, "-m", "rtstudy.cli", "host", "study", "--cpus", str(CPU), "--yes",
         "--only-this-process", "--revert-file", str(tmp_path / "revert.json"), "--", *command],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=default_signals)


@needs_cpuset
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_tuned_study_leaves_the_host_restored(tmp_path, sig):
    if tuning.running(Path("/"), "irqbalance"):
        pytest.skip("irqbalance runs here; the tuned study would stop it")
    before = host_state()
    marker = tmp_path / "measuring"
    study = tuned_study(tmp_path, sys.executable, "-c",
                        f"import pathlib, time; pathlib.Path({str(marker)!r}).touch(); "
                        "time.sleep(120)")
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert study.poll() is None, study.stdout.read()
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.1)
    assert shielding.state()["cpus"] == [CPU], "shielded while the command runs"
    study.send_signal(sig)
    out, _ = study.communicate(timeout=120)
    assert study.returncode != 0, out
    assert "host restored" in out
    assert host_state() == before
    assert not (tmp_path / "revert.json").exists() and (tmp_path / "revert.json.reverted").exists()


@needs_cpuset
def test_a_failing_study_command_is_reported_and_the_host_restored(tmp_path):
    if tuning.running(Path("/"), "irqbalance"):
        pytest.skip("irqbalance runs here; the tuned study would stop it")
    before = host_state()
    study = tuned_study(tmp_path, sys.executable, "-c", "raise SystemExit(3)")
    out, _ = study.communicate(timeout=120)
    assert study.returncode == 3, out
    assert "shielded CPU" in out and "host restored" in out
    assert host_state() == before


def affinities(pid: int) -> dict[int, set[int]]:
    return {int(t): os.sched_getaffinity(int(t)) for t in os.listdir(f"/proc/{pid}/task")}


def test_the_affinity_shield_moves_only_our_process_and_reverts_exactly(tmp_path, sleeper):
    if tuning.running(Path("/"), "irqbalance"):
        pytest.skip("irqbalance runs here; apply would stop it (systemctl)")
    before, mine = host_state(), affinities(sleeper.pid)
    others = {p: os.sched_getaffinity(p) for p in (1, os.getpid())}
    revert_file = tmp_path / "revert.json"
    plan = tuning.plan(str(CPU), shield="affinity")
    assert plan.shield == "affinity" and any("tuna isolate" in c for c in plan.commands)
    housekeeping = [c for c in ONLINE if c != CPU]
    try:
        steps = tuning.apply(plan, revert_file=revert_file, yes=True, tasks=[sleeper.pid],
                             service=no_services)
        assert [s for s in steps if s.error and not s.target.startswith("/proc/irq/")] == []
        assert any(s.action == "affinity" and s.value.startswith("1 of 1 threads") for s in steps)
        assert os.sched_getaffinity(sleeper.pid) == set(housekeeping)
        assert {p: os.sched_getaffinity(p) for p in others} == others, "no other process moved"

        found = shielding.state()
        assert found["method"] == "affinity" and found["cpus"] == [CPU]
        assert found["housekeeping"] == housekeeping
        assert host.fingerprint()["isolation"]["shield"] == found
        items = {i.name: i for i in audit.audit()}
        assert "affinity" in items["isolated CPUs"].evidence

        assert_cell_layout(found, housekeeping)
    finally:
        steps = tuning.revert(revert_file)
    assert [s for s in steps if s.error] == []
    assert host_state() == before
    assert affinities(sleeper.pid) == mine
    assert shielding.state() is None


def test_the_cli_applies_the_affinity_shield_where_no_cpuset_can_be_written(tmp_path):
    """``rtstudy host apply --cpus N --yes`` then ``host revert``, moving only its own process."""
    no_cgroup = tmp_path / "root"
    (no_cgroup / "proc").mkdir(parents=True)
    (no_cgroup / "proc/mounts").write_text("proc /proc proc rw 0 0\n")
    assert shielding.choose(no_cgroup) == "affinity"
    assert "--method affinity" in shielding.problem("cpuset", no_cgroup)
    before = host_state()
    revert_file = tmp_path / "revert.json"
    cli = [sys.executable, "-m", "rtstudy.cli", "host"]
    applied = subprocess.run([*cli, "apply", "--cpus", str(CPU), "--yes", "--method", "affinity",
                              "--only-this-process", "--revert-file", str(revert_file)],
                             capture_output=True, text=True, timeout=120)
    try:
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert re.search(r"ok +affinity \d+ of \d+ threads", applied.stdout) and revert_file.exists()
        assert shielding.state()["method"] == "affinity"
    finally:
        reverted = subprocess.run([*cli, "revert", "--revert-file", str(revert_file)],
                                  capture_output=True, text=True, timeout=120)
    assert reverted.returncode == 0, reverted.stdout + reverted.stderr
    assert host_state() == before


def test_the_tuned_study_checks_the_shield_before_it_measures(tmp_path):
    """``make study-tuned`` runs this first: a host that cannot be shielded is told so at once."""
    cli = [sys.executable, "-m", "rtstudy.cli", "host", "study", "--check",
           "--revert-file", str(tmp_path / "revert.json")]
    before = host_state()
    ok = subprocess.run([*cli, "--cpus", str(CPU), "--method", "affinity"], capture_output=True,
                        text=True, timeout=120)
    assert ok.returncode == 0 and "the shield can be applied" in ok.stdout, ok.stderr
    refused = subprocess.run([*cli, "--cpus", "0"], capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "stays a housekeeping CPU" in refused.stderr
    (tmp_path / "revert.json").write_text("{}")
    pending = subprocess.run([*cli, "--cpus", str(CPU)], capture_output=True, text=True, timeout=120)
    assert pending.returncode == 2 and "has not been reverted" in pending.stderr
    assert host_state() == before
