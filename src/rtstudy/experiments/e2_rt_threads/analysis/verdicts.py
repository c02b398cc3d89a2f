"""E2's verdicts on H2: the seeds' std reading (:func:`h2_std`), the verdict on late frames
(:func:`h2_verdict`, combined by :func:`h2_combine`) and the control without contention
(:func:`null_verdict`, combined by :func:`null_combine`), and H5c, when Holoscan 5.0's busy
polling helps (:func:`h5c_parts`, combined by :func:`h5c_combine`), each a
:mod:`rtstudy.inference.judge` verdict; :func:`.analysis.headline` gives them to the report.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TypedDict

import numpy as np
import pandas as pd
from scipy import stats as sps

from rtstudy.experiments.e2_rt_threads.conditions import BASELINE, BUSY_POLL
from rtstudy.inference import criteria, judge, rates
from rtstudy.inference.stats import MIN_RUNS
from rtstudy.policies import RT_POLICIES

# H2's verdict (rtstudy.inference.criteria): at the highest native load factor every real-time
# policy must cut the frame-period std by at least MIN_REDUCTION, its whole CI at or above it.
MIN_REDUCTION = criteria.value("h2_min_reduction")
# The H2 control's equivalence margin: this many times the floor's std without contention.
CONTROL_FLOOR_MULTIPLE = criteria.value("h2_control_floor_multiple")
# A policy's std reduction against the baseline, judged by MIN_REDUCTION (h2_std()).
CUT = judge.Rule(judge.AT_LEAST, MIN_REDUCTION)
# H5c: busy polling's typical jitter cut (1 − its period IQR ratio to sleeping wake-up).
H5C_CUT = judge.Rule(judge.AT_LEAST, criteria.value("h5c_min_jitter_reduction"))


class ClaimResult(TypedDict, total=False):
    """A claim judged in one session (:func:`h2_verdict`, :func:`h2_std`, :func:`null_verdict`)."""

    verdict: judge.Verdict
    why: str  # where it is not settled or not testable: why
    parts: list[judge.Part]  # what it rests on (a part per policy)
    rows: list[dict]  # the table rows the parts come from
    each: dict[str, str]  # policy → its part's word
    runs: int  # the fewest runs behind a part
    load_factor: float  # where it was judged (loads per CPU)
    margin_ms: float  # the control's equivalence margin (null_verdict)


def h2_std(red: pd.DataFrame) -> ClaimResult:
    """H2 as the seeds asked it: the frame-period std at the highest native load factor,
    each real-time policy's reduction judged over runs (a reading beside the verdict, which
    is on late frames: :func:`h2_verdict`).

    A policy *shows* a cut when its std reduction's whole CI (over runs) lies at or above
    :data:`MIN_REDUCTION`, and *refutes* it when the whole CI lies below
    :data:`MIN_REDUCTION` (:data:`CUT`, :mod:`rtstudy.inference.judge`). ``verdict``: every policy
    shows it (reproduced), every one refutes it (not reproduced), some each (partly
    reproduced), else not settled; not testable here without the runs to compare.
    """
    native = red[red["load_work_model"] == "native"] if len(red) else red
    if native.empty:
        return {"verdict": judge.NOT_TESTABLE, "why": "no native-load runs"}
    top = native[native["load_factor"] == native["load_factor"].max()]
    rt = top[top["policy"].isin(RT_POLICIES)]
    if rt.empty:
        return {"verdict": judge.NOT_TESTABLE, "why": "no real-time policy measured"}
    # A std comparison with a starved condition is void: it cannot show or refute H2.
    each = {r["policy"]: judge.NOT_SETTLED if r["void"] else CUT.state(r["low"], r["high"])
            for r in rt.to_dict("records")}
    states = set(each.values())
    if states == {judge.SHOWN}:
        verdict = judge.Verdict.REPRODUCED
    elif states == {judge.REFUTED}:
        verdict = judge.Verdict.NOT_REPRODUCED
    elif states == {judge.SHOWN, judge.REFUTED}:
        verdict = judge.Verdict.PARTLY
    else:
        verdict = judge.NOT_SETTLED
    out = {"verdict": verdict, "load_factor": float(top["load_factor"].iloc[0]),
           "rows": rt.to_dict("records"), "each": each,
           "runs": int(min(rt["n_runs"].min(), rt["n_runs_normal"].min()))}
    if verdict == judge.NOT_SETTLED:
        few = out["runs"] < MIN_RUNS
        void = sorted({label for r in out["rows"] for label in r["void"]})
        out["why"] = (f"fewer than {MIN_RUNS} runs per policy, so no CI" if few else
                      f"{', '.join(void)} starved, so the std comparison is void" if void else
                      f"a std change's CI straddles the −{MIN_REDUCTION:.0%} threshold")
    return out


def h2_combine(parts: list[judge.Part]) -> tuple[judge.Verdict, str]:
    """H2's verdict from each real-time policy's late-frame rate ratio against the baseline
    (:func:`.ladder.late_part`): reproduced when every policy judged gives *fewer* (at least
    halved), not reproduced when none does, partly reproduced when some do; not settled while a
    ratio's CI straddles a word's edge. The same rule on every host (protocol v1: no gate read
    from the outcome): where a policy and its baseline had too few late frames together to
    compare, the why gives each such policy's upper bound, "at most N late per 10 000"."""
    rare = [p for p in parts if p.state == rates.TOO_FEW]
    judged = [p for p in parts if p.state != rates.TOO_FEW]
    bounds = "; ".join(f"{p.name} at most {upper_per_10k(p):.0f} late per 10 000 frames "
                       f"({BOUND_CONFIDENCE:.0%} upper bound, "
                       f"{p.rate.events_b:.0f} in {p.rate.exposure_b:,.0f})"
                       for p in rare)
    aside = f"; too few late frames to compare: {bounds}" if rare else ""
    if not judged:
        base = parts[0].rate if parts else None
        return (judge.NOT_SETTLED, (f"{base.events_a:.0f} of {base.exposure_a:,.0f} "
                                    f"{BASELINE} frames late, " if base else "")
                + f"too few to compare a policy: {bounds}")
    if not all(p.decided for p in judged):
        return judge.NOT_SETTLED, judge.unsettled_why(judged) + aside
    fewer = [p.name for p in judged if p.state == rates.FEWER]
    if len(fewer) == len(parts):
        return judge.Verdict.REPRODUCED, ""
    if not fewer:
        return (judge.Verdict.NOT_REPRODUCED if not rare else judge.NOT_SETTLED,
                aside.lstrip("; "))
    return judge.Verdict.PARTLY, ("not fewer " + ", ".join(p.name for p in judged
                                                          if p.name not in fewer) + aside)


# The level of the upper bound a policy with too few late frames gets (the report's default).
BOUND_CONFIDENCE = 0.95


def upper_per_10k(part: judge.Part) -> float:
    """The upper bound of the change's late-frame rate, per 10 000 frames: the exact Poisson
    (Garwood) bound of its count, scaled by the comparison's over-dispersion φ
    (:func:`rtstudy.inference.events.pooled_rate`'s interval)."""
    rr = part.rate
    phi = rr.dispersion if np.isfinite(rr.dispersion) and rr.dispersion > 1 else 1.0
    k, n = rr.events_b / phi, rr.exposure_b / phi  # real-valued: as pooled_rate, by hand
    return float(sps.gamma.ppf(1 - (1 - BOUND_CONFIDENCE) / 2, k + 1) / n * 1e4)


def h5c_parts(recs: list[dict]) -> list[judge.Part]:
    """H5c's parts from the recommendations (:func:`.ladder.recommendations`): busy polling's
    late frames against sleeping wake-up (a rate part) and its typical jitter's cut, 1 − the
    period IQR ratio (:data:`H5C_CUT`); none where busy polling was not measured (4.x)."""
    row = next((r for r in recs if r.get("change") == BUSY_POLL), None)
    if row is None:
        return []
    runs = int(min(row["runs"], row["runs_base"]))
    return [replace(row["late_part"], name="busy polling's late frames"),
            judge.Part("busy polling's typical jitter cut", H5C_CUT, 1 - row["iqr_ratio"],
                       1 - row["iqr_high"], 1 - row["iqr_low"], runs)]


def h5c_combine(parts: list[judge.Part]) -> tuple[judge.Verdict, str]:
    """H5c's verdict (``criteria: h5c_min_jitter_reduction``): hurts when busy polling's late
    frames are more; helps when they are fewer, or equivalent or too few to compare with the
    typical jitter cut by the margin; no clear gain when they are not more and the cut falls
    short of it; else not settled. Not testable here without busy polling (Holoscan 4.x)."""
    if not parts:
        return judge.NOT_TESTABLE, "busy polling is Holoscan 5.0's: not measured in this environment"
    late, cut = parts
    rare = "too few late frames to compare" if late.state == rates.TOO_FEW else ""
    if late.state == rates.MORE:
        return judge.Verdict.HURTS, "late frames more"
    if late.state == rates.FEWER:
        return judge.Verdict.HELPS, "late frames fewer"
    if late.state in (rates.EQUIVALENT, rates.TOO_FEW) and cut.decided:
        said = "typical jitter cut by the margin" if cut.state == judge.SHOWN else \
            "typical jitter not cut by the margin"
        return (judge.Verdict.HELPS if cut.state == judge.SHOWN else judge.Verdict.NO_GAIN,
                f"{said}; {rare or 'late frames ' + late.state}")
    judged = [p for p in parts if p.state != rates.TOO_FEW]
    return judge.NOT_SETTLED, "; ".join(filter(None, [judge.unsettled_why(judged), rare]))


def h2_verdict(recs: list[dict]) -> ClaimResult:
    """H2 at the headline point, judged on late frames: each real-time policy against the
    baseline as a late-frame rate ratio (:func:`.ladder.late_part`, the words of
    ``criteria: e2_late_ratio_margin``), combined by :func:`h2_combine`; not testable here
    without a policy measured beside the baseline there."""
    rows = [r for r in recs if r.get("kind") == "policy"]
    if not rows:
        return {"verdict": judge.NOT_TESTABLE, "why": "no real-time policy measured beside "
                f"{BASELINE} at the headline point", "parts": [], "rows": [], "runs": 0}
    parts = [r["late_part"] for r in rows]
    verdict, why = h2_combine(parts)
    return {"verdict": verdict, "parts": parts, "rows": rows,
            "each": {p.name: p.state for p in parts},
            "runs": int(min(p.runs for p in parts)), **({"why": why} if why else {})}


def control_margin(floor: pd.DataFrame) -> float:
    """The H2 control's equivalence margin (ms): :data:`CONTROL_FLOOR_MULTIPLE` times the
    floor's mean frame-period std at its lowest load factor; NaN without a floor.

    The floor (cyclictest at the same period, priority and pinning) is the jitter the
    operating system alone shows: a difference between two policies smaller than it is
    none a scheduling policy could be asked to remove. The baseline's own std is no
    scale for it (0.1 ms was 76 % of the 0.132 ms baseline on the reference host).
    """
    if not len(floor):
        return float("nan")
    lowest = floor[floor["load_factor"] == floor["load_factor"].min()]
    return float(CONTROL_FLOOR_MULTIPLE * lowest["period_std_ms"].mean())


def null_combine(parts: list[judge.Part]) -> tuple[judge.Verdict, str]:
    """The H2 control from each policy's std difference (:func:`null_verdict`): no difference
    when every one is equivalent, differs when any is different, else not settled."""
    states = [p.state for p in parts]
    if states and all(w == judge.EQUIVALENT for w in states):
        return judge.Verdict.NO_DIFFERENCE, ""
    if judge.DIFFERENT in states:
        return judge.Verdict.DIFFERS, ""
    return judge.NOT_SETTLED, judge.unsettled_why(parts)


def null_verdict(red: pd.DataFrame, margin_ms: float) -> ClaimResult:
    """Without contention (the lowest load factor), is each real-time policy's jitter the same?

    Equivalence within ±``margin_ms`` (:func:`control_margin`) of the difference in mean
    per-run std (policy − baseline), CI over runs, per policy a part
    (:mod:`rtstudy.inference.judge`), combined by :func:`null_combine`; not testable here without
    runs or a margin (no floor measured).
    """
    if red.empty:
        return {"verdict": judge.NOT_TESTABLE, "why": "no runs", "margin_ms": margin_ms,
                "rows": [], "each": {}, "load_factor": float("nan"), "parts": []}
    zero = red[(red["load_factor"] == red["load_factor"].min()) & red["policy"].isin(RT_POLICIES)]
    out = {"margin_ms": margin_ms, "rows": zero.to_dict("records"),
           "load_factor": float(zero["load_factor"].iloc[0]) if len(zero) else float("nan")}
    if not np.isfinite(margin_ms):
        return {**out, "verdict": judge.NOT_TESTABLE, "each": {}, "parts": [],
                "why": "no floor measured in this sweep to set the margin"}
    rule = judge.Rule(judge.WITHIN, margin_ms)
    parts = [judge.Part(r["policy"], rule, r["diff_ms"], r["diff_low"], r["diff_high"],
                        int(min(r["n_runs"], r["n_runs_normal"])))
             for r in zero.to_dict("records")]
    verdict, why = null_combine(parts)
    return {**out, "verdict": verdict, "each": {p.name: p.state for p in parts},
            "parts": parts, **({"why": why} if why else {})}
