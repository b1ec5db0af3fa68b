# Two commands do everything on a fresh machine with Python 3.11+:
#   make demo   -- create .venv, install, run the main job on the bundled samples and
#                  write the self-contained HTML report reports/demo-rca.html
#   make test   -- create .venv, install with dev extras (and the nbstripout git filter),
#                  install the system packages the tests need (Chromium, PostgreSQL) where it
#                  can or print the command, then run the whole suite (notebooks included)
#   make check  -- the fast unit tests for development (<= 2 minutes: no browser, JupyterLab,
#                  PostgreSQL, corpus or notebooks)
#   make lab    -- open the notebooks in JupyterLab (root included); it prints the URL to open.
#                  Headless or on another port: make lab LAB_ARGS="--no-browser --port 8899"
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip

# Options of `jupyter lab` (tools/lab.py adds --allow-root when run as root).
LAB_ARGS ?=
# pytest-xdist workers for `make test` / `make check` (auto: one per core).
TEST_WORKERS ?= auto

.PHONY: demo test check lab system-deps bench lint clean

$(BIN)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "replaykit needs Python 3.11+"'
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# Re-install whenever pyproject.toml changes.
$(VENV)/.installed-base: pyproject.toml | $(BIN)/python
	$(PIP) install --quiet -e ".[fast,replay,viz,lab]"
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(PIP) install --quiet -e ".[dev]"
	bash tools/setup_git_filters.sh $(BIN)/nbstripout
	touch $@ $(VENV)/.installed-base

demo: $(VENV)/.installed-base
	@echo "== harness_event_log rows (tenants recorded on every row) =="
	$(BIN)/replaykit summary data/pleach --no-progress
	@echo "== harness session logs and isplay run exports (owner named explicitly) =="
	$(BIN)/replaykit summary data/toh data/isplay --owner demo --no-progress
	@echo "== root-cause-analysis report from the bundled isplay sample =="
	$(BIN)/python -m replaykit.report.demo

system-deps:
	bash tools/install_system_deps.sh

# The whole suite on every core (pytest-xdist; --dist loadscope keeps each test module and
# each notebook -- whose cells nbval runs in order in one kernel -- on one worker), the slowest
# tests named at the end.
test: $(VENV)/.installed-dev system-deps
	$(BIN)/python -m pytest -q tests notebooks --nbval-lax --nbval-current-env -p no:cacheprovider \
		-n $(TEST_WORKERS) --dist loadscope --durations=15

# Development: the tests without the slow components (marker "slow": browser, JupyterLab,
# PostgreSQL, corpus, Dask cluster, benchmark and fuzzing tests; see tests/conftest.py).
check: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q tests -p no:cacheprovider -n $(TEST_WORKERS) --dist loadscope \
		-m "not slow" --durations=10

lab: $(VENV)/.installed-base
	$(BIN)/python tools/lab.py $(BIN)/jupyter $(LAB_ARGS)

bench: $(VENV)/.installed-dev
	$(BIN)/python -m benchmarks --write-docs

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check replaykit tests benchmarks
	$(BIN)/mypy replaykit
	$(BIN)/lint-imports --no-cache

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info scratch
