"""Importing Holoscan on a machine without a GPU, with no environment variables.

``holoscan-cu12`` links against ``libcudart.so.12``, which the
``nvidia-cuda-runtime-cu12`` wheel ships outside the loader's search path.
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


def cudart_path() -> Path:
    """The ``libcudart.so.12`` shipped by the ``nvidia-cuda-runtime-cu12`` wheel."""
    spec = importlib.util.find_spec("nvidia.cuda_runtime")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("nvidia-cuda-runtime-cu12 is not installed; run `make setup` "
                          "(it installs the lock of your Python, requirements/py3.X.lock, into .venv)")
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "lib" / "libcudart.so.12"
        if candidate.exists():
            return candidate
    raise ImportError("libcudart.so.12 not found inside the nvidia-cuda-runtime-cu12 wheel "
                      f"({list(spec.submodule_search_locations)}); reinstall it with `make setup`")


def preload_cudart() -> None:
    """Load libcudart globally so that a later ``import holoscan`` resolves it."""
    ctypes.CDLL(str(cudart_path()), mode=ctypes.RTLD_GLOBAL)


def import_holoscan():
    """Preload libcudart, then import and return the ``holoscan`` module."""
    preload_cudart()
    import holoscan

    return holoscan
