"""Checksums: a sample file that changed after it was measured is refused, naming the file.

Pure logic on files made here (no measurement): page checksums in every Parquet file the
harness writes, the sha256 a cell's sidecar records, and DVC's manifest for cells measured
before sidecars held checksums. The same checks on real cells: tests/test_data.py.
"""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from rtstudy.data.io import DataError, read_samples
from rtstudy.measure import integrity
from rtstudy.measure.store import write_samples


def _samples(path, rows=300):
    rng = np.random.default_rng(7)
    table = pa.table({"frame": np.arange(rows, dtype=np.int64),
                      "t_start_ns": np.cumsum(rng.integers(16_000_000, 17_000_000, rows)),
                      "exec_ns": rng.integers(90_000, 110_000, rows)})
    write_samples(table, path)
    return table.to_pandas()


def _flip(path, offset) -> None:
    raw = bytearray(path.read_bytes())
    raw[offset] ^= 0x01
    path.write_bytes(bytes(raw))


def test_every_flipped_bit_in_the_column_data_is_refused_or_changes_nothing(tmp_path):
    """Page checksums: a copy that travelled without its sidecar still cannot change a value
    silently. Every bit 0 of the first column chunk's bytes is flipped in turn."""
    import pyarrow.parquet as pq

    path = tmp_path / "samples.parquet"
    values = _samples(path)
    pristine = path.read_bytes()
    chunk = pq.read_metadata(path).row_group(0).column(1)
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    refused = 0
    for offset in range(start, start + chunk.total_compressed_size):
        path.write_bytes(pristine)
        _flip(path, offset)
        try:
            assert read_samples(path).equals(values), f"a flip at byte {offset} changed values"
        except DataError as exc:
            assert str(path) in str(exc)
            refused += 1
    assert refused > chunk.total_compressed_size // 2


def test_a_cell_is_judged_by_the_checksums_its_sidecar_records(tmp_path):
    cell = tmp_path / "cell"
    cell.mkdir()
    _samples(cell / "samples.parquet")
    _samples(cell / "trace.parquet", rows=10)
    sums = integrity.sample_checksums(cell)
    assert sums == {name: integrity.digest(cell / name)
                    for name in ("samples.parquet", "trace.parquet")}
    sidecar = {integrity.CHECKSUMS_KEY: sums}
    assert integrity.problems(cell, sidecar, root=tmp_path) == []
    _flip(cell / "samples.parquet", 100)
    (cell / "trace.parquet").unlink()
    found = integrity.problems(cell, sidecar, root=tmp_path)
    assert len(found) == 2
    assert f"{cell / 'samples.parquet'}: sha256 differs" in found[0] and "fresh copy" in found[0]
    assert f"{cell / 'trace.parquet'}: missing" in found[1]


def _dvc_project(root, files: dict[str, bytes]) -> None:
    """``root`` as DVC leaves it after a commit: ``data/raw/e9`` tracked by ``dvc.lock``, its
    ``.dir`` object in the cache listing each file's md5."""
    import hashlib

    for rel, content in files.items():
        (root / "data/raw/e9" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "data/raw/e9" / rel).write_bytes(content)
    listing = [{"md5": hashlib.md5(c).hexdigest(), "relpath": rel} for rel, c in files.items()]
    md5 = hashlib.md5(json.dumps(listing).encode()).hexdigest()
    obj = root / ".dvc/cache/files/md5" / md5[:2] / f"{md5[2:]}.dir"
    obj.parent.mkdir(parents=True)
    obj.write_text(json.dumps(listing))
    (root / "dvc.lock").write_text(
        "schema: '2.0'\nstages:\n  e9:\n    cmd: x\n    outs:\n    - path: data/raw/e9\n"
        f"      hash: md5\n      md5: {md5}.dir\n")


def test_a_cell_from_before_checksums_is_judged_by_dvcs_manifest(tmp_path):
    _dvc_project(tmp_path, {"h/default/c1/samples.parquet": b"measured",
                            "h/default/c1/cell.json": b"{}"})
    cell = tmp_path / "data/raw/e9/h/default/c1"
    assert integrity.problems(cell, {}, root=tmp_path) == []
    (cell / "samples.parquet").write_bytes(b"measureD")
    (found,) = integrity.problems(cell, {}, root=tmp_path)
    assert f"{cell / 'samples.parquet'}: md5 differs from the one dvc.lock's data recorded" in found
    # A file DVC never recorded (a cell measured since) is not judged by it.
    (cell / "samples.parquet").write_bytes(b"measured")
    (cell / "extra.parquet").write_bytes(b"new")
    assert integrity.problems(cell, {}, root=tmp_path) == []


def test_a_sidecars_checksums_win_over_an_older_manifest(tmp_path):
    """A cell deleted and measured again stands where dvc.lock recorded the old one."""
    _dvc_project(tmp_path, {"h/default/c1/samples.parquet": b"old measurement"})
    cell = tmp_path / "data/raw/e9/h/default/c1"
    (cell / "samples.parquet").write_bytes(b"new measurement")
    sidecar = {integrity.CHECKSUMS_KEY: integrity.sample_checksums(cell)}
    assert integrity.problems(cell, sidecar, root=tmp_path) == []


@pytest.mark.parametrize("missing", ["lock", "object"])
def test_no_record_means_nothing_to_judge_by(tmp_path, missing):
    _dvc_project(tmp_path, {"h/default/c1/samples.parquet": b"measured"})
    if missing == "lock":
        (tmp_path / "dvc.lock").unlink()
    else:
        for obj in (tmp_path / ".dvc/cache").rglob("*.dir"):
            obj.unlink()
    cell = tmp_path / "data/raw/e9/h/default/c1"
    (cell / "samples.parquet").write_bytes(b"anything")
    assert integrity.problems(cell, {}, root=tmp_path) == []
