"""Where ``rtstudy data import`` (:mod:`rtstudy.data.sharing`) takes datasets from: the kind of
source a text names (:func:`classify`: a folder, a git repository or a DVC remote, as that
module's docstring says) and what each holds, dataset by dataset (:data:`Key`): its files,
local ones as paths, a DVC remote's as their md5.
"""
from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from rtstudy import paths, registry
from rtstudy.data.io import DataError, dataset_folders
from rtstudy.paths import PLAN_FILE, SESSIONS_DIR

# What marks a URL as a git repository rather than a DVC remote.
GIT_URL = re.compile(r"(\.git/?$)|^git@|^(git|https?)://")

# One dataset: (experiment, host id, profile).
Key = tuple[str, str, str]


@dataclass
class Source:
    """Where an import comes from: ``kind`` is ``folder``, ``git`` or ``remote``."""

    kind: str
    where: str
    rev: str | None = None
    remote: str | None = None

    def describe(self) -> str:
        extra = f" at {self.rev}" if self.rev else ""
        via = f" (data from DVC remote {self.remote!r})" if self.remote else ""
        return f"{self.kind} {self.where}{extra}{via}"


def classify(text: str, remote: str | None = None, rev: str | None = None) -> Source:
    """The kind of source ``text`` names (:mod:`rtstudy.data.sharing`'s docstring).

    Raises
    ------
    DataError
        A local path that is none of the three, or a remote name this checkout lacks.
    """
    if text.startswith("remote:"):
        name = text.removeprefix("remote:")
        if name not in our_remotes():
            raise DataError(f"{text}: this checkout has no DVC remote {name!r} (it has "
                            f"{', '.join(our_remotes()) or 'none'}); add it with `dvc remote "
                            "add --local NAME URL` (docs/sharing-data.md, \"Between machines\")")
        return Source("remote", name, rev, None)
    path = Path(text).expanduser()
    if path.exists():
        path = path.resolve()
        if raw_folder(path) is not None:
            return Source("folder", str(path), rev or git_head(path), None)
        if (path / "files" / "md5").is_dir():
            return Source("remote", str(path), rev, None)
        if (path / "dvc.lock").is_file() and (path / ".git").exists():
            return _git(str(path), rev, remote)
        raise DataError(f"{path}: holds no rtstudy dataset (no data/raw/, raw/ or "
                        "<experiment>/<host id>/<profile>/plan.json), is no DVC remote (no "
                        "files/md5/) and no git checkout with a dvc.lock; point at one of those")
    if GIT_URL.search(text):
        return _git(text, rev, remote)
    if "://" in text:
        return Source("remote", text, rev, None)
    if text in our_remotes():
        return Source("remote", text, rev, None)
    raise DataError(f"{text!r}: not a folder, git URL, DVC remote URL or one of this checkout's "
                    f"DVC remotes ({', '.join(our_remotes()) or 'none configured'}); name a "
                    "remote as remote:NAME")


def _git(where: str, rev: str | None, remote: str | None) -> Source:
    """A git source, whose ``--remote`` (if any) must be one of this checkout's remotes."""
    if remote is not None and remote not in our_remotes():
        raise DataError(f"--remote {remote}: this checkout has no DVC remote of that name (it "
                        f"has {', '.join(our_remotes()) or 'none'}); add it with `dvc remote add`")
    return Source("git", where, rev, remote)


def git_head(path: Path) -> str | None:
    """The commit checked out in the git checkout ``path``, or None (not one)."""
    proc = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True,
                          text=True, timeout=60)
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def raw_folder(path: Path) -> Path | None:
    """The folder of experiment folders under ``path``, or None (see :class:`Source`)."""
    for candidate in (path / "data" / "raw", path / "raw", path):
        if any(dataset_folders(candidate / name) for name in registry.REGISTRY):
            return candidate
    return None


def our_remotes() -> dict[str, dict]:
    """This checkout's DVC remotes (``.dvc/config`` with ``config.local``), by name."""
    from dvc.repo import Repo

    with Repo(str(paths.root())) as repo:
        return {name: dict(conf) for name, conf in repo.config["remote"].items()}


# ---------------------------------------------------------------------------
# What a source holds: key → {path inside the dataset folder: md5 or local file}


def folder_listing(raw: Path) -> dict[Key, dict[str, Path]]:
    """Every dataset under ``raw`` (a folder of experiment folders), each file by its path inside the dataset folder."""
    found: dict[Key, dict[str, Path]] = {}
    for experiment in registry.REGISTRY:
        for folder in dataset_folders(raw / experiment):
            key = (experiment, folder.parent.name, folder.name)
            found[key] = {str(p.relative_to(folder)): p for p in sorted(folder.rglob("*"))
                          if p.is_file()}
    return found


def remote_odb(source: Source, workdir: Path, repo_dir: Path | None = None):
    """The object store of the source's DVC remote, through a DVC repo in ``workdir``.

    ``repo_dir`` is a clone of a git source: its own remotes are used unless ``--remote``
    names one of ours, which is copied in with its credentials (``config.local``).
    """
    from dvc.repo import Repo

    if repo_dir is None:
        repo_dir = workdir / "dvc"
        repo_dir.mkdir()
        Repo.init(str(repo_dir), no_scm=True).close()
    # A git source's data comes from its own default remote unless --remote names one of
    # ours (classify checked it); a remote source is one of ours or a URL.
    name = source.remote if source.kind == "git" else source.where
    conf = our_remotes().get(name) or ({"url": name} if source.kind == "remote" else None)
    with Repo(str(repo_dir)) as repo:
        if conf is not None:
            with repo.config.edit("local") as local:
                local["remote"]["rtstudy-import"] = conf
                local["core"]["remote"] = "rtstudy-import"
    repo = Repo(str(repo_dir))
    try:
        return repo, repo.cloud.get_remote_odb()
    except Exception as exc:  # DVC raises several types for an unusable remote
        repo.close()
        raise DataError(f"{source.describe()}: its DVC remote cannot be opened ({exc}); check "
                        "the URL and credentials (`dvc remote list`, .dvc/config.local)") from None


def _dir_listing(odb, oid: str) -> list[dict]:
    try:
        return json.loads(odb.fs.cat_file(odb.oid_to_path(oid)))
    except FileNotFoundError:
        raise DataError(f"the DVC remote at {odb.path} lacks {oid}: the data was not pushed "
                        "there (`make push` on the machine that measured it)") from None


def odb_listing(odb, oids: list[str]) -> dict[Key, dict[str, str]]:
    """Datasets in the remote's directory objects ``oids``: the most complete version of each.

    A directory object lists one experiment's ``data/raw/<experiment>`` as pushed at one
    time; each dataset's experiment is read from its ``plan.json``. Several pushes of one
    experiment leave several objects: the one holding the most files of a dataset wins (a
    sweep only ever adds cells).
    """
    found: dict[Key, dict[str, str]] = {}
    for oid in oids:
        by_dataset: dict[tuple[str, str], dict[str, str]] = {}
        for entry in _dir_listing(odb, oid):
            parts = entry["relpath"].split("/", 2)
            if len(parts) == 3:
                by_dataset.setdefault((parts[0], parts[1]), {})[parts[2]] = entry["md5"]
        for (host_id, profile), files in by_dataset.items():
            # The current session's plan, else a closed one's (a dataset closed and not
            # measured since): any names the experiment.
            plan_file = next((f for f in files if f == PLAN_FILE or (
                f.startswith(f"{SESSIONS_DIR}/") and f.endswith(f"/{PLAN_FILE}"))), None)
            if plan_file is None:
                continue
            try:
                plan = json.loads(odb.fs.cat_file(odb.oid_to_path(files[plan_file])))
            except (FileNotFoundError, ValueError):
                continue  # not pushed, or not a dataset of this study: nothing to take
            key = (plan.get("experiment"), host_id, profile)
            if key[0] in registry.REGISTRY and len(files) > len(found.get(key, {})):
                found[key] = files
    return found


def lock_oids(clone: Path) -> list[str]:
    """The directory objects the clone's ``dvc.lock`` names for each experiment's raw data."""
    lock_file = clone / "dvc.lock"
    try:
        lock = yaml.safe_load(lock_file.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise DataError(f"{lock_file}: unreadable ({exc})") from None
    oids = []
    for name in registry.REGISTRY:
        for out in (lock.get("stages", {}).get(name) or {}).get("outs", []):
            if out.get("path") == f"data/raw/{name}" and out.get("md5", "").endswith(".dir"):
                oids.append(out["md5"])
    if not oids:
        raise DataError(f"{lock_file}: names no measured data (no data/raw/<experiment> output); "
                        "the colleague commits dvc.lock after `make study`")
    return oids
