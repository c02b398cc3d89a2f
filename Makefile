# rtstudy: `make study` and `make test` are the two commands; everything else is
# a step they take or a convenience for people working on the study.
SHELL := /bin/bash
# Several venvs (one per Python) can live side by side: make VENV=.venv-3.12 PYTHON=python3.12 ...
VENV ?= .venv
# The Python: as given; else the venv's own once it exists (so a venv set up with
# PYTHON=/usr/bin/python3 needs no PYTHON= again); else python3.
ifeq ($(origin PYTHON),undefined)
PYTHON := $(if $(wildcard $(VENV)/bin/python),$(VENV)/bin/python,python3)
endif
# One exact lock per supported Python (requirements/py3.X.lock): the interpreter
# decides which. Read before PATH below puts the venv first, so that `python3`
# is the caller's, not the venv's.
SUPPORTED := $(patsubst requirements/py%.lock,%,$(wildcard requirements/py*.lock))
# The oldest micro version each lock is resolved for and checked against
# (tests/test_lock_installs.py): every distribution's of that minor, Debian 12's 3.11.2 the oldest.
OLDEST_MICRO := 3.10.0 3.11.2 3.12.0 3.13.0
PY_VERSION := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
PY_MICRO := $(shell $(PYTHON) -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null)
OLDEST := $(filter $(PY_VERSION).%,$(OLDEST_MICRO))
comma := ,
LOCK := requirements/py$(PY_VERSION).lock
BIN := $(VENV)/bin
VENV_VERSION := $(shell test -e $(BIN)/python && { $(BIN)/python -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo unusable; })
# The stamp records that the venv holds exactly the locked set and this
# package's native module; it is remade only when one of these changes.
STAMP := $(VENV)/.rtstudy-installed
export PATH := $(abspath $(BIN)):$(PATH)

# Every goal but help, clean-venv and lock-all runs $(PYTHON); every goal but
# those and lock needs it to be a supported Python that made the venv in use.
GOALS := $(or $(MAKECMDGOALS),help)
ifneq ($(filter-out help clean-venv lock-all,$(GOALS)),)
ifeq ($(PY_VERSION),)
$(error PYTHON=$(PYTHON) is not found or does not run (a pyenv shim of a version not selected does not). Supported Pythons: $(SUPPORTED); choose one with e.g. `make PYTHON=python3.12 study`)
endif
endif
ifneq ($(filter-out help clean-venv lock lock-all,$(GOALS)),)
ifeq ($(filter $(PY_VERSION),$(SUPPORTED)),)
$(error PYTHON=$(PYTHON) is Python $(PY_VERSION), which rtstudy has no lock for. Supported Pythons: $(SUPPORTED); choose one with e.g. `make PYTHON=python3.12 study`)
endif
ifneq ($(OLDEST),)
ifeq ($(shell $(PYTHON) -c 'import sys; print(sys.version_info[:3] < ($(subst .,$(comma),$(OLDEST))))'),True)
$(error PYTHON=$(PYTHON) is Python $(PY_MICRO), older than $(OLDEST), the oldest $(PY_VERSION) its lock installs on. Use $(OLDEST) or newer: Debian 12's /usr/bin/python3 is 3.11.2; elsewhere `pyenv install $(PY_VERSION)` or your distribution's newer package)
endif
endif
ifneq ($(filter-out $(PY_VERSION),$(VENV_VERSION)),)
$(error $(VENV) holds Python $(VENV_VERSION), but PYTHON=$(PYTHON) is Python $(PY_VERSION). Remove that venv (`make VENV=$(VENV) clean-venv`) or give this Python a venv of its own (`make PYTHON=$(PYTHON) VENV=.venv-$(PY_VERSION) ...`))
endif
endif

.PHONY: study study-tuned new-session test test-fast setup syscheck sysdeps sdk report screenshots profile push pull publish-reference lab lock lock-all clean-venv help

help:
	@echo "make study          set up, then run the whole study into report/report.html (dvc repro)"
	@echo "make study-tuned    the study on this host as it is, then on a runtime-shielded CPU, always"
	@echo "                    reverted (CPUS=LIST, default the last CPU; METHOD=cpuset|affinity, default"
	@echo "                    a cgroup v1 cpuset where writable, else affinity; YES=1 skips the question;"
	@echo "                    RT_THROTTLING=keep leaves sched_rt_runtime_us as it is, default lift: -1)"
	@echo "make new-session    close the measured sessions (kept in data/raw/.../sessions/): the next"
	@echo "                    make study measures every cell again, as another session beside them"
	@echo "make sysdeps        as root: install the system tools make study uses (FOR=test: and make test's);"
	@echo "                    make study and make test only check, and ask before installing"
	@echo "make test           set up, then run every test (real Holoscan runs at smoke size)"
	@echo "make test-fast      the pure-logic tests only (no measuring, pipeline, server, network)"
	@echo "make sdk            build the environments of the Holoscan versions that need one (5.0.0's root; the seed profile's 3.5.0 venv)"
	@echo "make report         render report/report.html from the data present (measures nothing), and its first screen"
	@echo "make screenshots    regenerate the docs' pictures: the report's first screen, explore.ipynb in JupyterLab"
	@echo "make profile P=NAME choose the parameter profile: smoke | default | seed"
	@echo "make push           send the measured data to the DVC remote (see .dvc/config)"
	@echo "make pull           fetch the data of dvc.lock (shared remote, else the reference in data/reference)"
	@echo "make lab            JupyterLab on 127.0.0.1 with a token and the rtstudy kernel, on notebooks/explore.ipynb"
	@echo "make lock           re-resolve requirements/py$(PY_VERSION).lock (the lock of PYTHON=$(PYTHON)) from pyproject.toml"
	@echo "make lock-all       re-resolve the lock of every supported Python: $(SUPPORTED)"
	@echo "PYTHON=python3.X    the Python to use (supported: $(SUPPORTED)); VENV=DIR its venv (default .venv)"
	@echo "INSTALLER=pip       install the lock with pip and its configuration (default: uv, in about half the time)"

setup: $(STAMP) syscheck

# The installer of the lock: uv (pinned, with the hash of every file of its version, in
# requirements/tools.lock, which `make lock` writes) installs it in about half the time pip
# takes (docs/benchmarks.md, "Set-up"). The lock is the whole set (`make lock` resolves every
# dependency), so uv installs it as it is (--no-deps), each file only if its hash is the lock's,
# then checks that every dependency is met (holoscan's on pip, which the lock leaves out, by the
# venv's own). It copies the files into the venv (which then holds the lock and uv) and compiles
# them as pip does, so that no process compiles them again (nor every time, under
# PYTHONDONTWRITEBYTECODE). INSTALLER=pip installs the lock with pip alone, e.g. to use pip's
# own configuration (pip.conf, PIP_INDEX_URL), which uv does not read.
INSTALLER ?= uv
TOOLS := requirements/tools.lock
ifeq ($(filter $(INSTALLER),uv pip),)
$(error INSTALLER=$(INSTALLER): the lock is installed by uv (the default) or pip; give INSTALLER=uv or INSTALLER=pip)
endif
UNMET = $(VENV) holds packages whose dependencies are not met (above), e.g. left from an older \
  lock: remove it (make VENV=$(VENV) clean-venv) and run make again

$(STAMP): $(LOCK) $(TOOLS) pyproject.toml setup.py src/rtstudy/_native.c src/rtstudy/sdks/kernelspec.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
ifeq ($(INSTALLER),uv)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r $(TOOLS)
	$(BIN)/uv pip install --quiet --require-hashes --no-deps --link-mode copy --compile-bytecode --python $(BIN)/python -r $(LOCK)
	@$(BIN)/uv pip check --quiet --python $(BIN)/python || { echo "$(UNMET)" >&2; exit 1; }
else
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r $(LOCK)
endif
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	$(BIN)/python -m rtstudy.sdks.kernelspec "rtstudy ($(VENV), Python $(PY_VERSION))"
	@touch $@

# System tools by distribution (rtstudy.machine.sysdeps): what the measurements use; `make test` adds
# what only the tests use (chromium, sshd). Installing them changes the machine, so only `make
# sysdeps` (as root) installs; `make study` and `make test` check (a target-specific value reaches
# the target's prerequisites: test -> setup -> syscheck checks both sets). Where a tool is missing
# they ask on a terminal; otherwise `make study` stops before measuring (SYSDEPS=skip goes on
# without, SYSDEPS=install installs without asking) and `make test` goes on (its tests skip).
SYSDEPS_FOR = study
test: SYSDEPS_FOR = test
FOR ?= study
syscheck: $(STAMP)
	@$(BIN)/python -m rtstudy.machine.sysdeps --for $(SYSDEPS_FOR)
sysdeps: $(STAMP)
	@$(BIN)/python -m rtstudy.machine.sysdeps --for $(FOR) --install

# Holoscan versions whose wheels need a newer glibc than the host's run in a Debian 13 root
# (rtstudy.sdks.sdkroot), a 4.x version other than the venv's (3.5.0) in a venv of its own
# (rtstudy.sdks.sdkvenv); each built once per machine for the profile's versions. Where this host
# cannot (not root, no debootstrap, no python3.11) it says so and the study measures the others.
sdk: setup
	$(BIN)/rtstudy sdk build

study: setup sdk
	$(BIN)/rtstudy params check
	$(BIN)/dvc repro
	@echo "Report: $(CURDIR)/report/report.html"

# The study twice: on the host as it is (cells already measured are skipped), then with CPUS
# shielded at run time (rtstudy host study: plan, ask or YES=1, apply, dvc repro, always revert;
# the shielded host has its own fingerprint, so its data is a dataset of its own). The last
# `dvc repro`, back on the host as it was, renders the report with both states side by side.
# `make study` never changes the host.
CPUS ?=
study-tuned: setup sdk
	$(BIN)/rtstudy params check
	$(BIN)/rtstudy host study --check $(if $(CPUS),--cpus $(CPUS)) $(if $(METHOD),--method $(METHOD)) $(if $(RT_THROTTLING),--rt-throttling $(RT_THROTTLING))
	$(BIN)/dvc repro
	$(BIN)/rtstudy host study $(if $(CPUS),--cpus $(CPUS)) $(if $(METHOD),--method $(METHOD)) $(if $(RT_THROTTLING),--rt-throttling $(RT_THROTTLING)) $(if $(YES),--yes) -- $(BIN)/dvc repro
	$(BIN)/dvc repro
	@echo "Report (both host states): $(CURDIR)/report/report.html"

# Sessions are the level above runs (rtstudy.data.sessions): `make study` resumes the current one,
# this closes it so that the next `make study` measures a new one beside it.
new-session: $(STAMP)
	$(BIN)/rtstudy session new

# On WORKERS processes (pytest-xdist, --dist loadgroup; tests/conftest.py's groups): the tests
# that measure, and explore.ipynb's runs that must have nothing measuring beside them (`alone`),
# one after another on one worker; every other module on the other, beside them.
WORKERS ?= 2
test: setup
	$(BIN)/python -m pytest -n $(WORKERS) --dist loadgroup --durations=25

# Pure logic only (no measurement, pipeline, server or network: pyproject.toml's markers),
# for between two edits; `make test` runs every tier.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -n $(WORKERS) --dist loadfile -m "not cells and not pipeline and not server and not network"

# The report, then its first screen as the docs show it (docs/report_first_screen.png), where a
# Chromium is installed (`make sysdeps FOR=test`); without one the picture is left as it was.
report: $(STAMP)
	$(BIN)/rtstudy report
	@if $(BIN)/python -c 'from rtstudy.machine import sysdeps; raise SystemExit(sysdeps.which("chromium") is None)'; then \
	  $(BIN)/python -m rtstudy.report.browser report/report.html docs/report_first_screen.png; \
	else echo "docs/report_first_screen.png not redrawn: no Chromium here (make sysdeps FOR=test)"; fi

profile: $(STAMP)
	$(BIN)/rtstudy params use $(P)

# The docs' pictures, each from what checks that page: the report's first screen from
# report/report.html as it is, explore.ipynb's from the test that runs it in JupyterLab.
screenshots: $(STAMP)
	$(BIN)/python -m rtstudy.report.browser report/report.html docs/report_first_screen.png
	RTSTUDY_SCREENSHOTS=$(CURDIR)/docs $(BIN)/python -m pytest -q tests/test_explore.py -k jupyterlab

# Sharing data: DVC moves what dvc.lock names between the cache and the remote
# (.dvc/config; README "Sharing data"). dvc.lock travels with git.
push: $(STAMP)
	$(BIN)/dvc push
	@echo "Pushed to DVC remote '$$($(BIN)/dvc remote default)'. Commit and push dvc.lock with git so others can pull this data."

# Pull from the default (shared) remote; where that is out of reach (a machine that never
# pushed to it) or lacks the data, fall back to the reference dataset inside the repository.
pull: $(STAMP)
	@if out=$$($(BIN)/dvc pull 2>&1); then echo "$$out"; \
	else echo "The default DVC remote '$$($(BIN)/dvc remote default)' cannot serve dvc.lock's data (on a machine that never pushed to it, it does not exist); pulling the reference dataset in data/reference/ instead."; \
	  $(BIN)/dvc pull -r reference $$($(BIN)/python -c 'from rtstudy import registry; print(*registry.REGISTRY)') || { echo "$$out"; echo "Neither the default remote nor data/reference/ holds dvc.lock's data: push it from the machine that measured it (make push), or measure it here (make study)."; exit 1; }; \
	  ls data/imported/*.dvc >/dev/null 2>&1 && echo "data/imported/*.dvc (colleagues' datasets) are not in data/reference/: pull them from the remote they were pushed to (dvc pull -r NAME data/imported)"; true; fi
	@echo "Pulled the data of dvc.lock. Render it without measuring: make report"

# Maintainers: store the data of dvc.lock in the repository's reference remote
# (data/reference/, tracked by git), then commit it with dvc.lock (data/README.md).
# DVC trusts a directory object on the remote to mean all its files are there, which an
# interrupted push makes false: the check removes such objects and the push runs again.
publish-reference: $(STAMP)
	$(BIN)/dvc push -r reference
	@$(BIN)/rtstudy data published --repair || { $(BIN)/dvc push -r reference && $(BIN)/rtstudy data published; }
	@echo "Stored in data/reference/ ($$(du -sh data/reference | cut -f1)). Commit it with dvc.lock: git add data/reference dvc.lock"

# JupyterLab on this machine only, always with a token: $JUPYTER_TOKEN if set
# and non-empty, else a fresh random one. The token reaches Jupyter through the
# environment, not the command line, so `ps` does not show it. LAB_PORT reaches
# the recipe through the environment too, so its value is never parsed as shell.
# It opens on notebooks/explore.ipynb, which measures nothing (the URL printed
# first, and where the server's root URL leads).
export LAB_PORT ?= 8888
EXPLORE_PATH := lab/tree/notebooks/explore.ipynb
lab: $(STAMP)
	@token="$${JUPYTER_TOKEN:-$$($(BIN)/python -c 'import secrets; print(secrets.token_urlsafe(32))')}"; \
	echo "JupyterLab on explore.ipynb: http://127.0.0.1:$$LAB_PORT/$(EXPLORE_PATH)?token=$$token"; \
	echo "  (JupyterLab: http://127.0.0.1:$$LAB_PORT/lab?token=$$token  this machine only; Ctrl-C stops it)"; \
	JUPYTER_TOKEN="$$token" exec $(BIN)/jupyter lab --no-browser \
	  --ServerApp.ip=127.0.0.1 --ServerApp.port="$$LAB_PORT" --ServerApp.port_retries=0 \
	  --ServerApp.root_dir="$(CURDIR)" --LabApp.default_url=/$(EXPLORE_PATH) \
	  --MappingKernelManager.default_kernel_name=rtstudy \
	  $(if $(filter 0,$(shell id -u)),--allow-root)

# The locks: uv resolves pyproject.toml's dependencies and the build backend
# (`pip install -e .` runs without build isolation) for a Python version and
# platform, with hashes. It needs no interpreter of that version, so `lock-all`
# writes every lock from one Python. The platform is holoscan-cu12 4.6.0's
# oldest wheel tag (glibc 2.35); aarch64 resolves to the same set today, and
# LOCK_PLATFORM=aarch64-manylinux_2_35 re-resolves for it should that change.
# The venv's own pip is left out: every venv has its own, which installs uv and the package.
# uv's version is the one requirements/tools.lock pins (with its hashes); `make lock` installs uv
# from it and writes it anew, for another version with `make lock UV_VERSION=X.Y.Z`.
UV_VERSION ?= $(shell sed -n 's/^uv==\([^ ]*\).*/\1/p' $(TOOLS))
LOCK_PLATFORM ?= x86_64-manylinux_2_35
lock: LOCK_VERSIONS := $(PY_VERSION)
lock-all: LOCK_VERSIONS := $(SUPPORTED)
lock lock-all:
	@set -euo pipefail; tools=$$(mktemp -d); trap 'rm -rf "$$tools"' EXIT; \
	$(PYTHON) -m venv "$$tools"; \
	"$$tools/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes -r $(TOOLS); \
	"$$tools/bin/python" -m pip install --quiet --disable-pip-version-check tomli==2.5.0; \
	echo "uv==$(UV_VERSION)" | "$$tools/bin/uv" pip compile --quiet - \
	    --python-version $(firstword $(OLDEST_MICRO)) --generate-hashes --no-annotate \
	    --custom-compile-command "make lock" -o $(TOOLS); \
	for version in $(LOCK_VERSIONS); do \
	  micro=$$(echo $(OLDEST_MICRO) | tr ' ' '\n' | grep "^$$version\." || echo $$version); \
	  echo "resolving requirements/py$$version.lock for Python $$micro ($(LOCK_PLATFORM))"; \
	  "$$tools/bin/python" -c 'import tomli; print(*tomli.load(open("pyproject.toml", "rb"))["build-system"]["requires"], sep="\n")' \
	  | "$$tools/bin/uv" pip compile --quiet pyproject.toml - --python-version $$micro \
	      --python-platform $(LOCK_PLATFORM) --generate-hashes --no-emit-package pip \
	      --no-python-downloads --custom-compile-command "make lock" -o requirements/py$$version.lock; \
	done

clean-venv:
	rm -rf $(VENV)
