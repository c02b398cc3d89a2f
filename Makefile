# rtstudy: `make study` and `make test` are the two commands; everything else is
# a step they take or a convenience for people working on the study.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The stamp records that the venv holds exactly the locked set and this
# package's native module; it is remade only when one of these changes.
STAMP := $(VENV)/.rtstudy-installed
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: study study-tuned test setup sysdeps report profile push pull publish-reference lab lock clean-venv help

help:
	@echo "make study          set up, then run the whole study into report/report.html (dvc repro)"
	@echo "make study-tuned    the study on this host as it is, then on a runtime-shielded CPU, always"
	@echo "                    reverted (CPUS=LIST, default the last CPU; YES=1 skips the question)"
	@echo "make test           set up, then run every test (real Holoscan runs at smoke size)"
	@echo "make report         render report/report.html from the data present (measures nothing)"
	@echo "make profile P=NAME choose the parameter profile: smoke | default | seed"
	@echo "make push           send the measured data to the DVC remote (see .dvc/config)"
	@echo "make pull           fetch the data of dvc.lock (shared remote, else the reference in data/reference)"
	@echo "make lab            JupyterLab on 127.0.0.1 with a token and the rtstudy kernel"
	@echo "make lock           re-resolve requirements.lock from pyproject.toml"

setup: $(STAMP) sysdeps

$(STAMP): requirements.lock pyproject.toml setup.py src/rtstudy/_native.c
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name rtstudy --display-name "rtstudy (.venv)" >/dev/null
	@touch $@

sysdeps:
	@$(BIN)/python -m rtstudy.sysdeps

study: setup
	$(BIN)/rtstudy params check
	$(BIN)/dvc repro
	@echo "Report: $(CURDIR)/report/report.html"

# The study twice: on the host as it is (cells already measured are skipped), then with CPUS
# shielded at run time (rtstudy host study: plan, ask or YES=1, apply, dvc repro, always revert;
# the shielded host has its own fingerprint, so its data is a dataset of its own). The last
# `dvc repro`, back on the host as it was, renders the report with both states side by side.
# `make study` never changes the host.
CPUS ?=
study-tuned: setup
	$(BIN)/rtstudy params check
	$(BIN)/dvc repro
	$(BIN)/rtstudy host study $(if $(CPUS),--cpus $(CPUS)) $(if $(YES),--yes) -- $(BIN)/dvc repro
	$(BIN)/dvc repro
	@echo "Report (both host states): $(CURDIR)/report/report.html"

test: setup
	$(BIN)/python -m pytest

report: $(STAMP)
	$(BIN)/rtstudy report

profile: $(STAMP)
	$(BIN)/rtstudy params use $(P)

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
	  $(BIN)/dvc pull -r reference || { echo "$$out"; echo "Neither the default remote nor data/reference/ holds dvc.lock's data: push it from the machine that measured it (make push), or measure it here (make study)."; exit 1; }; fi
	@echo "Pulled the data of dvc.lock. Render it without measuring: make report"

# Maintainers: store the data of dvc.lock in the repository's reference remote
# (data/reference/, tracked by git), then commit it with dvc.lock (data/README.md).
publish-reference: $(STAMP)
	$(BIN)/dvc push -r reference
	@echo "Stored in data/reference/ ($$(du -sh data/reference | cut -f1)). Commit it with dvc.lock: git add data/reference dvc.lock"

# JupyterLab on this machine only, always with a token: $JUPYTER_TOKEN if set
# and non-empty, else a fresh random one. The token reaches Jupyter through the
# environment, not the command line, so `ps` does not show it. LAB_PORT reaches
# the recipe through the environment too, so its value is never parsed as shell.
export LAB_PORT ?= 8888
lab: $(STAMP)
	@token="$${JUPYTER_TOKEN:-$$($(BIN)/python -c 'import secrets; print(secrets.token_urlsafe(32))')}"; \
	echo "JupyterLab: http://127.0.0.1:$$LAB_PORT/lab?token=$$token  (this machine only; Ctrl-C stops it)"; \
	JUPYTER_TOKEN="$$token" exec $(BIN)/jupyter lab --no-browser \
	  --ServerApp.ip=127.0.0.1 --ServerApp.port="$$LAB_PORT" --ServerApp.port_retries=0 \
	  --ServerApp.root_dir="$(CURDIR)" --MappingKernelManager.default_kernel_name=rtstudy \
	  $(if $(filter 0,$(shell id -u)),--allow-root)

lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet --disable-pip-version-check setuptools wheel .
	{ echo "# Exact versions for rtstudy's dependencies. Regenerate with: make lock"; \
	  .lock-venv/bin/python -m pip freeze --all --exclude rtstudy --exclude pip; } > requirements.lock
	rm -rf .lock-venv

clean-venv:
	rm -rf $(VENV)
