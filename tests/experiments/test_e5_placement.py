"""E5: the plan, the provocations' mechanics, the outcome and promise rules on synthetic cells,
and real smoke cells on Holoscan 4.x and 5.0 read by the loader.

The outcome of a provocation is a measured result: no test asserts which one a cell got, only
that it is read from Holoscan's own words and records into the study's vocabulary.
"""
from __future__ import annotations

import json
import os
import shutil

import pandas as pd
import pytest

from rtstudy import params, paths, registry
from rtstudy.experiments.e5_placement import analysis, params as e5_params, plan, provoke
from rtstudy.inference import judge
from rtstudy.machine import placement

pytestmark = pytest.mark.cells

FP = {"cpu": {"online": [0, 1]}, "isolation": {}}
OUTCOMES = {analysis.RAN, analysis.FALLBACK, analysis.REJECTED, analysis.FAILED, analysis.RAISED}


def words(outcome: str) -> bool:
    """Whether ``outcome`` is one of :mod:`analysis`'s outcome words."""
    return outcome in OUTCOMES or outcome.startswith((analysis.NEVER_RAN, analysis.NOT_AS_REQUESTED))


def test_the_apps_sample_columns_are_those_the_loader_reads():
    assert provoke.SAMPLE_COLUMNS == tuple(analysis.SAMPLES)


def test_the_plan_asks_5_0_every_policy_and_4x_what_it_can_express():
    cfg = params.stage_config("e5_placement", "default")
    four = plan.conditions(cfg, 4)
    five = plan.conditions(cfg, 5)
    assert {c[0] for c in four} == set(cfg["provocations"]) - {"irq_isolation"}
    assert all(c[1] == c[2] == provoke.NOT_IN_4X for c in four)
    per_policy = len(cfg["provocations"]) - 1 + len(cfg["irq_isolation"])
    assert len(five) == per_policy * len(cfg["probe_failure_policies"]) == len(set(five))
    base = plan.base_config(cfg, FP, {"cpus": None})
    # Enough reservations to exceed the default admission of every online CPU, and a CPU that
    # is not online.
    assert base["threads"] * base["runtime_ns"] / base["period_ns"] > plan.DEFAULT_ADMITTED * 2
    assert base["absent_cpu"] not in FP["cpu"]["online"] and base["cpu"] == 1


def test_the_control_is_required():
    cfg = dict(params.stage_config("e5_placement", "default"), provocations=["no_privilege"])
    assert "control" in e5_params.cross_checks(cfg)[0]


def test_each_provocation_asks_for_its_threads():
    base = {"cpu": 1, "absent_cpu": 7, "priority": 10, "period_ns": 100, "runtime_ns": 90,
            "threads": 3}
    [fifo] = provoke.requests({**base, "provocation": "control"})
    assert (fifo.policy, fifo.priority, fifo.cpus) == ("SCHED_FIFO", 10, (1,))
    [absent] = provoke.requests({**base, "provocation": "absent_cpu"})
    assert absent.cpus == (7,)
    deadline = provoke.requests({**base, "provocation": "over_admission"})
    assert [r.operator for r in deadline] == ["op0", "op1", "op2"]
    assert {(r.policy, r.runtime_ns, r.period_ns, r.cpus) for r in deadline} == \
        {("SCHED_DEADLINE", 90, 100, ())}


def test_irqs_on_a_cpu_are_read_from_each_irqs_affinity(tmp_path):
    """On a fixture copy of /proc/irq (the kernelfs root convention)."""
    irqs = tmp_path / "proc" / "irq"
    for irq, text, name in (("1", "0-1", "effective_affinity_list"), ("2", "0", "smp_affinity_list"),
                            ("3", "1,3-4", "smp_affinity_list")):
        (irqs / irq).mkdir(parents=True)
        (irqs / irq / name).write_text(text + "\n")
    assert provoke.irqs_on(1, tmp_path) == 2 and provoke.irqs_on(2, tmp_path) == 0
    assert provoke.irqs_on(0, tmp_path / "none") == 0


def test_the_admission_limit_and_its_absence(tmp_path):
    kernel = tmp_path / "proc" / "sys" / "kernel"
    kernel.mkdir(parents=True)
    (kernel / "sched_rt_period_us").write_text("1000000\n")
    (kernel / "sched_rt_runtime_us").write_text("950000\n")
    assert provoke.admission_limit(tmp_path) == pytest.approx(0.95 * len(os.sched_getaffinity(0)))
    (kernel / "sched_rt_runtime_us").write_text("-1\n")
    assert provoke.admission_limit(tmp_path) is None


def test_only_the_sdks_lines_about_threads_are_kept():
    log = ("[warning] [gxf_cuda.cpp:33] GPU not available for Driver APIs, cuda_error\n"
           "[error] [event_based_scheduler.cpp:1706] Failed to set SCHED_FIFO/SCHED_RR policy: "
           "Operation not permitted\n"
           "[info] [event_based_scheduler.cpp:771] started real-time worker thread\n"
           "[warning] [application.cpp:541] Current stack size limit is below the minimum\n")
    assert provoke.logged_errors(log) == [log.splitlines()[1]]


def test_stderr_of_the_process_is_captured_and_passed_on(capfd):
    with provoke.captured_stderr() as text:
        os.write(2, b"[error] [x.cpp:1] Failed to set CPU affinity\n")
    assert "Failed to set CPU affinity" in text[0]
    assert "Failed to set CPU affinity" in capfd.readouterr().err


# Synthetic cells: the rules that read them.
CONTROL = {"provocation": "control", "probe_failure_policy": "warn_and_record_fallback",
           "irq_isolation": "not_requested", "cpu": 1, "absent_cpu": 2, "priority": 10,
           "period_ns": 100, "runtime_ns": 90, "threads": 3, "run_ms": 100, "sdk_api": 5}
FIFO_ON_1 = {"policy": 1, "priority": 10, "runtime_ns": 0, "deadline_ns": 0, "period_ns": 0,
             "cpus": [1]}
RECORD = {"affinity": [1], "irq_isolation": 0, "probe_failure_policy": 0, "wake_mode": 0,
          "scheduling": {"policy": "fifo", "priority": 10, "deadline": None}}


def sidecar(stage="ran", sched=FIFO_ON_1, accepted=RECORD, requested=RECORD, logged=(),
            config=CONTROL) -> dict:
    return {"requested": {"config": config},
            "operators": {"op0": {"ticks": int(sched is not None), "sched": sched}},
            "summary": {"stage": stage, "logged": list(logged), "plan_records": [
                {"authored_name": "op0", "accepted": accepted, "requested": requested}]}}


def test_an_outcome_is_read_from_the_stage_the_records_and_the_threads():
    assert analysis.outcome(sidecar()) == (analysis.RAN, False)
    assert analysis.outcome(sidecar("rejected at compile", accepted=None))[0] == analysis.REJECTED
    assert analysis.outcome(sidecar("failed at lane start"))[0] == analysis.FAILED
    # 5.0 accepted less than asked (no IRQ isolation) and the thread got what it accepted.
    assert analysis.outcome(sidecar(requested={**RECORD, "irq_isolation": 1})) == \
        (analysis.FALLBACK, True)
    assert analysis.outcome(sidecar(sched=None)) == (f"{analysis.NEVER_RAN}, silently", False)
    other = {**FIFO_ON_1, "policy": 0, "priority": 0}
    assert analysis.outcome(sidecar(sched=other, logged=["[error] x"]))[0] == \
        f"{analysis.NOT_AS_REQUESTED}, an error logged"
    # 4.x: no record; the request itself is what the thread must have.
    four = {**CONTROL, "sdk_api": 4}
    assert analysis.outcome({**sidecar(config=four), "summary": {
        "stage": "ran", "logged": [], "plan_records": []}})[0] == analysis.RAN


@pytest.mark.parametrize("provocation, policy, irq, provoked, irqs, promised", [
    ("control", "fail_admission", "not_requested", False, 5, analysis.RAN),
    ("no_privilege", "warn_and_record_fallback", "not_requested", True, 5, analysis.FALLBACK),
    ("no_privilege", "fail_admission", "not_requested", True, 5, analysis.REJECTED),
    ("over_admission", "warn_and_record_fallback", "not_requested", False, 5, analysis.RAN),
    ("irq_isolation", "warn_and_record_fallback", "prefer_isolated", False, 5, analysis.FALLBACK),
    ("irq_isolation", "fail_admission", "prefer_isolated", False, 5, analysis.REJECTED),
    ("irq_isolation", "warn_and_record_fallback", "require_isolated", False, 5, analysis.REJECTED),
    ("irq_isolation", "warn_and_record_fallback", "require_isolated", False, 0, analysis.RAN),
])
def test_the_promise_is_the_references_sentence(provocation, policy, irq, provoked, irqs,
                                                promised):
    config = {**CONTROL, "provocation": provocation, "probe_failure_policy": policy,
              "irq_isolation": irq}
    assert analysis.promise(config, provoked, irqs) == promised
    assert analysis.promise({**config, "sdk_api": 4}, provoked, irqs) == \
        (analysis.RAN if provocation == "control" else "")


def test_a_provocation_that_did_not_take_is_not_counted():
    config = {**CONTROL, "provocation": "no_privilege"}
    assert analysis.check(config, False, analysis.RAN, analysis.RAN) == analysis.NOT_PROVOKED
    assert analysis.check(config, True, analysis.REJECTED, analysis.FALLBACK) == analysis.DIFFERS
    assert analysis.check({**config, "sdk_api": 4}, True, analysis.REJECTED, "") == \
        analysis.UNDOCUMENTED


def outcomes(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame([{"cell_id": f"c{i}", "provocation": p, "probe_failure_policy": pol,
                          "irq_isolation": "not_requested", "sdk_api": api, "outcome": o,
                          "promise": pr, "check": ch, "diagnostics": "", "logged": ""}
                         for i, (p, pol, api, o, pr, ch) in enumerate(rows)])


def test_h5b_fails_on_one_condition_that_differs_and_names_it():
    fail = "fail_admission"
    t = outcomes([("control", fail, 5, analysis.RAN, analysis.RAN, analysis.AS_DOCUMENTED),
                  ("no_privilege", fail, 5, analysis.REJECTED, analysis.REJECTED,
                   analysis.AS_DOCUMENTED),
                  ("no_privilege", fail, 5, analysis.FAILED, analysis.REJECTED, analysis.DIFFERS)])
    ds = analysis.Dataset(paths.root(), {"outcomes": t}, [], {})
    h = analysis.headline(ds)
    assert h.verdict["verdict"] == judge.FAILS and h.n_judged == 2
    [row] = h.differs
    assert row["provocation"] == "no_privilege"
    assert row["outcome"] == f"varies: {analysis.REJECTED} / {analysis.FAILED}"
    # The control first, the lenient policy before the strict one.
    assert [r["provocation"] for r in h.conditions] == ["control", "no_privilege"]


def test_h5b_holds_only_on_5_0_and_is_not_testable_on_4x():
    ok = [("control", "fail_admission", 5, analysis.RAN, analysis.RAN, analysis.AS_DOCUMENTED)]
    h = analysis.headline(analysis.Dataset(paths.root(), {"outcomes": outcomes(ok)}, [], {}))
    assert h.verdict["verdict"] == judge.HOLDS
    four = [("no_privilege", provoke.NOT_IN_4X, 4, analysis.RAN, "", analysis.UNDOCUMENTED)]
    h = analysis.headline(analysis.Dataset(paths.root(), {"outcomes": outcomes(four)}, [], {}))
    assert h.verdict["verdict"] == judge.NOT_TESTABLE and "4.x" in h.verdict["why"]


def test_4x_smoke_cells_are_read_into_outcomes(tmp_path, fingerprint, sweep):
    """The 4.x smoke plan for real: every cell gets an outcome word and a read thread table."""
    cfg = params.stage_config("e5_placement", "smoke")
    configs = {"cpus": params.stage_config("cpus", "smoke")}
    cells = plan.plan(cfg, fingerprint, configs)
    assert all(c.module == plan.MODULE for c in cells)
    sweep(cells, tmp_path, cfg["order_seed"])
    ds = analysis.load(tmp_path, cfg)
    out = ds.tables["outcomes"]
    assert len(out) == len(cells) and not ds.missing
    assert all(words(o) for o in out["outcome"]), list(out["outcome"])
    assert set(out["check"]) <= {analysis.AS_DOCUMENTED, analysis.DIFFERS, analysis.UNDOCUMENTED}
    assert set(analysis.SAMPLES) <= set(ds.tables["threads"].columns)
    # Dropping the privilege inside the cell took (the study runs as root here).
    if os.geteuid() == 0:
        assert out.loc[out["provocation"] == "no_privilege", "provoked"].all()
    section = registry.get("e5_placement").section.build(ds, cfg, None)
    assert section.verdicts[0].verdict == judge.NOT_TESTABLE and section.sdk_blocks


def test_5_0_smoke_cells_are_read_from_5_0s_own_words(env5, fingerprint, sweep):
    """The 5.0 smoke plan in the SDK's root: each outcome comes from 5.0's stage, diagnostics
    and placement records; a rejection carries 5.0's diagnostic token."""
    fp = env5.fingerprint(fingerprint)
    cfg = params.stage_config("e5_placement", "smoke")
    configs = {"cpus": params.stage_config("cpus", "smoke")}
    cells = plan.plan(cfg, fp, configs)
    assert cells and all(c.module.endswith(".app5") for c in cells)
    out = paths.root() / "data" / "raw" / ".test-sdk5" / "e5"
    try:
        sweep(cells, out, cfg["order_seed"], placement.resolve(configs["cpus"], fp), env5, fp)
        ds = analysis.load(out, cfg)
        table = ds.tables["outcomes"]
        assert len(table) == len(cells) and all(words(o) for o in table["outcome"])
        assert (table["sdk_api"] == 5).all() and table["promise"].ne("").all()
        for cell in cells:
            side = json.loads((out / cell.cell_id / "cell.json").read_text())
            s = side["summary"]
            # Every 5.0 cell keeps its placement records, requested beside accepted.
            assert s["plan_records"] and all("requested" in r for r in s["plan_records"])
            if s["stage"] == "rejected at compile":
                assert s["compile_diagnostics"] and all(
                    r["accepted"] is None for r in s["plan_records"] if r.get("disposition"))
        h = analysis.headline(ds)
        assert h.verdict["verdict"] in (judge.HOLDS, judge.FAILS)
    finally:
        shutil.rmtree(out, ignore_errors=True)
