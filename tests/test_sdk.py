"""SDK versions as a factor: the environment each version runs in, and the Debian 13 root.

The root is built for real (once per machine: /var/lib/rtstudy/roots, shared with the
study) and commands run inside it for real; only the failure paths use a fixture.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from rtstudy.machine import host
from rtstudy.sdks import builds, sdk, sdkroot

from helpers import probe_sdk

pytestmark = pytest.mark.cells


def mounts() -> list[str]:
    return Path("/proc/self/mountinfo").read_text().splitlines()


@pytest.fixture()
def root5(env5) -> Path:
    """Holoscan 5.0.0's root (conftest.py's ``env5``)."""
    return env5.root


def test_the_venv_runs_its_own_version_with_the_hosts_fingerprint(fingerprint):
    env = sdk.environment(sdk.installed())
    assert env.root is None and env.name == "venv"
    assert env.fingerprint(fingerprint) is fingerprint  # host id of older data kept
    assert sdk.version_of(fingerprint) == sdk.installed() and sdk.api_of(fingerprint) == 4


def test_unknown_and_unbuilt_versions_name_the_fix(tmp_path, monkeypatch):
    with pytest.raises(sdk.SdkError, match="known: 3.5.0, 4.6.0, 5.0.0"):
        sdk.environment("9.9.9")
    monkeypatch.setenv("RTSTUDY_ROOTS", str(tmp_path))
    with pytest.raises(sdk.SdkError, match="make sdk"):
        sdk.environment("5.0.0")
    assert not list(tmp_path.iterdir())  # nothing built without build=True


def test_missing_tools_are_named_before_anything_is_built(tmp_path, monkeypatch):
    monkeypatch.setenv("RTSTUDY_ROOTS", str(tmp_path))
    monkeypatch.setattr(sdkroot.shutil, "which", lambda tool: None if tool == "debootstrap" else "/x")
    assert any("debootstrap" in p and "install the package" in p for p in sdk.problems(["5.0.0"]))
    with pytest.raises(sdkroot.RootError, match="debootstrap"):
        sdkroot.build("5.0.0")
    assert not list(tmp_path.iterdir())


def test_the_roots_key_follows_its_lock(tmp_path, monkeypatch):
    before = sdkroot.key("5.0.0")
    lock = tmp_path / "sdk-5.0.0.lock"
    lock.write_text(sdkroot.lock_file("5.0.0").read_text() + "# changed\n")
    monkeypatch.setattr(sdkroot, "lock_file", lambda version: lock)
    assert sdkroot.key("5.0.0") != before


def test_only_a_folder_under_the_roots_dir_is_ever_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("RTSTUDY_ROOTS", str(tmp_path / "roots"))
    outside = tmp_path / "precious"
    outside.mkdir()
    with pytest.raises(builds.BuildError, match="refusing"):
        builds.remove(outside, sdkroot.roots_dir())
    assert outside.is_dir()


def test_the_root_runs_holoscan_5_on_a_newer_glibc_and_leaves_no_mount(root5):
    made = sdkroot.manifest(root5)
    assert made["sdk"] == "5.0.0" and made["pip"]["holoscan-core-cu13"] == "5.0.0"
    assert tuple(int(x) for x in made["glibc"].split(".")) >= sdk.KNOWN["5.0.0"].glibc
    assert "libcuda1" in made["debian"]
    before = mounts()
    env = sdk.Environment(sdk.KNOWN["5.0.0"], root5)
    version, _, libc, policy = probe_sdk(env, "holoscan.__version__, os.confstr("
                                              "'CS_GNU_LIBC_VERSION'), child.thread_record()"
                                              "['policy'], os.getpid()")
    assert version == "5.0.0" and libc == made["glibc"] and policy == str(os.SCHED_OTHER)
    assert mounts() == before  # the mounts lived in the command's own namespace


def test_a_root_environment_is_a_host_state_of_its_own(root5, fingerprint):
    env = sdk.Environment(sdk.KNOWN["5.0.0"], root5)
    fp = env.fingerprint(fingerprint)
    assert fp["host_id"] != fingerprint["host_id"]
    assert fp["host_id"] == host.host_id({k: v for k, v in fp.items() if k != "host_id"})
    assert fp["sdk"]["version"] == "5.0.0" and fp["sdk"]["environment"] == "debian13-root"
    assert fp["versions"]["holoscan-core-cu13"] == "5.0.0"
    assert fp["kernel"] == fingerprint["kernel"] and fp["cpu"] == fingerprint["cpu"]
    assert sdk.version_of(fp) == "5.0.0" and sdk.api_of(fp) == 5


def test_a_holoscan_5_e2_cell_runs_in_the_root_with_its_fifo_policy_read_back(root5, fingerprint,
                                                                               tmp_path):
    from rtstudy import params
    from rtstudy.data.io import read_samples
    from rtstudy.experiments.e2_rt_threads.measuring import plan
    from rtstudy.machine import placement
    from rtstudy.measure.harness import SweepContext, run_cell

    env = sdk.Environment(sdk.KNOWN["5.0.0"], root5)
    fp = env.fingerprint(fingerprint)
    if fp["realtime"].get("SCHED_FIFO") != "ok":
        pytest.skip("SCHED_FIFO not allowed here")
    cfg = params.stage_config("e2_rt_threads", "smoke")
    configs = {"cpus": params.stage_config("cpus", "smoke")}
    cells = plan.plan(cfg, fp, configs)
    assert cells and all(c.module.endswith(".app5") for c in cells)
    cell = next(c for c in cells if c.label == "SCHED_FIFO-lf1-native")
    where = placement.resolve(configs["cpus"], fp)
    # Under the project: the one folder of the host's that the root sees (mounted).
    out = sdkroot.paths.root() / "data" / "raw" / ".test-sdk5" / tmp_path.name
    try:
        outcome = run_cell(cell, out, SweepContext.from_fingerprint(fp, "smoke", where, env))
        assert outcome.status == "ok", outcome.reason
        side = json.loads((outcome.path / "cell.json").read_text())
        assert side["realtime_verified"] is True
        sched = side["operators"]["target"]["sched"]
        assert sched["policy"] == os.SCHED_FIFO and sched["priority"] == cfg["priority"]
        assert sched["cpus"] == [where.rt_cpu]
        summary = side["summary"]
        assert summary["termination"] == "REQUESTED_COMPLETED" and summary["diagnostics"] == []
        assert [p["accepted"] is not None for p in summary["placements"]] == [True]
        assert len(side["summary"]["load_ticks"]) == cell.config["loads"]
        assert all(t > 0 for t in side["summary"]["load_ticks"])
        frames = read_samples(outcome.path / "samples.parquet")
        assert len(frames) == cell.config["frames"]
        period = frames["t_start_ns"].diff().dropna()
        assert abs(period.median() - cell.config["period_ns"]) < 0.05 * cell.config["period_ns"]
    finally:
        shutil.rmtree(out.parent, ignore_errors=True)


class _Without(sdk.Environment):
    """The 5.0 root, entered without CAP_SYS_NICE (and so without real-time policies)."""

    def command(self, argv: list[str]) -> list[str]:
        return ["setpriv", "--bounding-set=-sys_nice", "--inh-caps=-sys_nice", "--",
                *super().command(argv)]


def _e2_cell(fp: dict, label: str):
    from rtstudy import params
    from rtstudy.experiments.e2_rt_threads.measuring import plan
    from rtstudy.machine import placement

    configs = {"cpus": params.stage_config("cpus", "smoke")}
    cells = plan.plan(params.stage_config("e2_rt_threads", "smoke"), fp, configs)
    return next(c for c in cells if c.label == label), placement.resolve(configs["cpus"], fp)


@pytest.mark.parametrize("case", ["no CAP_SYS_NICE", "DEADLINE pinned"])
def test_holoscan_5_refuses_a_real_time_request_it_cannot_honour_and_the_cell_fails(
        root5, fingerprint, tmp_path, case):
    """4.x ran such a thread as SCHED_OTHER and said nothing (only the read-back caught it);
    5.0 refuses, in its own words, and the harness records the cell as failed with them."""
    from dataclasses import replace

    from rtstudy.measure.harness import SweepContext, run_cell
    from rtstudy.measure.realtime import RealtimeRequest

    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    env = (_Without if case == "no CAP_SYS_NICE" else sdk.Environment)(sdk.KNOWN["5.0.0"], root5)
    fp = env.fingerprint(fingerprint)
    cell, where = _e2_cell(fp, "SCHED_FIFO-lf0-native" if case == "no CAP_SYS_NICE"
                           else "SCHED_DEADLINE-lf1-native")
    if case == "DEADLINE pinned":
        # The kernel refuses a DEADLINE thread pinned to fewer CPUs than its root domain.
        request = replace(cell.realtime[0], cpus=(where.rt_cpu,))
        assert isinstance(request, RealtimeRequest)
        cell = replace(cell, realtime=(request,),
                       config={**cell.config, "target_cpus": [where.rt_cpu]})
    out = sdkroot.paths.root() / "data" / "raw" / ".test-sdk5" / tmp_path.name
    try:
        outcome = run_cell(cell, out, SweepContext.from_fingerprint(fp, "smoke", where, env))
        assert outcome.status == "failed"
        expected = ("THREAD_PLACEMENT_REJECTED" if case == "no CAP_SYS_NICE"
                    else "RUNTIME_LANE_STARTUP_FAILED")
        assert expected in outcome.reason, outcome.reason
        # 5.0's words made readable and the fix named, as for 4.x (no object dump).
        fix = "CAP_SYS_NICE" if case == "no CAP_SYS_NICE" else "kernel.sched_rt_runtime_us"
        assert "Fix: " in outcome.reason and fix in outcome.reason, outcome.reason
        assert " object at 0x" not in outcome.reason, outcome.reason
        assert not (outcome.path / "samples.parquet").exists()
    finally:
        shutil.rmtree(out.parent, ignore_errors=True)


def test_an_experiment_without_holoscan_runs_once_in_the_venv(devnull):
    from rtstudy import params, stage

    envs = stage.environments("e4_host", params.stage_config("e4_host", "smoke"), devnull,
                              params.stage_config(params.SDK, "smoke"))
    assert [e.root for e in envs] == [None]


def test_a_folder_at_the_roots_place_that_is_no_finished_build_goes_before_building(
        tmp_path, capsys):
    """A folder without its record at the final path (a crash, or put there by hand) made
    every build run to its end and then fail to rename, stranding its work."""
    home = tmp_path / "roots"
    final = home / "debian13-holoscan9.9.9-abc"
    (final / "etc").mkdir(parents=True)
    assert "has no rtstudy-root.json" in sdkroot.damage(final)

    def make(work, out):
        work.mkdir()
        (work / sdkroot.MANIFEST).write_text(json.dumps(dict.fromkeys(sdkroot.MANIFEST_KEYS, "")))

    assert builds.build_once(final, make, "a test root", "debian13-holoscan9.9.9-*", home) == final
    assert sdkroot.manifest(final) is not None and not (final / "etc").exists()
    assert "not a finished build" in capsys.readouterr().err
    assert sorted(p.name for p in home.iterdir()) == [".build.lock", final.name,
                                                      final.name + ".log"]


def test_a_failed_build_leaves_no_work_folder(tmp_path):
    home = tmp_path / "roots"

    def make(work, out):
        (work / "opt").mkdir(parents=True)
        raise sdkroot.RootError("pip install failed")

    with pytest.raises(sdkroot.RootError, match="pip install failed"):
        builds.build_once(home / "r", make, "a test root", "r-*", home)
    assert sorted(p.name for p in home.iterdir()) == [".build.lock", "r.log"]


def test_two_processes_building_one_folder_take_turns_and_build_it_once(tmp_path, capsys):
    """The second waits for the first's build, then finds it done (each thread opens the lock
    file itself: flock holds per open file, as between two processes)."""
    import threading

    home, built, started = tmp_path / "roots", [], threading.Event()
    final = home / "r-1"

    def make(work, out):
        started.set()
        time.sleep(0.5)  # the second caller arrives meanwhile
        work.mkdir()
        (work / sdkroot.MANIFEST).write_text(json.dumps(dict.fromkeys(sdkroot.MANIFEST_KEYS, "")))
        built.append(work)

    def build():
        builds.build_once(final, make, "a test root", "r-*", home,
                           done=lambda: sdkroot.manifest(final) is not None)

    first = threading.Thread(target=build)
    first.start()
    started.wait(10)
    build()
    first.join(10)
    assert len(built) == 1 and sdkroot.manifest(final) is not None
    assert "Waiting for another process building" in capsys.readouterr().err


def test_a_damaged_record_is_reported_with_its_fix_not_a_traceback(tmp_path, monkeypatch,
                                                                    capsys):
    from rtstudy import cli

    monkeypatch.setenv("RTSTUDY_ROOTS", str(tmp_path))
    root = sdkroot.root_path("5.0.0")
    root.mkdir()
    (root / sdkroot.MANIFEST).write_text(json.dumps({"sdk": "5.0.0", "key": "x"}))
    assert sdkroot.manifest(root) is None
    assert cli.main(["sdk", "status"]) == 0
    out = capsys.readouterr().out
    assert "lacks built_utc, glibc, python, pip" in out and "`make sdk` removes it" in out
    with pytest.raises(sdk.SdkError, match="not built yet"):
        sdk.environment("5.0.0")
    (root / sdkroot.MANIFEST).write_text("{not json")
    assert "cannot be read" in sdkroot.damage(root)


def test_a_killed_debootstrap_leaves_no_mount_on_the_host(tmp_path):
    """debootstrap mounts /proc inside the new root; run in a mount namespace of its own, that
    mount dies with it (a stand-in debootstrap that mounts and then waits to be killed)."""
    import signal
    import subprocess
    import time

    if sdkroot.problems():
        pytest.skip("; ".join(sdkroot.problems()))
    fake = tmp_path / "bin" / "debootstrap"
    fake.parent.mkdir()
    # debootstrap [OPTIONS] SUITE TARGET MIRROR: the target is the last but one argument.
    fake.write_text('#!/bin/sh\nfor a; do target=$prev; prev=$a; done\n'
                    'mkdir -p "$target/proc" && mount -t proc proc "$target/proc" && '
                    'touch "$target/mounted" && exec sleep 60\n')
    fake.chmod(0o755)
    home = tmp_path / "roots"
    work = home / "r.building"
    work.mkdir(parents=True)
    proc = subprocess.Popen(sdkroot.debootstrap_command(work),
                            env={**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"})
    try:
        deadline = time.monotonic() + 30
        while not (work / "mounted").exists() and proc.poll() is None:
            assert time.monotonic() < deadline, "the stand-in never mounted /proc"
            time.sleep(0.05)
        assert (work / "mounted").exists()
        assert not any(str(work / "proc") in line for line in mounts())
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert not os.path.ismount(work / "proc")
    builds.remove(work, home)  # the next build's clean-up goes through
    assert not work.exists()


def test_a_data_folder_on_another_disk_is_seen_inside_the_root(root5, tmp_path, monkeypatch):
    """`data/` a link to another disk: the root sees it at the link's target too."""
    import subprocess

    project = tmp_path / "project"
    (project / "src" / "rtstudy").mkdir(parents=True)
    other = tmp_path / "other-disk" / "data"
    other.mkdir(parents=True)
    (other / "marker").write_text("measured elsewhere")
    (project / "data").symlink_to(other)
    monkeypatch.setenv("RTSTUDY_ROOT", str(project))
    assert sdkroot.binds() == [project, other]
    proc = subprocess.run(sdkroot.command(root5, ["/bin/cat", str(project / "data" / "marker")]),
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout == "measured elsewhere", proc.stderr


def test_the_roots_copy_of_rtstudy_follows_the_checkout_moves_included(tmp_path):
    """A module moved in the checkout leaves no copy at its old place inside the root, where a
    stale import would still work. (The native module's stamp is current, so nothing compiles.)"""
    import hashlib

    from rtstudy import paths
    target = tmp_path / sdkroot.PACKAGE_DIR.lstrip("/") / "rtstudy"
    stale = target / "harness.py"  # where harness.py lived before the package had rooms
    stale.parent.mkdir(parents=True)
    stale.write_text("raise ImportError('stale')\n")
    c_source = (paths.checkout() / "src" / "rtstudy" / "_native.c").read_bytes()
    (target / "_native.sha256").write_text(hashlib.sha256(c_source).hexdigest())
    sdkroot.sync_package(tmp_path)
    assert not stale.exists()
    moved = target / "measure" / "harness.py"
    assert moved.read_bytes() == (paths.checkout() / "src/rtstudy/measure/harness.py").read_bytes()


def test_the_root_is_fetched_only_with_its_release_verified_by_the_shipped_keyring():
    cmd = sdkroot.debootstrap_command(Path("/nowhere"))
    assert "--force-check-gpg" in cmd and f"--keyring={sdkroot.KEYRING}" in cmd
    assert cmd.index("--force-check-gpg") < cmd.index(sdkroot.SUITE)


def test_a_missing_or_changed_keyring_is_an_error_with_its_fix_before_anything_is_built(
        tmp_path, monkeypatch):
    monkeypatch.setenv("RTSTUDY_ROOTS", str(tmp_path / "roots"))
    monkeypatch.setattr(sdkroot, "problems", lambda: [])
    monkeypatch.setattr(sdkroot, "KEYRING", tmp_path / "gone.gpg")
    with pytest.raises(sdkroot.RootError, match="cannot be read .*`git checkout -- gone.gpg`"):
        sdkroot.build("5.0.0")
    (tmp_path / "gone.gpg").write_bytes(b"someone else's keys")
    with pytest.raises(sdkroot.RootError, match="is not the keyring the study ships"):
        sdkroot.build("5.0.0")
    assert not (tmp_path / "roots").exists()


@pytest.mark.network
@pytest.mark.skipif(shutil.which("gpgv") is None, reason="gpgv is not installed")
def test_the_shipped_keyring_verifies_debians_real_release_file_and_refuses_a_changed_one(
        tmp_path):
    """What debootstrap checks, against the real archive (Debian's packages are a registry this
    study may reach): trixie's InRelease is signed by a key of the shipped keyring."""
    import urllib.request

    release = tmp_path / "InRelease"
    with urllib.request.urlopen(f"{sdkroot.MIRROR}/dists/{sdkroot.SUITE}/InRelease",
                                timeout=60) as answer:
        release.write_bytes(answer.read())
    gpgv = ["gpgv", "--keyring", str(sdkroot.keyring()), str(release)]
    good = subprocess.run(gpgv, capture_output=True, text=True)
    assert good.returncode == 0, good.stderr
    assert "Good signature" in good.stderr
    text = release.read_text()
    release.write_text(text.replace("Suite: stable", "Suite: stab1e", 1))
    assert subprocess.run(gpgv, capture_output=True).returncode != 0
