"""``fold`` and :class:`StateFrame`: the state after every event, column-wise."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from .._base import native as _native
from ..engine import dispatch, is_partition_source
from ..errors import ReplayError
from ..eventlog.log import EventLog, to_pandas
from ..schema import validate
from ._frozen import FrozenDict
from .engine import (
    PARALLEL_MIN_ROWS,  # noqa: F401 (tests patch frame.PARALLEL_MIN_ROWS)
    CollectionCol,
    Columns,
    CounterCol,
    KeyedCounterCol,
    ReducerCol,
    ScalarCol,
    field_terms,
    fold_field,  # noqa: F401 (kept importable here: callers patch frame.fold_field)
    fold_fields,
    lazy_hash_ok,
    result_cost,
    run_tasks,
    state_hashes,
)
from .projection import Field, resolve_projections

__all__ = ["StateFrame", "fold"]


def _require_tenant(tenant_id: Any, what: str = "tenant_id") -> str:
    if tenant_id is None or not isinstance(tenant_id, str) or tenant_id == "":
        raise TypeError(
            f"{what} is required (a non-empty string from your auth context; it is never "
            f"inferred), got {tenant_id!r}"
        )
    return tenant_id


def _pandas_array(col: Any) -> Any:
    """One state column as the pandas array ``steps_df`` holds (what :func:`to_pandas` gives
    for Arrow columns; dense int64 as Int64 without a copy; object arrays as they are)."""
    if isinstance(col, np.ndarray) and col.dtype == object:
        return col
    if isinstance(col, np.ndarray):  # dense int64, no nulls
        return pd.arrays.IntegerArray(col, np.zeros(len(col), dtype=bool))
    return to_pandas(pa.table({"c": col}))["c"].array


class StateFrame:
    """The folded state after every event of a log: one row per event.

    Build it with :func:`fold`. Scalar fields are columns; keyed collections are stored as
    per-event deltas (``<name>_added`` / ``<name>_removed``) plus ``<name>_size``; keyed
    counters as ``<name>_key``; ``state_hash`` (uint64) hashes the full state after each event.
    :meth:`at` materialises the full state (collections included) as immutable plain data,
    without re-folding.

    The ``state_hash`` column is computed on first read (:meth:`state_hash`, :meth:`steps_df`,
    :meth:`final`), from the field results the frame keeps anyway, and then kept: the values
    are the ones an eager computation gives. (With a ``reducer()`` field it is computed in
    :func:`fold`, as the user values it hashes may fail to encode.)

    Example:
        >>> import replaykit as rk  # doctest: +SKIP
        >>> sf = rk.fold(log, rk.agent())  # doctest: +SKIP
        >>> sf.at("run-1", 12, tenant_id="acme")["tool_calls"]  # doctest: +SKIP
    """

    def __init__(self, table: pa.Table, fields: list[Field], cols: Columns, results: list[Any],
                 hashes: np.ndarray | None, *, lazy_hash: bool = False) -> None:
        self._table = table
        self.fields = fields
        self._cols = cols
        self._results = results
        self._hashes = hashes
        #: ``state_hash`` is still to compute (on first read): see :meth:`_hash_tasks`
        self._hash_pending = lazy_hash and hashes is None
        self._seq_np: np.ndarray | None = None
        self._index_d: dict[tuple[str, str], int] | None = None

    def __getstate__(self) -> dict[str, Any]:
        # the frame's own rows only: a frame of a run view (a zero-copy slice of a larger
        # log) holds Arrow slices and field results whose buffers and dictionaries are the
        # whole log's, which pyarrow would pickle with every other tenant's data
        from ..tenancy import detached

        state = dict(self.__dict__)
        state["_table"] = detached(self._table)
        state["_results"] = detached(self._results)
        state["_seq_np"] = None  # (Columns pickles its own rows only, see there)
        state["_index_d"] = None
        return state

    @property
    def _seq(self) -> np.ndarray:
        if self._seq_np is None:
            t = self._table
            self._seq_np = t.column("seq").to_numpy() if t.num_rows else np.zeros(0, np.int64)
        return self._seq_np

    @property
    def _index(self) -> dict[tuple[str, str], int]:
        if self._index_d is None:  # one entry per run, built on first lookup
            starts = pa.array(self._cols.starts)
            tenants = self._table.column("tenant_id").take(starts).to_pylist()
            runs = self._table.column("run_id").take(starts).to_pylist()
            self._index_d = {(t, r): s for s, (t, r) in enumerate(zip(tenants, runs, strict=False))}
        return self._index_d

    # ------------------------------------------------------------------ basic access
    def __len__(self) -> int:
        return self._table.num_rows

    @property
    def num_runs(self) -> int:
        """Number of (tenant_id, run_id) segments."""
        return len(self._cols.starts)

    def __repr__(self) -> str:
        names = ", ".join(f.name for f in self.fields)
        return f"StateFrame({len(self):,} events, {self.num_runs:,} runs; fields: {names})"

    def _repr_html_(self) -> str:
        from .._base.display import state_frame_html

        return state_frame_html(self)

    def _segment(self, run_id: str, tenant_id: Any) -> int:
        _require_tenant(tenant_id)
        seg = self._index.get((tenant_id, run_id))
        if seg is None:
            raise ReplayError(
                f"tenant {tenant_id!r} has no run {run_id!r} in this frame; check the tenant "
                "and run ids (see log.runs_df())",
                run_id=run_id,
                tenant_id=tenant_id,
            )
        return seg

    def run_bounds(self, run_id: str, *, tenant_id: str) -> tuple[int, int]:
        """Row range [start, end) of one run in the frame."""
        seg = self._segment(run_id, tenant_id)
        return int(self._cols.starts[seg]), int(self._cols.ends[seg])

    def zero(self) -> FrozenDict:
        """The state before any event."""
        return FrozenDict({f.name: f.out(f.init()) for f in self.fields})

    def state_at_row(self, i: int, start: int) -> FrozenDict:
        """Full state after row ``i`` of the frame (``i < start``: the zero state)."""
        if i < start:
            return self.zero()
        out = {}
        for res in self._results:
            if isinstance(res, (ScalarCol, ReducerCol)):
                out[res.field.name] = res.at(i)
            else:
                out[res.field.name] = res.at(i, start)
        return FrozenDict(out)

    def at(self, run_id: str, seq: int | None, *, tenant_id: str) -> FrozenDict:
        """The full state of a run after every event with ``seq <= seq``.

        ``seq=None`` or a seq below the run's first event gives the zero state. Immutable
        plain data (read-only dicts, tuples); compare with canonical JSON.

        Raises:
            TypeError: ``tenant_id`` is None or empty.
            ReplayError: the tenant has no such run in this frame.
        """
        start, end = self.run_bounds(run_id, tenant_id=tenant_id)
        if seq is None:
            return self.zero()
        i = start + int(np.searchsorted(self._seq[start:end], seq, side="right")) - 1
        return self.state_at_row(i, start)

    def at_step(self, run_id: str, n: int, *, tenant_id: str) -> FrozenDict:
        """The full state of a run after its first ``n`` events (n=0: zero state).

        Raises:
            TypeError / ReplayError: as :meth:`at`; IndexError: n outside 0..len(run).
        """
        start, end = self.run_bounds(run_id, tenant_id=tenant_id)
        if not 0 <= n <= end - start:
            raise IndexError(f"run {run_id!r} has {end - start} events; n={n} is out of range")
        return self.state_at_row(start + n - 1, start)

    # ------------------------------------------------------------------ grain tables
    def _columns(self, *, dense: bool = False, with_hash: bool = False, convert: bool = False,
                 extra: list[Any] | None = None) -> dict[str, Any]:
        """The state columns (Arrow arrays; object arrays for reducers). With ``dense``
        counters and collection sizes are numpy int64 (no nulls). Fields on two threads for
        large tables (see :func:`replaykit.fold.engine.run_tasks`); with ``with_hash`` a
        pending ``state_hash`` is computed in the same batch of tasks. ``convert``: each
        column as the pandas array :meth:`steps_df` holds. ``extra``: more tasks for the
        batch; the first one's result is returned under the key ``""``."""
        n = len(self)

        def one(res: Any) -> dict[str, Any]:
            name = res.field.name
            if isinstance(res, CounterCol):
                return {name: res.dense() if dense else res.column()}
            if isinstance(res, ScalarCol):
                return {name: res.column()}
            if isinstance(res, KeyedCounterCol):
                return {f"{name}_key": res.column(n, large=dense)}
            if isinstance(res, CollectionCol):
                return res.columns(self._cols, dense=dense)
            if isinstance(res, ReducerCol):
                vals = np.empty(len(res.values) + 1, dtype=object)
                vals[:-1] = res.values
                vals[-1] = res.field.out(res.field.init())
                return {name: vals[np.where(res.src >= 0, res.src, len(res.values))]}
            return {}

        def pandas(res: Any) -> dict[str, Any]:
            return {name: _pandas_array(col) for name, col in one(res).items()}

        fn = pandas if convert else one
        tasks = [(lambda r=res: fn(r)) for res in self._results]
        hash_tasks = self._hash_tasks() if with_hash else []
        more = list(extra or [])
        costs = [result_cost(res) for res in self._results]
        parts = run_tasks(tasks + hash_tasks + more, n,
                          costs=costs + costs[:len(hash_tasks)] + [1] * len(more))
        if hash_tasks:
            self._set_hashes(parts[len(tasks):len(tasks) + len(hash_tasks)])
        cols: dict[str, Any] = {}
        for part in parts[:len(tasks)]:
            cols.update(part)
        if more:
            cols[""] = parts[len(tasks) + len(hash_tasks)]
        return cols

    def _hash_tasks(self) -> list[Any]:
        """Each field's share of a pending ``state_hash`` (:func:`field_terms`) as a task;
        none when the column is computed already or was turned off."""
        if not self._hash_pending or self._cols.n == 0:
            return []
        c = self._cols
        return [(lambda r=res: field_terms(r, c)) for res in self._results]

    def _set_hashes(self, terms: list[Any] | None) -> None:
        # two threads reading a pending hash at once may both compute it: same values
        self._hashes = state_hashes(self._results, self._cols, terms)
        self._hash_pending = False

    def _state_hashes(self) -> np.ndarray | None:
        """The ``state_hash`` column, computed now if it is still pending."""
        if self._hash_pending:
            tasks = self._hash_tasks()
            terms = run_tasks(tasks, self._cols.n,
                              costs=[result_cost(res) for res in self._results])
            self._set_hashes(terms if tasks else None)
        return self._hashes

    def steps_df(self) -> pd.DataFrame:
        """One row per event: tenant_id, run_id, seq, type, kind, then the state columns.

        Scalar fields hold their value after the event; keyed collections give
        ``<name>_size``, ``<name>_added`` and ``<name>_removed``; keyed counters
        ``<name>_key``; ``state_hash`` (uint64; absent only with ``fold(..., state_hash=False)``).
        """
        t = self._table
        base = pa.table({k: t.column(k) for k in ("tenant_id", "run_id", "seq", "type", "kind")})
        # every column becomes a pandas array inside its field's task (on two threads for
        # large tables); the envelope columns convert in the same batch
        cols = self._columns(dense=True, with_hash=True, convert=True,
                             extra=[lambda: to_pandas(base)])
        envelope = cols.pop("")
        hashes = self._state_hashes()
        data = {name: envelope[name] for name in base.column_names}
        data.update(cols)
        if hashes is not None:
            data["state_hash"] = _pandas_array(pa.array(hashes, pa.uint64()))
        return pd.DataFrame(data, index=envelope.index, copy=False)

    def final(self, *, with_state: bool = True) -> pd.DataFrame:
        """One row per run: its last event's row of :meth:`steps_df` (plus ``events``).

        With ``with_state=True`` a ``state`` column holds the full final state (immutable).
        """
        df = self.steps_df()
        if len(df) == 0:
            return df.assign(events=pd.Series([], dtype="Int64"))
        last = self._cols.ends - 1
        out = df.iloc[last].reset_index(drop=True)
        out.insert(3, "events", pd.array(self._cols.ends - self._cols.starts, dtype="Int64"))
        if with_state:
            out["state"] = [
                self.state_at_row(int(e), int(s))
                for s, e in zip(self._cols.starts, last, strict=False)
            ]
        return out

    def state_hash(self) -> np.ndarray | None:
        """The ``state_hash`` column as numpy uint64 (None after ``fold(..., state_hash=False)``).

        Row i equals :func:`replaykit.fold.state_hash` of the state after row i (see
        docs/fold.md for the definition).

        >>> import replaykit as rk  # doctest: +SKIP
        >>> h = rk.fold(log, rk.agent()).state_hash()  # doctest: +SKIP

        Computed on the first call (or the first :meth:`steps_df`), then kept.
        """
        return self._state_hashes()


def fold(log: EventLog | pa.Table, projections: Any, *, state_hash: bool = True,
         engine: str = "local", client: Any = None, threads: int | None = None
         ) -> StateFrame:
    """Fold every event of ``log`` through ``projections``: the state after each event.

    Column-wise: each field kind is a segmented numpy/Arrow scan over rows sorted by
    (tenant_id, run_id, seq); only ``reducer()`` fields call Python per (matching) row.

    Args:
        log: an :class:`~replaykit.EventLog` (or a canonical events table).
        projections: one projection (``rk.agent()``), a Projection subclass, or a list.
        state_hash: compute the ``state_hash`` column (a 64-bit structured hash of the
            canonical JSON of the full state after each event; see docs/fold.md). On by
            default and column-wise, computed on first read (:meth:`StateFrame.state_hash`,
            ``steps_df()``, ``final()``; in ``fold`` itself when a ``reducer()`` field is
            folded); ``False`` leaves the column out.
        engine: ``"local"`` (default) or ``"dask"``: map the fold over run-aligned
            partitions of a Parquet dataset path / EventLog / dask.dataframe and return a lazy
            :class:`replaykit.fold.DaskStateFrame` (``final()``, ``steps_df()``,
            ``to_parquet()``); see docs/scaling.md.
        client: a ``distributed.Client`` for ``engine="dask"`` (default: the current one).
            A :class:`replaykit.ingest.Dataset` (:func:`replaykit.open_dataset`) always folds
            out of core that way (its filters pushed into each file's scan; Dask's threaded
            scheduler unless ``client=``).
        threads: fold on at most this many threads (None: every core the process may use,
            capped by ``REPLAYKIT_THREADS``; ``replaykit._base.native.threads``); the same
            frame on any count. A lazy ``state_hash`` is computed later on the default.

    Returns:
        a :class:`StateFrame` (with ``engine="dask"`` or a Dataset: a lazy
        :class:`replaykit.fold.DaskStateFrame`).

    Raises:
        SchemaError: the table is not canonical, or a payload value has the wrong type.
        ValueError / TypeError: bad projections.
        SettingError: ``threads`` or ``REPLAYKIT_THREADS`` is not a whole number >= 1.

    >>> import replaykit as rk  # doctest: +SKIP
    >>> rk.fold(log, rk.agent()).final()  # doctest: +SKIP
    """
    if engine != "local" or is_partition_source(log):  # fold/_dask.py registers it
        # a Dataset (rk.open_dataset) runs out of core, partition by partition, on Dask
        return dispatch("dask" if engine == "local" else engine, fold, log, projections,
                        state_hash=state_hash, client=client)
    table = log.table if isinstance(log, EventLog) else validate(log)
    fields = resolve_projections(projections)
    with _native.using_threads(threads):
        cols = Columns(table)
        lazy = state_hash and lazy_hash_ok(fields)
        results, terms = fold_fields(fields, cols, terms=state_hash and not lazy)
        hashes = state_hashes(results, cols, terms) if state_hash and not lazy else None
    return StateFrame(table, fields, cols, results, hashes, lazy_hash=lazy)
