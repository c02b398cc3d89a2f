"""tracefs, the kernel's tracing file system: where it is mounted, and mounted for a reader that
needs it (a scheduler trace, E4's look for the osnoise tracer).

After a boot it is not mounted. A reader mounts it for itself (:func:`ready`) and unmounts
what it mounted afterwards, so the host is left as it was; what was done is recorded.
"""
from __future__ import annotations

import contextlib
import os
import subprocess

TRACEFS = "/sys/kernel/tracing"


def mounts() -> set[str]:
    """Where tracefs is mounted now (mount points)."""
    with open("/proc/mounts") as f:
        return {line.split()[1] for line in f if line.split()[2:3] == ["tracefs"]}


def mount(record: dict) -> None:
    """Mount tracefs at :data:`TRACEFS` where no tracefs is mounted yet; what was done (or why
    it could not be) goes into ``record["tracefs"]``. The caller unmounts it again."""
    if mounts():
        record["tracefs"] = "mounted before"
        return
    if not os.path.isdir(TRACEFS):
        record["tracefs"] = f"not mounted, and {TRACEFS} does not exist (a kernel without tracefs)"
        return
    done = subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS], capture_output=True,
                          text=True)
    record["tracefs"] = ("mounted for the reading" if done.returncode == 0 else
                         f"not mounted, and mounting it failed: {done.stderr.strip()[-300:]}")


@contextlib.contextmanager
def ready(record: dict):
    """tracefs mounted while the block runs (:func:`mount`: ``record["tracefs"]`` says how),
    and what this mounted unmounted afterwards."""
    before = mounts()
    mount(record)
    try:
        yield
    finally:
        for point in sorted(mounts() - before, reverse=True):
            subprocess.run(["umount", point], capture_output=True)
