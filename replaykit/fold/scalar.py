"""The scalar reference reducer: the same projections, applied one event at a time.

This is the only place (with the handle's ``step()``) where events are folded by a Python loop
over rows. It is the yardstick the column-wise engine is tested against, and what
``step()`` uses, so incremental stepping and the vectorised fold share one definition of
every field kind (see :mod:`replaykit.fold.projection`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from ._frozen import FrozenDict
from .projection import Field, resolve_projections

__all__ = ["ScalarReducer", "reference_fold"]


class ScalarReducer:
    """Row-by-row fold of a list of fields.

    >>> import replaykit as rk
    >>> r = ScalarReducer(rk.harness())
    >>> r.snapshot(r.zero())["eventCount"]
    0
    """

    def __init__(self, projections: Any) -> None:
        self.fields: list[Field] = resolve_projections(projections)

    def zero(self) -> list[Any]:
        """Fresh working state (mutable; never handed out)."""
        return [f.init() for f in self.fields]

    def apply(self, acc: list[Any], row: dict[str, Any]) -> None:
        """Fold one event row (a dict of canonical columns) into ``acc`` in place."""
        for i, f in enumerate(self.fields):
            acc[i] = f.apply(acc[i], row)

    def snapshot(self, acc: list[Any]) -> FrozenDict:
        """An immutable copy of the state."""
        return FrozenDict({f.name: f.out(a) for f, a in zip(self.fields, acc, strict=False)})

    def load(self, state: Mapping[str, Any]) -> list[Any]:
        """Working state from a snapshot (the inverse of :meth:`snapshot`)."""
        return [f.load(state[f.name]) for f in self.fields]

    def states(self, rows: Iterable[dict[str, Any]]) -> list[FrozenDict]:
        """The state after each row, starting from zero (rows of one run, in seq order)."""
        acc = self.zero()
        out = []
        for row in rows:
            self.apply(acc, row)
            out.append(self.snapshot(acc))
        return out


def reference_fold(table: pa.Table, projections: Any) -> list[FrozenDict]:
    """The state after each row of ``table`` (sorted by tenant, run, seq), row by row.

    The state resets at every new (tenant_id, run_id). Slow by design: use
    :func:`replaykit.fold` for real work; this is the reference it is checked against.
    """
    reducer = ScalarReducer(projections)
    out: list[FrozenDict] = []
    acc = reducer.zero()
    prev: tuple[Any, Any] | None = None
    for row in table.to_pylist():
        key = (row["tenant_id"], row["run_id"])
        if key != prev:
            acc = reducer.zero()
            prev = key
        reducer.apply(acc, row)
        out.append(reducer.snapshot(acc))
    return out
