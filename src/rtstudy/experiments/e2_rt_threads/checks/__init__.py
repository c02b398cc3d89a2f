"""E2's checks: the re-run check with power, its first version on runs dealt at random, and the
power plan."""
