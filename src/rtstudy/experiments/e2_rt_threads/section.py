"""E2's report section: its prose (``report.md.j2``), tables, figures and summary rows."""
from __future__ import annotations

from functools import partial
from pathlib import Path

from rtstudy.experiments.e2_rt_threads import analysis, figures, published
from rtstudy.experiments.e2_rt_threads.plan import RT_POLICIES
from rtstudy.io import Dataset
from rtstudy.report.section import Figure, Markdown, Quantity, Section, Table, Verdict, render
from rtstudy.stats import CI

FOLDER = Path(__file__).resolve().parent
LABEL = "E2"
HYPOTHESIS = "H2"
# E2 compares its target with the platform floor, which E4 measures.
NEEDS: tuple[str, ...] = ("e4_host",)


def build(ds: Dataset, cfg: dict, ci: CI, others: dict) -> Section:
    """E2's section; ``others["e4_host"]`` (if measured) gives the floor's latency std."""
    frames, runs = ds.tables["frames"], ds.tables["runs"]
    red = analysis.reductions(runs, frames, ci)
    floor = others.get("e4_host")
    floor_std_ms = floor.headline.get("floor_std_ms", float("nan")) if floor else float("nan")
    h = analysis.headline(cfg, runs, red, floor_std_ms)

    # Every block of the words sees the headline, the parameters and the CI settings.
    words = partial(render, FOLDER, h=h, cfg=cfg, ci=ci)

    section = Section(name="e2_rt_threads", label=LABEL, hypothesis=HYPOTHESIS, claim=published.CLAIM,
                      headline=h)
    section.blocks = [
        Markdown(words("section", source=published.SOURCE.cite(published.WHERE),
                       missing=len(ds.missing))),
        Table(lambda: analysis.seed_table(red), words("caption_seed_table")),
        Table(lambda: analysis.comparison_table(red), words("caption_comparison")),
        Figure(lambda: figures.e2_std(frames, runs, ci)),
        Figure(lambda: figures.e2_period_histograms(frames)),
        Figure(lambda: figures.e2_time_series(frames)),
    ]
    zero_runs = [min(r["n_runs"], r["n_runs_normal"]) for r in h["zero"]["rows"]]
    section.verdicts = [Verdict(HYPOTHESIS, published.SUMMARY, words("summary", v=h["verdict"]),
                                h["verdict"]["verdict"], int(h["verdict"].get("runs", 0)),
                                words("criterion")),
                        Verdict(f"{HYPOTHESIS} control", words("control_claim"),
                                words("control", z=h["zero"]), h["zero"]["verdict"],
                                int(min(zero_runs, default=0)), words("control_criterion"))]
    top = red[(red["load_work_model"] == "native")
              & (red["load_factor"] == red["load_factor"].max())] if len(red) else red
    section.quantities = [
        Quantity(f"{r['policy']}: std reduction at {r['load_factor']:g} loads/CPU",
                 r["reduction"] * 100, r["low"] * 100, r["high"] * 100, "%",
                 int(min(r["n_runs"], r["n_runs_normal"])))
        for r in top.to_dict("records")]
    section.measured = words("measured", n_runs=len(runs),
                             n_frames=int(runs["n"].sum()) if len(runs) else 0)
    if len(runs):
        pinned = set(runs.loc[runs["pinned"], "policy"])
        unpinned = [p for p in RT_POLICIES if p in set(runs["policy"]) and p not in pinned]
        if unpinned:
            section.limitations.append(words("unpinned", unpinned=unpinned, pinned=sorted(pinned)))
    return section
