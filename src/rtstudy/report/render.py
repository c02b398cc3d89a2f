"""Turning the executed report notebook into ``report/report.html``: template and contents."""
from __future__ import annotations

import re
from pathlib import Path

from rtstudy import atomic, paths


def render_html(executed_notebook) -> str:
    """Render an executed notebook to ``report/report.html``.

    Code hidden, images embedded, no script fetched from the network, and a
    table of contents built from the section headings.
    """
    import nbformat
    from nbconvert import HTMLExporter

    templates = Path(__file__).resolve().parent / "templates"
    exporter = HTMLExporter(template_name="rtstudy_report", extra_template_basedirs=[str(templates)],
                            exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True)
    nb = nbformat.read(str(executed_notebook), as_version=4)
    nb.metadata["title"] = "Real-time scheduling for NVIDIA Holoscan applications"
    body, _ = exporter.from_notebook_node(nb)
    body = add_toc(body)
    out = paths.report_html()
    atomic.write_text(out, body)
    return str(out)


_HEADING = re.compile(r'<h([23]) id="([^"]+)">(.*?)<a class="anchor-link"', re.S)


def add_toc(html: str) -> str:
    """Insert a table of contents of the h2/h3 headings after the report's title (h1)."""
    entries = [f'<li class="h{level}"><a href="#{anchor}">{text.strip()}</a></li>'
               for level, anchor, text in _HEADING.findall(html)]
    if not entries:
        return html
    nav = '<nav class="toc"><strong>Contents</strong><ul>' + "".join(entries) + "</ul></nav>"
    # Between the title's cell and the next one: inside a cell the output area is a
    # flex row that would squeeze the list to nothing. Without a title, at the top.
    title_end = html.find("</h1>")
    cut = html.find('<div class="jp-Cell ', title_end) if title_end >= 0 else -1
    if cut < 0:
        main = html.find("<main>")
        cut = main + len("<main>") if main >= 0 else html.find(">", html.find("<body")) + 1
    if cut <= 0:
        return html  # not a page this renderer made: leave it as it is
    return html[:cut] + nav + html[cut:]
