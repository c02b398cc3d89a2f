"""The Holoscan SDK versions the study measures, and the environment each one runs in.

``params.yaml``'s ``sdk`` group lists the versions. Each runs in an environment of
its own, chosen from the host's state:

- the version installed in the study's own venv (``holoscan-cu12`` from
  ``requirements/py3.X.lock``) runs with the venv's Python, as always;
- a version whose wheels need a newer glibc than the host's (5.0.0: glibc ≥ 2.39)
  runs inside a Debian 13 root (:mod:`rtstudy.sdks.sdkroot`), built once and cached;
- a 4.x-API version the study's venv cannot hold beside its own (3.5.0, the seeds'
  tested version, whose wheels are for Python 3.11) runs in a venv of its own on the host
  (:mod:`rtstudy.sdks.sdkvenv`), built once and cached, with this checkout's ``rtstudy``.

An environment is a host state of its own: its fingerprint is the host's with
the environment's versions (and an ``sdk`` record) in it, so its cells get a host
id of their own (``data/raw/<experiment>/<host id>/<profile>``) and the data of two
SDK versions never mix. The venv's fingerprint is the host's unchanged, so data
measured before SDK versions were a factor keeps its host id.
"""
from __future__ import annotations

import importlib.metadata
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from rtstudy.machine import host
from rtstudy.sdks import builds, sdkroot, sdkvenv


class SdkError(RuntimeError):
    """An SDK version cannot run here; the message names the fix."""


@dataclass(frozen=True)
class Sdk:
    """One Holoscan SDK version the study knows how to install and drive."""

    version: str
    api: int             # the Python API generation: 4 (holoscan.core, GXF) or 5 (holoscan.execution)
    distribution: str    # the pip distribution whose version is the SDK's
    glibc: tuple[int, int]  # the oldest glibc its wheels install on
    # A venv of its own with this Python (X.Y) when it is neither the study venv's SDK nor one
    # that needs the Debian 13 root; "" otherwise.
    python: str = ""
    # Whether its EventBasedScheduler takes a real-time dispatcher (GXF_EBS_DISPATCHER_SCHED_*):
    # 3.5.0's GXF has no such setting and runs the dispatcher SCHED_OTHER whatever is asked.
    realtime_dispatcher: bool = True


KNOWN = {
    "3.5.0": Sdk("3.5.0", 4, "holoscan", (2, 35), python="3.11", realtime_dispatcher=False),
    "4.6.0": Sdk("4.6.0", 4, "holoscan-cu12", (2, 35)),
    "5.0.0": Sdk("5.0.0", 5, "holoscan-core-cu13", (2, 39)),
}


def installed() -> str | None:
    """The Holoscan version in this (the study's) venv, or None."""
    try:
        return importlib.metadata.version("holoscan-cu12")
    except importlib.metadata.PackageNotFoundError:
        return None


def host_glibc() -> tuple[int, int]:
    """The host's glibc version, e.g. (2, 36)."""
    _, version = os.confstr("CS_GNU_LIBC_VERSION").split()
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


@dataclass(frozen=True)
class Environment:
    """Where one SDK version runs: the study's venv (``root`` and ``own_venv`` None), a Debian 13
    root (``root``) or a venv of its own on the host (``own_venv``)."""

    sdk: Sdk
    root: Path | None = None
    own_venv: Path | None = None

    @property
    def name(self) -> str:
        if self.root is not None:
            return "debian13-root"
        return "venv" if self.own_venv is None else f"python{self.sdk.python}-venv"

    @property
    def folder(self) -> Path | None:
        """The root or venv of its own; None for the study's venv."""
        return self.root if self.root is not None else self.own_venv

    def command(self, argv: list[str]) -> list[str]:
        """The host command that runs ``python argv…`` in this environment."""
        if self.root is not None:
            return sdkroot.command(self.root, [f"{sdkroot.VENV}/bin/python", *argv])
        if self.own_venv is not None:
            return sdkvenv.command(self.own_venv, argv)
        return [sys.executable, *argv]

    def fingerprint(self, fp: host.HostRecord) -> host.HostRecord | host.SdkHostRecord:
        """The host fingerprint ``fp`` as this environment sees it, with its own host id.

        The study's venv: ``fp`` itself. A root or venv of its own: ``fp`` with that
        environment's Python, SDK and numpy versions and an ``sdk`` record (what it was built
        from and when), so its cells get a host id of their own.
        """
        if self.folder is None:
            return fp
        made = (sdkroot.manifest(self.root) if self.root is not None
                else sdkvenv.manifest(self.own_venv)) or {}
        record = {k: v for k, v in fp.items() if k != "host_id"}
        record["versions"] = {"python": made.get("python", "unknown"),
                              **{name: made.get("pip", {}).get(name, "not installed")
                                 for name in (self.sdk.distribution, "numpy")}}
        built = {"version": self.sdk.version, "environment": self.name,
                 "glibc": made.get("glibc"), "built_utc": made.get("built_utc")}
        if self.root is not None:
            record["sdk"] = {**built, "root_key": made.get("key"), "suite": made.get("suite")}
        else:
            record["sdk"] = {**built, "venv_key": made.get("key"),
                             "interpreter": made.get("interpreter")}
        return {"host_id": host.host_id(record), **record}

    def prepare(self) -> None:
        """Make the environment current: the root's copy of rtstudy matches this checkout; the
        checkout has a native module for the own venv's Python."""
        if self.root is not None:
            sdkroot.sync_package(self.root)
        elif self.own_venv is not None:
            try:
                sdkvenv.native(self.own_venv)
            except sdkvenv.VenvError as exc:
                raise SdkError(str(exc)) from None


def venv() -> Environment:
    """The study's own venv, whatever Holoscan 4.x version it holds."""
    version = installed() or "not installed"
    return Environment(KNOWN.get(version) or Sdk(version, 4, "holoscan-cu12", (2, 35)))


def known(version: str) -> Sdk:
    if version not in KNOWN:
        raise SdkError(f"Holoscan {version} is not one the study knows; known: "
                       + ", ".join(KNOWN) + " (rtstudy.sdks.sdk.KNOWN)")
    return KNOWN[version]


def version_of(fp: dict) -> str:
    """The SDK version a fingerprint's cells ran with (the venv's when it has no ``sdk`` record)."""
    if fp.get("sdk"):
        return fp["sdk"]["version"]
    return fp.get("versions", {}).get("holoscan-cu12", "unknown")


def api_of(fp: dict) -> int:
    """The API generation of a fingerprint's SDK (4 when unknown: the venv's)."""
    return KNOWN[version_of(fp)].api if version_of(fp) in KNOWN else 4


def realtime_dispatcher(fp: dict) -> bool:
    """Whether a fingerprint's SDK can give its dispatcher a real-time policy (True when
    unknown: the venv's)."""
    return KNOWN[version_of(fp)].realtime_dispatcher if version_of(fp) in KNOWN else True


def environment(version: str, build: bool = False) -> Environment:
    """The environment SDK ``version`` runs in on this host.

    Parameters
    ----------
    version : str
        A version of :data:`KNOWN`.
    build : bool
        Build a missing Debian 13 root (about a minute, ~1 GB) or venv of its own (10 s to
        2 min, ~1 GB) instead of raising.

    Raises
    ------
    SdkError
        The version cannot run here, or its root or venv is not built and ``build`` is False;
        the message says what to run.
    """
    sdk = known(version)
    if installed() == version:
        return venv()
    if sdk.python:
        return Environment(sdk, own_venv=_own_venv(sdk, build))
    if sdk.api == 4:
        raise SdkError(f"Holoscan {version} is not the venv's ({installed()}): the study's venv "
                       "holds the 4.x version its lock installs (requirements/py3.X.lock); another "
                       "runs only in a venv of its own (Sdk.python in rtstudy.sdks.sdk.KNOWN)")
    root = sdkroot.root_path(version)
    if sdkroot.manifest(root) is None:
        if not build:
            raise SdkError(f"Holoscan {version} runs inside a Debian 13 root that is not built "
                           f"yet ({root}): run `make sdk` (or `rtstudy sdk build {version}`)")
        try:
            sdkroot.build(version)
        except builds.BuildError as exc:
            raise SdkError(str(exc)) from None
    return Environment(sdk, root)


def _own_venv(sdk: Sdk, build: bool) -> Path:
    """SDK ``sdk``'s venv of its own, built if ``build`` (:func:`environment`)."""
    path = sdkvenv.venv_path(sdk.version, sdk.python)
    if sdkvenv.manifest(path) is not None:
        return path
    if not build:
        raise SdkError(f"Holoscan {sdk.version} runs in a Python {sdk.python} venv of its own that "
                       f"is not built yet ({path}): run `make sdk` (or `rtstudy sdk build "
                       f"{sdk.version}`)")
    try:
        return sdkvenv.build(sdk.version, sdk.python)
    except builds.BuildError as exc:
        raise SdkError(str(exc)) from None


def problems(versions: list[str]) -> list[str]:
    """Why the listed versions cannot run here (each with its fix), before anything is built."""
    found = []
    for version in versions:
        try:
            sdk = known(version)
        except SdkError as exc:
            found.append(str(exc))
            continue
        if installed() == version:
            continue
        if sdk.python:
            if host_glibc() < sdk.glibc:
                found.append(f"Holoscan {version}: its wheels need glibc "
                             f"{'.'.join(map(str, sdk.glibc))} or newer; this host has "
                             f"{'.'.join(map(str, host_glibc()))}")
                continue
            found += [f"Holoscan {version}: {p}" for p in sdkvenv.problems(version, sdk.python)]
        elif sdk.api == 4:
            found.append(f"Holoscan {version}: the venv holds {installed()}; list that one instead")
        else:
            found += [f"Holoscan {version}: {p}" for p in sdkroot.problems()]
    return found
