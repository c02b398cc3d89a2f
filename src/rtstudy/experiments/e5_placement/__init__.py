"""E5: Holoscan 5.0's placement promises (H5b), provoked on purpose; 4.x beside it for contrast."""
