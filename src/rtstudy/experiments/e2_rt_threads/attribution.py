"""E2's trace attribution: where each traced frame's delay accrues, from the kernel scheduler trace.

A traced run records the scheduler's ``sched_waking`` and ``sched_switch`` events
(:mod:`rtstudy.apps.trace`); :func:`attribute_run` splits each frame's lateness
against its release into the time the target's worker thread spent in each
state (:data:`PARTS`), and :func:`attribution_summary` says, per traced
condition, which part carries the lateness's variance and who was involved.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rtstudy.experiments.e2_rt_threads.conditions import FACTORS
from rtstudy.experiments.e2_rt_threads.metrics import lateness_ns, release_grid
from rtstudy.io import CellData, read_samples
from rtstudy.realtime import DISPATCHER

# The parts of one frame's lateness against its release time (ms), each a kind of time the
# target's worker thread spent between the release and the start of compute: they add up to
# the lateness exactly (attribute_run()).
PARTS = {
    "wake_ms": "not yet woken (the timer, or the dispatcher)",
    "cpu_wait_ms": "runnable, waiting for a CPU",
    "blocked_ms": "woken, then asleep again (a lock in the app: the GIL, Holoscan's)",
    "running_ms": "running before compute (Holoscan, Python)",
}
# A release is looked for this long before its time (ms): a timer may fire a little early.
EARLY_MS = 1.0
# A traced cell's scheduler events, beside its samples (app.py records them as its "trace" table).
TRACE_FILE = "trace.parquet"


def attribute_cell(cell: CellData, samples: pd.DataFrame, warmup_frames: int) -> pd.DataFrame:
    """A traced cell's frames, attributed (:func:`attribute_run`); empty without its trace file."""
    trace = cell.folder / TRACE_FILE
    if not trace.is_file():
        return pd.DataFrame()
    return attribute_run(read_samples(trace), samples, cell.sidecar, warmup_frames)


def attribute_run(trace: pd.DataFrame, samples: pd.DataFrame, sidecar: dict,
                  warmup_frames: int) -> pd.DataFrame:
    """Each traced frame's lateness against its release, split into :data:`PARTS`.

    The release T_k of frame k and the lateness L_k = C_k − T_k of its compute
    start C_k are those of every E2 statistic (:func:`.metrics.lateness_ns`): on
    the periodic condition's fixed grid (fitted on the frames inside the trace)
    or, for Holoscan 4.x's SCHED_DEADLINE target, one period after the previous
    frame's start.

    From T_k to C_k the target's worker thread is, at every instant, in one
    state that the trace gives (its ``sched_waking`` and ``sched_switch``
    events, CLOCK_MONOTONIC like C_k): asleep and not yet woken for this frame
    (the timer or the dispatcher has not woken it), runnable but without a CPU
    (woken or preempted), asleep again after it woke (blocked on a lock of the
    app: the GIL or a Holoscan mutex), or running before ``compute`` starts. The
    four durations add up to L_k exactly. Also recorded: who made the final
    wake-up (the dispatcher, or a timer/another thread) and who had the CPU
    the worker got.

    Parameters
    ----------
    trace : DataFrame
        The run's ``trace.parquet`` (:mod:`rtstudy.apps.trace` columns).
    samples : DataFrame
        Its frames (``t_start_ns``).
    sidecar : dict
        Its ``cell.json`` (the target's thread id; every thread of the app).
    warmup_frames : int
        Frames left out at the start, as in the statistics.
    """
    threads = sidecar["summary"].get("threads", [])
    target = (sidecar["operators"]["target"].get("sched") or {}).get("tid")
    dispatcher = next((t["tid"] for t in threads if t["comm"] == DISPATCHER), None)
    app_tids = {t["tid"] for t in threads}
    config = sidecar["requested"]["config"]
    period = config["period_ns"]
    t = samples.sort_values("frame")["t_start_ns"].to_numpy()[warmup_frames:]
    columns = ["frame", "lateness_ms", "deviation_ms", *PARTS, "waker", "displaced",
               "blocked_by"]
    ev = trace.sort_values("t_ns", kind="stable")
    mine = ev[((ev["event"] == "waking") & (ev["pid"] == target)) |
              ((ev["event"] == "switch") & ((ev["pid"] == target) | (ev["prev_pid"] == target)))]
    if t.size < 2 or mine.empty:
        return pd.DataFrame(columns=columns)
    times = mine["t_ns"].to_numpy()
    # Only frames inside the trace: the grid is fitted on them.
    inside = (t > times[0] + EARLY_MS * 1e6) & (t <= times[-1])
    late = lateness_ns(t, period, release_grid(config.get("policy"), samples.columns), inside)
    rows = []
    # A frame that started before its release has no delay to split. Only SCHED_DEADLINE's
    # frames can: their release is one period after the previous start, and the kernel's own
    # period boundary may come sooner.
    for k in np.flatnonzero(inside & np.isfinite(late) & (late >= 0)):
        start = int(t[k])
        release = start - int(round(late[k]))
        first = int(np.searchsorted(times, release, side="right"))
        early = int(np.searchsorted(times, release - EARLY_MS * 1e6, side="right"))
        state = _state_before(mine, first, target)
        # A wake-up in the moments before the release counts: the timer may fire early.
        woken = bool((mine["event"].iloc[early:first] == "waking").any())
        spent = dict.fromkeys(PARTS, 0)
        now, waker, displaced, blocked_by = release, "", "", ""
        for e in mine.iloc[first:int(np.searchsorted(times, start, side="right"))].itertuples():
            spent[_part(state, woken)] += e.t_ns - now
            now = e.t_ns
            if e.event == "waking":
                if state == "asleep" and woken:
                    blocked_by = _who(int(e.tid), "", dispatcher, app_tids)
                state, woken = "runnable", True
                waker = "dispatcher" if e.tid == dispatcher else "timer or other thread"
            elif e.pid == target:
                state = "running"
                displaced = _who(int(e.prev_pid), str(e.prev_comm), dispatcher, app_tids)
            else:
                state = "runnable" if str(e.prev_state).startswith("R") else "asleep"
        spent[_part(state, woken)] += start - now
        rows.append({"frame": int(k) + warmup_frames, "lateness_ms": (start - release) / 1e6,
                     "deviation_ms": (start - int(t[k - 1]) - period) / 1e6 if k else np.nan,
                     **{p: v / 1e6 for p, v in spent.items()}, "waker": waker or "already awake",
                     "displaced": displaced or "(already running)", "blocked_by": blocked_by})
    return pd.DataFrame(rows, columns=columns)


def _state_before(mine: pd.DataFrame, i: int, target: int) -> str:
    """The worker's state just before ``mine``'s i-th event (asleep when none came before)."""
    if i <= 0:
        return "asleep"
    e = mine.iloc[i - 1]
    if e["event"] == "waking":
        return "runnable"
    if e["pid"] == target:
        return "running"
    return "runnable" if str(e["prev_state"]).startswith("R") else "asleep"


def _part(state: str, woken: bool) -> str:
    """Which part a stretch of time in ``state`` belongs to."""
    if state == "running":
        return "running_ms"
    if state == "runnable":
        return "cpu_wait_ms"
    return "blocked_ms" if woken else "wake_ms"


def _who(pid: int, comm: str, dispatcher: int | None, app_tids: set[int]) -> str:
    """Who had the CPU when the worker got it: a readable class of thread."""
    if pid == 0:
        return "idle"
    if pid == dispatcher:
        return "dispatcher"
    if pid in app_tids:
        return "the app's own threads (loads)"
    if comm.startswith("stress-ng"):
        return "stress-ng"
    return "other tasks (kernel, system)"


def attribution_summary(att: pd.DataFrame) -> pd.DataFrame:
    """Per traced condition: each part's mean and maximum (ms) and its share of the lateness's variance.

    The shares are Cov(part, lateness) / Var(lateness): they add up to 1
    because the parts add up to the lateness. Also the lateness's std, the
    largest lateness and how often that frame's worker was woken by the
    dispatcher, who the worker displaced most often, and who woke it when it
    had been blocked.
    """
    if att.empty:
        return pd.DataFrame()
    rows = []
    for label, g in att.groupby("label", sort=False):
        late = g["lateness_ms"].to_numpy(dtype=float)
        var = float(late.var(ddof=1)) if late.size > 1 else np.nan
        blocked = g.loc[g["blocked_by"] != "", "blocked_by"]
        row = {"label": label, **{f: g[f].iloc[0] for f in FACTORS}, "frames": len(g),
               "lateness_std_ms": float(np.sqrt(var)) if np.isfinite(var) else np.nan,
               "lateness_max_ms": float(late.max()),
               "by_dispatcher": float((g["waker"] == "dispatcher").mean()),
               # Who had the CPU the worker waited for, over the frames in which it waited.
               "displaced": g.loc[g["cpu_wait_ms"] > 0.01, "displaced"]
               .value_counts(normalize=True).to_dict(),
               "blocked_frames": int(len(blocked)),
               "blocked_by": blocked.value_counts().to_dict()}
        for part in PARTS:
            x = g[part].to_numpy(dtype=float)
            row[f"{part}_mean"] = float(x.mean())
            row[f"{part}_max"] = float(x.max())
            row[f"{part}_share"] = (float(np.cov(x, late, ddof=1)[0, 1] / var)
                                    if np.isfinite(var) and var > 0 else np.nan)
        rows.append(row)
    return pd.DataFrame(rows)
