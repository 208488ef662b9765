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
	$(VENV)/bin/ruff check agentcfg testing tests benchmarks
	$(VENV)/bin/ruff format --check agentcfg testing tests benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/shellcheck plugin/bin/agentcfg

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
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .coverage .coverage.*
