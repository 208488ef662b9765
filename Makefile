VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install test lint pytest coverage demo bench e2e clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	chmod 700 state
	touch $(STAMP)

lint: install
	$(VENV)/bin/ruff check agentcfg tests benchmarks
	$(VENV)/bin/ruff format --check agentcfg tests benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache

pytest: install
	$(VENV)/bin/pytest

test: lint pytest

# line coverage of the package, the hook's subprocesses included
coverage: install
	rm -f .coverage .coverage.*
	$(VENV)/bin/coverage run -m pytest -q -n 0 -k 'not test_lean and not full_state_folder'  # both measure the bare process
	$(VENV)/bin/coverage combine -q
	$(VENV)/bin/coverage report

E2E_CACHE := .e2e-cache
CLAUDE_CODE_VERSION := 2.1.197

$(E2E_CACHE)/node_modules/.bin/claude:
	mkdir -p $(E2E_CACHE)
	npm install --silent --no-audit --no-fund --prefix $(E2E_CACHE) @anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION)

e2e: install $(E2E_CACHE)/node_modules/.bin/claude
	$(VENV)/bin/pytest -o addopts=-q tests/e2e

demo: install
	$(PY) -m tests.demo

bench: install
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .coverage .coverage.*
