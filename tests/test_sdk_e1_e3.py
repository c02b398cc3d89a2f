"""E1 and E3 on Holoscan 5.0, for real in the SDK's Debian 13 root.

One smoke cell of each runs through the harness (as ``rtstudy run`` would run it), and
the experiment's own loader and statistics read it as they read 4.x cells: the same
samples, summaries and read-back, so one analysis serves both SDKs. The output goes
under the project (the one folder of the host's that the root sees) and is removed after.
"""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from rtstudy import params, paths, registry
from rtstudy.data.io import read_samples
from rtstudy.inference.stats import CI
from rtstudy.machine import placement

pytestmark = pytest.mark.cells

SCHED_DEADLINE = 6  # linux/sched.h; Python's os module has no name for it


@pytest.fixture()
def measure(env5, fingerprint, tmp_path, sweep):
    """``measure(experiment, label)`` runs that 5.0 smoke cell as a one-cell sweep and returns
    (dataset folder, cell, sidecar, samples, the experiment's smoke parameters)."""
    fp = env5.fingerprint(fingerprint)
    scratch = paths.root() / "data" / "raw" / ".test-sdk5" / tmp_path.name

    def run(name: str, label: str):
        cfg = params.stage_config(name, "smoke")
        configs = {"cpus": params.stage_config("cpus", "smoke")}
        cells = registry.get(name).plan.plan(cfg, fp, configs)
        assert cells and all(c.module.endswith(".app5") for c in cells)
        cell = next(c for c in cells if c.label == label)
        where = placement.resolve(configs["cpus"], fp)
        out = scratch / name
        [outcome] = sweep([cell], out, cfg["order_seed"], where, env5, fp)
        side = json.loads((outcome.path / "cell.json").read_text())
        return out, cell, side, read_samples(outcome.path / "samples.parquet"), cfg

    try:
        yield run
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.mark.parametrize("label", ["ops-executor1", "ping-executor2"])
def test_a_holoscan_5_e3_cell_times_every_n_and_e3s_fit_reads_it(measure, label):
    from rtstudy.experiments.e3_overhead import analysis

    out, cell, side, samples, cfg = measure("e3_overhead", label)
    lanes = cell.config["workers"]
    readback = side["effective"]["scheduler_readback"]
    assert side["effective"]["scheduler"] == "executor" and side["effective"]["sdk_api"] == 5
    assert readback["args"]["execution_lane_count"] == lanes == len(readback["partitions"])
    assert list(samples.columns) == list(analysis.SAMPLES)
    # Every operator ran exactly N computes in each timed run, N in the cell's order.
    ticks = samples.groupby(["run", "op"]).size()
    assert sorted(ticks.index.get_level_values("op").unique()) == sorted(side["operators"])
    for run in side["summary"]["runs"]:
        assert run["iterations"] == cell.config["iterations"][run["run"]]
        assert set(run["ticks"].values()) == {run["iterations"]}
        assert (ticks.loc[run["run"]] == run["iterations"]).all()
        assert 0 < run["startup_ms"] and 0 < run["teardown_ms"] and 0 < run["steady_us_per_iter"]
        assert run.get("received", run["iterations"]) == run["iterations"]

    # E3's loader and statistics, unchanged: one row per timed run, the fit over N.
    ds = analysis.load(out, cfg)
    runs = ds.tables["runs"]
    assert not ds.missing and len(runs) == len(cfg["iterations"])
    assert set(runs["scheduler_label"]) == {f"Executor ×{lanes}"}
    fit = analysis.fits(runs, 0.95)
    assert len(fit) == 1 and fit["n_runs"].iloc[0] == len(cfg["iterations"])
    # At smoke sizes (N of a few hundred) start-up noise can tip the slope either way.
    assert np.isfinite(fit[["per_iter_us", "startup_ms"]].to_numpy()).all()
    ci = CI.from_params(params.read("smoke")[params.REPORT])
    # One app of the two H3 judges: not testable with this dataset.
    assert analysis.headline(runs, ci).verdict["verdict"] == "not testable here"


@pytest.mark.parametrize("buffer", ["default", "async"])
def test_a_holoscan_5_e1_cell_runs_every_operator_under_sched_deadline(measure, fingerprint,
                                                                      buffer):
    from rtstudy.experiments.e1_async_buffer import analysis

    if fingerprint["realtime"].get("SCHED_DEADLINE") != "ok":
        pytest.skip("SCHED_DEADLINE not allowed here")
    out, cell, side, samples, cfg = measure("e1_async_buffer",
                                            f"S1-{buffer}-deadline-native-tx260")
    assert side["realtime_verified"] is True, side["reason"]
    for request in cell.realtime:
        sched = side["operators"][request.operator]["sched"]
        assert sched["policy"] == SCHED_DEADLINE
        assert (sched["runtime_ns"], sched["deadline_ns"], sched["period_ns"]) == (
            request.runtime_ns, request.deadline_ns, request.period_ns)
        assert len(sched["cpus"]) > 1  # never pinned to one CPU: 5.0 would refuse to start
    summary = side["summary"]
    assert summary["termination"] == "REQUESTED_COMPLETED" and summary["complete"] is True
    assert [p["accepted"] is not None for p in summary["placements"]] == [True] * 3
    policy = "BLOCKING" if buffer == "default" else "DROP_OLDEST"
    assert summary["queues"] == [{"policy": policy, "depth": 1}] * 2
    assert list(samples.columns) == list(analysis.SAMPLES)
    emits = samples[samples["event"] == "emit"]
    assert (emits.groupby("port").size() == cell.config["messages"]).all()

    # E1's loader: tx1 (fixed, 20 ms) against tx2 (60 ms) at the receiver.
    ds = analysis.load(out, cfg)
    cells = ds.tables["cells"].set_index("producer")
    assert not ds.missing and len(cells) == 2
    tx1_emit_ms = cells.loc["tx1", "emit_period_ms"]
    if buffer == "default":
        # The blocking queue throttles tx1 to tx2's rate, as 4.x's default buffer did.
        assert summary["blocked_activations"]["tx1"] > 0
        assert np.isclose(tx1_emit_ms, cell.config["tx2_period_ms"], rtol=0.1)
        assert set(summary["received"].values()) == {cell.config["messages"]}
    else:
        assert sum(summary["blocked_activations"].values()) == 0
        assert np.isclose(tx1_emit_ms, cell.config["tx1_period_ms"], rtol=0.1)
        assert summary["stale_reads"]["in2"] > 0  # the latest value handed back again
    assert analysis.headline(ds.tables["cells"],
                             analysis.slopes(ds.tables["cells"], 0.95)).n_cells == 1


def test_a_holoscan_5_smoke_plan_keeps_4x_labels_and_unpins_deadline(env5, fingerprint):
    """E1's 5.0 plan is the 4.x plan, unpinned; E3's turns schedulers into lanes."""
    fp5 = env5.fingerprint(fingerprint)
    configs = {"cpus": params.stage_config("cpus", "smoke")}
    plans = {name: {api: registry.get(name).plan.plan(params.stage_config(name, "smoke"), fp,
                                                      configs)
                    for api, fp in ((4, fingerprint), (5, fp5))}
             for name in ("e1_async_buffer", "e3_overhead")}
    e1 = plans["e1_async_buffer"]
    assert [c.label for c in e1[5]] == [c.label for c in e1[4]]
    assert all(not r.cpus for c in e1[5] for r in c.realtime)
    e3 = plans["e3_overhead"]
    assert sorted(c.label for c in e3[5]) == ["ops-executor1", "ops-executor2",
                                              "ping-executor1", "ping-executor2"]
