"""Turning the executed report notebook into ``report/report.html``: template and contents;
and publishing a render whole (:func:`staged`)."""
from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
from pathlib import Path

from rtstudy import atomic, paths
from rtstudy.measure import integrity
from rtstudy.sdks.kernelspec import without_iri_checker

STAGING = ".staging"  # inside report/, so that swapping it in is a rename on one file system
# What a render needs free beside report/: the old report stays until the new one is whole.
MIN_FREE_BYTES = 64 * 2**20


class ReportError(RuntimeError):
    """The report could not be written; ``report/`` is as it was."""


@contextlib.contextmanager
def staged():
    """Render the report into ``report/.staging/`` and swap it in only when all of it succeeded.

    Inside the ``with`` block :func:`rtstudy.paths.report_dir` is the staging folder, for this
    process and the notebook's kernel alike (``$RTSTUDY_REPORT_DIR``). On success the staged
    figures, plots, metrics and HTML replace ``report/``'s, the HTML last; on any failure the
    staging folder is removed and ``report/`` keeps the previous report, whole. A full disk is
    named as such (:class:`ReportError`), whatever error the writer that met it raised.

    Yields
    ------
    pathlib.Path
        The staging folder.
    """
    target = paths.report_dir()
    staging = target / STAGING
    shutil.rmtree(staging, ignore_errors=True)  # a killed render's leftovers
    staging.mkdir(parents=True)
    free = shutil.disk_usage(staging).free
    if free < MIN_FREE_BYTES:
        shutil.rmtree(staging, ignore_errors=True)
        raise ReportError(_full_disk(target, free) + "; nothing was rendered")
    before = os.environ.get(paths.REPORT_DIR_ENV)
    os.environ[paths.REPORT_DIR_ENV] = str(staging)
    try:
        yield staging
    except BaseException as exc:
        full = _disk_full(exc, staging)
        free = shutil.disk_usage(target).free
        shutil.rmtree(staging, ignore_errors=True)
        if full:
            raise ReportError(_full_disk(target, free)) from exc
        raise
    finally:
        if before is None:
            os.environ.pop(paths.REPORT_DIR_ENV, None)
        else:
            os.environ[paths.REPORT_DIR_ENV] = before
    _swap(staging, target)


def _full_disk(target: Path, free: int) -> str:
    return (f"the disk holding {target} is full ({free / 2**20:.0f} MiB free; a render needs "
            f"about {MIN_FREE_BYTES / 2**20:.0f} MiB beside the last report): free space there "
            f"and run `make report` again; {target} still holds the last report, whole")


def _disk_full(exc: BaseException, staging: Path) -> bool:
    """Whether ``exc`` came of a full disk: an ENOSPC/EDQUOT anywhere in its chain or in the
    notebook's traceback (a writer may turn it into another error, e.g. matplotlib's PDF
    backend into an ``AttributeError``), or hardly any space left beside the staged files."""
    seen = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        seen = seen.__cause__ or seen.__context__
    text = " ".join([str(exc), *(getattr(exc, "traceback", None) or [])])
    if os.strerror(errno.ENOSPC) in text or os.strerror(errno.EDQUOT) in text:
        return True
    with contextlib.suppress(OSError):
        return shutil.disk_usage(staging).free < 2**20
    return False


def _swap(staging: Path, target: Path) -> None:
    """Move everything in ``staging`` into ``target`` whole, or leave ``target`` as it was.

    Each old item is renamed aside (``.old-<name>``) and the new one renamed in, the HTML
    last; only when every item is in place are the old ones removed. Where any rename fails
    (a full disk, an immutable file), the items already swapped are put back, newest first,
    ``staging`` is removed and :class:`ReportError` says so in one line.
    """
    items = sorted(staging.iterdir(), key=lambda p: p.name == paths.report_html().name)
    swapped: list[tuple[Path, Path | None]] = []  # (place, the old item set aside, or None)
    try:
        for item in items:
            dest, old = target / item.name, target / f".old-{item.name}"
            _remove(old)  # left by a swap that was killed
            if dest.exists() or dest.is_symlink():
                os.rename(dest, old)
                swapped.append((dest, old))
            else:
                swapped.append((dest, None))
            os.rename(item, dest)
    except OSError as exc:
        problems = _put_back(swapped, staging)
        _remove(staging)
        raise ReportError(
            f"the new report could not be put in place ({exc.strerror or exc}: "
            f"{exc.filename or target}); "
            + (f"{target} still holds the last report, whole" if not problems else
               f"putting the last report back failed too ({'; '.join(problems)})")) from None
    for _, old in swapped:
        if old is not None:
            _remove(old)
    staging.rmdir()
    integrity.fsync_dir(target)


def _put_back(swapped: list[tuple[Path, Path | None]], staging: Path) -> list[str]:
    """Undo a partial :func:`_swap`: each new item back into ``staging``, each old one back in
    its place, newest first; what could not be undone."""
    problems = []
    for dest, old in reversed(swapped):
        try:
            if dest.exists() or dest.is_symlink():
                if old is None or old.exists():
                    os.rename(dest, staging / dest.name)
            if old is not None and old.exists():
                os.rename(old, dest)
        except OSError as exc:
            problems.append(f"{dest}: {exc.strerror or exc}")
    return problems


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def render_html(executed_notebook) -> str:
    """Render an executed notebook to ``report/report.html``.

    Code hidden, images embedded, no script fetched from the network, and a
    table of contents built from the section headings.
    """
    without_iri_checker()
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


_HEADING = re.compile(r'<h2 id="([^"]+)">(.*?)<a class="anchor-link"', re.S)


def add_toc(html: str) -> str:
    """Insert a one-line table of contents of the main page's h2 headings after the report's
    title (h1); the lab book's headings are inside its collapsed parts."""
    entries = [f'<li><a href="#{anchor}">{text.strip()}</a></li>'
               for anchor, text in _HEADING.findall(html)]
    if not entries:
        return html
    nav = '<nav class="toc"><strong>Contents:</strong> <ul>' + "".join(entries) + "</ul></nav>"
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
