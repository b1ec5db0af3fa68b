"""Loader for pleach ``harness_event_log`` exports (JSONL or Parquet).

A row: ``tenant_id``, ``chat_id``, ``sequence_number``, ``event_type``, ``payload`` (a JSON
object), ``created_at`` (ISO-8601 text or epoch milliseconds), ``prev_hash``, ``row_hash``.
See docs/formats.md for every event type and its mapping to the canonical columns.

How JSONL is read (fast path, per block of ~16 MB, no Python loop over rows; two blocks are
read at a time on worker threads, their rows are checked and quarantined in file order):

1. Arrow's JSON reader parses every line once for the envelope scalars (this also checks
   that every line is valid JSON of the right types).
2. The payload's byte span is located column-wise: its key is the first ``"payload":`` of
   the line (that byte sequence can only be an object key in valid JSON) and it ends at the
   line's second-to-last ``}``. The spans are cut out of the block with one Arrow ``take``.
3. The spans are parsed by Arrow again, for the typed payload fields (ids, tool, finish,
   usage, cacheKey, ...). That parse is also the proof that each span is exactly one JSON
   object: a wrong span would not parse, or would parse to a different number of rows.

A block where any step fails (bad JSON, invalid UTF-8, a type the reader does not expect,
a span that cannot be proven) goes to the robust path: every line is decoded on its own
(orjson when installed) to find and report the bad rows; the good lines then go through the
fast path again. Should that still fail (e.g. payload fields whose JSON types differ between
rows), the good rows are built from the decoded objects and their ``payload`` column holds
the canonical JSON of the object instead of the source text (same value, keys sorted).

Per block, on the reading threads: tool arguments, ``text`` and the row-wise canonical
columns (the typed payload fields are then dropped). At the end only ``type``/``kind``, one
stable sort on a packed integer key (which also finds duplicate keys) and one copy of the
large text columns into sorted order (``_take_runs``) remain; each block's source is freed
as soon as it is copied. Allocation goes through Arrow's system-allocator pool during the
load (mimalloc's eager return of freed pages to the OS made page faults the largest cost).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from .._json import MAX_DEPTH, JSONDecodeError, args_hash, canonical_json, loads
from ..errors import LoadError
from ..eventlog import RUNS_SCHEMA, EventLog
from ..schema import EVENTS_SCHEMA, events_table
from ..tenancy import bad_tenant_mask, check_tenant_ids, tenant_id_problem
from ._common import (
    EPOCH_MS_MAX,
    EPOCH_MS_MIN,
    ErrorPolicy,
    Progress,
    Quarantine,
    check_errors_arg,
    expand_paths,
)

__all__ = [
    "DERIVED_COLUMNS", "EVENT_KINDS", "FORMAT", "derive_columns", "events_from_arrow",
    "read_pleach", "sniff",
]

FORMAT = "pleach"

#: pleach event type -> canonical ``kind`` (anything else maps to ``"other"``).
EVENT_KINDS: dict[str, str] = {
    "turn.started": "turn_start",
    "turn.completed": "turn_end",
    "message.user": "user_message",
    "model.requested": "model_request",
    "model.completed": "model_response",
    "tool.called": "tool_call",
    "tool.completed": "tool_result",
    "interrupt.raised": "approval_request",
    "interrupt.resolved": "approval_decision",
    "subagent.spawned": "subagent_start",
    "subagent.completed": "subagent_end",
    "checkpoint.created": "checkpoint",
    "error.raised": "error",
    "export.created": "other",
    "user_card.shown": "other",
}

_REQUIRED_COLUMNS = ("tenant_id", "chat_id", "sequence_number", "event_type", "payload")
_PATTERNS = ("*.jsonl", "*.ndjson", "*.json", "*.parquet")
_BLOCK = 16 << 20
_THREADS = 2

_STR = pa.string()
_ENVELOPE_FIELDS = [
    ("tenant_id", _STR),
    ("chat_id", _STR),
    ("sequence_number", pa.int64()),
    ("event_type", _STR),
    ("prev_hash", _STR),
    ("row_hash", _STR),
]
#: Typed payload fields read column-wise; everything else stays in ``payload`` only.
_TYPED = pa.schema(
    [
        ("turn", pa.int64()),
        ("message_id", _STR),
        ("call_id", _STR),
        ("tool", _STR),
        ("finish", _STR),
        ("text", _STR),
        ("result", _STR),
        ("is_error", pa.bool_()),
        ("usage", pa.struct([("input_tokens", pa.int64()), ("output_tokens", pa.int64())])),
        ("cacheKey", _STR),
        ("interrupt_id", _STR),
        ("reason", _STR),
        ("subagent_id", _STR),
        ("child_chat_id", _STR),
        ("checkpoint_id", _STR),
        ("export_id", _STR),
        ("card_id", _STR),
        ("message", _STR),
    ]
)

_FIX_TENANT = (
    "Every pleach row must name its tenant: fix the export, or pass errors=\"quarantine\" "
    "to load the other rows."
)


class _FastPathFailed(Exception):
    """The block cannot be read column-wise; use the robust per-line path."""


# ----------------------------------------------------------------------------- sniffing
def sniff(path: Path) -> str | None:
    """None if ``path`` looks like a pleach export, else the reason it does not.

    A JSONL file's first non-blank line must be a JSON object with ``tenant_id``, ``chat_id``,
    ``sequence_number``, ``event_type`` and ``payload``; a Parquet file must have those columns.
    """
    p = Path(path)
    try:
        if p.suffix == ".parquet":
            import pyarrow.parquet as pq

            try:
                names = set(pq.read_schema(p).names)
            except pa.ArrowException as exc:
                return f"not a readable Parquet file ({exc})"
            missing = [c for c in _REQUIRED_COLUMNS if c not in names]
            return f"Parquet columns {missing} are missing" if missing else None
        with open(p, "rb") as fh:
            for raw in fh:
                if raw.strip():
                    break
            else:
                return "file is empty"
        try:
            obj = loads(raw)
        except JSONDecodeError:
            return "first line is not valid JSON"
        if not isinstance(obj, dict):
            return "first line is not a JSON object"
        missing = [c for c in _REQUIRED_COLUMNS if c not in obj]
        if missing:
            return f"first row lacks harness_event_log fields {missing}"
        return None
    except OSError as exc:
        return f"cannot read file: {exc}"


# ----------------------------------------------------------------------------- results
@dataclass
class _Part:
    """Rows of one block in an intermediate, format-neutral shape."""

    env: pa.Table  # tenant_id, chat_id, sequence_number, event_type, prev_hash, row_hash
    created_at: pa.Array  # string, integer or timestamp values (null allowed)
    payload: pa.Array  # large_string, JSON object text
    typed: pa.Table  # _TYPED columns; after _slim: the canonical columns (_canonical_columns)
    line: np.ndarray  # 1-based line (or row) number
    raw: pa.Array | None = None  # the row's raw text (for quarantine), or None
    # set by _slim once the rows are final: tool-call arguments, their hash, the text column
    args: pa.Array | None = None
    hashes: pa.Array | None = None
    text: pa.Array | None = None


@dataclass
class _Counts:
    input_rows: int = 0
    filtered_out: int = 0
    quarantined: int = 0
    extra: dict[str, int] = field(default_factory=dict)


# ----------------------------------------------------------------------------- public API
def read_pleach(
    path_or_glob: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    tenant_id: str | Sequence[str] | None = None,
    errors: ErrorPolicy = "raise",
    progress: bool | None = None,
) -> EventLog:
    """Load pleach ``harness_event_log`` exports (JSONL or Parquet) into an EventLog.

    ``path_or_glob`` is a file, a directory (searched recursively for ``*.jsonl``,
    ``*.ndjson``, ``*.json``, ``*.parquet``), a glob, or a list of those. Each row becomes
    one event: ``run_id = chat_id``, ``seq = sequence_number``, ``type = event_type``,
    ``payload`` = the source's JSON text of the payload object (lossless), plus the typed
    columns of docs/formats.md (kind, ref_id, tool_name, args_hash, cache_key, is_error,
    finish, input/output tokens, text; ``turn`` is carried forward from ``turn.started``;
    a chat named by ``subagent.spawned.child_chat_id`` gets that chat as parent_run_id).

    Rows carry their own tenant: ``tenant_id=`` is a *filter* (a string or a list of
    strings); rows of other tenants are skipped, neither loaded nor quarantined, and counted
    in ``log.extras["pleach_counts"]`` (``input_rows == loaded + quarantined + filtered_out``
    per file). Blank lines are not rows. Every tenant id follows the one tenant-id rule
    (:mod:`replaykit.tenancy`): a row breaking it is an error (reason ``bad_tenant``; a
    missing or empty one: ``missing_tenant``). A quarantined row keeps its tenant and run in
    ``log.quarantine`` when they can be read; with a ``tenant_id=`` filter, quarantined rows
    that are not the requested tenants' (another tenant's, or one whose tenant cannot be
    read) are left out of ``log.quarantine`` and counted as ``filtered_out``: only an
    all-tenants load shows them.

    Duplicate ``(tenant_id, chat_id, sequence_number)``: the first row in file order (files in
    sorted path order) is kept; every later one is an error (reason ``duplicate_seq``).

    Args:
        path_or_glob: where to read.
        tenant_id: keep only these tenants' rows (None: all tenants).
        errors: ``"raise"`` stops at the first bad row with a LoadError; ``"quarantine"``
            puts each bad row, with its reason, in ``log.quarantine`` and keeps going.
        progress: show a progress bar over bytes (None: only when interactive).

    Returns:
        An EventLog sorted by (tenant_id, run_id, seq).

    Raises:
        LoadError: a bad row under ``errors="raise"``; reasons: ``bad_json``, ``not_object``,
            ``bad_utf8``, ``missing_tenant``, ``bad_tenant``, ``missing_field`` (chat_id),
            ``bad_seq``,
            ``unknown_event`` (missing/empty event_type), ``bad_payload``,
            ``bad_timestamp``, ``bad_type``, ``duplicate_seq``, ``bad_schema`` (Parquet).
        FileNotFoundError: nothing matches ``path_or_glob``.
        LoadError: ``reason="bad_tenant"``: ``tenant_id`` is given but an id in it breaks the
            tenant-id rule (:mod:`replaykit.tenancy`), or it is an empty list.
        ValueError: ``errors`` is not ``"raise"`` or ``"quarantine"``.

    Example:
        >>> import replaykit as rk
        >>> log = rk.read_pleach("data/pleach/*.jsonl", tenant_id="acme")  # doctest: +SKIP
        >>> log.runs_df()[["run_id", "events", "tool_calls"]]  # doctest: +SKIP
    """
    policy = check_errors_arg(errors)
    tenants = _tenant_filter(tenant_id)
    files = expand_paths(path_or_glob, patterns=_PATTERNS)
    # Arrow's default pool (mimalloc) hands freed pages back to the OS quickly; the loader
    # allocates and frees hundreds of MB per second, and re-faulting those pages cost more
    # kernel time than the parsing itself. The system allocator reuses them. The previous
    # pool is restored on return (buffers remember the pool they came from).
    with _system_memory_pool():
        return _read_pleach(files, policy, tenants, progress)


_POOL_LOCK = threading.Lock()
_pool_state: dict[str, Any] = {"users": 0, "saved": None}


@contextmanager
def _system_memory_pool() -> Iterator[None]:
    """Use Arrow's system-allocator pool while loading (nested/concurrent calls are safe)."""
    with _POOL_LOCK:
        if _pool_state["users"] == 0:
            _pool_state["saved"] = pa.default_memory_pool()
            pa.set_memory_pool(pa.system_memory_pool())
        _pool_state["users"] += 1
    try:
        yield
    finally:
        with _POOL_LOCK:
            _pool_state["users"] -= 1
            if _pool_state["users"] == 0:
                pa.set_memory_pool(_pool_state["saved"])
                _pool_state["saved"] = None


def _read_pleach(
    files: list[Path], policy: ErrorPolicy, tenants: frozenset[str] | None,
    progress: bool | None,
) -> EventLog:
    quarantine = Quarantine(policy)
    total = sum(f.stat().st_size for f in files)
    parts: list[tuple[str, _Part]] = []
    counts_rows: list[dict[str, Any]] = []
    with Progress(total, desc="pleach", unit="B", enabled=progress) as bar:
        for f in files:
            source = f"{FORMAT}:{f}"
            counts = _Counts()
            before = len(quarantine)
            if f.suffix == ".parquet":
                file_parts = _read_parquet_file(f, source, quarantine, tenants, counts)
                bar.update(f.stat().st_size)
            else:
                file_parts = list(_read_jsonl(f, source, quarantine, tenants, counts, bar))
            counts.quarantined = len(quarantine) - before
            parts.extend((source, p) for p in file_parts)
            del file_parts  # _finish frees the blocks as it copies them
            counts_rows.append(
                {
                    "source": source,
                    "input_rows": counts.input_rows,
                    "filtered_out": counts.filtered_out,
                    "quarantined_in_file": counts.quarantined,
                }
            )
    table, dup_by_source = _finish(parts, quarantine)
    not_theirs = _scope_quarantine(quarantine, tenants)
    for row in counts_rows:
        row["quarantined"] = row.pop("quarantined_in_file") + dup_by_source.get(row["source"], 0)
        row["quarantined"] -= not_theirs.get(row["source"], 0)
        row["filtered_out"] += not_theirs.get(row["source"], 0)
        row["loaded"] = row["input_rows"] - row["filtered_out"] - row["quarantined"]
    runs = _runs_table(table)
    extras = {"pleach_counts": pa.Table.from_pylist(counts_rows, schema=_COUNTS_SCHEMA)}
    # the rows are already in (tenant_id, run_id, seq) order: EventLog only validates that
    return EventLog(table, runs=runs, quarantine=quarantine.table(), extras=extras, sort=False)


_COUNTS_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("input_rows", pa.int64()),
        ("filtered_out", pa.int64()),
        ("quarantined", pa.int64()),
        ("loaded", pa.int64()),
    ]
)


def _tenant_filter(tenant_id: object) -> frozenset[str] | None:
    if tenant_id is None:
        return None
    return frozenset(check_tenant_ids(tenant_id, source="read_pleach(tenant_id=...)"))


# ----------------------------------------------------------------------------- JSONL
def _iter_blocks(path: Path, bar: Progress) -> Iterator[bytearray]:
    """Yield blocks of ~_BLOCK bytes, each ending at a line end (a final one is added)."""
    with open(path, "rb") as fh:
        while True:
            chunk = bytearray(_BLOCK)
            got = fh.readinto(chunk)
            if not got:
                return
            del chunk[got:]
            bar.update(got)
            if not chunk.endswith(b"\n"):
                tail = fh.readline()  # complete the last line (extends in place, no copy)
                bar.update(len(tail))
                chunk += tail
                if not chunk.endswith(b"\n"):
                    chunk += b"\n"
            yield chunk


@dataclass
class _Block:
    """One block's lines (line numbers relative to the block) and its fast-path part."""

    block: bytes | bytearray
    n_lines: int
    starts: np.ndarray
    ends: np.ndarray
    lineno: np.ndarray  # 0-based within the block until the reader adds the offset
    part: _Part | None  # None: the fast path failed (or no rows)


def _prepare_block(block: bytes | bytearray) -> _Block:
    """Line spans of a block and, when possible, its rows read column-wise (thread-safe)."""
    b = np.frombuffer(block, dtype=np.uint8)
    nl = _positions(b, 10)
    starts = np.empty(len(nl), dtype=np.int64)
    if len(nl):
        starts[0] = 0
        starts[1:] = nl[:-1] + 1
    ends = nl.copy()
    cr = (ends > starts) & (b[np.maximum(ends - 1, 0)] == 13)
    ends[cr] -= 1
    lineno = np.arange(len(nl), dtype=np.int64)
    nonblank = ends > starts
    # a line of only whitespace is blank too (checked one by one: such lines are rare)
    for i in np.flatnonzero(nonblank & _BLANK[b[np.minimum(starts, max(len(b) - 1, 0))]]):
        if not bytes(block[starts[i]:ends[i]]).strip():
            nonblank[i] = False
    if not nonblank.all():
        # a line of only spaces/tabs is blank too
        starts, ends, lineno = starts[nonblank], ends[nonblank], lineno[nonblank]
    part = None
    if len(starts):
        try:
            part = _slim(_fast_block(block, b, starts, ends, lineno, threads=False))
        except _FastPathFailed:
            part = None
    return _Block(block, len(nl), starts, ends, lineno, part)


def _read_jsonl(
    path: Path,
    source: str,
    quarantine: Quarantine,
    tenants: frozenset[str] | None,
    counts: _Counts,
    bar: Progress,
) -> Iterator[_Part]:
    # Blocks are read column-wise on two threads (Arrow and numpy release the GIL); the
    # results are taken in file order, so row checks and quarantine stay sequential.
    first_line = 1
    with ThreadPoolExecutor(_THREADS) as pool:
        pending: deque[Any] = deque()
        blocks = _iter_blocks(path, bar)
        done = False
        while True:
            while not done and len(pending) < _THREADS:
                block = next(blocks, None)
                if block is None:
                    done = True
                else:
                    pending.append(pool.submit(_prepare_block, block))
            if not pending:
                break
            blk = pending.popleft().result()
            lineno = blk.lineno + first_line
            first_line += blk.n_lines
            counts.input_rows += len(blk.starts)
            if not len(blk.starts):
                continue
            part = blk.part
            if part is None:
                part = _slim(
                    _robust_block(
                        blk.block, blk.starts, blk.ends, lineno, source, quarantine,
                        tenants, counts,
                    )
                )
            else:
                part.line = lineno
            del blk
            part = _check_rows(part, source, quarantine, tenants, counts)
            pass
            if part is not None:
                yield part


def _slices(buf: pa.Buffer, lo: np.ndarray, hi: np.ndarray, *, binary: bool = False) -> pa.Array:
    """Arrow array of ``buf[lo[i]:hi[i]]`` for each i (one copy; spans must be ordered)."""
    n = len(lo)
    offs = np.empty(2 * n + 1, dtype=np.int64)
    offs[0:-1:2] = lo
    offs[1:-1:2] = hi
    offs[-1] = hi[-1] if n else 0
    typ = pa.large_binary() if binary else pa.large_string()
    inter = pa.Array.from_buffers(typ, 2 * n, [None, pa.py_buffer(offs), buf])
    return inter.take(pa.array(np.arange(0, 2 * n, 2, dtype=np.int64)))


_scratch = threading.local()


def _positions(b: np.ndarray, byte: int) -> np.ndarray:
    """Ascending positions of ``byte`` in ``b``.

    The comparison goes into a per-thread scratch mask that is reused from block to block:
    a fresh block-sized temporary per search costs more in page faults than the search.
    """
    if threading.current_thread() is threading.main_thread():
        return np.flatnonzero(b == byte)  # (robust path) keep no buffer after the load
    mask = getattr(_scratch, "mask", None)
    if mask is None or len(mask) < len(b):
        mask = _scratch.mask = np.empty(max(len(b), _BLOCK + (1 << 20)), dtype=bool)
    m = mask[: len(b)]
    np.equal(b, byte, out=m)
    return np.flatnonzero(m)


_PAYLOAD_KEY = np.frombuffer(b'"payload":', dtype=np.uint8)


_WS = np.zeros(256, dtype=bool)
_WS[[9, 10, 13, 32]] = True
#: bytes that bytes.strip() removes: a line starting with one may be blank
_BLANK = np.zeros(256, dtype=bool)
_BLANK[[9, 10, 11, 12, 13, 32]] = True
#: a NaN/Infinity literal in value position: Arrow's JSON reader accepts them, JSON does not
_NONFINITE = re.compile(rb"[:,\[]\s*-?(?:NaN|Infinity)")

#: stands in for each payload object in the envelope parse (an object with no such member)
_PLACEHOLDER = ("payload", pa.struct([("__replaykit_placeholder", pa.int8())]))


def _parse_lines(buf: pa.Buffer, schema: pa.Schema, longest: int, threads: bool) -> pa.Table:
    """Newline-delimited JSON objects -> a table of ``schema``'s fields (others skipped).

    Parse blocks of a few MB: Arrow's reader spends less CPU per byte on blocks that stay in
    cache than on one large block.
    """
    return pj.read_json(
        pa.BufferReader(buf),
        read_options=pj.ReadOptions(use_threads=threads, block_size=max(2 << 20, longest + 2)),
        parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
    )


def _envelope_schema(created_at: pa.DataType) -> pa.Schema:
    return pa.schema([*_ENVELOPE_FIELDS, ("created_at", created_at)])


def _payload_spans(
    b: np.ndarray, starts: np.ndarray, ends: np.ndarray, opens: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Byte span [value, end) of each line's payload object, located column-wise.

    A candidate only: the line's second ``{`` must directly follow a ``"payload":`` key
    (whitespace allowed around the colon), so no object opens before it and, in valid JSON,
    it is the value of the top-level ``payload`` member; it ends at the line's second-to-last
    ``}``. :func:`_fast_block` proves both by its two parses.
    """
    if opens is None:
        opens = _positions(b, ord("{"))
    closes = _positions(b, ord("}"))
    i = np.searchsorted(opens, starts)  # opens[i] == starts (checked by the caller)
    nxt = np.minimum(i + 1, len(opens) - 1)
    value = opens[nxt]
    if not ((i + 1 < len(opens)) & (value < ends)).all():
        raise _FastPathFailed("a line has no payload object")
    colon = value - 1
    for _ in range(8):  # whitespace between the colon and the brace
        ws = _WS[b[colon]] & (colon > starts)
        if not ws.any():
            break
        colon = colon - ws
    key_end = colon.copy()
    for _ in range(8):  # ... and between the key and the colon
        ws = _WS[b[key_end - 1]] & (key_end - 1 > starts)
        if not ws.any():
            break
        key_end = key_end - ws
    first = key_end - len(_PAYLOAD_KEY) + 1  # '"payload"' then the colon at `colon`
    if not ((b[colon] == ord(":")) & (first > starts)).all():
        raise _FastPathFailed("a line's first nested object is not its payload")
    key = b[first[:, None] + np.arange(len(_PAYLOAD_KEY) - 1)]
    if not (key == _PAYLOAD_KEY[:-1]).all():
        raise _FastPathFailed("a line's first nested object is not its payload")
    ci = np.searchsorted(closes, ends)  # closes[ci-1] = the line's last '}'
    if (ci < 2).any():
        raise _FastPathFailed("unbalanced line")
    pend = closes[ci - 2] + 1
    if not ((pend > value + 1) & (closes[ci - 1] < ends)).all():
        raise _FastPathFailed("payload end not found")
    return value, pend


_NAN = np.frombuffer(b"NaN", dtype=np.uint8)
_INF = np.frombuffer(b"Infinity", dtype=np.uint8)


def _may_hold_nonfinite(b: np.ndarray) -> bool:
    """True when the bytes hold "NaN" or "Infinity" anywhere (column-wise, no copies)."""
    for word in (_NAN, _INF):
        pos = _positions(b, int(word[0]))
        pos = pos[pos + len(word) <= len(b)]
        if len(pos) and (b[pos[:, None] + np.arange(1, len(word))] == word[1:]).all(1).any():
            return True
    return False


def _check_depth(block: bytes | bytearray, b: np.ndarray, starts: np.ndarray,
                 ends: np.ndarray, opens: np.ndarray) -> None:
    """Raise _FastPathFailed when a line may nest deeper than MAX_DEPTH (Arrow's reader
    accepts any depth; the row-by-row path rejects it, so both paths agree)."""
    count = np.searchsorted(opens, ends) - np.searchsorted(opens, starts)
    brackets = _positions(b, ord("["))
    count += np.searchsorted(brackets, ends) - np.searchsorted(brackets, starts)
    for i in np.flatnonzero(count > MAX_DEPTH).tolist():  # few lines: decode them to be sure
        try:
            loads(bytes(block[starts[i]:ends[i]]))
        except JSONDecodeError:
            raise _FastPathFailed("a line is nested too deep (or is not JSON)") from None


def _fast_block(
    block: bytes | bytearray,
    b: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    lineno: np.ndarray,
    *,
    threads: bool = False,
    strict_checked: bool = False,
) -> _Part:
    """A block's rows, column-wise; every byte is parsed once.

    ``strict_checked``: every line already decoded as strict JSON (the robust path's good
    lines), so a ``NaN``-like text inside a string need not send them back.

    1. Candidate payload spans (:func:`_payload_spans`).
    2. The envelope parse reads each line with its payload replaced by ``{}``: the lines
       are cut around the spans with one Arrow ``take``. Every line must parse, with an
       object for ``payload``: so each line, with any JSON object in the span, is valid.
    3. The spans, one per line, are parsed for the typed payload fields: exactly one
       object per span (the row count must match). With 2. this proves each line is valid
       JSON whose top-level ``payload`` is the span.
    """
    n = len(starts)
    # Every line must open an object. (Lines starting with whitespace would hide blank
    # lines from the row count, and pyarrow 26 crashes on a buffer whose first value is a
    # bare `null`, so anything else goes to the robust path.)
    if not (b[starts] == ord("{")).all():
        raise _FastPathFailed("a line does not start with '{'")
    if not strict_checked and _may_hold_nonfinite(b) and _NONFINITE.search(block):
        raise _FastPathFailed("a line may hold a NaN/Infinity literal (not JSON)")
    buf = pa.py_buffer(block)
    # UTF-8 (Arrow's JSON reader does not check bytes of fields it skips)
    offs = np.append(starts, ends[-1]).astype(np.int64)
    try:
        pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(offs), buf]).validate(
            full=True
        )
    except pa.ArrowInvalid as exc:
        raise _FastPathFailed("invalid UTF-8") from exc
    opens = _positions(b, ord("{"))
    value, pend = _payload_spans(b, starts, ends, opens)
    _check_depth(block, b, starts, ends, opens)
    # the block as [line start, '{') [payload inside) ['}', next line start) pieces
    cut = np.empty(3 * n + 1, dtype=np.int64)
    cut[0:-1:3] = starts
    cut[1::3] = value + 1
    cut[2::3] = pend - 1
    cut[-1] = len(block)
    pieces = pa.Array.from_buffers(pa.large_binary(), 3 * n, [None, pa.py_buffer(cut), buf])
    keep = np.arange(3 * n, dtype=np.int64).reshape(n, 3)[:, [0, 2]].ravel()
    envelope = pieces.take(pa.array(keep))
    eo = np.frombuffer(envelope.buffers()[1], dtype=np.int64)[: 2 * n + 1]
    env_buf = envelope.buffers()[2].slice(int(eo[0]), int(eo[-1] - eo[0]))
    longest = int((ends - starts).max())
    env = None
    for ts_type in (_STR, pa.int64()):
        try:
            env = _parse_lines(env_buf, pa.schema([*_envelope_schema(ts_type), _PLACEHOLDER]),
                               longest, threads)
            break
        except pa.ArrowInvalid as exc:
            if "created_at" not in str(exc):
                raise _FastPathFailed(str(exc)) from exc
    del envelope, env_buf, pieces
    if env is None or env.num_rows != n:
        raise _FastPathFailed("row count or created_at types differ")
    if env.column("payload").null_count:
        raise _FastPathFailed("a row's payload is not at the top level")
    payload = _slices(buf, value, pend)
    typed = _parse_payloads(payload, threads=threads)
    if typed is None:
        raise _FastPathFailed("payload spans did not parse")
    created = env.column("created_at").combine_chunks()
    return _Part(
        env=env.drop_columns(["created_at", "payload"]),
        created_at=created,
        payload=payload,
        typed=typed,
        line=lineno,
        raw=None,
    )


def _parse_payloads(payload: pa.Array, *, threads: bool = True) -> pa.Table | None:
    """Typed fields of many payload objects (one line each), or None when Arrow cannot
    parse them or a value holds other than exactly one JSON object."""
    n = len(payload)
    if n == 0:
        return _TYPED.empty_table()
    typ = payload.type
    lines = pc.binary_join_element_wise(payload, pa.scalar("\n", typ), pa.scalar("", typ))
    offs = np.frombuffer(lines.buffers()[1],
                         dtype=np.int64 if pa.types.is_large_string(typ) else np.int32)
    offs = offs[lines.offset:][: n + 1]
    data = lines.buffers()[2].slice(int(offs[0]), int(offs[-1] - offs[0]))
    longest = int(np.diff(offs).max())
    try:
        table = _parse_lines(data, _TYPED, longest, threads)
    except pa.ArrowInvalid:
        return None
    if table.num_rows != n:
        return None
    return table


# ----------------------------------------------------------------------------- robust path
def _bad(
    quarantine: Quarantine,
    source: str,
    line: int,
    reason: str,
    detail: str,
    raw: bytes | str | None,
    field_name: str | None = None,
    fix: str | None = None,
    owner: tuple[Any, Any] = (None, None),
) -> None:
    tenant, run = owner
    if tenant_id_problem(tenant) is not None:  # a row whose tenant cannot be read: no owner
        tenant, run = None, None
    quarantine.bad(
        LoadError(source=source, line=line, reason=reason, detail=detail, field=field_name,
                  fix=fix),
        raw, tenant_id=tenant, run_id=run if isinstance(run, str) and run else None,
    )


def _scope_quarantine(quarantine: Quarantine, tenants: frozenset[str] | None) -> dict[str, int]:
    """With a tenant filter, drop quarantined rows that are not the requested tenants' (their
    tenant is another one, or could not be read): source -> how many were dropped."""
    if tenants is None:
        return {}
    dropped: dict[str, int] = {}
    kept = []
    for rec in quarantine.rows:
        if rec.get("tenant_id") in tenants:
            kept.append(rec)
        else:
            dropped[rec["source"]] = dropped.get(rec["source"], 0) + 1
    quarantine.rows[:] = kept
    return dropped


def _robust_block(
    block: bytes | bytearray,
    starts: np.ndarray,
    ends: np.ndarray,
    lineno: np.ndarray,
    source: str,
    quarantine: Quarantine,
    tenants: frozenset[str] | None,
    counts: _Counts,
) -> _Part:
    """Decode every line on its own; report bad ones; load the good ones."""
    view = memoryview(block)
    good_lines: list[bytes] = []
    good_no: list[int] = []
    objs: list[dict[str, Any]] = []
    for lo, hi, no in zip(starts.tolist(), ends.tolist(), lineno.tolist(), strict=True):
        raw = bytes(view[lo:hi])
        if not raw.strip():
            continue  # whitespace-only line: blank, not a row
        try:
            obj = loads(raw)
        except UnicodeDecodeError:
            _bad(quarantine, source, no, "bad_utf8", "line is not valid UTF-8", raw,
                 fix="Re-export the file as UTF-8, or pass errors=\"quarantine\".")
            continue
        except JSONDecodeError as exc:
            if _is_utf8_error(raw):
                _bad(quarantine, source, no, "bad_utf8", "line is not valid UTF-8", raw,
                     fix="Re-export the file as UTF-8, or pass errors=\"quarantine\".")
            else:
                _bad(quarantine, source, no, "bad_json",
                     f"line is not valid JSON ({exc}); truncated or corrupted row", raw)
            continue
        if not isinstance(obj, dict):
            _bad(quarantine, source, no, "not_object",
                 f"line is a JSON {type(obj).__name__}, expected an object", raw)
            continue
        t = obj.get("tenant_id")
        if tenants is not None and tenant_id_problem(t) is None and t not in tenants:
            counts.filtered_out += 1  # another tenant's row: skipped, never reported
            continue
        problem = _row_problem(obj)
        if problem is not None:
            reason, fld, detail = problem
            _bad(quarantine, source, no, reason, detail, raw, fld,
                 _FIX_TENANT if reason in ("missing_tenant", "bad_tenant") else None,
                 owner=(t, obj.get("chat_id")))
            continue
        good_lines.append(raw)
        good_no.append(no)
        objs.append(obj)
    lines_no = np.asarray(good_no, dtype=np.int64)
    if not good_lines:
        return _empty_part()
    # the good lines again through the fast path, for the source text of each payload
    joined = b"\n".join(good_lines) + b"\n"
    jb = np.frombuffer(joined, dtype=np.uint8)
    nl = np.flatnonzero(jb == 10)
    st = np.empty(len(nl), dtype=np.int64)
    st[0] = 0
    st[1:] = nl[:-1] + 1
    try:
        return _fast_block(joined, jb, st, nl, lines_no, threads=True, strict_checked=True)
    except _FastPathFailed:
        return _part_from_objects(objs, lines_no, good_lines)


def _is_utf8_error(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _row_problem(obj: dict[str, Any]) -> tuple[str, str, str] | None:
    """(reason, field, detail) for the first problem of a decoded row, or None."""
    t = obj.get("tenant_id")
    if not isinstance(t, str) or not t:
        return ("missing_tenant", "tenant_id", f"must be a non-empty string, got {t!r}")
    bad_t = tenant_id_problem(t)
    if bad_t is not None:
        return ("bad_tenant", "tenant_id", f"tenant id {t!r} {bad_t}")
    c = obj.get("chat_id")
    if not isinstance(c, str) or not c:
        return ("missing_field", "chat_id", f"must be a non-empty string, got {c!r}")
    s = obj.get("sequence_number", None)
    if type(s) is not int or s < 0 or s >= 2**63:
        return ("bad_seq", "sequence_number", f"must be an integer >= 0, got {s!r}")
    e = obj.get("event_type")
    if not isinstance(e, str) or not e:
        return ("unknown_event", "event_type",
                f"must be a non-empty string (the event type), got {e!r}")
    if not isinstance(obj.get("payload"), dict):
        p = obj.get("payload")
        return ("bad_payload", "payload", f"must be a JSON object, got {type(p).__name__}")
    ts = obj.get("created_at")
    if ts is not None and not (isinstance(ts, str) or type(ts) is int):
        return ("bad_timestamp", "created_at",
                f"must be ISO-8601 text or epoch milliseconds, got {ts!r}")
    for h in ("prev_hash", "row_hash"):
        v = obj.get(h)
        if v is not None and not isinstance(v, str):
            return ("bad_type", h, f"must be a string or null, got {v!r}")
    return None


def _coerce(value: Any, typ: pa.DataType) -> Any:
    if value is None:
        return None
    if pa.types.is_struct(typ):
        if not isinstance(value, dict):
            return None
        return {f.name: _coerce(value.get(f.name), f.type) for f in typ}
    if pa.types.is_integer(typ):
        return value if type(value) is int and -(2**63) <= value < 2**63 else None
    if pa.types.is_boolean(typ):
        return value if isinstance(value, bool) else None
    return value if isinstance(value, str) else None


def _typed_from_objects(payloads: list[dict[str, Any]]) -> pa.Table:
    cols = {
        f.name: pa.array([_coerce(p.get(f.name), f.type) for p in payloads], type=f.type)
        for f in _TYPED
    }
    return pa.table(cols, schema=_TYPED)


_JSON_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _skip_ws(text: str, i: int) -> int:
    m = _JSON_WS.match(text, i)
    return i if m is None else m.end()


def _member_text(text: str, key: str) -> str | None:
    """The exact source text of the value of top-level member ``key`` of a JSON object.

    ``text`` must be a valid JSON object (the caller decoded it already). The members are
    walked with the standard library's scanner, so the value's text is cut out exactly as
    the source spells it (whitespace, key order, number spelling kept); the last member
    wins when the key repeats, as in the decoded object. None when there is no such member.
    """
    i = _skip_ws(text, 0)
    if text[i : i + 1] != "{":
        return None
    i = _skip_ws(text, i + 1)
    found = None
    if text[i : i + 1] == "}":
        return None
    while text[i : i + 1] == '"':
        k, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        i = _skip_ws(text, i)
        if text[i : i + 1] != ":":
            return None
        i = _skip_ws(text, i + 1)
        _, end = _DECODER.raw_decode(text, i)
        if k == key:
            found = text[i:end]
        i = _skip_ws(text, end)
        if text[i : i + 1] == "}":
            return found
        if text[i : i + 1] != ",":
            return None
        i = _skip_ws(text, i + 1)
    return None


def _part_from_objects(objs: list[dict[str, Any]], line: np.ndarray,
                       raw_lines: list[bytes]) -> _Part:
    """A part built from decoded rows (when no column-wise parse can read the block).

    ``payload`` is still the payload's source text, exactly as in the line (the hashed form
    does not depend on which path read the block; docs/integrity.md).
    """
    env = pa.table(
        {name: pa.array([o.get(name) for o in objs], type=typ) for name, typ in _ENVELOPE_FIELDS}
    )
    ts = [o.get("created_at") for o in objs]
    created = pa.array([None if v is None else str(v) for v in ts], type=_STR)
    texts = [_member_text(raw.decode("utf-8"), "payload") for raw in raw_lines]
    payload = pa.array(
        [canonical_json(o["payload"]) if t is None else t for o, t in zip(objs, texts,
                                                                          strict=True)],
        type=pa.large_string(),
    )
    typed = _typed_from_objects([o["payload"] for o in objs])
    return _Part(env=env, created_at=created, payload=payload, typed=typed, line=line)


def _empty_part() -> _Part:
    env = pa.schema(_ENVELOPE_FIELDS).empty_table()
    return _Part(
        env=env,
        created_at=pa.array([], type=_STR),
        payload=pa.array([], type=pa.large_string()),
        typed=_TYPED.empty_table(),
        line=np.zeros(0, dtype=np.int64),
    )


# ----------------------------------------------------------------------------- row checks
def _check_rows(
    part: _Part,
    source: str,
    quarantine: Quarantine,
    tenants: frozenset[str] | None,
    counts: _Counts,
) -> _Part | None:
    """Apply the tenant filter and the column-wise row checks; report bad rows."""
    env = part.env
    n = env.num_rows
    if n == 0:
        return None
    tenant = env.column("tenant_id").combine_chunks()
    keep = np.ones(n, dtype=bool)
    bad_t = bad_tenant_mask(tenant)  # the one tenant-id rule, column-wise
    if tenants is not None:
        other = ~bad_t & np.asarray(
            pc.fill_null(pc.invert(pc.is_in(tenant, pa.array(sorted(tenants)))), False))
        counts.filtered_out += int(other.sum())
        keep &= ~other
    problems: list[tuple[np.ndarray, str, str, str]] = []

    def empty_or_null(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
        return np.asarray(pc.fill_null(pc.equal(pc.utf8_length(col), 0), True))

    missing_t = empty_or_null(tenant)
    problems.append((missing_t, "missing_tenant", "tenant_id", "must be a non-empty string"))
    problems.append(
        (bad_t & ~missing_t, "bad_tenant", "tenant_id",
         "breaks the tenant-id rule (at most 256 characters, no control characters)")
    )
    problems.append(
        (empty_or_null(env.column("chat_id")), "missing_field", "chat_id",
         "must be a non-empty string")
    )
    seq = env.column("sequence_number")
    problems.append(
        (np.asarray(pc.fill_null(pc.less(seq, 0), True)), "bad_seq", "sequence_number",
         "must be an integer >= 0")
    )
    problems.append(
        (empty_or_null(env.column("event_type")), "unknown_event", "event_type",
         "must be a non-empty string (the event type)")
    )
    ts, bad_ts = _parse_created(part.created_at)
    problems.append(
        (bad_ts, "bad_timestamp", "created_at",
         "must be ISO-8601 text with a zone (e.g. 2026-01-01T00:00:00Z) or epoch milliseconds")
    )
    bad_any = np.zeros(n, dtype=bool)
    first_reason: list[tuple[int, str, str, str]] = []
    for mask, reason, fld, detail in problems:
        m = mask & keep & ~bad_any
        for i in np.flatnonzero(m).tolist():
            first_reason.append((i, reason, fld, detail))
        bad_any |= m
    for i, reason, fld, detail in sorted(first_reason):
        value = _value_at(env, part.created_at, fld, i)
        _bad(quarantine, source, int(part.line[i]), reason, f"{detail}, got {value!r}",
             _raw_row(part, i), fld,
             _FIX_TENANT if reason in ("missing_tenant", "bad_tenant") else None,
             owner=(tenant[i].as_py(), env.column("chat_id")[i].as_py()))
    keep &= ~bad_any
    extra = (part.args, part.hashes, part.text)
    if keep.all():
        return _Part(env, ts, part.payload, part.typed, part.line, None, *extra)
    idx = pa.array(np.flatnonzero(keep))
    return _Part(
        env.take(idx), ts.take(idx), part.payload.take(idx), part.typed.take(idx),
        part.line[keep], None, *(None if a is None else a.take(idx) for a in extra),
    )


def _value_at(env: pa.Table, created: pa.Array, fld: str, i: int) -> Any:
    if fld == "created_at":
        return created[i].as_py()
    return env.column(fld)[i].as_py()


def _raw_row(part: _Part, i: int) -> str:
    row = {name: part.env.column(name)[i].as_py() for name in part.env.column_names}
    ts = part.created_at[i].as_py()
    row["created_at"] = ts if not hasattr(ts, "isoformat") else ts.isoformat()
    return canonical_json(row)[:-1] + ',"payload":' + part.payload[i].as_py() + "}"


_EPOCH_MS = re.compile(r"^-?[0-9]+$")


def _parse_created(values: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """created_at -> timestamp[us, UTC]; also a mask of values that could not be parsed."""
    target = pa.timestamp("us", tz="UTC")
    n = len(values)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_timestamp(values.type):
        if values.type.tz is None:
            values = pc.assume_timezone(values, "UTC")
        return values.cast(target), np.zeros(n, dtype=bool)
    if pa.types.is_integer(values.type):
        out_of_range = pc.or_(pc.less(values, EPOCH_MS_MIN), pc.greater(values, EPOCH_MS_MAX))
        bad = np.asarray(pc.fill_null(out_of_range, False))
        if bad.any():  # beyond years 1..9999: bad_timestamp, never an overflowed time
            values = pc.if_else(pa.array(bad), pa.scalar(None, values.type), values)
        us = pc.multiply_checked(values.cast(pa.int64()), 1000)
        return us.cast(target), bad
    values = values.cast(_STR)
    try:
        return values.cast(target), np.zeros(n, dtype=bool)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    # mixed: epoch-ms digit strings, ISO text with a zone, ISO text without one (UTC)
    out: list[Any] = [None] * n
    bad = np.zeros(n, dtype=bool)
    import datetime as _dt

    for i, v in enumerate(values.to_pylist()):  # only for files mixing representations
        if v is None:
            continue
        try:
            if _EPOCH_MS.match(v):
                ms = int(v)
                if not EPOCH_MS_MIN <= ms <= EPOCH_MS_MAX:
                    raise ValueError("epoch milliseconds beyond years 1..9999")
                out[i] = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(
                    milliseconds=ms)
            else:
                d = _dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
                out[i] = d if d.tzinfo else d.replace(tzinfo=_dt.UTC)
        except (ValueError, OverflowError, OSError):
            bad[i] = True
    return pa.array(out, type=target), bad


# ----------------------------------------------------------------------------- Parquet
def _read_parquet_file(
    path: Path,
    source: str,
    quarantine: Quarantine,
    tenants: frozenset[str] | None,
    counts: _Counts,
) -> list[_Part]:
    """A Parquet file's parts; a file that cannot be read as an export is rejected whole.

    A rejected file (not Parquet, damaged, or the wrong columns/types) is one bad row: it
    raises :class:`LoadError` under ``errors="raise"``; under quarantine it is one quarantine
    row (``line`` null) and counts as one input row, and loading goes on.
    """
    before = len(quarantine.rows)
    try:
        return list(_read_parquet(path, source, quarantine, tenants, counts))
    except LoadError as exc:
        if exc.line is not None:  # a row error under errors="raise"
            raise
        err = exc
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        err = LoadError(
            source=source, line=None, reason="bad_parquet",
            detail=f"is not a readable Parquet file ({exc})",
            fix="Re-export the file, or remove it from the input (errors=\"quarantine\" skips it).",
        )
    del quarantine.rows[before:]
    counts.input_rows, counts.filtered_out = 1, 0
    quarantine.bad(err)
    return []


def _read_parquet(
    path: Path,
    source: str,
    quarantine: Quarantine,
    tenants: frozenset[str] | None,
    counts: _Counts,
) -> Iterator[_Part]:
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    names = set(pf.schema_arrow.names)
    missing = [c for c in _REQUIRED_COLUMNS if c not in names]
    if missing:
        counts.input_rows += pf.metadata.num_rows
        raise LoadError(
            source=source, line=None, reason="bad_schema",
            detail=f"Parquet file lacks harness_event_log columns {missing}",
            fix="Export tenant_id, chat_id, sequence_number, event_type and payload.",
        )
    first = 1
    for batch in pf.iter_batches(batch_size=500_000):
        batch.validate(full=True)  # e.g. text that is not UTF-8 (Parquet readers do not check)
        t = pa.Table.from_batches([batch])
        n = t.num_rows
        counts.input_rows += n
        line = first + np.arange(n, dtype=np.int64)
        first += n
        part = _part_from_arrow(t, line, source, quarantine, tenants, counts)
        if part is not None:
            yield part


def _part_from_arrow(
    t: pa.Table,
    line: np.ndarray,
    source: str,
    quarantine: Quarantine,
    tenants: frozenset[str] | None,
    counts: _Counts,
) -> _Part | None:
    """One checked, slimmed part from an Arrow table of harness_event_log columns.

    Shared by the Parquet reader and :func:`events_from_arrow` (``replaykit.read_sql``).
    """
    n = t.num_rows
    env_cols = {}
    for name, typ in _ENVELOPE_FIELDS:
        if name in t.column_names:
            col = t.column(name)
            try:
                env_cols[name] = col.cast(typ)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise LoadError(
                    source=source, line=None, reason="bad_type", field=name,
                    detail=f"column has type {col.type}, expected {typ}",
                ) from exc
        else:
            env_cols[name] = pa.nulls(n, typ)
    env = pa.table(env_cols)
    created = (
        t.column("created_at").combine_chunks()
        if "created_at" in t.column_names
        else pa.nulls(n, _STR)
    )
    pcol = t.column("payload").combine_chunks()
    for name, col_type, ok in (
        ("payload", pcol.type, _payload_type_ok), ("created_at", created.type, _created_type_ok),
    ):
        if not ok(col_type):
            raise LoadError(
                source=source, line=None, reason="bad_type", field=name,
                detail=f"column has type {col_type}, which replaykit cannot read",
                fix="payload: JSON text (or a struct/map); created_at: ISO-8601 text, epoch "
                    "milliseconds or a timestamp.",
            )
    if pa.types.is_struct(pcol.type) or pa.types.is_map(pcol.type):
        payload = pa.array(
            [None if v is None else canonical_json(_map_to_dict(v)) for v in
             pcol.to_pylist()],
            type=pa.large_string(),
        )
    else:
        payload = pcol.cast(pa.large_string())
    part = _parquet_payloads(env, created, payload, line, source, quarantine)
    checked = _check_rows(part, source, quarantine, tenants, counts)
    return None if checked is None else _slim(checked)


def events_from_arrow(
    table: pa.Table | pa.RecordBatchReader,
    *,
    source: str,
    tenant_id: str | Sequence[str] | None = None,
    errors: ErrorPolicy = "raise",
) -> EventLog:
    """Convert in-memory ``harness_event_log`` rows (Arrow) into an EventLog, as read_pleach does.

    ``table`` has the export columns ``tenant_id``, ``chat_id``, ``sequence_number``,
    ``event_type``, ``payload`` (JSON object text) and optionally ``created_at`` (ISO-8601
    text, epoch milliseconds or a timestamp), ``prev_hash``, ``row_hash``; a record batch
    reader is read batch by batch. The mapping to the canonical columns is exactly that of
    :func:`read_pleach` (same code); ``source`` is stored in every row's ``source`` and
    ``source_line`` is the 1-based row number in ``table``. ``tenant_id`` filters as in
    read_pleach. Used by :func:`replaykit.read_sql` for plain ``harness_event_log`` tables.

    Raises:
        LoadError: a bad row under ``errors="raise"`` (reasons as in read_pleach; the
            "line" is the row number).
        LoadError: ``reason="bad_tenant"``: a bad ``tenant_id`` filter. ValueError: a bad
            ``errors``.

    Example:
        >>> import pyarrow as pa
        >>> t = pa.table({"tenant_id": ["acme"], "chat_id": ["c1"], "sequence_number": [0],
        ...               "event_type": ["tool.called"],
        ...               "payload": ['{"call_id":"k1","tool":"search","args":{"q":"x"}}']})
        >>> log = events_from_arrow(t, source="pleach:memory")
        >>> log.table.column("tool_name").to_pylist(), str(log.table.column("kind")[0])
        (['search'], 'tool_call')
    """
    policy = check_errors_arg(errors)
    tenants = _tenant_filter(tenant_id)
    missing = [c for c in _REQUIRED_COLUMNS if c not in table.schema.names]
    if missing:
        raise LoadError(
            source=source, line=None, reason="bad_schema",
            detail=f"rows lack harness_event_log columns {missing}",
            fix="Provide tenant_id, chat_id, sequence_number, event_type and payload.",
        )
    quarantine = Quarantine(policy)
    counts = _Counts()
    if isinstance(table, pa.Table):
        # few large batches: the per-batch steps (payload parse, checks) have fixed costs
        batches = table.combine_chunks().to_batches(max_chunksize=1 << 20)
    else:
        batches = table
    parts: list[tuple[str, _Part]] = []
    first = 1
    for batch in batches:
        n = batch.num_rows
        if not n:
            continue
        counts.input_rows += n
        line = first + np.arange(n, dtype=np.int64)
        first += n
        part = _part_from_arrow(
            pa.Table.from_batches([batch]), line, source, quarantine, tenants, counts
        )
        if part is not None:
            parts.append((source, part))
    out, _ = _finish(parts, quarantine)
    _scope_quarantine(quarantine, tenants)
    return EventLog(out, runs=_runs_table(out), quarantine=quarantine.table())


def _payload_type_ok(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_struct(t)
            or pa.types.is_map(t) or pa.types.is_null(t))  # fmt: skip


def _created_type_ok(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t)
            or pa.types.is_timestamp(t) or pa.types.is_null(t))  # fmt: skip


def _map_to_dict(v: Any) -> Any:
    if isinstance(v, list) and all(isinstance(x, tuple) and len(x) == 2 for x in v):
        return dict(v)
    return v


def _parquet_payloads(
    env: pa.Table, created: pa.Array, payload: pa.Array, line: np.ndarray, source: str,
    quarantine: Quarantine,
) -> _Part:
    """Typed fields of Parquet payload text; rows whose payload is not an object are bad."""
    n = len(payload)
    ok = np.asarray(pc.fill_null(pc.starts_with(pc.utf8_ltrim_whitespace(payload), "{"), False))
    one_line = pc.replace_substring(payload, "\n", " ")
    typed = _parse_payloads(pc.if_else(pa.array(ok), one_line, "{}")) if ok.all() else None
    if typed is not None:
        return _Part(env, created, payload, typed, line)
    # row by row: find the payloads that are not JSON objects
    objs: list[dict[str, Any]] = []
    keep = np.zeros(n, dtype=bool)
    for i, text in enumerate(payload.to_pylist()):
        try:
            obj = loads(text) if text is not None else None
        except JSONDecodeError:
            obj = None
        if not isinstance(obj, dict):
            _bad(quarantine, source, int(line[i]), "bad_payload", "payload",
                 f"must be the JSON text of an object, got {str(text)[:60]!r}",
                 text, owner=(env.column("tenant_id")[i].as_py(), env.column("chat_id")[i].as_py()))
            continue
        keep[i] = True
        objs.append(obj)
    idx = pa.array(np.flatnonzero(keep))
    return _Part(
        env.take(idx), created.take(idx), payload.take(idx), _typed_from_objects(objs),
        line[keep],
    )


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
    n = env.num_rows
    prev_hash, row_hash = env.column("prev_hash"), env.column("row_hash")
    env = env.drop_columns(["prev_hash", "row_hash"])
    tenant = env.column("tenant_id").dictionary_encode().combine_chunks()
    chat = env.column("chat_id").dictionary_encode().combine_chunks()
    seq = env.column("sequence_number").to_numpy()

    # One stable sort by (tenant_id, chat_id, sequence_number) finds the duplicates (equal
    # neighbours; the first in file order comes first) and gives the final row order.
    order, same = _key_order(tenant, chat, seq)
    dup_by_source: dict[str, int] = {}
    big_idx = order  # row order for the big columns, in the rows of the parts
    if same.any():
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
    # The big columns are copied into sorted order on two threads (Arrow's concatenation
    # releases the GIL), starting now; the small columns are built here meanwhile.
    big_columns = {"payload": payload, "text": text, "prev_hash": prev_hash,
                   "row_hash": row_hash}
    del payload, text, prev_hash, row_hash
    identity = bool(len(order)) and np.array_equal(big_idx, np.arange(n))
    big_order = None if identity else big_idx

    def copy_big(name: str) -> pa.Array | pa.ChunkedArray:
        typ = EVENTS_SCHEMA.field(name).type
        big = big_columns.pop(name)  # the source is freed once copied
        big = big if big_order is None else _take_runs(big, big_order)
        _release()
        return big if big.type == typ else big.cast(typ)

    with ThreadPoolExecutor(2) as pool:
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


_TEXT_FIELDS = ("text", "result", "message", "reason")


def _slim(part: _Part) -> _Part:
    """Compute a block's tool arguments, ``text`` and canonical columns now.

    The typed payload fields are replaced by the block's canonical columns (all but
    ``type`` and ``kind``, which need the whole file's dictionary), so the large typed text
    columns never exist for the whole file at once and _finish only joins and sorts.
    """
    args, hashes = _tool_args(part, {})
    typed = part.typed
    text = pc.coalesce(args, *(typed.column(c) for c in _TEXT_FIELDS))
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    # the canonical columns are row-wise: built here, on the reading threads, per block
    # (rows without an event_type are quarantined later by _check_rows)
    env = part.env
    i = env.schema.get_field_index("event_type")
    env = env.set_column(i, env.schema.field(i), pc.fill_null(env.column(i), ""))
    cols = _canonical_columns(env, typed, hashes)
    part.typed = pa.table({k: v for k, v in cols.items() if k not in ("type", "kind")})
    part.args, part.hashes, part.text = args, hashes, text.cast(pa.large_string())
    return part


def _tool_args(part: _Part, cache: dict[str, str]) -> tuple[pa.Array, pa.Array]:
    """Canonical JSON text and hash of each tool.called row's ``args`` (null elsewhere).

    Per tool call (the only per-row step: the arguments are re-serialised canonically);
    each distinct canonical text is hashed once.
    """
    n = part.env.num_rows
    etype = part.env.column("event_type")
    called = np.flatnonzero(np.asarray(pc.fill_null(pc.equal(etype, "tool.called"), False)))
    args_text: list[str | None] = [None] * len(called)
    hashes: list[str | None] = [None] * len(called)
    payloads = part.payload.take(pa.array(called))
    # one column-wise scan for runs of 19+ digits (integers that may not fit 64 bits): only
    # those payloads take the lossless slow decode, the rest skip the per-call check
    long_ints = np.asarray(pc.fill_null(pc.match_substring_regex(payloads, r"[0-9]{19}"),
                                        False)).tolist()
    for j, ptxt in enumerate(payloads.to_pylist()):
        args = loads(ptxt, long_ints=long_ints[j]).get("args")
        if args is None:
            continue
        a = args_text[j] = canonical_json(args)
        h = cache.get(a)
        if h is None:
            # args_hash(args): a string argument is hashed by the JSON value it holds
            h = cache[a] = (
                args_hash(args) if isinstance(args, str)
                else hashlib.sha256(a.encode("utf-8")).hexdigest()[:32]
            )
        hashes[j] = h
    scatter = np.full(n, -1, dtype=np.int64)
    scatter[called] = np.arange(len(called))
    where = pa.array(scatter, mask=scatter < 0)
    return (
        pa.array(args_text, type=_STR).take(where),
        pa.array(hashes, type=_STR).take(where),
    )


_MIN_COLUMNS = ("tenant_id", "run_id", "seq", "type", "kind", "payload", "source")


def _type_and_kind(event_type: pa.ChunkedArray | pa.Array) -> dict[str, pa.Array]:
    """``type`` (dictionary-encoded event_type) and ``kind`` (EVENT_KINDS, else "other")."""
    etype = event_type.dictionary_encode()
    if isinstance(etype, pa.ChunkedArray):
        etype = etype.combine_chunks()
    kinds = [EVENT_KINDS.get(t, "other") for t in etype.dictionary.to_pylist()]
    kind_values = sorted(set(kinds))
    kind_code = np.array([kind_values.index(k) for k in kinds], dtype=np.int32)
    t_idx = etype.indices.to_numpy(zero_copy_only=False)
    kind = pa.DictionaryArray.from_arrays(
        pa.array(kind_code[t_idx] if len(kind_code) else np.zeros(0, np.int32)),
        pa.array(kind_values, type=_STR),
    )
    return {"type": etype, "kind": kind}


def _canonical_columns(
    env: pa.Table, typed: pa.Table, hash_col: pa.ChunkedArray | pa.Array
) -> dict[str, Any]:
    """kind, ref_id, event_id, tool_name, args_hash, cache_key, is_error, finish, tokens."""
    tk = _type_and_kind(env.column("event_type"))
    etype, kind = tk["type"], tk["kind"]
    type_names = etype.dictionary.to_pylist()
    t_idx = etype.indices.to_numpy(zero_copy_only=False)

    def is_type(*names: str) -> pa.Array:
        codes = [i for i, t in enumerate(type_names) if t in names]
        return pa.array(np.isin(t_idx, codes))

    def col(name: str) -> pa.ChunkedArray:
        return typed.column(name)

    def pick(mask: pa.Array, values: pa.Array) -> pa.Array:
        return pc.if_else(mask, values, pa.nulls(len(values), values.type))

    null_s = pa.nulls(len(etype), _STR)
    calls = is_type("model.requested", "model.completed", "tool.called", "tool.completed")
    ref = pc.if_else(calls, col("call_id"), null_s)
    ref = pc.if_else(is_type("interrupt.raised", "interrupt.resolved"), col("interrupt_id"), ref)
    ref = pc.if_else(is_type("subagent.spawned", "subagent.completed"), col("subagent_id"), ref)
    ref = pc.if_else(is_type("turn.started", "turn.completed"), col("message_id"), ref)
    event_id = pick(is_type("message.user"), col("message_id"))
    event_id = pc.if_else(is_type("checkpoint.created"), col("checkpoint_id"), event_id)
    event_id = pc.if_else(is_type("export.created"), col("export_id"), event_id)
    event_id = pc.if_else(is_type("user_card.shown"), col("card_id"), event_id)
    tools = is_type("tool.called", "tool.completed")
    tool_name = pick(tools, col("tool"))
    model_done = is_type("model.completed")
    finish = pick(model_done, col("finish"))
    usage = typed.column("usage")
    in_tok = pick(model_done, pc.struct_field(usage, "input_tokens"))
    out_tok = pick(model_done, pc.struct_field(usage, "output_tokens"))
    is_error = pc.fill_null(pc.and_(is_type("tool.completed"), col("is_error")), False)
    is_error = pc.or_(is_error, is_type("error.raised"))
    is_error = pc.or_(is_error, pc.fill_null(pc.equal(finish, "error"), False))
    turn = pick(is_type("turn.started", "turn.completed"), col("turn"))
    wide = pc.fill_null(pc.or_(pc.less(turn, -(2**31)), pc.greater(turn, 2**31 - 1)), False)
    if pc.any(wide).as_py():  # a turn beyond the int32 column is read as null, like a bad type
        turn = pc.if_else(wide, pa.scalar(None, turn.type), turn)
    return {
        "type": etype,
        "kind": kind,
        "turn": turn,
        "event_id": event_id,
        "ref_id": ref,
        "tool_name": tool_name,
        "args_hash": hash_col,
        "cache_key": col("cacheKey"),
        "is_error": is_error,
        "finish": finish,
        "input_tokens": in_tok,
        "output_tokens": out_tok,
        "_child": pick(is_type("subagent.spawned"), col("child_chat_id")),
    }


#: The canonical columns read_pleach derives from ``type`` + ``payload`` (and the run):
#: what :func:`derive_columns` re-derives and ``verify_chain`` compares.
DERIVED_COLUMNS: tuple[str, ...] = (
    "parent_run_id", "kind", "turn", "step", "event_id", "ref_id", "tool_name", "args_hash",
    "cache_key", "is_error", "finish", "input_tokens", "output_tokens", "chunk_type", "text",
    "inherited",
)


def _typed_payloads(payload: pa.Array) -> pa.Table:
    """The typed payload fields of payload texts, read exactly as the loader reads them.

    One Arrow parse when every text is a JSON object Arrow can read with the typed schema;
    otherwise the texts are decoded one by one (:func:`_typed_from_objects`: a field of
    another JSON type is null, as Arrow's typed parse would have refused it). A text that
    is not a JSON object (possible only in a tampered table) reads as ``{}``.
    """
    if _all_open_objects(payload) or pc.all(pc.fill_null(
            pc.starts_with(pc.utf8_ltrim_whitespace(payload), "{"), False)).as_py() is not False:
        if pc.any(pc.match_substring(payload, "\n")).as_py():
            payload = pc.replace_substring(payload, "\n", " ")  # whitespace: one line each
        typed = _parse_payloads(payload, threads=True)
        if typed is not None:
            return typed
    objs: list[dict[str, Any]] = []
    for text in payload.to_pylist():  # only for tables Arrow cannot read column-wise
        try:
            obj = loads(text) if text is not None else None
        except JSONDecodeError:
            obj = None
        objs.append(obj if isinstance(obj, dict) else {})
    return _typed_from_objects(objs)


def _all_open_objects(payload: pa.Array) -> bool:
    """True when every value of a large_string array is non-null and starts with ``{``
    (one gather over the offsets; False does not mean some value is not an object)."""
    n = len(payload)
    if payload.null_count or not n:
        return False
    offs = np.frombuffer(payload.buffers()[1], dtype=np.int64)[payload.offset:][: n + 1]
    if not (offs[1:] > offs[:-1]).all():
        return False
    data = np.frombuffer(payload.buffers()[2], dtype=np.uint8)
    return bool((data[offs[:-1]] == ord("{")).all())


def derive_columns(table: pa.Table, *, typed: pa.Table | None = None
                   ) -> dict[str, pa.Array]:
    """The :data:`DERIVED_COLUMNS` that read_pleach would give the rows of ``table``.

    ``table`` is a canonical events table (or any table with ``tenant_id``, ``run_id``,
    ``type`` and ``payload``) sorted by (tenant_id, run_id, seq). The derivation is the
    loader's own code (:func:`_slim`, :func:`_canonical_columns`, :func:`_fill_derived`),
    column-wise, so a verifier can check stored derived columns against the hashed
    content (``replaykit.verify_chain``). ``turn`` is carried forward within each run and
    ``parent_run_id`` comes from ``subagent.spawned`` rows of the same tenant in ``table``.
    ``typed`` is ``_typed_payloads`` of the table's payloads when the caller has it already
    (e.g. parsed on another thread). Values have the canonical types, except that columns
    the schema dictionary-encodes other than ``kind`` and ``parent_run_id`` are plain
    strings (compare values, not encodings).

    >>> log = read_pleach("data/pleach/harness_event_log.jsonl")  # doctest: +SKIP
    >>> stored = log.table.column("tool_name").cast(pa.string())  # doctest: +SKIP
    >>> derive_columns(log.table)["tool_name"].equals(stored.combine_chunks())  # doctest: +SKIP
    True
    """
    n = table.num_rows

    def plain(name: str) -> pa.Array:
        col = table.column(name)
        arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        return arr.cast(arr.type.value_type) if pa.types.is_dictionary(arr.type) else arr

    etype = pc.fill_null(plain("type").cast(_STR), "")
    payload = plain("payload").cast(pa.large_string())
    env = pa.table({"event_type": etype})
    if typed is None:
        typed = _typed_payloads(payload)
    part = _slim(_Part(env=env, created_at=pa.nulls(n, _STR), payload=payload,
                       typed=typed, line=np.zeros(n, dtype=np.int64)))
    cols = {**_type_and_kind(etype), **{c: part.typed.column(c) for c in part.typed.column_names}}
    cols["text"] = part.text
    child = cols.pop("_child")

    def keys(name: str) -> pa.Array:
        col = table.column(name)
        arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        arr = arr if pa.types.is_dictionary(arr.type) else pc.cast(arr, _STR).dictionary_encode()
        return arr.cast(EVENTS_SCHEMA.field(name).type)

    runs = pa.Table.from_arrays(
        [keys("tenant_id"), keys("run_id"), pc.cast(cols.pop("turn"), pa.int32()),
         pa.nulls(n, EVENTS_SCHEMA.field("parent_run_id").type)],
        schema=pa.schema([EVENTS_SCHEMA.field(c) for c in ("tenant_id", "run_id", "turn",
                                                            "parent_run_id")]),
    )
    runs = _fill_derived(runs, child)  # turn carried forward, parent_run_id from spawns
    out: dict[str, pa.Array] = {}
    for name in DERIVED_COLUMNS:
        typ = EVENTS_SCHEMA.field(name).type
        if name in ("turn", "parent_run_id"):
            arr = runs.column(name).combine_chunks()
        elif name == "kind":
            arr = cols["kind"]
        elif name in cols:
            arr = cols[name]
            arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
            value_type = typ.value_type if pa.types.is_dictionary(typ) else typ
            arr = arr if arr.type == value_type else arr.cast(value_type)
        elif name == "inherited":
            arr = pa.array(np.zeros(n, dtype=bool))
        else:  # step, chunk_type: pleach has neither
            arr = pa.nulls(n, typ.value_type if pa.types.is_dictionary(typ) else typ)
        out[name] = arr
    return out


def _segments(table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """Start index and length of each (tenant_id, run_id) run in a sorted events table."""
    n = table.num_rows
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    t = table.column("tenant_id").combine_chunks().indices.to_numpy(zero_copy_only=False)
    r = table.column("run_id").combine_chunks().indices.to_numpy(zero_copy_only=False)
    change = np.ones(n, dtype=bool)
    change[1:] = (t[1:] != t[:-1]) | (r[1:] != r[:-1])
    starts = np.flatnonzero(change)
    lengths = np.diff(np.append(starts, n))
    return starts, lengths


def _fill_derived(table: pa.Table, child: pa.Array) -> pa.Table:
    """Carry ``turn`` forward within each run; set parent_run_id from subagent.spawned."""
    n = table.num_rows
    if n == 0:
        return table
    starts, lengths = _segments(table)
    seg_start = np.repeat(starts, lengths)
    # turn: the latest turn.started/turn.completed value at or before each row of the run
    turn_col = table.column("turn").combine_chunks()
    valid = np.asarray(turn_col.is_valid())
    last = np.maximum.accumulate(np.where(valid, np.arange(n), -1))
    ok = last >= seg_start
    values = turn_col.fill_null(0).to_numpy(zero_copy_only=False)
    turn = pa.array(values[np.maximum(last, 0)], type=pa.int32(), mask=~ok)
    # parent_run_id: chat named as child_chat_id by a subagent.spawned row of the same tenant
    parents: dict[tuple[str, str], str] = {}
    spawn_rows = np.flatnonzero(np.asarray(child.is_valid()))
    if len(spawn_rows):
        idx = pa.array(spawn_rows)
        tenants = table.column("tenant_id").take(idx).to_pylist()
        runs = table.column("run_id").take(idx).to_pylist()
        for t, r, c in zip(tenants, runs, child.take(idx).to_pylist(), strict=True):
            parents.setdefault((t, c), r)
    cols = {"turn": turn}
    if parents:
        seg_idx = pa.array(starts)
        seg_t = table.column("tenant_id").take(seg_idx).to_pylist()
        seg_r = table.column("run_id").take(seg_idx).to_pylist()
        seg_parent = [parents.get((t, r)) for t, r in zip(seg_t, seg_r, strict=True)]
        parent = pa.array(seg_parent, type=_STR).take(
            pa.array(np.repeat(np.arange(len(starts)), lengths))
        )
        cols["parent_run_id"] = parent.dictionary_encode().cast(
            table.schema.field("parent_run_id").type
        )
    for name, arr in cols.items():
        i = table.schema.get_field_index(name)
        table = table.set_column(i, table.schema.field(name), arr)
    return table


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
