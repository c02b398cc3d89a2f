"""Stability: the drift check (one condition run first and last) and the re-run agreement.

The drift check is off in the smoke profile (it adds two cells to each sweep);
here it runs on a real E3 sweep of two conditions, and the report's
*Stability* words are checked on data made to move, or not.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from rtstudy import params
from rtstudy.data import io
from rtstudy.experiments.e2_rt_threads.analysis import dataset as e2_analysis
from rtstudy.experiments.e3_overhead import analysis as e3_analysis, plan as e3_plan
from rtstudy.experiments.e4_host import analysis as e4_analysis
from rtstudy.inference import stats
from rtstudy.inference.stats import CI, drift_check
from rtstudy.measure.cell import Cell, with_drift
from rtstudy.measure.harness import run_order
from rtstudy.report import stability
from rtstudy.report.section import Verdict
from rtstudy.report.study import Study, words

pytestmark = pytest.mark.cells

CI_SETTINGS = CI(0.95)


def cells(n: int) -> list[Cell]:
    return [Cell("x", "x", f"c{i % 2}", {"i": i}, i // 2, 10.0, module="m") for i in range(n)]


def test_drift_cells_run_first_and_last_and_change_no_other_id():
    plain = cells(6)
    checked = with_drift(plain, "c1")
    assert [c.cell_id for c in checked[:6]] == [c.cell_id for c in plain]
    start, end = checked[6:]
    assert (start.drift, end.drift) == ("start", "end")
    assert start.config == end.config == plain[1].config and start.label == "c1"
    assert len({c.cell_id for c in checked}) == 8, "the two drift cells have ids of their own"
    assert "driftstart" in start.cell_id and "driftend" in end.cell_id
    for seed in (1, 2, 3):
        order = run_order(list(reversed(checked)), seed)
        assert order[0] is start and order[-1] is end
        assert [c.cell_id for c in order[1:-1]] == [c.cell_id for c in run_order(plain, seed)], \
            "the ordinary cells keep the order they had without the check"
    with pytest.raises(ValueError, match="no cell labelled 'c9'"):
        with_drift(plain, "c9")


def frame(values: dict[str, float], drift: str = "") -> pd.DataFrame:
    return pd.DataFrame([{"label": label, "v": v, "drift": drift} for label, v in values.items()])


@pytest.mark.parametrize("start, end, moved", [(10.0, 10.5, False), (10.0, 13.0, True)])
def test_drift_check_judges_the_difference_against_the_runs_spread(start, end, moved):
    runs = pd.DataFrame({"label": ["a"] * 3 + ["b"] * 3, "v": [9.0, 10.0, 11.0, 50, 60, 70]})
    drift = pd.DataFrame({"label": ["a", "a"], "drift": ["start", "end"], "v": [start, end],
                          "finished_utc": ["2026-11-23T10:00:00Z", "2026-11-23T10:18:00Z"]})
    d = drift_check(runs, drift, "v")
    assert d["label"] == "a" and d["runs"] == 3 and (d["low"], d["high"]) == (9.0, 11.0)
    assert d["difference"] == pytest.approx(end - start)
    assert d["relative"] == pytest.approx((end - start) / 10.0)
    assert d["minutes"] == pytest.approx(18.0)
    assert d["moved"] is moved


def test_drift_check_without_both_runs_or_enough_runs():
    runs = pd.DataFrame({"label": ["a"], "v": [1.0]})
    start = pd.DataFrame({"label": ["a"], "drift": ["start"], "v": [1.0],
                          "finished_utc": ["2026-11-23T10:00:00Z"]})
    assert drift_check(runs, pd.DataFrame(), "v") is None, "no drift check in the sweep"
    assert drift_check(runs, start, "v") is None, "the end run is missing (sweep interrupted)"
    both = pd.concat([start, start.assign(drift="end", v=5.0)])
    assert drift_check(runs, both, "v")["moved"] is None, "one ordinary run has no spread"


def synthetic_run(rng, jitter_ms: float, late_ms: float) -> dict:
    """One run's 150 frame periods (ms): typical jitter ``jitter_ms``, three frames ``late_ms``
    late (each late frame followed by an early one); its std (ms) and IQR (µs), as E2's runs."""
    periods = 16.7 + rng.normal(0, jitter_ms, 150)
    for i in (30, 80, 120):
        periods[i] += late_ms
        periods[i + 1] -= late_ms
    q75, q25 = np.percentile(periods, [75, 25])
    return {"label": "SCHED_FIFO-lf3-native", "period_std_ms": float(periods.std(ddof=1)),
            "period_iqr_us": float(q75 - q25) * 1e3}


def test_a_synthetic_drift_is_caught_on_e2s_typical_jitter_not_on_the_std():
    rng = np.random.default_rng(3)
    # Five ordinary runs, two with late frames (as E2's real-time runs: stds of 0.03-1.44 ms
    # in one condition), then the drift check: the host's typical jitter doubled.
    runs = pd.DataFrame([synthetic_run(rng, 0.03, late) for late in (0, 0, 2.0, 0, 6.0)])

    def checks(end_jitter_ms: float) -> pd.DataFrame:
        return pd.DataFrame([{**synthetic_run(rng, jitter, 0), "drift": role,
                              "finished_utc": f"2026-11-23T10:{minute}:00Z"}
                             for role, jitter, minute in (("start", 0.03, "00"),
                                                          ("end", end_jitter_ms, "10"))])
    moved = checks(0.06)
    assert not drift_check(runs, moved, "period_std_ms")["moved"], \
        "the std's spread over runs (late frames) hides the drift"
    ds = io.Dataset(Path("."), {"runs": runs, "drift": moved}, [])
    assert e2_analysis.DRIFT_QUANTITY[0] == "frame-period IQR"
    assert e2_analysis.drift(ds)["moved"], "E2's drift check, on the typical jitter, catches it"
    steady = io.Dataset(Path("."), {"runs": runs, "drift": checks(0.03)}, [])
    assert not e2_analysis.drift(steady)["moved"], "no drift, nothing caught"


def test_e4_drift_is_judged_on_h4s_metric():
    stats_rows = [{"kind": "jitter", "cpu": 0.0, "load": "idle", "label": "jitter-cpu0-idle",
                   "p99.99": 40.0, "lost_share": share} for share in (0.0099, 0.0088, 0.0114)]
    for end, moved in ((0.0095, False), (0.02, True)):
        drift = pd.DataFrame([{**stats_rows[0], "lost_share": share, "drift": role,
                               "finished_utc": f"2026-11-23T20:{m}:00Z"}
                              for role, share, m in (("start", 0.0110, "57"), ("end", end, "59"))])
        ds = io.Dataset(Path("."), {"stats": pd.DataFrame(stats_rows), "drift": drift}, [])
        got = e4_analysis.drift(ds)
        assert got["moved"] is moved and got["difference"] == pytest.approx(end - 0.0110)


@pytest.fixture(scope="module")
def e3_with_drift(tmp_path_factory, fingerprint, sweep):
    """A real E3 sweep of two conditions with the drift check on."""
    out = tmp_path_factory.mktemp("drift") / "e3"
    cfg = params.stage_config("e3_overhead", "smoke")
    cfg.update(apps=["ops"], event_based_workers=[1], drift_check=True)
    planned = e3_plan.plan(cfg, fingerprint, {})
    assert [c.drift for c in planned].count("start") == 1
    outcomes = sweep(planned, out, cfg["order_seed"])
    assert all(o.status == "ok" for o in outcomes), [o.reason for o in outcomes]
    return out, cfg, planned


def test_a_real_sweep_runs_the_check_at_its_ends_and_the_analysis_sets_it_aside(e3_with_drift):
    out, cfg, planned = e3_with_drift
    plan = io.read_plan(out)["cells"]
    assert plan[0]["drift"] == "start" and plan[-1]["drift"] == "end"
    sidecars, missing = io.completed_cells(out)
    assert not missing
    order = {sc["drift"]: sc["order_index"] for sc in sidecars if sc["drift"]}
    assert order == {"start": 0, "end": len(planned) - 1}
    ds = e3_analysis.load(out, cfg)
    runs = ds.tables["runs"]
    assert set(runs["drift"]) == {""}, "no statistic counts the drift check's runs"
    assert runs["cell_id"].nunique() == len(planned) - 2
    assert set(ds.tables["drift"]["drift"]) == {"start", "end"}
    d = e3_analysis.drift(ds)
    assert d["label"] == planned[0].label == "ops-greedy"
    assert np.isfinite(d["start"]) and np.isfinite(d["end"]) and d["minutes"] >= 0
    assert d["runs"] == 1 and d["moved"] is None, "one ordinary run: nothing to judge against"


def record(agree_first: bool) -> dict:
    def session(value: float, verdict: str) -> dict:
        return {"host_id": "h-1", "confidence": 0.95,
                "E3": {"verdicts": {"H3": {"verdict": verdict, "runs": 3, "criterion": "c"}},
                       "headline": {"steady": {"value": value, "low": value - 0.1,
                                               "high": value + 0.1, "unit": "µs", "n": 3},
                                    "no ci": {"value": 1.0, "low": None, "high": None,
                                              "unit": "µs", "n": 2}}}}
    second = session(2.05 if agree_first else 3.0, "reproduced" if agree_first else "inconclusive")
    return {"profile": "default", "host_id": "h-1", "commit": "abc123def4567890",
            "measured_utc": "2026-11-23T18:00:00Z", "sessions": [session(2.0, "reproduced"), second]}


@pytest.mark.parametrize("agrees", [True, False])
def test_agreement_between_sessions_and_the_words_that_say_so(agrees, tmp_path):
    rec = record(agrees)
    table = stability.agreement(*rec["sessions"])
    steady = table.set_index("quantity").loc["steady"]
    assert steady["agree"] is agrees
    assert table.set_index("quantity").loc["no ci", "agree"] is None
    changes = stability.verdict_changes(*rec["sessions"])
    assert changes == {"H3": ("reproduced", "reproduced" if agrees else "inconclusive")}
    shown = stability.agreement_table(table)
    assert list(shown["first inside second's CI"]) == ["yes" if agrees else "no", "no CI"]

    path = tmp_path / "rerun.json"
    path.write_text(json.dumps(rec))
    assert stability.read_rerun(path) == rec

    verdict = Verdict("H3", "~1 µs", "2.0 µs", "reproduced")
    summary = words("summary", verdicts=[verdict], ci=CI_SETTINGS, second=changes, rerun=rec,
                    earlier=[], over={}, k=0)
    assert ("**differed**: reproduced then inconclusive" in summary) is not agrees
    assert ("| same |" in summary) is agrees


def test_the_stability_section_reads_the_recorded_rerun_and_the_drift(tmp_path, monkeypatch,
                                                                      e3_with_drift):
    out, cfg, _ = e3_with_drift
    for name in ("params.yaml", "dvc.yaml"):
        (tmp_path / name).write_text("")
    (tmp_path / "src" / "rtstudy").mkdir(parents=True)
    monkeypatch.setenv("RTSTUDY_ROOT", str(tmp_path))
    study = Study("default", CI_SETTINGS, {}, "h-1", None,
                  datasets={"e3_overhead": e3_analysis.load(out, cfg)})

    text = study.stability_blocks()[0].text
    assert "No re-run agreement has been recorded" in text
    assert "too few ordinary runs" in text

    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "rerun_agreement.json").write_text(json.dumps(record(False)))
    blocks = study.stability_blocks()
    text = blocks[0].text
    assert "For 0 of 1 headline quantities with a CI" in text
    assert "E3 steady" in text and "H3 (reproduced, then inconclusive)" in text
    # One quantity of 3 runs missing is what chance gives about one time in four.
    assert "two sessions of 3 runs agree on one quantity only about" in text
    assert "show that sessions differ" in text and "more than chance gives" not in text
    drift = blocks[1].make()
    assert list(drift["experiment"]) == ["E3"] and drift["condition"][0] == "ops-greedy"
    assert len(blocks[2].make()) == 2
    # The placeholder the repository starts with records no sessions: no agreement to cite.
    (tmp_path / "benchmarks" / "rerun_agreement.json").write_text(
        json.dumps({"about": "none yet", "sessions": []}))
    assert study.rerun() is None


def test_chance_alone_says_how_many_quantities_two_sessions_miss():
    """stability.chance_misses: the misses two sessions that do not differ would have
    (1 − stats.agreement_chance per quantity), and how surprising the pair's own are."""
    def pair(misses: int, n: int = 5, total: int = 20) -> pd.DataFrame:
        q = {"value": 1.0, "low": 0.9, "high": 1.1, "unit": "µs", "n": n}
        return pd.DataFrame([{"first": q, "second": q, "agree": i >= misses}
                             for i in range(total)])
    miss_5 = 1 - stats.agreement_chance(5, 0.95)
    usual = stability.chance_misses(pair(4), 0.95)
    assert usual["expected"] == pytest.approx(20 * miss_5)
    assert (usual["runs"], usual["agree"]) == (5, 1 - miss_5)
    assert usual["p"] == pytest.approx(sps.binom.sf(3, 20, miss_5)) and usual["p"] > 0.05
    assert stability.chance_misses(pair(12), 0.95)["p"] < 1e-3
    assert stability.chance_misses(pair(0), 0.95)["p"] == pytest.approx(1.0)
    # Quantities without a CI (below 3 runs) count for nothing.
    few = stability.chance_misses(pair(2, n=2), 0.95)
    assert few["expected"] == 0 and np.isnan(few["p"])


def test_findings_are_compared_between_sessions_where_both_have_them():
    one = {"E2": {"findings": {"pin": "late frames fewer",
                               "only here": "x"}}, "E3": {"verdicts": {}}}
    two = {"E2": {"findings": {"pin": "late frames not settled"}},
           "E3": {"verdicts": {}}}
    assert stability.finding_changes(one, two) == {
        "E2: pin": ("late frames fewer", "late frames not settled")}
    assert stability.finding_changes(two, {"E3": {}}) == {}


def test_a_rule_is_the_same_when_only_its_data_derived_numbers_differ():
    a = "std difference at the lowest load factor: whole CI within ±0.025 ms (1× the floor's std)"
    b = "std difference at the lowest load factor: whole CI within ±0.030 ms (1× the floor's std)"
    assert stability.same_rule(a, b)
    assert not stability.same_rule(a, "whole CI within ±0.1 ms")
