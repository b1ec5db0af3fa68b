"""Packed rows expanded column-wise: each member's canonical JSON payload, byte for byte what
``canonical_json`` of the member event writes.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._json import (
    canonical_json,
)

_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"),
            ("\x08", "\\b"), ("\x0c", "\\f"))  # fmt: skip


#: a character canonical JSON escapes (a control character, the backslash, the quote)
_NEEDS_ESCAPE = '[\\x00-\\x1f\\\\"]'


def _json_strings(texts: pa.Array) -> pa.Array:
    """Each string as a JSON string literal, exactly as :func:`canonical_json` writes it.

    Column-wise: one scan finds the strings that hold a character to escape; only those are
    rewritten (the common escapes by Arrow substring replacements, the rare other control
    characters, written as ``\\u00XX``, one by one).
    """
    s = pc.cast(texts, pa.large_string())
    need = pc.fill_null(pc.match_substring_regex(s, _NEEDS_ESCAPE), False)
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
                     texts: pa.Array, seq: np.ndarray, time_ms: np.ndarray,
                     has_seq: np.ndarray, has_time: np.ndarray) -> pa.Array:  # fmt: skip
    """Canonical JSON of each reconstructed ``assistant/chunk`` member event (column-wise).

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
    esc = _json_strings(texts)
    empty = pa.scalar("", big)
    seq_s = pc.if_else(pa.array(has_seq), pc.binary_join_element_wise(
        pa.scalar(',"seq":', big), pc.cast(pa.array(seq), big), empty), empty)
    time_s = pc.if_else(pa.array(has_time), pc.binary_join_element_wise(
        pa.scalar(',"time":', big), pc.cast(pa.array(time_ms), big), empty), empty)
    del k
    return pc.binary_join_element_wise(pre_a, esc, mid_a, seq_s, time_s,
                                       pa.scalar(',"type":"assistant/chunk"}', big), empty)
