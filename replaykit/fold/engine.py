"""The column-wise fold engine: every field kind as segmented numpy/Arrow scans.

Rows are sorted by (tenant_id, run_id, seq); a *segment* is one run. Nothing here loops over
rows in Python except :class:`~replaykit.fold.projection.Reducer` fields (the documented
escape hatch, run on their matching rows only). ``state_hash`` is column-wise too (see
:mod:`replaykit.fold.hashing`).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._base import native as _native
from .._base.json import canonical_json, payload_fields
from ..errors import SchemaError
from ..schema import _dictionary_rank
from ._frozen import FrozenDict, freeze
from .hashing import hash_ints, hash_json, mix, pair, text_hash, value_hash
from .projection import (
    NOTNULL,
    Collection,
    Counter,
    Field,
    FromPayload,
    Last,
    Max,
    On,
    Reducer,
    _payload_type_error,
)

_ARROW_TYPES = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}


# ------------------------------------------------------------------------------- columns
def _codes(col: pa.ChunkedArray) -> np.ndarray:
    """Integer codes of a string column that are equal exactly where the values are: the
    dictionary indices themselves (no copy) for one chunk without nulls whose dictionary
    holds each value once, else the values' ranks."""
    arr = col.chunk(0) if isinstance(col, pa.ChunkedArray) and col.num_chunks == 1 else col
    if (isinstance(arr, pa.DictionaryArray) and arr.null_count == 0
            and pc.count_distinct(arr.dictionary).as_py() == len(arr.dictionary)):
        return arr.indices.to_numpy(zero_copy_only=False)
    return _dictionary_rank(col)


class Columns:
    """Column access over a sorted canonical table, with cached numpy views."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table
        self.n = table.num_rows
        self._cache: dict[str, Any] = {}
        tenant = _codes(table.column("tenant_id")) if self.n else np.zeros(0, np.int64)
        run = _codes(table.column("run_id")) if self.n else np.zeros(0, np.int64)
        change = np.ones(self.n, dtype=bool)
        if self.n > 1:
            change[1:] = (tenant[1:] != tenant[:-1]) | (run[1:] != run[:-1])
        self.starts = np.flatnonzero(change).astype(np.int64)
        self.ends = np.append(self.starts[1:], self.n).astype(np.int64)
        self.seg = (np.cumsum(change) - 1).astype(np.int64)
        self.row_start = self.starts[self.seg] if self.n else np.zeros(0, np.int64)
        if self.n < 2**31:
            self.seg = self.seg.astype(np.int32)
            self.row_start = self.row_start.astype(np.int32)

    def __getstate__(self) -> dict[str, Any]:
        # the table's own rows only (a run view's table is a slice of a larger log's
        # buffers); the cached views are rebuilt on demand
        from ..tenancy import detached

        return {"table": detached(self.table)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["table"])  # type: ignore[misc]

    def col(self, name: str) -> pa.Array | pa.ChunkedArray:
        """A column as stored (chunks are not combined: that would copy the column)."""
        c = self.table.column(name)
        return c.chunk(0) if isinstance(c, pa.ChunkedArray) and c.num_chunks == 1 else c

    def _isin(self, name: str, values: frozenset[str]) -> np.ndarray:
        arr = self.col(name)
        vs = pa.array(sorted(values), pa.string())
        if isinstance(arr, pa.ChunkedArray):  # chunk by chunk: each has its own dictionary
            if arr.num_chunks == 0:
                return np.zeros(0, bool)
            return np.concatenate([self._isin_array(ch, vs) for ch in arr.chunks])
        return self._isin_array(arr, vs)

    def _isin_array(self, arr: pa.Array, vs: pa.Array) -> np.ndarray:
        if pa.types.is_dictionary(arr.type):
            hit_dict = np.asarray(pc.is_in(arr.dictionary, value_set=vs).fill_null(False))
            idx = arr.indices.to_numpy(zero_copy_only=False)
            if arr.null_count:
                valid = np.asarray(arr.is_valid())
                return valid & hit_dict[np.where(valid, idx, 0)]
            return hit_dict[idx] if len(hit_dict) else np.zeros(len(arr), bool)
        return np.asarray(pc.is_in(arr, value_set=vs).fill_null(False))

    def mask(self, on: On) -> np.ndarray:
        """Boolean mask (numpy) of the rows ``on`` matches."""
        key = ("mask", on)
        got = self._cache.get(key)  # type: ignore[call-overload]
        if got is not None:
            return got
        if on.kinds is None and on.types is None:
            m = np.ones(self.n, dtype=bool)
        else:
            m = np.zeros(self.n, dtype=bool)
            if on.kinds is not None:
                m |= self._isin("kind", on.kinds)
            if on.types is not None:
                m |= self._isin("type", on.types)
        for colname, want in on.where:
            arr = self.col(colname)
            if want is NOTNULL:
                m &= np.asarray(arr.is_valid())
                continue
            if pa.types.is_dictionary(arr.type):
                if not isinstance(want, str):
                    m &= False
                    continue
                m &= self._isin(colname, frozenset([want]))
                continue
            if isinstance(want, bool) != pa.types.is_boolean(arr.type):
                m &= False
                continue
            eq = pc.equal(arr, pa.scalar(want))
            m &= np.asarray(eq.fill_null(False))
        self._cache[key] = m  # type: ignore[index]
        return m

    def values(self, value: Any, rows: np.ndarray) -> pa.Array:
        """``value`` (column, payload path or constant) on ``rows`` (sorted row indices)."""
        if isinstance(value, FromPayload):
            sub = flat(self.col("payload").take(pa.array(rows)))
            try:
                t = payload_fields(sub, {value.path: _ARROW_TYPES[value.type]})
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise _payload_type_error(value) from exc
            c = t.column(value.path)
            return c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c
        if isinstance(value, str):
            return flat(self.col(value).take(pa.array(rows)))
        return pa.array(np.full(len(rows), value)) if value is not None else pa.nulls(len(rows))


def flat(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One Arrow array (dictionaries unified) from a possibly chunked one."""
    if not isinstance(arr, pa.ChunkedArray):
        return arr
    if pa.types.is_dictionary(arr.type):
        arr = arr.unify_dictionaries()
    return arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)


def _as_strings(arr: pa.Array) -> pa.Array:
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        return arr
    return pc.cast(arr, pa.string())


def _large(arr: pa.Array) -> pa.Array:
    """A string array as large_string (cheap on the few source rows, before a take)."""
    return arr.cast(pa.large_string()) if pa.types.is_string(arr.type) else arr


def spread_strings(values: pa.Array, pos: np.ndarray, n: int, *, large: bool = True
                   ) -> pa.Array:
    """A length-``n`` string array holding ``values[j]`` at row ``pos[j]``, null elsewhere.

    What ``values.take(idx)`` gives for ``idx[pos] = arange(len(pos))`` (null elsewhere), but
    for strictly increasing ``pos`` built from offsets alone: the text bytes are the source
    array's own buffer (no copy), only an offsets array of ``n + 1`` and a validity bitmap are
    written. ``large``: as large_string (what pandas keeps); else the type of ``values``.
    Other ``pos`` (or non-string values) fall back to the take.
    """
    values = flat(values)
    if pa.types.is_dictionary(values.type):
        values = _as_strings(values)
    values = _large(values) if large else values
    ordered = len(pos) < 2 or bool((pos[1:] > pos[:-1]).all())
    is_large = pa.types.is_large_string(values.type)
    if not (ordered and (is_large or pa.types.is_string(values.type))) or len(pos) != len(values):
        idx = np.full(n, -1, dtype=np.int64)
        idx[pos] = np.arange(len(pos))
        return values.take(pa.array(idx, mask=idx < 0))
    if len(values) == 0:
        return pa.nulls(n, values.type)
    odt = np.int64 if is_large else np.int32
    bufs = values.buffers()
    off = np.frombuffer(bufs[1], dtype=odt, count=len(values) + 1,
                        offset=values.offset * np.dtype(odt).itemsize)
    # out_off[k] = off[number of pos below k]: constant between consecutive rows of pos
    p64 = np.asarray(pos, dtype=np.int64)
    counts = np.empty(len(p64) + 1, dtype=np.int64)
    counts[0] = p64[0] + 1
    counts[1:-1] = np.diff(p64)
    counts[-1] = n - p64[-1]
    out_off = np.repeat(off, counts)
    valid = np.zeros(n, dtype=bool)
    valid[pos] = np.asarray(values.is_valid()) if values.null_count else True
    nulls = n - int(np.count_nonzero(valid)) if values.null_count else n - len(pos)
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    data = bufs[2] if bufs[2] is not None else pa.py_buffer(b"")
    return pa.Array.from_buffers(values.type, n, [bitmap, pa.py_buffer(out_off), data],
                                 null_count=nulls)


def _check_int(t: pa.DataType, name: str) -> None:
    if pa.types.is_dictionary(t) or not (pa.types.is_integer(t) or pa.types.is_null(t)):
        raise SchemaError([f"counter {name!r} needs integer values, got {t}"])


def _int_values(arr: pa.Array, name: str) -> np.ndarray:
    _check_int(arr.type, name)
    if pa.types.is_null(arr.type):
        return np.zeros(len(arr), dtype=np.int64)
    out = np.asarray(pc.fill_null(arr, 0).cast(pa.int64()))
    return out if out.flags.writeable else out.copy()


def _ffill_index(valid_rows: np.ndarray, n: int, row_start: np.ndarray) -> np.ndarray:
    """For each row, the index of the latest valid row at or before it in its run, else -1."""
    idx = np.full(n, -1, dtype=np.int32 if n < 2**31 else np.int64)
    idx[valid_rows] = valid_rows
    np.maximum.accumulate(idx, out=idx)
    idx[idx < row_start] = -1
    return idx


def _compact(a: np.ndarray) -> np.ndarray:
    """``a`` as int32 when every value fits (halves what a StateFrame keeps per field)."""
    if a.dtype == np.int64 and (len(a) == 0 or (a.min() >= -(2**31) and a.max() < 2**31)):
        return a.astype(np.int32)
    return a


# -------------------------------------------------------------------------- field results
@dataclass
class ScalarCol:
    """A field whose value after row i is ``values[src[i]]`` (src -1: the initial value)."""

    field: Field
    src: np.ndarray | None  # None: dense numpy values (counters)
    values: Any  # Arrow array over the source rows, or numpy int64 (dense)
    initial: Any

    def at(self, i: int) -> Any:
        if self.src is None:
            return int(self.values[i])
        k = int(self.src[i])
        return self.initial if k < 0 else self.values[k].as_py()

    def column(self) -> pa.Array:
        if self.src is None:
            return pa.array(self.values, pa.int64())
        idx = pa.array(self.src, mask=self.src < 0)
        out = self.values.take(idx)
        if self.initial is not None:
            out = pc.fill_null(out, pa.scalar(self.initial, type=out.type))
        return out


def _sparse_at(rows: np.ndarray, vals: np.ndarray, i: int, start: int, zero: Any) -> Any:
    # The key takes the array's own dtype: searching an int32 array for a Python int makes
    # numpy cast the whole array to int64 first (O(n) per lookup instead of O(log n)).
    j = int(np.searchsorted(rows, rows.dtype.type(i), side="right")) - 1
    return zero if j < 0 or rows[j] < start else vals[j]


def _sparse_dense(rows: np.ndarray, vals: np.ndarray, c: Columns) -> np.ndarray:
    """Dense per-row values of a run-segmented step function given at ``rows`` (0 before).

    ``rows`` strictly increasing. The function is constant between breakpoints: the change
    rows and the run starts (where it falls back to 0 unless it changes there), so one
    ``np.repeat`` of the breakpoint values writes the ``n`` rows.
    """
    n = c.n
    if len(rows) == 0:
        return np.zeros(n, dtype=np.int64)
    starts = c.starts
    j = np.searchsorted(rows, starts)  # where each run start goes among the change rows
    hit = j < len(rows)
    hit[hit] = rows[j[hit]] == starts[hit]
    miss = ~hit
    bp = np.insert(rows.astype(np.int64), j[miss], starts[miss])
    bv = np.insert(vals.astype(np.int64), j[miss], 0)
    return np.repeat(bv, np.diff(bp, append=n))


@dataclass
class CounterCol:
    """A counter: its value changes only on ``rows`` (sorted), to ``values`` (0 before)."""

    field: Field
    rows: np.ndarray
    values: np.ndarray
    cols: Columns

    def at(self, i: int, start: int) -> Any:
        return int(_sparse_at(self.rows, self.values, i, start, 0))

    def column(self) -> pa.Array:
        return pa.array(self.dense(), pa.int64())

    def dense(self) -> np.ndarray:
        """The value after every row, as numpy int64."""
        return _sparse_dense(self.rows, self.values, self.cols)


@dataclass
class KeyedCounterCol:
    field: Counter
    pos: np.ndarray  # row index of each counted event
    codes: np.ndarray  # key code per counted event
    keys: list[str]  # code -> key
    amounts: np.ndarray
    key_array: pa.Array  # key string per counted event

    def at(self, i: int, start: int) -> Any:
        lo = int(np.searchsorted(self.pos, start))
        hi = int(np.searchsorted(self.pos, i, side="right"))
        if hi <= lo:
            return FrozenDict()
        codes = self.codes[lo:hi]
        present = np.bincount(codes, minlength=len(self.keys)) > 0
        sums = np.bincount(codes, weights=self.amounts[lo:hi].astype(np.float64),
                           minlength=len(self.keys))
        return FrozenDict({self.keys[c]: int(sums[c]) for c in np.flatnonzero(present)})

    def column(self, n: int, *, large: bool = False) -> pa.Array:
        """The key counted on each row (null elsewhere); ``large``: as large_string (what
        pandas keeps, so no cast of the full column later)."""
        return spread_strings(self.key_array, self.pos, n, large=large)


@dataclass
class CollectionCol:
    field: Collection
    size_rows: np.ndarray  # rows where the size changes (sorted)
    size_vals: np.ndarray  # the size after each of them
    add_pos: np.ndarray  # effective adds, sorted by row
    end_pos: np.ndarray  # row of the effective remove (n: never)
    add_keys: pa.Array  # key per effective add
    add_items: dict[str, pa.Array]  # item values per effective add
    rem_pos: np.ndarray  # effective removes, sorted by row
    rem_keys: pa.Array

    def at(self, i: int, start: int) -> Any:
        lo = int(np.searchsorted(self.add_pos, start))
        hi = int(np.searchsorted(self.add_pos, i, side="right"))
        if hi <= lo:
            return ()
        alive = lo + np.flatnonzero(self.end_pos[lo:hi] > i)
        if len(alive) == 0:
            return ()
        take = pa.array(alive)
        keys = self.add_keys.take(take).to_pylist()
        if not self.field.item:
            return tuple(keys)
        cols = {name: arr.take(take).to_pylist() for name, arr in self.add_items.items()}
        kn = self.field.key_name
        out = []
        for j, k in enumerate(keys):
            d = {kn: k}
            for name, _ in self.field.item:
                d[name] = cols[name][j]
            out.append(FrozenDict(d))
        return tuple(out)

    def columns(self, c: Columns, *, dense: bool = False) -> dict[str, Any]:
        """``<name>_size`` (Arrow int64; numpy int64 with ``dense``), ``_added``, ``_removed``."""
        name = self.field.name
        size = _sparse_dense(self.size_rows, self.size_vals, c)
        return {
            f"{name}_size": size if dense else pa.array(size, pa.int64()),
            f"{name}_added": spread_strings(self.add_keys, self.add_pos, c.n, large=dense),
            f"{name}_removed": spread_strings(self.rem_keys, self.rem_pos, c.n, large=dense),
        }


@dataclass
class ReducerCol:
    field: Reducer
    src: np.ndarray  # index into ``values`` of the latest matched row, -1 none
    values: list[Any]

    def at(self, i: int) -> Any:
        k = int(self.src[i])
        return freeze(self.field.initial) if k < 0 else self.values[k]


# ------------------------------------------------------------------------------ per kind
def _fold_counter(f: Counter, c: Columns) -> Any:
    m = c.mask(f.on)
    if f.by is not None:
        rows = np.flatnonzero(m)
        keys = _as_strings(c.values(f.by, rows))
        valid = np.asarray(keys.is_valid())
        rows, keys = rows[valid], keys.filter(pa.array(valid))
        amounts = (
            np.full(len(rows), int(f.value), dtype=np.int64)
            if isinstance(f.value, int)
            else _int_values(c.values(f.value, rows), f.name)
        )
        enc = keys.dictionary_encode()
        return KeyedCounterCol(
            f,
            rows.astype(np.int64),
            enc.indices.to_numpy(zero_copy_only=False).astype(np.int64),
            enc.dictionary.to_pylist(),
            amounts,
            keys,
        )
    if isinstance(f.value, int) and not isinstance(f.value, bool):
        rows = np.flatnonzero(m) if f.value else np.zeros(0, np.int64)
        amounts = np.full(len(rows), f.value, dtype=np.int64)
    elif isinstance(f.value, str) and not (f.on.kinds or f.on.types or f.on.where):
        arr = c.col(f.value)
        _check_int(arr.type, f.name)
        if pa.types.is_null(arr.type):
            rows = np.zeros(0, np.int64)
        else:
            rows = np.flatnonzero(np.asarray(pc.fill_null(pc.not_equal(arr, 0), False)))
        amounts = _int_values(arr.take(pa.array(rows)), f.name)
    else:
        rows = np.flatnonzero(m)
        amounts = _int_values(c.values(f.value, rows), f.name)
    keep = amounts != 0  # a zero amount does not change the value
    if not keep.all():
        rows, amounts = rows[keep], amounts[keep]
    vals = _run_cumsum(amounts, c.seg[rows])
    return CounterCol(f, _compact(rows.astype(np.int64)), vals, c)


def _fold_last(f: Last, c: Columns) -> ScalarCol:
    m = c.mask(f.on)
    if isinstance(f.value, str):
        arr = c.col(f.value)
        valid = m & np.asarray(arr.is_valid()) if arr.null_count else m
        src = _ffill_index(np.flatnonzero(valid), c.n, c.row_start)
        return ScalarCol(f, _compact(src), arr, f.initial)
    rows = np.flatnonzero(m)
    vals = c.values(f.value, rows)
    ok = np.asarray(vals.is_valid()) if vals.null_count else np.ones(len(rows), bool)
    sub = np.full(c.n, -1, dtype=np.int64)
    sub[rows] = np.arange(len(rows))
    src = _ffill_index(rows[ok], c.n, c.row_start)
    src = np.where(src >= 0, sub[np.maximum(src, 0)], -1)
    return ScalarCol(f, _compact(src), vals, f.initial)


def _fold_extreme(f: Max, c: Columns) -> ScalarCol:
    m = c.mask(f.on)
    rows = np.flatnonzero(m)
    vals = c.values(f.value, rows)
    if pa.types.is_dictionary(vals.type):
        vals = _as_strings(vals)
    ok = np.asarray(vals.is_valid()) if vals.null_count else np.ones(len(rows), bool)
    rows, vals = rows[ok], vals.filter(pa.array(ok))
    enc = vals.dictionary_encode() if len(vals) else pa.DictionaryArray.from_arrays(
        pa.array([], pa.int32()), pa.array([], vals.type))
    order = np.asarray(pc.array_sort_indices(enc.dictionary))
    u = len(order)
    rank_of_code = np.empty(u, dtype=np.int64)
    rank_of_code[order] = np.arange(1, u + 1)
    rank = np.zeros(c.n, dtype=np.int64)
    r = rank_of_code[enc.indices.to_numpy(zero_copy_only=False)] if len(rows) else rank[:0]
    rank[rows] = r if f.kind == "max" else (u + 1 - r)
    width = u + 1
    seg64 = c.seg.astype(np.int64)
    key = seg64 * width + rank
    np.maximum.accumulate(key, out=key)
    best = key - seg64 * width  # 0 = nothing yet in this run
    if f.kind == "min":
        best = np.where(best > 0, u + 1 - best, 0)
    sorted_vals = enc.dictionary.take(pa.array(order))
    src = best - 1
    return ScalarCol(f, _compact(src), sorted_vals, f.initial)


def _fold_collection(f: Collection, c: Columns) -> CollectionCol:
    n = c.n
    add_rows = np.flatnonzero(c.mask(f.add))
    add_keys = _as_strings(c.values(f.key, add_rows))
    if add_keys.null_count:
        ok = np.asarray(add_keys.is_valid())
        add_rows, add_keys = add_rows[ok], add_keys.filter(pa.array(ok))
    if f.remove is not None:
        rem_rows = np.flatnonzero(c.mask(f.remove))
        rk = f.remove_key if f.remove_key is not None else f.key
        rem_keys = _as_strings(c.values(rk, rem_rows))
        if rem_keys.null_count:
            ok = np.asarray(rem_keys.is_valid())
            rem_rows, rem_keys = rem_rows[ok], rem_keys.filter(pa.array(ok))
    else:
        rem_rows, rem_keys = np.zeros(0, np.int64), pa.array([], pa.string())
    na = len(add_rows)
    pos = np.concatenate([add_rows, rem_rows]).astype(np.int64)
    m = len(pos)
    is_add = np.zeros(m, bool)
    is_add[:na] = True
    keys = pa.chunked_array([add_keys.cast(pa.string()), rem_keys.cast(pa.string())])
    # one dictionary for both chunks (Arrow encodes a chunked array with one memo table)
    kc = np.concatenate([ch.indices.to_numpy(zero_copy_only=False)
                         for ch in keys.dictionary_encode().chunks]
                        or [np.zeros(0, np.int64)]).astype(np.int64)
    seg = c.seg[pos] if m else pos
    # group = (run, key); within a group: by row, adds before removes on the same row.
    # Rows are sorted by run, so (key, row, op) as one int64 sort key orders (run, key) groups.
    # the sort keys are unique (one add and one remove per row at most): no stable sort needed
    key = kc * (2 * n + 2)
    key += pos * 2
    key += np.arange(m) >= na  # a remove after an add on the same row
    order = np.argsort(key)
    del key
    s_pos, s_add, s_seg, s_code = pos[order], is_add[order], seg[order], kc[order]
    same = np.zeros(m, dtype=bool)
    if m > 1:
        same[1:] = (s_code[1:] == s_code[:-1]) & (s_seg[1:] == s_seg[:-1])
    prev_present = np.zeros(m, dtype=bool)
    if m > 1:
        prev_present[1:] = same[1:] & s_add[:-1]
    eff_add = s_add & ~prev_present
    eff_rem = ~s_add & prev_present
    # end of each effective add's interval: the next remove of the same group
    k_idx = np.arange(m)
    rem_k = np.where(~s_add, k_idx, m)
    next_rem = np.minimum.accumulate(rem_k[::-1])[::-1]
    nxt = np.append(next_rem[1:], m) if m else next_rem
    gid = np.cumsum(~same) if m else k_idx
    has_end = nxt < m
    end = np.full(m, n, dtype=np.int64)
    nx = np.minimum(nxt, max(m - 1, 0))
    ends_ok = has_end & (gid[nx] == gid) if m else has_end
    end[ends_ok] = s_pos[nx[ends_ok]]
    # back to the unsorted (row-ordered) op indices: adds are ops [0, na), removes [na, m)
    eff_orig = np.zeros(m, dtype=bool)
    eff_orig[order] = eff_add | eff_rem
    end_orig = np.empty(m, dtype=np.int64)
    end_orig[order] = end
    ea = np.flatnonzero(eff_orig[:na])  # effective adds, in row order
    er = np.flatnonzero(eff_orig[na:])  # effective removes, in row order
    a_pos, a_end, r_pos = add_rows[ea].astype(np.int64), end_orig[ea], rem_rows[er]
    # running size, kept only at the rows where it changes (an add and a remove sharing a
    # row cancel out: the size does not change there)
    d = np.zeros(n, dtype=np.int8)
    d[a_pos] = 1
    d[r_pos] -= 1
    ch_rows = np.flatnonzero(d)
    size_vals = _run_cumsum(d[ch_rows].astype(np.int64), c.seg[ch_rows])
    a_take = pa.array(ea)
    items = {}
    for name, value in f.item:
        # dictionary columns stay encoded: their values hash once per distinct value
        items[name] = c.values(value, add_rows).take(a_take)
    return CollectionCol(
        f,
        _compact(ch_rows.astype(np.int64)),
        _compact(size_vals),
        a_pos,
        a_end,
        add_keys.cast(pa.string()).take(a_take),
        items,
        r_pos.astype(np.int64),
        rem_keys.cast(pa.string()).take(pa.array(er)),
    )


def _fold_reducer(f: Reducer, c: Columns) -> ReducerCol:
    rows = np.flatnonzero(c.mask(f.on))
    events = c.table.take(pa.array(rows)).to_pylist() if len(rows) else []
    values: list[Any] = []
    seg = c.seg[rows]
    acc: Any = None
    prev_seg = -1
    fn = f.fn
    for j, ev in enumerate(events):  # escape hatch: a Python call per *matching* row
        if seg[j] != prev_seg:
            acc = freeze(f.initial)
            prev_seg = seg[j]
        acc = freeze(fn(acc, ev))  # type: ignore[misc]
        values.append(acc)
    src = np.full(c.n, -1, dtype=np.int64)
    src[rows] = np.arange(len(rows))
    np.maximum.accumulate(src, out=src)
    src_row = np.where(src >= 0, rows[np.maximum(src, 0)] if len(rows) else 0, -1)
    src[src_row < c.row_start] = -1
    return ReducerCol(f, _compact(src), values)


def fold_field(f: Field, c: Columns) -> Any:
    """Column-wise result of one field over the sorted table."""
    if isinstance(f, Counter):
        return _fold_counter(f, c)
    if isinstance(f, Max):
        return _fold_extreme(f, c)
    if isinstance(f, Last):
        return _fold_last(f, c)
    if isinstance(f, Collection):
        return _fold_collection(f, c)
    if isinstance(f, Reducer):
        return _fold_reducer(f, c)
    raise TypeError(f"unknown field kind {type(f).__name__}")


# --------------------------------------------------------------------------- state hash
def _shifted_change(a: np.ndarray, c: Columns, zero: int) -> np.ndarray:
    """Rows where ``a`` differs from its value on the previous row of the run (``zero``
    before the run's first row)."""
    chg = np.empty(c.n, dtype=bool)
    chg[0] = a[0] != zero
    np.not_equal(a[1:], a[:-1], out=chg[1:])
    chg[c.starts] = a[c.starts] != zero
    return np.flatnonzero(chg)


def _run_cumsum(d: np.ndarray, seg: np.ndarray, starts: np.ndarray | None = None) -> np.ndarray:
    """Cumulative sum of ``d`` (its dtype; uint64 wraps mod 2**64) restarting where ``seg`` changes.

    ``d`` is consumed (modified in place and returned). Subtracting each run's total at the
    first row of the next run makes one plain cumulative sum restart at every run.
    """
    if len(d) < 2:
        return d
    if starts is None:
        starts = np.flatnonzero(np.concatenate(([True], seg[1:] != seg[:-1])))
    if len(starts) > 1:
        totals = np.add.reduceat(d, starts, dtype=d.dtype)
        d[starts[1:]] -= totals[:-1]
    np.cumsum(d, dtype=d.dtype, out=d)
    return d


def _distinct_hashes(vals: pa.Array, v0: int) -> np.ndarray:
    """``V`` of every value of ``vals`` (nulls: ``v0``), hashing each distinct value once
    (integers: each value of their range when it is no longer than the array, else every
    value, with :func:`~replaykit.fold.hashing.hash_ints`)."""
    if pa.types.is_integer(vals.type) and len(vals) and vals.null_count < len(vals):
        return _int_hashes(vals, v0)
    enc = vals if pa.types.is_dictionary(vals.type) else vals.dictionary_encode()
    dh = np.append(hash_json(enc.dictionary), np.uint64(v0))
    return dh[pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False)]


def _int_hashes(vals: pa.Array, v0: int) -> np.ndarray:
    vals = flat(vals)
    v = np.asarray(pc.fill_null(vals, 0) if vals.null_count else vals)
    lo, hi = int(v.min()), int(v.max())
    if hi - lo < len(v):  # a short range (e.g. counts): hash it once, then index
        wide = np.uint64 if v.dtype.kind == "u" else np.int64
        table = hash_ints(np.arange(lo, hi + 1, dtype=wide))
        out = table[v.astype(wide) - wide(lo)]
    else:
        out = hash_ints(v)
    if vals.null_count:
        out[~np.asarray(vals.is_valid())] = np.uint64(v0)
    return out


def _field_changes(res: Any, c: Columns) -> tuple[np.ndarray, np.ndarray, int]:
    """(rows where the field's value changes, V(value) on those rows, V(zero value))."""
    f = res.field
    v0 = value_hash(f.out(f.init()))
    if isinstance(res, CounterCol):  # changes exactly on its rows
        return res.rows, _distinct_hashes(pa.array(res.values), v0), v0
    if isinstance(res, ReducerCol):
        rows = _shifted_change(res.src, c, -1)
        k = res.src[rows]
        vh = np.array([value_hash(v) for v in res.values] + [v0], dtype=np.uint64)
        return rows, vh[np.where(k >= 0, k, len(res.values))], v0
    if isinstance(res, ScalarCol):
        assert res.src is not None  # dense (counter) columns are CounterCol
        rows = _shifted_change(res.src, c, -1)
        k = res.src[rows]
        # a last-value field that changes source on every row reads every row, in order
        # (its source index only grows within a run and never passes the row)
        if isinstance(res.field, Last) and len(rows) == c.n and len(res.values) == c.n:
            vals = flat(res.values)
        else:
            vals = flat(res.values.take(pa.array(k, mask=k < 0)))
        if len(rows) < 2:
            return rows, _distinct_hashes(vals, v0), v0
        # a new source row often repeats the value: keep only the rows where it changes
        if pa.types.is_integer(vals.type):
            v = np.asarray(pc.fill_null(vals, 0))
            same = v[1:] == v[:-1]
            if vals.null_count:
                ok = np.asarray(vals.is_valid())
                same &= ok[1:] == ok[:-1]
        else:
            if not pa.types.is_dictionary(vals.type):
                vals = vals.dictionary_encode()
            codes = pc.fill_null(vals.indices, -1).to_numpy(zero_copy_only=False)
            same = codes[1:] == codes[:-1]
        keep = np.empty(len(rows), dtype=bool)
        keep[0] = True
        np.logical_not(same, out=keep[1:])
        keep[1:] |= rows[:-1] < c.row_start[rows[1:]]  # first change of a run
        if not keep.all():
            rows, vals = rows[keep], vals.filter(pa.array(keep))
        return rows, _distinct_hashes(vals, v0), v0
    if isinstance(res, KeyedCounterCol):
        pos = res.pos
        if len(pos) == 0:
            return pos, np.zeros(0, np.uint64), v0
        seg = c.seg[pos].astype(np.int64)
        gkey = seg * (len(res.keys) + 1) + res.codes
        if int(gkey.max()) < 2**62 // len(pos):  # unique keys: the fast sort is stable
            order = np.argsort(gkey * len(pos) + np.arange(len(pos)))
        else:
            order = np.argsort(gkey, kind="stable")
        gs = gkey[order]
        a = res.amounts[order]
        cs = np.cumsum(a)
        first = np.ones(len(order), dtype=bool)
        first[1:] = gs[1:] != gs[:-1]
        gstart = np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
        new_sorted = cs - (cs[gstart] - a[gstart])
        new = np.empty_like(new_sorted)
        new[order] = new_sorted
        had = np.empty(len(order), dtype=bool)
        had[order] = ~first
        kh = hash_json(pa.array(res.keys, pa.string()))[res.codes]
        d = pair(kh, _distinct_hashes(pa.array(new), 0))
        old = np.flatnonzero(had)
        if len(old):
            d[old] -= pair(kh[old], _distinct_hashes(pa.array(new[old] - res.amounts[old]), 0))
        return pos, mix(_run_cumsum(d, seg)), v0
    # keyed collection: +E(item) where an item is added, -E(item) where it is removed
    f = res.field
    kh = hash_json(res.add_keys)
    if f.item:
        ih = pair(np.uint64(text_hash(canonical_json(f.key_name))), kh)
        for name, _ in f.item:
            vh = _distinct_hashes(res.add_items[name], value_hash(None))
            ih += pair(np.uint64(text_hash(canonical_json(name))), vh)
        ih = mix(ih)
    else:
        ih = kh
    ends = res.end_pos < c.n
    if len(res.add_pos) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.uint64), v0
    # per row, the sum of +E(added) and -E(removed): adds are on distinct rows, and so are
    # the removes that end them (a remove ends at most one interval)
    d = np.zeros(c.n, dtype=np.uint64)
    d[res.add_pos] = ih
    d[res.end_pos[ends]] -= ih[ends]
    ur = np.flatnonzero(d)  # a row whose sum is 0 leaves the hash as it was
    return ur, mix(_run_cumsum(d[ur], c.seg[ur])), v0


def field_terms(res: Any, c: Columns) -> tuple[np.ndarray, np.ndarray | None, np.uint64]:
    """One field's share of ``state_hash``: (change rows, ``term(new) - term(previous)`` on
    them, the term of the field's zero value). Independent of the other fields."""
    rows, vh, v0 = _field_changes(res, c)
    nh = np.uint64(text_hash(canonical_json(res.field.name)))
    g0 = pair(nh, np.array([v0], np.uint64))[0]
    if len(rows) == 0:
        return rows, None, g0
    g = pair(nh, vh)
    prev = np.empty_like(g)
    prev[0] = g0
    prev[1:] = g[:-1]
    newrun = np.empty(len(rows), dtype=bool)
    newrun[0] = True
    np.less(rows[:-1], c.row_start[rows[1:]], out=newrun[1:])
    prev[newrun] = g0
    np.subtract(g, prev, out=g)
    return rows, g, g0


def state_hashes(results: list[Any], c: Columns,
                 terms: list[tuple[np.ndarray, np.ndarray | None, np.uint64]] | None = None,
                 ) -> np.ndarray:
    """``state_hash`` per row (see :mod:`replaykit.fold.hashing`), column-wise.

    The state's sum of field terms changes only where a field changes: each field adds
    ``term(new) - term(previous)`` at its change rows, and a segmented cumulative sum over
    the rows of each run gives the sum after every event. ``terms``: the fields'
    :func:`field_terms`, when already computed (e.g. by :func:`fold_fields`).
    """
    if c.n == 0:
        return np.zeros(0, dtype=np.uint64)
    if terms is None:
        terms = [field_terms(res, c) for res in results]
    base = np.add.reduce(np.array([g0 for _, _, g0 in terms], np.uint64), dtype=np.uint64)
    out = np.empty(c.n, dtype=np.uint64)
    # runs are independent: spans cut at run starts, about four per worker
    spans = _run_spans(c, _workers() * 4 if c.n >= PARALLEL_MIN_ROWS else 1)

    def span(a: int, b: int) -> None:
        delta = out[a:b]
        delta.fill(0)
        for rows, g, _ in terms:
            if g is not None:
                lo, hi = np.searchsorted(rows, [a, b])
                delta[rows[lo:hi] - a] += g[lo:hi]
        s0, s1 = np.searchsorted(c.starts, [a, b])
        _run_cumsum(delta, c.seg[a:b], c.starts[s0:s1] - a)
        delta += base
        mix(delta, out=delta)

    run_tasks([(lambda a=a, b=b: span(a, b)) for a, b in spans], c.n)
    return out


def _run_spans(c: Columns, parts: int) -> list[tuple[int, int]]:
    """Rows ``0..c.n`` cut into up to ``parts`` spans of about equal rows, each cut at a
    run start (so no run is split)."""
    if parts <= 1 or len(c.starts) < 2:
        return [(0, c.n)]
    targets = np.arange(1, parts, dtype=np.int64) * c.n // parts
    k = np.searchsorted(c.starts, targets)
    cuts = np.unique(c.starts[np.clip(k, 0, len(c.starts) - 1)])
    cuts = cuts[(cuts > 0) & (cuts < c.n)].tolist()
    bounds = [0, *cuts, c.n]
    return [(a, b) for a, b in zip(bounds, bounds[1:], strict=False)]


# ------------------------------------------------------------------------- threads
#: below this many rows a fold runs on the calling thread (thread hand-offs cost more)
PARALLEL_MIN_ROWS = 100_000
_POOLS: dict[int, ThreadPoolExecutor] = {}  # by worker count, for the process _POOLS_PID
_POOLS_PID = 0
_POOL_LOCK = threading.Lock()


def _workers() -> int:
    """replaykit's thread count (``_native.threads()``): the fold's workers."""
    return _native.threads()


def _pool() -> ThreadPoolExecutor | None:
    """A pool of :func:`_workers` threads (None below two), kept per worker count: a pool
    in use by another fold is never shut down under it."""
    global _POOLS_PID
    workers = _workers()
    if workers < 2:
        return None
    with _POOL_LOCK:
        # a forked child (e.g. a multiprocessing worker) inherits the pools but not their
        # threads: it gets pools of its own
        if _POOLS_PID != os.getpid():
            _POOLS.clear()
            _POOLS_PID = os.getpid()
        pool = _POOLS.get(workers)
        if pool is None:
            pool = _POOLS[workers] = ThreadPoolExecutor(
                max_workers=workers, thread_name_prefix="replaykit-fold")
        return pool


def _cost(f: Field) -> int:
    """Rough relative cost of a field, to start the expensive ones first."""
    if isinstance(f, Collection):
        return 3
    if isinstance(f, Counter) and f.by is not None:
        return 2
    return 1


def fold_fields(fields: list[Field], c: Columns, *, terms: bool = True,
                ) -> tuple[list[Any], list[Any] | None]:
    """Every field's column-wise result (and its :func:`field_terms` when ``terms``).

    Fields are independent, and the numpy/Arrow kernels they run release the GIL, so with
    two or more threads (``_native.threads()``) and a table of at least
    :data:`PARALLEL_MIN_ROWS` rows they run on that many threads (the costliest first);
    ``reducer()`` fields (user Python) run on the calling thread, in order. The results are
    the same either way.
    """
    terms = terms and c.n > 0  # an empty table's hash column is empty

    def task(f: Field) -> tuple[Any, Any]:
        r = fold_field(f, c)
        return r, (field_terms(r, c) if terms else None)

    out = run_tasks([(lambda f=f: task(f)) for f in fields], c.n,
                    costs=[_cost(f) for f in fields],
                    mine=[isinstance(f, Reducer) for f in fields])
    results = [r for r, _ in out]
    return results, ([t for _, t in out] if terms else None)


def run_tasks(tasks: list[Any], n_rows: int, *, costs: list[int] | None = None,
              mine: list[bool] | None = None) -> list[Any]:
    """Call every task (a function of no arguments); their results, in order.

    On :func:`_pool`'s workers when it has two or more, there are two or more tasks and the
    table has at least :data:`PARALLEL_MIN_ROWS` rows: the costliest (``costs``) first, the
    ones flagged in ``mine`` (user Python) on the calling thread, in order. Tasks must not
    submit to the pool themselves (the workers could then wait on each other).
    """
    pool = _pool() if n_rows >= PARALLEL_MIN_ROWS and len(tasks) > 1 else None
    if pool is None:
        return [t() for t in tasks]
    cost = costs or [1] * len(tasks)
    own = mine or [False] * len(tasks)
    order = sorted((i for i in range(len(tasks)) if not own[i]), key=lambda i: -cost[i])
    futures = {i: pool.submit(tasks[i]) for i in order}
    done = {i: tasks[i]() for i in range(len(tasks)) if own[i]}
    return [done[i] if i in done else futures[i].result() for i in range(len(tasks))]


def result_cost(res: Any) -> int:
    """:func:`_cost` of a field result's field (for :func:`run_tasks`)."""
    return _cost(res.field)


def lazy_hash_ok(fields: list[Field]) -> bool:
    """Whether ``state_hash`` may be computed on first read rather than in :func:`fold`:
    fields of the built-in kinds only hash Arrow values (which cannot fail), so computing
    later gives the same column; a ``reducer()`` field hashes user values (whose canonical
    JSON can raise), so with one the hash is computed in ``fold`` as before."""
    return not any(isinstance(f, Reducer) for f in fields)
