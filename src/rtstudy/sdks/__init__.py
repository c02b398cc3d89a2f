"""The Holoscan SDKs: which versions the study measures and the environment each runs in.

- :mod:`~rtstudy.sdks.sdk`: the versions and their environments (the study's venv, a venv of
  its own, a Debian 13 root).
- :mod:`~rtstudy.sdks.sdkroot`: the Debian 13 root for wheels that need a newer glibc.
- :mod:`~rtstudy.sdks.sdkvenv`: a venv of its own for a version that needs another Python.
- :mod:`~rtstudy.sdks.builds`: how either is built once, in a work folder renamed when done.
- :mod:`~rtstudy.sdks.holo`: importing Holoscan on a machine without a GPU.
- :mod:`~rtstudy.sdks.kernelspec`: the ``rtstudy`` Jupyter kernel.

It may import :mod:`rtstudy.machine`, nothing above.
"""
