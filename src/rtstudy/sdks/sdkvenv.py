"""A venv of its own for a Holoscan SDK version whose wheels need another Python than the study's.

Holoscan 3.5.0 (the seeds' tested version) is on PyPI as ``holoscan`` (``holoscan-cu12``
starts at 3.7.0), with ``manylinux_2_35`` wheels: it installs on the host itself, but it
cannot share the study's venv with 4.6.0. The study builds, once, a venv of the Python
its lock is made for (:func:`interpreter`), installs the hash-pinned lock
``requirements/sdk-<version>.lock`` there and runs that version's cells with it: the same
harness, the same read-back and timeouts; only the command that starts the cell's
process changes (:func:`command`). The cells import this checkout's ``rtstudy`` (and its
native module, built for that Python by :func:`native`) through ``PYTHONPATH``, so the
code measured is the code of the study's own venv.

Reproducibility: the venv's key hashes the lock and the Python version; the venv records
what it really holds (every pip package, the interpreter and its version, glibc) in
``rtstudy-venv.json``, which the SDK's fingerprint (:mod:`rtstudy.sdks.sdk`) carries into every
cell's host record. Where the venvs live: :func:`venvs_dir`, shared by every clone.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

from rtstudy import paths
from rtstudy.sdks import builds, sdkroot
from rtstudy.sdks.manifest import Manifest

MANIFEST = "rtstudy-venv.json"
STEP_TIMEOUT_S = 1800  # pip install (~330 MB) on a slow index
CHECK_TIMEOUT_S = 120  # one short Python command (an import, a version)


class VenvError(builds.BuildError):
    """The venv cannot be built or used here; the message names the fix."""


def venvs_dir() -> Path:
    """Where built venvs are kept: ``$RTSTUDY_VENVS``, else /var/lib/rtstudy/venvs.

    Beside the Debian 13 roots and outside every checkout, so that every clone on the
    machine shares one build (about 1 GB).
    """
    return Path(os.environ.get("RTSTUDY_VENVS", "/var/lib/rtstudy/venvs"))


def key(version: str, python: str) -> str:
    """12 hex digits that change whenever what the venv is built from changes."""
    recipe = json.dumps({"python": python, "lock": sdkroot.lock_file(version).read_text()},
                        sort_keys=True)
    return hashlib.sha256(recipe.encode()).hexdigest()[:12]


def venv_path(version: str, python: str) -> Path:
    """Where SDK ``version``'s venv of Python ``python`` (``X.Y``) is (or will be) built."""
    return venvs_dir() / f"holoscan-{version}-py{python}-{key(version, python)}"


def manifest(venv: Path) -> Manifest | None:
    """What a finished venv records about itself, or None if it is not (completely) built or its
    interpreter is gone (a removed Python leaves a venv that cannot start)."""
    made = sdkroot.manifest(venv, MANIFEST)
    return made if made is not None and (venv / "bin" / "python").exists() else None


def interpreter(python: str) -> str | None:
    """The Python ``X.Y`` to build the venv with: the study's own when it is that version (its
    native module is then built already), else ``pythonX.Y`` on PATH; None if there is none."""
    if ".".join(platform.python_version_tuple()[:2]) == python:
        return sys.executable
    return shutil.which(f"python{python}")


def problems(version: str, python: str) -> list[str]:
    """Why this host cannot build SDK ``version``'s venv (each with its fix); empty if it can
    or the venv is built already."""
    if manifest(venv_path(version, python)) is not None:
        return []
    found = []
    exe = interpreter(python)
    if exe is None:
        found.append(f"it needs Python {python} (its wheels and requirements/sdk-{version}.lock are "
                     f"for Python {python}), and python{python} is not on PATH: install it (Debian "
                     f"12: python{python} and python{python}-venv; elsewhere e.g. pyenv or uv "
                     f"python install {python}), or leave {version} out of params.yaml sdk")
    elif _quiet([exe, "-c", "import ensurepip, venv"]) != 0:
        found.append(f"{exe} cannot make a venv (no ensurepip): install python{python}-venv")
    home = venvs_dir()
    existing = next(p for p in (home, *home.parents) if p.exists())
    if not os.access(existing, os.W_OK):
        found.append(f"{home} cannot be written here: run as root, or set RTSTUDY_VENVS to a "
                     "folder you own")
    if not sdkroot.lock_file(version).is_file():
        found.append(f"no lock for Holoscan {version}: {sdkroot.lock_file(version)} is missing")
    return found


def build(version: str, python: str, log=None) -> Path:
    """Build SDK ``version``'s venv if it is not built yet; return its path.

    Built by :func:`rtstudy.sdks.builds.build_once`: in a temporary folder renamed when
    complete, a venv of an older recipe removed once the new one is. About 10 s with pip's
    cache, a minute or two without (the packages are ~330 MB).

    Raises
    ------
    VenvError
        The host cannot build it (see :func:`problems`) or a step failed; the build log
        (``<venv>.log``) holds each step's output.
    """
    final = venv_path(version, python)
    if manifest(final) is not None:
        return final
    found = problems(version, python)
    if found:
        raise VenvError(f"cannot build the Holoscan {version} venv: " + "; ".join(found))
    return builds.build_once(final, lambda work, out: _build(version, python, work, out),
                             f"the Holoscan {version} venv (Python {python})",
                             f"holoscan-{version}-py{python}-*", venvs_dir(), log,
                             done=lambda: manifest(final) is not None)


def _build(version: str, python: str, work: Path, out) -> None:
    py = str(work / "bin" / "python")
    _step([interpreter(python), "-m", "venv", str(work)], out, f"python{python} -m venv")
    # --no-deps: the lock is the whole set (pip check below proves it); pip itself, which
    # holoscan lists, is the venv's own installer, left out of the lock as in the study's.
    _step([py, "-m", "pip", "install", "--disable-pip-version-check", "--require-hashes",
           "--no-deps", "-r", str(sdkroot.lock_file(version))], out, f"pip install Holoscan {version}")
    _step([py, "-m", "pip", "check", "--disable-pip-version-check"], out, "pip check")
    _step([py, "-c", "from rtstudy.sdks.holo import import_holoscan; import_holoscan()"], out,
          "import holoscan", env={"PYTHONPATH": str(src())}, timeout_s=CHECK_TIMEOUT_S)
    freeze = _output([py, "-m", "pip", "freeze", "--all", "--disable-pip-version-check"])
    record = {"sdk": version, "key": key(version, python), "lock": sdkroot.lock_file(version).name,
              "pip": dict(p.split("==", 1) for p in freeze.split() if "==" in p),
              "python": _output([py, "-c", "import platform; print(platform.python_version())"]
                                ).strip(),
              "interpreter": os.path.realpath(py),
              "glibc": os.confstr("CS_GNU_LIBC_VERSION").split()[-1],
              "built_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (work / MANIFEST).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The host's environment for a step, without the caller's venv or PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, **(extra or {})}


def _step(argv: list, out, what: str, env: dict[str, str] | None = None,
          timeout_s: float = STEP_TIMEOUT_S) -> None:
    print(f"  {what}", file=out, flush=True)
    try:
        proc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, env=_env(env),
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise VenvError(f"{what} took over {timeout_s:.0f} s and was stopped") from None
    if proc.returncode != 0:
        raise VenvError(f"{what} failed (exit {proc.returncode}); its output is in the build log")


def _output(argv: list[str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, env=_env(),
                          timeout=CHECK_TIMEOUT_S, check=True).stdout


def _quiet(argv: list[str]) -> int:
    try:
        return subprocess.run(argv, capture_output=True, timeout=CHECK_TIMEOUT_S).returncode
    except OSError:
        return 1


def src() -> Path:
    """This checkout's ``src`` folder: the ``rtstudy`` the venv's cells import."""
    return paths.checkout() / "src"


def command(venv: Path, argv: list[str]) -> list[str]:
    """The host command that runs ``python argv…`` with the venv's Python and this checkout's
    ``rtstudy``.

    ``env`` replaces itself with Python (exec), so the process the harness starts is the app
    itself (same pid): its thread sampling and kill reach it.
    """
    return ["env", f"PYTHONPATH={src()}", str(venv / "bin" / "python"), *argv]


def native(venv: Path) -> None:
    """Build this checkout's native module (``rtstudy._native``) for the venv's Python where
    it is missing or older than its C source (the study's own venv builds only its own).

    Raises
    ------
    VenvError
        The compiler failed (gcc, or the Python headers, missing).
    """
    folder = src() / "rtstudy"
    suffix = _output([str(venv / "bin" / "python"), "-c",
                      "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"]).strip()
    module = folder / f"_native{suffix}"
    if module.is_file() and module.stat().st_mtime >= (folder / "_native.c").stat().st_mtime:
        return
    proc = subprocess.run(["sh", "-c", sdkroot.native_script(str(folder), str(venv / "bin" /
                                                                             "python"))],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise VenvError(f"compiling rtstudy's native module for {venv} failed (install gcc and "
                        "the Python headers): " + proc.stdout[-500:] + proc.stderr[-500:])
