"""The schema of every table :func:`rtstudy.data.load` returns: each column's kind, unit and
meaning, as each experiment's ``SCHEMA`` declares them (``rtstudy/experiments/<name>/analysis.py``)
beside the columns every table has; how frames differ from it; and its Markdown in
``data/README.md`` (``rtstudy data schema --update-readme``). :mod:`rtstudy.data` gives each
public name here.
"""
from __future__ import annotations

from typing import NamedTuple

import pandas as pd
from pandas.api import types as ptypes

from rtstudy import registry
from rtstudy.data.io import CELL_COLUMNS


# The columns load() gives every row of every table, beside the cell's own
# (rtstudy.data.io.CELL_COLUMNS), as each experiment's SCHEMA declares its columns.
LOAD_COLUMNS = {
    "host_id": ("str", "", "the measuring host's id (a hash of its fingerprint, "
                "data/host/fingerprint.json): the dataset folder's name"),
    "profile": ("str", "", "the parameter profile measured: `smoke`, `default` or `seed`"),
}
# The kinds a schema declares, each with the test its pandas columns pass (text is str whether
# pandas holds it as object or as its str dtype).
KINDS = {"int": ptypes.is_integer_dtype, "float": ptypes.is_float_dtype,
         "bool": ptypes.is_bool_dtype, "str": ptypes.is_string_dtype}
# What encloses each generated block of data/README.md (`rtstudy data schema --update-readme`):
# the columns every table has (``common``), then each experiment's tables.
SCHEMA_MARKERS = ("<!-- schema:{}:begin -->", "<!-- schema:{}:end -->")
COMMON = "common"


class Column(NamedTuple):
    """One column of a table: its kind (:data:`KINDS`), unit (empty for none) and meaning."""

    kind: str
    unit: str
    meaning: str


class Table(NamedTuple):
    """One table :func:`rtstudy.data.load` returns: what a row is, and its columns in order."""

    rows: str
    columns: dict[str, Column]


def _common() -> dict[str, Column]:
    return {name: Column(*c) for name, c in {**CELL_COLUMNS, **LOAD_COLUMNS}.items()}


def schema(experiment: str) -> dict[str, Table]:
    """The schema of every table :func:`rtstudy.data.load` returns for ``experiment``.

    Parameters
    ----------
    experiment : str
        A registered experiment (:data:`rtstudy.data.EXPERIMENTS`).

    Returns
    -------
    dict of str to Table
        Table name → :class:`Table`: what a row is, and each column's
        :class:`Column` (kind, unit, meaning): the experiment's own (``SCHEMA``
        in its ``analysis.py``), then those of every table (the cell's,
        :data:`rtstudy.data.io.CELL_COLUMNS`, and :data:`LOAD_COLUMNS`).
        ``data/README.md`` shows it (:func:`schema_markdown`).
    """
    declared = registry.get(experiment).analysis.SCHEMA
    return {name: Table(rows, {**{c: Column(*v) for c, v in columns.items()}, **_common()})
            for name, (rows, columns) in declared.items()}


def schema_problems(experiment: str, frames: dict[str, pd.DataFrame]) -> list[str]:
    """How ``frames`` (as :func:`rtstudy.data.load` returns them) differ from :func:`schema`.

    Returns
    -------
    list of str
        One message per table missing or not declared, column missing or not
        declared, and column of another kind than declared (a table with rows:
        an empty one has no kinds to check); empty when they agree.
    """
    declared = schema(experiment)
    problems = [f"{experiment}: table {name!r} " + ("missing" if name in declared else "not declared")
                for name in sorted(set(declared) ^ set(frames))]
    for name in [n for n in declared if n in frames]:
        table, frame = declared[name].columns, frames[name]
        problems += [f"{experiment}.{name}: column {c!r} missing" for c in table
                     if c not in frame.columns]
        problems += [f"{experiment}.{name}: column {c!r} ({frame[c].dtype}) not declared"
                     for c in frame.columns if c not in table]
        if len(frame):
            problems += [f"{experiment}.{name}: column {c!r} is {frame[c].dtype}, declared {col.kind}"
                         for c, col in table.items()
                         if c in frame.columns and not KINDS[col.kind](frame[c])]
    return problems


def _markdown_table(columns: dict[str, Column]) -> list[str]:
    return ["| column | kind | unit | meaning |", "|---|---|---|---|",
            *(f"| `{name}` | {c.kind} | {c.unit} | {c.meaning} |" for name, c in columns.items())]


def schema_markdown(experiment: str | None = None) -> str:
    """:func:`schema` in Markdown, as ``data/README.md`` shows it.

    Parameters
    ----------
    experiment : str, optional
        A registered experiment: each of its tables, what a row is, and the
        columns of its own; None: the columns every table has.
    """
    if experiment is None:
        return "\n".join(["Every table of every experiment has these columns:", "",
                          *_markdown_table(_common())])
    common = _common()
    lines = []
    for name, table in schema(experiment).items():
        own = {c: col for c, col in table.columns.items() if c not in common}
        lines += [f"**`{name}`**: {table.rows}. Its columns, besides those every table has:", "",
                  *_markdown_table(own), ""]
    return "\n".join(lines[:-1])


def with_schema_docs(text: str) -> str:
    """``text`` (``data/README.md``) with every block between :data:`SCHEMA_MARKERS` made anew
    by :func:`schema_markdown`: the common columns' block, then each experiment's.

    Raises
    ------
    ValueError
        A block's markers are missing (the message names them).
    """
    for experiment in (None, *registry.REGISTRY):
        begin, end = (m.format(experiment or COMMON) for m in SCHEMA_MARKERS)
        head, found, rest = text.partition(begin)
        _, found_end, tail = rest.partition(end)
        if not (found and found_end):
            raise ValueError(f"no {begin} … {end} block: add both markers where the schema of "
                             f"{experiment or 'every table'} belongs")
        text = f"{head}{begin}\n{schema_markdown(experiment)}\n{end}{tail}"
    return text
