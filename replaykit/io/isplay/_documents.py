"""Reading an isplay file's documents.

Run documents (``isplay.run/v1``): :func:`_read_file` decodes a ``.json`` file (one document)
or a ``.jsonl``/``.ndjson`` file (one per line), checks each document's envelope and each
event's JSON types, and collects what the column-wise pass (:mod:`._build`) needs in a
:class:`_Runs`; bad documents and events go to the quarantine (or raise) with a fix from
:data:`_FIX`. Side documents (branch, fixtures) are only parsed: :func:`read_side_document`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..._base.json import (
    MAX_DEPTH,
    JSONDecodeError,
    JSONLoneSurrogate,
    JSONTooDeep,
    args_hash,
    canonical_json,
    check_unicode,
    json_type,
    loads,
)
from ...errors import LoadError, refuse_special_file
from .._common import Progress, Quarantine, compressed, unreadable
from ._format import _LINE_SUFFIXES, BRANCH_FORMAT, FIXTURES_FORMAT, RUN_FORMAT
from ._text import (
    _json_error,
    _lines_at,
    _raw_text,
    _reject_constant,
    _Syntax,
    _walk_document,
)

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
    "args_hash_mismatch": "argsHash must equal replaykit._base.json.args_hash(args); "
    "recompute it or "
    "drop argsHash so replaykit computes it.",
    "unknown_checkpoint_event": "A checkpoint's eventId must name an event of the same run.",
    "duplicate_checkpoint_id": "Checkpoint ids must be unique within a run.",
}

# ------------------------------------------------------------------------------ run documents

_INT64_MAX = 2**63 - 1
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
    try:
        data = path.read_bytes()
    except OSError as exc:  # one bad row; the other files load
        acc.input_rows += 1
        quarantine.bad(unreadable(src, exc))
        return
    progress.update(len(data))
    packed_err = compressed(src, data[:8])
    if packed_err is not None:
        acc.input_rows += 1
        quarantine.bad(packed_err)
        return

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
    try:  # the standard library decodes "\ud800" into a string no later step can encode
        check_unicode(text, (top, [v for items in arrays.values() for v, _off in items]))
    except JSONLoneSurrogate as exc:
        return file_error("bad_json", f"is not valid JSON: {exc}", exc.line or 1)
    lines = {k: _lines_at(text, [off for _v, off in items]) for k, items in arrays.items()}
    lines.setdefault("events", np.zeros(0, dtype=np.int64))
    lines.setdefault("checkpoints", np.zeros(0, dtype=np.int64))
    _document(top, arrays, lines, src=src, doc_line=1, raw=text, acc=acc, seen_runs=seen,
              quarantine=quarantine)


# ----------------------------------------------------------------- side files (parsed only)


def read_side_document(path: str | os.PathLike[str], expected: str) -> tuple[str, dict[str, Any]]:
    """(source, parsed object) of a branch or fixtures file whose ``"format"`` is ``expected``.

    Only parses: UTF-8, JSON, one object, the format tag. What the document says is checked by
    the branch layer (:func:`replaykit.read_isplay_branch`, :func:`replaykit.read_isplay_fixtures`).

    Raises:
        LoadError: ``bad_utf8``, ``bad_json``, ``not_object`` or ``bad_format``, naming the file;
            ``special_file``: a FIFO, socket or device (never opened).
        FileNotFoundError: no such file.

    >>> _, doc = read_side_document("data/isplay/fixtures.json", FIXTURES_FORMAT)  # doctest: +SKIP
    >>> doc["format"]  # doctest: +SKIP
    'isplay.fixtures/v1'
    """
    src = str(path)
    refuse_special_file(path)  # a FIFO or device would block: said as such, never opened
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
