"""What E5's sources promise, and where: NVIDIA's Holoscan 5.0 API reference, sentence by sentence.

E5 reproduces no figure: its source is the reference's description of each enum value, which
says what 5.0 does when a placement it was asked for cannot be proven or applied.
"""
from __future__ import annotations

from rtstudy.sources import Source

PROBE_POLICY = Source(
    title="Holoscan SDK 5.0 API reference: holoscan::ProbeFailurePolicy",
    publisher="NVIDIA",
    url="https://docs.nvidia.com/holoscan/sdk-user-guide/5-0-latest/api-reference/holoscan/"
        "enums/probefailurepolicy")
IRQ_ISOLATION = Source(
    title="Holoscan SDK 5.0 API reference: holoscan::IRQIsolation",
    publisher="NVIDIA",
    url="https://docs.nvidia.com/holoscan/sdk-user-guide/5-0-latest/api-reference/holoscan/"
        "enums/irqisolation")
PLACEMENT = Source(
    title="Holoscan SDK 5.0 API reference: holoscan::ThreadPlacement",
    publisher="NVIDIA",
    url="https://docs.nvidia.com/holoscan/sdk-user-guide/5-0-latest/api-reference/holoscan/"
        "structs/threadplacement")

# Each value's description, as the reference gives it (the words the H5b table quotes).
SENTENCES = {
    "warn_and_record_fallback": "Preserve an explicit bounded fallback record.",
    "fail_admission": "Reject before Runtime creates the lane.",
    "not_requested": "Do not require or prefer IRQ-isolation evidence.",
    "prefer_isolated": "Record an explicit fallback when isolation cannot be proven.",
    "require_isolated": "Reject admission when isolation cannot be proven.",
}
CLAIM = ("a placement 5.0 cannot prove or apply is rejected before its lane starts, or runs "
         "with an explicit fallback record, as its failure policy says")
SUMMARY = ("fail_admission: rejected before the lane; warn_and_record_fallback and "
           "prefer_isolated: a fallback recorded; require_isolated: rejected")
