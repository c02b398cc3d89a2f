"""rtstudy: a reproducible study of real-time scheduling for NVIDIA Holoscan applications."""

__version__ = "0.1.0"
