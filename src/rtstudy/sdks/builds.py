"""How an SDK environment is put in place: built once, in a work folder renamed when done.

Both environments the study builds for a Holoscan version the venv cannot hold (the Debian 13
root, :mod:`rtstudy.sdks.sdkroot`; a venv of another 4.x version, :mod:`rtstudy.sdks.sdkvenv`)
go through :func:`build_once`: an interrupted build leaves nothing that looks usable, two
processes never build in one work folder at once (:func:`one_build_at_a_time`), and nothing
outside the builds' home is ever removed (:func:`remove`).
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sys
import time
from pathlib import Path


class BuildError(RuntimeError):
    """An SDK environment that cannot be built (or a folder removed) here; the message names
    the fix. :class:`~rtstudy.sdks.sdkroot.RootError` and :class:`~rtstudy.sdks.sdkvenv.VenvError`
    are its kinds."""


@contextlib.contextmanager
def one_build_at_a_time(home: Path, what: str, log=None):
    """Hold ``home``'s build lock (``home/.build.lock``, an ``flock``) while inside.

    Two processes that find the same folder missing (two tests of one ``make test``, two
    clones on one machine) would otherwise build it in the same work folder at once, each
    removing the other's: on a VM's first ``make test`` (2026-12-07) two builds of the 5.0
    root at once both failed (debootstrap exit 1 and 2). The lock goes with its holder,
    however that ends.
    """
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".build.lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"Waiting for another process building in {home} before {what}",
                  file=log or sys.stderr, flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def build_once(final: Path, make, what: str, older: str, home: Path, log=None,
               done=None) -> Path:
    """Build the folder ``final`` with ``make(work, out)`` in a temporary folder, renamed when done.

    The temporary folder (``<final>.building``) sits beside its final place, so an
    interrupted build leaves nothing that looks usable; a stale one is removed by
    the next build. Once ``final`` is complete, the other folders and files matching
    ``older`` beside it (the builds of an older recipe) are removed.

    Parameters
    ----------
    final : Path
        Where the finished build goes; its log is ``<final>.log``.
    make : callable
        ``make(work, out)`` builds into the folder ``work``, writing its steps' output to the
        open file ``out``; it raises on failure.
    what : str
        What is built, for the two lines printed to ``log``.
    older : str
        A glob, relative to ``final``'s folder, of the builds ``final`` replaces.
    home : Path
        The folder every build lives in: nothing outside it is ever removed.
    log : file, optional
        Where the start and the duration (s) are printed; default stderr.
    done : callable, optional
        ``done()`` is true once ``final`` is built: asked once the build lock is held
        (:func:`one_build_at_a_time`), as another process may have built it meanwhile.
    """
    with one_build_at_a_time(home, what, log):
        if done is not None and done():
            return final
        return _build_once(final, make, what, older, home, log)


def _build_once(final: Path, make, what: str, older: str, home: Path, log=None) -> Path:
    """:func:`build_once`'s build, its lock held."""
    final.parent.mkdir(parents=True, exist_ok=True)
    work = final.with_name(final.name + ".building")
    log_path = final.with_name(final.name + ".log")
    remove(work, home)
    # Whatever holds the final place is not a finished build (callers build only then): an
    # interrupted one or a folder put there by hand. It goes first, so that the new build
    # can be renamed into place (and not fail at the end, stranding its work).
    if final.is_dir() and not final.is_symlink():
        print(f"Removing {final}: not a finished build", file=log or sys.stderr, flush=True)
        remove(final, home)
    elif final.exists() or final.is_symlink():
        final.unlink()
    started = time.monotonic()
    with open(log_path, "w") as out:
        print(f"Building {what} in {final} (log: {log_path})", file=log or sys.stderr, flush=True)
        try:
            make(work, out)
            os.rename(work, final)
        except BaseException:
            remove(work, home)
            raise
    # One build per SDK version: one of an older recipe (its lock or packages changed) goes.
    for old in final.parent.glob(older):
        if old.name not in (final.name, log_path.name):
            if old.is_dir():
                remove(old, home)
            else:
                old.unlink()
    print(f"Built {what} in {time.monotonic() - started:.0f} s", file=log or sys.stderr, flush=True)
    return final


def remove(folder: Path, home: Path) -> None:
    """Remove a half-built or replaced build; refuses anything that is not under ``home``."""
    if not folder.exists():
        return
    if home.resolve() not in folder.resolve().parents:
        raise BuildError(f"refusing to remove {folder}: not under {home}")
    # A build interrupted inside the mount namespace leaves no mounts (they die with it);
    # debootstrap's own /proc mount is checked for all the same, so rmtree never
    # descends into the host's /proc.
    for sub in ("proc", "sys", "dev"):
        if os.path.ismount(folder / sub):
            raise BuildError(f"{folder / sub} is still mounted: `umount -R {folder / sub}`, "
                             "then build again")
    shutil.rmtree(folder)
