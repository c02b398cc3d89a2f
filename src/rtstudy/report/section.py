"""What an experiment's report section is made of, and how its words are rendered.

An experiment's ``section.build`` returns a :class:`Section`: its verdict rows
for the summary, its headline quantities (compared across hosts), its one
figure for the report's main page, its other blocks in display order (prose,
tables and figures, the last two made only when shown; collapsed under the main
page's figure), its advice for the report's "What to do" and its lines for the
report's Methods and Limitations. The prose comes
from the experiment's ``report.md.j2``, one Jinja2 block per piece, fed with
numbers from its ``headline``. This module imports no experiment.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import jinja2
import numpy as np
import pandas as pd

from rtstudy.inference.stats import format_p
from rtstudy.policies import RT_POLICIES, short


@dataclass(frozen=True)
class Verdict:
    """One row of the report's summary: a claim, the source's figure, ours, the verdict.

    ``runs`` is the fewest independent runs behind it and ``criterion`` the rule
    with its threshold or margin; both go to ``report/metrics.json``. ``parts`` are the
    estimates it was judged on and ``combine`` the claim's rule from them
    (:mod:`rtstudy.inference.judge`): with them the claim is judged over sessions pooled. A claim
    this host cannot test has no parts.
    """

    claim: str
    published: str
    ours: str
    verdict: str
    runs: int = 0
    criterion: str = ""
    parts: tuple = ()
    combine: Callable | None = None


# The unit of a rate of rare frames (E2's late frames), and the units a Quantity may carry
# that cannot be below zero (durations and spreads, rates, ratios): intervals over sessions
# start at 0 for them (stability.session_estimates).
RATE_UNIT = "per 10 000 frames"
NONNEGATIVE_UNITS = ("µs", RATE_UNIT, "×")


@dataclass(frozen=True)
class Quantity:
    """A headline number of one dataset, for comparing hosts: value, CI (NaN if none), unit, N,
    and ``within`` (unit²): the mean over its runs of one run's value's sampling variance from
    its own frames (:func:`rtstudy.inference.within.within_run_variance`); NaN for a contrast between
    conditions, a maximum or a quantile too near the edge of its samples, which have none of
    their own."""

    quantity: str
    value: float
    low: float = np.nan
    high: float = np.nan
    unit: str = ""
    n: int = 0
    within: float = np.nan


@dataclass(frozen=True)
class Markdown:
    text: str


@dataclass(frozen=True)
class LazyMarkdown:
    """Words made when shown: ``make()`` returns the Markdown. For words that depend on what
    the report learns after the section is built (its host's other sessions)."""

    make: Callable[[], str]


@dataclass(frozen=True)
class Table:
    """A table made when shown: ``make()`` returns the DataFrame, shown under ``caption``."""

    make: Callable[[], pd.DataFrame]
    caption: str


@dataclass(frozen=True)
class Figure:
    """A figure made when shown: ``make()`` draws it (and writes its files)."""

    make: Callable[[], object]


@dataclass(frozen=True)
class Details:
    """Blocks shown collapsed under a one-line ``summary`` (an HTML ``<details>``): the lab
    book's detail, which the main page names but does not spread out."""

    summary: str
    blocks: list


@dataclass(frozen=True)
class Advice:
    """One change a reader can make, measured: a row of the report's "What to do".

    Attributes
    ----------
    change : str
        What to do, in words (``give the operator SCHED_FIFO (its own pinned thread)``).
    against : str
        The condition without it, in words.
    late : str
        Late frames before → after, with the frames they were counted in.
    ratio : str
        Late frames' rate ratio (after / before) with its CI (``×0.04 [0.03, 0.07]``).
    word : str
        What that ratio decided against its stated margin (``fewer``, ``equivalent``,
        ``more``, ``not settled``, ``no CI``).
    typical : str
        Typical jitter's ratio with its CI (``×0.70 [0.46, 1.06]``): shown, not judged (no
        margin the budget reaches decides it).
    cost : str
        What it costs besides.
    sessions : int
        How many sessions the numbers pool (1: one session's).
    value : float
        The rate ratio itself (NaN where not compared), for ordering.
    why : str
        Why a ``not settled`` is so where it is not the CI (``too few late frames to
        compare``); empty otherwise.
    claim : str
        The claim whose verdicts say when the change helps (``H5c`` for busy polling); empty
        where none does.
    when : str
        That claim's verdicts over every host state with data, grouped by the host's tuning
        (:meth:`rtstudy.report.study_hosts.StudyHosts.when`); empty until the study fills it.
    lateness : str
        In the units practitioners quote: the lateness P99 (mean over runs, with its CI) and
        the largest, before → after, in µs; empty where not measured.
    code : str
        Markdown: the Holoscan 4.6 and 5.0 code that gives an operator the measured
        configuration, with the privilege it needs; empty where the study has none.
    """

    change: str
    against: str
    late: str
    ratio: str
    word: str
    typical: str
    cost: str
    sessions: int = 1
    value: float = float("nan")
    why: str = ""
    claim: str = ""
    when: str = ""
    lateness: str = ""
    code: str = ""
    low: float = float("nan")
    high: float = float("nan")

    def tied(self, other: "Advice") -> bool:
        """Whether this change's rate-ratio CI overlaps ``other``'s: their order is not
        measured (a tie, not a ranking)."""
        return bool(self.low <= other.high and other.low <= self.high)


@dataclass
class Section:
    """One experiment's part of the report.

    Attributes
    ----------
    name : str
        The experiment (its registry name).
    label : str
        ``E1`` …, used where the report names the experiment.
    hypothesis : str
        ``H1`` …, the claim it tests.
    claim : str
        The hypothesis in one line, for the report's introduction (``H1 — …``).
    title : str
        The experiment's heading without its label (``Scheduler overhead``).
    main : list
        What the report's main page shows of it under its verdicts: one figure.
    verdicts : list of Verdict
        Its rows of the summary table.
    quantities : list of Quantity
        Its headline numbers, compared across hosts.
    blocks : list
        :class:`Markdown`, :class:`Table` and :class:`Figure`, in display order: the detail
        the main page shows collapsed under :attr:`main`.
    advice : callable
        ``advice()``: its measured changes for the report's "What to do" (list of
        :class:`Advice`), pooled over the host's sessions where it has several; called when
        shown, after the report has set :attr:`session_headlines`. Empty by default.
    scope : str
        What its advice was measured on, for the report's "What to do" (``a 60 FPS Python
        operator beside 3 CPU-bound load threads per CPU``).
    notes : callable
        ``notes()``: what else its data says to do, Markdown bullets for the same place.
    compare : callable
        ``compare(other, change, against)``: its headline measure in ``other`` (the same
        experiment's section from another dataset, e.g. another SDK version) against this
        one's, as an :class:`Advice` with those words; None where it has no such measure.
    measured : str
        Its line of the Methods' "what was measured" list (Markdown).
    limitations : list of str
        What limits its data, one sentence each.
    headline : frozen dataclass or None
        The numbers its prose quotes (its analysis's ``headline``, e.g. E2's ``E2Headline``;
        ``Any`` here, as this module imports no experiment), kept for a reader exploring the
        section; None in a section built without one.
    findings : dict
        Conclusions that are not verdicts on a published claim (e.g. E2's "what to do"):
        name → conclusion in words; in ``report/metrics.json`` where there are any, so two
        sessions can be compared on them.
    pooled_findings : callable
        ``pooled_findings(headlines)``: the :attr:`findings` judged on every session pooled,
        from each session's ``headline`` (oldest first); ``report/metrics.json`` keeps them as
        ``findings_pooled``. Empty by default (an experiment without findings over sessions).
    sdk_blocks : list
        Blocks the "SDK versions compared" section shows of this section's dataset, under its
        SDK version's label, beside the same blocks of the other versions (E5's H5b table).
        Empty by default.
    session_headlines : callable
        ``session_headlines()`` gives the ``headline`` of this experiment in every session of
        the shown host, oldest first (empty with one session); the report sets it, so that a
        table drawn later can say what held in every session.
    """

    name: str
    label: str
    hypothesis: str
    claim: str
    title: str = ""
    main: list = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    quantities: list[Quantity] = field(default_factory=list)
    blocks: list = field(default_factory=list)
    measured: str = ""
    limitations: list[str] = field(default_factory=list)
    headline: Any = None
    sdk_blocks: list = field(default_factory=list)
    findings: dict[str, str] = field(default_factory=dict)
    pooled_findings: Callable[[list[Any]], dict[str, str]] = field(default=lambda h: {},
                                                                    repr=False)
    session_headlines: Callable[[], list[Any]] = field(default=lambda: [], repr=False)
    advice: Callable[[], list[Advice]] = field(default=lambda: [], repr=False)
    scope: str = ""
    notes: Callable[[], str] = field(default=lambda: "", repr=False)
    compare: Callable[["Section", str, str], Advice | None] = field(
        default=lambda other, change, against: None, repr=False)


# The report's own templates: shared macros (``macros.j2``) every experiment's words may import.
TEMPLATES = Path(__file__).resolve().parent / "templates"


@lru_cache(maxsize=None)
def _environment(folder: Path) -> jinja2.Environment:
    """One environment per template folder for the whole process: it keeps each template
    compiled (a report renders ~1 000 blocks from a dozen files; compiling each one again cost a
    third of the report's time), and recompiles a file that changed on disk."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader([str(folder), str(TEMPLATES)]),
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=False)
    env.filters.update(pct=lambda v, d=0: f"{v:.{d}%}", signed_pct=lambda v, d=0: f"{v:+.{d}%}",
                       num=lambda v, d=1: f"{v:,.{d}f}", g=lambda v: f"{v:g}",
                       policy=short,
                       join_num=lambda vs, d=0: ", ".join(f"{v:,.{d}f}" for v in vs))
    # `tied_with`: two changes whose rate-ratio CIs overlap (Advice.tied): not a ranking.
    env.tests["tied_with"] = lambda a, other: a.tied(other)
    env.globals["rt_policies"] = list(RT_POLICIES)
    return env


def render(folder: Path, block: str, template: str = "report.md.j2", **context) -> str:
    """Render block ``block`` of ``folder/template`` with ``context``; an unknown name is an error.

    Parameters
    ----------
    folder : Path
        The experiment's folder (or the report's template folder).
    block : str
        A ``{% block NAME %}`` of the template.
    template : str
        The template's file name.
    **context
        The values the block may use (the headline, the parameters, the sources).
    """
    tmpl = _environment(folder).get_template(template)
    if block not in tmpl.blocks:
        raise KeyError(f"{folder / template}: no block {block!r}; blocks: {', '.join(tmpl.blocks)}")
    text = "".join(tmpl.blocks[block](tmpl.new_context(context)))
    # Templates wrap long sentences over lines; Markdown paragraphs are what matters. A list,
    # a table or a heading keeps its lines.
    return "\n\n".join(p.strip() if _KEEP_LINES.match(p.lstrip()) else " ".join(p.split())
                       for p in text.strip().split("\n\n"))


_KEEP_LINES = re.compile(r"[-|#]|\d+\. ")


def format_p_columns(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every p-value column (named ``p …``) formatted for reading."""
    out = df.copy()
    for col in out.columns:
        if str(col).startswith("p "):
            out[col] = out[col].map(format_p)
    return out
