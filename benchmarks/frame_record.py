"""Cost of recording one frame in E2's target operator (target: <= 1 µs).

    .venv/bin/python benchmarks/frame_record.py [--frames 1000000]

Times what TargetOp.compute adds around its workload: two CLOCK_MONOTONIC
reads and two list appends, with the workload itself set to zero iterations
(the native call's own cost is printed separately). Prints ns per frame, the
median of 5 repetitions.
"""
from __future__ import annotations

import argparse
import statistics
import time

from rtstudy.measure.work import fixed_work


def record(frames: int, work_iterations: int) -> float:
    t_start, exec_ns = [], []
    begin = time.perf_counter_ns()
    for _ in range(frames):
        t0 = time.monotonic_ns()
        fixed_work(work_iterations)
        t1 = time.monotonic_ns()
        t_start.append(t0)
        exec_ns.append(t1 - t0)
    return (time.perf_counter_ns() - begin) / frames


def bare_call(frames: int, work_iterations: int) -> float:
    begin = time.perf_counter_ns()
    for _ in range(frames):
        fixed_work(work_iterations)
    return (time.perf_counter_ns() - begin) / frames


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=1_000_000)
    args = parser.parse_args()
    with_record = statistics.median(record(args.frames, 0) for _ in range(5))
    call_only = statistics.median(bare_call(args.frames, 0) for _ in range(5))
    print(f"frames per repetition: {args.frames:,}; median of 5 repetitions")
    print(f"native fixed_work(0) call alone:        {call_only:7.1f} ns per frame")
    print(f"call + 2 time stamps + 2 appends:       {with_record:7.1f} ns per frame")
    print(f"recording cost (difference):            {with_record - call_only:7.1f} ns per frame "
          "(target <= 1000 ns)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
