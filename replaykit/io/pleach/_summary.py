"""``replaykit summary`` of pleach logs without the canonical table: every row read and
checked as :func:`read_pleach` reads and checks it, the same quarantine and counts, but only
the per-run numbers of the runs table and the summary line computed (:class:`RunSummary`).

The blocks are scanned by the native core's lean mode (``scan_pleach_block(lean=True)``: the
same strict validation of every line, but no payload, text, arguments, hashes or ids built).
A block whose rows would not all pass the row checks (or that the core refuses) is read as
:func:`read_pleach` reads it (the full native scan, else the reference's robust path), so every
quarantined row is reported by the loader's own code, then reduced to the per-run columns.
Duplicate keys are found by the loader's one stable sort of the packed key; the per-run
numbers are reductions over that order of a few integer columns: nothing is gathered into run
order but them, and no large text column exists. ``tests/cli/test_summary_fast.py`` compares
the command's output with the full read's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._base import native as _native
from ...eventlog.log import RUN_STAT_COLUMNS, RUNS_SCHEMA, _as_quarantine, runs_frame
from ...schema import EVENTS_SCHEMA
from .._common import Quarantine
from ._checks import _check_rows, _parse_created
from ._finish import _duplicates, _key_order
from ._shapes import _STR, FORMAT, _Part

__all__ = ["RunSummary", "check", "per_run", "prepare", "reduce"]

_TS = EVENTS_SCHEMA.field("ts").type


@dataclass
class _Lean:
    """A block's rows reduced to what the per-run numbers need (in file order)."""

    tenant: pa.Array  # string
    chat: pa.Array  # string
    seq: np.ndarray  # int64
    ts: pa.Array  # timestamp[us, UTC], nulls allowed
    turn: pa.Array  # int64, null off turn events (and beyond 32 bits)
    child: pa.Array  # string: child_chat_id of subagent.spawned rows, else null
    is_tool: np.ndarray  # bool: a tool.called row (kind tool_call)
    is_call: np.ndarray  # bool: a model call's end (non-null finish)
    is_error: np.ndarray  # bool
    line: np.ndarray  # 1-based line (0-based in the block until the reader adds its offset)

    def take(self, keep: np.ndarray) -> _Lean:
        idx = pa.array(np.flatnonzero(keep))
        return _Lean(self.tenant.take(idx), self.chat.take(idx), self.seq[keep],
                     self.ts.take(idx), self.turn.take(idx), self.child.take(idx),
                     self.is_tool[keep], self.is_call[keep], self.is_error[keep],
                     self.line[keep])


def _flag(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(pc.fill_null(arr, False), dtype=bool)


def _plain(arr: pa.Array | pa.ChunkedArray, typ: pa.DataType = _STR) -> pa.Array:
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    return arr if arr.type == typ else arr.cast(typ)


def _lean(cols: dict[str, Any], ts: pa.Array, line: np.ndarray) -> _Lean:
    """The per-run columns of a block's rows: ``cols`` holds its tenant_id, chat_id,
    sequence_number, event_type, turn, finish, is_error and _child (the canonical values)."""
    etype = _plain(cols["event_type"])
    seq = _plain(cols["sequence_number"], pa.int64())
    return _Lean(
        tenant=_plain(cols["tenant_id"]), chat=_plain(cols["chat_id"]),
        seq=seq.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False),
        ts=_plain(ts, _TS), turn=_plain(cols["turn"], pa.int64()),
        child=_plain(cols["_child"]),
        is_tool=_flag(pc.equal(etype, "tool.called")),
        is_call=_flag(pc.is_valid(_plain(cols["finish"]))),
        is_error=_flag(_plain(cols["is_error"], pa.bool_())), line=line)


def reduce(part: _Part) -> _Lean:
    """A checked part of the loader (its canonical columns) reduced to :class:`_Lean`."""
    env, typed = part.env, part.typed
    cols = {c: env.column(c) for c in ("tenant_id", "chat_id", "sequence_number",
                                        "event_type")}
    cols.update({c: typed.column(c) for c in ("turn", "finish", "is_error", "_child")})
    return _lean(cols, part.created_at, np.asarray(part.line, dtype=np.int64))


def prepare(block: bytes | bytearray | memoryview, *, fallback: Any, make_block: Any) -> Any:
    """The reader's ``prepare`` for the summary path (on a reading thread): the lean native
    scan when every row of the block passes the row checks (the core found them clean, and
    every ``created_at`` parses), as a ``make_block`` (the reader's ``_Block``) holding a
    :class:`_Lean`; otherwise ``fallback(block)``, the loader's own reading of the block."""
    got = _native.core().scan_pleach_block(block, lean=True) if _native.enabled() else None
    if got is not None:
        n_lines, line_buf, _, columns, clean = got
        line = np.frombuffer(line_buf, dtype=np.int64)
        if not len(line):
            return make_block(b"", n_lines, line, line, line, None)
        if clean:
            cols = {name: _native.to_arrow(c) for name, c in columns}
            ts, bad = _parse_created(cols["created_at"])
            if not bad.any():
                return make_block(b"", n_lines, line, line, line, _lean(cols, ts, line.copy()))
    return fallback(block)


def check(part: Any, source: str, quarantine: Quarantine, tenants: frozenset[str] | None,
           counts: Any) -> _Lean | None:
    """_check_rows of the summary path: a lean part's rows all pass the checks, so only the
    tenant filter applies (as _check_rows applies it); a loader part is checked by
    _check_rows (which reports its bad rows) and reduced."""
    if isinstance(part, _Part):
        checked = _check_rows(part, source, quarantine, tenants, counts)
        return None if checked is None else reduce(checked)
    if not len(part.seq):
        return None
    if tenants is not None:
        other = np.asarray(pc.fill_null(pc.invert(pc.is_in(part.tenant, pa.array(
            sorted(tenants)))), False))
        counts.filtered_out += int(other.sum())
        if other.any():
            part = part.take(~other)
    return part


# ----------------------------------------------------------------------------- the runs
class RunSummary:
    """What ``replaykit summary`` reads of a log: its per-run numbers (``_run_stats``), header
    table (``runs``), quarantine, ``extras["pleach_counts"]`` and :meth:`summary`, the same
    values as the :class:`~replaykit.eventlog.log.EventLog` that :func:`read_pleach` would
    return has, without its events."""

    def __init__(self, stats: pa.Table, runs: pa.Table, quarantine: pa.Table,
                 extras: dict[str, pa.Table], events: int,
                 span: tuple[Any, Any]) -> None:
        self._stats = stats
        self._runs = runs
        self._quarantine = _as_quarantine(quarantine)
        self._extras = extras
        self._events = events
        self._span = span

    @property
    def runs(self) -> pa.Table:
        return self._runs

    @property
    def quarantine(self) -> pa.Table:
        return self._quarantine

    @property
    def extras(self) -> dict[str, pa.Table]:
        return dict(self._extras)

    def __len__(self) -> int:
        return self._events

    @property
    def num_runs(self) -> int:
        return self._stats.num_rows

    @property
    def tenants(self) -> list[str]:
        return sorted(set(self._stats.column("tenant_id").to_pylist()))

    def _run_stats(self) -> pa.Table:
        return self._stats

    def _formats_per_run(self, df: Any) -> np.ndarray:
        # only asked for when there are no header rows, i.e. no runs
        return np.array([FORMAT] * self._stats.num_rows, dtype=object)

    def runs_df(self) -> Any:
        return runs_frame(self._stats, self._runs, self._formats_per_run)

    def summary(self) -> dict[str, Any]:
        return {
            "events": self._events,
            "runs": self.num_runs,
            "tenants": len(self.tenants),
            "formats": [FORMAT] if self._events else [],
            "first_ts": self._span[0],
            "last_ts": self._span[1],
            "quarantined": self._quarantine.num_rows,
        }


def per_run(parts: list[tuple[str, _Lean]], quarantine: Quarantine
             ) -> tuple[pa.Table, pa.Table, int, tuple[Any, Any], dict[str, int]]:
    """The per-run numbers (EventLog._run_stats' table), the header table (_runs_table's),
    the number of events and their time span, of the parts' rows once the duplicate keys are
    reported and dropped (as _finish reports and drops them)."""
    parts = [(s, p) for s, p in parts if len(p.seq)]
    if not parts:
        empty = pa.Table.from_arrays(
            [pa.array([], _STR), pa.array([], _STR), pa.nulls(0, _STR),
             pa.array([], pa.int64()), pa.array([], _TS), pa.array([], _TS),
             *(pa.array([], pa.int64()) for _ in range(4))], names=list(RUN_STAT_COLUMNS))
        return empty, RUNS_SCHEMA.empty_table(), 0, (None, None), {}
    source_names = list(dict.fromkeys(s for s, _ in parts))
    src_code = {s: i for i, s in enumerate(source_names)}
    src_idx = np.concatenate([np.full(len(p.seq), src_code[s], dtype=np.int32)
                              for s, p in parts])
    lean = [p for _, p in parts]
    tenant = pa.concat_arrays([p.tenant for p in lean]).dictionary_encode()
    chat = pa.concat_arrays([p.chat for p in lean]).dictionary_encode()
    seq = np.concatenate([p.seq for p in lean])
    line = np.concatenate([p.line for p in lean])
    order, same = _key_order(tenant, chat, seq)
    dup_rows, dup_by_source = _duplicates(order, same, tenant, chat, seq, line, src_idx,
                                          source_names, quarantine)
    if len(dup_rows):
        keep = np.ones(len(seq), dtype=bool)
        keep[dup_rows] = False
        order = order[keep[order]]
    rows = order  # the kept rows in run order (tenant, run, seq), as positions of the parts
    n = len(rows)
    ti = tenant.indices.to_numpy(zero_copy_only=False)[rows]
    ci = chat.indices.to_numpy(zero_copy_only=False)[rows]
    change = np.ones(n, dtype=bool)
    change[1:] = (ti[1:] != ti[:-1]) | (ci[1:] != ci[:-1])
    starts = np.flatnonzero(change)
    k = len(starts)
    bounds = np.append(starts, n)
    seg = np.cumsum(change) - 1  # run number of each sorted row
    run_t = tenant.dictionary.take(pa.array(ti[starts])).cast(_STR)
    run_r = chat.dictionary.take(pa.array(ci[starts])).cast(_STR)

    def sums(flags: list[np.ndarray]) -> np.ndarray:
        v = np.concatenate(flags)[rows]
        return np.bincount(seg[v], minlength=k).astype(np.int64)

    # first / last event time, nulls skipped (null for a run without times)
    ts = pa.concat_arrays([p.ts for p in lean])
    raw = pc.cast(ts, pa.int64())
    vals = raw.fill_null(0).to_numpy(zero_copy_only=False)[rows]
    if raw.null_count == 0:
        lo, hi = np.minimum.reduceat(vals, starts), np.maximum.reduceat(vals, starts)
        none = np.zeros(k, dtype=bool)
    else:
        valid = np.asarray(raw.is_valid(), dtype=bool)[rows]
        big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
        lo = np.minimum.reduceat(np.where(valid, vals, big), starts)
        hi = np.maximum.reduceat(np.where(valid, vals, small), starts)
        none = np.bincount(seg[valid], minlength=k) == 0
    ts_min = pc.cast(pa.array(lo, mask=none), _TS)
    ts_max = pc.cast(pa.array(hi, mask=none), _TS)
    # distinct turn numbers: the values of the run's turn events (carrying them forward, as
    # the loader does, adds no new value)
    turn = pa.concat_arrays([p.turn for p in lean])
    t_valid = np.asarray(turn.is_valid(), dtype=bool)[rows]
    turns = np.zeros(k, dtype=np.int64)
    if t_valid.any():
        tv = turn.fill_null(0).to_numpy(zero_copy_only=False)[rows][t_valid].astype(np.int64)
        ts_seg = seg[t_valid]
        new_run = np.ones(len(tv), dtype=bool)
        new_run[1:] = ts_seg[1:] != ts_seg[:-1]
        step = np.diff(tv)
        if (new_run[1:] | (step >= 0)).all():
            # turns never go back within a run (the usual log, in sequence order): a value
            # is new where the run starts or the number changes -- no sort, no hash table
            first = new_run.copy()
            first[1:] |= step != 0
            turns = np.bincount(ts_seg[first], minlength=k).astype(np.int64)
        else:
            pairs = np.unique(ts_seg.astype(np.int64) * (np.int64(1) << np.int64(33))
                              + (tv + 2**31))
            turns = np.bincount(pairs >> np.int64(33), minlength=k).astype(np.int64)
    # parent_run_id: the run naming the chat as child_chat_id in a subagent.spawned row of
    # the same tenant, the first such row in run order (as _fill_derived sets it)
    child = pa.concat_arrays([p.child for p in lean])
    parent: list[str | None] = [None] * k
    c_valid = np.asarray(child.is_valid(), dtype=bool)[rows]
    if c_valid.any():
        spawn = rows[c_valid]
        idx = pa.array(spawn)
        parents: dict[tuple[str, str], str] = {}
        for t, r, c in zip(tenant.take(idx).cast(_STR).to_pylist(),
                           chat.take(idx).cast(_STR).to_pylist(),
                           child.take(idx).to_pylist(), strict=True):
            parents.setdefault((t, c), r)
        parent = [parents.get(key) for key in zip(run_t.to_pylist(), run_r.to_pylist(),
                                                  strict=True)]
    stats = pa.Table.from_arrays(
        [run_t, run_r, pa.array(parent, _STR), pa.array(np.diff(bounds), pa.int64()),
         ts_min, ts_max, pa.array(turns, pa.int64()),
         pa.array(sums([p.is_call for p in lean]), pa.int64()),
         pa.array(sums([p.is_tool for p in lean]), pa.int64()),
         pa.array(sums([p.is_error for p in lean]), pa.int64())],
        names=list(RUN_STAT_COLUMNS))
    first_src = src_idx[rows[starts]]
    runs = pa.table(
        {
            "tenant_id": run_t,
            "run_id": run_r,
            "parent_run_id": pa.array(parent, _STR),
            "format": pa.array([FORMAT] * k, type=_STR),
            "source": pa.array([source_names[i] for i in first_src.tolist()], _STR),
            "created_at": ts_min,
            "attrs": pa.nulls(k, pa.large_string()),
        },
        schema=RUNS_SCHEMA,
    )
    span = pc.min_max(ts) if n else None
    lo_hi = (span["min"].as_py(), span["max"].as_py()) if span is not None else (None, None)
    return stats, runs, n, lo_hi, dup_by_source
