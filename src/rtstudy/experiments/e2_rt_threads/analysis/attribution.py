"""E2's trace attribution: where each traced frame's delay accrues, from the kernel scheduler trace.

A traced run records the scheduler's ``sched_waking`` and ``sched_switch`` events
and, where the interpreter has its symbol table, CPython's GIL hand-overs
(:mod:`rtstudy.apps.trace`); :func:`attribute_run` splits each frame's lateness
against its release into the time the target's worker thread spent in each
state (:data:`PARTS`), measures how much of it the worker waited for the GIL and
what the GIL's holder did meanwhile, and names the frame's mechanism
(:data:`PATTERNS`). :func:`attribution_summary` says, per traced condition, which
part carries the lateness's variance and who was involved; :func:`mechanism_summary`
how many late frames each mechanism explains.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rtstudy.data.io import CellData, read_samples
from rtstudy.experiments.e2_rt_threads.conditions import FACTORS
from rtstudy.experiments.e2_rt_threads.analysis.gil import GIL_COLUMNS, NO_GIL, Gil, thread_class
from rtstudy.experiments.e2_rt_threads.analysis.headline import MechanismTotals
from rtstudy.experiments.e2_rt_threads.analysis.metrics import (kept_releases, lateness_ns,
                                                                release_grid)
from rtstudy.inference.stats import CI, ratio_ci
from rtstudy.measure.realtime import DISPATCHER

# The parts of one frame's lateness against its release time (ms), each a kind of time the
# target's worker thread spent between the release and the start of compute: they add up to
# the lateness exactly (attribute_run()).
PARTS = {
    "wake_ms": "not yet woken (the timer, or the dispatcher)",
    "cpu_wait_ms": "runnable, waiting for a CPU",
    "blocked_ms": "woken, then asleep again (a lock in the app: the GIL, Holoscan's)",
    "running_ms": "running before compute (Holoscan, Python)",
}
# The mechanism of a frame's lateness, in the order it is decided (classify()): the GIL first
# when the worker spent at least half the lateness waiting for it, then the largest part.
PATTERNS = {
    "gil_holder_preempted": "waited for the GIL while its holder was preempted (priority "
                            "inversion: a lower-priority thread kept the GIL without a CPU)",
    "gil_holder_running": "waited for the GIL while its holder ran (CPython asks a running "
                          "holder to drop the GIL only after a switch interval)",
    "gil_holder_asleep": "waited for the GIL while its holder slept holding it",
    "gil_handover": "waited for the GIL while it was free (the hand-over's wake-up)",
    "blocked_not_gil": "woken, then blocked on a lock that is not the GIL (Holoscan's own)",
    "blocked": "woken, then blocked on a lock (the GIL or Holoscan's: no GIL probes)",
    "throttled": "runnable, while the kernel gave its CPU to a thread of a normal policy "
                 "(real-time throttling, or the fair server's reserve for normal threads)",
    "cpu_wait": "runnable, waiting for a CPU",
    "woken_late": "not woken in time (the timer, or the dispatcher)",
    "running": "running before compute (Holoscan's and Python's path)",
}
# A GIL wait explains a frame when it covers at least this share of the frame's lateness.
GIL_SHARE = 0.5
# A release is looked for this long before its time (ms): a timer may fire a little early.
EARLY_MS = 1.0
# A traced cell's scheduler events, beside its samples (app.py records them as its "trace" table).
TRACE_FILE = "trace.parquet"
# The kernel's priorities (the trace's `prio`): below this, a real-time thread (SCHED_DEADLINE
# -1, FIFO/RR 0-98); from it, a normal one (100-139; the idle task 120).
NORMAL_PRIO = 100


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
    wake-up (the dispatcher, a timer or another thread), who had the CPU the
    worker got, and whether it was a normal thread (:func:`_normal_threads`).

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
    target, dispatcher, app_tids = _threads(sidecar)
    config = sidecar["requested"]["config"]
    period = config["period_ns"]  # ns
    t = samples.sort_values("frame")["t_start_ns"].to_numpy()[warmup_frames:]
    grid = release_grid(config.get("policy"), samples.columns)
    ev = trace.sort_values("t_ns", kind="stable")
    gil = Gil(ev, target, dispatcher, app_tids) if sidecar["summary"].get(
        "trace", {}).get("gil", {}).get("probed") else None
    worker, normal = _Worker.of(ev, target, dispatcher, app_tids), _normal_threads(ev, target)
    if t.size < 2 or worker is None:
        return pd.DataFrame(columns=_COLUMNS)
    # Only frames inside the trace: the grid is fitted on them.
    inside = (t > worker.times[0] + EARLY_MS * 1e6) & (t <= worker.times[-1])
    late = lateness_ns(t, period, grid, inside, kept_releases(samples, warmup_frames, grid))
    rows = []
    # A frame that started before its release has no delay to split (only SCHED_DEADLINE's can:
    # their release is one period after the previous start; the kernel's may come sooner).
    for k in np.flatnonzero(inside & np.isfinite(late) & (late >= 0)):
        start = int(t[k])
        release = start - int(round(late[k]))
        spent, waker, (displaced, by), blocked_by = worker.split(release, start)
        held = gil.during(release, start) if gil else NO_GIL
        row = {"frame": int(k) + warmup_frames, "lateness_ms": (start - release) / 1e6,
               "deviation_ms": (start - int(t[k - 1]) - period) / 1e6 if k else np.nan,
               **{p: v / 1e6 for p, v in spent.items()}, "waker": waker or "already awake",
               "displaced": displaced or "(already running)", "displaced_normal": by in normal,
               "blocked_by": blocked_by, **held}
        rows.append({**row, "pattern": classify(row, gil is not None)})
    return pd.DataFrame(rows, columns=_COLUMNS)


def _normal_threads(ev: pd.DataFrame, target: int) -> set[int]:
    """The threads of the trace ``ev`` that ran a normal policy (the idle task too), by the
    priority they last got a CPU with; none where the ``target`` is not real-time. Only the
    kernel's real-time throttling (since Linux 6.12 its fair server) gives a runnable
    real-time thread's CPU to one of them."""
    switches = ev[ev["event"] == "switch"]
    prio = dict(zip(switches["pid"], switches["prio"]))
    if prio.get(target, NORMAL_PRIO) >= NORMAL_PRIO:
        return set()
    return {int(pid) for pid, p in prio.items() if p >= NORMAL_PRIO}


def _threads(sidecar: dict) -> tuple[int | None, int | None, set[int]]:
    """A run's target worker thread, its dispatcher thread (None if not recorded) and every
    thread of its app, by thread id, from its ``cell.json``."""
    threads = sidecar["summary"].get("threads", [])
    target = (sidecar["operators"]["target"].get("sched") or {}).get("tid")
    dispatcher = next((t["tid"] for t in threads if t["comm"] == DISPATCHER), None)
    return target, dispatcher, {t["tid"] for t in threads}


@dataclass
class _Worker:
    """The target's worker thread as one trace saw it: its wake-ups and the switches in and
    out of it, as plain lists (read one by one, for every frame), times in ns."""

    times: np.ndarray
    t: list
    kind: list
    tid: list
    pid: list
    prev_pid: list
    prev_comm: list
    prev_state: list
    target: int
    dispatcher: int | None
    app_tids: set[int]

    @classmethod
    def of(cls, ev: pd.DataFrame, target: int, dispatcher: int | None,
           app_tids: set[int]) -> _Worker | None:
        """The worker's events among ``ev`` (the trace in time order); None without any."""
        mine = ev[((ev["event"] == "waking") & (ev["pid"] == target)) |
                  ((ev["event"] == "switch") & ((ev["pid"] == target)
                                                | (ev["prev_pid"] == target)))]
        if mine.empty:
            return None
        times = mine["t_ns"].to_numpy()
        return cls(times, times.tolist(), mine["event"].tolist(), mine["tid"].tolist(),
                   mine["pid"].tolist(), mine["prev_pid"].tolist(), mine["prev_comm"].tolist(),
                   mine["prev_state"].tolist(), target, dispatcher, app_tids)

    def split(self, release: int, start: int
              ) -> tuple[dict[str, int], str, tuple[str, int | None], str]:
        """From ``release`` to ``start`` (ns): the time (ns) the worker spent in each of
        :data:`PARTS`, who made its last wake-up, who had the CPU it last got (its class and
        thread id; None where it did not get one), and who woke it after it woke and slept
        again ("" where none did)."""
        first = int(np.searchsorted(self.times, release, side="right"))
        early = int(np.searchsorted(self.times, release - EARLY_MS * 1e6, side="right"))
        state = _state_after(self.kind[first - 1], self.pid[first - 1],
                             self.prev_state[first - 1], self.target) if first else "asleep"
        # A wake-up in the moments before the release counts: the timer may fire early.
        woken = "waking" in self.kind[early:first]
        spent = dict.fromkeys(PARTS, 0)
        now, waker, displaced, blocked_by, by = release, "", "", "", None
        for j in range(first, int(np.searchsorted(self.times, start, side="right"))):
            spent[_part(state, woken)] += self.t[j] - now
            now = self.t[j]
            if self.kind[j] == "waking":
                if state == "asleep" and woken:
                    blocked_by = thread_class(int(self.tid[j]), "", self.dispatcher,
                                              self.app_tids)
                state, woken = "runnable", True
                waker = "dispatcher" if self.tid[j] == self.dispatcher else "timer or other thread"
            else:
                state = _state_after(self.kind[j], self.pid[j], self.prev_state[j], self.target)
                if state == "running":
                    by = int(self.prev_pid[j])
                    displaced = thread_class(by, str(self.prev_comm[j]), self.dispatcher,
                                             self.app_tids)
        spent[_part(state, woken)] += start - now
        return spent, waker, (displaced, by), blocked_by


# attribute_run()'s columns.
_COLUMNS = ["frame", "lateness_ms", "deviation_ms", *PARTS, "waker", "displaced",
            "displaced_normal", "blocked_by", *GIL_COLUMNS, "pattern"]


def classify(frame: dict, gil_probed: bool) -> str:
    """The mechanism (:data:`PATTERNS` key) of one attributed frame.

    The GIL decides when the worker waited for it at least :data:`GIL_SHARE` of the
    frame's lateness: then what its holders did over that wait, whichever took longest
    (preempted, running, asleep, or none held it). Otherwise the largest of
    :data:`PARTS`; a block that is not a GIL wait is another lock where the GIL was probed;
    a CPU wait is throttling where the thread that had the CPU ran a normal policy.
    """
    late = frame["lateness_ms"]
    if gil_probed and late > 0 and frame["gil_wait_ms"] >= GIL_SHARE * late:
        held = {"gil_holder_preempted": frame["holder_preempted_ms"],
                "gil_holder_running": frame["holder_running_ms"],
                "gil_holder_asleep": frame["holder_asleep_ms"],
                "gil_handover": frame["gil_free_ms"]}
        return max(held, key=held.get)
    part = max(PARTS, key=lambda p: frame[p])
    if part == "blocked_ms":
        return "blocked_not_gil" if gil_probed else "blocked"
    if part == "cpu_wait_ms":
        return "throttled" if frame.get("displaced_normal") else "cpu_wait"
    return {"wake_ms": "woken_late", "running_ms": "running"}[part]


def _state_after(event: str, pid: int, prev_state, target: int) -> str:
    """The worker's state just after one of its events: woken (runnable), switched in
    (running), or switched out (runnable when it left preempted, else asleep)."""
    if event == "waking":
        return "runnable"
    if pid == target:
        return "running"
    return "runnable" if str(prev_state).startswith("R") else "asleep"


def _part(state: str, woken: bool) -> str:
    """Which part a stretch of time in ``state`` belongs to."""
    if state == "running":
        return "running_ms"
    if state == "runnable":
        return "cpu_wait_ms"
    return "blocked_ms" if woken else "wake_ms"


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


def mechanism_summary(att: pd.DataFrame, threshold_ms: float) -> pd.DataFrame:
    """Per traced condition: how many of its late frames each mechanism explains.

    A frame is late as in every E2 statistic: lateness above ``threshold_ms``. Shares are
    of the condition's late frames over all its traced runs (the runs are listed so a
    reader sees how many carry them).

    Returns
    -------
    DataFrame
        ``label`` (the traced condition), its factors, ``runs``, ``frames``, ``late``,
        ``late_runs`` (runs with at least one), ``gil_probed`` (every run had GIL probes),
        ``gil_wait_ms_mean`` (over all its frames), then per :data:`PATTERNS` key its count
        of late frames and ``<key>_share``.
    """
    if att.empty:
        return pd.DataFrame()
    rows = []
    for label, g in att.groupby("label", sort=False):
        late = g[g["lateness_ms"] > threshold_ms]
        row = {"label": label, **{f: g[f].iloc[0] for f in FACTORS},
               "runs": int(g["cell_id"].nunique()), "frames": int(len(g)),
               "late": int(len(late)), "late_runs": int(late["cell_id"].nunique()),
               "gil_probed": bool(g["gil_wait_ms"].notna().all()),
               "gil_wait_ms_mean": float(g["gil_wait_ms"].mean())}
        counts = late["pattern"].value_counts()
        for key in PATTERNS:
            row[key] = int(counts.get(key, 0))
            row[f"{key}_share"] = row[key] / len(late) if len(late) else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def tracing_cost(runs: pd.DataFrame, traces: pd.DataFrame, ci: CI) -> pd.DataFrame:
    """What tracing changes: each traced condition's typical jitter traced vs untraced.

    The period IQR of the traced runs over that of the same condition's untraced runs
    (:func:`rtstudy.inference.stats.ratio_ci`, CI over runs), and both late-frame counts.

    Returns
    -------
    DataFrame
        ``label`` (untraced), ``runs``/``traced_runs``, ``iqr_us``/``traced_iqr_us`` (means
        over runs), ``ratio``, ``low``, ``high``, ``late``/``traced_late`` with their frames.
    """
    if runs.empty or traces.empty or "period_iqr_us" not in traces:
        return pd.DataFrame()
    rows = []
    for label, t in traces.groupby("label", sort=False):
        base = runs[runs["label"] == label.removesuffix("-trace")]
        if base.empty:
            continue
        est = ratio_ci(base["period_iqr_us"], t["period_iqr_us"], ci)
        rows.append({"label": label.removesuffix("-trace"), "runs": len(base),
                     "traced_runs": len(t), "iqr_us": base["period_iqr_us"].mean(),
                     "traced_iqr_us": t["period_iqr_us"].mean(), "ratio": est.value,
                     "low": est.low, "high": est.high, "late": int(base["late"].sum()),
                     "frames": int(base["n"].sum()), "traced_late": int(t["late"].sum()),
                     "traced_frames": int(t["n"].sum())})
    return pd.DataFrame(rows)


def mechanism_totals(mechanism: pd.DataFrame, policies) -> MechanismTotals:
    """The late frames of the traced conditions whose policy is in ``policies``, pooled:
    ``late``, ``frames``, ``runs``, ``gil_probed`` (all were), each :data:`PATTERNS` count,
    ``gil`` (the GIL patterns' sum) and ``top`` (the most frequent pattern, or "")."""
    m = mechanism[mechanism["policy"].isin(policies)] if len(mechanism) else mechanism
    if m.empty:
        return {}
    out = {"late": int(m["late"].sum()), "frames": int(m["frames"].sum()),
           "runs": int(m["runs"].sum()), "gil_probed": bool(m["gil_probed"].all()),
           **{k: int(m[k].sum()) for k in PATTERNS}}
    out["gil"] = sum(out[k] for k in PATTERNS if k.startswith("gil_"))
    out["top"] = max(PATTERNS, key=lambda k: out[k]) if out["late"] else ""
    return out
