"""`rtstudy data import`: a colleague's datasets beside ours, from a folder, a git repository or
a DVC remote, checked first, each import tracked by its own .dvc file.

"Theirs" is the smoke study the run measures once on this host, copied and pushed to a
temporary folder remote (conftest.py's ``origin``); "ours" is a fresh copy of
the checkout holding the reference dataset (another host, profile ``default``), pulled offline.
The exchange between two hosts over a real SSH server is in tests/test_ssh_remote.py.
"""
from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from rtstudy import data, paths
from rtstudy.machine import host
from rtstudy.measure import integrity
from helpers import BIN, copy_project, files, sh

pytestmark = pytest.mark.pipeline

# Files of an import's .dvc that record its source.
META_KEYS = {"imported_by", "imported_utc", "source", "datasets"}


@pytest.fixture()
def ours(reference_project, tmp_path):
    """A copy of the checkout holding the reference dataset (conftest.py's), the test's own:
    imports change it."""
    src, _ = reference_project
    dest = tmp_path / "ours"
    return dest, copy_project(src, dest)


def rtstudy_import(dest: Path, env: dict, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "rtstudy"), "data", "import", *map(str, args)], cwd=dest,
                          env=env, capture_output=True, text=True, timeout=600)


def datasets_of(raw: Path) -> dict[tuple, dict[str, str]]:
    """``(experiment, host, profile)`` → {file in the dataset folder: md5} under ``raw``."""
    out = {}
    for plan in raw.glob("*/*/*/plan.json"):
        folder = plan.parent
        out[(folder.parent.parent.name, folder.parent.name, folder.name)] = {
            str(p.relative_to(folder)): hashlib.md5(p.read_bytes()).hexdigest()
            for p in folder.rglob("*") if p.is_file()}
    return out


def the_import(dest: Path) -> tuple[Path, dict]:
    """The one import under ``dest``'s data/imported/: its folder and its .dvc record."""
    (dvc_file,) = (dest / "data" / "imported").glob("*.dvc")
    return dvc_file.with_suffix(""), yaml.safe_load(dvc_file.read_text())


def test_a_folder_import_adds_the_colleagues_hosts_and_leaves_ours_alone(ours, origin):
    dest, env = ours
    src = origin[0]
    raw_before, lock_before = files(dest / "data" / "raw"), (dest / "dvc.lock").read_text()
    out = rtstudy_import(dest, env, src)
    assert out.returncode == 0, out.stderr
    folder, record = the_import(dest)
    # Every dataset of theirs arrived whole, byte for byte, and is named in the record.
    theirs = datasets_of(src / "data" / "raw")
    assert datasets_of(folder) == theirs
    assert sorted(record["meta"]["datasets"]) == sorted("/".join(k) for k in theirs)
    assert META_KEYS <= record["meta"].keys()
    head = sh(["git", "rev-parse", "HEAD"], src, env).stdout.strip()
    assert record["meta"]["source"] == {"kind": "folder", "where": str(src), "rev": head,
                                        "remote": None}
    # Ours untouched: no data file, nor dvc.lock (importing is not measuring).
    assert files(dest / "data" / "raw") == raw_before
    assert (dest / "dvc.lock").read_text() == lock_before
    # Git sees only new files: the import's .dvc and its .gitignore entry.
    status = sh(["git", "status", "--porcelain", "--untracked-files=all"], dest, env).stdout
    assert {line[3:] for line in status.splitlines()} == {
        f"data/imported/{folder.name}.dvc", "data/imported/.gitignore"}, status
    # The data API finds them, labelled with where they came from, and loads them.
    hosts = data.hosts("smoke", root=dest / "data")
    assert set(hosts["host_id"]) == {k[1] for k in theirs if k[2] == "smoke"}
    assert set(hosts["source"]) == {f"imported: {folder.name}"}
    assert hosts["label"].str.contains(f"imported: {folder.name}").all()
    e3 = data.load("e3_overhead", "smoke", root=dest / "data")
    assert not e3[data.tables("e3_overhead")[0]].empty
    # Ours are still there, from this checkout.
    assert set(data.hosts("default", root=dest / "data")["source"]) == {data.THIS_CHECKOUT}


def test_importing_again_under_another_name_finds_nothing_new(ours, origin):
    dest, env = ours
    assert rtstudy_import(dest, env, origin[0]).returncode == 0
    again = rtstudy_import(dest, env, origin[0], "--name", "second")
    assert again.returncode == 0, again.stderr  # a no-op is no error
    assert "nothing new" in again.stdout and "already here" in again.stdout
    assert not (dest / "data" / "imported" / "second").exists()
    # Under its own name, it is refreshed in place.
    folder, _ = the_import(dest)
    refreshed = rtstudy_import(dest, env, origin[0], "--name", folder.name)
    assert refreshed.returncode == 0, refreshed.stderr
    assert datasets_of(folder) == datasets_of(origin[0] / "data" / "raw")


def test_a_damaged_source_imports_nothing_and_names_the_file(ours, origin, tmp_path):
    dest, env = ours
    copy = tmp_path / "theirs"
    shutil.copytree(origin[0] / "data" / "raw", copy)
    victim = sorted(copy.glob("e3_overhead/*/smoke/*/samples.parquet"))[0]
    victim.write_bytes(victim.read_bytes()[:100])
    out = rtstudy_import(dest, env, copy)
    assert out.returncode == 2
    # The source's own file is named (the staged copy is gone), with the colleague's fix.
    assert "nothing imported" in out.stderr and str(victim) in out.stderr, out.stderr
    assert "fresh copy" in out.stderr and "re-run its stage" not in out.stderr
    assert sorted(p.name for p in (dest / "data" / "imported").iterdir()) == ["README.md"]


def test_a_source_with_an_edited_sidecar_or_a_missing_cell_imports_nothing(ours, origin,
                                                                           tmp_path):
    """The import checks the seal the harness wrote: a number edited in a sidecar (which E2, E4
    and E5 read) or a cell folder gone is named, and nothing is imported."""
    dest, env = ours
    copy = tmp_path / "theirs"
    shutil.copytree(origin[0] / "data" / "raw", copy)
    edited = sorted(copy.glob("e4_host/*/smoke/*/cell.json"))[0]
    edited.write_text(edited.read_text().replace('"profile": "smoke"', '"profile":  "smoke"'))
    gone = sorted(p.parent for p in copy.glob("e3_overhead/*/smoke/*/cell.json"))[0]
    shutil.rmtree(gone)
    out = rtstudy_import(dest, env, copy)
    assert out.returncode == 2
    assert f"{edited}: sha256 differs from the one its seal recorded" in out.stderr, out.stderr
    assert re.search(rf"{gone.name}[^:]*: cell missing \(its seal records it", out.stderr), \
        out.stderr
    assert sorted(p.name for p in (dest / "data" / "imported").iterdir()) == ["README.md"]


def _as_host(raw: Path, dest: Path, salt: str, sidecars: bool = True) -> tuple[Path, str]:
    """A copy of the datasets under ``raw`` as another machine of the same name measured them:
    its fingerprint changed by ``salt``, so its host id is another, and every record of the
    copy saying so, sealed as that machine's harness would have (unless ``sidecars`` is False:
    then only the folders are renamed to that id). The copy and the new host id."""
    # The datasets of the host that measured in the study's venv (not its SDK roots' hosts).
    fp = yaml.safe_load((raw.parent / "host" / "fingerprint.json").read_text())
    old_id = fp.pop("host_id")
    fp["cpu"]["model"] += f" ({salt})"
    new_id = host.host_id(fp)
    for folder in raw.glob(f"*/{old_id}"):
        shutil.copytree(folder, dest / folder.parent.name / new_id)
    if not sidecars:
        return dest, new_id
    for record in [*dest.rglob("cell.json"), *dest.rglob("plan.json")]:
        record.write_text(record.read_text().replace(f'"{old_id}"', f'"{new_id}"'))
    for record in dest.rglob("host.json"):
        record.write_text(host.canonical({"host_id": new_id, **fp}))
    for seal in dest.rglob(paths.SEAL_FILE):
        integrity.seal(seal.parent, integrity.data_files(seal.parent))
    return dest, new_id


def test_two_colleagues_whose_machines_share_a_hostname_are_both_kept(ours, origin, tmp_path):
    """Every reference VM is called `vm`: the second is no refresh of the first."""
    dest, env = ours
    raw = origin[0] / "data" / "raw"
    first, a = _as_host(raw, tmp_path / "a" / "raw", "a")
    second, b = _as_host(raw, tmp_path / "b" / "raw", "b")
    assert a.split("-")[0] == b.split("-")[0] and a != b
    assert rtstudy_import(dest, env, first.parent).returncode == 0
    out = rtstudy_import(dest, env, second.parent)
    assert out.returncode == 0, out.stderr
    imported = dest / "data" / "imported"
    records = {p.stem: yaml.safe_load(p.read_text())["meta"] for p in imported.glob("*.dvc")}
    assert len(records) == 2, records.keys()
    assert sorted(r["source"]["where"] for r in records.values()) == [str(first.parent),
                                                                      str(second.parent)]
    hosts = set(data.hosts("smoke", root=dest / "data")["host_id"])
    assert {a, b} <= hosts
    # Under a name given by hand, another source adds to that import: both are on record.
    third, c = _as_host(raw, tmp_path / "c" / "raw", "c")
    name = next(n for n, r in records.items() if r["source"]["where"] == str(first.parent))
    assert rtstudy_import(dest, env, third.parent, "--name", name).returncode == 0
    meta = yaml.safe_load((imported / f"{name}.dvc").read_text())["meta"]
    assert [r["where"] for r in meta["sources"]] == [str(first.parent), str(third.parent)]
    assert {a, c} <= set(
        data.hosts("smoke", root=dest / "data")["host_id"])


def test_a_dataset_filed_under_a_host_that_did_not_measure_it_is_refused(ours, origin, tmp_path):
    """A folder renamed to another host id (say this one's) would merge into that host."""
    dest, env = ours
    raw = origin[0] / "data" / "raw"
    moved, d = _as_host(raw, tmp_path / "moved" / "raw", "d", sidecars=False)
    out = rtstudy_import(dest, env, moved.parent)
    assert out.returncode == 2
    # Its plan, its fingerprint and every cell say which host measured it.
    for words in (f"but the dataset is filed under {d}", f"but filed under {d}"):
        assert words in out.stderr, out.stderr
    assert str(moved) in out.stderr and "fresh copy" in out.stderr
    assert sorted(p.name for p in (dest / "data" / "imported").iterdir()) == ["README.md"]


def test_a_dvc_remote_alone_is_enough(ours, origin):
    """A folder remote holding what the colleague pushed: its directory listings say what is there."""
    dest, env = ours
    src, _, _, remote = origin
    out = rtstudy_import(dest, env, remote)
    assert out.returncode == 0, out.stderr
    folder, record = the_import(dest)
    assert datasets_of(folder) == datasets_of(src / "data" / "raw")
    assert record["meta"]["source"]["kind"] == "remote"


def test_a_git_repository_names_the_data_and_a_remote_of_ours_serves_it(ours, origin, tmp_path):
    dest, env = ours
    src, _, _, remote = origin
    repo = tmp_path / "their-repo"  # a clone: their dvc.lock, none of their data
    sh(["git", "clone", "-q", src, repo], tmp_path, env)
    assert not (repo / "data" / "raw").exists()
    sh([BIN / "dvc", "remote", "add", "--local", "shared", remote], dest, env)
    out = rtstudy_import(dest, env, repo, "--remote", "shared")
    assert out.returncode == 0, out.stderr
    folder, record = the_import(dest)
    assert datasets_of(folder) == datasets_of(src / "data" / "raw")
    head = sh(["git", "rev-parse", "HEAD"], src, env).stdout.strip()
    assert record["meta"]["source"] == {"kind": "git", "where": str(repo), "rev": head,
                                        "remote": "shared"}
    # A remote name this checkout lacks is refused before anything is fetched.
    bad = rtstudy_import(dest, env, repo, "--remote", "nosuch", "--name", "x")
    assert bad.returncode == 2 and "no DVC remote of that name" in bad.stderr


def test_a_source_that_is_nothing_says_what_it_expected(ours, tmp_path):
    dest, env = ours
    empty = tmp_path / "empty"
    empty.mkdir()
    out = rtstudy_import(dest, env, empty)
    assert out.returncode == 2 and "holds no rtstudy dataset" in out.stderr
    out = rtstudy_import(dest, env, "nosuchremote")
    assert out.returncode == 2 and "remote:NAME" in out.stderr
    out = rtstudy_import(dest, env, "remote:nosuchremote")
    assert out.returncode == 2 and "no DVC remote 'nosuchremote'" in out.stderr
    out = rtstudy_import(dest, env, empty, "--name", "../escape")
    assert out.returncode == 2 and "--name" in out.stderr
    assert sorted(p.name for p in (dest / "data" / "imported").iterdir()) == ["README.md"]
