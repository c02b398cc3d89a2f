"""The schema of the tables ``rtstudy.data.load`` returns: declared in the code, shown in
data/README.md, and named where a table differs from it.

That it is true of the reference dataset is checked where the reference's tables are loaded
anyway (tests/test_explore.py: E2's take some 20 s to load; loaded twice, they were most of this
module's time). The reference is pulled into a copy of the checkout (``dvc pull -r reference``:
offline, measuring nothing), so no check needs data in this checkout or changes any.
"""
from __future__ import annotations

import difflib
import shutil

import pytest

from rtstudy import cli, data, params, paths

pytestmark = pytest.mark.pipeline

README = "data/README.md"
REGENERATE = "rtstudy data schema --update-readme"


def test_every_column_has_a_known_kind_and_a_meaning():
    for experiment in data.EXPERIMENTS:
        schema = data.schema(experiment)
        assert tuple(schema) == data.tables(experiment)
        for table, spec in schema.items():
            assert spec.rows, (experiment, table)
            for column, c in spec.columns.items():
                assert c.kind in data.KINDS and c.meaning, (experiment, table, column, c)


def test_the_readme_shows_the_schema_the_code_declares():
    text = (paths.root() / README).read_text()
    expected = data.with_schema_docs(text)
    diff = "".join(difflib.unified_diff(text.splitlines(True), expected.splitlines(True),
                                        README, "what the code declares"))
    assert text == expected, f"{README}'s schema differs from the code's; regenerate it with " \
                             f"`{REGENERATE}`:\n{diff}"


def test_the_command_regenerates_the_readme(tmp_path, monkeypatch, capsys):
    (tmp_path / "data").mkdir()
    stale = (paths.root() / README).read_text().replace("| `cell_id` | str |", "| `cell_id` | int |")
    (tmp_path / README).write_text(stale)
    monkeypatch.setenv("RTSTUDY_ROOT", str(tmp_path))
    assert cli.main(REGENERATE.split()[1:]) == 0
    assert (tmp_path / README).read_text() == data.with_schema_docs(stale) != stale
    assert "regenerated" in capsys.readouterr().out
    (tmp_path / README).write_text("no markers here\n")
    assert cli.main(REGENERATE.split()[1:]) == 2
    assert "<!-- schema:common:begin -->" in capsys.readouterr().err


def test_the_command_prints_every_column(capsys):
    for experiment in data.EXPERIMENTS:
        for flags in ([], ["--markdown"]):
            assert cli.main(["data", "schema", experiment, *flags]) == 0
            out = capsys.readouterr().out
            for spec in data.schema(experiment).values():
                assert all(column in out for column in spec.columns), (experiment, flags)


@pytest.fixture(scope="module")
def reference(reference_project):
    """The reference dataset's data folder (conftest.py's copy of the checkout holding it)."""
    return reference_project[0] / "data"


def test_a_table_unlike_its_schema_is_named(reference):
    """The check itself: a missing, an undeclared and a mistyped column, a missing table."""
    profile = next(p for p in params.PROFILES if data.datasets("e3_overhead", p, reference))
    runs = data.load("e3_overhead", profile, root=reference)["runs"]
    damaged = runs.drop(columns="tick_n").assign(extra=1, iterations=runs["iterations"] * 0.5)
    problems = data.schema_problems("e3_overhead", {"runs": damaged})
    assert problems == ["e3_overhead.runs: column 'tick_n' missing",
                        "e3_overhead.runs: column 'extra' (int64) not declared",
                        "e3_overhead.runs: column 'iterations' is float64, declared int"]
    assert data.schema_problems("e3_overhead", {}) == ["e3_overhead: table 'runs' missing"]


def test_a_table_without_rows_has_the_declared_columns(reference, tmp_path):
    """A dataset whose cells are not measured yet: its plan only."""
    profile = next(p for p in params.PROFILES if data.datasets("e3_overhead", p, reference))
    # The folder of a host's current session (or, closed since, its latest one).
    host_id = data.datasets("e3_overhead", profile, reference)[0].parent.name
    measured = data.dataset_dir("e3_overhead", host_id, profile, reference)
    planned = tmp_path / "raw" / "e3_overhead" / host_id / profile
    planned.mkdir(parents=True)
    shutil.copy2(measured / paths.PLAN_FILE, planned)
    with pytest.warns(UserWarning, match="not measured yet"):
        runs = data.load("e3_overhead", profile, root=tmp_path)["runs"]
    assert runs.empty and list(runs.columns) == list(data.schema("e3_overhead")["runs"].columns)
