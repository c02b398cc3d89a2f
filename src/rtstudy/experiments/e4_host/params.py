"""E4's parameter group (``params.yaml: e4_host``): each key's rule."""
from __future__ import annotations

from rtstudy.rules import SWEEP_SCHEMA, Rule, choice, integer, list_of, no_cross_checks, number

SCHEMA: dict[str, Rule] = {
    "jitter_seconds": Rule(number(0.1, 600)),
    "jitter_cpus": Rule(lambda v: None if v == "all" else list_of(integer(0, 4095))(v)),
    "jitter_fifo_priority": Rule(integer(0, 99)),
    "loads": Rule(list_of(choice("idle", "stress"))),
    "stress_load_factor": Rule(number(0.5, 16)),
    "floor_tools": Rule(list_of(choice("cyclictest", "cyclicdeadline"), min_len=0)),
    "floor_seconds": Rule(integer(1, 3600)),
    "histogram_us": Rule(integer(10, 1_000_000)),
    **SWEEP_SCHEMA,
}

# The floor runs at E2's period and priority: the plan reads E2's group too.
USES: tuple[str, ...] = ("e2_rt_threads",)

cross_checks = no_cross_checks
