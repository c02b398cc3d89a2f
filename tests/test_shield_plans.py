"""What the experiments plan on a shielded host (a fingerprint with ``isolation.shield``).

Pure planning: no host is changed. The shield itself is tested in test_shield.py.
"""
from __future__ import annotations

import copy

from rtstudy import params
from rtstudy.experiments.e1_async_buffer import plan as e1_plan
from rtstudy.experiments.e2_rt_threads import plan as e2_plan
from rtstudy.experiments.e4_host import plan as e4_plan

SHIELD = {"cpus": [1], "housekeeping": [0], "irq_default": [0], "irqs_on_shield": []}
FP = {"host_id": "vm-shielded", "cpu": {"count": 2, "online": [0, 1]},
      "isolation": {"isolated": [], "nohz_full": [], "rcu_nocbs": [], "shield": SHIELD},
      "sched": {"rt_runtime_us": -1, "rt_period_us": 1_000_000},
      "realtime": {"SCHED_FIFO": "ok", "SCHED_RR": "ok", "SCHED_DEADLINE": "ok",
                   "SCHED_DEADLINE pinned": "ok"}}


def configs() -> dict:
    return params.configs("default")


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
    assert e1_plan.shield_placement(cfg, SHIELD) is None
    assert all(not r.cpus for c in e1_plan.plan(cfg, FP, configs()) for r in c.realtime)


def test_e2_pins_its_targets_and_floor_to_the_shield_and_the_seeds_as_they_do():
    cfg = configs()["e2_rt_threads"]
    for cell in e2_plan.plan(cfg, FP, configs()):
        k = cell.config
        if k["topology"] in ("dedicated", "floor"):
            # Every policy on its own thread gets the same CPU, normal_dedicated included.
            expected = (1,) if k["policy"] != "normal" else ()
        elif k["topology"].startswith("seed"):
            expected = (0,) if k["policy"] in e2_plan.RT_POLICIES else ()  # the seeds' recipe
        else:
            expected = ()  # the shared pool, as the seed's normal baseline
        assert tuple(k["target_cpus"]) == expected and k["pinned"] == bool(expected), cell.label
        for r in cell.realtime:
            assert r.cpus == (() if r.operator == e2_plan.DISPATCHER else expected), cell.label


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
