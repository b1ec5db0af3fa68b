"""Tamper-evident logs: the per-run hash chain, its verification, and portable proofs.

The chain (full definition in ``docs/integrity.md``): within each (tenant_id, run_id), rows in
``seq`` order, ::

    row_hash = sha256( prev_hash  ||  row_content ).hexdigest()
    prev_hash = GENESIS ("0" * 64) for the first row, else the previous row's row_hash

where ``prev_hash`` enters as its 64 ASCII hex characters and ``row_content`` is the canonical
JSON (RFC 8785 style: sorted keys, no insignificant whitespace, UTF-8, ECMAScript number form)
of the row's *content* columns::

    {"payload":<payload text, verbatim>,"run_id":"…","seq":17,"tenant_id":"…",
     "ts":<microseconds since the Unix epoch, UTC, or null>,"type":"…"}

Content = what the producer recorded (:data:`CONTENT_COLUMNS`); a NULL payload (raw tables
only) leaves the ``payload`` member out. Everything else in the canonical schema is either
derived by a loader (:data:`~replaykit.schema.DERIVED_COLUMNS`: kind, ref_id, tool_name,
tokens, …), provenance/storage (source, source_line) or the chain itself (prev_hash,
row_hash). Derived columns of pleach rows are not hashed but re-derived from ``type`` +
``payload`` and compared by :func:`verify_chain`; rows of every other format (whose loaders
derive from file structure) hash them, with their format, as a ``derived`` member
(:data:`SEALED_MEMBERS`). :func:`chain_manifest` is the anchored
record of a log: every run of every tenant with its head, sealed by one digest.

Verification is column-wise: the canonical content bytes of every row are built with Arrow
string kernels, the link, sequence and head checks are numpy/Arrow comparisons, and only the
sha256 call itself runs once per row (hashing is per row by nature).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from . import _native
from .errors import ReplayKitError
from .eventlog import EventLog, to_pandas
from .schema import DERIVED_COLUMNS, sort_order
from .schema import run_starts as _run_starts
from .tenancy import tenant_id_problem

__all__ = [
    "CONTENT_COLUMNS",
    "GENESIS",
    "REDERIVED_FORMAT",
    "SEALED_MEMBERS",
    "PROBLEM_KINDS",
    "ChainManifest",
    "ManifestError",
    "RunHead",
    "canonical_json",
    "chain_heads",
    "chain_manifest",
    "chain_proof",
    "row_content",
    "source_format",
    "stamp_chain",
    "verify_chain",
    "verify_proof",
]

#: ``prev_hash`` of the first row of every run: 64 ASCII zeros.
GENESIS = "0" * 64

#: Columns whose values are hashed, in canonical (sorted) key order.
CONTENT_COLUMNS: tuple[str, ...] = ("payload", "run_id", "seq", "tenant_id", "ts", "type")

#: The ``kind`` values of :func:`verify_chain` problems.
PROBLEM_KINDS: tuple[str, ...] = (
    "hash_mismatch",
    "link_mismatch",
    "seq_gap",
    "duplicate_seq",
    "head_mismatch",
    "unexpected_run",
    "missing_run",
    "derived_mismatch",
    "malformed_value",
)

_PROOF_VERSION = 2  # 2: steps of sealed-format rows carry their ``derived`` member
_PROOF_VERSIONS = (1, 2)
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


def _row_hash(prev_hash: str, content: bytes) -> str:
    h = hashlib.sha256(prev_hash.encode("ascii", errors="replace"))
    h.update(content)
    return h.hexdigest()


# --------------------------------------------------------------------------- column-wise bytes


def _plain(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
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
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
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
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col

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
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
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
    ts = table.column("ts").combine_chunks()
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
    seq = table.column("seq").combine_chunks()
    if strict:
        _hashable_ranges(table)
    ts = table.column("ts").combine_chunks()
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
    ``derived`` where ``sealed``, ``tail``; :func:`replaykit._native.chain_hex`), or None
    when a column is of a type the core does not write (the reference then builds the bytes
    and names the problem). The same bytes: ``tests/test_native.py`` compares the digests."""
    def piece(col: pa.ChunkedArray | pa.Array, **kw: Any) -> Any:
        arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        got = _native.chain_piece(arr, **kw)
        if got is None:
            raise LookupError
        return got

    def lit(s: str) -> tuple[str, bytes]:
        return ("lit", s.encode("utf-8"))

    names = table.schema.names
    try:
        ts = table.column("ts").combine_chunks()
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


def _digests(joined: pa.Array) -> bytes:
    """The raw 32-byte sha256 digest of every row of a large_string array, concatenated
    (cheaper than hexdigest per row; hex-encoded column-wise by :func:`_hex_column`)."""
    if _native.enabled():  # the native core: one call per block, GIL released, SHA-NI
        return bytes(_native.core().sha256_many(*_native.spans(joined)))
    mv, offs_list = _offsets(joined)
    sha = hashlib.sha256
    return b"".join([sha(mv[a:b]).digest()
                     for a, b in zip(offs_list[:-1], offs_list[1:], strict=True)])


#: Rows per block of verify_chain's hashing pipeline (:func:`_verify_hashes`).
_HASH_BLOCK_ROWS = 65_536


def _blocks_ahead(n: int, build: Callable[[int, int], pa.Array], *,
                  block_rows: int | None = None, workers: int = 2
                  ) -> Iterator[tuple[int, pa.Array]]:
    """``(start, build(start, length))`` of each block of ``n`` rows, in order, built ahead.

    ``workers`` threads build the next blocks (Arrow kernels, which release the GIL) while
    the caller consumes the current one (the hashing loop, which holds it). At most
    ``workers + 1`` blocks wait at a time, so memory stays bounded by the block size rather
    than the table's, and the blocks' buffers stay small enough to be reused rather than
    faulted in afresh. One block: built on the calling thread.
    """
    size = max(1, block_rows or _HASH_BLOCK_ROWS)
    if n <= size:
        yield 0, build(0, n)
        return
    starts = iter(range(0, n, size))
    with ThreadPoolExecutor(workers) as pool:
        pending: deque[tuple[int, Future[pa.Array]]] = deque(
            (s, pool.submit(build, s, min(size, n - s)))
            for _, s in zip(range(workers + 1), starts, strict=False)
        )
        while pending:
            at, fut = pending.popleft()
            block = fut.result()
            nxt = next(starts, None)
            if nxt is not None:
                pending.append((nxt, pool.submit(build, nxt, min(size, n - nxt))))
            yield at, block


def _verify_hashes(table: pa.Table, prev: pa.Array, *, block_rows: int | None = None,
                   workers: int = 2) -> pa.Array:
    """sha256(prev || content) of every row, as hex strings, content being
    :func:`_content_column` (``strict=False``): the same bytes as the whole table's, built
    block by block ahead of the hashing loop (:func:`_blocks_ahead`)."""
    spec = _chain_spec(table) if _native.enabled() else None
    if spec is not None:  # the native core: content and hashes in one pass, every core
        stored = pc.cast(prev, _LS)
        if isinstance(stored, pa.ChunkedArray):
            stored = stored.combine_chunks()
        return _native.chain_hex(*spec, ("stored", *_native.spans(stored),
                                         _native._validity(stored)), table.num_rows)
    prev = pc.cast(pc.fill_null(prev, ""), _LS)
    empty = pa.scalar("", _LS)

    def build(start: int, k: int) -> pa.Array:
        content = _content_column(table.slice(start, k), strict=False)
        return pc.binary_join_element_wise(prev.slice(start, k), content, empty)

    out = [_digests(joined) for _, joined in _blocks_ahead(
        table.num_rows, build, block_rows=block_rows, workers=workers)]
    return _hex_column(b"".join(out))


def _hex_column(digests: bytes) -> pa.Array:
    """The lowercase hex text of each 32-byte digest of ``digests``, as a string array."""
    text = digests.hex().encode("ascii")
    n = len(digests) // 32
    large = 64 * n > 2**31 - 1  # (over 33M rows: 64-bit offsets)
    offsets = np.arange(0, 64 * (n + 1), 64, dtype=np.int64 if large else np.int32)
    arr = pa.Array.from_buffers(pa.large_string() if large else pa.string(), n,
                                [None, pa.py_buffer(offsets), pa.py_buffer(text)])
    return arr


def _as_table(log: EventLog | pa.Table) -> pa.Table:
    if isinstance(log, EventLog):
        return log.table
    if isinstance(log, pa.Table):
        missing = [
            c for c in (*CONTENT_COLUMNS, "prev_hash", "row_hash") if c not in log.schema.names
        ]
        if missing:
            raise ValueError(f"table lacks the columns {missing} needed to check the chain")
        lacking = [c for c in DERIVED_COLUMNS if c not in log.schema.names]
        if lacking and _sealed_rows(log) is not None:
            raise ValueError(
                f"table lacks the derived columns {lacking}, which the chain of its rows of "
                "formats other than pleach covers; pass the full canonical table (all of "
                "replaykit.schema.DERIVED_COLUMNS)"
            )
        order = sort_order(log)
        if len(order) and not np.array_equal(order, np.arange(len(order))):
            log = log.take(pa.array(order))
        return log
    raise TypeError(f"expected an EventLog or a pyarrow.Table, got {type(log).__name__}")


# --------------------------------------------------------------------------- stamping


def stamp_chain(log: EventLog, *, overwrite: bool = False) -> EventLog:
    """A copy of ``log`` with ``prev_hash`` and ``row_hash`` filled in for every run.

    Each run is chained from :data:`GENESIS` in ``seq`` order (see the module docstring and
    ``docs/integrity.md``). Content bytes are built column-wise; the chaining itself is
    sequential, one sha256 per row.

    Raises:
        ValueError: ``log`` already carries hashes (re-stamping would launder tampering)
            unless ``overwrite=True``; or a ``seq`` outside +-(2**53 - 1).
        TypeError: ``log`` is not an EventLog.

    >>> chained = stamp_chain(log)  # doctest: +SKIP
    >>> verify_chain(chained).empty  # doctest: +SKIP
    True
    """
    if not isinstance(log, EventLog):
        raise TypeError(f"stamp_chain takes an EventLog, got {type(log).__name__}")
    table = log.table
    if not overwrite and table.column("row_hash").null_count < table.num_rows:
        raise ValueError(
            "log already has row hashes; verify it with verify_chain(log), or pass "
            "overwrite=True to re-stamp it (this replaces the existing chain)"
        )
    spec = _chain_spec(table) if _native.enabled() else None
    if spec is not None:  # the native core: content and chained hashes in one pass
        _hashable_ranges(table)
        starts_np = _run_starts(table)
        hashes = _native.chain_hex(*spec, ("chained", starts_np.astype(np.uint8),
                                           GENESIS.encode("ascii")), table.num_rows)
        n = table.num_rows
        shifted = pa.concat_arrays([pa.array([GENESIS], pa.string()), hashes.slice(0, n - 1)]) \
            if n else pa.array([], pa.string())  # fmt: skip
        prev_col = pc.if_else(pa.array(starts_np, pa.bool_()), pa.scalar(GENESIS), shifted)
        table = table.set_column(table.schema.get_field_index("prev_hash"), "prev_hash",
                                 prev_col)
        table = table.set_column(table.schema.get_field_index("row_hash"), "row_hash", hashes)
        return EventLog(table, runs=log.runs, quarantine=log.quarantine, extras=log.extras,
                        sort=False)
    starts = _run_starts(table).tolist()
    genesis = GENESIS.encode("ascii")
    sha = hashlib.sha256
    prevs: list[str] = []
    rows: list[str] = []
    prev = genesis
    # the content bytes are built block by block on worker threads ahead of this loop
    for at, content in _blocks_ahead(
            table.num_rows, lambda s, k: _content_column(table.slice(s, k))):
        mv, offs = _offsets(content)
        for j, start in enumerate(starts[at : at + len(content)]):
            if start:
                prev = genesis
            h = sha(prev)
            h.update(mv[offs[j] : offs[j + 1]])
            hx = h.hexdigest()
            prevs.append(prev.decode("ascii"))
            rows.append(hx)
            prev = hx.encode("ascii")
    idx = table.schema.get_field_index("prev_hash")
    table = table.set_column(idx, "prev_hash", pa.array(prevs, pa.string()))
    idx = table.schema.get_field_index("row_hash")
    table = table.set_column(idx, "row_hash", pa.array(rows, pa.string()))
    return EventLog(table, runs=log.runs, quarantine=log.quarantine, extras=log.extras, sort=False)


def chain_heads(log: EventLog | pa.Table) -> pd.DataFrame:
    """One row per run: tenant_id, run_id, seq and row_hash of its last row (its head).

    Store this frame somewhere the log's writer cannot change (a separate system, a signed
    file, a ledger): passed back to :func:`verify_chain` as ``expected_heads`` it detects
    rows cut from the end of a run, which the chain alone cannot.

    >>> heads = chain_heads(chained)  # doctest: +SKIP
    >>> verify_chain(chained, expected_heads=heads).empty  # doctest: +SKIP
    True
    """
    table = _as_table(log)
    n = table.num_rows
    if n == 0:
        return pd.DataFrame(
            {
                "tenant_id": pd.Series([], dtype="str"),
                "run_id": pd.Series([], dtype="str"),
                "seq": pd.Series([], dtype="Int64"),
                "row_hash": pd.Series([], dtype="str"),
            }
        )
    starts = _run_starts(table)
    last = np.flatnonzero(np.append(starts[1:], True))
    sub = table.take(pa.array(last)).select(["tenant_id", "run_id", "seq", "row_hash"])
    sub = pa.table({name: _plain(sub.column(name)) for name in sub.schema.names})
    return to_pandas(sub)


# --------------------------------------------------------------------------- manifest

_MANIFEST_VERSION = 1
_HEX64 = re.compile("[0-9a-fA-F]{64}")
_MANIFEST_KEY = "replaykit_chain_manifest"


class ManifestError(ReplayKitError, ValueError):
    """A chain manifest is malformed, or its digest does not match its content.

    A manifest whose digest disagrees with its runs was edited after it was made (or
    damaged): it is refused rather than trusted. Make a fresh one from a trusted copy of
    the log with :func:`chain_manifest`.
    """


@dataclass(frozen=True)
class RunHead:
    """The anchored head of one run: its last row's ``seq`` and ``row_hash``."""

    seq: int
    row_hash: str


def _manifest_body(tenants: Mapping[str, Mapping[str, RunHead]]) -> dict[str, Any]:
    return {
        _MANIFEST_KEY: _MANIFEST_VERSION,
        "algorithm": "sha256",
        "tenants": {
            t: {r: {"seq": h.seq, "row_hash": h.row_hash} for r, h in runs.items()}
            for t, runs in tenants.items()
        },
    }


def _manifest_digest(tenants: Mapping[str, Mapping[str, RunHead]]) -> str:
    body = canonical_json(_manifest_body(tenants)).encode("utf-8")
    return hashlib.sha256(body).hexdigest()


@dataclass(frozen=True)
class ChainManifest:
    """The anchored record of a log: for each tenant, every run and its head, plus a digest.

    ``tenants`` maps tenant id -> run id -> :class:`RunHead`. ``digest`` is the lowercase hex
    SHA-256 of the canonical JSON (:func:`canonical_json`) of the manifest without its
    ``digest`` member, so the whole manifest is anchored (signed, published, mailed) by that
    one value. Passed to :func:`verify_chain` as ``expected_heads``, a run in the log that
    the manifest does not list is ``unexpected_run``, a listed run that is not in the log
    is ``missing_run``, and each listed run's last row must be its head (``head_mismatch``
    otherwise). Build one with :func:`chain_manifest`; store it with :meth:`to_json`.

    Raises:
        ManifestError: the digest does not match the content (the manifest was edited), or
            the content is malformed (a non-string id, a non-integer seq, a bad hash).

    >>> m = chain_manifest(chained)  # doctest: +SKIP
    >>> ChainManifest.from_json(m.to_json()) == m  # doctest: +SKIP
    True
    """

    tenants: Mapping[str, Mapping[str, RunHead]]
    digest: str

    def __post_init__(self) -> None:
        if not isinstance(self.tenants, Mapping) or not isinstance(self.digest, str):
            raise ManifestError("chain manifest needs a tenants mapping and a digest string")
        for t, runs in self.tenants.items():
            if not isinstance(t, str) or not isinstance(runs, Mapping):
                raise ManifestError(f"manifest tenant {t!r}: expected a string id and its runs")
            problem = tenant_id_problem(t)
            if problem is not None:
                raise ManifestError(f"manifest tenant {t!r}: the tenant id {problem}")
            for r, h in runs.items():
                ok = (
                    isinstance(r, str)
                    and isinstance(h, RunHead)
                    and type(h.seq) is int
                    and isinstance(h.row_hash, str)
                    and len(h.row_hash) == 64
                    and _HEX64.fullmatch(h.row_hash) is not None
                )
                if not ok:
                    raise ManifestError(
                        f"manifest run {r!r} of tenant {t!r}: expected a string run id with an "
                        "integer seq and a 64-character hex row_hash"
                    )
                if not 0 <= h.seq <= _MAX_SAFE_INT:
                    # no event has it (seqs are >= 0), and beyond 2**53 - 1 canonical JSON
                    # cannot write it (nor can the int64 seq column hold more than 2**63 - 1)
                    raise ManifestError(
                        f"manifest run {r!r} of tenant {t!r}: seq {h.seq} is out of range "
                        f"(0 to {_MAX_SAFE_INT}); no event has such a seq"
                    )
        want = _manifest_digest(self.tenants)
        if self.digest != want:
            raise ManifestError(
                f"manifest digest {self.digest!r} does not match its content (sha256 "
                f"{want!r}): the manifest was changed after it was made; make a new one from "
                "a trusted copy of the log with replaykit.integrity.chain_manifest(log)"
            )

    @classmethod
    def build(cls, tenants: Mapping[str, Mapping[str, RunHead]]) -> ChainManifest:
        """A manifest of ``tenants`` with its digest computed."""
        frozen = {t: dict(runs) for t, runs in tenants.items()}
        return cls(frozen, _manifest_digest(frozen))

    @property
    def n_runs(self) -> int:
        """How many runs the manifest lists (over all tenants)."""
        return sum(len(runs) for runs in self.tenants.values())

    def heads(self) -> pd.DataFrame:
        """The listed runs as a frame: tenant_id, run_id, seq, row_hash (as chain_heads)."""
        recs = [
            {"tenant_id": t, "run_id": r, "seq": h.seq, "row_hash": h.row_hash}
            for t, runs in self.tenants.items()
            for r, h in runs.items()
        ]
        df = pd.DataFrame.from_records(recs, columns=["tenant_id", "run_id", "seq", "row_hash"])
        df["seq"] = pd.array(df["seq"], dtype="Int64")
        return df

    def for_tenants(self, tenants: Iterable[str]) -> ChainManifest:
        """The part of the manifest that covers ``tenants`` (with its own digest)."""
        keep = set(tenants)
        return ChainManifest.build({t: r for t, r in self.tenants.items() if t in keep})

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (the body plus ``digest``)."""
        return {**_manifest_body(self.tenants), "digest": self.digest}

    def to_json(self) -> str:
        """The manifest as canonical JSON text (what :meth:`from_json` reads)."""
        return canonical_json(self.to_dict())

    @classmethod
    def from_dict(cls, obj: Any, *, expected_digest: str | None = None) -> ChainManifest:
        """Read a manifest from :meth:`to_dict` output; the digest is checked.

        The digest matching the content only shows the manifest was not edited *by hand*:
        whoever can rewrite the manifest can recompute its digest. Pass the digest you
        anchored (signed, published) as ``expected_digest`` to refuse any other manifest.

        Raises:
            ManifestError: not a manifest, a malformed one, one whose digest does not
                match its content, or (``expected_digest``) not the anchored manifest.
        """
        manifest = cls._from_dict(obj)
        if expected_digest is not None and manifest.digest != expected_digest.strip().lower():
            raise ManifestError(
                f"manifest digest {manifest.digest!r} is not the anchored digest "
                f"{expected_digest!r}: this is not the manifest that was anchored (it was "
                "replaced and re-digested); use the anchored manifest"
            )
        return manifest

    @classmethod
    def _from_dict(cls, obj: Any) -> ChainManifest:
        if not isinstance(obj, Mapping) or obj.get(_MANIFEST_KEY) is None:
            raise ManifestError(
                f"not a replaykit chain manifest (no {_MANIFEST_KEY!r} member); make one with "
                "replaykit.integrity.chain_manifest(log).to_json()"
            )
        if obj.get(_MANIFEST_KEY) != _MANIFEST_VERSION or obj.get("algorithm") != "sha256":
            raise ManifestError(
                f"unsupported chain manifest (version {obj.get(_MANIFEST_KEY)!r}, algorithm "
                f"{obj.get('algorithm')!r}); this replaykit reads version {_MANIFEST_VERSION}, "
                "sha256"
            )
        extra = sorted(set(obj) - {_MANIFEST_KEY, "algorithm", "tenants", "digest"})
        if extra:
            raise ManifestError(f"chain manifest has unknown members {extra}")
        tenants = obj.get("tenants")
        digest = obj.get("digest")
        if not isinstance(tenants, Mapping) or not isinstance(digest, str):
            raise ManifestError("chain manifest needs a 'tenants' object and a 'digest' string")
        out: dict[str, dict[str, RunHead]] = {}
        for t, runs in tenants.items():
            if not isinstance(runs, Mapping):
                raise ManifestError(f"manifest tenant {t!r}: its runs must be an object")
            out[t] = {}
            for r, h in runs.items():
                if not isinstance(h, Mapping) or set(h) != {"seq", "row_hash"}:
                    raise ManifestError(
                        f"manifest run {r!r} of tenant {t!r} must be {{'seq': int, "
                        "'row_hash': str}}"
                    )
                out[t][r] = RunHead(h["seq"], h["row_hash"])
        return cls(out, digest)

    @classmethod
    def from_json(cls, text: str | bytes, *, expected_digest: str | None = None
                  ) -> ChainManifest:
        """Read a manifest from :meth:`to_json` text; the digest is checked (and compared
        with ``expected_digest``, the anchored one, when given: see :meth:`from_dict`).

        Raises:
            ManifestError: not JSON, not a manifest, a digest that does not match, or
                (``expected_digest``) not the anchored manifest.
        """
        try:
            obj = json.loads(text)
        except ValueError as exc:  # also a number of more digits than Python parses
            raise ManifestError(f"chain manifest is not valid JSON: {exc}") from exc
        except RecursionError:
            raise ManifestError("chain manifest is nested too deeply to be one (a manifest "
                                "is three objects deep)") from None
        return cls.from_dict(obj, expected_digest=expected_digest)


def chain_manifest(log: EventLog | pa.Table) -> ChainManifest:
    """The :class:`ChainManifest` of ``log``: every run of every tenant with its head.

    Anchor the manifest (or just its ``digest``) somewhere the log's writer cannot change;
    ``verify_chain(log, expected_heads=manifest)`` then also detects runs added to the log
    (``unexpected_run``), runs removed from it (``missing_run``) and rows cut from or added
    to the end of a run (``head_mismatch``).

    >>> manifest = chain_manifest(chained)  # doctest: +SKIP
    >>> open("manifest.json", "w").write(manifest.to_json())  # doctest: +SKIP
    >>> verify_chain(chained, expected_heads=manifest).empty  # doctest: +SKIP
    True
    """
    heads = chain_heads(log)
    tenants: dict[str, dict[str, RunHead]] = {}
    for t, r, s, h in zip(
        heads["tenant_id"].tolist(), heads["run_id"].tolist(), heads["seq"].tolist(),
        heads["row_hash"].tolist(), strict=True,
    ):
        if not isinstance(h, str):
            raise ValueError(
                f"run {r!r} of tenant {t!r} has no row_hash on its last row: stamp the log "
                "with stamp_chain before making its manifest"
            )
        tenants.setdefault(t, {})[r] = RunHead(int(s), h)
    return ChainManifest.build(tenants)


# --------------------------------------------------------------------------- verification

_PROBLEM_SCHEMA = pa.schema(
    [
        ("tenant_id", pa.string()),
        ("run_id", pa.string()),
        ("seq", pa.int64()),
        ("kind", pa.string()),
        ("expected", pa.string()),
        ("found", pa.string()),
    ]
)


def _problem_frame(parts: list[pa.Table]) -> pd.DataFrame:
    table = pa.concat_tables(parts) if parts else _PROBLEM_SCHEMA.empty_table()
    df = to_pandas(table)
    if len(df):
        rank = {k: i for i, k in enumerate(PROBLEM_KINDS)}
        df["_k"] = df["kind"].map(rank)
        df = df.sort_values(["tenant_id", "run_id", "seq", "_k"], kind="stable", na_position="last")
        df = df.drop(columns="_k").reset_index(drop=True)
    return df


def _problems(
    table: pa.Table, mask: np.ndarray | pa.Array, kind: str, expected: Any, found: Any
) -> pa.Table:
    m = pa.array(np.asarray(mask, dtype=bool)) if isinstance(mask, np.ndarray) else mask
    cols = {
        "tenant_id": _plain(table.column("tenant_id")).filter(m),
        "run_id": _plain(table.column("run_id")).filter(m),
        "seq": table.column("seq").combine_chunks().filter(m),
        "kind": pa.array([kind] * int(pc.sum(pc.cast(m, pa.int64())).as_py() or 0), pa.string()),
        "expected": pc.cast(expected.filter(m), pa.string()),
        "found": pc.cast(found.filter(m), pa.string()),
    }
    return pa.table(cols, schema=_PROBLEM_SCHEMA)


def _as_manifest(expected_heads: Any) -> ChainManifest | None:
    """``expected_heads`` as a manifest (a ChainManifest or its dict form), else None."""
    if isinstance(expected_heads, ChainManifest):
        return expected_heads
    if isinstance(expected_heads, Mapping) and _MANIFEST_KEY in expected_heads:
        return ChainManifest.from_dict(expected_heads)
    return None


def _normalise_heads(expected_heads: Any) -> pd.DataFrame:
    """Anchors as a frame with tenant_id (maybe null), run_id, seq (maybe null), row_hash."""
    if isinstance(expected_heads, pa.Table):
        expected_heads = expected_heads.to_pandas()
    if isinstance(expected_heads, pd.DataFrame):
        if not {"run_id", "row_hash"} <= set(expected_heads.columns):
            raise ValueError(
                "expected_heads needs columns run_id and row_hash (tenant_id and seq optional); "
                "build it with chain_heads(log)"
            )
        df = expected_heads.copy()
    elif isinstance(expected_heads, Mapping):
        recs = []
        for key, value in expected_heads.items():
            tenant, run = key if isinstance(key, tuple) else (None, key)
            recs.append({"tenant_id": tenant, "run_id": run, "row_hash": value})
        df = pd.DataFrame.from_records(recs, columns=["tenant_id", "run_id", "row_hash"])
    elif isinstance(expected_heads, Iterable) and not isinstance(expected_heads, (str, bytes)):
        df = pd.DataFrame.from_records(list(expected_heads))
        if not {"run_id", "row_hash"} <= set(df.columns):
            raise ValueError("each expected head needs run_id and row_hash")
    else:
        raise TypeError(
            "expected_heads must be a DataFrame (see chain_heads), a mapping "
            "{run_id or (tenant_id, run_id): row_hash} or a list of records"
        )
    for col in ("tenant_id", "seq"):
        if col not in df.columns:
            df[col] = None
    out = pd.DataFrame(
        {
            "tenant_id": df["tenant_id"].astype(object).where(df["tenant_id"].notna(), None),
            "run_id": df["run_id"].astype(str),
            "seq": pd.array(df["seq"], dtype="Int64"),
            "row_hash": df["row_hash"].astype(object),
        }
    )
    return out.reset_index(drop=True)


def _head_problems(table: pa.Table, starts: np.ndarray, heads: pd.DataFrame) -> pa.Table | None:
    if heads.empty:
        return None
    rows = to_pandas(
        pa.table(
            {
                "tenant_id": _plain(table.column("tenant_id")),
                "run_id": _plain(table.column("run_id")),
                "seq": table.column("seq").combine_chunks(),
                "row_hash": _plain(table.column("row_hash")),
            }
        )
    )
    last_mask = np.append(starts[1:], True) if len(rows) else np.zeros(0, dtype=bool)
    lasts = rows[last_mask]
    out = []
    for with_seq in (True, False):
        anchors = heads[heads["seq"].notna() == with_seq]
        for with_tenant in (True, False):
            a = anchors[anchors["tenant_id"].notna() == with_tenant]
            if a.empty:
                continue
            keys = (
                (["tenant_id"] if with_tenant else []) + ["run_id"] + (["seq"] if with_seq else [])
            )
            right = rows if with_seq else lasts
            a = a.drop(columns=[c for c in ("tenant_id", "seq") if c not in keys])
            merged = a.merge(right, on=keys, how="left", suffixes=("_expected", "_found"))
            bad = merged[
                merged["row_hash_found"].isna()
                | (
                    merged["row_hash_found"].astype(object)
                    != merged["row_hash_expected"].astype(object)
                )
            ]
            if bad.empty:
                continue
            out.append(
                pa.table(
                    {
                        "tenant_id": pa.array(bad["tenant_id"].astype(object), pa.string()),
                        "run_id": pa.array(bad["run_id"].astype(object), pa.string()),
                        "seq": pa.array(bad["seq"].astype(object), pa.int64()),
                        "kind": pa.array(["head_mismatch"] * len(bad), pa.string()),
                        "expected": pa.array(bad["row_hash_expected"].astype(object), pa.string()),
                        "found": pa.array(
                            bad["row_hash_found"]
                            .astype(object)
                            .where(bad["row_hash_found"].notna(), None),
                            pa.string(),
                        ),
                    },
                    schema=_PROBLEM_SCHEMA,
                )
            )
    return pa.concat_tables(out) if out else None


def _pleach_rows(table: pa.Table) -> pa.Table | None:
    """The rows of ``table`` whose derived columns are re-derived (None: none): the pleach
    rows, and every row that names no format (no ``source`` column, or a null there). Those
    hash in the six-key form like pleach rows, so every row either hashes its derived
    columns (:func:`_sealed_rows`) or has them re-derived: none escapes both."""
    from .io.pleach import DERIVED_COLUMNS as PLEACH_DERIVED

    names = table.schema.names
    if not table.num_rows or not any(c in names for c in PLEACH_DERIVED):
        return None
    formats = _formats(table)
    if formats is None:
        return table
    mine = pc.fill_null(pc.equal(formats, REDERIVED_FORMAT), True)
    count = pc.sum(pc.cast(mine, pa.int64())).as_py() or 0
    if not count:
        return None
    return table if count == table.num_rows else table.filter(mine)


def _typed_of(sub: pa.Table, *, threads: bool = True) -> pa.Table:
    """The pleach loader's typed payload fields of ``sub`` (one Arrow parse, GIL released;
    ``threads=False``: on this thread only)."""
    from .io.pleach import _typed_payloads

    return _typed_payloads(pc.cast(_plain(sub.column("payload")), _LS), threads=threads)


def _parsed_of(sub: pa.Table) -> pa.Table:
    """The typed fields of ``sub``'s payloads for the derived-column check, parsed on a
    second thread while the first builds the content bytes and hashes: Arrow's JSON reader
    on this one thread (it releases the GIL for its whole run, so it overlaps the hashing
    loop on the other core instead of competing with it for both cores). The tool calls'
    arguments (:func:`replaykit.io.pleach._derive.table_tool_args`, Python holding the GIL)
    are decoded afterwards on the first thread: on the second they only queued behind the
    hashing loop (measured: 1.50 s against 1.91 s for 300,000 rows, interleaved)."""
    return _typed_of(sub, threads=False)


def _text_mismatch(stored: pa.ChunkedArray | pa.Array, sources: list[Any]
                   ) -> np.ndarray | None:
    """The rows whose stored ``text`` is not the derived one, compared source by source.

    The derived ``text`` is the first non-null of ``sources`` (``_derived``); each row is
    compared with its first non-null source (a row with none must store null), so the
    derived column is never built. None when ``stored`` is not a string column (then the
    caller compares the built column).
    """
    col = _plain(stored)
    if pa.types.is_large_string(col.type):
        try:
            col = col.cast(pa.string())  # new offsets, the same data buffer
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
    if not pa.types.is_string(col.type):
        return None
    n = len(col)
    same = np.zeros(n, dtype=bool)
    todo = np.ones(n, dtype=bool)  # rows whose first non-null source is not yet reached
    for src in sources:
        if src.type != pa.string():
            src = src.cast(pa.string())
        valid = pc.is_valid(src).to_numpy(zero_copy_only=False)
        first = valid & todo
        if first.any():
            eq = pc.fill_null(pc.equal(col, src), False).to_numpy(zero_copy_only=False)
            same[first] = eq[first]
        todo &= ~valid
    same[todo] = ~pc.is_valid(col).to_numpy(zero_copy_only=False)[todo]
    return ~same


#: The derived columns that depend on the tool calls' canonical arguments (the rest are
#: compared on the parse thread while the main thread canonicalises the arguments).
_ARGS_COLUMNS = ("args_hash", "text")


def _derived_side(sub: pa.Table) -> tuple[dict[str, pa.Array], list[Any],
                                          list[tuple[str, pa.Table]]]:
    """The part of the derived-column check that needs no tool-call arguments, for a thread
    of its own: the Arrow parse of the payloads (:func:`_parsed_of`), the derived columns,
    and the comparison of all but :data:`_ARGS_COLUMNS` (placeholders stand in for the
    arguments until :func:`_derived_rest` puts them in)."""
    from .io.pleach._derive import _derived

    typed = _parsed_of(sub)
    n = sub.num_rows
    none = pa.nulls(n, pa.string())
    derived, sources = _derived(sub, typed=typed, tool_args=(none, none))
    rest = [c for c in sub.schema.names if c not in _ARGS_COLUMNS]
    return derived, sources, _compare_derived(sub, derived, sources, rest)


def _derived_rest(sub: pa.Table, side: tuple[dict[str, pa.Array], list[Any],
                                            list[tuple[str, pa.Table]]],
                  tool_args: tuple[pa.Array, pa.Array]) -> list[pa.Table]:
    """derived_mismatch problems of ``sub`` (the rows whose ``source`` names the pleach
    format, :func:`_pleach_rows`, re-derived by the pleach loader's own code) from
    :func:`_derived_side`'s result and the tool calls' arguments
    (:func:`replaykit.io.pleach._derive.table_tool_args`): ``expected`` / ``found`` are
    ``"<column>=<value>"`` (``null`` for a missing value), in DERIVED_COLUMNS order."""
    from .io.pleach import DERIVED_COLUMNS
    from .schema import EVENTS_SCHEMA

    derived, sources, done = side
    args, hashes = tool_args
    derived = dict(derived)
    derived["args_hash"] = _plain(hashes).cast(EVENTS_SCHEMA.field("args_hash").type)
    sources = [args, *sources[1:]]
    found = dict(done + _compare_derived(sub, derived, sources, _ARGS_COLUMNS))
    return [found[c] for c in DERIVED_COLUMNS if c in found]


def _compare_derived(sub: pa.Table, derived: dict[str, pa.Array], text_sources: list[Any],
                     only: Iterable[str] | None) -> list[tuple[str, pa.Table]]:
    """``(column, derived_mismatch rows)`` of each stored derived column of ``sub`` (of
    ``only``, if given) that differs from ``derived`` (``text``: from its sources), in
    :data:`DERIVED_COLUMNS` order."""
    from .io.pleach import DERIVED_COLUMNS
    from .io.pleach._derive import _text_column

    wanted = None if only is None else set(only)
    cols = [c for c in DERIVED_COLUMNS
            if c in sub.schema.names and (wanted is None or c in wanted)]
    out: list[tuple[str, pa.Table]] = []
    for c in cols:
        text_bad = _text_mismatch(sub.column(c), text_sources) if c == "text" else None
        if text_bad is not None and not text_bad.any():
            continue  # text holds: the column is never built
        if c == "text":
            derived[c] = _text_column(text_sources)
        stored, want = _plain(sub.column(c)), _plain(derived[c])
        if stored.type != want.type:
            try:
                stored = stored.cast(want.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                stored, want = pc.cast(stored, _LS), pc.cast(want, _LS)
        if text_bad is not None:
            bad = pa.array(text_bad)
        else:
            same = pc.or_kleene(
                pc.fill_null(pc.equal(stored, want), False),
                pc.and_(pc.is_null(stored), pc.is_null(want)),
            )
            bad = pc.invert(same)
        if c == "parent_run_id" and pc.any(bad).as_py():
            # a parent in another part of the log cannot be re-derived from this part:
            # only a stored parent that is a run here (or a parent the rows give) is checked
            tenant = pc.cast(_plain(sub.column("tenant_id")), pa.string())
            sep = pa.scalar("\x1f")
            runs = pc.unique(pc.binary_join_element_wise(
                tenant, pc.cast(_plain(sub.column("run_id")), pa.string()), sep))
            named = pc.binary_join_element_wise(tenant, pc.cast(stored, pa.string()), sep)
            checkable = pc.or_(pc.is_valid(want), pc.fill_null(pc.is_in(named, runs), False))
            bad = pc.and_(bad, checkable)
        if not pc.any(bad).as_py():
            continue

        def shown(arr: pa.Array, col: str = c) -> pa.Array:
            text = pc.fill_null(pc.cast(arr, _LS), "null")
            return pc.binary_join_element_wise(pa.scalar(col + "=", _LS), text,
                                               pa.scalar("", _LS))

        out.append((c, _problems(sub, bad, "derived_mismatch", shown(want), shown(stored))))
    return out


def _manifest_problems(
    table: pa.Table, starts: np.ndarray, manifest: ChainManifest
) -> list[pa.Table]:
    """unexpected_run, missing_run and head_mismatch of a log against its manifest."""
    n = table.num_rows
    last = np.flatnonzero(np.append(starts[1:], True)) if n else np.zeros(0, dtype=np.int64)
    idx = pa.array(last, pa.int64())
    lasts = to_pandas(
        pa.table(
            {
                "tenant_id": _plain(table.column("tenant_id")).take(idx),
                "run_id": _plain(table.column("run_id")).take(idx),
                "seq": table.column("seq").combine_chunks().take(idx),
                "row_hash": pc.cast(_plain(table.column("row_hash")), pa.string()).take(idx),
            }
        )
    )
    heads = manifest.heads()
    merged = lasts.merge(
        heads, on=["tenant_id", "run_id"], how="outer", suffixes=("_found", "_expected"),
        indicator=True,
    )

    def frame(rows: pd.DataFrame, kind: str, seq: str, expected: str | None,
              found: str | None) -> pa.Table:
        def strings(col: str | None) -> pa.Array:
            if col is None:
                return pa.nulls(len(rows), pa.string())
            v = rows[col].astype(object)
            return pa.array(v.where(v.notna(), None), pa.string())

        return pa.table(
            {
                "tenant_id": pa.array(rows["tenant_id"].astype(object), pa.string()),
                "run_id": pa.array(rows["run_id"].astype(object), pa.string()),
                "seq": pa.array(rows[seq].astype(object), pa.int64()),
                "kind": pa.array([kind] * len(rows), pa.string()),
                "expected": strings(expected),
                "found": strings(found),
            },
            schema=_PROBLEM_SCHEMA,
        )

    out = []
    extra = merged[merged["_merge"] == "left_only"]
    if len(extra):  # in the log, not in the manifest: seq/found = the run's head
        out.append(frame(extra, "unexpected_run", "seq_found", None, "row_hash_found"))
    gone = merged[merged["_merge"] == "right_only"]
    if len(gone):  # in the manifest, not in the log
        out.append(frame(gone, "missing_run", "seq_expected", "row_hash_expected", None))
    both = manifest.heads().merge(lasts[["tenant_id", "run_id"]], on=["tenant_id", "run_id"])
    hp = _head_problems(table, starts, both)  # the anchored row must hold the anchored hash
    if hp is not None:
        out.append(hp)
    matched = merged[merged["_merge"] == "both"]
    grown = matched[matched["seq_found"].astype("Int64") != matched["seq_expected"].astype("Int64")]
    grown = grown[grown["seq_found"].astype("Int64") > grown["seq_expected"].astype("Int64")]
    if len(grown):  # rows after the anchored head: the run's head is not the anchored one
        out.append(frame(grown, "head_mismatch", "seq_found", "row_hash_expected",
                         "row_hash_found"))
    return out


#: sys.setswitchinterval while verify_chain's threads run (Python's default: 5 ms).
_SWITCH_INTERVAL_S = 0.0005
_switch_lock = threading.Lock()
_switch_users = 0
_switch_saved = 0.005


@contextmanager
def _short_switches() -> Iterator[None]:
    """A short GIL switch interval for the block: the hashing loop holds the GIL, and each
    of the other threads' Arrow calls must win it back to return (up to one interval each,
    5 ms by default). Process-wide: saved by the first of concurrent users, restored by the
    last."""
    global _switch_users, _switch_saved
    with _switch_lock:
        if _switch_users == 0:
            _switch_saved = sys.getswitchinterval()
            sys.setswitchinterval(min(_switch_saved, _SWITCH_INTERVAL_S))
        _switch_users += 1
    try:
        yield
    finally:
        with _switch_lock:
            _switch_users -= 1
            if _switch_users == 0:
                sys.setswitchinterval(_switch_saved)


def verify_chain(log: EventLog | pa.Table, expected_heads: Any = None, *,
                 derived: bool = True, engine: str = "local", client: Any = None
                 ) -> pd.DataFrame:
    """Check the hash chain of every run; one row per problem, an empty frame when intact.

    Columns: ``tenant_id``, ``run_id``, ``seq``, ``kind``, ``expected``, ``found``. Kinds:

    * ``hash_mismatch`` -- the stored ``row_hash`` (found) is not sha256 of the stored
      ``prev_hash`` and the row's content (expected): the row was changed.
    * ``link_mismatch`` -- the stored ``prev_hash`` (found) is not the previous row's
      ``row_hash`` (or :data:`GENESIS` on a run's first row) (expected): a row before it was
      deleted, inserted or reordered.
    * ``seq_gap`` -- ``seq`` jumps by more than one (expected = previous seq + 1).
    * ``duplicate_seq`` -- more than one row holds this seq (found = how many rows).
    * ``head_mismatch`` -- an anchored head (``expected_heads``) is not in the log with that
      hash (found = the stored hash, or null when the row is missing); with a manifest, also
      a run that goes on past its anchored head (at its last seq, found = its last hash).
    * ``unexpected_run`` -- (manifest) a run of the log the manifest does not list, e.g. a
      fabricated run with its own valid chain (seq/found = the run's head).
    * ``missing_run`` -- (manifest) a run the manifest lists that is not in the log.
    * ``derived_mismatch`` -- a stored derived column (tool_name, is_error, text, tokens,
      ...) differs from what the loader derives from the row's hashed type + payload;
      expected / found are ``"<column>=<value>"``. Checked for rows whose ``source`` is
      pleach (re-derived by :func:`replaykit.io.pleach.derive_columns`); ``derived=False``
      skips the check. Rows of every other format hash their derived columns (the
      ``derived`` member of :func:`row_content`), so an edit there is a ``hash_mismatch``.
    * ``malformed_value`` -- a stored row held a value not of its column's type (SQLite:
      text in ``sequence_number``, a real in ``turn``, ...), so the loader quarantined it
      (``read_sql(..., errors="quarantine")``): tampering (expected = the columns' types,
      found = the stored values and the rowid). Reported for an :class:`EventLog`'s quarantine.

    ``log`` may be an :class:`EventLog` or a ``pyarrow.Table`` with the content and hash
    columns in any order (rows are stably sorted by tenant, run, seq; a raw table may hold
    duplicate seqs, which an EventLog cannot). Without ``expected_heads`` rows cut from the
    *end* of a run, and whole runs added or removed, cannot be detected. The anchor to use is
    a :class:`ChainManifest` (:func:`chain_manifest`; or its dict form): every run of every
    tenant with its head. Older anchors are still accepted: the frame :func:`chain_heads`
    returns, a mapping ``{run_id or (tenant_id, run_id):
    row_hash}`` (checked against the run's last row) or records with ``run_id``,
    ``row_hash`` and optional ``tenant_id`` and ``seq`` (a ``seq`` anchor only requires that
    row to exist with that hash, so a run may have grown since it was anchored).

    ``engine="dask"`` (optional ``client=``) checks a Parquet dataset path, EventLog or
    dask.dataframe partition by partition and returns the same frame (docs/scaling.md).

    Raises:
        TypeError: ``log`` or ``expected_heads`` has the wrong type.
        ValueError: a table lacks the needed columns; ``expected_heads`` lacks
            run_id/row_hash; a manifest or ``derived=False`` with ``engine="dask"``.
        ManifestError: a manifest (dict form) whose digest does not match its content.

    >>> problems = verify_chain(log, expected_heads=chain_manifest(trusted))  # doctest: +SKIP
    >>> problems.empty  # doctest: +SKIP
    True
    """
    if engine != "local":
        if not derived:
            raise ValueError("derived=False is supported by engine='local' only")
        if _as_manifest(expected_heads) is not None:
            raise ValueError(
                "a ChainManifest is checked by engine='local' only; pass "
                "expected_heads=manifest.heads() to check its heads per partition"
            )
        from .engine import dispatch  # _integrity_dask.py registers the implementation

        return dispatch(engine, verify_chain, log, expected_heads, client=client)
    manifest = _as_manifest(expected_heads)
    if manifest is not None:
        heads = None
    else:
        heads = None if expected_heads is None else _normalise_heads(expected_heads)
    table = _as_table(log)
    n = table.num_rows
    parts: list[pa.Table] = []
    # the derived-column check but the tool calls' arguments (_derived_side: Arrow's parse
    # of the payloads, which releases the GIL for its whole run, and column steps) runs on
    # a thread of its own while this one hashes (the content bytes are built on two more,
    # _blocks_ahead) and then canonicalises the arguments (Python, holding the GIL); short
    # GIL switches let the other threads' many short Arrow calls through (_short_switches)
    sub = _pleach_rows(table) if derived else None
    pool = ThreadPoolExecutor(1) if sub is not None else None
    derived_parts: list[pa.Table] = []
    try:
        with _short_switches():
            side = None if pool is None else pool.submit(_derived_side, sub)
            # with the derived side thread on one core, one content builder is enough
            starts = _chain_problems(table, n, parts, workers=1 if side is not None else 2)
            if side is not None and sub is not None:
                from .io.pleach._derive import table_tool_args

                tool_args = table_tool_args(sub)
                derived_parts = _derived_rest(sub, side.result(), tool_args)
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    if heads is not None:
        hp = _head_problems(table, starts, heads)
        if hp is not None:
            parts.append(hp)
    if manifest is not None:
        parts.extend(_manifest_problems(table, starts, manifest))
    parts.extend(derived_parts)
    if isinstance(log, EventLog) and log.quarantine.num_rows:
        from .sql import malformed_problems

        parts.append(malformed_problems(log.quarantine))
    return _problem_frame(parts)


def _chain_problems(table: pa.Table, n: int, parts: list[pa.Table], *,
                    workers: int = 2) -> np.ndarray:
    """hash_mismatch, link_mismatch, seq_gap and duplicate_seq of a sorted table (added to
    ``parts``); returns the run-start mask. ``workers``: threads building content bytes
    ahead of the hashing loop (:func:`_blocks_ahead`)."""
    if not n:
        return np.zeros(0, dtype=bool)
    if n:
        starts = _run_starts(table)
        stored_row = pc.cast(_plain(table.column("row_hash")), pa.string())
        stored_prev = pc.cast(_plain(table.column("prev_hash")), pa.string())
        computed = _verify_hashes(table, stored_prev, workers=workers)
        hash_ok = pc.fill_null(pc.equal(computed, stored_row), False)
        if not pc.all(hash_ok).as_py():
            parts.append(
                _problems(table, pc.invert(hash_ok), "hash_mismatch", computed, stored_row)
            )
        shifted = pa.concat_arrays([pa.array([GENESIS], pa.string()), stored_row.slice(0, n - 1)])
        expected_prev = pc.if_else(pa.array(starts), pa.scalar(GENESIS), shifted)
        link_ok = pc.fill_null(pc.equal(expected_prev, stored_prev), False)
        if not pc.all(link_ok).as_py():
            missing = pc.fill_null(expected_prev, "")
            parts.append(
                _problems(table, pc.invert(link_ok), "link_mismatch", missing, stored_prev)
            )
        seq = table.column("seq").to_numpy()
        same = np.zeros(n, dtype=bool)
        same[1:] = ~starts[1:]
        step = np.zeros(n, dtype=np.int64)
        step[1:] = seq[1:] - seq[:-1]
        gap = same & (step > 1)
        if gap.any():
            prev_seq = np.zeros(n, dtype=np.int64)
            prev_seq[1:] = seq[:-1] + 1
            parts.append(
                _problems(
                    table, gap, "seq_gap", pa.array(prev_seq), table.column("seq").combine_chunks()
                )
            )
        dup = same & (step == 0)
        if dup.any():
            block = np.cumsum(~dup)  # rows sharing (run, seq) share a block id
            sizes = np.bincount(block)[block]
            first_extra = dup & ~np.append(False, dup[:-1])
            parts.append(
                _problems(
                    table,
                    first_extra,
                    "duplicate_seq",
                    pa.array(np.full(n, "1 row", dtype=object), pa.string()),
                    pa.array([f"{s} rows" for s in sizes.tolist()], pa.string()),
                )
            )
    return starts


# --------------------------------------------------------------------------- proofs


def _proof_content(tenant_id: str, run_id: str, step: Mapping[str, Any]) -> bytes:
    derived = step.get("derived")
    if derived is not None and not isinstance(derived, Mapping):
        raise TypeError("a proof step's derived member must be an object")
    return row_content(
        {
            "payload": step["payload"],
            "run_id": run_id,
            "seq": step["seq"],
            "tenant_id": tenant_id,
            "ts": step["ts"],
            "type": step["type"],
            "derived": derived,
        }
    )


def chain_proof(
    log: EventLog, run_id: str, seq: int, *, tenant_id: str, head_seq: int | None = None
) -> dict[str, Any]:
    """A portable proof that event ``seq`` of a run is in that run's chain up to its head.

    The proof is a plain JSON-serialisable dict: the event's content and ``prev_hash``, the
    content of every later row up to the head (a hash chain has no shortcut: each link needs
    the next row's bytes), and the head ``(seq, row_hash)``. :func:`verify_proof` checks it
    with nothing but sha256; it convinces someone only if they trust the head hash (compare
    it with an anchored head).

    Args:
        head_seq: end the proof at this row instead of the run's last row.

    Raises:
        TypeError: ``tenant_id`` is missing or empty.
        KeyError: the tenant has no such run, or the run no row ``seq`` / ``head_seq``.
        ValueError: the stored chain between ``seq`` and the head does not verify (run
            :func:`verify_chain` to see where).

    >>> proof = chain_proof(log, "run-1", 17, tenant_id="acme")  # doctest: +SKIP
    >>> verify_proof(proof, expected_head=proof["head"]["row_hash"])  # doctest: +SKIP
    True
    """
    run = log.run(run_id, tenant_id=tenant_id)
    t = run.table
    seqs = t.column("seq").to_numpy()
    pos = np.flatnonzero(seqs == seq)
    if not len(pos):
        raise KeyError(f"run {run_id!r} of tenant {tenant_id!r} has no event with seq {seq}")
    end = len(seqs) - 1
    if head_seq is not None:
        hp = np.flatnonzero(seqs == head_seq)
        if not len(hp) or hp[0] < pos[0]:
            raise KeyError(f"head_seq {head_seq} is not a row at or after seq {seq}")
        end = int(hp[0])
    sub = t.slice(int(pos[0]), end - int(pos[0]) + 1)
    cols = {
        "seq": sub.column("seq").to_pylist(),
        "type": _plain(sub.column("type")).to_pylist(),
        "ts": pc.cast(sub.column("ts").combine_chunks().cast(_TS_TYPE), pa.int64()).to_pylist(),
        "payload": _plain(sub.column("payload")).to_pylist(),
        "prev_hash": sub.column("prev_hash").to_pylist(),
        "row_hash": sub.column("row_hash").to_pylist(),
    }
    steps = [
        {k: cols[k][i] for k in ("seq", "type", "ts", "payload", "row_hash")}
        for i in range(sub.num_rows)
    ]
    # rows of a sealed format (not pleach) hash their derived columns: the proof carries them
    formats = _formats(sub)
    if formats is not None and _sealed_rows(sub) is not None:
        present = [c for c in DERIVED_COLUMNS if c in sub.schema.names]
        values = {c: _plain(sub.column(c)).to_pylist() for c in present}
        for i, fmt in enumerate(formats.to_pylist()):
            if fmt != REDERIVED_FORMAT:
                d = {c: (values[c][i] if c in values else None) for c in DERIVED_COLUMNS}
                d["format"] = fmt
                steps[i]["derived"] = d
    event = dict(steps[0], prev_hash=cols["prev_hash"][0])
    proof = {
        "replaykit_chain_proof": _PROOF_VERSION,
        "algorithm": "sha256",
        "genesis": GENESIS,
        "tenant_id": tenant_id,
        "run_id": run_id,
        "event": event,
        "path": steps[1:],
        "head": {"seq": steps[-1]["seq"], "row_hash": steps[-1]["row_hash"]},
    }
    if not verify_proof(proof):
        raise ValueError(
            f"the stored chain of run {run_id!r} (tenant {tenant_id!r}) does not verify between "
            f"seq {seq} and seq {steps[-1]['seq']}; run verify_chain(log) to see where"
        )
    return proof


def verify_proof(proof: Mapping[str, Any], *, expected_head: Any = None) -> bool:
    """True when ``proof`` (from :func:`chain_proof`) links its event to its head.

    Recomputes the event's hash from its content and ``prev_hash``, then every later link,
    and checks the result against ``proof["head"]``. Pass ``expected_head`` (a row_hash
    string, or a mapping with ``row_hash`` and optionally ``seq``, e.g. one row of
    :func:`chain_heads` from a trusted copy) to also require that head: without it the
    proof is only internally consistent, which anyone could fabricate.

    Raises:
        ValueError: ``proof`` is not a replaykit chain proof (wrong version or missing keys).

    >>> verify_proof(proof, expected_head="9f2c…")  # doctest: +SKIP
    False
    """
    try:
        if (proof.get("replaykit_chain_proof") not in _PROOF_VERSIONS
                or proof["algorithm"] != "sha256"):
            raise ValueError(
                f"not a version-{_PROOF_VERSION} sha256 replaykit chain proof; "
                "build one with chain_proof(...)"
            )
        tenant, run = proof["tenant_id"], proof["run_id"]
        event, path, head = proof["event"], list(proof["path"]), proof["head"]
        h = _row_hash(str(event["prev_hash"]), _proof_content(tenant, run, event))
        if h != event["row_hash"]:
            return False
        last_seq = event["seq"]
        for step in path:
            if not isinstance(step["seq"], int) or step["seq"] <= last_seq:
                return False
            h = _row_hash(h, _proof_content(tenant, run, step))
            if h != step["row_hash"]:
                return False
            last_seq = step["seq"]
        if head["row_hash"] != h or head["seq"] != last_seq:
            return False
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"malformed chain proof: {exc!r}") from exc
    if expected_head is not None:
        if isinstance(expected_head, Mapping):
            if expected_head.get("row_hash") != h:
                return False
            want_seq = expected_head.get("seq")
            if want_seq is not None and not pd.isna(want_seq) and int(want_seq) != last_seq:
                return False
        elif expected_head != h:
            return False
    return True


def __getattr__(name: str) -> Any:
    """``verify_chain_command`` moved to the command line's layer (integrity reads no inputs)."""
    if name == "verify_chain_command":
        raise AttributeError("replaykit.integrity.verify_chain_command moved to "
                             "replaykit._cli_verify.verify_chain_command (the command line "
                             "reads the inputs; run it as `replaykit verify-chain`)",
                             name=name, obj=None)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
