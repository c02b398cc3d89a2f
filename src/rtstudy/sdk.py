"""The Holoscan SDK versions the study measures, and the environment each one runs in.

``params.yaml``'s ``sdk`` group lists the versions. Each runs in an environment of
its own, chosen from the host's state:

- the version installed in the study's own venv (``holoscan-cu12`` from
  ``requirements/py3.X.lock``) runs with the venv's Python, as always;
- a version whose wheels need a newer glibc than the host's (5.0.0: glibc ≥ 2.39)
  runs inside a Debian 13 root (:mod:`rtstudy.sdkroot`), built once and cached.

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

from rtstudy import sdkroot


class SdkError(RuntimeError):
    """An SDK version cannot run here; the message names the fix."""


@dataclass(frozen=True)
class Sdk:
    """One Holoscan SDK version the study knows how to install and drive."""

    version: str
    api: int             # the Python API generation: 4 (holoscan.core, GXF) or 5 (holoscan.execution)
    distribution: str    # the pip distribution whose version is the SDK's
    glibc: tuple[int, int]  # the oldest glibc its wheels install on


KNOWN = {
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
    """Where one SDK version runs: the study's venv (``root`` None) or a Debian 13 root."""

    sdk: Sdk
    root: Path | None = None

    @property
    def name(self) -> str:
        return "venv" if self.root is None else "debian13-root"

    def command(self, argv: list[str]) -> list[str]:
        """The host command that runs ``python argv…`` in this environment."""
        if self.root is None:
            return [sys.executable, *argv]
        return sdkroot.command(self.root, [f"{sdkroot.VENV}/bin/python", *argv])

    def fingerprint(self, fp: dict) -> dict:
        """The host fingerprint ``fp`` as this environment sees it, with its own host id."""
        if self.root is None:
            return fp
        from rtstudy import host  # host imports this module's users; import late

        made = sdkroot.manifest(self.root) or {}
        record = {k: v for k, v in fp.items() if k != "host_id"}
        record["versions"] = {"python": made.get("python", "unknown"),
                              **{name: made.get("pip", {}).get(name, "not installed")
                                 for name in (self.sdk.distribution, "numpy")}}
        record["sdk"] = {"version": self.sdk.version, "environment": self.name,
                         "root_key": made.get("key"), "suite": made.get("suite"),
                         "glibc": made.get("glibc"), "built_utc": made.get("built_utc")}
        return {"host_id": host.host_id(record), **record}

    def prepare(self) -> None:
        """Make the environment current: the root's copy of rtstudy matches this checkout."""
        if self.root is not None:
            sdkroot.sync_package(self.root)


def venv() -> Environment:
    """The study's own venv, whatever Holoscan 4.x version it holds."""
    version = installed() or "not installed"
    return Environment(KNOWN.get(version) or Sdk(version, 4, "holoscan-cu12", (2, 35)))


def known(version: str) -> Sdk:
    if version not in KNOWN:
        raise SdkError(f"Holoscan {version} is not one the study knows; known: "
                       + ", ".join(KNOWN) + " (rtstudy.sdk.KNOWN)")
    return KNOWN[version]


def version_of(fp: dict) -> str:
    """The SDK version a fingerprint's cells ran with (the venv's when it has no ``sdk`` record)."""
    if fp.get("sdk"):
        return fp["sdk"]["version"]
    return fp.get("versions", {}).get("holoscan-cu12", "unknown")


def api_of(fp: dict) -> int:
    """The API generation of a fingerprint's SDK (4 when unknown: the venv's)."""
    return KNOWN[version_of(fp)].api if version_of(fp) in KNOWN else 4


def environment(version: str, build: bool = False) -> Environment:
    """The environment SDK ``version`` runs in on this host.

    Parameters
    ----------
    version : str
        A version of :data:`KNOWN`.
    build : bool
        Build a missing Debian 13 root (minutes, ~1 GB) instead of raising.

    Raises
    ------
    SdkError
        The version cannot run here, or its root is not built and ``build`` is False;
        the message says what to run.
    """
    sdk = known(version)
    if installed() == version:
        return venv()
    if sdk.api == 4:
        raise SdkError(f"Holoscan {version} is not the venv's ({installed()}): the study runs one "
                       "4.x version, the one its lock installs (requirements/py3.X.lock)")
    root = sdkroot.root_path(version)
    if sdkroot.manifest(root) is None:
        if not build:
            raise SdkError(f"Holoscan {version} runs inside a Debian 13 root that is not built "
                           f"yet ({root}): run `make sdk` (or `rtstudy sdk build {version}`)")
        try:
            sdkroot.build(version)
        except sdkroot.RootError as exc:
            raise SdkError(str(exc)) from None
    return Environment(sdk, root)


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
        if sdk.api == 4:
            found.append(f"Holoscan {version}: the venv holds {installed()}; list that one instead")
        else:
            found += [f"Holoscan {version}: {p}" for p in sdkroot.problems()]
    return found
