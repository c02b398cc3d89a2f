"""What E3's source document published, and where: the only typed figures of E3's section."""
from __future__ import annotations

from rtstudy.sources import Source

SOURCE = Source(
    title="Holoscan SDK User Guide: Performance Considerations",
    publisher="NVIDIA",
    url="https://docs.nvidia.com/holoscan/sdk-user-guide/performance/performance-considerations")
WHERE = "section 'Measured Overhead'"

CLAIM = ("Holoscan's per-iteration scheduling cost is ~10–60 µs, so operators doing less than "
         "~20 µs of work are dominated by it")

N = 100_000  # iterations the figures below were measured at
# µs per iteration, whole app timed, N = 100000, 100 warm-up iterations, `--workers 1`;
# (low, high), equal where the source gives one value.
US_PER_ITERATION = {
    ("ops", "greedy"): (10.0, 10.0),
    ("ops", "event_based"): (11.0, 15.0),
    ("ping", "greedy"): (17.0, 17.0),
    ("ping", "event_based"): (25.0, 62.0),
}
SUMMARY = "Greedy ~10 µs (no messages) / ~17 µs (Tx→Rx); EventBased ~11–15 / 25–62 µs"
