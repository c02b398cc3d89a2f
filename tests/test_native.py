"""The native work module: GIL released, deadlines met, same work as the Python model."""
from __future__ import annotations

import threading
import time

import pytest

from rtstudy import _native
from rtstudy.measure import work


def test_busy_until_never_returns_early():
    for duration in (0, 10_000, 200_000, 2_000_000):
        deadline = time.monotonic_ns() + duration
        assert _native.busy_until(deadline) >= deadline
        assert work.busy_until(deadline, "python") >= deadline


def test_native_work_releases_the_gil():
    # While a thread spins natively for 300 ms, this thread must keep running.
    spinner = threading.Thread(target=_native.busy_for, args=(300_000_000,))
    count = 0
    spinner.start()
    while spinner.is_alive():
        count += 1
    spinner.join()
    assert count > 1000, f"main thread ran only {count} loops: the GIL was held"


def test_fixed_work_is_the_same_work_in_both_models():
    assert work.fixed_work(10_000, "native") == work.fixed_work(10_000, "python")
    assert work.fixed_work(0) == 0x9E3779B97F4A7C15


@pytest.mark.parametrize("call", [lambda: work.busy_for(-1), lambda: work.fixed_work(-5),
                                  lambda: work.busy_until(0, "java")])
def test_bad_arguments_are_rejected(call):
    with pytest.raises(ValueError):
        call()


def test_thread_sched_reads_this_threads_attributes():
    attrs = _native.thread_sched()
    assert attrs["policy"] == _native.SCHED_OTHER
    assert attrs["tid"] == threading.get_native_id()
    assert set(attrs["cpus"]) <= set(range(1024)) and attrs["cpus"]


def test_probe_policy_returns_zero_or_an_errno(fingerprint):
    err = _native.probe_policy(_native.SCHED_FIFO, priority=99)
    assert err >= 0
    assert (err == 0) == (fingerprint["realtime"]["SCHED_FIFO"] == "ok")
