"""The column-wise fold engine: every field kind as segmented numpy/Arrow scans.

Rows are sorted by (tenant_id, run_id, seq); a *segment* is one run. Nothing here loops over
rows in Python except :class:`~replaykit.fold.projection.Reducer` fields (the documented
escape hatch, run on their matching rows only) and the collection/keyed-counter parts of the
optional ``state_hash`` (run on the rows where such a field changes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._json import canonical_json, payload_fields
from ..errors import SchemaError
from ..schema import _dictionary_rank
from ._frozen import FrozenDict, freeze
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
class Columns:
    """Column access over a sorted canonical table, with cached numpy views."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table
        self.n = table.num_rows
        self._cache: dict[str, Any] = {}
        tenant = _dictionary_rank(table.column("tenant_id")) if self.n else np.zeros(0, np.int64)
        run = _dictionary_rank(table.column("run_id")) if self.n else np.zeros(0, np.int64)
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

    def col(self, name: str) -> pa.Array:
        arr = self._cache.get(name)
        if arr is None:
            c = self.table.column(name)
            if isinstance(c, pa.ChunkedArray):
                c = c.unify_dictionaries() if pa.types.is_dictionary(c.type) else c
                c = c.combine_chunks() if c.num_chunks != 1 else c.chunk(0)
            arr = self._cache[name] = c
        return arr

    def _isin(self, name: str, values: frozenset[str]) -> np.ndarray:
        arr = self.col(name)
        vs = pa.array(sorted(values), pa.string())
        if pa.types.is_dictionary(arr.type):
            hit_dict = np.asarray(pc.is_in(arr.dictionary, value_set=vs).fill_null(False))
            idx = arr.indices.to_numpy(zero_copy_only=False)
            if arr.null_count:
                valid = np.asarray(arr.is_valid())
                return valid & hit_dict[np.where(valid, idx, 0)]
            return hit_dict[idx] if len(hit_dict) else np.zeros(self.n, bool)
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
            sub = self.col("payload").take(pa.array(rows))
            try:
                t = payload_fields(sub, {value.path: _ARROW_TYPES[value.type]})
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise _payload_type_error(value) from exc
            c = t.column(value.path)
            return c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c
        if isinstance(value, str):
            return self.col(value).take(pa.array(rows))
        return pa.array(np.full(len(rows), value)) if value is not None else pa.nulls(len(rows))


def _as_strings(arr: pa.Array) -> pa.Array:
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        return arr
    return pc.cast(arr, pa.string())


def _int_values(arr: pa.Array, name: str) -> np.ndarray:
    if pa.types.is_dictionary(arr.type) or not (
        pa.types.is_integer(arr.type) or pa.types.is_null(arr.type)
    ):
        raise SchemaError([f"counter {name!r} needs integer values, got {arr.type}"])
    if pa.types.is_null(arr.type):
        return np.zeros(len(arr), dtype=np.int64)
    return np.asarray(pc.fill_null(arr, 0).cast(pa.int64()))


def _ffill_index(valid_rows: np.ndarray, n: int, row_start: np.ndarray) -> np.ndarray:
    """For each row, the index of the latest valid row at or before it in its run, else -1."""
    idx = np.full(n, -1, dtype=np.int64)
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

    def column(self, n: int) -> pa.Array:
        idx = np.full(n, -1, dtype=np.int64)
        idx[self.pos] = np.arange(len(self.pos))
        return self.key_array.take(pa.array(idx, mask=idx < 0))


@dataclass
class CollectionCol:
    field: Collection
    size: np.ndarray  # running size after each row
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

    def columns(self, n: int) -> dict[str, pa.Array]:
        name = self.field.name
        add_idx = np.full(n, -1, dtype=np.int64)
        add_idx[self.add_pos] = np.arange(len(self.add_pos))
        rem_idx = np.full(n, -1, dtype=np.int64)
        rem_idx[self.rem_pos] = np.arange(len(self.rem_pos))
        return {
            f"{name}_size": pa.array(self.size, pa.int64()),
            f"{name}_added": self.add_keys.take(pa.array(add_idx, mask=add_idx < 0)),
            f"{name}_removed": self.rem_keys.take(pa.array(rem_idx, mask=rem_idx < 0)),
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
        amounts = m.astype(np.int64)
        if f.value != 1:
            amounts *= f.value
    elif isinstance(f.value, str) and not (f.on.kinds or f.on.types or f.on.where):
        amounts = _int_values(c.col(f.value), f.name)
    else:
        rows = np.flatnonzero(m)
        amounts = np.zeros(c.n, dtype=np.int64)
        amounts[rows] = _int_values(c.values(f.value, rows), f.name)
    cs = np.cumsum(amounts)
    if len(c.starts):
        base = np.where(c.starts > 0, cs[c.starts - 1], 0)
        cs -= base[c.seg]
    return ScalarCol(f, None, _compact(cs), 0)


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
    ok = np.asarray(add_keys.is_valid())
    add_rows, add_keys = add_rows[ok], add_keys.filter(pa.array(ok))
    if f.remove is not None:
        rem_rows = np.flatnonzero(c.mask(f.remove))
        rk = f.remove_key if f.remove_key is not None else f.key
        rem_keys = _as_strings(c.values(rk, rem_rows))
        ok = np.asarray(rem_keys.is_valid())
        rem_rows, rem_keys = rem_rows[ok], rem_keys.filter(pa.array(ok))
    else:
        rem_rows, rem_keys = np.zeros(0, np.int64), pa.array([], pa.string())
    na = len(add_rows)
    pos = np.concatenate([add_rows, rem_rows]).astype(np.int64)
    is_add = np.concatenate([np.ones(na, bool), np.zeros(len(rem_rows), bool)])
    keys = pa.concat_arrays([add_keys.cast(pa.string()), rem_keys.cast(pa.string())])
    code = keys.dictionary_encode().indices.to_numpy(zero_copy_only=False).astype(np.int64)
    seg = c.seg[pos] if len(pos) else pos
    # group = (run, key); within a group: by row, adds before removes on the same row.
    # Rows are sorted by run, so (key, row, op) as one int64 sort key orders (run, key) groups.
    order = np.argsort(code * (2 * n + 2) + pos * 2 + (~is_add), kind="stable")
    s_pos, s_add, s_code, s_seg = pos[order], is_add[order], code[order], seg[order]
    same = np.zeros(len(order), dtype=bool)
    if len(order) > 1:
        same[1:] = (s_code[1:] == s_code[:-1]) & (s_seg[1:] == s_seg[:-1])
    prev_present = np.zeros(len(order), dtype=bool)
    if len(order) > 1:
        prev_present[1:] = same[1:] & s_add[:-1]
    eff_add = s_add & ~prev_present
    eff_rem = ~s_add & prev_present
    # end of each effective add's interval: the next remove of the same group
    k_idx = np.arange(len(order))
    rem_k = np.where(~s_add, k_idx, len(order))
    next_rem = np.minimum.accumulate(rem_k[::-1])[::-1]
    nxt = np.append(next_rem[1:], len(order)) if len(order) else next_rem
    gid = np.cumsum(~same) if len(order) else k_idx
    has_end = nxt < len(order)
    end = np.full(len(order), n, dtype=np.int64)
    nx = np.minimum(nxt, max(len(order) - 1, 0))
    ends_ok = has_end & (gid[nx] == gid) if len(order) else has_end
    end[ends_ok] = s_pos[nx[ends_ok]]
    delta = np.zeros(n, dtype=np.int64)
    delta[s_pos[eff_add]] = 1  # at most one effective add and one remove per row
    delta[s_pos[eff_rem]] -= 1
    size = np.cumsum(delta)
    if len(c.starts):
        base = np.where(c.starts > 0, size[c.starts - 1], 0)
        size -= base[c.seg]
    # effective adds, in row order, with their original (unsorted) indices into add_* arrays
    ea = order[eff_add]  # indices into the concatenated arrays, all < na
    by_row = np.argsort(s_pos[eff_add], kind="stable")
    ea, a_pos, a_end = ea[by_row], s_pos[eff_add][by_row], end[eff_add][by_row]
    a_take = pa.array(ea)
    items = {}
    for name, value in f.item:
        vals = c.values(value, add_rows)
        if pa.types.is_dictionary(vals.type):
            vals = _as_strings(vals)
        items[name] = vals.take(a_take)
    er = order[eff_rem] - na
    by_row = np.argsort(s_pos[eff_rem], kind="stable")
    return CollectionCol(
        f,
        _compact(size),
        a_pos,
        a_end,
        add_keys.cast(pa.string()).take(a_take),
        items,
        s_pos[eff_rem][by_row],
        rem_keys.cast(pa.string()).take(pa.array(er[by_row])),
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
def _json_texts_of(arr: pa.Array, initial: Any, src_none: np.ndarray | None) -> pa.Array:
    """Canonical JSON text per row of ``arr`` (computed once per distinct value)."""
    if pa.types.is_dictionary(arr.type):
        arr = _as_strings(arr)
    enc = arr.dictionary_encode()
    uniq = [canonical_json(v) for v in enc.dictionary.to_pylist()]
    texts = pa.array(uniq, pa.string()).take(enc.indices)
    return pc.fill_null(texts, canonical_json(initial))


def field_texts(res: Any, c: Columns) -> pa.Array:
    """Canonical JSON text of a field's value after each row (for ``state_hash``)."""
    n = c.n
    if isinstance(res, ScalarCol):
        if res.src is None:
            return pc.cast(pa.array(res.values), pa.string())
        idx = pa.array(res.src, mask=res.src < 0)
        return _json_texts_of(res.values.take(idx), res.initial, None)
    zero = canonical_json(res.field.out(res.field.init()))
    if isinstance(res, ReducerCol):
        uniq = [canonical_json(v) for v in res.values]
        return pc.fill_null(
            pa.array(uniq, pa.string()).take(pa.array(res.src, mask=res.src < 0)), zero
        )
    # collections and keyed counters: text changes only where the field changes
    if isinstance(res, KeyedCounterCol):
        change_rows = res.pos
    else:
        change_rows = np.union1d(res.add_pos, res.rem_pos)
    texts: list[str] = []
    seg = c.seg
    prev_seg = -1
    acc: Any = None
    f = res.field
    adds = dict(zip(res.add_pos.tolist(), range(len(res.add_pos)), strict=False)) if isinstance(
        res, CollectionCol) else {}
    rems = dict(zip(res.rem_pos.tolist(), range(len(res.rem_pos)), strict=False)) if isinstance(
        res, CollectionCol) else {}
    add_keys = res.add_keys.to_pylist() if isinstance(res, CollectionCol) else []
    rem_keys = res.rem_keys.to_pylist() if isinstance(res, CollectionCol) else []
    items = {k: v.to_pylist() for k, v in res.add_items.items()} if isinstance(
        res, CollectionCol) else {}
    kc_keys = res.codes.tolist() if isinstance(res, KeyedCounterCol) else []
    kc_amt = res.amounts.tolist() if isinstance(res, KeyedCounterCol) else []
    for j, row in enumerate(change_rows.tolist()):  # only rows where this field changes
        if seg[row] != prev_seg:
            acc = {}
            prev_seg = seg[row]
        if isinstance(res, KeyedCounterCol):
            k = res.keys[kc_keys[j]]
            acc[k] = acc.get(k, 0) + kc_amt[j]
            texts.append(canonical_json(acc))
            continue
        a = adds.get(row)
        if a is not None:
            key = add_keys[a]
            if f.item:
                d = {f.key_name: key}
                for name, _ in f.item:
                    d[name] = items[name][a]
                acc[key] = d
            else:
                acc[key] = key
        r = rems.get(row)
        if r is not None:
            acc.pop(rem_keys[r], None)
        texts.append(canonical_json(list(acc.values())))
    idx = np.full(n, -1, dtype=np.int64)
    idx[change_rows] = np.arange(len(change_rows))
    np.maximum.accumulate(idx, out=idx)
    src_row = np.where(idx >= 0, change_rows[np.maximum(idx, 0)] if len(change_rows) else 0, -1)
    idx[src_row < c.row_start] = -1
    return pc.fill_null(pa.array(texts, pa.string()).take(pa.array(idx, mask=idx < 0)), zero)


def state_hashes(results: list[Any], c: Columns) -> np.ndarray:
    """``state_hash`` per row: hash of the canonical JSON of the full state after the row."""
    from ._frozen import hash_texts

    if c.n == 0:
        return np.zeros(0, dtype=np.uint64)
    parts: list[Any] = []
    for res in sorted(results, key=lambda r: r.field.name):
        if parts:
            parts.append(",")
        parts.append(canonical_json(res.field.name) + ":")
        parts.append(field_texts(res, c))
    arrays = ["{"] + parts + ["}"]
    text = pc.binary_join_element_wise(*arrays, "")
    return hash_texts(text.to_numpy(zero_copy_only=False))
