"""The study's experiments, one folder each.

The registry of which experiments the study runs, and the protocol each folder
implements, are :mod:`rtstudy.registry`: every other layer reads that leaf, never
this package.
"""
