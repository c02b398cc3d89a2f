"""What E4's source documents published, and where: the only typed figures of E4's section."""
from __future__ import annotations

from rtstudy.sources import Source

SOURCE = Source(
    title="CPU Pinning, isolcpus, and nohz_full: Building a Quiet Core for Latency-Critical Code",
    publisher="Nikhil Padala, blog",
    url="https://nikhilpadala-site.pages.dev/blog/cpu-pinning-isolcpus-nohz")
WHERE = "jitter probe results"
# The host-isolation advice that E4's audit also follows.
ISOLATION = Source(
    title="Holoscan SDK User Guide: Performance Considerations",
    publisher="NVIDIA",
    url="https://docs.nvidia.com/holoscan/sdk-user-guide/performance/performance-considerations")
ISOLATION_WHERE = "section 'Host CPU Isolation for Real-Time Schedulers'"

CLAIM = "an isolated, tickless core has a latency tail close to its median"

# Jitter probe results (ns): a default core, and an isolated, tickless, RCU-offloaded,
# IRQ-free core. The source gives no P99.99.
LADDER_NS = {
    "untuned": {"p50": 85.3, "p99": 1247.6, "p99.9": 4823.1, "max": 62341.2},
    "tuned": {"p50": 84.8, "p99": 91.2, "p99.9": 104.7, "max": 387.4},
}
SUMMARY = "P99 1248 → 91 ns, max 62 µs → 0.4 µs on an isolated core"
