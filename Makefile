# Every target that needs the venv depends on the stamp, so a fresh clone needs no other step.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_DIR := var/demo

.DEFAULT_GOAL := all
.PHONY: all help install test lint typecheck clean

all: lint typecheck test ## lint, typecheck, then test

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP) ## create .venv and install the package with its dev extra

test: $(STAMP) ## run the test suite
	$(BIN)/python -m pytest -q

lint: $(STAMP) ## ruff
	$(BIN)/ruff check pipeline tests

typecheck: $(STAMP) ## mypy
	$(BIN)/mypy

clean: ## remove the venv, caches and demo output
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache .hypothesis
