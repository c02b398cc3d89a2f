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

.PHONY: study test setup sysdeps report profile lock clean-venv help

help:
	@echo "make study          set up, then run the whole study into report/report.html (dvc repro)"
	@echo "make test           set up, then run every test (real Holoscan runs at smoke size)"
	@echo "make report         render report/report.html from the data present (measures nothing)"
	@echo "make profile P=NAME choose the parameter profile: smoke | default | seed"
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

test: setup
	$(BIN)/python -m pytest

report: $(STAMP)
	$(BIN)/rtstudy report

profile: $(STAMP)
	$(BIN)/rtstudy params use $(P)

lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet --disable-pip-version-check setuptools wheel .
	{ echo "# Exact versions for rtstudy's dependencies. Regenerate with: make lock"; \
	  .lock-venv/bin/python -m pip freeze --all --exclude rtstudy --exclude pip; } > requirements.lock
	rm -rf .lock-venv

clean-venv:
	rm -rf $(VENV)
