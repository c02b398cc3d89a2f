"""E5's report section: its prose (``report.md.j2``), the H5b table, figure and summary row."""
from __future__ import annotations

from functools import partial
from pathlib import Path

from rtstudy.data.io import Dataset
from rtstudy.experiments.e5_placement import analysis, figures, provoke, published
from rtstudy.inference.stats import CI
from rtstudy.report.section import Figure, Markdown, Section, Table, Verdict, render

FOLDER = Path(__file__).resolve().parent
LABEL = "E5"
HYPOTHESIS = "H5b"
CLAIM = published.CLAIM  # the source's claim HYPOTHESIS names (rtstudy protocol)


def build(ds: Dataset, cfg: dict, ci: CI) -> Section:
    """E5's section from its dataset and its parameters (no CI: its checks are equalities)."""
    h = analysis.headline(ds)
    words = partial(render, FOLDER, h=h, cfg=cfg)
    table = analysis.conditions(ds.tables["outcomes"]) if h.n_cells else None

    section = Section(name="e5_placement", label=LABEL, hypothesis=HYPOTHESIS,
                      claim=published.CLAIM, title=words("title"), headline=h)
    if table is not None:
        section.main = [Figure(lambda: figures.e5_outcomes(table))]
        # The same table in the "SDK versions compared" section, one per SDK version.
        section.sdk_blocks = [Table(lambda: analysis.condition_table(table),
                                    words("caption_table"))]
    section.blocks = [
        Markdown(words("section", probe=published.PROBE_POLICY.cite(),
                       irq=published.IRQ_ISOLATION.cite(), placement=published.PLACEMENT.cite(),
                       missing=len(ds.missing))),
        *section.sdk_blocks,
        Markdown(words("methods", provocations=provoke.PROVOCATIONS)),
    ]
    v = h.verdict
    section.verdicts = [Verdict(HYPOTHESIS, published.SUMMARY, words("summary", v=v),
                                v["verdict"], v["runs"], words("criterion"))]
    # Each condition that differs from the reference, in report/metrics.json (findings).
    if h.differs:
        section.findings = {"H5b differs": words("differs")}
    section.measured = words("measured")
    if h.not_provoked:
        section.limitations = [words("not_provoked")]
    return section
