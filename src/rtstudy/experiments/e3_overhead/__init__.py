"""E3: Holoscan scheduler overhead (H3)."""
