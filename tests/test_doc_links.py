"""The documentation's links: every relative link points to a file that exists and, with an
``#anchor``, to a heading of that file; the README is a landing page that links every manual
and whose Layout names every module.

The documents are the README, every ``docs/*.md`` and the README of each top-level folder.
Links inside code (fenced blocks and inline spans) are text, not links, and are not checked;
links with a scheme (``https:``, ``mailto:``) leave the repository and are not checked either.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from rtstudy import paths, registry

# [text](target) and ![alt](target), with an optional "title" after the target.
LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^ {0,3}(```|~~~)")
INLINE_CODE = re.compile(r"(`+).*?\1")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")

README_MAX_LINES = 200
FIRST_SCREEN_LINES = 40


def documents(root: Path) -> list[Path]:
    """The Markdown files whose links are checked, in a fixed order."""
    readmes = [p for p in sorted(root.glob("*/README.md")) if not p.parent.name.startswith(".")]
    return [root / "README.md", *sorted(root.glob("docs/*.md")), *readmes]


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number from 1, line) of every line outside fenced code blocks."""
    lines, fenced = [], False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((number, line))
    return lines


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text lower-cased, punctuation dropped, spaces as -.

    A link in the heading counts by its text. Hyphens and underscores stay.
    """
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file; a repeated heading gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for _, line in prose_lines(path.read_text()):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of every link in a Markdown file's prose."""
    found = []
    for number, line in prose_lines(path.read_text()):
        for match in LINK.finditer(INLINE_CODE.sub("", line)):
            found.append((number, match.group(1)))
    return found


def broken_links(path: Path, root: Path) -> list[str]:
    """What is wrong with each relative link of ``path``, one message per broken link."""
    problems = []
    for number, target in links(path):
        if SCHEME.match(target):
            continue
        file_part, _, anchor = target.partition("#")
        where = f"{path.relative_to(root)}:{number}: ({target})"
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            problems.append(f"{where}: no file {linked}")
        elif anchor:
            if linked.suffix != ".md":
                problems.append(f"{where}: #{anchor} in a file that is not Markdown")
            elif anchor not in anchors(linked):
                problems.append(f"{where}: no heading with anchor #{anchor} in {linked.name}; "
                                f"its anchors: {', '.join(sorted(anchors(linked)))}")
    return problems


def test_every_relative_link_resolves():
    root = paths.root()
    checked = documents(root)
    assert len(checked) >= 8, [str(p) for p in checked]
    problems = [problem for path in checked for problem in broken_links(path, root)]
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_a_broken_file_or_anchor_is_found(tmp_path):
    """The check itself: a missing file and a missing heading are reported; code is not a link."""
    (tmp_path / "other.md").write_text("# Other: a title\n\n## Same\n\n## Same\n")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# Doc\n\n"
        "[ok](other.md#other-a-title) [ok](other.md#same-1) [ok](#doc) [web](https://example.org)\n"
        "[gone](missing.md) [no heading](other.md#nowhere)\n"
        "`[in code](missing-too.md)`\n"
        "```\n[in a fence](missing-three.md)\n```\n")
    problems = broken_links(doc, tmp_path)
    assert len(problems) == 2, problems
    assert "doc.md:4: (missing.md): no file" in problems[0]
    assert "doc.md:4: (other.md#nowhere): no heading with anchor #nowhere" in problems[1]


def test_the_readme_is_a_landing_page():
    """At most 200 lines, `make study` on the first screen, and every manual one click away."""
    root = paths.root()
    readme = root / "README.md"
    lines = readme.read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"
    assert any("make study" in line for line in lines[:FIRST_SCREEN_LINES])
    linked = {(readme.parent / target.partition("#")[0]).resolve()
              for _, target in links(readme) if not SCHEME.match(target)}
    manuals = [*root.glob("docs/*.md"), root / "data" / "README.md"]
    unlinked = [str(p.relative_to(root)) for p in manuals if p.resolve() not in linked]
    assert not unlinked, f"README.md links none of: {', '.join(unlinked)}"


@pytest.mark.parametrize("name", registry.REGISTRY)
def test_each_experiment_folders_readme_maps_every_file(name):
    """Its README.md names each file of the folder, measuring and reporting apart (with rooms,
    each room and each file in it)."""
    folder = registry.get(name).folder
    text = (folder / "README.md").read_text()
    rooms = [p for p in folder.iterdir() if (p / "__init__.py").is_file()]
    if rooms:
        assert all(f"## {room.name}/" in text for room in rooms), [r.name for r in rooms]
    else:
        assert "**Measuring**" in text and "**Reporting**" in text
    files = [p for d in [folder, *rooms] for p in d.iterdir()]
    missing = sorted(p.name for p in files if p.is_file() and p.name != "README.md"
                     and p.name != "__init__.py" and not p.name.endswith((".pyc", ".so"))
                     and f"`{p.name}`" not in text)
    assert not missing, f"{name}/README.md does not name {missing}"


def test_the_readme_layout_names_every_module():
    """Every module of src/rtstudy appears by its file name in the README's Layout.

    By file name only: the protocol modules every experiment has (``params.py``, ``plan.py``, ...)
    are named once for all of them; a module in an experiment's room, in the experiment's map.
    """
    root = paths.root()
    readme = (root / "README.md").read_text()
    assert "\n## Layout\n" in readme, "README.md has no '## Layout' section"
    layout = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    package = root / "src" / "rtstudy"
    modules = [p for p in package.rglob("*") if p.suffix in (".py", ".c") and p.name != "__init__.py"]
    assert modules, f"no module found under {package}"

    def named(p):
        # A module in an experiment's room (a sub-package) is named in that experiment's map.
        room = p.parent
        if (room / "__init__.py").is_file() and room.parent.parent.name == "experiments":
            return p.name in (room.parent / "README.md").read_text()
        return p.name in layout

    missing = sorted(str(p.relative_to(package)) for p in modules if not named(p))
    assert not missing, f"README.md's Layout does not name: {', '.join(missing)}"
