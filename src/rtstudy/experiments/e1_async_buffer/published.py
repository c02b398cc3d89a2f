"""What E1's source document published, and where: the only typed figures of E1's section."""
from __future__ import annotations

from rtstudy.sources import Source

SOURCE = Source(
    title="A Study using Asynchronous Lock-free Buffer with SCHED_DEADLINE",
    publisher="NVIDIA HoloHub tutorials",
    url="https://nvidia-holoscan.github.io/holohub/tutorials/async_buffer_deadline")
# Where in it the figures below are (the tutorial shows results as plots only).
WHERE = "results figures (values read off the plots)"

CLAIM = ("with the default double buffer a fast producer is throttled to a slower one's period; "
         "the async lock-free buffer decouples them under SCHED_DEADLINE")

# Scenario S1, tx1's max latency (ms) at rx against tx2's period (ms), read off the figures.
MAX_LATENCY_MS = {
    "S1": {
        "default": {20: "~30", 100: "~100"},
        "async": {p: "~13–15" for p in range(20, 101, 10)},
    },
}
SUMMARY = "default ~30 → ~100 ms as tx2 goes 20 → 100 ms; async ~13–15 ms flat"
