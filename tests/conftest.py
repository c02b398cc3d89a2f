"""Shared fixtures (a smoke-sized configuration, a sweep context, copies of the project, the
reference dataset pulled once, the smoke study measured once), the tiers, and the lock that
keeps measuring one test at a time. Helpers that are not fixtures are in tests/helpers.py."""
from __future__ import annotations

import ast
import contextlib
import functools
import os
import shutil
import subprocess
import threading
from pathlib import Path

import dry_runs
import pytest
from filelock import FileLock
from helpers import (BIN, MEASURING, REFERENCE_REMOTE, copy_checkout, copy_project, git_repository,
                     project_env, publish, sh)

from rtstudy import params, paths
from rtstudy.machine import host
from rtstudy.measure.harness import SweepContext, run_sweep
from rtstudy.report import figstyle
from rtstudy.sdks import sdk, sdkroot

# The reports the tests render write their figures as PNG only: writing the PDFs (fonts
# subset and embedded) and SVGs took 35 s of the smoke report's 90 (docs/benchmarks.md), and
# 13–18 s of its 40 on 2026-12-07. tests/test_render.py checks the formats themselves, and
# .ci/smoke-study that a user's `make study` writes all three.
os.environ[figstyle.FORMATS_ENV] = "png"

# The tiers are pyproject.toml's markers, each test module marking its own (`pytestmark`), a
# test of an otherwise fast module marking itself: `make test-fast` runs the unmarked, pure
# logic, between two edits; `make test` runs every tier.
#
# The modules whose tests measure (`cells`), or must not run beside a test that does (`alone`),
# or whose fixture measures (`exclusive`: test_pipeline's smoke study, measured_project) go to
# one worker, one after another: the `exclusive` ones first, then `cells`, then `alone` ones
# (explore's notebooks, which need the reference the other worker pulls early). The other
# worker runs every other module, those that need no smoke data first, so it never waits for
# the smoke study, and those that reach the package index (`network`: pip's dry runs, started
# at collection by tests/dry_runs.py) last, when the index has mostly answered.
EXCLUSIVE_MARKS = ("exclusive", "cells", "alone")
TESTS = Path(__file__).parent


def _module(item) -> str:
    return item.path.relative_to(TESTS).as_posix()


@functools.cache
def module_marks(where: str) -> frozenset[str]:
    """The marks a test module gives all its tests (its ``pytestmark``), read from its source:
    xdist's controller, which schedules the modules, never collects them."""
    tree = ast.parse((TESTS / where).read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark"
                                                for t in node.targets):
            return frozenset(n.attr for n in ast.walk(node.value) if isinstance(n, ast.Attribute)
                             and getattr(n.value, "attr", None) == "mark")
    return frozenset()


def exclusive_rank(where: str) -> int | None:
    """Where a module goes among those run one after another on one worker, None if not."""
    marks = module_marks(where)
    return next((i for i, mark in enumerate(EXCLUSIVE_MARKS) if mark in marks), None)


def pytest_collection_modifyitems(items) -> None:
    for item in items:
        # A test outside the cells tier that measures too (a `dvc repro` of a measuring stage)
        # is marked `measures` itself; `measured_project` takes the lock while it measures.
        if item.get_closest_marker("cells"):
            item.add_marker(pytest.mark.measures)
    needs_smoke_data = {_module(i) for i in items if "measured_project" in i.fixturenames}

    def rank(item) -> tuple:
        where = _module(item)
        place = exclusive_rank(where)
        if place is not None:
            return (0, place)
        return (3, 0) if "network" in module_marks(where) else (1 + (where in needs_smoke_data), 0)

    items.sort(key=rank)  # stable: each module's tests keep their order


def pytest_collection_finish(session) -> None:
    dry_runs.start(session.items)


def pytest_xdist_make_scheduler(config, log):
    """`make test`'s scheduler (``--dist loadgroup``): a module is one unit of work, so its
    module-scoped fixtures are built once, and the exclusive modules are one unit together; the
    units go out in the order collected (above). (xdist's own loadgroup reads the groups from
    node ids that pytest 9 no longer lets it change.)"""
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Exclusive(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            where = nodeid.split("::")[0].removeprefix("tests/")
            return "exclusive" if exclusive_rank(where) is not None else where

    config.option.loadscopereorder = False
    return Exclusive(config, log)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    # Every test that measures, or must have nothing measuring beside it (`alone`), holds
    # helpers.MEASURING from its fixtures' set-up to their teardown.
    if item.get_closest_marker("measures") or item.get_closest_marker("alone"):
        with MEASURING:
            return (yield)
    return (yield)


@pytest.fixture(scope="session")
def fingerprint() -> dict:
    return host.current()


@pytest.fixture()
def context(fingerprint) -> SweepContext:
    return SweepContext.from_fingerprint(fingerprint, "smoke")


@pytest.fixture(scope="session")
def sweep(fingerprint):
    """Measure: ``sweep(cells, out, seed=1, where=None, env=None, fp=None)`` runs ``cells`` into
    ``out`` at the smoke profile on this host (``fp``: another fingerprint, an SDK
    environment's), the progress bar to /dev/null, and returns the outcomes: the one sweep call
    every measuring test shares."""
    def measure(cells, out, seed=1, where=None, env=None, fp=None):
        context = SweepContext.from_fingerprint(fp or fingerprint, "smoke", where, env)
        with open(os.devnull, "w") as devnull:
            return run_sweep(cells, out, context, seed, progress=devnull)
    return measure


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
    """A copy of the checkout holding the reference dataset, pulled once per run (by whichever
    worker asks first) as a new user's ``make pull`` falls back to (``dvc pull -r reference``:
    offline, from this checkout's data/reference/): ``(dest, env)``. A git repository with the
    tree committed and the committed dvc.lock, so it is a clone of the checkout with the
    reference data in it. Read-only: a test that changes it works on a copy (:func:`copy_project`)."""
    def build(dest: Path) -> str:
        env = copy_checkout(dest)
        # The copy starts as a clone with nothing measured; the committed dvc.lock names the reference.
        shutil.copy2(paths.checkout() / "dvc.lock", dest / "dvc.lock")
        git_repository(dest, env, "reference")
        # The copy has no data/reference/ of its own (helpers.REFERENCE_REMOTE): the checkout's.
        sh([BIN / "dvc", "remote", "modify", "--local", "reference", "url",
            paths.checkout() / REFERENCE_REMOTE], dest, env)
        sh([BIN / "dvc", "pull", "-q", "-r", "reference"], dest, env, timeout=300)
        # params.yaml chooses the reference's profile, as in a fresh clone (this checkout's may not).
        profiles = {p.name for p in (dest / "data" / "raw").glob("*/*/*") if p.is_dir()}
        if len(profiles) == 1 and params.load(dest / "params.yaml")["profile"] not in profiles:
            sh([BIN / "rtstudy", "params", "use", *profiles], dest, env)
            sh(["git", "commit", "-qam", "the reference's profile"], dest, env)
        return ""

    dest, _ = built_once(tmp_path_factory, "reference", build)
    return dest, project_env(dest)


def shared_dir(tmp_path_factory) -> Path:
    """A folder every worker of this run sees: pytest-xdist gives each worker a basetemp of
    its own inside the run's."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(tmp_path_factory, name: str, build, lock=None) -> tuple[Path, str]:
    """``(folder, text)``: ``build(folder)``'s folder and the text it returned, built once per
    run by whichever worker asks first (the others wait for it and share it) under ``lock``
    (a lock to hold while building, taken before the build's own), so no test depends on the
    order or the worker it runs in. A failed build fails every test that asks for it."""
    shared = shared_dir(tmp_path_factory)
    dest, done, failed = shared / name, shared / f"{name}.done", shared / f"{name}.failed"
    if not done.exists():
        # ``lock`` before the build's own lock, always in that order: no deadlock with a
        # worker that holds ``lock`` for a test of its own and then asks for this.
        with lock or contextlib.nullcontext(), FileLock(shared / f"{name}.lock"):
            if not done.exists() and not failed.exists():
                dest.mkdir()
                try:
                    out, text = done, build(dest)
                except Exception as e:  # noqa: BLE001 - every waiting test reports it
                    out, text = failed, f"{type(e).__name__}: {e}"
                # Whole or not at all: the other worker looks for the file without the lock.
                out.with_suffix(".part").write_text(text)
                out.with_suffix(".part").rename(out)
    assert not failed.exists(), f"building {name} failed:\n{failed.read_text()}"
    return dest, done.read_text()


class ReleasedAt:
    """A lock held from ``with`` until :meth:`release` (or the block's end, whichever first)."""

    def __init__(self, lock: FileLock):
        self.lock, self.held = lock, False

    def __enter__(self):
        self.lock.acquire()
        self.held = True
        return self

    def release(self) -> None:
        if self.held:
            self.held = False
            self.lock.release()

    def __exit__(self, *exc) -> None:
        self.release()


@pytest.fixture(scope="session")
def measured_project(tmp_path_factory):
    """A git repository holding a copy of the working tree after its first ``dvc repro``
    (smoke): ``(dest, env, stdout of that repro)``.

    Measured once per run (:func:`built_once`). The measuring lock is held until the repro
    starts the report, which measures nothing (the other worker may measure beside it).
    Read-only: a test that changes it works on a copy.
    """
    measuring = ReleasedAt(MEASURING)

    def build(dest: Path) -> str:
        env = copy_checkout(dest)  # its figures as PNG only, as every render here (above)
        git_repository(dest, env)
        sh([BIN / "rtstudy", "params", "use", "smoke"], dest, env, timeout=120)
        proc = subprocess.Popen([str(BIN / "dvc"), "repro"], cwd=dest, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        stdout, stderr = [], []
        reader = threading.Thread(target=lambda: stderr.append(proc.stderr.read()))
        reader.start()
        timer = threading.Timer(900, proc.kill)
        timer.start()
        try:
            for line in proc.stdout:
                if line.startswith("Running stage 'report'"):
                    measuring.release()
                stdout.append(line)
            proc.wait()
            reader.join()
        finally:
            timer.cancel()
        if proc.returncode != 0:
            raise AssertionError(f"dvc repro failed ({proc.returncode}):\n{''.join(stdout)}\n"
                                 f"{''.join(stderr)}")
        return "".join(stdout)

    dest, stdout = built_once(tmp_path_factory, "measured", build, lock=measuring)
    return dest, project_env(dest), stdout


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
