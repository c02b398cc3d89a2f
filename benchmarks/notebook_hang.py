"""How often does papermill's run of explore.ipynb hang, with the study's client or the stock one?

Runs ``notebooks/explore.ipynb`` through papermill RUNS times, each in a process of its own, as
``tests/test_explore.py`` does, on the data of PROJECT (a checkout with data in it: ``make
pull``). A run not ended after ``--limit`` s counts as a hang: before it is ended it prints
what papermill waits for and whether that message is already in the client's socket
(``zmq.EVENTS`` has ``POLLIN``). ``--client stock`` is jupyter_client's ``AsyncKernelClient``
(what papermill used before 2026-12-07), ``steady`` the study's
:class:`rtstudy.sdks.kernelspec.SteadyKernelClient`, whose reads at the end of a wait slice
are counted, and among them those of a message that had waited unread at least
:data:`STRANDED_S` (a lost wake-up, not one that came just then). Load beside the runs is the
caller's: the hang showed beside ``stress-ng --cpu 2`` (docs/benchmarks.md).

Usage: ``.venv/bin/python benchmarks/notebook_hang.py [--client steady|stock] [--runs N]
[--limit S] [PROJECT]``
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from jupyter_client import AsyncKernelClient
from traitlets import DottedObjectName, Type

from rtstudy.sdks import kernelspec

HUNG = 3  # a worker's exit code when its run hung


class StockIpcKernelManager(kernelspec.IpcKernelManager):
    """The study's kernel manager with jupyter_client's own client."""

    client_class = DottedObjectName("jupyter_client.asynchronous.AsyncKernelClient")
    client_factory = Type(AsyncKernelClient, klass=AsyncKernelClient)


# A read at the end of a wait slice whose message had waited this long since the kernel sent
# it, s, had lost its wake-up: one that came just as the slice ended waited only as long as
# this process was kept off a CPU.
STRANDED_S = 0.1


class Count(logging.Handler):
    """Counts :mod:`rtstudy.sdks.kernelspec`'s reads at the end of a wait slice: all, and those
    whose message had waited at least :data:`STRANDED_S`."""

    late = stranded = 0

    def emit(self, record: logging.LogRecord) -> None:
        Count.late += 1
        Count.stranded += record.args[1] >= STRANDED_S


def report_hang(limit: float) -> None:
    """After ``limit`` s: print papermill's pending tasks and its sockets' events; exit HUNG."""
    import nbclient
    import zmq

    time.sleep(limit)
    print(f"hung: {limit:.0f} s", flush=True)
    for obj in gc.get_objects():
        if isinstance(obj, asyncio.AbstractEventLoop):
            for task in asyncio.all_tasks(obj):
                print("  waiting in", task.get_coro().__qualname__, flush=True)
        elif isinstance(obj, nbclient.NotebookClient) and obj.kc is not None:
            for name in ("shell_channel", "iopub_channel"):
                # The shadow socket: read from this thread while papermill's loop sleeps.
                events = getattr(obj.kc, name).socket._shadow_sock.get(zmq.EVENTS)
                print(f"  {name}: a message waits unread: {bool(events & zmq.POLLIN)}", flush=True)
    os._exit(HUNG)


def worker(project: Path, out: Path, client: str, limit: float) -> None:
    """One papermill run of explore.ipynb; print the late reads counted."""
    import papermill

    kernelspec.without_iri_checker()
    kernelspec.LOG.addHandler(Count())
    kernelspec.LOG.setLevel(logging.DEBUG)
    threading.Thread(target=report_hang, args=(limit,), daemon=True).start()
    manager = StockIpcKernelManager if client == "stock" else kernelspec.IpcKernelManager
    papermill.execute_notebook(str(project / "notebooks" / "explore.ipynb"), str(out),
                               cwd=str(project / "notebooks"), kernel_name=kernelspec.NAME,
                               progress_bar=False, kernel_manager_class=manager)
    print(f"late reads: {Count.late}, stranded: {Count.stranded}", flush=True)
    os._exit(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("project", nargs="?", type=Path, default=Path.cwd(),
                        help="a checkout with data (default: here)")
    parser.add_argument("--client", choices=("steady", "stock"), default="steady")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--limit", type=float, default=120, help="s before a run is a hang")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    project = args.project.resolve()
    if args.worker:
        worker(project, args.worker, args.client, args.limit)
        return
    env = dict(os.environ, RTSTUDY_ROOT=str(project))
    out = Path("/tmp") / f"rtstudy-notebook-hang-{os.getpid()}.ipynb"
    hung, late, stranded, seconds = 0, 0, 0, []
    for run in range(1, args.runs + 1):
        start = time.monotonic()
        proc = subprocess.run([sys.executable, "-W", "ignore", __file__, str(project),
                               "--client", args.client, "--limit", str(args.limit),
                               "--worker", str(out)],
                              env=env, capture_output=True, text=True, timeout=args.limit + 60)
        took = time.monotonic() - start
        lines = [x for x in proc.stdout.splitlines() if x.startswith(("hung", "  ", "late"))]
        if proc.returncode == HUNG:
            hung += 1
        elif proc.returncode == 0:
            seconds.append(took)
            counts = lines[-1].replace(",", "").split()
            late, stranded = late + int(counts[2]), stranded + int(counts[-1])
        else:
            sys.exit(f"run {run} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        print(f"run {run}: {took:.0f} s; " + "; ".join(x.strip() for x in lines), flush=True)
    out.unlink(missing_ok=True)
    print(f"client {args.client}: {hung} of {args.runs} runs hung; in the others {late} reads at "
          f"the end of a wait slice, {stranded} of them of a message unread for >= {STRANDED_S} s; "
          f"median run {statistics.median(seconds) if seconds else float('nan'):.0f} s")


if __name__ == "__main__":
    main()
