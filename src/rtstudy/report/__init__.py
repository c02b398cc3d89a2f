"""The report: every registered experiment's section, rendered to ``report/report.html``.

:mod:`rtstudy.report.section` holds what an experiment's section is made of
(and imports nothing of the study); :mod:`rtstudy.report.study` loads and
builds every section through the registry; :mod:`rtstudy.report.render` turns
the executed notebook into HTML.
"""
