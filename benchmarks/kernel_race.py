"""Do two processes that start Jupyter kernels at once ever hang on each other?

The check behind docs/install.md's "Tests": two processes each execute a one-cell notebook on
the rtstudy kernel LAUNCHES times, at the same time, over TCP (jupyter_client's default: five
free ports picked, closed, handed to the kernel) or over the study's Unix sockets
(``--transport ipc``: :class:`rtstudy.sdks.kernelspec.IpcKernelManager`). A kernel that does not
start or a cell that gets no reply within 30 s counts as a hang.

Usage: ``.venv/bin/python benchmarks/kernel_race.py [--transport tcp|ipc] [--launches N]``
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROBE = {"cells": [{"cell_type": "code", "id": "probe", "metadata": {}, "outputs": [],
                    "execution_count": None, "source": ["import os; print(os.getpid())"]}],
         "metadata": {"kernelspec": {"name": "rtstudy", "display_name": "rtstudy",
                                     "language": "python"}},
         "nbformat": 4, "nbformat_minor": 5}


def launches(transport: str, n: int, folder: Path, tag: str) -> int:
    """Execute the probe ``n`` times; return how many hung or failed."""
    import papermill

    kwargs = ({"kernel_manager_class": "rtstudy.sdks.kernelspec.IpcKernelManager"}
              if transport == "ipc" else {})
    failed = 0
    for i in range(n):
        try:
            papermill.execute_notebook(str(folder / "probe.ipynb"), str(folder / f"{tag}-{i}.ipynb"),
                                       kernel_name="rtstudy", progress_bar=False,
                                       execution_timeout=30, start_timeout=30,
                                       log_output=False, **kwargs)
        except Exception as exc:  # a hang ends as a timeout; any failure counts
            failed += 1
            print(f"{tag} launch {i}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
    return failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--transport", choices=("tcp", "ipc"), default="tcp")
    parser.add_argument("--launches", type=int, default=150, help="per process (default 150)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    folder = Path(tempfile.gettempdir()) / "rtstudy-kernel-race"
    if args.worker:
        print(launches(args.transport, args.launches, folder, args.worker))
        return
    folder.mkdir(exist_ok=True)
    (folder / "probe.ipynb").write_text(json.dumps(PROBE))
    start = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-W", "ignore", __file__, "--transport", args.transport,
                               "--launches", str(args.launches), "--worker", tag],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
             for tag in ("a", "b")]
    failed = 0
    for p in procs:
        lines = p.communicate()[0].strip().splitlines() or [str(args.launches)]
        print("\n".join(lines[:-1]), end="\n" if lines[:-1] else "")
        failed += int(lines[-1])
    print(f"{args.transport}: {failed} of {2 * args.launches} launches hung or failed, two processes "
          f"at once, {time.monotonic() - start:.0f} s")


if __name__ == "__main__":
    main()
