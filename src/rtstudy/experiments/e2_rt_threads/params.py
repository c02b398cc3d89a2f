"""E2's parameter group (``params.yaml: e2_rt_threads``): each key's rule and the cross-checks."""
from __future__ import annotations

from rtstudy.experiments.e2_rt_threads.conditions import FIX_LIST, PLAIN, WAKE_MODES
from rtstudy.inference import criteria
from rtstudy.policies import PRIORITY_POLICIES, RT_POLICIES, SCHED_DEADLINE
from rtstudy.rules import SWEEP_SCHEMA, Rule, boolean, choice, integer, list_of, number

POLICY_NAMES = ("normal", "normal_dedicated", *RT_POLICIES)
# Where the competing load runs: Holoscan operators in the app (the seed's way), the same
# operators pinned off the target's CPU, stress-ng processes beside it, plain threads in the
# app's process that are not operators, or the same threads in a process of their own.
PLACEMENTS = ("operators", "operators_pinned", "process", "threads", "outside")
# The EventBasedScheduler's dispatcher thread: SCHED_OTHER, or SCHED_FIFO (pinned to a
# housekeeping CPU: fifo_pinned, or every fifo one with dispatcher_pin).
DISPATCHERS = ("other", "fifo", "fifo_pinned")
# The fixes for late frames measured at the headline point, each one factor away from it
# (plan.py): loads pinned off the target's CPU, a FIFO dispatcher pinned beside the worker,
# a shorter GIL switch interval, the target in a distributed fragment of its own (the loads in
# another process: no shared GIL; load_placement "fragment", a fix only, not in PLACEMENTS).
FIXES = tuple(f.name for f in FIX_LIST if f.rotates)
SEED_TOPOLOGIES = ("seed_python", "seed_cpp")

SCHEMA: dict[str, Rule] = {
    "policies": Rule(list_of(choice(*POLICY_NAMES))),
    "fps": Rule(integer(1, 1000)),
    "duration_s": Rule(number(0.5, 3600)),
    "warmup_frames": Rule(integer(0)),
    "load_factors": Rule(list_of(number(0, 16))),
    "load_work_ms": Rule(number(0, 1000, lo_open=True)),
    "load_work_models": Rule(list_of(choice("native", "python"))),
    "target_work_iterations": Rule(integer(0, 100_000_000)),
    # The real-time worker's FIFO/RR priority, and the dispatcher's when it is SCHED_FIFO
    # (NVIDIA's recipe: dispatcher 99 above workers at 80).
    "priority": Rule(integer(1, 99)),
    "dispatchers": Rule(list_of(choice(*DISPATCHERS))),
    "dispatcher_priority": Rule(integer(1, 99)),
    "dispatcher_pin": Rule(boolean()),        # pin the dispatcher to a housekeeping CPU
    "load_placements": Rule(list_of(choice(*PLACEMENTS))),
    # focused: the whole policy grid with operator loads, and every other factor varied one at
    # a time at the headline point (the highest load factor, native loads) for the
    # contrast policies; full: every factor crossed with every other (the seed profile).
    "design": Rule(choice("focused", "full")),
    "contrast_policies": Rule(list_of(choice(*POLICY_NAMES))),
    "seed_topologies": Rule(list_of(choice(*SEED_TOPOLOGIES), min_len=0)),
    "seed_policy": Rule(choice(*RT_POLICIES)),
    "seed_loads": Rule(integer(1, 64)),
    "seed_load_work_model": Rule(choice("native", "python")),
    # Holoscan 5.0 only (plan5): the wake modes tried for the contrast policies at the headline.
    "wake_modes": Rule(list_of(choice(*WAKE_MODES))),
    # The jitter ladder (docs/methods.md): one rung one factor, from cyclictest to the seeds'
    # layout, all with ladder_policy at the same period, priority and CPU.
    "ladder": Rule(boolean()),
    "ladder_policy": Rule(choice(*PRIORITY_POLICIES)),
    "fixes": Rule(list_of(choice(*FIXES), min_len=0)),
    # The fixes rotate over sessions: each session measures the next fixes_per_session (0: all).
    "fixes_per_session": Rule(integer(0, len(FIXES))),
    # Runs of the fixes and their baseline: sized for a late-frame rate ratio (`plan power`).
    "fix_duration_s": Rule(number(0.5, 3600)),
    "fix_repetitions": Rule(integer(1, 1000)),
    "switch_interval_ms": Rule(number(0.001, 100)),   # the switch_interval fix's (CPython: 5)
    # Runs of the headline point and the ladder: long enough for late-frame rates.
    "headline_duration_s": Rule(number(0.5, 3600)),
    "floor": Rule(boolean()),                 # cyclictest like with like, in the same sweep
    "trace_seconds": Rule(number(0, 30)),     # 0: no scheduler trace
    "trace_repetitions": Rule(integer(1, 100)),  # traced runs of each traced condition
    "deadline_runtime_fraction": Rule(number(0, 1, lo_open=True)),
    "pin": Rule(choice("auto", "always", "never")),
    # Runs of every condition at the headline point (the highest load factor, native loads).
    "headline_repetitions": Rule(integer(1, 1000)),
    **SWEEP_SCHEMA,
}

# Keys the frozen protocol fixes: resolved into the group from their one source, the criterion,
# and refused in params.yaml. A frame is late when its lateness against its release exceeds
# the threshold (ms); a whole number as params.yaml wrote it (1, not 1.0), because protocol
# v1's frozen text quotes the resolved sizes.
_LATE_MS = criteria.value("e2_late_threshold_ms")
FROM_PROTOCOL = {"late_threshold_ms": int(_LATE_MS) if _LATE_MS == int(_LATE_MS) else _LATE_MS}

# Other groups whose values the plan reads (none).
USES: tuple[str, ...] = ()


def cross_checks(cfg: dict) -> list[str]:
    """Rules between keys of one resolved group (each key already valid on its own)."""
    errors = []
    if SCHED_DEADLINE in cfg["policies"] and cfg["deadline_runtime_fraction"] >= 1:
        errors.append(f"deadline_runtime_fraction = {cfg['deadline_runtime_fraction']} makes the "
                      "SCHED_DEADLINE runtime >= the period; it must be below 1")
    if "normal_dedicated" not in cfg["policies"]:
        errors.append("policies must include 'normal_dedicated', the baseline every real-time "
                      "policy is compared with (the same thread and pinning, only the policy "
                      "differs)")
    stray = [p for p in cfg["contrast_policies"] if p not in cfg["policies"]]
    if stray:
        errors.append(f"contrast_policies {stray} are not in policies {cfg['policies']}; "
                      "add them there or remove them here")
    if "fifo" in cfg["dispatchers"] and cfg["dispatcher_priority"] <= cfg["priority"]:
        errors.append(f"dispatcher_priority = {cfg['dispatcher_priority']} must be above the "
                      f"worker's priority = {cfg['priority']}: NVIDIA's recipe has the dispatcher "
                      "outrank the workers it feeds")
    if PLAIN["load_placement"] not in cfg["load_placements"]:
        errors.append(f"load_placements must include {PLAIN['load_placement']!r}, the seed's "
                      "placement the others are compared with")
    if (cfg["ladder"] or cfg["fixes"]) and cfg["ladder_policy"] not in cfg["policies"]:
        errors.append(f"ladder_policy = {cfg['ladder_policy']} is not in policies "
                      f"{cfg['policies']}: the ladder and the fixes are measured with it")
    if PLAIN["dispatcher"] not in cfg["dispatchers"]:
        errors.append(f"dispatchers must include {PLAIN['dispatcher']!r} (Holoscan's default "
                      "dispatcher)")
    if cfg["warmup_frames"] + 2 > cfg["duration_s"] * cfg["fps"] + cfg["warmup_frames"] - 1:
        errors.append(f"duration_s = {cfg['duration_s']} at fps = {cfg['fps']} leaves fewer than "
                      "3 frames")
    return errors
