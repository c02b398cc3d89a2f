"""Writing a file so that it is either complete on disk or absent: the study's one way to write.

A sidecar, a plan, the host fingerprint, the report's metrics and HTML, the host audit and
the tuning's revert record are each read by another process, or after a crash: a reader must
never find half a file. Imports nothing of rtstudy, so any layer may use it.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, creating its folder if needed.

    The text goes to ``<path>.tmp``, is flushed to the disk (``fsync``) and renamed over
    ``path`` in one step, so ``path`` holds the old content or the new, never a part, even
    if the machine stops right after. A failed write (a full disk) removes the temporary file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        # A full disk leaves a truncated temporary file: never leave it behind.
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
