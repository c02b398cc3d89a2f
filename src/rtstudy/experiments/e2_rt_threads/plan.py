"""E2's sweep plan: policies × load factors × load work models, and where the target runs.

The measuring side of E2 (a dependency of its DVC stage, with ``app.py``).
"""
from __future__ import annotations

from pathlib import Path

from rtstudy.harness import Cell, with_drift
from rtstudy.host import shield_of
from rtstudy.realtime import RealtimeRequest

EXPERIMENT = "e2_rt_threads"
APP = "e2_rt_threads"  # the name cells record (part of every cell id): never change it
MODULE = "rtstudy.experiments.e2_rt_threads.app"
RT_POLICIES = ("SCHED_FIFO", "SCHED_RR", "SCHED_DEADLINE")


def period_ns(fps: int) -> int:
    """The nominal frame period in ns at ``fps`` frames per second."""
    return round(1e9 / fps)


def after_sweep(directory: Path) -> None:
    """Nothing to record beside E2's cells."""


def target_cpus(cfg: dict, fp: dict, policy: str) -> tuple[int, ...]:
    """The CPU to pin the real-time target to, or () where not allowed: the last shielded CPU
    on a shielded host (its loads stay on the housekeeping CPUs), else the last CPU."""
    if cfg["pin"] == "never" or policy not in RT_POLICIES:
        return ()
    if policy == "SCHED_DEADLINE" and fp["realtime"].get("SCHED_DEADLINE pinned") != "ok":
        return ()
    shield = shield_of(fp)
    return (shield["cpus"][-1],) if shield else (fp["cpu"]["online"][-1],)


def host_problems(cfg: dict, fp: dict) -> list[str]:
    """What this host cannot run of ``cfg``; empty when everything fits."""
    problems = []
    if cfg["pin"] == "always" and "SCHED_DEADLINE" in cfg["policies"] and \
            fp["realtime"].get("SCHED_DEADLINE pinned") != "ok":
        problems.append("e2_rt_threads.pin = 'always', but this host refuses SCHED_DEADLINE "
                        "threads pinned to one CPU (see `rtstudy host check`); use pin: auto")
    return problems


def realtime(cfg: dict) -> tuple[str, ...]:
    """The policies the preflight must find allowed."""
    return tuple(p for p in cfg["policies"] if p in RT_POLICIES)


def plan(cfg: dict, fp: dict, configs: dict) -> list[Cell]:
    """Policy × load factor × load work model × repetition.

    Parameters
    ----------
    cfg : dict
        E2's resolved parameters.
    fp : dict
        The host fingerprint (CPUs, which policies and pinning it allows).
    configs : dict
        Every group's resolved parameters (E2 reads none of the others).
    """
    p_ns = period_ns(cfg["fps"])
    frames = cfg["warmup_frames"] + int(cfg["duration_s"] * cfg["fps"])
    cells, reference = [], None
    for policy in cfg["policies"]:
        cpus = target_cpus(cfg, fp, policy)
        requests = ()
        if policy in ("SCHED_FIFO", "SCHED_RR"):
            requests = (RealtimeRequest("target", policy, priority=cfg["priority"], cpus=cpus),)
        elif policy == "SCHED_DEADLINE":
            runtime = int(p_ns * cfg["deadline_runtime_fraction"])
            requests = (RealtimeRequest("target", policy, runtime_ns=runtime, deadline_ns=p_ns,
                                        period_ns=p_ns, cpus=cpus),)
        for factor in cfg["load_factors"]:
            loads = int(round(factor * fp["cpu"]["count"]))
            # With no loads the load work model is moot: measure it once.
            models = cfg["load_work_models"] if loads else cfg["load_work_models"][:1]
            for model in models:
                config = {
                    "policy": policy, "load_factor": factor, "loads": loads,
                    "load_work_model": model, "load_work_ms": cfg["load_work_ms"],
                    "fps": cfg["fps"], "period_ns": p_ns, "frames": frames,
                    "target_work_iterations": cfg["target_work_iterations"],
                    "pinned": bool(cpus),
                    # Three times the nominal duration, then Holoscan stops it.
                    "max_duration_ms": int(3000 * frames / cfg["fps"]) + 10_000,
                }
                label = f"{policy}-lf{factor:g}-{model}"
                timeout = config["max_duration_ms"] / 1000 + cfg["timeout_margin_s"]
                headline = factor == max(cfg["load_factors"]) and model == "native"
                reps = max(cfg["repetitions"], cfg["headline_repetitions"]) if headline \
                    else cfg["repetitions"]
                for rep in range(reps):
                    cells.append(Cell(EXPERIMENT, APP, label, config, rep, timeout,
                                      requests, module=MODULE))
                if headline and policy in RT_POLICIES and reference is None:
                    reference = label
    if not cfg["drift_check"] or not cells:
        return cells
    # The drift check repeats H2's real-time target at the sweep's start and end (the plan's
    # first condition when it has none).
    return with_drift(cells, reference or cells[0].label)
