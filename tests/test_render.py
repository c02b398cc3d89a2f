"""The report is published whole: rendered into a staging folder, swapped in only on success;
its figures are images with their words."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from rtstudy.report import figstyle  # noqa: E402
from rtstudy import paths
from rtstudy.report.render import STAGING, ReportError, staged  # noqa: E402


def _tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture()
def project(tmp_path, monkeypatch) -> Path:
    """A project root whose report/ holds a previous report."""
    monkeypatch.setenv("RTSTUDY_ROOT", str(tmp_path))
    monkeypatch.delenv(paths.REPORT_DIR_ENV, raising=False)
    monkeypatch.delenv(figstyle.FORMATS_ENV, raising=False)  # conftest's png-only, for renders
    report = tmp_path / "report"
    (report / "figures").mkdir(parents=True)
    (report / "figures" / "old.png").write_bytes(b"old figure")
    (report / "metrics.json").write_text('{"old": 1}')
    (report / "report.html").write_text("<html>old</html>")
    (report / "README.md").write_text("what report/ holds")
    return tmp_path


def _write_new_report() -> None:
    figstyle.save(plt.figure(), "new")
    plt.close("all")
    (paths.report_dir() / "metrics.json").write_text('{"new": 1}')
    paths.report_html().write_text("<html>new</html>")


def test_a_successful_render_replaces_the_report_and_leaves_nothing_behind(project):
    with staged() as staging:
        assert paths.report_dir() == staging and os.environ[paths.REPORT_DIR_ENV] == str(staging)
        _write_new_report()
    report = project / "report"
    assert sorted(p.name for p in (report / "figures").iterdir()) == ["new.pdf", "new.png",
                                                                      "new.svg"]
    assert (report / "metrics.json").read_text() == '{"new": 1}'
    assert (report / "report.html").read_text() == "<html>new</html>"
    assert (report / "README.md").read_text() == "what report/ holds"
    assert sorted(p.name for p in report.iterdir()) == ["README.md", "figures", "metrics.json",
                                                        "report.html"]
    assert paths.report_dir() == report and paths.REPORT_DIR_ENV not in os.environ


def test_a_failed_render_leaves_the_last_report_whole(project):
    report = project / "report"
    before = _tree(report)
    with pytest.raises(RuntimeError, match="the notebook broke"), staged():
        _write_new_report()
        raise RuntimeError("the notebook broke")
    assert _tree(report) == before
    assert not (report / STAGING).exists()
    assert paths.REPORT_DIR_ENV not in os.environ


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("chattr") is None,
                    reason="an immutable file needs root and chattr")
def test_a_swap_that_fails_at_its_last_rename_puts_the_last_report_back_whole(project, capsys):
    """The HTML goes in last, after the figures and metrics: when it cannot be replaced (an
    immutable report.html), everything already swapped goes back, nothing is left staged, and
    the command says so in one line."""
    report = project / "report"
    before = _tree(report)
    subprocess.run(["chattr", "+i", str(report / "report.html")], check=True)
    try:
        with pytest.raises(ReportError) as info, staged():
            _write_new_report()
        assert _tree(report) == before
        assert not (report / STAGING).exists() and not list(report.glob(".old-*"))
        assert "still holds the last report, whole" in str(info.value)
        assert "Operation not permitted" in str(info.value)
        assert "\n" not in str(info.value)  # `rtstudy report` prints it as one line
    finally:
        subprocess.run(["chattr", "-i", str(report / "report.html")], check=True)


def test_a_killed_render_s_staging_folder_is_cleared_by_the_next(project):
    leftover = project / "report" / STAGING / "figures"
    leftover.mkdir(parents=True)
    (leftover / "half.pdf").write_bytes(b"%PDF-")
    with staged():
        _write_new_report()
    assert not (project / "report" / "figures" / "half.pdf").exists()


@pytest.fixture()
def small_disk(project):
    """``report/`` on a tmpfs of its own (root only): a disk that can be filled."""
    report = project / "report"
    before = {p.name: p.read_bytes() for p in report.iterdir() if p.is_file()}
    for p in report.iterdir():
        if p.is_file():
            p.unlink()
        else:
            for f in p.iterdir():
                f.unlink()
            p.rmdir()

    def mount(mib: int) -> Path:
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={mib}m", "tmpfs",
                               str(report)], capture_output=True, text=True)
        if proc.returncode:
            pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
        for name, data in before.items():
            (report / name).write_bytes(data)
        return report

    yield mount
    subprocess.run(["umount", str(report)], capture_output=True)


def _fill(folder: Path) -> None:
    with open(folder / "filler", "wb") as f:
        try:
            while True:
                f.write(b"\0" * 2**20)
                f.flush()
        except OSError:
            pass


def test_a_full_disk_is_named_and_the_last_report_kept(small_disk):
    report = small_disk(80)
    before = _tree(report)
    with pytest.raises(ReportError, match=r"is full .*free space there.*still holds the last"), \
            staged() as staging:
        _fill(staging)
        # What the report notebook does first: a figure, whose writer meets the full disk.
        figstyle.save(plt.figure(), "e1_emit_period")
    plt.close("all")
    assert _tree(report) == before
    assert not (report / STAGING).exists()


def test_a_disk_too_full_to_start_is_refused_before_rendering(small_disk):
    report = small_disk(16)
    with pytest.raises(ReportError, match="nothing was rendered"), staged():
        raise AssertionError("the render must not start")
    assert not (report / STAGING).exists()


def test_a_figure_is_shown_as_an_image_with_its_titles_and_axes_in_words():
    import base64
    import re

    fig, (left, right) = plt.subplots(1, 2)
    fig.suptitle("E3 — whole-app time\nagainst N")
    left.set(title="ops <two operators>", xlabel="iterations N", ylabel="time (ms)")
    right.set(xlabel="iterations N", ylabel="time (ms)")
    text = figstyle.alt_text(fig)
    assert text == ("E3 — whole-app time against N. ops <two operators>: time (ms) against "
                    "iterations N. time (ms) against iterations N")
    (src, alt), = re.findall(r'<img src="data:image/png;base64,([^"]+)" alt="([^"]*)">',
                             figstyle.to_html(fig))
    assert alt == text.replace("<", "&lt;").replace(">", "&gt;")
    assert base64.b64decode(src)[:8] == b"\x89PNG\r\n\x1a\n"
    plt.close(fig)
    blank = plt.figure()
    blank.add_subplot()
    assert figstyle.alt_text(blank) == "A figure without a title"
    plt.close(blank)


def test_notebooks_are_read_and_validated_without_the_slow_iri_checker():
    """nbformat (papermill, nbconvert) still validates the study's notebooks, and rfc3987-syntax,
    which costs seconds to import, is not imported (sdks.kernelspec.without_iri_checker)."""
    probe = ("import sys; from rtstudy.sdks.kernelspec import without_iri_checker; "
             "without_iri_checker(); import papermill, nbformat; from rtstudy import paths; "
             "[nbformat.validate(nbformat.read(str(p), as_version=4)) "
             " for p in sorted(paths.notebooks_dir().glob('*.ipynb'))]; "
             "print(sys.modules['rfc3987_syntax'])")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "None"


def test_figures_are_written_in_the_formats_named_and_a_wrong_name_stops_the_report(
        project, monkeypatch, capsys):
    from rtstudy.cli import main

    assert figstyle.formats() == ("pdf", "png", "svg")
    monkeypatch.setenv(figstyle.FORMATS_ENV, " PNG, svg,png ")
    assert figstyle.formats() == ("png", "svg")
    figstyle.save(plt.figure(), "chosen", project / "figures-chosen")
    plt.close("all")
    assert sorted(p.name for p in (project / "figures-chosen").iterdir()) == ["chosen.png",
                                                                               "chosen.svg"]
    shutil.copy(paths.checkout() / "params.yaml", project / "params.yaml")
    before = _tree(project / "report")
    for wrong, named in (("png,jpeg", "are pdf, png, svg and jpeg is not one of them"),
                         (",", "it names no format")):
        monkeypatch.setenv(figstyle.FORMATS_ENV, wrong)
        with pytest.raises(ValueError, match=named):
            figstyle.formats()
        # `rtstudy report` names it before the minutes of loading and drawing, report/ untouched.
        assert main(["report"]) == 2
        err = capsys.readouterr().err
        assert named in err and "RTSTUDY_FIGURE_FORMATS" in err and "nothing was rendered" in err
        assert _tree(project / "report") == before


@pytest.mark.parametrize("limits, labels", [
    ((3, 80), ["5", "10", "20", "50"]),
    ((1, 1e4), ["1", "10", "100", "1000", "10000"]),
])
def test_a_log_axis_is_labelled_in_plain_numbers_without_its_minor_ticks(limits, labels):
    fig, ax = plt.subplots()
    ax.set_xscale("log")
    ax.set_xlim(*limits)
    figstyle.log_axis(ax)
    fig.canvas.draw()
    shown = [t.get_text() for t in ax.get_xticklabels() if limits[0] <= t.get_position()[0]
             <= limits[1]]
    assert shown == labels
    assert not any(t.get_text() for t in ax.get_xticklabels(minor=True))
    plt.close(fig)
