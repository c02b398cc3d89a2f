"""Every path the study uses, built from one root.

The root is the project the command runs in (see :func:`root`); ``RTSTUDY_ROOT``
overrides it. The names of the files in a dataset folder are here too, so that the
writer (:mod:`rtstudy.measure.harness`) and the reader (:mod:`rtstudy.data.io`) share them without
importing each other. Nothing here writes to the disk.
"""
from __future__ import annotations

import os
from pathlib import Path

# The files of a dataset folder (:func:`dataset_dir`): :mod:`rtstudy.measure.harness` writes them,
# :mod:`rtstudy.data.io` reads them.
PLAN_FILE = "plan.json"  # which cells make up the sweep's configuration
HOST_FILE = "host.json"  # the fingerprint of the host that measured the dataset
FAILED_DIR = "_failed"  # failed cells, each with its log and the reason
# Every file a reader reads of the folder, with its sha256 (rtstudy.measure.integrity).
SEAL_FILE = "seal.json"
# The closed measuring sessions, each a dataset folder (rtstudy.data.sessions).
SESSIONS_DIR = "sessions"
# The files of one cell's folder (``<cell id>/``): its sidecar, samples and log.
SIDECAR_FILE = "cell.json"
SAMPLES_FILE = "samples.parquet"
LOG_FILE = "run.log"
# What the harness gives a cell's app and what the app leaves for the harness: not kept.
SPEC_FILE = "spec.json"
RESULT_FILE = "result.json"
RAW_SAMPLES_FILE = "samples.npz"


def root() -> Path:
    """The project root: ``$RTSTUDY_ROOT``, else the project the working directory is in, else
    the checkout of this package.

    A project is a folder holding ``params.yaml``, ``dvc.yaml`` and ``src/rtstudy/`` (another
    DVC project is not one). Looking from the
    working directory first is what makes a copy of the project work with this installed
    package: ``dvc exp run --temp`` runs the stages in a temporary copy, and papermill runs a
    notebook in the copy's ``notebooks/``.
    """
    env = os.environ.get("RTSTUDY_ROOT")
    if env:
        return Path(env).resolve()
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if all((folder / name).exists() for name in ("params.yaml", "dvc.yaml", "src/rtstudy")):
            return folder
    return checkout()


def checkout() -> Path:
    """The checkout that holds this package (``src/rtstudy`` → two levels up)."""
    return Path(__file__).resolve().parents[2]


def params_file() -> Path:
    return root() / "params.yaml"


def protocol_file() -> Path:
    """The frozen protocol's text (``rtstudy protocol --write``), beside the other docs."""
    return checkout() / "docs" / "protocol.md"


def notebooks_dir() -> Path:
    return root() / "notebooks"


def notebook(name: str) -> Path:
    """The committed (output-free) source of notebook ``name``."""
    return notebooks_dir() / f"{name}.ipynb"


def executed_dir() -> Path:
    """The executed notebooks, one per stage run (the lab book): outputs, never inputs."""
    return root() / "executed"


def executed_notebook(name: str) -> Path:
    """Where papermill writes the executed copy of notebook ``name`` (the lab book)."""
    return executed_dir() / f"{name}.ipynb"


def build_dir() -> Path:
    """Where the pipeline compiles native tools (E4's jitter probe); not tracked."""
    return root() / "build"


def data_dir() -> Path:
    return root() / "data"


def fingerprint_file() -> Path:
    return data_dir() / "host" / "fingerprint.json"


def session_file() -> Path:
    """The measuring session of the latest ``dvc repro``: its first stage writes it
    (``rtstudy host fingerprint``), every measuring stage reads it (harness.session_record)."""
    return data_dir() / "host" / "session.json"


def raw_root(experiment: str) -> Path:
    """The DVC output of one experiment: every host's and profile's cells."""
    return data_dir() / "raw" / experiment


def dataset_dir(experiment: str, host_id: str, profile: str) -> Path:
    """Where this checkout measures a dataset: one experiment's cells from one host and profile.

    The harness writes here; readers find a dataset with :func:`rtstudy.data.dataset_dir`,
    which also looks in the imported datasets (:func:`imported_dir`).
    """
    return raw_root(experiment) / host_id / profile


def imported_dir() -> Path:
    """Colleagues' datasets, ``<name>/<experiment>/<host id>/<profile>/``, each ``<name>``
    tracked by its own ``<name>.dvc`` (:mod:`rtstudy.data.sharing`)."""
    return data_dir() / "imported"


# Set while ``rtstudy report`` renders into its staging folder (rtstudy.report.render.staged),
# so that the notebook's kernel, a process of its own, writes there too.
REPORT_DIR_ENV = "RTSTUDY_REPORT_DIR"


def report_dir() -> Path:
    """``report/``, or the staging folder a render in progress writes into
    (``$RTSTUDY_REPORT_DIR``)."""
    env = os.environ.get(REPORT_DIR_ENV)
    return Path(env) if env else root() / "report"


def report_html() -> Path:
    return report_dir() / "report.html"


def figures_dir() -> Path:
    return report_dir() / "figures"


def metrics_file() -> Path:
    """The report's headline numbers and verdicts, a DVC metrics file (``dvc metrics show``)."""
    return report_dir() / "metrics.json"


def plots_dir() -> Path:
    """The tables the report stage writes for `dvc plots show` (dvc.yaml ``plots:``)."""
    return report_dir() / "plots"


def rerun_file() -> Path:
    """The last re-run agreement measured (``benchmarks/rerun_agreement.py``), which the report cites."""
    return root() / "benchmarks" / "rerun_agreement.json"


def session_spread_file() -> Path:
    """How far the reference host's sessions moved each headline (``benchmarks/rerun_agreement.py
    --sessions --record``), which the report cites beside a host of one session."""
    return root() / "benchmarks" / "session_spread.json"
