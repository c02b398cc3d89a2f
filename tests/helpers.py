"""Helpers the tests share (fixtures are in conftest.py): commands, copies of the project,
and what several modules check."""
from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from filelock import FileLock

from rtstudy import paths

BIN = Path(sys.executable).parent
VENV = Path(sys.prefix)
# `make push` / `make pull` run in copies of the project that have no .venv of
# their own: point the Makefile at this venv and never let it reinstall it.
MAKE = ["make", "--no-print-directory", f"VENV={VENV}", "-o", f"{VENV}/.rtstudy-installed"]
STAGES = ("e1_async_buffer", "e2_rt_threads", "e3_overhead", "e4_host")
SECTIONS = ("E1 — Does the async lock-free buffer", "E2 — Does a real-time thread",
            "E3 — What does the Holoscan scheduler cost", "E4 — Is an isolated core")
# Outputs of the pipeline: a copy of the project starts without them, as a fresh clone does.
OUTPUTS = ("data/raw/", "executed/", "report/")
# The reference dataset's remote (6,860 files, 139 MB tracked by git): only `make pull`'s
# fallback reads it, and in every copy it cost a copy, git's compression and about 40 s of
# each `dvc exp run` (which stashes the whole tree). Left out of copies; a copy that pulls
# the reference points that remote at this checkout's folder (conftest's reference_project).
REFERENCE_REMOTE = "data/reference/"


# One timing experiment at a time on this machine, whichever worker or run asks (conftest.py
# holds it around every test that measures; a test that measures in one step takes it there).
# A file lock, so a worker that dies releases it.
MEASURING = FileLock(Path(tempfile.gettempdir()) / f"rtstudy-tests-measuring-{os.getuid()}.lock",
                     is_singleton=True)


def sh(args, cwd, env, timeout=900, check=True, **kwargs) -> subprocess.CompletedProcess:
    """Run ``args`` in ``cwd``; its output captured, a failure an AssertionError with it
    (unless ``check`` is false)."""
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, **kwargs)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def git_repository(dest: Path, env: dict, message: str = "copy") -> None:
    """Make the copy at ``dest`` a git repository with everything in it committed (DVC works in
    a git repository only), as a clone would be."""
    for args in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", message]):
        sh(args, dest, env, timeout=120)


def make_env(env: dict) -> dict:
    """``env`` without an outer make's variables (`make test` runs pytest from make)."""
    return {k: v for k, v in env.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}


def with_value(data: dict, path: tuple, value) -> dict:
    """A deep copy of a parameter mapping with the key at ``path`` (its groups, in order)
    set to ``value``, the groups on the way made if missing."""
    data = copy.deepcopy(data)
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return data


def files(raw: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``raw`` with its size and modification time."""
    return {str(p.relative_to(raw)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in raw.rglob("*") if p.is_file()}


def publish(origin: Path, env: dict, message: str) -> None:
    """What a host does after measuring: record the data in dvc.lock, commit it, push the data."""
    # `dvc commit` records data/raw/ as it is now (a second host's dataset copied in, say).
    sh([BIN / "dvc", "commit", "--force", *STAGES], origin, env)
    sh(["git", "add", "-A"], origin, env)
    sh(["git", "commit", "-qm", message], origin, env)
    sh([*MAKE, "push"], origin, make_env(env))


def require_policy(fp: dict, name: str) -> None:
    """Skip unless this host really allows ``name`` (probed by the fingerprint)."""
    if fp["realtime"].get(name) != "ok":
        pytest.skip(f"{name} not allowed here ({fp['realtime'].get(name)}); "
                    "run as root to test real-time cells")


def copy_checkout(dest: Path) -> dict:
    """Copy the working tree's files (tracked and untracked, not ignored) to ``dest``.

    Pipeline outputs and ``dvc.lock`` are left out, so ``dest`` looks like a
    fresh clone of the working tree; so is the reference dataset's remote
    (:data:`REFERENCE_REMOTE`).

    Parameters
    ----------
    dest : Path
        An empty directory.

    Returns
    -------
    dict
        An environment that points the installed package at ``dest``
        (``RTSTUDY_ROOT``), puts the venv first on ``PATH`` and gives git an
        identity for commits.
    """
    root = paths.root()
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                           cwd=root, capture_output=True, text=True, check=True,
                           timeout=60).stdout.split("\n")
    for rel in filter(None, files):
        if (root / rel).is_file() and not rel.startswith((*OUTPUTS, REFERENCE_REMOTE)):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / rel, dest / rel)
    (dest / "dvc.lock").unlink(missing_ok=True)
    return project_env(dest)


def project_env(dest: Path) -> dict:
    """The environment of a command run in the copy of the project at ``dest``: the installed
    package pointed at it (``RTSTUDY_ROOT``), the venv first on ``PATH``, a git identity."""
    env = dict(os.environ, RTSTUDY_ROOT=str(dest), PATH=f"{BIN}:{os.environ['PATH']}",
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@localhost", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@localhost")
    # A plain `dvc repro`, as a user runs it: the pipeline names its own session.
    env.pop("RTSTUDY_SESSION", None)
    return env


def copy_project(src: Path, dest: Path) -> dict:
    """A copy of the (measured) project ``src`` at ``dest``, to change; its environment.

    ``.dvc/tmp`` stays behind: it holds locks and a state database tied to the original's inodes.
    The files of DVC's cache are hard links (the reference's is 139 MB): DVC never writes a
    cache file in place (it adds a new file, and reads or removes the old), and no test does.
    """
    cache = src / ".dvc" / "cache"

    def link_or_copy(a: str, b: str) -> None:
        if Path(a).is_relative_to(cache):
            os.link(a, b)
        else:
            shutil.copy2(a, b)

    shutil.copytree(src, dest, symlinks=True, copy_function=link_or_copy,
                    ignore=lambda d, names: ["tmp"] if Path(d) == src / ".dvc" else [])
    return project_env(dest)


def default_signals() -> None:
    """In a child before exec: SIGINT and SIGQUIT handled as in a terminal's foreground job.

    A shell that runs the tests in the background (``make test &``, nohup) ignores both,
    and its children inherit that; an interrupt test would then interrupt nothing.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def probe_sdk(env, expressions: str) -> list[str]:
    """What ``print(expressions)`` prints inside SDK environment ``env`` (:mod:`rtstudy.sdks.sdk`),
    split into words, after the import every cell's app does (libcudart, then holoscan).

    The pid of the process the caller started is checked to be the printer's own
    (``os.getpid()`` must be among ``expressions`` last): the harness's thread sampling
    and kill must reach the app itself, not a wrapper.
    """
    code = f"import os, rtstudy; from rtstudy.apps import child; import holoscan; print({expressions})"
    proc = subprocess.Popen(env.command(["-c", code]), stdout=subprocess.PIPE, text=True)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    words = out.split()
    assert int(words[-1]) == proc.pid
    return words[:-1]


def venv_datasets(project: Path, stage: str, profile: str = "smoke") -> list[Path]:
    """``stage``'s dataset folders measured with the study's own venv (its Holoscan 4.x): the
    datasets of other SDK environments (their host.json has an ``sdk`` record) left out."""
    return [d for d in sorted((project / "data" / "raw" / stage).glob(f"*/{profile}"))
            if (d / paths.HOST_FILE).is_file()
            and "sdk" not in json.loads((d / paths.HOST_FILE).read_text())]


def free_port() -> int:
    """A TCP port on 127.0.0.1 free right now (a server started next may still lose it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def end_group(proc: subprocess.Popen) -> None:
    """End a server started with ``start_new_session=True`` and everything it started (its
    process group): SIGTERM, 30 s to go, then SIGKILL; a group already gone is no error."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def wait_for_lab(proc: subprocess.Popen, log: Path, port: int, token: str,
                 timeout_s: float) -> None:
    """Wait until the JupyterLab that ``proc`` started (``make lab``, its output in ``log``)
    answers on ``port`` with ``token``; fail the test, with the log, if ``proc`` exits or
    ``timeout_s`` seconds pass first."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            pytest.fail(f"make lab exited ({proc.returncode}):\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}",
                                        timeout=5):
                return
        except OSError:
            pass  # not listening, or not answering yet (urllib's errors are OSErrors)
        if time.monotonic() > deadline:
            pytest.fail(f"JupyterLab did not answer within {timeout_s} s:\n{log.read_text()}")
        time.sleep(0.5)


# Where the tests that look at a page in Chromium keep their screenshot: a temporary folder,
# or the folder this variable names (`make screenshots` names docs/, whose pictures those tests
# then regenerate); a test never rewrites a tracked file otherwise.
SCREENSHOTS_ENV = "RTSTUDY_SCREENSHOTS"


def screenshot_path(name: str, tmp_path: Path) -> Path:
    """Where a test writes its screenshot ``name`` (see :data:`SCREENSHOTS_ENV`)."""
    folder = os.environ.get(SCREENSHOTS_ENV)
    return (Path(folder) if folder else tmp_path) / name
