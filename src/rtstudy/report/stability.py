"""How stable the measurements are: drift within each sweep, and agreement between sessions.

*Drift*: each sweep ran one condition once more first and once more last
(:func:`rtstudy.measure.harness.with_drift`); :func:`drift_table` sets their difference
beside the spread of that condition's ordinary runs. *Between sessions*:
``benchmarks/rerun_agreement.py`` measured the whole study twice, one session
after the other, and recorded both sessions' ``report/metrics.json`` in
``benchmarks/rerun_agreement.json``; :func:`agreement_table` says, per headline
quantity, whether each session's estimate lies inside the other's CI, and
:func:`verdict_changes` which verdicts differed. The report cites both.
"""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import pandas as pd
from scipy import stats as sps

from rtstudy import registry
from rtstudy.inference import meta, stats
# A t-interval over few sessions is symmetric, so a rare-event rate's would reach below 0: for
# these units it is cut at 0, which drops only values no session can have.
from rtstudy.report.section import NONNEGATIVE_UNITS


class RerunRecord(TypedDict):
    """The recorded re-run agreement (``benchmarks/rerun_agreement.json``, :func:`read_rerun`)."""

    profile: str
    host_id: str
    commit: str
    measured_utc: str
    minutes: list[float]  # each session's span
    sessions: list[dict[str, Any]]  # each session's metrics.json


class SpreadRecord(TypedDict):
    """How far the reference host's sessions moved (``benchmarks/session_spread.json``)."""

    host_id: str
    profile: str
    commit: str
    recorded_utc: str
    sessions: list[str]  # the sessions' ids
    quantities: list[dict]  # session_spread's rows


class ChanceMisses(TypedDict):
    """What chance alone gives :func:`agreement` (:func:`chance_misses`)."""

    expected: float  # misses expected with no difference between the sessions
    p: float  # the chance of as many misses or more (binomial); NaN with nothing judged
    runs: int  # the runs most quantities rest on
    agree: float  # how often two sessions of that many runs agree on one quantity


class LargestComponents(TypedDict):
    """How many headlines have each variance component as their largest."""

    split: int  # those with all three known
    sessions: int
    runs: int
    within: int
    unsplit: int  # those with τ² and σ² but no within-run part of their own

def drift_rows(datasets: dict) -> list[dict]:
    """One row per experiment whose sweep had a drift check (the report's experiment labels).

    Parameters
    ----------
    datasets : dict of str to Dataset
        Each registered experiment's loaded dataset.
    """
    rows = []
    for name, ds in datasets.items():
        exp = registry.get(name)
        d = exp.analysis.drift(ds)
        if d is None:
            continue
        quantity, unit = exp.analysis.DRIFT_QUANTITY
        rows.append({"experiment": exp.section.LABEL, "quantity": quantity, "unit": unit, **d})
    return rows


def drift_table(rows: list[dict]) -> pd.DataFrame:
    """:func:`drift_rows` as the report shows them."""
    def g(x: float) -> str:
        return f"{x:.3g}" if np.isfinite(x) else "n/a"

    def moved(r: dict) -> str:
        if r["moved"] is None:
            return "too few runs to judge"
        return "yes: beyond the runs' spread" if r["moved"] else "no: within the runs' spread"

    return pd.DataFrame([{
        "experiment": r["experiment"], "condition": r["label"],
        "quantity": f"{r['quantity']} ({r['unit']})",
        "first run": g(r["start"]), "last run": g(r["end"]),
        "difference": f"{r['difference']:+.3g}" + (f" ({r['relative']:+.0%})"
                                                   if np.isfinite(r["relative"]) else ""),
        "minutes apart": f"{r['minutes']:.0f}",
        "its ordinary runs": f"{g(r['low'])} – {g(r['high'])} (n = {r['runs']})",
        "moved": moved(r)} for r in rows])


def read_rerun(path: Path) -> RerunRecord | None:
    """The recorded re-run agreement, or None when none was recorded (or it is unreadable)."""
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    sessions = record.get("sessions")
    if not (isinstance(sessions, list) and len(sessions) == 2):
        return None
    return record


def _inside(x, low, high) -> bool | None:
    if x is None or low is None or high is None:
        return None
    return bool(low <= x <= high)


def agreement(first: dict, second: dict) -> pd.DataFrame:
    """Per headline quantity of two sessions' metrics: both estimates and whether each lies
    inside the other's CI (None where a CI is missing); ``agree`` is True when both do."""
    rows = []
    for label in sorted(k for k in first if isinstance(first[k], dict)):
        for name, qa in first[label].get("headline", {}).items():
            qb = second.get(label, {}).get("headline", {}).get(name)
            if qb is None:
                continue
            one = _inside(qa["value"], qb["low"], qb["high"])
            two = _inside(qb["value"], qa["low"], qa["high"])
            rows.append({"experiment": label, "quantity": name, "first": qa, "second": qb,
                         "first_inside_second": one, "second_inside_first": two,
                         "agree": None if None in (one, two) else one and two})
    return pd.DataFrame(rows)


def chance_misses(table: pd.DataFrame, confidence: float) -> ChanceMisses:
    """What chance alone gives :func:`agreement`: with no difference between the sessions,
    how many of its judged quantities would still miss, and how surprising its own misses are.

    Returns
    -------
    ChanceMisses
        ``expected``: Σ (1 − :func:`rtstudy.inference.stats.agreement_chance`) over the quantities
        both sessions give a CI, each at the fewer runs of the two; ``p``: the chance of as many
        misses as ``table`` has, or more, were each quantity to miss independently at their
        mean rate (binomial; NaN with nothing judged); ``runs``: the runs most of them rest on,
        and ``agree``: how often two sessions of that many runs agree on one quantity.
    """
    judged = table[table["agree"].notna()] if len(table) else table
    runs = np.array([min(r.first.get("n", 0), r.second.get("n", 0))
                     for r in judged.itertuples()], dtype=int)
    miss = np.array([1 - stats.agreement_chance(int(n), confidence) for n in runs])
    keep = np.isfinite(miss)
    if not keep.any():
        return {"expected": 0.0, "p": np.nan, "runs": 0, "agree": np.nan}
    seen = int((~judged["agree"][keep].astype(bool)).sum())
    typical = int(np.bincount(runs[keep]).argmax())
    return {"expected": float(miss[keep].sum()),
            "p": float(sps.binom.sf(seen - 1, int(keep.sum()), miss[keep].mean())),
            "runs": typical, "agree": stats.agreement_chance(typical, confidence)}


def verdict_changes(first: dict, second: dict) -> dict[str, tuple[str, str]]:
    """Claim → (first session's verdict, second's), for every claim in both."""
    out = {}
    for label in sorted(k for k in first if isinstance(first[k], dict)):
        for claim, v in first[label].get("verdicts", {}).items():
            w = second.get(label, {}).get("verdicts", {}).get(claim)
            if w is not None:
                out[claim] = (v["verdict"] if isinstance(v, dict) else v,
                              w["verdict"] if isinstance(w, dict) else w)
    return out


def finding_changes(first: dict, second: dict) -> dict[str, tuple[str, str]]:
    """Finding → (first session's conclusion, second's), for every finding in both."""
    out = {}
    for label in sorted(k for k in first if isinstance(first[k], dict)):
        theirs = second.get(label, {}).get("findings", {}) if isinstance(second.get(label),
                                                                          dict) else {}
        for name, one in first[label].get("findings", {}).items():
            if name in theirs:
                out[f"{label}: {name}"] = (one, theirs[name])
    return out


def criteria_of(session: dict) -> dict[str, str]:
    """Claim → the criterion (in words) a recorded session's verdict was judged by."""
    return {claim: v.get("criterion", "") for label in session if isinstance(session[label], dict)
            for claim, v in session[label].get("verdicts", {}).items() if isinstance(v, dict)}


def same_rule(one: str, other: str) -> bool:
    """Whether two criteria in words state the same rule: equal but for their numbers (a margin
    computed from each session's own data, like H2 control's floor, differs between sessions
    judged by one rule)."""
    def shape(text: str) -> str:
        return re.sub(r"[-+−±]?\d[\d.,]*", "#", text)

    return shape(one) == shape(other)


def format_quantity(q: dict) -> str:
    """``1.23 [1.1, 1.4] unit`` from a metrics.json quantity; ``(no CI)`` where it has none."""
    if q["value"] is None:
        return "n/a"
    ci = f" [{q['low']:.3g}, {q['high']:.3g}]" if q["low"] is not None else " (no CI)"
    return f"{q['value']:.3g}{ci} {q['unit']}"


def agreement_table(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`agreement` as the report (and the benchmark) shows it."""
    def yes(x) -> str:
        return "no CI" if x is None else ("yes" if x else "no")

    if table.empty:
        return table
    return pd.DataFrame({
        "experiment": table["experiment"], "quantity": table["quantity"],
        "first session": table["first"].map(format_quantity),
        "second session": table["second"].map(format_quantity),
        "first inside second's CI": table["first_inside_second"].map(yes),
        "second inside first's CI": table["second_inside_first"].map(yes)})


# ---------------------------------------------------------------------------
# Sessions of one host state kept side by side (rtstudy.data.sessions)


def session_quantities(by_session: dict[str, dict]) -> pd.DataFrame:
    """Every headline quantity of every session of one host, tidy.

    Parameters
    ----------
    by_session : dict of str to dict of str to Section
        Session id (oldest first) → its sections (:func:`rtstudy.report.study.build_sections`).

    Returns
    -------
    DataFrame
        ``session``, ``experiment`` (label), ``quantity``, ``value``, ``low``, ``high``,
        ``unit``, ``n``, ``within`` (ω², :class:`~rtstudy.report.section.Quantity`); one row
        per session and quantity.
    """
    return pd.DataFrame([{"session": session, "experiment": s.label, **q.__dict__}
                         for session, sections in by_session.items()
                         for s in sections.values() for q in s.quantities],
                        columns=["session", "experiment", "quantity", "value", "low", "high",
                                 "unit", "n", "within"])


def cut_at_zero(est: meta.SessionEstimate) -> meta.SessionEstimate:
    """``est`` with its CI's and prediction interval's lower bounds at 0 at the lowest."""
    return dataclasses.replace(est, low=max(est.low, 0.0), next_low=max(est.next_low, 0.0))


def session_estimates(tidy: pd.DataFrame, confidence: float) -> pd.DataFrame:
    """Each headline quantity at the session level (:func:`rtstudy.inference.meta.over_sessions`).

    With 3 sessions or more, also whether the latest session lands where the earlier ones
    predict: ``latest_inside``, inside their prediction interval for a next session (the
    yardstick for one session's estimate); ``latest_inside_ci``, inside their CI of the mean
    (narrower: it bounds the host state's value, not a session's). None with fewer than 2
    earlier sessions or no spread between them. Both intervals of a quantity in
    :data:`NONNEGATIVE_UNITS` start at 0 at the lowest.

    Returns
    -------
    DataFrame
        ``experiment``, ``quantity``, ``unit``, ``sessions`` (k), ``value``, ``low``,
        ``high``, ``next_low``, ``next_high``, ``between_sessions`` (τ²), ``between_runs``
        (σ²), ``within_run`` (ω²), ``share`` (τ²'s share of the three), ``share_runs``,
        ``share_within`` (NaN where ω² is not known), ``latest_inside``, ``latest_inside_ci``.
    """
    rows = []
    order = list(dict.fromkeys(tidy["session"])) if len(tidy) else []
    for (experiment, quantity), g in tidy.groupby(["experiment", "quantity"], sort=False):
        g = g.set_index("session").reindex([s for s in order if s in set(g["session"])])
        unit = str(g["unit"].iloc[0])
        within = g["within"] if "within" in g else None
        est = meta.over_sessions(g["value"], g["low"], g["high"], g["n"], confidence, within)
        if unit in NONNEGATIVE_UNITS:
            est = cut_at_zero(est)
        latest = latest_ci = None
        earlier, last = g.iloc[:-1], g["value"].iloc[-1]
        if len(earlier.dropna(subset=["value"])) >= 2 and np.isfinite(last):
            before = meta.over_sessions(earlier["value"], earlier["low"], earlier["high"],
                                         earlier["n"], confidence)
            if unit in NONNEGATIVE_UNITS:
                before = cut_at_zero(before)
            if np.isfinite(before.next_low):
                latest = bool(before.next_low <= last <= before.next_high)
                latest_ci = bool(before.low <= last <= before.high)
        rows.append({"experiment": experiment, "quantity": quantity,
                     "unit": unit, "sessions": est.sessions,
                     "value": est.value, "low": est.low, "high": est.high,
                     "next_low": est.next_low, "next_high": est.next_high,
                     "between_sessions": est.between_sessions, "between_runs": est.between_runs,
                     "within_run": est.within_run, "share": est.shares[0],
                     "share_runs": est.shares[1], "share_within": est.shares[2],
                     "latest_inside": latest,
                     "latest_inside_ci": latest_ci})
    return pd.DataFrame(rows)


def sessions_table(tidy: pd.DataFrame, estimates: pd.DataFrame) -> pd.DataFrame:
    """The report's table: each session's estimate, then the session-level one."""
    if estimates.empty:
        return estimates

    def fmt(value, low, high) -> str:
        if not np.isfinite(value):
            return "n/a"
        ci = f" [{low:.3g}, {high:.3g}]" if np.isfinite(low) and np.isfinite(high) else ""
        return f"{value:.3g}{ci}"

    per = {(r.experiment, r.quantity, r.session): fmt(r.value, r.low, r.high)
           for r in tidy.itertuples()}
    sessions = list(dict.fromkeys(tidy["session"]))
    rows = []
    for r in estimates.itertuples():
        row = {"experiment": r.experiment, "quantity": f"{r.quantity} ({r.unit})"}
        for i, s in enumerate(sessions, 1):
            row[f"session {i}"] = per.get((r.experiment, r.quantity, s), "—")
        row["all sessions"] = fmt(r.value, r.low, r.high)
        row["a next session"] = (f"[{r.next_low:.3g}, {r.next_high:.3g}]"
                                 if np.isfinite(r.next_low) else "—")
        row["variance: sessions / runs / within a run"] = _shares(r.share, r.share_runs,
                                                                   r.share_within)
        row["latest where the earlier predict"] = ("—" if r.latest_inside is None else
                                                   "yes" if r.latest_inside else "no")
        rows.append(row)
    return pd.DataFrame(rows)


def largest_components(estimates: pd.DataFrame) -> LargestComponents:
    """How many headlines have each variance component as their largest: ``split`` (those
    with all three known), ``sessions``, ``runs``, ``within`` (of those), and ``unsplit``
    (those with τ² and σ² but no within-run part of their own)."""
    out: LargestComponents = {"split": 0, "sessions": 0, "runs": 0, "within": 0, "unsplit": 0}
    for r in (estimates.itertuples() if len(estimates) else []):
        shares = (r.share, r.share_runs, r.share_within)
        if not np.isfinite(r.share):
            continue
        if not np.isfinite(r.share_within):
            out["unsplit"] += 1
            continue
        out["split"] += 1
        out[("sessions", "runs", "within")[int(np.argmax(shares))]] += 1
    return out


def _shares(sessions: float, runs: float, within: float) -> str:
    """The shares as "62 / 30 / 8 %", with "—" for one not known (a contrast has no
    within-run part of its own)."""
    if not np.isfinite(sessions):
        return "—"
    parts = [f"{x * 100:.0f}" if np.isfinite(x) else "—" for x in (sessions, runs, within)]
    return " / ".join(parts) + " %"


def session_spread(tidy: pd.DataFrame) -> list[dict]:
    """Per headline quantity of one host's sessions (:func:`session_quantities`): how far the
    sessions' estimates moved: ``experiment``, ``quantity``, ``unit``, ``sessions`` (k),
    ``low`` and ``high`` (the smallest and largest session estimate), ``sd`` (their standard
    deviation, NaN below 2)."""
    rows = []
    for (experiment, quantity), g in tidy.groupby(["experiment", "quantity"], sort=False):
        v = g["value"].to_numpy(dtype=float)
        v = v[np.isfinite(v)]
        if v.size:
            rows.append({"experiment": experiment, "quantity": quantity,
                         "unit": str(g["unit"].iloc[0]), "sessions": int(v.size),
                         "low": float(v.min()), "high": float(v.max()),
                         "sd": float(v.std(ddof=1)) if v.size > 1 else None})
    return rows


def read_spread(path: Path) -> SpreadRecord | None:
    """The recorded session spread of the reference host, or None (none recorded, unreadable)."""
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return record if isinstance(record.get("quantities"), list) and record["quantities"] else None


def spread_table(quantities, record: dict) -> pd.DataFrame:
    """This host's headline quantities (one session) beside how far the reference host's sessions
    moved each (``record``: :func:`read_spread`), and whether this estimate lies in that range."""
    moved = {(q["experiment"], q["quantity"]): q for q in record["quantities"]}
    rows = []
    for experiment, q in quantities:
        ref = moved.get((experiment, q.quantity))
        if ref is None or not np.isfinite(q.value):
            continue
        ci = (f" [{q.low:.3g}, {q.high:.3g}]" if np.isfinite(q.low) and np.isfinite(q.high)
              else "")
        rows.append({"experiment": experiment, "quantity": f"{q.quantity} ({q.unit})",
                     "this session": f"{q.value:.3g}{ci}",
                     f"reference: {record['host_id']}'s sessions": f"{ref['low']:.3g} – "
                                                                    f"{ref['high']:.3g}",
                     "sessions": ref["sessions"],
                     "inside that range": "yes" if ref["low"] <= q.value <= ref["high"] else "no"})
    return pd.DataFrame(rows)
