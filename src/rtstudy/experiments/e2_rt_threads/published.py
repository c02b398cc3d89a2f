"""What E2's source documents published, and where: the only typed figures of E2's section."""
from __future__ import annotations

from rtstudy.sources import Source

SOURCE = Source(
    title="Real-time Thread Scheduling Benchmark",
    publisher="NVIDIA HoloHub benchmarks (C++ and Python versions)",
    url="https://nvidia-holoscan.github.io/holohub/benchmarks/realtime_threads_benchmarking")
WHERE = "example results"
# Where the "tail" (P100 − P95) and "flatness" (P90 − P10) of a latency distribution come from
# (its analyze.py --tail / --flatness): E2 gives them for the frame period, for its readers.
FLOW_BENCHMARKING = Source(
    title="Holoscan Flow Benchmarking",
    publisher="NVIDIA HoloHub benchmarks",
    url="https://github.com/nvidia-holoscan/holohub/tree/main/benchmarks/holoscan_flow_benchmarking")

CLAIM = "under CPU contention a real-time policy cuts an operator's frame-period jitter"

# Frame-period std (ms) at 60 FPS, normal vs real-time thread. The Python version's example
# output labels its real-time run SCHED_DEADLINE; the C++ version's names no policy.
STD_MS = [
    {"implementation": "Python version", "policy": "SCHED_DEADLINE", "normal_ms": 0.297,
     "realtime_ms": 0.049, "change": "−83.6 %"},
    {"implementation": "C++ version", "policy": "not stated", "normal_ms": 0.257,
     "realtime_ms": 0.013, "change": "−94.8 %"},
]
SUMMARY = "std 0.297 → 0.049 ms (−83.6 %, Python); 0.257 → 0.013 ms (−94.8 %, C++)"

# The benchmark's rating of a std reduction ("Performance Rating"): above each fraction, its name.
RATING_BANDS = ((0.50, "excellent"), (0.20, "good"), (0.05, "modest"))
