"""The report: every registered experiment's section, rendered to ``report/report.html``.

:mod:`rtstudy.report.section` holds what an experiment's section is made of
(and imports nothing of the study); :mod:`rtstudy.report.study` loads and
builds every section through the registry (its sessions' view in ``study_sessions``, its
hosts' in ``study_hosts``, report/metrics.json in ``study_metrics``; the HTML blocks in
``blocks``); :mod:`rtstudy.report.render` turns
the executed notebook into HTML.
"""
