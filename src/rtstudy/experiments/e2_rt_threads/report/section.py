"""E2's report section: its prose (``report.md.j2``), tables, figures and summary rows."""
from __future__ import annotations

import json
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TypedDict

import numpy as np
import pandas as pd

from rtstudy.data.io import Dataset, read_plan
from rtstudy.experiments.e2_rt_threads.analysis import (dataset as analysis, contrasts, ladder,
                                                        verdicts)
from rtstudy.experiments.e2_rt_threads import published
from rtstudy.experiments.e2_rt_threads.report import figures, recipe, tables
from rtstudy.experiments.e2_rt_threads.checks import power
from rtstudy.experiments.e2_rt_threads.analysis.attribution import PARTS
from rtstudy.experiments.e2_rt_threads.analysis.contrasts import Summary
from rtstudy.experiments.e2_rt_threads.conditions import (BUSY_POLL, PLAIN, TRACE_SUFFIX,
                                                          one_off_plain)
from rtstudy.experiments.e2_rt_threads.analysis.headline import E2Headline
from rtstudy.inference import criteria, rates
from rtstudy.inference.stats import CI, MIN_RUNS
from rtstudy.paths import SIDECAR_FILE
from rtstudy.policies import RT_POLICIES, SCHED_FIFO
from rtstudy.report.section import (RATE_UNIT, Advice, Figure, LazyMarkdown, Markdown, Quantity,
                                    Section, Table, Verdict, render)

FOLDER = Path(__file__).resolve().parent
LABEL = "E2"
HYPOTHESIS = "H2"
CLAIM = published.CLAIM  # the source's claim HYPOTHESIS names (rtstudy protocol)
H5C = "H5c"  # Holoscan 5.0's busy polling: its verdict, and the claim its advice row names


class TracedRuns(TypedDict):
    """The traced runs E2's plan holds and what became of them (:func:`traced_runs`)."""

    planned: int
    measured: int
    unavailable: int  # measured without a trace
    conditions: list[str]  # theirs
    reasons: list[str]  # why


def traced_runs(ds: Dataset) -> TracedRuns:
    """How many traced runs E2's plan holds (``planned``), how many are measured, and which of
    those have no trace (``unavailable``: how many, ``conditions``, ``reasons``).

    Why a dataset has no trace is read from the data, not from the host that renders
    it: E2 plans traced runs only where the measuring host had a working ``perf``
    (``plan.tracing``), the plan is recorded beside the cells, and a traced run whose trace
    could not be taken or read back records why (:func:`rtstudy.apps.trace.sched_trace`).
    """
    planned = sum(1 for c in read_plan(ds.directory)["cells"] if c["config"].get("trace_s"))
    traces = ds.tables["traces"]
    lost = traces[traces["unavailable"] != ""] if "unavailable" in traces else traces.iloc[:0]
    return {"planned": planned, "measured": len(traces), "unavailable": len(lost),
            "conditions": sorted(set(lost["label"])) if len(lost) else [],
            "reasons": sorted(set(lost["unavailable"])) if len(lost) else []}


def build(ds: Dataset, cfg: dict, ci: CI) -> Section:
    """E2's section from its dataset: H2, the factors' effects, the floor and the attribution."""
    t = ds.tables
    frames, runs, floor, att = t["frames"], t["runs"], t["floor"], t["attribution"]
    red = contrasts.reductions(runs, frames, ci)
    h = analysis.headline(cfg, t, red, ci, ds.extra.get("messages"))
    conditions = pd.DataFrame(h.conditions)
    words = _words(h, cfg, ci)
    traces = traced_runs(ds)
    no_trace = words("no_trace", traces=traces) if not len(att) else ""
    lost_traces = words("traces_missing", traces=traces) if traces["unavailable"] else ""

    section = Section(name="e2_rt_threads", label=LABEL, hypothesis=HYPOTHESIS,
                      claim=published.CLAIM, title=words("title"), headline=h)

    def over() -> dict[str, ladder.Pooled]:
        # Made when shown: the report sets the host's other sessions after this is built.
        return ladder.over_sessions(section.session_headlines(), ci.confidence)

    section.advice = lambda: advice(h.recommendations, over(), h.ladder_policy,
                                    section.session_headlines(), measured(ds))
    section.notes = lambda: words("advice")
    section.scope = words("scope")
    section.compare = partial(compare, h, confidence=ci.confidence)
    # The main page's figure: each policy's typical jitter beside its late frames (H2's
    # verdict is on the late frames), or the std the seeds compared where none are counted.
    section.main = [Figure(lambda: figures.e2_typical_and_late(
        pd.concat([runs, floor], ignore_index=True), conditions, cfg["late_threshold_ms"], ci))
        if h.late else Figure(lambda: figures.e2_std(frames, runs, ci))]
    section.blocks = [*_ladder_blocks(h, words, over, runs, floor, cfg, ci),
                      *_h2_blocks(h, words, ds, red, conditions, cfg, ci),
                      *_factor_blocks(h, words, runs, floor, ci),
                      *_attribution_blocks(h, words, att, no_trace, cfg),
                      Figure(lambda: figures.e2_period_histograms(frames)),
                      Figure(lambda: figures.e2_time_series(frames))]
    section.verdicts = _verdicts(h, words)
    section.quantities = [*_h2_quantities(h, red, cfg), *_ladder_quantities(h)]
    section.findings = {f"{r['change']} against {r['baseline']}": ladder.finding(r)
                        for r in h.recommendations}
    section.pooled_findings = partial(pooled_findings, confidence=ci.confidence)
    section.measured = words("measured", n_runs=len(runs),
                             n_frames=int(runs["n"].sum()) if len(runs) else 0,
                             n_floor=len(floor), n_traced=att["label"].nunique() if len(att) else 0)
    section.limitations = _limitations(words, runs, no_trace or lost_traces)
    return section


def _words(h: E2Headline, cfg: dict, ci: CI):
    """The section's words, block by block (``report.md.j2``): every block sees the headline,
    the parameters and the CI settings, and formats a number with its CI as the tables do."""
    return partial(render, FOLDER, h=h, cfg=cfg, ci=ci, change=tables.std_change,
                   rate=tables.late_rate, iqr=tables.iqr, message_cost=tables.message_cost,
                   flow=published.FLOW_BENCHMARKING.cite(),
                   margin=criteria.value("e2_late_ratio_margin"),
                   min_events=criteria.value("e2_min_late_events"),
                   h5c_cut=criteria.value("h5c_min_jitter_reduction"))


def _ladder_blocks(h: E2Headline, words, over, runs: pd.DataFrame, floor: pd.DataFrame, cfg: dict,
                   ci: CI) -> list:
    """The opening, what to do (the recommendations) and the ladder: its figure, words, table.
    ``over`` gives the changes over the host's sessions once they are known."""
    recs, rungs = pd.DataFrame(h.recommendations), pd.DataFrame(h.ladder)
    blocks = [LazyMarkdown(lambda: words("opening", over=over()))]
    if len(recs):
        blocks.append(Table(lambda: tables.recommendation_table(recs, ladder.CHANGES, over()),
                            words("caption_recommendations")))
    if len(rungs):
        blocks += [
            Figure(lambda: figures.e2_ladder(rungs, pd.concat([runs, floor], ignore_index=True),
                                             cfg["late_threshold_ms"], h.ladder_policy, ci)),
            Markdown(words("ladder")),
            Table(lambda: tables.ladder_table(rungs, cfg["late_threshold_ms"]),
                  words("caption_ladder"))]
    return blocks


def _h2_blocks(h: E2Headline, words, ds: Dataset, red: pd.DataFrame, conditions: pd.DataFrame,
               cfg: dict, ci: CI) -> list:
    """H2: the late frames per condition, the seeds' layouts, the std reductions, and the std
    figure where the main page shows the late frames."""
    frames, runs = ds.tables["frames"], ds.tables["runs"]
    return [
        Markdown(words("section", source=published.SOURCE.cite(published.WHERE),
                       missing=len(ds.missing))),
        Markdown(words("late_frames")),
        Table(lambda: tables.late_table(conditions, cfg["late_threshold_ms"]),
              words("caption_late")),
        Markdown(words("seeds")),
        Table(lambda: tables.seed_table(h.seeds), words("caption_seed_table")),
        Table(lambda: tables.comparison_table(red), words("caption_comparison")),
        *([Figure(lambda: figures.e2_std(frames, runs, ci))] if h.late else []),
    ]


def _factor_blocks(h: E2Headline, words, runs: pd.DataFrame, floor: pd.DataFrame, ci: CI) -> list:
    """The factors' effects and every configuration's ratio to the floor (the tables show what
    the headline computed, its intervals computed once), and the factorial figure where a
    load ran elsewhere than in the plain layout."""
    eff = pd.DataFrame(h.effects)
    ratios = pd.DataFrame(h.floor["rows"] if h.floor else [])
    blocks = [Markdown(words("factors", n_floor=len(floor))),
              Table(lambda: tables.effects_table(eff), words("caption_effects")),
              Table(lambda: tables.floor_table(ratios), words("caption_floor"))]
    if len(runs) and (runs["load_placement"] != PLAIN["load_placement"]).any():
        blocks.append(Figure(lambda: figures.e2_factorial(runs, floor, ci)))
    return blocks


def _attribution_blocks(h: E2Headline, words, att: pd.DataFrame, no_trace: str, cfg: dict) -> list:
    """Where the traced frames' delay accrued and by which mechanism, and what tracing cost;
    ``no_trace`` says why there is no trace."""
    blocks = [Markdown(words("attribution", no_trace=no_trace))]
    if not len(att):
        return blocks
    blocks += [Table(lambda: tables.attribution_table(pd.DataFrame(h.attribution)),
                     words("caption_attribution")),
               Figure(lambda: figures.e2_attribution(att, PARTS)),
               Markdown(words("mechanism"))]
    if h.mechanism:
        blocks.append(Table(lambda: tables.mechanism_table(
            pd.DataFrame(h.mechanism), h.patterns, cfg["late_threshold_ms"]),
            words("caption_mechanism")))
    if h.tracing_cost:
        blocks.append(Table(lambda: tables.tracing_cost_table(
            pd.DataFrame(h.tracing_cost)), words("caption_tracing_cost")))
    return blocks


def _verdicts(h: E2Headline, words) -> list[Verdict]:
    """H2 on late frames, its control without contention, and H5c (Holoscan 5.0's busy
    polling, with its traced late frames' mechanism beside it)."""
    zero_runs = [min(r["n_runs"], r["n_runs_normal"]) for r in h.zero["rows"]]
    spin = verdicts.h5c_parts(h.recommendations)
    h5c, why = verdicts.h5c_combine(spin)
    traced = next((m for m in h.mechanism
                   if m["label"].endswith(f"-{BUSY_POLL}{TRACE_SUFFIX}")), None)
    return [Verdict(HYPOTHESIS, published.SUMMARY, words("summary", v=h.verdict),
                    h.verdict["verdict"], int(h.verdict.get("runs", 0)),
                    words("criterion"), tuple(h.verdict["parts"]), verdicts.h2_combine),
            Verdict(f"{HYPOTHESIS} control", words("control_claim"),
                    words("control", z=h.zero), h.zero["verdict"],
                    int(min(zero_runs, default=0)), words("control_criterion"),
                    tuple(h.zero["parts"]), verdicts.null_combine),
            Verdict(H5C, words("h5c_claim"), words("h5c", parts=spin, why=why, traced=traced),
                    h5c, min((p.runs for p in spin), default=0), words("h5c_criterion"),
                    tuple(spin), verdicts.h5c_combine)]


def _h2_quantities(h: E2Headline, red: pd.DataFrame, cfg: dict) -> list[Quantity]:
    """H2's numbers for the report's metrics: the std reductions at the highest native load,
    each policy's typical jitter and late frames at the headline point, the pre-specified
    ratios to the floor, and SCHED_FIFO's dispatcher and load-placement effects."""
    top = red[(red["load_work_model"] == "native")
              & (red["load_factor"] == red["load_factor"].max())] if len(red) else red
    out = [Quantity(f"{r['policy']}: std reduction at {r['load_factor']:g} loads/CPU",
                    r["reduction"] * 100, r["low"] * 100, r["high"] * 100, "%",
                    int(min(r["n_runs"], r["n_runs_normal"])))
           for r in top.to_dict("records")]
    for r in (h.late or {}).get("rows", []):
        at = f"at {r['load_factor']:g} loads/CPU"
        out += [
            Quantity(f"{r['policy']}: period IQR {at}", r["iqr_us"], r["iqr_low"], r["iqr_high"],
                     "µs", r["runs"], r["iqr_within"]),
            Quantity(ladder.late_name(r["policy"], r["load_factor"], cfg["late_threshold_ms"]),
                     r["late_rate"], r["late_low"], r["late_high"], RATE_UNIT, r["runs"],
                     r["late_within"])]
    for b in (h.floor or {}).get("prespecified", []):
        out.append(Quantity(
            f"{b['policy']}: std ratio to the floor at {b['load_factor']:g} loads/CPU",
            b["ratio"], b["low"], b["high"], "×", int(min(b["n_runs"], b["n_floor"]))))
    for r in h.effects:
        if r.get("policy") == SCHED_FIFO and one_off_plain(r):
            out.append(Quantity(
                f"SCHED_FIFO: std reduction, {r['factor'].replace('load_', 'load ')} "
                f"{r['reference']} → {r['level']}", r["reduction"] * 100, r["low"] * 100,
                r["high"] * 100, "%", int(min(r["n_runs"], r["n_reference"]))))
    return out


def _ladder_quantities(h: E2Headline) -> list[Quantity]:
    """The ladder's rungs and the recommendations, so two sessions can be compared on them."""
    out = []
    for r in h.ladder:
        rung = ladder.rung_name(r)
        out += [
            Quantity(f"{rung}: period IQR", r["iqr_us"], r["iqr_low"], r["iqr_high"], "µs",
                     r["runs"], r["iqr_within"]),
            Quantity(f"{rung}: late frames per 10 000", r["late_rate"], r["late_low"],
                     r["late_high"], RATE_UNIT, r["runs"], r["late_within"])]
    for r in h.recommendations:
        name = f"{r['change']} against {r['baseline']}"
        out.append(Quantity(f"{name}: period IQR ratio", r["iqr_ratio"], r["iqr_low"],
                            r["iqr_high"], "×", min(r["runs"], r["runs_base"])))
        if r["message_runs"]:
            out.append(Quantity(f"{name}: message latency P50", r["message_p50_us"],
                                r["message_p50_low"], r["message_p50_high"], "µs",
                                r["message_runs"]))
    return out


def _limitations(words, runs: pd.DataFrame, no_trace: str) -> list[str]:
    """The real-time policies measured but never pinned, and why there is no trace (or why
    some traced runs have none)."""
    out = []
    if len(runs):
        pinned = set(runs.loc[runs["pinned"], "policy"])
        unpinned = [p for p in RT_POLICIES if p in set(runs["policy"]) and p not in pinned]
        if unpinned:
            out.append(words("unpinned", unpinned=unpinned, pinned=sorted(pinned)))
    if no_trace:
        out.append(no_trace)
    return out


def pooled_findings(headlines: list[E2Headline], confidence: float) -> dict[str, str]:
    """Each change's finding over the sessions pooled (:func:`analysis.ladder.over_sessions`), named
    as :attr:`Section.findings` names them, with the pooled ratios' CIs."""
    over = ladder.over_sessions(headlines, confidence)
    latest = headlines[-1].recommendations if headlines else []
    out = {}
    for r in _rows([r for r in latest if r["change"] in over], headlines, over):
        o = over[r["change"]]
        typical = tables.ratio_text(o["iqr_ratio"], o["iqr_low"], o["iqr_high"])
        late = tables.ratio_text(o["late_ratio"], o["late_ratio_low"], o["late_ratio_high"])
        settle = _to_settle(o, r["kind"])
        out[f"{r['change']} against {r['baseline']}"] = (
            f"late frames {rates.decision(o['held']['late_frames'])} ({late}; "
            f"{o['late_base']} → {o['late']} late in {o['frames_base']:,.0f} → "
            f"{o['frames']:,.0f} frames {_over(o['sessions'])}{'; ' + settle if settle else ''}"
            f"); typical jitter {typical}")
    return out


def _rows(recs: list[dict], headlines: list[E2Headline], over: dict) -> list[dict]:
    """``recs`` (the latest session's changes), then each change only earlier sessions
    measured, as its newest session measured it: the fixes rotate, one per session, so the
    host's answer on the others lies in the sessions before (pooled in ``over``)."""
    shown = {r["change"] for r in recs}
    earlier: dict[str, dict] = {}
    for h in headlines:  # oldest first: a change's newest row is kept
        earlier.update({r["change"]: r for r in h.recommendations
                        if r["change"] not in shown and r["change"] in over})
    return [*recs, *earlier.values()]


def _to_settle(r: dict, kind: str) -> str:
    """For a rate ratio not settled by its CI, about how many frames per condition would
    settle it at the ratio seen (``late_frames_needed``), and for a fix why the plan's size
    fell short: it sizes each fix to show a change that quarters the late frames as at least
    halved (:mod:`checks.power`); empty otherwise."""
    need = r.get("late_frames_needed", np.nan)
    if not np.isfinite(need):
        return ""
    planned = power.WORTHWHILE
    have = min(r["frames"], r["frames_base"])
    why = (f"; the plan sizes a fix to show a change of ×{planned:g} as at least halved, and "
           f"×{r['late_ratio']:.2f} is nearer the margin" if kind == "fix"
           and planned < r["late_ratio"] < 1 / planned else "")
    return f"about {need:,.0f} frames per condition would settle it ({have:,.0f} so far){why}"


def _over(sessions: int) -> str:
    """"over 3 sessions", or "in one session"."""
    return f"over {sessions} sessions" if sessions != 1 else "in one session"


# The order of the report's "What to do": what helps first, what is undecided last.
_ORDER = (rates.FEWER, rates.SOME_FEWER, rates.EQUIVALENT, rates.NOT_SETTLED, rates.NO_CI,
          rates.SOME_MORE, rates.MORE)


def _counts(r: dict) -> str:
    """Late frames before → after, in how many frames (releases judged) each had."""
    before, after = int(r["frames_base"]), int(r["frames"])
    frames = f"{before:,} frames each" if before == after else f"{before:,} → {after:,} frames"
    return f"{int(r['late_base']):,} → {int(r['late']):,} in {frames}"


def measured(ds: Dataset) -> dict[str, tuple[int, list[dict]]]:
    """Per condition (label): its period (ns) and the real-time requests its first measured run
    made, as that run's sidecar records them: what a "Do" item's code gives (:mod:`.recipe`)."""
    out: dict[str, tuple[int, list[dict]]] = {}
    for cell in read_plan(ds.directory)["cells"]:
        sidecar = ds.directory / cell["cell_id"] / SIDECAR_FILE
        if cell["label"] in out or not sidecar.is_file():
            continue
        requested = json.loads(sidecar.read_text()).get("requested", {})
        out[cell["label"]] = (int(cell["config"]["period_ns"]), requested.get("realtime", []))
    return out


def advice(recs: list[dict], over: dict, ladder_policy: str,
           headlines: list[E2Headline] = (),
           requests: dict[str, tuple[int, list[dict]]] | None = None) -> list[Advice]:
    """Each change measured at the headline point as a row of the report's "What to do":
    pooled over the sessions where ``over`` (:func:`analysis.ladder.over_sessions`) has it, else the
    latest session's (``recs``); with the changes only earlier ``headlines`` measured (the
    rotated fixes); what helps first. Each has its lateness in µs (the latest session's) and,
    for a real-time policy, the code that gives an operator the thread it was measured with
    (:mod:`.recipe`, from ``requests``: :func:`measured`)."""
    out = []
    for r in _rows(recs, list(headlines), over):
        o = over.get(r["change"])
        what, cost = ladder.CHANGES.get(r["change"], (r["change"], ""))
        cost = "; ".join(part for part in (cost, tables.message_cost(r)) if part)
        against = ("a normal thread of its own" if r["kind"] == "policy"
                   else f"{ladder_policy.replace('SCHED_', '')} without it")
        if o:
            late = _counts(o)
            ratio, state = (o["late_ratio"], o["late_ratio_low"], o["late_ratio_high"]), \
                o["held"]["late_frames"]
            typical = tables.ratio_text(o["iqr_ratio"], o["iqr_low"], o["iqr_high"])
            sessions = o["sessions"]
        else:
            late = _counts(r)
            ratio, state = (r["late_ratio"], r["late_ratio_low"], r["late_ratio_high"]), \
                r["late_frames"]
            typical = tables.ratio_text(r["iqr_ratio"], r["iqr_low"], r["iqr_high"])
            sessions = 1
        settle = _to_settle(o or r, r["kind"]) if state == rates.NOT_SETTLED else ""
        # Whether busy polling helps depends on the host's tuning: H5c's verdicts say where.
        period, made = (requests or {}).get(r["label"], (0, []))
        request = recipe.measured_request(made) if r["kind"] == "policy" else None
        code = recipe.recipes_html(request, period) if request else ""
        out.append(Advice(what, against, late, tables.ratio_text(*ratio), rates.decision(state),
                          typical, cost, sessions, float(ratio[0]),
                          why=rates.reason(state) or settle,
                          claim=H5C if r["change"] == BUSY_POLL else "",
                          lateness=tables.lateness_us(r), code=code,
                          low=float(ratio[1]), high=float(ratio[2])))
    return sorted(out, key=lambda a: (_ORDER.index(a.word) if a.word in _ORDER else len(_ORDER),
                                      a.value if np.isfinite(a.value) else np.inf))


def _late_row(h: E2Headline, policy: str) -> Summary | None:
    return next((r for r in (h.late or {}).get("rows", []) if r["policy"] == policy), None)


def compare(h: E2Headline, other: Section, change: str, against: str, confidence: float
            ) -> Advice | None:
    """``other``'s late frames (E2 from another dataset, e.g. another SDK version) against
    ``h``'s, both with the fixes' policy at the headline point, as a rate ratio judged by the
    same margin as the changes; None where either lacks that condition.

    The counts are each dataset's latest session; φ is the larger of the two conditions'
    over-dispersion (the conservative one), and fewer than the minimum runs in either gives
    no CI."""
    policy = h.ladder_policy or SCHED_FIFO
    mine, theirs = _late_row(h, policy), _late_row(other.headline, policy)
    if not mine or not theirs:
        return None
    phi = np.nanmax([mine["dispersion"], theirs["dispersion"], 1.0])
    rr = rates.ratio_from_totals(mine["late"], mine["frames"], theirs["late"], theirs["frames"],
                                 float(phi), confidence)
    if min(mine["runs"], theirs["runs"]) < MIN_RUNS:
        rr = replace(rr, low=float("nan"), high=float("nan"))
    iqr = theirs["iqr_us"] / mine["iqr_us"] if mine["iqr_us"] > 0 else np.nan
    state = rates.word(rr)
    return Advice(change, f"{against}, both with {policy.replace('SCHED_', '')}",
                  f"{mine['late']:,} → {theirs['late']:,} in {mine['frames']:,} → "
                  f"{theirs['frames']:,} frames", tables.ratio_text(rr.value, rr.low, rr.high),
                  rates.decision(state), typical=f"×{iqr:.2f} (period IQR {mine['iqr_us']:,.0f} "
                  f"→ {theirs['iqr_us']:,.0f} µs; no CI across datasets)",
                  cost="another SDK environment", sessions=1, value=float(rr.value),
                  why=rates.reason(state))
