VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# the suite starts agentcfg and its hook as processes: each reads its own compiled modules
# (and pytest its rewritten test modules) instead of compiling them again, whatever the shell says
export PYTHONDONTWRITEBYTECODE :=
# the suites write, lock and fsync a few hundred megabytes of scratch workspaces, ledgers and git
# repositories: where the machine has a tmpfs with room to spare, they are made there, in memory
# (a sixth off `make test`); a TMPDIR of your own is kept
SCRATCH := $(shell df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 && $$4 > 4194304 { print $$6 }')
SUITES := test test-all test-matrix pytest coverage
ifeq ($(origin TMPDIR),undefined)
ifneq ($(SCRATCH),)
$(SUITES): export TMPDIR := $(SCRATCH)
endif
endif

.PHONY: install test test-all test-matrix lint pytest coverage demo bench e2e clean cli-docs

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	chmod 700 state
	touch $(STAMP)

lint: install
	$(VENV)/bin/ruff check agentcfg testing tests benchmarks
	$(VENV)/bin/ruff format --check agentcfg testing tests benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/shellcheck plugin/bin/agentcfg
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/actionlint  # the workflows, their scripts by shellcheck

# docs/cli.md, the command reference, written from each command's --help (tests/test_docs.py checks it)
cli-docs: install
	$(PY) -m testing.clidocs

# the unit suite less its long property, stateful, kill and scale tests (`slow`), in file order,
# each property test on a quarter of its examples (the `quick` profile, tests/conftest.py)
pytest: install
	$(VENV)/bin/pytest -m 'not slow' --hypothesis-profile quick

# lint and the suite side by side (each one's output kept together); either failing fails it
test: install
	$(MAKE) --no-print-directory -j2 --output-sync=target lint pytest

# every test; ORDER='-p randomly' shuffles the run (its seed is printed to repeat it)
ORDER ?=
test-all: lint
	$(VENV)/bin/pytest $(ORDER)

# the unit suite (as `make pytest`) on each Python the package supports that this machine has,
# each in a venv of its own, then the stop hook's and the core's tests again with the
# interpreter-private fast paths turned off (agentcfg/_speed.py); one Python missing is named
# and skipped
PYTHONS := 3.10 3.11 3.12 3.13
PYENV_ROOT ?= $(HOME)/.pyenv
test-matrix:
	@set -e; for v in $(PYTHONS); do \
	  py=; for c in $(PYENV_ROOT)/versions/$$v.*/bin/python$$v $$(command -v python$$v); do \
	    if [ -x "$$c" ] && "$$c" -c 'pass' 2>/dev/null; then py=$$c; fi; \
	  done; \
	  if [ -z "$$py" ]; then echo "test-matrix: Python $$v: not on this machine, skipped"; continue; fi; \
	  echo "test-matrix: Python $$v: $$py"; \
	  test -x .venv-$$v/bin/python || "$$py" -m venv .venv-$$v; \
	  .venv-$$v/bin/python -m pip install --quiet --upgrade pip; \
	  .venv-$$v/bin/python -m pip install --quiet -e '.[dev]'; \
	  .venv-$$v/bin/pytest -m 'not slow'; \
	  AGENTCFG_SPEED=plain .venv-$$v/bin/pytest -m 'not slow' tests/stop tests/core tests/test_speed.py; \
	done

# line coverage of the package, the hook's subprocesses included
coverage: install
	rm -f .coverage .coverage.*
	$(VENV)/bin/coverage run -m pytest -q -n 0 -k 'not test_lean and not full_state_folder'  # both measure the bare process
	$(VENV)/bin/coverage combine -q
	$(VENV)/bin/coverage report

E2E_CACHE := .e2e-cache
# each host pinned, in a folder of its own: package@version, then the binary it puts on .bin
E2E_HOSTS := claude-2.1.328:@anthropic-ai/claude-code@2.1.328:claude \
	claude-2.1.197:@anthropic-ai/claude-code@2.1.197:claude \
	gemini-0.61.0:@google/gemini-cli@0.61.0:gemini \
	codex-0.169.0:@openai/codex@0.169.0:codex \
	qwen-0.24.4:@qwen-code/qwen-code@0.24.4:qwen \
	copilot-1.0.102:@github/copilot@1.0.102:copilot \
	opencode-1.18.33:opencode-ai@1.18.33:opencode
field = $(word $(2),$(subst :, ,$(1)))
E2E_BINS := $(foreach h,$(E2E_HOSTS),$(E2E_CACHE)/$(call field,$(h),1)/node_modules/.bin/$(call field,$(h),3))

define e2e_host
$(E2E_CACHE)/$(call field,$(1),1)/node_modules/.bin/$(call field,$(1),3):
	mkdir -p $(E2E_CACHE)/$(call field,$(1),1)
	npm install --silent --no-audit --no-fund --prefix $(E2E_CACHE)/$(call field,$(1),1) $(call field,$(1),2)
endef
$(foreach h,$(E2E_HOSTS),$(eval $(call e2e_host,$(h))))

# the package OpenCode installs into each config folder at start: the tests seed it from here
OPENCODE_PLUGIN := $(E2E_CACHE)/opencode-plugin-1.18.33/package.json
$(OPENCODE_PLUGIN):
	mkdir -p $(dir $@)
	npm install --silent --no-audit --no-fund --save-exact --prefix $(dir $@) @opencode-ai/plugin@1.18.33

e2e: install $(E2E_BINS) $(OPENCODE_PLUGIN)
	$(VENV)/bin/pytest -o addopts=-q --durations=0 tests/e2e

demo: install
	$(PY) -m testing.demo

bench: install
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) .venv-3.* .mypy_cache .ruff_cache .pytest_cache .coverage .coverage.*
