"""The ``rtstudy`` Jupyter kernel: the venv's Python, with Holoscan importable from its first cell.

``import holoscan`` needs the CUDA runtime preloaded (:mod:`rtstudy.sdks.holo`), which a plain
IPython kernel does not do; this kernel does it before the first cell runs, the same way the
study does, and changes no environment variable of the kernel. ``make setup`` installs it
into the venv (``python -m rtstudy.sdks.kernelspec DISPLAY_NAME``).

:class:`IpcKernelManager` is how the study's notebooks are executed (papermill's
``kernel_manager_class``): the kernel listens on Unix sockets in a folder of its own, which
only this user can reach, instead of five TCP ports on 127.0.0.1 picked free, closed and
handed to the kernel (which the kernel warns about at start). That also rules out two
kernels started at once being handed one port; ``benchmarks/kernel_race.py`` did not see
that happen over TCP either. JupyterLab (``make lab``) keeps TCP: its sockets would sit
beside its connection files, whose paths can exceed a Unix socket's 107 characters.

Its client (:class:`SteadyKernelClient`) waits for a message in slices of
:data:`POLL_SLICE_S`, asking the socket itself at each one. With the stock client, papermill
sometimes waited forever for a reply that had arrived: in 5 of 42 runs of explore.ipynb beside
``stress-ng --cpu 2``, the Explorer cell ended (its ``idle`` status received) and the
``execute_reply`` sat unread in the client's shell socket (``zmq.EVENTS`` had ``POLLIN``) while
the event loop slept on the socket's file descriptor, whose edge-triggered wake-up had been
consumed; the kernel had nothing left to send. With this client, 0 of 50 runs hung
(``benchmarks/notebook_hang.py``, docs/benchmarks.md).
"""
from __future__ import annotations

import json
import logging
import shutil
import sys
import tempfile
import time
import weakref
from datetime import datetime, timezone
from pathlib import Path
from queue import Empty
from typing import Any

from jupyter_client import AsyncKernelClient, AsyncKernelManager
from jupyter_client.channels import AsyncZMQSocketChannel
from traitlets import DottedObjectName, Type

NAME = "rtstudy"
# Run in the kernel before the first cell: the CUDA runtime, loaded where Holoscan finds it;
# and `kill -USR1 <kernel pid>` prints every thread's Python stack to the kernel's own stderr
# (the terminal or papermill's), to see where a hung cell waits.
STARTUP = ("__import__('rtstudy.sdks.holo').sdks.holo.preload_cudart(); "
           "__import__('faulthandler').register("
           "__import__('signal').SIGUSR1, file=__import__('sys').__stderr__, all_threads=True)")


def without_iri_checker() -> None:
    """Leave jsonschema's "iri" format checker out of this process, before nbformat (papermill,
    nbconvert) imports jsonschema.

    The checker comes from rfc3987-syntax, which builds some 35 Lark parsers as it is imported:
    about 3 s on a 2-CPU VM, paid by every notebook papermill runs and every report render
    (python-jsonschema/jsonschema issue 1428; no lazy import is released). The only schema
    validated here, the notebook format's, uses no "iri" format, and jsonschema leaves out a
    checker whose module cannot be imported: a ``None`` in ``sys.modules`` is such a module.
    """
    sys.modules.setdefault("rfc3987_syntax", None)


def install(display_name: str, prefix: str = sys.prefix) -> Path:
    """Install the kernel spec into ``prefix`` (the venv); return its folder."""
    from ipykernel.kernelspec import install as install_ipykernel

    folder = Path(install_ipykernel(kernel_name=NAME, display_name=display_name, prefix=prefix))
    spec_file = folder / "kernel.json"
    spec = json.loads(spec_file.read_text())
    spec["argv"].append(f"--IPKernelApp.exec_lines={STARTUP}")
    spec_file.write_text(json.dumps(spec, indent=1) + "\n")
    return folder


# How long a wait for a kernel's message sleeps before it asks the socket again, s: a reply
# whose wake-up was lost (module docstring) costs at most this.
POLL_SLICE_S = 1.0
LOG = logging.getLogger(__name__)


class SteadyChannel(AsyncZMQSocketChannel):
    """A channel whose wait for a message asks the socket again every :data:`POLL_SLICE_S`."""

    async def get_msg(self, timeout: float | None = None) -> dict[str, Any]:
        """The next message; ``Empty`` after ``timeout`` s without one (None: wait for it).

        Each slice is a new ``poll``, which reads the socket's ``zmq.EVENTS`` before it sleeps
        on the file descriptor, so a message whose wake-up was consumed is found at the next.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = POLL_SLICE_S if deadline is None else max(0.0, deadline - time.monotonic())
            slice_s = min(left, POLL_SLICE_S)
            start = time.monotonic()
            if await self.socket.poll(int(slice_s * 1000)):
                msg = await self._recv()
                if slice_s and time.monotonic() - start >= slice_s:
                    # Its wake-up was lost, or it came just as the slice ended: how long it had
                    # waited since the kernel sent it tells which (benchmarks/notebook_hang.py).
                    sent = msg["header"].get("date")
                    waited = ((datetime.now(timezone.utc) - sent).total_seconds()
                              if isinstance(sent, datetime) and sent.tzinfo else float("nan"))
                    LOG.debug("read at the end of a %.1f s wait, %.3f s after it was sent",
                              slice_s, waited)
                return msg
            if deadline is not None and time.monotonic() >= deadline:
                raise Empty


class SteadyKernelClient(AsyncKernelClient):
    """papermill's client of the study's kernels: every channel a :class:`SteadyChannel`."""

    shell_channel_class = Type(SteadyChannel)
    iopub_channel_class = Type(SteadyChannel)
    stdin_channel_class = Type(SteadyChannel)
    control_channel_class = Type(SteadyChannel)


class IpcKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel listens on Unix sockets in a private temporary folder,
    and whose clients are :class:`SteadyKernelClient`."""

    client_class = DottedObjectName("rtstudy.sdks.kernelspec.SteadyKernelClient")
    client_factory = Type(SteadyKernelClient, klass=AsyncKernelClient)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        folder = tempfile.mkdtemp(prefix="rtstudy-kernel-")
        weakref.finalize(self, shutil.rmtree, folder, True)
        self.transport = "ipc"
        self.ip = str(Path(folder) / "kernel")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m rtstudy.sdks.kernelspec DISPLAY_NAME")
    install(sys.argv[1])
