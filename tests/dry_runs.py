"""pip's dry-run installs of the locks (tests/test_lock_installs.py), started as soon as a run
has collected their tests, by whichever worker gets there first, and read by the tests, which
run last: each mostly waits on the package index, so the workers measure and render meanwhile
instead of waiting with it (docs/benchmarks.md, "Tests")."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from rtstudy import paths

LOCKS = sorted((paths.root() / "requirements").glob("py*.lock"))
TEST = "test_each_lock_installs_on_the_oldest_python_of_its_minor"
PLATFORMS = [f"--platform=manylinux_2_{g}_x86_64" for g in (35, 34, 28, 17)] + \
    ["--platform=manylinux2014_x86_64", "--platform=linux_x86_64", "--platform=any"]
WAIT_S = 900  # a dry run's status is waited for that long at most (pip's own limit: 600 s)

# The child that runs one pip: its stderr, then its exit status, renamed into place last, so a
# reader sees a status only once pip is done.
CHILD = """
import subprocess, sys
from pathlib import Path
out = Path(sys.argv[1])
try:
    p = subprocess.run(sys.argv[2:], capture_output=True, text=True, timeout=600)
    status, err = str(p.returncode), p.stderr
except subprocess.TimeoutExpired:
    status, err = "timeout", "pip's dry run took over 600 s"
(out / "stderr").write_text(err)
(out / "status.part").write_text(status)
(out / "status.part").rename(out / "status")
"""


def lock_version(lock) -> str:
    """``3.12`` for ``requirements/py3.12.lock``."""
    return lock.stem.removeprefix("py")


def oldest_micro() -> dict[str, str]:
    """The Makefile's OLDEST_MICRO: minor → the oldest micro version its lock must install on."""
    line = re.search(r"^OLDEST_MICRO := (.+)$", (paths.root() / "Makefile").read_text(), re.M)
    return {".".join(v.split(".")[:2]): v for v in line.group(1).split()}


def runner(minor: str) -> str | None:
    """A Python of ``minor`` to run pip with (pip judges a package's Requires-Python by the
    interpreter it runs in, whatever --python-version says): this one, or pyenv's."""
    if "%d.%d" % sys.version_info[:2] == minor:
        return sys.executable
    found = sorted(Path.home().glob(f".pyenv/versions/{minor}.*/bin/python{minor}"))
    return str(found[-1]) if found else None


# The run: its workers share pytest-xdist's id of it; a run without workers is this process.
RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID") or uuid.uuid4().hex


def folder() -> Path:
    """Where this run's dry runs write (the workers of one run share it)."""
    return Path(tempfile.gettempdir()) / f"rtstudy-tests-dry-runs-{os.getuid()}-{RUN}"


def start(items) -> None:
    """Start the dry run of each lock whose test is among ``items`` (a run's collected tests),
    unless another worker of the run has started them."""
    locks = [item.callspec.params["lock"] for item in items
             if getattr(item, "originalname", None) == TEST]
    if not locks:
        return
    try:
        folder().mkdir()
    except FileExistsError:
        return
    for lock in locks:
        minor = lock_version(lock)
        python = runner(minor)
        if python is None:
            continue
        out = folder() / lock.stem
        out.mkdir()
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(out), python, "-m", "pip", "install", "--quiet",
             "--dry-run", "--no-deps", "--ignore-installed", "--disable-pip-version-check",
             f"--python-version={oldest_micro()[minor]}", "--implementation=cp", *PLATFORMS,
             "--target", str(out / "target"), "-r", str(lock)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def result(lock) -> tuple[str, str]:
    """``lock``'s dry run once done: its exit status (``0`` when it installs) and stderr; its
    folder is removed after."""
    out = folder() / lock.stem
    deadline = time.monotonic() + WAIT_S
    while not (out / "status").exists():
        assert out.is_dir(), f"{lock.name}'s dry run was never started (tests/conftest.py)"
        assert time.monotonic() < deadline, f"{lock.name}'s dry run gave no status in {WAIT_S} s"
        time.sleep(0.5)
    found = (out / "status").read_text(), (out / "stderr").read_text()
    shutil.rmtree(out, ignore_errors=True)
    try:
        folder().rmdir()  # the last lock's test leaves nothing behind
    except OSError:
        pass
    return found
