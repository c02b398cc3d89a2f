"""E3's report section: its prose (``report.md.j2``), table, figures and summary row."""
from __future__ import annotations

from functools import partial
from pathlib import Path

from rtstudy.data.io import Dataset
from rtstudy.experiments.e3_overhead import analysis, figures, published
from rtstudy.inference.stats import CI, MIN_RUNS, over_runs
from rtstudy.report.section import Figure, Markdown, Quantity, Section, Table, Verdict, render

FOLDER = Path(__file__).resolve().parent
LABEL = "E3"
HYPOTHESIS = "H3"
CLAIM = published.CLAIM  # the source's claim HYPOTHESIS names (rtstudy protocol)


def build(ds: Dataset, cfg: dict, ci: CI) -> Section:
    """E3's section from its dataset, its parameters and the report's CI settings."""
    runs = ds.tables["runs"]
    fits = analysis.fits(runs, ci.confidence)
    h = analysis.headline(runs, ci)

    # Every block of the words sees the headline, the parameters and the CI settings.
    words = partial(render, FOLDER, h=h, cfg=cfg, ci=ci)

    section = Section(name="e3_overhead", label=LABEL, hypothesis=HYPOTHESIS,
                      claim=published.CLAIM, title=words("title"), headline=h)
    # The main page's figure: each scheduler's cost per iteration beside the published band.
    section.main = [Figure(lambda: figures.e3_overhead(runs, fits, ci))]
    section.blocks = [
        Markdown(words("section", source=published.SOURCE.cite(published.WHERE),
                       missing=ds.missing, min_runs=MIN_RUNS)),
        Table(lambda: analysis.summary_table(runs, fits, ci), words("caption_table")),
        Figure(lambda: figures.e3_fit(runs, fits)),
        Markdown(words("methods", hosts=sorted(runs["host_id"].unique()))),
    ]
    section.verdicts = [Verdict(HYPOTHESIS, published.SUMMARY, words("summary", v=h.verdict),
                                h.verdict["verdict"], int(h.verdict["runs"]),
                                words("criterion", min_runs=MIN_RUNS),
                                tuple(h.verdict["judged"]),
                                partial(analysis.h3_combine, ordering=h.verdict["ordering"]))]
    at_max = runs[runs["iterations"] == runs["iterations"].max()]
    for (app, label), g in at_max.groupby(["app", "scheduler_label"]):
        est = over_runs(g["steady_us_per_iter"], ci)
        section.quantities.append(Quantity(f"{app}, {label}: steady cost", est.value, est.low,
                                           est.high, "µs", est.n,
                                           float(g["steady_within_us2"].mean())))
    section.measured = words("measured", n_runs=len(runs), n_cells=runs["cell_id"].nunique())
    return section
