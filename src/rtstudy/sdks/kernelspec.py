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
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
import weakref
from pathlib import Path

from jupyter_client import AsyncKernelManager

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


class IpcKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel listens on Unix sockets in a private temporary folder."""

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
