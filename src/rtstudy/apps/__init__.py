"""Holoscan applications, one module per experiment; each runs as a cell's subprocess.

Importing this package preloads libcudart (see :mod:`rtstudy.holo`), so the
app modules can import ``holoscan`` at their top like any Holoscan example.
"""
from rtstudy.holo import preload_cudart

preload_cudart()
