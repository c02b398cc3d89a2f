"""E5 on Holoscan 4.x: the same provocations, for contrast with 5.0's failure policies.

4.x has no failure policy and no IRQ isolation. Each requested thread is an operator on a
thread pool of its own (``pin_operator``, the request's policy and CPUs:
:func:`rtstudy.apps.child.apply_realtime`) under the EventBasedScheduler, which stops the app
after ``run_ms``. What 4.x did is what the cell sees: an exception from ``run()``, the
SDK's own log lines about the threads, and, per operator, whether it ran and what the kernel
gave its thread.
"""
from __future__ import annotations

import time

# First: importing rtstudy.apps preloads libcudart, without which holoscan does not import.
from rtstudy.apps.child import apply_realtime, main, thread_record  # noqa: I001
from holoscan.conditions import PeriodicCondition
from holoscan.core import Application, Operator
from holoscan.schedulers import EventBasedScheduler

from rtstudy.experiments.e5_placement import provoke

PERIOD_NS = 10_000_000  # each operator's period: it only needs to run once


class Probe(Operator):
    """Reads back its own thread's scheduling on its first compute."""

    seen: dict = {}  # operator name → thread_record()

    def compute(self, op_input, op_output, context):
        Probe.seen.setdefault(self.name, thread_record())


class PlacementApp(Application):
    """One :class:`Probe` per request, each on its own real-time thread."""

    def __init__(self, requests):
        super().__init__()
        self.requests = requests

    def compose(self):
        for request in self.requests:
            op = Probe(self, PeriodicCondition(self, PERIOD_NS), name=request.operator)
            self.add_operator(op)
            apply_realtime(self, op, request)


def run(config: dict, realtime) -> tuple[dict, dict]:
    """Provoke, then run the app for ``run_ms`` (module docstring)."""
    requests = provoke.requests(config)
    observed = provoke.before(config)
    Probe.seen = {}
    app = PlacementApp(requests)
    # One default worker besides the pools: the scheduler needs one; the probes have their own.
    app.scheduler(EventBasedScheduler(app, name="ebs", worker_thread_number=1,
                                      max_duration_ms=config["run_ms"], stop_on_deadlock=False))
    start = time.monotonic_ns()
    error = None
    with provoke.captured_stderr() as log:
        try:
            app.run()
        except Exception as exc:  # what 4.x does with a refused request is the outcome
            error = f"{type(exc).__name__}: {exc}"
    summary = {**observed, "stage": "raised" if error else "ran", "termination": error,
               "compile_diagnostics": [], "run_diagnostics": [],
               "logged": provoke.logged_errors(log[0]), "plan_records": [], "probe_records": []}
    return provoke.cell_result(config, requests, Probe.seen, summary, 4, start)


if __name__ == "__main__":
    main(run)
