"""E4's measurements: the jitter probe and the rt-tests floor, at smoke size."""
from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from rtstudy.experiments.e4_host import analysis, plan
from rtstudy.experiments.e4_host.app import probe_binary

pytestmark = pytest.mark.cells


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    return probe_binary(tmp_path_factory.mktemp("build"))


def run_probe(probe, cpu=0, seconds=1.0) -> dict:
    out = subprocess.run([str(probe), str(cpu), str(seconds)], capture_output=True, text=True,
                         check=True, timeout=60)
    return json.loads(out.stdout)


def test_probe_counts_every_loop_and_its_percentiles_are_monotone(probe):
    r = run_probe(probe, seconds=0.5)
    counted = sum(c for _, c in r["hist"]) + len(r["overflow"]) + r["lost"]
    assert counted == r["samples"] > 100_000
    ns = [d / r["ticks_per_ns"] for d, _ in r["hist"]] + [d / r["ticks_per_ns"] for d in r["overflow"]]
    counts = [c for _, c in r["hist"]] + [1] * len(r["overflow"])
    p = analysis.hist_percentiles(ns, counts)
    assert 0 < p["p50"] <= p["p99"] <= p["p99.9"] <= p["p99.99"] <= p["max"]


def test_calibration_agrees_with_clock_monotonic_within_a_few_percent(probe):
    # Calibrate on one run, then convert another run's ticks and compare with its
    # own CLOCK_MONOTONIC elapsed time over about a second.
    first, second = run_probe(probe, seconds=1.0), run_probe(probe, seconds=1.0)
    estimate_ns = second["elapsed_ticks"] / first["ticks_per_ns"]
    assert abs(estimate_ns - second["elapsed_monotonic_ns"]) < 0.03 * second["elapsed_monotonic_ns"]


def test_bad_probe_arguments_are_refused(probe):
    proc = subprocess.run([str(probe), "-1", "1"], capture_output=True, text=True)
    assert proc.returncode == 2 and "bad arguments" in proc.stderr


def test_hist_percentiles_on_a_known_histogram():
    p = analysis.hist_percentiles([100, 200, 5000], [98, 1, 1], qs=(50, 99))
    assert (p["n"], p["p50"], p["p99"], p["max"]) == (100, 100.0, 200.0, 5000.0)
    assert p["mean"] == pytest.approx(150.0)
    assert p["std"] == pytest.approx(np.sqrt((98 * 50**2 + 50**2 + 4850**2) / 99))


def test_a_measurements_own_sampling_variance_is_given_only_where_its_bootstrap_holds():
    # A jitter probe's histogram: 10⁶ loops of 10–12 ns and 150 interruptions of 20 µs.
    values, counts = [10, 11, 12, 20_000], [400_000, 400_000, 199_850, 150]
    jitter = analysis.within_run(values, counts, jitter=True)
    assert list(jitter) == list(analysis.WithinRun.__annotations__)
    assert all(np.isfinite(v) and v >= 0 for v in jitter.values()), jitter
    # The time lost moves with the interruptions' count K (relative variance ~1/K): a share s
    # moves by s(1 − s) · δK/K, so its variance is about (s(1 − s))² / 150.
    lost = analysis.lost_share(values, counts)
    assert jitter["lost_within_pct2"] == pytest.approx((100 * lost * (1 - lost)) ** 2 / 150,
                                                       rel=0.3)
    # cyclictest's 300 cycles: its P99 is the 3rd largest, too near the edge to bootstrap.
    few = analysis.within_run([15_000, 16_000, 40_000], [200, 97, 3], jitter=False)
    assert all(np.isnan(v) for v in few.values()), few


@pytest.mark.skipif(shutil.which("cyclictest") is None or shutil.which("cyclicdeadline") is None,
                    reason="rt-tests not installed (`make sysdeps` installs it, as root)")
def test_floor_cells_measure_with_rt_tests(tmp_path, fingerprint, sweep):
    from rtstudy import params

    cfg = params.stage_config("e4_host", "smoke")
    e2_cfg = params.stage_config("e2_rt_threads", "smoke")
    cells = plan.plan(dict(cfg, jitter_cpus=[0]), fingerprint, {"e2_rt_threads": e2_cfg})
    assert {c.config["kind"] for c in cells} == {"jitter", "cyclictest", "cyclicdeadline"}
    sweep(cells, tmp_path)
    ds = analysis.load(tmp_path, cfg)
    stats = ds.tables["stats"]
    assert ds.missing == []
    floor = stats[stats["kind"] != "jitter"]
    assert (floor["n"] > 0).all() and (floor["mean"] <= floor["max"]).all()
    cyclictest = floor[floor["kind"] == "cyclictest"].iloc[0]
    assert cyclictest["p50"] <= cyclictest["p99"] <= cyclictest["max"]
    cyc = json.loads((tmp_path / [c for c in cells if c.config["kind"] == "cyclictest"][0].cell_id
                      / "cell.json").read_text())
    assert cyc["summary"]["cycles"] >= 1 and cyc["effective"]["policy"] == "SCHED_FIFO"
    # cyclictest holds /dev/cpu_dma_latency at 0 µs (no --laptop); cyclicdeadline holds nothing.
    assert cyc["summary"]["pm_qos"]["held_us"] == 0 and "--laptop" not in cyc["summary"]["command"]
    assert "driver" in cyc["summary"]["pm_qos"] and cyc["summary"]["pm_qos"]["cpus"]
    table = analysis.floor_table(stats)
    assert set(table["tool"]) == {"cyclictest", "cyclicdeadline"}
    # cyclictest's histogram gives a std; cyclicdeadline keeps none (its std is NaN).
    assert np.isfinite(cyclictest["std"]) and cyclictest["std"] >= 0


def test_audit_is_recorded_beside_the_data(tmp_path):
    plan.after_sweep(tmp_path)
    record = analysis.read_audit(tmp_path)
    assert "osnoise" in record and {"summary", "items"} <= set(record)


@pytest.mark.parametrize("audit", [{}, {"summary": {}, "items": [], "osnoise": {}}],
                         ids=["no audit file", "audit without osnoise"])
def test_the_section_says_what_was_not_recorded(tmp_path, audit):
    """A dataset without its audit (or one recorded before osnoise was) still renders its words."""
    from rtstudy import params
    from rtstudy.data.io import Dataset
    from rtstudy.experiments.e4_host import section
    from rtstudy.inference.stats import CI

    stats = pd.DataFrame([{"kind": "jitter", "load": "idle", "cpu": 0, "n": 1000, "p50": 80.0,
                           "p99": 200.0, "p99.9": 900.0, "p99.99": 2000.0, "max": 5000.0,
                           "mean": 90.0, "std": 30.0, "lost_share": 0.01,
                           **analysis.within_run([80, 2000], [999, 1], jitter=True)}])
    # The plan says how the probe ran (at a normal policy here), as a measured dataset's does.
    (tmp_path / "plan.json").write_text(json.dumps(
        {"cells": [{"config": {"kind": "jitter", "fifo_priority": 0}}]}))
    ds = Dataset(tmp_path, {"histograms": pd.DataFrame(), "stats": stats}, [], {"audit": audit})
    sec = section.build(ds, params.stage_config("e4_host", "smoke"), CI(0.95))
    text = sec.blocks[0].text
    assert "**rtla osnoise**: N/A — not recorded." in text
    assert sec.verdicts[0].verdict == "not testable here"
    assert any(item.startswith("H4 cannot be tested on this host") for item in sec.limitations)
