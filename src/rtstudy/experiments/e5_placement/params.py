"""E5's parameter group (``params.yaml: e5_placement``): each key's rule."""
from __future__ import annotations

from rtstudy.experiments.e5_placement.provoke import PROVOCATIONS
from rtstudy.rules import SWEEP_SCHEMA, Rule, choice, integer, list_of, number

SCHEMA: dict[str, Rule] = {
    "provocations": Rule(list_of(choice(*PROVOCATIONS))),
    "probe_failure_policies": Rule(list_of(choice("warn_and_record_fallback", "fail_admission"))),
    "irq_isolation": Rule(list_of(choice("prefer_isolated", "require_isolated"))),
    "priority": Rule(integer(1, 99)),
    "deadline_period_ms": Rule(integer(1, 1000)),
    "deadline_utilization": Rule(number(0.05, 0.95)),
    "run_ms": Rule(integer(50, 60_000)),
    **SWEEP_SCHEMA,
}

# Other groups whose values the plan reads (none: the CPUs come from `cpus`, read by every plan).
USES: tuple[str, ...] = ()


def cross_checks(cfg: dict) -> list[str]:
    """``control`` must be among the provocations: without it no row shows what the host can do."""
    if "control" not in cfg["provocations"]:
        return ["e5_placement.provocations: add `control`, the same request the host can honour, "
                "beside which every provocation is read"]
    return []
