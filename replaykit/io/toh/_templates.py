"""Event lines of the most frequent simple shapes proven column-wise, like packed rows.

A *template* is one line shape in the harness's key order, e.g. ``{"type":"step/start",
"data":{"turn":<int>,"step":<int>}}``. The candidate lines of a type (found by their byte
prefix) are parsed by Arrow's JSON reader; a line is proven when it is, byte for byte, the
JSON text rebuilt from its parsed values in one of its type's templates (so it is valid JSON
with exactly those keys and value types, and decodes to those values). Its canonical payload
(keys sorted) and its typed fields are then written column-wise, equal to what the row-wise
reading (``_decode_event``, ``canonical_json``) gives for the same line (tested). Every other
line is read row-wise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from ._packed import _check_utf8, _json_strings

_BIG = pa.large_string()

# a shape: "int" | "str" | tuple of (key, shape) pairs in the harness's order (an object)
_TS = (("turn", "int"), ("step", "int"))
_DATA_SHAPES: dict[str, tuple[tuple[str, Any], ...]] = {
    "ts": _TS,
    "t": (("turn", "int"),),
    "t_reason": (("turn", "int"), ("reason", (("kind", "str"),))),
    "header": (("header", (("config", (("provider", "str"), ("model", "str"))),)),
               ("reason", "str")),
    "block": (*_TS, ("chunk", (("type", "str"), ("index", "int"), ("blockType", "str")))),
    "usage": (*_TS, ("chunk", (("type", "str"), ("usage", (
        ("inputTokens", "int"), ("outputTokens", "int"), ("cacheReadTokens", "int"),
        ("reasoningTokens", "int")))))),
    "finish": (*_TS, ("chunk", (("type", "str"), ("reason", (("kind", "str"),))))),
}  # fmt: skip

#: the event types read this way -> their templates (by name, tried in this order)
TEMPLATES: dict[str, tuple[str, ...]] = {
    "step/start": ("ts",),
    "step/end": ("ts",),
    "turn/start": ("t",),
    "turn/end": ("t_reason",),
    "request/header": ("header",),
    "assistant/chunk": ("block", "usage", "finish"),
}
ROW_PREFIXES = {f'{{"type":"{t}","data":{{'.encode(): t for t in TEMPLATES}
#: chunk types a "block" chunk must not have (their fields are decoded differently)
_DECODED_CHUNKS = ["text-delta", "reasoning-delta", "tool-call-delta", "usage", "finish"]
_I32 = (-(2**31), 2**31 - 1)


def _merge(a: Any, b: Any) -> Any:
    """The union of two object shapes (leaf types must agree; else ValueError)."""
    if isinstance(a, str) or isinstance(b, str):
        if a != b:
            raise ValueError(f"shapes disagree: {a!r} / {b!r}")
        return a
    out = dict(a)
    for k, v in b:
        out[k] = _merge(out[k], v) if k in out else v
    return tuple(out.items())


def _arrow_type(shape: Any) -> pa.DataType:
    if shape == "int":
        return pa.int64()
    if shape == "str":
        return _BIG
    return pa.struct([(k, _arrow_type(v)) for k, v in shape])


def _pieces(shape: Any, col: pa.Array, sort: bool) -> list[Any]:
    """The JSON text of ``col`` (of ``shape``) as pieces: literal strings and arrays."""
    if shape == "int":
        return [pc.cast(col, _BIG)]
    if shape == "str":
        return [_json_strings(col)]
    out: list[Any] = ["{"]
    items = sorted(shape) if sort else shape
    for i, (k, v) in enumerate(items):
        out.append(("," if i else "") + f'"{k}":')
        out += _pieces(v, col.field(k), sort)
    out.append("}")
    return out


def _join(pieces: list[Any]) -> pa.Array:
    merged: list[Any] = []
    for p in pieces:
        if isinstance(p, str) and merged and isinstance(merged[-1], str):
            merged[-1] += p
        else:
            merged.append(p)
    args = [pa.scalar(p, _BIG) if isinstance(p, str) else p for p in merged]
    return pc.binary_join_element_wise(*args, pa.scalar("", _BIG))


@dataclass
class RowColumns:
    """Event lines proven column-wise: ``line`` (index into the file's lines, 0-based), their
    type, canonical ``payload`` and the typed fields the row-wise reading would give."""

    line: np.ndarray
    type: str
    payload: pa.Array
    turn: pa.Array
    step: pa.Array
    chunk_type: pa.Array
    is_error: pa.Array
    finish: pa.Array
    input_tokens: pa.Array
    output_tokens: pa.Array

    def select(self, rows: np.ndarray) -> RowColumns:
        idx = pa.array(rows, pa.int64())
        return RowColumns(self.line[rows], self.type, *(
            getattr(self, f).take(idx) for f in ("payload", "turn", "step", "chunk_type",
                                                   "is_error", "finish", "input_tokens",
                                                   "output_tokens")))  # fmt: skip


def _int32_or_null(a: pa.Array) -> pa.Array:
    """``_decode_event``'s rule: a turn/step outside 32 bits is null."""
    ok = pc.and_(pc.greater_equal(a, _I32[0]), pc.less_equal(a, _I32[1]))
    return pc.if_else(ok, a, pa.scalar(None, pa.int64()))


def prove_rows(lines: list[bytes], cand: list[int], typ: str) -> RowColumns | None:
    """The candidate lines ``lines[i] for i in cand`` of event type ``typ`` proven against its
    templates (see the module docstring); None when none is proven or Arrow cannot read them
    all (they are then read row-wise)."""
    if not cand:
        return None
    shapes = [_DATA_SHAPES[name] for name in TEMPLATES[typ]]
    union: Any = shapes[0]
    for s in shapes[1:]:
        union = _merge(union, s)
    raw = b"\n".join([lines[i] for i in cand])
    try:
        _check_utf8(raw)
        t = pj.read_json(
            pa.BufferReader(raw),
            read_options=pj.ReadOptions(use_threads=False, block_size=max(1 << 22, 2 * len(raw))),
            parse_options=pj.ParseOptions(
                explicit_schema=pa.schema([("data", _arrow_type(union))]),
                unexpected_field_behavior="ignore"),
        ).combine_chunks()
    except pa.ArrowInvalid:
        return None
    if t.num_rows != len(cand) or not t.num_rows:
        return None
    data = t.column("data").chunk(0)
    given = pa.array(raw.split(b"\n"), pa.large_binary())
    n = len(cand)
    which = np.full(n, -1, dtype=np.int64)
    payload = pa.nulls(n, _BIG)
    head = f'{{"type":"{typ}","data":'
    for j, shape in enumerate(shapes):
        line = _join([head, *_pieces(shape, data, sort=False), "}"])
        hit = np.asarray(pc.fill_null(pc.equal(pc.cast(line, pa.large_binary()), given), False))
        hit &= which < 0
        if not hit.any():
            continue
        which[hit] = j
        canon = _join(["{\"data\":", *_pieces(shape, data, sort=True), f',"type":"{typ}"}}'])
        payload = pc.if_else(pa.array(hit), canon, payload)
    names = TEMPLATES[typ]
    is_name = {name: which == names.index(name) if name in names else np.zeros(n, bool)
               for name in _DATA_SHAPES}  # fmt: skip
    null_s = pa.nulls(n, pa.string())
    null_i = pa.nulls(n, pa.int64())
    is_error = pa.array(np.zeros(n, dtype=bool))
    finish = null_s
    chunk_type = null_s
    inp = out = null_i
    fields = {f.name for f in data.type}
    turn = _int32_or_null(data.field("turn")) if "turn" in fields else null_i
    step = _int32_or_null(data.field("step")) if "step" in fields else null_i
    if typ == "turn/end":
        kind = data.field("reason").field("kind")
        is_error = pc.fill_null(pc.equal(kind, "error"), False)
    if typ == "assistant/chunk":
        chunk = data.field("chunk")
        ct = pc.cast(chunk.field("type"), pa.string())
        decoded = np.asarray(pc.fill_null(pc.is_in(ct, pa.array(_DECODED_CHUNKS)), False))
        which[is_name["block"] & decoded] = -1  # decoded otherwise: read row-wise
        which[is_name["usage"] & (np.asarray(pc.fill_null(pc.equal(ct, "usage"), False))
                                  == 0)] = -1  # fmt: skip
        which[is_name["finish"] & (np.asarray(pc.fill_null(pc.equal(ct, "finish"), False))
                                   == 0)] = -1  # fmt: skip
        chunk_type = ct
        usage = pa.array(is_name["usage"])
        inp = pc.if_else(usage, chunk.field("usage").field("inputTokens"), null_i)
        out = pc.if_else(usage, chunk.field("usage").field("outputTokens"), null_i)
        fin = pa.array(is_name["finish"])
        kind = pc.cast(chunk.field("reason").field("kind"), pa.string())
        finish = pc.if_else(fin, kind, null_s)
        is_error = pc.fill_null(pc.and_(fin, pc.equal(kind, "error")), False)
    ok = np.flatnonzero(which >= 0)
    if not len(ok):
        return None
    cols = RowColumns(np.asarray(cand, dtype=np.int64), typ, payload, turn, step, chunk_type,
                      is_error, finish, inp, out)  # fmt: skip
    return cols if len(ok) == n else cols.select(ok)
