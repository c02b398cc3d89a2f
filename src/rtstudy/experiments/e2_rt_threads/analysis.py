"""E2, real-time vs normal thread under CPU contention: loading, the H2 verdicts and the headline.

H2: under contention a real-time policy cuts the frame-period standard
deviation of a periodic operator (the published figures are in
``published.py``). It is judged against ``normal_dedicated``: the same thread
of its own and the same pinning, only the policy differs. Beside it: the
effect of a real-time dispatcher and of where the load runs, every
configuration's ratio to the operating system's floor (cyclictest measured like
with like in the same sweep), the seeds' own topologies, and per frame where the
delay accrues (a kernel scheduler trace).

This module is E2's side of the experiment protocol (:mod:`rtstudy.experiments`):
what the data and report layers read. The parts live beside it:
:mod:`.conditions` (the factors, the baselines, the grid and the headline point),
:mod:`.metrics` (one run's quantities), :mod:`.attribution` (the trace),
:mod:`.contrasts` (effects over runs, with CIs) and :mod:`.tables` (the report's tables).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rtstudy.data.io import (CellData, Dataset, read_cells, read_samples, set_aside_drift, stack,
                             wide)
from rtstudy.experiments.e2_rt_threads.attribution import (GIL_TIMES, PARTS, PATTERNS,
                                                           attribute_cell, attribution_summary,
                                                           mechanism_summary, mechanism_totals,
                                                           tracing_cost)
from rtstudy.experiments.e2_rt_threads.conditions import (BASELINE, SEED_BASELINE, STARVED_OFFSET,
                                                          SWITCH_INTERVAL_MS, factor_levels, grid,
                                                          headline_point)
from rtstudy.experiments.e2_rt_threads.contrasts import (DECIDED_SHARE, condition_summary, effects,
                                                         floor_ratios, reductions, seed_compatible)
from rtstudy.experiments.e2_rt_threads.ladder import ladder, late_part, recommendations
from rtstudy.experiments.e2_rt_threads.metrics import RunFrames, release_grid, run_metrics
from rtstudy.experiments.e2_rt_threads.params import POLICY_NAMES
from rtstudy.inference import criteria, judge, rates
from rtstudy.inference.stats import CI, MIN_RUNS, drift_check
from rtstudy.measure.realtime import DISPATCHER
from rtstudy.policies import BY_NUMBER, RT_POLICIES, SCHED_DEADLINE

# The columns and Arrow types of samples.parquet, as app.py and floor.py write them (data/README.md).
SAMPLES = {"frame": "int64", "t_start_ns": "int64", "exec_ns": "int64"}
# The fragment fix's messages, beside its samples (app.py's "messages" table): per message the
# target's frame, when it left the target and when the load fragment's receiver got it (ns,
# CLOCK_MONOTONIC).
MESSAGES_FILE = "messages.parquet"
# H2's verdict (rtstudy.inference.criteria): at the highest native load factor every real-time
# policy must cut the frame-period std by at least MIN_REDUCTION, its whole CI at or above it.
MIN_REDUCTION = criteria.value("h2_min_reduction")
# The H2 control's equivalence margin: this many times the floor's std without contention.
CONTROL_FLOOR_MULTIPLE = criteria.value("h2_control_floor_multiple")
GIL_RATIO = criteria.value("e2_gil_ratio")  # RT std, Python over native loads: the GIL sets it
FLOOR_GOAL = criteria.value("e2_floor_goal")  # within this × the floor's std: "at the floor"
# The configurations compared with the floor, fixed before the data (issue 20): every real-time
# policy in the seeds' own layout (load operators in the app, Holoscan's dispatcher, native
# loads) at the headline point. The report names no "closest" configuration: the smallest of a
# dozen noisy ratios would be chosen by its noise.
FLOOR_CONFIGURATION = {"load_placement": "operators", "dispatcher": "other",
                       "load_work_model": "native", "topology": "dedicated"}


# What load() returns (rtstudy.data.schema adds the columns every table has): per table, what
# a row is and each column's (kind, unit, meaning).
_CONDITION = {
    "policy": ("str", "", "the target's policy: `normal` (in one pool with the loads), "
               "`normal_dedicated` (a normal thread of its own, pinned as the real-time ones), "
               "`SCHED_FIFO`, `SCHED_RR` or `SCHED_DEADLINE`; the floor's: `SCHED_FIFO`"),
    "topology": ("str", "", "`dedicated` (the target on a thread of its own), `shared` (in the "
                 "pool with the loads), `seed_python` or `seed_cpp` (the seeds' pools and "
                 "pinning), `floor` (cyclictest), `python_thread` (the ladder's plain Python "
                 "thread, no Holoscan)"),
    "dispatcher": ("str", "", "the EventBasedScheduler's dispatcher thread: `other` "
                   "(SCHED_OTHER, Holoscan's own), `fifo` (SCHED_FIFO) or `fifo_pinned` "
                   "(SCHED_FIFO pinned to a housekeeping CPU); `none` for the floor and the "
                   "Python thread"),
    "load_placement": ("str", "", "where the loads ran: `operators` (in the app), "
                       "`operators_pinned` (the same, pinned off the target's CPU), `process` "
                       "(stress-ng processes), `threads` (plain threads of the app's process), "
                       "`outside` (the same threads in a process of their own), `fragment` "
                       "(load operators in a Holoscan fragment of their own, another process); "
                       "`none` for an unloaded floor or Python thread"),
    "load_factor": ("float", "loads/CPU", "loads per CPU the loads may use (the housekeeping "
                    "CPUs)"),
    "loads": ("int", "count", "the loads"),
    "load_work_model": ("str", "", "the loads' work: `native` (GIL released) or `python` "
                        "(GIL held)"),
    "switch_interval_ms": ("float", "ms", "the interpreter's GIL switch interval (Python's "
                           "default 5 unless the run set it)"),
    "wake_mode": ("str", "", "how the target's thread waits between frames: `sleep` (Holoscan "
                  "4.x; 5.0's SLEEPING_WAITSET) or `busy_poll` (5.0's BUSY_POLL: it spins)"),
    "fps": ("int", "1/s", "the target's frame rate"),
    "pinned": ("bool", "", "whether the target (the floor: cyclictest) was pinned to a CPU"),
    "dispatcher_read": ("str", "", "the dispatcher's policy as read back on its thread "
                        "(`SCHED_OTHER`, `SCHED_FIFO`); empty when not read"),
}
_RUN_METRICS = {  # metrics.run_metrics over a run's frames after the warm-up
    "nominal_ms": ("float", "ms", "the nominal frame period"),
    "n": ("int", "count", "frame periods: the frames after the warm-up, minus one"),
    "duration_s": ("float", "s", "from the first frame kept to the last, measured"),
    # Typical jitter (and NVIDIA flow benchmarking's tail and flatness), in µs.
    **{f"period_{s}_us": ("float", "µs", f"the frame periods' {m}") for s, m in (
        ("iqr", "P75 − P25 (typical jitter)"),
        ("mad", "median absolute deviation from their median, unscaled (typical jitter)"),
        ("tail", "P100 − P95 (NVIDIA flow benchmarking's tail)"),
        ("flatness", "P90 − P10 (NVIDIA flow benchmarking's flatness)"))},
    "period_iqr_within_us2": ("float", "µs²", "the sampling variance of `period_iqr_us` from "
                              "the run's own frames (a block bootstrap): its within-run part"),
    **{f"lateness_{s}_us": ("float", "µs", f"the {m} absolute lateness (`frames`' `lateness_ms`)")
       for s, m in (("p50", "median (typical jitter)"), ("p99", "P99"))},
    "lateness_max_ms": ("float", "ms", "the largest absolute lateness"),
    "late_per_10k": ("float", "per 10 000 frames", "`late` per 10 000 frames"),
    "std_top2_share": ("float", "", "the share of the periods' squared deviations from their "
                       "mean that the 2 most extreme carry: how far a few frames decide the std"),
    **{f"period_{s}_ms": ("float", "ms", f"the frame periods' {m}") for s, m in (
        ("mean", "mean"), ("std", "standard deviation"), ("min", "minimum"),
        ("max", "maximum"), ("p50", "median"), ("p99", "P99"), ("p99.9", "P99.9"))},
    **{f"exec_{s}_ms": ("float", "ms", f"the execution times' {m} (0 for the floor)") for s, m in (
        ("mean", "mean"), ("std", "standard deviation"), ("p99", "P99"), ("max", "maximum"))},
    "late": ("int", "count", "late frames: absolute lateness above `late_threshold_ms`"),
    "late_fixed": ("int", "count", "late frames on the fixed grid of one period, every other "
                   "policy's yardstick: `late` but for Holoscan 4.x's SCHED_DEADLINE target, "
                   "whose releases follow its previous frame"),
    "missed": ("int", "count", "the nominal periods the measured span holds, minus the periods "
               "measured (0 when not more)"),
    "load_cpu": ("float", "CPUs", "CPU time the app's process and the loads it started used per "
                 "second of the run: how many CPUs' worth the loads got (the target's own work "
                 "is ~0.1 ms a frame); NaN without loads or where not recorded"),
}
_LATENESS = ("float", "ms", "the frame's compute start − its release (metrics.lateness_ns): "
             "on a fixed grid of one period placed so that the least late frame's lateness is 0, "
             "or, for Holoscan 4.x's SCHED_DEADLINE target, one period after the previous "
             "frame's start")
SCHEMA = {
    "frames": ("one row per frame after the warm-up but the first, of each Holoscan run that "
               "was not traced", {
        "t_s": ("float", "s", "the frame's compute start, since the first frame kept"),
        "period_ms": ("float", "ms", "since the previous frame's compute start: the frame period"),
        "exec_ms": ("float", "ms", "the target's fixed work in the frame's compute"),
        "lateness_ms": _LATENESS,
        **_CONDITION}),
    "runs": ("one row per Holoscan run that was not traced", {**_CONDITION, **_RUN_METRICS}),
    "floor": ("one row per cyclictest run (the floor): the metrics of `runs`, a loop being a "
              "frame", {**_CONDITION, **_RUN_METRICS}),
    "attribution": ("one row per frame inside the scheduler trace of each traced run, after "
                    "the warm-up", {
        "frame": ("int", "", "the frame's index in the run, from 0 (the warm-up counted)"),
        "lateness_ms": _LATENESS,
        "deviation_ms": ("float", "ms", "its period − the nominal period: the change in "
                         "lateness from the frame before (NaN for the first after the warm-up)"),
        **{part: ("float", "ms", f"of the lateness: {what}") for part, what in PARTS.items()},
        "waker": ("str", "", "who made the worker's last wake-up before its compute: "
                  "`dispatcher`, `timer or other thread`, or `already awake`"),
        "displaced": ("str", "", "who had the CPU the worker last got before its compute: "
                      "`idle`, `dispatcher`, `the app's own threads (loads)`, `stress-ng`, "
                      "`other tasks (kernel, system)`, or `(already running)`"),
        "blocked_by": ("str", "", "who woke the worker after it woke and slept again (a lock), "
                       "in the classes of `displaced`; empty when it did not"),
        "gil_wait_ms": ("float", "ms", "of the lateness, the worker's wait for the GIL (from "
                        "entering CPython's take_gil to its return); NaN without GIL probes"),
        **{f"holder_{s}_ms": ("float", "ms", f"of that wait, the GIL's holder {m}") for s, m in (
            ("running", "running"), ("preempted", "runnable without a CPU (preempted)"),
            ("asleep", "asleep while holding it"))},
        "gil_free_ms": ("float", "ms", "of that wait, the GIL held by nobody (the hand-over)"),
        "gil_holder": ("str", "", "the thread that held the GIL longest during the wait, in "
                       "the classes of `displaced`; empty when the worker did not wait"),
        "holder_preempted_by": ("str", "", "who first took a holder's CPU during the wait, in "
                                "the classes of `displaced`; empty when none did"),
        "holder_woken_by": ("str", "", "who first woke a holder asleep during the wait (the "
                            "lock it held the GIL across), in the classes of `displaced`; empty "
                            "when none slept"),
        "pattern": ("str", "", "the frame's mechanism (attribution.PATTERNS): the GIL's holder "
                    "preempted, running or asleep, a hand-over, another lock, a CPU wait, a "
                    "late wake-up or running"),
        **_CONDITION}),
    "traces": ("one row per traced run (left out of every statistic: tracing costs the run "
               "time)", {
        **_CONDITION,
        "events": ("int", "count", "the scheduler events recorded (every CPU)"),
        "frames": ("int", "count", "the run's frames after the warm-up"),
        "attributed": ("int", "count", "those inside the trace, attributed (`attribution`'s "
                       "rows); 0 when none could be"),
        "gil_probed": ("bool", "", "whether the trace holds the GIL probes"),
        "n": _RUN_METRICS["n"], "period_iqr_us": _RUN_METRICS["period_iqr_us"],
        "late": _RUN_METRICS["late"],
    }),
}
TABLES = tuple(SCHEMA)


def load(directory: Path, cfg: dict) -> Dataset:
    """Frames and per-run metrics of the plan's completed cells, the floor, and the attribution.

    Parameters
    ----------
    directory : Path
        The dataset folder.
    cfg : dict
        E2's resolved parameters (``warmup_frames``, ``late_threshold_ms``).

    Returns
    -------
    Dataset
        ``tables`` (:data:`SCHEMA`; ``runs`` from :func:`.metrics.run_metrics`,
        ``attribution`` from :func:`.attribution.attribute_run`), ``missing`` cell ids, and
        ``extra["messages"]``: one row per run of the fragment fix, its message latencies
        (:func:`message_latency`) beside the columns of ``runs``' conditions.
    """
    warmup_frames, late_threshold_ms = cfg["warmup_frames"], cfg["late_threshold_ms"]
    cells, missing = read_cells(directory, SAMPLES)
    frame_tables, rows, floor_rows, attributed, traces, messages = [], [], [], [], [], []
    for cell in cells:
        config = cell.config
        samples = cell.samples().sort_values("frame")
        base = cell.columns(**factor_levels(config), fps=config["fps"], pinned=config["pinned"],
                            dispatcher_read=_dispatcher_read(cell))
        frames = RunFrames.of(samples, warmup_frames, config["period_ns"],
                              release_grid(config["policy"], samples.columns))
        metrics = run_metrics(frames, config["period_ns"] / 1e6, late_threshold_ms)
        if config.get("trace_s"):
            # A traced run is set aside from the statistics: tracing costs the run time
            # (tracing_cost() says how much).
            frames_of = attribute_cell(cell, samples, warmup_frames)
            attributed.append((frames_of, base))
            trace = cell.sidecar["summary"].get("trace", {})
            traces.append({**base, "events": int(trace.get("n_events", 0)),
                           "frames": int(len(samples)) - warmup_frames,
                           "attributed": int(len(frames_of)),
                           "gil_probed": bool(trace.get("gil", {}).get("probed")),
                           **{k: metrics[k] for k in ("n", "period_iqr_us", "late")}})
            continue
        row = {**base, **metrics, "load_cpu": _load_cpu(cell)}
        if config.get("tool"):
            floor_rows.append(row)
            continue
        frame_tables.append((frames.table(), base))
        rows.append(row)
        if (cell.folder / MESSAGES_FILE).is_file() and not base["drift"]:
            messages.append({**base, **message_latency(read_samples(cell.folder / MESSAGES_FILE),
                                                       warmup_frames, config["frames"])})
    frames = stack(frame_tables)
    tables = {"frames": frames, "runs": pd.DataFrame(rows), "floor": pd.DataFrame(floor_rows),
              "traces": pd.DataFrame(traces),
              # int and float: a traced run with no complete chain adds an empty (object) frame.
              "attribution": (stack(attributed).astype(
                  {"frame": int, **{c: float for c in ["lateness_ms", "deviation_ms", *PARTS,
                                                       *GIL_TIMES]}})
                  if attributed else pd.DataFrame())}
    # Not a table of SCHEMA: only the fragment fix's runs have messages.
    return Dataset(Path(directory), set_aside_drift(tables, "runs"), missing,
                   extra={"messages": pd.DataFrame(messages)})


def message_latency(messages: pd.DataFrame, warmup_frames: int, frames: int) -> dict:
    """One run's message latencies (receipt − send, µs) over the frames after the warm-up.

    Parameters
    ----------
    messages : DataFrame
        The run's ``messages.parquet``: ``frame``, ``t_send_ns``, ``t_recv_ns``.
    warmup_frames : int
        Frames at the start whose messages are left out (the connection's start-up).
    frames : int
        The run's frames, the warm-up included.

    Returns
    -------
    dict
        ``messages`` (received), ``lost`` (frames after the warm-up whose message never came),
        ``message_p50_us``, ``message_p99_us``, ``message_max_us`` (NaN without messages).
    """
    kept = messages[messages["frame"] >= warmup_frames]
    latency_us = (kept["t_recv_ns"] - kept["t_send_ns"]).to_numpy() / 1e3
    p50, p99, top = np.percentile(latency_us, [50, 99, 100]) if len(kept) else (np.nan,) * 3
    return {"messages": int(len(kept)), "lost": int(frames - warmup_frames - len(kept)),
            "message_p50_us": float(p50), "message_p99_us": float(p99),
            "message_max_us": float(top)}


def _load_cpu(cell: CellData) -> float:
    """The CPUs' worth a loaded run's process and loads used (``runs``' ``load_cpu``).

    CPU time, not the loads' completed calls: a load busy for 20 ms of wall time completes its
    call whether or not it had a CPU meanwhile. The fragment fix's: each of its two processes'
    from the first frame to the last (app.py ``frames_window``), summed; its whole run holds
    the fragments' start-up."""
    summary = cell.sidecar.get("summary", {})
    window = summary.get("fragment", {}).get("frames_window")
    if window:
        return sum(w["cpu_s"] / w["seconds"] for w in window.values())
    seconds = summary.get("duration_s") or 0
    if not (cell.config.get("loads") and seconds and "cpu_s" in summary):
        return float("nan")
    return summary["cpu_s"] / seconds


def _dispatcher_read(cell: CellData) -> str:
    """The dispatcher's policy as read back on its thread ("" when it was not read)."""
    dispatcher = cell.sidecar["operators"].get(DISPATCHER, {}).get("sched") or {}
    return BY_NUMBER.get(dispatcher.get("policy"), "")


CUT = judge.Rule(judge.AT_LEAST, MIN_REDUCTION)


def h2_std(red: pd.DataFrame) -> dict:
    """H2 as the seeds asked it: the frame-period std at the highest native load factor,
    each real-time policy's reduction judged over runs (a reading beside the verdict, which
    is on late frames: :func:`h2_verdict`).

    A policy *shows* a cut when its std reduction's whole CI (over runs) lies at or above
    :data:`MIN_REDUCTION`, and *refutes* it when the whole CI lies below
    :data:`MIN_REDUCTION` (:data:`CUT`, :mod:`rtstudy.inference.judge`). ``verdict``: every policy
    shows it (reproduced), every one refutes it (not reproduced), some each (partly
    reproduced), else not settled; not testable here without the runs to compare.
    """
    native = red[red["load_work_model"] == "native"] if len(red) else red
    if native.empty:
        return {"verdict": judge.NOT_TESTABLE, "why": "no native-load runs"}
    top = native[native["load_factor"] == native["load_factor"].max()]
    rt = top[top["policy"].isin(RT_POLICIES)]
    if rt.empty:
        return {"verdict": judge.NOT_TESTABLE, "why": "no real-time policy measured"}
    # A std comparison with a starved condition is void: it cannot show or refute H2.
    each = {r["policy"]: judge.NOT_SETTLED if r["void"] else CUT.state(r["low"], r["high"])
            for r in rt.to_dict("records")}
    states = set(each.values())
    if states == {judge.SHOWN}:
        verdict = judge.Verdict.REPRODUCED
    elif states == {judge.REFUTED}:
        verdict = judge.Verdict.NOT_REPRODUCED
    elif states == {judge.SHOWN, judge.REFUTED}:
        verdict = judge.Verdict.PARTLY
    else:
        verdict = judge.NOT_SETTLED
    out = {"verdict": verdict, "load_factor": float(top["load_factor"].iloc[0]),
           "rows": rt.to_dict("records"), "each": each,
           "runs": int(min(rt["n_runs"].min(), rt["n_runs_normal"].min()))}
    if verdict == judge.NOT_SETTLED:
        few = out["runs"] < MIN_RUNS
        void = sorted({label for r in out["rows"] for label in r["void"]})
        out["why"] = (f"fewer than {MIN_RUNS} runs per policy, so no CI" if few else
                      f"{', '.join(void)} starved, so the std comparison is void" if void else
                      f"a std change's CI straddles the −{MIN_REDUCTION:.0%} threshold")
    return out


def h2_combine(parts: list[judge.Part]) -> tuple[judge.Verdict, str]:
    """H2's verdict from each real-time policy's late-frame rate ratio against the baseline
    (:func:`late_part`): reproduced when every policy judged gives *fewer*, not reproduced
    when none does (each *equivalent* or *more*), partly reproduced when some do; not settled
    while a ratio's CI straddles; not applicable when no policy can be compared because the
    baseline was hardly ever late (fewer than ``e2_min_late_events`` late frames in both
    together): the contention did not reach the target, so no policy had anything to cut."""
    states = {p.name: p.state for p in parts}
    rare = [n for n, w in states.items() if w == rates.TOO_FEW]
    if not parts or len(rare) == len(parts):
        base = parts[0].counts if parts else {}
        return (judge.NOT_APPLICABLE, (f"{base['events_a']} of {base['exposure_a']:,.0f} "
                                       f"{BASELINE} frames late: " if base else "") +
                "the contention did not reach the target often enough to compare a policy")
    judged = [p for p in parts if p.state != rates.TOO_FEW]
    aside = f"; too few late frames to compare {', '.join(rare)}" if rare else ""
    if not all(p.decided for p in judged):
        return judge.NOT_SETTLED, judge.unsettled_why(judged) + aside
    fewer = [p.name for p in judged if p.state == rates.FEWER]
    if len(fewer) == len(judged):
        return judge.Verdict.REPRODUCED, aside.lstrip("; ")
    if not fewer:
        return judge.Verdict.NOT_REPRODUCED, aside.lstrip("; ")
    return judge.Verdict.PARTLY, ("not fewer " + ", ".join(p.name for p in judged
                                                          if p.name not in fewer) + aside)


def h2_verdict(recs: list[dict]) -> dict:
    """H2 at the headline point, judged on late frames: each real-time policy against the
    baseline as a late-frame rate ratio (:func:`late_part`, the words of
    ``criteria: e2_late_ratio_margin``), combined by :func:`h2_combine`; not testable here
    without a policy measured beside the baseline there."""
    rows = [r for r in recs if r.get("kind") == "policy"]
    if not rows:
        return {"verdict": judge.NOT_TESTABLE, "why": "no real-time policy measured beside "
                f"{BASELINE} at the headline point", "parts": [], "rows": [], "runs": 0}
    parts = [late_part(r) for r in rows]
    verdict, why = h2_combine(parts)
    return {"verdict": verdict, "parts": parts, "rows": rows,
            "each": {p.name: p.state for p in parts},
            "runs": int(min(p.runs for p in parts)), **({"why": why} if why else {})}


def control_margin(floor: pd.DataFrame) -> float:
    """The H2 control's equivalence margin (ms): :data:`CONTROL_FLOOR_MULTIPLE` times the
    floor's mean frame-period std at its lowest load factor; NaN without a floor.

    The floor (cyclictest at the same period, priority and pinning) is the jitter the
    operating system alone shows: a difference between two policies smaller than it is
    none a scheduling policy could be asked to remove. The baseline's own std is no
    scale for it (0.1 ms was 76 % of the 0.132 ms baseline on the reference host).
    """
    if not len(floor):
        return float("nan")
    lowest = floor[floor["load_factor"] == floor["load_factor"].min()]
    return float(CONTROL_FLOOR_MULTIPLE * lowest["period_std_ms"].mean())


def null_combine(parts: list[judge.Part]) -> tuple[judge.Verdict, str]:
    """The H2 control from each policy's std difference (:func:`null_verdict`): no difference
    when every one is equivalent, differs when any is different, else not settled."""
    states = [p.state for p in parts]
    if states and all(w == judge.EQUIVALENT for w in states):
        return judge.Verdict.NO_DIFFERENCE, ""
    if judge.DIFFERENT in states:
        return judge.Verdict.DIFFERS, ""
    return judge.NOT_SETTLED, judge.unsettled_why(parts)


def null_verdict(red: pd.DataFrame, margin_ms: float) -> dict:
    """Without contention (the lowest load factor), is each real-time policy's jitter the same?

    Equivalence within ±``margin_ms`` (:func:`control_margin`) of the difference in mean
    per-run std (policy − baseline), CI over runs, per policy a part
    (:mod:`rtstudy.inference.judge`), combined by :func:`null_combine`; not testable here without
    runs or a margin (no floor measured).
    """
    if red.empty:
        return {"verdict": judge.NOT_TESTABLE, "why": "no runs", "margin_ms": margin_ms,
                "rows": [], "each": {}, "load_factor": float("nan"), "parts": []}
    zero = red[(red["load_factor"] == red["load_factor"].min()) & red["policy"].isin(RT_POLICIES)]
    out = {"margin_ms": margin_ms, "rows": zero.to_dict("records"),
           "load_factor": float(zero["load_factor"].iloc[0]) if len(zero) else float("nan")}
    if not np.isfinite(margin_ms):
        return {**out, "verdict": judge.NOT_TESTABLE, "each": {}, "parts": [],
                "why": "no floor measured in this sweep to set the margin"}
    rule = judge.Rule(judge.WITHIN, margin_ms)
    parts = [judge.Part(r["policy"], rule, r["diff_ms"], r["diff_low"], r["diff_high"],
                        int(min(r["n_runs"], r["n_runs_normal"])))
             for r in zero.to_dict("records")]
    verdict, why = null_combine(parts)
    return {**out, "verdict": verdict, "each": {p.name: p.state for p in parts},
            "parts": parts, **({"why": why} if why else {})}


def headline(cfg: dict, ds_tables: dict, red: pd.DataFrame, ci: CI,
             messages: pd.DataFrame | None = None) -> dict:
    """The numbers E2's prose quotes, all computed here, one step per part.

    Parameters
    ----------
    cfg : dict
        E2's resolved parameters.
    ds_tables : dict
        :func:`load`'s tables.
    red : DataFrame
        :func:`.contrasts.reductions` against ``normal_dedicated``.
    ci : CI
        How CIs over runs are made.
    messages : DataFrame, optional
        :func:`load`'s ``extra["messages"]``: the fragment fix's message latencies per run.

    Returns
    -------
    dict
        ``verdict`` (:func:`h2_verdict`), ``conditions`` (each condition's typical
        jitter and late frames, :func:`.contrasts.condition_summary`, the floor's
        too), ``late`` (:func:`_typical_and_late`), ``zero`` (:func:`null_verdict`),
        ``one`` (each real-time policy at 1 load per CPU), ``gil`` (GIL-holding
        loads at the highest factor), ``seed_style`` (the reductions against the
        seed's shared-pool baseline), ``seeds`` (:func:`.contrasts.seed_compatible`),
        ``effects`` (:func:`.contrasts.effects`), ``floor``
        (:func:`.contrasts.floor_ratios`, the pre-specified configurations),
        ``attribution``, ``mechanism`` (:func:`.attribution.mechanism_summary`: the late
        frames' mechanisms) and ``mechanism_rt`` (the real-time conditions' pooled,
        :func:`.attribution.mechanism_totals`), ``tracing_cost`` (:func:`.attribution.tracing_cost`),
        ``ladder`` (:func:`.ladder.ladder`), ``recommendations``
        (:func:`.ladder.recommendations`) and the counts the prose states.
    """
    runs, frames = ds_tables["runs"], ds_tables["frames"]
    conditions = condition_summary(pd.concat([runs, ds_tables["floor"]], ignore_index=True), ci)
    policy = cfg["ladder_policy"]
    recs = recommendations(runs, policy, ci, messages).to_dict("records")
    return {**_design(runs), "ladder_policy": policy,
            "ladder": ladder(runs, ds_tables["floor"], policy, ci).to_dict("records"),
            "recommendations": recs, "verdict": h2_verdict(recs), "std": h2_std(red),
            "late_threshold_ms": cfg["late_threshold_ms"], "min_reduction": MIN_REDUCTION,
            "min_runs": MIN_RUNS, "baseline": BASELINE, "seed_baseline": SEED_BASELINE,
            "conditions": conditions.to_dict("records"), "late": _typical_and_late(conditions),
            "yardsticks": _yardsticks(runs),
            "decided_share": DECIDED_SHARE, "starved_offset": STARVED_OFFSET,
            "zero": null_verdict(red, control_margin(ds_tables["floor"])),
            "control_floor_multiple": CONTROL_FLOOR_MULTIPLE,
            "one": _one_load_per_cpu(red), "seed_style": _seed_style(runs, frames, red, ci),
            "seeds": seed_compatible(runs, ci), "gil": _gil(runs, red, conditions),
            "effects": effects(runs, ci).to_dict("records"),
            "floor": _floor(runs, ds_tables["floor"], ci), "floor_goal": FLOOR_GOAL,
            "attribution": attribution_summary(ds_tables["attribution"]).to_dict("records"),
            **_mechanism(ds_tables["attribution"], cfg["late_threshold_ms"]),
            "patterns": PATTERNS, "switch_interval_ms": SWITCH_INTERVAL_MS,
            "tracing_cost": tracing_cost(runs, ds_tables.get("traces", pd.DataFrame()),
                                         ci).to_dict("records"),
            "parts": PARTS, **_unattributed(ds_tables.get("traces", pd.DataFrame()))}


def _design(runs: pd.DataFrame) -> dict:
    """What was measured: the load factors, the policies pinned, the runs, and each
    dispatcher level's policies as read back."""
    if not len(runs):
        return {"factors": [], "pinned": [], "n_runs": 0, "dispatchers_read": {}}
    return {"factors": sorted(float(f) for f in runs["load_factor"].unique()),
            "pinned": sorted(runs.loc[runs["pinned"], "policy"].unique()),
            "n_runs": int(len(runs)),
            "dispatchers_read": {d: sorted(set(g["dispatcher_read"]) - {""})
                                 for d, g in runs.groupby("dispatcher")}}


def _one_load_per_cpu(red: pd.DataFrame) -> list[dict]:
    """Each real-time policy's reduction at 1 native load per CPU."""
    if not len(red):
        return []
    native = red[red["load_work_model"] == "native"]
    return native[(native["load_factor"] == 1)
                  & native["policy"].isin(RT_POLICIES)].to_dict("records")


def _seed_style(runs: pd.DataFrame, frames: pd.DataFrame, red: pd.DataFrame, ci: CI) -> list[dict]:
    """The reductions against the seed's baseline (the shared pool) at the highest native load."""
    if not len(red):
        return []
    seed_style = reductions(runs, frames, ci, SEED_BASELINE)
    if not len(seed_style):
        return []
    s = seed_style[(seed_style["load_work_model"] == "native")]
    return s[s["load_factor"] == s["load_factor"].max()].to_dict("records")


def _gil(runs: pd.DataFrame, red: pd.DataFrame, conditions: pd.DataFrame) -> dict | None:
    """GIL-holding (Python) loads at the highest factor: the reductions, the frames missed,
    each policy's late frames with Python and with native loads (``late``: policy →
    {model: :func:`.contrasts.summarize` row}), and each real-time policy's std over its std
    with native loads where neither starved; None without Python loads."""
    gil = red[(red["load_work_model"] == "python")
              & (red["load_factor"] == red["load_factor"].max())] if len(red) else red
    if not len(gil):
        return None
    factor = float(gil["load_factor"].iloc[0])
    g = grid(runs)
    late = g[(g["load_work_model"] == "python") & (g["load_factor"] == factor)]
    native = red[(red["load_work_model"] == "native")
                 & (red["load_factor"] == factor)].set_index("policy")
    cells = grid(conditions)
    cells = cells[cells["load_factor"] == factor]
    # A policy whose Python- or native-load condition starved has no std ratio.
    hungry = set(cells.loc[cells["starved"], "policy"])
    ratios = {r["policy"]: r["std_ms"] / native.loc[r["policy"], "std_ms"]
              for r in gil.to_dict("records")
              if r["policy"] in RT_POLICIES and r["policy"] in native.index
              and native.loc[r["policy"], "std_ms"] > 0 and r["policy"] not in hungry}
    return {"load_factor": factor, "rows": gil.to_dict("records"),
            "lost": {p: int(n) for p, n in late.groupby("policy")["missed"].sum().items()},
            "late": {p: {m: c for m, c in zip(h["load_work_model"], h.to_dict("records"))}
                     for p, h in _by_policy(cells)},
            "ratios": ratios, "gil_ratio": GIL_RATIO,
            "gil_bound": bool(ratios) and min(ratios.values()) > GIL_RATIO}


def _by_policy(conditions: pd.DataFrame):
    """``conditions`` grouped by policy, in the order the policies are named (params.py)."""
    order = {p: i for i, p in enumerate(POLICY_NAMES)}
    return sorted(conditions.groupby("policy"), key=lambda kv: order.get(kv[0], len(order)))


def _typical_and_late(conditions: pd.DataFrame) -> dict | None:
    """The policy grid at the headline point: each policy's typical jitter and late frames
    (:func:`.contrasts.summarize` rows, in policy order), the real-time runs whose std the 2
    most extreme frames decide (and the frames of a run, on average), the real-time policies
    whose IQR CI lies apart from the baseline's (``iqr_apart``; NaN bounds, below 3 runs,
    compare false), and the floor at the same load factor; None without it. Late frames are
    compared by rate ratio (:func:`h2_verdict`), not here."""
    top = headline_point(grid(conditions)) if len(conditions) else conditions
    if not len(top):
        return None
    factor = float(top["load_factor"].iloc[0])
    rt = top[top["policy"].isin(RT_POLICIES)]
    floor = conditions[(conditions["topology"] == "floor") & (conditions["load_factor"] == factor)]
    base = top[top["policy"] == BASELINE]
    b = base.iloc[0] if len(base) else None
    apart = [r["policy"] for r in rt.to_dict("records")
             if b is not None and (r["iqr_high"] < b["iqr_low"] or r["iqr_low"] > b["iqr_high"])]
    return {"load_factor": factor,
            "rows": [h.iloc[0].to_dict() for _, h in _by_policy(top)],
            "rt_runs": int(rt["runs"].sum()), "rt_decided": int(rt["decided"].sum()),
            "frames_per_run": int(top["frames"].sum() // top["runs"].sum()),
            "iqr_apart": apart,
            "floor": floor.iloc[0].to_dict() if len(floor) else None}


def _yardsticks(runs: pd.DataFrame) -> dict | None:
    """SCHED_DEADLINE's late frames at the headline point on both yardsticks: ``late`` against
    one period after its previous frame (its own releases, :func:`.metrics.release_grid`) and
    ``late_fixed`` on the fixed grid every other policy is judged on, with ``frames`` and
    ``runs``; None where its frames were released on the fixed grid (Holoscan 5.0's clock) or
    it was not measured there."""
    top = headline_point(grid(runs)) if len(runs) else runs
    d = top[top["policy"] == SCHED_DEADLINE] if len(top) else top
    if not len(d) or "late_fixed" not in d or (d["late_fixed"] == d["late"]).all():
        return None
    return {"late": int(d["late"].sum()), "late_fixed": int(d["late_fixed"].sum()),
            "frames": int(d["n"].sum()), "runs": int(len(d))}


def _floor(runs: pd.DataFrame, floor: pd.DataFrame, ci: CI) -> dict | None:
    """Every headline-point condition's ratio to the floor; the pre-specified ones
    (:data:`FLOOR_CONFIGURATION`, one per real-time policy) and those of them within
    :data:`FLOOR_GOAL` (whole CI) among those that did not starve; None without a floor."""
    ratios = floor_ratios(headline_point(runs), floor, ci)
    if not len(ratios):
        return None
    chosen = np.logical_and.reduce([ratios[k] == v for k, v in FLOOR_CONFIGURATION.items()]
                                   + [ratios["policy"].isin(RT_POLICIES)])
    ratios = ratios.assign(prespecified=chosen)
    kept = ratios[chosen & (ratios["void"].map(len) == 0)]
    return {"prespecified": kept.to_dict("records"), "rows": ratios.to_dict("records"),
            "floor_std_ms": float(ratios["floor_std_ms"].iloc[0]),
            "load_factor": ratios["load_factor"].iloc[0],
            "at_floor": [r["label"] for r in kept.to_dict("records")
                         if np.isfinite(r["high"]) and r["high"] <= FLOOR_GOAL]}


def _mechanism(att: pd.DataFrame, threshold_ms: float) -> dict:
    """``mechanism`` (per traced condition) and ``mechanism_rt`` (the real-time ones pooled)."""
    m = mechanism_summary(att, threshold_ms)
    return {"mechanism": m.to_dict("records"), "mechanism_rt": mechanism_totals(m, RT_POLICIES)}


def _unattributed(traces: pd.DataFrame) -> dict:
    """The traced conditions none of whose frames could be attributed, and their policies."""
    none = traces[traces["attributed"] == 0] if len(traces) else traces
    return {"unattributed": none["label"].str.replace("-trace", "").tolist() if len(none) else [],
            "unattributed_policies": sorted(set(none["policy"])) if len(none) else []}


# What the drift check compares (stats.drift_check): a name and its unit.
# The typical jitter, not the std: a few late frames decide a run's std (one condition's runs
# spread 0.03–1.44 ms on the reference host), so no drift could exceed the std's spread.
DRIFT_QUANTITY = ("frame-period IQR", "µs")


def drift(ds: Dataset) -> dict | None:
    """The sweep's drift check on the frame period's IQR (µs, the typical jitter); None
    without one."""
    return drift_check(ds.tables["runs"], ds.tables["drift"], "period_iqr_us")


# The table behind E2's figure that DVC plots (dvc.yaml `plots:`): one row per run of a load
# factor (native loads, the policy grid), one column per policy.
PLOT_FILE = "e2_period_std.csv"


def plot_table(ds: Dataset) -> pd.DataFrame | None:
    """The frame-period std (ms) per run against the load factor, native loads, the policy grid."""
    runs = grid(ds.tables["runs"])
    if not len(runs):
        return None
    native = runs[runs["load_work_model"] == "native"]
    return wide(native, ["load_factor", "repetition"], native["policy"], "period_std_ms")


def power_plan(ds: Dataset, cfg: dict, ci: CI, host_id: str) -> str:
    """The frames per condition each late-frame comparison needs to decide at 80 % power,
    from ``ds`` (:mod:`.power`), as ``rtstudy plan power`` prints it."""
    from rtstudy.experiments.e2_rt_threads import power

    return power.text(power.plan(ds.tables["runs"], cfg, ci), cfg, host_id)
