"""The registry of the study's experiments and the protocol each experiment's folder implements.

A leaf: it imports nothing of rtstudy, so every layer may read it — params, the
stages, the dataset API and the report — without importing an experiment. An
experiment's modules are imported only when a member is asked for
(:class:`Experiment`), so a cell's subprocess
(``python -m rtstudy.experiments.<name>.app``) imports its app only (and its package's
``__init__``).

An experiment is a folder ``rtstudy/experiments/<name>/`` (``<name>`` is its
``params.yaml`` group, its DVC stage and its data folder ``data/raw/<name>/``).
Its modules provide these members, each named with who reads it
(``tests/test_experiments.py`` checks every experiment has every one, and that
nothing outside the folders reads any other):

``params.py``
    ``SCHEMA`` (a :class:`rtstudy.rules.Rule` per key) and ``cross_checks(cfg)``
    (rules between keys: a list of problems), which :mod:`rtstudy.params`
    checks ``params.yaml`` with; ``USES``, the other groups whose resolved
    values its plan reads (:mod:`rtstudy.stage` passes them as ``configs``); optionally
    ``FROM_PROTOCOL``, its keys whose values the frozen protocol fixes (key → value), which
    :mod:`rtstudy.params` resolves into the group and refuses in ``params.yaml``.
``plan.py`` (the measuring side: a DVC dependency of its stage), read by
:mod:`rtstudy.stage`
    ``plan(cfg, fp, configs)`` → the list of :class:`rtstudy.measure.harness.Cell`;
    ``realtime(cfg)`` → the policies the preflight must find allowed;
    ``host_problems(cfg, fp)`` → what this host cannot run, each with its fix;
    ``after_sweep(directory)`` → record anything beside the cells (may do nothing);
    ``SDK_APIS``, the Holoscan API generations it has an app for (``(4, 5)``:
    ``app.py`` and ``app5.py``; empty: no Holoscan in its cells, measured once in the venv).
``app.py``
    The program a cell runs in its own subprocess (``rtstudy.apps.child.main``).
``analysis.py`` (the report side, as ``section.py``, ``figures.py`` and the words)
    ``SAMPLES`` (column → type of ``samples.parquet``, which the loader checks);
    ``SCHEMA`` (each table ``load`` returns: what a row is, each column's kind, unit
    and meaning; :func:`rtstudy.data.schema`), ``TABLES`` (their names,
    :func:`rtstudy.data.tables`) and
    ``load(directory, cfg)`` → :class:`rtstudy.data.io.Dataset` (:mod:`rtstudy.data`);
    ``DRIFT_QUANTITY`` (name, unit) and ``drift(ds)`` → its sweep's drift check
    or None (:mod:`rtstudy.report.stability`); ``PLOT_FILE`` and
    ``plot_table(ds)`` → the table ``dvc plots`` draws, or None
    (:meth:`rtstudy.report.study.Study.write_plots`); optionally
    ``power_plan(ds, cfg, ci, host_id)`` → the study's size each question needs, from ``ds``
    (``rtstudy plan power``); besides these, its statistics, ``headline`` and the verdict
    with its thresholds.
``section.py``
    ``LABEL`` (``E1`` …, how the report names it, :mod:`rtstudy.report.stability`),
    ``HYPOTHESIS`` and ``CLAIM`` (the claim it tests, in the source's words; the protocol's
    questions, :mod:`rtstudy.report.preregistration`) and ``build(ds, cfg, ci)`` →
    :class:`rtstudy.report.section.Section`, its words from the folder's ``report.md.j2``
    (:mod:`rtstudy.report.study`).
``explore.py`` (what ``notebooks/explore.ipynb`` shows of a run), read by :mod:`rtstudy.explore`
    ``VIEW`` (a :class:`rtstudy.view.View`: the table and columns of a run's time series and
    histogram); ``default_condition(tables)`` → the condition the notebook opens on, or None
    (the first); ``seed(ax, run)`` draws the source's published figure with the run's
    value on it (``run``: the run's rows of every table) → a note where it cannot, or "".
``figures.py``, ``published.py``, ``report.md.j2``
    One function per figure; the source document's published figures and where
    they are; the section's words.

An experiment with many modules may keep them in rooms (sub-packages) and name where each
part lives in its ``__init__.py``'s ``PARTS`` (part → ``room.module``; E2's map is its
README). :meth:`Experiment.module_name` and :meth:`Experiment.file` follow it.

Adding an experiment is one new folder, one line in :data:`REGISTRY` and one
stage in ``dvc.yaml`` (docs/adding-an-experiment.md).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

# The order in which the report shows the experiments (and `dvc repro` lists them).
REGISTRY: tuple[str, ...] = (
    "e1_async_buffer",
    "e2_rt_threads",
    "e3_overhead",
    "e4_host",
    "e5_placement",
)

# The package that holds one folder per experiment (named here, never imported here).
PACKAGE = "rtstudy.experiments"


@dataclass(frozen=True)
class Experiment:
    """One registered experiment: its name and its protocol modules, imported on first use."""

    name: str

    def _where(self, part: str) -> str:
        """``part``'s module within the experiment's folder: ``<part>``, or where the
        experiment's ``PARTS`` puts it (E2 keeps its modules in rooms: ``measuring.plan``)."""
        package = importlib.import_module(f"{PACKAGE}.{self.name}")
        return getattr(package, "PARTS", {}).get(part, part)

    def module_name(self, part: str) -> str:
        """The dotted name of ``part``'s module."""
        return f"{PACKAGE}.{self.name}.{self._where(part)}"

    def file(self, part: str) -> Path:
        """The source file of ``part`` (``"app"``, ``"plan"``, ``"analysis"``, ...)."""
        return self.folder.joinpath(*self._where(part).split(".")).with_suffix(".py")

    def _module(self, part: str) -> ModuleType:
        return importlib.import_module(self.module_name(part))

    @property
    def folder(self) -> Path:
        return Path(__file__).resolve().parent / "experiments" / self.name

    @property
    def params(self) -> ModuleType:
        return self._module("params")

    @property
    def plan(self) -> ModuleType:
        return self._module("plan")

    @property
    def analysis(self) -> ModuleType:
        return self._module("analysis")

    @property
    def section(self) -> ModuleType:
        return self._module("section")

    @property
    def explore(self) -> ModuleType:
        return self._module("explore")


def get(name: str) -> Experiment:
    """The registered experiment ``name``; ValueError names the registered ones."""
    if name not in REGISTRY:
        raise ValueError(f"unknown experiment {name!r}; registered: {', '.join(REGISTRY)}")
    return Experiment(name)


def every() -> list[Experiment]:
    """Every registered experiment, in :data:`REGISTRY` order."""
    return [Experiment(name) for name in REGISTRY]
