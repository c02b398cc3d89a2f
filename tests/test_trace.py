"""The scheduler trace is an instrument, not the measurement (rtstudy.apps.trace).

Against the real parts: the host's perf and the Debian 13 root's, real tracefs, real E2 cells.
A freshly booted host has no tracefs mounted; the tests that need that state unmount it for
themselves and mount it again after, as it was.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import subprocess
import time

import pytest

from helpers import require_policy
from rtstudy import params
from rtstudy.apps import trace
from rtstudy.machine import tracefs
from rtstudy.measure.harness import SweepContext, run_cell

pytestmark = [pytest.mark.cells,
              pytest.mark.skipif(os.geteuid() != 0, reason="a system-wide scheduler trace "
                                "and mounting tracefs need root")]


def _perf() -> str:
    perf = shutil.which("perf")
    if perf is None or subprocess.run([perf, "--version"], capture_output=True).returncode:
        pytest.skip("perf is not installed: `make sysdeps` installs it")
    return perf


@contextlib.contextmanager
def first_boot():
    """tracefs unmounted, as after a boot; every tracefs mount there was put back after."""
    mounted = sorted(tracefs.mounts())
    for point in reversed(mounted):
        done = subprocess.run(["umount", point], capture_output=True, text=True)
        if done.returncode:
            pytest.skip(f"tracefs at {point} is in use ({done.stderr.strip()}): cannot "
                        "reproduce a freshly booted host here")
    try:
        assert not tracefs.mounts()
        yield
    finally:
        for point in mounted:
            if point not in tracefs.mounts():
                subprocess.run(["mount", "-t", "tracefs", "nodev", point], check=True)


def _busy(seconds: float) -> int:
    """Something to trace: a few context switches."""
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        time.sleep(0.001)
        n += 1
    return n


def test_on_a_freshly_booted_host_the_trace_prepares_tracefs_and_leaves_none_behind():
    _perf()
    with first_boot():
        record = {}
        with trace.sched_trace(2, record):
            _busy(0.3)
        assert "unavailable" not in record, record.get("unavailable")
        assert record["tracefs"] == "mounted for the reading"
        assert record["n_events"] > 0 and "switch" in record["columns"]["event"]
        assert not tracefs.mounts(), "the trace must unmount what it mounted"


@pytest.fixture()
def unreadable_perf(tmp_path, monkeypatch):
    """The real perf on PATH, but its data file damaged before `perf script` reads it back (a
    tracer whose file cannot be read)."""
    real = _perf()
    wrapper = tmp_path / "bin" / "perf"
    wrapper.parent.mkdir()
    wrapper.write_text(f"""#!/bin/bash
if [ "$1" = script ]; then
    prev=""
    for arg in "$@"; do
        [ "$prev" = -i ] && truncate -s 100 "$arg"
        prev=$arg
    done
fi
exec {real} "$@"
""")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{wrapper.parent}:{os.environ['PATH']}")
    return wrapper


def test_a_trace_that_cannot_be_read_back_is_recorded_as_unavailable_and_the_block_runs(
        unreadable_perf):
    record = {}
    with trace.sched_trace(2, record):
        ran = _busy(0.2)
    assert ran > 0
    assert "perf script could not read the trace back" in record["unavailable"]
    assert "columns" not in record and "n_events" not in record


def test_a_traced_cell_whose_trace_is_unreadable_keeps_its_measurement(
        unreadable_perf, tmp_path, fingerprint):
    from rtstudy.data.io import read_samples
    from rtstudy.experiments.e2_rt_threads.measuring import plan
    from rtstudy.machine import placement

    require_policy(fingerprint, "SCHED_FIFO")
    configs = {"cpus": params.stage_config("cpus", "smoke")}
    cells = plan.plan(params.stage_config("e2_rt_threads", "smoke"), fingerprint, configs)
    cell = next(c for c in cells if c.label == "SCHED_FIFO-lf1-native-trace")
    where = placement.resolve(configs["cpus"], fingerprint)
    outcome = run_cell(cell, tmp_path, SweepContext.from_fingerprint(fingerprint, "smoke", where))
    assert outcome.status == "ok", outcome.reason
    sidecar = json.loads((outcome.path / "cell.json").read_text())
    assert "perf script could not read" in sidecar["summary"]["trace"]["unavailable"]
    assert sidecar["realtime_verified"] is True
    assert len(read_samples(outcome.path / "samples.parquet")) == cell.config["frames"]
    assert not (outcome.path / "trace.parquet").exists()


def test_a_holoscan_5_traced_cell_on_a_freshly_booted_host_keeps_its_trace(env5, fingerprint,
                                                                            tmp_path):
    """The first-boot failure: the root's perf 6.12 recorded, then could not read back, its
    trace while the host had no tracefs mounted (now mounted in the root's namespace only)."""
    from rtstudy.experiments.e2_rt_threads.measuring import plan
    from rtstudy.machine import placement
    from rtstudy.sdks import sdkroot

    fp = env5.fingerprint(fingerprint)
    require_policy(fp, "SCHED_FIFO")
    configs = {"cpus": params.stage_config("cpus", "smoke")}
    cells = plan.plan(params.stage_config("e2_rt_threads", "smoke"), fp, configs)
    cell = next(c for c in cells if c.label == "SCHED_FIFO-lf1-native-busy_poll-trace")
    where = placement.resolve(configs["cpus"], fp)
    # Under the project: the one folder of the host's that the root sees (mounted).
    out = sdkroot.paths.root() / "data" / "raw" / ".test-trace5" / tmp_path.name
    try:
        with first_boot():
            outcome = run_cell(cell, out, SweepContext.from_fingerprint(fp, "smoke", where, env5))
            assert not tracefs.mounts(), "the root's tracefs must stay in its namespace"
        assert outcome.status == "ok", outcome.reason
        recorded = json.loads((outcome.path / "cell.json").read_text())["summary"]["trace"]
        assert "unavailable" not in recorded, recorded.get("unavailable")
        assert recorded["n_events"] > 0 and (outcome.path / "trace.parquet").is_file()
    finally:
        shutil.rmtree(out.parent, ignore_errors=True)
