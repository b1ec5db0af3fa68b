"""Loader for Arize Phoenix span exports (JSONL, JSON, and the span dataframe as Parquet).

Phoenix stores OpenInference spans. Its span dataframe (``px.Client().get_spans_dataframe()``,
saved with ``to_parquet`` or ``to_json(orient="records", lines=True)``) has the columns
``name``, ``span_kind``, ``parent_id``, ``start_time``, ``end_time``, ``status_code``,
``status_message``, ``events``, ``context.span_id``, ``context.trace_id`` and one
``attributes.<key>`` column per attribute (``attributes.llm.model_name``,
``attributes.llm.token_count.prompt``, ``attributes.input.value``, ``attributes.tool.name``,
...). The REST API / JSON form nests the same: ``context: {trace_id, span_id}``,
``attributes: {...}`` (flat dotted keys or nested objects). Both are read.

One replaykit run per trace (``run_id`` = ``context.trace_id``), spans ordered by
``start_time`` (then file order). An ``LLM`` span is one model call, a ``TOOL`` span a
``tool_call`` row and a ``tool_result`` row, the root span a ``session`` row, other kinds
(``CHAIN``, ``AGENT``, ``RETRIEVER``, ``EMBEDDING``, ``RERANKER``, ``GUARDRAIL``,
``EVALUATOR``) ``other`` rows. Field by field: ``docs/formats/phoenix.md``. The export records
no tenant: the caller names the owner.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from .._base import native as _native
from ..eventlog.log import EventLog
from ._common import (
    ErrorPolicy,
    Paths,
    Quarantine,
    Tenants,
    expand_paths,
    keep_tenants,
    owner_and_filter,
)
from ._messages import decode_arguments, read_reply
from ._platform import Item, NativeTraces, joined_log, read_traces, sniff_records
from ._records import (
    Row,
    epoch_to_iso,
    guard,
    payload_of,
    rows_to_log,
    text_of,
    tokens,
    tool_rows,
)

__all__ = ["FINISH", "FORMAT", "SPAN_KINDS", "attr", "listed", "read_phoenix", "sniff"]

FORMAT = "phoenix"
_PATTERNS = ("*.json", "*.jsonl", "*.ndjson", "*.parquet")

#: OpenInference span kind -> canonical ``kind`` (a ``TOOL`` span also gets a ``tool_result``).
SPAN_KINDS: dict[str, str] = {"LLM": "model_response", "TOOL": "tool_call", "CHAIN": "other",
                              "AGENT": "other", "RETRIEVER": "other", "EMBEDDING": "other",
                              "RERANKER": "other", "GUARDRAIL": "other", "EVALUATOR": "other",
                              "PROMPT": "other", "UNKNOWN": "other"}


def sniff(path: Path) -> str | None:
    """None when ``path`` looks like a Phoenix span export (``context.span_id`` with
    ``span_kind``, flat or nested), otherwise why it does not."""
    return sniff_records(Path(path), (("context.span_id", "span_kind"),
                                      ("span_id", "trace_id", "span_kind"),
                                      ("context", "span_kind", "trace_id")), FORMAT)


def _unwrap(doc: Any) -> list[Any] | None:
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict):
        if isinstance(doc.get("data"), list):
            return doc["data"]
        if isinstance(doc.get("spans"), list):
            return doc["spans"]
        if "span_kind" in doc:
            return [doc]
    return None


def attr(span: dict[str, Any], key: str) -> Any:
    """The attribute ``key`` (dotted, e.g. ``llm.model_name``) of a span in any of Phoenix's
    shapes: a flat ``attributes.<key>`` column, ``attributes`` with dotted keys, or nested
    attribute objects."""
    v = span.get(f"attributes.{key}")
    if v is not None:
        return v
    attrs = span.get("attributes")
    if isinstance(attrs, str):
        try:
            attrs = json.loads(attrs)
        except (ValueError, RecursionError):
            return None
    if not isinstance(attrs, dict):
        return None
    if key in attrs:
        return attrs[key]
    node: Any = attrs
    parts = key.split(".")
    i = 0
    while i < len(parts) and isinstance(node, dict):  # nested, with dotted keys allowed
        for j in range(len(parts), i, -1):
            k = ".".join(parts[i:j])
            if k in node:
                node = node[k]
                i = j
                break
        else:
            return None
    return node if i == len(parts) else None


#: ``llm.finish_reason`` (the provider's spelling, passed through by OpenInference) ->
#: replaykit ``finish`` (looked up lower-cased; any other value is kept as written). The same
#: mapping as read_otel's ``FINISH``.
FINISH: dict[str, str] = {
    "stop": "stop", "end_turn": "stop", "stop_sequence": "stop",
    "tool_call": "tool-calls", "tool_calls": "tool-calls", "tool_use": "tool-calls",
    "function_call": "tool-calls",
    "length": "max-tokens", "max_tokens": "max-tokens", "model_length": "max-tokens",
    "content_filter": "content-filter", "content_filtered": "content-filter",
    "refusal": "content-filter", "safety": "content-filter", "recitation": "content-filter",
    "guardrail_intervened": "content-filter", "error": "error",
}

_INDEXED = re.compile(r"^(\d+)\.(.+)$")


def listed(span: dict[str, Any], key: str) -> list[Any] | None:
    """A list attribute (``llm.input_messages``, ``llm.output_messages``, ...): a list as the
    span dataframe holds it, or rebuilt from the numbered flat keys the REST API writes
    (``llm.output_messages.0.message.content``, ...: one dict per index, keyed by the rest of
    the name, in index order)."""
    v = attr(span, key)
    if isinstance(v, list):
        return v
    attrs = span.get("attributes")
    if not isinstance(attrs, dict):
        return None
    items: dict[int, dict[str, Any]] = {}
    prefix = key + "."
    for k, x in attrs.items():
        if isinstance(k, str) and k.startswith(prefix):
            m = _INDEXED.match(k[len(prefix):])
            if m:
                items.setdefault(int(m.group(1)), {})[m.group(2)] = x
    return [items[i] for i in sorted(items)] if items else None


def _ctx(span: dict[str, Any], key: str) -> Any:
    v = span.get(f"context.{key}")
    if v is None and isinstance(span.get("context"), dict):
        v = span["context"].get(key)
    return v if v is not None else span.get(key)


def _kind(span: dict[str, Any]) -> str:
    k = span.get("span_kind") or attr(span, "openinference.span.kind")
    return str(k).upper() if k else "UNKNOWN"


def _messages_text(msgs: Any) -> str | None:
    if isinstance(msgs, list) and msgs:
        last = msgs[-1]
        if isinstance(last, dict):
            m = last.get("message", last)
            if isinstance(m, dict):
                return text_of(m.get("message.content", m.get("content")))
    return None


_REST_CALL = re.compile(r"^message\.tool_calls\.(\d+)\.tool_call\.(id|function\.name)$")


def _asked(messages: list[Any] | None) -> list[tuple[str | None, str]]:
    """``(tool name, call id)`` of each tool call the output messages ask for: lists of
    ``tool_call.*`` dicts (the dataframe) or numbered ``message.tool_calls.<j>.tool_call.*``
    keys (the REST form)."""
    out: list[tuple[str | None, str]] = []
    for m in messages or []:
        m = m.get("message", m) if isinstance(m, dict) else None
        if not isinstance(m, dict):
            continue
        calls = m.get("message.tool_calls")
        if not isinstance(calls, list):
            found: dict[int, dict[str, Any]] = {}
            for k, v in m.items():
                hit = _REST_CALL.match(k) if isinstance(k, str) else None
                if hit:
                    found.setdefault(int(hit.group(1)), {})[f"tool_call.{hit.group(2)}"] = v
            calls = [found[j] for j in sorted(found)]
        for c in calls:
            if isinstance(c, dict) and isinstance(c.get("tool_call.id"), str):
                fn = c.get("tool_call.function.name")
                out.append((fn if isinstance(fn, str) else None, c["tool_call.id"]))
    return out


def _ts(v: Any) -> str | None:
    v = epoch_to_iso(v)
    return v if isinstance(v, str) else None


def _value(v: Any) -> Any:
    """``input.value`` / ``tool.parameters``: JSON text decoded when it is JSON."""
    if isinstance(v, str):
        try:
            return json.loads(v)
        except (ValueError, RecursionError):
            return v
    return v


#: OpenInference token-detail attributes -> replaykit's figures (``llm.token_count.prompt``
#: counts every prompt token, cached or not; the details are parts of it)
_FIGURES = (("cache_read_tokens", "llm.token_count.prompt_details.cache_read"),
            ("cache_write_tokens", "llm.token_count.prompt_details.cache_write"),
            ("reasoning_tokens", "llm.token_count.completion_details.reasoning"))


def _count(v: Any) -> int | None:
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _trace_rows(trace_id: str, spans: list[Item], quarantine: Quarantine) -> list[Row]:
    """The rows of one trace from its spans (read from one file or several)."""
    spans = sorted(spans, key=lambda s: (_ts(s[3].get("start_time")) or "~", s[0]))
    rows: list[Row] = []
    step = 0
    # tool calls the LLM spans asked for, not yet matched to a TOOL span (OpenInference's TOOL
    # spans name no call: matched by tool name, in order)
    pending: list[tuple[str | None, str]] = []
    for _, line, raw, span, path in spans:
        src = f"{FORMAT}:{path}"
        with guard(quarantine, FORMAT, path, line, raw, span):  # per record
            sid = _ctx(span, "span_id")
            sid = str(sid) if sid is not None else None
            kind = _kind(span)
            name = span.get("name") if isinstance(span.get("name"), str) else None
            failed = str(span.get("status_code") or "").upper() == "ERROR"
            doc = span
            if kind == "LLM":
                figs = {name_: _count(attr(span, key)) for name_, key in _FIGURES}
                if any(v is not None for v in figs.values()):
                    doc = {**span, "replaykitUsage": figs}  # what calls_df reads
            payload = payload_of(doc, FORMAT, path, line)
            base = {"run_id": trace_id, "ts": _ts(span.get("start_time")), "event_id": sid,
                    "source": src, "source_line": line, "is_error": failed, "type": kind,
                    "turn": 1}
            if kind == "LLM":
                step += 1
                out = listed(span, "llm.output_messages")
                # the output messages when recorded (a tool-call-only answer has no text),
                # else output.value (the provider's raw response, JSON text)
                raw_out = _value(attr(span, "output.value"))
                reply = read_reply(raw_out)
                text = (_messages_text(out) if out
                        else reply.text if reply.known else text_of(raw_out))
                pending.extend(_asked(out))
                reason = attr(span, "llm.finish_reason")  # newer OpenInference (OpenAI)
                finish = ("error" if failed else
                          FINISH.get(reason.lower(), reason) if isinstance(reason, str)
                          and reason else "unknown")
                rows.append({**base, "kind": "model_response", "ref_id": sid, "step": step,
                             "finish": finish,
                             "input_tokens": tokens(attr(span, "llm.token_count.prompt"),
                                                    FORMAT, path, line,
                                                    "attributes.llm.token_count.prompt"),
                             "output_tokens": tokens(attr(span, "llm.token_count.completion"),
                                                     FORMAT, path, line,
                                                     "attributes.llm.token_count.completion"),
                             "text": span.get("status_message") if failed else text,
                             "payload": payload})
            elif kind == "TOOL":
                tname = attr(span, "tool.name") or name
                # OpenInference: input.value holds the call's arguments; tool.parameters is
                # the tool's parameter schema, read only when there is no input.value
                args = decode_arguments(attr(span, "input.value") or attr(
                    span, "tool.parameters"))
                cid = attr(span, "tool_call.id")
                if not isinstance(cid, str) or not cid:
                    hit = next((i for i, (n, _) in enumerate(pending) if n == tname), None)
                    cid = pending.pop(hit)[1] if hit is not None else sid
                output = attr(span, "output.value")
                result = {"span_id": sid, "part": "result", "end_time": span.get("end_time"),
                          "output": output, "status_code": span.get("status_code"),
                          "status_message": span.get("status_message")}
                rows.extend(tool_rows(
                    base, cid, tname, args, step=step or None, payload=payload, result=result,
                    ended=_ts(span.get("end_time")), text=span.get("status_message") if failed
                    else (output if isinstance(output, str) else text_of(output)),
                    fmt=FORMAT, path=path, line=line))
            else:
                root = not span.get("parent_id")
                rows.append({**base, "kind": "session" if root else "other",
                             "step": None if root else (step or None), "text": name,
                             "payload": payload})
    return rows


def read_phoenix(path: Paths, *, owner: str | None = None, tenant_id: Tenants = None,
                 errors: ErrorPolicy = "raise", progress: bool | None = None) -> EventLog:
    """Load Arize Phoenix span exports: one replaykit run per trace.

    Args:
        owner: owner of the traces (the export records no tenant); required.
        tenant_id: keep only these tenants' rows (one id or a list; None: all), as
            in every reader: the rows are all ``owner``'s, so all of them or none.
        errors: ``"raise"`` (default) or ``"quarantine"``.
        progress: progress bar over files (None: when interactive).

    Raises:
        LoadError: ``bad_tenant``; under ``"raise"``: ``bad_json``, ``not_object``,
            ``bad_document``, ``bad_parquet``, ``missing_trace`` (a span without
            ``context.trace_id``), ``bad_tokens``, ``too_deep``, ``unreadable``,
            ``compressed``.
        FileNotFoundError: nothing matches ``path``.

    With the native core, JSON Lines files are mapped by ``native/src/platform.rs`` (the same
    rows, runs, quarantine and warnings as this reader's; ``REPLAYKIT_NATIVE=0`` reads every
    file here); a file it is unsure of, or one sharing a trace with another file, is read here.

    Example:
        >>> log = rk.read_phoenix("data/phoenix", owner="me")  # doctest: +SKIP
    """
    tenant, wanted = owner_and_filter(owner, tenant_id, fmt=FORMAT)
    quarantine = Quarantine(errors, tenant_id=tenant)
    files = expand_paths(path, patterns=_PATTERNS)
    # JSON Lines files are mapped by the native core (native/src/platform.rs) when it is
    # sure; the files it declines (and every file when any is not JSON Lines) are read here
    scanned = _native_scan(files)
    ref = files if scanned is None else [p for p, ok in zip(files, scanned.ok, strict=True)
                                         if not ok]
    # spans of each trace across every file: a trace split over files is one run, and a
    # trace exported twice is read once (dedupe)
    rows, runs = read_traces(ref, FORMAT, quarantine, progress=progress, unwrap=_unwrap,
                             trace_of=_trace_of, note=_note, key_of=_span_key, what="span",
                             missing=("is a span without 'context.trace_id'",
                                      "context.trace_id"), trace_rows=_trace_rows)
    if scanned is None:
        return keep_tenants(rows_to_log(rows, runs, tenant, quarantine), tenant, wanted)
    return keep_tenants(joined_log(files, scanned, rows, runs, FORMAT, tenant, quarantine),
                        tenant, wanted)


def _native_scan(files: list[Path]) -> NativeTraces | None:
    """The native core's reading of Phoenix JSON Lines ``files`` (``native/src/platform.rs``);
    None: the reference reads them all (the core is off or failed, some file is not JSON
    Lines, or the core declined every file)."""
    if not files or not _native.enabled() or any(
            p.suffix.lower() not in (".jsonl", ".ndjson") for p in files):
        return None
    try:
        got = NativeTraces(_native.core().scan_phoenix_files(
            [os.fsencode(p) for p in files], [str(p) for p in files],
            [f"{FORMAT}:{p}" for p in files], _native.threads()))
    except (RuntimeError, UnicodeEncodeError):  # a panic (counted by _native.panics())
        return None
    return got if any(got.ok) else None


def _trace_of(span: dict[str, Any]) -> str | None:
    """A span's trace (``context.trace_id``, as text)."""
    tid = _ctx(span, "trace_id")
    return str(tid) if tid is not None else None


def _note(span: dict[str, Any], attrs: dict[str, Any]) -> None:
    """A root span's name and session, in its trace's run attrs."""
    if not span.get("parent_id"):
        attrs.setdefault("name", span.get("name"))
        sess = attr(span, "session.id")
        if sess is not None:
            attrs.setdefault("session_id", sess)


def _span_key(span: dict[str, Any]) -> Any:
    """A span's id (``context.span_id``), which makes two copies one."""
    sid = _ctx(span, "span_id")
    return str(sid) if sid is not None and str(sid) else None
