"""E1's parameter group (``params.yaml: e1_async_buffer``): each key's rule and the cross-checks."""
from __future__ import annotations

from rtstudy.rules import SWEEP_SCHEMA, Rule, choice, integer, list_of, number

SCHEMA: dict[str, Rule] = {
    "buffers": Rule(list_of(choice("default", "async"))),
    "scenarios": Rule(list_of(choice("S1", "S2"))),
    "policies": Rule(list_of(choice("deadline", "none"))),
    "work_models": Rule(list_of(choice("native", "python"))),
    "fixed_period_ms": Rule(integer(5, 1000)),
    "periods_ms": Rule(list_of(integer(5, 1000))),
    # Holoscan 5.0's periods, a subset of periods_ms (None: all of them).
    "periods_ms_sdk5": Rule(list_of(integer(5, 1000), min_len=2), required=False),
    "rx_period_ms": Rule(integer(2, 1000)),
    "tx1_work_ms": Rule(number(0, 500)),
    "tx2_work_ms": Rule(number(0, 500)),
    "rx_work_ms": Rule(number(0, 500)),
    "tx1_runtime_ms": Rule(number(0, 1000, lo_open=True)),
    "tx2_runtime_ms": Rule(number(0, 1000, lo_open=True)),
    "rx_runtime_ms": Rule(number(0, 1000, lo_open=True)),
    "pin": Rule(choice("auto", "always", "never")),
    "messages": Rule(integer(10, 1_000_000)),
    "discard_head": Rule(integer(0)),
    "discard_tail": Rule(integer(0)),
    **SWEEP_SCHEMA,
}

# Other groups whose values the plan reads (none).
USES: tuple[str, ...] = ()


def cross_checks(cfg: dict) -> list[str]:
    """Rules between keys of one resolved group (each key already valid on its own)."""
    errors = []
    for op, periods in (("tx1", cfg["periods_ms"] + [cfg["fixed_period_ms"]]),
                        ("tx2", cfg["periods_ms"] + [cfg["fixed_period_ms"]]),
                        ("rx", [cfg["rx_period_ms"]])):
        runtime, work = cfg[f"{op}_runtime_ms"], cfg[f"{op}_work_ms"]
        if runtime >= min(periods):
            errors.append(f"{op}_runtime_ms = {runtime} must be below the shortest {op} period "
                          f"({min(periods)} ms): SCHED_DEADLINE needs runtime < deadline = period")
        if runtime <= work:
            errors.append(f"{op}_runtime_ms = {runtime} must exceed {op}_work_ms = {work}, or "
                          "every tick overruns its reservation")
    extra = sorted(set(cfg.get("periods_ms_sdk5") or []) - set(cfg["periods_ms"]))
    if extra:
        errors.append(f"periods_ms_sdk5 has {extra}, which periods_ms lacks: Holoscan 5.0's "
                      "periods must be among 4.x's, so that both are compared at each")
    if cfg["discard_head"] + cfg["discard_tail"] >= cfg["messages"]:
        errors.append(f"discard_head + discard_tail = {cfg['discard_head'] + cfg['discard_tail']} "
                      f"must be below messages = {cfg['messages']}")
    return errors
