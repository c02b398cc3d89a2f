"""E2: real-time vs normal thread under CPU contention (H2).

Its modules live in four rooms (README.md has the map): ``measuring`` (the apps, plans and
operators), ``analysis`` (from a run's frames to the verdicts), ``checks`` (the re-run check,
the power plan) and ``report`` (the section, its tables, figures and words). ``params``,
``conditions`` (the lists every room reads) and ``published`` (the sources' figures) sit at
the top.
"""

# Where the registry finds each protocol part (rtstudy.registry): room.module.
PARTS = {
    "plan": "measuring.plan",
    "app": "measuring.app",
    "analysis": "analysis.dataset",
    "section": "report.section",
    "figures": "report.figures",
    "explore": "report.explore",
}
