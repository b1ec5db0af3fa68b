"""The canonical content bytes of a row: canonical JSON, the content members, the column-wise
builder of every row's bytes (see :mod:`replaykit.integrity.chain`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .._base import native as _native
from ..schema import DERIVED_COLUMNS

__all__ = [
    "CONTENT_COLUMNS",
    "REDERIVED_FORMAT",
    "SEALED_MEMBERS",
    "canonical_json",
    "row_content",
    "source_format",
]

#: Columns whose values are hashed, in canonical (sorted) key order.
CONTENT_COLUMNS: tuple[str, ...] = ("payload", "run_id", "seq", "tenant_id", "ts", "type")
_MAX_SAFE_INT = 2**53 - 1
_TS_TYPE = pa.timestamp("us", tz="UTC")
_LS = pa.large_string()

# --------------------------------------------------------------------------- canonical JSON

_ESCAPES: dict[int, str] = {
    ord('"'): '\\"',
    ord("\\"): "\\\\",
    0x08: "\\b",
    0x09: "\\t",
    0x0A: "\\n",
    0x0C: "\\f",
    0x0D: "\\r",
}
for _code in range(0x20):
    _ESCAPES.setdefault(_code, f"\\u{_code:04x}")
del _code


def _json_string(s: str) -> str:
    return '"' + s.translate(_ESCAPES) + '"'


def _json_number(x: int | float) -> str:
    """A number the way RFC 8785 (ECMAScript ``Number.prototype.toString``) writes it."""
    if isinstance(x, bool):  # pragma: no cover - callers route bools elsewhere
        raise TypeError("bool is not a number")
    if isinstance(x, int):
        if abs(x) > _MAX_SAFE_INT:
            raise ValueError(
                f"integer {x} is outside the IEEE-754 safe range (|n| <= 2**53 - 1) that "
                "RFC 8785 canonical JSON can represent exactly"
            )
        return str(x)
    if not math.isfinite(x):
        raise ValueError(f"{x!r} has no JSON representation")
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    mantissa, _, exp = repr(abs(x)).partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    digits = (int_part + frac_part).lstrip("0")
    exp10 = (int(exp) if exp else 0) - len(frac_part)
    stripped = digits.rstrip("0")
    exp10 += len(digits) - len(stripped)
    digits = stripped
    k = len(digits)
    n = exp10 + k  # value = 0.digits * 10**n
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        e_str = f"e{'+' if e > 0 else '-'}{abs(e)}"
        out = (digits if k == 1 else digits[0] + "." + digits[1:]) + e_str
    return sign + out


def canonical_json(value: Any) -> str:
    """Canonical JSON text of a JSON value, following RFC 8785 (JCS).

    Object keys sorted by their UTF-16 code units, no insignificant whitespace, strings
    escaped only where JSON requires it (``"``, ``\\``, control characters), numbers in
    ECMAScript form (``1e+21``, ``1.5e-7``, ``0.1``; integral floats without a fraction).
    Encode the result as UTF-8 to get the canonical bytes.

    Raises:
        ValueError: a NaN/infinite float, or an integer beyond 2**53 - 1 (not exactly
            representable under RFC 8785's IEEE-754 number model).
        TypeError: a value that is not a JSON value (dict keys must be strings).

    >>> canonical_json({"b": [1.0, 1e21, 1.5e-7], "a": "é\\n"})
    '{"a":"é\\\\n","b":[1,1e+21,1.5e-7]}'
    """
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, (int, float)):
        return _json_number(value)
    if isinstance(value, Mapping):
        for k in value:
            if not isinstance(k, str):
                raise TypeError(f"object keys must be strings, got {type(k).__name__}")
        keys = sorted(value, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(_json_string(k) + ":" + canonical_json(value[k]) for k in keys) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical_json(v) for v in value) + "]"
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def _ts_micros(ts: Any) -> int | None:
    if ts is None:
        return None
    if isinstance(ts, (int, np.integer)):
        return int(ts)
    t = pd.Timestamp(ts)
    if t.tzinfo is None:
        t = t.tz_localize("UTC")
    return int(t.tz_convert("UTC").as_unit("us").asm8.astype(np.int64))


def source_format(source: str) -> str:
    """The format a ``source`` value names: the part before its first ``:``.

    >>> source_format("toh:/logs/a.jsonl"), source_format("pleach:sqlite:events")
    ('toh', 'pleach')
    """
    return source.split(":", 1)[0]


#: The format whose rows' derived columns verification re-derives from the hashed content
#: (so they are not hashed: a newer loader may derive them better without breaking chains).
REDERIVED_FORMAT = "pleach"

#: Members of the ``derived`` object hashed for the rows of every other format: the
#: :data:`~replaykit.schema.DERIVED_COLUMNS` plus ``format`` (:func:`source_format`).
SEALED_MEMBERS: tuple[str, ...] = tuple(sorted((*DERIVED_COLUMNS, "format")))


def _derived_scalar(value: Any) -> Any:
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


def row_content(row: Mapping[str, Any]) -> bytes:
    """The canonical content bytes of one row (the reference, row-at-a-time definition).

    ``row`` maps the :data:`CONTENT_COLUMNS` to values: ``payload`` (JSON text, inserted
    verbatim), ``run_id``, ``tenant_id``, ``type`` (strings), ``seq`` (int) and ``ts``
    (datetime / pandas Timestamp / int microseconds since the epoch, or None).
    :func:`stamp_chain` and :func:`verify_chain` build the same bytes column-wise.

    A row with a ``source`` whose format (:func:`source_format`) is not
    :data:`REDERIVED_FORMAT` (toh, isplay, otel, inspect, replays, ...) also hashes its
    derived columns: a ``derived`` member, the object of :data:`SEALED_MEMBERS` (each
    :data:`~replaykit.schema.DERIVED_COLUMNS` value, ``null`` when absent, and ``format``).
    A row may instead carry that object itself under ``derived`` (as proofs do).

    Raises:
        ValueError: ``seq`` outside +-(2**53 - 1).

    >>> row_content({"payload": '{"a":1}', "run_id": "r", "seq": 0, "tenant_id": "t",
    ...              "ts": None, "type": "x"})
    b'{"payload":{"a":1},"run_id":"r","seq":0,"tenant_id":"t","ts":null,"type":"x"}'
    >>> row_content({"payload": '{}', "run_id": "r", "seq": 0, "tenant_id": "t", "ts": None,
    ...              "type": "x", "source": "toh:a.jsonl", "kind": "other"})[:40]
    b'{"derived":{"args_hash":null,"cache_key"'
    """
    payload = row["payload"]
    rest = {
        "run_id": row["run_id"],
        "seq": int(row["seq"]),
        "tenant_id": row["tenant_id"],
        "ts": _ts_micros(row.get("ts")),
        "type": row["type"],
    }
    derived = row.get("derived")
    if derived is None:
        source = row.get("source")
        if source is not None and source_format(source) != REDERIVED_FORMAT:
            derived = {c: _derived_scalar(row.get(c)) for c in DERIVED_COLUMNS}
            derived["format"] = source_format(source)
    # a NULL payload (possible in a raw table only) leaves the member out: it must not hash
    # like the JSON text "null"
    head = "{"
    if derived is not None:
        head += '"derived":' + canonical_json(dict(derived)) + ","
    if payload is not None:
        head += '"payload":' + payload + ","
    return (head + canonical_json(rest)[1:]).encode("utf-8")


# --------------------------------------------------------------------------- column-wise bytes


def _one_array(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    """``col`` as one array: a column of one chunk is that chunk (no copy; Arrow's
    ``combine_chunks`` copies even one chunk: ~15 ms for the payload of 300,000 pleach rows)."""
    if isinstance(col, pa.ChunkedArray):
        return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    return col


def _plain(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    arr = _one_array(col)
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    return arr


#: Bytes a JSON string literal escapes (RFC 8785): controls, '"' and '\\'; and controls only.
_ESCAPED_BYTES = np.zeros(256, dtype=bool)
_ESCAPED_BYTES[:0x20] = _ESCAPED_BYTES[0x22] = _ESCAPED_BYTES[0x5C] = True
_CONTROL_BYTES = np.zeros(256, dtype=bool)
_CONTROL_BYTES[:0x20] = True


def _holds_any(arr: pa.Array, lut: np.ndarray) -> bool:
    """Whether the value bytes of a large_string array hold a byte ``lut`` marks: one numpy
    pass over the data buffer (conservative: bytes under null slots count too)."""
    bufs = arr.buffers()
    if not len(arr) or bufs[2] is None:
        return False
    offs = np.frombuffer(bufs[1], dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8)[int(offs[0]) : int(offs[-1])]
    return bool(lut[data].any())


def _escape_strings(arr: pa.Array) -> pa.Array:
    """JSON string literals (quoted, RFC 8785 escapes) of a string array; null stays null."""
    arr = pc.cast(arr, _LS)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()

    def has(lut: np.ndarray) -> bool:
        return _holds_any(arr, lut)

    if not has(_ESCAPED_BYTES):  # most columns: nothing to escape (one pass)
        return _quoted(arr)
    arr = pc.replace_substring(arr, "\\", "\\\\")
    arr = pc.replace_substring(arr, '"', '\\"')
    if has(_CONTROL_BYTES):
        for code in (0x0A, 0x09, 0x0D):  # the common ones first, then any other present
            arr = pc.replace_substring(arr, chr(code), _ESCAPES[code])
        if has(_CONTROL_BYTES):
            for code in range(0x20):
                arr = pc.replace_substring(arr, chr(code), _ESCAPES[code])
    return _quoted(arr)


def _quoted(arr: pa.Array) -> pa.Array:
    q = pa.scalar('"', _LS)
    return pc.binary_join_element_wise(q, arr, q, pa.scalar("", _LS))


def _json_string_column(col: pa.ChunkedArray | pa.Array) -> pa.Array | pa.Scalar:
    arr = _one_array(col)
    if len(arr) and arr.null_count == len(arr):  # e.g. a block with no tool call: one scalar
        return pa.scalar("null", _LS)
    if pa.types.is_dictionary(arr.type) and len(arr.dictionary) > len(arr):
        # a slice of a long column (verify_chain's blocks) keeps the whole dictionary:
        # escaping the rows is cheaper than escaping every value of it
        arr = arr.cast(arr.type.value_type)
    if pa.types.is_dictionary(arr.type):
        # escape each distinct value once, then gather
        escaped = _escape_strings(arr.dictionary)
        out = pc.take(escaped, arr.indices)
    else:
        out = _escape_strings(arr)
    return pc.fill_null(out, "null")


def _formats(table: pa.Table) -> pa.Array | None:
    """The :func:`source_format` of every row (string), or None without a ``source`` column."""
    if "source" not in table.schema.names:
        return None
    col = table.column("source")
    arr = _one_array(col)

    def fmt(values: pa.Array) -> pa.Array:
        values = pc.cast(values, pa.string())
        return pc.list_element(pc.split_pattern(values, ":", max_splits=1), 0)

    if pa.types.is_dictionary(arr.type) and len(arr.dictionary) <= len(arr):
        return pc.take(fmt(arr.dictionary), arr.indices)
    return fmt(_plain(arr))


def _sealed_rows(table: pa.Table) -> pa.Array | None:
    """Boolean mask of the rows that hash their derived columns (None: no such row)."""
    formats = _formats(table)
    if formats is None or not len(formats):
        return None
    sealed = pc.fill_null(pc.not_equal(formats, REDERIVED_FORMAT), False)
    return sealed if pc.any(sealed).as_py() else None


def _json_value_column(col: pa.ChunkedArray | pa.Array, name: str) -> pa.Array | pa.Scalar:
    """Canonical JSON text of every value of a string, integer or boolean column."""
    arr = _one_array(col)
    t = arr.type
    if pa.types.is_dictionary(t):
        if pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type):
            return _json_string_column(arr)
        arr, t = arr.cast(t.value_type), t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _json_string_column(arr)
    if pa.types.is_null(t) or (len(arr) and arr.null_count == len(arr)):
        return pa.scalar("null", _LS)
    if pa.types.is_boolean(t):
        if not arr.null_count and len(arr):  # a uniform column (e.g. inherited): one scalar
            if pc.all(arr).as_py():
                return pa.scalar("true", _LS)
            if not pc.any(arr).as_py():
                return pa.scalar("false", _LS)
        return pc.fill_null(pc.if_else(arr, pa.scalar("true", _LS), pa.scalar("false", _LS)),
                            "null")
    if pa.types.is_integer(t):
        return pc.fill_null(pc.cast(arr, _LS), "null")
    raise ValueError(f"column {name!r} of type {t} cannot be hashed as a derived column; "
                     "cast it to its canonical type (replaykit.schema.EVENTS_SCHEMA)")


class _Pieces:
    """The pieces of a row-wise concatenation: text literals (adjacent ones merged, as are
    columns that came out as one scalar) and arrays; :meth:`join` is one Arrow join."""

    def __init__(self) -> None:
        self.parts: list[Any] = []

    def add(self, piece: str | pa.Scalar | pa.Array) -> None:
        if isinstance(piece, pa.Scalar):
            piece = piece.as_py()
        if isinstance(piece, str) and self.parts and isinstance(self.parts[-1], str):
            self.parts[-1] += piece
        else:
            self.parts.append(piece)

    def join(self, n: int) -> pa.Array:
        if not any(isinstance(p, pa.Array) for p in self.parts):  # only literals
            return pa.array(["".join(self.parts)] * n, _LS)
        args = [pa.scalar(p, _LS) if isinstance(p, str) else p for p in self.parts]
        out = pc.binary_join_element_wise(*args, pa.scalar("", _LS))
        return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out


def _derived_member_pieces(table: pa.Table, pieces: _Pieces) -> None:
    """Add '"derived":{<SEALED_MEMBERS>},' of every row to ``pieces``."""
    names = table.schema.names
    formats = _formats(table)
    assert formats is not None
    lead = '"derived":{'
    for i, key in enumerate(SEALED_MEMBERS):
        pieces.add(lead + ("" if i == 0 else ",") + _json_string(key) + ":")
        lead = ""
        if key == "format":
            pieces.add(_json_string_column(formats))
        elif key in names:
            pieces.add(_json_value_column(table.column(key), key))
        else:
            pieces.add("null")
    pieces.add("},")


def _derived_member(table: pa.Table) -> pa.Array:
    """'"derived":{<SEALED_MEMBERS>},' of every row, built column-wise."""
    pieces = _Pieces()
    _derived_member_pieces(table, pieces)
    return pieces.join(table.num_rows)


def _hashable_ranges(table: pa.Table) -> None:
    """Refuse (ValueError) a ``seq`` or ``ts`` outside the exact IEEE-754 range, which a
    stamped chain never holds (stamping checks; verification renders them anyway)."""
    n = table.num_rows
    if not n:
        return
    mm = pc.min_max(table.column("seq"))
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if lo is not None and (lo < -_MAX_SAFE_INT or hi > _MAX_SAFE_INT):
        raise ValueError("seq values must lie within +-(2**53 - 1) to be hashed")
    ts = _one_array(table.column("ts"))
    if ts.type != _TS_TYPE:
        ts = ts.cast(_TS_TYPE)
    ts_int = pc.cast(ts, pa.int64())
    if ts_int.null_count < n:
        mm = pc.min_max(ts_int)
        if mm["min"].as_py() < -_MAX_SAFE_INT or mm["max"].as_py() > _MAX_SAFE_INT:
            raise ValueError("ts values must lie within +-(2**53 - 1) microseconds to be hashed")


def _content_column(table: pa.Table, *, strict: bool = True) -> pa.Array:
    """Canonical content text of every row (large_string), built with Arrow kernels.

    ``strict`` (stamping) refuses numbers outside the exact IEEE-754 range; verification
    renders them anyway, since a stamped chain never holds them and the hash will not match.
    """
    n = table.num_rows
    seq = _one_array(table.column("seq"))
    if strict:
        _hashable_ranges(table)
    ts = _one_array(table.column("ts"))
    if ts.type != _TS_TYPE:
        ts = ts.cast(_TS_TYPE)
    ts_int = pc.cast(ts, pa.int64())
    ts_text = pc.fill_null(pc.cast(ts_int, _LS), "null")
    payload = pc.cast(_plain(table.column("payload")), _LS)

    def lit(s: str) -> pa.Scalar:
        return pa.scalar(s, _LS)

    # '{"payload":<text>,' -- or just '{' for a NULL payload (the member is left out, so a
    # NULL never hashes like the JSON text "null"); rows of a sealed format put their
    # '"derived":{...},' member first. One join where it can be (every row sealed, or
    # none, and no NULL payload), else the head is joined first.
    pieces = _Pieces()
    sealed = _sealed_rows(table)
    whole = sealed is None or (not sealed.null_count and pc.all(sealed).as_py())
    if whole and not payload.null_count:
        pieces.add("{")
        if sealed is not None:
            _derived_member_pieces(table, pieces)
        pieces.add('"payload":')
        pieces.add(payload)
        pieces.add(",")
    elif sealed is None:
        pieces.add(pc.fill_null(pc.binary_join_element_wise(
            lit('{"payload":'), payload, lit(","), lit("")), "{"))
    else:
        payload_part = pc.fill_null(pc.binary_join_element_wise(
            lit('"payload":'), payload, lit(","), lit("")), "")
        derived_part = pc.if_else(sealed, _derived_member(table), lit(""))
        pieces.add(pc.binary_join_element_wise(lit("{"), derived_part, payload_part, lit("")))
    pieces.add('"run_id":')
    pieces.add(_json_string_column(table.column("run_id")))
    pieces.add(',"seq":')
    pieces.add(pc.fill_null(pc.cast(seq, _LS), "null"))
    pieces.add(',"tenant_id":')
    pieces.add(_json_string_column(table.column("tenant_id")))
    pieces.add(',"ts":')
    pieces.add(ts_text)
    pieces.add(',"type":')
    pieces.add(_json_string_column(table.column("type")))
    pieces.add("}")
    return pieces.join(n)


def _chain_spec(table: pa.Table) -> tuple[list[Any], list[Any], Any, list[Any]] | None:
    """:func:`_content_column`'s content as the native core's pieces (``head``,
    ``derived`` where ``sealed``, ``tail``; :func:`replaykit._base.native.chain_hex`), or None
    when a column is of a type the core does not write (the reference then builds the bytes
    and names the problem). The same bytes: ``tests/test_native.py`` compares the digests."""
    def piece(col: pa.ChunkedArray | pa.Array, **kw: Any) -> Any:
        arr = _one_array(col)
        got = _native.chain_piece(arr, **kw)
        if got is None:
            raise LookupError
        return got

    def lit(s: str) -> tuple[str, bytes]:
        return ("lit", s.encode("utf-8"))

    names = table.schema.names
    try:
        ts = _one_array(table.column("ts"))
        if ts.type != _TS_TYPE:
            ts = ts.cast(_TS_TYPE)
        derived: list[Any] = []
        sealed = _sealed_rows(table)
        mask = None
        if sealed is not None:
            formats = _formats(table)
            assert formats is not None
            lead = '"derived":{'
            for i, key in enumerate(SEALED_MEMBERS):
                derived.append(lit(lead + ("" if i == 0 else ",") + _json_string(key) + ":"))
                lead = ""
                if key == "format":
                    derived.append(piece(formats))
                elif key in names:
                    derived.append(piece(table.column(key)))
                else:
                    derived.append(lit("null"))
            derived.append(lit("},"))
            if sealed.null_count or not pc.all(sealed).as_py():
                mask = np.asarray(pc.fill_null(sealed, False)).astype(np.uint8)
        tail = [
            piece(table.column("payload"), member=b'"payload":'),
            lit('"run_id":'), piece(table.column("run_id")),
            lit(',"seq":'), piece(table.column("seq")),
            lit(',"tenant_id":'), piece(table.column("tenant_id")),
            lit(',"ts":'), piece(pc.cast(ts, pa.int64())),
            lit(',"type":'), piece(table.column("type")),
            lit("}"),
        ]
    except LookupError:
        return None
    return [lit("{")], derived, mask, tail


def _offsets(arr: pa.Array) -> tuple[memoryview, list[int]]:
    """The data buffer and the n + 1 offsets of a large_string array."""
    n = len(arr)
    offs = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
    data = arr.buffers()[2]
    return memoryview(data if data is not None else b""), offs.tolist()
