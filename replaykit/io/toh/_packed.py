"""Packed rows expanded column-wise: each member's canonical JSON payload, byte for byte what
``canonical_json`` of the member event writes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from ..._base.json import (
    canonical_json,
)

_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"),
            ("\x08", "\\b"), ("\x0c", "\\f"))  # fmt: skip


#: a character canonical JSON escapes (a control character, the backslash, the quote)
_NEEDS_ESCAPE = '[\\x00-\\x1f\\\\"]'


#: bytes canonical JSON escapes: control characters, ``"`` and ``\\`` (in UTF-8 these bytes
#: stand only for themselves)
_ESCAPED_BYTE = np.zeros(256, dtype=bool)
_ESCAPED_BYTE[:0x20] = True
_ESCAPED_BYTE[[0x22, 0x5C]] = True


def _needs_escape(s: pa.Array) -> np.ndarray:
    """Per string of the large_string array ``s``: holds a byte to escape (null: False).

    One numpy scan of the data buffer (the same test as the regex :data:`_NEEDS_ESCAPE`).
    """
    n = len(s)
    need = np.zeros(n, dtype=bool)
    if not n:
        return need
    bufs = s.buffers()
    offs = np.frombuffer(bufs[1], dtype=np.int64)[s.offset: s.offset + n + 1]
    if bufs[2] is None or offs[-1] == offs[0]:
        return need
    data = np.frombuffer(bufs[2], dtype=np.uint8)[offs[0]: offs[-1]]
    pos = np.flatnonzero(_ESCAPED_BYTE[data]) + offs[0]
    need[np.searchsorted(offs, pos, side="right") - 1] = True
    return need


def _json_strings(texts: pa.Array) -> pa.Array:
    """Each string as a JSON string literal, exactly as :func:`canonical_json` writes it.

    Column-wise: one scan finds the strings that hold a character to escape; only those are
    rewritten (the common escapes by Arrow substring replacements, the rare other control
    characters, written as ``\\u00XX``, one by one).
    """
    s = pc.cast(texts, pa.large_string())
    need = pa.array(_needs_escape(s))
    if pc.any(need).as_py():
        raw_sub = sub = s.filter(need)
        for raw, esc in _ESCAPES:
            sub = pc.replace_substring(sub, raw, esc)
        odd = pc.match_substring_regex(raw_sub, "[\\x00-\\x07\\x0b\\x0e-\\x1f]")
        if pc.any(odd).as_py():
            pos = np.flatnonzero(np.asarray(pc.fill_null(odd, False)))
            fixed = [canonical_json(x)[1:-1] for x in raw_sub.take(pa.array(pos)).to_pylist()]
            sub = pc.replace_with_mask(sub, odd, pa.array(fixed, pa.large_string()))
        s = pc.replace_with_mask(s, need, sub)
    q = pa.scalar('"', pa.large_string())
    return pc.binary_join_element_wise(q, s, q, pa.scalar("", pa.large_string()))


def _member_payloads(meta: dict[str, np.ndarray], rep: np.ndarray, k: np.ndarray,
                     esc: pa.Array, seq: np.ndarray, time_ms: np.ndarray,
                     has_seq: np.ndarray, has_time: np.ndarray) -> pa.Array:  # fmt: skip
    """Canonical JSON of each reconstructed ``assistant/chunk`` member event (column-wise);
    ``esc`` holds the members' texts as JSON string literals (:func:`_json_strings`).

    Equal, byte for byte, to ``canonical_json`` of the event dict (tested).
    """
    code = meta["code"]
    n_lines = len(code)
    idx = meta["index"].astype(str)
    step = meta["step"].astype(str)
    turn = meta["turn"].astype(str)
    pre = np.empty(n_lines, dtype=object)
    mid = np.empty(n_lines, dtype=object)
    for c, name in ((0, "text-delta"), (1, "reasoning-delta")):
        m = code == c
        if m.any():
            pre[m] = np.char.add(np.char.add('{"data":{"chunk":{"index":', idx[m]), ',"text":')
            mid[m] = np.char.add(
                np.char.add(np.char.add(f',"type":"{name}"}},"step":', step[m]), ',"turn":'),
                np.char.add(turn[m], "}"),
            )
    m = code == 2
    if m.any():
        pre[m] = '{"data":{"chunk":{"argumentsDelta":'
        ids = meta["id"][m].astype(str)
        names = meta["name"][m].astype(str)
        s = np.char.add(',"id":', ids)
        s = np.char.add(np.char.add(s, ',"index":'), idx[m])
        s = np.char.add(np.char.add(s, ',"name":'), names)
        s = np.char.add(np.char.add(s, ',"type":"tool-call-delta"},"step":'), step[m])
        s = np.char.add(np.char.add(s, ',"turn":'), np.char.add(turn[m], "}"))
        mid[m] = s
    big = pa.large_string()
    pre_a = pa.array(pre, big).take(pa.array(rep))
    mid_a = pa.array(mid, big).take(pa.array(rep))
    empty = pa.scalar("", big)
    seq_s = pc.if_else(pa.array(has_seq), pc.binary_join_element_wise(
        pa.scalar(',"seq":', big), pc.cast(pa.array(seq), big), empty), empty) \
        if has_seq.any() else empty  # fmt: skip
    time_s = pc.if_else(pa.array(has_time), pc.binary_join_element_wise(
        pa.scalar(',"time":', big), pc.cast(pa.array(time_ms), big), empty), empty) \
        if has_time.any() else empty  # fmt: skip
    del k
    return pc.binary_join_element_wise(pre_a, esc, mid_a, seq_s, time_s,
                                       pa.scalar(',"type":"assistant/chunk"}', big), empty)


# --------------------------------------------------------------------------- column-wise proof
#: the byte prefix of a packed row as the harness writes it; only such lines are candidates
PACKED_PREFIXES = tuple(f'{{"type":"{t}","data":{{"turn":'.encode() for t in
                        ("text-chunks", "reasoning-chunks", "tool-call-chunks"))  # fmt: skip
_CODE_OF_TYPE = {"text-chunks": 0, "reasoning-chunks": 1, "tool-call-chunks": 2}
_I32 = (-(2**31), 2**31 - 1)
_PACKED_SCHEMA = pa.schema([
    ("type", pa.string()),
    ("data", pa.struct([
        ("turn", pa.int64()), ("step", pa.int64()), ("index", pa.int64()),
        ("dt", pa.list_(pa.int64())), ("texts", pa.list_(pa.large_string())),
        ("id", pa.large_string()), ("name", pa.large_string()),
        ("args", pa.list_(pa.large_string())),
    ])),
])  # fmt: skip


@dataclass
class PackedColumns:
    """Packed rows proven column-wise: one entry per line (``line``: index into the file's
    lines, 0-based; ``n`` members starting at ``m_start`` in ``texts``/``esc``, their JSON
    string literals; ``n - 1`` gaps starting at ``g_start`` in ``dt``)."""

    line: np.ndarray
    code: np.ndarray
    turn: np.ndarray
    step: np.ndarray
    index: np.ndarray
    n: np.ndarray
    id_json: np.ndarray
    name_json: np.ndarray
    texts: pa.Array
    esc: pa.Array
    dt: np.ndarray
    m_start: np.ndarray
    g_start: np.ndarray
    payload: pa.Array | None = None

    def member_payloads(self) -> pa.Array:
        """Each member's canonical payload (these lines carry no seq0/time0)."""
        n = self.n
        rep = np.repeat(np.arange(len(n)), n)
        k = np.arange(len(rep)) - (np.cumsum(n) - n)[rep]
        meta = {"code": self.code, "index": self.index, "step": self.step, "turn": self.turn,
                "id": self.id_json, "name": self.name_json}  # fmt: skip
        none = np.zeros(len(rep), dtype=bool)
        return _member_payloads(meta, rep, k, self.esc, k, k, none, none)

    def select(self, rows: np.ndarray) -> PackedColumns:
        """The entries ``rows`` (ascending), their members and gaps with them (packed)."""
        n = self.n[rows]
        idx = pa.array(_ranges(self.m_start, self.n, rows), pa.int64())
        return PackedColumns(
            line=self.line[rows], code=self.code[rows], turn=self.turn[rows],
            step=self.step[rows], index=self.index[rows], n=n,
            id_json=self.id_json[rows], name_json=self.name_json[rows],
            texts=self.texts.take(idx), esc=self.esc.take(idx),
            dt=self.dt[_ranges(self.g_start, self.n - 1, rows)],
            m_start=np.cumsum(n) - n, g_start=np.cumsum(n - 1) - (n - 1),
            payload=None if self.payload is None else self.payload.take(idx),
        )  # fmt: skip


def _ranges(start: np.ndarray, length: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(start[r], start[r] + length[r])`` for each r in ``rows``."""
    ln = length[rows]
    rep = np.repeat(rows, ln)
    within = np.arange(len(rep)) - np.repeat(np.cumsum(ln) - ln, ln)
    return start[rep] + within


def _flat(lists: pa.Array) -> tuple[pa.Array, np.ndarray, pa.Array]:
    """(values in row order, length per row with null as 0, offsets) of a list array."""
    values = lists.flatten()
    lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy().astype(np.int64)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return values, lengths, pa.array(offsets)


def _joined(lists: pa.Array, strings: pa.Array, offsets: pa.Array) -> pa.Array:
    """Each list's ``strings`` (its flattened values, transformed) joined by commas (null for a
    null list)."""
    rebuilt = pa.LargeListArray.from_arrays(offsets, strings, mask=lists.is_null())
    return pc.binary_join(rebuilt, pa.scalar(",", pa.large_string()))


def _check_utf8(raw: bytes) -> None:
    """Raise ``pyarrow.ArrowInvalid`` unless ``raw`` is valid UTF-8."""
    offsets = pa.py_buffer(np.array([0, len(raw)], dtype=np.int64))
    pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, pa.py_buffer(raw)]).validate(
        full=True)


def _s(text: str) -> pa.Scalar:
    return pa.scalar(text, pa.large_string())


def prove_packed(lines: list[bytes], cand: list[int], payloads: bool = False
                 ) -> PackedColumns | None:  # fmt: skip
    """Parse the candidate packed rows ``lines[i] for i in cand`` column-wise (Arrow's JSON
    reader) and keep those proven valid: a line is proven when it is, byte for byte, the JSON
    text rebuilt from its parsed values in the harness's layout (so it is valid JSON with
    exactly the allowed keys and value types, and decodes to those values) and meets the
    packed rules (at least one member, ``len(dt) == members - 1``, 32-bit turn/step/index).
    Lines with ``seq0``/``time0`` or any other layout are not proven: the row-wise path reads
    them.

    None when nothing is proven (e.g. one candidate is not JSON Arrow can read: the row-wise
    path then reads every candidate and reports the bad ones). ``payloads``: also write the
    members' canonical payloads (``payload``, see :func:`_member_payloads`).
    """
    if not cand:
        return None
    raw = b"\n".join([lines[i] for i in cand])
    try:
        _check_utf8(raw)  # Arrow's reader does not check UTF-8
        t = pj.read_json(
            pa.BufferReader(raw),
            read_options=pj.ReadOptions(use_threads=False, block_size=max(1 << 22, 2 * len(raw))),
            parse_options=pj.ParseOptions(explicit_schema=_PACKED_SCHEMA,
                                          unexpected_field_behavior="ignore"),
        ).combine_chunks()
    except pa.ArrowInvalid:
        return None
    if t.num_rows != len(cand):
        return None
    typ = t.column("type").chunk(0)
    data = t.column("data").chunk(0)
    big = pa.large_string()
    empty = pa.scalar("", big)
    code = pc.fill_null(pc.index_in(typ, pa.array(list(_CODE_OF_TYPE))), -1).to_numpy()
    turn, step, index = (data.field(f) for f in ("turn", "step", "index"))
    is_tc = pa.array(code == 2)
    mem = pc.if_else(is_tc, data.field("args"), data.field("texts"))
    dt = data.field("dt")
    texts, n, m_off = _flat(mem)
    gaps, n_dt, d_off = _flat(dt)
    esc = _json_strings(texts)
    head = pc.binary_join_element_wise(
        _s('{"type":"'), pc.cast(typ, big), _s('","data":{"turn":'), pc.cast(turn, big),
        _s(',"step":'), pc.cast(step, big), _s(',"index":'), pc.cast(index, big),
        _s(',"dt":['), _joined(dt, pc.cast(gaps, big), d_off), _s("]"), empty)  # fmt: skip
    id_json = _json_strings(data.field("id"))
    name_json = _json_strings(data.field("name"))
    tc_mid = pc.binary_join_element_wise(_s(',"id":'), id_json, _s(',"name":'), name_json,
                                         _s(',"args":['), empty)  # fmt: skip
    mid = pc.if_else(is_tc, tc_mid, _s(',"texts":['))
    rebuilt = pc.binary_join_element_wise(head, mid, _joined(mem, esc, m_off), _s("]}}"), empty)
    given = pa.array(raw.split(b"\n"), pa.large_binary())
    ok = np.asarray(pc.fill_null(pc.equal(pc.cast(rebuilt, pa.large_binary()), given), False))
    ok = ok & (code >= 0) & (n >= 1) & (n_dt == n - 1)
    ints = {}
    for f, a in (("turn", turn), ("step", step), ("index", index)):
        v = pc.fill_null(a, 0).to_numpy()
        ok &= (v >= _I32[0]) & (v <= _I32[1])
        ints[f] = v.astype(np.int64)
    if not ok.any():
        return None
    cols = PackedColumns(
        line=np.asarray(cand, dtype=np.int64), code=code.astype(np.int64), n=n,
        id_json=pc.fill_null(id_json, "").to_numpy(zero_copy_only=False),
        name_json=pc.fill_null(name_json, "").to_numpy(zero_copy_only=False),
        texts=texts, esc=esc,  # (a null gap: that row is not rebuilt equal, so not ok)
        dt=pc.fill_null(gaps, 0).to_numpy(zero_copy_only=False).astype(np.int64),
        m_start=m_off.to_numpy()[:-1], g_start=d_off.to_numpy()[:-1], **ints,
    )  # fmt: skip
    cols = cols if ok.all() else cols.select(np.flatnonzero(ok))
    if payloads:
        cols.payload = cols.member_payloads()
    return cols
