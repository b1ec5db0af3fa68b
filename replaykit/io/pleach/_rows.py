"""Rows decoded one by one (the robust path's pieces): the first problem of a decoded row, the
typed payload fields of decoded objects, a member's source text, and a block built from objects.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pyarrow as pa

from ..._base.json import canonical_json
from ...tenancy import tenant_id_problem
from ._shapes import _ENVELOPE_FIELDS, _STR, _TYPED, _Part


def _is_utf8_error(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


TENANT_KEY = b'"tenant_id"'
#: a \\u escape of a letter of "tenant_id": a key spelled so decodes to tenant_id too (JSON
#: writers escape no ASCII letters, so real logs do not hold these)
ESCAPED_KEY_LETTER = re.compile(rb"\\u00(?:74|65|6[eE]|61|5[fF]|69|64)")


def duplicate_tenants(raw: bytes) -> list[Any] | None:
    """The values of a line's top-level ``tenant_id`` when the key is there more than once
    (JSON decoders keep one of them silently: the last here, the first elsewhere), else None.

    Cheap for the usual line: the key's text must occur twice (it cannot occur inside a JSON
    string), or a key letter be escaped, before the line is decoded again keeping every key.
    """
    if raw.count(TENANT_KEY) < 2 and ESCAPED_KEY_LETTER.search(raw) is None:
        return None
    pairs = json.loads(raw, object_pairs_hook=lambda kv: kv)  # the top level comes last
    values = [v for k, v in pairs if k == "tenant_id"]
    return values if len(values) > 1 else None


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
