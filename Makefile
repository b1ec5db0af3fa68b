# Two commands do everything on a fresh machine with Python 3.11+:
#   make demo   -- create .venv, install (with every extra the notebooks and README use, and
#                  the nbstripout git filter), run the main job on the bundled samples and
#                  write the self-contained HTML report reports/demo-rca.html
#   make test   -- create .venv, install with dev extras (and the nbstripout git filter),
#                  install the system packages the tests need (Chromium, PostgreSQL) where it
#                  can or print the command, then run the whole suite (notebooks included)
#   make check  -- the fast unit tests for development (<= 2 minutes: no browser, JupyterLab,
#                  PostgreSQL, corpus or notebooks)
#   make lab    -- open the notebooks in JupyterLab (root included); it prints the URL to open.
#                  Headless or on another port: make lab LAB_ARGS="--no-browser --port 8899"
# Both build replaykit's native core (native/, Rust) with maturin as part of the install; a
# change to the Rust sources rebuilds it on the next make. `make lint` also runs the crate's
# cargo tests and clippy; `make fuzz` fuzzes its scanners (cargo fuzz, bounded).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
# cargo's build output outside the clone: a fresh clone (CI's) reuses compiled dependencies
export CARGO_TARGET_DIR ?= $(HOME)/.cache/replaykit/cargo-target
NATIVE_SRC := native/Cargo.toml native/Cargo.lock $(wildcard native/src/*.rs)
FUZZ_SECONDS ?= 30

# Options of `jupyter lab` (tools/lab.py adds --allow-root when run as root).
LAB_ARGS ?=
# pytest-xdist workers for `make test` / `make check` (auto: one per core).
TEST_WORKERS ?= auto

.PHONY: demo test check lab system-deps bench lint fuzz clean

$(BIN)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "replaykit needs Python 3.11+"'
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# Re-install whenever pyproject.toml changes. The extras every notebook and README example
# uses (frames, sql, dask, inspect: about 23 s more on a cold cache, measured), so that
# `make demo` alone runs them all (tests/test_demo_env.py); and the git filter that keeps
# notebook outputs out of git, so that a notebook saved in `make lab` changes nothing git sees.
$(VENV)/.installed-base: pyproject.toml | $(BIN)/python
	$(PIP) install --quiet -e ".[fast,replay,viz,lab,frames,sql,dask,inspect]"
	bash tools/setup_git_filters.sh $(BIN)/nbstripout
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(PIP) install --quiet -e ".[dev]"
	bash tools/setup_git_filters.sh $(BIN)/nbstripout
	touch $@ $(VENV)/.installed-base $(VENV)/.installed-native

# The native core again when only its Rust sources changed (cargo rebuilds incrementally).
$(VENV)/.installed-native: $(NATIVE_SRC) | $(VENV)/.installed-base
	$(PIP) install --quiet --no-deps -e .
	touch $@

# replaykit's own bytecode, written ahead: an editable install compiles nothing, and where
# PYTHONDONTWRITEBYTECODE is set (this machine kind sets it) every process would compile the
# modules it imports from source again (about 0.2 s per CLI command, measured); compileall
# writes .pyc files whatever that variable says, and only for sources changed since.
PYC := $(BIN)/python -m compileall -q -j 0 replaykit benchmarks tests tools >/dev/null
# pytest caches its rewritten test modules only where bytecode may be written: a second run
# collects in 5.6 s instead of 12.9 s (measured, per pytest process)
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest

demo: $(VENV)/.installed-base $(VENV)/.installed-native
	$(PYC)
	$(BIN)/replaykit --version
	@echo "== harness_event_log rows (tenants recorded on every row) =="
	$(BIN)/replaykit summary data/pleach --no-progress
	@echo "== harness session logs and isplay run exports (owner named explicitly) =="
	$(BIN)/replaykit summary data/toh data/isplay --owner demo --no-progress
	@echo "== root-cause-analysis report from the bundled isplay sample =="
	$(BIN)/python -m replaykit.report.demo

system-deps:
	bash tools/install_system_deps.sh

# The whole suite on every core (pytest-xdist; --dist loadscope keeps each test module and
# each notebook -- whose cells nbval runs in order in one kernel -- on one worker; files handed
# out costliest first, by tests/durations.json: see tests/conftest.py), the slowest tests named
# at the end. The Rust crate's test binary and clippy's check are compiled first
# (build, not test: tests/test_lint.py then only runs them; after a change to native/ the
# compile was 30 s of one worker's test time).
test: $(VENV)/.installed-dev $(VENV)/.installed-native system-deps
	$(PYC)
	cargo test --quiet --no-run --no-default-features --manifest-path native/Cargo.toml
	cargo clippy --quiet --release --manifest-path native/Cargo.toml --all-targets -- -D warnings
	$(PYTEST) -q tests notebooks --nbval-lax --nbval-current-env -p no:cacheprovider \
		-n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder --durations=15

# Development: the tests without the slow components (marker "slow": browser, JupyterLab,
# PostgreSQL, corpus, Dask cluster, benchmark and fuzzing tests, whole-tool lint runs; see
# tests/conftest.py), each Hypothesis property on at most 10 examples (profile "check").
# No notebooks, so without nbval's plugin: it imports nbformat and jsonschema (about 2 s of
# CPU in each pytest process, the controller and every worker) before any test runs.
check: $(VENV)/.installed-dev $(VENV)/.installed-native
	$(PYC)
	$(PYTEST) -q tests -p no:cacheprovider -p no:nbval -n $(TEST_WORKERS) \
		--dist loadscope --no-loadscope-reorder -m "not slow" --hypothesis-profile=check --durations=10

lab: $(VENV)/.installed-base
	$(BIN)/python tools/lab.py $(BIN)/jupyter $(LAB_ARGS)

bench: $(VENV)/.installed-dev
	$(PYC)
	$(BIN)/python -m benchmarks --write-docs

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check replaykit tests benchmarks
	$(BIN)/mypy replaykit
	$(BIN)/lint-imports --no-cache
	cargo fmt --check --manifest-path native/Cargo.toml
	cargo fmt --check --manifest-path native/fuzz/Cargo.toml
	cargo clippy --quiet --release --manifest-path native/Cargo.toml --all-targets -- -D warnings
	cargo test --quiet --no-default-features --manifest-path native/Cargo.toml

fuzz:
	bash tools/fuzz_native.sh $(FUZZ_SECONDS)

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info scratch native/target replaykit/_core*.so
