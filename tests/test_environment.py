"""pyproject.toml, the lock of every supported Python and environment.yml name the same set."""
from __future__ import annotations

import re
import subprocess
import sys

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own dependency tomli is the same parser
    import tomli as tomllib

import pytest
import yaml
from dry_runs import LOCKS, lock_version, oldest_micro
from packaging.specifiers import SpecifierSet

from rtstudy import paths


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.lower())


def pyproject() -> dict:
    return tomllib.loads((paths.root() / "pyproject.toml").read_text())["project"]


def pyproject_deps() -> dict[str, str]:
    return {norm(re.split(r"[=<>!~ \[]", d)[0]): d for d in pyproject()["dependencies"]}


def pins(lock) -> dict[str, str]:
    """``{name: version}`` of a lock; a requirement's hashes and comments follow it indented."""
    found = {}
    for line in lock.read_text().splitlines():
        if not line.strip() or line[0] in " \t#":
            continue
        requirement = line.removesuffix("\\").strip()
        name, _, version = requirement.partition("==")
        assert version and not re.search(r"[<>=!~;,* ]", version), \
            f"{lock.name}: {requirement!r} is not an exact pin"
        found[norm(name)] = version
    return found


def conda() -> tuple[str, dict[str, str]]:
    """environment.yml's Python (``3.11``) and its pip pins."""
    env = yaml.safe_load((paths.root() / "environment.yml").read_text())
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python="))
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    pip_pins = {}
    for item in pip:
        if item.startswith("-e"):
            continue
        name, _, version = item.partition("==")
        pip_pins[norm(name)] = version
    return python.removeprefix("python="), pip_pins


def test_there_is_one_lock_per_python_that_pyproject_allows():
    allowed = SpecifierSet(pyproject()["requires-python"])
    versions = {f"3.{minor}" for minor in range(30) if f"3.{minor}.0" in allowed}
    assert {lock_version(lock) for lock in LOCKS} == versions, \
        f"requires-python {allowed} allows {sorted(versions)}; requirements/ has {[l.name for l in LOCKS]}"


@pytest.mark.parametrize("lock", LOCKS, ids=lock_version)
def test_every_dependency_is_locked_exactly(lock):
    locked = pins(lock)
    missing = sorted(set(pyproject_deps()) - set(locked))
    assert not missing, f"in pyproject.toml but not in {lock.name}: {missing}; run `make lock-all`"
    assert locked["holoscan-cu12"] == "4.6.0"


def test_environment_yml_lists_the_same_set_at_the_versions_of_its_pythons_lock():
    python, pip_pins = conda()
    lock = paths.root() / "requirements" / f"py{python}.lock"
    assert lock in LOCKS, f"environment.yml asks for python={python}, which has no lock"
    locked = pins(lock)
    assert set(pip_pins) == set(pyproject_deps()), \
        "environment.yml and pyproject.toml name different packages"
    drift = {n: (v, locked[n]) for n, v in pip_pins.items() if v != locked[n]}
    assert not drift, f"environment.yml versions differ from {lock.name}: {drift}"


def test_setup_is_up_to_date_so_a_second_call_does_not_reinstall():
    # `make -q` exits 0 only if the target needs no rebuild. The venv and the
    # Python are the ones running this test, whichever they are.
    proc = subprocess.run(["make", "-q", f"PYTHON={sys.executable}", f"VENV={sys.prefix}",
                           f"{sys.prefix}/.rtstudy-installed"], cwd=paths.root())
    assert proc.returncode == 0, "make would reinstall the venv although nothing changed"


def test_every_lock_has_its_oldest_micro_version():
    assert set(oldest_micro()) == {lock_version(lock) for lock in LOCKS}


def test_a_python_older_than_its_lock_allows_is_refused_at_once(tmp_path):
    """One sentence naming the version needed, before anything is installed."""
    fake = tmp_path / "python3"
    # A Python 3.11.1: this interpreter, reporting that version to the Makefile's probes.
    fake.write_text(f"#!{sys.executable}\nimport sys\n"
                    "sys.version_info = (3, 11, 1, 'final', 0)\nexec(sys.argv[2])\n")
    fake.chmod(0o755)
    proc = subprocess.run(["make", "-n", f"PYTHON={fake}", "VENV=" + str(tmp_path / "venv"),
                           "setup"], cwd=paths.root(), capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode != 0
    assert "is Python 3.11.1, older than 3.11.2" in proc.stderr, proc.stderr


def test_the_installer_is_locked_alone_at_one_version_with_its_hashes():
    tools = paths.root() / "requirements" / "tools.lock"
    assert list(pins(tools)) == ["uv"]  # pins() refuses anything but an exact version
    assert "--hash=sha256:" in tools.read_text()


def test_make_lock_writes_the_installer_at_the_version_it_pins_unless_told():
    proc = subprocess.run(["make", "-n", f"PYTHON={sys.executable}", "lock"], cwd=paths.root(),
                          capture_output=True, text=True, timeout=30)
    pinned = pins(paths.root() / "requirements" / "tools.lock")["uv"]
    assert f'echo "uv=={pinned}"' in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_a_new_venv_gets_the_lock_from_the_installer_asked_for(tmp_path, installer):
    venv = tmp_path / "venv"
    proc = subprocess.run(["make", "-n", f"PYTHON={sys.executable}", f"VENV={venv}",
                           f"INSTALLER={installer}", f"{venv}/.rtstudy-installed"],
                          cwd=paths.root(), capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    command = {"uv": f"{venv}/bin/uv pip install", "pip": f"{venv}/bin/python -m pip install"}
    installs = [line for line in proc.stdout.splitlines() if " -r requirements/py" in line]
    assert len(installs) == 1 and installs[0].startswith(command[installer]), proc.stdout


def test_an_unknown_installer_is_refused_at_once(tmp_path):
    proc = subprocess.run(["make", "-n", f"PYTHON={sys.executable}", "VENV=" + str(tmp_path / "v"),
                           "INSTALLER=conda", "setup"], cwd=paths.root(), capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode != 0
    assert "INSTALLER=conda" in proc.stderr and "INSTALLER=pip" in proc.stderr, proc.stderr
