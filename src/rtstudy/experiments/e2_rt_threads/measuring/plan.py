"""E2's sweep plan: the conditions, where each runs, and which runs are traced.

The measuring side of E2 (a dependency of its DVC stage, with ``app.py`` and ``floor.py``).

A condition is one combination of the factors (``params.py``): the target's
policy and topology, the dispatcher, where the load runs, how much load and of
which work model. ``design: focused`` (the default profile) runs

- the *policy grid*: every policy × load factor × load work model, load operators,
  Holoscan's own dispatcher (what E2 always measured);
- at the *headline point* (the highest load factor, native loads), for each
  contrast policy, every dispatcher × load placement (the fair factorial: the same
  thread and pinning, only the factor differs; plain-thread loads with Holoscan's own
  dispatcher only, as they never pass through it);
- the seed-compatible topologies, normal and real-time, at the seeds' load;
- the floor (cyclictest, like with like) at the lowest and highest load factor;
- the *jitter ladder* (``ladder``), one rung one factor with ``ladder_policy`` at the same
  period, priority and CPU: cyclictest idle → a Python thread (:mod:`.pythread`) → the
  Holoscan target alone → + the load threads in a process of their own (``outside``) →
  + the same threads in the app (``threads``) → + load operators pinned off the target's
  CPU (``operators_pinned``) → + load operators free to use it (the headline point);
- the *fixes* (``fixes``), each one factor away from the headline point with
  ``ladder_policy``: the loads pinned off the target's CPU, a FIFO dispatcher pinned to a
  housekeeping CPU (``fifo_pinned``), a shorter GIL switch interval, the target in a
  Holoscan distributed fragment of its own (``fragment``: the loads in another process).
  They rotate over sessions (:func:`.rotation.session_fixes`): each new session of a host
  state measures the ``fixes_per_session`` its sessions measured least, and those and their
  baseline run ``fix_repetitions`` × ``fix_duration_s``, the size a late-frame rate ratio
  needs (:mod:`checks.power`);
- ``trace_repetitions`` traced runs of the headline point's operator-load conditions of
  every real-time policy (and of the seeds' real-time topologies whose target has a thread
  of its own, the one the trace can follow).

The headline point and the ladder run ``headline_duration_s``, the rest ``duration_s``:
late-frame rates need thousands of frames where they are compared.

``design: full`` (the seed profile) crosses every factor with every other.

On Holoscan 5.0 the plan is :mod:`.plan5`'s; on an SDK whose dispatcher takes no real-time
policy (3.5.0: ``rtstudy.sdks.sdk.Sdk.realtime_dispatcher``) the ``fifo`` dispatcher's cells are
left out, and the fragment fix runs only where it was verified (:data:`FRAGMENT_SDKS`).
"""
from __future__ import annotations

import itertools
from pathlib import Path

from rtstudy import params
from rtstudy.experiments.e2_rt_threads.measuring import plan5
from rtstudy.experiments.e2_rt_threads.conditions import (
    PLAIN, SWITCH_INTERVAL_MS as DEFAULT_SWITCH_INTERVAL_MS, is_plain)
from rtstudy.experiments.e2_rt_threads.measuring.rotation import (FIX_FACTORS, fix_frames,
                                                                  session_fixes)
from rtstudy.machine import placement
from rtstudy.machine.sysdeps import which
from rtstudy.measure.harness import Cell, with_drift_check
from rtstudy.measure.realtime import DISPATCHER, RealtimeRequest
from rtstudy.policies import PRIORITY_POLICIES, RT_POLICIES, SCHED_DEADLINE, SCHED_FIFO
from rtstudy.sdks import sdk

EXPERIMENT = "e2_rt_threads"
APP = "e2_rt_threads"  # the name cells record (part of every cell id): never change it
# The programs a cell runs, beside this plan in its room.
MODULE = plan5.MODULE4
FLOOR_MODULE = f"{__package__}.floor"
PYTHREAD_MODULE = f"{__package__}.pythread"
# The SDKs whose app runs the fragment fix: verified with holoscan-cu12 4.6.0 (app.py's calls,
# EventBasedScheduler's network_connection_timeout among them, are 4.6's); app5 has none.
FRAGMENT_SDKS = ("4.6.0",)
# The ladder's loaded rungs in order (after the target alone): the placement of the same load.
# A profile climbs those of its load_placements (default: the last two; seed: all four).
LADDER_PLACEMENTS = ("outside", "threads", "operators_pinned", "operators")
SDK_APIS = (4, 5)  # Holoscan 4.x (app) and 5.x (app5, planned by plan5)
# The plain condition's dispatcher and load placement (conditions.PLAIN): Holoscan's own
# dispatcher, load operators in the app. A cell's label names only the factors that differ.
PLAIN_DISPATCHER, PLAIN_PLACEMENT = PLAIN["dispatcher"], PLAIN["load_placement"]


def period_ns(fps: int) -> int:
    """The nominal frame period in ns at ``fps`` frames per second."""
    return round(1e9 / fps)


def after_sweep(directory: Path) -> None:
    """Nothing to record beside E2's cells."""


def target_cpus(cfg: dict, fp: dict, where: placement.Placement, policy: str,
                topology: str = "dedicated") -> tuple[int, ...]:
    """The CPU the target is pinned to, or () where it runs unpinned.

    Every policy of the ``dedicated`` topology gets the same CPU, so only the
    policy differs (``normal_dedicated`` included): the placement's real-time
    CPU (:mod:`rtstudy.machine.placement`; on an isolated or shielded host its loads stay
    on the housekeeping CPUs). The seeds pin their real-time target to CPU 0.
    ``shared`` and the seeds' normal modes leave the target to its pool. DEADLINE
    stays unpinned where the host refuses pinned DEADLINE threads (``rtstudy host check``).
    """
    if cfg["pin"] == "never" or policy == "normal" or \
            (topology != "dedicated" and policy not in RT_POLICIES):
        return ()
    if policy == SCHED_DEADLINE and fp["realtime"].get("SCHED_DEADLINE pinned") != "ok":
        return ()
    if topology != "dedicated":
        return (fp["cpu"]["online"][0],)
    return (where.rt_cpu,)


def host_problems(cfg: dict, fp: dict) -> list[str]:
    """What this host cannot run of ``cfg``; empty when everything fits."""
    problems = []
    if cfg["pin"] == "always" and SCHED_DEADLINE in cfg["policies"] and \
            fp["realtime"].get("SCHED_DEADLINE pinned") != "ok":
        problems.append("e2_rt_threads.pin = 'always', but this host refuses SCHED_DEADLINE "
                        "threads pinned to one CPU (see `rtstudy host check`); use pin: auto")
    # The floor runs cyclictest, and stress-ng is both the floor's load and the "process"
    # placement: without them those cells would fail only after the whole sweep.
    for tool, needed_by in (("cyclictest", cfg["floor"] and "e2_rt_threads.floor"),
                            ("stress-ng", ("process" in cfg["load_placements"] or cfg["floor"])
                             and "e2_rt_threads.load_placements 'process' and the loaded floor")):
        if needed_by and which(tool) is None:
            problems.append(f"{tool} is not installed, and {needed_by} need it: install it "
                            "(`make sysdeps` does, as root), or set e2_rt_threads.floor: false"
                            + (" and remove 'process' from load_placements"
                               if tool == "stress-ng" else ""))
    if cfg["seed_topologies"] and len(fp["cpu"]["online"]) < 2:
        problems.append("the seed topologies pin to CPUs 0 and 1; this host has one CPU: set "
                        "e2_rt_threads.seed_topologies: []")
    return problems


def realtime(cfg: dict) -> tuple[str, ...]:
    """The policies the preflight must find allowed."""
    wanted = set(cfg["policies"]) | ({cfg["seed_policy"]} if cfg["seed_topologies"] else set())
    if set(cfg["dispatchers"]) - {PLAIN_DISPATCHER} or cfg["floor"] or \
            "dispatcher_pinned" in cfg["fixes"]:
        wanted.add(SCHED_FIFO)
    return tuple(p for p in RT_POLICIES if p in wanted)


def tracing(cfg: dict) -> bool:
    """Whether this plan takes scheduler traces: asked for, and perf is installed."""
    return cfg["trace_seconds"] > 0 and which("perf") is not None


class _Planner:
    """Turns factor levels into cells; one instance per plan."""

    def __init__(self, cfg: dict, fp: dict, where: placement.Placement):
        self.cfg, self.fp, self.where = cfg, fp, where
        self.p_ns = period_ns(cfg["fps"])
        self.frames = cfg["warmup_frames"] + int(cfg["duration_s"] * cfg["fps"])
        self.long_frames = cfg["warmup_frames"] + int(cfg["headline_duration_s"] * cfg["fps"])
        self.fix_frames = fix_frames(cfg)
        self.top = max(cfg["load_factors"])
        models = cfg["load_work_models"]
        self.native = "native" if "native" in models else models[0]
        self.cells: list[Cell] = []
        self.labels: set[str] = set()

    def loads(self, factor: float) -> int:
        """Loads for ``factor`` loads per CPU: per CPU the loads may use (the housekeeping CPUs)."""
        return int(round(factor * len(self.where.housekeeping)))

    def headline(self, factor: float, model: str) -> bool:
        return factor == self.top and model == self.native

    def reps(self, headline: bool) -> int:
        c = self.cfg
        return max(c["repetitions"], c["headline_repetitions"]) if headline else c["repetitions"]

    def requests(self, policy: str, cpus: tuple[int, ...], dispatcher: str,
                 seed: bool) -> tuple[RealtimeRequest, ...]:
        c, out = self.cfg, []
        if policy in PRIORITY_POLICIES:
            out.append(RealtimeRequest("target", policy, priority=c["priority"], cpus=cpus))
        elif policy == SCHED_DEADLINE:
            # NVIDIA's Python benchmark gives its DEADLINE thread a deadline of 95 % of the period.
            deadline = int(self.p_ns * 0.95) if seed else self.p_ns
            out.append(RealtimeRequest("target", policy,
                                       runtime_ns=int(self.p_ns * c["deadline_runtime_fraction"]),
                                       deadline_ns=deadline, period_ns=self.p_ns, cpus=cpus))
        if dispatcher in ("fifo", "fifo_pinned"):
            pinned = dispatcher == "fifo_pinned" or c["dispatcher_pin"]
            pin = (self.where.housekeeping[0],) if pinned else ()
            out.append(RealtimeRequest(DISPATCHER, SCHED_FIFO, priority=c["dispatcher_priority"],
                                       cpus=pin))
        return tuple(out)

    def load_cpus(self, cpus: tuple[int, ...]) -> list[int]:
        """The CPUs loads pinned off the target may use: the housekeeping CPUs but ``cpus``."""
        return [cpu for cpu in self.where.housekeeping if cpu not in cpus]

    def holoscan(self, policy: str, factor: float, model: str,
                 dispatcher: str = PLAIN_DISPATCHER, placement: str = PLAIN_PLACEMENT,
                 topology: str = "", loads: int | None = None, reps: int | None = None,
                 trace: bool = False, long: bool = False, fix: bool = False,
                 switch_interval_ms: float = DEFAULT_SWITCH_INTERVAL_MS) -> None:
        c = self.cfg
        topology = topology or ("shared" if policy == "normal" else "dedicated")
        seed = topology.startswith("seed")
        n = self.loads(factor) if loads is None else loads
        cpus = target_cpus(c, self.fp, self.where, policy, topology)
        if placement == "operators_pinned" and not (cpus and self.load_cpus(cpus)):
            return  # an unpinned target, or no other CPU: nothing to pin the loads off
        if placement == "fragment" and not n:
            return  # no loads: nothing to move to a fragment (and nothing keeps it running)
        long = long or (not seed and self.headline(factor, model))
        frames = self.long_frames if long else self.frames
        if fix:  # a fix or its baseline: sized for a late-frame rate ratio
            frames, reps = self.fix_frames, c["fix_repetitions"]
        if trace:
            frames = c["warmup_frames"] + int(c["trace_seconds"] * c["fps"])
        config = {
            "policy": policy, "topology": topology, "dispatcher": dispatcher,
            "load_placement": placement, "load_factor": factor, "loads": n,
            "load_work_model": model, "load_work_ms": c["load_work_ms"],
            "fps": c["fps"], "period_ns": self.p_ns, "frames": frames,
            "target_work_iterations": c["target_work_iterations"],
            "target_cpus": list(cpus), "pinned": bool(cpus),
            # Three times the nominal duration, then Holoscan stops it.
            "max_duration_ms": int(3000 * frames / c["fps"]) + 10_000,
        }
        if placement == "operators_pinned":
            config["load_cpus"] = self.load_cpus(cpus)
        if placement == "fragment":
            # The app summarizes the messages' latencies after the warm-up.
            config["warmup_frames"] = c["warmup_frames"]
        if switch_interval_ms != DEFAULT_SWITCH_INTERVAL_MS:
            config["switch_interval_ms"] = switch_interval_ms
        if trace:
            config["trace_s"] = c["trace_seconds"]
        label = "-".join([*([topology] if seed else []), policy, f"lf{factor:g}", model,
                          *([f"d{dispatcher}"] if dispatcher != PLAIN_DISPATCHER else []),
                          *([placement] if placement != PLAIN_PLACEMENT else []),
                          *([f"si{switch_interval_ms:g}"]
                            if switch_interval_ms != DEFAULT_SWITCH_INTERVAL_MS else []),
                          *(["trace"] if trace else [])])
        self._add(label, config, self.requests(policy, cpus, dispatcher, seed), MODULE,
                  reps if reps is not None else c["trace_repetitions"] if trace else
                  self.reps(long))

    def python_thread(self) -> None:
        """The ladder's second rung (:mod:`.pythread`): the ladder policy's thread, no Holoscan."""
        c = self.cfg
        policy = c["ladder_policy"]
        cpus = target_cpus(c, self.fp, self.where, policy)
        config = {"policy": policy, "topology": "python_thread", "dispatcher": "none",
                  "load_placement": "none", "load_factor": 0.0, "loads": 0,
                  "load_work_model": self.native, "fps": c["fps"], "period_ns": self.p_ns,
                  "frames": self.long_frames, "priority": c["priority"],
                  "target_work_iterations": c["target_work_iterations"],
                  "target_cpus": list(cpus), "pinned": bool(cpus),
                  "max_duration_ms": int(3000 * self.long_frames / c["fps"]) + 10_000}
        request = RealtimeRequest("python_thread", policy, priority=c["priority"], cpus=cpus)
        self._add(f"python_thread-{policy}-lf0", config, (request,), PYTHREAD_MODULE,
                  self.reps(True))

    def floor(self, factor: float, long: bool) -> None:
        """cyclictest at ``factor``; ``long``: as many cycles as the headline's Holoscan runs."""
        c = self.cfg
        cpus = target_cpus(c, self.fp, self.where, SCHED_FIFO)
        n = self.loads(factor)
        frames = self.long_frames if long else self.frames
        config = {"tool": "cyclictest", "policy": SCHED_FIFO, "topology": "floor",
                  "dispatcher": "none", "load_placement": "process" if n else "none",
                  "load_factor": factor, "loads": n, "load_work_model": self.native,
                  "fps": c["fps"], "period_ns": self.p_ns, "frames": frames,
                  "priority": c["priority"], "target_cpus": list(cpus), "pinned": bool(cpus),
                  "max_duration_ms": int(3000 * frames / c["fps"]) + 10_000}
        request = RealtimeRequest("cyclictest", SCHED_FIFO, priority=c["priority"], cpus=cpus)
        self._add(f"floor-cyclictest-lf{factor:g}", config, (request,), FLOOR_MODULE,
                  self.reps(long))

    def _add(self, label, config, requests, module, reps) -> None:
        if label in self.labels:
            return  # a condition two parts of the design both ask for runs once
        self.labels.add(label)
        timeout = config["max_duration_ms"] / 1000 + self.cfg["timeout_margin_s"]
        for rep in range(reps):
            self.cells.append(Cell(EXPERIMENT, APP, label, config, rep, timeout, requests,
                                   module=module))


def plan(cfg: dict, fp: dict, configs: dict) -> list[Cell]:
    """Every condition of ``cfg["design"]`` (module docstring) × its repetitions.

    Parameters
    ----------
    cfg : dict
        E2's resolved parameters.
    fp : dict
        The host fingerprint (CPUs, which policies and pinning it allows, the shield).
    configs : dict
        The resolved groups it reads: ``cpus`` (:mod:`rtstudy.machine.placement`; auto when absent).
    """
    p = _Planner(cfg, fp, placement.resolve(configs.get("cpus"), fp))
    full = cfg["design"] == "full"
    # The parts of the design in this order: a condition two parts share is planned once, by
    # the first, at that part's length (each part's function says which it comes before).
    # Holoscan 5.0's app runs none of the fixes (plan5): its headline point keeps the ladder's size.
    _fixes(p, [] if sdk.api_of(fp) == 5 else session_fixes(cfg, configs.get(params.SESSION, {})))
    if cfg["ladder"]:
        _ladder(p)
    _policy_grid(p, full)
    _fair_factorial(p, full)
    _seeds(p)
    if cfg["floor"]:
        _floors(p, full)
    if tracing(cfg):
        _traces(p, full)
    if sdk.api_of(fp) == 5:
        return plan5.cells(p.cells, cfg, p.headline)  # what of it Holoscan 5.0 can express
    cells = _runnable(p.cells, fp)
    return with_drift_check(cells, cfg, _drift_reference(cells, p))


def _fixes(p: _Planner, fixes: list[str]) -> None:
    """The ``fixes``, each one factor away from the headline point, and their baseline.

    First, so that the conditions the ladder and the grid share with them (the headline point,
    the pinned loads) run the fixes' size.
    """
    rt = p.cfg["ladder_policy"]
    if fixes:
        p.holoscan(rt, p.top, p.native, fix=True)  # their baseline
    for fix in fixes:
        key, value = FIX_FACTORS[fix]
        # The planner names the cell's load_placement "placement"; the switch interval is cfg's.
        p.holoscan(rt, p.top, p.native, fix=True, **{
            "placement" if key == "load_placement" else key:
            p.cfg["switch_interval_ms"] if value is None else value})


def _ladder(p: _Planner) -> None:
    """The jitter ladder's rungs but the floor: before the grid, so that the rungs it shares
    (the target alone) run the ladder's length."""
    c, rt = p.cfg, p.cfg["ladder_policy"]
    p.python_thread()
    p.holoscan(rt, min(c["load_factors"]), p.native, long=True)
    for load_at in [x for x in LADDER_PLACEMENTS if x in c["load_placements"]]:
        p.holoscan(rt, p.top, p.native, placement=load_at)


def _policy_grid(p: _Planner, full: bool) -> None:
    """The policy grid (and, in the full design, every dispatcher and placement with it)."""
    c = p.cfg
    for policy, factor in itertools.product(c["policies"], c["load_factors"]):
        # With no loads the load work model is moot: measure it once.
        for model in c["load_work_models"] if p.loads(factor) else c["load_work_models"][:1]:
            for dispatcher, load_at in itertools.product(
                    c["dispatchers"] if full else [PLAIN_DISPATCHER],
                    c["load_placements"] if full else [PLAIN_PLACEMENT]):
                if load_at == "process" and model != p.native:
                    continue  # stress-ng's workers are native code: the work model is moot
                p.holoscan(policy, factor, model, dispatcher, load_at)


def _fair_factorial(p: _Planner, full: bool) -> None:
    """The fair factorial at the headline point: only one factor differs from the grid's cell."""
    c = p.cfg
    for policy in c["contrast_policies"]:
        for dispatcher, load_at in itertools.product(c["dispatchers"], c["load_placements"]):
            if load_at != PLAIN_PLACEMENT and dispatcher != PLAIN_DISPATCHER and not full:
                continue  # one factor at a time: a placement with Holoscan's own dispatcher
            p.holoscan(policy, p.top, p.native, dispatcher, load_at)


def _seeds(p: _Planner) -> None:
    """The seeds' own topologies and load, normal and real-time."""
    c = p.cfg
    seed_factor = c["seed_loads"] / len(p.where.housekeeping)
    for topology in c["seed_topologies"]:
        # The Python seed's loads are Python loops (the GIL held); the C++ seed's are native.
        seed_model = c["seed_load_work_model"] if topology == "seed_python" else "native"
        for policy in ("normal", c["seed_policy"]):
            p.holoscan(policy, seed_factor, seed_model, topology=topology, loads=c["seed_loads"],
                       reps=p.reps(True))


def _floors(p: _Planner, full: bool) -> None:
    """The floor (cyclictest) at the lowest and highest load factor; every one in the full
    design."""
    c = p.cfg
    lowest = min(c["load_factors"])
    for factor in sorted(set(c["load_factors"]) if full else {lowest, p.top}):
        # The ladder's first rung gets as many cycles as its Holoscan rungs.
        p.floor(factor, long=factor == p.top or (c["ladder"] and factor == lowest))


def _traces(p: _Planner, full: bool) -> None:
    """Traced runs at the headline point with load operators and Holoscan's dispatcher of the
    ladder's policy and of SCHED_DEADLINE (the kernel paces it: another mechanism), in the full
    design of every real-time policy and the seeds' real-time topologies: their own cells, set
    aside from the statistics (tracing costs the traced run time)."""
    traced = RT_POLICIES if full else (p.cfg["ladder_policy"], SCHED_DEADLINE)
    for cell in [x for x in p.cells if x.repetition == 0 and x.module == MODULE]:
        k = cell.config
        plain = is_plain(k) and "switch_interval_ms" not in k
        if k["policy"] in traced and plain and (
                k["topology"] == "dedicated" and p.headline(k["load_factor"],
                                                            k["load_work_model"])
                or full and k["topology"].startswith("seed")):
            p.holoscan(k["policy"], k["load_factor"], k["load_work_model"], k["dispatcher"],
                       k["load_placement"], k["topology"], k["loads"], trace=True)


def _runnable(cells: list[Cell], fp: dict) -> list[Cell]:
    """``cells`` but those the host's Holoscan 4.x or 3.5.0 cannot run."""
    if sdk.version_of(fp) not in FRAGMENT_SDKS:
        cells = [x for x in cells if x.config["load_placement"] != "fragment"]
    if not sdk.realtime_dispatcher(fp):
        # An SDK without the dispatcher's real-time settings (3.5.0) would run every `fifo`
        # dispatcher cell SCHED_OTHER, and the read-back would fail each one: left out.
        cells = [x for x in cells if all(r.operator != DISPATCHER for r in x.realtime)]
    return cells


def _drift_reference(cells: list[Cell], p: _Planner) -> str | None:
    """The label of the condition the drift check repeats: the first real-time condition at
    the headline point (the plan's first condition when it has none), one of the headline's
    length: twice the fixes' baseline would cost two of its long runs."""
    return next((x.label for x in cells if x.config["policy"] in RT_POLICIES
                 and x.config["topology"] == "dedicated" and x.module == MODULE
                 and p.headline(x.config["load_factor"], x.config["load_work_model"])
                 and is_plain(x.config) and x.config["frames"] == p.long_frames), None)
