"""Loader for Langfuse trace / observation exports (JSON, JSONL, CSV, Parquet).

Langfuse records a *trace* (``id``, ``name``, ``timestamp``, ``input``, ``output``,
``sessionId``, ``userId``, ``metadata``) and its *observations* (``id``, ``traceId``,
``parentObservationId``, ``type`` ``GENERATION`` / ``SPAN`` / ``EVENT`` / ``TOOL`` / ``AGENT``
/ ``CHAIN`` / ``RETRIEVER`` / ``EMBEDDING`` / ``EVALUATOR`` / ``GUARDRAIL``, ``name``,
``startTime`` / ``endTime``, ``input`` / ``output``, ``model``, ``modelParameters``, usage,
``level`` and ``statusMessage``). Accepted files:

* JSON: an array of observations and/or traces, ``{"data": [...]}`` (the public API's list
  pages), ``{"trace": {...}, "observations": [...]}`` (one trace's export), or a trace object
  with nested ``observations``;
* JSON Lines: one observation or trace per line (a trace line may nest its observations);
* CSV / Parquet: one observation per row (the UI / blob-storage exports), camelCase or
  snake_case column names (``trace_id``, ``start_time``, ``parent_observation_id``,
  ``provided_model_name``, ``usage_details``, ...), nested values as JSON text.

One replaykit run per Langfuse trace (``run_id`` = ``traceId``); observations are ordered by
``startTime`` (then file order). A ``GENERATION`` is one model call, a ``TOOL`` observation a
``tool_call`` row and a ``tool_result`` row, a trace record a ``session`` row. Field by field:
``docs/formats/langfuse.md``. The export records no tenant: the caller names the owner.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .._json import args_hash, canonical_json
from ..errors import LoadError
from ..eventlog import EventLog
from ._common import (
    UNEXPECTED,
    ErrorPolicy,
    Progress,
    Quarantine,
    expand_paths,
    require_tenant,
    unexpected_input,
)
from ._platform import first_of, raw_of, records, sniff_records
from ._records import (
    Row,
    bad,
    epoch_to_iso,
    line_error,
    payload_of,
    rows_to_log,
    text_of,
    tokens,
)

__all__ = ["FORMAT", "OBSERVATION_TYPES", "read_langfuse", "sniff"]

FORMAT = "langfuse"
_PATTERNS = ("*.json", "*.jsonl", "*.ndjson", "*.csv", "*.parquet")

#: Langfuse observation ``type`` -> canonical ``kind`` (a ``TOOL`` also gets a
#: ``tool_result`` row); any other type is ``other``.
OBSERVATION_TYPES: dict[str, str] = {"GENERATION": "model_response", "TOOL": "tool_call",
                                     "SPAN": "other", "EVENT": "other", "AGENT": "other",
                                     "CHAIN": "other", "RETRIEVER": "other",
                                     "EMBEDDING": "other", "EVALUATOR": "other",
                                     "GUARDRAIL": "other"}

_FINISH = {"stop": "stop", "end_turn": "stop", "tool_calls": "tool-calls",
           "tool_use": "tool-calls", "length": "max-tokens", "max_tokens": "max-tokens"}


def sniff(path: Path) -> str | None:
    """None when ``path`` looks like a Langfuse export, otherwise why it does not
    (observations with ``traceId`` and ``type``, or snake_case ``trace_id`` with
    ``parent_observation_id`` / ``start_time``)."""
    return sniff_records(Path(path), (("traceId", "parentObservationId"),
                                      ("traceId", "startTime", "type"),
                                      ("trace_id", "parent_observation_id"),
                                      ("trace_id", "start_time", "type", "level")), FORMAT)


def _unwrap(doc: Any) -> list[Any] | None:
    if isinstance(doc, list):
        out: list[Any] = []
        for item in doc:
            inner = _unwrap(item) if isinstance(item, dict) and isinstance(
                item.get("observations"), list) else None
            out.extend(inner if inner is not None else [item])
        return out
    if not isinstance(doc, dict):
        return None
    if isinstance(doc.get("data"), list):
        return _unwrap(doc["data"])
    if isinstance(doc.get("trace"), dict) or isinstance(doc.get("observations"), list):
        trace = doc.get("trace") if isinstance(doc.get("trace"), dict) else (
            {k: v for k, v in doc.items() if k != "observations"} if "id" in doc else None)
        obs: list[Any] = doc["observations"] if isinstance(doc.get("observations"), list) \
            else []
        if trace is None and not obs:
            return None
        tid = trace.get("id") if isinstance(trace, dict) else None
        items: list[Any] = [{**trace, "_record": "trace"}] if isinstance(trace, dict) else []
        for o in obs:
            if isinstance(o, dict) and tid is not None and "traceId" not in o \
                    and "trace_id" not in o:
                o = {**o, "traceId": tid}
            items.append(o)
        return items
    if "traceId" in doc or "trace_id" in doc:
        return [doc]
    return None


def _is_trace(rec: dict[str, Any]) -> bool:
    if rec.get("_record") == "trace":
        return True
    return "traceId" not in rec and "trace_id" not in rec and "type" not in rec and (
        "timestamp" in rec or "sessionId" in rec or "session_id" in rec)


def _usage(o: dict[str, Any]) -> tuple[Any, Any, str]:
    for key in ("usageDetails", "usage_details", "usage"):
        u = o.get(key)
        if isinstance(u, dict):
            for i, out in (("input", "output"), ("promptTokens", "completionTokens"),
                           ("input_tokens", "output_tokens"),
                           ("prompt_tokens", "completion_tokens")):
                if u.get(i) is not None or u.get(out) is not None:
                    return u.get(i), u.get(out), f"{key}.{i}"
    i = first_of(o, "promptTokens", "inputUsage", "prompt_tokens", "input_usage")
    out = first_of(o, "completionTokens", "outputUsage", "completion_tokens", "output_usage")
    return i, out, "promptTokens"


def _finish(o: dict[str, Any], failed: bool) -> str | None:
    if failed:
        return "error"
    out = o.get("output")
    if isinstance(out, dict):
        fr = out.get("finish_reason") or out.get("stop_reason")
        if not fr and isinstance(out.get("choices"), list) and out["choices"] and isinstance(
                out["choices"][0], dict):
            fr = out["choices"][0].get("finish_reason")
        if isinstance(fr, str):
            return _FINISH.get(fr, fr)
    return None


def _text(v: Any) -> str | None:
    if isinstance(v, dict):
        for key in ("content", "text", "output", "completion"):
            if key in v:
                return text_of(v[key])
        ch = v.get("choices")
        if isinstance(ch, list) and ch and isinstance(ch[0], dict) and isinstance(
                ch[0].get("message"), dict):
            return text_of(ch[0]["message"].get("content"))
    return text_of(v)


def _ts(v: Any) -> str | None:
    v = epoch_to_iso(v)
    return v if isinstance(v, str) else None


def _trace_rows(path: Path, trace_id: str, recs: list[tuple[int, int | None, str | None,
                                                               dict[str, Any]]],
                quarantine: Quarantine) -> list[Row]:
    src = f"{FORMAT}:{path}"

    def when(item: tuple[int, int | None, str | None, dict[str, Any]]) -> tuple[int, str, int]:
        k, _, _, rec = item
        if _is_trace(rec):
            return (0, "", k)
        return (1, _ts(first_of(rec, "startTime", "start_time")) or "~", k)

    rows: list[Row] = []
    step = 0
    for _, line, raw, rec in sorted(recs, key=when):
        try:
            payload = payload_of({k: v for k, v in rec.items() if k != "_record"}, FORMAT,
                                 path, line)
            oid = rec.get("id") if isinstance(rec.get("id"), str) else None
            if _is_trace(rec):
                rows.append({"run_id": trace_id, "type": "trace", "kind": "session",
                             "ts": _ts(first_of(rec, "timestamp", "createdAt", "created_at")),
                             "event_id": oid, "text": _text(rec.get("input")),
                             "payload": payload, "source": src, "source_line": line,
                             "is_error": False})
                continue
            otype = str(rec.get("type") or "SPAN").upper()
            name = rec.get("name") if isinstance(rec.get("name"), str) else None
            failed = str(rec.get("level") or "").upper() == "ERROR"
            base = {"run_id": trace_id, "ts": _ts(first_of(rec, "startTime", "start_time")),
                    "event_id": oid, "source": src, "source_line": line,
                    "is_error": failed, "type": otype}
            if otype == "GENERATION":
                step += 1
                i, o, fld = _usage(rec)
                rows.append({**base, "kind": "model_response", "ref_id": oid, "step": step,
                             "turn": 1, "finish": _finish(rec, failed) or "unknown",
                             "input_tokens": tokens(i, FORMAT, path, line, fld),
                             "output_tokens": tokens(o, FORMAT, path, line, fld),
                             "text": _text(rec.get("output")) if not failed else
                             first_of(rec, "statusMessage", "status_message"),
                             "payload": payload})
            elif otype == "TOOL":
                args = rec.get("input") if rec.get("input") is not None else {}
                rows.append({**base, "kind": "tool_call", "ref_id": oid, "tool_name": name,
                             "turn": 1, "step": step or None, "is_error": False,
                             "args_hash": args_hash(args), "text": canonical_json(args),
                             "payload": payload})
                end = first_of(rec, "endTime", "end_time")
                result = {"id": oid, "part": "result", "name": name, "endTime": end,
                          "output": rec.get("output"), "level": rec.get("level"),
                          "statusMessage": first_of(rec, "statusMessage", "status_message")}
                rows.append({**base, "kind": "tool_result", "ref_id": oid, "tool_name": name,
                             "turn": 1, "step": step or None, "event_id": None,
                             "ts": _ts(end) or base["ts"],
                             "text": result["statusMessage"] if failed else
                             _text(rec.get("output")),
                             "payload": payload_of(result, FORMAT, path, line)})
            else:
                kind = "error" if failed and otype == "EVENT" else "other"
                rows.append({**base, "kind": kind, "turn": 1, "step": step or None,
                             "text": name, "payload": payload})
        except LoadError as exc:
            quarantine.bad(exc, raw_of(raw, rec))
        except UNEXPECTED as exc:  # a last-resort guard, per record
            quarantine.bad(line_error(exc, FORMAT, path, line), raw_of(raw, rec))
    return rows


def read_langfuse(
    path: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    tenant_id: str,
    errors: ErrorPolicy = "raise",
    progress: bool | None = None,
) -> EventLog:
    """Load Langfuse exports (traces and observations): one replaykit run per trace.

    Args:
        tenant_id: owner of the traces (the export records no tenant); required.
        errors: ``"raise"`` (default) or ``"quarantine"``.
        progress: progress bar over files (None: when interactive).

    Raises:
        LoadError: ``bad_tenant``; under ``"raise"``: ``bad_json``, ``not_object``,
            ``bad_document``, ``bad_csv`` / ``bad_parquet``, ``missing_trace`` (an observation
            without ``traceId``), ``bad_tokens``, ``too_deep``, ``unreadable``,
            ``compressed``.
        FileNotFoundError: nothing matches ``path``.

    Example:
        >>> log = rk.read_langfuse("data/langfuse", tenant_id="me")  # doctest: +SKIP
    """
    tenant = require_tenant(tenant_id, fmt=FORMAT)
    quarantine = Quarantine(errors, tenant_id=tenant)
    files = expand_paths(path, patterns=_PATTERNS)
    rows: list[Row] = []
    runs: list[dict[str, Any]] = []
    seqs: dict[str, int] = {}
    with Progress(len(files), desc="read_langfuse", unit="file", enabled=progress) as bar:
        for k, p in enumerate(files, start=1):
            bar.next_file(p.name, k, len(files))
            try:
                traces: dict[str, list[Any]] = {}
                meta: dict[str, dict[str, Any]] = {}
                for n, (line, raw, rec) in enumerate(records(p, FORMAT, quarantine, _unwrap)):
                    tid = rec.get("id") if _is_trace(rec) else first_of(rec, "traceId",
                                                                       "trace_id")
                    if not isinstance(tid, str) or not tid:
                        quarantine.bad(bad(FORMAT, p, line, "missing_trace",
                                           "is an observation without a string 'traceId'",
                                           field="traceId"), raw_of(raw, rec))
                        continue
                    traces.setdefault(tid, []).append((n, line, raw, rec))
                    m = meta.setdefault(tid, {"format": FORMAT, "file": str(p)})
                    if _is_trace(rec):
                        for key in ("name", "sessionId", "userId", "release", "version",
                                    "environment", "tags", "metadata"):
                            if rec.get(key) is not None:
                                m.setdefault(key, rec[key])
                for tid, group in traces.items():
                    trows = _trace_rows(p, tid, group, quarantine)
                    for r in trows:
                        r["seq"] = seqs.get(tid, 0)
                        seqs[tid] = r["seq"] + 1
                    if trows:
                        rows.extend(trows)
                        runs.append({"run_id": tid, "format": FORMAT,
                                     "source": f"{FORMAT}:{p}", "created_at": trows[0]["ts"],
                                     "attrs": meta[tid]})
            except UNEXPECTED as exc:  # a last-resort guard; specific checks come first
                quarantine.bad(unexpected_input(exc, [str(p)]))
            bar.update(1)
    return rows_to_log(rows, runs, tenant, quarantine)
