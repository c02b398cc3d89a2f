"""E2's measuring room: the plans (which cells, where), the apps each cell runs and their
operators (the E2 stage's code)."""
