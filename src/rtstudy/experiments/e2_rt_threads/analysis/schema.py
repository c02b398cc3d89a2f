"""E2's tables as :func:`.analysis.load` returns them: per table, what a row is and each
column's (kind, unit, meaning); :func:`rtstudy.data.schema` adds the columns every table has.
"""
from __future__ import annotations

from rtstudy.experiments.e2_rt_threads.analysis.attribution import PARTS

# A run's condition (conditions.factor_levels and what was read back): in every table.
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
    "n": ("int", "count", "releases judged: the frames after the warm-up, minus one, plus the "
          "releases the clock skipped (`skipped`); every late-frame rate's denominator"),
    "duration_s": ("float", "s", "from the first frame kept to the last, measured"),
    "grid": ("str", "", "the releases lateness is against: `fixed` (T₀ + k·P: 4.x's periodic "
             "condition, cyclictest), `previous` (one period after the previous start: 4.x's "
             "SCHED_DEADLINE target) or `recorded` (each activation's own release: 5.0's clock)"),
    "skipped": ("int", "count", "releases the clock skipped between kept frames (5.0's clock "
                "skips a tick it missed instead of catching up); each counts as a late frame"),
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
    "late": ("int", "count", "late frames: absolute lateness above `late_threshold_ms`, plus "
             "the releases skipped (`skipped`)"),
    "late_head": ("int", "count", "`late` among the run's first `headline_duration_s` of "
                  "releases after the warm-up: what the policies are compared on (balanced "
                  "arms: a run sized for the fixes weighs as its baseline's)"),
    "n_head": ("int", "count", "the releases `late_head` counts in"),
    "late_fixed": ("int", "count", "late frames on the fixed grid of one period, what a consumer "
                   "on a fixed clock sees: `late` but for Holoscan 5.0, whose clock skips a "
                   "missed tick (every later frame a period behind the grid)"),
    "late_previous": ("int", "count", "frames whose period exceeds the nominal one by more than "
                      "`late_threshold_ms` (lateness against one period after the previous "
                      "frame: the kernel's own releases of Holoscan 4.x's SCHED_DEADLINE target, "
                      "and the seeds' frame-period yardstick)"),
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
        "displaced_normal": ("bool", "", "whether that thread ran a normal policy while the "
                             "worker, a real-time thread, waited for its CPU: the kernel's "
                             "real-time throttling (or its fair server) at work"),
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
                    "preempted, running or asleep, a hand-over, another lock, throttling, a CPU "
                    "wait, a late wake-up or running"),
        **_CONDITION}),
    "traces": ("one row per traced run (left out of every statistic: tracing costs the run "
               "time)", {
        **_CONDITION,
        "events": ("int", "count", "the scheduler events recorded (every CPU)"),
        "frames": ("int", "count", "the run's frames after the warm-up"),
        "attributed": ("int", "count", "those inside the trace, attributed (`attribution`'s "
                       "rows); 0 when none could be"),
        "gil_probed": ("bool", "", "whether the trace holds the GIL probes"),
        "unavailable": ("str", "", "why the run has no trace (perf missing, refused, or its data "
                        "unreadable: the run is measured and kept all the same); empty when it "
                        "has one"),
        "n": _RUN_METRICS["n"], "period_iqr_us": _RUN_METRICS["period_iqr_us"],
        "late": _RUN_METRICS["late"],
    }),
}
