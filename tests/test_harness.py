"""The run harness with real Holoscan subprocesses: verification, atomicity, resumption."""
from __future__ import annotations

import json

import pytest

from helpers import require_policy
from rtstudy import paths
from rtstudy.measure import harness
from rtstudy.measure.harness import Cell, run_sweep
from rtstudy.measure.readback import verify_realtime
from rtstudy.measure.realtime import RealtimeRequest
from rtstudy.policies import BY_NUMBER

pytestmark = pytest.mark.cells

PROBE = "rtstudy.apps.rt_probe"

PERIOD_NS = 5_000_000


def probe_cell(label: str, request: RealtimeRequest | None, max_duration_ms: int = 5000,
               timeout_s: float = 60, ticks: int = 20) -> Cell:
    config = {"ticks": ticks, "period_ns": PERIOD_NS, "max_duration_ms": max_duration_ms}
    return Cell("probe", "rt_probe", label, config, 0, timeout_s, (request,) if request else (),
                module=PROBE)


FIFO = RealtimeRequest("target", "SCHED_FIFO", priority=10)
DEADLINE = RealtimeRequest("target", "SCHED_DEADLINE", runtime_ns=500_000, deadline_ns=PERIOD_NS,
                           period_ns=PERIOD_NS)


def test_a_granted_policy_is_verified_from_the_operators_thread(tmp_path, context, fingerprint, devnull):
    require_policy(fingerprint, "SCHED_FIFO")
    require_policy(fingerprint, "SCHED_DEADLINE")
    cells = [probe_cell("fifo", FIFO), probe_cell("deadline", DEADLINE)]
    run_sweep(cells, tmp_path, context, 1, progress=devnull)
    for cell in cells:
        sidecar = json.loads((tmp_path / cell.cell_id / "cell.json").read_text())
        assert sidecar["status"] == "ok" and sidecar["realtime_verified"] is True
        sched = sidecar["operators"]["target"]["sched"]
        assert BY_NUMBER[sched["policy"]] == cell.realtime[0].policy
        assert sidecar["operators"]["target"]["ticks"] == 20
        assert sidecar["host_id"] == context.host_id and sidecar["profile"] == "smoke"
        assert "holoscan-cu12" in sidecar["versions"] and sidecar["git"]["commit"]


def test_a_refused_policy_fails_the_cell_with_the_reason_and_fix(tmp_path, context, fingerprint, devnull):
    if fingerprint["realtime"]["SCHED_DEADLINE pinned"] == "ok":
        pytest.skip("this host allows pinned SCHED_DEADLINE, so nothing is refused")
    pinned = RealtimeRequest(**{**DEADLINE.__dict__, "cpus": (fingerprint["cpu"]["count"] - 1,)})
    cell = probe_cell("pinned", pinned, max_duration_ms=2000)
    with pytest.raises(harness.SweepError) as info:
        run_sweep([cell], tmp_path, context, 1, progress=devnull)
    message = str(info.value)
    assert "Failed to set SCHED_DEADLINE" in message and "sched_rt_runtime_us" in message
    assert not (tmp_path / cell.cell_id).exists(), "a failed cell must not look completed"
    failed = tmp_path / paths.FAILED_DIR / cell.cell_id
    assert (failed / "run.log").is_file()
    assert json.loads((failed / "cell.json").read_text())["realtime_verified"] is False


def test_a_hung_app_is_killed_and_the_sweep_goes_on(tmp_path, context, fingerprint, devnull):
    if fingerprint["realtime"]["SCHED_DEADLINE pinned"] == "ok":
        pytest.skip("needs a refused policy to make Holoscan hang")
    pinned = RealtimeRequest(**{**DEADLINE.__dict__, "cpus": (fingerprint["cpu"]["count"] - 1,)})
    hung = probe_cell("hung", pinned, max_duration_ms=600_000, timeout_s=4)
    fine = probe_cell("fine", None)
    with pytest.raises(harness.SweepError, match="timed out after 4 s"):
        run_sweep([hung, fine], tmp_path, context, 3, progress=devnull)
    assert (tmp_path / fine.cell_id / "samples.parquet").is_file()
    assert (tmp_path / paths.FAILED_DIR / hung.cell_id / "run.log").is_file()
    assert not list(tmp_path.glob(".tmp-*"))


def test_completed_cells_are_skipped_and_leftovers_cleaned(tmp_path, context, devnull):
    cells = [probe_cell(f"c{i}", None, ticks=5 + i) for i in range(2)]
    run_sweep(cells, tmp_path, context, 1, progress=devnull)
    stamps = {c.cell_id: (tmp_path / c.cell_id / "cell.json").stat().st_mtime_ns for c in cells}
    (tmp_path / ".tmp-interrupted-123").mkdir()
    outcomes = run_sweep(cells, tmp_path, context, 1, progress=devnull)
    assert [o.status for o in outcomes] == ["skipped", "skipped"]
    assert stamps == {c.cell_id: (tmp_path / c.cell_id / "cell.json").stat().st_mtime_ns for c in cells}
    assert not (tmp_path / ".tmp-interrupted-123").exists()


def test_run_order_is_seeded_and_independent_of_the_plans_order():
    cells = [probe_cell(f"c{i}", None) for i in range(12)]
    a = harness.run_order(cells, 42)
    assert a == harness.run_order(list(reversed(cells)), 42)
    assert a != harness.run_order(cells, 43)
    assert a != cells


def test_cell_id_changes_with_any_parameter():
    base = probe_cell("x", None)
    assert probe_cell("x", None, ticks=21).cell_id != base.cell_id
    assert probe_cell("x", FIFO).cell_id != base.cell_id
    assert probe_cell("x", None).cell_id == base.cell_id


def test_verification_catches_silent_failures():
    ok = {"operators": {"target": {"ticks": 10, "sched": {
        "policy": 1, "priority": 10, "cpus": [0, 1], "runtime_ns": 0, "deadline_ns": 0, "period_ns": 0}}}}
    assert verify_realtime((FIFO,), ok, "") == []
    normal = json.loads(json.dumps(ok))
    normal["operators"]["target"]["sched"]["policy"] = 0
    assert "ran with SCHED_OTHER" in verify_realtime((FIFO,), normal, "")[0]
    never = {"operators": {"target": {"ticks": 0, "sched": None}}}
    log = "[error] Failed to set SCHED_FIFO policy: Operation not permitted"
    problem = verify_realtime((FIFO,), never, log)[0]
    assert "never ran" in problem and "CAP_SYS_NICE" in problem
    wrong_prio = json.loads(json.dumps(ok))
    wrong_prio["operators"]["target"]["sched"]["priority"] = 3
    assert "priority 10" in verify_realtime((FIFO,), wrong_prio, "")[0]


def test_samples_are_written_losslessly_and_integer_columns_delta_encoded(tmp_path):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    stamps = np.cumsum(np.random.default_rng(0).integers(9_000, 11_000, 50_000)).astype(np.int64)
    table = pa.table({"op": ["tx", "rx"] * 25_000, "t_ns": stamps})
    harness.write_samples(table, tmp_path / "delta.parquet")
    pq.write_table(table, tmp_path / "plain.parquet", compression="zstd")
    assert pq.read_table(tmp_path / "delta.parquet").equals(table)
    column = pq.ParquetFile(tmp_path / "delta.parquet").metadata.row_group(0).column(1)
    assert "DELTA_BINARY_PACKED" in column.encodings
    assert (tmp_path / "delta.parquet").stat().st_size < (tmp_path / "plain.parquet").stat().st_size


def test_the_project_root_is_the_project_the_command_runs_in(tmp_path, monkeypatch):
    from rtstudy import paths

    monkeypatch.delenv("RTSTUDY_ROOT", raising=False)
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")
    assert paths.root() == paths.checkout(), "no project here: the package's own checkout"
    for name in ("params.yaml", "dvc.yaml"):
        (tmp_path / name).write_text("")
    assert paths.root() == paths.checkout(), "another DVC project is not this study"
    (tmp_path / "src" / "rtstudy").mkdir(parents=True)
    assert paths.root() == tmp_path.resolve(), "as in a `dvc exp run --temp` copy"
    monkeypatch.setenv("RTSTUDY_ROOT", str(tmp_path / "elsewhere"))
    assert paths.root() == (tmp_path / "elsewhere").resolve()
