"""A colleague's dataset brought in beside ours: ``rtstudy data import``.

Why imported datasets are tracked apart from the pipeline: ``dvc.lock`` records what *this
checkout's* pipeline made, so two machines that measure rewrite the same entries of it and no
layout of the pipeline's outputs keeps two colleagues' ``dvc.lock`` from conflicting once both
commit it. Each checkout therefore keeps its own measurements in the pipeline
(``data/raw/``, ``dvc.lock``) and every other host's in ``data/imported/<name>/``, each tracked
by its own ``data/imported/<name>.dvc`` that records where it came from: sharing only ever adds
files to git, and ``make push`` / ``make pull`` move the imported data like any other.

A source is one of

- a **folder** holding datasets: a checkout with its data present (``<folder>/data/raw/``), a
  data folder (``<folder>/raw/``) or a copy of ``data/raw`` itself;
- a **git repository** (a URL, or a local clone whose data is not present): its ``dvc.lock``
  names the data, fetched from ``--remote`` (one of this checkout's DVC remotes) or else the
  repository's own default remote;
- a **DVC remote**: ``remote:NAME`` (one of this checkout's remotes, with its credentials) or a
  URL (``ssh://…``, ``s3://…``, a folder holding ``files/md5/``); every dataset pushed there is
  found by reading the remote's directory listings.

Only this checkout's hosts are left alone: a host whose dataset is already here (measured,
pulled or imported under another name) is skipped and said so; every file brought in is checked
against its hash and every dataset loaded with the same checks as :func:`rtstudy.data.load`
before anything lands in ``data/imported/``.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from rtstudy import data, params, paths, registry
from rtstudy.data.io import (REFETCH, REMEASURE, DataError, dataset_folders, identity_problems,
                             session_folders)
from rtstudy.data.origins import (Key, Source, classify, folder_listing, git_head, lock_oids,
                                  odb_listing, raw_folder, remote_odb)
from rtstudy.measure import integrity
from rtstudy.paths import FAILED_DIR, HOST_FILE, SESSIONS_DIR

GIT_TIMEOUT_S = 600
DVC_ADD_TIMEOUT_S = 600


@dataclass
class Imported:
    """What an import did: the name it was stored under, and which datasets it took or left."""

    name: str
    source: Source
    added: dict[Key, int] = field(default_factory=dict)  # key → cells
    skipped: dict[Key, str] = field(default_factory=dict)  # key → why
    dvc_file: Path | None = None


def _dvc() -> str:
    """The ``dvc`` of this environment (the venv's, next to this Python)."""
    return str(Path(sys.executable).with_name("dvc"))


def _run(args: list, cwd: Path, timeout: float, what: str) -> str:
    proc = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise DataError(f"{what} failed ({' '.join(map(str, args))}):\n"
                        f"{(proc.stderr or proc.stdout).strip()}")
    return proc.stdout


# ---------------------------------------------------------------------------
# The import


def _default_name(listing: dict, odb) -> str:
    """The source's hostnames, joined (``lab-igx`` or ``lab-igx+jetson``): readable, and the
    same each time the source is imported again, so a second import refreshes the first."""
    names = set()
    for (_, host_id, _), files in listing.items():
        what = files.get(HOST_FILE)
        try:
            text = what.read_text() if isinstance(what, Path) else odb.fs.cat_file(
                odb.oid_to_path(what))
            names.add(json.loads(text)["hostname"])
        except (AttributeError, OSError, ValueError, KeyError):
            names.add(host_id.rsplit("-", 1)[0])
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", "+".join(sorted(names)))[:64] or "imported"


def recorded_sources(name: str) -> list[dict]:
    """Every source the import ``name`` holds, as its ``.dvc`` file records them (empty when
    there is no such import)."""
    try:
        meta = (yaml.safe_load(paths.imported_dir().joinpath(f"{name}.dvc").read_text())
                or {}).get("meta") or {}
    except (OSError, yaml.YAMLError):
        return []
    return list(meta.get("sources") or ([meta["source"]] if meta.get("source") else []))


def _same(recorded: dict, source: Source) -> bool:
    """Whether a recorded source is ``source`` (another revision of it refreshes it)."""
    return (recorded.get("kind"), recorded.get("where")) == (source.kind, source.where)


def _free_name(base: str, listing: dict, source: Source) -> str:
    """``base``, unless an import of another source holds it (the reference hosts are all
    called ``vm``): then ``base`` with the hosts' id suffixes, then with a number."""
    suffixes = "+".join(sorted({host_id.rsplit("-", 1)[-1] for _, host_id, _ in listing}))
    candidates = [base, f"{base}-{suffixes}"[:64], *(f"{base[:60]}-{i}" for i in range(2, 100))]
    for candidate in candidates:
        held = recorded_sources(candidate)
        if not held and not (paths.imported_dir() / candidate).exists():
            return candidate
        if any(_same(r, source) for r in held):
            return candidate
    raise DataError(f"no free name for the import of {source.describe()}: give one with --name")


def _stage(listing: dict, keys: list[Key], odb, staging: Path) -> dict[Key, Path]:
    """Copy or download ``keys`` into ``staging/<experiment>/<host>/<profile>/``, checking
    every downloaded file against its hash."""
    out: dict[Key, Path] = {}
    remote_files, local_files = [], []
    for key in keys:
        folder = staging.joinpath(*key)
        out[key] = folder
        for rel, what in listing[key].items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            if isinstance(what, Path):
                local_files.append((what, folder / rel))
            else:
                remote_files.append((what, folder / rel))
    for src, dest in local_files:
        shutil.copy2(src, dest)
    if remote_files:
        print(f"fetching {len(remote_files)} files from {odb.path}", flush=True)
        odb.fs.get([odb.oid_to_path(md5) for md5, _ in remote_files],
                   [str(dest) for _, dest in remote_files])
        bad = [str(dest) for md5, dest in remote_files if integrity.digest(dest, "md5") != md5]
        if bad:
            raise DataError(f"{len(bad)} file(s) fetched from {odb.path} do not match their "
                            f"hash (first: {bad[0]}); the remote is damaged: push again from "
                            "the machine that measured them")
    return out


ASK_FRESH = "ask the colleague who measured it for a fresh copy (`make push` there)"


def _origin(source: Source, listing: dict, key: Key, folder: Path):
    """How to name, in an error, the source's own copy of a staged dataset ``folder``."""
    def where(staged: str) -> str:
        rel = Path(staged).relative_to(folder).as_posix() if staged != str(folder) else ""
        what = listing[key].get(rel)
        if isinstance(what, Path):
            return str(what)
        return f"{'/'.join(key)}/{rel} in {source.describe()}".replace("/ in ", " in ")
    return where


def _check(fetched: dict[Key, Path], listing: dict, source: Source) -> None:
    """Load every dataset as the report would, and check that its cells were measured on the
    host it is filed under: any problem stops the import, naming the source's file."""
    problems, read = [], {}  # params.yaml read once per profile
    for key, folder in fetched.items():
        experiment, host_id, profile = key
        found = []
        # Each session as it was measured (its seal), filed under the host that measured it.
        for each in session_folders(folder):
            found += integrity.seal_problems(each)[0]
            found += [p.replace(REFETCH, ASK_FRESH) for p in identity_problems(each)]
        if not found:
            try:
                if profile not in read:
                    read[profile] = params.read(profile)
                registry.get(experiment).analysis.load(session_folders(folder)[-1],
                                                       read[profile][experiment])
            except DataError as exc:
                found.append(str(exc).replace(REMEASURE, ASK_FRESH))
        where = _origin(source, listing, key, folder)
        for problem in found:
            # The staged copy is gone once the import stops: name the source's own file.
            problem = re.sub(re.escape(str(folder)) + r"[^\s:]*", lambda m: where(m.group(0)),
                             problem)
            problems.append(f"{experiment} of {host_id} ({profile}): {problem}")
    if problems:
        raise DataError("nothing imported: the source's data does not load:\n- "
                        + "\n- ".join(problems))


def _ours(name: str) -> dict[Key, Path]:
    """Every dataset here but those of the import called ``name`` (which this one refreshes)."""
    found = {}
    for source_name, folder in data.sources().items():
        if source_name == f"imported: {name}":
            continue
        for experiment in registry.REGISTRY:
            for dataset in dataset_folders(folder / experiment):
                found[(experiment, dataset.parent.name, dataset.name)] = dataset
    return found


def _record(dvc_file: Path, source: Source, result: Imported, before: list[dict]) -> None:
    """Where the data came from, in the ``.dvc`` file's ``meta`` (which DVC keeps as is):
    this import's ``source`` and ``datasets``, and ``sources``, every source the folder holds
    (``before``, the recorded ones, with this one refreshed or added)."""
    doc = yaml.safe_load(dvc_file.read_text())
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    this = {"kind": source.kind, "where": source.where, "rev": source.rev,
            "remote": source.remote}
    datasets = [f"{e}/{h}/{p}" for e, h, p in sorted(result.added)]
    sources = [r for r in before if not _same(r, source)]
    sources.append({**this, "imported_utc": now, "datasets": datasets})
    doc["meta"] = {"imported_by": "rtstudy data import", "imported_utc": now, "source": this,
                   "datasets": datasets, "sources": sources}
    dvc_file.write_text(yaml.safe_dump(doc, sort_keys=False))


def import_dataset(text: str, name: str | None = None, remote: str | None = None,
                   rev: str | None = None) -> Imported:
    """Bring the datasets of ``text`` in as ``data/imported/<name>/``, tracked by its own .dvc.

    Parameters
    ----------
    text : str
        A folder, git repository or DVC remote (the module docstring).
    name : str, optional
        The imported dataset's name; default the imported hosts' hostnames (with their host
        ids' suffixes where an import of another source holds that name). Importing the same
        source again under the same name refreshes it; another source under a name given
        here adds its datasets to that import, and its ``.dvc`` records both sources.
    remote : str, optional
        For a git source: the DVC remote of this checkout to fetch its data from; default
        the repository's own default remote.
    rev : str, optional
        For a git source: the branch, tag or commit whose ``dvc.lock`` names the data.

    Returns
    -------
    Imported
        The name, the datasets added (with their cell counts) and those skipped (why); none
        added when every dataset of the source is here already (nothing changes then).

    Raises
    ------
    DataError
        The source cannot be reached, holds no dataset, or its data does not load (a damaged
        file, cells filed under a host that did not measure them). Nothing under
        ``data/imported/`` changes then.
    """
    _check_name(name)
    source = classify(text, remote, rev)
    imported = paths.imported_dir()
    imported.mkdir(parents=True, exist_ok=True)
    # Staged inside data/imported/ (a dot folder, which data.sources() passes over), so that
    # the finished dataset is moved into place by a rename on the same file system.
    with tempfile.TemporaryDirectory(prefix=".staging-", dir=imported) as tmp:
        workdir = Path(tmp)
        with contextlib.ExitStack() as opened:  # the source's DVC repo, closed once fetched
            listing, odb = _listing(source, rev, workdir, opened)
            name = name or _free_name(_default_name(listing, odb), listing, source)
            result = Imported(name, source)
            ours = _ours(name)
            keys = _new_keys(listing, ours, result)
            if not keys:
                return result  # nothing new: nothing changes (the caller says so)
            staging = workdir / "staging"
            fetched = _stage(listing, keys, odb, staging)
        _check(fetched, listing, source)
        result.added = _cells(fetched)
        target = _put_in_place(imported / name, fetched, ours, staging, workdir)
    _track(target, source, result)
    return result


# ---------------------------------------------------------------------------
# The rest of its steps, in the order it takes them


def _check_name(name: str | None) -> None:
    """Refuse a ``--name`` that is no plain folder name (``DataError``)."""
    if name is not None and not re.fullmatch(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]{0,63}", name):
        raise DataError(f"--name {name!r}: use letters, digits and . _ + - (at most 64, not "
                        "starting with a dot)")


def _clone(source: Source, rev: str | None, workdir: Path) -> Path:
    """A clone of a git source in ``workdir``, at ``rev`` if given; ``source.rev`` becomes the
    commit cloned."""
    clone = workdir / "clone"
    _run(["git", "clone", "--quiet", source.where, clone], workdir, GIT_TIMEOUT_S,
         f"cloning {source.where}")
    if rev:
        _run(["git", "checkout", "--quiet", rev], clone, GIT_TIMEOUT_S,
             f"checking out {rev} in the clone of {source.where}")
    source.rev = git_head(clone)
    return clone


def _listing(source: Source, rev: str | None, workdir: Path, opened: contextlib.ExitStack
             ) -> tuple[dict[Key, dict], object]:
    """What ``source`` holds (:mod:`rtstudy.data.origins`), and the DVC object store its files
    come from (None for a folder, whose files are local); the store's repo is closed when
    ``opened`` is.

    Raises
    ------
    DataError
        The source cannot be reached, or holds no dataset.
    """
    odb = None
    if source.kind == "folder":
        listing = folder_listing(raw_folder(Path(source.where)))
    elif source.kind == "git":
        clone = _clone(source, rev, workdir)
        repo, odb = remote_odb(source, workdir, clone)
        opened.callback(repo.close)
        listing = odb_listing(odb, lock_oids(clone))
    else:
        repo, odb = remote_odb(source, workdir)
        opened.callback(repo.close)
        listing = odb_listing(odb, [o for o in odb.all() if o.endswith(".dir")])
    if not listing:
        raise DataError(f"{source.describe()}: holds no rtstudy dataset")
    return listing, odb


def _new_keys(listing: dict, ours: dict[Key, Path], result: Imported) -> list[Key]:
    """The datasets of ``listing`` not here yet, in order; each one here is noted in
    ``result.skipped``."""
    keys = []
    for key in sorted(listing):
        if key in ours:
            result.skipped[key] = f"already here ({ours[key]})"
        else:
            keys.append(key)
    return keys


def _cells(fetched: dict[Key, Path]) -> dict[Key, int]:
    """Each dataset's cells: the folders of a dataset but its failed cells' and closed
    sessions'."""
    return {key: sum(1 for p in folder.iterdir()
                     if p.is_dir() and p.name not in (FAILED_DIR, SESSIONS_DIR))
            for key, folder in fetched.items()}


def _put_in_place(target: Path, fetched: dict[Key, Path], ours: dict[Key, Path],
                  staging: Path, workdir: Path) -> Path:
    """Move ``staging`` to ``target``, the import's folder; returns ``target``."""
    if target.exists():
        # Refreshing an import: datasets it had that the source no longer lists stay.
        for key in folder_listing(target):
            if key not in fetched and key not in ours:
                shutil.copytree(target.joinpath(*key), staging.joinpath(*key))
        target.rename(workdir / "previous")
    staging.rename(target)
    return target


def _track(target: Path, source: Source, result: Imported) -> None:
    """Track the import's folder ``target`` by its own ``.dvc`` file (``result.dvc_file``),
    recording where it came from (:func:`_record`)."""
    relative = target.relative_to(paths.root())
    before = recorded_sources(target.name)
    _run([_dvc(), "add", "--quiet", str(relative)], paths.root(), DVC_ADD_TIMEOUT_S,
         f"tracking {relative} with DVC")
    result.dvc_file = target.with_name(target.name + ".dvc")
    _record(result.dvc_file, source, result, before)


def unpublished(repair: bool = False) -> list[str]:
    """The files of ``dvc.lock``'s raw data that the reference remote (``data/reference/``) lacks.

    Why this is checked rather than trusted: DVC takes a directory object found on a remote as
    proof that all its files are there too, so a ``dvc push`` interrupted after it wrote one
    (seen here: the reference's second shielded session lacked 106 files, and every later push
    said "Everything is up to date") leaves a dataset that no clone can pull.

    Parameters
    ----------
    repair : bool
        Delete from the remote each directory object whose files are incomplete, so that the
        next ``dvc push -r reference`` checks, and sends, every one of its files.

    Returns
    -------
    list of str
        ``"<experiment>: <relpath> (<md5>)"`` for every missing file; empty when complete.
    """
    from dvc.repo import Repo

    # Where .dvc/config puts the reference remote and the cache, as DVC reads it.
    with Repo(str(paths.root())) as repo:
        remote = Path(repo.cloud.get_remote_odb("reference").path)
        cache = Path(repo.cache.local.path)
    lock = yaml.safe_load((paths.root() / "dvc.lock").read_text()) or {}
    missing = []
    for name in registry.REGISTRY:
        outs = (lock.get("stages", {}).get(name) or {}).get("outs", [])
        oid = next((o["md5"] for o in outs if o.get("path") == f"data/raw/{name}"), None)
        if oid is None:
            continue
        where = [base / oid[:2] / oid[2:] for base in (remote, cache)]
        listing_file = next((f for f in where if f.is_file()), None)
        if listing_file is None:
            missing.append(f"{name}: its directory object ({oid})")
            continue
        lacking = [f"{name}: {entry['relpath']} ({entry['md5']})"
                   for entry in json.loads(listing_file.read_text())
                   if not (remote / entry["md5"][:2] / entry["md5"][2:]).is_file()]
        if not where[0].is_file():
            lacking.append(f"{name}: its directory object ({oid})")
        elif lacking and repair:
            where[0].unlink()
        missing += lacking
    return missing
