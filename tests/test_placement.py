"""Where the experiments put their threads, from the host's state
(:mod:`rtstudy.machine.placement`).

Pure planning on fingerprints of four hosts: untuned with 2 CPUs, shielded at
run time, isolated at boot (``isolcpus=2-7`` on 8 CPUs), and a user's override
in params.yaml. No host is changed; the shield itself is tested in test_shield.py.
"""
from __future__ import annotations

import copy

import pytest

from rtstudy import params
from rtstudy.experiments.e1_async_buffer import plan as e1_plan
from rtstudy.experiments.e2_rt_threads.measuring import plan as e2_plan
from rtstudy.experiments.e4_host import plan as e4_plan
from rtstudy.machine import placement
from rtstudy.policies import RT_POLICIES

SHIELD = {"cpus": [1], "housekeeping": [0], "irq_default": [0], "irqs_on_shield": []}
FP = {"host_id": "vm-shielded", "cpu": {"count": 2, "online": [0, 1]},
      "isolation": {"isolated": [], "nohz_full": [], "rcu_nocbs": [], "shield": SHIELD},
      "sched": {"rt_runtime_us": -1, "rt_period_us": 1_000_000},
      "realtime": {"SCHED_FIFO": "ok", "SCHED_RR": "ok", "SCHED_DEADLINE": "ok",
                   "SCHED_DEADLINE pinned": "ok"}}
UNTUNED = {**copy.deepcopy(FP), "host_id": "vm-untuned",
           "isolation": {"isolated": [], "nohz_full": [], "rcu_nocbs": [], "shield": None},
           "sched": {"rt_runtime_us": 950000, "rt_period_us": 1_000_000},
           "realtime": {**FP["realtime"], "SCHED_DEADLINE pinned": "refused: EPERM"}}
# NVIDIA's recipe at boot: isolcpus=managed_irq,domain,2-7 nohz_full=2-7 rcu_nocbs=2-7.
BOOT = {**copy.deepcopy(FP), "host_id": "igx-isolated", "cpu": {"count": 8, "online": list(range(8))},
        "isolation": {"isolated": [2, 3, 4, 5, 6, 7], "nohz_full": [2, 3, 4, 5, 6, 7],
                      "rcu_nocbs": [2, 3, 4, 5, 6, 7], "shield": None}}


def configs() -> dict:
    return params.read("default")


def test_e1_pins_every_deadline_thread_with_at_most_095_cpu_of_bandwidth_per_cpu():
    cfg = configs()["e1_async_buffer"]
    cells = e1_plan.plan(cfg, FP, configs())
    assert cells and all(c.config["pinned"] for c in cells)
    for cell in cells:
        per_cpu: dict[int, float] = {}
        for r in cell.realtime:
            assert len(r.cpus) == 1, "each SCHED_DEADLINE thread pinned to one CPU"
            per_cpu[r.cpus[0]] = per_cpu.get(r.cpus[0], 0) + r.runtime_ns / r.period_ns
        assert max(per_cpu.values()) <= e1_plan.MAX_CPU_BANDWIDTH + 1e-9, (cell.label, per_cpu)
        assert 1 in per_cpu, "the shielded CPU is used first"
    # The same placement at every point of the sweep: the slope compares like with like.
    assert len({tuple(r.cpus for r in c.realtime) for c in cells}) == 1


def test_e1_falls_back_to_unpinned_when_the_threads_do_not_fit():
    cfg = dict(configs()["e1_async_buffer"], tx1_runtime_ms=19, tx2_runtime_ms=19, rx_runtime_ms=9)
    assert e1_plan.isolated_placement(cfg, placement.resolve(None, FP)) is None
    assert all(not r.cpus for c in e1_plan.plan(cfg, FP, configs()) for r in c.realtime)


def test_e1_on_a_shield_with_throttling_kept_is_refused_before_measuring_with_the_fix():
    # The shield's CPU is a root domain of its own: with throttling on, the kernel refused E1's
    # reservations there at lane start (a tuned study with --rt-throttling keep, 2026-11-29).
    kept = {**copy.deepcopy(FP), "sched": {"rt_runtime_us": 950000, "rt_period_us": 1_000_000}}
    cfg = configs()["e1_async_buffer"]
    problems = e1_plan.host_problems(cfg, kept)
    assert len(problems) == 1 and "shielded with real-time throttling on" in problems[0]
    assert "1.25 CPUs" in problems[0] and "without --rt-throttling keep" in problems[0]
    assert e1_plan.host_problems(cfg, FP) == [] and e1_plan.host_problems(cfg, UNTUNED) == []


def test_e2_pins_its_targets_and_floor_to_the_shield_and_the_seeds_as_they_do():
    cfg = configs()["e2_rt_threads"]
    for cell in e2_plan.plan(cfg, FP, configs()):
        k = cell.config
        if k["topology"] in ("dedicated", "floor", "python_thread"):
            # Every policy on its own thread gets the same CPU, normal_dedicated included (and
            # the ladder's plain Python thread).
            expected = (1,) if k["policy"] != "normal" else ()
        elif k["topology"].startswith("seed"):
            expected = (0,) if k["policy"] in RT_POLICIES else ()  # the seeds' recipe
        else:
            expected = ()  # the shared pool, as the seed's normal baseline
        assert tuple(k["target_cpus"]) == expected and k["pinned"] == bool(expected), cell.label
        for r in cell.realtime:
            # A dispatcher is pinned only as the fix that pins it to a housekeeping CPU.
            dispatcher = (0,) if k["dispatcher"] == "fifo_pinned" else ()
            assert r.cpus == (dispatcher if r.operator == e2_plan.DISPATCHER else expected), \
                cell.label


def test_e4_measures_both_cpus_and_the_floor_on_the_shield():
    cfg = configs()["e4_host"]
    cells = e4_plan.plan(cfg, FP, configs())
    jitter = {c.config["cpu"] for c in cells if c.config["kind"] == "jitter"}
    assert jitter == {0, 1}
    assert {c.config["cpu"] for c in cells if c.config["kind"] == "cyclictest"} == {1}
    # On a 4-CPU host shielding CPU 2, the floor follows the shield, not the last CPU.
    fp = copy.deepcopy(FP)
    fp["cpu"] = {"count": 4, "online": [0, 1, 2, 3]}
    fp["isolation"]["shield"] = dict(SHIELD, cpus=[2], housekeeping=[0, 1, 3])
    cells = e4_plan.plan(cfg, fp, configs())
    assert {c.config["cpu"] for c in cells if c.config["kind"] == "cyclictest"} == {2}


@pytest.mark.parametrize("fp, cfg, realtime, housekeeping, source", [
    (UNTUNED, None, (1,), (0, 1), "untuned"),
    (FP, None, (1,), (0,), "shield"),
    (BOOT, None, (2, 3, 4, 5, 6, 7), (0, 1), "isolated"),
    (BOOT, {"realtime": "7", "housekeeping": "0-3"}, (7,), (0, 1, 2, 3), "params"),
    (UNTUNED, {"realtime": "1", "housekeeping": "0"}, (1,), (0,), "params"),
])
def test_auto_follows_the_host_and_params_override_it(fp, cfg, realtime, housekeeping, source):
    where = placement.resolve(cfg, fp)
    assert (where.realtime, where.housekeeping, where.source) == (realtime, housekeeping, source)
    assert where.confines == (housekeeping != tuple(fp["cpu"]["online"]))
    assert "CPU" in where.describe()


def test_a_nohz_full_host_without_isolcpus_uses_its_nohz_full_cpus():
    fp = copy.deepcopy(BOOT)
    fp["isolation"]["isolated"] = []
    where = placement.resolve(None, fp)
    assert where.realtime == (2, 3, 4, 5, 6, 7) and where.source == "nohz_full"


@pytest.mark.parametrize("cfg, message", [
    ({"realtime": "9"}, "CPU 9, which is not online"),
    ({"realtime": "2-1"}, "backward range"),
    ({"realtime": "0-7"}, "leave no housekeeping CPU"),
    ({"housekeeping": "x"}, "malformed"),
])
def test_a_wrong_cpus_group_is_named_before_measuring(cfg, message):
    with pytest.raises(ValueError, match=message):
        placement.resolve(cfg, BOOT)
    assert message in placement.problems(cfg, BOOT)[0]


def test_params_check_cpus_values():
    assert placement.check_value("auto") is None and placement.check_value("2-3,6") is None
    assert placement.check_value(3) is None
    assert "CPU list" in placement.check_value("two")


@pytest.mark.parametrize("cfg, shared", [
    ({"realtime": "0-1", "housekeeping": "0-1"}, "share CPU 0-1"),
    ({"realtime": "1", "housekeeping": "0,1"}, "share CPU 1"),
    ({"realtime": "1", "housekeeping": "0"}, None),
    ({"realtime": "1", "housekeeping": "auto"}, None),  # untuned by design: not a mistake
    ({"realtime": "auto", "housekeeping": "0-1"}, None),
    (None, None),
])
def test_real_time_and_housekeeping_lists_that_overlap_are_warned_about(cfg, shared):
    warning = placement.overlap(cfg)
    if shared is None:
        assert warning is None
    else:
        assert shared in warning and "contention on its real-time CPU" in warning


def test_params_check_warns_of_overlapping_cpus_and_still_passes(tmp_path, monkeypatch, capsys):
    import shutil

    import yaml

    from rtstudy import cli, params, paths

    for name in ("params.yaml", "dvc.yaml"):
        shutil.copy2(paths.root() / name, tmp_path / name)
    monkeypatch.setenv("RTSTUDY_ROOT", str(tmp_path))
    data = params.load(tmp_path / "params.yaml")
    data["cpus"] = {"realtime": "0-1", "housekeeping": "0-1"}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(data))
    assert cli.main(["params", "check", "--no-host"]) == 0
    err = capsys.readouterr().err
    assert "warning: cpus.realtime (0-1) and cpus.housekeeping (0-1) share CPU 0-1" in err


def test_every_experiment_on_a_boot_isolated_host_uses_the_isolated_cpus():
    """isolcpus=2-7 on 8 CPUs: real-time threads on 2-7, loads counted and run on 0-1."""
    c = configs()
    e1 = e1_plan.plan(c["e1_async_buffer"], BOOT, c)
    pins = {r.cpus[0] for cell in e1 for r in cell.realtime}
    assert pins and pins <= {2, 3, 4, 5, 6, 7}, pins
    e2 = e2_plan.plan(c["e2_rt_threads"], BOOT, c)
    for cell in e2:
        k = cell.config
        if k["topology"] in ("dedicated", "floor") and k["policy"] != "normal":
            assert k["target_cpus"] == [7], cell.label
        # Loads per CPU count the 2 housekeeping CPUs, not all 8.
        assert k["loads"] == round(k["load_factor"] * 2), cell.label
    e4 = e4_plan.plan(c["e4_host"], BOOT, c)
    assert {x.config["cpu"] for x in e4 if x.config["kind"] == "cyclictest"} == {7}
    assert {x.config["stress_workers"] for x in e4} == {round(c["e4_host"]["stress_load_factor"] * 2)}


def test_an_override_moves_every_experiment():
    c = dict(configs(), cpus={"realtime": "5", "housekeeping": "0-1"})
    e2 = e2_plan.plan(c["e2_rt_threads"], BOOT, c)
    assert {tuple(x.config["target_cpus"]) for x in e2 if x.config["topology"] == "dedicated"
            and x.config["policy"] != "normal"} == {(5,)}
    e4 = e4_plan.plan(c["e4_host"], BOOT, c)
    assert {x.config["cpu"] for x in e4 if x.config["kind"] == "cyclictest"} == {5}


def test_on_an_untuned_host_nothing_moves():
    """The untuned plan is the one the reference data was measured with: loads share every CPU."""
    c = configs()
    e2 = e2_plan.plan(c["e2_rt_threads"], UNTUNED, c)
    assert all(x.config["loads"] == round(x.config["load_factor"] * 2) for x in e2)
    assert {tuple(x.config["target_cpus"]) for x in e2 if x.config["topology"] == "dedicated"
            and x.config["policy"] not in ("normal", "SCHED_DEADLINE")} == {(1,)}
