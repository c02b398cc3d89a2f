"""The study's protocol version: what every cell records it was measured under.

The protocol (questions, yardsticks, criteria, words and sizes) is frozen, with a version and the
sha256 of its text (:mod:`rtstudy.report.preregistration` writes the text; ``rtstudy protocol``
prints it). Every cell's sidecar records :func:`record`; a verdict is *confirmatory* only where
every session it pools was measured under the version in force, else *exploratory*. Changing a
criterion, a word or a size is a new version (a new entry in :data:`FROZEN`), never an edit: the
sessions measured before it then decide nothing under it.

A leaf: it imports nothing of rtstudy, so the harness that writes sidecars and the report that
reads them both read it.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TypedDict


@dataclass(frozen=True)
class Frozen:
    """A frozen protocol version.

    Attributes
    ----------
    utc : str
        When it was frozen (UTC, ``YYYY-MM-DDTHH:MMZ``): only data measured after it decides.
    sha256 : str
        The hash of its text (:func:`rtstudy.report.preregistration.digest`).
    """

    utc: str
    sha256: str


# Every version ever frozen, oldest first; the last one is in force.
FROZEN: dict[int, Frozen] = {
    1: Frozen("2026-12-07T00:26Z",
              "b8cdb014f89befd5eb33fe958dd7c766634551177ded8de6bfde3e125a50131c"),
}
VERSION = max(FROZEN)


class Status(str, Enum):
    """What a host state's verdicts rest on: sessions measured under the protocol in force
    (confirmatory), or some measured before its freeze (exploratory). A ``str`` (its value), as
    :class:`rtstudy.inference.judge.Verdict`: metrics.json and the words show the word."""

    CONFIRMATORY = "confirmatory"
    EXPLORATORY = "exploratory"

    __str__ = str.__str__
    __format__ = str.__format__
    __hash__ = str.__hash__  # as its word, in a set or as a key


class ProtocolRecord(TypedDict):
    """The frozen protocol a cell was measured under, as its sidecar records it."""

    version: int
    sha256: str  # of the protocol's text (rtstudy protocol)


def record() -> ProtocolRecord:
    """What a cell records of the protocol it was measured under."""
    return {"version": VERSION, "sha256": FROZEN[VERSION].sha256}


def version_of(sidecar: dict) -> int | None:
    """The protocol version a cell's sidecar records; None for a cell measured before versions
    were recorded (exploratory under every version)."""
    recorded = sidecar.get("protocol")
    return recorded.get("version") if isinstance(recorded, dict) else None
