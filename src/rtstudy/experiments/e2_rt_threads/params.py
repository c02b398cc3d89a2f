"""E2's parameter group (``params.yaml: e2_rt_threads``): each key's rule and the cross-checks."""
from __future__ import annotations

from rtstudy.rules import Rule, boolean, choice, integer, list_of, number

SCHEMA: dict[str, Rule] = {
    "policies": Rule(list_of(choice("normal", "normal_dedicated", "SCHED_FIFO", "SCHED_RR",
                                    "SCHED_DEADLINE"))),
    "fps": Rule(integer(1, 1000)),
    "duration_s": Rule(number(0.5, 3600)),
    "warmup_frames": Rule(integer(0)),
    "load_factors": Rule(list_of(number(0, 16))),
    "load_work_ms": Rule(number(0, 1000, lo_open=True)),
    "load_work_models": Rule(list_of(choice("native", "python"))),
    "target_work_iterations": Rule(integer(0, 100_000_000)),
    "priority": Rule(integer(1, 99)),
    "deadline_runtime_fraction": Rule(number(0, 1, lo_open=True)),
    "late_threshold_ms": Rule(number(0)),
    # "No contention, no difference" means the difference in jitter lies within ±this (ms).
    "null_margin_ms": Rule(number(0, 100, lo_open=True)),
    "pin": Rule(choice("auto", "always", "never")),
    "repetitions": Rule(integer(1, 1000)),
    # Runs of H2's own conditions (the highest load factor, native loads): more than the rest.
    "headline_repetitions": Rule(integer(1, 1000)),
    "timeout_margin_s": Rule(number(1, 3600)),
    "order_seed": Rule(integer(0)),
    "drift_check": Rule(boolean()),
}

# Other groups whose values the plan reads (none).
USES: tuple[str, ...] = ()


def cross_checks(cfg: dict) -> list[str]:
    """Rules between keys of one resolved group (each key already valid on its own)."""
    errors = []
    if "SCHED_DEADLINE" in cfg["policies"] and cfg["deadline_runtime_fraction"] >= 1:
        errors.append(f"deadline_runtime_fraction = {cfg['deadline_runtime_fraction']} makes the "
                      "SCHED_DEADLINE runtime >= the period; it must be below 1")
    if "normal" not in cfg["policies"]:
        errors.append("policies must include 'normal', the baseline every policy is compared with")
    if cfg["warmup_frames"] + 2 > cfg["duration_s"] * cfg["fps"] + cfg["warmup_frames"] - 1:
        errors.append(f"duration_s = {cfg['duration_s']} at fps = {cfg['fps']} leaves fewer than "
                      "3 frames")
    return errors
