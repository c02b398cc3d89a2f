"""The ``rtstudy`` Jupyter kernel: the venv's Python, with Holoscan importable from its first cell.

``import holoscan`` needs the CUDA runtime preloaded (:mod:`rtstudy.holo`), which a plain
IPython kernel does not do; this kernel does it before the first cell runs, the same way the
study does, and changes no environment variable of the kernel. ``make setup`` installs it
into the venv (``python -m rtstudy.kernelspec DISPLAY_NAME``).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

NAME = "rtstudy"
# Run in the kernel before the first cell: the CUDA runtime, loaded where Holoscan finds it.
STARTUP = "__import__('rtstudy.holo').holo.preload_cudart()"


def install(display_name: str, prefix: str = sys.prefix) -> Path:
    """Install the kernel spec into ``prefix`` (the venv); return its folder."""
    from ipykernel.kernelspec import install as install_ipykernel

    folder = Path(install_ipykernel(kernel_name=NAME, display_name=display_name, prefix=prefix))
    spec_file = folder / "kernel.json"
    spec = json.loads(spec_file.read_text())
    spec["argv"].append(f"--IPKernelApp.exec_lines={STARTUP}")
    spec_file.write_text(json.dumps(spec, indent=1) + "\n")
    return folder


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m rtstudy.kernelspec DISPLAY_NAME")
    install(sys.argv[1])
