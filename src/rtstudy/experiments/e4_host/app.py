"""E4: the operating system's own latency floor, as a harness cell (no Holoscan here).

Kinds (``config["kind"]``):

- ``jitter``: the C jitter probe pinned to one CPU (loop-to-loop deltas).
- ``cyclictest``: Debian rt-tests' cyclictest, one SCHED_FIFO thread at E2's
  period and priority, pinned like E2's real-time target.
- ``cyclicdeadline``: rt-tests' cyclicdeadline, one SCHED_DEADLINE thread at E2's period.

With ``load == "stress"`` stress-ng keeps ``stress_workers`` CPU workers busy
for the whole measurement. Every command is an argument list; nothing is
passed through a shell. Samples: a histogram, ``latency_ns`` and ``count``.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from rtstudy import paths
from rtstudy.apps.child import main
from rtstudy.apps.loads import start_stress, stop_stress
from rtstudy.machine import idle
from rtstudy.machine.kernelfs import ROOT, online_cpus
from rtstudy.measure.process import die_with_parent
from rtstudy.policies import NUMBERS, SCHED_DEADLINE, SCHED_FIFO, SCHED_OTHER

PROBE_SOURCE = Path(__file__).resolve().with_name("jitter_probe.c")


def probe_binary(build_dir: Path) -> Path:
    """Compile the jitter probe into ``build_dir`` unless an up-to-date binary is there."""
    binary = build_dir / "jitter_probe"
    if not binary.exists() or binary.stat().st_mtime < PROBE_SOURCE.stat().st_mtime:
        build_dir.mkdir(parents=True, exist_ok=True)
        tmp = build_dir / f".jitter_probe.{time.monotonic_ns()}"
        subprocess.run(["gcc", "-O2", "-Wall", "-o", str(tmp), str(PROBE_SOURCE)], check=True)
        tmp.replace(binary)
    return binary


def start_load(config: dict) -> subprocess.Popen | None:
    if config["load"] != "stress":
        return None
    # Longer than the measurement; it is stopped as soon as the measurement ends.
    return start_stress(config["stress_workers"], config["seconds"] + 30)


def run_jitter(config: dict) -> tuple[dict, dict]:
    # Not from the config: a cell's identity must not depend on where the checkout is.
    binary = probe_binary(paths.build_dir())
    cmd = [str(binary), str(config["cpu"]), str(config["seconds"]), str(config["fifo_priority"])]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                         preexec_fn=die_with_parent).stdout
    result = json.loads(out)
    per_ns = result["ticks_per_ns"]
    latency = [round(d / per_ns) for d, _ in result["hist"]] + \
        [round(d / per_ns) for d in result["overflow"]]
    count = [c for _, c in result["hist"]] + [1] * len(result["overflow"])
    summary = {k: result[k] for k in ("cpu", "samples", "ticks_per_ns", "clock", "elapsed_ticks",
                                      "elapsed_raw_ns", "elapsed_monotonic_ns", "lost")}
    return {"latency_ns": latency, "count": count}, summary


def run_rt_tests(config: dict) -> tuple[dict, dict]:
    """cyclictest or cyclicdeadline with --json; the histogram comes from its JSON (µs buckets)."""
    tool = config["kind"]
    with tempfile.TemporaryDirectory() as tmp:
        json_path = Path(tmp) / "result.json"
        if tool == "cyclictest":
            cmd = ["cyclictest", "-m", "-q", "-t", "1", "-p", str(config["priority"]),
                   "--policy", "fifo", "-i", str(config["interval_us"]),
                   "-D", f"{int(config['seconds'])}s", "-h", str(config["histogram_us"]),
                   f"--json={json_path}"]
            if config["cpu"] is not None:
                cmd += ["-a", str(config["cpu"])]
        else:
            cmd = ["cyclicdeadline", "-q", "-t", "1", "-i", str(config["interval_us"]),
                   "-D", f"{int(config['seconds'])}s", f"--json={json_path}"]
        # Without --laptop, cyclictest holds /dev/cpu_dma_latency at 0 µs while it runs (polling
        # only); cyclicdeadline holds nothing. What the host held before it started is recorded.
        cpus = [config["cpu"]] if config["cpu"] is not None else online_cpus() or []
        pm_qos = {"held_us": 0 if tool == "cyclictest" else None, **idle.record(ROOT, cpus)}
        proc = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=die_with_parent)
        if proc.returncode != 0 or not json_path.exists():
            raise RuntimeError(f"{tool} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
        result = json.loads(json_path.read_text())
    thread = next(iter(result["thread"].values()))
    # cyclictest writes a histogram (µs buckets); cyclicdeadline only min / avg / max.
    hist = thread.get("histogram", {})
    latency = [int(us) * 1000 for us in hist]
    count = [int(c) for c in hist.values()]
    summary = {"tool": tool, "command": cmd, "pm_qos": pm_qos, "min_us": thread.get("min"), "avg_us": thread.get("avg"),
               "max_us": thread.get("max"), "cycles": thread.get("cycles"),
               "has_histogram": bool(hist),
               # rt-tests 2.4 spells this key with a trailing colon.
               "rt_tests_version": result.get("rt_test_version:", result.get("rt_test_version"))}
    return {"latency_ns": latency, "count": count}, summary


def run(config: dict, realtime) -> tuple[dict, dict]:
    for tool in (["stress-ng"] if config["load"] == "stress" else []) + \
            ([config["kind"]] if config["kind"] != "jitter" else ["gcc"]):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed; `sudo apt-get install "
                             f"{'rt-tests' if tool.startswith('cyclic') else tool}` "
                             "(`make sysdeps` does this, as root)")
    load = start_load(config)
    start = time.monotonic_ns()
    try:
        if load is not None:
            time.sleep(1)  # let the load spread over the CPUs before measuring
        samples, summary = run_jitter(config) if config["kind"] == "jitter" else run_rt_tests(config)
    finally:
        stop_stress(load)
    measured_s = (time.monotonic_ns() - start) / 1e9
    policy = SCHED_OTHER
    if config["kind"] == "cyclictest" or (config["kind"] == "jitter" and config["fifo_priority"]):
        policy = SCHED_FIFO
    elif config["kind"] == "cyclicdeadline":
        policy = SCHED_DEADLINE
    effective = {**config, "policy": policy, "policy_id": NUMBERS[policy]}
    return samples, {"operators": {}, "effective": effective, "summary": summary,
                     "measured_s": measured_s}


if __name__ == "__main__":
    main(run)
