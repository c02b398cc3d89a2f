"""Shared fixtures: a smoke-sized configuration and a sweep context for tmp output dirs."""
from __future__ import annotations

import os

import pytest

from rtstudy import host, params
from rtstudy.harness import SweepContext


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
