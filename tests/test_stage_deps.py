"""dvc.yaml names every module of an experiment's folder that its stages run.

A module the report side imports (analysis, section, figures, and what they import
from the folder) must be a dependency of the report stage, and one the measuring side
imports (plan, app) a dependency of the experiment's own stage: otherwise editing it
would leave a stale report or stale data that `dvc status` does not show.
"""
from __future__ import annotations

import ast

import pytest
import yaml

from rtstudy import paths, registry

REPORT_SIDE = ("analysis", "section", "figures")
MEASURING_SIDE = ("plan", "app")


def folder_imports(name: str, start: tuple[str, ...]) -> set[str]:
    """The modules of experiment ``name``'s folder that ``start`` import, directly or not."""
    folder = registry.get(name).folder
    package = f"rtstudy.experiments.{name}"
    seen, todo = set(), [m for m in start if (folder / f"{m}.py").is_file()]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        for node in ast.walk(ast.parse((folder / f"{module}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == package:
                todo += [a.name for a in node.names if (folder / f"{a.name}.py").is_file()]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(package + "."):
                todo.append(node.module.rsplit(".", 1)[1])
    return seen


def deps(stage: str) -> set[str]:
    return set(yaml.safe_load((paths.root() / "dvc.yaml").read_text())["stages"][stage]["deps"])


@pytest.mark.parametrize("name", [e.name for e in registry.every()])
def test_each_stage_depends_on_the_folder_modules_it_runs(name):
    for stage, side in (("report", REPORT_SIDE), (name, MEASURING_SIDE)):
        listed = deps(stage)
        modules = folder_imports(name, side)
        assert modules, f"{name}: no {side} module found"
        missing = sorted(m for m in modules
                         if f"src/rtstudy/experiments/{name}/{m}.py" not in listed)
        assert not missing, f"dvc.yaml stage {stage!r} lacks {name}'s modules {missing}"
