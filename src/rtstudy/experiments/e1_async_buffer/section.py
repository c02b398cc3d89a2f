"""E1's report section: its prose (``report.md.j2``), tables, figures and summary rows."""
from __future__ import annotations

from functools import partial
from pathlib import Path

from rtstudy.data.io import Dataset
from rtstudy.experiments.e1_async_buffer import analysis, figures, published
from rtstudy.inference.stats import CI
from rtstudy.report.section import (Figure, LazyMarkdown, Markdown, Quantity, Section, Table,
                                    Verdict, format_p_columns, render)

FOLDER = Path(__file__).resolve().parent
LABEL = "E1"
HYPOTHESIS = "H1"
CLAIM = published.CLAIM  # the source's claim HYPOTHESIS names (rtstudy protocol)
# How the Methods count E1's factors.
FACTORS = (("scenarios", "scenario(s)"), ("buffers", "buffer(s)"), ("policies", "policy(ies)"),
           ("work_models", "work model(s)"), ("periods_ms", "periods"))


def build(ds: Dataset, cfg: dict, ci: CI) -> Section:
    """E1's section from its dataset, its parameters and the report's CI settings."""
    messages, cells = ds.tables["messages"], ds.tables["cells"]
    slopes = analysis.slopes(cells, ci.confidence)
    h = analysis.headline(cells, slopes, rx_period_ms=cfg["rx_period_ms"])
    far = analysis.outliers(cells, ds.directory)

    # Every block of the words sees the headline, the parameters and the CI settings.
    words = partial(render, FOLDER, h=h, cfg=cfg, ci=ci)

    section = Section(name="e1_async_buffer", label=LABEL, hypothesis=HYPOTHESIS,
                      claim=published.CLAIM, title=words("title"), headline=h)
    # The main page's figure: the seed's plot, each buffer's max latency against the period.
    section.main = [Figure(lambda: figures.e1_seed_figures(cells, ci))]
    section.blocks = [
        # Made when shown: the report sets the host's other sessions after this is built.
        LazyMarkdown(lambda: words("section", source=published.SOURCE.cite(published.WHERE),
                                   missing=len(ds.missing), n_outliers=len(far),
                                   over=analysis.modes_over_sessions(
                                       section.session_headlines()))),
        Table(lambda: analysis.seed_table(cells, ci), words("caption_seed_table")),
        Table(lambda: far, words("caption_outliers")),
        Table(lambda: format_p_columns(analysis.buffer_tests(messages)),
              words("caption_buffer_tests")),
        Figure(lambda: figures.e1_latency_percentiles(cells)),
        Figure(lambda: figures.e1_emit_period(cells)),
        Markdown(words("methods", hosts=sorted(cells["host_id"].unique()))),
    ]
    section.verdicts = [Verdict(f"{HYPOTHESIS} {scenario}", published.SUMMARY, words("summary", v=v),
                                v["verdict"], int(v.get("runs", 0)), words("criterion"),
                                tuple(v["parts"]), analysis.h1_combine)
                        for scenario, v in sorted(h.verdict.items())]
    section.quantities = [
        Quantity(f"{r['scenario']} {r['buffer']}: max-latency slope", r["slope"], r["low"],
                 r["high"], "ms/ms", int(r["n"]))
        for r in slopes.to_dict("records")
        if r["policy"] == "deadline" and r["work_model"] == "native"]
    section.measured = words("measured", n_runs=h.n_cells, factors=" × ".join(
        f"{len(cfg[key])} {name}" for key, name in FACTORS))
    deadline = cells[cells["policy"] == "deadline"] if len(cells) else cells
    if len(deadline) and not deadline["pinned"].any():
        section.limitations.append(words("unpinned"))
    return section
