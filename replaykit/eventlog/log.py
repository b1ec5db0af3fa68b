"""EventLog: an immutable Arrow table of events in the canonical schema, plus its side tables."""

from __future__ import annotations

import heapq
import html
import os
import re
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._base.delegates import lazy_module, provider
from ..errors import SchemaError
from ..schema import (
    EVENTS_SCHEMA,
    QUARANTINE_SCHEMA,
    _dictionary_rank,
    _validate,
    empty_events,
    escape_table_utf8,
    invalid_utf8_columns,
    shown_bytes,
    sort_events,
    validate,
)
from ..tenancy import (
    check_tenant_id,
    check_tenant_ids,
    compact_dictionaries,
    scope_extras,
    scope_side_table,
)
from ._runs import RunKey, _distinct_strings, _RunIndex, _segment_sums, _str_values

if TYPE_CHECKING:
    import pandas as pd
else:  # imported on first use (pandas is about half of the command line's start-up)
    pd = lazy_module("pandas")

__all__ = ["EventLog", "RUNS_SCHEMA", "concat"]

_DICT = pa.dictionary(pa.int32(), pa.string())

#: Footer (schema metadata) key where a dataset file written by replaykit names its tenant;
#: readers check it against the file's ``tenant_id=`` folder.
TENANT_KEY = b"replaykit.tenant_id"

#: Per-run metadata that loaders find in headers (not computed from events).
RUNS_SCHEMA: pa.Schema = pa.schema(
    [
        pa.field("tenant_id", pa.string(), nullable=False),
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("parent_run_id", pa.string()),
        pa.field("format", pa.string(), nullable=False),
        pa.field("source", pa.string()),
        pa.field("created_at", pa.timestamp("us", tz="UTC")),
        pa.field("attrs", pa.large_string()),  # JSON object of every other header field
    ]
)

#: The computed columns of :meth:`EventLog.runs_df`, in order (header attributes follow them).
RUN_STAT_COLUMNS: tuple[str, ...] = (
    "tenant_id",
    "run_id",
    "parent_run_id",
    "events",
    "first_ts",
    "last_ts",
    "turns",
    "model_calls",
    "tool_calls",
    "errors",
)

_NULLABLE_PANDAS: dict[pa.DataType, Any] = {}  # filled on first use (pandas is imported then)


def to_pandas(table: pa.Table) -> pd.DataFrame:
    """Arrow -> pandas with nullable integer/boolean dtypes (no int -> float surprises)."""
    if not _NULLABLE_PANDAS:
        _NULLABLE_PANDAS.update({pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(),
                                 pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype(),
                                 pa.bool_(): pd.BooleanDtype()})
    return table.to_pandas(types_mapper=_NULLABLE_PANDAS.get)


def _empty_runs() -> pa.Table:
    return RUNS_SCHEMA.empty_table()


def _detached(table: pa.Table) -> pa.Table:
    """A copy of ``table`` that holds only its own rows: dictionaries cut to the values in
    use, each chunk copied out of any larger buffer it is a slice of."""
    table = compact_dictionaries(table)
    cols = [pa.chunked_array([pa.concat_arrays([c]) for c in col.chunks], col.type)
            for col in table.columns]
    return pa.Table.from_arrays(cols, schema=table.schema)


class _GrainCache:
    """Grain tables of a whole log computed once, handed out run by run to the views of one
    :meth:`EventLog.iter_runs` walk (the rows of each run are contiguous in them)."""

    __slots__ = ("_log", "_index", "_frames")

    def __init__(self, log: EventLog, index: _RunIndex) -> None:
        self._log = log
        self._index = index
        self._frames: dict[str, tuple[pd.DataFrame, np.ndarray | None]] = {}

    def rows(self, name: str, i: int, compute: Any) -> pd.DataFrame | None:
        """Rows of run ``i`` in ``compute(log)`` (computed on first call), with a fresh
        RangeIndex; None when they are not known to be contiguous (compute per run then)."""
        entry = self._frames.get(name)
        if entry is None:
            full = compute(self._log)
            entry = self._frames[name] = (full, self._run_offsets(full))
        full, offsets = entry
        if offsets is None:
            return None
        a, b = int(offsets[i]), int(offsets[i + 1])
        part = full.iloc[a:b]
        part.index = pd.RangeIndex(b - a)  # as reset_index(drop=True), at half the cost
        return part

    def _run_offsets(self, df: pd.DataFrame) -> np.ndarray | None:
        """Per run of the log, where its rows start in ``df`` (ordered by the log's runs)."""
        k = len(self._index)
        counts = np.zeros(k, dtype=np.int64)
        n = len(df)
        if n:
            ten = df["tenant_id"].to_numpy(dtype=object)
            run = df["run_id"].to_numpy(dtype=object)
            cut = np.flatnonzero((ten[1:] != ten[:-1]) | (run[1:] != run[:-1])) + 1
            starts = np.concatenate([[0], cut])
            bounds = np.append(starts, n)
            pos = self._index.pos
            which = [pos.get((ten[s], run[s]), -1) for s in starts.tolist()]
            idx = np.asarray(which, dtype=np.int64)
            if (idx < 0).any() or (len(idx) > 1 and (np.diff(idx) <= 0).any()):
                return None
            counts[idx] = np.diff(bounds)
        return np.concatenate([[0], np.cumsum(counts)])


class EventLog:
    """Events in the canonical schema, sorted by (tenant_id, run_id, seq). Immutable.

    Build one with a loader (:func:`replaykit.read_toh`, :func:`replaykit.read_pleach`,
    :func:`replaykit.read_isplay`, :func:`replaykit.read_events`, :func:`read_parquet`) or
    from a table: ``EventLog(table)``. No method changes the table it was given; filters and
    windows return new logs.

    Attributes:
        table: the events (``pyarrow.Table`` in :data:`replaykit.schema.EVENTS_SCHEMA`).
        runs: per-run header metadata (:data:`RUNS_SCHEMA`), possibly empty.
        quarantine: rows that could not be loaded, with reasons
            (:data:`replaykit.schema.QUARANTINE_SCHEMA`); empty when everything loaded.
        extras: format-specific side tables (e.g. isplay ``checkpoints``), name -> table.

    Views are scoped: a view of some tenants or runs (:meth:`filter` with ``tenant_id`` /
    ``run_ids``, :meth:`run`, ``read_parquet(..., tenant_id=...)``) holds only those tenants'
    (runs') rows in ``quarantine`` and in every ``extras`` table that has ``tenant_id`` /
    ``run_id`` columns; an ``extras`` table without the column is left out of such a view,
    and a quarantined row whose tenant could not be read (null ``tenant_id``) shows only in
    an all-tenants log (:func:`replaykit.tenancy.scope_side_table`).

    Example:
        >>> import replaykit as rk
        >>> log = rk.read_events("data/", owner="demo")  # doctest: +SKIP
        >>> log.runs_df()[["run_id", "events", "tool_calls"]]  # doctest: +SKIP
    """

    __slots__ = ("_table", "_runs", "_quarantine", "_extras", "_index", "_grain")

    def __init__(
        self,
        table: pa.Table,
        *,
        runs: pa.Table | None = None,
        quarantine: pa.Table | None = None,
        extras: dict[str, pa.Table] | None = None,
        sort: bool = True,
    ) -> None:
        if sort:
            canonical = table.schema.names[:len(EVENTS_SCHEMA)] == EVENTS_SCHEMA.names
            table = sort_events(table) if canonical else table
        validate(table)
        self._setup(table, runs, quarantine, extras)

    @classmethod
    def _loaded(cls, table: pa.Table, *, runs: pa.Table | None, quarantine: pa.Table | None,
                extras: dict[str, pa.Table] | None, text_checked: bool,
                sort: bool = False) -> EventLog:
        """``EventLog(table, ..., sort=sort)`` for a loader; with ``text_checked`` (its every
        text column is known UTF-8: the pleach and toh loaders' native scans checked the
        bytes it came from) the validation leaves out the UTF-8 pass, the rest (types,
        nulls, kinds, order) is the same."""
        if sort and table.schema.names[:len(EVENTS_SCHEMA)] == EVENTS_SCHEMA.names:
            table = sort_events(table)
        _validate(table, text=not text_checked)
        self = cls.__new__(cls)
        self._setup(table, runs, quarantine, extras)
        return self

    def _setup(self, table: pa.Table, runs: pa.Table | None, quarantine: pa.Table | None,
               extras: dict[str, pa.Table] | None) -> None:
        self._table = table
        self._runs = _empty_runs() if runs is None else _checked_runs(runs.cast(RUNS_SCHEMA))
        self._quarantine = _as_quarantine(quarantine)
        self._extras = dict(extras or {})
        self._index: _RunIndex | None = None
        self._grain: tuple[_GrainCache, int] | None = None

    def __getstate__(self) -> tuple[None, dict[str, Any]]:
        # the data only: the run index and a shared grain cache are rebuilt on demand. Each
        # table is detached from the buffers it may share with a larger log (a run view is a
        # zero-copy slice, and pyarrow pickles a slice's whole buffers and dictionaries), so
        # a pickled view carries its own rows only
        state = {name: _detached(getattr(self, name)) for name in
                 ("_table", "_runs", "_quarantine")}
        state["_extras"] = {k: _detached(v) for k, v in self._extras.items()}
        return None, state

    def __setstate__(self, state: tuple[None, dict[str, Any]]) -> None:
        for name, value in state[1].items():
            object.__setattr__(self, name, value)
        self._index = None
        self._grain = None

    # ------------------------------------------------------------------ basic access
    @property
    def table(self) -> pa.Table:
        """The events table (read-only by convention: Arrow tables are immutable)."""
        return self._table

    @property
    def runs(self) -> pa.Table:
        """Header metadata per run, as loaded (see :meth:`runs_df` for the full picture)."""
        return self._runs

    @property
    def quarantine(self) -> pa.Table:
        """Rows that could not be loaded, each with source, line, field, reason and raw text."""
        return self._quarantine

    @property
    def extras(self) -> dict[str, pa.Table]:
        """Format-specific side tables (a copy of the mapping)."""
        return dict(self._extras)

    def __len__(self) -> int:
        return self._table.num_rows

    def __getitem__(self, key: int | slice) -> Any:
        """Events by position: ``log[i]`` is one event as a dict, ``log[a:b]`` an EventLog.

        Positions count in the log's order (tenant, run, seq); negative positions count from
        the end, as for a list. A slice keeps the header rows of the runs it holds, and its
        quarantine, ``extras`` and dictionaries are scoped to the tenants whose events it
        holds (as :meth:`filter` scopes them; a slice of every event is the log itself).

        >>> log[0]["seq"], len(log[:10])  # doctest: +SKIP
        (0, 10)

        Raises:
            IndexError: an integer position outside the log.
            TypeError: a key that is neither an int nor a slice.
        """
        n = self._table.num_rows
        if isinstance(key, slice):
            start, stop, step = key.indices(n)
            if step == 1:
                table = self._table.slice(start, max(0, stop - start))
            else:
                table = self._table.take(pa.array(range(start, stop, step), pa.int64()))
            return self._scoped_to_rows(table)
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            i = int(key) + n if key < 0 else int(key)
            if not 0 <= i < n:
                raise IndexError(f"event position {key} is outside this log of {n} events")
            return self._table.slice(i, 1).to_pylist()[0]
        raise TypeError(f"EventLog positions are ints or slices, got {type(key).__name__}; "
                        "use log.filter(...) to select by tenant, run, type or kind")

    def head(self, n: int = 5) -> pd.DataFrame:
        """The first ``n`` events as a DataFrame (like ``DataFrame.head``).

        >>> log.head(3)[["run_id", "seq", "type"]]  # doctest: +SKIP
        """
        # the slice's dictionaries (pandas categories) cut to its own values
        return to_pandas(compact_dictionaries(self._table.slice(0, max(0, n))))

    def _scoped_to_rows(self, table: pa.Table) -> EventLog:
        """A view of ``table`` (some rows of this log, by position or by ``seq``): its
        header rows, and quarantine, ``extras`` and dictionaries scoped to the tenants its
        rows belong to, as :meth:`filter` scopes them. A view of every row is this log."""
        if table.num_rows == self._table.num_rows:
            return self._replace(table)
        tenants = _distinct_strings(table.column("tenant_id"))
        return self._replace(
            compact_dictionaries(table), runs=self._runs_of(table),
            quarantine=scope_side_table(self._quarantine, tenants=tenants),
            extras=scope_extras(self._extras, tenants=tenants))

    def _runs_of(self, table: pa.Table) -> pa.Table:
        """The header rows of the (tenant, run) pairs present in ``table``."""
        if not self._runs.num_rows:
            return self._runs
        keys = pa.table({"tenant_id": _str_values(table.column("tenant_id")),
                         "run_id": _str_values(table.column("run_id"))})
        keys = keys.group_by(["tenant_id", "run_id"], use_threads=False).aggregate([])
        keep = set(zip(keys.column("tenant_id").to_pylist(), keys.column("run_id").to_pylist(),
                       strict=True))  # one entry per run, not per event
        mask = [(t, r) in keep for t, r in zip(self._runs.column("tenant_id").to_pylist(),
                                                 self._runs.column("run_id").to_pylist(),
                                                 strict=True)]
        return self._runs.filter(pa.array(mask, pa.bool_()))

    def quarantine_df(self) -> pd.DataFrame:
        """The quarantine as a DataFrame: one row per input row that could not be loaded
        (source, line, field, reason, message, raw).

        >>> log.quarantine_df()[["source", "line", "reason"]]  # doctest: +SKIP
        """
        return to_pandas(self._quarantine)

    def extras_df(self, name: str) -> pd.DataFrame:
        """One format-specific side table (see :attr:`extras`) as a DataFrame.

        >>> log = rk.read_isplay("data/isplay", owner="demo")  # doctest: +SKIP
        >>> log.extras_df("checkpoints")  # doctest: +SKIP

        Raises:
            KeyError: the log has no side table ``name`` (the message lists the ones it has).
        """
        if name not in self._extras:
            have = ", ".join(sorted(self._extras)) or "none"
            raise KeyError(f"this log has no side table {name!r} (it has: {have})")
        return to_pandas(self._extras[name])

    def to_polars(self) -> Any:
        """The events as a ``polars.DataFrame`` built on the same Arrow buffers (no copy of
        the data for the columns polars can share).

        >>> log.to_polars().group_by("kind").len()  # doctest: +SKIP

        Raises:
            MissingExtraError: polars is not installed (``pip install "replaykit[frames]"``).
        """
        try:
            import polars as pl
        except ImportError:
            from ..errors import MissingExtraError

            raise MissingExtraError("EventLog.to_polars()", "frames", "polars") from None
        return pl.from_arrow(self._table, rechunk=False)

    def to_duckdb(self, connection: Any = None) -> Any:
        """A DuckDB relation over the events that scans this log's Arrow table in place (no
        copy). Query it with SQL: the relation's ``.query(name, sql)`` or a connection's
        ``register``.

        >>> rel = log.to_duckdb()  # doctest: +SKIP
        >>> sql = "select kind, count(*) from events group by kind"
        >>> rel.query("events", sql).df()  # doctest: +SKIP

        Args:
            connection: a ``duckdb.DuckDBPyConnection`` (default: DuckDB's default one).

        Raises:
            MissingExtraError: duckdb is not installed (``pip install "replaykit[frames]"``).
        """
        try:
            import duckdb
        except ImportError:
            from ..errors import MissingExtraError

            raise MissingExtraError("EventLog.to_duckdb()", "frames", "duckdb") from None
        con = duckdb.default_connection() if connection is None else connection
        return con.from_arrow(self._table)

    @property
    def num_runs(self) -> int:
        """Number of distinct (tenant_id, run_id) pairs."""
        return len(self._run_index())

    @property
    def tenants(self) -> list[str]:
        """Distinct tenant ids, sorted."""
        return sorted(set(self._run_index().tenants))

    @property
    def run_ids(self) -> list[str]:
        """Distinct run ids, sorted."""
        return sorted(set(self._run_index().run_ids))

    def _run_index(self) -> _RunIndex:
        """Where each run's rows are (built on first use, kept: the log is immutable)."""
        idx = self._index
        if idx is None:
            idx = self._index = _RunIndex(self._table)
        return idx

    def _run_keys(self) -> pa.Table:
        idx = self._run_index()
        return pa.table({"tenant_id": pa.array(idx.tenants, pa.string()),
                         "run_id": pa.array(idx.run_ids, pa.string())})

    def _run_view(self, i: int, idx: _RunIndex) -> EventLog:
        """Run number ``i`` of ``idx`` as a view: a zero-copy slice of the table, and the
        header, quarantine and ``extras`` rows of that run (as :meth:`filter` scopes them)."""
        a, b = int(idx.offsets[i]), int(idx.offsets[i + 1])
        key = (idx.tenants[i], idx.run_ids[i])
        # the events' dictionaries cut to this run's values (a slice keeps the whole log's:
        # other tenants' ids, runs, tool names, sources)
        table = compact_dictionaries(self._table.slice(a, b - a))
        runs = self._runs
        if runs.num_rows:
            scoped = idx.scoped("runs", runs, key)
            assert scoped is not None  # RUNS_SCHEMA has both columns
            runs = scoped
        quarantine = idx.scoped("quarantine", self._quarantine, key)
        assert quarantine is not None
        extras: dict[str, pa.Table] = {}
        for name, side in self._extras.items():
            got = idx.scoped("extras:" + name, side, key)
            if got is not None:
                extras[name] = got
        return self._replace(table, runs=runs, quarantine=quarantine, extras=extras)

    def _replace(self, table: pa.Table, *, runs: pa.Table | None = None,
                 quarantine: pa.Table | None = None,
                 extras: dict[str, pa.Table] | None = None) -> EventLog:
        new = object.__new__(EventLog)
        new._table = table
        new._runs = self._runs if runs is None else runs
        new._quarantine = self._quarantine if quarantine is None else quarantine
        new._extras = self._extras if extras is None else extras
        new._index = None
        new._grain = None
        return new

    # ------------------------------------------------------------------ grain tables
    def events_df(self) -> pd.DataFrame:
        """One row per event, in the canonical schema (categoricals for dictionary columns).

        >>> log.events_df().columns[:4].tolist()  # doctest: +SKIP
        ['tenant_id', 'run_id', 'parent_run_id', 'seq']
        """
        return to_pandas(self._table)

    def runs_df(self) -> pd.DataFrame:
        """One row per run: tenant_id, run_id, parent_run_id, format, events, first_ts,
        last_ts, turns, model_calls, tool_calls, errors, created_at, plus header attributes.

        ``first_ts`` / ``last_ts`` are the run's first and last event times. A run whose
        events carry no time of their own (toh sessions) starts at its header's ``created_at``
        and has no ``last_ts``: its duration is unknown, not zero.

        ``turns`` counts distinct turn numbers; ``model_calls`` counts events that close a
        model call (a non-null ``finish``); ``tool_calls`` counts ``tool_call`` events;
        ``errors`` counts events with ``is_error``. Runs known only from headers (no events)
        appear with ``events == 0``.
        """
        return runs_frame(self._run_stats(), self._runs, self._formats_per_run)

    def _run_stats(self) -> pa.Table:
        """The computed columns of :meth:`runs_df` (:data:`RUN_STAT_COLUMNS`), one row per
        run in the log's order. Column-wise over the run offsets (runs are contiguous):
        prefix sums for the counts, ``reduceat`` for the times, no group-by on strings."""
        t = self._table
        idx = self._run_index()
        off = idx.offsets
        k = len(idx)
        first = off[:-1]
        n_rows = np.diff(off)

        def mask_of(col: pa.ChunkedArray) -> np.ndarray:
            arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
            return np.asarray(pc.fill_null(arr, False), dtype=bool)

        # parent_run_id: the run's first non-null value (Arrow's "first" skips nulls)
        parent = t.column("parent_run_id")
        if parent.null_count == len(parent) or k == 0:
            parent_first = pa.nulls(k, pa.string())
        else:
            have = np.flatnonzero(mask_of(pc.is_valid(parent)))
            j = np.searchsorted(have, first, side="left")
            ok = j < len(have)
            pick = np.where(ok, have[np.minimum(j, len(have) - 1)], 0)
            ok &= pick < off[1:]
            parent_first = _str_values(parent.take(pa.array(pick, mask=~ok)))
        # first / last event time (nulls skipped; null for a run without times)
        ts = t.column("ts")
        ts_arr = ts.combine_chunks() if isinstance(ts, pa.ChunkedArray) else ts
        ts_type = ts_arr.type
        if k == 0:
            ts_min = ts_max = pa.array([], ts_type)
        else:
            raw = pc.cast(ts_arr, pa.int64())
            if raw.null_count == 0:
                vals = raw.to_numpy()
                lo = np.minimum.reduceat(vals, first)
                hi = np.maximum.reduceat(vals, first)
                none = np.zeros(k, dtype=bool)
            else:
                valid = mask_of(pc.is_valid(raw))
                vals = raw.fill_null(0).to_numpy(zero_copy_only=False)
                big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
                lo = np.minimum.reduceat(np.where(valid, vals, big), first)
                hi = np.maximum.reduceat(np.where(valid, vals, small), first)
                none = _segment_sums(valid, off) == 0
            ts_min = pc.cast(pa.array(lo, mask=none), ts_type)
            ts_max = pc.cast(pa.array(hi, mask=none), ts_type)
        # distinct turn numbers (nulls not counted)
        turn = t.column("turn")
        turn_arr = turn.combine_chunks() if isinstance(turn, pa.ChunkedArray) else turn
        rows = np.flatnonzero(mask_of(pc.is_valid(turn_arr)))
        turns = np.zeros(k, dtype=np.int64)
        if len(rows):
            tv = turn_arr.fill_null(0).to_numpy(zero_copy_only=False)[rows].astype(np.int64)
            rv = np.repeat(np.arange(k, dtype=np.int64), n_rows)[rows]
            same_run = rv[1:] == rv[:-1]
            if not (same_run & (tv[1:] < tv[:-1])).any():  # non-decreasing within each run
                new = np.ones(len(rows), dtype=bool)
                new[1:] = ~same_run | (tv[1:] != tv[:-1])
                turns = np.bincount(rv[new], minlength=k).astype(np.int64)
            else:
                pairs = np.unique(rv * (np.int64(1) << np.int64(33)) + (tv + 2**31))
                turns = np.bincount(pairs >> np.int64(33), minlength=k).astype(np.int64)
        # model calls (a non-null finish), tool calls, errors
        calls = _segment_sums(mask_of(pc.is_valid(t.column("finish"))), off)
        kind = t.column("kind")
        kind_arr = kind.combine_chunks() if isinstance(kind, pa.ChunkedArray) else kind
        if pa.types.is_dictionary(kind_arr.type):
            hit = np.append(mask_of(pc.equal(pc.cast(kind_arr.dictionary, pa.string()),
                                             "tool_call")), False)
            codes = kind_arr.indices.fill_null(-1).to_numpy(zero_copy_only=False)
            is_tool = hit[codes]
        else:
            is_tool = mask_of(pc.equal(pc.cast(kind_arr, pa.string()), "tool_call"))
        tools = _segment_sums(is_tool, off)
        errors = _segment_sums(mask_of(t.column("is_error")), off)
        cols = [pa.array(idx.tenants, pa.string()), pa.array(idx.run_ids, pa.string()),
                parent_first, pa.array(n_rows, pa.int64()), ts_min, ts_max,
                pa.array(turns, pa.int64()), pa.array(calls, pa.int64()),
                pa.array(tools, pa.int64()), pa.array(errors, pa.int64())]
        return pa.Table.from_arrays(cols, names=list(RUN_STAT_COLUMNS))

    def _formats_per_run(self, df: pd.DataFrame) -> np.ndarray:
        """The format of each run of ``df`` (rows in the log's run order): the ``source``
        prefix of the run's first row."""
        idx = self._run_index()
        src = self._table.column("source").take(pa.array(idx.offsets[:-1]))
        fmt = pc.utf8_slice_codeunits(_str_values(src), 0, 1_000)
        fmt = pc.replace_substring_regex(fmt, r":.*$", "")
        return fmt.to_numpy(zero_copy_only=False)

    def calls_df(self) -> pd.DataFrame:
        """One row per model call. See :func:`replaykit.eventlog.grain.calls_df`."""
        return provider("EventLog.calls_df")(self)  # eventlog/grain.py provides it

    def tools_df(self) -> pd.DataFrame:
        """One row per tool call, with its result. See :func:`replaykit.eventlog.grain.tools_df`."""
        return provider("EventLog.tools_df")(self)  # eventlog/grain.py provides it

    def turns_df(self) -> pd.DataFrame:
        """One row per turn, with its end reason. See :func:`replaykit.eventlog.grain.turns_df`."""
        return provider("EventLog.turns_df")(self)  # eventlog/grain.py provides it

    def stamps_df(self) -> pd.DataFrame:
        """Reproducibility stamps per run (model, provider, versions, sampling config, prompt,
        policy and tool identities). See :func:`replaykit.provenance.stamps_df`."""
        return provider("EventLog.stamps_df")(self)  # stamps.py provides it

    # ------------------------------------------------------------------ selection
    def filter(
        self,
        *,
        tenant_id: str | Sequence[str] | None = None,
        run_ids: str | Sequence[str] | None = None,
        types: str | Sequence[str] | None = None,
        kinds: str | Sequence[str] | None = None,
    ) -> EventLog:
        """Events of the given tenant(s), run(s), source types and/or kinds (all ANDed).

        Each argument takes one value or a list; None means "any". Returns a new EventLog;
        this one is unchanged. With ``tenant_id`` or ``run_ids`` the view's ``quarantine`` and
        ``extras`` are scoped to those tenants / runs as well (see the class docs): a table
        without a ``tenant_id`` (``run_id``) column is left out, and quarantined rows whose
        tenant could not be read never show in a tenant's view.

        >>> log.filter(tenant_id="acme", types=["tool/call", "tool/result"])  # doctest: +SKIP

        Raises:
            LoadError: ``reason="bad_tenant"``: a ``tenant_id`` breaks the tenant-id rule.
        """
        if tenant_id is not None and not (isinstance(tenant_id, (list, tuple)) and not tenant_id):
            tenant_id = check_tenant_ids(tenant_id, source="EventLog.filter(tenant_id=...)")
        mask = None
        for col, values in (
            ("tenant_id", tenant_id),
            ("run_id", run_ids),
            ("type", types),
            ("kind", kinds),
        ):
            if values is None:
                continue
            vals = [values] if isinstance(values, str) else list(values)
            column = _str_values(self._table.column(col))
            m = pc.is_in(column, value_set=pa.array(vals, pa.string()))
            if col in ("type", "kind") and self._table.num_rows:
                _warn_absent(col, vals, column)
            mask = m if mask is None else pc.and_(mask, m)
        if mask is None:
            return self
        table = self._table.filter(mask)
        runs = self._runs
        if runs.num_rows and (tenant_id is not None or run_ids is not None):
            rmask = None
            for col, values in (("tenant_id", tenant_id), ("run_id", run_ids)):
                if values is None:
                    continue
                vals = [values] if isinstance(values, str) else list(values)
                m = pc.is_in(runs.column(col), value_set=pa.array(vals, pa.string()))
                rmask = m if rmask is None else pc.and_(rmask, m)
            runs = runs.filter(rmask)
        if tenant_id is None and run_ids is None:
            return self._replace(table, runs=runs)
        # a filtered table keeps the whole dictionaries: cut them to the view's values
        table = compact_dictionaries(table)
        tenants = None if tenant_id is None else list(tenant_id)
        runs_only = None if run_ids is None else (
            [run_ids] if isinstance(run_ids, str) else list(run_ids))
        quarantine = scope_side_table(self._quarantine, tenants=tenants, run_ids=runs_only)
        extras = scope_extras(self._extras, tenants=tenants, run_ids=runs_only)
        return self._replace(table, runs=runs, quarantine=quarantine, extras=extras)

    def window(self, from_seq: int | None = None, up_to_seq: int | None = None) -> EventLog:
        """Events with ``from_seq < seq <= up_to_seq`` (exclusive lower, inclusive upper bound).

        Either bound may be None (unbounded). Applies to every run in the log. Like a
        positional slice, the view's quarantine, ``extras`` and dictionaries are scoped to the
        tenants whose events it keeps (as :meth:`filter` scopes them).
        """
        seq = self._table.column("seq")
        mask = None
        if from_seq is not None:
            mask = pc.greater(seq, from_seq)
        if up_to_seq is not None:
            m = pc.less_equal(seq, up_to_seq)
            mask = m if mask is None else pc.and_(mask, m)
        if mask is None:
            return self
        return self._scoped_to_rows(self._table.filter(mask))

    def run(self, run_id: str, *, tenant_id: str) -> EventLog:
        """Events of one run of one tenant (both required: a run id alone never picks a tenant).

        The view's ``quarantine`` and ``extras`` hold only that run's rows (see :meth:`filter`).
        The events are a zero-copy slice of the table at the run's offsets: the first call
        builds the log's run index (one pass over the key columns), later calls take
        microseconds. To visit every run, :meth:`iter_runs` is the faster way.

        >>> log.run("chat_1", tenant_id="acme").tools_df()  # doctest: +SKIP

        Raises:
            KeyError: the tenant has no such run in this log.
            LoadError: ``reason="bad_tenant"``: ``tenant_id`` is missing or breaks the
                tenant-id rule.
        """
        check_tenant_id(tenant_id, source="EventLog.run(tenant_id=...)")
        if isinstance(run_id, str):  # a slice of the table at the run's precomputed offsets
            idx = self._run_index()
            i = idx.pos.get((tenant_id, run_id))
            if i is not None:
                return self._run_view(i, idx)
            sub = self._replace(self._table.slice(0, 0))
        else:
            sub = self.filter(tenant_id=tenant_id, run_ids=run_id)
        if len(sub) == 0:
            raise KeyError(
                f"tenant {tenant_id!r} has no run {run_id!r} in this log; "
                f"see log.runs_df() for the runs it holds"
            )
        return sub

    def iter_runs(self) -> Iterator[tuple[RunKey, EventLog]]:
        """Walk the log run by run: ``(RunKey(tenant_id, run_id), view)`` pairs in the log's
        order (tenant, run), like iterating over a pandas ``groupby``.

        Each view is what :meth:`run` returns for that run (a zero-copy slice of the table;
        its ``runs``, ``quarantine`` and ``extras`` scoped to the run). The grain tables of a
        view (:meth:`calls_df`, :meth:`tools_df`, :meth:`turns_df`) are the run's rows of the
        whole log's table, computed once per walk on the first call (column-wise, for all
        runs at once) and sliced per run, so a walk over every run with its grain tables
        costs about one whole-log computation of each. Views keep that shared table alive
        while they are referenced. Runs known only from headers (no events) are not
        visited (see :meth:`runs_df`). (Not named ``runs()``: :attr:`runs` is the header
        table.)

        Example:
            >>> for (tenant, run_id), run in log.iter_runs():  # doctest: +SKIP
            ...     calls = run.calls_df()
            ...     slow = calls[calls["output_tokens"] > 1000]

        Returns:
            an iterator of ``(RunKey, EventLog)`` pairs, one per run with events.
        """
        idx = self._run_index()
        cache = _GrainCache(self, idx)
        for i in range(len(idx)):
            view = self._run_view(i, idx)
            view._grain = (cache, i)
            yield RunKey(idx.tenants[i], idx.run_ids[i]), view

    # ------------------------------------------------------------------ combine / persist
    def to_parquet(self, path: str | os.PathLike[str], *, overwrite: bool = False,
                   partition_events: int | None = None) -> Path:
        """Write the log as a Parquet dataset partitioned by tenant (hive layout).

        Layout: ``path/tenant_id=<encoded id>/part-*.parquet`` holding whole runs sorted by
        (run_id, seq), and in each tenant's folder its ``_runs.parquet`` and
        ``_quarantine.parquet`` (its rows only, with their ``tenant_id`` column): whoever may
        open only ``tenant_id=<id>/`` reads that tenant completely and nothing of another.
        At the root there is only ``_quarantine_no_tenant.parquet`` (quarantined rows whose
        tenant could not be read). Datasets of the older layout (side files at the root,
        every tenant's rows in one file) still read, with a :class:`LegacyDatasetWarning`
        saying how to rewrite them. The folder name is the tenant id percent-encoded
        (:func:`replaykit.tenancy.encode_partition_value`; ``acme`` stays ``acme``). Each
        events file names its tenant in its Parquet footer (key ``replaykit.tenant_id``) and
        has no ``tenant_id`` column (the folder gives it, as hive readers such as
        ``pandas.read_parquet`` expect); the side files keep their ``tenant_id`` column.
        :func:`read_parquet` checks each file's footer, and each row of a file that does
        have a ``tenant_id`` column, against its folder. Read it back with
        :func:`read_parquet`. With ``partition_events=N`` each
        file holds about N events and never splits a run: one task per file for
        ``engine="dask"`` (see :func:`replaykit.engine.write_partitioned`); without it, one
        file per tenant.

        Raises:
            FileExistsError: ``path`` exists and is not empty, unless ``overwrite=True``
                (which replaces it).
            LoadError: ``reason="bad_tenant"``: a tenant id of the events, runs or quarantine
                breaks the tenant-id rule (nothing is written).
        """
        if partition_events is None:
            partition_events = max(1, len(self))
        write_partitioned = provider("EventLog.to_parquet")  # engine/_parts.py provides it
        return write_partitioned(self, path, partition_events=partition_events,
                                 overwrite=overwrite)

    def to_otel(self, path: str | os.PathLike[str], *, overwrite: bool = False,
                evaluations: Any = None) -> Path:
        """Write the log as OTLP/JSON traces in the current GenAI conventions (one trace per
        run); ``rk.read_otel`` reads it back to the same runs, calls, tools and stamps. See
        :func:`replaykit.io.otel.export.to_otel`.

        Raises:
            ValueError: the log holds more than one tenant.
            FileExistsError: ``path`` exists and ``overwrite`` is False.
        """
        return provider("EventLog.to_otel")(  # io/otel/export.py provides it
            self, path, overwrite=overwrite, evaluations=evaluations)

    # ------------------------------------------------------------------ display
    def summary(self) -> dict[str, Any]:
        """Small dict summary: events, runs, tenants, formats, time span, quarantined rows."""
        t = self._table
        ts = t.column("ts")
        # the distinct sources only (a few dictionary entries), not every row's
        sources = pa.array(_distinct_strings(t.column("source")), pa.string())
        fmts = set(pc.replace_substring_regex(sources, r":.*$", "").to_pylist())
        lo_hi = pc.min_max(ts) if t.num_rows else None
        return {
            "events": t.num_rows,
            "runs": self.num_runs,
            "tenants": len(self.tenants),
            "formats": sorted(f for f in fmts if f),
            "first_ts": lo_hi["min"].as_py() if lo_hi is not None else None,
            "last_ts": lo_hi["max"].as_py() if lo_hi is not None else None,
            "quarantined": self._quarantine.num_rows,
        }

    def __repr__(self) -> str:
        s = self.summary()
        return (
            f"EventLog({s['events']:,} events, {s['runs']:,} runs, {s['tenants']} tenants, "
            f"formats={s['formats']}, quarantined={s['quarantined']})"
        )

    def _repr_html_(self) -> str:
        s = self.summary()
        esc = html.escape
        head = (
            f"<b>EventLog</b>: {s['events']:,} events &middot; {s['runs']:,} runs &middot; "
            f"{s['tenants']} tenant(s) &middot; formats: {esc(', '.join(s['formats']))}"
        )
        if s["first_ts"] is not None:
            from .._base.display import fmt_time  # the one timestamp format of every display

            head += f" &middot; {esc(fmt_time(s['first_ts']))} &rarr; " \
                    f"{esc(fmt_time(s['last_ts']))}"
        if s["quarantined"]:
            head += f" &middot; <span style='color:#b00'>{s['quarantined']} quarantined</span>"
        runs, total = self._runs_head(10)
        cols = [c for c in RUN_STAT_COLUMNS if c in runs.columns and not c.endswith("_ts")]
        shown = runs[cols].head(10)
        from .._base.display import display_cells  # one missing-value style (blank)

        table = display_cells(shown).to_html(index=False, escape=True, na_rep="", border=0)
        more = f"<div>&hellip; {total - 10:,} more runs</div>" if total > 10 else ""
        return f"<div class='replaykit-eventlog'><div>{head}</div>{table}{more}</div>"

    def _runs_head(self, n: int) -> tuple[pd.DataFrame, int]:
        """The first ``n`` rows of :meth:`runs_df` and its length, computing only those runs:
        runs_df is sorted by (tenant_id, run_id), the log's own run order, with header-only
        runs merged in."""
        idx = self._run_index()
        pairs = list(zip(idx.tenants, idx.run_ids, strict=True))
        keys_sorted = all(a < b for a, b in zip(pairs, pairs[1:], strict=False))
        if not keys_sorted:  # e.g. log[::-1]: runs_df's order is not the table's
            runs = self.runs_df()
            return runs, len(runs)
        hdr = self._runs
        ht = _str_values(hdr.column("tenant_id")) if hdr.num_rows else pa.array([], pa.string())
        hr = _str_values(hdr.column("run_id")) if hdr.num_rows else pa.array([], pa.string())
        # a tenant id holds no control character, so "tenant NUL run" names one pair
        nul_free = not (hdr.num_rows and pc.any(pc.match_substring(ht, "\x00")).as_py())

        def header_in(tenants: list[str], runs: list[str]) -> np.ndarray:
            """Which header rows are of one of the (tenant, run) pairs given."""
            if not hdr.num_rows:
                return np.ones(0, dtype=bool)
            if nul_free:
                pairs = pc.binary_join_element_wise(pa.array(tenants, pa.string()),
                                                    pa.array(runs, pa.string()), "\x00")
                hit = pc.is_in(pc.binary_join_element_wise(ht, hr, "\x00"), value_set=pairs)
                return np.asarray(pc.fill_null(hit, False), dtype=bool)
            want = set(zip(tenants, runs, strict=True))
            return np.fromiter(((t, r) in want for t, r in zip(
                ht.to_pylist(), hr.to_pylist(), strict=True)), dtype=bool, count=len(ht))

        alone = pa.array(~header_in(idx.tenants, idx.run_ids))
        only_header = sorted(set(zip(ht.filter(alone).to_pylist(), hr.filter(alone).to_pylist(),
                                     strict=True))) if hdr.num_rows else []
        total = len(idx) + len(only_header)
        if total <= n:
            return self.runs_df(), total
        keys = list(zip(idx.tenants[:n], idx.run_ids[:n], strict=True))
        first = list(heapq.merge(keys, only_header))[:n] if only_header else keys
        wanted = set(first)
        m = sum(1 for key in keys if key in wanted)  # event runs among them: a prefix
        table = self._table.slice(0, int(idx.offsets[m]))
        runs = hdr
        if hdr.num_rows:
            runs = hdr.filter(pa.array(header_in([t for t, _ in first], [r for _, r in first])))
        return self._replace(table, runs=runs).runs_df(), total


def runs_frame(stats: pa.Table, runs: pa.Table, formats: Any) -> pd.DataFrame:
    """:meth:`EventLog.runs_df` of a log whose :meth:`EventLog._run_stats` are ``stats`` and
    whose header table is ``runs``; ``formats(df)`` gives each run's format when there are no
    header rows (the log's ``_formats_per_run``). Also ``replaykit summary``'s, whose
    per-run numbers come without a log (``replaykit.io.pleach._summary``)."""
    df = to_pandas(stats)
    meta = to_pandas(runs)
    if len(meta):
        meta = meta.drop_duplicates(["tenant_id", "run_id"], keep="first")
        df = df.merge(
            meta, on=["tenant_id", "run_id"], how="outer", suffixes=("", "_meta")
        )
        df["parent_run_id"] = df["parent_run_id"].fillna(df.pop("parent_run_id_meta"))
        attrs = _expand_attrs(df.pop("attrs"), df.columns)
        df = pd.concat([df, attrs], axis=1)
        # runs whose events carry no time (e.g. toh sessions) start at the header's
        # createdAt; their end, and so their duration, stays unknown (last_ts NaT)
        no_ts = df["first_ts"].isna() & df["created_at"].notna()
        if no_ts.any():
            df.loc[no_ts, "first_ts"] = df.loc[no_ts, "created_at"]
    else:
        df["format"] = formats(df)
        df["source"] = pd.Series([None] * len(df), dtype="object")
        df["created_at"] = pd.Series(pd.NaT, index=df.index, dtype="datetime64[us, UTC]")
    for col in ("events", "turns", "model_calls", "tool_calls", "errors"):
        df[col] = df[col].fillna(0).astype("int64")
    return df.sort_values(["tenant_id", "run_id"], ignore_index=True)


def _warn_absent(col: str, wanted: list[str], column: pa.Array) -> None:
    """Warn when a type/kind filter names values the log does not contain at all."""
    present = sorted(v for v in pc.unique(column).to_pylist() if v is not None)
    missing = [v for v in wanted if v not in set(present)]
    if missing:
        arg = "types" if col == "type" else "kinds"
        warnings.warn(
            f"filter({arg}=...): {', '.join(map(repr, missing))} not in this log; its "
            f"{arg} are: {', '.join(present)} (formats spell types differently, e.g. "
            "'tool/call' in toh logs, 'tool.called' in pleach ones; kinds are the same for "
            "every format)",
            UserWarning, stacklevel=3)


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _snake(name: str) -> str:
    """``delegationDepth`` -> ``delegation_depth`` (snake_case keys stay as they are)."""
    return _CAMEL.sub("_", name).lower()


def _expand_attrs(attrs: pd.Series, taken: Iterable[str] = ()) -> pd.DataFrame:
    """Header attributes (JSON objects per run) as snake_case columns (one row per run, not
    per event); an attribute whose name a computed column already has gets an ``attr_`` prefix.

    An attribute that is a JSON integer wherever present (a count or a depth such as
    ``seed_length``) is a nullable ``Int64`` column: runs without it are ``<NA>``, not a
    float ``NaN`` that would turn 13 into 13.0."""
    from .._base.json import loads

    if not attrs.map(lambda a: isinstance(a, str) and bool(a)).any():
        return pd.DataFrame(index=attrs.index)  # no header attributes (the common case)
    records = [loads(a) if isinstance(a, str) and a else {} for a in attrs]
    frame = pd.DataFrame.from_records(records, index=attrs.index)
    for c in frame.columns:  # one row per run, not per event
        if frame[c].dtype.kind == "f":
            given = [r[c] for r in records if isinstance(r, dict) and r.get(c) is not None]
            if given and all(type(v) is int for v in given):
                frame[c] = frame[c].astype("Int64")
    used = set(taken)
    names = []
    for c in frame.columns:
        n = _snake(str(c))
        n = f"attr_{n}" if n in used else n
        used.add(n)
        names.append(n)
    frame.columns = names
    return frame


def concat(logs: Iterable[EventLog]) -> EventLog:
    """One EventLog holding every event of ``logs``.

    Raises:
        SchemaError: two logs hold the same (tenant_id, run_id, seq).
    """
    logs = list(logs)
    if not logs:
        return EventLog(empty_events())
    tables = [lg.table for lg in logs]
    same = all(t.schema == tables[0].schema for t in tables)
    # logs with extension columns (a replay's replay_origin): the others get nulls there
    table = pa.concat_tables(tables, promote_options="none" if same else "permissive")
    table = table.unify_dictionaries().combine_chunks()
    table = sort_events(table)
    if table.num_rows > 1:
        tenant = _dictionary_rank(table.column("tenant_id"))
        run = _dictionary_rank(table.column("run_id"))
        seq = table.column("seq").to_numpy()
        dup = (tenant[1:] == tenant[:-1]) & (run[1:] == run[:-1]) & (seq[1:] == seq[:-1])
        if dup.any():
            i = int(np.flatnonzero(dup)[0]) + 1
            raise SchemaError(
                [
                    f"duplicate event (tenant_id={table.column('tenant_id')[i].as_py()!r}, "
                    f"run_id={table.column('run_id')[i].as_py()!r}, seq={seq[i]}) in the logs "
                    "being concatenated; filter one side first"
                ]
            )
    runs = pa.concat_tables([lg.runs for lg in logs])
    quarantine = pa.concat_tables([lg.quarantine for lg in logs])
    extras: dict[str, list[pa.Table]] = {}
    for lg in logs:
        for name, t in lg.extras.items():
            extras.setdefault(name, []).append(t)
    merged = {
        name: pa.concat_tables(ts, promote_options="permissive") for name, ts in extras.items()
    }
    return EventLog(table, runs=runs, quarantine=quarantine, extras=merged, sort=False)


def _as_quarantine(q: pa.Table | None) -> pa.Table:
    """A quarantine table in :data:`QUARANTINE_SCHEMA` (older ones lack tenant_id / run_id:
    those rows belong to no known tenant). Stored text that is not UTF-8 (a damaged
    ``_quarantine.parquet``, a table passed in) is shown escaped: a quarantine is a report,
    and must print."""
    if q is None:
        return QUARANTINE_SCHEMA.empty_table()
    if q.schema.names != QUARANTINE_SCHEMA.names:
        cols = [q.column(f.name) if f.name in q.schema.names else pa.nulls(q.num_rows, f.type)
                for f in QUARANTINE_SCHEMA]
        q = pa.Table.from_arrays(cols, schema=QUARANTINE_SCHEMA)
    return escape_table_utf8(q)[0]


def _checked_runs(runs: pa.Table) -> pa.Table:
    """A header table (:data:`RUNS_SCHEMA`) whose text is UTF-8.

    Raises:
        SchemaError: a string column holds bytes that are not UTF-8 (shown escaped).
    """
    found = invalid_utf8_columns(runs)
    if found:
        raise SchemaError([
            f"runs column {name!r} holds {len(rows)} value(s) that are not UTF-8 (rows "
            f"{rows[:3].tolist()}: {', '.join(shown_bytes(runs.column(name), rows[:3]))}); "
            "fix the producer or drop those header rows"
            for name, rows in found.items()])
    return runs
