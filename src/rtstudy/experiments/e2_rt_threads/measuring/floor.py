"""E2's floor, like with like: cyclictest where the Holoscan target runs, as a harness cell.

One SCHED_FIFO cyclictest thread at the target's period and priority, pinned
as the target (``cpus``), for as many loops as the target has frames, with the
same out-of-process load as E2's ``process`` placement (``loads`` stress-ng CPU
workers; none at load factor 0). ``--laptop`` keeps cyclictest from holding
``/dev/cpu_dma_latency`` at 0 µs, which the Holoscan runs do not do either (E4's
platform floor does hold it; each floor records the PM QoS it ran under); ``-d 0``
gives the single thread exactly the interval. Each loop's wake-up latency (µs,
cyclictest's ``-v`` output) is kept; the loop's "frame period" is the interval
plus the difference of two successive latencies, the same quantity the Holoscan
target stamps. The thread's policy is read back while it runs and recorded as the
``cyclictest`` operator, so the harness verifies it like any real-time request.
"""
from __future__ import annotations

import shutil
import subprocess
import time

from rtstudy.apps.child import main, process_threads
from rtstudy.apps.loads import start_stress, stop_stress
from rtstudy.machine import idle
from rtstudy.machine.kernelfs import ROOT, online_cpus
from rtstudy.measure.process import die_with_parent
from rtstudy.policies import NUMBERS, SCHED_FIFO

OPERATOR = "cyclictest"


def run(config: dict, realtime) -> tuple[dict, dict]:
    for tool in ("cyclictest", "stress-ng"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed; `sudo apt-get install "
                             f"{'rt-tests' if tool == 'cyclictest' else tool}` "
                             "(`make sysdeps` does this, as root)")
    interval_us = round(config["period_ns"] / 1000)
    cmd = ["cyclictest", "-q", "-v", "-m", "--laptop", "-t", "1", "-d", "0",
           "-p", str(config["priority"]), "--policy", "fifo", "-i", str(interval_us),
           "-l", str(config["frames"])]
    if config["target_cpus"]:
        cmd += ["-a", ",".join(map(str, config["target_cpus"]))]
    load = start_stress(config["loads"], config["max_duration_ms"] / 1000 + 30) \
        if config["loads"] else None
    # --laptop: cyclictest holds no PM QoS request; what the host held before it started is recorded.
    pm_qos = {"held_us": None, **idle.record(ROOT, config["target_cpus"] or online_cpus() or [])}
    start = time.monotonic_ns()
    sched = None
    try:
        if load is not None:
            time.sleep(1)  # let the load spread over the CPUs before measuring
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=die_with_parent)
        deadline = time.monotonic() + 5
        while sched is None and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
            fifo = [t for t in process_threads(proc.pid) if t["policy"] == NUMBERS[SCHED_FIFO]]
            sched = fifo[0] if fifo else None
        out, err = proc.communicate(timeout=config["max_duration_ms"] / 1000)
    finally:
        process = stop_stress(load)
    measured_s = (time.monotonic_ns() - start) / 1e9
    if proc.returncode != 0:
        raise RuntimeError(f"cyclictest failed ({proc.returncode}): {err.strip()[-500:]}")
    latency = []
    for line in out.splitlines():
        parts = line.split(":")
        if len(parts) == 3 and parts[0].strip() == "0":
            latency.append(int(parts[2]) * 1000)
    # The frame index and a time stamp on the target's grid, so E2's loader reads both alike.
    t = [i * config["period_ns"] + lat for i, lat in enumerate(latency)]
    operators = {OPERATOR: {"ticks": len(latency), "sched": sched}} if sched else {}
    summary = {"frames": len(latency), "stress_ng": process, "command": cmd, "pm_qos": pm_qos}
    return ({"frame": list(range(len(latency))), "t_start_ns": t, "exec_ns": [0] * len(latency),
             "latency_ns": latency},
            {"operators": operators, "effective": config, "summary": summary,
             "measured_s": measured_s})


if __name__ == "__main__":
    main(run)
