"""The report, put together: every registered experiment's section over one host's data.

The report notebook (``notebooks/report.ipynb``) makes one :class:`Study` and
shows it piece by piece. :meth:`Study.load` loads each experiment's dataset
the one way (:func:`rtstudy.data.load_dataset`) and builds its section
(``section.build`` in its folder) from that dataset alone, in registry order; the
report's own words are in ``templates/report.md.j2``.
"""
from __future__ import annotations

import hashlib
import html
import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from rtstudy import atomic, data, params, paths, registry
from rtstudy.data import sessions
from rtstudy.data.io import DataError, completed_cells, read_host
from rtstudy.inference import criteria, judge, records
from rtstudy.inference.stats import CI, MIN_RUNS
from rtstudy.machine import host, placement, shield
from rtstudy.measure.harness import git_state
from rtstudy.report import figstyle, figures, sdks, stability
from rtstudy.report.section import (TEMPLATES, Advice, Details, Figure, LazyMarkdown, Markdown,
                                    Section, Table, Verdict, render)


def words(block: str, **context) -> str:
    """A block of the report's own template (``templates/report.md.j2``)."""
    return render(TEMPLATES, block, **context)


def table_html(df: pd.DataFrame, caption: str = "") -> str:
    """A plain HTML table (no index) with its caption, which nbconvert keeps when code is hidden."""
    if df.empty:
        return ""
    head = f'<p class="table-caption">{caption}</p>' if caption else ""
    return head + df.to_html(index=False, escape=True, border=0, classes="rtstudy-table")


def markdown_html(text: str) -> str:
    """Markdown as nbconvert renders a Markdown output: pipe tables, headings with anchors."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    return MarkdownWithMath(renderer=IPythonRenderer(escape=False)).render(text)


def block_html(block) -> str:
    """One block as HTML: figures drawn, embedded with their words (alt text), then closed;
    :class:`Details` collapsed under its summary. "" for a block with nothing to show."""
    if isinstance(block, Markdown):
        return markdown_html(block.text)
    if isinstance(block, LazyMarkdown):
        return markdown_html(block.make())
    if isinstance(block, Table):
        return table_html(block.make(), block.caption)
    if isinstance(block, Figure):
        fig = block.make()
        if fig is None:
            return ""
        try:
            return figstyle.to_html(fig)
        finally:
            plt.close(fig)
    if isinstance(block, Details):
        inner = "".join(block_html(b) for b in block.blocks)
        return (f'<details class="rtstudy-details"><summary>{html.escape(block.summary)}'
                f'</summary>{inner}</details>' if inner else "")
    raise TypeError(f"not a report block: {block!r}")


def show(blocks: list) -> None:
    """Display blocks in order in the running notebook: words as Markdown, the rest as HTML
    (:func:`block_html`)."""
    from IPython.display import HTML, Markdown as MarkdownText, display

    for block in blocks:
        if isinstance(block, (Markdown, LazyMarkdown)):
            display(MarkdownText(block.text if isinstance(block, Markdown) else block.make()))
        else:
            out = block_html(block)
            if out:
                display(HTML(out))


def advice_table(advice: list[Advice]) -> pd.DataFrame:
    """The report's "What to do" as a table, one row per change."""
    return pd.DataFrame([{"change": a.change, "against": a.against,
                          "late frames: before → after": a.late, "late-frame ratio": a.ratio,
                          "decided": a.word, "typical jitter": f"{a.typical}: {a.typical_word}",
                          "costs": a.cost}
                         for a in advice])


def _this_fingerprint() -> dict:
    fp_file = paths.fingerprint_file()
    return json.loads(fp_file.read_text()) if fp_file.exists() else host.current()


def report_host(profile: str) -> str:
    """The host whose data every section shows: this host if it measured ``profile`` (as many
    experiments as any other host).

    Otherwise the host with data for the most experiments; ties go to a host as it is before a
    shielded one (the reference data holds both states of each machine), then to the host whose
    current session is the newest (the reference data's latest measurement: the docs and
    ``report/metrics.json`` describe it), then to the host with the most sessions, then to the
    first id. Nothing in that order depends on the machine that renders, so a fresh clone's
    ``make pull && make report`` shows the same host on every machine. "Hosts compared" shows
    every host.
    """
    counts: dict[str, int] = {}
    session_counts: dict[str, int] = {}
    newest: dict[str, str] = {}  # host → its newest current session's start (ISO UTC)
    for name in registry.REGISTRY:
        for d in data.datasets(name, profile):
            counts[d.parent.name] = counts.get(d.parent.name, 0) + 1
            newest[d.parent.name] = max(newest.get(d.parent.name, ""), sessions.started(d))
            # The closed sessions and the current one, the dataset folder itself.
            session_counts[d.parent.name] = (session_counts.get(d.parent.name, 0)
                                             + sessions.closed(d) + 1)
    if not counts:
        raise DataError(f"no data for profile {profile!r} under {paths.data_dir() / 'raw'}; run "
                        "`make study` (or `make pull`)")
    this_host = _this_fingerprint()["host_id"]
    # This host, unless it measured fewer experiments than another (a colleague's imported
    # study beside a single stage measured here): then that one, so that no section is empty.
    if counts.get(this_host) == max(counts.values()):
        return this_host

    def shielded(host_id: str) -> bool:
        return bool(shield.of(data_fingerprint(profile, host_id)))

    # The first of the best in id order: max keeps the first of equal keys.
    return max(sorted(counts), key=lambda h: (counts[h], not shielded(h), newest[h],
                                              session_counts[h]))


def build_sections(datasets: dict, configs: dict, ci: CI) -> dict[str, Section]:
    """Every experiment's section from its dataset, in registry order (each from its own data)."""
    return {name: registry.get(name).section.build(datasets[name], configs[name], ci)
            for name in registry.REGISTRY if name in datasets}


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


@dataclass
class Study:
    """One profile's report: the host shown, its sections, and what the report says around them."""

    profile: str
    ci: CI
    configs: dict
    host_id: str
    fingerprint: dict | None
    sections: dict[str, Section] = field(default_factory=dict)
    datasets: dict = field(default_factory=dict)
    # The labels of the experiments the shown host has no data for (a study in part).
    missing: list[str] = field(default_factory=list)
    _by_host: dict | None = field(default=None, repr=False)  # sections_by_host(), built once
    _described: pd.DataFrame | None = field(default=None, repr=False)  # described(), read once
    _sessions: dict = field(default_factory=dict, repr=False)  # sessions_of(), per host
    # A host's current session is also one of its sessions: each dataset folder is loaded,
    # and each set of them built into sections, once (_dataset(), _sections_from()).
    _loaded: dict = field(default_factory=dict, repr=False)
    _built: dict = field(default_factory=dict, repr=False)
    _audits: dict | None = field(default=None, repr=False)  # placement_audits(), once

    @classmethod
    def load(cls, profile: str | None = None) -> "Study":
        """Load every experiment's data for ``profile`` from one host and build its section.

        Raises
        ------
        DataError
            Naming every dataset that is missing or damaged (not just the first).
        """
        configs = params.configs(profile)
        profile = configs[params.REPORT]["profile"]
        ci = CI.from_params(configs[params.REPORT])
        host_id = report_host(profile)
        loaded, problems = {}, []
        for name in registry.REGISTRY:
            # A host with some experiments only (an import of part of a study) shows what it
            # has; the Limitations name the sections it lacks.
            if not data.has_dataset(name, host_id, profile):
                continue
            try:
                loaded[name] = data.load_dataset(name, host_id, profile)
            except DataError as exc:
                problems.append(str(exc))
        if problems:
            raise DataError(f"the report cannot be made from this data ({len(problems)} "
                            "problem(s); fix them all, then run `make report` again):\n- "
                            + "\n- ".join(problems))
        fp = data_fingerprint(profile, host_id)
        study = cls(profile, ci, configs, host_id, fp, build_sections(loaded, configs, ci), loaded,
                    missing=[registry.get(n).section.LABEL for n in registry.REGISTRY
                             if n not in loaded])
        for name, dataset in loaded.items():
            study._loaded[name, data.dataset_dir(name, host_id, profile).resolve()] = dataset
        for name, section in study.sections.items():
            section.session_headlines = partial(study.session_headlines, name)
        return study

    def _dataset(self, name: str, folder: Path):
        """Experiment ``name``'s dataset in ``folder`` (a dataset folder, or one of its closed
        sessions), by the experiment's own loader, read once."""
        key = (name, Path(folder).resolve())
        if key not in self._loaded:
            self._loaded[key] = registry.get(name).analysis.load(folder, self.configs[name])
        return self._loaded[key]

    def _sections_from(self, folders: dict[str, Path]) -> dict[str, Section]:
        """The sections of the datasets in ``folders`` (experiment → folder), built once."""
        key = tuple(sorted((name, Path(f).resolve()) for name, f in folders.items()))
        if key not in self._built:
            self._built[key] = build_sections(
                {name: self._dataset(name, f) for name, f in folders.items()}, self.configs,
                self.ci)
        return self._built[key]

    # -- the report's own parts ---------------------------------------------------------

    def label(self, host_id: str | None = None) -> str:
        """A host's readable label (:func:`rtstudy.data.hosts`); default the shown host."""
        host_id = host_id or self.host_id
        described = self.described()
        return str(described.at[host_id, "label"]) if host_id in described.index else host_id

    def title(self) -> str:
        return words("title", sections=list(self.sections.values()), profile=self.profile,
                     label=self.label(), k=max(len(self.sessions_of()), 1), ci=self.ci)

    def front(self) -> list:
        """The first screen: what to do on the shown host, each change with its effect on late
        frames, its CI and what that decided; then each experiment's notes and the glossary."""
        advice = [a for s in self.sections.values() for a in s.advice()]
        advice += self.sdk_advice({a.change for a in advice})
        notes = [n for n in (s.notes() for s in self.sections.values()) if n]
        scope = "; ".join(s.scope for s in self.sections.values() if s.scope)
        return [Markdown(words("what_to_do", advice=advice, ci=self.ci, scope=scope)),
                Table(lambda: advice_table(advice), words("caption_advice", ci=self.ci)),
                *[Markdown(n) for n in notes],
                Details(words("glossary_in_full"), [Markdown(words("glossary"))])]

    def sdk_advice(self, known: set[str]) -> list[Advice]:
        """The other SDK versions of the shown machine state as changes: each experiment's
        headline measure with that version against the shown one (``Section.compare``), and
        the changes only that version measured, not among ``known`` (the shown host's: so
        Holoscan 5.0's wake mode)."""
        rows = sdks.groups(self.host_states(), self.host_id) if self.sections else []
        mine = next((r for r in rows if r["host_id"] == self.host_id), None)
        if mine is None:
            return []
        out = []
        for r in rows:
            theirs = self.sections_by_host().get(r["host_id"], {})
            if r is mine or not theirs:
                continue
            for name, s in self.sections.items():
                a = s.compare(theirs[name], f"{r['label']} instead of {mine['label']}",
                              "the same machine state") if name in theirs else None
                if a is not None:
                    out.append(a)
            out += [replace(a, against=f"{a.against}; {r['label']}")
                    for s in theirs.values() for a in s.advice() if a.change not in known]
        return out

    def verdict_blocks(self) -> list:
        """One line per published claim: its verdicts (over the sessions where there are
        several), linked to its section."""
        over, k = self.verdicts_over_sessions(), len(self.sessions_of())
        rows = [{"hypothesis": s.hypothesis, "label": s.label, "claim": s.claim,
                 "anchor": markdown_anchor(self.section_heading(s)),
                 "verdicts": [{"claim": v.claim, "verdict": over.get(v.claim, {}).get(
                     "verdict", v.verdict)} for v in s.verdicts]}
                for s in self.sections.values()]
        return [Markdown(words("verdicts", rows=rows, k=k))]

    def section_heading(self, section: Section) -> str:
        """An experiment's heading on the main page: ``E3 — Scheduler overhead (H3)``."""
        return f"{section.label} — {section.title} ({section.hypothesis})"

    def section_blocks(self, section: Section) -> list:
        """An experiment on the main page: its claim and verdicts, its one figure, and the rest
        collapsed."""
        over, k = self.verdicts_over_sessions(), len(self.sessions_of())
        verdicts = [{"claim": v.claim, "ours": v.ours,
                     "verdict": over.get(v.claim, {}).get("verdict", v.verdict)}
                    for v in section.verdicts]
        return [Markdown(words("section_head", s=section, heading=self.section_heading(section),
                               verdicts=verdicts, k=k)),
                *section.main,
                Details(words("in_full", label=section.label), section.blocks)]

    def lab_book(self) -> list:
        """Everything behind the verdicts, collapsed: the summary beside the published figures,
        stability and sessions, the methods and criteria, the limitations."""
        return [Markdown(words("lab_book")),
                Details(words("summary_in_full"), [Markdown(self.summary())]),
                Details(words("stability_in_full"), self.stability_blocks()),
                Details(words("methods_in_full"), [Markdown(self.methods()),
                                                   *self.criteria_blocks()]),
                Details(words("limitations_in_full", n=len(self.limitations())),
                        [Markdown(self.limitations_markdown())])]

    def summary(self) -> str:
        verdicts = [v for s in self.sections.values() for v in s.verdicts]
        rerun = self.rerun()
        # A re-run's verdicts stand beside these only when it measured this host and profile.
        second = (stability.verdict_changes(*rerun["sessions"]) if rerun and rerun.get("host_id")
                  == self.host_id and rerun.get("profile") == self.profile else {})
        # A session judged by another rule than today's says nothing about today's verdict.
        recorded = stability.criteria_of(rerun["sessions"][0]) if second else {}
        earlier = [v.claim for v in verdicts if v.claim in second
                   and not stability.same_rule(recorded.get(v.claim, ""), v.criterion)]
        return words("summary", verdicts=verdicts, ci=self.ci, second=second, rerun=rerun,
                     earlier=earlier, over=self.verdicts_over_sessions(),
                     k=len(self.sessions_of()))

    def rerun(self) -> dict | None:
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
                Table(lambda: stability.agreement_table(agree), words("caption_rerun", rerun=rerun)),
                *self.sessions_blocks()]

    def sessions_of(self, host_id: str | None = None) -> dict[str, dict[str, Section]]:
        """Every session of ``host_id`` (default: the shown host) → its sections, oldest first;
        empty when no experiment of it has two sessions (:mod:`rtstudy.data.sessions`). Each
        session's sections are built from that session's data alone, as the shown ones are."""
        host_id = host_id or self.host_id
        if host_id not in self._sessions:
            found = {name: sessions.folders(name, host_id, self.profile)
                     for name in registry.REGISTRY}
            by_session: dict = {}
            if any(len(f) >= 2 for f in found.values()):
                # Each experiment lists its sessions oldest first; one `make study` is one
                # session of every experiment, so their union keeps that order.
                order = list(dict.fromkeys(s for f in found.values() for s in f))
                by_session = {s: self._sections_from({n: f[s] for n, f in found.items()
                                                      if s in f}) for s in order}
            self._sessions[host_id] = by_session
        return self._sessions[host_id]

    def session_headlines(self, name: str, host_id: str | None = None) -> list[dict]:
        """Experiment ``name``'s ``headline`` in every session of ``host_id`` (default: the
        shown host), oldest first; empty when it has fewer than two sessions."""
        return [sections[name].headline for sections in self.sessions_of(host_id).values()
                if name in sections]

    def session_quantities(self, host_id: str | None = None) -> pd.DataFrame:
        """Every headline quantity of every session (:meth:`sessions_of`), tidy
        (:func:`rtstudy.report.stability.session_quantities`)."""
        return stability.session_quantities(self.sessions_of(host_id))

    def verdicts_over_sessions(self, host_id: str | None = None) -> dict[str, dict]:
        """Claim → ``verdict`` over the sessions pooled, ``why`` and ``sessions`` (each one's,
        oldest first); empty with fewer than two sessions."""
        return {r["claim"]: {"verdict": r["over sessions"], "why": r["why"],
                             "sessions": [v for c, v in r.items() if c.startswith("session ")]}
                for r in self.session_verdicts(host_id).to_dict("records")}

    def session_verdicts(self, host_id: str | None = None) -> pd.DataFrame:
        """Each claim's verdict per session and over them, pooled
        (:func:`pooled_verdict`), with why it is not decided where it is not."""
        by_session = self.sessions_of(host_id)
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

    def placement(self) -> str:
        """Where this host's data ran its threads: the cpus group on the measuring host's state."""
        if not self.fingerprint:
            return ""
        try:
            return placement.resolve(self.configs.get(params.CPUS), self.fingerprint).describe()
        except ValueError as exc:
            return f"not known ({exc})"

    def methods(self) -> str:
        return words("methods", host=words("host", fp=self.fingerprint), profile=self.profile,
                     placement=self.placement(), sections=list(self.sections.values()),
                     ci=self.ci, min_runs=MIN_RUNS)

    def measured_utc(self) -> datetime | None:
        """When the shown data was measured: its first run's end (UTC), None without runs."""
        stamps = [t["finished_utc"].min() for ds in self.datasets.values()
                  for t in ds.tables.values() if "finished_utc" in t.columns and len(t)]
        if not stamps:
            return None
        return datetime.strptime(min(stamps), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)

    def criteria_blocks(self) -> list:
        """Every verdict's criterion (:mod:`rtstudy.inference.criteria`) and when it was set,
        relative to the shown data's measurement."""
        measured = self.measured_utc()
        table = criteria.table(measured)
        after = [r.criterion for r in table.itertuples() if r.after_any_data]
        return [Markdown(words("criteria", measured=f"{measured:%Y-%m-%d %H:%M}" if measured
                               else "", after=after, n=len(table), first=criteria.FIRST_DATA)),
                Table(lambda: table.drop(columns="after_any_data"), words("caption_criteria"))]

    def limitations(self) -> list[str]:
        """What limits this dataset: the host's fingerprint first, then each experiment's."""
        fp = self.fingerprint
        missing = ([words("missing_experiments", names=", ".join(self.missing),
                          count=len(self.missing))] if self.missing else [])
        if not fp:
            return missing + [words("no_fingerprint")]
        out = missing
        if fp["cpu"]["count"] <= 4:
            out.append(words("few_cpus", n_cpu=fp["cpu"]["count"]))
        shielded = shield.of(fp)
        if shielded:
            # Shields recorded before there were two methods carry none: cpusets.
            out.append(words("runtime_shield",
                             shield={**shielded, "method": shield.method_of(shielded)}))
        elif not fp["isolation"]["isolated"]:
            out.append(words("no_isolation"))
        runtime, period = fp["sched"]["rt_runtime_us"], fp["sched"]["rt_period_us"]
        if runtime != -1 and period > 0:
            out.append(words("rt_throttle", runtime=runtime, period=period,
                             share=runtime / period))
        pinned_dl = fp["realtime"].get("SCHED_DEADLINE pinned", "not probed")
        if pinned_dl != "ok":
            out.append(words("deadline_pinning", why=pinned_dl))
        if "RT" not in fp["kernel"]["preempt_model"].replace("PREEMPT_DYNAMIC", ""):
            out.append(words("not_rt", model=fp["kernel"]["preempt_model"]))
        return out + [item for s in self.sections.values() for item in s.limitations]

    def limitations_markdown(self) -> str:
        return words("limitations", items=self.limitations())

    def described(self) -> pd.DataFrame:
        """:func:`rtstudy.data.hosts` of the profile, indexed by host id (read once)."""
        if self._described is None:
            self._described = data.hosts(self.profile).set_index("host_id")
        return self._described

    def sections_by_host(self) -> dict[str, dict[str, Section]]:
        """Every host with data for the profile → its sections (this host's are the report's)."""
        if self._by_host is None:
            hosts = sorted({d.parent.name for name in registry.REGISTRY
                            for d in data.datasets(name, self.profile)})
            self._by_host = {}
            for host_id in hosts:
                if host_id == self.host_id:
                    self._by_host[host_id] = self.sections
                    continue
                folders = {name: data.dataset_dir(name, host_id, self.profile)
                           for name in registry.REGISTRY}
                self._by_host[host_id] = self._sections_from(
                    {name: f for name, f in folders.items() if f is not None})
        return self._by_host

    def cross_host(self) -> pd.DataFrame:
        """Each experiment's headline quantities per host that has data for the profile.

        A tidy frame, one row per host and quantity: ``host_id``, ``experiment``,
        ``quantity``, ``value``, ``low``, ``high`` (CI, NaN where there is none),
        ``unit`` and ``n``. Empty when only one host has data.
        """
        by_host = self.sections_by_host()
        if len(by_host) < 2:
            return pd.DataFrame()
        return pd.DataFrame([{"host_id": host_id, "experiment": s.label, **q.__dict__}
                             for host_id, sections in by_host.items()
                             for s in sections.values() for q in s.quantities])

    def host_states(self) -> list[dict]:
        """Per host with data: ``host_id``, ``fp`` (its fingerprint, None if not recorded),
        ``label`` and ``source`` (:func:`rtstudy.data.hosts`), ``shield`` (its runtime shield,
        None when untuned), ``verdicts`` (claim → verdict), ``sessions`` (how many it has) and
        ``over`` (claim → its verdict over them, where it has two or more:
        :meth:`verdicts_over_sessions`). The same machine untuned and shielded is two host ids."""
        states = []
        described = self.described()
        for host_id, sections in self.sections_by_host().items():
            fp = data_fingerprint(self.profile, host_id)
            states.append({"host_id": host_id, "fp": fp, "label": described.at[host_id, "label"],
                           "source": described.at[host_id, "source"],
                           "shield": shield.of(fp), "sdk": sdks.label(fp),
                           "verdicts": {v.claim: v.verdict for s in sections.values()
                                        for v in s.verdicts},
                           "sessions": max(len(self.sessions_of(host_id)), 1),
                           "over": {c: o["verdict"] for c, o in
                                    self.verdicts_over_sessions(host_id).items()}})
        return states

    def hosts_blocks(self) -> list:
        """The "Hosts compared" section: each host's state, its verdicts, the headline table and
        the figure."""
        xh = self.cross_host()
        states = self.host_states() if len(xh) else []
        hosts = sorted(xh["host_id"].unique()) if len(xh) else []

        def verdict(st: dict, claim: str) -> str:
            # A host with several sessions is judged over them (the summary's rule).
            if claim in st["over"]:
                return f"{st['over'][claim]} (over {st['sessions']} sessions)"
            return st["verdicts"].get(claim, "—")

        claims = list(dict.fromkeys(c for st in states for c in st["verdicts"]))
        # One row per host state, named by its label (CPU model, state, SDK): a reader's words.
        verdicts = pd.DataFrame([{"host state": st["label"] + (" (shown)" if st["host_id"] ==
                                                               self.host_id else ""),
                                  **{claim: verdict(st, claim) for claim in claims}}
                                 for st in states])
        blocks = [Markdown(words("hosts", hosts=hosts, profile=self.profile,
                                 shown_label=self.label()))]
        if hosts:
            blocks += [Table(lambda: verdicts, words("caption_host_verdicts")),
                       Details(words("hosts_in_full"), [
                           Markdown(words("host_states", states=states, shown=self.host_id)),
                           Table(lambda: cross_host_table(xh), words("caption_hosts")),
                           Figure(lambda: figures.cross_host(xh))])]
        return blocks

    def sdk_blocks(self) -> list:
        """The "SDK versions compared" section: the shown machine state's verdicts and
        headlines per Holoscan version (:mod:`rtstudy.report.sdks`)."""
        rows = sdks.groups(self.host_states(), self.host_id) if self.sections else []
        blocks = [Markdown(words("sdks", rows=rows, profile=self.profile))]
        if len(rows) > 1:
            xh = cross_host_table(self.cross_host())
            blocks += [Table(lambda: sdks.verdict_table(rows), words("caption_sdk_verdicts")),
                       Details(words("sdks_in_full"), [
                           Table(lambda: sdks.headline_table(xh, rows), words("caption_sdks"))])]
        # What a section shows per SDK version (E5's H5b table), each version's under its label.
        by_host = self.sections_by_host()
        for row in rows or ([{"host_id": self.host_id, "label": sdks.label(self.fingerprint)}]
                            if self.sections else []):
            for section in by_host.get(row["host_id"], {}).values():
                if section.sdk_blocks:
                    blocks += [Markdown(words("sdk_blocks", label=section.label,
                                              title=section.title, sdk=row["label"])),
                               *section.sdk_blocks]
        described = self.described()
        audits = [{"host_id": h, "label": described.at[h, "label"], "finding": records.finding(a)}
                  for h, a in self.placement_audits().items()]
        return blocks + [Markdown(words("placement_records", audits=audits,
                                        profile=self.profile))]

    def placement_audits(self) -> dict[str, dict]:
        """Per host with Holoscan 5.0 placement records: every record of every session's cells
        against its thread's read-back (:func:`rtstudy.inference.records.audit`), H5a's evidence."""
        if self._audits is None:
            self._audits = {}
            for host_id in self.sections_by_host():
                sidecars = [sc for name in registry.REGISTRY
                            for folder in sessions.folders(name, host_id, self.profile).values()
                            for sc in completed_cells(folder)[0]]
                result = records.audit(sidecars)
                if result["threads"]:
                    self._audits[host_id] = result
        return self._audits

    def metrics(self) -> dict:
        """Every section's verdicts and headline quantities, as ``report/metrics.json`` holds them.

        Per experiment label: ``verdicts`` (claim → verdict, runs, criterion), ``headline``
        (quantity → value, CI bounds, unit, N; a bound that does not exist is null) and,
        where a section has any, ``findings`` (name → conclusion in words); for a host with
        several sessions, ``sessions`` (each headline over them), ``verdicts_over_sessions`` and
        ``findings_over_sessions`` (name → each session's conclusion, oldest first). At the top level for the host the sections show (with the drift check of
        each sweep); under ``hosts``, the same for every host with data for the profile
        (each host state and SDK version is a host id), with its ``label``, ``state`` and
        ``sdk`` (:func:`rtstudy.data.hosts`), and for a host with Holoscan 5.0 placement
        records ``H5`` (H5a's verdict over every session, the threads compared and each
        mismatch: :meth:`placement_audits`). Read with ``dvc metrics show``;
        ``dvc metrics diff`` compares commits.
        """
        def number(x: float) -> float | None:
            return float(x) if np.isfinite(x) else None

        def verdicts_and_headlines(sections: dict[str, Section]) -> dict:
            return {s.label: {
                "verdicts": {v.claim: {"verdict": v.verdict, "runs": v.runs,
                                       "criterion": v.criterion} for v in s.verdicts},
                "headline": {q.quantity: {"value": number(q.value), "low": number(q.low),
                                          "high": number(q.high), "unit": q.unit, "n": int(q.n)}
                             for q in s.quantities},
                **({"findings": dict(s.findings)} if s.findings else {})}
                for s in sections.values()}

        def over_sessions(host_id: str) -> dict:
            """Per experiment label: quantity → its session-level estimate (hosts with two
            sessions or more)."""
            out: dict = {}
            for r in self.session_estimates(host_id).itertuples():
                out.setdefault(r.experiment, {})[r.quantity] = {
                    "value": number(r.value), "low": number(r.low), "high": number(r.high),
                    "next_low": number(r.next_low), "next_high": number(r.next_high),
                    "unit": r.unit, "sessions": int(r.sessions),
                    "between_sessions_var": number(r.between_sessions),
                    "between_runs_var": number(r.between_runs),
                    "within_run_var": number(r.within_run)}
            return out

        def with_sessions(block: dict, host_id: str) -> dict:
            for label, quantities in over_sessions(host_id).items():
                block.setdefault(label, {})["sessions"] = quantities
            for claim, over in self.verdicts_over_sessions(host_id).items():
                for part in block.values():
                    if isinstance(part, dict) and claim in part.get("verdicts", {}):
                        part.setdefault("verdicts_over_sessions", {})[claim] = over
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

        out: dict = {"profile": self.profile, "host_id": self.host_id,
                     "confidence": self.ci.confidence,
                     **with_sessions(verdicts_and_headlines(self.sections), self.host_id)}
        for row in stability.drift_rows(self.datasets):
            out[row["experiment"]]["drift"] = {
                "condition": row["label"], "quantity": row["quantity"], "unit": row["unit"],
                **{k: number(row[k]) for k in ("start", "end", "difference", "minutes")},
                "moved": row["moved"]}
        described = self.described()
        out["hosts"] = {host_id: {**{k: described.at[host_id, k] for k in ("label", "state", "sdk")},
                                  **with_sessions(verdicts_and_headlines(sections), host_id)}
                        for host_id, sections in self.sections_by_host().items()}
        # H5a over every session of each host with 5.0 placement records (a check, no CI).
        for host_id, result in self.placement_audits().items():
            out["hosts"][host_id]["H5"] = {
                "verdicts": {"H5a": {"verdict": records.verdict(result), "runs": result["cells"],
                                     "criterion": criteria.CRITERIA["h5a_record"].rule}},
                "threads": result["threads"], "mismatches": result["mismatches"]}
        return out

    def write_metrics(self) -> Path:
        """Write :meth:`metrics` to ``report/metrics.json`` (atomically)."""
        path = paths.metrics_file()
        atomic.write_text(path, json.dumps(self.metrics(), indent=2, allow_nan=False) + "\n")
        return path

    def write_plots(self) -> list[Path]:
        """Write each experiment's plot table (``analysis.plot_table``) to ``report/plots/``,
        the files ``dvc plots show`` draws (dvc.yaml ``plots:``); the paths written."""
        folder = paths.plots_dir()
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for name, ds in self.datasets.items():
            exp = registry.get(name)
            table = exp.analysis.plot_table(ds)
            if table is not None and len(table):
                path = folder / exp.analysis.PLOT_FILE
                table.to_csv(path, index=False, float_format="%.6g")
                written.append(path)
        return written

    def footer(self) -> str:
        host_ids = [self.host_id] if self.sections else []
        return words("footer", p=provenance(self.profile, host_ids))


def markdown_anchor(heading: str) -> str:
    """The id nbconvert gives a Markdown heading (spaces become hyphens)."""
    return heading.replace(" ", "-")


def first_look(name: str, profile: str) -> pd.DataFrame:
    """The verdicts and headline numbers of this host's data for ``name``: the lab book's look.

    The experiment's own data only (as every section is built), so a measuring
    stage never depends on another stage's data. A problem becomes the table's one row: the cells are measured and kept
    whatever the first look finds.
    """
    try:
        host_id = host.current()["host_id"]
        configs = params.configs(profile)
        ds = data.load_dataset(name, host_id, profile)
        section = build_sections({name: ds}, configs, CI.from_params(configs[params.REPORT]))[name]
    except Exception as exc:  # the lab book shows it; the report stage will fail on it too
        return pd.DataFrame([{"what": "first look failed", "this run": f"{type(exc).__name__}: {exc}",
                              "verdict": ""}])
    rows = [{"what": v.claim, "this run": v.ours, "verdict": v.verdict} for v in section.verdicts]
    rows += [{"what": q.quantity, "this run": f"{q.value:.3g} {q.unit} (n = {q.n})", "verdict": ""}
             for q in section.quantities]
    return pd.DataFrame(rows)


def data_fingerprint(profile: str, host_id: str) -> dict | None:
    """The fingerprint of the host whose data the report shows, or None if not recorded.

    Each dataset carries its measuring host's fingerprint (``host.json``); for
    data measured before that was recorded, this host's fingerprint is used only
    when it is the same host.
    """
    for name in registry.REGISTRY:
        directory = data.dataset_dir(name, host_id, profile)
        fp = read_host(directory) if directory else None
        if fp:
            return fp
    fp = _this_fingerprint()
    return fp if fp["host_id"] == host_id else None


def provenance(profile: str, data_host_ids: list[str]) -> dict:
    """Git commit, host id(s), versions, profile and the digest of dvc.lock, for the footer."""
    fp = _this_fingerprint()
    lock = paths.root() / "dvc.lock"
    return {
        "git": git_state(),
        "host_id": fp["host_id"],
        "data_host_ids": sorted(set(data_host_ids)),
        "profile": profile,
        "versions": fp["versions"],
        "dvc_lock_sha256": hashlib.sha256(lock.read_bytes()).hexdigest()[:12] if lock.exists() else "none yet",
        "kernel": fp["kernel"]["release"],
        "preempt": fp["kernel"]["preempt_model"],
        "cpu": f'{fp["cpu"]["count"]} × {fp["cpu"]["model"]}',
    }


def cross_host_table(xh: pd.DataFrame) -> pd.DataFrame:
    """``xh`` (:meth:`Study.cross_host`) as a wide table: one row per quantity, one column per host."""
    if xh.empty:
        return xh
    def cell(r) -> str:
        ci = f" [{r['low']:.3g}, {r['high']:.3g}]" if np.isfinite(r["low"]) else ""
        return f"{r['value']:.3g}{ci} {r['unit']} (n = {int(r['n']):,})"
    wide = xh.assign(text=xh.apply(cell, axis=1)).pivot_table(
        index=["experiment", "quantity"], columns="host_id", values="text", aggfunc="first")
    return wide.reset_index().fillna("—")
