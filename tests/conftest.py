"""Shared fixtures (a smoke-sized configuration, a sweep context, copies of the project, the
reference dataset pulled once, the smoke study measured once), the tiers, and the lock that
keeps measuring one test at a time. Helpers that are not fixtures are in tests/helpers.py."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from filelock import FileLock
from helpers import BIN, copy_checkout, copy_project, git_repository, project_env, publish, sh

from rtstudy import host, params, paths, sdk, sdkroot
from rtstudy.harness import SweepContext


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
        # A test outside the cells tier that measures too (a `dvc repro` of a measuring stage)
        # is marked `measures` itself; `measured_project` takes the lock while it measures.
        if item.get_closest_marker("cells"):
            item.add_marker(pytest.mark.measures)


# One timing experiment at a time on this machine, whichever worker or run asks: every test
# that measures holds this lock from its fixtures' set-up to their teardown. A file lock, so
# a worker that dies releases it.
MEASURING = FileLock(Path(tempfile.gettempdir()) / f"rtstudy-tests-measuring-{os.getuid()}.lock",
                     is_singleton=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if item.get_closest_marker("measures"):
        with MEASURING:
            return (yield)
    return (yield)


@pytest.fixture(scope="session")
def fingerprint() -> dict:
    return host.current()


@pytest.fixture()
def context(fingerprint) -> SweepContext:
    return SweepContext.from_fingerprint(fingerprint, "smoke")


@pytest.fixture()
def smoke_e3() -> dict:
    return params.stage_config("e3_overhead", "smoke")


@pytest.fixture(scope="session")
def env5() -> sdk.Environment:
    """Holoscan 5.0.0's environment, its root built here if this machine has none yet (about
    a minute; /var/lib/rtstudy/roots, shared with the study)."""
    if sdkroot.problems():
        pytest.skip("cannot build a Debian 13 root here: " + "; ".join(sdkroot.problems()))
    env = sdk.environment("5.0.0", build=True)
    env.prepare()
    return env


@pytest.fixture()
def devnull():
    with open(os.devnull, "w") as f:
        yield f


@pytest.fixture(scope="session")
def checkout_copy(tmp_path_factory):
    """A function ``name -> (dest, env)``: a fresh copy of the working tree (:func:`copy_checkout`)."""
    def make(name: str) -> tuple[Path, dict]:
        dest = tmp_path_factory.mktemp(name)
        return dest, copy_checkout(dest)
    return make


@pytest.fixture(scope="session")
def reference_project(tmp_path_factory):
    """A copy of the checkout holding the reference dataset, pulled once per run as a new user's
    ``make pull`` falls back to (``dvc pull -r reference``: offline, from data/reference/):
    ``(dest, env)``. A git repository with the tree committed and the committed dvc.lock, so
    it is a clone of the checkout with the reference data in it. Read-only: a test that changes
    it works on a copy (:func:`copy_project`)."""
    dest = tmp_path_factory.mktemp("reference")
    env = copy_checkout(dest)
    # The copy starts as a clone with nothing measured; the committed dvc.lock names the reference.
    shutil.copy2(paths.checkout() / "dvc.lock", dest / "dvc.lock")
    git_repository(dest, env, "reference")
    sh([BIN / "dvc", "pull", "-q", "-r", "reference"], dest, env, timeout=300)
    # params.yaml chooses the reference's profile, as in a fresh clone (this checkout's may not).
    profiles = {p.name for p in (dest / "data" / "raw").glob("*/*/*") if p.is_dir()}
    if len(profiles) == 1 and params.load(dest / "params.yaml")["profile"] not in profiles:
        sh([BIN / "rtstudy", "params", "use", *profiles], dest, env)
        sh(["git", "commit", "-qam", "the reference's profile"], dest, env)
    return dest, env


def shared_dir(tmp_path_factory) -> Path:
    """A folder every worker of this run sees: pytest-xdist gives each worker a basetemp of
    its own inside the run's."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def measured_project(tmp_path_factory):
    """A git repository holding a copy of the working tree after its first ``dvc repro``
    (smoke): ``(dest, env, stdout of that repro)``.

    Measured once per run, by whichever worker asks first (the others wait for it and
    share it), so the tests that need smoke data never depend on the order or the worker
    they run in. Read-only: a test that changes it works on a copy.
    """
    shared = shared_dir(tmp_path_factory)
    dest, stdout, failed = shared / "measured", shared / "measured.stdout", shared / "measured.failed"
    if not stdout.exists():
        # MEASURING before the build's own lock, always in that order: no deadlock with a
        # worker that holds MEASURING for a test of its own and then asks for this.
        with MEASURING, FileLock(shared / "measured.lock"):
            if not stdout.exists() and not failed.exists():
                dest.mkdir()
                env = copy_checkout(dest)
                git_repository(dest, env)
                sh([BIN / "rtstudy", "params", "use", "smoke"], dest, env, timeout=120)
                proc = subprocess.run([str(BIN / "dvc"), "repro"], cwd=dest, env=env,
                                      capture_output=True, text=True, timeout=900)
                done, text = ((stdout, proc.stdout) if proc.returncode == 0 else
                              (failed, f"dvc repro failed:\n{proc.stdout}\n{proc.stderr}"))
                # Whole or not at all: the other worker looks for the file without the lock.
                done.with_suffix(".part").write_text(text)
                done.with_suffix(".part").rename(done)
    assert not failed.exists(), failed.read_text()
    return dest, project_env(dest), stdout.read_text()


@pytest.fixture(scope="module")
def origin(measured_project, tmp_path_factory):
    """A copy of the measured project with a temporary default remote, its data pushed:
    ``(dest, env, remote name, remote folder)``. One per module: tests/test_sharing.py adds
    a second host's dataset to it."""
    src, _, _ = measured_project
    base = tmp_path_factory.mktemp("sharing")
    dest, remote = base / "origin", base / "remote"
    env = copy_project(src, dest)
    name = sh([BIN / "dvc", "remote", "default"], dest, env).stdout.strip()
    # --local: .dvc/config.local, which git ignores: the committed default stays as it is.
    sh([BIN / "dvc", "remote", "modify", "--local", name, "url", remote], dest, env)
    publish(dest, env, "measured on this host")
    return dest, env, name, remote
