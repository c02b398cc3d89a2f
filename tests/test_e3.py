"""E3 at smoke size with real Holoscan runs: data schema, timestamps, and the analysis."""
from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from rtstudy import e3, stats
from rtstudy.harness import run_sweep


@pytest.fixture(scope="module")
def e3_data(tmp_path_factory, fingerprint):
    from rtstudy import params
    from rtstudy.harness import SweepContext

    cfg = params.stage_config("e3_overhead", "smoke")
    out = tmp_path_factory.mktemp("e3")
    cells = e3.plan(cfg)
    with open("/dev/null", "w") as devnull:
        run_sweep(cells, out, SweepContext.from_fingerprint(fingerprint, "smoke"), cfg["order_seed"],
                  progress=devnull)
    return cfg, cells, out


def test_plan_covers_the_grid(smoke_e3):
    cells = e3.plan(smoke_e3)
    n_sched = 1 + len(smoke_e3["event_based_workers"])
    assert len(cells) == len(smoke_e3["apps"]) * n_sched * smoke_e3["repetitions"]
    assert len({c.cell_id for c in cells}) == len(cells)
    for cell in cells:
        assert sorted(cell.config["iterations"]) == sorted(smoke_e3["iterations"])


def test_every_cell_has_complete_monotonic_samples(e3_data):
    cfg, cells, out = e3_data
    for cell in cells:
        samples = pq.read_table(out / cell.cell_id / "samples.parquet").to_pandas()
        assert list(samples.columns) == ["run", "iterations", "op", "tick", "t_ns"]
        assert samples["t_ns"].dtype == np.int64
        for (run, op), g in samples.groupby(["run", "op"]):
            n = g["iterations"].iloc[0]
            assert len(g) == n, f"{cell.cell_id} run {run} {op}: {len(g)} ticks, expected {n}"
            assert np.all(np.diff(g["t_ns"].to_numpy()) > 0), "timestamps must increase"


def test_runs_frame_and_summary(e3_data):
    cfg, cells, out = e3_data
    runs, missing = e3.load_runs(out)
    assert missing == []
    assert len(runs) == len(cells) * len(cfg["iterations"])
    assert (runs["startup_ms"] > 0).all() and (runs["steady_us_per_iter"] > 0).all()
    assert (runs["tick_n"] == runs["iterations"] - 1).all()
    fits = e3.fits(runs, 0.95)
    assert len(fits) == runs.groupby(["app", "scheduler_label"]).ngroups
    table = e3.summary_table(runs, fits, 0.95, 200, 0)
    assert list(table["scheduler"][:1]) == ["Greedy"]
    assert table["seed published µs/iter"].str.startswith("~").all()
    h = e3.headline(runs)
    assert h["n_max"] == max(cfg["iterations"]) and h["greedy_ops"] > 0


def test_ping_delivers_every_message(e3_data):
    cfg, cells, out = e3_data
    import json
    for cell in cells:
        if cell.config["app"] == "ping":
            runs = json.loads((out / cell.cell_id / "cell.json").read_text())["summary"]["runs"]
            assert all(r["received"] == r["iterations"] for r in runs)


def test_linear_fit_recovers_a_known_line():
    x = np.array([1000, 2000, 4000, 1000, 2000, 4000], dtype=float)
    rng = np.random.default_rng(0)
    y = 0.05 + 20e-6 * x + rng.normal(0, 1e-4, x.size)
    fit = stats.linear_fit(x, y)
    assert fit.slope.low < 20e-6 < fit.slope.high
    assert fit.intercept.low < 0.05 < fit.intercept.high
    with pytest.raises(ValueError, match="two distinct x"):
        stats.linear_fit([1, 1], [2, 3])


def test_bootstrap_ci_and_percentiles_behave():
    x = np.random.default_rng(1).normal(10, 1, 200)
    est = stats.bootstrap_ci(x, np.mean, 0.95, 500, 0)
    assert est.low < est.value < est.high and est.n == 200
    assert np.isnan(stats.bootstrap_ci([3.0]).low)
    p = stats.percentiles(x, (50, 99, 99.9))
    assert p["p50"] <= p["p99"] <= p["p99.9"] <= p["max"] and p["n"] == 200
    with pytest.raises(ValueError):
        stats.bootstrap_ci(x, confidence=1.2)


def test_load_names_a_corrupt_file(e3_data, tmp_path):
    import shutil

    from rtstudy.data import DataError
    cfg, cells, out = e3_data
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    victim = copy / cells[0].cell_id / "samples.parquet"
    victim.write_bytes(victim.read_bytes()[:100])
    with pytest.raises(DataError, match="unreadable Parquet") as info:
        e3.load_runs(copy)
    assert str(victim) in str(info.value)
