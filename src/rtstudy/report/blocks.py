"""The report's own words, and its blocks as a reader sees them: as HTML (what the rendered
page embeds) or displayed in the running notebook (:func:`show`)."""
from __future__ import annotations

import html

import matplotlib.pyplot as plt
import pandas as pd

from rtstudy.report import figstyle
from rtstudy.report.section import (TEMPLATES, Details, Figure, LazyMarkdown, Markdown, Table,
                                    render)
from rtstudy.sdks.kernelspec import without_iri_checker


def words(block: str, **context) -> str:
    """A block of the report's own template (``templates/report.md.j2``)."""
    return render(TEMPLATES, block, **context)


def table_html(df: pd.DataFrame, caption: str = "") -> str:
    """A plain HTML table (no index) with its caption, which nbconvert keeps when code is hidden."""
    if df.empty:
        return ""
    head = f'<p class="table-caption">{caption}</p>' if caption else ""
    return head + df.to_html(index=False, escape=True, border=0, classes="rtstudy-table")


def markdown_html(text: str) -> str:
    """Markdown as nbconvert renders a Markdown output: pipe tables, headings with anchors."""
    without_iri_checker()
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    return MarkdownWithMath(renderer=IPythonRenderer(escape=False)).render(text)


def block_html(block) -> str:
    """One block as HTML: figures drawn, embedded with their words (alt text), then closed;
    :class:`Details` collapsed under its summary. "" for a block with nothing to show."""
    if isinstance(block, Markdown):
        return markdown_html(block.text)
    if isinstance(block, LazyMarkdown):
        return markdown_html(block.make())
    if isinstance(block, Table):
        return table_html(block.make(), block.caption)
    if isinstance(block, Figure):
        fig = block.make()
        if fig is None:
            return ""
        try:
            return figstyle.to_html(fig)
        finally:
            plt.close(fig)
    if isinstance(block, Details):
        inner = "".join(block_html(b) for b in block.blocks)
        return (f'<details class="rtstudy-details"><summary>{html.escape(block.summary)}'
                f'</summary>{inner}</details>' if inner else "")
    raise TypeError(f"not a report block: {block!r}")


def show(blocks: list) -> None:
    """Display blocks in order in the running notebook: words as Markdown, the rest as HTML
    (:func:`block_html`)."""
    from IPython.display import HTML, Markdown as MarkdownText, display

    for block in blocks:
        if isinstance(block, (Markdown, LazyMarkdown)):
            display(MarkdownText(block.text if isinstance(block, Markdown) else block.make()))
        else:
            out = block_html(block)
            if out:
                display(HTML(out))
