"""The report, put together: every registered experiment's section over one host's data.

The report notebook (``notebooks/report.ipynb``) makes one :class:`Study` and
shows it piece by piece. :meth:`Study.load` loads each experiment's dataset
the one way (:func:`rtstudy.data.load_dataset`) and builds its section
(``section.build`` in its folder) from that dataset alone, in registry order; the
report's own words are in ``templates/report.md.j2``. What it says over a host's sessions,
over every host and in ``report/metrics.json`` are its parts in ``study_sessions.py``,
``study_hosts.py`` and ``study_metrics.py``; the words and HTML of its blocks are in
``blocks.py``.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

import pandas as pd

from rtstudy import data, params, paths, registry
from rtstudy.data.io import DataError
from rtstudy.inference import criteria
from rtstudy.inference.stats import CI, MIN_RUNS
from rtstudy.machine import host, placement, shield
from rtstudy.report import stability
from rtstudy.report.blocks import show, table_html, words
from rtstudy.report.section import Advice, Details, Markdown, Section, Table
from rtstudy.report.study_hosts import StudyHosts, data_fingerprint, provenance, report_host
from rtstudy.report.study_metrics import StudyMetrics
from rtstudy.report.study_sessions import EXPLORATORY, StudySessions

# Imported from here by the notebooks (report.ipynb, experiment.ipynb), the CLI, benchmarks/
# and tests, though they live beside this module.
__all__ = ["Study", "advice_table", "build_sections", "data_fingerprint", "first_look",
           "markdown_anchor", "report_host", "show", "table_html", "words"]


def advice_table(advice: list[Advice]) -> pd.DataFrame:
    """The report's "What to do" as a table, one row per change, with its lateness in µs
    (a table cell shows its words as they are, so without the list's bold). Where a change's
    verdict differs on other host states, the list says so on a line of its own."""
    return pd.DataFrame([{"change": a.change, "against": a.against,
                          "late frames: before → after": a.late, "late-frame ratio": a.ratio,
                          "decided": f"{a.word} ({a.why})" if a.why else a.word,
                          "lateness (µs)": a.lateness.removeprefix("lateness ") or "—",
                          "typical jitter": a.typical,
                          "costs": a.cost}
                         for a in advice])


def build_sections(datasets: dict, configs: dict, ci: CI) -> dict[str, Section]:
    """Every experiment's section from its dataset, in registry order (each from its own data)."""
    return {name: registry.get(name).section.build(datasets[name], configs[name], ci)
            for name in registry.REGISTRY if name in datasets}


@dataclass
class Study(StudySessions, StudyHosts, StudyMetrics):
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
    _found: dict = field(default_factory=dict, repr=False)  # _session_folders(), per host, kind
    # A host's current session is also one of its sessions: each dataset folder is loaded,
    # and each set of them built into sections, once (_dataset(), _sections_from()).
    _loaded: dict = field(default_factory=dict, repr=False)
    _built: dict = field(default_factory=dict, repr=False)
    _audits: dict | None = field(default=None, repr=False)  # placement_audits(), once

    @classmethod
    def load(cls, profile: str | None = None, configs: Mapping[str, dict] | None = None
             ) -> "Study":
        """Load every experiment's data for ``profile`` from one host and build its section.

        ``configs`` are every parameter group as ``rtstudy report`` read them
        (:func:`rtstudy.params.read`); None reads ``params.yaml`` (the notebook opened by hand).

        Raises
        ------
        DataError
            Naming every dataset that is missing or damaged (not just the first).
        """
        configs = dict(params.read(profile) if configs is None else configs)
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
                loaded[name] = data.load_dataset(name, host_id, profile, cfg=configs[name])
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

    def title(self) -> str:
        return words("title", sections=list(self.sections.values()), profile=self.profile,
                     label=self.label(), k=max(len(self.sessions_of()), 1), ci=self.ci)

    def front(self) -> list:
        """The first screen: what to do on the shown host, each change with its effect on late
        frames, its CI and what that decided; then each experiment's notes and the glossary."""
        advice = [a for s in self.sections.values() for a in s.advice()]
        advice += self.sdk_advice({a.change for a in advice})
        advice = [replace(a, when=self.when(a.claim)) if a.claim else a for a in advice]
        notes = [n for n in (s.notes() for s in self.sections.values()) if n]
        scope = "; ".join(s.scope for s in self.sections.values() if s.scope)
        # The table repeats the list with every column: folded, so the main page stays short.
        return [Markdown(words("what_to_do", advice=advice, ci=self.ci, scope=scope)),
                Details(words("advice_in_full"), [Table(lambda: advice_table(advice),
                                                        words("caption_advice", ci=self.ci))]),
                *[Markdown(n) for n in notes],
                Details(words("glossary_in_full"), [Markdown(words("glossary"))])]

    def verdict_blocks(self) -> list:
        """One line per published claim: its verdicts (over the sessions where there are
        several), linked to its section."""
        over, k = self.verdicts_over_sessions(), len(self.sessions_of())
        rows = [{"hypothesis": s.hypothesis, "label": s.label, "claim": s.claim,
                 "anchor": markdown_anchor(self.section_heading(s)),
                 "verdicts": [{"claim": v.claim, "verdict": over.get(v.claim, {}).get(
                     "verdict", v.verdict)} for v in s.verdicts]}
                for s in self.sections.values()]
        blocks = [Markdown(words("verdicts", rows=rows, k=k, evidence=self.evidence())),
                  Table(self.claims_table, words("caption_claims"))]
        before = self.sessions_of(kind=EXPLORATORY)
        if before:
            # The sessions measured before the protocol's freeze: exploratory, folded.
            blocks.append(Details(words("exploratory_in_full", k=len(before),
                                        evidence=self.evidence()),
                                  [Table(lambda: self.session_verdicts(kind=EXPLORATORY),
                                         words("caption_exploratory", k=len(before)))]))
        return blocks

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
                               verdicts=verdicts, k=k, evidence=self.evidence())),
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


def first_look(name: str, configs: Mapping[str, dict], here: dict | None = None
               ) -> pd.DataFrame:
    """The verdicts and headline numbers of this host's data for ``name``: the lab book's look.

    The experiment's own data only (as every section is built), so a measuring stage never
    depends on another stage's data. A problem becomes the table's one row: the cells are
    measured and kept whatever the first look finds. ``configs`` are every parameter group as
    the stage read them (:func:`rtstudy.params.read`); ``here`` its host fingerprint (None:
    take it).
    """
    try:
        host_id = (here or host.current())["host_id"]
        ds = data.load_dataset(name, host_id, configs[name]["profile"], cfg=configs[name])
        section = build_sections({name: ds}, configs, CI.from_params(configs[params.REPORT]))[name]
    except Exception as exc:  # the lab book shows it; the report stage will fail on it too
        return pd.DataFrame([{"what": "first look failed",
                              "this run": f"{type(exc).__name__}: {exc}", "verdict": ""}])
    rows = [{"what": v.claim, "this run": v.ours, "verdict": v.verdict} for v in section.verdicts]
    rows += [{"what": q.quantity, "this run": f"{q.value:.3g} {q.unit} (n = {q.n})", "verdict": ""}
             for q in section.quantities]
    return pd.DataFrame(rows)
