"""E2: real-time vs normal thread under CPU contention (H2)."""
