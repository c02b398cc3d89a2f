"""Holoscan 3.5.0 (the seeds' tested version) in a Python 3.11 venv of its own.

The venv is built for real (once per machine: /var/lib/rtstudy/venvs, shared with the
study; about 10 s) and cells run in it through the harness for real; only the skip path
uses a fixture (a host without python3.11).
"""
from __future__ import annotations

import json
import os

import pytest

from rtstudy import cli, params, paths, stage
from rtstudy.machine import host, placement
from rtstudy.measure.harness import SweepContext, run_cell
from rtstudy.measure.realtime import DISPATCHER
from rtstudy.sdks import sdk, sdkroot, sdkvenv

from helpers import probe_sdk

pytestmark = pytest.mark.cells

VERSION = "3.5.0"


@pytest.fixture(scope="session")
def env35() -> sdk.Environment:
    """Holoscan 3.5.0's environment, built here if this machine has none yet."""
    cannot = sdk.problems([VERSION])
    if cannot:
        pytest.skip("cannot build the Holoscan 3.5.0 venv here: " + "; ".join(cannot))
    env = sdk.environment(VERSION, build=True)
    env.prepare()
    return env


def test_the_venv_holds_holoscan_3_5_and_runs_this_checkouts_rtstudy(env35):
    made = sdkvenv.manifest(env35.own_venv)
    assert made["sdk"] == VERSION and made["pip"]["holoscan"] == VERSION
    assert made["python"].startswith("3.11.") and made["key"] == sdkvenv.key(VERSION, "3.11")
    assert "holoscan-cu12" not in made["pip"]  # the study venv's 4.6 is not in it
    version, module, native, policy = probe_sdk(
        env35, "holoscan.__version__, rtstudy.__file__, child._native.__file__, "
               "child.thread_record()['policy'], os.getpid()")
    assert version == VERSION and int(policy) == os.SCHED_OTHER
    # The study's own code and native module, built for the venv's Python.
    assert module.startswith(str(paths.checkout() / "src"))
    assert native.startswith(str(paths.checkout() / "src")) and "cpython-311" in native


def test_its_fingerprint_is_a_host_state_of_its_own(env35, fingerprint):
    fp = env35.fingerprint(fingerprint)
    assert fp["host_id"] != fingerprint["host_id"]
    assert fp["host_id"] == host.host_id({k: v for k, v in fp.items() if k != "host_id"})
    assert fp["sdk"]["version"] == VERSION and fp["sdk"]["environment"] == "python3.11-venv"
    assert fp["sdk"]["venv_key"] == sdkvenv.key(VERSION, "3.11")
    assert fp["versions"]["holoscan"] == VERSION and fp["versions"]["python"].startswith("3.11.")
    assert fp["kernel"] == fingerprint["kernel"] and fp["cpu"] == fingerprint["cpu"]
    assert sdk.version_of(fp) == VERSION and sdk.api_of(fp) == 4
    assert not sdk.realtime_dispatcher(fp) and sdk.realtime_dispatcher(fingerprint)
    # The study's venv keeps the host's id, so its data and 3.5.0's never share a folder.
    assert sdk.environment(sdk.installed()).fingerprint(fingerprint) is fingerprint
    assert paths.dataset_dir("e2_rt_threads", fp["host_id"], "smoke") != \
        paths.dataset_dir("e2_rt_threads", fingerprint["host_id"], "smoke")


def test_a_rebuilt_venv_is_another_host_state(env35, fingerprint, tmp_path):
    """Its key and build time are in the record: a venv built again gets a new host id."""
    copy = tmp_path / env35.own_venv.name
    (copy / "bin").mkdir(parents=True)
    (copy / "bin" / "python").symlink_to(env35.own_venv / "bin" / "python")
    made = {**sdkvenv.manifest(env35.own_venv), "built_utc": "2000-01-01T00:00:00Z"}
    (copy / sdkvenv.MANIFEST).write_text(json.dumps(made))
    other = sdk.Environment(sdk.KNOWN[VERSION], own_venv=copy).fingerprint(fingerprint)
    assert other["host_id"] != env35.fingerprint(fingerprint)["host_id"]


def test_a_holoscan_3_5_e2_cell_runs_with_its_fifo_policy_read_back(env35, fingerprint, tmp_path,
                                                                     sweep):
    from rtstudy.data.io import read_samples
    from rtstudy.experiments.e2_rt_threads.measuring import plan

    fp = env35.fingerprint(fingerprint)
    if fp["realtime"].get("SCHED_FIFO") != "ok":
        pytest.skip("SCHED_FIFO not allowed here")
    cfg = params.stage_config("e2_rt_threads", "smoke")
    configs = {"cpus": params.stage_config("cpus", "smoke")}
    cell = next(c for c in plan.plan(cfg, fp, configs) if c.label == "SCHED_FIFO-lf1-native")
    assert cell.module == plan.MODULE  # the 4.x app, unchanged
    where = placement.resolve(configs["cpus"], fp)
    [outcome] = sweep([cell], tmp_path, cfg["order_seed"], where, env35, fp)
    assert outcome.status == "ok", outcome.reason
    side = json.loads((outcome.path / "cell.json").read_text())
    assert side["realtime_verified"] is True and side["host_id"] == fp["host_id"]
    assert side["versions"]["holoscan"] == VERSION
    sched = side["operators"]["target"]["sched"]
    assert sched["policy"] == os.SCHED_FIFO and sched["priority"] == cfg["priority"]
    assert sched["cpus"] == [where.rt_cpu]
    assert len(side["summary"]["load_ticks"]) == cell.config["loads"]
    assert all(t > 0 for t in side["summary"]["load_ticks"])
    recorded = json.loads((tmp_path / "host.json").read_text())
    assert recorded["host_id"] == fp["host_id"] and recorded["sdk"] == fp["sdk"]
    frames = read_samples(outcome.path / "samples.parquet")
    assert len(frames) == cell.config["frames"]
    period = frames["t_start_ns"].diff().dropna()
    assert abs(period.median() - cell.config["period_ns"]) < 0.05 * cell.config["period_ns"]


def test_a_holoscan_3_5_e3_cell_runs_the_4x_app_unchanged(env35, fingerprint, tmp_path):
    from rtstudy.experiments.e3_overhead import plan

    fp = env35.fingerprint(fingerprint)
    cfg = params.stage_config("e3_overhead", "smoke")
    cell = next(c for c in plan.plan(cfg, fp, {}) if c.label == "ping-ebs1")
    assert cell.module == plan.MODULE
    outcome = run_cell(cell, tmp_path, SweepContext.from_fingerprint(fp, "smoke", None, env35))
    assert outcome.status == "ok", outcome.reason
    runs = json.loads((outcome.path / "cell.json").read_text())["summary"]["runs"]
    assert [r["received"] for r in runs] == [r["iterations"] for r in runs]


def test_the_native_module_is_built_for_the_venvs_python_where_missing(env35, tmp_path,
                                                                         monkeypatch):
    """A study venv of another Python (3.12) has no module for 3.11: prepare() builds it."""
    (tmp_path / "rtstudy").mkdir()
    (tmp_path / "rtstudy" / "_native.c").write_bytes(
        (paths.checkout() / "src" / "rtstudy" / "_native.c").read_bytes())
    monkeypatch.setattr(sdkvenv, "src", lambda: tmp_path)
    env35.prepare()
    [module] = (tmp_path / "rtstudy").glob("_native.cpython-311*.so")
    built = module.stat().st_mtime_ns
    env35.prepare()  # current: not built again
    assert module.stat().st_mtime_ns == built
    assert sorted(p.name for p in (tmp_path / "rtstudy").iterdir()) == ["_native.c", module.name]


def test_e2_on_3_5_leaves_out_only_the_real_time_dispatcher(fingerprint, tmp_path):
    """3.5.0's GXF has no GXF_EBS_DISPATCHER_* settings; the other cells are 4.6's, same ids,
    but the fragment fix's (verified on 4.6.0 only: plan.FRAGMENT_SDKS)."""
    from rtstudy.experiments.e2_rt_threads.measuring import plan

    fp = sdk.Environment(sdk.KNOWN[VERSION], own_venv=tmp_path).fingerprint(fingerprint)
    cfg = {**params.stage_config("e2_rt_threads", "default"), "fixes_per_session": 0}
    configs = {"cpus": params.stage_config("cpus", "default")}
    on46 = plan.plan(cfg, fingerprint, configs)
    on35 = plan.plan(cfg, fp, configs)
    fifo = [c for c in on46 if any(r.operator == DISPATCHER for r in c.realtime)]
    fragment = [c for c in on46 if c.config["load_placement"] == "fragment"]
    assert fifo and fragment and [c.cell_id for c in on35] == [
        c.cell_id for c in on46 if c not in fifo + fragment]


@pytest.fixture()
def no_python311(tmp_path, monkeypatch):
    """A host whose study runs Python 3.12 and that has no python3.11, nor a built 3.5.0 venv."""
    monkeypatch.setenv("RTSTUDY_VENVS", str(tmp_path / "venvs"))
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr(sdkvenv.platform, "python_version_tuple", lambda: ("3", "12", "1"))
    return tmp_path


def test_without_python_3_11_3_5_is_skipped_with_the_python_it_needs(no_python311, devnull,
                                                                       monkeypatch, capsys):
    assert sdkvenv.interpreter("3.11") is None
    [reason] = sdk.problems([VERSION, sdk.installed()])
    assert "needs Python 3.11" in reason and "python3.11 is not on PATH" in reason
    with pytest.raises(sdk.SdkError, match="Python 3.11"):
        sdk.environment(VERSION, build=True)
    with pytest.raises(sdk.SdkError, match="make sdk"):
        sdk.environment(VERSION)
    assert not (no_python311 / "venvs").exists()  # nothing half-built left behind
    # A measuring stage skips 3.5.0 with the reason and measures the venv's version.
    real = params.stage_config
    monkeypatch.setattr(stage.params, "stage_config", lambda group, profile=None, data=None: {
        "versions": [VERSION, sdk.installed()]} if group == params.SDK else real(group, profile, data))
    with open(no_python311 / "stage.txt", "w") as stream:
        envs = stage.environments("e3_overhead", params.stage_config("e3_overhead", "smoke"), stream,
                                  params.stage_config(params.SDK, "smoke"))
    assert [e.name for e in envs] == ["venv"]
    said = (no_python311 / "stage.txt").read_text()
    assert f"skipping Holoscan {VERSION}" in said and "Python 3.11" in said
    # `rtstudy sdk build` (make sdk) says the same and goes on.
    assert cli.main(["sdk", "build", VERSION]) == 0
    assert "not built here" in capsys.readouterr().out


def test_the_lock_pins_every_package_by_hash_and_keys_the_venv(tmp_path, monkeypatch):
    lines = [ln for ln in sdkroot.lock_file(VERSION).read_text().splitlines()
             if ln and not ln.startswith((" ", "#"))]
    assert "holoscan==3.5.0 \\" in lines and all("==" in ln for ln in lines)
    assert {ln.split("==")[0] for ln in lines} >= {"numpy", "nvidia-cuda-runtime-cu12"}
    before = sdkvenv.key(VERSION, "3.11")
    lock = tmp_path / "sdk-3.5.0.lock"
    lock.write_text(sdkroot.lock_file(VERSION).read_text() + "# changed\n")
    monkeypatch.setattr(sdkroot, "lock_file", lambda version: lock)
    assert sdkvenv.key(VERSION, "3.11") != before
