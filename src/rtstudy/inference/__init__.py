"""Inference: estimates with their CIs, and the written-down rules that turn them into words.

- :mod:`~rtstudy.inference.criteria`: every criterion a verdict applies, dated.
- :mod:`~rtstudy.inference.stats`: estimates over runs, each with N and a CI; the tests.
- :mod:`~rtstudy.inference.fits`: straight lines through a sweep's points, with their CIs.
- :mod:`~rtstudy.inference.events`: rare events as rates pooled over runs; Wilks' bound.
- :mod:`~rtstudy.inference.within`: a run's statistic's variance from its own samples.
- :mod:`~rtstudy.inference.meta`: estimates over sessions (random effects, the next session).
- :mod:`~rtstudy.inference.rates`: rare events compared: rate ratios made for counts.
- :mod:`~rtstudy.inference.judge`: a claim judged part by part against its rule.
- :mod:`~rtstudy.inference.records`: H5a, Holoscan 5.0's placement records against the kernel.

Nothing here reads files or imports another room: it works on the tables it is given.
"""
