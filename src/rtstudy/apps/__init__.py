"""What every cell's subprocess shares (:mod:`rtstudy.apps.child`), and the harness's probe app.

Importing this package preloads libcudart (see :mod:`rtstudy.sdks.holo`), so an
app module that imports :mod:`rtstudy.apps.child` first can import ``holoscan``
like any Holoscan example. The experiments' apps live in their own folders
(``rtstudy/experiments/<name>/app.py``).
"""
from rtstudy.sdks.holo import preload_cudart

preload_cudart()
