"""What one E1 run says of each producer: the messages rx kept of it, and its row of ``cells``.

:func:`rtstudy.experiments.e1_async_buffer.analysis.load` reads every run through
:func:`producer_run`, once per producer; the columns are those of its ``SCHEMA``.
"""
from __future__ import annotations

from typing import TypedDict

import numpy as np
import pandas as pd

from rtstudy.data.io import CellData
from rtstudy.experiments.e1_async_buffer.receipts import COLUMNS
from rtstudy.inference.stats import percentiles


class SampleArrays(TypedDict):
    """A run's samples, one array per column (:func:`columns_of`), each as
    :class:`.receipts.SampleColumns` says."""

    event: np.ndarray
    port: np.ndarray
    index: np.ndarray
    t_start_ns: np.ndarray
    t_emit_ns: np.ndarray
    t_rx_ns: np.ndarray


def columns_of(samples: pd.DataFrame) -> SampleArrays:
    """A run's samples as one numpy array per column of :data:`.receipts.COLUMNS`."""
    # As numpy arrays once per cell: pandas' per-call overhead on these small selections
    # was most of a large dataset's load (8.6 of 9.6 s for the reference's ten).
    return SampleArrays(**{c: samples[c].to_numpy() for c in COLUMNS})


def producer_run(cell: CellData, col: SampleArrays, producer: str, port: str,
                 discard_head: int, discard_tail: int) -> tuple[pd.DataFrame, dict]:
    """The messages rx kept of ``producer`` (on its input ``port``) in one run, and its metrics.

    Parameters
    ----------
    cell : CellData
        The run.
    col : SampleArrays
        Its samples (:func:`columns_of`): times in ns.
    producer, port : str
        ``tx1`` and ``in1``, or ``tx2`` and ``in2``.
    discard_head, discard_tail : int
        The first and last message indices left out (E1's parameters).

    Returns
    -------
    tuple of (DataFrame, dict)
        The kept messages in index order (``index``, ``latency_ms``, ``latency_emit_ms``,
        ``interval_ms``: the columns of ``messages``), and the metrics of the run's row of
        ``cells`` in their order, from ``latency_max_ms`` to ``phase_switches``.
    """
    config, summary = cell.config, cell.sidecar["summary"]
    received = np.flatnonzero((col["event"] == "receive") & (col["port"] == port))
    rx = received[np.argsort(col["index"][received], kind="quicksort")]  # by index
    index, t_rx = col["index"][rx], col["t_rx_ns"][rx]
    interval = np.concatenate([[np.nan], np.diff(t_rx)]) / 1e6
    keep = (index >= discard_head) & (index < config["messages"] - discard_tail)
    m = pd.DataFrame({
        "index": index[keep],
        "latency_ms": ((t_rx - col["t_start_ns"][rx]) / 1e6)[keep],
        "latency_emit_ms": ((t_rx - col["t_emit_ns"][rx]) / 1e6)[keep],
        "interval_ms": interval[keep],
    })
    emitted = col["t_emit_ns"][(col["event"] == "emit") & (col["port"] == producer)]
    emit_period = np.diff(np.sort(emitted)) / 1e6
    lat, lat_e, itv = (percentiles(m[c], (50, 99)) for c in
                       ("latency_ms", "latency_emit_ms", "interval_ms"))
    return m, {"latency_max_ms": lat["max"], "latency_p50_ms": lat["p50"],
               "latency_p99_ms": lat["p99"], "latency_emit_max_ms": lat_e["max"],
               "interval_max_ms": itv["max"], "interval_p50_ms": itv["p50"],
               "n_messages": lat["n"],
               "emit_period_ms": float(np.median(emit_period)) if emit_period.size else np.nan,
               "nominal_period_ms": config[f"{producer}_period_ms"],
               "stale_reads": summary["stale_reads"][port],
               "duration_s": summary["duration_s"],
               **start_up(t_rx, col["t_emit_ns"][rx], emitted),
               "phase_switches": int(np.count_nonzero(np.diff(
                   (m["latency_emit_ms"] > config["rx_period_ms"] / 2).to_numpy(int))))}


class StartUp(TypedDict):
    first_wait_ms: float  # rx's first read of a message − its emit (NaN with none)
    backlog_at_first_read: int  # messages emitted before that read, less the one read


def start_up(t_rx: np.ndarray, t_emit: np.ndarray, emitted: np.ndarray) -> StartUp:
    """How a run started for one producer: ``first_wait_ms`` (rx's first read of its message −
    that message's emit, ms; NaN with no message) and ``backlog_at_first_read`` (its messages
    emitted before that read, less the one read).

    Parameters
    ----------
    t_rx, t_emit : ndarray
        Each received message's read and emit, ns.
    emitted : ndarray
        Every emit of the producer, ns.
    """
    first = int(np.argmin(t_rx)) if len(t_rx) else None  # the earliest receive
    return {"first_wait_ms": (float(t_rx[first] - t_emit[first]) / 1e6
                              if first is not None else np.nan),
            "backlog_at_first_read": (max(0, int((emitted < t_rx[first]).sum()) - 1)
                                      if first is not None else 0)}
