"""The registry and the layering: one folder per experiment, imports one way, cell ids kept."""
from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rtstudy import paths, registry

SRC = Path(registry.__file__).resolve().parent
# The layers that read the registry (and through it the experiments' modules); every other
# module of src/rtstudy outside experiments/ is a shared layer below them.
ABOVE = ("registry", "params", "data/__init__", "data/sessions", "data/sharing", "data/schemas",
         "data/origins", "stage", "cli/__init__", "cli/__main__", "cli/data_commands",
         "cli/host_commands", "report/study", "report/study_sessions",
         "report/study_hosts", "report/study_metrics", "report/stability", "report/preregistration",
         "explore")
# The rooms of src/rtstudy (a sub-package, or a module of its own), lowest first: a module
# imports only from its own room and those before it (the README's Layout says the same).
ROOMS = (("paths", "policies", "atomic", "rules", "registry", "sources", "view", "_native",
          "protocol"),
         ("machine",),
         ("sdks",), ("params",), ("measure",), ("apps",), ("data",), ("inference",), ("report",),
         ("experiments",), ("stage", "explore", "viewplot"), ("cli",))
# What an experiment folder must provide (the protocol in rtstudy/registry.py): each member,
# with its arguments where it is a function.
PROTOCOL = {
    "params": {"SCHEMA": None, "USES": None, "cross_checks": ["cfg"]},
    "plan": {"plan": ["cfg", "fp", "configs"], "realtime": ["cfg"],
             "host_problems": ["cfg", "fp"], "after_sweep": ["directory"], "SDK_APIS": None},
    "analysis": {"SAMPLES": None, "SCHEMA": None, "TABLES": None, "load": ["directory", "cfg"],
                 "DRIFT_QUANTITY": None, "drift": ["ds"], "PLOT_FILE": None, "plot_table": ["ds"]},
    "section": {"LABEL": None, "HYPOTHESIS": None, "CLAIM": None, "build": ["ds", "cfg", "ci"]},
    "explore": {"VIEW": None, "default_condition": ["tables"], "seed": ["ax", "run"]},
}
# Members an experiment may have; a reader asks with hasattr first.
OPTIONAL = {"params": {"FROM_PROTOCOL": None},
            "analysis": {"power_plan": ["ds", "cfg", "ci", "host_id"]}}


def modules() -> list[str]:
    return sorted(".".join(p.relative_to(SRC.parent).with_suffix("").parts).removesuffix(".__init__")
                  for p in SRC.rglob("*.py"))


def outside_the_folders() -> list[str]:
    """Every module of src/rtstudy outside ``experiments/``, as a path without ``.py``."""
    return sorted(p.relative_to(SRC).with_suffix("").as_posix() for p in SRC.rglob("*.py")
                  if "experiments" not in p.relative_to(SRC).parts)


def shared_layers() -> list[str]:
    return [m for m in outside_the_folders() if m not in ABOVE and m != "__init__"]


def imports(module: str) -> set[str]:
    """The modules ``src/rtstudy/<module>.py`` imports (``from a import b`` counts a and a.b)."""
    imported = set()
    for node in ast.walk(ast.parse((SRC / f"{module}.py").read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
    return imported


def within(names: set[str], package: str) -> list[str]:
    """The modules of ``names`` inside ``package`` (``rtstudy.data.__init__``: the package
    itself, which every import from it runs)."""
    if package.endswith(".__init__"):
        package = package.removesuffix(".__init__")
    return sorted(m for m in names if m == package or m.startswith(package + "."))


def room_of(module: str) -> int:
    """The position in :data:`ROOMS` of ``rtstudy.<module>`` (dotted or a path without .py)."""
    first = module.replace("/", ".").removeprefix("rtstudy.").split(".")[0]
    return next(i for i, names in enumerate(ROOMS) if first in names)


@pytest.mark.parametrize("name", registry.REGISTRY)
def test_every_experiment_implements_the_protocol(name):
    exp = registry.get(name)
    for part, names in PROTOCOL.items():
        module = getattr(exp, part)
        for attr, args in names.items():
            assert hasattr(module, attr), f"{name}/{part}.py lacks {attr}"
            if args is not None:
                assert list(inspect.signature(getattr(module, attr)).parameters) == args, \
                    f"{name}/{part}.py: {attr} must take {args}"
    for other in exp.params.USES:
        assert other in registry.REGISTRY, f"{name} names an unregistered experiment {other!r}"
    for file in (exp.file("app"), exp.file("figures"), exp.file("published"),
                 exp.file("section").with_name("report.md.j2")):
        assert file.is_file(), f"{name} lacks {file.relative_to(exp.folder)}"
    assert set(exp.analysis.TABLES) and set(exp.analysis.SAMPLES.values()) <= {"int64", "string"}
    apis = exp.plan.SDK_APIS
    assert isinstance(apis, tuple) and all(isinstance(a, int) for a in apis)


def test_the_registry_docstring_lists_every_member_of_the_protocol():
    doc = registry.__doc__
    for part, names in [*PROTOCOL.items(), *OPTIONAL.items()]:
        assert f"``{part}.py``" in doc
        for attr, args in names.items():
            named = f"``{attr}({', '.join(args)})``" if args is not None else f"``{attr}``"
            assert named in doc, f"rtstudy/registry.py's docstring does not list {part}.{named}"


def protocol_reads(module: str) -> set[tuple[str, str]]:
    """The (part, member) pairs ``module`` reads of an experiment: ``x.plan.realtime``, or
    ``getattr(x.plan, "NAME", …)``."""
    found = set()
    for node in ast.walk(ast.parse((SRC / f"{module}.py").read_text())):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
                and node.value.attr in PROTOCOL):
            found.add((node.value.attr, node.attr))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "getattr" and isinstance(node.args[0], ast.Attribute)
              and node.args[0].attr in PROTOCOL and isinstance(node.args[1], ast.Constant)):
            found.add((node.args[0].attr, node.args[1].value))
    return found


def test_nothing_outside_the_folders_reads_a_member_the_protocol_does_not_list():
    """The protocol is the whole interface: every member read is listed (and tested above)."""
    listed = {(part, attr) for part, names in [*PROTOCOL.items(), *OPTIONAL.items()]
              for attr in names}
    read = {m: protocol_reads(m) for m in outside_the_folders()}
    assert read["stage"] and read["data/__init__"] and read["report/study"], "the scan finds no read"
    unlisted = {m: sorted(r - listed) for m, r in read.items() if r - listed}
    assert not unlisted, f"members read but not in the protocol: {unlisted}"


def test_an_unknown_experiment_names_the_registered_ones():
    with pytest.raises(ValueError, match="registered: " + ", ".join(registry.REGISTRY)):
        registry.get("e9_nothing")


def test_the_registry_imports_nothing_of_rtstudy():
    """A leaf: every layer may read it without importing an experiment (or anything else)."""
    assert not within(imports("registry"), "rtstudy")


@pytest.mark.parametrize("module", outside_the_folders())
def test_no_module_outside_the_folders_imports_an_experiment(module):
    """Shared modules and those above them read the registry, never the experiments package."""
    bad = within(imports(module), "rtstudy.experiments")
    assert not bad, f"{module}.py imports {bad}: read the experiment through rtstudy.registry"


@pytest.mark.parametrize("shared", shared_layers())
def test_shared_layers_import_nothing_above_them(shared):
    """The layers below the registry work without any experiment and without the registry."""
    bad = [m for a in ABOVE for m in within(imports(shared), "rtstudy." + a.replace("/", "."))]
    assert not bad, f"{shared}.py imports {bad}, a layer above it"


@pytest.mark.pipeline  # a fresh interpreter per module: slow for make test-fast
def test_every_module_imports_on_its_own():
    """No import cycle: each module imports first, with no other rtstudy module imported
    (apps only as cells: ``app5`` needs Holoscan 5.0, which only its SDK root has). One fresh
    interpreter for all, every rtstudy module dropped from ``sys.modules`` before each import
    (what a fresh interpreter per module gave, at a fiftieth of the cost: numpy, pandas and
    matplotlib load once)."""
    names = [m for m in modules() if not m.endswith((".app", ".app5"))
             and m != "rtstudy.apps.rt_probe"]
    code = ("import importlib, json, sys, traceback\n"
            "bad = []\n"
            "for name in json.loads(sys.argv[1]):\n"
            "    for loaded in [m for m in sys.modules if m.split('.')[0] == 'rtstudy']:\n"
            "        del sys.modules[loaded]\n"
            "    try:\n"
            "        importlib.import_module(name)\n"
            "    except Exception:\n"
            "        bad.append([name, traceback.format_exc().strip().splitlines()[-1]])\n"
            "print(json.dumps(bad))\n")
    p = subprocess.run([sys.executable, "-c", code, json.dumps(names)], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout.strip().splitlines()[-1]) == [] and len(names) > 50


def test_no_experiment_is_named_outside_the_registry_and_its_folder():
    for path in SRC.glob("*.py"):
        if path.name == "registry.py":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for name in registry.REGISTRY:
                assert name not in line, f"{path.name}:{n} names {name}: {line.strip()}"


def test_a_cell_runs_its_app_without_importing_the_report():
    """The cell's subprocess imports its app's parents only: no pandas, no figures, no report."""
    code = ("import sys, rtstudy.experiments.e3_overhead, rtstudy.apps.child\n"
            "import rtstudy.measure.work\n"
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
            for name in registry.REGISTRY:
                if name not in recorded["cell_ids"][fp_name][profile]:
                    continue  # an experiment added after the move: no data from before it
                if name == "e2_rt_threads":
                    # E2's conditions changed on purpose (the dispatcher, load placement and
                    # topology factors; its own floor); every E2 cell was measured anew.
                    continue
                # Added since too: the drift check's two extra cells, which change no other id.
                for drift_check in (False, True):
                    cfg = {**configs[name], "drift_check": drift_check}
                    cells = registry.get(name).plan.plan(cfg, fp, {**configs, name: cfg})
                    assert sorted(c.cell_id for c in cells if not c.drift) == \
                        recorded["cell_ids"][fp_name][profile][name], (fp_name, profile, name)
                    assert sum(bool(c.drift) for c in cells) == (2 if drift_check else 0)


def test_every_module_belongs_to_a_room():
    for module in modules():
        if module != "rtstudy":
            room_of(module)  # StopIteration: a module in none


@pytest.mark.parametrize("module", [m for m in outside_the_folders() if m != "__init__"]
                         + [f"experiments/{n}" for n in registry.REGISTRY])
def test_no_import_runs_back_up_the_rooms(module):
    """A room imports only from itself and the rooms below it: the architecture as folders."""
    files = ([SRC / f"{module}.py"] if (SRC / f"{module}.py").is_file()
             else sorted((SRC / module).rglob("*.py")))
    here = room_of(module)
    up = {f"{f.relative_to(SRC)}: {m}" for f in files
          for m in imports(str(f.relative_to(SRC).with_suffix("")))
          if m.startswith("rtstudy.") and room_of(m) > here}
    assert not up, f"imports from a room above: {sorted(up)}"
