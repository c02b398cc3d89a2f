"""E2's recipes do what they say: each snippet, exactly as generated, in a real Holoscan app.

For SCHED_FIFO (priority 80, pinned to the last CPU), SCHED_RR (the same) and SCHED_DEADLINE
(10 % of a 16.67 ms period, unpinned: a DEADLINE thread pinned to one CPU is refused while
``kernel.sched_rt_runtime_us`` is 950000, DESIGN.md §4), the 4.6 snippet runs in the venv's
Holoscan and the 5.0 snippet in the Debian 13 root's (conftest's ``env5``). Each app is the
smallest that runs the snippet: the operator it configures and one other (the rest of an app),
the snippet's text ``exec``'d where its comment says it goes. The operator reads its own
thread's policy, priority, reservation and CPUs back from the kernel on its first compute
(:func:`rtstudy.apps.child.thread_record`), and that must equal the request. Under a second
a run (3 frames at the measured period).
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest
from helpers import require_policy

from rtstudy.experiments.e2_rt_threads.report.recipe import recipes, recipes_html
from rtstudy.measure.realtime import RealtimeRequest
from rtstudy.policies import NUMBERS, SCHED_DEADLINE, SCHED_FIFO, SCHED_RR
from rtstudy.sdks import sdk

pytestmark = pytest.mark.cells

PERIOD_NS = 16_666_667  # E2's 60 FPS
LAST_CPU = max(os.sched_getaffinity(0))
REQUESTS = {
    "fifo": RealtimeRequest("target", SCHED_FIFO, priority=80, cpus=(LAST_CPU,)),
    "rr": RealtimeRequest("target", SCHED_RR, priority=80, cpus=(LAST_CPU,)),
    "deadline": RealtimeRequest("target", SCHED_DEADLINE, runtime_ns=PERIOD_NS // 10,
                                deadline_ns=PERIOD_NS, period_ns=PERIOD_NS),
}
READBACK = "READBACK "  # the line of the app's output that holds what it read back
RUN_TIMEOUT_S = 60  # a refused policy leaves a 4.6 app waiting for an operator that never runs

# The app for 4.6 (argv: snippet, period in ns, policy): the snippet in compose(), where its
# first line says it goes; as measured, a DEADLINE operator has no PeriodicCondition.
APP_46 = """
import json, sys
from rtstudy.apps.child import thread_record  # first: preloads libcudart
from holoscan.conditions import CountCondition, PeriodicCondition
from holoscan.core import Application, Operator

SNIPPET, PERIOD_NS, POLICY = sys.argv[1], int(sys.argv[2]), sys.argv[3]


class MyOp(Operator):
    sched = None

    def compute(self, op_input, op_output, context):
        if MyOp.sched is None:
            MyOp.sched = thread_record()


class OtherOp(Operator):
    ticks = 0

    def compute(self, op_input, op_output, context):
        OtherOp.ticks += 1


class App(Application):
    def compose(self):
        pacing = [] if POLICY == "SCHED_DEADLINE" else [PeriodicCondition(self, PERIOD_NS)]
        my_op = MyOp(self, CountCondition(self, 3), *pacing, name="my_op")
        self.add_operator(my_op)
        self.add_operator(OtherOp(self, CountCondition(self, 3), name="other"))
        exec(SNIPPET, {"self": self, "my_op": my_op})


App().run()
print("READBACK " + json.dumps({"sched": MyOp.sched, "other_ticks": OtherOp.ticks}))
"""

# The app for 5.0 (argv: snippet, period in ns): the snippet's first part in the graph's
# compose(), its second where the graph is compiled; then the plan runs, as E2's app5 does.
APP_50 = """
import json, sys
from datetime import timedelta
from rtstudy.apps.child import thread_record  # first: preloads libcudart
import holoscan as hs
from rtstudy.apps.run5 import run_within

IN_COMPOSE, AT_COMPILE = sys.argv[1].split("\\n\\n")
PERIOD_NS = int(sys.argv[2])


class MyOp(hs.Operator):
    sched = None
    frames = 0

    def contract(self):
        return hs.Contract().trigger(hs.OnClock(period=timedelta(microseconds=PERIOD_NS / 1e3)))

    def compute(self, ctx):
        if MyOp.sched is None:
            MyOp.sched = thread_record()
        MyOp.frames += 1
        if MyOp.frames == 3:
            ctx.request_completion()


class OtherOp(hs.Operator):
    ticks = 0

    def contract(self):
        return hs.Contract().trigger(hs.OnClock(period=timedelta(milliseconds=1)))

    def compute(self, ctx):
        OtherOp.ticks += 1


class RecipeGraph(hs.Graph):
    def compose(self):
        my_op = self.op(MyOp, "my_op")
        self.op(OtherOp, "other")
        exec(IN_COMPOSE, {"self": self, "my_op": my_op})


scope = {"graph": RecipeGraph("recipe", default_clock=hs.RealtimeClock)}
exec(AT_COMPILE, scope)
session, _ = run_within(scope["plan"], 5.0)
print("READBACK " + json.dumps({"sched": MyOp.sched, "other_ticks": OtherOp.ticks,
                                "termination": session.termination.name}))
"""


def run_app(env: sdk.Environment, app: str, *args: str) -> dict:
    """What ``app`` printed after :data:`READBACK`, run with ``args`` in ``env``."""
    proc = subprocess.run(env.command(["-c", app, *args]), capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(READBACK)]
    assert proc.returncode == 0 and lines, f"exit {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(lines[-1].removeprefix(READBACK))


def assert_granted(sched: dict, request: RealtimeRequest) -> None:
    """The thread's attributes, read back from the kernel, are ``request``'s."""
    assert sched is not None, "the operator never ran"
    assert sched["policy"] == NUMBERS[request.policy]
    if request.policy == SCHED_DEADLINE:
        assert (sched["runtime_ns"], sched["deadline_ns"], sched["period_ns"]) == (
            request.runtime_ns, request.deadline_ns, request.period_ns)
    else:
        assert sched["priority"] == request.priority
    assert sched["cpus"] == (list(request.cpus) or sorted(os.sched_getaffinity(0)))


# Real Holoscan runs with real-time threads: the cells tier, one at a time (conftest.py).
@pytest.mark.cells
@pytest.mark.parametrize("case", REQUESTS)
def test_the_46_snippet_gives_the_operator_the_measured_thread(case, fingerprint):
    request = REQUESTS[case]
    require_policy(fingerprint, request.policy)
    env = sdk.venv()
    if not env.sdk.version.startswith("4.6"):
        pytest.skip(f"the venv holds Holoscan {env.sdk.version}, not 4.6")
    code = recipes(request, PERIOD_NS)[0].code
    out = run_app(env, APP_46, code, str(PERIOD_NS), request.policy)
    assert_granted(out["sched"], request)
    assert out["other_ticks"] == 3


@pytest.mark.cells
@pytest.mark.parametrize("case", REQUESTS)
def test_the_50_snippet_gives_the_operator_the_measured_thread(case, fingerprint, env5):
    request = REQUESTS[case]
    require_policy(fingerprint, request.policy)
    code = recipes(request, PERIOD_NS)[1].code
    assert code.count("\n\n") == 1  # its two parts: compose(), then the compile site
    out = run_app(env5, APP_50, code, str(PERIOD_NS))
    assert out["termination"] == "REQUESTED_COMPLETED"
    assert_granted(out["sched"], request)
    assert out["other_ticks"] > 0


def test_the_snippets_write_the_measured_numbers_and_the_privilege_it_needs():
    fifo_46, fifo_50 = recipes(REQUESTS["fifo"], PERIOD_NS)
    assert "sched_priority=80" in fifo_46.code and f"pin_cores=[{LAST_CPU}]" in fifo_46.code
    assert "priority=80" in fifo_50.code and f"ex.CPUAffinity([{LAST_CPU}])" in fifo_50.code
    assert "rtprio limit of at least 80" in fifo_46.privilege
    deadline = recipes(REQUESTS["deadline"], PERIOD_NS)
    assert all("1666666" in r.code and "16666667" in r.code for r in deadline)
    assert all("pin_cores" not in r.code and "affinity" not in r.code for r in deadline)
    assert "CAP_SYS_NICE" in deadline[0].privilege and "not enough" in deadline[0].privilege
    pinned = RealtimeRequest("target", SCHED_DEADLINE, runtime_ns=PERIOD_NS // 10,
                             deadline_ns=PERIOD_NS, period_ns=PERIOD_NS, cpus=(LAST_CPU,))
    assert "sched_rt_runtime_us = -1" in recipes(pinned, PERIOD_NS)[0].privilege
    text = recipes_html(REQUESTS["rr"], PERIOD_NS)
    assert text.count('<code class="language-python">') == 2 and "\n" not in text.rstrip("\n")
    assert text.index("Holoscan 4.6 (holoscan-cu12):") < text.index("Holoscan 5.0 (holoscan-cu13):")
    assert '<p class="recipe-privilege">SCHED_RR at priority 80' in text


@pytest.mark.parametrize("request_, period_ns, operator, message", [
    (RealtimeRequest("t", "SCHED_OTHER"), PERIOD_NS, "my_op", "policy must be one of"),
    (RealtimeRequest("t", SCHED_FIFO, priority=0), PERIOD_NS, "my_op", "priority must be 1-99; got 0"),
    (RealtimeRequest("t", SCHED_DEADLINE, runtime_ns=2, deadline_ns=1, period_ns=3), PERIOD_NS,
     "my_op", "got 2, 1, 3"),
    (REQUESTS["fifo"], 0, "my_op", "period_ns must be > 0; got 0"),
    (REQUESTS["fifo"], PERIOD_NS, "my op", "got 'my op'"),
])
def test_a_request_no_snippet_can_express_is_refused_saying_what_was_expected(
        request_, period_ns, operator, message):
    with pytest.raises(ValueError, match=message):
        recipes(request_, period_ns, operator)
