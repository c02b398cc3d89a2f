"""The study over every host with data for the profile: which host the report shows, each
host's fingerprint and sections, and the "Hosts compared" and "SDK versions compared" sections.

Each host state and SDK version is a host id (:func:`rtstudy.data.hosts`);
:class:`StudyHosts` is the part of :class:`rtstudy.report.study.Study` that compares them.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import TypedDict

import numpy as np
import pandas as pd

from rtstudy import data, paths, protocol, registry
from rtstudy.data import sessions
from rtstudy.data.io import DataError, completed_cells, read_host, session_folders
from rtstudy.inference import judge, records
from rtstudy.machine import host, shield
from rtstudy.measure.harness import git_state
from rtstudy.measure.session import GitState
from rtstudy.report import figures, sdks
from rtstudy.report.blocks import words
from rtstudy.report.section import Advice, Details, Figure, Markdown, Section, Table


class Provenance(TypedDict):
    """The report's footer: what rendered it, from which data (:func:`provenance`)."""

    git: GitState
    host_id: str  # the host that rendered
    data_host_ids: list[str]  # the hosts whose data it shows
    profile: str
    versions: dict[str, str]
    dvc_lock_sha256: str  # 12 hex, or "none yet"
    kernel: str
    preempt: str
    cpu: str  # "<count> × <model>"


def _this_fingerprint() -> host.HostRecord:
    """This host's fingerprint: as recorded (``data/host/fingerprint.json``), else read now."""
    fp_file = paths.fingerprint_file()
    return json.loads(fp_file.read_text()) if fp_file.exists() else host.current()


def report_host(profile: str) -> str:
    """The host whose data every section shows: this host if it measured ``profile`` (as many
    experiments as any other host).

    Otherwise the host with data for the most experiments; ties go to a host state with
    confirmatory data (a session measured under the protocol in force, :mod:`rtstudy.protocol`),
    then to a host as it is before a shielded one (the reference data holds both states of each machine), then to the host whose
    current session is the newest (the reference data's latest measurement: the docs and
    ``report/metrics.json`` describe it), then to the host with the most sessions, then to the
    first id. Nothing in that order depends on the machine that renders, so a fresh clone's
    ``make pull && make report`` shows the same host on every machine. "Hosts compared" shows
    every host.
    """
    counts: dict[str, int] = {}
    session_counts: dict[str, int] = {}
    confirmed: dict[str, int] = {}  # host → its sessions measured under the protocol in force
    newest: dict[str, str] = {}  # host → its newest current session's start (ISO UTC)
    for name in registry.REGISTRY:
        for d in data.datasets(name, profile):
            counts[d.parent.name] = counts.get(d.parent.name, 0) + 1
            found = session_folders(d)
            newest[d.parent.name] = max(newest.get(d.parent.name, ""), sessions.started(found[-1]))
            session_counts[d.parent.name] = session_counts.get(d.parent.name, 0) + len(found)
            confirmed[d.parent.name] = max(confirmed.get(d.parent.name, 0), len(
                sessions.confirmatory(sessions.folders(name, d.parent.name, profile))))
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
    return max(sorted(counts), key=lambda h: (counts[h], confirmed[h] > 0, not shielded(h),
                                              newest[h], session_counts[h]))


def data_fingerprint(profile: str, host_id: str) -> host.HostRecord | None:
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


def provenance(profile: str, data_host_ids: list[str]) -> Provenance:
    """Git commit, host id(s), versions, profile and the digest of dvc.lock, for the footer."""
    fp = _this_fingerprint()
    lock = paths.root() / "dvc.lock"
    return {
        "git": git_state(),
        "host_id": fp["host_id"],
        "data_host_ids": sorted(set(data_host_ids)),
        "profile": profile,
        "versions": fp["versions"],
        "dvc_lock_sha256": (hashlib.sha256(lock.read_bytes()).hexdigest()[:12] if lock.exists()
                            else "none yet"),
        "kernel": fp["kernel"]["release"],
        "preempt": fp["kernel"]["preempt_model"],
        "cpu": f'{fp["cpu"]["count"]} × {fp["cpu"]["model"]}',
    }


def cross_host_table(xh: pd.DataFrame) -> pd.DataFrame:
    """``xh`` (:meth:`StudyHosts.cross_host`) as a wide table: one row per quantity, one column
    per host."""
    if xh.empty:
        return xh

    def cell(r) -> str:
        ci = f" [{r['low']:.3g}, {r['high']:.3g}]" if np.isfinite(r["low"]) else ""
        return f"{r['value']:.3g}{ci} {r['unit']} (n = {int(r['n']):,})"
    wide = xh.assign(text=xh.apply(cell, axis=1)).pivot_table(
        index=["experiment", "quantity"], columns="host_id", values="text", aggfunc="first")
    return wide.reset_index().fillna("—")


class StudyHosts:
    """The hosts' part of :class:`rtstudy.report.study.Study` (a mixin: it reads the study's
    ``profile``, ``host_id``, ``fingerprint`` and ``sections``, caches in its ``_described``,
    ``_by_host`` and ``_audits``, and builds another host's sections with its
    ``_sections_from``)."""

    def label(self, host_id: str | None = None) -> str:
        """A host's readable label (:func:`rtstudy.data.hosts`); default the shown host."""
        host_id = host_id or self.host_id
        described = self.described()
        return str(described.at[host_id, "label"]) if host_id in described.index else host_id

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

    def when(self, claim: str) -> str:
        """``claim``'s verdicts over every host state with data (over its sessions where it has
        several), grouped by verdict, each with how many states and their tuning (untuned,
        shielded, isolated at boot; RT throttling on or lifted): where a change helps and
        where it hurts. Empty where no state could test it."""
        groups: dict[str, dict[str, int]] = {}
        for st in self.host_states():
            verdict = st["over"].get(claim, st["verdicts"].get(claim))
            if verdict in (None, judge.NOT_TESTABLE) or not st["fp"]:
                continue
            fp = st["fp"]
            key = words("when_state", shielded=bool(st["shield"]),
                        isolated=bool((fp.get("isolation") or {}).get("isolated")),
                        lifted=(fp.get("sched") or {}).get("rt_runtime_us") == -1)
            groups.setdefault(verdict, {}).setdefault(key, 0)
            groups[verdict][key] += 1
        return words("when", claim=claim, groups=groups) if groups else ""

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

    def claims_table(self) -> pd.DataFrame:
        """Every claim's verdict on every host state that tested it, in one short table: a
        row per claim, a column per SDK and tuning (untuned, shielded, isolated at boot), each
        cell the verdicts of the host states there (over their sessions where they have
        several) with how many states gave each; empty where none tested it."""
        cells: dict[str, dict[str, dict[str, int]]] = {}
        for st in self.host_states():
            fp = st["fp"] or {}
            tuning = ("shielded" if st["shield"] else "isolated at boot"
                      if (fp.get("isolation") or {}).get("isolated") else "untuned")
            column = f"{st['sdk']}, {tuning}"
            for claim in dict.fromkeys([*st["verdicts"], *st["over"]]):
                verdict = st["over"].get(claim, st["verdicts"].get(claim))
                if verdict in (None, judge.NOT_TESTABLE):
                    continue
                counts = cells.setdefault(claim, {}).setdefault(column, {})
                counts[verdict] = counts.get(verdict, 0) + 1
        columns = sorted({c for by in cells.values() for c in by})
        return pd.DataFrame([{"claim": claim, **{c: "; ".join(
            f"{v} ({n})" if n > 1 else str(v) for v, n in sorted(
                by.get(c, {}).items(), key=lambda kv: -kv[1])) or "—" for c in columns}}
            for claim, by in cells.items()])

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

        def verdicts(subset: list[dict]) -> pd.DataFrame:
            # One row per host state, named by its label (CPU model, state, SDK): a reader's
            # words; the shown one first, then by label, so one machine's states sit together.
            return pd.DataFrame([{"host state": st["label"] + (
                                      " (shown)" if st["host_id"] == self.host_id else ""),
                                  **{claim: verdict(st, claim) for claim in claims}}
                                 for st in sorted(subset, key=lambda st: (
                                     st["host_id"] != self.host_id, st["label"]))])

        # Host states with data measured under the protocol in force lead; those measured
        # before its freeze are exploratory, folded (docs/protocol.md).
        confirmed = [st for st in states if st["host_id"] == self.host_id
                     or self.evidence(st["host_id"])["status"] == protocol.Status.CONFIRMATORY]
        earlier = [st for st in states if st not in confirmed]
        blocks = [Markdown(words("hosts", hosts=hosts, profile=self.profile,
                                 shown_label=self.label()))]
        if hosts:
            blocks += [Table(lambda: verdicts(confirmed), words("caption_host_verdicts"))]
            if earlier:
                blocks += [Details(words("hosts_exploratory", n=len(earlier),
                                         version=protocol.VERSION),
                                   [Table(lambda: verdicts(earlier),
                                          words("caption_host_verdicts"))])]
            blocks += [Details(words("hosts_in_full"), [
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
                if section.sdk_blocks:  # folded: the main page stays within 12 screens
                    blocks += [Details(words("sdk_blocks", label=section.label,
                                             title=section.title, sdk=row["label"]),
                                       section.sdk_blocks)]
        described = self.described()
        audits = [{"host_id": h, "label": described.at[h, "label"], "finding": records.finding(a)}
                  for h, a in self.placement_audits().items()]
        return blocks + [Markdown(words("placement_records", audits=audits,
                                        profile=self.profile))]

    def placement_audits(self) -> dict[str, records.Audit]:
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
