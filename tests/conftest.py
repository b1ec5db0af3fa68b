"""Shared fixtures.

Tests that need the real session-log corpus use ``corpus_dir`` (or ``toh_corpus``): it reads
``REPLAYKIT_CORPUS``. Locally, without it, those tests skip; in CI (``CI=true``) a missing corpus
is a failure, never a skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The corpus root (the folder holding ``toh/``)."""
    value = os.environ.get("REPLAYKIT_CORPUS")
    if not value:
        if _in_ci():
            pytest.fail("REPLAYKIT_CORPUS is not set, and CI=true: corpus tests must run in CI")
        pytest.skip("REPLAYKIT_CORPUS not set")
    path = Path(value)
    if not (path / "toh").is_dir():
        msg = f"REPLAYKIT_CORPUS={value} does not hold a toh/ folder"
        if _in_ci():
            pytest.fail(msg)
        pytest.skip(msg)
    return path


@pytest.fixture(scope="session")
def toh_corpus(corpus_dir: Path) -> Path:
    return corpus_dir / "toh"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


# ------------------------------------------------------------------ the suite on several cores
# `make test` / `make check` run pytest-xdist with --dist loadscope: each test module, and each
# notebook (nbval runs its cells in order in one kernel), stays on one worker, so a module's
# browser or JupyterLab server, or a notebook's kernel, is never split or started twice.
#: Modules left out of `make check` (marker "slow"): browsers, JupyterLab, the benchmark smoke
#: run, the seeded loader fuzzing (about 100 s), the real corpus, Dask clusters, the
#: instrumented-SDK OTel traces.
_SLOW_MODULES = {"test_report_browser", "test_notebook_lab", "test_benchmarks_smoke",
                 "test_fuzz_loaders", "test_corpus_toh", "test_corpus_toh_scripts",
                 "test_dask_engine", "test_otel_instrumentations", "test_lab_live"}
#: Fixtures of components `make check` does without (PostgreSQL, the corpus).
_SLOW_FIXTURES = {"pg_server", "pg_uri", "corpus_dir", "toh_corpus"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark what `make check` skips as ``slow``: the modules above, tests using PostgreSQL or
    the corpus, and notebooks."""
    for item in items:
        path = Path(str(getattr(item, "path", item.fspath)))
        if (path.suffix == ".ipynb" or path.stem in _SLOW_MODULES
                or _SLOW_FIXTURES & set(getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.slow)
