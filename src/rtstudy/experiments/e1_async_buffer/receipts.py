"""What E1's receiver keeps on either SDK: each new message once, re-reads and empty reads counted.

No Holoscan here, so the 4.x app (``app.py``) and the 5.0 app (``app5.py``) record, and
write their samples and summary, alike; E1's analysis reads both.
"""
from __future__ import annotations

from typing import TypedDict

PORTS = ("in1", "in2")
PRODUCERS = {"tx1": "in1", "tx2": "in2"}  # which producer feeds which input of rx


class ReceiptsSummary(TypedDict):
    """The cell summary's keys E1's analysis reads (:meth:`Receipts.summary`)."""

    complete: bool  # both producers' last messages arrived
    stale_reads: dict[str, int]  # port → re-reads of a message already read
    empty_reads: dict[str, int]  # port → reads that found none
    received: dict[str, int]  # port → messages received


class SampleColumns(TypedDict):
    """E1's samples, one list per column (:func:`columns`), as app.py writes them."""

    event: list[str]  # "emit" (a producer's message) or "receive" (rx's read of a new one)
    port: list[str]  # an emit's producer (tx1, tx2), a receipt's input port (PRODUCERS)
    index: list[int]  # the message's index
    t_start_ns: list[int]  # its producer's compute start (CLOCK_MONOTONIC)
    t_emit_ns: list[int]  # its emit
    t_rx_ns: list[int]  # rx's read of it (0 on an emit row)


COLUMNS = tuple(SampleColumns.__annotations__)


class Receipts:
    """``rx``'s record: one row per new message (port, index, t_start, t_emit, t_rx in ns).

    A buffer that hands back the latest message on every read (4.x's async buffer, 5.0's
    latest-value connection) repeats an index: counted as a stale re-read, not a message.

    Parameters
    ----------
    last_index : int
        Each producer's last message index: both arrived means the run is complete.
    """

    def __init__(self, last_index: int):
        self.last_index = last_index
        self.latest = {port: -1 for port in PORTS}
        self.rows: list[tuple[str, int, int, int, int]] = []
        self.stale = {port: 0 for port in PORTS}
        self.empty = {port: 0 for port in PORTS}

    def record(self, port: str, msg: tuple[int, int, int] | None, t_rx_ns: int) -> None:
        """Keep ``msg`` = (index, t_start_ns, t_emit_ns) read on ``port`` at ``t_rx_ns``, or
        count it (None: nothing to read; an index seen last time: a re-read)."""
        if msg is None:
            self.empty[port] += 1
        elif msg[0] == self.latest[port]:
            self.stale[port] += 1
        else:
            self.latest[port] = msg[0]
            self.rows.append((port, *msg, t_rx_ns))

    @property
    def complete(self) -> bool:
        """Both producers' last messages have arrived."""
        return all(index == self.last_index for index in self.latest.values())

    def summary(self) -> ReceiptsSummary:
        """The cell summary's keys E1's analysis reads (besides ``duration_s``)."""
        return {"complete": self.complete, "stale_reads": self.stale, "empty_reads": self.empty,
                "received": {port: sum(1 for r in self.rows if r[0] == port) for port in PORTS}}


def columns(sent: dict[str, tuple[list[int], list[int]]], receipts: Receipts) -> SampleColumns:
    """E1's samples: an ``emit`` row per message of each producer, a ``receive`` row per new one.

    Parameters
    ----------
    sent : dict
        Producer name → (t_start_ns, t_emit_ns) of each message it emitted, in index order.
    receipts : Receipts
        What ``rx`` recorded.
    """
    rows = [("emit", name, index, start, emit, 0) for name, (starts, emits) in sent.items()
            for index, (start, emit) in enumerate(zip(starts, emits))]
    rows += [("receive", *row) for row in receipts.rows]
    return SampleColumns(**{name: [row[k] for row in rows] for k, name in enumerate(COLUMNS)})
