"""The house rules a reader relies on: modules and functions short enough to read, or saying
why they are not, no block of code written twice, and no record returned untyped.

A module over :data:`MODULE_LINES` lines, or a function over :data:`FUNCTION_LINES`, passes
only with a sentence starting ``Long because:`` in its docstring. Copies are found the way a
reviewer finds them: six or more lines of code, the same to the letter once blank lines,
comments, docstrings and imports are left out.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "rtstudy"
TESTS = Path(__file__).resolve().parent
MODULE_LINES = 450
FUNCTION_LINES = 60
COPY_LINES = 6
REASON = "Long because:"
# Lone punctuation: no line of code on its own.
_PLAIN = {")", "]", "}", "),", "],", "},", "))", ")])", "):", "]:", "})", ")))"}


def _modules(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "fixtures" not in p.parts)


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _name(path: Path) -> str:
    for root in (SRC.parent, TESTS.parent):
        if root in path.parents:
            return str(path.relative_to(root))
    return path.name


def _says_why(node) -> bool:
    return REASON in (ast.get_docstring(node) or "")


@pytest.mark.parametrize("path", _modules(SRC), ids=lambda p: str(p.relative_to(SRC)))
def test_a_module_is_short_or_says_why(path):
    lines = len(path.read_text().splitlines())
    assert lines <= MODULE_LINES or _says_why(_tree(path)), (
        f"{_name(path)} has {lines} lines (> {MODULE_LINES}): split it by what it does, or say "
        f"why it is one piece in a module docstring sentence starting {REASON!r}")


@pytest.mark.parametrize("path", _modules(SRC), ids=lambda p: str(p.relative_to(SRC)))
def test_a_function_is_short_or_says_why(path):
    long = [f"{node.name} (line {node.lineno}, {node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(_tree(path))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > FUNCTION_LINES and not _says_why(node)]
    assert not long, (f"{_name(path)}: functions over {FUNCTION_LINES} lines without a "
                      f"{REASON!r} sentence in their docstring: {long}")


def _code_lines(path: Path) -> list[tuple[int, str]]:
    """A file's lines of code, white space folded: no blank lines, comments, docstrings,
    imports or lone punctuation (:data:`_PLAIN`)."""
    tree = _tree(path)
    skip = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            skip.update(range(body[0].lineno, body[0].end_lineno + 1))
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            skip.update(range(node.lineno, node.end_lineno + 1))
    out = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        text = " ".join(line.split("#")[0].split()) if "#" in line and '"' not in line \
            and "'" not in line else " ".join(line.split())
        if number in skip or not text or text.startswith("#") or text in _PLAIN:
            continue
        out.append((number, text))
    return out


def copies(paths: list[Path], size: int = COPY_LINES) -> list[str]:
    """Places where ``size`` lines of code stand twice, to the letter, in ``paths``
    (overlapping windows of one copy are named once, by its first window)."""
    seen = defaultdict(list)
    for path in paths:
        lines = _code_lines(path)
        for i in range(len(lines) - size + 1):
            window = tuple(text for _, text in lines[i:i + size])
            seen[window].append((path, i, lines[i][0], lines[i + size - 1][0]))
    found, named = [], set()
    for places in seen.values():
        if len(places) < 2:
            continue
        # A longer copy is a run of windows, each one line on: name only the first.
        later = any((path, i - 1) in named for path, i, _, _ in places)
        named.update((path, i) for path, i, _, _ in places)
        if not later:
            found.append(" ~ ".join(f"{_name(p)}:{a}-{b}" for p, _, a, b in places))
    return found


def test_copies_are_found(tmp_path):
    block = "\n".join(f"x{i} = compute({i}) + other({i})" for i in range(7))
    (tmp_path / "a.py").write_text(f'"""A."""\nimport os\n\n\ndef f():\n{_indent(block)}\n')
    (tmp_path / "b.py").write_text(f"def g():\n    # the same\n{_indent(block)}\n    return 1\n")
    (tmp_path / "c.py").write_text(block.replace("compute", "another") + "\n")
    found = copies(sorted(tmp_path.glob("*.py")))
    assert len(found) == 1 and "a.py:6" in found[0] and "b.py:3" in found[0], found


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


@pytest.mark.parametrize("root", [SRC, TESTS], ids=["src", "tests"])
def test_no_block_of_code_is_written_twice(root):
    found = copies(_modules(root))
    assert not found, (f"{len(found)} blocks of {COPY_LINES}+ lines stand twice; make one "
                       "function serve both:\n" + "\n".join(found))


def _bare_dict(annotation: ast.expr | None) -> bool:
    """Whether a return annotation is a bare ``dict`` (or ``dict | None``): a record whose keys
    no type names."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        annotation = ast.parse(annotation.value, mode="eval").body
    if isinstance(annotation, ast.BinOp):  # X | None
        return _bare_dict(annotation.left) or _bare_dict(annotation.right)
    return isinstance(annotation, ast.Name) and annotation.id == "dict"


def test_no_function_returns_an_untyped_record():
    """A record a function returns names its keys: a TypedDict (a JSON record, a table's row) or
    a frozen dataclass; a keyed collection says its key and value types (``dict[str, float]``)."""
    bare = [f"{_name(path)}:{node.lineno} {node.name}" for path in _modules(SRC)
            for node in ast.walk(_tree(path))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and _bare_dict(node.returns)]
    assert not bare, "functions annotated `-> dict`: type what they return:\n" + "\n".join(bare)


def test_a_bare_dict_annotation_is_told_from_a_typed_one():
    def returns(source: str) -> ast.expr:
        return ast.parse(source).body[0].returns

    assert _bare_dict(returns("def f() -> dict: ..."))
    assert _bare_dict(returns("def f() -> dict | None: ..."))
    assert not _bare_dict(returns("def f() -> dict[str, float]: ..."))
    assert not _bare_dict(returns("def f() -> Summary | None: ..."))
