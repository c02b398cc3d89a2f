"""Sessions as the level above runs: kept side by side, estimated at their level, verdicts
that a shift between sessions cannot make "reproduced" (rtstudy.data.sessions,
meta.over_sessions)."""
from __future__ import annotations

import json
import os
import re
import subprocess

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from rtstudy import registry
from rtstudy.data import sessions
from rtstudy.data.io import DataError
from rtstudy.inference import meta, stats, within
from rtstudy.measure import integrity
from rtstudy.paths import PLAN_FILE, SEAL_FILE, SESSIONS_DIR, SIDECAR_FILE

from helpers import BIN, copy_project

pytestmark = pytest.mark.pipeline


def fake_dataset(folder, session_id: str | None, cells=3, finished="2026-11-26T10:00:00Z"):
    """A dataset folder whose cells carry only what sessions read (their sidecars)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / PLAN_FILE).write_text(json.dumps({"cells": []}))
    for i in range(cells):
        cell = folder / f"c-r{i}-abc"
        cell.mkdir()
        sidecar = {"cell_id": cell.name, "finished_utc": finished}
        if session_id is not None:
            sidecar["session"] = {"id": session_id}
        (cell / SIDECAR_FILE).write_text(json.dumps(sidecar))
    return folder


def test_closing_a_session_moves_it_whole_and_names_it(tmp_path):
    d = fake_dataset(tmp_path / "e1_async_buffer" / "vm-x" / "default", "2026-11-26T13:48:23Z")
    (d / "audit.json").write_text("{}")
    assert sessions.session_of(d) == "2026-11-26T13:48:23Z"
    closed = sessions.close(d)
    assert closed == d / SESSIONS_DIR / "2026-11-26T134823Z"
    assert sorted(p.name for p in closed.iterdir()) == [
        "audit.json", "c-r0-abc", "c-r1-abc", "c-r2-abc", PLAN_FILE, SEAL_FILE]
    # Measured before seals, nothing else vouching for it: sealed as it was closed.
    assert integrity.seal_problems(closed) == ([], True)
    assert [p.name for p in d.iterdir()] == [SESSIONS_DIR]
    # Nothing left to close; closing the same session twice is refused.
    assert sessions.close(d) is None
    fake_dataset(d, "2026-11-26T13:48:23Z")
    with pytest.raises(DataError, match="closed before"):
        sessions.close(d)


def test_a_datasets_closed_sessions_number_the_next_one(tmp_path):
    d = tmp_path / "e2_rt_threads" / "vm-x" / "default"
    assert sessions.closed(d) == 0  # a host state's first session
    for session_id in ("2026-11-26T13:48:23Z", "2026-11-27T09:00:00Z"):
        fake_dataset(d, session_id)
        sessions.close(d)
    (d / SESSIONS_DIR / "half-copied").mkdir()  # no plan: not a session
    fake_dataset(d, "2026-11-28T09:00:00Z")  # the current one is not closed
    assert sessions.closed(d) == 2
    # What each planned, for a plan that chooses by it (E2's rotating fixes).
    (d / PLAN_FILE).write_text(json.dumps({"cells": [{"label": "now", "config": {}}]}))
    (d / SESSIONS_DIR / "2026-11-26T134823Z" / PLAN_FILE).write_text("{damaged")
    planned = sessions.plans(d)
    assert planned["current"] == [{"label": "now", "config": {}}]
    assert len(planned["closed"]) == 2 and [] in planned["closed"]


def test_before_a_hosts_first_session_nothing_was_planned(tmp_path):
    assert sessions.plans(tmp_path / "none") == {"closed": [], "current": None}


def test_cells_from_before_sessions_get_a_dated_name(tmp_path):
    d = fake_dataset(tmp_path / "d", None, finished="2026-11-23T08:00:00Z")
    assert sessions.session_of(d) == "before-sessions-2026-11-23"
    assert sessions.folder_name("a:b c") == "abc"
    with pytest.raises(ValueError):
        sessions.folder_name("::")


def test_a_live_run_is_never_split_and_a_broken_close_is_redone(tmp_path):
    d = fake_dataset(tmp_path / "d", "s1")
    live = d / f".tmp-c-r9-abc-{os.getpid()}"
    live.mkdir()
    with pytest.raises(DataError, match="measuring into it"):
        sessions.close(d)
    live.rmdir()
    # A close interrupted before its rename leaves a staging folder: the next one starts over.
    (d / SESSIONS_DIR / ".closing-s1").mkdir(parents=True)
    assert sessions.close(d).name == "s1"
    assert not (d / SESSIONS_DIR / ".closing-s1").exists()


def test_new_closes_every_dataset_of_the_checkout_and_folders_lists_them_oldest_first(tmp_path):
    raw = tmp_path / "data" / "raw"
    for exp in ("e1_async_buffer", "e3_overhead"):
        fake_dataset(raw / exp / "vm-x" / "default", "old", finished="2026-11-26T09:00:00Z")
    fake_dataset(raw / "e1_async_buffer" / "vm-x" / "smoke", "other profile")
    closed = sessions.new("default", root=tmp_path / "data")
    assert sorted(p.parts[-5] for p in closed) == ["e1_async_buffer", "e3_overhead"]
    assert (raw / "e1_async_buffer" / "vm-x" / "smoke" / PLAN_FILE).exists()  # not this profile
    # The next study's cells: a second session beside the closed one.
    fake_dataset(raw / "e1_async_buffer" / "vm-x" / "default", "new",
                 finished="2026-11-26T11:00:00Z")
    found = sessions.folders("e1_async_buffer", "vm-x", "default", root=tmp_path / "data")
    assert list(found) == ["old", "new"]
    assert found["new"] == raw / "e1_async_buffer" / "vm-x" / "default"



def test_a_dataset_whose_session_was_closed_and_not_measured_since_stays_listed(tmp_path):
    """`rtstudy session new` on one host state of a checkout closes every dataset in it (the
    reference: its untuned host's, when its shielded state began a session); that host still
    has its data, read from its latest closed session."""
    from rtstudy import data

    root = tmp_path / "data"
    base = root / "raw" / "e1_async_buffer" / "vm-x" / "default"
    fake_dataset(base, "first", finished="2026-11-26T09:00:00Z")
    sessions.new("default", root=root)
    fake_dataset(base, "second", finished="2026-11-26T10:00:00Z")
    sessions.new("default", root=root)
    assert not (base / PLAN_FILE).exists()
    assert data.datasets("e1_async_buffer", "default", root) == [base]
    assert data.dataset_base("e1_async_buffer", "vm-x", "default", root) == base
    latest = data.dataset_dir("e1_async_buffer", "vm-x", "default", root)
    assert latest.parent.name == SESSIONS_DIR and sessions._read(latest)[0] == "second"
    assert list(sessions.folders("e1_async_buffer", "vm-x", "default", root)) == ["first",
                                                                                    "second"]
    checked, problems, _ = data.verify("default", root)
    assert not [p for p in problems if "vm-x/default:" in p or p.endswith("vm-x/default")]

def test_over_sessions_fixes_the_estimate_its_intervals_and_variance_components():
    # Three sessions, each from 5 runs with a standard error of exactly 1.
    t4 = sps.t.ppf(0.975, 4)
    values = np.array([10.0, 12.0, 14.0])
    est = meta.over_sessions(values, values - t4, values + t4, [5, 5, 5], 0.95)
    t2 = sps.t.ppf(0.975, 2)
    assert est.value == pytest.approx(12.0) and est.sessions == 3
    assert (est.low, est.high) == pytest.approx((12 - t2 * np.sqrt(4 / 3), 12 + t2 * np.sqrt(4 / 3)))
    assert (est.next_low, est.next_high) == pytest.approx(
        (12 - t2 * np.sqrt(4 * (1 + 1 / 3)), 12 + t2 * np.sqrt(4 * (1 + 1 / 3))))
    assert est.between_runs == pytest.approx(5.0)      # n × SE² = 5 × 1
    assert est.between_sessions == pytest.approx(3.0)  # s² − SE² = 4 − 1
    assert est.shares[0] == pytest.approx(3 / 8) and np.isnan(est.shares[2])  # no ω² given
    # One session, or sessions that agree exactly (no late frame in any): no interval.
    one = meta.over_sessions([5.0], [4.0], [6.0], [5], 0.95)
    assert one.value == 5.0 and np.isnan(one.low) and np.isnan(one.next_high)
    zero = meta.over_sessions([0.0, 0.0, 0.0], [0, 0, 0], [25.1] * 3, [5] * 3, 0.95)
    assert zero.value == 0 and np.isnan(zero.low) and np.isnan(zero.high)


def test_the_session_level_interval_covers_what_one_sessions_interval_does_not():
    """Coverage at k = 3 and 5 sessions of a host state whose sessions differ (τ = 2σ/√n)."""
    rng = np.random.default_rng(20261126)
    sims, n, mu, tau, sigma = 4000, 5, 0.0, 1.0, 1.0
    t_runs = sps.t.ppf(0.975, n - 1)
    for k in (3, 5):
        session_means = mu + tau * rng.standard_normal((sims, k))
        runs = session_means[..., None] + sigma * rng.standard_normal((sims, k, n))
        v, se = runs.mean(-1), runs.std(-1, ddof=1) / np.sqrt(n)
        covered_sessions = covered_one = 0
        for i in range(sims):
            est = meta.over_sessions(v[i], v[i] - t_runs * se[i], v[i] + t_runs * se[i],
                                      [n] * k, 0.95)
            covered_sessions += est.low <= mu <= est.high
            covered_one += abs(v[i, 0] - mu) <= t_runs * se[i, 0]
        assert 0.935 <= covered_sessions / sims <= 0.965, (k, covered_sessions / sims)
        # One session's CI over its runs misses the host state's value far more often.
        assert covered_one / sims < 0.75, (k, covered_one / sims)


def test_a_shift_between_sessions_is_never_called_reproduced():
    from rtstudy.inference import judge

    # Session 1 clears a 50 % threshold with its whole CI; session 2, shifted, straddles it.
    rule = judge.Rule(judge.AT_LEAST, 50.0)
    first = judge.Part("cut", rule, 70.0, 60.0, 80.0, 5)
    second = judge.Part("cut", rule, 52.0, 40.0, 64.0, 5)
    assert (first.state, second.state) == ("shown", "not settled")
    # Pooled with the session a random effect, the shift widens the CI across the threshold.
    pooled = judge.pool([first, second], 0.95)
    assert pooled.low < 50 < pooled.high and pooled.state == "not settled"
    # Sessions that agree, enough of them, keep their verdict.
    assert judge.pool([first] * 4, 0.95).state == "shown"
    with pytest.raises(ValueError):
        judge.pool([], 0.95)


def test_the_summary_states_the_verdict_over_sessions_beside_the_latest():
    from rtstudy.report.section import Verdict
    from rtstudy.report.study import words

    verdicts = [Verdict("H2", "−83.6 %", "71 % [55, 80]", "reproduced"),
                Verdict("H3", "~60 µs", "21 µs [18, 24]", "partly reproduced")]
    over = {"H2": {"verdict": "not settled", "why": "SCHED_FIFO's CI straddles its edge",
                   "sessions": ["reproduced", "not settled", "reproduced"]},
            "H3": {"verdict": "differs", "why": "", "sessions": ["differs"] * 3}}
    text = words("summary", verdicts=verdicts, ci=stats.CI(0.95), second={}, rerun=None,
                 earlier=[], over=over, k=3)
    assert "over 3 sessions" in text
    assert ("| reproduced | **not settled** (SCHED_FIFO's CI straddles its edge); each session: "
            "reproduced, not settled, reproduced |") in text
    assert "**differs**; each session: differs, differs, differs" in text


def test_new_session_makes_dvc_measure_again(measured_project, tmp_path):
    """After `rtstudy session new` in a measured checkout, the measuring stages are out of
    date (their outputs moved), so `make study` measures a new session; nothing is lost."""
    src, env, _ = measured_project
    dest = tmp_path / "copy"
    env = copy_project(src, dest)  # never the shared project's data
    before = sorted(p.relative_to(dest) for p in (dest / "data" / "raw").rglob(SIDECAR_FILE))
    out = subprocess.run([str(BIN / "rtstudy"), "session", "new"], cwd=dest, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "closed:" in out.stdout
    after = sorted(p.relative_to(dest) for p in (dest / "data" / "raw").rglob(SIDECAR_FILE))
    assert len(after) == len(before) and all(SESSIONS_DIR in p.parts for p in after)
    status = subprocess.run([str(BIN / "dvc"), "status"], cwd=dest, env=env,
                            capture_output=True, text=True, timeout=300)
    for stage in ("e1_async_buffer", "e2_rt_threads", "e3_overhead", "e4_host"):
        assert f"{stage}:" in status.stdout, status.stdout
    listing = subprocess.run([str(BIN / "rtstudy"), "session", "list"], cwd=dest, env=env,
                             capture_output=True, text=True, timeout=120)
    assert listing.returncode == 0


def test_one_dvc_repro_is_one_session_across_its_stages_and_sdks(measured_project):
    """A plain `dvc repro` (no RTSTUDY_SESSION): its first stage starts the session and every
    cell of every stage and Holoscan version records that one id, so the report can line up
    the experiments of one study (each stage once named a session of its own)."""
    src, env, stdout = measured_project
    assert "RTSTUDY_SESSION" not in env
    # The project's first repro said which session it started (later tests re-run the pipeline
    # in it, each a session of its own, and may add cells).
    first = re.search(r"measuring session (\S+)", stdout).group(1)
    boot = open("/proc/sys/kernel/random/boot_id").read().strip()
    assert first.endswith(boot[:8])
    record = json.loads((src / "data" / "host" / "session.json").read_text())
    assert record["boot_id"] == boot  # the latest repro's
    ids = {}
    for sidecar in (src / "data" / "raw").rglob(SIDECAR_FILE):
        if SESSIONS_DIR not in sidecar.parts:
            ids.setdefault(json.loads(sidecar.read_text())["session"]["id"], set()).add(
                sidecar.relative_to(src / "data" / "raw").parts[0])
    assert ids[first] == set(registry.REGISTRY)


def test_a_session_record_of_another_boot_is_not_reused(tmp_path, monkeypatch):
    from rtstudy.measure import harness

    monkeypatch.delenv("RTSTUDY_SESSION", raising=False)
    path = tmp_path / "session.json"
    started = harness.start_session(path)
    assert harness.session_record(path)["id"] == started["id"]
    path.write_text(json.dumps({**started, "id": "old", "boot_id": "another-boot"}))
    assert harness.session_record(path)["id"] != "old"
    monkeypatch.setenv("RTSTUDY_SESSION", "named")
    assert harness.session_record(path)["id"] == "named"
    assert harness.start_session(path)["id"] == "named"


def test_make_study_resumes_the_open_session_and_starts_a_new_one_once_it_is_closed(
        tmp_path, monkeypatch):
    """The next `make study` after an interruption (even after a reboot) adds to the session its
    datasets hold; after `rtstudy session new` it starts another."""
    from rtstudy.measure import harness

    monkeypatch.delenv("RTSTUDY_SESSION", raising=False)
    path = tmp_path / "session.json"
    earlier = {"id": "2026-11-26T10:00:00Z-0123abcd", "boot_id": "an-earlier-boot",
               "started_utc": "2026-11-26T10:00:00Z"}
    path.write_text(json.dumps(earlier))
    fake_dataset(tmp_path / "raw" / "e3_overhead" / "vm-x" / "smoke", earlier["id"])
    assert sessions.open_ids("vm-x", "smoke", tmp_path) == {earlier["id"]}
    resumed = harness.start_session(path, resume=sessions.open_ids("vm-x", "smoke", tmp_path))
    assert resumed["id"] == earlier["id"] and resumed["started_utc"] == earlier["started_utc"]
    assert resumed["boot_id"] != "an-earlier-boot" and "resumed_utc" in resumed
    assert harness.session_record(path)["id"] == earlier["id"]  # what every cell records
    assert sessions.new("smoke", tmp_path)
    assert sessions.open_ids("vm-x", "smoke", tmp_path) == set()
    fresh = harness.start_session(path, resume=sessions.open_ids("vm-x", "smoke", tmp_path))
    assert fresh["id"] != earlier["id"] and "resumed_utc" not in fresh


def test_one_session_is_set_beside_how_far_the_reference_hosts_sessions_moved(
        tmp_path, monkeypatch):
    from rtstudy.report import stability
    from rtstudy.report.section import Quantity, Section
    from rtstudy.report.study import Study

    for name in ("params.yaml", "dvc.yaml"):
        (tmp_path / name).write_text("")
    (tmp_path / "src" / "rtstudy").mkdir(parents=True)
    monkeypatch.setenv("RTSTUDY_ROOT", str(tmp_path))
    tidy = pd.DataFrame({"session": ["s1", "s2", "s3"], "experiment": "E2",
                         "quantity": "FIFO: period IQR", "value": [19.0, 32.6, 25.0],
                         "low": np.nan, "high": np.nan, "unit": "µs", "n": 5})
    moved = stability.session_spread(tidy)
    assert moved == [{"experiment": "E2", "quantity": "FIFO: period IQR", "unit": "µs",
                      "sessions": 3, "low": 19.0, "high": 32.6,
                      "sd": pytest.approx(float(np.std([19.0, 32.6, 25.0], ddof=1)))}]
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "session_spread.json").write_text(json.dumps(
        {"host_id": "vm-ref", "profile": "default", "recorded_utc": "2026-11-26T18:00:00Z",
         "sessions": ["s1", "s2", "s3"], "quantities": moved}))
    section = Section(name="e2_rt_threads", label="E2", hypothesis="H2", claim="c")
    section.quantities.append(Quantity("FIFO: period IQR", 40.0, 35.0, 45.0, "µs", 5))
    study = Study("default", stats.CI(0.95), {}, "vm-mine", None,
                  sections={"e2_rt_threads": section})
    text, table = study.sessions_blocks()
    assert "holds one measuring session" in text.text and "`vm-ref`, 3 sessions" in text.text
    shown = table.make()
    assert shown["this session"].tolist() == ["40 [35, 45]"]
    assert shown["reference: vm-ref's sessions"].tolist() == ["19 – 32.6"]
    assert shown["inside that range"].tolist() == ["no"]


def test_a_rate_over_sessions_is_never_given_a_bound_below_zero():
    """Late frames per 10 000 in three sessions (0, 8.4, 41.8): the t-interval over sessions is
    symmetric and reaches below 0; the session-level estimate cuts both intervals at 0 and
    leaves a quantity that can be negative (a % reduction) as it is."""
    from rtstudy.report import stability

    rates = [0.0, 8.4, 41.8]
    tidy = pd.DataFrame({"session": ["s1", "s2", "s3"] * 2, "experiment": "E2",
                         "quantity": ["late"] * 3 + ["reduction"] * 3,
                         "value": rates + [-10.0, 5.0, 30.0], "low": np.nan, "high": np.nan,
                         "unit": ["per 10 000 frames"] * 3 + ["%"] * 3, "n": 5})
    raw = meta.over_sessions(np.array(rates), [np.nan] * 3, [np.nan] * 3, [5] * 3, 0.95)
    assert raw.low < 0 and raw.next_low < 0
    est = stability.session_estimates(tidy, 0.95).set_index("quantity")
    late = est.loc["late"]
    assert (late["low"], late["next_low"]) == (0.0, 0.0)
    assert (late["value"], late["high"], late["next_high"]) == pytest.approx(
        (raw.value, raw.high, raw.next_high))
    assert est.loc["reduction", "low"] < 0


def test_the_variation_between_runs_splits_into_the_runs_own_and_their_frames():
    """100 sessions of 5 runs of 400 frames, with τ² = σ² = ω² = 0.04 built in: a run's value
    is its frames' mean, ω² its block-bootstrap variance; the method of moments gives each
    back, and the shares add up to 1."""
    rng = np.random.default_rng(20261127)
    k, n, m, tau, sigma, frame_sd = 100, 5, 400, 0.2, 0.2, 4.0   # ω² = 4² / 400 = 0.04
    t_runs = sps.t.ppf(0.975, n - 1)
    values, lows, highs, omega2 = [], [], [], []
    for _ in range(k):
        truth = tau * rng.standard_normal() + sigma * rng.standard_normal(n)
        frames = truth[:, None] + frame_sd * rng.standard_normal((n, m))
        runs = frames.mean(axis=1)
        se = runs.std(ddof=1) / np.sqrt(n)
        values.append(runs.mean())
        lows.append(runs.mean() - t_runs * se)
        highs.append(runs.mean() + t_runs * se)
        omega2.append(np.mean([within.within_run_variance(f, lambda a: a.mean(axis=1))
                               for f in frames]))
    est = meta.over_sessions(values, lows, highs, [n] * k, 0.95, omega2)
    assert est.within_run == pytest.approx(0.04, rel=0.1)
    assert est.between_runs == pytest.approx(0.04, rel=0.35)
    assert est.between_sessions == pytest.approx(0.04, rel=0.35)
    assert sum(est.shares) == pytest.approx(1.0)
    # Without ω², σ² holds it, and the within-run share is unknown, not 0.
    whole = meta.over_sessions(values, lows, highs, [n] * k, 0.95)
    assert whole.between_runs == pytest.approx(est.between_runs + est.within_run)
    assert np.isnan(whole.within_run) and np.isnan(whole.shares[2])


def test_the_sessions_table_gives_three_shares_or_says_which_is_unknown():
    from rtstudy.report import stability

    t4 = sps.t.ppf(0.975, 4)
    values = [10.0, 13.0, 16.0]
    tidy = pd.DataFrame({"session": ["s1", "s2", "s3"] * 2, "experiment": "E2",
                         "quantity": ["iqr"] * 3 + ["ratio"] * 3, "value": values * 2,
                         "low": [v - t4 for v in values] * 2,
                         "high": [v + t4 for v in values] * 2, "unit": ["µs"] * 3 + ["×"] * 3,
                         "n": 5, "within": [2.0] * 3 + [np.nan] * 3})
    est = stability.session_estimates(tidy, 0.95).set_index("quantity")
    # s² = 9, SE² = 1: τ² = 8; n × SE² = 5 holds σ² = 3 and ω² = 2.
    assert est.loc["iqr", ["between_sessions", "between_runs", "within_run"]].tolist() == \
        pytest.approx([8.0, 3.0, 2.0])
    shown = stability.sessions_table(tidy, est.reset_index()).set_index("quantity")
    column = "variance: sessions / runs / within a run"
    assert shown.loc["iqr (µs)", column] == "62 / 23 / 15 %"
    assert shown.loc["ratio (×)", column] == "62 / 38 / — %"
    assert stability.largest_components(est.reset_index()) == {
        "split": 1, "sessions": 1, "runs": 0, "within": 0, "unsplit": 1}


def test_the_report_shows_the_newest_host_state_on_every_machine(tmp_path, monkeypatch):
    """Two machines' untuned states, each with every experiment: the report shows the one
    measured last, though the other has more sessions and neither is the rendering host."""
    from rtstudy import registry
    from rtstudy.report import study

    monkeypatch.setenv("RTSTUDY_ROOT", str(tmp_path))
    fp = tmp_path / "data" / "host" / "fingerprint.json"
    fp.parent.mkdir(parents=True)
    fp.write_text(json.dumps({"host_id": "vm-renders"}))
    for name in registry.REGISTRY:
        old = tmp_path / "data" / "raw" / name / "vm-old" / "default"
        for i, day in enumerate(("20", "21", "22")):
            fake_dataset(old, f"s{i}", finished=f"2026-11-{day}T10:00:00Z")
            sessions.close(old)
        fake_dataset(old, "s3", finished="2026-11-23T10:00:00Z")
        fake_dataset(tmp_path / "data" / "raw" / name / "vm-new" / "default", "n0",
                     finished="2026-11-28T10:00:00Z")
    assert study.report_host("default") == "vm-new"
    # Measured here too, with as many experiments: this host's data is shown.
    fp.write_text(json.dumps({"host_id": "vm-old"}))
    assert study.report_host("default") == "vm-old"
