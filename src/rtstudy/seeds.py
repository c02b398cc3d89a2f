"""The source documents' published figures, each with where it comes from.

These are the only typed numbers in the report: the seeds' claims that the
study's measurements are compared against.
"""
from __future__ import annotations

SEED_FILES = {
    "000": "000_a9c45006794e8da9.txt",
    "001": "001_662aa34b308b53cc.txt",
    "002": "002_b476014e5eac283a.txt",
    "003": "003_a084eb00861cdf62.txt",
    "004": "004_b927122b7bd6dbbf.txt",
}

# Seed 000, "Measured Overhead": µs per iteration, whole app timed, N = 100000,
# 100 warm-up iterations, `--workers 1`; a range where the seed gives one.
E3_PUBLISHED_US = {
    ("ops", "greedy"): (10.0, 10.0),
    ("ops", "event_based"): (11.0, 15.0),
    ("ping", "greedy"): (17.0, 17.0),
    ("ping", "event_based"): (25.0, 62.0),
}
E3_SOURCE = f"seed {SEED_FILES['000']}, section 'Measured Overhead'"

# Seed 002 shows its results as figures only; these are the values read off them
# (DESIGN.md §1): scenario S1, tx1's max latency (ms) at rx vs tx2's period (ms).
E1_PUBLISHED_MAX_LATENCY_MS = {
    "S1": {
        "default": {20: "~30", 100: "~100"},
        "async": {p: "~13–15" for p in range(20, 101, 10)},
    },
}
E1_SOURCE = f"seed {SEED_FILES['002']} (figures; values as read in DESIGN.md §1)"

# Seed 004, jitter probe results (ns): a default core and an isolated, tickless,
# RCU-offloaded, IRQ-free core. The seed gives no P99.99.
E4_PUBLISHED_NS = {
    "untuned": {"p50": 85.3, "p99": 1247.6, "p99.9": 4823.1, "max": 62341.2},
    "tuned": {"p50": 84.8, "p99": 91.2, "p99.9": 104.7, "max": 387.4},
}
E4_SOURCE = f"seed {SEED_FILES['004']}"

# Seeds 001/003: frame-period std (ms) at 60 FPS, normal vs real-time thread.
# Seed 003's Python example output labels its real-time run SCHED_DEADLINE; seed
# 001's C++ output names no policy.
E2_PUBLISHED = [
    {"implementation": "Python (seed 003)", "policy": "SCHED_DEADLINE", "normal_ms": 0.297,
     "realtime_ms": 0.049, "change": "−83.6 %"},
    {"implementation": "C++ (seed 001)", "policy": "not stated", "normal_ms": 0.257,
     "realtime_ms": 0.013, "change": "−94.8 %"},
]
E2_SOURCE = f"seeds {SEED_FILES['001']} and {SEED_FILES['003']}"
