"""The dataset API on real smoke data: finding and loading datasets, and every damaged file named.

A tiny E3 sweep (two cells) is measured once into a temporary project
(``RTSTUDY_ROOT``); each damage test works on its own copy of it.
"""
from __future__ import annotations

import json
import os
import re
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import require_policy
from rtstudy import data, params, paths, protocol, registry
from rtstudy.data import DataError, io
from rtstudy.experiments.e3_overhead import analysis as e3_analysis, plan as e3_plan
from rtstudy.experiments.e4_host import analysis as e4_analysis, plan as e4_plan
from rtstudy.measure.harness import SweepContext, run_sweep

pytestmark = pytest.mark.cells

OTHER_HOST = "otherhost-0123abcd"


@pytest.fixture(scope="module")
def e3_root(tmp_path_factory, fingerprint, sweep):
    """A project root holding an E3 smoke dataset of two cells (Greedy and EventBased x1)."""
    root = tmp_path_factory.mktemp("root")
    shutil.copy2(paths.params_file(), root / "params.yaml")
    params.use_profile("smoke", root / "params.yaml")
    cfg = params.stage_config("e3_overhead", "smoke")
    cfg.update(apps=["ops"], event_based_workers=[1])
    cells = e3_plan.plan(cfg, fingerprint, {})
    out = root / "data" / "raw" / "e3_overhead" / fingerprint["host_id"] / "smoke"
    sweep(cells, out, cfg["order_seed"])
    return root, out, cells, cfg


@pytest.fixture()
def damaged(e3_root, tmp_path):
    """A copy of the E3 dataset to damage, and the folder of its first planned cell."""
    _, out, _, _ = e3_root
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    first = io.read_plan(copy)["cells"][0]["cell_id"]
    return copy, copy / first


@pytest.fixture()
def own_root(e3_root, monkeypatch, tmp_path):
    """A copy of the E3 project, the test's own and the project (``RTSTUDY_ROOT``): its folder
    and its dataset's."""
    root, out, _, _ = e3_root
    fake = tmp_path / "root"
    shutil.copytree(root, fake)
    monkeypatch.setenv("RTSTUDY_ROOT", str(fake))
    return fake, paths.dataset_dir("e3_overhead", out.parent.name, "smoke")


def test_datasets_lists_every_hosts_folder_sorted(e3_root, fingerprint, monkeypatch):
    root, out, _, _ = e3_root
    monkeypatch.setenv("RTSTUDY_ROOT", str(root))
    other = out.parents[1] / OTHER_HOST / "smoke"
    shutil.copytree(out, other, dirs_exist_ok=True)
    try:
        (out.parents[1] / "nohost" / "smoke").mkdir(parents=True)  # no plan.json: not a dataset
        expected = sorted([out, other], key=lambda d: d.parent.name)
        assert data.datasets("e3_overhead", "smoke") == expected
        assert data.datasets("e3_overhead") == expected, "profile None is params.yaml's (smoke)"
        assert data.datasets("e3_overhead", "default") == []
        assert data.datasets("e2_rt_threads", "smoke") == []
    finally:
        shutil.rmtree(other.parent)
        shutil.rmtree(out.parents[1] / "nohost")


def test_load_concatenates_hosts_into_tidy_frames(e3_root, fingerprint, monkeypatch):
    root, out, cells, cfg = e3_root
    monkeypatch.setenv("RTSTUDY_ROOT", str(root))
    other = out.parents[1] / OTHER_HOST / "smoke"
    shutil.copytree(out, other)
    try:
        tables = data.load("e3_overhead")
        assert list(tables) == ["runs"]
        runs = tables["runs"]
        # The drift check's two runs are not runs of a condition: set aside, not in "runs".
        per_host = sum(not c.drift for c in cells) * len(cfg["iterations"])
        assert len(runs) == 2 * per_host
        assert runs.groupby("host_id").size().to_dict() == {fingerprint["host_id"]: per_host,
                                                            OTHER_HOST: per_host}
        for column in ("app", "scheduler", "workers", "iterations", "repetition", "profile",
                       "whole_app_us_per_iter", "steady_us_per_iter"):
            assert column in runs.columns, column
        assert set(runs["profile"]) == {"smoke"}
        assert (runs["steady_us_per_iter"] > 0).all()
        one = data.load("e3_overhead", "smoke", hosts=OTHER_HOST)["runs"]
        assert len(one) == per_host and set(one["host_id"]) == {OTHER_HOST}
    finally:
        shutil.rmtree(other.parent)


def test_load_warns_about_cells_not_measured_yet(own_root):
    _, d = own_root
    first = next(c for c in io.read_plan(d)["cells"] if not c.get("drift"))
    shutil.rmtree(d / first["cell_id"])
    with pytest.warns(UserWarning, match="1 cell\\(s\\) of the plan not measured yet"):
        runs = data.load("e3_overhead", "smoke")["runs"]
    assert runs["cell_id"].nunique() == 1


def test_unknown_experiment_profile_or_host_is_named_with_what_is_allowed(e3_root, monkeypatch):
    root, _, _, _ = e3_root
    monkeypatch.setenv("RTSTUDY_ROOT", str(root))
    with pytest.raises(ValueError, match="unknown experiment 'e5_magic'; registered: e1_async_buffer, "
                                         "e2_rt_threads, e3_overhead, e4_host, "
                                         "e5_placement"):
        data.load("e5_magic")
    with pytest.raises(ValueError, match="profile = 'quick': expected one of smoke, default, seed"):
        data.datasets("e3_overhead", "quick")
    with pytest.raises(ValueError, match="from host\\(s\\) \\['nohost'\\]; available: "):
        data.load("e3_overhead", hosts=["nohost"])


def test_no_dataset_names_the_folder_and_the_fix(e3_root, monkeypatch):
    root, _, _, _ = e3_root
    monkeypatch.setenv("RTSTUDY_ROOT", str(root))
    with pytest.raises(DataError) as info:
        data.load("e2_rt_threads", "smoke")
    message = str(info.value)
    assert str(root / "data" / "raw" / "e2_rt_threads") in message
    assert "make study" in message and "make pull" in message


def _rewrite(path, transform) -> None:
    table = pq.read_table(path)
    pq.write_table(transform(table), path)


DAMAGE = {
    "truncated parquet": (lambda cell: _truncate(cell / "samples.parquet"),
                          "samples.parquet", ["unreadable Parquet"]),
    "garbage parquet": (lambda cell: (cell / "samples.parquet").write_bytes(b"\x00garbage" * 500),
                        "samples.parquet", ["unreadable Parquet"]),
    "missing sidecar": (lambda cell: (cell / "cell.json").unlink(),
                        "", ["without its sidecar cell.json", "re-run its stage"]),
    # One bit, mid-file: the file still reads as Parquet with the right columns.
    "flipped bit": (lambda cell: _flip_middle(cell / "samples.parquet"),
                    "samples.parquet", ["sha256 differs", "fresh copy"]),
    "sidecar not JSON": (lambda cell: (cell / "cell.json").write_text("{\"status\": "),
                         "cell.json", ["not valid JSON"]),
    "sidecar without a key": (lambda cell: _drop_key(cell / "cell.json", "summary"),
                              "cell.json", ["['summary'] missing"]),
    "dropped column": (lambda cell: _rewrite(cell / "samples.parquet",
                                             lambda t: t.drop_columns(["t_ns"])),
                       "samples.parquet", ["column 't_ns' missing (expected type int64)"]),
    "wrong dtype": (lambda cell: _rewrite(cell / "samples.parquet",
                                          lambda t: t.set_column(t.schema.get_field_index("t_ns"),
                                                                 "t_ns", t["t_ns"].cast(pa.float64()))),
                    "samples.parquet", ["column 't_ns' has type double, expected int64"]),
    "text column as numbers": (lambda cell: _rewrite(
        cell / "samples.parquet",
        lambda t: t.set_column(t.schema.get_field_index("op"), "op",
                               pa.array(np.zeros(len(t), dtype=np.int64)))),
        "samples.parquet", ["column 'op' has type int64, expected string"]),
}


def _flip_middle(path) -> None:
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    path.write_bytes(bytes(raw))


def _truncate(path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _drop_key(path, key) -> None:
    record = json.loads(path.read_text())
    del record[key]
    path.write_text(json.dumps(record))


@pytest.mark.parametrize("case", list(DAMAGE))
def test_a_damaged_file_is_named_with_what_is_wrong(damaged, case):
    copy, cell = damaged
    damage, name, words = DAMAGE[case]
    damage(cell)
    with pytest.raises(DataError) as info:
        e3_analysis.load(copy, {})
    message = str(info.value)
    assert str(cell / name) in message, message
    for word in words:
        assert word in message, f"{word!r} missing from: {message}"


def test_load_reports_damage_too(own_root):
    _, d = own_root
    victim = d / io.read_plan(d)["cells"][1]["cell_id"] / "samples.parquet"
    _rewrite(victim, lambda t: t.drop_columns(["op"]))
    with pytest.raises(DataError, match=re.escape(f"{victim}: not a e3_overhead samples file")):
        data.load("e3_overhead", "smoke")


def test_an_empty_samples_file_is_checked_for_its_columns_only(tmp_path):
    # E4's cyclicdeadline keeps no histogram: the app writes empty float64 columns.
    empty = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"latency_ns": np.array([]), "count": np.array([])}), empty)
    io.check_schema(empty, e4_analysis.SAMPLES, "e4_host")
    pq.write_table(pa.table({"latency_ns": np.array([])}), empty)
    with pytest.raises(DataError, match="column 'count' missing"):
        io.check_schema(empty, e4_analysis.SAMPLES, "e4_host")


def test_the_schema_is_what_every_app_writes(tmp_path, fingerprint, monkeypatch):
    """One real cell per experiment, without real-time policies (any host), against its SAMPLES."""
    smaller = {"e1_async_buffer": dict(scenarios=["S1"], buffers=["default"], policies=["none"],
                                       periods_ms=[20], messages=10),
               "e2_rt_threads": dict(policies=["normal_dedicated"], load_factors=[0], duration_s=0.5,
                                     contrast_policies=["normal_dedicated"], floor=False,
                                     trace_seconds=0, seed_topologies=[], ladder=False,
                                     fixes=[], load_placements=["operators"]),
               "e3_overhead": dict(apps=["ping"], schedulers=["greedy"]),
               "e4_host": dict(jitter_cpus=[0], jitter_seconds=0.2, floor_tools=[]),
               # A CPU the host does not have: asks for SCHED_FIFO, which is never applied.
               "e5_placement": dict(provocations=["absent_cpu"])}
    assert set(smaller) == set(registry.REGISTRY), "a new experiment needs its smallest cell here"
    configs = {name: dict(params.stage_config(name, "smoke"), **small)
               for name, small in smaller.items()}
    monkeypatch.setenv("RTSTUDY_ROOT", str(tmp_path))  # E4 compiles its probe under <root>/build
    plans = {e.name: e.plan.plan(configs[e.name], fingerprint, configs) for e in registry.every()}
    context = SweepContext.from_fingerprint(fingerprint, "smoke")
    for experiment, cells in plans.items():
        assert len(cells) == 1, experiment
        out = tmp_path / experiment
        with open("/dev/null", "w") as devnull:
            run_sweep(cells, out, context, 1, progress=devnull)
        samples = out / cells[0].cell_id / "samples.parquet"
        schema = pq.read_schema(samples)
        expected = registry.get(experiment).analysis.SAMPLES
        assert schema.names == list(expected), experiment
        assert pq.read_metadata(samples).num_rows > 0, experiment
        io.check_schema(samples, expected, experiment)
        sidecars, missing = io.completed_cells(out, expected)
        assert missing == [] and set(io.SIDECAR_KEYS) <= set(sidecars[0]), experiment


def test_the_floor_without_a_histogram_passes_the_check(tmp_path, fingerprint, monkeypatch,
                                                        sweep):
    """cyclicdeadline writes a samples file with no rows; it must still load."""
    if shutil.which("cyclicdeadline") is None:
        pytest.skip("cyclicdeadline (Debian rt-tests) is not installed")
    require_policy(fingerprint, "SCHED_DEADLINE")
    e2_cfg = params.stage_config("e2_rt_threads", "smoke")
    cfg = dict(params.stage_config("e4_host", "smoke"), jitter_cpus=[],
               floor_tools=["cyclicdeadline"], floor_seconds=1)
    monkeypatch.setenv("RTSTUDY_ROOT", str(tmp_path))
    cells = e4_plan.plan(cfg, fingerprint, {"e2_rt_threads": e2_cfg})
    assert [c.config["kind"] for c in cells] == ["cyclicdeadline"]
    out = tmp_path / "e4"
    sweep(cells, out)
    ds = e4_analysis.load(out, cfg)
    stats = ds.tables["stats"]
    assert ds.missing == [] and len(stats) == 1 and stats["n"].iloc[0] > 0


def test_the_readme_documents_every_column_and_sidecar_key():
    readme = (paths.root() / "data" / "README.md").read_text()
    for experiment in registry.REGISTRY:
        columns = registry.get(experiment).analysis.SAMPLES
        section = readme.split(f"### {experiment}", 1)
        assert len(section) == 2, f"data/README.md has no '### {experiment}' section"
        body = section[1].split("###", 1)[0]
        for column, kind in columns.items():
            assert re.search(rf"`{column}`\s*\|\s*{kind}\b", body), (experiment, column, kind)
    for key in io.SIDECAR_KEYS:
        assert f"`{key}`" in readme, key
    assert "data.load(" in readme and "data.datasets(" in readme


def test_every_damaged_cell_is_listed_at_once(damaged):
    """One pass over a damaged dataset names every damaged file, each with its fix."""
    copy, _ = damaged
    cells = [c["cell_id"] for c in io.read_plan(copy)["cells"]]
    (copy / cells[0] / "cell.json").write_text("{ not json")
    (copy / cells[1] / "samples.parquet").unlink()
    with pytest.raises(DataError) as info:
        e3_analysis.load(copy, {})
    message = str(info.value)
    assert "2 damaged cells" in message
    assert str(copy / cells[0] / "cell.json") in message
    assert str(copy / cells[1] / "samples.parquet") in message
    assert message.count("re-run its stage") == 2


def test_stacking_cells_gives_what_assigning_each_one_did():
    """io.stack, the loaders' way of giving every row its cell's columns, against the plain
    ``concat`` of ``assign`` it replaces: values, dtypes and column order, with a column a table
    already had, a cell without rows, and a value one cell lacks."""
    import pandas as pd

    parts = [(pd.DataFrame({"t": [1.0, 2.0], "policy": ["x", "x"]}),
              {"policy": "SCHED_FIFO", "run": 0, "pinned": True, "cpu": 1.0}),
             (pd.DataFrame({"t": pd.Series([], dtype=float), "policy": pd.Series([], dtype=object)}),
              {"policy": "normal", "run": 1, "pinned": False, "cpu": 0.0}),
             (pd.DataFrame({"t": [3.0], "policy": ["y"]}),
              {"policy": "normal", "run": 2, "pinned": False, "cpu": np.nan})]
    expected = pd.concat([t.assign(**c) for t, c in parts], ignore_index=True)
    pd.testing.assert_frame_equal(io.stack(parts), expected, check_exact=True)
    assert list(io.stack(parts)["policy"]) == ["SCHED_FIFO", "SCHED_FIFO", "normal"]
    # Only empty tables: the same empty frame; no cell: an empty one.
    empty = parts[1:2]
    pd.testing.assert_frame_equal(io.stack(empty),
                                  pd.concat([t.assign(**c) for t, c in empty], ignore_index=True))
    assert io.stack([]).empty


def test_every_cell_records_the_checksums_of_its_samples(e3_root):
    from rtstudy.measure import integrity

    _, out, cells, _ = e3_root
    for cell in cells:
        sidecar = json.loads((out / cell.cell_id / "cell.json").read_text())
        assert sidecar["checksums"] == {"samples.parquet":
                                        integrity.digest(out / cell.cell_id / "samples.parquet")}
        # ... and the protocol it was measured under (confirmatory only under that version).
        assert sidecar["protocol"] == protocol.record()


def test_verify_and_the_report_name_a_flipped_bit_and_leave_the_report_alone(own_root, capsys):
    """`rtstudy data verify` names the damaged file; `rtstudy report` refuses before its
    notebook runs, so report/ keeps what it had."""
    from rtstudy import cli

    fake, d = own_root
    assert cli.main(["data", "verify", "--profile", "smoke"]) == 0
    assert "2 cells checked" in capsys.readouterr().out
    victim = d / io.read_plan(d)["cells"][1]["cell_id"] / "samples.parquet"
    _flip_middle(victim)
    (fake / "report").mkdir()
    (fake / "report" / "report.html").write_text("the last good report")
    for argv in (["data", "verify", "--profile", "smoke"], ["report", "--profile", "smoke"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert f"{victim}: sha256 differs" in err, err
    assert [p.name for p in (fake / "report").iterdir()] == ["report.html"]
    assert (fake / "report" / "report.html").read_text() == "the last good report"


def test_a_host_states_label_says_when_its_rt_throttling_is_not_that_states_default():
    """Shielded with `--rt-throttling keep` is another host state, and its label says how."""
    from rtstudy.data import _state

    shielded = {"isolation": {"shield": {"cpus": [1], "method": "cpuset"}}}
    boot = {"isolation": {"isolated": [2, 3]}}
    cases = [({}, 950000, "untuned"), ({}, -1, "untuned, RT throttling off"),
             (shielded, -1, "shielded CPU 1 (cpuset)"),
             (shielded, 950000, "shielded CPU 1 (cpuset), RT throttling on"),
             (boot, -1, "isolated at boot CPU 2-3"),
             (boot, 950000, "isolated at boot CPU 2-3, RT throttling on")]
    for fp, runtime, words in cases:
        assert _state({**fp, "sched": {"rt_runtime_us": runtime}}) == words


def test_a_sweep_seals_every_file_a_reader_reads(e3_root):
    from rtstudy.measure import integrity

    _, out, cells, _ = e3_root
    sealed = integrity.read_seal(out)
    expected = {"plan.json", "host.json"} | {f"{c.cell_id}/{f.name}" for c in cells
                                              for f in (out / c.cell_id).iterdir()}
    assert set(sealed) == expected
    assert all(sealed[name] == integrity.digest(out / name) for name in expected)
    assert integrity.seal_problems(out) == ([], True)


def _report_bytes(root) -> dict:
    folder = root / "report"
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _delete_cell(d):
    victim = d / io.read_plan(d)["cells"][1]["cell_id"]
    shutil.rmtree(victim)
    return victim, "cell missing (its seal records it"


def _edit_sidecar(d):
    victim = d / io.read_plan(d)["cells"][0]["cell_id"] / "cell.json"
    sidecar = json.loads(victim.read_text())
    sidecar["timing"]["measured_s"] = sidecar["timing"]["measured_s"] * 10
    victim.write_text(json.dumps(sidecar))
    return victim, "sha256 differs from the one its seal recorded (edited after it was measured)"


def _add_cell(d):
    first = d / io.read_plan(d)["cells"][0]["cell_id"]
    victim = d / (first.name + "x")
    shutil.copytree(first, victim)
    return victim, "cell not in its seal (added after the dataset was measured)"


@pytest.mark.parametrize("damage", [_delete_cell, _edit_sidecar, _add_cell])
def test_verify_and_the_report_name_a_missing_an_edited_or_an_added_cell(own_root, capsys,
                                                                          damage):
    """The seal: every cell and every file a number comes from. `rtstudy report` refuses
    before anything in report/ changes."""
    from rtstudy import cli

    fake, d = own_root
    (fake / "report" / "figures").mkdir(parents=True)
    (fake / "report" / "report.html").write_text("the last good report")
    (fake / "report" / "figures" / "e3.png").write_bytes(b"\x89PNG last")
    before = _report_bytes(fake)
    victim, words = damage(d)
    for argv in (["data", "verify", "--profile", "smoke"], ["report", "--profile", "smoke"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert f"{victim}: {words}" in err, err
    assert _report_bytes(fake) == before


def test_a_dataset_filed_under_another_host_is_named(own_root, capsys):
    from rtstudy import cli
    from rtstudy.measure import integrity

    _, d = own_root
    plan = json.loads((d / "plan.json").read_text())
    plan["host_id"] = OTHER_HOST
    (d / "plan.json").write_text(json.dumps(plan))
    integrity.seal(d, ["plan.json"])  # sealed as if written so: the record itself disagrees
    assert cli.main(["data", "verify", "--profile", "smoke"]) == 2
    assert (f"{d / 'plan.json'}: plans for host {OTHER_HOST}, but the dataset is filed under "
            f"{d.parent.name}") in capsys.readouterr().err


def test_a_damaged_dataset_is_not_extended_and_an_unsealed_one_is_sealed_first(own_root,
                                                                               fingerprint):
    """Before a sweep adds a cell: a sealed dataset that changed is refused (nothing is
    measured), one measured before seals is sealed as it is (nothing else vouches for it
    here), and a cell of the plan that is missing is measured again."""
    from rtstudy.measure import integrity
    from rtstudy.measure.harness import SweepError

    fake, d = own_root
    cells = e3_plan.plan({**params.stage_config("e3_overhead", "smoke"), "apps": ["ops"],
                          "event_based_workers": [1]}, fingerprint, {})
    context = SweepContext.from_fingerprint(fingerprint, "smoke")
    victim, _ = _edit_sidecar(d)
    stat = victim.stat()
    with pytest.raises(SweepError, match="not the dataset that was measured"):
        run_sweep(cells, d, context, 1, progress=open(os.devnull, "w"))
    assert victim.stat() == stat
    (d / "seal.json").unlink()
    assert integrity.seal_problems(d, fake) == ([], False)
    gone, _ = _delete_cell(d)
    run_sweep(cells, d, context, 1, progress=open(os.devnull, "w"))
    assert (gone / "cell.json").is_file()
    assert integrity.seal_problems(d, fake) == ([], True)
