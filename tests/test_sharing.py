"""Sharing data with DVC: push, clone, pull, and render the report there without measuring.

The data is the smoke study the run measures once (conftest.py's ``measured_project``). It is
copied to an "origin" repository, pushed with ``make push`` to a temporary remote, cloned
with git into a folder of its own and pulled there with ``make pull``. A second host's
dataset (the first one copied under another host id) is then pushed and pulled, and the
clone renders the report without real-time rights (as ``nobody``, or as root without
CAP_SYS_NICE where nobody cannot reach the venv's interpreter): nothing may be measured, no
data file may change, and both host ids must reach the report.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import BIN, MAKE, SECTIONS, STAGES, files, make_env, publish, sh, venv_datasets

from rtstudy import paths
from rtstudy.machine import host
from rtstudy.measure import integrity

pytestmark = pytest.mark.pipeline

ROOT = os.geteuid() == 0


def host_ids(project: Path, stage: str) -> set[str]:
    """The hosts with a smoke dataset of ``stage`` measured with the study's venv (another SDK
    version's datasets, under host ids of their own, travel with them but are not counted)."""
    return {d.parent.name for d in venv_datasets(project, stage) if (d / "plan.json").is_file()}


# Without real-time rights: as nobody, or, when nobody cannot run this venv's interpreter
# (pyenv's under /root, mode 0700, say), as root without CAP_SYS_NICE. Either way with no
# rtprio limit (set by preexec_fn), so the kernel refuses every real-time policy.
AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
WITHOUT_SYS_NICE = ["setpriv", "--bounding-set", "-sys_nice", "--"]


def no_realtime_limit() -> None:
    resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))


@pytest.fixture(scope="module")
def unprivileged() -> list[str]:
    """The command prefix that drops real-time rights (empty when we are not root)."""
    if not ROOT:
        return []
    # The interpreter the venv's python links to, not the link: that is what exec needs.
    reach = subprocess.run([*AS_NOBODY, "test", "-x", os.path.realpath(sys.executable)],
                           capture_output=True, timeout=60)
    return AS_NOBODY if reach.returncode == 0 else WITHOUT_SYS_NICE


def chown(path: Path, owner: str) -> None:
    """Hand ``path`` to ``owner`` (git refuses to work in a repository owned by someone else)."""
    sh(["chown", "-R", owner, path], "/", os.environ)


@pytest.fixture(scope="module")
def clone(origin):
    """``git clone`` of the origin in a folder ``nobody`` can reach, then ``make pull``."""
    src, env, name, remote = origin
    # Not under pytest's tmp_path: that is private to root (mode 0700).
    base = Path(tempfile.mkdtemp(prefix="rtstudy-clone-"))
    try:
        dest, home = base / "clone", base / "home"
        home.mkdir()
        sh(["git", "clone", "-q", src, dest], base, env)
        sh([BIN / "dvc", "remote", "modify", "--local", name, "url", remote], dest, env)
        sh([*MAKE, "pull"], dest, make_env(env))
        os.chmod(base, 0o755)
        clone_env = {k: v for k, v in env.items()
                     if not k.startswith(("JUPYTER_", "XDG_", "MPL", "IPYTHON"))}
        clone_env.update(RTSTUDY_ROOT=str(dest), HOME=str(home), TMPDIR=str(home))
        yield dest, clone_env
    finally:
        shutil.rmtree(base, ignore_errors=True)


def render_report_unprivileged(dest: Path, env: dict, prefix: list[str]) -> str:
    """``rtstudy report`` in the clone without real-time rights; the HTML.

    Checks on the way that the kernel really refused every real-time policy to
    that user and that rendering neither added nor changed a data file.
    """
    def run(args) -> subprocess.CompletedProcess:
        return subprocess.run([*prefix, *map(str, args)], cwd=dest, env=env, capture_output=True,
                              text=True, timeout=600, preexec_fn=no_realtime_limit)

    as_nobody = prefix == AS_NOBODY
    if as_nobody:
        chown(dest.parent, "nobody:nogroup")
    try:
        probe = run([BIN / "python", "-c", "import json; from rtstudy.machine import host; "
                     "print(json.dumps(host.probe_realtime()))"])
        assert probe.returncode == 0, probe.stderr
        if ROOT:
            allowed = [k for k, v in json.loads(probe.stdout).items() if v == "ok"]
            assert not allowed, f"the report must render without real-time rights, got {allowed}"
        raw = dest / "data" / "raw"
        before = files(raw)
        out = run([BIN / "rtstudy", "report"])
        assert out.returncode == 0, f"rtstudy report failed:\n{out.stdout}\n{out.stderr}"
        assert files(raw) == before, "rendering the report changed or added data files"
    finally:
        if as_nobody:
            chown(dest.parent, "0:0")
    # Only the report notebook ran: a measuring stage's notebook would be in executed/.
    assert sorted(p.name for p in (dest / "executed").glob("*.ipynb")) == ["report.ipynb"]
    html = (dest / "report" / "report.html").read_text()
    for section in SECTIONS:
        assert section in html
    return html


def test_the_committed_default_remote_is_a_folder_outside_the_checkout(clone):
    dest, env = clone
    # --project: .dvc/config as committed, without the test's --local override.
    name = sh([BIN / "dvc", "config", "--project", "core.remote"], dest, env).stdout.strip()
    url = sh([BIN / "dvc", "config", "--project", f"remote.{name}.url"], dest, env).stdout.strip()
    assert url
    # DVC resolves a relative local remote against .dvc/.
    where = (dest / ".dvc" / url).resolve()
    assert not where.is_relative_to(dest.resolve()), where


def test_a_clone_pulls_two_hosts_datasets_and_renders_both_without_measuring(origin, clone,
                                                                             unprivileged):
    src, src_env, _, _ = origin
    dest, env = clone
    # Every data file of the origin reached the clone.
    assert files(dest / "data" / "raw").keys() == files(src / "data" / "raw").keys()
    assert not (dest / "report" / "report.html").exists()
    # The second host's dataset: this host's, as if measured shielded (another host id, which
    # its fingerprint hashes to), every record saying so, sealed as its harness would have.
    (first,) = host_ids(src, STAGES[0])
    fp = json.loads(next((src / "data" / "raw" / STAGES[0] / first).rglob("host.json")).read_text())
    del fp["host_id"]
    fp["isolation"]["shield"] = {"cpus": [1], "housekeeping": [0], "irq_default": [0],
                                 "irqs_on_shield": []}
    other = host.host_id(fp)
    for stage in STAGES:
        (first,) = host_ids(src, stage)
        copy = src / "data" / "raw" / stage / other
        shutil.copytree(src / "data" / "raw" / stage / first, copy)
        for path in copy.rglob("*.json"):
            record = json.loads(path.read_text())
            if path.name == "host.json":
                path.write_text(host.canonical({"host_id": other, **fp}))
            elif isinstance(record, dict) and "host_id" in record:
                record["host_id"] = other
                path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
        for seal in copy.rglob(paths.SEAL_FILE):
            integrity.seal(seal.parent, integrity.data_files(seal.parent))
    publish(src, src_env, "measured on a second host")

    sh(["git", "pull", "-q"], dest, env)
    sh([*MAKE, "pull"], dest, make_env(env))
    for stage in STAGES:
        assert host_ids(dest, stage) == host_ids(src, stage) and other in host_ids(dest, stage)
    html = render_report_unprivileged(dest, env, unprivileged)
    # The contract of the report: every host id that has data is printed.
    for host_id in host_ids(dest, "e3_overhead"):
        assert host_id in html, f"host {host_id} has data but is not in the report"
    # ... with its state and its verdicts side by side.
    assert "Provenance" in html
    assert "shielded at run time" in html and "untuned: no CPU isolated or shielded" in html
    assert "Each claim&#39;s verdict per host" in html or "Each claim's verdict per host" in html
