"""Loader for Claude Code project transcripts (``~/.claude/projects/<project>/<session>.jsonl``).

Claude Code appends one JSON object per line: ``user`` and ``assistant`` messages (Anthropic
Messages API content blocks: ``text``, ``thinking``, ``tool_use``, ``tool_result``), ``summary``
lines (compaction summaries), ``system`` lines (local commands, compact boundaries),
``progress`` lines (hooks, subagent progress), ``file-history-snapshot`` and
``queue-operation`` lines. Subagent (Task) transcripts are separate files under
``<session>/subagents/agent-<id>.jsonl`` whose lines are ``isSidechain: true``.

Mapping (field by field: ``docs/formats/claude_code.md``):

* one run per session (``sessionId``); a sidechain's lines are the run
  ``"<sessionId>/agent-<agentId>"`` whose ``parent_run_id`` is the session;
* one row per line, except an assistant or user line with several content blocks: one row per
  block (``payload`` keeps the line with only that block, and ``contentIndex``);
* a model call is one assistant ``message.id`` (Claude Code writes one line per content block
  of a message, each repeating the message's ``usage``): its rows share ``ref_id`` and its
  tokens are counted once, on its first row, from the last line's usage (earlier lines'
  ``output_tokens`` can be partial); ``input_tokens`` is every prompt token read
  (``input_tokens + cache_read_input_tokens + cache_creation_input_tokens``), the cache
  figures are read from the payload by ``calls_df`` (Claude Code writes them the same on
  every line of a message);
* a turn starts at each prompt the user typed (not a tool result, not ``isMeta``, not a
  compaction summary, not an interrupt marker); a step is one model call within the turn.

The transcripts record no tenant: the caller names the owner (``tenant_id=``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from .._base import native as _native
from .._base.json import args_hash, canonical_json
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

__all__ = ["FORMAT", "LINE_TYPES", "read_claude_code", "sniff"]

FORMAT = "claude_code"
_PATTERNS = ("*.jsonl",)

#: Claude Code line ``type`` -> canonical ``kind`` (content blocks refine user/assistant).
LINE_TYPES: dict[str, str] = {
    "user": "user_message",
    "assistant": "model_response",
    "summary": "checkpoint",
    "system": "other",
    "progress": "other",
    "file-history-snapshot": "other",
    "queue-operation": "other",
}

#: Anthropic ``stop_reason`` -> replaykit ``finish``.
FINISH: dict[str, str] = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool-calls",
                          "max_tokens": "max-tokens", "refusal": "content-filter",
                          "pause_turn": "pause"}

_MARKERS = ("sessionId", "leafUuid", "parentUuid", "isSidechain")
_CUT_HEAD = re.compile(rb'^\s*\{"(parentUuid|type|isSidechain|leafUuid)":')
_CUT_KEYS = re.compile(rb'"type":"(user|assistant|summary|system|progress|file-history-snapshot|'
                       rb'queue-operation)"')


def sniff(path: Path) -> str | None:
    """None when ``path`` looks like a Claude Code transcript, otherwise why it does not.

    A ``.jsonl`` file whose first JSON line has a ``type`` Claude Code writes and one of its
    keys (``sessionId``, ``leafUuid``, ``parentUuid``, ``isSidechain``, or a
    ``file-history-snapshot`` / ``queue-operation`` line).

    >>> sniff(Path("tests/data/claude_code/spotter/short.jsonl")) is None
    True
    """
    read = jsonl_head(path)
    if isinstance(read, str):
        return read
    head, line = read
    first = line[1] if line is not None else None
    if first is None:
        if b"\n" not in head.strip() and _CUT_HEAD.search(head) and _CUT_KEYS.search(head):
            return None  # a first line longer than the head read, in Claude Code's shape
        return "its first line is not a JSON object"
    typ = first.get("type")
    if typ not in LINE_TYPES:
        return f"line 1 has type {typ!r}, not a Claude Code line type"
    if typ in ("file-history-snapshot", "queue-operation") or any(k in first for k in _MARKERS):
        return None
    return "line 1 has none of Claude Code's keys (sessionId, parentUuid, leafUuid)"


#: user-line texts Claude Code writes itself: the output of a local command (no turn)
_COMMAND_OUTPUT = ("<local-command-stdout>", "<local-command-stderr>", "<bash-stdout>",
                   "<bash-stderr>")
_INTERRUPT = "[Request interrupted"


def _is_prompt(doc: dict[str, Any], blocks: list[Any]) -> bool:
    """A user line the person typed (it starts a turn)."""
    if doc.get("isMeta") or doc.get("isCompactSummary") or doc.get("isVisibleInTranscriptOnly"):
        return False
    if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks):
        return False
    text = (text_of(blocks) or "").lstrip()
    return not text.startswith((_INTERRUPT, *_COMMAND_OUTPUT))


class _File:
    """The rows of one transcript file: per-run counters carried across its lines."""

    def __init__(self, path: Path, tenant: str) -> None:
        self.path = path
        self.src = f"{FORMAT}:{path}"
        self.rows: list[Row] = []
        self.runs: dict[str, dict[str, Any]] = {}
        self.state: dict[str, dict[str, Any]] = {}  # run -> turn, step, seq, calls, tools
        self.default_session: str | None = None
        self.tenant = tenant
        # the run state and its counters before the line being read (restored when the line
        # turns out bad, so a line is loaded whole or quarantined whole)
        self.undo: tuple[dict[str, Any], int, int, int, int] | None = None

    def rollback(self) -> None:
        if self.undo is not None:
            st, turn, step, seq, n = self.undo
            st["turn"], st["step"], st["seq"] = turn, step, seq
            del self.rows[n:]

    def run_of(self, doc: dict[str, Any]) -> tuple[str, str | None]:
        session = doc.get("sessionId")
        if not isinstance(session, str) or not session:
            session = self.default_session or self.path.stem
        if doc.get("isSidechain") is True:
            agent = doc.get("agentId")
            agent = agent if isinstance(agent, str) and agent else \
                self.path.stem.removeprefix("agent-")
            return f"{session}/agent-{agent}", session
        return session, None


def _file_rows(f: _File, quarantine: Quarantine) -> _File:
    """Read the lines of ``f``'s file into its rows and runs (returns ``f``)."""
    lines = list(json_lines(f.path, FORMAT, quarantine))
    for _, _, doc in lines:  # the file's session: for lines that name none (summaries)
        if isinstance(doc.get("sessionId"), str) and doc["sessionId"]:
            f.default_session = doc["sessionId"]
            break
    # the final usage of each assistant message id (Claude Code rewrites it while streaming)
    # and its stop reason (null on the lines written before the last block)
    last_usage: dict[str, Any] = {}
    last_stop: dict[str, Any] = {}
    for _, _, doc in lines:
        msg = doc.get("message")
        if doc.get("type") == "assistant" and isinstance(msg, dict) and isinstance(
                msg.get("id"), str):
            if isinstance(msg.get("usage"), dict):
                last_usage[msg["id"]] = msg["usage"]
            if isinstance(msg.get("stop_reason"), str):
                last_stop[msg["id"]] = msg["stop_reason"]
    for lineno, raw, doc in lines:
        f.undo = None
        with guard(quarantine, FORMAT, f.path, lineno, raw, undo=f.rollback):
            _line_rows(f, lineno, doc, last_usage, last_stop)
    return f


def _line_rows(f: _File, lineno: int, doc: dict[str, Any], last_usage: dict[str, Any],
               last_stop: dict[str, Any]) -> None:
    typ = doc.get("type")
    if not isinstance(typ, str) or not typ:
        raise bad(FORMAT, f.path, lineno, "missing_type",
                  "has no string 'type' (user, assistant, summary, system, ...)", field="type")
    run_id, parent = f.run_of(doc)
    st = f.state.setdefault(run_id, {"turn": 0, "step": 0, "seq": 0, "calls": {},
                                     "tools": {}, "used": set()})
    f.undo = (st, st["turn"], st["step"], st["seq"], len(f.rows))
    if run_id not in f.runs:
        f.runs[run_id] = {"run_id": run_id, "parent_run_id": parent, "format": FORMAT,
                          "source": f.src, "created_at": doc.get("timestamp"),
                          "attrs": {"format": FORMAT, "file": str(f.path)}}
    attrs = f.runs[run_id]["attrs"]
    for key in ("version", "cwd", "gitBranch", "slug", "agentId", "permissionMode"):
        if isinstance(doc.get(key), str) and key not in attrs:
            attrs[key] = doc[key]
    if f.runs[run_id]["created_at"] is None:
        f.runs[run_id]["created_at"] = doc.get("timestamp")
    ts = doc.get("timestamp") if isinstance(doc.get("timestamp"), str) else None
    msg = doc.get("message")
    if typ in ("user", "assistant") and msg is not None and not isinstance(msg, dict):
        raise bad(FORMAT, f.path, lineno, "bad_message",
                  f"has a 'message' that is a {type(msg).__name__}, not an object",
                  field="message")
    content = (msg or {}).get("content") if typ in ("user", "assistant") else None
    if content is not None and not isinstance(content, (str, list)):
        raise bad(FORMAT, f.path, lineno, "bad_content",
                  f"has message.content of type {type(content).__name__} (expected text or a "
                  "list of content blocks)", field="message.content")
    blocks: list[Any] = [content] if isinstance(content, str) else list(content or [])
    base = {"run_id": run_id, "parent_run_id": parent, "type": typ, "ts": ts,
            "event_id": doc.get("uuid") if isinstance(doc.get("uuid"), str) else None,
            "source": f.src, "source_line": lineno, "is_error": False}

    made = [0]  # rows made from this line: the first keeps the line's uuid as event_id

    def add(payload: Any, kind: str, **cols: Any) -> None:
        row = {**base, "seq": st["seq"], "kind": kind, "turn": st["turn"] or None,
               "step": st["step"] or None, "payload": payload_of(payload, FORMAT, f.path, lineno)}
        if made[0] and base["event_id"] is not None:
            row["event_id"] = f"{base['event_id']}#{made[0]}"
        made[0] += 1
        row.update(cols)
        st["seq"] += 1
        f.rows.append(row)

    def one(i: int) -> Any:  # the line with only its i-th content block
        if len(blocks) <= 1:
            return doc
        return {**doc, "message": {**(msg or {}), "content": [blocks[i]]}, "contentIndex": i}

    if typ == "user":
        if _is_prompt(doc, blocks):
            st["turn"] += 1
            st["step"] = 0
        if not blocks:
            add(doc, "user_message", text=None)
        for i, b in enumerate(blocks):
            if isinstance(b, dict) and b.get("type") == "tool_result":
                ref = b.get("tool_use_id") if isinstance(b.get("tool_use_id"), str) else None
                add(one(i), "tool_result", ref_id=ref, tool_name=st["tools"].get(ref),
                    is_error=b.get("is_error") is True, text=text_of(b.get("content")))
            else:
                text = text_of([b])
                if doc.get("isCompactSummary"):
                    add(one(i), "checkpoint", text=text)
                elif (text or "").startswith(_INTERRUPT):  # the user stopped the turn
                    add(one(i), "turn_end", is_error=True, text=text)
                else:
                    add(one(i), "user_message", text=text)
        return
    if typ == "assistant":
        mid = (msg or {}).get("id")
        ref = mid if isinstance(mid, str) and mid else (
            doc.get("requestId") or doc.get("uuid") or f"line{lineno}")
        if ref not in st["calls"]:
            st["step"] += 1
            st["calls"][ref] = st["step"]
        stop = last_stop.get(ref) if isinstance(mid, str) else (msg or {}).get("stop_reason")
        usage = last_usage.get(ref) if isinstance(mid, str) else (msg or {}).get("usage")
        first = ref not in st["used"]
        # the call's finish and usage go on its first row (a call ends at its last row)
        finish = (FINISH.get(stop, stop) if isinstance(stop, str) else "unknown") if first \
            else None
        st["used"].add(ref)
        toks: dict[str, Any] = {}
        if first and isinstance(usage, dict):
            toks = {"input_tokens": _input_tokens(usage, f.path, lineno),
                    "output_tokens": tokens(usage.get("output_tokens"), FORMAT, f.path, lineno,
                                            "message.usage.output_tokens")}
        err = doc.get("isApiErrorMessage") is True or doc.get("error") is not None
        if not blocks:
            add(doc, "model_response", ref_id=ref, finish="error" if err else finish,
                is_error=err, **toks)
        for i, b in enumerate(blocks):
            cols = dict(toks) if i == 0 else {}
            btype = b.get("type") if isinstance(b, dict) else "text"
            if btype == "tool_use":
                tid = b.get("id") if isinstance(b.get("id"), str) else None
                name = b.get("name") if isinstance(b.get("name"), str) else None
                st["tools"][tid] = name
                # the call's own row first (it carries the call's tokens), then the tool call
                if i == 0 and first:
                    add({**one(i), "contentPart": "call"}, "model_response", ref_id=ref,
                        finish=finish, is_error=err, text=None, **cols)
                args = b.get("input") if b.get("input") is not None else {}
                add(one(i), "tool_call", ref_id=tid, tool_name=name, args_hash=args_hash(args),
                    text=canonical_json(args))
            elif btype in ("thinking", "redacted_thinking"):
                add(one(i), "model_chunk", ref_id=ref, chunk_type="reasoning",
                    finish=finish if i == 0 else None,
                    text=b.get("thinking") if isinstance(b, dict) else None, **cols)
            else:
                add(one(i), "model_response", ref_id=ref, is_error=err, text=text_of([b]),
                    finish="error" if err else (finish if i == 0 else None), **cols)
        return
    if typ == "summary":
        add(doc, "checkpoint", ref_id=doc.get("leafUuid") if isinstance(
            doc.get("leafUuid"), str) else None, text=doc.get("summary") if isinstance(
            doc.get("summary"), str) else None)
        return
    if typ == "system":
        sub = doc.get("subtype")
        kind = "checkpoint" if sub == "compact_boundary" else (
            "error" if doc.get("level") == "error" else "other")
        add(doc, kind, is_error=kind == "error",
            text=doc.get("content") if isinstance(doc.get("content"), str) else None)
        return
    add(doc, LINE_TYPES.get(typ, "other"))


def _input_tokens(usage: dict[str, Any], path: Path, lineno: int) -> int | None:
    """Every prompt token the call read: Anthropic's ``input_tokens`` is only the uncached
    remainder, so the cache reads and writes are added (each when recorded); null when
    ``input_tokens`` itself is not recorded (never a partial sum)."""
    parts = [tokens(usage.get(k), FORMAT, path, lineno, f"message.usage.{k}")
             for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")]
    if parts[0] is None:
        return None
    return sum(p for p in parts if p is not None)


def read_claude_code(path: Paths, *, owner: str | None = None, tenant_id: Tenants = None,
                     errors: ErrorPolicy = "raise", progress: bool | None = None) -> EventLog:
    """Load Claude Code transcripts (a file, a project folder, ``~/.claude/projects``, a glob).

    Every ``*.jsonl`` under a folder is read (subagent transcripts under
    ``<session>/subagents/`` too) and all of them form one log: one run per session, one per
    sidechain (``"<sessionId>/agent-<agentId>"``, ``parent_run_id`` = the session).

    Args:
        owner: owner of the sessions (transcripts record none); required, never guessed.
        tenant_id: keep only these tenants' rows (one id or a list; None: all), as
            in every reader: the rows are all ``owner``'s, so all of them or none.
        errors: ``"raise"`` (default) or ``"quarantine"`` (bad lines become quarantine rows
            with their reason; the other lines load).
        progress: progress bar over files (None: when interactive).

    Raises:
        LoadError: ``bad_tenant`` (``owner`` missing or invalid, also when only
            ``tenant_id=`` is given); under ``"raise"`` a bad line: ``bad_json``,
            ``not_object``, ``bad_encoding``, ``missing_type``, ``bad_message``,
            ``bad_content``, ``bad_tokens``, ``too_deep``; ``unreadable`` / ``compressed``
            files.
        FileNotFoundError: nothing matches ``path``.

    Example:
        >>> log = rk.read_claude_code("tests/data/claude_code/spotter", owner="me")
        >>> sorted(log.tools_df().tool_name.unique())[:2]
        ['Bash', 'Glob']
    """
    tenant, wanted = owner_and_filter(owner, tenant_id, fmt=FORMAT)
    quarantine = Quarantine(errors, tenant_id=tenant)
    files = expand_paths(path, patterns=_PATTERNS)
    rows: list[Row] = []
    runs: list[dict[str, Any]] = []
    seqs: dict[str, int] = {}
    scanned = _native_scan(files) if _native.enabled() and files else None
    # the log in file order: slices of the native rows and the reference's rows between them
    parts: list[dict[str, Any]] = []
    entry_base: list[int] = []  # per native (file, run): the run's rows in earlier files
    native_from: int | None = None  # first native row not yet in parts
    position = iter(range(len(files)))
    at = [0]  # the index of the file read last

    def read(p: Path) -> int | _File:  # a native file's index, or the reference's reading
        k = at[0] = next(position)
        if scanned is not None and scanned.ok[k]:
            return k
        f = _File(p, tenant)
        _file_rows(f, quarantine)
        return f

    for p, got in each_file(files, read, quarantine, desc="read_claude_code",
                            progress=progress):
        if isinstance(got, int):  # read by the native core: its runs, its rows stay there
            assert scanned is not None
            if rows:
                parts.append(row_arrays(rows))
                rows = []
            if native_from is None:
                native_from = scanned.row_start[got]
            for e in range(scanned.run_start[got], scanned.run_start[got + 1]):
                run_id, parent, created_at, attrs, count = scanned.runs[e]
                entry_base.append(seqs.get(run_id, 0))
                seqs[run_id] = seqs.get(run_id, 0) + count
                runs.append({"run_id": run_id, "parent_run_id": parent, "format": FORMAT,
                             "source": f"{FORMAT}:{p}", "created_at": created_at,
                             "attrs": {"format": FORMAT, "file": str(p), **dict(attrs)}})
            continue
        if native_from is not None:  # the native rows before this file, as one slice
            assert scanned is not None
            parts.append(scanned.part(native_from, scanned.row_start[at[0]]))
            native_from = None
        for r in got.rows:  # a session split over files (resumed) continues its seq
            r["seq"] += seqs.get(r["run_id"], 0)
        for run_id, st in got.state.items():
            seqs[run_id] = seqs.get(run_id, 0) + st["seq"]
        rows.extend(got.rows)
        runs.extend(got.runs.values())
    if scanned is None or not any(scanned.ok):
        return keep_tenants(rows_to_log(rows, runs, tenant, quarantine), tenant, wanted)
    if native_from is not None:
        parts.append(scanned.part(native_from, scanned.row_start[-1]))
    if rows:
        parts.append(row_arrays(rows))
    scanned.seq_base(entry_base)
    return keep_tenants(arrays_to_log(parts, runs, tenant, quarantine), tenant, wanted)


def _native_scan(files: list[Path]) -> Scanned | None:
    """The native core's reading of ``files`` (None: it failed as a whole, a bug: then the
    reference reads every file)."""
    try:
        got = _native.core().scan_claude_code_files(
            [os.fsencode(p) for p in files], [p.stem for p in files],
            [f"{FORMAT}:{p}" for p in files], _native.threads())
    except (RuntimeError, UnicodeEncodeError):  # a panic (counted by _native.panics())
        return None
    return Scanned(got)
