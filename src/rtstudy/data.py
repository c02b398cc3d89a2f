"""Reading what the harness wrote: the plan of a sweep and its completed cells.

Every problem names the file and what is wrong with it, so a corrupt or
half-copied dataset is never silently analysed.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from rtstudy.harness import PLAN_FILE, SAMPLES, SIDECAR


class DataError(RuntimeError):
    """A dataset on disk is missing, incomplete or corrupt."""


def read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise DataError(f"{path}: missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not valid JSON ({exc}); delete the cell's folder and re-run "
                        "its stage to measure it again") from None


def read_samples(path: Path) -> pd.DataFrame:
    try:
        return pq.read_table(path).to_pandas()
    except FileNotFoundError:
        raise DataError(f"{path}: missing") from None
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise DataError(f"{path}: unreadable Parquet ({exc}); delete the cell's folder and "
                        "re-run its stage to measure it again") from None


def plan(out_dir: Path) -> dict:
    """The plan of the sweep stored in ``out_dir`` (which cells make up its configuration)."""
    if not (out_dir / PLAN_FILE).exists():
        raise DataError(f"{out_dir}: no {PLAN_FILE}; this experiment has not been run here for "
                        "this host and profile (run `make study`, or `dvc pull` a shared dataset)")
    return read_json(out_dir / PLAN_FILE)


def completed_cells(out_dir: Path) -> tuple[list[dict], list[str]]:
    """Sidecars of the plan's completed cells, and the ids of cells not on disk."""
    cells, missing = [], []
    for entry in plan(out_dir)["cells"]:
        d = out_dir / entry["cell_id"]
        if not d.exists():
            missing.append(entry["cell_id"])
            continue
        sidecar = read_json(d / SIDECAR)
        if sidecar.get("status") != "ok":
            raise DataError(f"{d / SIDECAR}: status {sidecar.get('status')!r}, expected 'ok'")
        if not (d / SAMPLES).is_file():
            raise DataError(f"{d / SAMPLES}: missing (the cell's sidecar exists without samples)")
        sidecar["_dir"] = str(d)
        cells.append(sidecar)
    return cells, missing
