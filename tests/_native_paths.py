"""What the differential tests of the native core share: the core must be built (in CI a
missing core fails, elsewhere it skips), ``native_path(flag)`` switches
``REPLAYKIT_NATIVE`` for one load (read on every call), and ``assert_same`` compares two
loads (``("ok", log)`` or ``("error", (type, reason, message))``) value for value."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pytest

import replaykit as rk
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


def _dictionaries(table: pa.Table) -> dict[str, list[Any]]:
    return {name: [c.dictionary.to_pylist() for c in table.column(name).chunks]
            for name in table.column_names if pa.types.is_dictionary(table.column(name).type)}


def _hashes(log: Any) -> list[Any]:
    with native_path(False):
        return rk.stamp_chain(log).table.column("row_hash").to_pylist()


def assert_same(a: tuple[str, Any], b: tuple[str, Any]) -> None:
    assert a[0] == b[0], (a[1], b[1])
    if a[0] == "error":
        assert a[1] == b[1]
        return
    x, y = a[1], b[1]
    assert x.table.schema.equals(y.table.schema, check_metadata=True)
    for name in x.table.column_names:
        cx, cy = x.table.column(name), y.table.column(name)
        assert cx.equals(cy), (f"column {name} differs", [
            (i, p, q) for i, (p, q) in enumerate(zip(cx.to_pylist(), cy.to_pylist(),
                                                     strict=True)) if p != q][:3])
    assert _dictionaries(x.table) == _dictionaries(y.table)
    assert x.runs.equals(y.runs), (x.runs.to_pylist()[:2], y.runs.to_pylist()[:2])
    assert x.quarantine.equals(y.quarantine), (
        x.quarantine.to_pylist()[:3], y.quarantine.to_pylist()[:3])
    assert _hashes(x) == _hashes(y)
