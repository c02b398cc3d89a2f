"""Robustness with real runs at smoke size.

- A sweep interrupted by Ctrl-C (SIGINT) or killed (SIGKILL) keeps its completed cells
  untouched, leaves no partial cell and no process behind, and the next run resumes.
- A hung app is killed at its timeout and the sweep goes on.
- Without real-time privileges (user ``nobody``) a real-time stage stops before measuring and
  a real-time cell fails; both say which privilege is missing and how to grant it, and
  nothing is labelled real-time.
- A bad parameter, in any stage, is rejected before measuring with a message naming the key.
- An unwritable, read-only or full data directory stops with a message naming the directory
  and the problem; nothing half-written is left and completed cells stay untouched.
"""
from __future__ import annotations

import errno
import json
import os
import pwd
import resource
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import pytest
import yaml

import rtstudy
from helpers import default_signals, with_value
from rtstudy import params, paths
from rtstudy.data import io
from rtstudy.experiments.e3_overhead import plan as e3_plan
from rtstudy.measure.harness import Cell, DataDirError, SweepError, run_order, run_sweep
from rtstudy.sdks import sdk

pytestmark = pytest.mark.cells

BIN = Path(sys.executable).parent
ROOT = paths.root()
E3_APP = "rtstudy.experiments.e3_overhead.app"
PROBE = "rtstudy.apps.rt_probe"


# ---------------------------------------------------------------------------
# Helpers

def make_project(dest: Path, edit=None) -> dict:
    """A project at ``dest`` with what ``rtstudy run`` reads (params.yaml in smoke, notebooks).

    ``edit(params_dict)`` may change the parameters. Returns the environment
    that points the installed package at ``dest``.
    """
    dest.mkdir(parents=True, exist_ok=True)
    values = params.load(ROOT / "params.yaml")
    values["profile"] = "smoke"
    if edit:
        edit(values)
    (dest / "params.yaml").write_text(yaml.safe_dump(values, sort_keys=False))
    shutil.copytree(ROOT / "notebooks", dest / "notebooks")
    return dict(os.environ, RTSTUDY_ROOT=str(dest), PATH=f"{BIN}:{os.environ['PATH']}")


def _processes(matches) -> list[str]:
    """Live processes (not zombies) for which ``matches(environ, cmdline)`` holds (raw bytes)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            environ, cmdline = (proc / "environ").read_bytes(), (proc / "cmdline").read_bytes()
            zombie = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:  # gone meanwhile
            continue
        if not zombie and matches(environ, cmdline):
            found.append(f"pid {proc.name}: " + cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return found


def project_processes(root: Path) -> list[str]:
    """Every process started for the project at ``root`` (they inherit its RTSTUDY_ROOT)."""
    marker = f"RTSTUDY_ROOT={root}".encode()
    return _processes(lambda environ, cmdline: marker in environ.split(b"\0"))


def processes_naming(path: Path) -> list[str]:
    """Processes whose command line contains ``path``."""
    return _processes(lambda environ, cmdline: str(path).encode() in cmdline)


def wait_until(predicate, timeout_s: float, interval_s: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return bool(predicate())


def completed(out: Path) -> list[str]:
    """Cell folders with a sidecar (what a re-run skips)."""
    if not out.is_dir():
        return []
    return sorted(d.name for d in out.iterdir()
                  if not d.name.startswith((".", "_")) and (d / "cell.json").is_file())


def snapshot(out: Path) -> dict[str, tuple[bytes, int]]:
    """Each completed cell's sidecar bytes and modification time (ns)."""
    return {c: ((out / c / "cell.json").read_bytes(), (out / c / "cell.json").stat().st_mtime_ns)
            for c in completed(out)}


def assert_intact(out: Path, before: dict) -> None:
    """Cells completed earlier are untouched, readable and ok."""
    now = snapshot(out)
    for cell_id, (text, mtime) in before.items():
        assert cell_id in now, f"completed cell {cell_id} disappeared"
        assert now[cell_id] == (text, mtime), f"completed cell {cell_id} was rewritten"
        assert json.loads(text)["status"] == "ok"
        assert len(io.read_samples(out / cell_id / "samples.parquet")) > 0


# ---------------------------------------------------------------------------
# Interrupted sweeps: Ctrl-C, then SIGKILL, then a run that resumes

@pytest.fixture()
def start():
    """``start(cmd, root, env, log) -> (process, stderr file)``; leftovers are killed afterwards."""
    started: list[subprocess.Popen] = []

    def run(cmd: list[str], root: Path, env: dict, log: Path) -> tuple[subprocess.Popen, Path]:
        err = log.with_suffix(".err")
        with open(log, "w") as out, open(err, "w") as errors:
            # Its own session, as a terminal's foreground job: the group gets the signal.
            started.append(subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=errors,
                                            stdin=subprocess.DEVNULL, start_new_session=True,
                                            preexec_fn=default_signals))
        return started[-1], err

    yield run
    for proc in started:  # only if a test failed half-way
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _cell_running(root: Path) -> bool:
    return any(E3_APP in p for p in project_processes(root))


def test_an_interrupted_or_killed_sweep_keeps_its_cells_and_resumes(tmp_path, start):
    root = tmp_path / "project"

    def longer_cells(values):
        # Four cells of about 6 s each: a signal lands while one runs, and a cell that
        # outlived a killed sweep would still be running when the check below looks.
        values["e3_overhead"]["profiles"]["smoke"].update(
            apps=["ops"], schedulers=["event_based"], event_based_workers=[1, 2], repetitions=2,
            iterations=[200, 160_000])
        # One SDK, one dataset folder: the signals must land in this sweep's cells.
        values["sdk"]["versions"] = [sdk.installed()]

    env = make_project(root, longer_cells)
    cmd = [str(BIN / "rtstudy"), "run", "e3_overhead"]
    outs = lambda: list(root.glob("data/raw/e3_overhead/*/smoke"))  # noqa: E731

    # 1. Ctrl-C once a cell is complete and the next one runs.
    proc, err = start(cmd, root, env, tmp_path / "run1.log")
    assert wait_until(lambda: outs() and completed(outs()[0]) and _cell_running(root), 240), \
        err.read_text()
    out = outs()[0]
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=90) == 130
    # Jupyter may log its kernel's shutdown above it; rtstudy's own word is plain.
    message = err.read_text()
    assert "rtstudy: interrupted; completed cells are kept, and the next run resumes" in message, \
        message
    assert wait_until(lambda: not project_processes(root), 15), project_processes(root)
    assert not list(out.glob(".tmp-*")), "Ctrl-C must not leave a partial cell"
    cells, missing = io.completed_cells(out)
    assert cells and missing, "the sweep should have stopped part-way"
    before = snapshot(out)
    assert_intact(out, before)

    # 2. SIGKILL to the process group while the next cell runs: nothing can clean up,
    #    but no process may outlive it and no partial cell may count.
    proc, err = start(cmd, root, env, tmp_path / "run2.log")
    assert wait_until(lambda: len(completed(out)) > len(before) and _cell_running(root), 240), \
        err.read_text()
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    # The kernel notices its parent's death within a second, and the cell its kernel's.
    assert wait_until(lambda: not project_processes(root), 5), \
        f"orphaned processes after SIGKILL: {project_processes(root)}"
    assert_intact(out, before)
    cells, missing = io.completed_cells(out)
    assert [c["cell_id"] for c in cells] and missing
    assert sorted(c["cell_id"] for c in cells) == completed(out), "a partial cell was counted"
    middle = snapshot(out)
    leftovers = list(out.glob(".tmp-*"))  # the killed cell's work directory, if any

    # 3. The next run skips what is complete, removes leftovers and finishes.
    done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    cells, missing = io.completed_cells(out)
    assert missing == [] and len(cells) == 4
    assert_intact(out, middle)
    assert not list(out.glob(".tmp-*")) and not any(p.exists() for p in leftovers)
    assert wait_until(lambda: not project_processes(root), 10), project_processes(root)


# ---------------------------------------------------------------------------
# A hung app

def test_a_hung_app_is_killed_at_its_timeout_and_the_sweep_goes_on(tmp_path, context, devnull):
    # 200 000 ticks at 5 ms: far longer than the harness's 3 s timeout, on any host.
    hung = Cell("probe", "rt_probe", "hung",
                {"ticks": 200_000, "period_ns": 5_000_000, "max_duration_ms": 600_000}, 0, 3.0, module=PROBE)
    fine = Cell("probe", "rt_probe", "fine",
                {"ticks": 10, "period_ns": 5_000_000, "max_duration_ms": 5000}, 0, 60.0, module=PROBE)
    seed = next(s for s in range(100) if run_order([hung, fine], s)[0] == hung)
    with pytest.raises(SweepError, match="1 of 2 cells failed") as info:
        run_sweep([hung, fine], tmp_path, context, seed, progress=devnull)
    assert "timed out after 3 s and was killed" in str(info.value)
    failed = tmp_path / "_failed" / hung.cell_id
    sidecar = json.loads((failed / "cell.json").read_text())
    assert sidecar["status"] == "failed" and "timed out after 3 s" in sidecar["reason"]
    assert sidecar["timing"]["child_wall_s"] < 60, "killed at its timeout, not at max_duration_ms"
    assert (failed / "run.log").is_file()
    assert not (tmp_path / hung.cell_id).exists()
    went_on = json.loads((tmp_path / fine.cell_id / "cell.json").read_text())
    assert went_on["status"] == "ok" and went_on["order_index"] == 1
    assert not list(tmp_path.glob(".tmp-*"))
    assert not processes_naming(tmp_path), "the hung app must not survive"


def test_a_cell_folder_without_its_sidecar_is_measured_again(tmp_path, context, devnull):
    # As a partial copy or an interrupted `dvc pull` leaves it: samples, no cell.json.
    cell = Cell("probe", "rt_probe", "partial",
                {"ticks": 5, "period_ns": 5_000_000, "max_duration_ms": 5000}, 0, 60.0, module=PROBE)
    run_sweep([cell], tmp_path, context, 1, progress=devnull)
    (tmp_path / cell.cell_id / "cell.json").unlink()
    with pytest.raises(io.DataError, match="a cell folder without its sidecar cell.json"):
        io.completed_cells(tmp_path)
    outcomes = run_sweep([cell], tmp_path, context, 1, progress=devnull)
    assert [o.status for o in outcomes] == ["ok"]
    sidecars, missing = io.completed_cells(tmp_path)
    assert missing == [] and [s["cell_id"] for s in sidecars] == [cell.cell_id]


# ---------------------------------------------------------------------------
# Without real-time privileges: user nobody

NOBODY = pwd.getpwnam("nobody") if "nobody" in {p.pw_name for p in pwd.getpwall()} else None

DRIVER = '''
import sys
from pathlib import Path
from rtstudy.machine import host
from rtstudy import params
from rtstudy.experiments.e3_overhead import plan
from rtstudy.measure.harness import Cell, SweepContext, SweepError, run_sweep
from rtstudy.measure.realtime import RealtimeRequest

out, kind = Path(sys.argv[1]), sys.argv[2]
if kind == "fifo":
    fifo = RealtimeRequest("target", "SCHED_FIFO", priority=10)
    cells = [Cell("probe", "rt_probe", "fifo",
                  {"ticks": 20, "period_ns": 5_000_000, "max_duration_ms": 2000}, 0, 60, (fifo,),
                  module="rtstudy.apps.rt_probe")]
else:
    cfg = params.stage_config("e3_overhead", "smoke")
    cells = plan.plan(dict(cfg, apps=["ops"], schedulers=["greedy"]), {}, {})
try:
    run_sweep(cells, out, SweepContext.from_fingerprint(host.current(), "smoke"), 1)
except SweepError as exc:
    print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
    sys.exit(3)
'''


def _no_rtprio() -> None:
    # What a normal login gets: no real-time priority without CAP_SYS_NICE.
    resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))


@pytest.fixture(scope="module")
def nobody():
    """``(run, base)``: ``run(args, cwd, **env)`` runs this package's Python as user nobody.

    ``base`` is a world-readable temporary directory to work in (pytest's own
    is private to root). The venv's interpreter may live where nobody cannot
    go (pyenv under /root); then the system's Python of the same version runs
    this package's installed dependencies through PYTHONPATH.
    """
    if os.geteuid() != 0 or NOBODY is None or shutil.which("setpriv") is None:
        pytest.skip("needs root, a user 'nobody' and setpriv to run as an unprivileged user")
    base = Path(tempfile.mkdtemp(prefix="rtstudy-nobody-"))
    base.chmod(0o755)
    (base / "driver.py").write_text(DRIVER)
    setpriv = ["setpriv", f"--reuid={NOBODY.pw_uid}", f"--regid={NOBODY.pw_gid}", "--clear-groups",
               "--inh-caps=-all"]
    src = Path(rtstudy.__file__).resolve().parents[1]
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(base), "LANG": "C.UTF-8",
           "PYTHONPATH": f"{src}:{sysconfig.get_paths()['purelib']}"}

    def run(python: str, args: list[str], cwd: Path, **extra) -> subprocess.CompletedProcess:
        return subprocess.run(setpriv + [python, *args], cwd=cwd, env={**env, **extra},
                              capture_output=True, text=True, timeout=300, preexec_fn=_no_rtprio)

    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    # The check starts a child as the harness does: setpriv itself may reach an interpreter
    # that nobody's own processes cannot.
    check_code = ("import subprocess, sys; subprocess.run([sys.executable, '-c', 'from rtstudy.sdks.holo "
                  "import import_holoscan; import_holoscan()'], check=True)")
    chosen, problems = None, []
    for python in (sys.executable, f"/usr/bin/{version}", f"/usr/local/bin/{version}"):
        check = run(python, ["-c", check_code], base)
        if check.returncode == 0:
            chosen = python
            break
        problems.append(f"{python}: {(check.stderr.strip().splitlines() or ['?'])[-1]}")
    if chosen is None:
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip("no Python that runs this package is executable by nobody: " + "; ".join(problems))
    yield (lambda args, cwd, **extra: run(chosen, args, cwd, **extra)), base
    shutil.rmtree(base, ignore_errors=True)


def _owned_by_nobody(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, NOBODY.pw_uid, NOBODY.pw_gid)
    return path


def test_as_nobody_a_realtime_stage_stops_before_measuring(nobody):
    run, base = nobody
    root = base / "rt-stage"
    make_project(root)
    _owned_by_nobody(root / "data")
    proc = run(["-m", "rtstudy.cli", "run", "e2_rt_threads"], root, RTSTUDY_ROOT=str(root))
    assert proc.returncode == 2, proc.stderr
    message = proc.stderr
    assert "nothing was measured" in message and "Traceback" not in message, message
    for policy in ("SCHED_FIFO", "SCHED_DEADLINE"):
        assert f"FAIL  {policy}" in message, message
    # Which privilege is missing, and how to grant it.
    for words in ("CAP_SYS_NICE", "rtprio", "run as root", "AmbientCapabilities=CAP_SYS_NICE",
                  "--cap-add=SYS_NICE"):
        assert words in message, f"{words!r} missing from: {message}"
    # Never a capability on the interpreter: the venv's python is the system-wide one.
    assert "setcap cap_sys_nice" not in message
    assert not list((root / "data").rglob("cell.json"))
    assert not (root / "executed").exists(), "the notebook must not start"


def test_as_nobody_a_realtime_cell_fails_and_is_never_labelled_realtime(nobody):
    run, base = nobody
    out = _owned_by_nobody(base / "rt-cell")
    proc = run([str(base / "driver.py"), str(out), "fifo"], base)
    assert proc.returncode == 3, proc.stderr
    assert "CAP_SYS_NICE" in proc.stderr and "run as root" in proc.stderr, proc.stderr
    failed = list((out / "_failed").iterdir())
    assert len(failed) == 1
    sidecar = json.loads((failed[0] / "cell.json").read_text())
    assert sidecar["status"] == "failed" and sidecar["realtime_verified"] is False
    assert "never ran" in sidecar["reason"] and "CAP_SYS_NICE" in sidecar["reason"]
    assert completed(out) == [], "a cell whose policy was refused must not look completed"


def test_as_nobody_an_unwritable_data_directory_is_named(nobody):
    run, base = nobody
    root = base / "readonly"
    make_project(root)
    raw = root / "data" / "raw"
    raw.mkdir(parents=True)
    raw.chmod(0o555)  # root's, and read-only for everyone else
    proc = run(["-m", "rtstudy.cli", "run", "e3_overhead"], root, RTSTUDY_ROOT=str(root))
    assert proc.returncode == 2, proc.stderr
    assert str(raw) in proc.stderr and "Permission denied" in proc.stderr, proc.stderr
    assert "fix:" in proc.stderr and "Traceback" not in proc.stderr
    # The harness itself, past the preflight: it stops and names the directory.
    proc = run([str(base / "driver.py"), str(raw / "e3"), "e3"], base)
    assert proc.returncode == 3, proc.stderr
    assert "DataDirError" in proc.stderr and str(raw / "e3") in proc.stderr, proc.stderr
    assert "Permission denied" in proc.stderr and "Traceback" not in proc.stderr
    assert list(raw.iterdir()) == []


# ---------------------------------------------------------------------------
# Bad parameters: each rejected before measuring, naming the key
# (tests/test_params.py, test_e1.py and test_e2.py hold 27 more).

BAD = [
    # (path in params.yaml, value, words the message must contain)
    (("e4_host", "jitter_seconds"), 0, ["e4_host.jitter_seconds = 0", ">= 0.1"]),
    (("e4_host", "jitter_cpus"), "some", ["e4_host.jitter_cpus = 'some'"]),
    (("e4_host", "jitter_cpus"), [0, -1], ["e4_host.jitter_cpus", "bad item: -1"]),
    (("e4_host", "jitter_fifo_priority"), 100, ["e4_host.jitter_fifo_priority = 100", "<= 99"]),
    (("e4_host", "loads"), ["idle", "busy"], ["e4_host.loads", "'busy'", "'stress'"]),
    (("e4_host", "stress_load_factor"), 0, ["e4_host.stress_load_factor = 0", ">= 0.5"]),
    (("e4_host", "floor_tools"), ["hackbench"], ["e4_host.floor_tools", "'cyclictest'"]),
    (("e4_host", "floor_seconds"), -10, ["e4_host.floor_seconds = -10", ">= 1"]),
    (("e4_host", "histogram_us"), 5, ["e4_host.histogram_us = 5", ">= 10"]),
    (("e4_host", "profiles", "smoke", "jitter_seconds"), -1,
     ["e4_host.profiles.smoke.jitter_seconds = -1"]),
    (("e2_rt_threads", "fps"), 0, ["e2_rt_threads.fps = 0", ">= 1"]),
    (("e2_rt_threads", "duration_s"), -4, ["e2_rt_threads.duration_s = -4", ">= 0.5"]),
    (("e2_rt_threads", "duration_s"), float("nan"), ["e2_rt_threads.duration_s = nan", "a number"]),
    (("e2_rt_threads", "policies"), ["normal", "SCHED_BATCH"],
     ["e2_rt_threads.policies", "'SCHED_BATCH'", "'SCHED_DEADLINE'"]),
    (("e2_rt_threads", "load_work_models"), ["native", "gpu"],
     ["e2_rt_threads.load_work_models", "'gpu'", "'python'"]),
    (("e2_rt_threads", "load_factors"), [-1], ["e2_rt_threads.load_factors", "bad item: -1"]),
    (("e2_rt_threads", "load_work_ms"), 0, ["e2_rt_threads.load_work_ms = 0", "> 0"]),
    (("e2_rt_threads", "pin"), "sometimes", ["e2_rt_threads.pin = 'sometimes'", "'auto'"]),
    (("e2_rt_threads", "profiles", "smoke", "fps"), 1,
     ["e2_rt_threads (profile 'smoke')", "fps = 1", "fewer than 3 frames"]),
    (("e1_async_buffer", "profiles", "smoke", "discard_head"), 35,
     ["e1_async_buffer (profile 'smoke')", "discard_head + discard_tail = 40",
      "below messages = 40"]),
    (("e1_async_buffer", "buffers"), ["default", "triple"], ["e1_async_buffer.buffers", "'triple'"]),
    (("e1_async_buffer", "policies"), ["fifo"], ["e1_async_buffer.policies", "'deadline'"]),
    (("e1_async_buffer", "periods_ms"), [20, 20], ["e1_async_buffer.periods_ms", "repeated"]),
    (("e1_async_buffer", "rx_period_ms"), 1, ["e1_async_buffer.rx_period_ms = 1", ">= 2"]),
    (("e1_async_buffer", "work_models"), ["rust"], ["e1_async_buffer.work_models", "'rust'"]),
    (("e3_overhead", "stop_on_deadlock_timeout_ms"), -1,
     ["e3_overhead.stop_on_deadlock_timeout_ms = -1", ">= 0"]),
    (("e3_overhead", "event_based_workers"), [0], ["e3_overhead.event_based_workers", "bad item: 0"]),
    (("report", "confidence"), 0.1, ["report.confidence = 0.1", ">= 0.5"]),
    (("report", "confidence"), "high", ["report.confidence = 'high'", "a number"]),
    (("profile",), None, ["profile = None", "smoke"]),
]



@pytest.mark.parametrize("path,value,words", BAD,
                         ids=[".".join(p) + "=" + repr(v) for p, v, _ in BAD])
def test_a_bad_value_is_rejected_before_measuring(path, value, words):
    with pytest.raises(params.ParamError) as info:
        params.validate(with_value(params.load(ROOT / "params.yaml"), path, value))
    for word in words:
        assert word in str(info.value), f"{word!r} missing from: {info.value}"


@pytest.mark.parametrize("stage,path,value,key", [
    ("e2_rt_threads", ("e2_rt_threads", "fps"), 0, "e2_rt_threads.fps = 0"),
    ("e4_host", ("e4_host", "profiles", "smoke", "floor_seconds"), -1,
     "e4_host.profiles.smoke.floor_seconds = -1"),
])
def test_rtstudy_run_with_a_bad_value_exits_naming_the_key_and_writes_no_cell(
        tmp_path, stage, path, value, key):
    root = tmp_path / "project"

    def spoil(values):
        values.update(with_value(values, path, value))

    env = make_project(root, spoil)
    proc = subprocess.run([str(BIN / "rtstudy"), "run", stage], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert key in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (root / "data").exists() and not (root / "executed").exists()


# ---------------------------------------------------------------------------
# A read-only or full data directory

@pytest.fixture()
def tmpfs():
    """``mount(where, options)``: a tmpfs at ``where`` (unmounted afterwards), or skip."""
    mounted: list[Path] = []

    def mount(where: Path, options: str) -> Path:
        where.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "rtstudy-test", str(where)],
                              capture_output=True, text=True, timeout=30)
        if proc.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.strip()}); needs root with "
                        "CAP_SYS_ADMIN")
        mounted.append(where)
        return where

    yield mount
    for where in reversed(mounted):
        subprocess.run(["umount", "--lazy", str(where)], capture_output=True, timeout=30)


def _remount(where: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(where)], check=True, timeout=30)


@pytest.mark.parametrize("options,problem", [("ro,size=1m", "Read-only file system"),
                                             ("size=1m", "MiB free")])
def test_a_read_only_or_full_data_directory_stops_rtstudy_run_before_measuring(
        tmp_path, tmpfs, options, problem):
    root = tmp_path / "project"
    env = make_project(root)
    raw = tmpfs(root / "data" / "raw", options)
    proc = subprocess.run([str(BIN / "rtstudy"), "run", "e3_overhead"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    message = proc.stderr
    assert str(raw) in message and problem in message, message
    assert "fix:" in message and "Traceback" not in message, message
    assert not list(raw.rglob("cell.json")) and not (root / "executed").exists()


def _fill(disk: Path, leave_bytes: int) -> None:
    """Fill ``disk`` until at most ``leave_bytes`` are free."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for chunk in (1 << 20, 1 << 16, 1 << 12):
            while shutil.disk_usage(disk).free - chunk >= leave_bytes:
                os.write(fd, b"\1" * chunk)
        if leave_bytes == 0:
            while True:
                os.write(fd, b"\1" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)


def test_a_data_directory_that_fills_up_or_turns_read_only_stops_the_sweep_cleanly(
        tmp_path, tmpfs, context, devnull, smoke_e3):
    disk = tmpfs(tmp_path / "disk", "size=8m")
    out = disk / "e3"
    first, second = e3_plan.plan(dict(smoke_e3, apps=["ops"], event_based_workers=[1]), {}, {})
    run_sweep([first], out, context, 1, progress=devnull)
    kept = snapshot(out)
    assert list(kept) == [first.cell_id]

    def stops_cleanly(problem: str) -> None:
        with pytest.raises(DataDirError) as info:
            run_sweep([first, second], out, context, 1, progress=devnull)
        message = str(info.value)
        assert str(out) in message and problem in message and "re-run" in message, message
        assert not list(out.glob(".tmp-*")) and not list(out.glob("*.tmp")), "half-written files"
        assert not (out / second.cell_id).exists() and not (out / "_failed").exists()
        assert_intact(out, kept)

    # Full: not even the plan can be written.
    _fill(disk, 0)
    stops_cleanly("No space left on device")
    # Room for the plan, not for the samples: the app's own write fails.
    (disk / "filler").unlink()
    _fill(disk, 48 << 10)
    stops_cleanly("No space left on device")
    # Read-only.
    (disk / "filler").unlink()
    _remount(disk, "ro")
    stops_cleanly("Read-only file system")
    # Fixed: the sweep resumes with the missing cell only.
    _remount(disk, "rw")
    outcomes = run_sweep([first, second], out, context, 1, progress=devnull)
    assert {o.cell_id: o.status for o in outcomes} == {first.cell_id: "skipped",
                                                       second.cell_id: "ok"}
    assert_intact(out, kept)
