"""JSON helpers: fast decoding (orjson when installed), canonical encoding and stable hashes.

Canonical JSON (used for ``payload`` columns built by loaders and for ``args_hash``):
sorted object keys, no insignificant whitespace, UTF-8 (non-ASCII characters are not escaped).
"""

from __future__ import annotations

import gc
import hashlib
import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

try:  # pragma: no cover - exercised implicitly when the [fast] extra is installed
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None  # type: ignore[assignment]

__all__ = [
    "HAVE_ORJSON", "MAX_DEPTH", "JSONDecodeError", "JSONLoneSurrogate", "JSONTooDeep",
    "args_hash", "canonical_json", "check_unicode", "dumps", "json_type", "loads",
    "lone_surrogate_line", "may_hold_long_ints",
]  # fmt: skip

HAVE_ORJSON = _orjson is not None

#: JSON nested deeper than this (arrays and objects) is rejected by :func:`loads`
#: (:class:`JSONTooDeep`), so every accepted value can be re-encoded and walked safely.
MAX_DEPTH = 200


class JSONTooDeep(ValueError):
    """JSON text nested deeper than :data:`MAX_DEPTH` levels (loaders: reason ``too_deep``)."""

    def __init__(self, depth: int | None = None) -> None:
        self.depth = depth
        what = f"{depth} levels" if depth is not None else "too many levels"
        super().__init__(f"JSON is nested {what} deep (at most {MAX_DEPTH} are accepted)")


class _NotFinite(ValueError):
    """A NaN/Infinity literal or a number too large for a double: not JSON."""


class _IntTooLong(ValueError):
    """An integer with more digits than Python converts (``sys.get_int_max_str_digits()``)."""


class JSONLoneSurrogate(ValueError):
    """A string with an unpaired UTF-16 surrogate escape (``"\\ud800"``): not Unicode text.

    orjson rejects these itself; the standard library decodes them into strings that cannot
    be encoded as UTF-8 (so they would break every later step), hence the same rejection.
    """

    def __init__(self, line: int | None = None) -> None:
        self.line = line
        where = f" (line {line})" if line is not None else ""
        super().__init__(f"a string holds an unpaired UTF-16 surrogate escape{where} "
                         "(\\ud800-\\udfff without its pair), which is not Unicode text")


# A run of 19+ digits may be an integer beyond 64 bits: orjson would turn it into a float and
# lose digits, so such text is decoded by the standard library (exact Python ints) instead.
# (Digits are mapped to "0" by one translate, then searched: much faster than a regex.)
_DIGITS_B = bytes.maketrans(b"0123456789", b"0000000000")
_LONG_B = b"0" * 19
_NEWLINE = re.compile(b"\n")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _reject_constant(name: str) -> Any:
    raise _NotFinite(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    x = float(text)
    if x in (float("inf"), float("-inf")):
        raise _NotFinite(f"number {text} is too large for a double")
    return x


def _depth(value: Any) -> int:
    """Nesting depth of arrays/objects in a decoded value (iterative; scalars are 0)."""
    best = 0
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            v = v.values()
        elif not isinstance(v, list):
            continue
        best = max(best, d)
        stack.extend((c, d + 1) for c in v if isinstance(c, (dict, list)))
    return best


def _stdlib_loads(data: bytes | str) -> Any:
    if isinstance(data, bytes):
        data = data.decode("utf-8")
    try:
        value = json.loads(data, parse_constant=_reject_constant, parse_float=_finite_float)
        check_unicode(data, value)
        return value
    except RecursionError:
        raise JSONTooDeep() from None
    except (json.JSONDecodeError, _NotFinite, JSONLoneSurrogate):
        raise
    except ValueError:  # int(text) past the interpreter's digit limit (4300 by default)
        raise _IntTooLong(f"an integer has more than {sys.get_int_max_str_digits()} digits "
                          "(Python's limit for decoding an integer)") from None


def lone_surrogate_line(text: str) -> int | None:
    """1-based line of the first unpaired UTF-16 surrogate escape (``\\ud800``) in JSON text,
    None when there is none (a cheap search; pairs such as ``\\ud83d\\ude00`` are fine)."""
    for m in _SURROGATE_ESCAPE.finditer(text):
        unit = int(m.group()[2:], 16)
        if unit < 0xDC00:  # a high surrogate must be followed by a low one
            nxt = _SURROGATE_ESCAPE.match(text, m.end())
            if nxt is not None and int(nxt.group()[2:], 16) >= 0xDC00:
                continue
        else:  # a low surrogate must follow a high one
            prev = _SURROGATE_ESCAPE.match(text, m.start() - 6) if m.start() >= 6 else None
            if prev is not None and int(prev.group()[2:], 16) < 0xDC00:
                continue
        return text.count("\n", 0, m.start()) + 1
    return None


def check_unicode(text: str, value: Any) -> None:
    """Raise :class:`JSONLoneSurrogate` when ``value`` (decoded from ``text`` by the standard
    library) holds a string that is not Unicode text; a no-op without surrogate escapes."""
    if _SURROGATE_ESCAPE.search(text) is None:
        return
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        line = lone_surrogate_line(text)
        raise JSONLoneSurrogate(line) from None


def _has_long_int(data: bytes | str) -> bool:
    if isinstance(data, str):  # str.translate is slow: translate the UTF-8 bytes instead
        data = data.encode("utf-8", "surrogatepass")
    return _LONG_B in data.translate(_DIGITS_B)


def _too_deep(data: bytes | str, value: Any) -> bool:
    if len(data) <= 2 * MAX_DEPTH:
        return False
    if isinstance(data, bytes):
        opened = data.count(b"{") + data.count(b"[")
    else:
        opened = data.count("{") + data.count("[")
    return opened > MAX_DEPTH and _depth(value) > MAX_DEPTH


def may_hold_long_ints(path: Any) -> bool:
    """True when a file holds a run of 19+ digits (an integer that may not fit 64 bits).

    One pass over the file in large chunks; a loader that gets False may decode its lines
    with ``loads(..., long_ints=False)`` and skip the per-line check.
    """
    tail = b""
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            if _LONG_B in (tail + chunk).translate(_DIGITS_B):
                return True
            tail = chunk[-18:]
    return False


def loads(data: bytes | str, *, long_ints: bool = True) -> Any:
    """Decode JSON text (bytes must be UTF-8), strictly and without loss.

    ``NaN``/``Infinity`` literals and numbers beyond a double's range are rejected (they are
    not JSON); integers keep every digit (also beyond 64 bits; ``long_ints=False`` skips
    that check, for text known to hold no run of 19 digits); text nested deeper than
    :data:`MAX_DEPTH` levels raises :class:`JSONTooDeep`. Every error is in
    :data:`JSONDecodeError`.

    >>> loads(b'{"n": 123456789012345678901234567890}')
    {'n': 123456789012345678901234567890}
    """
    if _orjson is not None and not (long_ints and _has_long_int(data)):
        value = _orjson.loads(data)
    else:
        value = _stdlib_loads(data)
    if _too_deep(data, value):
        raise JSONTooDeep(_depth(value))
    return value


def canonical_json(obj: Any) -> str:
    """Canonical JSON text of ``obj``: sorted keys, compact, UTF-8.

    Integers beyond 64 bits (which orjson cannot write) are written with every digit.

    Raises:
        JSONTooDeep: ``obj`` is nested too deep to encode.
    """
    if _orjson is not None:
        try:
            return _orjson.dumps(obj, option=_orjson.OPT_SORT_KEYS).decode("utf-8")
        except TypeError as exc:
            if "Recursion" in str(exc):
                raise JSONTooDeep() from None
    try:
        return _canonical_json_stdlib(obj)
    except RecursionError:
        raise JSONTooDeep() from None


if _orjson is not None:
    JSONDecodeError: tuple[type[Exception], ...] = (
        _orjson.JSONDecodeError, UnicodeDecodeError, json.JSONDecodeError, _NotFinite,
        _IntTooLong, JSONLoneSurrogate, JSONTooDeep,
    )  # fmt: skip
else:  # pragma: no cover - exercised by tests/test_json.py through _canonical_json_stdlib
    JSONDecodeError = (json.JSONDecodeError, UnicodeDecodeError, _NotFinite, _IntTooLong,
                       JSONLoneSurrogate, JSONTooDeep)


def _float_text(x: float) -> str:
    """A float as orjson writes it, so canonical text never depends on orjson being installed.

    orjson and ``repr`` agree except for negative exponents: orjson writes ``1e-7`` where repr
    writes ``1e-07``, and numbers of magnitude 1e-5 in plain decimal (``0.000015``).
    """
    if x != x or x in (float("inf"), float("-inf")):
        raise ValueError(f"{x!r} is not valid JSON")
    text = repr(x)
    mantissa, sep, exponent = text.partition("e")
    if not sep or not exponent.startswith("-"):
        return text
    power = int(exponent)
    if power == -5:
        sign = "-" if mantissa.startswith("-") else ""
        digits = mantissa.lstrip("-").replace(".", "")
        return f"{sign}0.0000{digits}"
    return f"{mantissa}e{power}"


def _canonical_json_stdlib(obj: Any) -> str:
    """Canonical JSON with the standard library only, byte-identical to the orjson path."""
    encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    iterencode = json.encoder._make_iterencode(  # type: ignore[attr-defined]
        {}, encoder.default, json.encoder.py_encode_basestring, None, _float_text,
        ":", ",", True, False, True,
    )
    return "".join(iterencode(obj, 0))


def dumps(obj: Any) -> str:
    """Alias of :func:`canonical_json`."""
    return canonical_json(obj)


def args_hash(arguments: Any) -> str:
    """Stable hash of tool-call arguments.

    ``arguments`` may be a parsed value (dict, list, ...) or a JSON string. A string that
    parses as JSON is hashed by its parsed value, so ``'{"b":1, "a":2}'`` and
    ``{"a": 2, "b": 1}`` hash alike; a string that does not parse is hashed as the string.
    The hash is ``sha256`` of the canonical JSON, hex, first 32 characters.

    >>> args_hash('{"b": 1, "a": 2}') == args_hash({"a": 2, "b": 1})
    True
    """
    value = arguments
    if isinstance(arguments, str):
        try:
            value = loads(arguments)
        except JSONDecodeError:
            value = arguments
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()[:32]


def rows_holding_any(texts: Any, needles: Any) -> Any:
    """Ascending positions (numpy int64) of the ``texts`` (an Arrow string array) that
    contain at least one of ``needles``.

    Each needle is searched only in the texts no earlier needle matched, so a needle every
    text holds ends the search after one pass: put the most frequent needle first.

    >>> import pyarrow as pa
    >>> rows_holding_any(pa.array(['{"a":1}', '{"b":2}', '{}']), ['"b"', '"a"']).tolist()
    [0, 1]
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rest = np.arange(len(texts))
    hit = np.zeros(len(texts), dtype=bool)
    for needle in needles:
        if not len(rest):
            break
        part = texts if len(rest) == len(texts) else texts.take(pa.array(rest))
        h = np.asarray(pc.fill_null(pc.match_substring(part, needle), False), dtype=bool)
        hit[rest[h]] = True
        rest = rest[~h]
    return np.flatnonzero(hit)


def payload_fields(payloads: Any, fields: dict[str, Any]) -> Any:
    """Pull typed fields out of many JSON payloads at once, column-wise (no Python row loop).

    ``payloads`` is an Arrow string array (e.g. a filtered ``payload`` column) of JSON objects;
    ``fields`` maps dotted paths (``"data.chunk.usage.inputTokens"``) to Arrow types. Returns a
    ``pyarrow.Table`` with one column per path (named by the path), one row per payload; a
    missing field, or a null payload, gives null. Parsing uses Arrow's multi-threaded JSON
    reader; fields not named are skipped without being converted.

    >>> import pyarrow as pa
    >>> t = payload_fields(pa.array(['{"a": {"b": 1}}', '{"a": {}}']), {"a.b": pa.int64()})
    >>> t.column("a.b").to_pylist()
    [1, None]
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    arr = payloads.combine_chunks() if isinstance(payloads, pa.ChunkedArray) else payloads
    n = len(arr)
    if n == 0:
        return pa.table({p: pa.array([], type=t) for p, t in fields.items()})
    arr = pc.fill_null(pc.cast(arr, pa.large_string()), "{}")
    # Build the nested explicit schema from the dotted paths.
    tree: dict[str, Any] = {}
    for path, typ in fields.items():
        node = tree
        parts = path.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = typ

    def _type(node: Any) -> Any:
        if isinstance(node, dict):
            return pa.struct([pa.field(k, _type(v)) for k, v in node.items()])
        return node

    schema = pa.schema([pa.field(k, _type(v)) for k, v in tree.items()])
    text = _one_per_line(arr)
    offs = np.frombuffer(text.buffers()[1], dtype=np.int64)[text.offset : text.offset + n + 1]
    body = memoryview(text.buffers()[2])[int(offs[0]) : int(offs[-1])]
    table = pj.read_json(
        pa.BufferReader(pa.py_buffer(body)),
        read_options=pj.ReadOptions(block_size=max(1 << 20, min(len(body) + 1, 64 << 20))),
        parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
    )
    out = {}
    for path in fields:
        parts = path.split(".")
        col = table.column(parts[0])
        for part in parts[1:]:
            col = pc.struct_field(col, part)
        out[path] = col
    return pa.table(out)


def _one_per_line(arr: Any) -> Any:
    """``arr`` (a large_string array without nulls) with each text on one line: newlines
    (insignificant whitespace outside JSON strings, escaped inside them) become spaces and a
    newline ends each text. The replace runs only when the bytes hold a newline (the scan
    costs a fraction of it); the newline is appended by an element-wise join."""
    import pyarrow as pa
    import pyarrow.compute as pc

    data = arr.buffers()[2]
    if data is not None and _NEWLINE.search(data) is not None:
        arr = pc.replace_substring(arr, "\n", " ")
    text = pc.binary_join_element_wise(arr, pa.scalar("", pa.large_string()),
                                       pa.scalar("\n", pa.large_string()))
    return text.combine_chunks() if isinstance(text, pa.ChunkedArray) else text


_DOC_ERRORS: tuple[type[Exception], ...] = (*JSONDecodeError, ValueError)


def map_distinct_documents(texts: Any, fn: Any, default: Any = None) -> tuple[list[Any], Any]:
    """``fn(doc)`` once per distinct JSON object text of an Arrow string array.

    Returns ``(values, indices)``: one value per distinct text (``default`` for text that is
    not a JSON object) and the Arrow indices mapping each row to its value. Texts repeat a
    lot in event logs, so each is decoded once.
    """
    import pyarrow as pa

    arr = texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts
    enc = arr.dictionary_encode()
    values = []
    for text in enc.dictionary.to_pylist():  # each distinct text once
        try:
            doc = loads(text)
        except _DOC_ERRORS:
            doc = None
        values.append(fn(doc) if isinstance(doc, dict) else default)
    return values, enc.indices


def json_type(v: Any) -> str:
    """A short phrase naming a parsed JSON value's type, for error messages ("got ...").

    >>> json_type(None), json_type(True), json_type(3), json_type("abc"), json_type([])
    ('null', 'a boolean', 'the number 3', "the string 'abc'", 'an array')
    """
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return f"the number {v!r}"
    if isinstance(v, str):
        return f"the string {v[:40]!r}"
    return "an object" if isinstance(v, dict) else "an array"


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a decode loop, then restore it.

    A loop that decodes many JSON documents allocates containers the collector would scan
    again and again (each full collection walks the whole heap: a notebook's, with its
    frames and lists, can hold millions of objects), while none of them can form a cycle.
    The collector is re-enabled after the block (also on error) only if it was on before.

    >>> import gc
    >>> with gc_paused():
    ...     gc.isenabled()
    False
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
