"""Inference: estimates with their CIs, and the written-down rules that turn them into words.

- :mod:`~rtstudy.inference.criteria`: every criterion a verdict applies, dated.
- :mod:`~rtstudy.inference.stats`: estimates over runs and sessions, each with N and a CI.
- :mod:`~rtstudy.inference.rates`: rare events compared: rate ratios made for counts.
- :mod:`~rtstudy.inference.judge`: a claim judged part by part against its rule.
- :mod:`~rtstudy.inference.records`: H5a, Holoscan 5.0's placement records against the kernel.

Nothing here reads files or imports another room: it works on the tables it is given.
"""
