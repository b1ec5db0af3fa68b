"""Loader for Codex CLI rollout files (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is ``{"timestamp", "type", "payload"}`` with ``type`` one of ``session_meta`` (the
session header: id, cwd, cli_version, model_provider, instructions, git), ``turn_context``
(per-turn settings: model, effort, approval and sandbox policy), ``response_item`` (the model
conversation, OpenAI Responses items: ``message``, ``reasoning``, ``function_call``,
``function_call_output``, ``custom_tool_call``, ``local_shell_call``, ``web_search_call``,
...), ``event_msg`` (UI events: ``task_started``, ``task_complete``, ``turn_aborted``,
``token_count``, ``user_message``, ``agent_message``, ``agent_reasoning``, ...) and
``compacted`` (a compaction summary). Rollouts of the mid-2025 layout (Codex CLI before
about September 2025) have no envelope: line 1 is the session header itself (``{"id",
"timestamp", "instructions", "git"}``), then bare Responses items (``{"type": "message",
...}``) and ``{"record_type": "state"}`` markers; they are read as the same session_meta /
response_item lines (the markers are ``state`` rows of kind ``other``), their payloads as
written.

Mapping (field by field: ``docs/formats/codex.md``): one run per session id (the
``session_meta`` id; a file without one uses the file name's id), one row per line. The
``response_item`` lines carry the conversation (``event_msg`` ``user_message`` /
``agent_message`` / ``agent_reasoning`` mirror them for the UI and are kept as ``other``, so
nothing is counted twice). A model call is the run of model output items (reasoning,
assistant message, tool calls) between inputs; its tokens are the ``token_count`` event that
follows it (``last_token_usage``; a repeated total is not counted again): ``input_tokens``
(which already counts the cached ones) and ``output_tokens`` (reasoning included) on the
call's first row; ``calls_df`` reads ``cached_input_tokens``, ``cache_write_input_tokens``
(when recorded) and ``reasoning_output_tokens`` from the ``token_count`` row. A turn is
``task_started`` .. ``task_complete`` / ``turn_aborted`` (files without those: each user
message starts a turn).

The rollouts record no tenant: the caller names the owner (``tenant_id=``).
"""

from __future__ import annotations

import json
import os
import re
from functools import partial
from pathlib import Path
from typing import Any

from .._base import native as _native
from .._base.json import args_hash, canonical_json, loads
from ..eventlog.log import EventLog
from ._common import (
    ErrorPolicy,
    Paths,
    Quarantine,
    Tenants,
    each_file,
    expand_paths,
    keep_tenants,
    owner_and_filter,
)
from ._records import (
    Row,
    arrays_to_log,
    bad,
    guard,
    json_lines,
    jsonl_head,
    payload_of,
    row_arrays,
    rows_to_log,
    text_of,
    tokens,
)
from ._scanned import Scanned

__all__ = ["FORMAT", "LINE_TYPES", "read_codex", "sniff"]

FORMAT = "codex"
_PATTERNS = ("*.jsonl",)
LINE_TYPES = ("session_meta", "turn_context", "response_item", "event_msg", "compacted")
_ID_RE = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")

_MODEL_OUT = {"reasoning", "function_call", "custom_tool_call", "local_shell_call",
              "web_search_call", "image_generation_call"}
_TOOL_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call",
               "image_generation_call"}
_TOOL_OUTPUTS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}
_MIRRORS = {"user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content",
            "agent_message_delta", "agent_reasoning_delta"}


def sniff(path: Path) -> str | None:
    """None when ``path`` looks like a Codex rollout, otherwise why it does not.

    A ``.jsonl`` file whose first JSON line is ``{"timestamp", "type", "payload"}`` with a
    rollout line type (``session_meta`` first in every file Codex writes).

    >>> sniff(Path("tests/data/codex/localpush/rollout-2026-02-23T13-19-38-"
    ...            "019c8a70-dda7-7f33-98ea-f30553347322.jsonl")) is None
    True
    """
    read = jsonl_head(path)
    if isinstance(read, str):
        return read
    _, line = read
    if line is None:
        return "the file is empty"
    raw, doc = line
    if doc is None:
        if re.match(rb'\s*\{"timestamp":"[^"]*","type":"session_meta"', raw) or \
                re.match(rb'\s*\{"id":"[^"]*","timestamp":"[^"]*","instructions":', raw):
            return None  # a long first line cut by the head read
        return "line 1 is not a JSON object"
    if doc.get("type") in LINE_TYPES and "payload" in doc:
        return None
    if _legacy_meta(doc):
        return None  # the mid-2025 layout: a bare session header, then bare items
    return (f"line 1 is not a rollout line (type={doc.get('type')!r}; expected "
            "session_meta, response_item, event_msg, turn_context or compacted with a "
            "payload, or the mid-2025 layout's session header {id, timestamp, "
            "instructions})")


_LEGACY_META_KEYS = {"id", "timestamp", "instructions", "git"}


def _legacy_meta(doc: dict[str, Any]) -> bool:
    """The first line of a mid-2025 rollout: the session header written bare
    (``{"id", "timestamp", "instructions", "git"}``), no ``type`` and no ``payload``."""
    return ("type" not in doc and "payload" not in doc and isinstance(doc.get("id"), str)
            and "timestamp" in doc
            and ("instructions" in doc or "git" in doc or set(doc) <= _LEGACY_META_KEYS))


def _envelope(doc: dict[str, Any], first: bool) -> dict[str, Any]:
    """A mid-2025 rollout line in the current ``{timestamp, type, payload}`` shape (read
    only; the row's payload stays the line as written): the header is the session_meta,
    ``{"record_type": ...}`` markers are ``state`` lines, the rest are bare Responses items."""
    if first:
        return {"timestamp": doc.get("timestamp"), "type": "session_meta", "payload": doc}
    if "record_type" in doc and "type" not in doc:
        return {"type": "state", "payload": {}}
    return {"type": "response_item", "payload": doc}


def _args(ptype: str | None, pl: dict[str, Any]) -> Any:
    """A tool call's arguments as the model produced them: ``function_call`` arguments are
    JSON text (decoded once; text that is not JSON stays text); a ``custom_tool_call``
    input is free-form text and stays a string; ``local_shell_call`` / ``web_search_call``
    arguments are their ``action`` object."""
    if ptype == "custom_tool_call":
        raw = pl.get("input")
        return raw if raw is not None else ""
    if ptype == "function_call":
        raw = pl.get("arguments")
        if isinstance(raw, str):
            try:
                return json.loads(raw)
            except (ValueError, RecursionError):
                return raw
        return raw if raw is not None else {}
    raw = pl.get("action", pl.get("arguments", pl.get("input")))
    return raw if raw is not None else {}


def _reasoning_text(pl: dict[str, Any]) -> str | None:
    """A reasoning item's readable text: its summary parts, else its raw ``content``
    (``reasoning_text`` parts); null when it holds only encrypted content."""
    for key in ("summary", "content"):
        parts = pl.get(key)
        if isinstance(parts, list) and parts:
            texts = [str(p["text"]) for p in parts if isinstance(p, dict)
                     and isinstance(p.get("text"), str)]
            if texts:
                return "\n\n".join(texts)
    return None


def _output_error(out: Any) -> bool:
    """A tool output that records a failure (non-zero exit code or ``success: false``)."""
    doc = out
    if isinstance(out, str):
        try:
            doc = json.loads(out)
        except (ValueError, RecursionError):
            return False
    if isinstance(doc, dict):
        meta = doc.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("exit_code"), int):
            return meta["exit_code"] != 0
        if doc.get("success") is False:
            return True
    return False


def _output_text(out: Any) -> str | None:
    if isinstance(out, str):
        try:
            doc = json.loads(out)
        except (ValueError, RecursionError):
            return out
        if isinstance(doc, dict) and isinstance(doc.get("output"), str):
            return doc["output"]
        return out
    if isinstance(out, dict):
        if isinstance(out.get("content"), str):
            return out["content"]
        return text_of(out.get("content")) if out.get("content") is not None else \
            canonical_json(out)
    return text_of(out)


def _file_rows(path: Path, quarantine: Quarantine) -> tuple[list[Row], dict[str, Any] | None]:
    src = f"{FORMAT}:{path}"
    written = list(json_lines(path, FORMAT, quarantine))
    legacy = bool(written) and _legacy_meta(written[0][2])
    originals = {lineno: doc for lineno, _, doc in written} if legacy else {}
    # a mid-2025 file's lines, and the {"record_type": "state"} markers some files of the
    # September 2025 change-over hold among enveloped lines, in the current envelope
    lines = [(lineno, raw, _envelope(doc, k == 0 and legacy) if legacy or (
        "record_type" in doc and "type" not in doc) else doc)
        for k, (lineno, raw, doc) in enumerate(written)]
    if not legacy:
        originals = {lineno: doc for lineno, _, doc in written
                     if "record_type" in doc and "type" not in doc}
    meta = next((d.get("payload") for _, _, d in lines if d.get("type") == "session_meta"
                 and isinstance(d.get("payload"), dict)), None)
    sid = meta.get("id") if isinstance(meta, dict) else None
    if not isinstance(sid, str) or not sid:
        sid = _fallback_id(path)
    has_tasks = any(d.get("type") == "event_msg" and isinstance(d.get("payload"), dict)
                    and d["payload"].get("type") == "task_started" for _, _, d in lines)
    has_ui_user = any(d.get("type") == "event_msg" and isinstance(d.get("payload"), dict)
                      and d["payload"].get("type") == "user_message" for _, _, d in lines)
    rows: list[Row] = []
    st: dict[str, Any] = {"turn": 0, "step": 0, "in_call": False, "call": None,
                          "total": None, "tools": {}, "leading": _counts_lead(lines)}

    for lineno, raw, doc in lines:
        saved = {k: st[k] for k in ("turn", "step", "in_call", "call", "total")}
        # a quarantined line changes no turn, call or token total
        with guard(quarantine, FORMAT, path, lineno, raw, undo=partial(st.update, saved)):
            rows.extend(_line_rows(path, src, sid, lineno, doc, st, has_tasks, has_ui_user,
                                   len(rows), originals.get(lineno, doc)))
    if st["leading"]:
        _counts_to_next_call(rows)
    _move_usage(rows)
    return rows, (_header(path, sid, meta, rows[0]["ts"]) if rows else None)


def _header(path: Path, sid: str, meta: Any, first_ts: str | None) -> dict[str, Any]:
    """The run of a file with rows: session ``sid``, attributes from its session_meta
    payload ``meta`` (None when it has none; then ``created_at`` is the first row's time)."""
    attrs: dict[str, Any] = {"format": FORMAT, "file": str(path)}
    if isinstance(meta, dict):
        for key in ("cli_version", "originator", "source", "cwd", "model_provider",
                    "git", "forked_from_id"):
            if meta.get(key) is not None:
                attrs[key] = meta[key]
    return {"run_id": sid, "parent_run_id": meta.get("forked_from_id") if isinstance(
        meta, dict) and isinstance(meta.get("forked_from_id"), str) else None,
        "format": FORMAT, "source": f"{FORMAT}:{path}",
        "created_at": meta.get("timestamp") if isinstance(meta, dict) else first_ts,
        "attrs": attrs}


def _fallback_id(path: Path) -> str:
    """The session id of a rollout whose session_meta names none: the file name's id."""
    m = _ID_RE.search(path.name)
    return m.group(1) if m else path.stem


def _is_output(doc: dict[str, Any]) -> bool:
    pl: dict[str, Any] = doc["payload"] if isinstance(doc.get("payload"), dict) else {}
    return doc.get("type") == "response_item" and (
        pl.get("type") in _MODEL_OUT or (pl.get("type") == "message"
                                         and pl.get("role") == "assistant"))


def _is_count(doc: dict[str, Any]) -> bool:
    pl: dict[str, Any] = doc["payload"] if isinstance(doc.get("payload"), dict) else {}
    info = pl.get("info")
    return doc.get("type") == "event_msg" and pl.get("type") == "token_count" and \
        isinstance(info, dict) and isinstance(info.get("last_token_usage"), dict)


def _counts_lead(lines: list[tuple[int, bytes, dict[str, Any]]]) -> bool:
    """True for the rollouts (Codex CLI of about September 2025) that write each response's
    ``token_count`` *before* its items (reasoning, tool calls), after the previous call's tool
    output; later versions write it right after the items. Told by the file's first count
    with figures: it comes before any model output item."""
    for _, _, doc in lines:
        if _is_output(doc):
            return False
        if _is_count(doc):
            return True
    return False


def _counts_to_next_call(rows: list[Row]) -> None:
    """In a file whose counts lead their call (:func:`_counts_lead`), a count read while no
    call was open names the call that opens next: its ``ref_id`` becomes that call and its
    tokens go on that call's first row (the count row stays an ``other`` row naming it)."""
    pending: list[Row] = []
    for r in rows:
        if r.get("_next_call"):
            pending.append(r)
        elif pending and r["kind"] in ("model_response", "model_chunk") and r.get("ref_id"):
            for c in pending:
                c["ref_id"] = r["ref_id"]
                for k in ("input_tokens", "output_tokens"):
                    if c.get(k) is not None:
                        r[k] = (r.get(k) or 0) + c[k]
                    c[k] = None
            pending = []
    for r in rows:
        r.pop("_next_call", None)


def _move_usage(rows: list[Row]) -> None:
    """Put each ``token_count``'s tokens on the first row of the model call it reports (the
    call's tool calls come before the count in the file, and a call ends at its last row),
    leaving the count row as an ``other`` row that still names the call in ``ref_id``; the
    first row also gets the call's finish, ``unknown`` (Codex records none)."""
    first: dict[str, Row] = {}
    for r in rows:
        ref = r.get("ref_id")
        if ref is None or r["kind"] not in ("model_response", "model_chunk"):
            continue
        if r.get("chunk_type") == "usage":
            head = first.get(ref)
            if head is None:  # a call of tool calls only: the count is its one model row
                first[ref] = r
                r["finish"] = "unknown"
            elif head is not r:
                for k in ("input_tokens", "output_tokens"):
                    if r.get(k) is not None:
                        head[k] = (head.get(k) or 0) + r[k]
                    r[k] = None
                r["kind"] = "other"
        elif ref not in first:
            first[ref] = r
            r["finish"] = "unknown"  # Codex records no finish reason; one per call


def _line_rows(path: Path, src: str, sid: str, lineno: int, doc: dict[str, Any],
               st: dict[str, Any], has_tasks: bool, has_ui_user: bool, seq0: int,
               written: dict[str, Any] | None = None) -> list[Row]:
    """The rows of one line (``doc`` in the current envelope; ``written``: the line as the
    file holds it, the rows' payload, when that differs)."""
    written = doc if written is None else written
    typ = doc.get("type")
    if not isinstance(typ, str) or not typ:
        raise bad(FORMAT, path, lineno, "missing_type",
                  "has no string 'type' (session_meta, response_item, event_msg, ...)",
                  field="type")
    pl = doc.get("payload")
    if pl is not None and not isinstance(pl, dict):
        raise bad(FORMAT, path, lineno, "bad_payload",
                  f"has a 'payload' that is a {type(pl).__name__}, not an object",
                  field="payload")
    pl = pl or {}
    ptype = pl.get("type") if isinstance(pl.get("type"), str) else None
    ts = doc.get("timestamp") if isinstance(doc.get("timestamp"), str) else None
    full_type = f"{typ}.{ptype}" if ptype and typ in ("response_item", "event_msg") else typ
    cols: dict[str, Any] = {"kind": "other"}
    opened = False

    def new_call() -> None:
        st["step"] += 1
        st["in_call"] = True
        st["call"] = f"{sid}:{st['turn']}.{st['step']}"

    if typ == "session_meta":
        cols = {"kind": "session", "event_id": pl.get("id") if isinstance(
            pl.get("id"), str) else None}
    elif typ == "turn_context":
        cols = {"kind": "session"}
    elif typ == "compacted":
        cols = {"kind": "checkpoint", "text": pl.get("message") if isinstance(
            pl.get("message"), str) else None}
    elif typ == "event_msg":
        if ptype == "task_started":
            st["turn"] += 1
            st["step"] = 0
            st["in_call"] = False
            cols = {"kind": "turn_start", "event_id": pl.get("turn_id")}
        elif ptype in ("task_complete", "turn_aborted"):
            aborted = ptype == "turn_aborted"
            cols = {"kind": "turn_end", "is_error": aborted, "text": pl.get(
                "last_agent_message") if isinstance(pl.get("last_agent_message"), str) else (
                pl.get("reason") if isinstance(pl.get("reason"), str) else None)}
        elif ptype == "token_count":
            info = pl.get("info")
            if isinstance(info, dict) and isinstance(info.get("last_token_usage"), dict):
                total = info.get("total_token_usage")
                key = canonical_json(total) if total is not None else None
                if key is None or key != st["total"]:
                    st["total"] = key
                    last = info["last_token_usage"]
                    # the call it reports: the open one; in a file whose counts lead their
                    # call, with no call open, the next one (_counts_to_next_call)
                    ahead = st["leading"] and not st["in_call"]
                    cols = {"kind": "model_chunk" if st["call"] and not ahead else "other",
                            "chunk_type": "usage", "ref_id": None if ahead else st["call"],
                            "_next_call": ahead,
                            "input_tokens": tokens(last.get("input_tokens"), FORMAT, path,
                                                   lineno, "payload.info.last_token_usage"
                                                   ".input_tokens"),
                            "output_tokens": tokens(last.get("output_tokens"), FORMAT, path,
                                                    lineno, "payload.info.last_token_usage"
                                                    ".output_tokens")}
            st["in_call"] = False
        elif ptype == "user_message" and not has_tasks:
            st["turn"] += 1
            st["step"] = 0
            st["in_call"] = False
            cols = {"kind": "other", "text": pl.get("message") if isinstance(
                pl.get("message"), str) else None}
        elif ptype == "error" or ptype == "stream_error":
            cols = {"kind": "error", "is_error": True, "text": pl.get("message") if isinstance(
                pl.get("message"), str) else None}
        elif ptype in _MIRRORS:
            text = pl.get("message") if isinstance(pl.get("message"), str) else pl.get("text")
            cols = {"kind": "other", "text": text if isinstance(text, str) else None}
    elif typ == "response_item":
        role = pl.get("role")
        if ptype == "message" and role == "assistant" or ptype in _MODEL_OUT:
            if not st["in_call"]:
                new_call()
                opened = ptype in _TOOL_CALLS  # the call's first item is a tool call
        elif ptype == "message" or ptype in _TOOL_OUTPUTS:
            st["in_call"] = False
        if ptype == "message":
            text = text_of(pl.get("content"))
            if role == "assistant":
                cols = {"kind": "model_response", "ref_id": st["call"], "text": text}
            elif role == "user":
                if not has_tasks and not has_ui_user and not (text or "").startswith("<"):
                    st["turn"] += 1
                    st["step"] = 0
                cols = {"kind": "user_message", "text": text}
            else:  # developer / system instructions
                cols = {"kind": "other", "text": text}
        elif ptype == "reasoning":
            cols = {"kind": "model_chunk", "chunk_type": "reasoning", "ref_id": st["call"],
                    "text": _reasoning_text(pl)}
        elif ptype in _TOOL_CALLS:
            call_id = pl.get("call_id") or pl.get("id")
            call_id = call_id if isinstance(call_id, str) else None
            name = pl.get("name") if isinstance(pl.get("name"), str) else ptype
            args = _args(ptype, pl)
            st["tools"][call_id] = name
            cols = {"kind": "tool_call", "ref_id": call_id, "tool_name": name,
                    "args_hash": args_hash(args), "text": canonical_json(args)}
        elif ptype in _TOOL_OUTPUTS:
            call_id = pl.get("call_id") if isinstance(pl.get("call_id"), str) else None
            out = pl.get("output")
            cols = {"kind": "tool_result", "ref_id": call_id,
                    "tool_name": st["tools"].get(call_id), "is_error": _output_error(out),
                    "text": _output_text(out)}
    row = {"run_id": sid, "seq": seq0, "type": full_type, "ts": ts,
           "turn": st["turn"] or None, "step": st["step"] or None,
           "payload": payload_of(written, FORMAT, path, lineno), "source": src,
           "source_line": lineno, "is_error": False}
    row.update(cols)
    if row["kind"] in ("turn_start", "session") or (typ == "event_msg" and ptype ==
                                                    "user_message"):
        row["step"] = None
    if opened:  # the model call's own row, before the tool call it asked for
        call = {**row, "kind": "model_response", "ref_id": st["call"], "tool_name": None,
                "args_hash": None, "text": None,
                "payload": payload_of({**written, "contentPart": "call"}, FORMAT, path,
                                      lineno)}
        row["seq"] = seq0 + 1
        return [call, row]
    return [row]


def read_codex(path: Paths, *, owner: str | None = None, tenant_id: Tenants = None,
               errors: ErrorPolicy = "raise", progress: bool | None = None) -> EventLog:
    """Load Codex CLI rollout files (a file, ``~/.codex/sessions``, any folder, a glob).

    Every ``*.jsonl`` under a folder is read and all of them form one log, one run per
    session (``session_meta`` id).

    Args:
        owner: owner of the sessions (rollouts record none); required, never guessed.
        tenant_id: keep only these tenants' rows (one id or a list; None: all), as
            in every reader: the rows are all ``owner``'s, so all of them or none.
        errors: ``"raise"`` (default) or ``"quarantine"`` (bad lines become quarantine rows
            with their reason; the other lines load).
        progress: progress bar over files (None: when interactive).

    Raises:
        LoadError: ``bad_tenant``; under ``"raise"`` a bad line: ``bad_json``,
            ``not_object``, ``bad_encoding``, ``missing_type``, ``bad_payload``,
            ``bad_tokens``, ``too_deep``; ``unreadable`` / ``compressed`` files;
            ``duplicate_session`` (two files hold the same session id).
        FileNotFoundError: nothing matches ``path``.

    Example:
        >>> log = rk.read_codex("tests/data/codex/localpush", owner="me")
        >>> log.num_runs
        2
    """
    tenant, wanted = owner_and_filter(owner, tenant_id, fmt=FORMAT)
    quarantine = Quarantine(errors, tenant_id=tenant)
    files = expand_paths(path, patterns=_PATTERNS)
    scanned = _native_scan(files) if _native.enabled() and files else None
    # each loaded file's rows in file order: row dicts (the reference's reading) or the
    # range of the native rows that are its own
    loaded: list[list[Row] | tuple[int, int]] = []
    runs: list[dict[str, Any]] = []
    seen: dict[str, Path] = {}
    position = iter(range(len(files)))

    def read(p: Path) -> int | tuple[list[Row], dict[str, Any] | None]:
        k = next(position)  # a native file's index, or the reference's reading
        if scanned is not None and scanned.ok[k]:
            return k
        return _file_rows(p, quarantine)

    for p, got in each_file(files, read, quarantine, desc="read_codex", progress=progress):
        frows: list[Row] | tuple[int, int]
        if isinstance(got, int):  # read by the native core: at most one run, its rows
            assert scanned is not None
            first, last = scanned.run_start[got], scanned.run_start[got + 1]
            header = _native_header(p, scanned.runs[first]) if last > first else None
            frows = (scanned.row_start[got], scanned.row_start[got + 1])
        else:
            frows, header = got
        if header is None:
            continue
        first_p = seen.get(header["run_id"])
        if first_p is not None:
            quarantine.bad(bad(FORMAT, p, None, "duplicate_session",
                               f"holds session {header['run_id']}, already loaded from "
                               f"{first_p}",
                               fix="Load one copy of the rollout (remove the other), "
                                   'or pass errors="quarantine" to skip this one.'))
            continue
        seen[header["run_id"]] = p
        loaded.append(frows)
        runs.append(header)
    if scanned is None or not any(scanned.ok):
        rows = [r for part in loaded if isinstance(part, list) for r in part]
        return keep_tenants(rows_to_log(rows, runs, tenant, quarantine), tenant, wanted)
    return keep_tenants(arrays_to_log(_parts(loaded, scanned), runs, tenant, quarantine),
                        tenant, wanted)


def _parts(loaded: list[list[Row] | tuple[int, int]], scanned: Scanned) -> list[dict[str, Any]]:
    """The loaded files' rows as column parts in file order: adjacent native ranges as one
    slice of the native columns, the reference's row dicts between them as arrays."""
    parts: list[dict[str, Any]] = []
    rows: list[Row] = []
    span: list[int] | None = None  # the native range being extended
    for part in loaded:
        if isinstance(part, tuple):
            if rows:
                parts.append(row_arrays(rows))
                rows = []
            if span is not None and span[1] == part[0]:
                span[1] = part[1]
                continue
            if span is not None:
                parts.append(scanned.part(*span))
            span = list(part)
        else:
            if span is not None:
                parts.append(scanned.part(*span))
                span = None
            rows.extend(part)
    if span is not None:
        parts.append(scanned.part(*span))
    if rows:
        parts.append(row_arrays(rows))
    scanned.seq_base([0] * len(scanned.runs))  # one run per file: seq is the file's own
    return parts


def _native_header(path: Path, run: tuple[Any, ...]) -> dict[str, Any]:
    """The run header of a file the native core read (its run: ``(sid, parent, first row's
    time, [("meta", session_meta payload as canonical JSON)], rows)``)."""
    sid, _, first_ts, attrs, _ = run
    meta_text = dict(attrs).get("meta")
    return _header(path, sid, loads(meta_text) if meta_text is not None else None, first_ts)


def _native_scan(files: list[Path]) -> Scanned | None:
    """The native core's reading of ``files`` (``native/src/codex.rs``; None: it failed as a
    whole, a bug: then the reference reads every file)."""
    try:
        got = _native.core().scan_codex_files(
            [os.fsencode(p) for p in files], [_fallback_id(p) for p in files],
            [f"{FORMAT}:{p}" for p in files], _native.threads())
    except (RuntimeError, UnicodeEncodeError):  # a panic (counted by _native.panics())
        return None
    return Scanned(got)
