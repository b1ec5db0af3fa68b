"""Loader for toh session logs (the agent harness's persisted ``session.jsonl`` files).

A toh log is JSONL: line 1 is the session header (``{"type": "session", "id", "createdAt", ...}``),
every other line is one event ``{"type", "data", ...}`` or a *packed row* (``text-chunks``,
``reasoning-chunks``, ``tool-call-chunks``) that stands for one ``assistant/chunk`` event per
member. A scenario folder holds the primary ``session.jsonl`` plus ``session.N.jsonl`` subagent
children linked to it through ``parentSession``; ``session.expected.jsonl`` files are logs too;
``replay.override.json`` sidecars are side files, not logs.

The field-by-field mapping to the canonical schema is documented in ``docs/formats.md``.
Per-line Python is limited to decoding a line and picking its few typed fields; sequence
numbers, packed-row expansion, model-call ids, inheritance and joins are numpy/Arrow column
operations over all files at once.
"""

from __future__ import annotations

import gc
import itertools
import os
import re
import warnings
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._json import (
    HAVE_ORJSON,
    JSONDecodeError,
    JSONTooDeep,
    args_hash,
    canonical_json,
    loads,
    may_hold_long_ints,
)
from ..errors import LoadError
from ..eventlog import RUNS_SCHEMA, EventLog
from ..schema import EVENTS_SCHEMA
from ._common import (
    ErrorPolicy,
    Progress,
    Quarantine,
    expand_paths,
    is_epoch_ms,
    is_int64,
    require_tenant,
)

__all__ = ["FORMAT", "OrphanRunWarning", "is_side_file", "read_toh", "sniff"]

FORMAT = "toh"

_PATTERNS = ("*.jsonl",)
_SIDE_FILES = ("replay.override.json",)

#: source ``type`` -> canonical ``kind``; anything else is ``"other"`` (kept, never dropped).
KIND_OF_TYPE: dict[str, str] = {
    "session": "session",
    "session/title": "session",
    "session/end-seed": "session",
    "sandbox/mode": "session",
    "permission/preset": "session",
    "approval/policy": "session",
    "user/message": "user_message",
    "request/header": "model_request",
    "assistant/chunk": "model_chunk",
    "assistant/message": "model_response",
    "tool/call": "tool_call",
    "tool/result": "tool_result",
    "turn/start": "turn_start",
    "turn/end": "turn_end",
    "step/start": "step_start",
    "step/end": "step_end",
    "approval/asked": "approval_request",
    "approval/decided": "approval_decision",
    "subagent/descriptor": "subagent_start",
    "tool-workflow/agent-start": "subagent_start",
    "tool-workflow/agent-end": "subagent_end",
}

#: StreamChunk ``type`` -> canonical ``chunk_type``.
CHUNK_TYPES: dict[str, str] = {
    "text-delta": "text",
    "reasoning-delta": "reasoning",
    "tool-call-delta": "tool-call",
}

# packed row type -> (code, member array key, keys allowed in data)
_PACKED: dict[str, tuple[int, str, frozenset[str]]] = {
    "text-chunks": (0, "texts", frozenset({"turn", "step", "index", "dt", "texts"})),
    "reasoning-chunks": (1, "texts", frozenset({"turn", "step", "index", "dt", "texts"})),
    "tool-call-chunks": (
        2,
        "args",
        frozenset({"turn", "step", "index", "dt", "id", "name", "args"}),
    ),
}
_PACKED_TOP = frozenset({"type", "data", "seq0", "time0"})
_CHUNK_OF_CODE = ("text", "reasoning", "tool-call")
_INT32 = (-(2**31), 2**31 - 1)


class OrphanRunWarning(UserWarning):
    """A child log names a ``parentSession`` that is not among the loaded logs.

    The child is loaded anyway and keeps ``parent_run_id`` = the named parent id; load the
    parent's folder too to link them.
    """


def is_side_file(path: str | os.PathLike[str]) -> bool:
    """True for toh side files that are not logs (``replay.override.json`` sidecars).

    >>> is_side_file("scenario/replay.override.json"), is_side_file("scenario/session.jsonl")
    (True, False)
    """
    return Path(path).name in _SIDE_FILES


def sniff(path: Path) -> str | None:
    """None when ``path`` looks like a toh log (first line is a session header), else why not.

    Reads at most the first megabyte of the file; never raises for unreadable content.
    """
    p = Path(path)
    if is_side_file(p):
        return "a replay.override.json sidecar is a toh side file, not a log"
    try:
        with open(p, "rb") as fh:
            head = fh.readline(1 << 20)
            if head.startswith(b"\xef\xbb\xbf"):
                head = head[3:]
            while head and not head.strip():
                head = fh.readline(1 << 20)
    except OSError as exc:
        return f"cannot read the file ({exc})"
    if not head:
        return "the file is empty"
    try:
        obj = loads(head)
    except JSONDecodeError:
        if re.match(rb'\s*\{\s*"type"\s*:\s*"session"', head):
            return None
        return "line 1 is not a JSON object"
    if not isinstance(obj, dict):
        return "line 1 is not a JSON object"
    if obj.get("type") != "session":
        return f"line 1 is not a session header (type={obj.get('type')!r}, expected 'session')"
    if not isinstance(obj.get("id"), str):
        return "line 1 is a session header without a string 'id'"
    return None


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


if HAVE_ORJSON:
    import orjson as _orjson

    def _dump(obj: Any) -> bytes | str:
        try:
            return _orjson.dumps(obj, option=_orjson.OPT_SORT_KEYS)
        except TypeError:  # an integer beyond 64 bits: written with every digit
            return canonical_json(obj).encode("utf-8")

else:  # pragma: no cover
    _dump = canonical_json


class _Rows:
    """Column lists gathered while reading lines (one entry per non-packed event line)."""

    def __init__(self) -> None:
        self.rows: list[tuple] = []  # see _ROW_FIELDS
        self.rare: list[tuple] = []  # (row index, seq, time, *_RARE_FIELDS)
        self.p_meta: list[tuple] = []  # packed lines: (fi, lineno, code, turn, step, index,
        #                                 seq0, time0, n, id_json, name_json)
        self.p_texts: list[str] = []  # every packed member's text / argumentsDelta
        self.p_dt: list[int] = []  # per packed line: 0 followed by its dt gaps
        self.phantoms: list[tuple[int, int, int]] = []  # quarantined lines: (fi, lineno, slots)


_ROW_FIELDS = ("fi", "line", "type", "payload", "turn", "step", "chunk_type", "text")
#: fields most lines lack: gathered sparsely, as (row index, seq, time, *_RARE_FIELDS)
_RARE_FIELDS = (
    "ref_id", "tool_name", "args_hash", "cache_key", "is_error", "finish", "input_tokens",
    "output_tokens", "event_id",
)  # fmt: skip
_NO_RARE = (None, None, None, None, False, None, None, None, None)
_I32_MIN, _I32_MAX = _INT32


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


class _FileCtx:
    __slots__ = ("fi", "path", "src", "header", "quarantine")

    def __init__(self, fi: int, path: Path, quarantine: Quarantine) -> None:
        self.fi = fi
        self.path = path
        self.src = str(path)
        self.header: dict | None = None
        self.quarantine = quarantine

    def err(self, line: int | None, reason: str, detail: str, field: str | None = None,
            fix: str | None = None) -> LoadError:  # fmt: skip
        return LoadError(source=self.src, line=line, reason=reason, detail=detail, field=field,
                         fix=fix)  # fmt: skip


def _bad_json(raw: bytes, exc: Exception) -> tuple[str, str]:
    if isinstance(exc, JSONTooDeep):
        return "too_deep", f"is not accepted: {exc}"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return "bad_utf8", f"is not valid UTF-8 ({exc.reason} at byte {exc.start})"
    return "bad_json", "is not valid JSON (truncated or malformed line)"


def _check_header(ctx: _FileCtx, obj: Any, lineno: int) -> LoadError | None:
    if not isinstance(obj, dict):
        return ctx.err(lineno, "missing_header", "line 1 must be the session header object "
                       '{"type": "session", "id": ...}, got a JSON ' + type(obj).__name__,
                       fix="Every toh log starts with its session header line.")
    if obj.get("type") != "session":
        return ctx.err(lineno, "missing_header",
                       f"must be 'session' on line 1 (the session header), got {obj.get('type')!r}",
                       field="type", fix="Every toh log starts with its session header line; "
                       "restore it or load the file with another format.")  # fmt: skip
    if not isinstance(obj.get("id"), str) or not obj["id"]:
        return ctx.err(lineno, "bad_header", f"must be a non-empty string, got {obj.get('id')!r}",
                       field="id", fix="The session header needs the session id.")
    ps = obj.get("parentSession")
    if ps is not None and not isinstance(ps, str):
        return ctx.err(lineno, "bad_header", f"must be a string, got {ps!r}", field="parentSession")
    sl = obj.get("seedLength")
    if sl is not None and (not is_int64(sl) or sl < 0):
        return ctx.err(lineno, "bad_header", f"must be an integer >= 0, got {sl!r}",
                       field="seedLength")
    ca = obj.get("createdAt")
    if ca is not None and not is_epoch_ms(ca):
        return ctx.err(lineno, "bad_header", "must be epoch milliseconds (years 1 to 9999), "
                       f"got {ca!r}", field="createdAt")
    return None


def _packed_problem(obj: dict, t: str) -> tuple[str, str] | None:
    """(field, rule) of the first packed-row rule ``obj`` breaks, or None when it is valid."""
    code, key, allowed = _PACKED[t]
    extra = obj.keys() - _PACKED_TOP
    if extra:
        return sorted(extra)[0], (f"packed row has unexpected top-level keys {sorted(extra)} "
                                  "(allowed: type, data, seq0, time0)")
    data = obj.get("data")
    if type(data) is not dict:
        return "data", "must be an object"
    if data.keys() != allowed:
        missing = sorted(allowed - data.keys())
        unexpected = sorted(data.keys() - allowed)
        return "data", f"must hold exactly {sorted(allowed)} (missing {missing}, unexpected " \
                       f"{unexpected})"
    members = data[key]
    if type(members) is not list or not members or set(map(type, members)) != {str}:
        return f"data.{key}", "must be a non-empty array of strings"
    dt = data["dt"]
    if type(dt) is not list or (dt and not set(map(type, dt)) <= {int}):
        return "data.dt", "must be an array of integer gaps (milliseconds)"
    if dt and not (is_int64(min(dt)) and is_int64(max(dt))):
        return "data.dt", "gaps must fit in 64 bits"
    if len(dt) != len(members) - 1:
        return "data.dt", (f"must have len({key}) - 1 = {len(members) - 1} entries, "
                           f"got {len(dt)}")
    for f in ("turn", "step", "index"):
        if _int_or_none(data[f]) is None:
            return f"data.{f}", f"must be an integer, got {data[f]!r}"
    if code == 2:
        for f in ("id", "name"):
            if type(data[f]) is not str:
                return f"data.{f}", f"must be a string, got {data[f]!r}"
    for f in ("seq0", "time0"):
        v = obj.get(f)
        if v is not None and (type(v) is not int or (f == "seq0" and v < 0)):
            return f, "must be an integer" + (" >= 0" if f == "seq0" else "") + f", got {v!r}"
    seq0 = obj.get("seq0")
    if seq0 is not None and not is_int64(seq0 + len(members) - 1):
        return "seq0", f"seq0 + members - 1 must fit in 64 bits, got seq0={seq0!r}"
    time0 = obj.get("time0")
    if time0 is not None:
        if not is_epoch_ms(time0):
            return "time0", f"must be epoch milliseconds (years 1 to 9999), got {time0!r}"
        if dt and not all(map(is_epoch_ms, itertools.accumulate(dt, initial=time0))):
            return "data.dt", "member times time0 + sum(gaps) must stay within years 1 to 9999"
    return None


def _read_file(ctx: _FileCtx, acc: _Rows, prog: Progress) -> None:
    q = ctx.quarantine
    fi = ctx.fi
    rows = acc.rows
    rows_append = rows.append
    rare_append = acc.rare.append
    header_line: int | None = None
    headless_reason: str | None = None
    long_ints = may_hold_long_ints(ctx.path)  # else lines skip the per-line digits check
    # the reference forbids mixing projected lines (no seq envelope) and full persisted lines
    # (seq / packed seq0) in one file: the first event line sets the mode
    env_line: int | None = None
    env_full = False
    with open(ctx.path, "rb") as fh:
        last_pos = 0
        for lineno, raw in enumerate(fh, start=1):
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]  # a UTF-8 byte order mark (as editors on Windows write)
            if lineno & 4095 == 0:
                pos = fh.tell()
                prog.update(pos - last_pos)
                last_pos = pos
            if headless_reason is not None:
                if raw.strip():
                    q.bad(ctx.err(lineno, "no_header", f"cannot be loaded: {headless_reason}",
                                  fix="Fix the session header (line 1) of this file."),
                          raw.rstrip(b"\r\n"))  # fmt: skip
                continue
            try:
                obj = loads(raw, long_ints=long_ints)  # a trailing newline is whitespace
            except JSONDecodeError as exc:
                raw = raw.rstrip(b"\r\n")
                if not raw.strip():
                    continue  # blank lines are skipped (line numbers stay exact)
                reason, detail = _bad_json(raw, exc)
                err = ctx.err(lineno, reason, detail)
                if header_line is None:
                    headless_reason = f"its session header (line {lineno}) {detail}"
                else:
                    acc.phantoms.append((fi, lineno, 1))
                q.bad(err, raw)
                continue
            if header_line is None:
                herr = _check_header(ctx, obj, lineno)
                if herr is not None:
                    headless_reason = f"its header (line {lineno}) is invalid: {herr.detail}"
                    q.bad(herr, raw.rstrip(b"\r\n"))
                    continue
                header_line = lineno
                ctx.header = obj
                continue
            if type(obj) is not dict:
                acc.phantoms.append((fi, lineno, 1))
                q.bad(ctx.err(lineno, "not_object",
                              f"must be a JSON object (an event), got a JSON {type(obj).__name__}"),
                      raw.rstrip(b"\r\n"))
                continue
            t = obj.get("type")
            if type(t) is not str or not t:
                acc.phantoms.append((fi, lineno, 1))
                q.bad(ctx.err(lineno, "missing_type", f"must be a non-empty string, got {t!r}",
                              field="type"), raw.rstrip(b"\r\n"))
                continue
            if t in _PACKED:
                problem = _packed_problem(obj, t)
                if problem is not None:
                    d = obj.get("data")
                    mem = d.get(_PACKED[t][1]) if type(d) is dict else None
                    acc.phantoms.append((fi, lineno, len(mem) if type(mem) is list and mem else 1))
                    q.bad(ctx.err(lineno, "bad_packed_row", f"{problem[1]} ({t} row)",
                                  field=problem[0]), raw.rstrip(b"\r\n"))
                    continue
                full = obj.get("seq0") is not None
                if env_line is None:
                    env_line, env_full = lineno, full
                elif full != env_full:
                    acc.phantoms.append((fi, lineno, len(obj["data"][_PACKED[t][1]])))
                    q.bad(_mixed(ctx, lineno, env_line, env_full, "seq0"), raw.rstrip(b"\r\n"))
                    continue
                _add_packed(acc, fi, lineno, t, obj)
                continue
            seq = obj.get("seq")
            if seq is not None and (not is_int64(seq) or seq < 0):
                acc.phantoms.append((fi, lineno, 1))
                q.bad(ctx.err(lineno, "bad_seq", f"must be an integer >= 0, got {seq!r}",
                              field="seq"), raw.rstrip(b"\r\n"))
                continue
            tm = obj.get("time")
            if tm is not None and not is_epoch_ms(tm):
                acc.phantoms.append((fi, lineno, 1))
                q.bad(ctx.err(lineno, "bad_time", "must be epoch milliseconds (years 1 to 9999), "
                              f"got {tm!r}", field="time"), raw.rstrip(b"\r\n"))
                continue
            if env_line is None:
                env_line, env_full = lineno, seq is not None
            elif (seq is not None) != env_full:
                acc.phantoms.append((fi, lineno, 1))
                q.bad(_mixed(ctx, lineno, env_line, env_full, "seq"), raw.rstrip(b"\r\n"))
                continue
            turn, step, ctype, text, rare = _decode_event(obj, t)
            if rare is not None and not (_tokens_ok(rare[6]) and _tokens_ok(rare[7])):
                acc.phantoms.append((fi, lineno, 1))
                q.bad(ctx.err(lineno, "bad_tokens", "must be integers that fit in 64 bits, got "
                              f"{rare[6]!r}, {rare[7]!r}", field="data.chunk.usage"),
                      raw.rstrip(b"\r\n"))
                continue
            if rare is not None or seq is not None or tm is not None:
                rare_append((len(rows), seq, tm) + (rare or _NO_RARE))
            rows_append((fi, lineno, t, _dump(obj), turn, step, ctype, text))
        prog.update(fh.tell() - last_pos)
    if header_line is None and headless_reason is None:
        q.bad(ctx.err(None, "empty_file", "holds no lines (a toh log starts with its session "
                      "header)", fix="Remove the empty file or restore its content."))


def _mixed(ctx: _FileCtx, lineno: int, env_line: int, env_full: bool, key: str) -> LoadError:
    """The error for a line whose envelope (seq or none) differs from the file's first event."""
    if env_full:
        detail = (f"has no {key}, but line {env_line} carries a seq envelope: a log is either "
                  "all full persisted lines or all projected lines")
    else:
        detail = (f"carries a {key}, but line {env_line} has none: a log is either all full "
                  "persisted lines or all projected lines")
    return ctx.err(lineno, "mixed_envelope", detail, field=key,
                   fix="Re-export the log with one line shape (drop every seq/time envelope, or "
                   "keep them on every line); replaykit does not guess an order between them.")


def _add_packed(acc: _Rows, fi: int, lineno: int, t: str, obj: dict) -> None:
    code, key, _ = _PACKED[t]
    data = obj["data"]
    members = data[key]
    tc_id = tc_name = ""
    if code == 2:
        tc_id = canonical_json(data["id"])
        tc_name = canonical_json(data["name"])
    acc.p_meta.append((fi, lineno, code, data["turn"], data["step"], data["index"],
                       obj.get("seq0"), obj.get("time0"), len(members), tc_id, tc_name))
    acc.p_texts.extend(members)
    acc.p_dt.append(0)
    acc.p_dt.extend(data["dt"])


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


def read_toh(
    path: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    tenant_id: str,
    errors: ErrorPolicy = "raise",
    progress: bool | None = None,
) -> EventLog:
    """Load toh session logs into an :class:`~replaykit.EventLog`.

    ``path`` is a ``session*.jsonl`` file, a scenario folder (the primary log plus its
    ``session.N.jsonl`` children), a tree of scenarios (searched recursively for ``*.jsonl``),
    a glob, or a list of those. ``replay.override.json`` sidecars are skipped.

    Rules (details in docs/formats.md):

    * line 1 is the session header: ``run_id`` = its ``id`` (qualified as
      ``"<id>@<relative path>"`` when several loaded files share one id, as test snapshots
      do), ``parent_run_id`` = the run of its ``parentSession`` (resolved in the same folder
      first); the header goes to ``log.runs`` (``createdAt`` -> ``created_at``, every other
      field as JSON in ``attrs``);
    * ``seq`` = the line's own ``seq`` (packed rows: ``seq0`` + member index) when present,
      else the implicit counter: 0 after the header, advancing by the number of events each
      line decodes to (a quarantined line keeps its slots so later numbers do not shift);
    * packed rows expand to one ``assistant/chunk`` event per member, strictly validated;
    * events of a fork child with ``seq < seedLength`` get ``inherited=True``;
    * a model call's rows share ``ref_id = "t{turn}.s{step}.c{k}"`` (k-th call of that step;
      a call ends with its ``finish`` chunk); ``assistant/message`` gets the id of the call it
      closes; tool calls/results get ``ref_id`` = ``callId``.

    Args:
        path: file(s), folder(s) or glob(s).
        tenant_id: the owner of these logs (toh logs carry none; never invented).
        errors: ``"raise"`` stops at the first bad line with :class:`LoadError`;
            ``"quarantine"`` puts each bad line in ``log.quarantine`` with its reason
            (a file-level problem such as an empty file is one row with ``line`` null).
        progress: show a progress bar over bytes (None: only in terminals/notebooks).

    Returns:
        The events, sorted by (tenant_id, run_id, seq), with ``runs`` holding one row per
        loaded header.

    Raises:
        LoadError: ``reason="bad_tenant"``: ``tenant_id`` is missing or breaks the tenant-id
            rule (:mod:`replaykit.tenancy`).
        ValueError: ``errors`` is not "raise" or "quarantine".
        FileNotFoundError: a path matches nothing.
        LoadError: (``errors="raise"``) a bad line: truncated JSON, invalid UTF-8, a line that
            is not an object, a missing/invalid header, a bad packed row, a bad or duplicate
            ``seq``, an empty file.

    Warns:
        OrphanRunWarning: a child log's ``parentSession`` is not among the loaded logs.

    Example:
        >>> import replaykit as rk
        >>> log = rk.read_toh("data/toh", tenant_id="demo")  # doctest: +SKIP
        >>> log.calls_df()[["run_id", "turn", "step", "finish", "finished"]]  # doctest: +SKIP
    """
    tenant = require_tenant(tenant_id, fmt=FORMAT)
    q = Quarantine(errors, tenant_id=tenant)
    files = [f for f in expand_paths(path, patterns=_PATTERNS) if not is_side_file(f)]
    acc = _Rows()
    ctxs = [_FileCtx(i, f, q) for i, f in enumerate(files)]
    total = sum(f.stat().st_size for f in files)
    # Decoding creates millions of short-lived containers; the cyclic GC would rescan them
    # over and over (about a third of the load time) while none of them can form a cycle.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        with Progress(total, desc="toh", unit="B", enabled=progress) as prog:
            for i, ctx in enumerate(ctxs, start=1):
                prog.next_file(ctx.path.name, i, len(ctxs))
                _read_file(ctx, acc, prog)
        table, runs = _assemble(ctxs, acc, tenant, q)
    finally:
        if gc_was_enabled:
            gc.enable()
    return EventLog(table, runs=runs, quarantine=q.table(runs))


# --------------------------------------------------------------------------- assembly
def _run_ids(ctxs: list[_FileCtx]) -> tuple[list[str | None], list[str | None]]:
    """run_id and parent_run_id per file (None for files without a valid header)."""
    ok = [c for c in ctxs if c.header is not None]
    by_id: dict[str, list[_FileCtx]] = {}
    for c in ok:
        by_id.setdefault(c.header["id"], []).append(c)  # type: ignore[index]
    root = Path(os.path.commonpath([str(c.path.resolve().parent) for c in ok])) if ok else None
    run_of: dict[int, str] = {}
    for hid, group in by_id.items():
        for c in group:
            if len(group) == 1:
                run_of[c.fi] = hid
            else:
                rel = c.path.resolve().relative_to(root).as_posix()  # type: ignore[arg-type]
                run_of[c.fi] = f"{hid}@{rel}"
    run_ids: list[str | None] = [run_of.get(c.fi) for c in ctxs]
    parents: list[str | None] = [None] * len(ctxs)
    for c in ok:
        ps = c.header.get("parentSession")  # type: ignore[union-attr]
        if ps is None:
            continue
        cands = [p for p in by_id.get(ps, []) if p.fi != c.fi]
        same_dir = [p for p in cands if p.path.resolve().parent == c.path.resolve().parent]
        pick = same_dir[0] if same_dir else (cands[0] if len(cands) == 1 else None)
        if pick is not None:
            parents[c.fi] = run_of[pick.fi]
            continue
        parents[c.fi] = ps
        why = (
            f"{len(cands)} loaded logs have that id, none in the same folder"
            if cands
            else "no loaded log has that id"
        )
        warnings.warn(
            f"{c.path}: child session {c.header['id']!r} names parentSession {ps!r}, but "  # type: ignore[index]
            f"{why}; it is loaded with parent_run_id={ps!r}. Load the parent's log too "
            "to link them.",
            OrphanRunWarning,
            stacklevel=3,
        )
    return run_ids, parents


def _runs_table(ctxs: list[_FileCtx], run_ids: list, parents: list, tenant: str) -> pa.Table:
    recs: dict[str, list] = {f.name: [] for f in RUNS_SCHEMA}
    for c in ctxs:
        if c.header is None:
            continue
        h = c.header
        ca = h.get("createdAt")
        recs["tenant_id"].append(tenant)
        recs["run_id"].append(run_ids[c.fi])
        recs["parent_run_id"].append(parents[c.fi])
        recs["format"].append(FORMAT)
        recs["source"].append(f"{FORMAT}:{c.path}")
        recs["created_at"].append(int(round(ca * 1000)) if ca is not None else None)
        recs["attrs"].append(
            canonical_json({k: v for k, v in h.items() if k not in ("type", "createdAt")})
        )
    cols = {k: v for k, v in recs.items() if k != "created_at"}
    t = pa.table(
        {**cols, "created_at": pa.array(recs["created_at"], pa.int64())},
    )
    return pa.table(
        [t.column(f.name).cast(f.type) for f in RUNS_SCHEMA], schema=RUNS_SCHEMA
    )


def _fill_tool_result_names(kind_idx: np.ndarray, kinds: list[str], fi: np.ndarray,
                            ref: pa.Array, name: pa.Array) -> pa.Array:  # fmt: skip
    """tool_name on tool_result rows from the tool_call row with the same (file, ref_id)."""
    if "tool_call" not in kinds or "tool_result" not in kinds:
        return name
    is_call = kind_idx == kinds.index("tool_call")
    is_res = kind_idx == kinds.index("tool_result")
    if not is_call.any() or not is_res.any():
        return name
    base = pa.table({"fi": fi, "ref": ref, "name": name, "pos": np.arange(len(fi))})
    calls = base.filter(pa.array(is_call)).filter(pc.is_valid(pc.field("ref"))
                                                  & pc.is_valid(pc.field("name")))
    calls = calls.group_by(["fi", "ref"], use_threads=False).aggregate([("name", "first")])
    res = base.filter(pc.and_(pa.array(is_res), pc.is_null(name))).select(["fi", "ref", "pos"])
    joined = res.join(calls, ["fi", "ref"], join_type="inner", use_threads=False)
    if not joined.num_rows:
        return name
    joined = joined.sort_by("pos")
    mask = np.zeros(len(fi), dtype=bool)
    mask[joined.column("pos").to_numpy()] = True
    return pc.replace_with_mask(name, pa.array(mask), joined.column("name_first").combine_chunks())


def _call_ids(type_idx: np.ndarray, types: list[str], fi: np.ndarray, turn: pa.Array,
              step: pa.Array, chunk_type: pa.Array) -> pa.Array:  # fmt: skip
    """Synthetic model-call ids ``t{turn}.s{step}.c{k}`` for assistant/chunk and message rows."""
    n = len(type_idx)
    out = pa.nulls(n, pa.string())
    code_c = types.index("assistant/chunk") if "assistant/chunk" in types else -1
    code_m = types.index("assistant/message") if "assistant/message" in types else -1
    is_c = type_idx == code_c
    is_m = type_idx == code_m
    sel = np.flatnonzero(is_c | is_m)
    if not len(sel):
        return out
    tn = pc.fill_null(turn, -(2**31)).to_numpy()[sel].astype(np.int64)
    sp = pc.fill_null(step, -(2**31)).to_numpy()[sel].astype(np.int64)
    f = fi[sel]
    order = np.lexsort((sel, sp, tn, f))
    s_sel = sel[order]
    s_tn, s_sp, s_f = tn[order], sp[order], f[order]
    s_c = is_c[s_sel]
    fin = np.asarray(pc.fill_null(pc.equal(chunk_type, "finish"), False))[s_sel] & s_c
    m = len(s_sel)
    new_grp = np.ones(m, dtype=bool)
    new_grp[1:] = (s_f[1:] != s_f[:-1]) | (s_tn[1:] != s_tn[:-1]) | (s_sp[1:] != s_sp[:-1])
    gstart = np.maximum.accumulate(np.where(new_grp, np.arange(m), 0))
    cum = np.cumsum(fin)
    base = np.where(gstart > 0, cum[gstart - 1], 0)
    k_chunk = cum - fin - base  # finishes before this row within its (file, turn, step)
    last_c = np.maximum.accumulate(np.where(s_c, np.arange(m), -1))
    has_c = (last_c >= gstart) & (last_c >= 0)
    k = np.where(s_c, k_chunk, k_chunk[np.maximum(last_c, 0)])
    valid = s_c | has_c
    ts = pc.cast(pa.array(s_tn), pa.string())
    ts = pc.if_else(pa.array(s_tn == -(2**31)), "", ts)
    ss = pc.cast(pa.array(s_sp), pa.string())
    ss = pc.if_else(pa.array(s_sp == -(2**31)), "", ss)
    ids = pc.binary_join_element_wise("t", ts, ".s", ss, ".c", pc.cast(pa.array(k), pa.string()),
                                      "")  # fmt: skip
    ids = pc.if_else(pa.array(valid), ids, pa.scalar(None, pa.string()))
    inv = np.empty(n, dtype=np.int64)
    # scatter: position -> id (non-selected rows stay null)
    inv.fill(m)
    inv[s_sel] = np.arange(m)
    return pa.concat_arrays([ids, pa.nulls(1, pa.string())]).take(pa.array(inv))


def _assemble(ctxs: list[_FileCtx], acc: _Rows, tenant: str, q: Quarantine
              ) -> tuple[pa.Table, pa.Table]:  # fmt: skip
    run_ids, parents = _run_ids(ctxs)
    runs = _runs_table(ctxs, run_ids, parents, tenant)

    # ---- non-packed rows -> columns
    k_rows = len(acc.rows)
    cols: list[Any] = list(zip(*acc.rows, strict=True)) if k_rows else [()] * len(_ROW_FIELDS)
    acc.rows = []
    r: dict[str, Any] = dict(zip(_ROW_FIELDS, cols, strict=True))
    r_fi = np.fromiter(r["fi"], np.int64, k_rows)
    r_line = np.fromiter(r["line"], np.int64, k_rows)
    # sparse fields: scatter into object arrays (numpy does the loop)
    rare_cols = list(zip(*acc.rare, strict=True)) if acc.rare else [()] * (3 + len(_RARE_FIELDS))
    acc.rare = []
    rare_idx = np.asarray(rare_cols[0], dtype=np.int64)
    for name, vals in zip(("seq", "time", *_RARE_FIELDS), rare_cols[1:], strict=True):
        full = np.full(k_rows, False if name == "is_error" else None, dtype=object)
        if len(rare_idx):
            full[rare_idx] = np.asarray(vals, dtype=object)
        r[name] = full.tolist()  # pa.array converts lists much faster than object arrays
    r_seq = pa.array(r["seq"], pa.int64())
    r_time = pa.array(r["time"], pa.float64())

    # ---- packed rows -> members (column-wise)
    p = len(acc.p_meta)
    pm = list(zip(*acc.p_meta, strict=True)) if p else [()] * 11
    meta = {
        name: np.asarray(v, dtype=object if name in ("seq0", "time0", "id", "name") else np.int64)
        for name, v in zip(("fi", "line", "code", "turn", "step", "index", "seq0", "time0",
                            "n", "id", "name"), pm, strict=True)  # fmt: skip
    }
    n_mem = meta["n"].astype(np.int64) if p else np.zeros(0, np.int64)
    m_total = int(n_mem.sum())
    rep = np.repeat(np.arange(p), n_mem)
    line_first = np.cumsum(n_mem) - n_mem
    k = np.arange(m_total) - line_first[rep]
    dt = np.asarray(acc.p_dt, dtype=np.int64)
    # cumulative dt within each packed line (dt[first] is the 0 we put in front)
    cdt = np.cumsum(dt) - np.repeat(np.cumsum(dt)[line_first] - dt[line_first], n_mem) \
        if m_total else dt  # fmt: skip
    has_seq0 = np.array([v is not None for v in meta["seq0"]], dtype=bool).reshape(p)
    has_time0 = np.array([v is not None for v in meta["time0"]], dtype=bool).reshape(p)
    seq0 = np.where(has_seq0, meta["seq0"], 0).astype(np.int64)
    time0 = np.where(has_time0, meta["time0"], 0).astype(np.int64)
    m_has_seq = has_seq0[rep]
    m_has_time = has_time0[rep]
    m_seq = seq0[rep] + k
    m_time = time0[rep] + cdt
    m_texts = pa.array(acc.p_texts, pa.large_string())
    acc.p_texts = []
    # the members' payload texts are built on a second thread (Arrow releases the GIL) while
    # this one orders the rows and builds the other columns
    pool = ThreadPoolExecutor(1)
    if m_total:
        m_payload_f = pool.submit(_member_payloads, meta, rep, k, m_texts, m_seq, m_time,
                                  m_has_seq, m_has_time)
    else:
        m_payload_f = pool.submit(pa.array, [], pa.string())
    pool.shutdown(wait=False)
    m_code = meta["code"][rep] if p else np.zeros(0, np.int64)

    # ---- phantoms (quarantined lines keep their implicit-seq slots)
    ph = np.asarray(acc.phantoms, dtype=np.int64).reshape(-1, 3)

    # ---- one ordering over rows, members and phantoms: (file, line, member k)
    n_all = k_rows + m_total + len(ph)
    e_fi = np.concatenate([r_fi, meta["fi"][rep] if p else np.zeros(0, np.int64), ph[:, 0]])
    e_line = np.concatenate([r_line, meta["line"][rep] if p else np.zeros(0, np.int64), ph[:, 1]])
    e_k = np.concatenate([np.zeros(k_rows, np.int64), k, np.zeros(len(ph), np.int64)])
    weight = np.concatenate([np.ones(k_rows + m_total, np.int64), ph[:, 2]])
    order = np.lexsort((e_k, e_line, e_fi))
    w = weight[order]
    f_sorted = e_fi[order]
    cw = np.cumsum(w) - w
    first = np.ones(n_all, dtype=bool)
    first[1:] = f_sorted[1:] != f_sorted[:-1]
    file_base = np.maximum.accumulate(np.where(first, np.arange(n_all), 0))
    implicit = cw - cw[file_base]
    real = order < (k_rows + m_total)
    order = order[real]
    implicit = implicit[real]
    n = len(order)

    def combine(row_vals: Any, mem_vals: Any, typ: pa.DataType) -> pa.Array:
        a = row_vals if isinstance(row_vals, pa.Array) else pa.array(row_vals, typ)
        b = mem_vals if isinstance(mem_vals, pa.Array) else pa.array(mem_vals, typ)
        if a.type != typ:
            a = a.cast(typ)
        if b.type != typ:
            b = b.cast(typ)
        return pa.concat_arrays([a, b]).take(pa.array(order))

    fi = np.concatenate([r_fi, meta["fi"][rep] if p else np.zeros(0, np.int64)])[order]
    line = np.concatenate([r_line, meta["line"][rep] if p else np.zeros(0, np.int64)])[order]
    explicit = combine(r_seq, pa.array(m_seq, mask=~m_has_seq), pa.int64())
    seq = np.where(np.asarray(pc.is_valid(explicit)),
                   np.asarray(pc.fill_null(explicit, 0)), implicit).astype(np.int64)  # fmt: skip
    time_ms = combine(r_time, pa.array(m_time.astype(np.float64), mask=~m_has_time), pa.float64())

    type_arr = combine(pa.array(r["type"], pa.string()),
                       pa.repeat(pa.scalar("assistant/chunk"), m_total), pa.string())
    type_dict = type_arr.dictionary_encode()
    types = type_dict.dictionary.to_pylist()
    type_idx = type_dict.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    kinds_all = sorted(set(KIND_OF_TYPE.values()) | {"other"})
    kind_code = np.array([kinds_all.index(KIND_OF_TYPE.get(t_, "other")) for t_ in types],
                         dtype=np.int64)  # fmt: skip
    kind_idx = kind_code[type_idx] if n else np.zeros(0, np.int64)

    turn = combine(pa.array(r["turn"], pa.int64()), meta["turn"][rep] if p else [], pa.int32())
    step = combine(pa.array(r["step"], pa.int64()), meta["step"][rep] if p else [], pa.int32())
    chunk_type = combine(
        pa.array(r["chunk_type"], pa.string()),
        pa.array(_CHUNK_OF_CODE).take(pa.array(m_code, pa.int64())),
        pa.string(),
    )
    text = combine(pa.array(r["text"], pa.large_string()), m_texts, pa.large_string())
    r_payload = pa.array(r["payload"], pa.binary() if HAVE_ORJSON else pa.large_string())
    payload = combine(r_payload.cast(pa.large_string()), m_payload_f.result(), pa.large_string())

    def rows_only(name: str, typ: pa.DataType) -> pa.Array:
        return combine(pa.array(r[name], typ), pa.nulls(m_total, typ), typ)

    ref_id = rows_only("ref_id", pa.string())
    tool_name = _fill_tool_result_names(kind_idx, kinds_all, fi, ref_id,
                                        rows_only("tool_name", pa.string()))  # fmt: skip

    # ---- duplicate seq within a file: quarantine the later line
    keep = np.ones(n, dtype=bool)
    if n:
        o2 = np.lexsort((line, seq, fi))
        dup = np.zeros(n, dtype=bool)
        same = (fi[o2][1:] == fi[o2][:-1]) & (seq[o2][1:] == seq[o2][:-1])
        dup[o2[1:][same]] = True
        if dup.any():
            bad = sorted(set(zip(fi[dup].tolist(), line[dup].tolist(), strict=True)))
            first_pos: dict[tuple[int, int], int] = {}
            for pos in np.flatnonzero(dup).tolist():
                first_pos.setdefault((int(fi[pos]), int(line[pos])), pos)
            for f_i, ln in bad:
                pos = first_pos[(f_i, ln)]
                ctx = ctxs[f_i]
                q.bad(ctx.err(ln, "duplicate_seq",
                              f"repeats seq {int(seq[pos])}, already used by an earlier line of "
                              "this session", field="seq"),
                      payload[pos].as_py())  # fmt: skip
            bad_keys = np.array([f_i * (1 << 32) + ln for f_i, ln in bad], dtype=np.int64)
            keep = ~np.isin(fi * (1 << 32) + line, bad_keys)

    # ---- ids, flags, per-file columns
    call_ids = _call_ids(type_idx, types, fi, turn, step, chunk_type)
    ref_id = pc.coalesce(ref_id, call_ids)
    run_arr = np.array(run_ids, dtype=object)
    if "subagent/descriptor" in types:
        desc = type_idx == types.index("subagent/descriptor")
        own = pa.array(run_arr[fi], pa.string())
        ref_id = pc.if_else(pc.and_(pa.array(desc), pc.is_null(ref_id)), own, ref_id)
    seed = np.array(
        [
            c.header.get("seedLength") if c.header is not None and
            c.header.get("seedLength") is not None else -1
            for c in ctxs
        ],
        dtype=np.int64,
    )  # fmt: skip
    inherited = seq < seed[fi] if n else np.zeros(0, bool)

    ts_ms = time_ms.to_numpy(zero_copy_only=False)
    ts_valid = ~np.isnan(ts_ms)
    ts_us = pa.array(np.round(np.where(ts_valid, ts_ms, 0) * 1000).astype(np.int64),
                     mask=~ts_valid).cast(pa.timestamp("us", tz="UTC"))  # fmt: skip

    # dictionary columns by file index (no per-row strings)
    def by_file(values: list[str | None]) -> pa.DictionaryArray:
        uniq = sorted({v for v in values if v is not None})
        pos = {v: i for i, v in enumerate(uniq)}
        code = np.array([pos.get(v, -1) if v is not None else -1 for v in values], np.int32)
        codes = code[fi] if n else np.zeros(0, np.int32)
        return pa.DictionaryArray.from_arrays(
            pa.array(codes, mask=codes < 0), pa.array(uniq, pa.string()))

    kind_dict = pa.array(kinds_all, pa.string())

    def dict_col(values: pa.Array) -> pa.Array:
        return pc.cast(values, pa.string()).dictionary_encode()

    columns = {
        "tenant_id": pa.DictionaryArray.from_arrays(
            pa.array(np.zeros(n, np.int32)), pa.array([tenant])),
        "run_id": by_file(run_ids),
        "parent_run_id": by_file(parents),
        "seq": pa.array(seq),
        "type": pa.DictionaryArray.from_arrays(
            pa.array(type_idx.astype(np.int32)), type_dict.dictionary),
        "kind": pa.DictionaryArray.from_arrays(pa.array(kind_idx.astype(np.int32)), kind_dict),
        "ts": ts_us,
        "turn": turn,
        "step": step,
        "event_id": rows_only("event_id", pa.string()),
        "ref_id": ref_id,
        "tool_name": dict_col(tool_name),
        "args_hash": rows_only("args_hash", pa.string()),
        "cache_key": rows_only("cache_key", pa.string()),
        "is_error": combine(pa.array(r["is_error"], pa.bool_()),
                            pa.array(np.zeros(m_total, bool)), pa.bool_()),  # fmt: skip
        "finish": dict_col(rows_only("finish", pa.string())),
        "input_tokens": rows_only("input_tokens", pa.int64()),
        "output_tokens": rows_only("output_tokens", pa.int64()),
        "chunk_type": dict_col(chunk_type),
        "text": text,
        "inherited": pa.array(inherited, pa.bool_()),
        "payload": payload,
        "prev_hash": pa.nulls(n, pa.string()),
        "row_hash": pa.nulls(n, pa.string()),
        "source": by_file([f"{FORMAT}:{c.path}" for c in ctxs]),
        "source_line": pa.array(line, pa.int64()),
    }
    arrays = []
    for f in EVENTS_SCHEMA:
        a = columns[f.name]
        if a.type != f.type:
            a = a.cast(f.type)
        arrays.append(a)
    table = pa.Table.from_arrays(arrays, schema=EVENTS_SCHEMA)
    if not keep.all():
        table = table.filter(pa.array(keep))
    return table, runs
