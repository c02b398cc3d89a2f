"""The registry and the layering: one folder per experiment, imports one way, cell ids kept."""
from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rtstudy import experiments, paths

SRC = Path(experiments.__file__).resolve().parents[1]
# The layers below the registry: they must work without any experiment.
SHARED = ("paths", "rules", "harness", "io", "stats", "figstyle", "host", "realtime", "work",
          "holo", "audit", "tuning", "browser", "sysdeps", "kernelfs", "shield",
          "placement", "tuned", "apps/__init__", "apps/child",
          "apps/rt_probe", "report/__init__", "report/section", "report/render", "report/figures")
# What an experiment folder must provide (README "Adding an experiment").
PROTOCOL = {
    "params": {"SCHEMA": None, "USES": None, "cross_checks": ["cfg"]},
    "plan": {"plan": ["cfg", "fp", "configs"], "realtime": ["cfg"],
             "host_problems": ["cfg", "fp"], "after_sweep": ["directory"]},
    "analysis": {"SAMPLES": None, "TABLES": None, "load": ["directory", "cfg"],
                 "DRIFT_QUANTITY": None, "drift": ["ds"], "PLOT_FILE": None, "plot_table": ["ds"]},
    "section": {"build": ["ds", "cfg", "ci"]},
}


def modules() -> list[str]:
    return sorted(".".join(p.relative_to(SRC.parent).with_suffix("").parts).removesuffix(".__init__")
                  for p in SRC.rglob("*.py"))


@pytest.mark.parametrize("name", experiments.REGISTRY)
def test_every_experiment_implements_the_protocol(name):
    exp = experiments.get(name)
    for part, names in PROTOCOL.items():
        module = getattr(exp, part)
        for attr, args in names.items():
            assert hasattr(module, attr), f"{name}/{part}.py lacks {attr}"
            if args is not None:
                assert list(inspect.signature(getattr(module, attr)).parameters) == args, \
                    f"{name}/{part}.py: {attr} must take {args}"
    for other in exp.params.USES:
        assert other in experiments.REGISTRY, f"{name} names an unregistered experiment {other!r}"
    for file in ("app.py", "figures.py", "published.py", "report.md.j2"):
        assert (exp.folder / file).is_file(), f"{name} lacks {file}"
    assert set(exp.analysis.TABLES) and set(exp.analysis.SAMPLES.values()) <= {"int64", "string"}


def test_an_unknown_experiment_names_the_registered_ones():
    with pytest.raises(ValueError, match="registered: " + ", ".join(experiments.REGISTRY)):
        experiments.get("e9_nothing")


@pytest.mark.parametrize("shared", SHARED)
def test_shared_layers_import_no_experiment_and_nothing_above_them(shared):
    tree = ast.parse((SRC / f"{shared}.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
    above = {"rtstudy.experiments", "rtstudy.params", "rtstudy.data", "rtstudy.stage",
             "rtstudy.report.study", "rtstudy.cli"}
    bad = sorted(m for m in imported if any(m == a or m.startswith(a + ".") for a in above))
    assert not bad, f"{shared}.py imports {bad}, a layer above it"


def test_every_module_imports_on_its_own():
    """No import cycle: each module imports first in a fresh interpreter (apps only as cells:
    ``app5`` needs Holoscan 5.0, which only its SDK root has)."""
    names = [m for m in modules() if not m.endswith((".app", ".app5"))
             and m != "rtstudy.apps.rt_probe"]
    code = ("import importlib, subprocess, sys\n"
            "bad = []\n"
            "for m in sys.argv[1:]:\n"
            "    p = subprocess.run([sys.executable, '-c', f'import {m}'], capture_output=True, text=True)\n"
            "    if p.returncode: bad.append((m, p.stderr.strip().splitlines()[-1]))\n"
            "print(bad)\n")
    out = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True,
                         timeout=600, check=True).stdout
    assert out.strip() == "[]", out


def test_no_experiment_is_named_outside_the_registry_and_its_folder():
    for path in SRC.glob("*.py"):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for name in experiments.REGISTRY:
                assert name not in line, f"{path.name}:{n} names {name}: {line.strip()}"


def test_a_cell_runs_its_app_without_importing_the_report():
    """The cell's subprocess imports its app's parents only: no pandas, no figures, no report."""
    code = ("import sys, rtstudy.experiments.e3_overhead, rtstudy.apps.child, rtstudy.work\n"
            "print(sorted(m for m in ('pandas', 'matplotlib', 'scipy', 'rtstudy.report') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    assert out.strip() == "[]"


def test_cell_ids_are_those_of_data_measured_before_the_move():
    """Moving code must never make measured data look incomplete: same configs, same ids."""
    recorded = json.loads((paths.root() / "tests" / "fixtures"
                           / "cell_ids_before_the_move.json").read_text())
    for fp_name, fp in recorded["fingerprints"].items():
        for profile, configs in recorded["configs"].items():
            configs = {name: dict(cfg) for name, cfg in configs.items()}
            # Added since: as many runs of H2's conditions as of the others is the old plan.
            configs["e2_rt_threads"].setdefault("headline_repetitions",
                                                configs["e2_rt_threads"]["repetitions"])
            for name in experiments.REGISTRY:
                if name == "e2_rt_threads":
                    # E2's conditions changed on purpose (the dispatcher, load placement and
                    # topology factors; its own floor); every E2 cell was measured anew.
                    continue
                # Added since too: the drift check's two extra cells, which change no other id.
                for drift_check in (False, True):
                    cfg = {**configs[name], "drift_check": drift_check}
                    cells = experiments.get(name).plan.plan(cfg, fp, {**configs, name: cfg})
                    assert sorted(c.cell_id for c in cells if not c.drift) == \
                        recorded["cell_ids"][fp_name][profile][name], (fp_name, profile, name)
                    assert sum(bool(c.drift) for c in cells) == (2 if drift_check else 0)
