"""Each lock installs, exact pins and hashes, on the oldest micro version of its Python that
the Makefile accepts (Debian 12's own Python for 3.11), without that interpreter at hand.

pip's dry runs start when the run has collected these tests (tests/dry_runs.py); this module
runs last on its worker (tests/conftest.py's order), so they have mostly finished by then.
"""
from __future__ import annotations

import pytest
from dry_runs import LOCKS, lock_version, result, runner

pytestmark = pytest.mark.network


@pytest.mark.parametrize("lock", LOCKS, ids=lock_version)
def test_each_lock_installs_on_the_oldest_python_of_its_minor(lock):
    if runner(lock_version(lock)) is None:
        pytest.skip(f"no Python {lock_version(lock)} here to run pip with")
    status, err = result(lock)
    assert status == "0", err[-2000:]
