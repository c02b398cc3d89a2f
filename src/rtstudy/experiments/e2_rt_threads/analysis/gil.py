"""The GIL in an E2 trace: who held it while the target's worker waited for it, and what each
holder did meanwhile (ran, was preempted, slept); :mod:`.attribution` reads it per frame.

The trace's GIL probes (:mod:`rtstudy.apps.trace`) mark where a thread starts waiting for the
GIL (``gil_take``), gets it (``gil_taken``) and drops it (``gil_drop``); its scheduler events
say in which state each holder was.
"""
from __future__ import annotations

from typing import TypedDict

import numpy as np
import pandas as pd

# What attribution.attribute_run() adds from the GIL probes (NaN, or "", where the run has none).
GIL_TIMES = ("gil_wait_ms", "holder_running_ms", "holder_preempted_ms", "holder_asleep_ms",
             "gil_free_ms")
GIL_COLUMNS = (*GIL_TIMES, "gil_holder", "holder_preempted_by", "holder_woken_by")
# A frame's GIL columns in a run without GIL probes.
NO_GIL = {**dict.fromkeys(GIL_TIMES, np.nan), "gil_holder": "", "holder_preempted_by": "",
          "holder_woken_by": ""}


class GilColumns(TypedDict):
    """:data:`GIL_COLUMNS` of one frame (:meth:`Gil.during`): ms, and who."""

    gil_wait_ms: float
    holder_running_ms: float
    holder_preempted_ms: float
    holder_asleep_ms: float
    gil_free_ms: float
    gil_holder: str
    holder_preempted_by: str
    holder_woken_by: str


class Gil:
    """Who held the GIL when, and in which scheduler state each thread was: from one trace.

    The GIL's owner changes at ``gil_taken`` (that thread holds it) and ``gil_drop`` (none
    does); the target waits for it from its ``gil_take`` to its ``gil_taken``. A thread's
    state changes at its switches (in: running; out: preempted when it left runnable, else
    asleep) and wake-ups (asleep → runnable).
    """

    def __init__(self, ev: pd.DataFrame, target: int, dispatcher: int | None,
                 app_tids: set[int]):
        self.target, self.dispatcher, self.app_tids = target, dispatcher, app_tids
        g = ev[ev["event"].isin(("gil_take", "gil_taken", "gil_drop"))]
        own = g[g["pid"] == target]
        self.own_t, self.own_e = own["t_ns"].to_numpy(), own["event"].to_numpy()
        owners = g[g["event"] != "gil_take"]
        self.owner_t = owners["t_ns"].to_numpy()
        self.owner = np.where(owners["event"].to_numpy() == "gil_taken",
                              owners["pid"].to_numpy(), -1)
        sched = ev[~ev["event"].isin(("gil_take", "gil_taken", "gil_drop"))]
        self.sched = sched
        # Each thread's name at its last event, a switch's previous thread's last: what
        # dict(zip(pid, comm)) | dict(zip(prev_pid, prev_comm)) gives, from each pid's last row
        # only (the trace's string columns iterated row by row took 2 s of a reference render).
        self.comm: dict[int, str] = {}
        for pid, comm in (("pid", "comm"), ("prev_pid", "prev_comm")):
            last = ~sched[pid].duplicated(keep="last")
            self.comm.update(zip(sched.loc[last, pid].tolist(), sched.loc[last, comm].tolist()))
        # Per thread: its events' times, kinds, switched-in (or woken) pid and context tid.
        self._states: dict[int, tuple[np.ndarray, ...]] = {}

    def waits(self, a: int, b: int) -> list[tuple[int, int]]:
        """The target's GIL waits (take → taken) inside [a, b], clipped to it."""
        out, since = [], None
        i = int(np.searchsorted(self.own_t, a, side="right"))
        if i and self.own_e[i - 1] == "gil_take":
            since = a  # it was already waiting at a
        for t, e in zip(self.own_t[i:], self.own_e[i:]):
            if t > b:
                break
            if e == "gil_take":
                since = t
            elif e == "gil_taken" and since is not None:
                out.append((since, t))
                since = None
        if since is not None:
            out.append((since, b))
        return out

    def owners(self, a: int, b: int) -> list[tuple[int, int, int]]:
        """(owner, from, to) over [a, b]; owner −1 where nobody held the GIL (or unknown)."""
        i = int(np.searchsorted(self.owner_t, a, side="right"))
        who, now, out = (int(self.owner[i - 1]) if i else -1), a, []
        for t, o in zip(self.owner_t[i:], self.owner[i:]):
            if t >= b:
                break
            out.append((who, now, int(t)))
            who, now = int(o), int(t)
        out.append((who, now, b))
        return out

    def states(self, tid: int, a: int, b: int) -> tuple[dict[str, int], str, str]:
        """ns of [a, b] ``tid`` spent running, preempted (runnable) and asleep; who first
        preempted it there and who first woke it there (their readable classes), or ""."""
        if tid not in self._states:
            e = self.sched
            e = e[((e["event"] == "waking") & (e["pid"] == tid))
                  | ((e["event"] == "switch") & ((e["pid"] == tid) | (e["prev_pid"] == tid)))]
            kind = np.where(e["event"] == "waking", "wake",
                            np.where(e["pid"] == tid, "in",
                                     np.where(e["prev_state"].astype(str).str.startswith("R"),
                                              "preempted", "out")))
            self._states[tid] = (e["t_ns"].to_numpy(), kind, e["pid"].to_numpy(),
                                 e["tid"].to_numpy())
        times, kind, nxt, ctx = self._states[tid]
        spent = {"running": 0, "preempted": 0, "asleep": 0}
        after = {"wake": "preempted", "in": "running", "preempted": "preempted", "out": "asleep"}
        # Before its first event a thread was asleep if that event wakes it, runnable if it is
        # switched in, running if it is switched out (no event: it never ran, asleep).
        before = {"wake": "asleep", "in": "preempted", "preempted": "running", "out": "running"}
        i = int(np.searchsorted(times, a, side="right"))
        state = after[kind[i - 1]] if i else before[kind[0]] if kind.size else "asleep"
        # Already preempted at a: by whoever took its CPU then.
        by = self.who(int(nxt[i - 1])) if i and kind[i - 1] == "preempted" else ""
        now, woke = a, ""
        for j in range(i, times.size):
            if times[j] >= b:
                break
            if kind[j] == "wake" and state != "asleep":
                continue  # a wake-up of a thread already runnable or running changes nothing
            if kind[j] == "wake" and not woke:
                woke = self.who(int(ctx[j]))
            spent[state] += int(times[j]) - now
            now = int(times[j])
            if kind[j] == "preempted" and not by:
                by = self.who(int(nxt[j]))
            state = after[kind[j]]
        spent[state] += b - now
        return spent, by, woke

    def who(self, pid: int) -> str:
        """A thread's readable class (:func:`thread_class`)."""
        return thread_class(pid, str(self.comm.get(pid, "")), self.dispatcher, self.app_tids)

    def during(self, a: int, b: int) -> GilColumns:
        """:data:`GIL_COLUMNS` for a frame released at ``a`` that started compute at ``b`` (ns)."""
        held = {"running": 0, "preempted": 0, "asleep": 0, "free": 0}
        holders, preempted_by, woken_by = {}, "", ""
        for w0, w1 in self.waits(a, b):
            for who, t0, t1 in self.owners(w0, w1):
                if who < 0 or who == self.target:
                    held["free"] += t1 - t0
                    continue
                spent, by, woke = self.states(who, t0, t1)
                for k, v in spent.items():
                    held[k] += v
                holders[who] = holders.get(who, 0) + t1 - t0
                preempted_by, woken_by = preempted_by or by, woken_by or woke
        main = max(holders, key=holders.get) if holders else None
        return {"gil_wait_ms": sum(held.values()) / 1e6,
                "holder_running_ms": held["running"] / 1e6,
                "holder_preempted_ms": held["preempted"] / 1e6,
                "holder_asleep_ms": held["asleep"] / 1e6, "gil_free_ms": held["free"] / 1e6,
                "gil_holder": "" if main is None else self.who(main),
                "holder_preempted_by": preempted_by, "holder_woken_by": woken_by}


def thread_class(pid: int, comm: str, dispatcher: int | None, app_tids: set[int]) -> str:
    """A thread as the attribution names it (who had a CPU, woke a thread, held the GIL):
    a readable class of thread."""
    if pid == 0:
        return "idle"
    if pid == dispatcher:
        return "dispatcher"
    if pid in app_tids:
        return "the app's own threads (loads)"
    if comm.startswith("stress-ng"):
        return "stress-ng"
    return "other tasks (kernel, system)"
