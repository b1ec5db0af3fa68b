"""The column-wise JSONL path: a block's payload spans found with numpy, the envelope and the
spans parsed by Arrow's JSON reader (which together prove each line; see the package docstring).
"""

from __future__ import annotations

import re
import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from ..._base.json import MAX_DEPTH, JSONDecodeError, loads
from ._rows import ESCAPED_KEY_LETTER, TENANT_KEY
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
        # block-sized for files of many blocks; a small file's own size (its only block)
        size = len(b) if len(b) < 1 << 20 else max(len(b), _BLOCK + (1 << 20))
        mask = _scratch.mask = np.empty(size, dtype=bool)
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


def _bracket_counts(b: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                    opens: np.ndarray | None = None) -> np.ndarray:
    """How many ``{`` and ``[`` each span [start, end) of ``b`` holds (an upper bound of its
    nesting depth), column-wise; ``opens``: the ``{`` positions, when the caller has them."""
    if opens is None:
        opens = _positions(b, ord("{"))
    count = np.searchsorted(opens, ends) - np.searchsorted(opens, starts)
    brackets = _positions(b, ord("["))
    return count + np.searchsorted(brackets, ends) - np.searchsorted(brackets, starts)


def _check_depth(block: bytes | bytearray, b: np.ndarray, starts: np.ndarray,
                 ends: np.ndarray, opens: np.ndarray) -> None:
    """Raise _FastPathFailed when a line may nest deeper than MAX_DEPTH (Arrow's reader
    accepts any depth; the row-by-row path rejects it, so both paths agree)."""
    count = _bracket_counts(b, starts, ends, opens)
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
    if env is None or env.num_rows != n:
        raise _FastPathFailed("row count or created_at types differ")
    if not strict_checked:  # (the robust path's good lines were checked one by one)
        _check_top_level_keys(envelope, env_buf, n - env.column("tenant_id").null_count)
    del env_buf, pieces
    if env.column("payload").null_count:
        raise _FastPathFailed("a row's payload is not at the top level")
    del envelope
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


def _check_top_level_keys(envelope: pa.Array, env_buf: pa.Buffer, tenants: int) -> None:
    """Raise _FastPathFailed when a row may name ``tenant_id`` twice (Arrow's parse keeps one
    silently; the robust path reports ``bad_tenant``), or spells a top-level key with
    ``\\u`` escapes of its letters (which would decode to ``tenant_id``).

    ``envelope``: each line's two pieces outside its payload, so keys inside payloads never
    count; ``env_buf``: their bytes, contiguous; ``tenants``: rows with a tenant. Both
    searches run once over ``env_buf`` (RE2, GIL released); only when the key appears more
    often than there are tenants are the rows counted one by one."""
    whole = pa.Array.from_buffers(
        pa.large_binary(), 1, [None, pa.py_buffer(np.array([0, env_buf.size], np.int64)),
                               env_buf])
    if pc.match_substring_regex(whole, ESCAPED_KEY_LETTER.pattern.decode())[0].as_py():
        raise _FastPathFailed("a key may be spelled with escapes")
    key = re.escape(TENANT_KEY.decode())
    if pc.count_substring_regex(whole, key)[0].as_py() == tenants:
        return
    per_piece = np.asarray(pc.count_substring_regex(envelope, key))
    if (per_piece.reshape(-1, 2).sum(1) > 1).any():
        raise _FastPathFailed("a row may name tenant_id twice")


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
