"""The report: its statistics, what it derives from data, and what a reader's browser sees."""
from __future__ import annotations

import copy
import html as html_module
import re

import pytest
from helpers import copy_project, screenshot_path, venv_datasets

from rtstudy.inference.stats import CI
from rtstudy.report import browser
from rtstudy.report.render import add_toc
from rtstudy.report.section import Advice, Section
from rtstudy.report.study import Study

pytestmark = pytest.mark.pipeline

# ---------------------------------------------------------------------------
# What the report derives

FP = {"host_id": "vm-test", "cpu": {"count": 2, "model": "x", "online": [0, 1]},
      "isolation": {"isolated": [], "nohz_full": [], "rcu_nocbs": []},
      "kernel": {"preempt_model": "PREEMPT_DYNAMIC", "release": "6.1"},
      "sched": {"rt_runtime_us": 950000, "rt_period_us": 1000000},
      "realtime": {"SCHED_FIFO": "ok", "SCHED_DEADLINE pinned": "refused: Operation not permitted"}}


def html_text(fragment: str) -> str:
    """What a browser shows of an HTML fragment without tags: its text, entities decoded."""
    return html_module.unescape(re.sub(r"<[^>]+>", "", fragment))


def study(fp: dict | None, *limitations: str) -> Study:
    """A study of ``fp``'s host whose one section reports ``limitations``."""
    section = Section("x", "EX", "HX", "a claim", limitations=list(limitations))
    return Study("smoke", CI(0.95), {}, "vm-test", fp, {"x": section})


def test_limitations_follow_the_host_and_then_each_section():
    text = " ".join(study(FP, "E1's own limitation.").limitations())
    for words in ("2 CPUs", "No CPU is isolated", "950000", "0.95 × CPUs", "not PREEMPT_RT",
                  "pinned to one CPU was refused here (refused: Operation not permitted)"):
        assert words in text
    assert text.endswith("E1's own limitation.")
    # A dataset without its host's fingerprint says so instead of describing another host.
    unknown = study(None, "E1's own limitation.").limitations()
    assert len(unknown) == 1 and "not recorded" in unknown[0]

    tuned = copy.deepcopy(FP)
    tuned.update(cpu={"count": 16, "model": "x", "online": list(range(16))},
                 isolation={"isolated": [2, 3], "nohz_full": [2, 3], "rcu_nocbs": [2, 3]},
                 kernel={"preempt_model": "PREEMPT_RT", "release": "6.1-rt"},
                 sched={"rt_runtime_us": -1, "rt_period_us": 1000000},
                 realtime={"SCHED_FIFO": "ok", "SCHED_DEADLINE pinned": "ok"})
    assert study(tuned).limitations() == []
    assert "- none found" in study(tuned).limitations_markdown()


def test_a_shielded_hosts_limitations_name_its_shield_recorded_with_or_without_a_method():
    # A cpuset shield's record carries no method (as before there were two), an affinity one
    # does: the report of a shielded host alone said neither before (a template error).
    shielded = copy.deepcopy(FP)
    shielded["isolation"]["shield"] = {"cpus": [1], "housekeeping": [0], "irq_default": [0],
                                       "irqs_on_shield": [36]}
    text = " ".join(study(shielded).limitations())
    assert "CPU 1 was shielded at run time" in text and "exclusive cpuset" in text
    shielded["isolation"]["shield"]["method"] = "affinity"
    assert "every movable thread's CPU affinity" in " ".join(study(shielded).limitations())


def test_the_summary_states_the_report_confidence_level():
    s = study(FP)
    s.ci = CI(0.9)
    assert "this study (90 % CI)" in s.summary() and "95" not in s.summary()


def test_a_change_a_claim_judges_says_where_it_helped_by_the_host_states_tuning():
    s = study(FP)
    lifted = copy.deepcopy(FP)
    lifted["sched"]["rt_runtime_us"] = -1
    shield = {"cpus": [1], "housekeeping": [0], "irq_default": [0]}

    def state(fp, verdict, over=None, shielded=None):
        return {"host_id": f"vm-{verdict}", "fp": fp, "shield": shielded,
                "verdicts": {"H5c": verdict, "H2": "reproduced"}, "over": over or {}}
    s.host_states = lambda: [state(FP, "hurts"), state(FP, "not settled", {"H5c": "hurts"}),
                             state(lifted, "helps", shielded=shield),
                             state(FP, "not testable here"), state(None, "helps")]
    when = s.when("H5c")
    # Over its sessions where it has them; the untestable and the unrecorded states left out.
    assert when.startswith("H5c's verdict over the host states with data: **hurts** on 2 "
                           "untuned with RT throttling on; **helps** on 1 shielded with RT "
                           "throttling lifted")
    assert s.when("H9") == ""
    busy = Advice("busy-poll", "sleeping", "0 → 61", "n/a", "more", "×0.78", "a CPU", claim="H5c")
    s.sections["x"].advice = lambda: [busy]
    front = s.front()
    # On a line of its own, never beside this host's "Avoid".
    assert "   - On the other host states: " + when in front[0].text
    assert not [x for x in front[0].text.splitlines() if "Avoid" in x and "helps" in x]
    assert "when it helps" not in front[1].blocks[0].make().columns


def test_table_of_contents_links_every_main_section():
    html = ('<main><div class="jp-Cell a"><div class="out"><h1 id="T">T<a class="anchor-link" '
            'href="#T">¶</a></h1></div></div><div class="jp-Cell b"><h2 id="Summary">Summary'
            '<a class="anchor-link" href="#Summary">¶</a></h2><h3 id="E1-methods">E1 methods'
            '<a class="anchor-link" href="#E1-methods">¶</a></h3></div></main>')
    assert add_toc("<p>no headings</p>") == "<p>no headings</p>"
    bare = add_toc('<html><body><h2 id="A">A<a class="anchor-link" href="#A">¶</a></h2></body></html>')
    assert bare.startswith('<html><body><nav class="toc">')
    out = add_toc(html)
    # Between the title's cell and the next cell, never inside a cell's output.
    assert '</div></div><nav class="toc">' in out
    assert out.index('<nav class="toc">') < out.index('<div class="jp-Cell b">')
    assert '<a href="#Summary">Summary</a>' in out
    # The lab book's headings (h3, inside collapsed parts) are not the main page's contents.
    assert 'href="#E1-methods"' not in out.split("</nav>")[0]


# ---------------------------------------------------------------------------
# The rendered report in a browser

@pytest.fixture(scope="module")
def rendered(measured_project):
    """The smoke report of the session's measured project."""
    dest, _, _ = measured_project
    return dest / "report" / "report.html"


def test_the_report_is_self_contained_and_renders_cleanly_in_chromium(rendered, tmp_path):
    try:
        browser.find_chromium()
    except browser.BrowserError as exc:
        pytest.skip(str(exc))
    html = rendered.read_text()
    # Nothing to fetch: no script, stylesheet or image from the network.
    assert re.findall(r'<(?:script|link|img)[^>]+(?:src|href)="https?://', html) == []
    assert '<nav class="toc">' in html
    # Real headings (the table of contents would match the bare words too).
    for heading in ("What-to-do", "The-published-claims", "Hosts-compared", "Lab-book"):
        assert f'<h2 id="{heading}">' in html
    # The lab book's parts are there, collapsed.
    for part in ("Methods, and when each criterion was set", "Limitations of this data",
                 "Every verdict beside its published figure", "Glossary"):
        assert re.search(f'<details class="rtstudy-details"><summary>{part}', html), part
    assert "<strong>Provenance.</strong>" in html
    shot = screenshot_path("report_first_screen.png", tmp_path)
    page = browser.check_page(rendered, shot)
    # A person reads the main page: at most 12 screens of 1366 × 768, the detail collapsed.
    assert page.height <= 12 * 768, f"the main page is {page.height / 768:.1f} screens"
    # The first screen answers "what should I do, how much does it help, how sure is that":
    # the first change of "What to do" with its late-frame ratio and CI, or why there is none.
    first = page.first_screen
    assert "What to do" in first
    do = re.search(r'<ol>\s*<li><strong>(.+?)</strong>: late frames (×[\d.,]+ \[[\d.,]+, [\d.,]+\])',
                   html)
    if do:
        assert f"{html_text(do.group(1))}: late frames {do.group(2)}" in first
    else:
        assert re.search(r"No change (measured here is shown to halve|was measured on this host)",
                         first)
    assert page.images >= 10, "the report's figures are embedded images"
    # ... each with its words for a reader who cannot see it (figstyle.alt_text).
    images = re.findall(r"<img [^>]*>", html)
    assert len(images) == page.images and all(re.search(r' alt="[^"]+"', i) for i in images)
    assert page.broken_images == []
    assert page.console_errors == []
    assert page.title.startswith("Real-time scheduling")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_a_damaged_dataset_is_reported_whole_before_anything_is_rendered(measured_project,
                                                                          tmp_path):
    """Damage in two experiments: one `make report` names every damaged file, each with its fix."""
    import subprocess
    import sys
    from pathlib import Path

    from rtstudy.data.io import read_plan

    src, _, _ = measured_project
    dest = tmp_path / "project"
    env = copy_project(src, dest)

    victims = []
    for stage, name in (("e1_async_buffer", "cell.json"), ("e3_overhead", "samples.parquet")):
        (dataset,) = venv_datasets(dest, stage)  # the shown host's (Holoscan 5.0's aside)
        for entry in read_plan(dataset)["cells"][:2]:
            victim = dataset / entry["cell_id"] / name
            victim.write_bytes(b"damaged")
            victims.append(victim)
    proc = subprocess.run([str(Path(sys.executable).parent / "rtstudy"), "report"], cwd=dest,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    for victim in victims:
        assert str(victim) in proc.stderr, f"{victim} not named:\n{proc.stderr}"
    assert proc.stderr.count("re-run its stage") == len(victims)


def test_a_host_with_part_of_the_study_shows_what_it_has(measured_project, tmp_path,
                                                          monkeypatch):
    """A study imported in part (E3 only): the report is built from it, and its Limitations
    name the sections left out (it used to stop with "no e1_async_buffer data from host …").
    Built from the parameters `rtstudy report` read and handed down, it reads params.yaml no
    more."""
    import shutil

    from rtstudy import params

    src, _, _ = measured_project
    dest = tmp_path / "project"
    (dest / "src").mkdir(parents=True)
    for name in ("params.yaml", "dvc.yaml"):
        shutil.copy2(src / name, dest / name)
    (dest / "src" / "rtstudy").symlink_to(src / "src" / "rtstudy")
    (dataset,) = venv_datasets(src, "e3_overhead")
    shutil.copytree(dataset, dest / dataset.relative_to(src))
    monkeypatch.setenv("RTSTUDY_ROOT", str(dest))
    handed_down = params.read("smoke")
    monkeypatch.setattr(params, "load", lambda *a, **k: pytest.fail("params.yaml read again"))
    study = Study.load("smoke", handed_down)
    assert list(study.sections) == ["e3_overhead"]
    (left_out,) = [item for item in study.limitations() if "left out" in item]
    assert "E1, E2, E4" in left_out
    assert study.summary() and study.hosts_blocks() is not None


def test_a_rebuilt_sdk_environment_speaks_for_its_version_once():
    """Two builds of the 5.0 root on one machine state are two host states; the shown host is
    compared with the newest build only, and another machine state's builds not at all."""
    from rtstudy.report import sdks

    def state(host_id, built=None, version="4.6.0", machine="vm-a"):
        fp = {"hostname": machine, "versions": {"holoscan-cu12": "4.6.0"}}
        if built:
            fp["sdk"] = {"version": version, "environment": "debian13-root", "built_utc": built}
        return {"host_id": host_id, "fp": fp, "verdicts": {"H2": host_id}}
    states = [state("venv"), state("old5", "2026-11-27T13:23:32Z", "5.0.0"),
              state("new5", "2026-11-29T15:12:44Z", "5.0.0"),
              state("elsewhere5", "2026-11-30T00:00:00Z", "5.0.0", machine="vm-b")]
    rows = sdks.groups(states, "venv")
    assert [(r["host_id"], r["version"]) for r in rows] == [("venv", "4.6.0"), ("new5", "5.0.0")]
    assert list(sdks.verdict_table(rows).columns) == [
        "claim", "Holoscan 4.6.0 (venv)", "Holoscan 5.0.0 (Debian 13 root)"]
    # Shown itself, an older build is still the report's own host; 4.6 is its partner.
    assert [r["host_id"] for r in sdks.groups(states, "old5")] == ["venv", "old5"]
