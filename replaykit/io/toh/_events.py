"""The typed fields of one decoded (non-packed) event line: text parts, tool results, tokens.
"""

from __future__ import annotations

from typing import Any

from ..._base.json import (
    args_hash,
    canonical_json,
)
from .._common import (
    is_int64,
)
from ._shapes import _I32_MAX, _I32_MIN, _INT32, _NO_RARE, CHUNK_TYPES


def _text_parts(content: Any) -> str | None:
    """Joined text of a content array ``[{"type": "text", "text": ...}, ...]``."""
    if not isinstance(content, list):
        return None
    parts = [
        c["text"]
        for c in content
        if type(c) is dict and c.get("type", "text") == "text" and type(c.get("text")) is str
    ]
    return "\n".join(parts) if parts else None


def _tool_result_fields(data: dict) -> tuple[Any, bool, str | None]:
    """(call id, is_error, result text) of a ``tool/result`` in either corpus shape."""
    if "callId" in data:  # older shape: callId / content / isError at data level
        return data.get("callId"), data.get("isError") is True, _text_parts(data.get("content"))
    msg = data.get("message")
    if not isinstance(msg, dict):
        return None, False, None
    ref = None
    is_err = False
    texts = []
    content = msg.get("content")
    if type(content) is not list:  # a bare value instead of an array of content items
        if content is None:
            content = ()
        elif type(content) is dict:
            content = [content]
        else:  # a string is the result text; a number or boolean its JSON text
            src = msg.get("source")
            ref = _str_or_none(src.get("callId")) if type(src) is dict else None
            return ref, False, content if type(content) is str else canonical_json(content)
    for item in content:
        if not isinstance(item, dict):
            continue
        if ref is None and isinstance(item.get("toolCallId"), str):
            ref = item["toolCallId"]
        if item.get("isError") is True:
            is_err = True
        c = item.get("content")
        t = _text_parts(c) if type(c) is list or c is None else (
            c if type(c) is str else canonical_json(c))  # a bare value is the text itself
        if t is not None:
            texts.append(t)
    if ref is None:
        src = msg.get("source")
        if isinstance(src, dict):
            ref = src.get("callId")
    return ref, is_err, ("\n".join(texts) if texts else None)


def _int_or_none(v: Any) -> int | None:
    return v if type(v) is int and _INT32[0] <= v <= _INT32[1] else None


def _tokens_ok(v: Any) -> bool:
    return v is None or is_int64(v)


def _str_or_none(v: Any) -> str | None:
    return v if type(v) is str else None


def _decode_event(obj: dict, t: str) -> tuple:
    """(turn, step, chunk_type, text, rare) of one non-packed event line.

    ``rare`` is None or a tuple in :data:`_RARE_FIELDS` order.
    """
    data = obj.get("data")
    if type(data) is not dict:
        data = {}
    turn = data.get("turn")
    step = data.get("step")
    if type(turn) is not int or not _I32_MIN <= turn <= _I32_MAX:
        turn = None
    if type(step) is not int or not _I32_MIN <= step <= _I32_MAX:
        step = None
    ctype: str | None = None
    text: Any = None
    rare: tuple | None = None
    ck = data.get("cacheKey", obj.get("cacheKey"))
    if t == "assistant/chunk":
        c = data.get("chunk")
        if type(c) is dict:
            ct = c.get("type")
            if ct == "text-delta" or ct == "reasoning-delta":
                ctype = CHUNK_TYPES[ct]
                text = c.get("text")
            elif ct == "tool-call-delta":
                ctype = "tool-call"
                text = c.get("argumentsDelta")
            elif ct == "usage":
                ctype = "usage"
                u = c.get("usage")
                if type(u) is dict:
                    itok = u.get("inputTokens")
                    otok = u.get("outputTokens")
                    rare = (None, None, None, None, False, None,
                            itok if type(itok) is int else None,
                            otok if type(otok) is int else None, None)  # fmt: skip
            elif ct == "finish":
                ctype = "finish"
                r = c.get("reason")
                fk = r.get("kind") if type(r) is dict else r
                finish = fk if type(fk) is str else "unknown"
                rare = (None, None, None, None, finish == "error", finish, None, None, None)
            elif type(ct) is str:
                ctype = ct
        if type(text) is not str:
            text = None
    elif t == "tool/call":
        args = data.get("arguments")
        ahash = None
        if args is not None:
            text = args if type(args) is str else canonical_json(args)
            ahash = args_hash(args)
        rare = (_str_or_none(data.get("callId")), _str_or_none(data.get("name")), ahash,
                None, False, None, None, None, None)  # fmt: skip
    elif t == "tool/result":
        r, is_err, text = _tool_result_fields(data)
        rare = (_str_or_none(r), None, None, None, is_err, None, None, None, None)
    elif t == "turn/end":
        r = data.get("reason")
        if type(r) is dict and r.get("kind") == "error":
            rare = (None, None, None, None, True, None, None, None, None)
    elif t == "user/message":
        text = _text_parts(data.get("content"))
        rare = (None, None, None, None, False, None, None, None, _str_or_none(data.get("id")))
    elif t == "assistant/message":
        msg = data.get("message")
        if type(msg) is dict:
            text = _text_parts(msg.get("content"))
            rare = (None, None, None, None, False, None, None, None,
                    _str_or_none(msg.get("id")))  # fmt: skip
        else:
            text = _text_parts(data.get("content"))
    elif t == "approval/asked":
        rare = (_str_or_none(data.get("id")), _str_or_none(data.get("toolName")), None, None,
                False, None, None, None, None)  # fmt: skip
    elif t == "approval/decided":
        rare = (_str_or_none(data.get("id")), None, None, None, False, None, None, None, None)
    elif t == "tool-workflow/agent-start":
        rare = (_str_or_none(data.get("childId")), None, None, None, False, None, None, None,
                None)  # fmt: skip
    if type(ck) is str:
        rare = (rare or _NO_RARE)[:3] + (ck,) + (rare or _NO_RARE)[4:]
    return turn, step, ctype, text, rare
