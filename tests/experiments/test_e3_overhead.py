"""E3 at smoke size with real Holoscan runs: data schema, timestamps, and the analysis."""
from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from rtstudy.experiments.e3_overhead import analysis, plan
from rtstudy.inference.stats import CI

pytestmark = pytest.mark.cells


@pytest.fixture(scope="module")
def e3_data(tmp_path_factory, fingerprint, sweep):
    from rtstudy import params

    cfg = params.stage_config("e3_overhead", "smoke")
    out = tmp_path_factory.mktemp("e3")
    cells = plan.plan(cfg, fingerprint, {})
    sweep(cells, out, cfg["order_seed"])
    return cfg, cells, out


def test_plan_covers_the_grid(smoke_e3):
    cells = plan.plan(smoke_e3, {}, {})
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
    ds = analysis.load(out, cfg)
    runs = ds.tables["runs"]
    assert ds.missing == []
    assert len(runs) == len(cells) * len(cfg["iterations"])
    assert (runs["startup_ms"] > 0).all() and (runs["steady_us_per_iter"] > 0).all()
    assert (runs["tick_n"] == runs["iterations"] - 1).all()
    # The steady cost's sampling variance from the run's own intervals (its within-run part).
    assert (runs["steady_within_us2"] > 0).all()
    fits = analysis.fits(runs, 0.95)
    assert len(fits) == runs.groupby(["app", "scheduler_label"]).ngroups
    table = analysis.summary_table(runs, fits, CI(0.95))
    assert list(table["scheduler"][:1]) == ["Greedy"]
    assert table["seed published µs/iter"].str.startswith("~").all()
    h = analysis.headline(runs, CI(0.95))
    assert h.n_max == max(cfg["iterations"]) and h.greedy_ops > 0


def test_ping_delivers_every_message(e3_data):
    cfg, cells, out = e3_data
    import json
    for cell in cells:
        if cell.config["app"] == "ping":
            runs = json.loads((out / cell.cell_id / "cell.json").read_text())["summary"]["runs"]
            assert all(r["received"] == r["iterations"] for r in runs)


def test_load_names_a_corrupt_file(e3_data, tmp_path):
    import shutil

    from rtstudy.data import DataError
    cfg, cells, out = e3_data
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    victim = copy / cells[0].cell_id / "samples.parquet"
    victim.write_bytes(victim.read_bytes()[:100])
    with pytest.raises(DataError, match="unreadable Parquet") as info:
        analysis.load(copy, cfg)
    assert str(victim) in str(info.value)
