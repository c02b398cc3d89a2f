"""E1's sweep plan: which cells run, with which SCHED_DEADLINE reservations, on this host.

The measuring side of E1 (a dependency of its DVC stage, with ``app.py``).
"""
from __future__ import annotations

from pathlib import Path

from rtstudy.experiments.e1_async_buffer import plan5
from rtstudy.machine import placement
from rtstudy.measure.harness import Cell, with_drift_check
from rtstudy.measure.realtime import RealtimeRequest
from rtstudy.policies import SCHED_DEADLINE
from rtstudy.sdks import sdk

EXPERIMENT = "e1_async_buffer"
APP = "e1_async_buffer"  # the name cells record (part of every cell id): never change it
MODULE = "rtstudy.experiments.e1_async_buffer.app"
SDK_APIS = (4, 5)  # Holoscan 4.x (app) and 5.x (app5, planned by plan5)
MS = 1_000_000
OPERATORS = ("tx1", "tx2", "rx")
# Which producer is fixed in each scenario, and the port where its messages arrive.
FIXED = {"S1": ("tx1", "in1"), "S2": ("tx2", "in2")}
VARIED = {"S1": "tx2", "S2": "tx1"}


def realtime(cfg: dict) -> tuple[str, ...]:
    """The policies the preflight must find allowed."""
    return (SCHED_DEADLINE,) if "deadline" in cfg["policies"] else ()


def after_sweep(directory: Path) -> None:
    """Nothing to record beside E1's cells."""


def periods(cfg: dict, scenario: str, varied_ms: int) -> dict[str, int]:
    """Periods in ms of tx1, tx2 and rx for one point of a scenario."""
    fixed_op = FIXED[scenario][0]
    return {fixed_op: cfg["fixed_period_ms"], VARIED[scenario]: varied_ms, "rx": cfg["rx_period_ms"]}


def bandwidth(cfg: dict, scenario: str, varied_ms: int) -> float:
    """Total SCHED_DEADLINE bandwidth (CPUs) that one point requests: sum of runtime / period."""
    p = periods(cfg, scenario, varied_ms)
    return sum(cfg[f"{op}_runtime_ms"] / p[op] for op in OPERATORS)


def host_limit(fp: dict) -> float:
    """CPUs' worth of SCHED_DEADLINE bandwidth the kernel admits on this host."""
    rt = fp["sched"]["rt_runtime_us"]
    cpus = fp["cpu"]["count"]
    if rt < 0:
        return float(cpus)
    return rt / fp["sched"]["rt_period_us"] * cpus


# The most SCHED_DEADLINE bandwidth placed on one CPU of an isolated host. With
# sched_rt_runtime_us = -1 (which pinning needs) the kernel admits any amount, so the plan keeps
# the same 5 % the kernel's default throttling would.
MAX_CPU_BANDWIDTH = 0.95


def isolated_placement(cfg: dict, where: placement.Placement) -> dict[str, tuple[int, ...]] | None:
    """One CPU per operator on an isolated or shielded host: the real-time CPUs first, then the
    housekeeping ones, no CPU above :data:`MAX_CPU_BANDWIDTH` at the sweep's shortest periods (so
    every point of the sweep runs with the same placement). None when the operators do not fit."""
    points = [periods(cfg, s, v) for s in cfg["scenarios"] for v in cfg["periods_ms"]]
    need = {op: max(cfg[f"{op}_runtime_ms"] / p[op] for p in points) for op in OPERATORS}
    order = [*where.realtime, *(c for c in where.housekeeping if c not in where.realtime)]
    used = {cpu: 0.0 for cpu in order}
    pins = {}
    for op in sorted(OPERATORS, key=need.get, reverse=True):
        cpu = next((c for c, u in used.items() if u + need[op] <= MAX_CPU_BANDWIDTH + 1e-9), None)
        if cpu is None:
            return None
        used[cpu] += need[op]
        pins[op] = (cpu,)
    return pins


def pin_cpus(cfg: dict, fp: dict, where: placement.Placement) -> dict[str, tuple[int, ...]]:
    """Where each operator's SCHED_DEADLINE thread is pinned; empty tuples: unpinned.

    On an isolated or shielded host, or with CPUs named in params.yaml
    (:mod:`rtstudy.machine.placement`), :func:`isolated_placement`; elsewhere distinct
    CPUs per operator when pinning is wanted and possible.
    """
    allowed = fp["realtime"].get("SCHED_DEADLINE pinned") == "ok"
    cpus = fp["cpu"]["online"]
    if allowed and where.source != "untuned" and cfg["pin"] != "never":
        pins = isolated_placement(cfg, where)
        if pins:
            return pins
    if cfg["pin"] == "never" or (cfg["pin"] == "auto" and (not allowed or len(cpus) < 3)):
        return {op: () for op in OPERATORS}
    # Keep CPU 0 for the OS when there is room: the last three CPUs.
    chosen = cpus[-3:]
    return {op: (cpu,) for op, cpu in zip(OPERATORS, chosen)}


def host_problems(cfg: dict, fp: dict) -> list[str]:
    """What this host cannot run of ``cfg``; empty when everything fits."""
    problems = []
    if "deadline" not in cfg["policies"]:
        return problems
    shielded = (fp.get("isolation") or {}).get("shield")
    if shielded and fp["sched"]["rt_runtime_us"] >= 0:
        need = max(bandwidth(cfg, s, v) for s in cfg["scenarios"] for v in cfg["periods_ms"])
        # Measured on a 2-CPU VM (2026-11-29, Holoscan 5.0, a cpuset shield of CPU 1 with
        # throttling kept): 20 of 26 cells were refused at lane start, every point but the one
        # with 0.47 CPU on the shield (0.67 was refused too, so not E1's 0.95 cap per CPU alone).
        # A shield's CPUs are a root domain of their own, which admits DEADLINE bandwidth by
        # itself while throttling is on; the probe in the fingerprint runs on the housekeeping
        # CPUs and passes. With it lifted the kernel admits any amount.
        problems.append(
            "e1_async_buffer: this host is shielded with real-time throttling on "
            f"(sched_rt_runtime_us {fp['sched']['rt_runtime_us']}): the shield's CPUs are a "
            "root domain of their own, whose SCHED_DEADLINE admission refused E1's reservations "
            f"({need:.2f} CPUs at the shortest periods); shield it with throttling lifted "
            "(`rtstudy host study` without --rt-throttling keep), or measure the other "
            "experiments only (`rtstudy host study --rt-throttling keep -- dvc repro "
            "e2_rt_threads`)")
        return problems
    limit = host_limit(fp)
    for scenario in cfg["scenarios"]:
        for varied in cfg["periods_ms"]:
            bw = bandwidth(cfg, scenario, varied)
            if bw > limit:
                p = periods(cfg, scenario, varied)
                problems.append(
                    f"e1_async_buffer: {scenario} at {VARIED[scenario]} = {varied} ms asks for "
                    f"{bw:.2f} CPUs of SCHED_DEADLINE bandwidth (tx1_runtime_ms/{p['tx1']} + "
                    f"tx2_runtime_ms/{p['tx2']} + rx_runtime_ms/{p['rx']}), but this host admits "
                    f"{limit:.2f} (sched_rt_runtime_us {fp['sched']['rt_runtime_us']} / "
                    f"sched_rt_period_us {fp['sched']['rt_period_us']} x {fp['cpu']['count']} CPUs); "
                    "lower the runtimes or lengthen the periods")
    if cfg["pin"] == "always":
        if fp["realtime"].get("SCHED_DEADLINE pinned") != "ok":
            problems.append("e1_async_buffer.pin = 'always', but this host refuses SCHED_DEADLINE "
                            "threads pinned to one CPU (see `rtstudy host check`); use pin: auto")
        elif len(fp["cpu"]["online"]) < 3:
            problems.append("e1_async_buffer.pin = 'always' needs 3 CPUs (one per operator); "
                            f"this host has {len(fp['cpu']['online'])}")
    return problems


def plan(cfg: dict, fp: dict, configs: dict) -> list[Cell]:
    """Scenario × buffer × varied period × policy × work model × repetition.

    Parameters
    ----------
    cfg : dict
        E1's resolved parameters.
    fp : dict
        The host fingerprint (CPUs, what SCHED_DEADLINE allows, its SDK: 5.0 via :mod:`.plan5`).
    configs : dict
        The resolved groups it reads: ``cpus`` (:mod:`rtstudy.machine.placement`; auto when absent).
    """
    cpus = pin_cpus(cfg, fp, placement.resolve(configs.get("cpus"), fp))
    cells = []
    for scenario in cfg["scenarios"]:
        for varied in cfg["periods_ms"]:
            p = periods(cfg, scenario, varied)
            for buffer in cfg["buffers"]:
                for policy in cfg["policies"]:
                    for model in cfg["work_models"]:
                        config = {
                            "scenario": scenario, "buffer": buffer, "policy": policy,
                            "work_model": model,
                            "tx1_period_ms": p["tx1"], "tx2_period_ms": p["tx2"],
                            "rx_period_ms": p["rx"],
                            "tx1_work_ms": cfg["tx1_work_ms"], "tx2_work_ms": cfg["tx2_work_ms"],
                            "rx_work_ms": cfg["rx_work_ms"], "messages": cfg["messages"],
                            "pinned": any(cpus.values()) if policy == "deadline" else False,
                        }
                        # The slower producer sets the run's length; 3x plus a margin.
                        expect_s = cfg["messages"] * max(p["tx1"], p["tx2"]) / 1000
                        config["max_duration_ms"] = int((3 * expect_s + 10) * 1000)
                        realtime = ()
                        if policy == "deadline":
                            realtime = tuple(
                                RealtimeRequest(op, SCHED_DEADLINE,
                                                runtime_ns=int(cfg[f"{op}_runtime_ms"] * MS),
                                                deadline_ns=p[op] * MS, period_ns=p[op] * MS,
                                                cpus=cpus[op])
                                for op in OPERATORS)
                        label = f"{scenario}-{buffer}-{policy}-{model}-{VARIED[scenario]}{varied}"
                        timeout = config["max_duration_ms"] / 1000 + cfg["timeout_margin_s"]
                        for rep in range(cfg["repetitions"]):
                            cells.append(Cell(EXPERIMENT, APP, label, config, rep, timeout, realtime,
                                              module=MODULE))
    if sdk.api_of(fp) == 5:
        return plan5.cells(cells, cfg)  # what of it Holoscan 5.0 can express
    return with_drift_check(cells, cfg)
