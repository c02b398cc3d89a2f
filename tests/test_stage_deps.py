"""dvc.yaml names every module of an experiment's folder that its stages run.

A module the report side imports (analysis, section, figures, and what they import
from the folder) must be a dependency of the report stage, and one the measuring side
imports (plan, app) a dependency of the experiment's own stage: otherwise editing it
would leave a stale report or stale data that `dvc status` does not show.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from rtstudy import paths, registry

REPORT_SIDE = ("analysis", "section", "figures")
MEASURING_SIDE = ("plan", "app")


def deps(stage: str) -> set[str]:
    return set(yaml.safe_load((paths.root() / "dvc.yaml").read_text())["stages"][stage]["deps"])


SRC = paths.root() / "src" / "rtstudy"


def module_file(module: str) -> Path | None:
    """The file that defines ``module`` (``rtstudy.a.b``; a name imported from a module gives the
    module), or None outside src/rtstudy."""
    parts = module.split(".")[1:]
    for k in range(len(parts), -1, -1):
        base = SRC.joinpath(*parts[:k])
        if base.with_suffix(".py").is_file():
            return base.with_suffix(".py")
        if (base / "__init__.py").is_file():
            return base / "__init__.py"
    return None


def imported_files(path: Path) -> set[Path]:
    """The files of src/rtstudy that importing ``path`` runs directly: each module it imports
    and the ``__init__.py`` of every package above one."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rtstudy"):
            found |= {module_file(f"{node.module}.{a.name}") for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {module_file(a.name) for a in node.names if a.name.startswith("rtstudy")}
    for file in list(found - {None}):
        found |= {d / "__init__.py" for d in file.parents if SRC in d.parents}
    return found - {None}


def closure(starts: list[Path]) -> set[Path]:
    seen, todo = set(), list(starts)
    while todo:
        file = todo.pop()
        if file not in seen:
            seen.add(file)
            todo += imported_files(file)
    return seen


@pytest.mark.parametrize("name", [e.name for e in registry.every()])
def test_each_stage_depends_on_the_folder_modules_it_runs(name):
    exp = registry.get(name)
    for stage, side in (("report", REPORT_SIDE), (name, MEASURING_SIDE)):
        files = {f for f in closure([exp.file(part) for part in side]) if exp.folder in f.parents}
        assert files, f"{name}: no {side} module found"
        missing = uncovered(stage, files)
        assert not missing, f"dvc.yaml stage {stage!r} lacks {name}'s modules {missing}"


def docstring_only(file: Path) -> bool:
    """A package's ``__init__.py`` with nothing that runs but its docstring and constants."""
    return all(isinstance(n, ast.Expr) or (isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant))
               for n in ast.parse(file.read_text()).body)


def uncovered(stage: str, files: set[Path]) -> list[str]:
    """The files with code that no dependency of ``stage`` names, itself or by a folder above it."""
    listed = [paths.root() / d for d in deps(stage)]
    return sorted(str(f.relative_to(SRC)) for f in files
                  if not docstring_only(f) and not any(f == d or d in f.parents for d in listed))


@pytest.mark.parametrize("name", [e.name for e in registry.every()])
def test_a_measuring_stage_depends_on_every_module_its_cells_import(name):
    """The cell's app and the plan, and the harness that runs them: every module they import
    (the registry reads the experiment's folder, so the closure stops at other experiments)."""
    exp = registry.get(name)
    parts = [exp.file(m) for m in MEASURING_SIDE]
    starts = parts + [f.with_name(f"{f.stem}5.py") for f in parts
                      if f.with_name(f"{f.stem}5.py").is_file()] + [SRC / "measure" / "harness.py"]
    missing = uncovered(name, closure(starts))
    assert not missing, f"dvc.yaml stage {name!r} lacks {missing}"


def test_the_report_stage_depends_on_every_module_the_report_imports():
    starts = [SRC / "report" / "study.py"] + [
        e.file(m) for e in registry.every() for m in REPORT_SIDE]
    missing = uncovered("report", closure(starts))
    assert not missing, f"dvc.yaml stage 'report' lacks {missing}"
