"""The canonical events schema: one row per event, whatever format the log came from.

Every loader returns an :class:`~replaykit.EventLog` whose table has exactly these columns, in
this order, with these Arrow types. Typed columns hold what folds and metrics touch; ``payload``
keeps the rest of the event, losslessly, as JSON text.

The columns, their Arrow types and meanings are :data:`EVENTS_SCHEMA` and :data:`COLUMN_DOCS`
below (rendered as a table in docs/formats.md, generated from this module).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import SchemaError

__all__ = [
    "COLUMN_DOCS",
    "DERIVED_COLUMNS",
    "EVENTS_SCHEMA",
    "EXTENSION_COLUMNS",
    "EXTENSION_DOCS",
    "KINDS",
    "QUARANTINE_SCHEMA",
    "empty_events",
    "events_table",
    "sort_events",
    "validate",
]

_DICT = pa.dictionary(pa.int32(), pa.string())

#: The normalised event categories of the ``kind`` column. Loaders map each source type to one
#: of these; anything they do not recognise is ``"other"`` (and is kept, never dropped).
KINDS: tuple[str, ...] = (
    "session",  # session/run lifecycle, titles, settings, seeds
    "user_message",  # a user (or injected) message
    "model_request",  # a model call is sent (request header / prompt)
    "model_chunk",  # one streamed model output chunk
    "model_response",  # a complete model output (assistant message / model call result)
    "tool_call",  # the agent asks for a tool
    "tool_result",  # a tool's result (error results have is_error=True)
    "turn_start",
    "turn_end",
    "step_start",
    "step_end",
    "approval_request",  # approval asked / interrupt raised
    "approval_decision",  # approval decided / interrupt resolved
    "subagent_start",
    "subagent_end",
    "checkpoint",
    "intervention",  # synthetic events added by branch/replay
    "error",  # an error that is not a tool result or finish
    "other",
)

EVENTS_SCHEMA: pa.Schema = pa.schema(
    [
        pa.field("tenant_id", _DICT, nullable=False),
        pa.field("run_id", _DICT, nullable=False),
        pa.field("parent_run_id", _DICT),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("type", _DICT, nullable=False),
        pa.field("kind", _DICT, nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("turn", pa.int32()),
        pa.field("step", pa.int32()),
        pa.field("event_id", pa.string()),
        pa.field("ref_id", pa.string()),
        pa.field("tool_name", _DICT),
        pa.field("args_hash", pa.string()),
        pa.field("cache_key", pa.string()),
        pa.field("is_error", pa.bool_(), nullable=False),
        pa.field("finish", _DICT),
        pa.field("input_tokens", pa.int64()),
        pa.field("output_tokens", pa.int64()),
        pa.field("chunk_type", _DICT),
        pa.field("text", pa.large_string()),
        pa.field("inherited", pa.bool_(), nullable=False),
        pa.field("payload", pa.large_string(), nullable=False),
        pa.field("prev_hash", pa.string()),
        pa.field("row_hash", pa.string()),
        pa.field("source", _DICT, nullable=False),
        pa.field("source_line", pa.int64()),
    ]
)

#: One-line documentation of every column (also rendered in docs/formats.md).
COLUMN_DOCS: dict[str, str] = {
    "tenant_id": "owner of the run; required, never invented or defaulted",
    "run_id": "chat / run / session id",
    "parent_run_id": "parent session (subagent child, fork, branch); null for a root run",
    "seq": "position of the event in its run; strictly increasing within (tenant_id, run_id)",
    "type": "event type exactly as the source spells it",
    "kind": "normalised category, one of replaykit.schema.KINDS",
    "ts": "when the event happened (UTC, microseconds); null when the source has no time",
    "turn": "turn number when the format has turns",
    "step": "step (model round trip) within the turn",
    "event_id": "the event's own stable id, when the source gives one",
    "ref_id": "id the event refers to (tool call, model call, interrupt, subagent, message)",
    "tool_name": "tool name on tool call and tool result events",
    "args_hash": "stable hash of the canonical tool arguments (replaykit._base.json.args_hash)",
    "cache_key": "provider-cache key (payload.cacheKey)",
    "is_error": "the event records a failure (error tool result, error finish, failed turn)",
    "finish": "finish kind of a model call (stop, tool-calls, max-tokens, error, ...)",
    "input_tokens": "input tokens reported by this event (usage chunk / model result)",
    "output_tokens": "output tokens reported by this event",
    "chunk_type": "sub-kind of a model_chunk (text, reasoning, tool-call, usage, finish, ...)",
    "text": "text the event carries: a text/reasoning delta, a message's or a result's text",
    "inherited": "copied from a parent run (a fork child's seed region)",
    "payload": "the event's own JSON text, lossless",
    "prev_hash": "hash chain: the previous row's row_hash",
    "row_hash": "hash chain: this row's hash",
    "source": "'<format>:<path>' the row was loaded from",
    "source_line": "1-based line number in source; null when the source is not line-based",
}

#: The canonical columns a loader derives from an event (its ``type`` and ``payload``, and for
#: some formats the file's structure), as opposed to the recorded content (tenant_id, run_id,
#: seq, ts, type, payload), provenance (source, source_line) and the chain (prev_hash,
#: row_hash). What the analysis reads; ``docs/integrity.md`` says how the chain covers them.
DERIVED_COLUMNS: tuple[str, ...] = (
    "parent_run_id", "kind", "turn", "step", "event_id", "ref_id", "tool_name", "args_hash",
    "cache_key", "is_error", "finish", "input_tokens", "output_tokens", "chunk_type", "text",
    "inherited",
)

#: Optional columns a table may carry after the canonical ones (any subset, in this order).
#: Loaders never produce them; :func:`validate` accepts them; Parquet datasets and SQL tables
#: store the canonical columns only (``ReplayResult.save`` keeps them).
EXTENSION_COLUMNS: pa.Schema = pa.schema([pa.field("replay_origin", _DICT),
                                           pa.field("replay_provenance", _DICT)])

#: One-line documentation of every extension column.
EXTENSION_DOCS: dict[str, str] = {
    "replay_origin": "in ReplayResult.events only: where the replayed event came from -- "
                     "copied (before the checkpoint), recorded, patched (an intervention "
                     "edited it), fixture (fixture-served), executor (a live model or tool "
                     "executor), blocked, synthetic (made by the replay)",
    "replay_provenance": "in ReplayResult.events only: where the step's content came from, "
                         "for a reader -- recorded, patched, fixture, policy-copy (a model "
                         "output copied from the recording under a non-live model policy), "
                         "live, blocked, synthetic (replaykit.branch.vocab.PROVENANCES)",
}

#: Rows that could not be loaded, each with its reason. ``loaded + quarantined == input rows``.
#: ``tenant_id``/``run_id`` say whose row it is, when that is known (the caller's tenant for
#: formats without tenants, the row's own valid tenant otherwise); a row whose tenant cannot
#: be read has a null ``tenant_id`` and shows only in an all-tenants load, never in a tenant's
#: view (see :func:`replaykit.tenancy.scope_side_table`).
QUARANTINE_SCHEMA: pa.Schema = pa.schema(
    [
        pa.field("source", pa.string(), nullable=False),
        pa.field("line", pa.int64()),
        pa.field("field", pa.string()),
        pa.field("reason", pa.string(), nullable=False),
        pa.field("message", pa.string(), nullable=False),
        pa.field("raw", pa.large_string()),
        pa.field("tenant_id", pa.string()),
        pa.field("run_id", pa.string()),
    ]
)

_REQUIRED_DEFAULTS: dict[str, Any] = {"is_error": False, "inherited": False}


def empty_events() -> pa.Table:
    """An events table with no rows."""
    return EVENTS_SCHEMA.empty_table()


def _as_array(values: Any, field: pa.Field, n: int, combine: bool = True
              ) -> pa.Array | pa.ChunkedArray:
    if values is None:
        if field.name in _REQUIRED_DEFAULTS:
            return pa.array(np.full(n, _REQUIRED_DEFAULTS[field.name]), type=field.type)
        return pa.nulls(n, type=field.type)
    if isinstance(values, pa.ChunkedArray) and combine:
        values = values.combine_chunks()
    arr: pa.Array | pa.ChunkedArray
    if isinstance(values, (pa.Array, pa.ChunkedArray)):  # the casts below keep chunks
        arr = values
    elif isinstance(values, np.ndarray):
        arr = pa.array(values)
    else:
        value_type = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
        arr = pa.array(values, type=value_type)
    if pa.types.is_dictionary(field.type):
        if not pa.types.is_dictionary(arr.type):
            arr = pc.cast(arr, pa.string()).dictionary_encode()
        if arr.type != field.type:
            arr = arr.cast(field.type)
        return arr
    naive_ts = pa.types.is_timestamp(arr.type) and arr.type.tz is None
    if pa.types.is_timestamp(field.type) and naive_ts:
        arr = pc.assume_timezone(arr, "UTC")
    if arr.type != field.type:
        arr = arr.cast(field.type)
    return arr


def events_table(columns: Mapping[str, Any], *, sort: bool = True,
                 combine: bool = True) -> pa.Table:
    """Build a canonical events table from columns.

    ``columns`` maps column names to Arrow arrays, numpy arrays or Python sequences. Missing
    nullable columns become nulls; ``is_error``/``inherited`` default to False. Every other
    required column must be given. Values are cast to the canonical types (strings are
    dictionary-encoded where the schema says so). The result is sorted by
    (tenant_id, run_id, seq) unless ``sort=False``. Chunked columns are concatenated unless
    ``combine=False`` (for a caller that reorders the table next anyway).

    Raises:
        SchemaError: a required column is missing, columns differ in length, or a column
            name is not part of the schema.

    >>> t = events_table({"tenant_id": ["t"], "run_id": ["r"], "seq": [0], "type": ["x"],
    ...                   "kind": ["other"], "payload": ["{}"], "source": ["demo:mem"]})
    >>> t.num_rows, t.schema == EVENTS_SCHEMA
    (1, True)
    """
    unknown = sorted(set(columns) - set(EVENTS_SCHEMA.names))
    if unknown:
        raise SchemaError([f"unknown column {name!r}" for name in unknown])
    lengths = {name: len(v) for name, v in columns.items() if v is not None}
    if len(set(lengths.values())) > 1:
        raise SchemaError([f"columns differ in length: {lengths}"])
    n = next(iter(lengths.values()), 0)
    missing = [
        f.name
        for f in EVENTS_SCHEMA
        if not f.nullable and f.name not in _REQUIRED_DEFAULTS and columns.get(f.name) is None
    ]
    if missing:
        raise SchemaError([f"required column {name!r} is missing" for name in missing])
    arrays = [_as_array(columns.get(f.name), f, n, combine) for f in EVENTS_SCHEMA]
    table = pa.Table.from_arrays(arrays, schema=EVENTS_SCHEMA)
    return sort_events(table) if sort else table


def _dictionary_rank(col: pa.ChunkedArray) -> np.ndarray:
    """Integer sort keys for a (possibly dictionary-encoded) string column, null last."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_dictionary(arr.type):
        dict_rank = pc.rank(arr.dictionary, sort_keys="ascending", tiebreaker="dense")
        idx = arr.indices.fill_null(0).to_numpy(zero_copy_only=False)
        ranks = np.asarray(dict_rank)
        if arr.null_count:
            valid = np.asarray(arr.is_valid())
            out = np.full(len(arr), np.iinfo(np.int64).max, dtype=np.int64)
            out[valid] = ranks[idx[valid]]
            return out
        return ranks[idx].astype(np.int64) if len(idx) else np.zeros(0, dtype=np.int64)
    return np.asarray(pc.rank(arr, sort_keys="ascending", tiebreaker="dense"), dtype=np.int64)


def sort_order(table: pa.Table) -> np.ndarray:
    """Row order that sorts ``table`` by (tenant_id, run_id, seq); stable."""
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    tenant = _dictionary_rank(table.column("tenant_id"))
    run = _dictionary_rank(table.column("run_id"))
    seq = table.column("seq").to_numpy()
    return np.lexsort((seq, run, tenant))


def run_starts(table: pa.Table) -> np.ndarray:
    """Boolean mask over a sorted events table: row i starts a new (tenant_id, run_id) run."""
    n = table.num_rows
    starts = np.ones(n, dtype=bool)
    if n > 1:
        tenant = _dictionary_rank(table.column("tenant_id"))
        run = _dictionary_rank(table.column("run_id"))
        starts[1:] = (tenant[1:] != tenant[:-1]) | (run[1:] != run[:-1])
    return starts


def sort_events(table: pa.Table) -> pa.Table:
    """``table`` sorted by (tenant_id, run_id, seq); returned as is when already sorted."""
    order = sort_order(table)
    if len(order) and np.array_equal(order, np.arange(len(order))):
        return table
    return table.take(pa.array(order))


def validate(table: pa.Table) -> pa.Table:
    """Check that ``table`` is a canonical events table and return it unchanged.

    Checks the column names, order and types (the canonical columns, optionally followed by
    :data:`EXTENSION_COLUMNS`), the non-null columns, that ``kind`` only holds
    values from :data:`KINDS`, that every string column (dictionary ones included) holds
    UTF-8 (Arrow does not check text it reads from Parquet or takes from a caller), and that
    ``seq`` strictly increases within each (tenant_id, run_id) with rows sorted by
    (tenant_id, run_id, seq).

    Raises:
        SchemaError: listing every problem found (text that is not UTF-8 is shown escaped).
    """
    return _validate(table, text=True)


def _validate(table: pa.Table, *, text: bool) -> pa.Table:
    """:func:`validate`; ``text=False`` leaves out the UTF-8 pass (for a loader whose every
    text column is known UTF-8: the pleach loader's native scan, ``EventLog._loaded``)."""
    problems: list[str] = []
    if not isinstance(table, pa.Table):
        raise SchemaError([f"expected a pyarrow.Table, got {type(table).__name__}"])
    names = table.schema.names
    n_canon = len(EVENTS_SCHEMA.names)
    ext = names[n_canon:]
    if names[:n_canon] == EVENTS_SCHEMA.names and ext and ext == [
            e for e in EXTENSION_COLUMNS.names if e in ext]:
        for name in ext:
            got = table.schema.field(name).type
            if got != EXTENSION_COLUMNS.field(name).type:
                problems.append(f"column {name!r} has type {got}, expected "
                                f"{EXTENSION_COLUMNS.field(name).type}")
        names = names[:n_canon]
    if names != EVENTS_SCHEMA.names:
        missing = [n for n in EVENTS_SCHEMA.names if n not in names]
        extra = [n for n in names if n not in EVENTS_SCHEMA.names]
        if missing:
            problems.append(f"missing columns: {missing}")
        if extra:
            problems.append(f"unexpected columns: {extra}")
        if not missing and not extra:
            problems.append(f"columns out of order: expected {EVENTS_SCHEMA.names}")
        raise SchemaError(problems)
    for field in EVENTS_SCHEMA:
        got = table.schema.field(field.name).type
        if got != field.type:
            problems.append(f"column {field.name!r} has type {got}, expected {field.type}")
        elif not field.nullable and table.column(field.name).null_count:
            problems.append(
                f"column {field.name!r} has {table.column(field.name).null_count} nulls; "
                "it must not be null"
            )
    if problems:
        raise SchemaError(problems)
    found: dict[str, np.ndarray] = {}
    if text and not text_is_utf8(table):  # one C++ pass over the text; rows located then
        found = invalid_utf8_columns(table)
        if not found:
            problems.append("a dictionary column holds entries that are not UTF-8 (no row "
                            "uses them); rebuild the table with "
                            "replaykit.schema.events_table(...)")
    for name, rows in found.items():
        problems.append(
            f"column {name!r} holds {len(rows)} value(s) that are not UTF-8 (rows "
            f"{rows[:3].tolist()}{' ...' if len(rows) > 3 else ''}: "
            f"{', '.join(shown_bytes(table.column(name), rows[:3]))}); Arrow does not check "
            "text it reads, replaykit does: fix the producer or drop those rows")
    if problems:
        raise SchemaError(problems)
    if table.num_rows:
        kinds = pc.unique(pc.cast(table.column("kind"), pa.string())).to_pylist()
        bad = sorted(set(kinds) - set(KINDS))
        if bad:
            problems.append(f"column 'kind' has values outside KINDS: {bad}")
        tenant = _dictionary_rank(table.column("tenant_id"))
        run = _dictionary_rank(table.column("run_id"))
        seq = table.column("seq").to_numpy()
        same_run = (tenant[1:] == tenant[:-1]) & (run[1:] == run[:-1])
        key_order_ok = (tenant[1:] > tenant[:-1]) | (
            (tenant[1:] == tenant[:-1]) & (run[1:] >= run[:-1])
        )
        if not key_order_ok.all():
            problems.append("rows are not sorted by (tenant_id, run_id, seq); use sort_events()")
        elif (same_run & (seq[1:] <= seq[:-1])).any():
            i = int(np.flatnonzero(same_run & (seq[1:] <= seq[:-1]))[0])
            problems.append(
                f"seq is not strictly increasing within run "
                f"{table.column('run_id')[i + 1].as_py()!r}: {seq[i]} then {seq[i + 1]}"
            )
        if (seq < 0).any():
            problems.append("seq has negative values")
    if problems:
        raise SchemaError(problems)
    return table


def cast_events(table: pa.Table) -> pa.Table:
    """``table`` cast to the canonical types, keeping its known extension columns (e.g. a
    replay's ``events.parquet``, whose dictionary columns Parquet may have decoded)."""
    fields = list(EVENTS_SCHEMA) + [f for f in EXTENSION_COLUMNS if f.name in table.schema.names]
    return table.select([f.name for f in fields]).cast(pa.schema(fields))


def quarantine_table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Build a quarantine table (see :data:`QUARANTINE_SCHEMA`) from row dicts."""
    cols = {f.name: [r.get(f.name) for r in rows] for f in QUARANTINE_SCHEMA}
    return pa.Table.from_pydict(cols, schema=QUARANTINE_SCHEMA)


# --------------------------------------------------------------------------- UTF-8 checks
# Arrow does not check that string columns hold UTF-8 when it reads Parquet (or takes a table
# from a caller); Python does, on the first value it converts. Every storage boundary checks
# its string columns once (Arrow's validate(full=True): column-wise, in C++) and, only when
# that fails, locates the rows (_bad_utf8_rows: numpy over the non-ASCII bytes only).


def _string_like(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _bad_utf8_rows(arr: pa.Array) -> np.ndarray:
    """Positions of the (non-null) values of a string or large_string array whose bytes are
    not UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF).

    Vectorised: numpy over the array's non-ASCII bytes only; no Python per value."""
    n = len(arr)
    if n == 0:
        return np.zeros(0, np.int64)
    large = pa.types.is_large_string(arr.type)
    width = 8 if large else 4
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32, count=n + 1,
                            offset=arr.offset * width).astype(np.int64)
    lo, hi = int(offsets[0]), int(offsets[-1])
    if hi <= lo or bufs[2] is None:
        return np.zeros(0, np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8)[lo:hi]
    offsets = offsets - lo
    pos = np.flatnonzero(data >= 0x80)  # every byte of a multi-byte sequence
    if not len(pos):
        return np.zeros(0, np.int64)
    b = data[pos]
    row = np.searchsorted(offsets, pos, side="right") - 1
    row_end = offsets[row + 1]
    cont = (b & 0xC0) == 0x80
    length = np.select([(b >= 0xC2) & (b <= 0xDF), (b >= 0xE0) & (b <= 0xEF),
                        (b >= 0xF0) & (b <= 0xF4)], [2, 3, 4], 0)
    bad = ~cont & (length == 0)  # 0xC0, 0xC1, 0xF5-0xFF: never in UTF-8
    claimed = np.zeros(len(pos), bool)
    lead = length >= 2
    for k in (1, 2, 3):
        need = lead & (length > k)
        at = pos + k
        inside = need & (at < row_end)  # a sequence never runs into the next value
        bad |= need & ~inside
        # the byte k after a lead, if non-ASCII, is in pos: find it there
        j = np.minimum(np.searchsorted(pos, at), len(pos) - 1)
        present = pos[j] == at
        ok = inside & present & cont[j]
        bad |= inside & ~ok
        claimed[j[ok]] = True
        if k == 1:  # the second byte's narrower ranges (overlong forms, surrogates, > U+10FFFF)
            second = np.where(present, data[np.minimum(at, len(data) - 1)], 0)
            bad |= ok & (((b == 0xE0) & (second < 0xA0)) | ((b == 0xED) & (second > 0x9F))
                         | ((b == 0xF0) & (second < 0x90)) | ((b == 0xF4) & (second > 0x8F)))
    bad |= cont & ~claimed  # a continuation byte no lead byte of its value accounts for
    rows = np.unique(row[bad])
    if arr.null_count and len(rows):
        rows = rows[np.asarray(arr.is_valid())[rows]]
    return rows.astype(np.int64)


#: text bytes from which :func:`text_is_utf8` validates on Arrow's CPU count of threads
_PARALLEL_UTF8_BYTES = 16 << 20
_UTF8_PIECE_BYTES = 4 << 20


def text_is_utf8(table: pa.Table | pa.RecordBatch) -> bool:
    """Whether every string column of ``table`` holds UTF-8 (for a dictionary column: every
    entry of its dictionary, used or not). One C++ pass over the text bytes only (Arrow's
    ``validate(full=True)`` of the string arrays and of the dictionaries, not of the whole
    table); from 16 MB of text on, cut into pieces of about 4 MB validated on Arrow's CPU
    count of threads (``pa.cpu_count()``, which the loaders set to replaykit's thread count;
    ``validate`` releases the GIL)."""
    targets: list[pa.Array] = []
    for col in table.columns:
        chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
        for c in chunks:
            if pa.types.is_dictionary(c.type):
                target = c.dictionary if _string_like(c.type.value_type) else None
            else:
                target = c if _string_like(c.type) else None
            if target is not None:
                targets.append(target)
    total = sum(t.nbytes for t in targets)
    workers = pa.cpu_count()
    if workers > 1 and total >= _PARALLEL_UTF8_BYTES:
        from concurrent.futures import ThreadPoolExecutor

        pieces = [p for t in targets for p in _pieces(t)]
        with ThreadPoolExecutor(min(workers, len(pieces))) as pool:
            return all(pool.map(_valid, pieces))
    return all(_valid(t) for t in targets)


def _valid(arr: pa.Array) -> bool:
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _pieces(arr: pa.Array) -> list[pa.Array]:
    """``arr`` as slices of about :data:`_UTF8_PIECE_BYTES` each (whole rows; one slice when
    it is small): validating every slice validates the array."""
    k = max(1, arr.nbytes // _UTF8_PIECE_BYTES)
    n = len(arr)
    if k == 1 or n < 2 * k:
        return [arr]
    return [arr.slice(n * i // k, n * (i + 1) // k - n * i // k) for i in range(k)]


def invalid_utf8(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Row positions of a string column (plain, large or dictionary-encoded; chunked or not)
    whose value is not UTF-8; empty for other types and for valid columns (checked first with
    Arrow's ``validate(full=True)``, so a valid column costs one C++ pass)."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    found: list[np.ndarray] = []
    start = 0
    for c in chunks:
        if pa.types.is_dictionary(c.type) and _string_like(c.type.value_type):
            try:
                c.dictionary.validate(full=True)
            except pa.ArrowInvalid:
                entries = _bad_utf8_rows(c.dictionary)
                if len(entries):
                    idx = c.indices.fill_null(-1).to_numpy(zero_copy_only=False)
                    found.append(start + np.flatnonzero(np.isin(idx, entries)))
        elif _string_like(c.type):
            try:
                c.validate(full=True)
            except pa.ArrowInvalid:
                found.append(start + _bad_utf8_rows(c))
        start += len(c)
    return np.concatenate(found).astype(np.int64) if found else np.zeros(0, np.int64)


def invalid_utf8_columns(table: pa.Table | pa.RecordBatch) -> dict[str, np.ndarray]:
    """Column name -> row positions whose text is not UTF-8, for every string column of
    ``table`` that has any (an empty dict when every column is valid UTF-8)."""
    out = {}
    for name, col in zip(table.schema.names, table.columns, strict=True):
        rows = invalid_utf8(col)
        if len(rows):
            out[name] = rows
    return out


def escaped_text(value: bytes | str | None) -> str | None:
    """A stored string's bytes as printable text: bytes that are not UTF-8 as ``\\xNN``."""
    if value is None or isinstance(value, str):
        return value
    return value.decode("utf-8", "backslashreplace")


def _escape_plain(arr: pa.Array, rows: np.ndarray) -> pa.Array:
    if not len(rows):
        return arr
    binary = pa.large_binary() if pa.types.is_large_string(arr.type) else pa.binary()
    raw = arr.view(binary)
    # the bad values through Python (only those), then put back column-wise
    fixed = [escaped_text(v) for v in raw.take(pa.array(rows)).to_pylist()]
    mask = np.zeros(len(arr), bool)
    mask[rows] = True
    return pc.replace_with_mask(raw, pa.array(mask),
                                pa.array([None if f is None else f.encode() for f in fixed],
                                         binary)).view(arr.type)


def escape_invalid_utf8(column: pa.Array | pa.ChunkedArray,
                        rows: np.ndarray | None = None) -> pa.Array | pa.ChunkedArray:
    """``column`` with each value that is not UTF-8 replaced by its bytes shown escaped
    (``\\xNN``; valid values unchanged), in the column's own type (a dictionary column's
    entries are escaped, those no row uses included); the column itself when every value is
    UTF-8. ``rows``: :func:`invalid_utf8` of a plain column, when known."""
    if isinstance(column, pa.ChunkedArray):
        return pa.chunked_array([escape_invalid_utf8(c) for c in column.chunks], column.type)
    if pa.types.is_dictionary(column.type) and _string_like(column.type.value_type):
        try:
            column.dictionary.validate(full=True)
            return column
        except pa.ArrowInvalid:
            entries = _escape_plain(column.dictionary, _bad_utf8_rows(column.dictionary))
            return pa.DictionaryArray.from_arrays(column.indices, entries)
    if not _string_like(column.type):
        return column
    return _escape_plain(column, invalid_utf8(column) if rows is None else rows)


def escape_table_utf8(table: pa.Table) -> tuple[pa.Table, dict[str, np.ndarray]]:
    """``table`` with every value that is not UTF-8 shown escaped (:func:`escape_invalid_utf8`),
    and which rows of which columns were (:func:`invalid_utf8_columns`)."""
    if text_is_utf8(table):  # one C++ pass over the text; rows located only when it fails
        return table, {}
    found = invalid_utf8_columns(table)  # bad values, or dictionary entries no row uses
    for i, col in enumerate(table.columns):
        table = table.set_column(i, table.schema.field(i), escape_invalid_utf8(col))
    return table, found


def shown_bytes(column: pa.Array | pa.ChunkedArray, rows: np.ndarray | list[int],
                limit: int = 80) -> list[str]:
    """The stored bytes of ``column`` at ``rows`` as Python bytes literals (``b'\\xffab'``:
    every byte that is not printable ASCII escaped), cut at ``limit`` bytes: how an error
    message shows text that is not UTF-8."""
    picked = column.take(pa.array(np.asarray(rows, np.int64)))
    if isinstance(picked, pa.ChunkedArray):
        picked = picked.combine_chunks()
    if pa.types.is_dictionary(picked.type):
        picked = picked.dictionary.take(picked.indices)
    binary = pa.large_binary() if pa.types.is_large_string(picked.type) else pa.binary()
    out = []
    for v in picked.view(binary).to_pylist():
        out.append("None" if v is None else repr(v[:limit]) + ("..." if len(v) > limit else ""))
    return out
