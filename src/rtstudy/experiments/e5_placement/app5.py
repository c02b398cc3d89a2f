"""E5 on Holoscan 5.0: one provocation under one failure policy, and what 5.0 did with it.

The graph is one operator per requested thread (``op0`` …), each in its own authored partition
(a lane, a thread) bound to a ``ThreadPlacement``: the request of
:func:`.provoke.requests` with the cell's ``probe_failure_policy`` and ``irq_isolation``. The
cell provokes first (:func:`.provoke.provoked`: the privilege is dropped before anything of
Holoscan runs), then compiles. A plan 5.0 rejects is the outcome (its diagnostics and
records kept); a plan it accepts runs for ``run_ms``, each operator reading back, on its first
activation, what the kernel gave its thread; a run that FAILED is the outcome too.
"""
from __future__ import annotations

import json
import time

# First: importing rtstudy.apps preloads libcudart, without which holoscan does not import.
from rtstudy.apps.child import main, thread_record  # noqa: I001
import holoscan as hs
from holoscan import execution as ex

from rtstudy.apps.run5 import describe, thread_placement
from rtstudy.experiments.e5_placement import provoke

POLICIES = {"warn_and_record_fallback": ex.ProbeFailurePolicy.WARN_AND_RECORD_FALLBACK,
            "fail_admission": ex.ProbeFailurePolicy.FAIL_ADMISSION}
IRQ = {"not_requested": ex.IRQIsolation.NOT_REQUESTED,
       "prefer_isolated": ex.IRQIsolation.PREFER_ISOLATED,
       "require_isolated": ex.IRQIsolation.REQUIRE_ISOLATED}
PERIOD = hs.time.ms(10)  # each operator's activation period: it only needs to run once


class Probe(hs.Operator):
    """Reads back its own thread's scheduling on its first activation."""

    seen: dict = {}  # operator name → thread_record()

    def contract(self):
        return hs.Contract().trigger(hs.OnClock(period=PERIOD))

    def compute(self, ctx):
        Probe.seen.setdefault(ctx.operator_path, thread_record())


class PlacementGraph(hs.Graph):
    """One :class:`Probe` per name, each in a partition of the same name."""

    def __init__(self, names: list[str]):
        super().__init__("e5_placement", default_clock=hs.RealtimeClock)
        self.names = names

    def compose(self):
        for name in self.names:
            self.partition(name).add(self.op(Probe, name))


def binding(config: dict, requests) -> ex.DeploymentBinding:
    """Each request's ``ThreadPlacement``, with the cell's failure policy and IRQ isolation."""
    bound = ex.DeploymentBinding()
    for request in requests:
        where = thread_placement(request)
        where.probe_failure_policy = POLICIES[config["probe_failure_policy"]]
        where.irq_isolation = IRQ[config["irq_isolation"]]
        bound = bound.bind_thread_placement(request.operator, where)
    return bound


def tokens(diagnostics) -> list[str]:
    """Each diagnostic as :func:`rtstudy.apps.run5.describe` gives it."""
    return [describe(d) for d in diagnostics]


def run(config: dict, realtime) -> tuple[dict, dict]:
    """Provoke, compile, and run if accepted (module docstring)."""
    requests = provoke.requests(config)
    observed = provoke.before(config)
    Probe.seen = {}
    start = time.monotonic_ns()
    with provoke.captured_stderr() as log:
        plan = hs.compile(PlacementGraph([r.operator for r in requests]),
                          hs.CompileOptions(deployment=binding(config, requests)))
        record = json.loads(plan.json())
        stage, termination, run_diagnostics = "rejected at compile", None, []
        if plan.ok:
            # Not run5.run_within: it raises on FAILED, and a FAILED run is an outcome here,
            # its session's diagnostics kept.
            session = hs.run_async(plan)
            if not session.wait(timeout=config["run_ms"] / 1000):
                session.request_stop()
                session.wait()
            termination = session.termination.name
            run_diagnostics = tokens(session.diagnostics)
            stage = "failed at lane start" if termination == "FAILED" else "ran"
    summary = {
        **observed, "stage": stage, "termination": termination,
        "compile_diagnostics": tokens(plan.errors) if not plan.ok else [],
        "run_diagnostics": run_diagnostics, "logged": provoke.logged_errors(log[0]),
        # Not "placements": those are H5a's (rtstudy.inference.records), which compares accepted
        # records with the threads; here a refused thread is the point.
        "plan_records": record.get("partition_placements", []),
        "probe_records": record.get("placement_probes", []),
    }
    return provoke.cell_result(config, requests, Probe.seen, summary, 5, start)


if __name__ == "__main__":
    main(run)
