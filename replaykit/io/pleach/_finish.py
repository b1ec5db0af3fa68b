"""Joining the blocks: one stable sort on a packed key (which finds duplicate keys), the large text
columns copied once into sorted order, and the runs table.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._base import native as _native
from ...eventlog.log import RUNS_SCHEMA
from ...schema import EVENTS_SCHEMA, events_table
from .._common import (
    Quarantine,
)
from ._checks import _bad
from ._derive import _fill_derived, _segments, _type_and_kind
from ._shapes import _STR, FORMAT, _Part


# ----------------------------------------------------------------------------- finishing
def _finish(
    parts: list[tuple[str, _Part]], quarantine: Quarantine
) -> tuple[pa.Table, dict[str, int]]:
    """Concatenate parts, drop duplicate keys, map to the canonical columns."""
    parts[:] = [(s, p) for s, p in parts if p.env.num_rows]
    if not parts:
        return events_table({k: [] for k in _MIN_COLUMNS}), {}
    # Small columns are joined into single arrays; the large text columns (payload, text,
    # prev_hash, row_hash) stay chunked per block and are copied exactly
    # once, straight into their final (sorted) order, by _take_runs.
    text = pa.chunked_array([p.text for _, p in parts], type=pa.large_string())
    env = pa.concat_tables([p.env for _, p in parts])
    typed = pa.concat_tables([p.typed for _, p in parts])
    payload = pa.chunked_array([p.payload for _, p in parts], type=pa.large_string())
    ts = pa.chunked_array([p.created_at for _, p in parts]).combine_chunks()
    line = np.concatenate([p.line for _, p in parts])
    # one dictionary entry per file (a file is read in several blocks)
    source_names = list(dict.fromkeys(s for s, _ in parts))
    src_code = {s: i for i, s in enumerate(source_names)}
    src_idx = np.concatenate(
        [np.full(p.env.num_rows, src_code[s], dtype=np.int32) for s, p in parts]
    )
    parts.clear()  # the caller's list too: release the per-block arrays before sorting
    _release()  # ... and what Arrow's pool kept of the blocks' temporaries (~35 MB at 2M)
    n = env.num_rows
    prev_hash, row_hash = env.column("prev_hash"), env.column("row_hash")
    env = env.drop_columns(["prev_hash", "row_hash"])
    tenant = env.column("tenant_id").dictionary_encode().combine_chunks()
    chat = env.column("chat_id").dictionary_encode().combine_chunks()
    seq = env.column("sequence_number").to_numpy()

    # One stable sort by (tenant_id, chat_id, sequence_number) finds the duplicates (equal
    # neighbours; the first in file order comes first) and gives the final row order.
    order, same = _key_order(tenant, chat, seq)
    dup_rows, dup_by_source = _duplicates(order, same, tenant, chat, seq, line, src_idx,
                                          source_names, quarantine)
    big_idx = order  # row order for the big columns, in the rows of the parts
    if len(dup_rows):
        keep = np.ones(n, dtype=bool)
        keep[dup_rows] = False
        kept = np.flatnonzero(keep)
        big_idx = order[keep[order]]
        order = (np.cumsum(keep) - 1)[big_idx]  # the same order, in the kept rows
        idx = pa.array(kept)
        ts = ts.take(idx)
        env = pa.table({c: _take_runs(env.column(c), kept) for c in env.column_names})
        typed = pa.table({c: _take_runs(typed.column(c), kept) for c in typed.column_names})
        tenant, chat = tenant.take(idx), chat.take(idx)
        line, src_idx, seq = line[keep], src_idx[keep], seq[keep]
    big_columns = {"payload": payload, "text": text, "prev_hash": prev_hash,
                   "row_hash": row_hash}
    del payload, text, prev_hash, row_hash
    identity = bool(len(order)) and np.array_equal(big_idx, np.arange(n))
    big_order = None if identity else big_idx
    if _native.enabled():
        # the native core gathers every column into run order (its threads, no GIL); the
        # inputs are handed over in a dict so each is freed as soon as it is used
        state: dict[str, Any] = {"env": env, "typed": typed, "tenant": tenant, "chat": chat,
                                 "seq": seq, "ts": ts, "line": line, "src_idx": src_idx}
        del env, typed, tenant, chat, seq, ts, line, src_idx
        table, child = _native_columns(state, source_names, big_columns, order, big_order)
        return _fill_derived(table, child), dup_by_source
    # The big columns are copied into sorted order on replaykit's threads (Arrow's
    # concatenation releases the GIL), starting now; the small columns are built here meanwhile.

    def copy_big(name: str) -> pa.Array | pa.ChunkedArray:
        typ = EVENTS_SCHEMA.field(name).type
        big = big_columns.pop(name)  # the source is freed once copied
        big = big if big_order is None else _take_runs(big, big_order)
        _release()
        return big if big.type == typ else big.cast(typ)

    with ThreadPoolExecutor(min(_native.threads(), len(big_columns))) as pool:
        names = sorted(big_columns, key=lambda k: -big_columns[k].nbytes)
        copies = {name: pool.submit(copy_big, name) for name in names}
        cols = {**_type_and_kind(env.column("event_type")),
                **{c: typed.column(c) for c in typed.column_names}}
        del typed
        child = cols.pop("_child")
        source = pa.DictionaryArray.from_arrays(
            pa.array(src_idx, type=pa.int32()), pa.array(source_names, type=_STR)
        )
        m = len(line)
        # placeholder for payload (all empty strings, no data); the real column is set below
        blank = pa.Array.from_buffers(
            pa.large_string(), m, [None, pa.py_buffer(np.zeros(m + 1, dtype=np.int64)),
                                   pa.py_buffer(b"")]
        )
        table = events_table(
            {
                "tenant_id": tenant,
                "run_id": chat,
                "seq": seq,
                "ts": ts,
                "payload": blank,
                "source": source,
                "source_line": line,
                **cols,
            },
            sort=False, combine=big_order is None,  # the take below makes them contiguous
        )
        del env, cols, tenant, chat, ts, line, src_idx, seq, blank
        if big_order is not None:
            idx = pa.array(order)
            table, child = table.take(idx), child.take(idx)
        done = {name: fut.result() for name, fut in copies.items()}
    for name, big in done.items():
        table = table.set_column(table.schema.get_field_index(name), table.schema.field(name), big)
    return _fill_derived(table, child), dup_by_source


def _duplicates(
    order: np.ndarray, same: np.ndarray, tenant: pa.Array, chat: pa.Array, seq: np.ndarray,
    line: np.ndarray, src_idx: np.ndarray, source_names: list[str], quarantine: Quarantine,
) -> tuple[np.ndarray, dict[str, int]]:
    """Report each row whose (tenant_id, chat_id, sequence_number) repeats an earlier row's
    (``duplicate_seq``, in file order; ``order`` and ``same`` from :func:`_key_order`): the
    rows (sorted) and how many each source has."""
    dup_by_source: dict[str, int] = {}
    if not same.any():
        return np.zeros(0, dtype=np.int64), dup_by_source
    dup_rows = np.sort(order[1:][same])
    for i in dup_rows.tolist():
        src = source_names[src_idx[i]]
        _bad(
            quarantine, src, int(line[i]),
            "duplicate_seq",
            f"(tenant_id, chat_id, sequence_number) = ({tenant[i].as_py()!r}, "
            f"{chat[i].as_py()!r}, {int(seq[i])}) repeats an earlier row; the first is kept",
            None, "sequence_number", owner=(tenant[i].as_py(), chat[i].as_py()),
        )
        dup_by_source[src] = dup_by_source.get(src, 0) + 1
    return dup_rows, dup_by_source


def _native_columns(
    state: dict[str, Any], source_names: list[str], big_columns: dict[str, pa.ChunkedArray],
    order: np.ndarray, big_order: np.ndarray | None,
) -> tuple[pa.Table, pa.Array]:
    """_finish's table, its columns put into run order by the native core (``_native.take``).

    ``state`` (env, typed, tenant, chat, seq, ts, line, src_idx: _finish's inputs, popped
    here so each is freed once used) gives the small columns, built (dictionaries, casts)
    first; then each large text column is copied on every thread, source chunk by source
    chunk, each chunk released once copied (``_native.take_freeing``); then the small
    columns are gathered in one call, spread over the threads. Peak memory: about the
    inputs. The same table as the reference's takes.
    """
    env, typed = state.pop("env"), state.pop("typed")
    cols = {**_type_and_kind(env.column("event_type")),
            **{c: typed.column(c) for c in typed.column_names}}
    del env, typed
    child = cols.pop("_child")
    src_idx = state.pop("src_idx")
    source = pa.DictionaryArray.from_arrays(
        pa.array(src_idx, type=pa.int32()), pa.array(source_names, type=_STR)
    )
    del src_idx
    line = state.pop("line")
    m = len(line)
    blank = pa.Array.from_buffers(
        pa.large_string(), m, [None, pa.py_buffer(np.zeros(m + 1, dtype=np.int64)),
                               pa.py_buffer(b"")]
    )
    small = events_table(
        {"tenant_id": state.pop("tenant"), "run_id": state.pop("chat"),
         "seq": state.pop("seq"), "ts": state.pop("ts"), "payload": blank,
         "source": source, "source_line": line, **cols},
        sort=False, combine=False,
    )
    del cols, line, blank, source
    arrays: dict[str, pa.Array] = {}
    for name in sorted(big_columns, key=lambda k: -big_columns[k].nbytes):
        typ = EVENTS_SCHEMA.field(name).type
        big = big_columns.pop(name)  # the source is freed once copied
        if big.type != typ:
            big = big.cast(typ)
        if big_order is None:
            arr = big.combine_chunks()
            del big
        else:  # each source chunk freed as soon as it is copied
            chunks = big.chunks
            del big
            arr = _native.take_freeing(chunks, typ, big_order)
            del chunks
        _release()
        arrays[name] = arr
    names = [f.name for f in EVENTS_SCHEMA if f.name not in arrays]
    if big_order is not None:
        # gathered a few columns at a time, each group's inputs freed once it is copied
        # (one call over all of them held every input and every output at once: the load's
        # peak, ~290 MB above the table at 2M rows)
        todo: dict[str, Any] = {c: small.column(c) for c in names}
        todo["_child"] = child
        del small, child
        for group in _groups(todo, parts=4):
            got = _native.take([todo.pop(c) for c in group], order)
            arrays.update(zip(group, got, strict=True))
            del got
            _release()
        child = arrays.pop("_child")
    else:
        arrays.update((c, small.column(c).combine_chunks()) for c in names)
        child = child.combine_chunks() if isinstance(child, pa.ChunkedArray) else child
        del small
    table = pa.Table.from_arrays([arrays.pop(f.name) for f in EVENTS_SCHEMA],
                                 schema=EVENTS_SCHEMA)
    return table, child


def _groups(columns: dict[str, Any], parts: int) -> list[list[str]]:
    """``columns``' names cut into about ``parts`` groups of similar size in bytes (in their
    order), each with at least two columns where there are (the native take spreads a
    group's columns over its threads)."""
    names = list(columns)
    total = sum(columns[c].nbytes for c in names) or 1
    out: list[list[str]] = [[]]
    size = 0
    for c in names:
        if size >= total / parts and len(out[-1]) >= 2:
            out.append([])
            size = 0
        out[-1].append(c)
        size += columns[c].nbytes
    return [g for g in out if g]


def _key_order(
    tenant: pa.DictionaryArray, chat: pa.DictionaryArray, seq: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Stable row order by (tenant, chat, seq) and, in that order, "same key as the row before".

    Tenants and chats are ranked by value (as ``schema.sort_order`` does) and the three keys
    are packed into one integer when they fit, so one stable sort of small integers does it
    (fast on the long already-ordered runs of a log file).
    """
    n = len(seq)

    def rank(col: pa.DictionaryArray) -> tuple[np.ndarray, int]:
        r = np.asarray(pc.rank(col.dictionary, sort_keys="ascending", tiebreaker="dense"),
                       dtype=np.int64)
        return r[col.indices.to_numpy(zero_copy_only=False)], int(r.max(initial=0))

    t, t_max = rank(tenant)
    c, c_max = rank(chat)
    s_min, s_max = (int(seq.min()), int(seq.max())) if n else (0, 0)
    span = s_max - s_min + 1
    if s_min >= 0 and (t_max + 1) * (c_max + 1) * span < 2**62:
        key = (t * (c_max + 1) + c) * span + (seq - s_min)
        order = np.argsort(key, kind="stable")
        ks = key[order]
        return order, ks[1:] == ks[:-1]
    order = np.lexsort((seq, c, t))
    t, c, s = t[order], c[order], seq[order]
    return order, (t[1:] == t[:-1]) & (c[1:] == c[:-1]) & (s[1:] == s[:-1])


def _release() -> None:
    """Hand memory freed by Arrow back to the OS (keeps the loader's peak RSS down)."""
    pa.default_memory_pool().release_unused()


def _take_runs(values: pa.ChunkedArray | pa.Array, order: np.ndarray) -> pa.Array:
    """``values.take(order)`` as one array, copying the data once.

    ``order`` of a sort mostly consists of long runs of consecutive rows (a chat's rows sit
    together in the file); each run (split where it crosses a chunk) is a zero-copy slice
    -- a loop over runs, not rows -- and the slices are joined by one Arrow concatenation,
    which releases the GIL, so columns can be copied on several threads. When runs are
    short, the values are joined and taken in the usual way.
    """
    if isinstance(values, pa.Array):
        values = pa.chunked_array([values], type=values.type)
    n = len(order)
    if n == 0:
        return pa.array([], type=values.type)
    if len(np.flatnonzero(np.diff(order) != 1)) > max(1024, n // 64):
        return values.combine_chunks().take(pa.array(order))
    chunks = [c for c in values.chunks if len(c)]
    bounds = np.concatenate([[0], np.cumsum([len(c) for c in chunks])]).astype(np.int64)
    cid = np.searchsorted(bounds, order, side="right") - 1
    first = np.concatenate([[0], np.flatnonzero((np.diff(order) != 1) | (np.diff(cid) != 0))
                            + 1])
    lengths = np.diff(np.append(first, n))
    run_c = cid[first]
    starts = order[first] - bounds[run_c]
    slices = [chunks[c].slice(a, k) for c, a, k in zip(run_c.tolist(), starts.tolist(),
                                                       lengths.tolist(), strict=True)]
    try:
        return pa.chunked_array(slices, type=values.type).combine_chunks()
    except pa.ArrowInvalid:  # a string column whose offsets would overflow: large offsets
        if not pa.types.is_string(values.type):
            raise
        return pa.chunked_array([x.cast(pa.large_string()) for x in slices]
                                ).combine_chunks().cast(values.type)


_MIN_COLUMNS = ("tenant_id", "run_id", "seq", "type", "kind", "payload", "source")


def _runs_table(table: pa.Table) -> pa.Table:
    """One row per chat: tenant, run, parent, format, source, created_at (first event time)."""
    starts, _ = _segments(table)
    if not len(starts):
        return RUNS_SCHEMA.empty_table()
    idx = pa.array(starts)

    def strings(name: str) -> pa.Array:
        return pc.cast(table.column(name).take(idx), _STR)

    ts = table.column("ts").combine_chunks()
    first_ts = pa.table(
        {"seg": np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(table)))),
         "ts": ts}
    ).group_by("seg", use_threads=False).aggregate([("ts", "min")]).sort_by("seg")
    return pa.table(
        {
            "tenant_id": strings("tenant_id"),
            "run_id": strings("run_id"),
            "parent_run_id": strings("parent_run_id"),
            "format": pa.array([FORMAT] * len(starts), type=_STR),
            "source": strings("source"),
            "created_at": first_ts.column("ts_min"),
            "attrs": pa.nulls(len(starts), pa.large_string()),
        },
        schema=RUNS_SCHEMA,
    )
