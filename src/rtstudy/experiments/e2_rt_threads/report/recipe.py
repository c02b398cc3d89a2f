"""The code of E2's "Do" recommendations: the lines that give one operator the measured thread.

For each SDK, what a developer pastes into a Holoscan Python app so that one operator runs on a
thread of its own with the real-time policy the study measured (its priority, or its DEADLINE
reservation) on the CPUs it measured (if any), written from the very request the study made:

- Holoscan 4.6 (``holoscan-cu12``): what :func:`rtstudy.apps.child.apply_realtime` does, a
  one-thread pool with ``add_realtime``, plus the EventBasedScheduler without which 4.6
  ignores thread pools (the default GreedyScheduler logs so and runs the operator with
  SCHED_OTHER);
- Holoscan 5.0 (``holoscan-cu13``): what :mod:`measuring.app5` does, the operator in an execution
  partition of its own bound to a ``ThreadPlacement`` at compile.

tests/test_recipe.py runs every snippet, as generated, in a real app of its SDK and reads the
policy, priority and CPUs back on the operator's thread.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass

from rtstudy.measure.realtime import RealtimeRequest
from rtstudy.policies import PRIORITY_POLICIES, RT_POLICIES, SCHED_DEADLINE

# The line that names each SDK above its snippet: its version and the distribution to install.
HEADINGS = {"4.6": "Holoscan 4.6 (holoscan-cu12):", "5.0": "Holoscan 5.0 (holoscan-cu13):"}
# holoscan.execution.SchedulingPolicy's names (5.0) of the kernel's policies.
POLICIES_5 = {"SCHED_FIFO": "FIFO", "SCHED_RR": "ROUND_ROBIN", "SCHED_DEADLINE": "DEADLINE"}


@dataclass(frozen=True)
class Recipe:
    """How to give one operator the measured real-time thread in one SDK.

    Parameters
    ----------
    sdk : str
        ``"4.6"`` or ``"5.0"``.
    code : str
        Python for that SDK, the measured numbers written out (priority 1-99, times in ns). 4.6's
        is one part, for the app's ``compose()``; 5.0's two, separated by its one blank line:
        the graph's ``compose()``, then where the graph is compiled (a ``graph`` in scope).
    privilege : str
        What the process needs for the kernel to grant the policy (the same in both SDKs).
    note : str
        How the operator was paced when measured, and how the SDK says it was refused.
    """

    sdk: str
    code: str
    privilege: str
    note: str


def recipes(request: RealtimeRequest, period_ns: int,
            operator: str = "my_op") -> tuple[Recipe, Recipe]:
    """The 4.6 and 5.0 recipes that give ``operator`` the thread ``request`` asked for.

    Parameters
    ----------
    request : RealtimeRequest
        The measured request: SCHED_FIFO or SCHED_RR with its priority, or SCHED_DEADLINE with
        its reservation (ns); pinned to its ``cpus``, unpinned if none.
    period_ns : int
        The operator's activation period when measured (ns): the notes' pacing.
    operator : str
        The operator's variable name in the developer's code, and its pool's or partition's name.

    Returns
    -------
    tuple of Recipe
        Holoscan 4.6's, then Holoscan 5.0's.

    Raises
    ------
    ValueError
        A request no snippet can express (see :func:`check`).
    """
    check(request, period_ns, operator)
    needs = privilege(request)
    return (Recipe("4.6", code_46(request, operator), needs, note_46(request, period_ns, operator)),
            Recipe("5.0", code_50(request, operator), needs, note_50(period_ns, operator)))


def measured_request(requested: list[dict]) -> RealtimeRequest | None:
    """The request an E2 cell's target made, as its sidecar records it (``requested.realtime``:
    each request's fields); None for a target without a real-time policy."""
    target = next((r for r in requested if r.get("operator") == "target"
                   and r.get("policy") in RT_POLICIES), None)
    return RealtimeRequest(**{**target, "cpus": tuple(target.get("cpus") or ())}) \
        if target else None


def recipes_html(request: RealtimeRequest, period_ns: int, operator: str = "my_op") -> str:
    """:func:`recipes` for the report's first screen: the two SDKs' code side by side (HTML,
    the ``recipe`` class of the report's style), each under the line naming its SDK and how
    the operator was paced when measured, then the privilege."""
    pair = recipes(request, period_ns, operator)
    paced = {"4.6": ("no PeriodicCondition: the kernel releases it" if request.policy ==
                     SCHED_DEADLINE else f"<code>PeriodicCondition(self, {period_ns})</code>"),
             "5.0": f"<code>hs.OnClock</code> every {period_ns / 1e6:.2f} ms"}
    # One line of HTML, the code's newlines as character references: Markdown around it would
    # end the block at a blank line of the code and read its comments as headings.
    columns = "".join(
        f'<div><p>{html.escape(HEADINGS[r.sdk])} <span>(paced as measured: {paced[r.sdk]})'
        f'</span></p><pre><code class="language-python">'
        f'{html.escape(r.code).replace(chr(10), "&#10;")}</code></pre></div>' for r in pair)
    privilege = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(pair[0].privilege))
    return f'<div class="recipe">{columns}<p class="recipe-privilege">{privilege}</p></div>\n'


def check(request: RealtimeRequest, period_ns: int, operator: str) -> None:
    """Refuse what no snippet can express; each message gives the expected and the actual value.

    Raises
    ------
    ValueError
        Not a real-time policy, a FIFO/RR priority outside 1-99, a DEADLINE reservation not
        0 < runtime <= deadline <= period (ns), a period not > 0, or an operator name that is
        not a Python identifier.
    """
    if request.policy not in RT_POLICIES:
        raise ValueError(f"policy must be one of {', '.join(RT_POLICIES)}; got {request.policy!r}")
    if request.policy in PRIORITY_POLICIES and not 1 <= request.priority <= 99:
        raise ValueError(f"{request.policy} priority must be 1-99; got {request.priority}")
    if request.policy == SCHED_DEADLINE and not (
            0 < request.runtime_ns <= request.deadline_ns <= request.period_ns):
        raise ValueError("SCHED_DEADLINE needs 0 < runtime <= deadline <= period (ns); got "
                         f"{request.runtime_ns}, {request.deadline_ns}, {request.period_ns}")
    if period_ns <= 0:
        raise ValueError(f"period_ns must be > 0; got {period_ns}")
    if not operator.isidentifier():
        raise ValueError(f"operator must be a Python identifier (a variable name); got {operator!r}")


def code_46(request: RealtimeRequest, operator: str) -> str:
    """Holoscan 4.6's snippet, for the application's ``compose()``."""
    pinned = f", pin_cores={list(request.cpus)}" if request.cpus else ""
    if request.policy == SCHED_DEADLINE:
        times = (f"sched_runtime={request.runtime_ns}, sched_deadline={request.deadline_ns}, "
                 f"sched_period={request.period_ns}")
    else:
        times = f"sched_priority={request.priority}"
    return "\n".join([
        f"# In your Application's compose(), once {operator} is made and added:",
        "from holoscan.resources import SchedulingPolicy",
        "from holoscan.schedulers import EventBasedScheduler",
        "# Thread pools need this scheduler or the MultiThreadScheduler (keep yours if it is one):",
        "# the default GreedyScheduler ignores them.",
        'self.scheduler(EventBasedScheduler(self, name="ebs"))',
        f'pool = self.make_thread_pool("rt_{operator}", 1)',
        # pin_operator=True binds the operator to the pool's thread, the one given the policy.
        f"pool.add_realtime({operator}, SchedulingPolicy.{request.policy}, pin_operator=True"
        f"{pinned},",
        f"                  {times})",
    ])


def code_50(request: RealtimeRequest, operator: str) -> str:
    """Holoscan 5.0's snippet: the graph's ``compose()``, a blank line, the compile site."""
    arguments = [f"affinity=ex.CPUAffinity({list(request.cpus)})"] if request.cpus else []
    arguments.append(f"policy=ex.SchedulingPolicy.{POLICIES_5[request.policy]}")
    if request.policy == SCHED_DEADLINE:
        arguments.append(f"deadline=ex.DeadlineScheduling(runtime_ns={request.runtime_ns}, "
                         f"deadline_ns={request.deadline_ns}, period_ns={request.period_ns})")
    else:
        arguments.append(f"priority={request.priority}")
    return "\n".join([
        f"# In your Graph's compose(), once {operator} = self.op(...): a thread of its own.",
        f'self.partition("{operator}").add({operator})',
        # 5.0 rejects a plan with operators in no partition (PARTITION_COVER_INVALID).
        "self.auto_partition_remaining()  # the other operators: partitions as 5.0 chooses",
        "",
        "# Where you compile your graph (`graph`): that partition's thread.",
        "import holoscan as hs",
        "from holoscan import execution as ex",
        "placement = ex.ThreadPlacement(",
        *(f"    {a}," for a in arguments),
        ")",
        f'binding = ex.DeploymentBinding().bind_thread_placement("{operator}", placement)',
        "plan = hs.compile(graph, hs.CompileOptions(deployment=binding))",
        "plan.require_no_errors()  # raises if this process may not use the policy",
    ])


def privilege(request: RealtimeRequest) -> str:
    """What the kernel asks of the process before it grants ``request``'s policy (sched(7))."""
    if request.policy in PRIORITY_POLICIES:
        p = request.priority
        return (f"{request.policy} at priority {p} needs an rtprio limit of at least {p} "
                f"(`ulimit -r`; in Docker `--ulimit rtprio={p}`) or CAP_SYS_NICE.")
    needs = ("SCHED_DEADLINE needs CAP_SYS_NICE (an rtprio limit is not enough; in Docker "
             "`--cap-add=SYS_NICE`).")
    if request.cpus:
        needs += (f" Pinned (CPUs {', '.join(map(str, request.cpus))}), it also needs "
                  "`kernel.sched_rt_runtime_us = -1` (or an exclusive cpuset): the kernel refuses "
                  "a DEADLINE thread whose CPUs are fewer than its root domain's.")
    return needs


def note_46(request: RealtimeRequest, period_ns: int, operator: str) -> str:
    """How 4.6 paced the operator when measured, and how it fails when the host refuses."""
    if request.policy == SCHED_DEADLINE:
        pacing = (f"`{operator}` had no PeriodicCondition: the kernel releases a DEADLINE thread "
                  "once per reservation period")
    else:
        pacing = (f"`{operator}` was paced by `PeriodicCondition(self, {period_ns})` "
                  f"({period_ns / 1e6:.2f} ms)")
    return (f"As measured, {pacing}. When the host refuses the policy, 4.6 logs \"Failed to set "
            f"SCHED_…\" and `{operator}` never runs.")


def note_50(period_ns: int, operator: str) -> str:
    """How 5.0 paced the operator when measured (every policy alike), and how it refuses."""
    return (f"As measured, `{operator}`'s `contract()` triggered it with "
            f"`hs.OnClock(period=timedelta(microseconds={period_ns / 1e3!r}))` "
            f"({period_ns / 1e6:.2f} ms). Without the privilege the compiler rejects the "
            "placement (THREAD_PLACEMENT_REJECTED); a DEADLINE reservation the kernel refuses "
            "fails the run before the operator runs (RUNTIME_LANE_STARTUP_FAILED).")
