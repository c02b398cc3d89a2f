"""Importing Holoscan on a machine without a GPU, with no environment variables.

``holoscan-cu12`` (4.x) links against ``libcudart.so.12``, which the
``nvidia-cuda-runtime-cu12`` wheel ships outside the loader's search path;
``holoscan-core-cu13`` (5.x) links against ``libcudart.so.13`` from
``nvidia-cuda-runtime`` 13 (``nvidia/cu13/lib``).
Loading it by absolute path with ``RTLD_GLOBAL`` first lets ``import holoscan``
resolve it; Holoscan then runs CPU-only (it logs CUDA warnings, which the run
harness sends to each cell's log).
"""
from __future__ import annotations

import ctypes
import importlib.util
from pathlib import Path

STACK_BYTES = 32 * 1024 * 1024
"""Holoscan warns (and may crash in deep graphs) below a 32 MiB stack limit."""


# (package holding the library, its folder inside the package, the library): cu12 first.
CUDART = (("nvidia.cuda_runtime", "lib", "libcudart.so.12"), ("nvidia.cu13", "lib", "libcudart.so.13"))


def cudart_path() -> Path:
    """The CUDA runtime library that the installed Holoscan links against (see module docstring)."""
    for package, folder, name in CUDART:
        try:
            spec = importlib.util.find_spec(package)
        except ModuleNotFoundError:  # no `nvidia` namespace at all
            spec = None
        for location in (spec.submodule_search_locations or []) if spec else []:
            candidate = Path(location) / folder / name
            if candidate.exists():
                return candidate
    raise ImportError("the CUDA runtime library (libcudart.so.12 of nvidia-cuda-runtime-cu12, or "
                      "libcudart.so.13 of nvidia-cuda-runtime 13) is not installed; run `make "
                      "setup` (it installs the lock of your Python, requirements/py3.X.lock, into "
                      ".venv)")


def preload_cudart() -> None:
    """Load libcudart globally so that a later ``import holoscan`` resolves it."""
    ctypes.CDLL(str(cudart_path()), mode=ctypes.RTLD_GLOBAL)


def import_holoscan():
    """Preload libcudart, then import and return the ``holoscan`` module."""
    preload_cudart()
    import holoscan

    return holoscan
