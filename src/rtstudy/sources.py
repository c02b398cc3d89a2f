"""A source document the study reproduces, cited by its public title and address.

Each experiment's ``published.py`` names its source with a :class:`Source`.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    """A document cited by its public title, publisher and URL."""

    title: str
    publisher: str
    url: str

    def cite(self, where: str = "") -> str:
        """Markdown: the linked title, its publisher, and optionally the section meant."""
        part = f", {where}" if where else ""
        return f"[*{self.title}*]({self.url}) ({self.publisher}){part}"
