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
