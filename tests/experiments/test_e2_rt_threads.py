"""E2 with real policies at smoke size, its checks before running, and its statistics."""
from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from conftest import require_policy
from rtstudy import params
from rtstudy.experiments.e2_rt_threads import analysis, plan
from rtstudy.harness import POLICY_NAMES, SweepContext, run_sweep
from rtstudy.stats import CI


@pytest.fixture(scope="module")
def e2_run(tmp_path_factory, fingerprint):
    for policy in ("SCHED_FIFO", "SCHED_RR", "SCHED_DEADLINE"):
        require_policy(fingerprint, policy)
    cfg = params.stage_config("e2_rt_threads", "smoke")
    cfg.update(policies=["normal", "SCHED_FIFO", "SCHED_RR", "SCHED_DEADLINE"], load_factors=[1],
               duration_s=0.5)
    out = tmp_path_factory.mktemp("e2")
    cells = plan.plan(cfg, fingerprint, {})
    with open("/dev/null", "w") as devnull:
        run_sweep(cells, out, SweepContext.from_fingerprint(fingerprint, "smoke"), cfg["order_seed"],
                  progress=devnull)
    return cfg, cells, out


def test_each_policy_is_applied_and_produces_frames(e2_run):
    cfg, cells, out = e2_run
    for cell in cells:
        sidecar = json.loads((out / cell.cell_id / "cell.json").read_text())
        policy = cell.config["policy"]
        got = POLICY_NAMES[sidecar["operators"]["target"]["sched"]["policy"]]
        assert got == (policy if policy.startswith("SCHED_") else "SCHED_OTHER"), cell.cell_id
        assert sidecar["realtime_verified"] is (policy.startswith("SCHED_"))
        assert sidecar["summary"]["frames"] == cell.config["frames"]
        assert all(t > 0 for t in sidecar["summary"]["load_ticks"]), "loads must have run"


def test_frames_and_runs_frames(e2_run):
    cfg, cells, out = e2_run
    ds = analysis.load(out, cfg)
    frames, runs = ds.tables["frames"], ds.tables["runs"]
    assert ds.missing == [] and len(runs) == len(cells)
    for _, r in runs.iterrows():
        assert r["period_p50_ms"] <= r["period_p99_ms"] <= r["period_p99.9_ms"] <= r["period_max_ms"]
        assert abs(r["period_mean_ms"] - r["nominal_ms"]) < 0.2 * r["nominal_ms"]
    assert (np.diff(frames.groupby("cell_id")["t_s"].apply(list).iloc[0]) > 0).all()


@pytest.mark.parametrize("key,value,words", [
    ("priority", 0, ["e2_rt_threads.priority", ">= 1"]),
    ("priority", None, ["e2_rt_threads.priority"]),
    ("deadline_runtime_fraction", 1.0, ["deadline_runtime_fraction", "runtime >= the period"]),
    ("policies", ["SCHED_FIFO"], ["must include 'normal'"]),
    ("policies", ["normal", "SCHED_IDLE"], ["e2_rt_threads.policies", "SCHED_IDLE"]),
])
def test_bad_policy_settings_are_rejected_before_running(key, value, words):
    data = copy.deepcopy(params.load())
    if value is None:
        del data["e2_rt_threads"][key]
    else:
        data["e2_rt_threads"][key] = value
    with pytest.raises(params.ParamError) as info:
        params.validate(data)
    for word in words:
        assert word in str(info.value)


def test_std_reduction_is_over_runs_with_no_ci_below_three():
    ci = CI(0.95, 500, 0)
    normal, rt = [0.30, 0.32, 0.28, 0.31], [0.05, 0.04, 0.06, 0.05]
    better = analysis.std_reduction(normal, rt, ci)
    assert better.value == pytest.approx(1 - np.mean(rt) / np.mean(normal))
    assert 0.8 < better.low <= better.value <= better.high < 0.9 and better.n == 4
    worse = analysis.std_reduction(rt, normal, ci)
    assert worse.value < 0 and worse.high < 0
    two = analysis.std_reduction(normal[:2], rt[:2], ci)
    assert np.isfinite(two.value) and np.isnan(two.low) and np.isnan(two.high)
    assert np.isnan(analysis.std_reduction([], [1.0], ci).value)


def test_rating_bands_follow_the_seed():
    assert [analysis.rating(x) for x in (0.9, 0.3, 0.1, 0.01, -0.5)] == \
        ["excellent", "good", "modest", "limited", "limited"]


def test_the_section_compares_with_the_floor_it_is_given(e2_run):
    from rtstudy.experiments.e2_rt_threads import section
    from rtstudy.report.section import Section

    cfg, _, out = e2_run
    ds = analysis.load(out, cfg)
    alone = section.build(ds, cfg, CI(0.95, 200, 0), {})
    assert "Against the platform floor" not in alone.blocks[0].text  # no floor measured: no claim
    floor = Section("e4_host", "E4", "H4", "claim", headline={"floor_std_ms": 0.01})
    with_floor = section.build(ds, cfg, CI(0.95, 200, 0), {"e4_host": floor})
    assert "Against the platform floor" in with_floor.blocks[0].text
    assert "14.1 µs" in with_floor.blocks[0].text  # sqrt(2) x 10 µs, from the floor given
    assert f"at least {analysis.MIN_REDUCTION:.0%}" in alone.blocks[0].text
