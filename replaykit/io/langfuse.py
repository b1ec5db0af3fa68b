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
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .._json import JSONDecodeError, args_hash, canonical_json, loads
from ..errors import LoadError
from ..eventlog.log import EventLog
from ._common import (
    UNEXPECTED,
    ErrorPolicy,
    Progress,
    Quarantine,
    expand_paths,
    keep_tenants,
    owner_and_filter,
    unexpected_input,
)
from ._platform import Item, dedupe, first_of, raw_of, records, sniff_records, trace_runs
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

_BAD_JSON: tuple[type[Exception], ...] = (*JSONDecodeError, ValueError)

_FINISH = {"stop": "stop", "end_turn": "stop", "tool_calls": "tool-calls",
           "tool_call": "tool-calls", "tool_use": "tool-calls", "function_call": "tool-calls",
           "length": "max-tokens", "max_tokens": "max-tokens"}


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


def _attributes(o: dict[str, Any]) -> dict[str, Any]:
    """The OpenTelemetry span attributes Langfuse keeps in ``metadata.attributes`` for an
    observation it ingested over OTLP (empty for SDK-native observations)."""
    meta = o.get("metadata")
    attrs = meta.get("attributes") if isinstance(meta, dict) else None
    return attrs if isinstance(attrs, dict) else {}


def _finish(o: dict[str, Any], failed: bool) -> str | None:
    """The finish reason: the output's ``finish_reason`` / ``stop_reason`` (or its first
    choice's, or LangChain's ``response_metadata.finish_reason``, or the last output message's
    in the GenAI ``{"role", "parts", "finish_reason"}`` shape), else the span attribute
    ``gen_ai.response.finish_reasons`` kept in ``metadata.attributes``."""
    if failed:
        return "error"
    out = o.get("output")
    fr: Any = None
    if isinstance(out, list) and out and isinstance(out[-1], dict):
        fr = out[-1].get("finish_reason")
    elif isinstance(out, dict):
        fr = out.get("finish_reason") or out.get("stop_reason")
        if not fr and isinstance(out.get("choices"), list) and out["choices"] and isinstance(
                out["choices"][0], dict):
            fr = out["choices"][0].get("finish_reason")
        if not fr and isinstance(out.get("response_metadata"), dict):
            fr = out["response_metadata"].get("finish_reason")
    if not isinstance(fr, str) or not fr:
        frs = _attributes(o).get("gen_ai.response.finish_reasons")
        fr = frs[0] if isinstance(frs, list) and frs else frs
    if isinstance(fr, str) and fr:
        return _FINISH.get(fr.lower(), fr.lower())
    return None


def _call_of(c: Any) -> tuple[str, str | None, Any] | None:
    """(id, name, arguments) of one tool call in any of the shapes generations record:
    GenAI parts (``type: tool_call``), OpenAI chat ``tool_calls`` (``function.name`` /
    ``.arguments``), LangChain (``name``, ``args``), the Responses API's ``function_call``
    items (``call_id``)."""
    if not isinstance(c, dict):
        return None
    f = c.get("function")
    fn: dict[str, Any] = f if isinstance(f, dict) else {}
    cid = c.get("call_id") if c.get("type") == "function_call" else c.get("id")
    if not isinstance(cid, str) or not cid:
        return None
    name = c.get("name", fn.get("name"))
    args = c.get("arguments", c.get("args", fn.get("arguments")))
    if isinstance(args, str) and args[:1] in "[{":
        try:
            args = loads(args)
        except _BAD_JSON:
            pass
    return cid, name if isinstance(name, str) else None, args


def _asked(value: Any) -> list[tuple[str, str | None, Any]]:
    """The tool calls a generation's output asks for (see :func:`_call_of`)."""
    found: list[Any] = []
    items = value if isinstance(value, list) else [value]
    for m in items:
        if not isinstance(m, dict):
            continue
        if m.get("type") == "function_call":
            found.append(m)
        for key in ("output", "parts", "tool_calls", "choices"):
            v = m.get(key)
            if key == "output" and isinstance(v, list):
                found.extend(i for i in v if isinstance(i, dict)
                             and i.get("type") == "function_call")
            elif key == "parts" and isinstance(v, list):
                found.extend(i for i in v if isinstance(i, dict) and i.get("type") == "tool_call")
            elif key == "tool_calls" and isinstance(v, list):
                found.extend(v)
            elif key == "choices" and isinstance(v, list):
                for ch in v:
                    msg = ch.get("message") if isinstance(ch, dict) else None
                    if isinstance(msg, dict) and isinstance(msg.get("tool_calls"), list):
                        found.extend(msg["tool_calls"])
        kw = m.get("additional_kwargs")
        if isinstance(kw, dict) and isinstance(kw.get("tool_calls"), list) \
                and not isinstance(m.get("tool_calls"), list):
            found.extend(kw["tool_calls"])
    out: list[tuple[str, str | None, Any]] = []
    for c in found:
        got = _call_of(c)
        if got is not None and got[0] not in {x[0] for x in out}:
            out.append(got)
    return out


def _answered(value: Any) -> list[tuple[str, Any]]:
    """(call id, result) of the tool results in a generation's input history: OpenAI
    ``role: tool`` messages (``tool_call_id``), GenAI ``tool_call_response`` parts, the
    Responses API's ``function_call_output`` items."""
    out: list[tuple[str, Any]] = []
    for m in value if isinstance(value, list) else []:
        if not isinstance(m, dict):
            continue
        if m.get("type") == "function_call_output" and isinstance(m.get("call_id"), str):
            out.append((m["call_id"], m.get("output")))
        elif m.get("role") == "tool" and isinstance(m.get("tool_call_id"), str):
            out.append((m["tool_call_id"], m.get("content")))
        parts = m.get("parts")
        for p in parts if isinstance(parts, list) else []:
            if isinstance(p, dict) and p.get("type") == "tool_call_response" \
                    and isinstance(p.get("id"), str):
                out.append((p["id"], p.get("response", p.get("result"))))
    return out


def _tool_links(recs: list[dict[str, Any]]) -> dict[int, str]:
    """The model call id each ``TOOL`` observation (by position in ``recs``, in time order)
    executes: its ``gen_ai.tool.call.id`` attribute, else the first call of its name that an
    earlier generation asked for and no other tool observation claimed (OpenInference tool
    spans carry no call id). Tools without either keep their observation id."""
    asked: list[tuple[str, str | None]] = []
    links: dict[int, str] = {}
    explicit = {str(_attributes(r).get("gen_ai.tool.call.id")) for r in recs
                if str(r.get("type") or "").upper() == "TOOL"
                and isinstance(_attributes(r).get("gen_ai.tool.call.id"), str)}
    claimed: set[str] = set(explicit)
    for k, r in enumerate(recs):
        otype = str(r.get("type") or "").upper()
        if otype == "GENERATION":
            asked.extend((cid, name) for cid, name, _ in _asked(r.get("output")))
        elif otype == "TOOL":
            cid = _attributes(r).get("gen_ai.tool.call.id")
            if isinstance(cid, str) and cid:
                links[k] = cid
                continue
            name = _tool_name(r)
            for c, n in asked:
                if c not in claimed and n == name:
                    links[k] = c
                    claimed.add(c)
                    break
    return links


def _tool_name(r: dict[str, Any]) -> str | None:
    """A tool observation's tool: the span's ``gen_ai.tool.name`` / ``tool.name`` attribute
    (pydantic-ai names the observation ``running tool: <name>``), else its name."""
    a = _attributes(r)
    for key in ("gen_ai.tool.name", "tool.name"):
        if isinstance(a.get(key), str) and a[key]:
            return str(a[key])
    return r.get("name") if isinstance(r.get("name"), str) else None


def _parts_text(msgs: list[Any]) -> str | None:
    """The text of GenAI ``{"role", "parts"}`` messages (``text`` parts' ``content``), or of
    Responses API output items (``message`` items' ``output_text`` content); None for a list
    of neither."""
    texts: list[str] = []
    seen = False
    for m in msgs:
        if not isinstance(m, dict):
            return None
        if isinstance(m.get("parts"), list):
            seen = True
            texts.extend(p["content"] for p in m["parts"] if isinstance(p, dict)
                         and p.get("type") == "text" and isinstance(p.get("content"), str))
        elif m.get("type") in ("message", "function_call", "reasoning") and "role" in m \
                or m.get("type") in ("function_call", "reasoning"):
            seen = True
            content = m.get("content")
            for c in content if isinstance(content, list) else []:
                if isinstance(c, dict) and c.get("type") in ("output_text", "text") \
                        and isinstance(c.get("text"), str):
                    texts.append(c["text"])
        else:
            return None
    return "\n".join(texts) if seen else None


def _text(v: Any) -> str | None:
    if isinstance(v, list) and (t := _parts_text(v)) is not None:
        return t
    if isinstance(v, dict) and v.get("object") == "response" and isinstance(v.get("output"),
                                                                             list):
        return _parts_text(v["output"])  # an OpenAI Responses API object
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


def _trace_rows(trace_id: str, recs: list[Item], quarantine: Quarantine) -> list[Row]:
    """The rows of one trace from its records (read from one file or several)."""

    def when(item: Item) -> tuple[int, str, int]:
        k, _, _, rec, _ = item
        if _is_trace(rec):
            return (0, "", k)
        return (1, _ts(first_of(rec, "startTime", "start_time")) or "~", k)

    rows: list[Row] = []
    step = 0
    ordered = sorted(recs, key=when)
    links = _tool_links([it[3] for it in ordered])
    covered = set(links.values())  # calls a TOOL observation records
    asked: dict[str, str | None] = {}  # calls given only in generation outputs -> tool name
    answered: set[str] = set()
    for k, (_, line, raw, rec, path) in enumerate(ordered):
        src = f"{FORMAT}:{path}"
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
                # results, in this generation's input, of calls only generations record
                for cid, res in _answered(rec.get("input")) if not failed else []:
                    if cid in asked and cid not in answered:
                        answered.add(cid)
                        rows.append({**base, "kind": "tool_result", "ref_id": cid,
                                     "tool_name": asked[cid], "turn": 1, "step": step - 1 or None,
                                     "event_id": None, "is_error": False,
                                     "text": _text(res) or (None if res is None or isinstance(
                                         res, str) else canonical_json(res)),
                                     "payload": payload_of({"part": "input_result", "id": cid,
                                                            "generation": oid, "output": res},
                                                           FORMAT, path, line)})
                rows.append({**base, "kind": "model_response", "ref_id": oid, "step": step,
                             "turn": 1, "finish": _finish(rec, failed) or "unknown",
                             "input_tokens": tokens(i, FORMAT, path, line, fld),
                             "output_tokens": tokens(o, FORMAT, path, line, fld),
                             "text": _text(rec.get("output")) if not failed else
                             first_of(rec, "statusMessage", "status_message"),
                             "payload": payload})
                # calls this generation asks for that no TOOL observation records
                for cid, tname, args in _asked(rec.get("output")) if not failed else []:
                    if cid in covered or cid in asked:
                        continue
                    asked[cid] = tname
                    args = args if args is not None else {}
                    rows.append({**base, "kind": "tool_call", "ref_id": cid,
                                 "tool_name": tname, "turn": 1, "step": step,
                                 "event_id": None, "ts": _ts(first_of(
                                     rec, "endTime", "end_time")) or base["ts"],
                                 "args_hash": args_hash(args), "text": canonical_json(args),
                                 "payload": payload_of({"part": "output_call", "id": cid,
                                                        "generation": oid, "name": tname,
                                                        "arguments": args},
                                                       FORMAT, path, line)})
            elif otype == "TOOL":
                args = rec.get("input") if rec.get("input") is not None else {}
                name = _tool_name(rec)
                oid = links.get(k, oid)
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
    owner: str | None = None,
    tenant_id: str | Sequence[str] | None = None,
    errors: ErrorPolicy = "raise",
    progress: bool | None = None,
) -> EventLog:
    """Load Langfuse exports (traces and observations): one replaykit run per trace.

    Args:
        owner: owner of the traces (the export records no tenant); required.
        tenant_id: keep only these tenants' rows (one id or a list; None: all), as
            in every reader: the rows are all ``owner``'s, so all of them or none.
        errors: ``"raise"`` (default) or ``"quarantine"``.
        progress: progress bar over files (None: when interactive).

    Raises:
        LoadError: ``bad_tenant``; under ``"raise"``: ``bad_json``, ``not_object``,
            ``bad_document``, ``bad_csv`` / ``bad_parquet``, ``missing_trace`` (an observation
            without ``traceId``), ``bad_tokens``, ``too_deep``, ``unreadable``,
            ``compressed``.
        FileNotFoundError: nothing matches ``path``.

    Example:
        >>> log = rk.read_langfuse("data/langfuse", owner="me")  # doctest: +SKIP
    """
    tenant, wanted = owner_and_filter(owner, tenant_id, fmt=FORMAT)
    quarantine = Quarantine(errors, tenant_id=tenant)
    files = expand_paths(path, patterns=_PATTERNS)
    rows: list[Row] = []
    runs: list[dict[str, Any]] = []
    # records of each trace across every file: a trace whose observations sit in several
    # files is one run, and a trace exported twice is read once (dedupe)
    traces: dict[str, list[Item]] = {}
    meta: dict[str, dict[str, Any]] = {}
    n = 0
    with Progress(len(files), desc="read_langfuse", unit="file", enabled=progress) as bar:
        for k, p in enumerate(files, start=1):
            bar.next_file(p.name, k, len(files))
            try:
                for line, raw, rec in records(p, FORMAT, quarantine, _unwrap):
                    n += 1
                    tid = rec.get("id") if _is_trace(rec) else first_of(rec, "traceId",
                                                                       "trace_id")
                    if not isinstance(tid, str) or not tid:
                        quarantine.bad(bad(FORMAT, p, line, "missing_trace",
                                           "is an observation without a string 'traceId'",
                                           field="traceId"), raw_of(raw, rec))
                        continue
                    traces.setdefault(tid, []).append((n, line, raw, rec, p))
                    m = meta.setdefault(tid, {"format": FORMAT, "file": str(p)})
                    if _is_trace(rec):
                        for key in ("name", "sessionId", "userId", "release", "version",
                                    "environment", "tags", "metadata"):
                            if rec.get(key) is not None:
                                m.setdefault(key, rec[key])
            except UNEXPECTED as exc:  # a last-resort guard; specific checks come first
                quarantine.bad(unexpected_input(exc, [str(p)]))
            bar.update(1)
    traces = dedupe(traces, _record_key, FORMAT, quarantine, "record")
    more, more_runs = trace_runs(traces, _trace_rows, meta, FORMAT, quarantine)
    rows.extend(more)
    runs.extend(more_runs)
    return keep_tenants(rows_to_log(rows, runs, tenant, quarantine), tenant, wanted)


def _record_key(rec: dict[str, Any]) -> Any:
    """What makes two records one: the trace record of a trace, an observation's id."""
    if _is_trace(rec):
        return "trace"
    oid = rec.get("id")
    return ("observation", oid) if isinstance(oid, str) and oid else None
