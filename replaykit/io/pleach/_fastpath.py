"""The column-wise JSONL path: a block's payload spans found with numpy, the envelope and the
spans parsed by Arrow's JSON reader (which together prove each line; see the package docstring).
"""

from __future__ import annotations

import io
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from ..._json import MAX_DEPTH, JSONDecodeError, loads
from ._shapes import _BLOCK, _ENVELOPE_FIELDS, _STR, _TYPED, _FastPathFailed, _Part


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
    engine: str | None = None,
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
    del envelope, pieces
    payload = _slices(buf, value, pend)
    env = None
    if (JSON_ENGINE if engine is None else engine) == "duckdb" and _duckdb_module() is not None:
        env = _duck_envelope(block, starts, ends, env_buf, (value + 1 - starts) + (ends - pend + 1))
    env, typed = _arrow_parse(env_buf, payload, int((ends - starts).max()), n, threads, env)
    del env_buf
    created = env.column("created_at").combine_chunks()
    return _Part(
        env=env.drop_columns(["created_at", "payload"]),
        created_at=created,
        payload=payload,
        typed=typed,
        line=lineno,
        raw=None,
    )


def _arrow_parse(env_buf: pa.Buffer, payload: pa.Array, longest: int, n: int,
                 threads: bool, env: pa.Table | None = None) -> tuple[pa.Table, pa.Table]:
    """The envelope (payload cut to ``{}``; unless ``env`` already holds it) and the payload
    spans parsed by Arrow's JSON reader; raises _FastPathFailed when either does not prove
    the block."""
    for ts_type in () if env is not None else (_STR, pa.int64()):
        try:
            env = _parse_lines(env_buf, pa.schema([*_envelope_schema(ts_type), _PLACEHOLDER]),
                               longest, threads)
            break
        except pa.ArrowInvalid as exc:
            if "created_at" not in str(exc):
                raise _FastPathFailed(str(exc)) from exc
    if env is None or env.num_rows != n:
        raise _FastPathFailed("row count or created_at types differ")
    if env.column("payload").null_count:
        raise _FastPathFailed("a row's payload is not at the top level")
    typed = _parse_payloads(payload, threads=threads)
    if typed is None:
        raise _FastPathFailed("payload spans did not parse")
    return env, typed


# ----------------------------------------------------------------------------- DuckDB
#: The JSON reader of the column-wise path: "duckdb" (when the duckdb package is
#: installed; Arrow's reader decides any block DuckDB's cannot prove) or "arrow".
JSON_ENGINE = "arrow"  # "duckdb" measured slower (docs/performance.md)

_duck_local = threading.local()
_DUCK: dict[str, Any] = {}
_DUCK_LOCK = threading.Lock()


def _duckdb_module() -> Any:
    """The duckdb module, or None when it is not installed (imported on first use)."""
    if "module" not in _DUCK:
        try:
            import duckdb
        except ImportError:
            duckdb = None
        _DUCK["module"] = duckdb
    return _DUCK["module"]


def _duck_connection() -> Any:
    """This thread's cursor on the process's one in-memory DuckDB database (its JSON
    extension is loaded once per process; a cursor per thread, as DuckDB requires)."""
    con = getattr(_duck_local, "con", None)
    if con is None:
        with _DUCK_LOCK:
            if "db" not in _DUCK:
                db = _duckdb_module().connect()
                db.execute("SET threads=1")  # the loader runs its own reading threads
                _DUCK["db"] = db
            con = _duck_local.con = _DUCK["db"].cursor()
    return con


def _duck_type(typ: pa.DataType) -> str:
    """DuckDB column type reading a field of ``typ``: strings as VARCHAR (checked after),
    numbers and booleans as their JSON text (DuckDB would convert "12" or 1.5 silently)."""
    if pa.types.is_struct(typ):
        return "STRUCT(" + ", ".join(f'"{f.name}" {_duck_type(f.type)}' for f in typ) + ")"
    return "VARCHAR" if typ == _STR else "JSON"


_DUCK_ENV = {**{name: _duck_type(typ) for name, typ in _ENVELOPE_FIELDS},
             "created_at": "JSON", "payload": 'STRUCT("__replaykit_placeholder" TINYINT)'}


def _duck_read(data: pa.Buffer, columns: dict[str, str], n: int) -> pa.Table | None:
    """DuckDB's newline-delimited JSON reader over an in-memory buffer, or None when it
    refuses the text or finds another number of rows than ``n``."""
    duckdb = _duckdb_module()
    try:
        rel = _duck_connection().read_json(
            io.BytesIO(memoryview(data)), format="newline_delimited", columns=columns,
            maximum_object_size=max(16 << 20, data.size + 1),
        )
        table = rel.to_arrow_table()
    except duckdb.Error:
        return None
    return table if table.num_rows == n else None


#: a VARCHAR value that may be DuckDB's text of a number, boolean, object or array
_NOT_A_STRING = (r"^(?:[\[{]|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$|true$|false$"
                 r"|-?(?i:nan|inf|infinity)$)")


def _strings_proven(table: pa.Table, names: Sequence[str], texts: Callable[[int], bytes]
                    ) -> bool:
    """True when every value of the VARCHAR columns ``names`` was a JSON string.

    DuckDB reads a number, boolean, object or array into a VARCHAR column as its JSON text;
    Arrow's reader refuses them. Values that look like such a text (first byte, then a
    pattern) are checked one by one by decoding their row (``texts(i)``): a real string
    passes, anything else fails.
    """
    for name in names:
        col = table.column(name).combine_chunks()
        n = len(col)
        if col.null_count == n:
            continue
        offs = np.frombuffer(col.buffers()[1], dtype=np.int32)[col.offset:][: n + 1]
        data = col.buffers()[2]
        if data is None:
            continue
        d = np.frombuffer(data, dtype=np.uint8)
        nonempty = offs[1:] > offs[:-1]
        first = np.where(nonempty, d[np.minimum(offs[:-1], max(len(d) - 1, 0))], 0)
        maybe = np.flatnonzero(_MAYBE_JSON[first] & nonempty)
        if not len(maybe):
            continue
        hit = pc.match_substring_regex(col.take(pa.array(maybe)), _NOT_A_STRING)
        rows = maybe[np.asarray(pc.fill_null(hit, False))]
        if len(rows) > max(_MAX_DECODED, n // 64):
            return False  # e.g. numeric ids: Arrow's reader checks them faster
        for i in rows.tolist():
            try:
                obj = loads(texts(i))
            except (JSONDecodeError, ValueError):
                return False
            if not isinstance(obj, dict) or not isinstance(obj.get(name), str):
                return False
    return True


#: at most this many rows (or 1/64 of the block) are decoded one by one to prove strings
_MAX_DECODED = 64

#: first bytes of DuckDB's text for a non-string JSON value
_MAYBE_JSON = np.zeros(256, dtype=bool)
_MAYBE_JSON[[*b"-0123456789tfnNiI[{"]] = True


def _json_ints(col: pa.ChunkedArray | pa.Array) -> pa.Array | None:
    """JSON texts of integers -> int64 (None when any value is another JSON value)."""
    try:
        return pc.cast(col, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


_DUCK_STR_ENV = [name for name, typ in _ENVELOPE_FIELDS if typ == _STR]


def _duck_envelope(
    block: bytes | bytearray, starts: np.ndarray, ends: np.ndarray, env_buf: pa.Buffer,
    env_lengths: np.ndarray,
) -> pa.Table | None:
    """The envelope table exactly as Arrow's reader gives it (:func:`_arrow_parse`), read by
    DuckDB; None when DuckDB's reading cannot be proven to be Arrow's (Arrow then decides).

    DuckDB's reader is lenient where Arrow's is strict (trailing commas, ``nan``/``inf``
    literals, numbers beyond a double, a number or object read into a text column), and it
    skips unknown members unseen. The proof that it read each envelope line strictly:

    * every one of the 8 members is present and non-null, and each text value is a JSON
      string (:func:`_strings_proven`), each number an integer;
    * the line is exactly as long as the shortest JSON text of those 8 members: no
      whitespace, no escape, no trailing comma and no other member (each would add bytes;
      every value's shortest text is at most as long as its source), so nothing was
      skipped and every byte was read into a checked value.
    """
    n = len(starts)
    env = _duck_read(env_buf, _DUCK_ENV, n)
    if env is None or any(env.column(c).null_count for c in env.column_names):
        return None
    if not _strings_proven(env, _DUCK_STR_ENV,
                           lambda i: bytes(block[int(starts[i]):int(ends[i])])):
        return None
    seq = _json_ints(env.column("sequence_number"))
    created = _json_created(env.column("created_at"))
    if seq is None or created is None:
        return None
    # the shortest text of each line: '{' + 7 commas + '}' + '"key":' + each value
    size = np.full(n, 2 + 7 + sum(len(name) + 3 for name in _DUCK_ENV), dtype=np.int64)
    for name in _DUCK_ENV:
        if name == "payload":
            size += 2  # {}
            continue
        col = env.column(name).combine_chunks()
        size += np.asarray(pc.binary_length(col), dtype=np.int64)
        if name in _DUCK_STR_ENV:
            size += 2  # the quotes (the JSON-typed columns hold them in their text)
    if not np.array_equal(size, env_lengths):
        return None
    out = {name: env.column(name) for name, _ in _ENVELOPE_FIELDS}
    out["sequence_number"] = seq
    out["created_at"] = created
    out["payload"] = env.column("payload")
    return pa.table(out)


def _json_created(col: pa.ChunkedArray) -> pa.Array | None:
    """created_at as Arrow's reader gives it: text when every value is a JSON string,
    int64 when every value is an integer, else None (null values allowed in both)."""
    col = col.combine_chunks()
    valid = col.drop_null()
    if pc.all(pc.starts_with(valid, '"')).as_py() is not False:
        if pc.any(pc.match_substring(valid, "\\")).as_py():
            return None  # an escape: the text would need decoding
        return pc.utf8_slice_codeunits(col, 1, -1)
    return _json_ints(col)


def _joined_lines(payload: pa.Array) -> tuple[pa.Buffer, int]:
    """The values of a string array joined by newlines (one copy) and the longest one."""
    n = len(payload)
    typ = payload.type
    lines = pc.binary_join_element_wise(payload, pa.scalar("\n", typ), pa.scalar("", typ))
    offs = np.frombuffer(lines.buffers()[1],
                         dtype=np.int64 if pa.types.is_large_string(typ) else np.int32)
    offs = offs[lines.offset:][: n + 1]
    data = lines.buffers()[2].slice(int(offs[0]), int(offs[-1] - offs[0]))
    return data, int(np.diff(offs).max())


def _parse_payloads(payload: pa.Array, *, threads: bool = True) -> pa.Table | None:
    """Typed fields of many payload objects (one line each), or None when Arrow cannot
    parse them or a value holds other than exactly one JSON object."""
    n = len(payload)
    if n == 0:
        return _TYPED.empty_table()
    data, longest = _joined_lines(payload)
    try:
        table = _parse_lines(data, _TYPED, longest, threads)
    except pa.ArrowInvalid:
        return None
    if table.num_rows != n:
        return None
    return table
