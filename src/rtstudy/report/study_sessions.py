"""The study over a host state's sessions: each session's sections, the verdicts and headline
quantities pooled over them, and the report's "Stability" section.

A host state measured by several ``make study`` runs has several sessions
(:mod:`rtstudy.data.sessions`); :class:`StudySessions` is the part of
:class:`rtstudy.report.study.Study` that builds and pools them.
"""
from __future__ import annotations

from pathlib import Path
from typing import TypedDict

import pandas as pd

from rtstudy import paths, protocol, registry
from rtstudy.data import sessions
from rtstudy.inference import judge
from rtstudy.report import stability
from rtstudy.report.blocks import words
from rtstudy.report.section import Markdown, Section, Table, Verdict


def pooled_verdict(given: list[Verdict], confidence: float) -> tuple[str, str]:
    """A claim's verdict over sessions: each of its parts pooled over the sessions that
    judged it (:func:`rtstudy.inference.judge.pool_by_name`: a random session effect, late frames'
    counts in one rate ratio), then the claim's own rule (``Verdict.combine``) applied to
    them, so a new session can settle what fewer sessions left open. Not testable here
    where no session had a part to judge.

    Parameters
    ----------
    given : list of Verdict
        The claim's verdict in each session, oldest first (at least one).
    confidence : float
        The pooled CIs' level.

    Returns
    -------
    tuple of str
        The verdict and, where it is not decided, why.
    """
    if not given:
        raise ValueError("no session's verdict to pool")
    judged = [v for v in given if v.parts and v.combine]
    exact = [v for v in given if v.verdict in (judge.HOLDS, judge.FAILS)]
    if exact and not judged:
        # An equality (H5b) has nothing to pool: it holds over sessions where it held in each.
        failed = sum(v.verdict == judge.FAILS for v in exact)
        return ((judge.FAILS, f"failed in {failed} of {len(exact)} sessions") if failed
                else (judge.HOLDS, ""))
    if not judged:
        return judge.NOT_TESTABLE, "no session could judge it"
    parts = judge.pool_by_name([list(v.parts) for v in judged], confidence)
    return judged[-1].combine(parts)


# Which sessions a verdict pools (StudySessions.sessions_of): the main verdicts' (confirmatory
# where there are any), or the exploratory ones beside them.
MAIN, EXPLORATORY = "main", "exploratory"


class Evidence(TypedDict):
    """What a host state's verdicts rest on (:meth:`StudySessions.evidence`)."""

    status: protocol.Status
    protocol: int  # the version in force
    sessions: int  # the sessions its verdicts pool
    words: str  # as the report says it


class OverSessions(TypedDict):
    """A claim's verdict over a host state's sessions (:meth:`StudySessions.verdicts_over_sessions`)."""

    verdict: str  # over the sessions pooled
    why: str
    sessions: list[str]  # each session's verdict, oldest first


class StudySessions:
    """The sessions' part of :class:`rtstudy.report.study.Study` (a mixin: it reads the study's
    ``profile``, ``ci``, ``host_id``, ``sections`` and ``datasets``, caches in its
    ``_sessions`` and ``_found`` and builds each session's sections with its ``_sections_from``)."""

    def rerun(self) -> stability.RerunRecord | None:
        """The recorded re-run agreement (``benchmarks/rerun_agreement.json``), or None."""
        return stability.read_rerun(paths.rerun_file())

    def stability_blocks(self) -> list:
        """The "Stability" section: drift within each sweep, then agreement between sessions."""
        drift = stability.drift_rows(self.datasets)
        rerun = self.rerun()
        agree = stability.agreement(*rerun["sessions"]) if rerun else pd.DataFrame()
        changed = {c: v for c, v in (stability.verdict_changes(*rerun["sessions"]).items()
                                     if rerun else []) if v[0] != v[1]}
        with_ci = agree[agree["agree"].notna()] if len(agree) else agree
        off = [f"{r.experiment} {r.quantity}" for r in with_ci.itertuples() if not r.agree]
        # How many would miss with no difference between the sessions: a CI is made to hold
        # the true value, not another session's estimate.
        chance = stability.chance_misses(
            agree, rerun["sessions"][0].get("confidence", self.ci.confidence)) if rerun else {}
        return [Markdown(words("stability", drift=drift, rerun=rerun, shown=self.host_id,
                               profile=self.profile, n_ci=len(with_ci), off=off,
                               n_agree=len(with_ci) - len(off), changed=changed,
                               chance=chance)),
                Table(lambda: stability.drift_table(drift), words("caption_drift")),
                Table(lambda: stability.agreement_table(agree),
                      words("caption_rerun", rerun=rerun)),
                *self.sessions_blocks()]

    def sessions_of(self, host_id: str | None = None, kind: str = MAIN
                    ) -> dict[str, dict[str, Section]]:
        """The sessions of ``host_id`` (default: the shown host) a verdict pools → their
        sections, oldest first; empty when no experiment of them has two sessions
        (:mod:`rtstudy.data.sessions`). Each session's sections are built from that session's
        data alone, as the shown ones are.

        ``kind`` :data:`MAIN`: where the host state has sessions measured under the protocol in
        force, those alone (confirmatory verdicts), else every session (exploratory ones);
        :data:`EXPLORATORY`: the host state's other sessions, beside confirmatory ones (empty
        where it has none)."""
        host_id = host_id or self.host_id
        if (host_id, kind) not in self._sessions:
            found = self._session_folders(host_id, kind)
            by_session: dict = {}
            if any(len(f) >= 2 for f in found.values()):
                # Each experiment lists its sessions oldest first; one `make study` is one
                # session of every experiment, so their union keeps that order.
                order = list(dict.fromkeys(s for f in found.values() for s in f))
                by_session = {s: self._sections_from({n: f[s] for n, f in found.items()
                                                      if s in f}) for s in order}
            self._sessions[host_id, kind] = by_session
        return self._sessions[host_id, kind]

    def _session_folders(self, host_id: str, kind: str) -> dict[str, dict[str, Path]]:
        """Per experiment, the sessions (session → folder) :meth:`sessions_of` ``kind`` pools,
        found once (each finding reads every cell's sidecar: 5 s of a reference render when
        asked anew each time)."""
        if (host_id, kind) in self._found:
            return self._found[host_id, kind]
        found = {name: sessions.folders(name, host_id, self.profile) for name in registry.REGISTRY}
        confirmed = {name: sessions.confirmatory(f) for name, f in found.items()}
        if not any(confirmed.values()):
            chosen = found if kind == MAIN else {}
        elif kind == MAIN:
            chosen = confirmed
        else:
            chosen = {n: {s: f for s, f in found[n].items() if s not in confirmed[n]}
                      for n in found}
        self._found[host_id, kind] = chosen
        return chosen

    def evidence(self, host_id: str | None = None) -> Evidence:
        """What a host state's verdicts rest on: ``status`` ``confirmatory`` (every session they
        pool measured under the protocol in force: ``sessions`` of them) or ``exploratory``
        (``sessions``: those measured before it, all of them), the ``protocol`` version, and
        ``words``, as the report says it."""
        host_id = host_id or self.host_id
        folders = self._session_folders(host_id, MAIN)
        k = max((len(f) for f in folders.values()), default=0)
        confirmed = any(sessions.confirmatory(f) for f in folders.values())
        v = protocol.VERSION
        said = (f"confirmatory: protocol v{v}, {k} session{'s' if k != 1 else ''} measured after "
                "its freeze" if confirmed else
                f"exploratory: measured before protocol v{v}'s freeze")
        return {"status": protocol.Status.CONFIRMATORY if confirmed else
                protocol.Status.EXPLORATORY, "protocol": v,
                "sessions": k, "words": said}

    def session_headlines(self, name: str, host_id: str | None = None) -> list:
        """Experiment ``name``'s ``headline`` in every session of ``host_id`` (default: the
        shown host), oldest first; empty when it has fewer than two sessions."""
        return [sections[name].headline for sections in self.sessions_of(host_id).values()
                if name in sections]

    def session_quantities(self, host_id: str | None = None) -> pd.DataFrame:
        """Every headline quantity of every session (:meth:`sessions_of`), tidy
        (:func:`rtstudy.report.stability.session_quantities`)."""
        return stability.session_quantities(self.sessions_of(host_id))

    def verdicts_over_sessions(self, host_id: str | None = None) -> dict[str, OverSessions]:
        """Claim → ``verdict`` over the sessions pooled, ``why`` and ``sessions`` (each one's,
        oldest first); empty with fewer than two sessions."""
        return {r["claim"]: {"verdict": r["over sessions"], "why": r["why"],
                             "sessions": [v for c, v in r.items() if c.startswith("session ")]}
                for r in self.session_verdicts(host_id).to_dict("records")}

    def session_verdicts(self, host_id: str | None = None, kind: str = MAIN) -> pd.DataFrame:
        """Each claim's verdict per session and over them, pooled
        (:func:`pooled_verdict`), with why it is not decided where it is not; ``kind`` as
        :meth:`sessions_of`."""
        by_session = self.sessions_of(host_id, kind)
        per = {s: {v.claim: v for sec in sections.values() for v in sec.verdicts}
               for s, sections in by_session.items()}
        claims = list(dict.fromkeys(c for v in per.values() for c in v))
        rows = []
        for claim in claims:
            given = [per[s][claim] for s in per if claim in per[s]]
            verdict, why = pooled_verdict(given, self.ci.confidence)
            rows.append({"claim": claim, **{f"session {i}": per[s][claim].verdict
                                            if claim in per[s] else "—"
                                            for i, s in enumerate(per, 1)},
                         "over sessions": verdict, "why": why})
        return pd.DataFrame(rows)

    def session_estimates(self, host_id: str | None = None) -> pd.DataFrame:
        """:func:`rtstudy.report.stability.session_estimates` of :meth:`session_quantities`."""
        tidy = self.session_quantities(host_id)
        return (stability.session_estimates(tidy, self.ci.confidence) if len(tidy)
                else pd.DataFrame())

    def sessions_blocks(self) -> list:
        """Between the sessions of the shown host state: each headline per session, the
        session-level estimate with its CI, where a next session should land, the share of
        the variance that is the session's. With one session, how far the reference host's
        sessions moved each headline (``benchmarks/session_spread.json``), where recorded."""
        tidy, est = self.session_quantities(), self.session_estimates()
        judged = est[est["latest_inside"].notna()] if len(est) else est
        k = tidy["session"].nunique() if len(tidy) else 0
        spread = stability.read_spread(paths.session_spread_file()) if k < 2 else None
        if spread and spread.get("profile") != self.profile:
            spread = None
        if spread:
            # One session here: how far the reference host's sessions moved each headline.
            mine = [(s.label, q) for s in self.sections.values() for q in s.quantities]
            return [Markdown(words("sessions", k=k, shown=self.host_id, spread=spread, ci=self.ci)),
                    Table(lambda: stability.spread_table(mine, spread),
                          words("caption_spread", spread=spread))]
        return [Markdown(words("sessions", k=k, spread=None,
                               ids=list(dict.fromkeys(tidy["session"])) if len(tidy) else [],
                               shown=self.host_id, ci=self.ci, est=est, n_judged=len(judged),
                               n_inside=int(judged["latest_inside"].sum()) if len(judged) else 0,
                               outside=[f"{r.experiment} {r.quantity}" for r in judged.itertuples()
                                        if not r.latest_inside],
                               largest=stability.largest_components(est))),
                Table(lambda: stability.sessions_table(tidy, est), words("caption_sessions",
                                                                         ci=self.ci)),
                Table(self.session_verdicts, words("caption_session_verdicts"))]
