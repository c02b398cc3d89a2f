"""The study's experiments: one folder each, and the one registry every other layer reads.

An experiment is a folder ``rtstudy/experiments/<name>/`` (``<name>`` is its
``params.yaml`` group, its DVC stage and its data folder ``data/raw/<name>/``)
whose modules implement this protocol:

``params.py``
    ``SCHEMA`` (a :class:`rtstudy.rules.Rule` per key), ``cross_checks(cfg)``
    (rules between keys: a list of problems), ``USES`` (other groups whose
    resolved values its plan reads; they reach ``plan`` as ``configs``).
``plan.py`` (the measuring side: a DVC dependency of its stage)
    ``plan(cfg, fp, configs)`` → the list of :class:`rtstudy.harness.Cell`;
    ``realtime(cfg)`` → the policies the preflight must find allowed;
    ``host_problems(cfg, fp)`` → what this host cannot run, each with its fix;
    ``after_sweep(directory)`` → record anything beside the cells (may do nothing).
``app.py``
    The program a cell runs in its own subprocess (``rtstudy.apps.child.main``).
``analysis.py``
    ``SAMPLES`` (column → type of ``samples.parquet``), ``TABLES`` (the tables
    ``load`` returns) and ``load(directory, cfg)`` → :class:`rtstudy.io.Dataset`;
    the statistics, ``headline`` and the verdict with its thresholds.
``section.py`` (the report side)
    ``build(dataset, cfg, ci)`` → :class:`rtstudy.report.section.Section`,
    its words from the folder's ``report.md.j2``.
``figures.py``, ``published.py``
    One function per figure; the source document's published figures and where they are.

Adding an experiment is one new folder, one line in :data:`REGISTRY` and one
stage in ``dvc.yaml``. The modules are imported on first use, so a cell's
subprocess (``python -m rtstudy.experiments.<name>.app``) imports its app only.
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
)


@dataclass(frozen=True)
class Experiment:
    """One registered experiment: its name and its protocol modules, imported on first use."""

    name: str

    def _module(self, part: str) -> ModuleType:
        return importlib.import_module(f"{__name__}.{self.name}.{part}")

    @property
    def folder(self) -> Path:
        return Path(__file__).resolve().parent / self.name

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


def get(name: str) -> Experiment:
    """The registered experiment ``name``; ValueError names the registered ones."""
    if name not in REGISTRY:
        raise ValueError(f"unknown experiment {name!r}; registered: {', '.join(REGISTRY)}")
    return Experiment(name)


def every() -> list[Experiment]:
    """Every registered experiment, in :data:`REGISTRY` order."""
    return [Experiment(name) for name in REGISTRY]
