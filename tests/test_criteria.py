"""Every criterion's record (rtstudy.inference.criteria) against git, and the report's reading of
it."""
from __future__ import annotations

import os
import subprocess
from datetime import datetime, timezone

import pytest

from rtstudy import paths
from rtstudy.inference import criteria


def git(*args: str) -> str:
    """git's output, empty when it fails (an unknown commit); dates in UTC."""
    return subprocess.run(["git", "-C", str(paths.checkout()), *args], capture_output=True,
                          text=True, env={**os.environ, "TZ": "UTC"}).stdout.strip()


def has_history() -> bool:
    try:
        return git("rev-parse", "--is-shallow-repository") == "false"
    except OSError:
        return False


CHANGES = [(c.name, ch) for c in criteria.CRITERIA.values() for ch in (*c.history,)] + \
    [("first data", criteria.FIRST_DATA)]


@pytest.mark.skipif(not has_history(), reason="needs the repository's full git history")
@pytest.mark.parametrize("name,change", CHANGES, ids=[f"{n}-{c.commit}" for n, c in CHANGES])
def test_each_change_names_a_commit_of_this_history_with_its_date(name, change):
    full = git("rev-parse", "--verify", "--quiet", f"{change.commit}^{{commit}}")
    assert full, f"{name}: {change.commit} is not a commit of this repository"
    assert subprocess.run(["git", "-C", str(paths.checkout()), "merge-base", "--is-ancestor", full,
                           "HEAD"]).returncode == 0, f"{name}: not in HEAD's history"
    date = git("log", "-1", "--format=%ad", "--date=format-local:%Y-%m-%dT%H:%MZ", full)
    assert date == change.utc, f"{name}: {change.commit} is dated {date}, recorded {change.utc}"


def test_histories_are_in_time_order_and_values_are_what_the_code_applies():
    from rtstudy.experiments.e1_async_buffer import analysis as e1
    from rtstudy.experiments.e2_rt_threads.analysis import dataset as e2
    from rtstudy.experiments.e3_overhead import analysis as e3
    from rtstudy.experiments.e4_host import analysis as e4
    from rtstudy.inference import stats

    for c in criteria.CRITERIA.values():
        times = [ch.time for ch in c.history]
        assert times == sorted(times), c.name
    applied = {"min_runs": stats.MIN_RUNS, "h1_default_min_slope": e1.DEFAULT_MIN_SLOPE,
               "h1_flat_margin": e1.FLAT_MARGIN, "h2_min_reduction": e2.MIN_REDUCTION,
               "h2_control_floor_multiple": e2.CONTROL_FLOOR_MULTIPLE,
               "h3_close_band": e3.CLOSE_RATIO, "h4_interruption_ns": e4.INTERRUPTION_NS,
               "h4_min_difference": e4.MIN_DIFFERENCE, "h4_min_tail_cut": e4.MIN_TAIL_CUT}
    assert all(criteria.value(k) == v for k, v in applied.items())
    with pytest.raises(KeyError, match="no criterion"):
        criteria.value("h9")


def test_the_table_says_when_each_was_set_relative_to_the_data():
    measured = datetime(2026, 11, 23, 20, 37, tzinfo=timezone.utc)
    table = criteria.table(measured).set_index("criterion")
    slope = table.loc["h1_default_min_slope"]
    assert slope["first set"].startswith("2026-11-21T19:55Z 254e3b0: before this data (2.0 d)")
    assert "after this data" in slope["as it stands"]
    assert table.loc["h4_interruption_ns", "after_any_data"]
    assert table.loc["e2_floor_goal", "as it stands"] == "unchanged"
    assert "before the first data" in criteria.relative(criteria.CRITERIA["h2_min_reduction"]
                                                        .history[0], None)


def test_the_late_threshold_the_analysis_applies_is_the_dated_one():
    from rtstudy import params

    for profile in params.PROFILES:
        assert params.stage_config("e2_rt_threads", profile)["late_threshold_ms"] == \
            criteria.value("e2_late_threshold_ms"), profile
