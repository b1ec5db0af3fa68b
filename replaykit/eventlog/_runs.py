"""The run index of a log: run keys, the rows each run starts at, per-run sums (cached per
grain)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._base.delegates import lazy_module
from ..schema import run_starts
from ..tenancy import compact_dictionaries

if TYPE_CHECKING:
    import pandas as pd
else:  # imported on first use (pandas is about half of the command line's start-up)
    pd = lazy_module("pandas")

__all__ = ["RunKey"]

def _str_values(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return pc.cast(arr, pa.string())


class RunKey(NamedTuple):
    """Which run a view of :meth:`EventLog.iter_runs` holds: ``(tenant_id, run_id)``."""

    tenant_id: str
    run_id: str


def _key_positions(table: pa.Table) -> dict[tuple[str, str], np.ndarray]:
    """Row positions (ascending) of each (tenant_id, run_id) of a side table; rows with a
    null in either column belong to no run and are left out. Column-wise: one dictionary
    encoding per column, one stable argsort; the Python loop is over distinct keys only."""
    if table.num_rows == 0:
        return {}
    ten = pc.dictionary_encode(_str_values(table.column("tenant_id")))
    run = pc.dictionary_encode(_str_values(table.column("run_id")))
    valid = np.asarray(pc.and_(pc.is_valid(ten), pc.is_valid(run)))
    rows = np.flatnonzero(valid)
    if not len(rows):
        return {}
    tc = ten.indices.to_numpy(zero_copy_only=False)[rows].astype(np.int64)
    rc = run.indices.to_numpy(zero_copy_only=False)[rows].astype(np.int64)
    code = tc * max(len(run.dictionary), 1) + rc
    order = np.argsort(code, kind="stable")
    code = code[order]
    cut = np.flatnonzero(np.diff(code)) + 1
    bounds = np.concatenate([[0], cut, [len(code)]])
    tvals = ten.dictionary.to_pylist()
    rvals = run.dictionary.to_pylist()
    nr = max(len(rvals), 1)
    out: dict[tuple[str, str], np.ndarray] = {}
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        c = int(code[a])
        out[(tvals[c // nr], rvals[c % nr])] = rows[order[a:b]]
    return out


def _value_codes(col: pa.ChunkedArray | pa.Array) -> np.ndarray | None:
    """Integers equal exactly when the values are: a dictionary column's indices when its
    dictionary holds each value once and it has no nulls (the loaders' columns), else None."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if not pa.types.is_dictionary(arr.type) or arr.null_count:
        return None
    if len(pc.unique(arr.dictionary)) != len(arr.dictionary):
        return None
    return arr.indices.to_numpy(zero_copy_only=False)


def _run_start_rows(table: pa.Table) -> np.ndarray:
    """Rows that start a (tenant_id, run_id) run of a sorted table: where the codes of either
    column change (:func:`replaykit.schema.run_starts` when they cannot be compared as is)."""
    tenant = _value_codes(table.column("tenant_id"))
    run = _value_codes(table.column("run_id"))
    if tenant is None or run is None:
        return np.flatnonzero(run_starts(table))
    change = (tenant[1:] != tenant[:-1]) | (run[1:] != run[:-1])
    return np.concatenate([[0], np.flatnonzero(change) + 1]).astype(np.int64)


class _RunIndex:
    """Where each run's rows are in a sorted events table: the rows of run ``i`` are
    ``offsets[i]:offsets[i + 1]`` (runs are contiguous after the sort by tenant, run, seq).
    Built once per log, on first use (one pass over the two key columns); side tables
    (headers, quarantine, extras) are indexed by run on first use too."""

    __slots__ = ("offsets", "tenants", "run_ids", "_pos", "_side")

    def __init__(self, table: pa.Table) -> None:
        n = table.num_rows
        starts = _run_start_rows(table) if n else np.zeros(0, np.int64)
        self.offsets = np.append(starts, n).astype(np.int64)
        if len(starts):
            at = pa.array(starts)
            self.tenants: list[str] = _str_values(
                table.column("tenant_id").take(at)).to_pylist()
            self.run_ids: list[str] = _str_values(table.column("run_id").take(at)).to_pylist()
        else:
            self.tenants, self.run_ids = [], []
        self._pos: dict[tuple[str, str], int] | None = None
        self._side: dict[tuple[str, int], dict[tuple[str, str], np.ndarray] | None] = {}

    def __len__(self) -> int:
        return len(self.tenants)

    @property
    def pos(self) -> dict[tuple[str, str], int]:
        """(tenant_id, run_id) -> run number in the log's order."""
        if self._pos is None:
            self._pos = {k: i for i, k in enumerate(zip(self.tenants, self.run_ids,
                                                         strict=True))}
        return self._pos

    def scoped(self, name: str, table: pa.Table, key: tuple[str, str]) -> pa.Table | None:
        """The rows of side table ``table`` (called ``name``) that a view of the run ``key``
        holds, or None when the table has no ``tenant_id`` / ``run_id`` column (it is left
        out of the view): what :func:`~replaykit.tenancy.scope_side_table` returns for
        ``tenants=[tenant]``, ``run_ids=[run]``."""
        names = table.schema.names
        if "tenant_id" not in names or "run_id" not in names:
            return None
        if table.num_rows == 0:
            return table
        cache_key = (name, id(table))
        if cache_key not in self._side:
            self._side[cache_key] = _key_positions(table)
        where = self._side[cache_key]
        assert where is not None
        rows = where.get(key)
        if rows is None:
            return table.slice(0, 0)
        if int(rows[-1]) - int(rows[0]) + 1 == len(rows):  # contiguous (e.g. one header row)
            return compact_dictionaries(table.slice(int(rows[0]), len(rows)))
        return compact_dictionaries(table.take(pa.array(rows)))


def _grain_rows(log: Any, name: str, compute: Any) -> pd.DataFrame | None:
    """The rows of a grain table for a view of :meth:`EventLog.iter_runs`, from the walk's
    shared whole-log table; None for any other log (compute it directly)."""
    shared = getattr(log, "_grain", None)
    if shared is None:
        return None
    cache, i = shared
    out: pd.DataFrame | None = cache.rows(name, i, compute)
    return out


def _distinct_strings(col: pa.ChunkedArray | pa.Array) -> list[Any]:
    """Distinct values of a (dictionary) string column, looking only at the dictionary
    entries in use (not at every row)."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary.take(pc.unique(arr.indices.drop_null()))
        return pc.unique(pc.cast(arr, pa.string())).to_pylist()
    return pc.unique(pc.cast(arr, pa.string())).to_pylist()


def _segment_sums(mask: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per segment ``offsets[i]:offsets[i+1]``, the number of True values of ``mask``."""
    return np.diff(np.searchsorted(np.flatnonzero(mask), offsets)).astype(np.int64)
