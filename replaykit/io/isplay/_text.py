"""JSON text of a run document, parsed with positions: the items of its ``events`` and
``checkpoints`` arrays come back with their character offsets, turned into line numbers
column-wise, so every error names the line where its object starts."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from ..._base.json import JSONTooDeep, _finite_float, _reject_constant, canonical_json, json_type

_WS = re.compile(r"[ \t\n\r]*")


def _skip_ws(text: str, i: int) -> int:
    """Index of the first non-whitespace character at or after ``i``."""
    m = _WS.match(text, i)
    return m.end() if m is not None else i


_DEC = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)
scanstring = json.decoder.scanstring  # type: ignore[attr-defined]


class _Syntax(Exception):
    pass


def _walk_document(text: str) -> tuple[dict[str, Any], dict[str, list[tuple[Any, int]]]]:
    """Parse one JSON object; the items of its top-level ``events`` and ``checkpoints`` arrays
    come back separately with their character offsets (for line numbers in errors).

    Raises:
        _Syntax / ValueError: the text is not one JSON object (caller re-parses for a message).
    """
    ws = _skip_ws
    n = len(text)
    i = ws(text, 0)
    if text[i : i + 1] != "{":
        raise _Syntax(i)
    i = ws(text, i + 1)
    top: dict[str, Any] = {}
    arrays: dict[str, list[tuple[Any, int]]] = {}
    if text[i : i + 1] == "}":
        i += 1
    else:
        while True:
            if text[i : i + 1] != '"':
                raise _Syntax(i)
            key, i = scanstring(text, i + 1)
            i = ws(text, i)
            if text[i : i + 1] != ":":
                raise _Syntax(i)
            i = ws(text, i + 1)
            if key in ("events", "checkpoints") and text[i : i + 1] == "[":
                items: list[tuple[Any, int]] = []
                i = ws(text, i + 1)
                if text[i : i + 1] == "]":
                    i += 1
                else:
                    while True:
                        start = i
                        value, i = _DEC.raw_decode(text, i)
                        items.append((value, start))
                        i = ws(text, i)
                        c = text[i : i + 1]
                        if c == ",":
                            i = ws(text, i + 1)
                        elif c == "]":
                            i += 1
                            break
                        else:
                            raise _Syntax(i)
                arrays[key] = items
                top.pop(key, None)
            else:
                value, i = _DEC.raw_decode(text, i)
                top[key] = value
                arrays.pop(key, None)
            i = ws(text, i)
            c = text[i : i + 1]
            if c == ",":
                i = ws(text, i + 1)
            elif c == "}":
                i += 1
                break
            else:
                raise _Syntax(i)
    if ws(text, i) != n:
        raise _Syntax(i)
    return top, arrays


def _lines_at(text: str, offsets: list[int]) -> np.ndarray:
    """1-based line numbers of character offsets in ``text`` (vectorised)."""
    if not offsets:
        return np.zeros(0, dtype=np.int64)
    if text.isascii():
        chars = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    else:
        chars = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    newlines = np.flatnonzero(chars == 10)
    return np.searchsorted(newlines, np.asarray(offsets, dtype=np.int64), side="right") + 1


def _json_error(text: str) -> tuple[int, str, bool]:
    """(line, message, is_syntax_error) for text that is not one JSON object."""
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        return exc.lineno, f"{exc.msg} at line {exc.lineno} column {exc.colno}", True
    except ValueError as exc:
        return 1, str(exc), True
    return 1, f"the document is {json_type(value)}", False


def _raw_text(v: Any) -> str:
    """JSON text of a rejected value for its quarantine row (never fails on deep values)."""
    try:
        return canonical_json(v)
    except (JSONTooDeep, TypeError, ValueError):
        return json.dumps(v, default=str)
