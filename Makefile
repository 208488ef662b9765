VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install test lint pytest demo bench e2e clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

lint: install
	$(VENV)/bin/ruff check agentcfg tests benchmarks
	$(VENV)/bin/ruff format --check agentcfg tests benchmarks
	$(VENV)/bin/mypy

pytest: install
	$(VENV)/bin/pytest

test: lint pytest

demo: install
	$(PY) -m agentcfg.demo

bench: install
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
