"""E3's parameter group (``params.yaml: e3_overhead``): each key's rule."""
from __future__ import annotations

from rtstudy.rules import Rule, boolean, choice, integer, list_of, no_cross_checks, number

SCHEMA: dict[str, Rule] = {
    "apps": Rule(list_of(choice("ops", "ping"))),
    "schedulers": Rule(list_of(choice("greedy", "event_based"))),
    "event_based_workers": Rule(list_of(integer(1, 64))),
    "stop_on_deadlock_timeout_ms": Rule(integer(0, 10_000)),
    "iterations": Rule(list_of(integer(2, 10_000_000))),
    "warmup_iterations": Rule(integer(0, 1_000_000)),
    "repetitions": Rule(integer(1, 1000)),
    "max_duration_ms": Rule(integer(1000, 3_600_000)),
    "timeout_margin_s": Rule(number(1, 3600)),
    "order_seed": Rule(integer(0)),
    "drift_check": Rule(boolean()),
}

# Other groups whose values the plan reads (none).
USES: tuple[str, ...] = ()

cross_checks = no_cross_checks
