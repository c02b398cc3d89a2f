"""What a built Holoscan environment records about itself (its manifest), as types: a Debian 13
root's (:mod:`rtstudy.sdks.sdkroot`) and an SDK venv's (:mod:`rtstudy.sdks.sdkvenv`)."""
from __future__ import annotations

from typing import TypedDict


class Inventory(TypedDict):
    """What a root holds (:func:`_inventory`)."""

    debian: dict[str, str]  # package → version
    pip: dict[str, str]
    glibc: str
    python: str


class Manifest(TypedDict, total=False):
    """What a finished build records about itself (its ``MANIFEST``): a root's (its
    :class:`Inventory` and suite, mirror, keyring) or an SDK venv's (lock, interpreter)."""

    sdk: str  # the Holoscan version
    key: str  # what it was built from, hashed
    built_utc: str
    glibc: str
    python: str
    pip: dict[str, str]
    debian: dict[str, str]
    suite: str
    mirror: str
    release_verified_with: dict[str, str]
    lock: str
    interpreter: str
