"""How stable the measurements are: drift within each sweep, and agreement between sessions.

*Drift*: each sweep ran one condition once more first and once more last
(:func:`rtstudy.harness.with_drift`); :func:`drift_table` sets their difference
beside the spread of that condition's ordinary runs. *Between sessions*:
``benchmarks/rerun_agreement.py`` measured the whole study twice, one session
after the other, and recorded both sessions' ``report/metrics.json`` in
``benchmarks/rerun_agreement.json``; :func:`agreement_table` says, per headline
quantity, whether each session's estimate lies inside the other's CI, and
:func:`verdict_changes` which verdicts differed. The report cites both.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from rtstudy import registry


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


def read_rerun(path: Path) -> dict | None:
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
