"""``report/metrics.json``: every section's verdicts and headline quantities, per host and
over its sessions, as ``dvc metrics show`` reads them.

:class:`StudyMetrics` is the part of :class:`rtstudy.report.study.Study` that writes it; the
key order of what it writes is the file's, so ``dvc metrics diff`` compares like with like.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from rtstudy import atomic, paths, protocol
from rtstudy.inference import criteria, records
from rtstudy.report import stability
from rtstudy.report.section import Section


class Claim(TypedDict, total=False):
    """A claim's verdict as metrics.json holds it."""

    verdict: str
    runs: int
    criterion: str
    status: protocol.Status  # what it rests on (StudySessions.evidence), added per host


class Quantity(TypedDict):
    """A headline quantity: its estimate, CI bounds (null where none), unit and N."""

    value: float | None
    low: float | None
    high: float | None
    unit: str
    n: int


class SessionQuantity(TypedDict):
    """A headline quantity estimated over a host's sessions (meta.over_sessions)."""

    value: float | None
    low: float | None
    high: float | None
    next_low: float | None  # where one more session should land
    next_high: float | None
    unit: str
    sessions: int
    between_sessions_var: float | None
    between_runs_var: float | None
    within_run_var: float | None


class Drift(TypedDict):
    """A sweep's drift check (stats.drift_check) as metrics.json holds it."""

    condition: str
    quantity: str
    unit: str
    start: float | None
    end: float | None
    difference: float | None
    minutes: float | None
    moved: bool | None


class ExperimentMetrics(TypedDict, total=False):
    """One experiment's block (its label's) in metrics.json: :meth:`StudyMetrics.metrics`."""

    verdicts: dict[str, Claim]
    headline: dict[str, Quantity]
    findings: dict[str, str]
    drift: Drift
    sessions: dict[str, SessionQuantity]
    verdicts_over_sessions: dict[str, dict]  # OverSessions with its status
    findings_pooled: dict[str, str]
    findings_over_sessions: dict[str, list[str]]


class PlacementMetrics(TypedDict):
    """H5a over every session of a host with 5.0 placement records (:func:`placement_record`)."""

    verdicts: dict[str, Claim]
    threads: int
    mismatches: list[str]


def number(x: float) -> float | None:
    """``x`` as JSON holds it: a float, or None (null) where it is not finite."""
    return float(x) if np.isfinite(x) else None


def verdicts_and_headlines(sections: dict[str, Section]) -> dict[str, ExperimentMetrics]:
    """Per experiment label: ``verdicts`` (claim → verdict, runs, criterion), ``headline``
    (quantity → value, CI bounds, unit, N) and, where the section has any, ``findings``."""
    return {s.label: {
        "verdicts": {v.claim: {"verdict": v.verdict, "runs": v.runs,
                               "criterion": v.criterion} for v in s.verdicts},
        "headline": {q.quantity: {"value": number(q.value), "low": number(q.low),
                                  "high": number(q.high), "unit": q.unit, "n": int(q.n)}
                     for q in s.quantities},
        **({"findings": dict(s.findings)} if s.findings else {})}
        for s in sections.values()}


def drift(row: dict) -> Drift:
    """A sweep's drift check (a row of :func:`rtstudy.report.stability.drift_rows`)."""
    return {"condition": row["label"], "quantity": row["quantity"], "unit": row["unit"],
            **{k: number(row[k]) for k in ("start", "end", "difference", "minutes")},
            "moved": row["moved"]}


def placement_record(result: records.Audit) -> PlacementMetrics:
    """H5a over every session of a host with 5.0 placement records (a check, no CI):
    ``result`` is :func:`rtstudy.inference.records.audit`'s."""
    return {"verdicts": {"H5a": {"verdict": records.verdict(result), "runs": result["cells"],
                                 "criterion": criteria.CRITERIA["h5a_record"].rule}},
            "threads": result["threads"], "mismatches": result["mismatches"]}


class StudyMetrics:
    """The metrics' part of :class:`rtstudy.report.study.Study` (a mixin: it reads the study's
    ``profile``, ``host_id``, ``ci``, ``sections`` and ``datasets`` and its sessions' and
    hosts' parts)."""

    def metrics(self) -> dict[str, Any]:
        """Every section's verdicts and headline quantities, as ``report/metrics.json`` holds them.

        Per experiment label: ``verdicts`` (claim → verdict, runs, criterion), ``headline``
        (quantity → value, CI bounds, unit, N; a bound that does not exist is null) and,
        where a section has any, ``findings`` (name → conclusion in words); for a host with
        several sessions, ``sessions`` (each headline over them), ``verdicts_over_sessions``,
        ``findings_pooled`` (name → its conclusion on the sessions pooled) and
        ``findings_over_sessions`` (name → each session's conclusion, oldest first). At the
        top level for the host the sections show (with the drift check of each sweep); under
        ``hosts``, the same for every host with data for the profile (each host state and SDK
        version is a host id), with its ``label``, ``state`` and ``sdk``
        (:func:`rtstudy.data.hosts`), and for a host with Holoscan 5.0 placement records
        ``H5`` (H5a's verdict over every session, the threads compared and each mismatch:
        :meth:`placement_audits`). Read with ``dvc metrics show``; ``dvc metrics diff``
        compares commits.
        """
        out: dict[str, Any] = {"profile": self.profile, "host_id": self.host_id,
                     "confidence": self.ci.confidence, "protocol": protocol.record(),
                     "evidence": self.evidence(),
                     **self._with_sessions(verdicts_and_headlines(self.sections), self.host_id)}
        for row in stability.drift_rows(self.datasets):
            out[row["experiment"]]["drift"] = drift(row)
        described = self.described()
        out["hosts"] = {host_id: {**{k: described.at[host_id, k]
                                     for k in ("label", "state", "sdk")},
                                  "evidence": self.evidence(host_id),
                                  **self._with_sessions(verdicts_and_headlines(sections), host_id)}
                        for host_id, sections in self.sections_by_host().items()}
        for host_id, result in self.placement_audits().items():
            out["hosts"][host_id]["H5"] = placement_record(result)
        return out

    def write_metrics(self) -> Path:
        """Write :meth:`metrics` to ``report/metrics.json`` (atomically)."""
        path = paths.metrics_file()
        atomic.write_text(path, json.dumps(self.metrics(), indent=2, allow_nan=False) + "\n")
        return path

    def _over_sessions(self, host_id: str) -> dict[str, dict[str, SessionQuantity]]:
        """Per experiment label: quantity → its session-level estimate (hosts with two
        sessions or more)."""
        out: dict[str, dict[str, SessionQuantity]] = {}
        for r in self.session_estimates(host_id).itertuples():
            out.setdefault(r.experiment, {})[r.quantity] = {
                "value": number(r.value), "low": number(r.low), "high": number(r.high),
                "next_low": number(r.next_low), "next_high": number(r.next_high),
                "unit": r.unit, "sessions": int(r.sessions),
                "between_sessions_var": number(r.between_sessions),
                "between_runs_var": number(r.between_runs),
                "within_run_var": number(r.within_run)}
        return out

    def _with_sessions(self, block: dict[str, ExperimentMetrics], host_id: str
                       ) -> dict[str, ExperimentMetrics]:
        """``block`` (:func:`verdicts_and_headlines` of ``host_id``) with what its sessions
        say: each headline and verdict over them, and each finding pooled and per session."""
        # Every verdict says what it rests on: confirmatory or exploratory (protocol v1).
        status = self.evidence(host_id)["status"]
        for part in block.values():
            for verdict in (part.get("verdicts", {}) if isinstance(part, dict) else {}).values():
                verdict["status"] = status
        for label, quantities in self._over_sessions(host_id).items():
            block.setdefault(label, {})["sessions"] = quantities
        for claim, over in self.verdicts_over_sessions(host_id).items():
            for part in block.values():
                if isinstance(part, dict) and claim in part.get("verdicts", {}):
                    part.setdefault("verdicts_over_sessions", {})[claim] = {**over,
                                                                           "status": status}
        # Each finding in every session that has it, oldest first: `dvc metrics show`
        # says whether a conclusion held; and judged on the sessions pooled.
        for name, s in self.sections_by_host().get(host_id, {}).items():
            pooled = s.pooled_findings(self.session_headlines(name, host_id))
            if pooled:
                block.setdefault(s.label, {})["findings_pooled"] = pooled
        for sections in self.sessions_of(host_id).values():
            for s in sections.values():
                for name, finding in s.findings.items():
                    block.setdefault(s.label, {}).setdefault(
                        "findings_over_sessions", {}).setdefault(name, []).append(finding)
        return block
