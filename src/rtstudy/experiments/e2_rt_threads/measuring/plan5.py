"""E2's plan on Holoscan 5.0 (:mod:`.app5`): the conditions 5.0 can express, plus its wake modes.

The 4.x plan's cells, kept where 5.0 has the same thing and turned into 5.0 cells
(same labels, same configuration, the 5.0 app), so one analysis compares both SDKs:

- the policy grid at native loads (``normal_dedicated``, FIFO, RR, DEADLINE × load factor),
  with load operators, each in an execution partition of its own; in the focused design at
  the headline point only, and the ladder's policy below it (the target alone): the H2
  control, what the unloaded grid is for, needs the floor, which 5.0's dataset has not;
- at the headline point, the contrast policies with stress-ng beside the app (``process``,
  where the profile has it: seed);
- 5.0's new factor: every ``wake_modes`` level other than ``sleep`` (``busy_poll``: the
  target's thread spins between activations) for the contrast policies at the headline point;
- and of those, where the 4.x plan traces the same condition, traced runs (H5c: where busy
  polling's late frames come from). perf is in the 5.0 root (rtstudy.sdks.sdkroot).

Left out, because 5.0 has no counterpart: ``normal`` (the target sharing 4.x's default
pool with the loads), the dispatcher (5.0 has no EventBasedScheduler), the seeds'
pools, load operators pinned off the target (not ported yet), the GIL switch interval fix,
the distributed-fragment fix (``fragment``: app5 has no fragments; not ported),
Python-model loads (kept to one work model to fit the budget), the floor and the Python
thread (the host's, measured once by the 4.x environment), and the traces of sleeping wake-up
(4.x's traces show that mechanism; the budget keeps 5.0's to the mode it adds).
The ladder's loaded rungs ``outside`` and ``threads`` ran on 5.0 too until the 25-minute budget
needed their 52 s (docs/benchmarks.md): 5.0's E2 compares the policies and the wake modes.
"""
from __future__ import annotations

from dataclasses import replace

from rtstudy.experiments.e2_rt_threads.conditions import PLAIN, TRACE_SUFFIX, WAKE_DEFAULT
from rtstudy.measure.harness import Cell, with_drift_check

# The apps beside this plan, in its room: 5.0's and the 4.x one it stands in for.
MODULE = f"{__package__}.app5"
MODULE4 = f"{__package__}.app"
# The load placements app5 runs (5.0 pins no partition but the target's; the GIL switch
# interval and distributed-fragment fixes are not carried over either: 5.0's measured fixes are
# its wake modes; app5 runs `threads` and `outside` too, left out for the budget: docstring).
PLACEMENTS5 = ("operators", "process")


def cells(cells4: list[Cell], cfg: dict, headline) -> list[Cell]:
    """The 5.0 cells made from the 4.x plan's cells ``cells4`` (module docstring).

    Parameters
    ----------
    cells4 : list of Cell
        The 4.x plan of the same configuration, before its drift check.
    cfg : dict
        E2's resolved parameters (``wake_modes`` among them).
    headline : callable
        ``headline(load_factor, work_model)`` → whether a condition is at the headline point.
    """
    out = []
    for cell in cells4:
        k = cell.config
        if (cell.module != MODULE4 or k["topology"] != "dedicated"
                or k["dispatcher"] != PLAIN["dispatcher"] or k["load_work_model"] != "native"
                or k["load_placement"] not in PLACEMENTS5 or "switch_interval_ms" in k):
            continue
        if k.get("trace_s"):
            out += _traced(cell, cfg)
            continue
        if (cfg["design"] == "focused" and k["policy"] != cfg["ladder_policy"]
                and not headline(k["load_factor"], k["load_work_model"])):
            continue  # the unloaded grid: no verdict on 5.0 (module docstring)
        out.append(_as5(cell, WAKE_DEFAULT))
        if (headline(k["load_factor"], k["load_work_model"])
                and k["load_placement"] == PLAIN["load_placement"]
                and k["policy"] in cfg["contrast_policies"]):
            out += [_as5(cell, wake) for wake in cfg["wake_modes"] if wake != WAKE_DEFAULT]
    reference = next((c.label for c in out if c.realtime and c.config["wake_mode"] == WAKE_DEFAULT
                      and headline(c.config["load_factor"], c.config["load_work_model"])
                      and c.config["load_placement"] == PLAIN["load_placement"]), None)
    return with_drift_check(out, cfg, reference)


def _traced(cell: Cell, cfg: dict) -> list[Cell]:
    """The traced 4.x ``cell`` as 5.0's traced runs of each wake mode but sleep, where its
    condition is one the wake modes are measured at (a contrast policy, load operators)."""
    k = cell.config
    if k["policy"] not in cfg["contrast_policies"] or k["load_placement"] != PLAIN["load_placement"]:
        return []
    base = cell.label.removesuffix(TRACE_SUFFIX)
    return [replace(_as5(cell, wake), label=f"{base}-{wake}{TRACE_SUFFIX}")
            for wake in cfg["wake_modes"] if wake != WAKE_DEFAULT]


def _as5(cell: Cell, wake: str) -> Cell:
    label = cell.label if wake == WAKE_DEFAULT else f"{cell.label}-{wake}"
    return replace(cell, label=label, module=MODULE,
                   config={**cell.config, "sdk_api": 5, "wake_mode": wake})
