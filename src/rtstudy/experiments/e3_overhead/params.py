"""E3's parameter group (``params.yaml: e3_overhead``): each key's rule."""
from __future__ import annotations

from rtstudy.rules import SWEEP_SCHEMA, Rule, choice, integer, list_of, no_cross_checks

SCHEMA: dict[str, Rule] = {
    "apps": Rule(list_of(choice("ops", "ping"))),
    "schedulers": Rule(list_of(choice("greedy", "event_based"))),
    "event_based_workers": Rule(list_of(integer(1, 64))),
    "stop_on_deadlock_timeout_ms": Rule(integer(0, 10_000)),
    "iterations": Rule(list_of(integer(2, 10_000_000))),
    "warmup_iterations": Rule(integer(0, 1_000_000)),
    "max_duration_ms": Rule(integer(1000, 3_600_000)),
    **SWEEP_SCHEMA,
}

# Other groups whose values the plan reads (none).
USES: tuple[str, ...] = ()

cross_checks = no_cross_checks
