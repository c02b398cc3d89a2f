"""E2's analysis room: from one run's frames to the conditions, their contrasts, the ladder and
H2's verdicts (the report stage's; README.md maps it)."""
