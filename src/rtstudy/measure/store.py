"""A cell's files on disk: its samples as Parquet, its sidecar, and the one rename that makes
it complete.

The harness (:func:`rtstudy.measure.harness.run_cell`) runs a cell's app in a work directory;
what the app left there is converted here (:func:`convert_samples`) and the directory moved
into place in one step (:func:`store`), or to ``_failed/`` with its log (:func:`store_failed`),
so a cell on disk is always complete.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rtstudy import atomic
from rtstudy.measure import integrity
from rtstudy.measure.cell import Cell, CellOutcome
from rtstudy.measure.preflight import STORAGE_FIXES
from rtstudy.paths import FAILED_DIR, RAW_SAMPLES_FILE, SAMPLES_FILE, SIDECAR_FILE


def write_json(path: Path, data: dict) -> None:
    """Write ``data`` as JSON with sorted keys, atomically (:func:`rtstudy.atomic.write_text`)."""
    atomic.write_text(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def write_samples(table: pa.Table, parquet: Path) -> None:
    """Write ``table`` as Parquet, integer columns delta-encoded.

    Time stamps and counters grow steadily, so their deltas are small: E3's
    per-tick stamps shrink about 3.6 times over plain zstd (data/README.md,
    "Size"). The encoding is lossless and invisible to readers.
    """
    ints = [f.name for f in table.schema if pa.types.is_integer(f.type)]
    # Page checksums: a reader (rtstudy.data.io.read_samples) finds a flipped bit in the page it
    # is in, even in a copy that travelled without its sidecar.
    pq.write_table(table, parquet, compression="zstd",
                   use_dictionary=[n for n in table.column_names if n not in ints],
                   column_encoding={n: "DELTA_BINARY_PACKED" for n in ints},
                   write_page_checksum=True)


def _npz_to_parquet(npz: Path, parquet: Path) -> None:
    with np.load(npz, allow_pickle=False) as arrays:
        table = pa.table({name: arrays[name] for name in arrays.files})
    write_samples(table, parquet)
    npz.unlink()


def is_complete(out_dir: Path, cell: Cell) -> bool:
    """Whether ``cell`` is on disk in ``out_dir``: its folder with its sidecar and samples."""
    d = out_dir / cell.cell_id
    return (d / SIDECAR_FILE).is_file() and (d / SAMPLES_FILE).is_file()


def convert_samples(work: Path) -> str:
    """The app's NumPy files as Parquet; why they could not be read, or "".

    Raises
    ------
    OSError
        When the data directory is the problem (:data:`rtstudy.measure.preflight.STORAGE_FIXES`):
        the sweep stops, not just this cell.
    """
    try:
        _npz_to_parquet(work / RAW_SAMPLES_FILE, work / SAMPLES_FILE)
        for extra in sorted(work.glob("*.npz")):
            # Further tables an app returned (E2's scheduler trace): kept beside the samples.
            _npz_to_parquet(extra, extra.with_suffix(".parquet"))
    except (OSError, ValueError) as exc:
        if isinstance(exc, OSError) and exc.errno in STORAGE_FIXES:
            raise
        return f"the app's samples could not be read: {exc}"
    return ""


def store_failed(work: Path, out_dir: Path, cell: Cell, sidecar: dict) -> CellOutcome:
    """Move a failed cell, without its samples, to ``_failed/<cell_id>/`` with its log."""
    for raw in work.glob("*.npz"):
        raw.unlink()
    (work / SAMPLES_FILE).unlink(missing_ok=True)
    write_json(work / SIDECAR_FILE, sidecar)
    failed_dir = out_dir / FAILED_DIR / cell.cell_id
    failed_dir.parent.mkdir(exist_ok=True)
    shutil.rmtree(failed_dir, ignore_errors=True)
    os.rename(work, failed_dir)
    return CellOutcome(cell.cell_id, "failed", sidecar["reason"], failed_dir, sidecar["timing"])


def store(work: Path, out_dir: Path, cell: Cell, sidecar: dict) -> CellOutcome:
    """Rename the complete cell into place as ``<cell_id>/`` in one step (a failure of an
    earlier attempt removed)."""
    # The samples reach the disk before the sidecar that vouches for them, and both before the
    # rename that makes the cell complete: after a power cut a cell is whole or absent.
    sidecar = {**sidecar, integrity.CHECKSUMS_KEY: integrity.sample_checksums(work)}
    write_json(work / SIDECAR_FILE, sidecar)
    integrity.fsync_dir(work)
    final = out_dir / cell.cell_id
    # The dataset's seal names the cell before it is in place (integrity.seal_cell).
    integrity.seal_cell(out_dir, cell.cell_id, work)
    if final.exists():
        # A folder without a sidecar (damaged, or copied in part) is not a cell: replace it.
        shutil.rmtree(final)
    os.rename(work, final)
    integrity.fsync_dir(out_dir)
    shutil.rmtree(out_dir / FAILED_DIR / cell.cell_id, ignore_errors=True)
    return CellOutcome(cell.cell_id, "ok", "", final, sidecar["timing"])
