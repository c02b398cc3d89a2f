"""The frozen protocol (rtstudy.protocol, rtstudy.report.preregistration): its text hashes to the
frozen value, every cell records the version it was measured under, and a verdict is
confirmatory only where every session it pools was measured under the version in force.
Synthetic data only: no test asserts a measured effect."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from helpers import BIN
from rtstudy import paths, protocol
from rtstudy.data import sessions
from rtstudy.report import preregistration
from rtstudy.report.study_sessions import EXPLORATORY, MAIN, StudySessions


def test_the_protocol_text_is_the_frozen_one():
    """A criterion, word or size changed after the freeze without a new version fails here."""
    assert preregistration.digest() == protocol.FROZEN[protocol.VERSION].sha256, (
        "the protocol's text changed after v{} was frozen: freeze a new version in "
        "rtstudy.protocol.FROZEN (never edit a frozen one)".format(protocol.VERSION))
    assert list(protocol.FROZEN) == sorted(protocol.FROZEN)


def test_docs_protocol_md_is_the_frozen_text():
    assert paths.protocol_file().read_text() == preregistration.document()


def test_rtstudy_protocol_prints_it_with_its_version_and_hash():
    out = subprocess.run([BIN / "rtstudy", "protocol"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"# rtstudy protocol v{protocol.VERSION}\n")
    assert protocol.FROZEN[protocol.VERSION].sha256 in out.stdout
    for needed in ("## Questions", "## Yardsticks", "## Criteria", "## Words", "## Sizes",
                   "e2_late_ratio_margin", "h4_min_tail_cut"):
        assert needed in out.stdout


def _dataset(folder: Path, host: str, versions: list, session: str) -> Path:
    """A dataset folder whose cells record the protocol ``versions`` (None: none recorded)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / paths.PLAN_FILE).write_text(json.dumps({"host_id": host, "cells": []}))
    for i, v in enumerate(versions):
        cell = folder / f"c-r{i}-abc"
        cell.mkdir()
        sidecar = {"cell_id": cell.name, "finished_utc": f"{session}T00:0{i}:00Z",
                   "session": {"id": session}}
        if v is not None:
            sidecar["protocol"] = {"version": v, "sha256": "x"}
        (cell / paths.SIDECAR_FILE).write_text(json.dumps(sidecar))
    return folder


def test_a_session_is_confirmatory_only_when_every_cell_was_measured_under_the_version(tmp_path):
    v = protocol.VERSION
    cases = {"all": ([v, v, v], v), "one before": ([v, None, v], None),
             "another version": ([v, v + 1], None), "none": ([None, None], None)}
    for name, (versions, expected) in cases.items():
        folder = _dataset(tmp_path / name, "h", versions, "2026-12-01")
        assert sessions.protocol_of(folder) == expected, name
    found = {name: tmp_path / name for name in cases}
    assert sessions.confirmatory(found) == {"all": tmp_path / "all"}


class _Sessions(StudySessions):
    """The sessions' part of a study, on the data folder of a test."""

    profile = "smoke"

    def __init__(self):
        self._sessions, self._found = {}, {}


def test_a_verdict_resting_on_any_session_measured_before_the_freeze_is_not_confirmatory(
        tmp_path, monkeypatch):
    monkeypatch.setenv("RTSTUDY_ROOT", str(tmp_path))
    (tmp_path / "params.yaml").write_text((paths.checkout() / "params.yaml").read_text())
    folder = tmp_path / "data" / "raw" / "e3_overhead" / "vm-1" / "smoke"
    v = protocol.VERSION
    # Two sessions measured before the freeze, closed; the current one mixed.
    _dataset(folder / "sessions" / "a", "vm-1", [None, None], "2026-11-01")
    _dataset(folder / "sessions" / "b", "vm-1", [None, None], "2026-11-02")
    current = _dataset(folder, "vm-1", [v, None], "2026-12-08")
    study = _Sessions()
    assert study.evidence("vm-1") == {
        "status": "exploratory", "protocol": v, "sessions": 3,
        "words": f"exploratory: measured before protocol v{v}'s freeze"}
    assert study._session_folders("vm-1", EXPLORATORY) == {}
    # The current session measured wholly after the freeze: it alone decides, confirmatory;
    # the two before it are exploratory beside it.
    sidecar = current / "c-r1-abc" / paths.SIDECAR_FILE
    sidecar.write_text(json.dumps({**json.loads(sidecar.read_text()),
                                   "protocol": {"version": v, "sha256": "x"}}))
    study = _Sessions()
    evidence = study.evidence("vm-1")
    assert (evidence["status"], evidence["sessions"]) == ("confirmatory", 1)
    assert evidence["words"] == f"confirmatory: protocol v{v}, 1 session measured after its freeze"
    assert list(study._session_folders("vm-1", MAIN)["e3_overhead"].values()) == [folder]
    assert len(study._session_folders("vm-1", EXPLORATORY)["e3_overhead"]) == 2


@pytest.mark.parametrize("version", [None, 0])
def test_a_sidecar_without_this_version_is_never_counted_as_measured_under_it(version):
    sidecar = {} if version is None else {"protocol": {"version": version}}
    assert protocol.version_of(sidecar) == version
    assert protocol.version_of(sidecar) != protocol.VERSION
