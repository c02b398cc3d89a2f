"""Is a sample file the one that was measured? Checksums written with it, verified on every read.

Two records say what a file held when it was measured:

- its cell's sidecar: the harness writes the sha256 of every ``*.parquet`` of a cell into
  ``cell.json`` (``checksums``) after fsyncing them, before the cell is renamed into place;
- DVC's manifest of the dataset (the ``.dir`` object named by ``dvc.lock`` or an import's
  ``.dvc`` file, in the DVC cache or the repository's reference remote): the md5 of every file
  as committed. It is what vouches for cells measured before sidecars held checksums.

:func:`problems` checks one cell against whichever records it has and says what is wrong in
words that name the file and the fix. Imports nothing of rtstudy but :mod:`rtstudy.paths`, so
the reader (:mod:`rtstudy.data.io`) and the writer (:mod:`rtstudy.measure.harness`) both use it.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

import yaml

from rtstudy import paths

# The sidecar key: file name (in the cell's folder) -> sha256 hex digest.
CHECKSUMS_KEY = "checksums"
FIX = ("the file changed after it was measured (a damaged disk or an incomplete copy): get a "
       "fresh copy (`make pull`, or ask whoever measured it for a fresh copy), or delete the "
       "cell's folder and re-run its stage to measure it again")


def digest(path: Path, algorithm: str = "sha256") -> str:
    """The hex digest of ``path``'s bytes, read in 1 MiB blocks."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fsync_file(path: Path) -> None:
    """Flush ``path``'s bytes to the disk, so that a rename after it never publishes an empty
    or partial file after a power cut."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Flush a folder's entries (a rename into it) to the disk."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def seal(cell_dir: Path) -> dict[str, str]:
    """fsync every ``*.parquet`` in ``cell_dir`` and return their sha256 (file name → digest),
    what the sidecar records under :data:`CHECKSUMS_KEY`."""
    sums = {}
    for f in sorted(Path(cell_dir).glob("*.parquet")):
        fsync_file(f)
        sums[f.name] = digest(f)
    return sums


def _dvc_objects(root: Path) -> list[Path]:
    """Where DVC keeps ``.dir`` objects: the cache, then the reference remote in the repo."""
    return [root / ".dvc" / "cache" / "files" / "md5", root / "data" / "reference" / "files" / "md5"]


def _tracked_dirs(root: Path) -> dict[str, str]:
    """Every DVC-tracked folder of ``root``: path relative to ``root`` → md5 of its ``.dir``."""
    found = {}
    records = []
    lock = root / "dvc.lock"
    if lock.is_file():
        for stage in (yaml.safe_load(lock.read_text()) or {}).get("stages", {}).values():
            records += [(o, root) for o in stage.get("outs", [])]
    for dvc_file in sorted((root / "data" / "imported").glob("*.dvc")):
        outs = (yaml.safe_load(dvc_file.read_text()) or {}).get("outs", [])
        records += [(o, dvc_file.parent) for o in outs]
    for out, base in records:
        md5 = str(out.get("md5", ""))
        if md5.endswith(".dir"):
            found[str((base / out["path"]).relative_to(root))] = md5[:-len(".dir")]
    return found


@functools.lru_cache(maxsize=8)
def _manifest(root: Path, stamp: tuple) -> dict[str, str]:
    """Every file DVC recorded under ``root``: path relative to ``root`` → md5.

    ``stamp`` (the records' modification times) makes a changed ``dvc.lock`` read again.
    A folder whose ``.dir`` object is in neither place has nothing to vouch for it here.
    """
    files = {}
    for folder, md5 in _tracked_dirs(root).items():
        for objects in _dvc_objects(root):
            obj = objects / md5[:2] / f"{md5[2:]}.dir"
            if obj.is_file():
                for entry in json.loads(obj.read_text()):
                    files[f"{folder}/{entry['relpath']}"] = entry["md5"]
                break
    return files


def dvc_manifest(root: Path | None = None) -> dict[str, str]:
    """What DVC recorded of every tracked data file of the project (:func:`_manifest`)."""
    root = Path(root or paths.root()).resolve()
    records = [root / "dvc.lock", *sorted((root / "data" / "imported").glob("*.dvc"))]
    stamp = tuple((str(p), p.stat().st_mtime_ns) for p in records if p.is_file())
    return _manifest(root, stamp)


def problems(cell_dir: Path, sidecar: dict, root: Path | None = None) -> list[str]:
    """What is wrong with the sample files of the cell in ``cell_dir``: one sentence per file
    whose bytes differ from what was recorded when it was measured (empty when all match).

    A cell whose sidecar holds checksums is judged by them alone (a re-measured cell may stand
    where DVC recorded an older one); a cell measured before that, by DVC's manifest where it
    lists the file. A cell neither records is not judged.
    """
    cell_dir = Path(cell_dir)
    recorded = sidecar.get(CHECKSUMS_KEY)
    found = []
    if recorded:
        for name, expected in sorted(recorded.items()):
            f = cell_dir / name
            if not f.is_file():
                found.append(f"{f}: missing (its sidecar records its checksum); {FIX}")
            elif digest(f) != expected:
                found.append(f"{f}: sha256 differs from the one its sidecar recorded when it "
                             f"was measured; {FIX}")
        return found
    root = Path(root or paths.root()).resolve()
    manifest = dvc_manifest(root)
    if not manifest:
        return found
    try:
        base = str(cell_dir.resolve().relative_to(root))
    except ValueError:
        return found
    for f in sorted(cell_dir.iterdir()):
        expected = manifest.get(f"{base}/{f.name}")
        if expected and f.is_file() and digest(f, "md5") != expected:
            found.append(f"{f}: md5 differs from the one dvc.lock's data recorded; {FIX}")
    return found
