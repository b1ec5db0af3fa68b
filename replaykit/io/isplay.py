"""Loader for isplay run exports, plus their branch, intervention and fixture side files.

isplay is a branch-and-replay CLI for agent runs. replaykit reads four JSON documents, each
tagged by a top-level ``"format"`` (field-by-field description: ``docs/formats.md``):

* ``isplay.run/v1`` -- one recorded run: ``run`` metadata, ``checkpoints`` and ``events``.
  A ``.json`` file holds one run (pretty-printed or not); a ``.jsonl``/``.ndjson`` file holds
  one run document per line. :func:`read_isplay` loads them into an :class:`~replaykit.EventLog`.
* ``isplay.branch/v1`` -- a branch from a checkpoint of a base run, with its interventions.
* ``isplay.fixtures/v1`` -- recorded or authored tool outputs used by replay.

Branch and fixture files are *side files* (:func:`is_side_file`): ``read_events`` skips them
when it scans a folder for logs. This loader only parses them (:func:`read_side_document`);
what they mean belongs to the branch layer, which checks them against its vocabulary and builds
its values: :func:`replaykit.read_isplay_branch` returns a
:class:`~replaykit.branch.types.IsplayBranch`, :func:`replaykit.read_isplay_fixtures` one row
per fixture (:mod:`replaykit.branch.types`, :mod:`replaykit.branch.fixtures`,
:mod:`replaykit.branch.vocab`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .._json import (
    MAX_DEPTH,
    JSONDecodeError,
    JSONTooDeep,
    args_hash,
    canonical_json,
    json_type,
    loads,
    payload_fields,
)
from ..errors import LoadError
from ..eventlog import RUNS_SCHEMA, EventLog
from ..schema import empty_events, events_table
from ._common import ErrorPolicy, Progress, Quarantine, expand_paths, require_tenant

__all__ = [
    "BRANCH_FORMAT",
    "CHECKPOINTS_SCHEMA",
    "FIXTURES_FORMAT",
    "FORMAT",
    "RUN_FORMAT",
    "TYPE_KINDS",
    "is_side_file",
    "read_isplay",
    "read_side_document",
    "sniff",
]

FORMAT = "isplay"
RUN_FORMAT = "isplay.run/v1"
BRANCH_FORMAT = "isplay.branch/v1"
FIXTURES_FORMAT = "isplay.fixtures/v1"

#: isplay event type -> canonical ``kind``. Any other type loads as ``"other"`` (kept).
TYPE_KINDS: dict[str, str] = {
    "run.started": "session",
    "run.completed": "session",
    "run.failed": "session",
    "message.user": "user_message",
    "model.call": "model_request",
    "model.result": "model_response",
    "tool.call": "tool_call",
    "tool.result": "tool_result",
    "checkpoint": "checkpoint",
    "approval.requested": "approval_request",
    "approval.resolved": "approval_decision",
    "intervention.created": "intervention",
    "error": "error",
}

#: Side table ``log.extras["checkpoints"]``: one row per checkpoint of a loaded run.
CHECKPOINTS_SCHEMA: pa.Schema = pa.schema(
    [
        pa.field("tenant_id", pa.string(), nullable=False),
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("checkpoint_id", pa.string(), nullable=False),
        pa.field("event_id", pa.string(), nullable=False),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("label", pa.string()),
    ]
)

_SUFFIXES = (".json", ".jsonl", ".ndjson")
_LINE_SUFFIXES = (".jsonl", ".ndjson")
_PATTERNS = ("*.json", "*.jsonl", "*.ndjson")
_FORMAT_RE = re.compile(rb'"format"\s*:\s*"(isplay\.[a-z]+/v[0-9]+)"')
_HEAD = 64 * 1024

_FIX = {
    "bad_json": "Fix the JSON syntax (the position is in the message) or pass "
    'errors="quarantine" to skip this document.',
    "bad_utf8": "Re-export the file as UTF-8.",
    "too_deep": f"Flatten the JSON: at most {MAX_DEPTH} levels of nesting are accepted.",
    "not_object": "Each run document and each event must be a JSON object.",
    "bad_format": f'Set "format": "{RUN_FORMAT}" at the top of each run document.',
    "side_file": "Read branch files with read_isplay_branch() and fixture files with "
    "read_isplay_fixtures().",
    "missing_run_id": 'Give the run an id: {"run": {"runId": "...", ...}}.',
    "duplicate_run_id": "Each run may be exported once per load; drop the duplicate document.",
    "missing_field": "Add the field to the event or pass errors=\"quarantine\".",
    "bad_type": "Fix the value's JSON type or pass errors=\"quarantine\".",
    "bad_value": "Fix the value or pass errors=\"quarantine\".",
    "bad_seq": "seq must be an integer >= 0; drop it to use the event's position instead.",
    "bad_ts": 'Use an ISO-8601 time such as "2025-03-01T09:30:00.125Z".',
    "duplicate_event_id": "Event ids must be unique within a run.",
    "duplicate_seq": "Event seq values must be unique within a run.",
    "args_hash_mismatch": "argsHash must equal replaykit._json.args_hash(args); recompute it or "
    "drop argsHash so replaykit computes it.",
    "unknown_checkpoint_event": "A checkpoint's eventId must name an event of the same run.",
    "duplicate_checkpoint_id": "Checkpoint ids must be unique within a run.",
}

# ------------------------------------------------------------------------------------ sniffing


def _read_head(path: Path) -> tuple[bytes, bytes] | None:
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(_HEAD)
            tail = b""
            if size > _HEAD:
                fh.seek(max(size - 4096, _HEAD))
                tail = fh.read()
    except OSError:
        return None
    return head, tail


def _format_tag(path: Path) -> tuple[str | None, str]:
    """(format tag found in the file or None, reason when None)."""
    p = Path(path)
    if p.suffix.lower() not in _SUFFIXES:
        return None, f"extension {p.suffix or '(none)'!r} is not .json/.jsonl/.ndjson"
    got = _read_head(p)
    if got is None:
        return None, "cannot be read"
    head, tail = got
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not start.startswith(b"{"):
        return None, "does not start with a JSON object"
    if p.suffix.lower() in _LINE_SUFFIXES:
        first = start.split(b"\n", 1)[0]
        m = _FORMAT_RE.search(first) or (
            _FORMAT_RE.search(head) if len(first) >= len(start) - 1 else None
        )
    else:
        m = _FORMAT_RE.search(head) or _FORMAT_RE.search(tail)
    if m is None:
        return None, 'has no top-level "format": "isplay.<kind>/v1" tag'
    return m.group(1).decode("ascii"), ""


def sniff(path: Path) -> str | None:
    """None when ``path`` looks like an isplay run export, otherwise why it does not.

    Looks at the extension and at the ``"format"`` tag near the start (or end) of the file;
    does not parse the whole document.

    >>> sniff(Path("data/isplay/claims-triage-C-104.json")) is None  # doctest: +SKIP
    True
    """
    tag, why = _format_tag(Path(path))
    if tag is None:
        return why
    if tag in (BRANCH_FORMAT, FIXTURES_FORMAT):
        return f"is an isplay side file ({tag}), not a run export"
    if tag != RUN_FORMAT:
        return f"format tag {tag!r} is not {RUN_FORMAT!r}"
    return None


def is_side_file(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is an isplay branch or fixtures file (not a log of events).

    ``read_events`` uses this to skip such files when it scans a folder.

    >>> is_side_file("data/isplay/branch-drop-fraud-clause.json")  # doctest: +SKIP
    True
    """
    tag, _ = _format_tag(Path(path))
    return tag in (BRANCH_FORMAT, FIXTURES_FORMAT)


# ---------------------------------------------------------------------- position-aware parsing

_WS = re.compile(r"[ \t\n\r]*")


def _skip_ws(text: str, i: int) -> int:
    """Index of the first non-whitespace character at or after ``i``."""
    m = _WS.match(text, i)
    return m.end() if m is not None else i


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    x = float(text)
    if x in (float("inf"), float("-inf")):
        raise ValueError(f"number {text} is too large for a double")
    return x


_DEC = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)
_INT64_MAX = 2**63 - 1
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


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


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


# ------------------------------------------------------------------------------ run documents

_EVENT_FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    "eventId": str,
    "type": str,
    "refId": str,
    "modelCallId": str,
    "ts": str,
    "toolName": str,
    "argsHash": str,
    "argsArtifactId": str,
    "finish": str,
    "cacheKey": str,
    "checkpointId": str,
    "prompt": str,
    "seq": int,
    "turn": int,
    "step": int,
    "isError": bool,
    "usage": dict,
    "settings": dict,
    "messages": list,
    "tools": list,
    "artifactRefs": list,
    "contextRefs": list,
}
_TYPE_WORDS = {str: "a string", int: "an integer", bool: "true or false", dict: "an object",
               list: "an array"}


def _raw_text(v: Any) -> str:
    """JSON text of a rejected value for its quarantine row (never fails on deep values)."""
    try:
        return canonical_json(v)
    except (JSONTooDeep, TypeError, ValueError):
        return json.dumps(v, default=str)


def _check_types(ev: dict[str, Any]) -> tuple[str, str, str] | None:
    """(field, reason, detail) for the first mistyped known field of an event, else None."""
    for key, value in ev.items():
        want = _EVENT_FIELD_TYPES.get(key)
        if want is None or value is None:
            continue
        if not isinstance(value, want) or (want is int and isinstance(value, bool)):
            return key, "bad_type", f"must be {_TYPE_WORDS[want]}, got {json_type(value)}"  # type: ignore[index]
        checked: Any = value
        if key in ("seq", "turn", "step") and not 0 <= checked <= _INT64_MAX:
            return (key, "bad_seq" if key == "seq" else "bad_value",
                    f"must be >= 0 and fit in 64 bits, got {value}")
        if key == "usage":
            for sub in ("inputTokens", "outputTokens"):
                v = checked.get(sub)
                if v is not None and (not isinstance(v, int) or isinstance(v, bool)
                                      or not 0 <= v <= _INT64_MAX):
                    return (f"usage.{sub}", "bad_type",
                            f"must be an integer >= 0 that fits in 64 bits, got {json_type(v)}")
    return None


def _joined_text(value: Any) -> str | None:
    """Text of a result/output value: a string as is, content parts joined, else JSON text."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(
        isinstance(p, dict) and isinstance(p.get("text"), str) for p in value
    ):
        return "".join(p["text"] for p in value)
    if isinstance(value, dict) and isinstance(value.get("text"), str):
        return value["text"]
    return canonical_json(value)


def _event_text(ev: dict[str, Any], typ: Any) -> str | None:
    if typ == "message.user":
        return _joined_text(ev.get("text", ev.get("content")))
    if typ == "model.call":
        p = ev.get("prompt")
        return p if isinstance(p, str) else None
    if typ in ("model.result", "tool.result"):
        return _joined_text(ev.get("output"))
    if typ in ("error", "run.failed"):
        err = ev.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
        msg = ev.get("message")
        return msg if isinstance(msg, str) else None
    return None


class _Runs:
    """Accumulates run documents and their events before the column-wise pass."""

    def __init__(self) -> None:
        # per document (run)
        self.run_ids: list[str] = []
        self.parent_ids: list[str | None] = []
        self.sources: list[str] = []
        self.paths: list[str] = []
        self.created: list[Any] = []
        self.attrs: list[str] = []
        self.checkpoints: list[list[tuple[Any, int, int]]] = []  # (entry, index, line)
        # per event
        self.doc: list[int] = []
        self.index: list[int] = []
        self.line: list[int] = []
        self.payload: list[str] = []
        self.text: list[str | None] = []
        self.computed_hash: list[str | None] = []
        self.input_rows = 0


def _document(
    top: dict[str, Any],
    arrays: dict[str, list[tuple[Any, int]]],
    lines: dict[str, np.ndarray] | int,
    *,
    src: str,
    doc_line: int,
    raw: str,
    acc: _Runs,
    seen_runs: dict[str, str],
    quarantine: Quarantine,
) -> None:
    """Validate one run document's envelope and decode its events into ``acc``."""

    def doc_error(reason: str, detail: str, fld: str | None) -> None:
        acc.input_rows += 1
        quarantine.bad(
            LoadError(source=src, line=doc_line, field=fld, reason=reason, detail=detail,
                      fix=_FIX[reason]),
            raw,
        )

    fmt = top.get("format")
    if fmt in (BRANCH_FORMAT, FIXTURES_FORMAT):
        return doc_error("side_file", f"is {fmt!r}, a side file, not a run export", "format")
    if fmt != RUN_FORMAT:
        return doc_error("bad_format", f"must be {RUN_FORMAT!r}, got {json_type(fmt)}", "format")
    run = top.get("run")
    if not isinstance(run, dict):
        return doc_error("missing_run_id", f"must be an object with runId, got {json_type(run)}",
                         "run")
    run_id = run.get("runId")
    if not isinstance(run_id, str) or not run_id:
        return doc_error("missing_run_id", f"must be a non-empty string, got {json_type(run_id)}",
                         "run.runId")
    if run_id in seen_runs:
        return doc_error("duplicate_run_id",
                         f"{run_id!r} was already loaded from {seen_runs[run_id]}", "run.runId")
    for key in ("events", "checkpoints"):
        if key in top and key not in arrays:
            return doc_error("bad_type", f"must be an array, got {json_type(top[key])}", key)
    parent = run.get("parentRunId")
    if parent is not None and not isinstance(parent, str):
        return doc_error("bad_type", f"must be a string, got {json_type(parent)}",
                         "run.parentRunId")
    created = run.get("createdAt")
    if created is not None and not isinstance(created, str):
        return doc_error("bad_type", f"must be an ISO-8601 string, got {json_type(created)}",
                         "run.createdAt")
    attrs = {k: v for k, v in run.items() if k not in ("runId", "parentRunId", "createdAt")}
    other = {k: v for k, v in top.items() if k not in ("format", "run")}
    if other:
        attrs["documentFields"] = other
    try:
        attrs_json = canonical_json(attrs)
    except JSONTooDeep as exc:
        return doc_error("too_deep", f"is not accepted: {exc}", "run")
    seen_runs[run_id] = f"{src}:{doc_line}"
    d = len(acc.run_ids)
    acc.run_ids.append(run_id)
    acc.parent_ids.append(parent)
    acc.sources.append(src)
    acc.created.append(created)
    acc.attrs.append(attrs_json)

    events = arrays.get("events", [])
    ev_lines = lines["events"] if isinstance(lines, dict) else None
    acc.input_rows += len(events)
    for i, (ev, _off) in enumerate(events):
        line = int(ev_lines[i]) if ev_lines is not None else doc_line  # type: ignore[arg-type]
        path = f"events[{i}]"
        if not isinstance(ev, dict):
            quarantine.bad(
                LoadError(source=src, line=line, field=path, reason="not_object",
                          detail=f"must be a JSON object, got {json_type(ev)}",
                          fix=_FIX["not_object"]),
                _raw_text(ev),
            )
            continue
        bad = _check_types(ev)
        if bad is None:
            try:
                payload = canonical_json(ev)
            except JSONTooDeep as exc:
                bad = ("", "too_deep", f"is not accepted: {exc}")
            except (TypeError, ValueError) as exc:
                bad = ("", "bad_value", f"cannot be stored as JSON: {exc}")
        if bad is not None:
            fld, reason, detail = bad
            quarantine.bad(
                LoadError(source=src, line=line, field=f"{path}.{fld}".rstrip("."),
                          reason=reason, detail=detail, fix=_FIX[reason]),
                json.dumps(ev, default=str),
            )
            continue
        typ = ev.get("type")
        computed = None
        text: str | None
        if typ == "tool.call" and ev.get("args") is not None:
            args = ev["args"]
            computed = args_hash(args)
            text = args if isinstance(args, str) else canonical_json(args)
        else:
            text = _event_text(ev, typ)
        acc.doc.append(d)
        acc.index.append(i)
        acc.line.append(line)
        acc.payload.append(payload)
        acc.text.append(text)
        acc.computed_hash.append(computed)

    cps = arrays.get("checkpoints", [])
    cp_lines = lines["checkpoints"] if isinstance(lines, dict) else None
    acc.input_rows += len(cps)
    acc.checkpoints.append(
        [
            (cp, j, int(cp_lines[j]) if cp_lines is not None else doc_line)  # type: ignore[index]
            for j, (cp, _off) in enumerate(cps)
        ]
    )


def _read_file(path: Path, acc: _Runs, seen: dict[str, str], quarantine: Quarantine,
               progress: Progress) -> None:
    src = str(path)
    data = path.read_bytes()
    progress.update(len(data))

    def file_error(reason: str, detail: str, line: int | None, fld: str | None = None) -> None:
        acc.input_rows += 1
        quarantine.bad(
            LoadError(source=src, line=line, field=fld, reason=reason, detail=detail,
                      fix=_FIX[reason]),
            data,
        )

    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad_line = data.count(b"\n", 0, exc.start) + 1
        return file_error("bad_utf8", f"is not valid UTF-8 (byte {exc.start})", bad_line)
    if path.suffix.lower() in _LINE_SUFFIXES:
        for lineno, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                obj = loads(line)
            except JSONDecodeError as exc:
                acc.input_rows += 1
                quarantine.bad(
                    LoadError(source=src, line=lineno, reason="bad_json",
                              detail=f"is not valid JSON ({exc})", fix=_FIX["bad_json"]),
                    line,
                )
                continue
            if not isinstance(obj, dict):
                acc.input_rows += 1
                quarantine.bad(
                    LoadError(source=src, line=lineno, reason="not_object",
                              detail=f"must be a run document (object), got {json_type(obj)}",
                              fix=_FIX["not_object"]),
                    line,
                )
                continue
            arrays = {
                k: [(v, 0) for v in obj.pop(k)]
                for k in ("events", "checkpoints")
                if isinstance(obj.get(k), list)
            }
            _document(obj, arrays, lineno, src=src, doc_line=lineno, raw=line, acc=acc,
                      seen_runs=seen, quarantine=quarantine)
        return
    if not text.strip():
        return file_error("bad_json", "is empty (expected one run document)", 1)
    too_deep = f"is nested too deep (at most {MAX_DEPTH} levels are accepted)"
    try:
        top, arrays = _walk_document(text)
    except RecursionError:
        return file_error("too_deep", too_deep, 1)
    except (_Syntax, ValueError):
        try:
            err_line, msg, syntax = _json_error(text)
        except RecursionError:  # e.g. a deep array where the document should be
            return file_error("too_deep", too_deep, 1)
        if syntax:
            return file_error("bad_json", f"is not valid JSON: {msg}", err_line)
        return file_error("not_object", f"must hold one JSON object (a run document); {msg}",
                          err_line)
    lines = {k: _lines_at(text, [off for _v, off in items]) for k, items in arrays.items()}
    lines.setdefault("events", np.zeros(0, dtype=np.int64))
    lines.setdefault("checkpoints", np.zeros(0, dtype=np.int64))
    _document(top, arrays, lines, src=src, doc_line=1, raw=text, acc=acc, seen_runs=seen,
              quarantine=quarantine)


_FIELDS = {
    "type": pa.string(),
    "eventId": pa.string(),
    "refId": pa.string(),
    "modelCallId": pa.string(),
    "checkpointId": pa.string(),
    "seq": pa.int64(),
    "ts": pa.string(),
    "turn": pa.int64(),
    "step": pa.int64(),
    "toolName": pa.string(),
    "argsHash": pa.string(),
    "finish": pa.string(),
    "isError": pa.bool_(),
    "cacheKey": pa.string(),
    "usage.inputTokens": pa.int64(),
    "usage.outputTokens": pa.int64(),
}


def _parse_ts(values: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """(timestamps, bad mask) for ISO-8601 strings, column-wise."""
    s = pd.Series(values.to_pandas(), dtype="object")
    parsed = pd.to_datetime(s, utc=True, format="ISO8601", errors="coerce")
    bad = (s.notna() & parsed.isna()).to_numpy()
    arr = pa.array(parsed.dt.as_unit("us"), type=pa.timestamp("us", tz="UTC"))
    return arr, bad


def read_isplay(
    path: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    tenant_id: str,
    errors: ErrorPolicy = "raise",
    progress: bool | None = None,
) -> EventLog:
    """Load isplay run exports (``isplay.run/v1``) into an :class:`~replaykit.EventLog`.

    ``path`` is a file, a folder (searched recursively for ``*.json``/``*.jsonl``/``*.ndjson``;
    branch and fixture side files are skipped), a glob, or a list of those. A ``.json`` file
    holds one run document; a ``.jsonl``/``.ndjson`` file holds one run document per line.

    Mapping (details in docs/formats.md): run_id = ``run.runId``, parent_run_id =
    ``run.parentRunId``; seq = the event's ``seq`` when given, else its 0-based position in
    ``events``; event_id = ``eventId``; ref_id = ``modelCallId`` on model events,
    ``checkpointId`` on checkpoint events, else ``refId`` (the tool call id on tool events);
    args_hash = :func:`replaykit._json.args_hash` of ``args`` (a file's ``argsHash`` is
    verified against it; with no ``args`` -- e.g. only an ``argsArtifactId`` -- the file's
    ``argsHash`` is used as given); ``source_line`` = the line where the event's object starts.
    Run metadata goes to ``log.runs`` (``projectId``, ``agent``, ``metadata`` ... in
    ``attrs``); checkpoints to ``log.extras["checkpoints"]`` (:data:`CHECKPOINTS_SCHEMA`).
    Unknown fields stay in ``payload``, never dropped.

    Input rows are the events and checkpoint entries of each document, or 1 for a document
    whose envelope cannot be read (bad JSON/UTF-8, wrong ``format``, no ``runId``, a run
    already loaded). ``len(log) + log.extras["checkpoints"].num_rows + log.quarantine.num_rows``
    equals that count.

    Args:
        path: file(s), folder(s) or glob(s).
        tenant_id: owner of the runs (isplay files carry no tenant); required.
        errors: ``"raise"`` stops at the first bad row; ``"quarantine"`` keeps going and puts
            bad rows in ``log.quarantine`` with their reason.
        progress: show a progress bar over bytes (None: only when interactive).

    Raises:
        LoadError: ``reason="bad_tenant"``: ``tenant_id`` is missing or breaks the tenant-id
            rule (:mod:`replaykit.tenancy`).
        LoadError: (``errors="raise"``) a bad document or event, naming file:line, the JSON
            path of the field, a reason code (``bad_json``, ``missing_run_id``,
            ``duplicate_event_id``, ``args_hash_mismatch``, ``unknown_checkpoint_event``, ...)
            and a fix.
        FileNotFoundError: ``path`` matches nothing.

    Example:
        >>> log = read_isplay("data/isplay", tenant_id="acme")  # doctest: +SKIP
        >>> log.extras["checkpoints"].column("checkpoint_id").to_pylist()  # doctest: +SKIP
        ['cp-intake', 'cp-before-decision', ...]
    """
    tenant = require_tenant(tenant_id, fmt=FORMAT)
    quarantine = Quarantine(errors, tenant_id=tenant)
    explicit = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    files = expand_paths(explicit, patterns=_PATTERNS)
    named = {Path(p).resolve() for p in explicit if Path(p).is_file()}
    files = [f for f in files if f.resolve() in named or not is_side_file(f)]
    acc = _Runs()
    seen: dict[str, str] = {}
    total = sum(f.stat().st_size for f in files)
    with Progress(total, desc="isplay", enabled=progress) as bar:
        for i, f in enumerate(files, start=1):
            bar.next_file(f.name, i, len(files))
            _read_file(f, acc, seen, quarantine, bar)
    return _build(acc, tenant, quarantine)


def _build(acc: _Runs, tenant: str, quarantine: Quarantine) -> EventLog:
    n = len(acc.payload)
    doc = np.asarray(acc.doc, dtype=np.int64)
    index = np.asarray(acc.index, dtype=np.int64)
    payload = pa.array(acc.payload, type=pa.large_string())
    f = payload_fields(payload, _FIELDS) if n else None

    def col(name: str) -> pa.Array:
        assert f is not None
        c = f.column(name)
        return c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c

    reason = np.full(n, None, dtype=object)
    bad_field = np.full(n, None, dtype=object)
    detail = np.full(n, None, dtype=object)

    def flag(mask: np.ndarray, why: str, fld: str, what: str) -> None:
        m = mask & (reason == None)  # noqa: E711 - elementwise on an object array
        reason[m] = why
        bad_field[m] = fld
        detail[m] = what

    if n:
        typ = col("type")
        typ_s = typ.to_numpy(zero_copy_only=False)
        is_null = lambda name: np.asarray(pc.is_null(col(name)))  # noqa: E731
        flag(is_null("type"), "missing_field", "type", "is required (the event type)")
        flag(is_null("eventId"), "missing_field", "eventId", "is required (a unique event id)")
        tool_call = typ_s == "tool.call"
        tool_any = tool_call | (typ_s == "tool.result")
        model_any = (typ_s == "model.call") | (typ_s == "model.result")
        flag(tool_call & is_null("toolName"), "missing_field", "toolName",
             "is required on tool.call events")
        flag(tool_any & is_null("refId"), "missing_field", "refId",
             "is required on tool events (the tool call id)")
        flag(model_any & is_null("modelCallId") & is_null("refId"), "missing_field",
             "modelCallId", "is required on model events (the model call id)")
        ts, bad_ts = _parse_ts(col("ts"))
        flag(bad_ts, "bad_ts", "ts", "is not an ISO-8601 time")
        computed = pa.array(acc.computed_hash, type=pa.string())
        given = col("argsHash")
        mismatch = np.asarray(pc.fill_null(pc.not_equal(computed, given), False))
        flag(mismatch, "args_hash_mismatch", "argsHash",
             "does not match the hash of args")
        eid = col("eventId").to_numpy(zero_copy_only=False)
        keys = pd.DataFrame({"d": doc, "e": eid})
        dup = keys.duplicated(keep="first").to_numpy() & ~is_null("eventId")
        flag(dup, "duplicate_event_id", "eventId", "repeats an earlier event id of this run")
        seq_given = col("seq")
        seq = np.asarray(pc.fill_null(seq_given, pa.array(index, type=pa.int64())))
        dup_seq = pd.DataFrame({"d": doc, "s": seq}).duplicated(keep="first").to_numpy()
        flag(dup_seq, "duplicate_seq", "seq", "repeats an earlier seq of this run")
        bad_idx = np.flatnonzero(reason != None)  # noqa: E711
    else:
        bad_idx = np.zeros(0, dtype=np.int64)

    for i in bad_idx:  # bad rows only (rare): build their errors
        d = int(doc[i])
        quarantine.bad(
            LoadError(
                source=acc.sources[d],
                line=int(acc.line[i]),
                field=f"events[{int(index[i])}].{bad_field[i]}",
                reason=str(reason[i]),
                detail=str(detail[i]),
                fix=_FIX[str(reason[i])],
            ),
            acc.payload[i],
        )

    run_ids = pa.array(acc.run_ids, type=pa.string())
    runs_table = pa.table(
        {
            "tenant_id": pa.array([tenant] * len(acc.run_ids), type=pa.string()),
            "run_id": run_ids,
            "parent_run_id": pa.array(acc.parent_ids, type=pa.string()),
            "format": pa.array([FORMAT] * len(acc.run_ids), type=pa.string()),
            "source": pa.array([f"{FORMAT}:{s}" for s in acc.sources], type=pa.string()),
            "created_at": _created_at(acc.created),
            "attrs": pa.array(acc.attrs, type=pa.large_string()),
        },
        schema=RUNS_SCHEMA,
    )
    if n == 0:
        cps = _checkpoints(acc, tenant, pa.table({"d": pa.array([], pa.int64()),
                                                  "event_id": pa.array([], pa.string()),
                                                  "seq": pa.array([], pa.int64())}), quarantine)
        return EventLog(empty_events(), runs=runs_table, quarantine=quarantine.table(runs_table),
                        extras={"checkpoints": cps})

    keep = pa.array(reason == None)  # noqa: E711
    typ_d = pc.dictionary_encode(typ)
    kind_dict = pa.array([TYPE_KINDS.get(t, "other") for t in typ_d.dictionary.to_pylist()],
                         type=pa.string())
    kind = pc.take(kind_dict, typ_d.indices)
    ref = pc.if_else(pa.array(model_any), pc.coalesce(col("modelCallId"), col("refId")),
                     col("refId"))
    ref = pc.if_else(pc.equal(typ, "checkpoint"), pc.coalesce(col("checkpointId"), ref), ref)
    finish = col("finish")
    is_error = pc.or_(
        pc.fill_null(col("isError"), False),
        pc.fill_null(
            pc.or_(pc.is_in(typ, pa.array(["error", "run.failed"])), pc.equal(finish, "error")),
            False,
        ),
    )
    src_pos: dict[str, int] = {}
    src_of_doc = np.asarray([src_pos.setdefault(s, len(src_pos)) for s in acc.sources],
                            dtype=np.int32)
    src_dict = pa.array([f"{FORMAT}:{s}" for s in src_pos], type=pa.string())
    doc_idx = pa.array(doc, type=pa.int32())
    columns = {
        "tenant_id": pa.DictionaryArray.from_arrays(
            pa.array(np.zeros(n, dtype=np.int32)), pa.array([tenant])
        ),
        "run_id": pa.DictionaryArray.from_arrays(doc_idx, run_ids),
        "parent_run_id": pc.take(pa.array(acc.parent_ids, type=pa.string()), doc_idx),
        "seq": pa.array(seq, type=pa.int64()),
        "type": typ,
        "kind": kind,
        "ts": ts,
        "turn": col("turn"),
        "step": col("step"),
        "event_id": col("eventId"),
        "ref_id": ref,
        "tool_name": col("toolName"),
        "args_hash": pc.coalesce(computed, given),
        "cache_key": col("cacheKey"),
        "is_error": is_error,
        "finish": finish,
        "input_tokens": col("usage.inputTokens"),
        "output_tokens": col("usage.outputTokens"),
        "text": pa.array(acc.text, type=pa.large_string()),
        "payload": payload,
        "source": pa.DictionaryArray.from_arrays(pa.array(src_of_doc[doc]), src_dict),
        "source_line": pa.array(acc.line, type=pa.int64()),
    }
    if len(bad_idx):
        columns = {k: pc.filter(v, keep) for k, v in columns.items()}
    table = events_table(columns)
    loaded = pa.table(
        {
            "d": pc.filter(pa.array(doc, type=pa.int64()), keep) if len(bad_idx) else doc,
            "event_id": columns["event_id"],
            "seq": columns["seq"],
        }
    )
    cps = _checkpoints(acc, tenant, loaded, quarantine)
    return EventLog(table, runs=runs_table, quarantine=quarantine.table(runs_table),
                    extras={"checkpoints": cps})


def _created_at(values: list[Any]) -> pa.Array:
    parsed = pd.to_datetime(pd.Series(values, dtype="object"), utc=True, format="ISO8601",
                            errors="coerce")
    return pa.array(parsed.dt.as_unit("us"), type=pa.timestamp("us", tz="UTC"))


def _checkpoints(acc: _Runs, tenant: str, loaded: pa.Table, quarantine: Quarantine) -> pa.Table:
    """Checkpoint entries of every run, resolved to the seq of the event they name."""
    rows: dict[str, list[Any]] = {"d": [], "j": [], "line": [], "checkpoint_id": [],
                                  "event_id": [], "label": [], "raw": []}
    for d, entries in enumerate(acc.checkpoints):  # checkpoint entries: a handful per run
        seen: set[str] = set()
        for cp, j, line in entries:
            src = acc.sources[d]
            problem = None
            if not isinstance(cp, dict):
                problem = ("", "not_object", f"must be an object, got {json_type(cp)}")
            else:
                for key, required in (("checkpointId", True), ("eventId", True),
                                      ("label", False)):
                    v = cp.get(key)
                    if (required and v is None) or (v is not None and not isinstance(v, str)):
                        problem = (key, "missing_field" if v is None else "bad_type",
                                   f"must be a string, got {json_type(v)}")
                        break
                if problem is None and cp["checkpointId"] in seen:
                    problem = ("checkpointId", "duplicate_checkpoint_id",
                               f"{cp['checkpointId']!r} repeats an earlier checkpoint id")
            if problem is not None:
                fld, why, what = problem
                quarantine.bad(
                    LoadError(source=src, line=line, field=f"checkpoints[{j}].{fld}".rstrip("."),
                              reason=why, detail=what, fix=_FIX[why]),
                    json.dumps(cp, default=str),
                )
                continue
            seen.add(cp["checkpointId"])
            rows["d"].append(d)
            rows["j"].append(j)
            rows["line"].append(line)
            rows["checkpoint_id"].append(cp["checkpointId"])
            rows["event_id"].append(cp["eventId"])
            rows["label"].append(cp.get("label"))
            rows["raw"].append(_raw_text(cp))
    cp_t = pa.table(
        {
            "d": pa.array(rows["d"], pa.int64()),
            "j": pa.array(rows["j"], pa.int64()),
            "line": pa.array(rows["line"], pa.int64()),
            "checkpoint_id": pa.array(rows["checkpoint_id"], pa.string()),
            "event_id": pa.array(rows["event_id"], pa.string()),
            "label": pa.array(rows["label"], pa.string()),
            "raw": pa.array(rows["raw"], pa.string()),
        }
    )
    joined = cp_t.join(loaded, keys=["d", "event_id"], join_type="left outer",
                       use_threads=False).sort_by([("d", "ascending"), ("j", "ascending")])
    missing = np.flatnonzero(np.asarray(pc.is_null(joined.column("seq"))))
    for i in missing:
        d = joined.column("d")[int(i)].as_py()
        eid = joined.column("event_id")[int(i)].as_py()
        quarantine.bad(
            LoadError(
                source=acc.sources[d],
                line=joined.column("line")[int(i)].as_py(),
                field=f"checkpoints[{joined.column('j')[int(i)].as_py()}].eventId",
                reason="unknown_checkpoint_event",
                detail=f"names {eid!r}, which is not a loaded event of run {acc.run_ids[d]!r}",
                fix=_FIX["unknown_checkpoint_event"],
            ),
            joined.column("raw")[int(i)].as_py(),
        )
    joined = joined.filter(pc.is_valid(joined.column("seq")))
    d_idx = joined.column("d").combine_chunks()
    return pa.table(
        {
            "tenant_id": pa.array([tenant] * joined.num_rows, type=pa.string()),
            "run_id": pc.take(pa.array(acc.run_ids, type=pa.string()), d_idx),
            "checkpoint_id": joined.column("checkpoint_id"),
            "event_id": joined.column("event_id"),
            "seq": joined.column("seq"),
            "label": joined.column("label"),
        },
        schema=CHECKPOINTS_SCHEMA,
    )


# ----------------------------------------------------------------- side files (parsed only)


def read_side_document(path: str | os.PathLike[str], expected: str) -> tuple[str, dict[str, Any]]:
    """(source, parsed object) of a branch or fixtures file whose ``"format"`` is ``expected``.

    Only parses: UTF-8, JSON, one object, the format tag. What the document says is checked by
    the branch layer (:func:`replaykit.read_isplay_branch`, :func:`replaykit.read_isplay_fixtures`).

    Raises:
        LoadError: ``bad_utf8``, ``bad_json``, ``not_object`` or ``bad_format``, naming the file.
        FileNotFoundError: no such file.

    >>> _, doc = read_side_document("data/isplay/fixtures.json", FIXTURES_FORMAT)  # doctest: +SKIP
    >>> doc["format"]  # doctest: +SKIP
    'isplay.fixtures/v1'
    """
    src = str(path)
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LoadError(source=src, line=data.count(b"\n", 0, exc.start) + 1, reason="bad_utf8",
                        detail=f"is not valid UTF-8 (byte {exc.start})",
                        fix=_FIX["bad_utf8"]) from None
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise LoadError(source=src, line=exc.lineno, reason="bad_json",
                        detail=f"is not valid JSON: {exc.msg} (column {exc.colno})",
                        fix="Fix the JSON syntax.") from None
    except ValueError as exc:
        raise LoadError(source=src, line=None, reason="bad_json", detail=str(exc),
                        fix="Fix the JSON syntax.") from None
    if not isinstance(obj, dict):
        raise LoadError(source=src, line=1, reason="not_object",
                        detail=f"must be a JSON object, got {json_type(obj)}",
                        fix=f'Write one object with "format": "{expected}".')
    if obj.get("format") != expected:
        raise LoadError(source=src, line=None, field="format", reason="bad_format",
                        detail=f"must be {expected!r}, got {json_type(obj.get('format'))}",
                        fix=f'Set "format": "{expected}" (run exports are read with '
                        "read_isplay, branches with read_isplay_branch, fixtures with "
                        "read_isplay_fixtures).")
    return src, obj


#: Names this module held before the branch vocabulary moved to the branch layer.
_MOVED = {
    "FIXTURE_PROVENANCES": "replaykit.branch.vocab",
    "INTERVENTION_KINDS": "replaykit.branch.vocab",
    "MODEL_POLICIES": "replaykit.branch.vocab",
    "SELECTOR_KEYS": "replaykit.branch.vocab",
    "TOOL_POLICIES": "replaykit.branch.vocab",
    "IsplayBranch": "replaykit.branch.types",
    "IsplayIntervention": "replaykit.branch.types",
    "ReplayPolicy": "replaykit.branch.types",
    "read_isplay_branch": "replaykit.branch.types",
    "FIXTURES_SCHEMA": "replaykit.branch.fixtures",
    "read_isplay_fixtures": "replaykit.branch.fixtures",
}


def __getattr__(name: str) -> Any:
    """A name that moved to the branch layer says where it went (the loader never imports it:
    loaders sit below ``replaykit.branch``)."""
    if name in _MOVED:
        raise AttributeError(f"replaykit.io.isplay.{name} moved to {_MOVED[name]}.{name} (the "
                             "branch vocabulary lives with the branch layer; "
                             "replaykit.read_isplay_branch / read_isplay_fixtures are unchanged)",
                             name=name, obj=None)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
