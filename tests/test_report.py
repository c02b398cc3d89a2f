"""The report: its statistics, what it derives from data, and what a reader's browser sees."""
from __future__ import annotations

import copy
import re

import numpy as np
import pandas as pd
import pytest

from rtstudy import browser, report
from rtstudy.cli import add_toc
from rtstudy.stats import format_p, holm, rank_test, spread_test

# ---------------------------------------------------------------------------
# Statistics

def test_holm_matches_a_hand_computed_example_and_keeps_nans():
    # Sorted 0.01, 0.03, 0.04, 0.5 over m = 4 tests: ×4, ×3, ×2, ×1, then made monotone.
    adjusted = holm([0.01, 0.04, 0.03, np.nan, 0.5])
    np.testing.assert_allclose(adjusted, [0.04, 0.09, 0.09, np.nan, 0.5])
    assert np.all(holm([0.2, 0.9, 0.6]) <= 1)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([0.5, 1.5])


def test_spread_and_rank_tests_tell_spread_from_location():
    rng = np.random.default_rng(1)
    a = rng.normal(10, 1, 400)
    wide = rng.normal(10, 4, 400)       # same centre, larger spread
    shifted = rng.normal(12, 1, 400)    # same spread, other centre
    assert spread_test(a, wide) < 0.001 and spread_test(a, shifted) > 0.01
    assert rank_test(a, shifted) < 0.001 and rank_test(a, wide) > 0.01
    assert np.isnan(spread_test([1.0], [2.0, 3.0])) and np.isnan(rank_test([], [1.0]))


def test_p_values_read_as_a_reader_expects():
    assert [format_p(p) for p in (1e-9, 0.0123, 0.43, np.nan)] == ["< 0.001", "0.012", "0.43",
                                                                     "n/a"]


# ---------------------------------------------------------------------------
# What the report derives

FP = {"host_id": "vm-test", "cpu": {"count": 2, "model": "x", "online": [0, 1]},
      "isolation": {"isolated": [], "nohz_full": [], "rcu_nocbs": []},
      "kernel": {"preempt_model": "PREEMPT_DYNAMIC", "release": "6.1"},
      "sched": {"rt_runtime_us": 950000, "rt_period_us": 1000000},
      "realtime": {"SCHED_FIFO": "ok", "SCHED_DEADLINE pinned": "refused: Operation not permitted"}}


def test_limitations_follow_the_host_and_the_data():
    record = {"items": [{"name": "isolated CPUs", "status": "WARN"},
                        {"name": "NMI watchdog", "status": "PASS"}],
              "osnoise": {"available": False, "why": "tracefs is not mounted"}}
    e1_cells = pd.DataFrame({"policy": ["deadline", "none"], "pinned": [False, False]})
    e2_runs = pd.DataFrame({"policy": ["normal", "SCHED_FIFO", "SCHED_DEADLINE"],
                            "pinned": [False, True, False]})
    text = " ".join(report.limitations(FP, record, e1_cells, e2_runs))
    for words in ("2 CPUs", "No CPU is isolated", "950000", "0.95 × CPUs", "not PREEMPT_RT",
                  "pinned to one CPU was refused here (refused: Operation not permitted)",
                  "E1's SCHED_DEADLINE threads ran unpinned", "E2's SCHED_DEADLINE target ran "
                  "unpinned", "isolated CPUs", "tracefs is not mounted"):
        assert words in text
    assert "NMI watchdog" not in text
    # A dataset without its host's fingerprint says so instead of describing another host.
    unknown = report.limitations(None, record, e1_cells, e2_runs)
    assert len(unknown) == 1 and "not recorded" in unknown[0]

    tuned = copy.deepcopy(FP)
    tuned.update(cpu={"count": 16, "model": "x", "online": list(range(16))},
                 isolation={"isolated": [2, 3], "nohz_full": [2, 3], "rcu_nocbs": [2, 3]},
                 kernel={"preempt_model": "PREEMPT_RT", "release": "6.1-rt"},
                 sched={"rt_runtime_us": -1, "rt_period_us": 1000000},
                 realtime={"SCHED_FIFO": "ok", "SCHED_DEADLINE pinned": "ok"})
    assert report.limitations(tuned, {"items": []},
                              pd.DataFrame({"policy": ["deadline"], "pinned": [True]}),
                              pd.DataFrame({"policy": ["SCHED_FIFO"], "pinned": [True]})) == []


def test_table_of_contents_links_every_section():
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
    assert '<a href="#Summary">Summary</a>' in out and '<a href="#E1-methods">E1 methods</a>' in out


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
    for heading in ("Summary", "Methods", "Limitations", "Hosts-compared"):
        assert f'<h2 id="{heading}">' in html
    assert "<strong>Provenance.</strong>" in html
    shot = tmp_path / "first_screen.png"
    page = browser.check_page(rendered, shot)
    assert page.images >= 10, "the report's figures are embedded images"
    assert page.broken_images == []
    assert page.console_errors == []
    assert page.title.startswith("Real-time scheduling")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
