"""What the differential tests of the native core share: the core must be built (in CI a
missing core fails, elsewhere it skips), and ``native_path(flag)`` switches
``REPLAYKIT_NATIVE`` for one load (read on every call)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from replaykit._base import native as _native

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_core() -> None:
    """Fail (CI) or skip (elsewhere) when the native core is not built."""
    if not _native.available():
        if IN_CI:
            pytest.fail("the native core (replaykit._core) is not built, and CI=true")
        pytest.skip("the native core is not built (make demo builds it)")


@contextmanager
def native_path(native: bool) -> Iterator[None]:
    """``REPLAYKIT_NATIVE`` set to ``1`` / ``0`` inside the block, restored after it."""
    saved = os.environ.get("REPLAYKIT_NATIVE")
    os.environ["REPLAYKIT_NATIVE"] = "1" if native else "0"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("REPLAYKIT_NATIVE", None)
        else:
            os.environ["REPLAYKIT_NATIVE"] = saved
