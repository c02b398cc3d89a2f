"""pyproject.toml, requirements.lock and environment.yml name the same set, at one version."""
from __future__ import annotations

import re
import subprocess
import tomllib

import yaml

from rtstudy import paths


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.lower())


def pyproject_deps() -> dict[str, str]:
    deps = tomllib.loads((paths.root() / "pyproject.toml").read_text())["project"]["dependencies"]
    return {norm(re.split(r"[=<>!~ \[]", d)[0]): d for d in deps}


def lock() -> dict[str, str]:
    pins = {}
    for line in (paths.root() / "requirements.lock").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"requirements.lock: {line!r} is not an exact pin"
            pins[norm(name)] = version
    return pins


def conda_pip() -> dict[str, str]:
    env = yaml.safe_load((paths.root() / "environment.yml").read_text())
    assert "python=3.11" in env["dependencies"]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    pins = {}
    for item in pip:
        if item.startswith("-e"):
            continue
        name, _, version = item.partition("==")
        pins[norm(name)] = version
    return pins


def test_every_dependency_is_locked_exactly():
    locked = lock()
    missing = sorted(set(pyproject_deps()) - set(locked))
    assert not missing, f"in pyproject.toml but not in requirements.lock: {missing}; run `make lock`"
    assert locked["holoscan-cu12"] == "4.6.0"


def test_environment_yml_lists_the_same_set_at_locked_versions():
    conda, locked = conda_pip(), lock()
    assert set(conda) == set(pyproject_deps()), "environment.yml and pyproject.toml name different packages"
    drift = {n: (v, locked[n]) for n, v in conda.items() if v != locked[n]}
    assert not drift, f"environment.yml versions differ from requirements.lock: {drift}"


def test_setup_is_up_to_date_so_a_second_call_does_not_reinstall():
    # `make -q` exits 0 only if the target needs no rebuild.
    proc = subprocess.run(["make", "-q", ".venv/.rtstudy-installed"], cwd=paths.root())
    assert proc.returncode == 0, "make would reinstall the venv although nothing changed"
