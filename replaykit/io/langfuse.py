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

import re
from pathlib import Path
from typing import Any

from .._base.json import args_hash, canonical_json
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
from ._messages import (
    decode_arguments,
    message_text,
    read_reply,
    result_text,
    results_in,
    text_or_json,
    tool_name,
)
from ._platform import Item, first_of, read_traces, sniff_records
from ._records import (
    Row,
    epoch_to_iso,
    guard,
    payload_of,
    rows_to_log,
    tokens,
    tool_rows,
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
    """(input, output, field) as recorded: ``usageDetails`` (or ``usage``), else the legacy
    ``promptTokens`` / ``completionTokens``. Langfuse's ``inputUsage`` / ``outputUsage`` are
    derived from ``usageDetails`` (0 when it is empty): read only when no usage object is
    exported, so a generation that recorded no usage has null tokens, not 0."""
    details = False
    for key in ("usageDetails", "usage_details", "usage"):
        u = o.get(key)
        if isinstance(u, dict):
            details = True
            for i, out in (("input", "output"), ("promptTokens", "completionTokens"),
                           ("input_tokens", "output_tokens"),
                           ("prompt_tokens", "completion_tokens")):
                if u.get(i) is not None or u.get(out) is not None:
                    return u.get(i), u.get(out), f"{key}.{i}"
    if details:
        return first_of(o, "promptTokens", "prompt_tokens"), first_of(
            o, "completionTokens", "completion_tokens"), "promptTokens"
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
        if not fr and isinstance(out.get("candidates"), list) and out["candidates"] and \
                isinstance(out["candidates"][0], dict):  # Gemini
            fr = out["candidates"][0].get("finish_reason", out["candidates"][0].get(
                "finishReason"))
    if not isinstance(fr, str) or not fr:
        frs = _attributes(o).get("gen_ai.response.finish_reasons")
        fr = frs[0] if isinstance(frs, list) and frs else frs
    if isinstance(fr, str) and fr:
        return _FINISH.get(fr.lower(), fr.lower())
    return None


#: prefix of the id given to a tool call its generation recorded without one
_NO_ID = "noid:"


def _asked(value: Any, oid: str | None) -> list[tuple[str, str | None, Any]]:
    """``(call id, tool name, arguments)`` of the tool calls a generation's output asks for,
    in any message shape (:func:`replaykit.io._messages.read_reply`); a call recorded without
    an id (Gemini ``function_call``) gets ``noid:<observation id>:<index>``."""
    out: list[tuple[str, str | None, Any]] = []
    for i, c in enumerate(read_reply(value).calls):
        cid = c.id if c.id is not None else f"{_NO_ID}{oid}:{i}"
        if cid not in {x[0] for x in out}:
            out.append((cid, c.name, c.arguments))
    return out


def _call_id_attr(r: dict[str, Any]) -> str | None:
    v = _attributes(r).get("gen_ai.tool.call.id")
    if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
        return str(v[-1])  # Agent Framework: [run id, call id]
    return v if isinstance(v, str) and v else None


def _is_tool(r: dict[str, Any]) -> bool:
    """A tool execution: a ``TOOL`` observation, or a ``SPAN`` whose attributes name a tool
    (``gen_ai.tool.name`` / ``tool.name`` / ``gen_ai.tool.call.id``: Koog's ``tool.<name>``
    and Agno's tool spans are ingested as spans)."""
    otype = str(r.get("type") or "").upper()
    if otype == "TOOL":
        return True
    a = _attributes(r)
    return otype == "SPAN" and any(isinstance(a.get(k), (str, list)) and a.get(k)
                                   for k in ("gen_ai.tool.name", "tool.name",
                                             "gen_ai.tool.call.id"))


def _tool_links(recs: list[dict[str, Any]], nested: set[int]
                ) -> tuple[dict[int, str], set[str]]:
    """The model call id each tool execution (by position in ``recs``, in time order)
    executes: its ``gen_ai.tool.call.id`` attribute, else the first call of its name that an
    earlier generation asked for and no other tool execution claimed (OpenInference tool
    spans carry no call id). Tools without either keep their observation id. Also returns
    the id-less calls (:data:`_NO_ID` ids) that a tool execution with its own id records."""
    asked: list[tuple[str, str | None]] = []
    links: dict[int, str] = {}
    aliases: set[str] = set()
    explicit = {c for r in recs if _is_tool(r) and (c := _call_id_attr(r)) is not None}
    claimed: set[str] = set(explicit)
    for k, r in enumerate(recs):
        otype = str(r.get("type") or "").upper()
        if otype == "GENERATION" and k not in nested:
            asked.extend((cid, name) for cid, name, _ in _asked(r.get("output"), r.get("id")))
        elif _is_tool(r):
            cid = _call_id_attr(r)
            name = _tool_name(r)
            if cid is not None:
                links[k] = cid
                # a call the generation recorded without an id (Gemini function_call) is
                # this execution when the tool span names the id: one call, not two
                for c, n in asked:
                    if c not in claimed and n == name and c.startswith(f"{_NO_ID}"):
                        claimed.add(c)
                        aliases.add(c)
                        break
                continue
            for c, n in asked:
                if c not in claimed and n == name:
                    links[k] = c
                    claimed.add(c)
                    break
    return links, aliases


def _tool_name(r: dict[str, Any]) -> str | None:
    """A tool observation's tool: the span's ``gen_ai.tool.name`` / ``tool.name`` attribute,
    else its name without an operation prefix (``execute_tool say_hello``, pydantic-ai's
    ``running tool: <name>``)."""
    a = _attributes(r)
    for key in ("gen_ai.tool.name", "tool.name"):
        if isinstance(a.get(key), str) and a[key]:
            return str(a[key])
    return tool_name(r.get("name"))


def _text(v: Any) -> str | None:
    """Text of a trace's input or a tool's output (:func:`~replaykit.io._messages.message_text`:
    JSON text decoded once, messages of any role, else the value as text)."""
    return message_text(v)


#: usage detail keys (Langfuse ``usageDetails``) -> the figure they hold. Langfuse's SDKs
#: split provider details out of ``input`` / ``output`` as ``input_<detail>`` /
#: ``output_<detail>`` keys and subtract them (LangChain handler, OpenAI integration);
#: Anthropic-style ``cache_*_input_tokens`` are recorded beside an uncached ``input``.
_CACHE_READ_KEYS = ("input_cache_read", "input_cached_tokens", "input_cached",
                    "cache_read_input_tokens", "prompt_details.cache_read",
                    "input_cache_read_tokens")
_CACHE_WRITE_KEYS = ("input_cache_creation", "input_cache_write", "input_cache_creation_tokens",
                     "cache_creation_input_tokens", "prompt_details.cache_write",
                     "prompt_details.cache_creation")
_REASONING_KEYS = ("output_reasoning", "output_reasoning_tokens", "completion_details.reasoning",
                   "reasoning_tokens")
_SEPARATE = ("cache_read_input_tokens", "cache_creation_input_tokens")


def _num(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v if isinstance(v, int) and v >= 0 else None


def _figures(o: dict[str, Any], i: Any, out: Any) -> tuple[Any, Any, dict[str, Any]]:
    """(input tokens, output tokens, figures) under replaykit's convention: ``input`` counts
    every prompt token (Langfuse's ``input`` plus the ``input_*`` details its SDKs subtracted
    and Anthropic's separate cache counts), ``output`` every generated token (plus the
    ``output_*`` details); the cache-read, cache-write and reasoning figures (null when not
    recorded)."""
    u = None
    for key in ("usageDetails", "usage_details", "usage"):
        if isinstance(o.get(key), dict):
            u = o[key]
            break
    figs: dict[str, Any] = {"cache_read_tokens": None, "cache_write_tokens": None,
                            "reasoning_tokens": None}
    out_doc = o.get("output")
    um = out_doc.get("usage_metadata") if isinstance(out_doc, dict) else None
    if u is None and isinstance(um, dict):  # LangChain's usage_metadata (totals + details)
        ind: dict[str, Any] = um["input_token_details"] if isinstance(
            um.get("input_token_details"), dict) else {}
        outd: dict[str, Any] = um["output_token_details"] if isinstance(
            um.get("output_token_details"), dict) else {}
        figs = {"cache_read_tokens": _num(ind.get("cache_read")),
                "cache_write_tokens": _num(ind.get("cache_creation")),
                "reasoning_tokens": _num(outd.get("reasoning"))}
        return i, out, figs
    if u is None or not isinstance(u.get("input", u.get("output")), int):
        return i, out, figs
    for name, keys in (("cache_read_tokens", _CACHE_READ_KEYS),
                       ("cache_write_tokens", _CACHE_WRITE_KEYS),
                       ("reasoning_tokens", _REASONING_KEYS)):
        for k in keys:
            if _num(u.get(k)) is not None:
                figs[name] = _num(u[k])
                break
    ni, no = _num(i), _num(out)
    if ni is not None:
        i = ni + sum(_num(v) or 0 for k, v in u.items() if (
            k.startswith("input_") and not k.startswith("input_modality")) or k in _SEPARATE)
    if no is not None:
        out = no + sum(_num(v) or 0 for k, v in u.items() if k.startswith("output_")
                              and not k.startswith("output_modality"))
    return i, out, figs


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
    by_id = {it[3].get("id"): it[3] for it in ordered if isinstance(it[3].get("id"), str)}
    # a generation inside a generation is the same model call instrumented twice (Agno's
    # OpenAIChat.invoke around the OpenAI instrumentation's chat): the outer one is the call
    nested = {k for k, it in enumerate(ordered)
              if str(it[3].get("type") or "").upper() == "GENERATION"
              and _inside_generation(it[3], by_id)}
    events, streamed = _emitter_events([it[3] for it in ordered])
    nested |= events
    links, aliases = _tool_links([it[3] for it in ordered], nested)
    covered = set(links.values()) | aliases  # calls a tool execution records
    asked: dict[str, tuple[str | None, Any]] = {}  # calls generations ask for -> (name, args)
    answered: set[str] = set()
    for k, (_, line, raw, rec, path) in enumerate(ordered):
        src = f"{FORMAT}:{path}"
        with guard(quarantine, FORMAT, path, line, raw, rec):  # per record
            oid = rec.get("id") if isinstance(rec.get("id"), str) else None
            otype = str(rec.get("type") or "SPAN").upper()
            doc = {key: v for key, v in rec.items() if key != "_record"}
            i = o = fld = None
            if otype == "GENERATION" and k not in nested and not _is_trace(rec):
                i, o, fld = _usage(rec)
                i, o, figs = _figures(rec, i, o)
                if any(v is not None for v in figs.values()):
                    doc["replaykitUsage"] = figs  # what calls_df reads (FIELD_PATHS)
            payload = payload_of(doc, FORMAT, path, line)
            if _is_trace(rec):
                rows.append({"run_id": trace_id, "type": "trace", "kind": "session",
                             "ts": _ts(first_of(rec, "timestamp", "createdAt", "created_at")),
                             "event_id": oid, "text": _text(rec.get("input")),
                             "payload": payload, "source": src, "source_line": line,
                             "is_error": False})
                continue
            name = rec.get("name") if isinstance(rec.get("name"), str) else None
            failed = str(rec.get("level") or "").upper() == "ERROR"
            base = {"run_id": trace_id, "ts": _ts(first_of(rec, "startTime", "start_time")),
                    "event_id": oid, "source": src, "source_line": line,
                    "is_error": failed, "type": otype}
            if otype == "GENERATION" and k not in nested:
                step += 1
                # results, in this generation's input, of calls only generations record
                for cid, _, res in results_in(rec.get("input")) if not failed else []:
                    if cid in asked and cid not in covered and cid not in answered:
                        answered.add(cid)
                        rows.append({**base, "kind": "tool_result", "ref_id": cid,
                                     "tool_name": asked[cid][0], "turn": 1,
                                     "step": step - 1 or None,
                                     "event_id": None, "is_error": False,
                                     "text": result_text(res),
                                     "payload": payload_of({"part": "input_result", "id": cid,
                                                            "generation": oid, "output": res},
                                                           FORMAT, path, line)})
                reply = read_reply(rec.get("output"))
                if reply.reasoning is not None and not failed:
                    rows.append({**base, "kind": "model_chunk", "chunk_type": "reasoning",
                                 "ref_id": oid, "step": step, "turn": 1, "event_id": None,
                                 "text": reply.reasoning,
                                 "payload": payload_of({"part": "reasoning", "generation": oid},
                                                       FORMAT, path, line)})
                if not reply.known and k in streamed:  # BeeAI: the text is in .success-N
                    reply.text, reply.known = streamed[k], True
                rows.append({**base, "kind": "model_response", "ref_id": oid, "step": step,
                             "turn": 1, "finish": _finish(rec, failed) or "unknown",
                             "input_tokens": tokens(i, FORMAT, path, line, fld or "usage"),
                             "output_tokens": tokens(o, FORMAT, path, line, fld or "usage"),
                             "text": (reply.text if reply.known else text_or_json(
                                 rec.get("output"))) if not failed else
                             first_of(rec, "statusMessage", "status_message"),
                             "payload": payload})
                # calls this generation asks for that no tool execution records
                for cid, tname, args in _asked(rec.get("output"), oid) if not failed else []:
                    if cid in asked:
                        continue
                    asked[cid] = (tname, args)
                    if cid in covered:
                        continue
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
            elif k in links or otype == "TOOL":
                oid = links.get(k, oid)
                args = decode_arguments(rec.get("input"))
                if args is None and oid in asked:  # the span keeps no input: the call's
                    args = asked[oid][1]
                name = _tool_name(rec)
                end = first_of(rec, "endTime", "end_time")
                result = {"id": oid, "part": "result", "name": name, "endTime": end,
                          "output": rec.get("output"), "level": rec.get("level"),
                          "statusMessage": first_of(rec, "statusMessage", "status_message")}
                rows.extend(tool_rows(
                    {**base, "turn": 1}, oid, name, args, step=step or None, payload=payload,
                    result=result, ended=_ts(end), text=result["statusMessage"] if failed
                    else result_text(rec.get("output")), fmt=FORMAT, path=path, line=line))
            else:
                kind = "error" if failed and otype == "EVENT" else "other"
                rows.append({**base, "kind": kind, "turn": 1, "step": step or None,
                             "text": name, "payload": payload})
    return rows


_EMITTER = re.compile(r"^(?P<base>.+)\.(?P<event>start|success|finish|error)-(?P<n>\d+)$")
_OI_OUT = re.compile(r"^llm\.output_messages\.(\d+)\.message\.content$")


def _emitter_events(recs: list[dict[str, Any]]) -> tuple[set[int], dict[int, str]]:
    """BeeAI's OpenInference instrumentation exports its emitter's events as observations:
    one model call is ``<name>.start-<n>`` plus ``<name>.success-<n>`` / ``.finish-<n>`` /
    ``.error-<n>`` GENERATIONs. Returns the positions of those follow-up events (not calls of
    their own) and, per ``start`` position, the text its ``success`` event streamed
    (``llm.output_messages.<i>.message.content`` attributes, one per delta, joined in order)."""
    starts: dict[tuple[str, str], int] = {}
    for k, r in enumerate(recs):
        m = _EMITTER.match(str(r.get("name") or "")) \
            if str(r.get("type") or "").upper() == "GENERATION" else None
        if m and m["event"] == "start":
            starts[(m["base"], m["n"])] = k
    events: set[int] = set()
    streamed: dict[int, str] = {}
    for k, r in enumerate(recs):
        m = _EMITTER.match(str(r.get("name") or "")) \
            if str(r.get("type") or "").upper() == "GENERATION" else None
        if not m or m["event"] == "start" or (m["base"], m["n"]) not in starts:
            continue
        events.add(k)
        if m["event"] == "success":
            parts = sorted((int(hit.group(1)), v) for key, v in _attributes(r).items()
                           if (hit := _OI_OUT.match(key)) is not None and isinstance(v, str))
            if parts:
                streamed[starts[(m["base"], m["n"])]] = "".join(v for _, v in parts)
    return events, streamed


def _inside_generation(rec: dict[str, Any], by_id: dict[Any, dict[str, Any]]) -> bool:
    """Whether an ancestor of ``rec`` (by ``parentObservationId``) is a GENERATION."""
    seen: set[Any] = set()
    pid = first_of(rec, "parentObservationId", "parent_observation_id")
    while isinstance(pid, str) and pid in by_id and pid not in seen:
        seen.add(pid)
        parent = by_id[pid]
        if str(parent.get("type") or "").upper() == "GENERATION":
            return True
        pid = first_of(parent, "parentObservationId", "parent_observation_id")
    return False


def read_langfuse(path: Paths, *, owner: str | None = None, tenant_id: Tenants = None,
                  errors: ErrorPolicy = "raise", progress: bool | None = None) -> EventLog:
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
    # records of each trace across every file: a trace whose observations sit in several
    # files is one run, and a trace exported twice is read once (dedupe)
    rows, runs = read_traces(files, FORMAT, quarantine, progress=progress, unwrap=_unwrap,
                             trace_of=_trace_of, note=_note, key_of=_record_key, what="record",
                             missing=("is an observation without a string 'traceId'",
                                      "traceId"), trace_rows=_trace_rows)
    return keep_tenants(rows_to_log(rows, runs, tenant, quarantine), tenant, wanted)


def _trace_of(rec: dict[str, Any]) -> Any:
    """The trace a record belongs to: a trace record's ``id``, an observation's ``traceId``."""
    return rec.get("id") if _is_trace(rec) else first_of(rec, "traceId", "trace_id")


def _note(rec: dict[str, Any], attrs: dict[str, Any]) -> None:
    """A trace record's fields, in its run's attrs."""
    if _is_trace(rec):
        for key in ("name", "sessionId", "userId", "release", "version", "environment",
                    "tags", "metadata"):
            if rec.get(key) is not None:
                attrs.setdefault(key, rec[key])


def _record_key(rec: dict[str, Any]) -> Any:
    """What makes two records one: the trace record of a trace, an observation's id."""
    if _is_trace(rec):
        return "trace"
    oid = rec.get("id")
    return ("observation", oid) if isinstance(oid, str) and oid else None
