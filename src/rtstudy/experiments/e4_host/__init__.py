"""E4: host tuning audit, jitter probe and platform floor (H4)."""
