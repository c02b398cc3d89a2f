"""A kernel scheduler trace around a block of code: ``perf record`` of three tracepoints.

``sched_waking`` (a thread is made runnable; recorded in the context of
whoever woke it: a thread, or a timer interrupt in whatever thread was
running), ``sched_wakeup`` and ``sched_switch`` (who left the CPU, in which
state, and who got it), on every CPU, time-stamped with CLOCK_MONOTONIC: the
clock of the apps' own time stamps (``time.monotonic_ns``), so each event can
be set beside a frame.

Debian's ``trace-cmd`` 3.1 cannot be used on this kind of host: it writes
``/proc/sys/kernel/ftrace_enabled``, which the kernel refuses ("Can't enable
ftrace"), and its ``-d`` option that skips the write crashes. ``perf`` (Debian
``linux-perf``) reads the same tracepoints.

A trace is an instrument, not the measurement: whatever stops it (no perf, perf refused,
tracefs not readable, a data file ``perf script`` cannot read) is recorded as
``unavailable`` with its reason, and the traced block runs and keeps its measurement all the
same. tracefs is prepared first: after a boot it is not mounted, and a perf that does not
mount it itself (Debian 13's 6.12 inside the SDK root's own mount namespace) records
tracepoints it cannot read back. Where it is not mounted the trace mounts it at
``/sys/kernel/tracing`` and unmounts what it mounted afterwards; both are recorded.

The trace is started disabled and enabled through perf's control FIFO, which
answers "ack" once the events are on, so the traced block starts only when
tracing does.

Where this process's interpreter carries its symbol table (pyenv's and python.org's
builds do; Debian's stripped ``python3.X`` does not), three user-space probes on
CPython's GIL are recorded beside the scheduler events: ``gil_take``
(a thread enters ``take_gil``: it wants the GIL), ``gil_taken`` (``take_gil``
returns: it holds it) and ``gil_drop`` (``drop_gil``: it gives it up). They tell a
wait for the GIL from a wait on any other lock of the app, and who held the GIL
meanwhile. The probes are defined with ``perf probe`` for the trace only and removed
afterwards, whatever happens; what was probed, or why nothing was, is recorded.
"""
from __future__ import annotations

import contextlib
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TypedDict

from rtstudy.machine import kernelfs, tracefs
from rtstudy.measure.process import die_with_parent

EVENTS = ("sched:sched_waking", "sched:sched_wakeup", "sched:sched_switch")
# CPython's GIL functions (Python/ceval_gil.h) → the event each probe records. The group is the
# study's own, so removing it never touches another tool's probes.
PROBE_GROUP = "rtstudy"
GIL_PROBES = {"gil_take": "take_gil", "gil_taken": "take_gil%return", "gil_drop": "drop_gil"}
_LINE = re.compile(r"^\s*(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d{9}):\s+(\w+):(\w+):\s*(.*)$")
# A priority is -1 for a SCHED_DEADLINE thread (the kernel prints its prio, which deadline
# tasks have below every real-time one): `-?`, or every event of such a thread is lost.
_SWITCH = re.compile(r"prev_comm=(.*) prev_pid=(-?\d+) prev_prio=(-?\d+) prev_state=(\S+) ==> "
                     r"next_comm=(.*) next_pid=(-?\d+) next_prio=(-?\d+)\s*$")
_WAKE = re.compile(r"comm=(.*) pid=(-?\d+) prio=(-?\d+) target_cpu=(\d+)\s*$")


class TraceColumns(TypedDict):
    """A trace's events, one list per column (:func:`parse`)."""

    t_ns: list[int]  # CLOCK_MONOTONIC
    cpu: list[int]
    event: list[str]  # "waking", "wakeup", "switch" or a GIL probe's (GIL_PROBES)
    tid: list[int]  # the thread in whose context it was recorded
    pid: list[int]  # the thread woken or switched in
    comm: list[str]
    prio: list[int]  # the kernel's
    prev_pid: list[int]  # a switch's: who left the CPU (−1 otherwise)
    prev_comm: list[str]
    prev_state: list[str]


COLUMNS = tuple(TraceColumns.__annotations__)


def parse(text: str) -> TraceColumns:
    """``perf script`` lines of :data:`EVENTS` → columns (:data:`COLUMNS`).

    ``tid`` is the thread in whose context the event was recorded; ``pid``
    the thread woken (waking/wakeup) or switched in (switch), with its
    ``comm`` and ``prio`` (the kernel's: 120 + nice for normal threads,
    99 − priority for real-time ones, −1 for SCHED_DEADLINE); for a switch ``prev_*`` is who left
    the CPU, ``prev_state`` ``R`` (preempted) or a sleep state. A GIL probe's event
    (:data:`GIL_PROBES`) is the thread's own: ``pid`` is ``tid``, ``prio`` −1.
    """
    cols = TraceColumns(**{c: [] for c in COLUMNS})
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        tid, cpu, sec, frac, group, event, rest = m.groups()
        if group == PROBE_GROUP:
            event = event.removesuffix("__return")  # perf names a return probe EVENT__return
            if event not in GIL_PROBES:
                continue
            comm, pid, prio, prev_comm, prev_pid, prev_state = "", tid, "-1", "", "-1", ""
        elif group != "sched":
            continue
        elif event == "sched_switch":
            s = _SWITCH.match(rest)
            if not s:
                continue
            prev_comm, prev_pid, _, prev_state, comm, pid, prio = s.groups()
        else:
            w = _WAKE.match(rest)
            if not w:
                continue
            comm, pid, prio, _ = w.groups()
            prev_comm, prev_pid, prev_state = "", "-1", ""
        row = (int(sec) * 1_000_000_000 + int(frac), int(cpu), event.removeprefix("sched_"),
               int(tid), int(pid), comm, int(prio), int(prev_pid), prev_comm, prev_state)
        for c, v in zip(COLUMNS, row):
            cols[c].append(v)
    return cols


@contextlib.contextmanager
def sched_trace(limit_s: float, record: dict):
    """Trace the scheduler on every CPU while the block runs (at most ``limit_s`` seconds).

    ``record`` is filled in: ``tool``, ``events``, ``tracefs`` (how it was prepared), ``gil``
    (the GIL probes: whether they were recorded, from which file, or why not),
    ``tracefs_mounted_by_trace`` (unmounted again), ``perf_stderr`` and, once the block ends,
    ``columns`` (:func:`parse`) and ``n_events``. Never raises for the trace: where perf is
    missing, does not start, or its data cannot be read back, ``record["unavailable"]`` says
    why and what to do, ``columns`` is absent, and the block runs (and is measured) all the
    same. An exception of the block itself goes through.
    """
    perf = shutil.which("perf")
    if perf is None:
        record["unavailable"] = ("perf is not installed: `make sysdeps` (as root) installs "
                                 "it (Debian: apt-get install linux-perf)")
        yield record
        return
    before = tracefs.mounts()
    tracefs.mount(record)
    with tempfile.TemporaryDirectory(prefix="rtstudy-trace-") as tmp:
        data = Path(tmp, "perf.data")
        probes = add_gil_probes(perf, record)
        try:
            perf_run = _Perf(perf, Path(tmp), [*EVENTS, *probes], limit_s)
        except OSError as exc:
            _script(perf, Path(tmp, "none"), probes, before, record)
            record["unavailable"] = f"perf record could not start: {exc}"
            yield record
            return
        record.update(tool="perf record", events=perf_run.events, clock="CLOCK_MONOTONIC")
        try:
            started = perf_run.command("enable")
            yield record
            if started:
                perf_run.command("disable")
        finally:
            record["perf_stderr"] = perf_run.stop()
            script = _script(perf, data, probes, before, record)
        why = (f"perf did not start tracing (no answer to 'enable' within 10 s): "
               f"{record['perf_stderr'][-500:] or 'no message'}" if not started
               else _unreadable(script, data))
        if not why:
            record["columns"] = parse(script.stdout)
            record["n_events"] = len(record["columns"]["t_ns"])
            if not record["n_events"]:
                why = (f"perf recorded no scheduler event (tracefs {record.get('tracefs')}); "
                       f"stderr: {record['perf_stderr'][-300:] or 'none'}")
                del record["columns"], record["n_events"]
        if why:
            record["unavailable"] = why


class _Perf:
    """``perf record`` of ``events`` on every CPU into ``folder``/perf.data, started disabled
    and steered through two control FIFOs; it ends after ``limit_s`` + 1 s at the latest."""

    def __init__(self, perf: str, folder: Path, events: list[str], limit_s: float):
        ctl, ack = folder / "ctl", folder / "ack"
        os.mkfifo(ctl)
        os.mkfifo(ack)
        self.events = events
        # O_RDWR: opening a FIFO this way never blocks, even before perf has opened its end.
        self.ctl_fd, self.ack_fd = os.open(ctl, os.O_RDWR), os.open(ack, os.O_RDWR | os.O_NONBLOCK)
        try:
            self.proc = subprocess.Popen(
                _record_command(perf, ctl, ack, folder / "perf.data", events, limit_s),
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                preexec_fn=die_with_parent)
        except OSError:
            self._close()
            raise

    def command(self, command: str) -> bool:
        """Send perf a control command and wait (at most 10 s) for its "ack"; False, with perf
        killed, when none came."""
        os.write(self.ctl_fd, f"{command}\n".encode())
        ready, _, _ = select.select([self.ack_fd], [], [], 10)
        if not ready:
            self.proc.kill()
            return False
        os.read(self.ack_fd, 64)
        return True

    def stop(self) -> str:
        """Stop perf (SIGINT, then SIGKILL after 30 s); the end of what it wrote to stderr."""
        err = _stop(self.proc)
        self._close()
        return (err or "").strip()[-2000:]

    def _close(self) -> None:
        os.close(self.ctl_fd)
        os.close(self.ack_fd)


def _unreadable(script: subprocess.CompletedProcess | None, data: Path) -> str:
    """Why the trace's data cannot be read back ("" when it can)."""
    if script is None:
        return f"perf wrote no data file ({data.name})"
    if script.returncode != 0:
        return (f"perf script could not read the trace back (exit {script.returncode}): "
                f"{script.stderr.strip()[-500:] or 'no message'}")
    return ""


def _record_command(perf: str, ctl: Path, ack: Path, data: Path, events: list[str],
                    limit_s: float) -> list[str]:
    """``perf record`` of ``events`` on every CPU, started disabled and steered through the
    control FIFOs ``ctl`` and ``ack``, writing ``data``; it ends after ``limit_s`` + 1 s."""
    cmd = [perf, "record", "-a", "-k", "CLOCK_MONOTONIC", "-D", "-1",
           "--control", f"fifo:{ctl},{ack}", "-o", str(data)]
    for event in events:
        cmd += ["-e", event]
    return cmd + ["--", "sleep", str(int(limit_s) + 1)]


def _stop(proc: subprocess.Popen) -> str | None:
    """Stop ``perf record`` (SIGINT, then SIGKILL after 30 s); what it wrote to stderr."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


def _script(perf: str, data: Path, probes: list[str], before: set[str],
            record: dict) -> subprocess.CompletedProcess | None:
    """``perf script`` of ``data`` (None where there is no such file); then, whatever
    happened, the GIL probes removed and the tracefs mounts made since ``before`` unmounted
    (recorded in ``record``)."""
    try:
        if not data.is_file():
            return None
        # Before the unmount: perf script reads the events' formats from tracefs, and
        # reading debugfs's tracing folder mounts it again by itself.
        return subprocess.run([perf, "script", "-i", str(data), "--ns", "-F",
                               "tid,cpu,time,event,trace"], capture_output=True, text=True)
    finally:
        if probes:
            remove_gil_probes(perf)
        mounted = sorted(tracefs.mounts() - before)
        for point in reversed(mounted):
            subprocess.run(["umount", point], capture_output=True)
        record["tracefs_mounted_by_trace"] = mounted
        record["tracefs_left_mounted"] = sorted(tracefs.mounts() - before)


def interpreter_file() -> Path:
    """The file holding this process's CPython: its mapped libpython, else the executable."""
    for line in (kernelfs.text(kernelfs.ROOT, "/proc/self/maps") or "").splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and os.path.basename(fields[5]).startswith("libpython3"):
            return Path(fields[5])
    return Path(os.path.realpath(sys.executable))


def add_gil_probes(perf: str, record: dict) -> list[str]:
    """Define :data:`GIL_PROBES` on this interpreter; the events to record, or [] and why not.

    ``record["gil"]`` says which: ``probed`` with the ``file``, or ``why`` not (a stripped
    interpreter has no ``take_gil``: it is a static function, in the symbol table only).
    """
    lib = interpreter_file()
    listed = subprocess.run([perf, "probe", "-x", str(lib), "-F"], capture_output=True,
                            text=True)
    missing = sorted({f.split("%")[0] for f in GIL_PROBES.values()}
                     - set(listed.stdout.split()))
    if listed.returncode != 0 or missing:
        record["gil"] = {"probed": False, "file": str(lib),
                         "why": f"{lib} has no symbol {', '.join(missing)} (a stripped "
                                "interpreter: use one built with its symbol table, e.g. "
                                "pyenv's, or install its debug symbols)" if missing else
                                f"perf probe -F failed: {listed.stderr.strip()[-300:]}"}
        return []
    remove_gil_probes(perf)  # left over by a run that was killed
    cmd = [perf, "probe", "-q", "-x", str(lib)]
    for event, function in GIL_PROBES.items():
        cmd += ["-a", f"{PROBE_GROUP}:{event}={function}"]
    added = subprocess.run(cmd, capture_output=True, text=True)
    if added.returncode != 0:
        remove_gil_probes(perf)
        record["gil"] = {"probed": False, "file": str(lib),
                         "why": f"perf probe failed: {added.stderr.strip()[-300:]}"}
        return []
    record["gil"] = {"probed": True, "file": str(lib), "functions": dict(GIL_PROBES)}
    return [f"{PROBE_GROUP}:{e}__return" if f.endswith("%return") else f"{PROBE_GROUP}:{e}"
            for e, f in GIL_PROBES.items()]


def remove_gil_probes(perf: str) -> None:
    """Remove every probe of the study's own group (none: nothing happens)."""
    subprocess.run([perf, "probe", "-q", "-d", f"{PROBE_GROUP}:*"], capture_output=True)
