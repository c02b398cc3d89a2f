"""E2's report room: the section, its tables, figures, words (report.md.j2) and recipes."""
