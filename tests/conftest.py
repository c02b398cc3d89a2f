"""Shared fixtures: a smoke-sized configuration, a sweep context, and a copy of the project."""
from __future__ import annotations

import os
import signal
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from rtstudy import host, params, paths
from rtstudy.harness import SweepContext

BIN = Path(sys.executable).parent

# Outputs of the pipeline: a copy of the project starts without them, as a fresh clone does.
OUTPUTS = ("data/raw/", "executed/", "report/")


# The tiers (pyproject.toml's markers): every test of these modules is in that tier; a test
# may also be marked itself (`network`). `make test-fast` runs the rest, pure logic, between
# two edits; `make test` runs every tier.
TIERS = {
    "cells": ("experiments/", "test_harness.py", "test_drift.py", "test_data.py", "test_sdk.py",
              "test_sdk_35.py", "test_sdk_e1_e3.py", "test_robustness.py", "test_shield.py"),
    "pipeline": ("test_pipeline.py", "test_sharing.py", "test_import.py", "test_report.py",
                 "test_sessions.py", "test_schema.py", "test_explore.py", "test_verdicts.py"),
    "server": ("test_ssh_remote.py", "test_lab.py"),
}
# Tests of an otherwise fast module that start a fresh interpreter per module or ask apt.
SLOW_TESTS = ("test_every_module_imports_on_its_own", "test_the_debian_names_exist")


def pytest_collection_modifyitems(items) -> None:
    for item in items:
        where = item.path.relative_to(Path(__file__).parent).as_posix()
        for tier, modules in TIERS.items():
            if any(where == m or (m.endswith("/") and where.startswith(m)) for m in modules):
                item.add_marker(getattr(pytest.mark, tier))
        if item.name.startswith(SLOW_TESTS):
            item.add_marker(pytest.mark.pipeline)


@pytest.fixture(scope="session")
def fingerprint() -> dict:
    return host.current()


@pytest.fixture()
def context(fingerprint) -> SweepContext:
    return SweepContext.from_fingerprint(fingerprint, "smoke")


@pytest.fixture()
def smoke_e3() -> dict:
    return params.stage_config("e3_overhead", "smoke")


def require_policy(fp: dict, name: str) -> None:
    """Skip unless this host really allows ``name`` (probed by the fingerprint)."""
    if fp["realtime"].get(name) != "ok":
        pytest.skip(f"{name} not allowed here ({fp['realtime'].get(name)}); "
                    "run as root to test real-time cells")


@pytest.fixture()
def devnull():
    with open(os.devnull, "w") as f:
        yield f


def copy_checkout(dest: Path) -> dict:
    """Copy the working tree's files (tracked and untracked, not ignored) to ``dest``.

    Pipeline outputs and ``dvc.lock`` are left out, so ``dest`` looks like a
    fresh clone of the working tree.

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
        if (root / rel).is_file() and not rel.startswith(OUTPUTS):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / rel, dest / rel)
    (dest / "dvc.lock").unlink(missing_ok=True)
    env = dict(os.environ, RTSTUDY_ROOT=str(dest), PATH=f"{BIN}:{os.environ['PATH']}",
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@localhost", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@localhost")
    # A plain `dvc repro`, as a user runs it: the pipeline names its own session.
    env.pop("RTSTUDY_SESSION", None)
    return env


@pytest.fixture(scope="session")
def checkout_copy(tmp_path_factory):
    """A function ``name -> (dest, env)``: a fresh copy of the working tree (:func:`copy_checkout`)."""
    def make(name: str) -> tuple[Path, dict]:
        dest = tmp_path_factory.mktemp(name)
        return dest, copy_checkout(dest)
    return make


@pytest.fixture(scope="session")
def project(checkout_copy):
    """A git repository holding a copy of the working tree, smoke profile, not yet measured.

    Session-scoped: tests/test_pipeline.py measures it with ``dvc repro`` and
    tests/test_sharing.py reuses that data instead of measuring again. Tests
    that must not change what others see work on their own copy of it.
    """
    dest, env = checkout_copy("project")
    for args in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "copy"],
                 [str(BIN / "rtstudy"), "params", "use", "smoke"]):
        subprocess.run(args, cwd=dest, env=env, capture_output=True, check=True, timeout=120)
    return dest, env


@pytest.fixture(scope="session")
def measured_project(project):
    """``project`` after its first ``dvc repro`` (smoke): ``(dest, env, stdout of that repro)``.

    Measured once per session, whichever test asks first, so the tests that
    need smoke data never depend on the order they run in.
    """
    dest, env = project
    proc = subprocess.run([str(BIN / "dvc"), "repro"], cwd=dest, env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, f"dvc repro failed:\n{proc.stdout}\n{proc.stderr}"
    return dest, env, proc.stdout


def default_signals() -> None:
    """In a child before exec: SIGINT and SIGQUIT handled as in a terminal's foreground job.

    A shell that runs the tests in the background (``make test &``, nohup) ignores both,
    and its children inherit that; an interrupt test would then interrupt nothing.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def probe_sdk(env, expressions: str) -> list[str]:
    """What ``print(expressions)`` prints inside SDK environment ``env`` (:mod:`rtstudy.sdk`),
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
    import json

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
