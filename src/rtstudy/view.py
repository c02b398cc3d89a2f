"""What an experiment shows of one run in ``notebooks/explore.ipynb``: its :class:`View`.

Each experiment's ``explore.py`` declares one (``VIEW``); :mod:`rtstudy.explore` draws every
experiment's runs from it, so the figures know no experiment. This module imports none.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class View:
    """Which columns of which table make one run's time series and histogram.

    A *condition* is a table's ``label`` (every factor but the repetition), a *run* one
    ``repetition`` of it on one ``host_id``: every table of :func:`rtstudy.data.load` has
    these three columns.

    Attributes
    ----------
    table : str
        The table with one row per observation of a run (a frame, a message, a bin).
    value : str
        The quantity drawn over time and as a histogram.
    value_label : str
        Its axis label, with the unit.
    time : str, optional
        The column that orders a run's observations (a time, an index, a run length);
        None where the table is a histogram already.
    time_label : str
        Its axis label, with the unit.
    series : str, optional
        A column that splits one run into several series (E1's producers).
    count : str, optional
        Where ``table`` is a histogram already: the column that counts each ``value``.
    histogram : bool
        Whether a histogram of ``value`` says something (a few timed runs per cell do not).
    log : bool
        Draw ``value`` on a log axis (latencies that span decades).
    """

    table: str
    value: str
    value_label: str
    time: str | None = None
    time_label: str = ""
    series: str | None = None
    count: str | None = None
    histogram: bool = True
    log: bool = False
