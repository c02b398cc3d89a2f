"""Is a dataset the one that was measured? Checksums written with the data, verified on every read.

Three records say what a dataset held when it was measured:

- its **seal** (``seal.json`` in every dataset folder, closed sessions included): the sha256 of
  every file a reader reads there (``plan.json``, ``host.json``, E4's ``audit.json`` and every
  file of every cell), written and fsynced by the harness each time it writes one of them
  (:func:`seal`, :func:`seal_cell`). A missing cell, an extra one, an edited sidecar are each
  named by :func:`seal_problems`;
- its cells' sidecars: the harness writes the sha256 of every ``*.parquet`` of a cell into
  ``cell.json`` (``checksums``) after fsyncing them, before the cell is renamed into place, so a
  cell copied on its own still carries what vouches for its samples;
- DVC's manifest of the dataset (the ``.dir`` object named by ``dvc.lock`` or an import's
  ``.dvc`` file, in the DVC cache or the repository's reference remote): the md5 of every file
  as committed. It vouches for the folders measured before seals existed; the first write into
  such a folder, or closing its session, seals it (:func:`adopt`) once DVC's record agrees.
  Before adding to a dataset the harness checks it the same way: a damaged dataset is not
  extended.

:func:`problems` checks one cell against its sidecar (or DVC's manifest); :func:`seal_problems`
a whole dataset folder, in words that name the file and the fix. Imports nothing of rtstudy but
:mod:`rtstudy.paths` and :mod:`rtstudy.atomic`, so the reader (:mod:`rtstudy.data`), the writer
(:mod:`rtstudy.measure.harness`) and the import all use it.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass, fields, replace
from pathlib import Path

import yaml

from rtstudy import atomic, paths

# The sidecar key: file name (in the cell's folder) -> sha256 hex digest.
CHECKSUMS_KEY = "checksums"
# What a seal leaves out: the closed sessions (each a dataset folder sealed on its own), failed
# cells (no reader reads them) and work in progress (``.tmp-*`` cells, ``*.tmp`` writes).
UNSEALED = (paths.SESSIONS_DIR, paths.FAILED_DIR, paths.SEAL_FILE)
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


def sample_checksums(cell_dir: Path) -> dict[str, str]:
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


# ---------------------------------------------------------------------------
# A dataset folder's seal

SEAL_FIX = ("the dataset is not the one that was measured: get a fresh copy (`make pull`, or "
            "ask whoever measured it), or, to re-measure a cell, delete its folder and run its "
            "stage again (`make study`), which seals the dataset anew")


def data_files(directory: Path) -> list[str]:
    """The files of a dataset folder that readers read, as paths relative to it
    (POSIX), sorted: everything but :data:`UNSEALED` and hidden or temporary entries."""
    directory = Path(directory)
    found = []
    for entry in sorted(directory.iterdir()) if directory.is_dir() else []:
        if entry.name in UNSEALED or entry.name.startswith(".") or entry.name.endswith(".tmp"):
            continue
        if entry.is_dir():
            found += [f.relative_to(directory).as_posix() for f in sorted(entry.rglob("*"))
                      if f.is_file() and not f.name.endswith(".tmp")]
        elif entry.is_file():
            found.append(entry.name)
    return found


def read_seal(directory: Path) -> dict[str, str] | None:
    """The sealed files of a dataset folder (relative path → sha256), None if it has no seal.

    Raises
    ------
    ValueError
        The seal itself is unreadable or not a seal.
    """
    path = Path(directory) / paths.SEAL_FILE
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: unreadable ({exc})") from None
    files = record.get("files") if isinstance(record, dict) else None
    if not isinstance(files, dict):
        raise ValueError(f"{path}: not a seal (no `files`)")
    return files


def _write_seal(directory: Path, files: dict[str, str]) -> None:
    atomic.write_text(Path(directory) / paths.SEAL_FILE,
                      json.dumps({"algorithm": "sha256", "files": dict(sorted(files.items()))},
                                 indent=1) + "\n")
    fsync_dir(directory)


def seal(directory: Path, names: list[str] | tuple[str, ...]) -> None:
    """Record the sha256 of the files ``names`` (relative to ``directory``) in its seal,
    fsyncing each first; a name with no file any more leaves the seal. Other entries stay."""
    directory = Path(directory)
    files = read_seal(directory) or {}
    for name in names:
        path = directory / name
        if path.is_file():
            fsync_file(path)
            files[name] = digest(path)
        else:
            files.pop(name, None)
    _write_seal(directory, files)


def seal_cell(directory: Path, cell_id: str, folder: Path | None = None) -> None:
    """Record every file of cell ``cell_id`` in its dataset folder's seal, in place of whatever
    the seal held for a cell of that id (a re-measured cell replaces the old one whole).

    ``folder`` is where the cell's files are now (default ``directory/cell_id``): the harness
    seals a cell from its work folder just before renaming it into place, so that a crash
    between the two leaves a sealed cell that is missing (measured again by the next run),
    never an unsealed one that looks complete.
    """
    directory = Path(directory)
    folder = Path(folder) if folder is not None else directory / cell_id
    files = {k: v for k, v in (read_seal(directory) or {}).items()
             if not k.startswith(f"{cell_id}/")}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            files[f"{cell_id}/{path.relative_to(folder).as_posix()}"] = digest(path)
    _write_seal(directory, files)


def _dvc_records(directory: Path, root: Path) -> dict[str, str] | None:
    """What DVC's manifest records of the files a seal would cover in ``directory`` (relative
    path → md5), None where it records none of that folder's files."""
    manifest = dvc_manifest(root)
    try:
        base = directory.resolve().relative_to(root).as_posix() + "/"
    except ValueError:
        return None
    found = {}
    for path, md5 in manifest.items():
        if path.startswith(base):
            rel = path[len(base):]
            if rel.split("/")[0] not in UNSEALED:
                found[rel] = md5
    return found or None


@dataclass(frozen=True)
class Differences:
    """How a dataset folder's files differ from a record of them (relative paths, sorted):
    whole cells, then single files outside those cells."""

    missing_cells: tuple[str, ...]  # every file of the cell's folder is gone
    extra_cells: tuple[str, ...]    # every file of the cell's folder is new
    missing: tuple[str, ...]
    changed: tuple[str, ...]
    extra: tuple[str, ...]

    def without(self, rewritten: tuple[str, ...], remeasured: frozenset[str]) -> Differences:
        """These differences but the files ``rewritten`` and the cells ``remeasured``."""
        return replace(self, **{f.name: tuple(n for n in getattr(self, f.name)
                                              if n not in rewritten
                                              and n.split("/")[0] not in remeasured)
                                for f in fields(self)})


def differences(directory: Path, recorded: dict[str, str], algorithm: str = "sha256"
                ) -> Differences:
    """How the files of ``directory`` differ from ``recorded`` (relative path → digest)."""
    present = set(data_files(directory))
    missing = sorted(n for n in recorded if n not in present)
    changed = sorted(n for n in recorded if n in present
                     and digest(directory / n, algorithm) != recorded[n])
    extra = sorted(present - set(recorded))
    every = set(recorded) | present

    def whole(names: list[str]) -> tuple[str, ...]:
        cells = {n.split("/")[0] for n in names if "/" in n}
        return tuple(sorted(c for c in cells
                            if {n for n in every if n.startswith(c + "/")} <= set(names)))

    gone, new = whole(missing), whole(extra)
    return Differences(missing_cells=gone, extra_cells=new,
                       missing=tuple(n for n in missing if n.split("/")[0] not in gone),
                       changed=tuple(changed),
                       extra=tuple(n for n in extra if n.split("/")[0] not in new))


def _sentences(directory: Path, diff: Differences, algorithm: str, what: str) -> list[str]:
    """One sentence (with the fix) per difference."""
    said = {
        "missing_cells": f"cell missing ({what} records it; its folder was deleted or moved)",
        "missing": f"missing ({what} records it)",
        "changed": f"{algorithm} differs from the one {what} recorded (edited after it was "
                   "measured)",
        "extra_cells": f"cell not in {what} (added after the dataset was measured)",
        "extra": f"not in {what} (added after the dataset was measured)"}
    return [f"{directory / name}: {said[kind]}; {SEAL_FIX}"
            for kind in said for name in getattr(diff, kind)]


def seal_problems(directory: Path, root: Path | None = None,
                  remeasured: frozenset[str] = frozenset(),
                  rewritten: tuple[str, ...] = ()) -> tuple[list[str], bool]:
    """Check a dataset folder against its seal, else against DVC's manifest of it.

    Parameters
    ----------
    directory : Path
        A dataset folder (one holding a ``plan.json``; a closed session's too).
    root : Path, optional
        The project whose ``dvc.lock`` and imports' ``.dvc`` files vouch for folders without a
        seal; default this checkout.
    remeasured : frozenset of str
        Cells whose state is no problem (missing, or a folder without its sidecar): the harness
        is about to measure them again.
    rewritten : tuple of str
        Files whose state is no problem: the harness is about to write them again.

    Returns
    -------
    tuple of (list of str, bool)
        One sentence per problem (each with the fix), empty when the folder is what was
        measured; and whether anything vouches for the folder (False: no seal, and DVC records
        none of its files, e.g. data measured before seals and never committed).
    """
    directory = Path(directory)
    try:
        sealed = read_seal(directory)
    except ValueError as exc:
        return [f"{exc}; {SEAL_FIX}"], True
    if sealed is not None:
        recorded, algorithm, what = sealed, "sha256", "its seal"
    else:
        recorded = _dvc_records(directory, Path(root or paths.root()).resolve())
        if recorded is None:
            return [], False
        algorithm, what = "md5", "dvc.lock's data"
    diff = differences(directory, recorded, algorithm).without(rewritten, remeasured)
    return _sentences(directory, diff, algorithm, what), True


def adopt(directory: Path, root: Path | None = None, remeasured: frozenset[str] = frozenset(),
          rewritten: tuple[str, ...] = ()) -> list[str]:
    """Before data is added to a dataset folder: its problems (:func:`seal_problems`, with
    ``remeasured`` and ``rewritten`` as there), and, where it has none and no seal yet (measured
    before seals; DVC's record of it agrees with the disk, or nothing records it), its seal
    written. Nothing is written when there are problems."""
    directory = Path(directory)
    if not data_files(directory):
        return []
    found, _ = seal_problems(directory, root, remeasured, rewritten)
    if not found and not (directory / paths.SEAL_FILE).exists():
        seal(directory, data_files(directory))
    return found
