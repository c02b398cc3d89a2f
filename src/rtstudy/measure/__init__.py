"""Measuring: one measuring stage, from its preflight to every cell's files on disk.

In the order a stage runs them:

- :mod:`~rtstudy.stage`: one measuring stage: the preflight, then the sweep.
- :mod:`~rtstudy.measure.preflight`: what the stage needs, checked before anything is measured.
- :mod:`~rtstudy.measure.harness`: the sweep: one cell = one Holoscan app in its own process.
- :mod:`~rtstudy.measure.cell`: what one cell is (its config, its drift check) and its outcome.
- :mod:`~rtstudy.measure.session`: the session a sweep belongs to, and the code's git state.
- :mod:`~rtstudy.measure.store`: a cell's files written whole: samples, sidecar, failures.
- :mod:`~rtstudy.measure.process`: how each process is set up before it runs, and ended.
- :mod:`~rtstudy.measure.realtime`: the real-time requests the harness hands each cell.
- :mod:`~rtstudy.measure.work`: the work an operator does (native or pure Python).
- :mod:`~rtstudy.measure.readback`: what a cell really got, read back from outside it.
- :mod:`~rtstudy.measure.integrity`: the checksums written with every sample file.
- :mod:`~rtstudy.measure.tuned`: the study on a shielded host: apply, measure, always revert.

The cells' own entry points are in :mod:`rtstudy.apps`. This room may import
:mod:`rtstudy.machine` and :mod:`rtstudy.sdks`; it never reads what it wrote back as data
(that is :mod:`rtstudy.data`).
"""
