"""E4's report section: its prose (``report.md.j2``), tables, figures and summary row."""
from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from rtstudy.data.io import Dataset, read_plan
from rtstudy.experiments.e4_host import analysis, figures, published
from rtstudy.inference import judge
from rtstudy.inference.stats import CI, MIN_RUNS, over_runs
from rtstudy.report.section import Figure, Markdown, Quantity, Section, Table, Verdict, render

FOLDER = Path(__file__).resolve().parent
LABEL = "E4"
HYPOTHESIS = "H4"
CLAIM = published.CLAIM  # the source's claim HYPOTHESIS names (rtstudy protocol)


def build(ds: Dataset, cfg: dict, ci: CI) -> Section:
    """E4's section from its dataset (with the recorded audit) and its parameters."""
    hists, stats = ds.tables["histograms"], ds.tables["stats"]
    record = ds.extra.get("audit", {})
    # Whether the probe outranked stress-ng: read from the plan the data was measured with.
    probe_realtime = any(c["config"].get("fifo_priority") for c in read_plan(ds.directory)["cells"]
                         if c["config"].get("kind") == "jitter")
    h = analysis.headline(record, stats, ci, probe_realtime)

    jitter = stats[stats["kind"] == "jitter"] if len(stats) else stats
    floor = stats[stats["kind"] != "jitter"] if len(stats) else stats
    # Every block of the words sees the headline, the parameters and the CI settings, and
    # which floor tools and loads the data holds (a host without rt-tests or stress-ng runs
    # E4 only with them taken out of its parameters).
    words = partial(render, FOLDER, h=h, cfg=cfg, ci=ci,
                    interruption_us=analysis.INTERRUPTION_NS / 1000,
                    min_difference_pp=analysis.MIN_DIFFERENCE * 100,
                    min_tail_cut=analysis.MIN_TAIL_CUT,
                    floor_kinds=sorted(set(floor["kind"])) if len(floor) else [],
                    floor_loads=sorted(set(floor["load"])) if len(floor) else [])

    section = Section(name="e4_host", label=LABEL, hypothesis=HYPOTHESIS,
                      claim=published.CLAIM, title=words("title"), headline=h)
    # The main page's figure: the jitter ladder, each CPU's tail against its median.
    section.main = [Figure(lambda: figures.e4_ladder(stats))]
    section.blocks = [
        Markdown(words("section", source=published.SOURCE.cite(published.WHERE),
                       isolation=published.ISOLATION.cite(published.ISOLATION_WHERE),
                       seed_p50=published.LADDER_NS["untuned"]["p50"], missing=len(ds.missing))),
        Table(lambda: analysis.ladder_table(stats), words("caption_ladder")),
        Figure(lambda: figures.e4_jitter_histograms(hists)),
        Table(lambda: analysis.floor_table(stats), words("caption_floor")),
        Table(lambda: analysis.audit_table(record), words("caption_audit")),
    ]
    v = h.verdict
    ratios = v.get("ratios") or {}
    section.verdicts = [Verdict(HYPOTHESIS, published.SUMMARY,
                                words("summary", v=v, worst_ratio=max(ratios.values(), default=np.nan)),
                                v["verdict"], int(v.get("runs", 0)),
                                words("criterion", min_runs=MIN_RUNS), tuple(v["parts"]),
                                analysis.h4_combine)]
    section.quantities.extend(_quantities(jitter, floor, ci))
    section.measured = words("measured", loops=int(jitter["n"].sum()) if len(jitter) else 0,
                             cycles=int(floor["n"].sum()) if len(floor) else 0)
    if v["verdict"] == judge.NOT_TESTABLE:
        section.limitations.append(words("untestable", why=v.get("why", "")))
    if h.warn:
        section.limitations.append(words("audit_flags"))
    if h.osnoise.get("available") is False:
        section.limitations.append(words("osnoise"))
    return section


def _quantities(jitter: pd.DataFrame, floor: pd.DataFrame, ci: CI) -> list[Quantity]:
    """One quantity per CPU and load (and per tool and load): the mean over repetitions, each
    repetition one run, with its CI over runs where there are enough.

    Per CPU and load, of the jitter probe's runs with a positive median: P99.99 / P50 (×) and
    the share of time lost to interruptions (%); per floor tool and load, the latency P99 (µs).
    """
    quantities = []
    positive = jitter[jitter["p50"] > 0] if len(jitter) else jitter
    for (cpu, load), g in (positive.groupby(["cpu", "load"]) if len(positive) else []):
        est = over_runs(g["p99.99"] / g["p50"], ci)
        quantities.append(Quantity(f"CPU {int(cpu)}, {load}: P99.99 / P50", est.value,
                                   est.low, est.high, "×", int(est.n),
                                   float(g["ratio_within"].mean())))
    for (cpu, load), g in (positive.groupby(["cpu", "load"]) if len(positive) else []):
        est = over_runs(g["lost_share"] * 100, ci)
        quantities.append(Quantity(f"CPU {int(cpu)}, {load}: time lost to interruptions",
                                   est.value, est.low, est.high, "%", int(est.n),
                                   float(g["lost_within_pct2"].mean())))
    for (kind, load), g in (floor.groupby(["kind", "load"]) if len(floor) else []):
        est = over_runs(g["p99"] / 1000, ci)
        quantities.append(Quantity(f"{kind}, {load}: latency P99", est.value, est.low,
                                   est.high, "µs", int(est.n),
                                   float(g["p99_within_us2"].mean())))
    return quantities
