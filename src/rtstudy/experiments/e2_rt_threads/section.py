"""E2's report section: its prose (``report.md.j2``), tables, figures and summary rows."""
from __future__ import annotations

from functools import partial
from pathlib import Path

import pandas as pd

from rtstudy import criteria
from rtstudy.experiments.e2_rt_threads import analysis, contrasts, figures, ladder, published, tables
from rtstudy.experiments.e2_rt_threads.attribution import PARTS
from rtstudy.experiments.e2_rt_threads.plan import RT_POLICIES
from rtstudy.io import Dataset, read_plan
from rtstudy.report.section import (RATE_UNIT, Figure, LazyMarkdown, Markdown, Quantity,
                                    Section, Table, Verdict, render)
from rtstudy.stats import CI

FOLDER = Path(__file__).resolve().parent
LABEL = "E2"
HYPOTHESIS = "H2"


def traced_runs(ds: Dataset) -> dict[str, int]:
    """How many traced runs E2's plan holds (``planned``) and how many are measured.

    Why a dataset has no trace is read from the data, not from the host that renders
    it: E2 plans traced runs only where the measuring host had a working ``perf``
    (``plan.tracing``), and the plan is recorded beside the cells.
    """
    planned = sum(1 for c in read_plan(ds.directory)["cells"] if c["config"].get("trace_s"))
    return {"planned": planned, "measured": len(ds.tables["traces"])}


def build(ds: Dataset, cfg: dict, ci: CI) -> Section:
    """E2's section from its dataset: H2, the factors' effects, the floor and the attribution."""
    t = ds.tables
    frames, runs, floor, att = t["frames"], t["runs"], t["floor"], t["attribution"]
    red = contrasts.reductions(runs, frames, ci)
    h = analysis.headline(cfg, t, red, ci, ds.extra.get("messages"))
    # The tables show what the headline computed (its intervals computed once).
    eff = pd.DataFrame(h["effects"])
    ratios = pd.DataFrame(h["floor"]["rows"] if h["floor"] else [])

    conditions = pd.DataFrame(h["conditions"])
    # Every block of the words sees the headline, the parameters and the CI settings, and
    # formats a number with its CI as the tables do.
    words = partial(render, FOLDER, h=h, cfg=cfg, ci=ci, change=tables.std_change,
                    rate=tables.late_rate, iqr=tables.iqr, message_cost=tables.message_cost,
                    flow=published.FLOW_BENCHMARKING.cite(), conclusions=ladder.conclusions,
                    margin=criteria.value("e2_late_ratio_margin"),
                    min_events=criteria.value("e2_min_late_events"))
    no_trace = words("no_trace", traces=traced_runs(ds)) if not len(att) else ""

    section = Section(name="e2_rt_threads", label=LABEL, hypothesis=HYPOTHESIS, claim=published.CLAIM,
                      headline=h)
    recs, rungs = pd.DataFrame(h["recommendations"]), pd.DataFrame(h["ladder"])

    def over() -> dict:
        # Made when shown: the report sets the host's other sessions after this is built.
        return ladder.over_sessions(section.session_headlines(), ci.confidence)

    section.blocks = [LazyMarkdown(lambda: words("opening", changes=ladder.CHANGES, over=over()))]
    if len(recs):
        section.blocks.append(Table(lambda: tables.recommendation_table(recs, ladder.CHANGES,
                                                                        over()),
                                    words("caption_recommendations")))
    if len(rungs):
        section.blocks += [
            Figure(lambda: figures.e2_ladder(rungs, pd.concat([runs, floor], ignore_index=True),
                                             cfg["late_threshold_ms"], h["ladder_policy"], ci)),
            Markdown(words("ladder")),
            Table(lambda: tables.ladder_table(rungs, cfg["late_threshold_ms"]),
                  words("caption_ladder"))]
    section.blocks += [
        Markdown(words("section", source=published.SOURCE.cite(published.WHERE),
                       missing=len(ds.missing))),
        Markdown(words("late_frames")),
    ]
    if h["late"]:
        section.blocks.append(Figure(lambda: figures.e2_typical_and_late(
            pd.concat([runs, floor], ignore_index=True), conditions, cfg["late_threshold_ms"], ci)))
    section.blocks += [
        Table(lambda: tables.late_table(conditions, cfg["late_threshold_ms"]),
              words("caption_late")),
        Markdown(words("seeds")),
        Table(lambda: tables.seed_table(h["seeds"]), words("caption_seed_table")),
        Table(lambda: tables.comparison_table(red), words("caption_comparison")),
        Figure(lambda: figures.e2_std(frames, runs, ci)),
        Markdown(words("factors", n_floor=len(floor))),
        Table(lambda: tables.effects_table(eff), words("caption_effects")),
        Table(lambda: tables.floor_table(ratios), words("caption_floor")),
    ]
    if len(runs) and (runs["load_placement"] != "operators").any():
        section.blocks.append(Figure(lambda: figures.e2_factorial(runs, floor, ci)))
    section.blocks.append(Markdown(words("attribution", no_trace=no_trace)))
    if len(att):
        section.blocks += [
            Table(lambda: tables.attribution_table(pd.DataFrame(h["attribution"])),
                  words("caption_attribution")),
            Figure(lambda: figures.e2_attribution(att, PARTS)),
            Markdown(words("mechanism"))]
        if h["mechanism"]:
            section.blocks.append(Table(lambda: tables.mechanism_table(
                pd.DataFrame(h["mechanism"]), h["patterns"], cfg["late_threshold_ms"]),
                words("caption_mechanism")))
        if h["tracing_cost"]:
            section.blocks.append(Table(lambda: tables.tracing_cost_table(
                pd.DataFrame(h["tracing_cost"])), words("caption_tracing_cost")))
    section.blocks += [Markdown(words("advice")),
                       Figure(lambda: figures.e2_period_histograms(frames)),
                       Figure(lambda: figures.e2_time_series(frames))]
    zero_runs = [min(r["n_runs"], r["n_runs_normal"]) for r in h["zero"]["rows"]]
    section.verdicts = [Verdict(HYPOTHESIS, published.SUMMARY, words("summary", v=h["verdict"]),
                                h["verdict"]["verdict"], int(h["verdict"].get("runs", 0)),
                                words("criterion"), tuple(h["verdict"]["parts"]),
                                analysis.h2_combine),
                        Verdict(f"{HYPOTHESIS} control", words("control_claim"),
                                words("control", z=h["zero"]), h["zero"]["verdict"],
                                int(min(zero_runs, default=0)), words("control_criterion"),
                                tuple(h["zero"]["parts"]), analysis.null_combine)]
    top = red[(red["load_work_model"] == "native")
              & (red["load_factor"] == red["load_factor"].max())] if len(red) else red
    section.quantities = [
        Quantity(f"{r['policy']}: std reduction at {r['load_factor']:g} loads/CPU",
                 r["reduction"] * 100, r["low"] * 100, r["high"] * 100, "%",
                 int(min(r["n_runs"], r["n_runs_normal"])))
        for r in top.to_dict("records")]
    for r in (h["late"] or {}).get("rows", []):
        at = f"at {r['load_factor']:g} loads/CPU"
        section.quantities += [
            Quantity(f"{r['policy']}: period IQR {at}", r["iqr_us"], r["iqr_low"], r["iqr_high"],
                     "µs", r["runs"], r["iqr_within"]),
            Quantity(ladder.late_name(r["policy"], r["load_factor"], cfg["late_threshold_ms"]),
                     r["late_rate"], r["late_low"], r["late_high"], RATE_UNIT, r["runs"],
                     r["late_within"])]
    for b in (h["floor"] or {}).get("prespecified", []):
        section.quantities.append(Quantity(
            f"{b['policy']}: std ratio to the floor at {b['load_factor']:g} loads/CPU",
            b["ratio"], b["low"], b["high"], "×", int(min(b["n_runs"], b["n_floor"]))))
    for r in h["effects"]:
        if r["factor"] != "policy" and r.get("policy") == "SCHED_FIFO" and \
                (r["factor"] == "dispatcher" and r["load_placement"] == "operators"
                 or r["factor"] == "load_placement" and r["dispatcher"] == "other"):
            section.quantities.append(Quantity(
                f"SCHED_FIFO: std reduction, {r['factor'].replace('load_', 'load ')} "
                f"{r['reference']} → {r['level']}", r["reduction"] * 100, r["low"] * 100,
                r["high"] * 100, "%", int(min(r["n_runs"], r["n_reference"]))))
    # The ladder and the recommendations, so two sessions can be compared on them.
    for r in h["ladder"]:
        rung = ladder.rung_name(r)
        section.quantities += [
            Quantity(f"{rung}: period IQR", r["iqr_us"], r["iqr_low"], r["iqr_high"], "µs",
                     r["runs"], r["iqr_within"]),
            Quantity(f"{rung}: late frames per 10 000", r["late_rate"], r["late_low"],
                     r["late_high"], RATE_UNIT, r["runs"], r["late_within"])]
    for r in h["recommendations"]:
        name = f"{r['change']} against {r['baseline']}"
        section.quantities.append(Quantity(f"{name}: period IQR ratio", r["iqr_ratio"],
                                           r["iqr_low"], r["iqr_high"], "×",
                                           min(r["runs"], r["runs_base"])))
        section.findings[name] = ladder.finding(r)
        if r["message_runs"]:
            section.quantities.append(Quantity(f"{name}: message latency P50", r["message_p50_us"],
                                               r["message_p50_low"], r["message_p50_high"], "µs",
                                               r["message_runs"]))
    section.pooled_findings = partial(pooled_findings, confidence=ci.confidence)
    section.measured = words("measured", n_runs=len(runs),
                             n_frames=int(runs["n"].sum()) if len(runs) else 0,
                             n_floor=len(floor), n_traced=att["label"].nunique() if len(att) else 0)
    if len(runs):
        pinned = set(runs.loc[runs["pinned"], "policy"])
        unpinned = [p for p in RT_POLICIES if p in set(runs["policy"]) and p not in pinned]
        if unpinned:
            section.limitations.append(words("unpinned", unpinned=unpinned, pinned=sorted(pinned)))
    if no_trace:
        section.limitations.append(no_trace)
    return section



def pooled_findings(headlines: list[dict], confidence: float) -> dict[str, str]:
    """Each change's finding over the sessions pooled (:func:`.ladder.over_sessions`), named
    as :attr:`Section.findings` names them, with the pooled ratios' CIs."""
    over = ladder.over_sessions(headlines, confidence)
    latest = {r["change"]: r for r in (headlines[-1].get("recommendations", [])
                                      if headlines else [])}
    out = {}
    for change, o in over.items():
        r = latest.get(change) or next(r for h in reversed(headlines)
                                       for r in h.get("recommendations", [])
                                       if r["change"] == change)
        typical = tables.ratio_text(o["iqr_ratio"], o["iqr_low"], o["iqr_high"])
        late = tables.ratio_text(o["late_ratio"], o["late_ratio_low"], o["late_ratio_high"])
        out[f"{change} against {r['baseline']}"] = (
            f"typical jitter {o['held']['typical']} ({typical}); "
            f"late frames {o['held']['late_frames']} ({late}; "
            f"{o['late_base']} → {o['late']} late in {o['frames_base']:,.0f} → "
            f"{o['frames']:,.0f} frames over {o['sessions']} sessions)")
    return out
