"""Loader for OpenTelemetry GenAI traces of every generation: OTLP/JSON or protobuf, spans
and log records.

A file holds one ``ExportTraceServiceRequest`` (``{"resourceSpans": [...]}``) or
``ExportLogsServiceRequest`` (``{"resourceLogs": [...]}``) as JSON, one such document per line
(``.jsonl``/``.ndjson``, the collector's file exporter), or OTLP protobuf (``.pb`` and
friends: one message, or length-prefixed ones; ``_proto``). Log records join the span their
trace and span id name. Each span becomes an event; within a run, events are ordered by time.
The run is the trace's ``gen_ai.conversation.id`` (the first one set on any of its spans) or
else the trace id.

GenAI attributes fill the typed columns (operation ``gen_ai.operation.name``: ``chat`` /
``text_completion`` / ``generate_content`` -> ``model_response``; ``execute_tool`` -> a
``tool_call`` row at the span's start and a ``tool_result`` row at its end; ``invoke_agent`` /
``create_agent`` / ``invoke_workflow`` -> ``session`` for a trace's root, else
``subagent_start`` + ``subagent_end``); every attribute is kept in the payload. Message content
is read from whichever form a generation wrote (``_forms``: current attributes,
operation-details events, ``gen_ai.prompt`` / ``gen_ai.completion``, numbered attributes,
per-message span events or log records; OpenInference's flattened attributes here). Spans
recorded without content capture are flagged ``"replayable": false`` with the missing
attributes listed -- never guessed -- and the run gets ``replayable: false`` in
``log.runs.attrs``. One tool execution is one call row and one result row per run, whichever
of its span or message forms carry it. The same span read twice is loaded once.
Field-by-field mapping: ``docs/formats/otel.md``.
"""

from __future__ import annotations

import re
import warnings
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ..._base.json import JSONDecodeError, args_hash, canonical_json, loads
from ...errors import LoadError
from ...eventlog.log import RUNS_SCHEMA, EventLog
from ...schema import empty_events, events_table
from .._common import (
    UNEXPECTED,
    ErrorPolicy,
    Paths,
    Progress,
    Quarantine,
    Tenants,
    compressed,
    expand_paths,
    iter_lines,
    keep_tenants,
    owner_and_filter,
    unexpected_input,
    unreadable,
)
from .._messages import read_reply, tool_name
from ._decode import (
    _log_record,
    _logs_of,
    _loose_text,
    _maybe_json,
    _scalar_text,
    _span_record,
    _spans_of,
    _token_count,
)
from ._forms import content as _content
from ._forms import is_genai_event as _is_genai_event
from ._nativepath import Records as _Records
from ._nativepath import native_documents as _native_scan
from ._nativepath import use_native as _use_native
from ._proto import SUFFIXES as PROTO_SUFFIXES
from ._proto import documents as _proto_documents
from ._proto import sniff as _proto_sniff

_BAD_JSON: tuple[type[Exception], ...] = (*JSONDecodeError, ValueError)

__all__ = ["FORMAT", "MODEL_OPERATIONS", "PROTO_SUFFIXES", "DuplicateSpanWarning", "read_otel",
           "sniff"]

FORMAT = "otel"
_PATTERNS = ("*.json", "*.jsonl", "*.ndjson", *(f"*{x}" for x in PROTO_SUFFIXES))
_LINE_SUFFIXES = (".jsonl", ".ndjson")
_PROTO_SUFFIXES = PROTO_SUFFIXES  # file endings read as OTLP protobuf (read_events too)
_HEAD_RE = re.compile(rb'^\s*\{\s*"resource_?([sS]pans|[lL]ogs)"\s*:')

#: ``gen_ai.operation.name`` values that are one model call.
MODEL_OPERATIONS: tuple[str, ...] = ("chat", "text_completion", "generate_content")

#: ``gen_ai.response.finish_reasons`` values -> replaykit ``finish`` (looked up lower-cased).
#: The semantic conventions' FinishReason values (``stop``, ``length``, ``content_filter``,
#: ``tool_call``, ``error``) and the provider spellings instrumentations pass through
#: (OpenAI ``tool_calls``/``function_call``, Anthropic ``end_turn``/``stop_sequence``/
#: ``tool_use``/``max_tokens``/``refusal``, Gemini ``STOP``/``MAX_TOKENS``/``SAFETY``/
#: ``RECITATION``, Bedrock ``guardrail_intervened``/``content_filtered``). Any other value is
#: kept as written.
FINISH: dict[str, str] = {
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_call": "tool-calls",
    "tool_calls": "tool-calls",
    "tool_use": "tool-calls",
    "function_call": "tool-calls",
    "length": "max-tokens",
    "max_tokens": "max-tokens",
    "model_length": "max-tokens",
    "content_filter": "content-filter",
    "content_filtered": "content-filter",
    "refusal": "content-filter",
    "safety": "content-filter",
    "recitation": "content-filter",
    "guardrail_intervened": "content-filter",
    "error": "error",
}


class DuplicateSpanWarning(UserWarning):
    """The same span (trace id, span id, identical content) was read more than once.

    Overlapping exports of one trace are common (a collector file exporter and a manual
    export, copied files): each span is loaded once; the warning names the files.
    """



def sniff(path: Path) -> str | None:
    """None when ``path`` looks like an OTLP trace or log export, otherwise why it does not.

    OTLP/JSON: the file (or a ``.jsonl`` file's first line) must open with
    ``{"resourceSpans":`` or ``{"resourceLogs":``. OTLP protobuf (``.pb``, ``.binpb``,
    ``.otlp``, ``.protobuf``): a message's first field, or a length prefix before it.

    >>> sniff(Path("traces.json"))  # doctest: +SKIP
    """
    p = Path(path)
    if p.suffix.lower() in PROTO_SUFFIXES:
        return _proto_sniff(p)
    if p.suffix.lower() not in (".json", ".jsonl", ".ndjson"):
        return (f"extension {p.suffix or '(none)'!r} is not .json/.jsonl/.ndjson or an OTLP "
                "protobuf file's")
    try:
        with open(p, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return "cannot be read"
    if _HEAD_RE.match(head.lstrip(b"\xef\xbb\xbf")) is None:
        return ('does not open with {"resourceSpans": ...} or {"resourceLogs": ...} (an '
                "OTLP/JSON trace or log export)")
    return None


# ------------------------------------------------------------------------------------ mapping


_OI_KIND = "openinference.span.kind"
#: OpenInference span kinds -> the GenAI operation they stand for.
_OI_OPS = {"LLM": "chat", "TOOL": "execute_tool", "AGENT": "invoke_agent"}
_OI_MSG = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(.+)$")
_OI_TOOL_CALL = re.compile(r"^tool_calls\.(\d+)\.tool_call\.(.+)$")


def _view(rec: dict[str, Any]) -> dict[str, Any]:
    """What replaykit reads from a span, in GenAI semantic-convention terms; raises ValueError.

    Producers write the same facts under different names: the GenAI conventions
    (``gen_ai.*``; OpenTelemetry's own and OpenLLMetry's OpenAI instrumentations, pydantic-ai
    from format version 3), pydantic-ai's older format (tool ``tool_arguments`` /
    ``tool_response``) and OpenInference (``openinference.span.kind``, ``llm.*``, ``tool.*``,
    ``input.value`` / ``output.value``; e.g. the OpenAI Agents SDK instrumentation).
    """
    a = rec["attributes"]
    op = a.get("gen_ai.operation.name")
    v: dict[str, Any] = {"op": op}
    if op is None and isinstance(a.get(_OI_KIND), str):
        v["op"] = _OI_OPS.get(a[_OI_KIND].upper())
        msgs = _oi_messages(a)
        v.update(
            tool_name=_scalar_text(a.get("tool.name"), "tool.name"),
            call_id=_scalar_text(a.get("tool_call.id", a.get("tool.call_id")), "tool_call.id"),
            args=a.get("input.value"), result=a.get("output.value"),
            input_tokens=_token_count(a.get("llm.token_count.prompt"), "llm.token_count.prompt"),
            output_tokens=_token_count(a.get("llm.token_count.completion"),
                                       "llm.token_count.completion"),
            # llm.finish_reason: newer OpenInference instrumentations (the OpenAI one)
            reasons=None if a.get("llm.finish_reason") is None else [a["llm.finish_reason"]],
            out=msgs["output"] or None, inp=msgs["input"] or None,
            raw_out=a.get("output.value") if a.get("output.mime_type") != "text/plain"
            or not msgs["output"] else None,
            has_out=bool(msgs["output"]) or a.get("output.value") is not None,
            has_in=bool(msgs["input"]) or a.get("input.value") is not None,
            names=("llm.output_messages", "llm.input_messages", "input.value", "output.value"),
            agent_id=None)
        return v
    if op is None and isinstance(a.get("ai.operationId"), str):
        vercel = _vercel_view(a)
        if vercel is not None:
            return vercel
    found = _content(a, rec["events"] + rec.get("logs", []))
    args = a.get("gen_ai.tool.call.arguments")
    result = a.get("gen_ai.tool.call.result")
    tokens_in = _first(a, _INPUT_TOKENS)
    tokens_out = _first(a, _OUTPUT_TOKENS)
    if v["op"] is None:  # older OpenLLMetry / Traceloop spans name the operation otherwise
        v["op"] = _legacy_op(a)
    v.update(
        tool_name=tool_name(_scalar_text(a.get("gen_ai.tool.name", a.get(
            "traceloop.entity.name") if v["op"] == "execute_tool" else None),
            "gen_ai.tool.name")),
        call_id=_scalar_text(a.get("gen_ai.tool.call.id"), "gen_ai.tool.call.id"),
        # pydantic-ai's format versions 1 and 2 keep them as tool_arguments / tool_response
        args=args if args is not None else a.get("tool_arguments", a.get(
            "traceloop.entity.input") if v["op"] == "execute_tool" else None),
        result=result if result is not None else a.get("tool_response", a.get(
            "traceloop.entity.output") if v["op"] == "execute_tool" else None),
        input_tokens=_token_count(tokens_in[1], tokens_in[0]),
        output_tokens=_token_count(tokens_out[1], tokens_out[0]),
        reasons=found["reasons"], out=found["out"], inp=found["inp"],
        has_out=found["out"] is not None, has_in=found["inp"] is not None,
        forms=found["forms"], system=found["system"], tool_defs=found["tools"],
        names=("gen_ai.output.messages", "gen_ai.input.messages", "gen_ai.tool.call.arguments",
               "gen_ai.tool.call.result"),
        agent_id=_scalar_text(a.get("gen_ai.agent.id"), "gen_ai.agent.id"))
    return v


#: Vercel AI SDK ``ai.operationId`` values that are one model call (the provider request)
_VERCEL_CALLS = ("ai.generateText.doGenerate", "ai.streamText.doStream",
                 "ai.generateObject.doGenerate", "ai.streamObject.doStream")
#: the SDK call around them (a unit of agent work: a session at a trace's root)
_VERCEL_RUNS = ("ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject")


def _vercel_view(a: dict[str, Any]) -> dict[str, Any] | None:
    """A Vercel AI SDK span (``ai.operationId``; no ``gen_ai.operation.name``) in GenAI terms:
    ``ai.*.doGenerate`` / ``doStream`` is a model call (``ai.response.text`` /
    ``.toolCalls`` / ``.reasoning``, ``ai.usage.*`` or ``gen_ai.usage.*``), ``ai.toolCall`` a
    tool execution (``ai.toolCall.name`` / ``.id`` / ``.args`` or ``.input`` / ``.result``
    or ``.output``), ``ai.generateText`` & co. the call around them; None for other spans."""
    op_id = a["ai.operationId"]
    names = ("ai.response.text", "ai.prompt.messages", "ai.toolCall.args",
             "ai.toolCall.result")
    base: dict[str, Any] = {"tool_name": None, "call_id": None, "args": None, "result": None,
                            "input_tokens": None, "output_tokens": None, "reasons": None,
                            "out": None, "inp": None, "has_out": False, "has_in": False,
                            "names": names, "agent_id": None}
    if op_id == "ai.toolCall":
        args = a.get("ai.toolCall.args", a.get("ai.toolCall.input"))
        return {**base, "op": "execute_tool",
                "tool_name": _scalar_text(a.get("ai.toolCall.name"), "ai.toolCall.name"),
                "call_id": _scalar_text(a.get("ai.toolCall.id"), "ai.toolCall.id"),
                "args": args, "result": a.get("ai.toolCall.result", a.get(
                    "ai.toolCall.output"))}
    if op_id in _VERCEL_RUNS:
        return {**base, "op": "invoke_workflow"}
    if op_id not in _VERCEL_CALLS:
        return None
    reply = read_reply({k: v for k, v in a.items() if k.startswith("ai.response.")})
    parts: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        parts.append({"type": "reasoning", "content": reply.reasoning})
    if reply.text:
        parts.append({"type": "text", "content": reply.text})
    parts.extend({"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments}
                 for c in reply.calls)
    has_out = any(k in a for k in ("ai.response.text", "ai.response.toolCalls",
                                   "ai.response.object"))
    prompt = a.get("ai.prompt.messages")
    inp = _content({"gen_ai.prompt": prompt}, [])["inp"] if prompt is not None else None
    tin = _first(a, ("gen_ai.usage.input_tokens", "ai.usage.inputTokens",
                     "ai.usage.promptTokens"))
    tout = _first(a, ("gen_ai.usage.output_tokens", "ai.usage.outputTokens",
                      "ai.usage.completionTokens"))
    reasons = a.get("gen_ai.response.finish_reasons", a.get("ai.response.finishReason"))
    return {**base, "op": "chat", "out": [{"role": "assistant", "parts": parts}] if has_out
            else None, "inp": inp, "has_out": has_out, "has_in": inp is not None,
            "input_tokens": _token_count(tin[1], tin[0]),
            "output_tokens": _token_count(tout[1], tout[0]),
            "reasons": reasons if isinstance(reasons, list) else [reasons]
            if reasons is not None else None, "forms": ["vercel"]}


#: token counts under each generation's name (first present wins)
_INPUT_TOKENS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens",
                 "llm.usage.prompt_tokens")
_OUTPUT_TOKENS = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens",
                  "llm.usage.completion_tokens")
#: OpenLLMetry's ``llm.request.type`` / Traceloop's ``traceloop.span.kind`` -> operation
_LEGACY_OPS = {"chat": "chat", "completion": "text_completion", "tool": "execute_tool",
               "agent": "invoke_agent", "workflow": "invoke_workflow"}


def _first(a: dict[str, Any], names: tuple[str, ...]) -> tuple[str, Any]:
    for n in names:
        if a.get(n) is not None:
            return n, a[n]
    return names[0], None


def _legacy_op(a: dict[str, Any]) -> str | None:
    for key in ("llm.request.type", "traceloop.span.kind"):
        got = a.get(key)
        if isinstance(got, str) and got.lower() in _LEGACY_OPS:
            return _LEGACY_OPS[got.lower()]
    return None


def _oi_messages(a: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """OpenInference's flattened ``llm.{input,output}_messages.N.message.*`` attributes as
    GenAI-convention messages (``role``, ``parts`` of text / tool_call / tool_call_response)."""
    found: dict[str, dict[int, dict[str, Any]]] = {"input": {}, "output": {}}
    for key, value in a.items():
        m = _OI_MSG.match(key)
        if m is None:
            continue
        msg = found[m.group(1)].setdefault(int(m.group(2)), {"calls": {}})
        rest = m.group(3)
        tc = _OI_TOOL_CALL.match(rest)
        if tc is not None:
            msg["calls"].setdefault(int(tc.group(1)), {})[tc.group(2)] = value
        else:
            msg[rest] = value
    out: dict[str, list[dict[str, Any]]] = {"input": [], "output": []}
    for side, msgs in found.items():
        for _, msg in sorted(msgs.items()):
            parts: list[dict[str, Any]] = []
            if msg.get("role") == "tool" and msg.get("tool_call_id") is not None:
                parts.append({"type": "tool_call_response", "id": msg["tool_call_id"],
                              "response": msg.get("content")})
            elif msg.get("content") is not None:
                parts.append({"type": "text", "content": msg["content"]})
            for _, c in sorted(msg["calls"].items()):
                parts.append({"type": "tool_call", "id": c.get("id"),
                              "name": c.get("function.name"),
                              "arguments": c.get("function.arguments")})
            out[side].append({"role": msg.get("role"), "parts": parts})
    return out


def _parts(messages: Any, kind: str) -> list[dict[str, Any]]:
    """The message parts of one ``type`` (GenAI-convention message shape)."""
    if not isinstance(messages, list):
        return []
    return [p for m in messages if isinstance(m, dict) and isinstance(m.get("parts"), list)
            for p in m["parts"] if isinstance(p, dict) and p.get("type") == kind]


def _call_rows(parts: list[dict[str, Any]], base: dict[str, Any], t: Any, covered: set[str],
               asked: set[str], **flags: Any) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``(row, part)`` of each ``tool_call`` message part whose call no tool span records
    (``covered``) and no earlier row gave (``asked``, updated here): a ``tool_call`` row at
    sort time ``t`` (``flags``: extra columns, e.g. ``_input`` for the input history's)."""
    out: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for part in parts:
        cid = _loose_text(part.get("id"))
        if cid is None or cid in covered or cid in asked:
            continue
        asked.add(cid)
        args = part.get("arguments")
        parsed, args_text = _maybe_json(args)
        out.append(({**base, "type": "gen_ai.tool_call", "kind": "tool_call", "_t": t, **flags,
                     "ref_id": cid, "tool_name": _loose_text(part.get("name")),
                     "text": args_text,
                     "args_hash": args_hash(parsed) if args is not None else None}, part))
    return out


def _rows_of_span(rec: dict[str, Any], v: dict[str, Any], root: bool,
                  covered: set[str], answered: set[str], asked: set[str]
                  ) -> list[dict[str, Any]]:
    """Canonical rows (without run/seq) of one span; each has its sort time ``_t``.

    ``covered``: tool call ids that have an execute_tool span of their own; ``answered``:
    call ids whose result a message already gave (updated here), so a tool result repeated in
    every later call's input history is one row; ``asked``: the same for tool calls given in
    output messages (one call row per id and run).
    """
    a = rec["attributes"]
    op = v["op"]
    err = rec["status"]["code"] == 2 or "error.type" in a
    start, end = rec["startTimeUnixNano"], rec["endTimeUnixNano"]
    base = {"type": op or rec["name"] or "span", "event_id": rec["spanId"], "is_error": False}
    missing: list[str] = []
    rows: list[dict[str, Any]] = []
    extra: list[tuple[dict[str, Any], dict[str, Any]]] = []  # (row, message part)
    if op in MODEL_OPERATIONS:
        if not v["has_out"]:
            missing.append(v["names"][0])
        if not v["has_in"]:
            missing.append(v["names"][1])
        finish: str | None = "error" if err else _finish(v["reasons"])
        out = v["out"]
        reply = read_reply(out if out is not None else v.get("raw_out"))
        text = reply.text if reply.known else (out if isinstance(out, str) else None)
        # tool calls in the history the model was given, when nothing before recorded them
        # (the span that asked for them was not captured, or sits in an unread trace)
        extra.extend(_call_rows(_parts(v["inp"], "tool_call"), base, start, covered, asked,
                                _input=True))
        # tool results the model was given, first seen here, with no tool span of their own
        for part in _parts(v["inp"], "tool_call_response"):
            cid = _loose_text(part.get("id"))
            if cid is None or cid in covered or cid in answered:
                continue
            answered.add(cid)
            res = part.get("response", part.get("result"))
            extra.append(({**base, "type": "gen_ai.tool_call_response", "kind": "tool_result",
                           "_t": start, "ref_id": cid, "tool_name": _loose_text(part.get("name")),
                           "text": _maybe_json(res)[1]}, part))
        # replaykit's own export keeps the call's id and whether it finished
        ref = _scalar_text(a.get("replaykit.ref_id"), "replaykit.ref_id") or rec["spanId"]
        if a.get("replaykit.call.finished") is False and not err:
            finish = None
        if reply.reasoning is not None and not err:
            extra.append(({**base, "type": "gen_ai.reasoning", "kind": "model_chunk",
                           "chunk_type": "reasoning", "_t": end, "_reasoning": True,
                           "ref_id": ref, "text": reply.reasoning}, {"type": "reasoning"}))
        rows.append({**base, "kind": "model_response", "_t": end, "ref_id": ref,
                     "finish": finish, "is_error": err, "input_tokens": v["input_tokens"],
                     "output_tokens": v["output_tokens"], "text": text})
        # tool calls the model asked for, when no tool span records them
        extra.extend(_call_rows(_parts(out, "tool_call"), base, end, covered, asked))
    elif op == "execute_tool":
        call_id = v["call_id"] or rec["spanId"]
        tool = v["tool_name"]
        args, result = v["args"], v["result"]
        no_result = a.get("replaykit.tool.has_result") is False  # a call that never returned
        if args is None:
            missing.append(v["names"][2])
        if result is None and not no_result:
            missing.append(v["names"][3])
        parsed_args, args_text = _maybe_json(args)
        kept_hash = a.get("replaykit.args_hash")  # replaykit's export: the source's hash
        rows.append({**base, "kind": "tool_call", "_t": start, "ref_id": call_id,
                     "tool_name": tool, "text": args_text,
                     "args_hash": kept_hash if isinstance(kept_hash, str) else
                     args_hash(parsed_args) if args is not None else None})
        _, result_text = _maybe_json(result)
        if not no_result:
            rows.append({**base, "type": "execute_tool.result", "kind": "tool_result",
                         "_t": end, "ref_id": call_id, "tool_name": tool, "is_error": err,
                         "text": result_text if result is not None
                         else rec["status"]["message"]})
    elif op in _AGENT_OPERATIONS and not root:
        ref = v["agent_id"] or rec["spanId"]
        rows.append({**base, "kind": "subagent_start", "_t": start, "ref_id": ref})
        rows.append({**base, "type": f"{op}.end", "kind": "subagent_end", "_t": end,
                     "ref_id": ref, "is_error": err})
    else:
        kind = "session" if op in _AGENT_OPERATIONS else "other"
        rows.append({**base, "kind": "error" if err and kind == "other" else kind, "_t": start,
                     "is_error": err})
    payload = {k: val for k, val in rec.items() if k != "_view"}
    payload["replayable"] = not missing
    genai = _genai_summary(a, v)
    if "usage" in genai:  # where calls_df reads cache tokens of every format
        payload["usage"] = genai.pop("usage")
    if genai:
        payload["genai"] = genai
    if missing:
        payload["missingContent"] = missing
    text_payload = canonical_json(payload)
    for i, r in enumerate(rows):
        r["payload"] = text_payload if i == 0 else canonical_json(
            {"spanId": rec["spanId"], "part": "end", "of": r["type"],
             "replayable": not missing})
    for r, part in extra:
        r["payload"] = canonical_json({"spanId": rec["spanId"], "part": "message",
                                       "of": rows[0]["type"], "messagePart": part,
                                       "replayable": not missing})
    # a result row goes before the span's own rows (it is input), a call row after them
    # input (history) rows first: the calls, then their results; the output calls after
    inputs = [r for r, _ in extra if r.get("_input")]
    results = [r for r, _ in extra if r["kind"] == "tool_result"]
    thoughts = [r for r, _ in extra if r.pop("_reasoning", False)]
    outputs = [r for r, _ in extra if r["kind"] == "tool_call" and not r.get("_input")]
    rows = inputs + results + thoughts + rows + outputs
    for r in inputs:
        del r["_input"]
    for r in rows:
        r["_start"] = start
        r["_replayable"] = not missing
    return rows


#: operations that are a unit of agent work: the run's session at a trace's root, else a
#: subagent (start and end rows)
_AGENT_OPERATIONS = ("invoke_agent", "create_agent", "invoke_workflow")
_CACHE_READ = ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens",
               "gen_ai.usage.cache_read_tokens", "gen_ai.usage.cached_tokens",
               "llm.token_count.prompt_details.cache_read",
               "ai.usage.cachedInputTokens")
_CACHE_WRITE = ("gen_ai.usage.cache_creation.input_tokens",
                "gen_ai.usage.cache_creation_input_tokens",
                "gen_ai.usage.cache_write.input_tokens", "gen_ai.usage.cache_write_input_tokens",
                "llm.token_count.prompt_details.cache_write")
_REASONING = ("gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.reasoning_tokens",
              "gen_ai.usage.output_tokens_details.reasoning_tokens",
              "llm.usage.reasoning_tokens", "llm.token_count.completion_details.reasoning",
              "ai.usage.reasoningTokens")


def _genai_summary(a: dict[str, Any], v: dict[str, Any]) -> dict[str, Any]:
    """What a span says in one generation's names, under the current ones (``payload.genai``):
    the content forms read, system instructions and tool definitions found outside the
    attributes, the provider (``gen_ai.provider.name`` / ``gen_ai.system``) and cache usage
    (``usage.cache_read_input_tokens`` / ``usage.cache_creation_input_tokens``)."""
    out: dict[str, Any] = {}
    forms = v.get("forms") or []
    if forms and forms != ["attributes"]:
        out["contentForms"] = forms
    if v.get("system") is not None and "gen_ai.system_instructions" not in a:
        out["system_instructions"] = v["system"]
    if v.get("tool_defs") is not None and "gen_ai.tool.definitions" not in a:
        out["tool_definitions"] = v["tool_defs"]
    provider = a.get("gen_ai.provider.name", a.get("gen_ai.system"))
    if provider is not None:
        out["provider"] = provider
    usage = {}
    for name, keys in (("cache_read_input_tokens", _CACHE_READ),
                       ("cache_creation_input_tokens", _CACHE_WRITE),
                       ("reasoning_tokens", _REASONING)):
        key, value = _first(a, keys)
        if value is not None:
            usage[name] = _token_count(value, key)
    for name, value in _litellm_usage(a).items():
        usage.setdefault(name, value)
    if usage:
        out["usage"] = usage
    return out


def _litellm_usage(a: dict[str, Any]) -> dict[str, int]:
    """Cache-read, cache-write and reasoning tokens LiteLLM keeps only in
    ``metadata.usage_object``: the provider's usage as a Python ``repr`` (read with
    :func:`ast.literal_eval`, which evaluates literals only; none when it is not one)."""
    import ast

    text = a.get("metadata.usage_object")
    if not isinstance(text, str) or not text.startswith("{") or len(text) > 20000:
        return {}
    try:
        u = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return {}
    if not isinstance(u, dict):
        return {}
    pd_: dict[str, Any] = u["prompt_tokens_details"] if isinstance(
        u.get("prompt_tokens_details"), dict) else {}
    cd: dict[str, Any] = u["completion_tokens_details"] if isinstance(
        u.get("completion_tokens_details"), dict) else {}
    got = {"cache_read_input_tokens": pd_.get("cached_tokens",
                                              u.get("cache_read_input_tokens")),
           "cache_creation_input_tokens": pd_.get("cache_creation_tokens",
                                                  u.get("cache_creation_input_tokens")),
           "reasoning_tokens": cd.get("reasoning_tokens")}
    return {k: v for k, v in got.items()
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0}


def _finish(reasons: Any) -> str:
    """replaykit ``finish`` of ``gen_ai.response.finish_reasons`` (its first value; LiteLLM
    writes the list as JSON text)."""
    if isinstance(reasons, str) and reasons.startswith("["):
        reasons = _maybe_json(reasons)[0]
    first = reasons[0] if isinstance(reasons, list) and reasons else reasons
    if first is None or first == "" or first == []:
        return "unknown"
    if not isinstance(first, str):
        first = canonical_json(first)
    return FINISH.get(first.lower(), first)


def _output_text(messages: Any) -> str | None:
    """Text parts of ``gen_ai.output.messages`` (GenAI semconv message shape) joined."""
    if not isinstance(messages, list):
        return None
    out = []
    for m in messages:
        for part in (m.get("parts") or []) if isinstance(m, dict) else []:
            if isinstance(part, dict) and part.get("type") == "text":
                out.append(str(part.get("content", "")))
    return "".join(out) if out else None


def read_otel(path: Paths, *, owner: str | None = None, tenant_id: Tenants = None,
              errors: ErrorPolicy = "raise", progress: bool | None = None) -> EventLog:
    """Load OpenTelemetry GenAI trace and log exports (OTLP/JSON or protobuf) into an EventLog.

    Pass a trace export and its log export together (a folder or a list): log records join
    their spans. Runs: ``gen_ai.conversation.id`` of the trace, else the trace id (hex). Rows
    are ordered by time within a run (a span's start; a tool result or subagent end at the
    span's end). ``log.runs.attrs`` holds the trace ids, the resource attributes and
    ``replayable`` (False when any span lacks captured content).

    Args:
        owner: owner of the runs (traces carry no tenant); required.
        tenant_id: keep only these tenants' rows (one id or a list; None: all), as
            in every reader: the rows are all ``owner``'s, so all of them or none.
        errors: ``"raise"`` or ``"quarantine"`` (a bad document, span or log record becomes
            one quarantine row: ``bad_json``, ``bad_document``, ``bad_span``,
            ``bad_log_record``, ``orphan_log_record``, ``conflicting_span``).
        progress: show a progress bar (None: when interactive).

    Raises:
        LoadError: ``reason="bad_tenant"``: ``owner`` missing (also when only
            ``tenant_id=`` is given) or an id breaking the tenant-id rule; under
            ``errors="raise"`` the first bad document / span / log record (file:line,
            field, reason, fix). MissingExtraError: a protobuf file without
            ``opentelemetry-proto`` (the ``otel`` extra). FileNotFoundError: nothing
            matches ``path``.

    Example:
        >>> log = rk.read_otel("traces.json", owner="acme")  # doctest: +SKIP
        >>> log.runs_df().run_id.tolist()  # doctest: +SKIP
        ['conv-1']
    """
    tenant, wanted = owner_and_filter(owner, tenant_id, fmt=FORMAT)
    quarantine = Quarantine(errors, tenant_id=tenant)
    files = expand_paths(path, patterns=_PATTERNS)
    recs: list[tuple[dict[str, Any], str, int]] = []
    logs: list[tuple[dict[str, Any], str, int]] = []
    total = sum(f.stat().st_size for f in files)
    with Progress(total, desc="read_otel", enabled=progress) as bar:
        for k, f in enumerate(files, start=1):
            bar.next_file(f.name, k, len(files))
            if f.suffix.lower() in _PROTO_SUFFIXES:
                try:
                    data = f.read_bytes()
                    bar.update(len(data))
                except OSError as exc:  # one bad row; the other files load
                    quarantine.bad(unreadable(str(f), exc))
                    continue
                try:
                    parsed: Iterable[tuple[int, Any, bytes | None]] = [
                        (n, doc, None) for n, doc in _proto_documents(data, str(f))]
                except LoadError as exc:
                    quarantine.bad(exc, data[:4096].hex())
                    continue
            else:
                parsed = _json_documents(f, bar, quarantine)
            for line, doc, raw in parsed:
                if isinstance(doc, _Records):  # decoded by the native core
                    src = str(f)
                    recs.extend((rec, src, line) for rec in doc.spans)
                    logs.extend((item, src, line) for item in doc.logs)
                    continue
                try:
                    spans = list(_spans_of(doc))
                    records = list(_logs_of(doc))
                    if not spans and not records and not _has_any(doc):
                        raise ValueError('has no "resourceSpans" or "resourceLogs" array')
                except (ValueError, AttributeError, TypeError, KeyError) as exc:
                    quarantine.bad(LoadError(source=str(f), line=line, field="resourceSpans",
                                             reason="bad_document", detail=str(exc),
                                             fix="Write an ExportTraceServiceRequest: "
                                             '{"resourceSpans": [{"scopeSpans": [...]}]} (or '
                                             'ExportLogsServiceRequest: {"resourceLogs": '
                                             "[...]})."), raw if raw is not None else
                                   canonical_json(doc))
                    continue
                for i, (span, resource, scope) in enumerate(spans):
                    try:
                        rec = _span_record(span, resource, scope)
                        recs.append((rec, str(f), line))
                    except (ValueError, KeyError, TypeError, AttributeError) as exc:
                        quarantine.bad(_bad_span(f, line, i, exc), canonical_json(span)
                                       if isinstance(span, dict) else str(span))
                for i, (item, resource, scope) in enumerate(records):
                    try:
                        logs.append((_log_record(item, resource, scope), str(f), line))
                    except (ValueError, KeyError, TypeError, AttributeError) as exc:
                        quarantine.bad(LoadError(
                            source=str(f), line=line, field=f"logRecords[{i}]",
                            reason="bad_log_record", detail=str(exc),
                            fix="Each log record needs times, attributes as OTLP/JSON "
                            "{key, value} pairs and hex/base64 traceId/spanId."),
                            canonical_json(item) if isinstance(item, dict) else str(item))
    deduped = _dedupe(recs, quarantine)
    _join_logs(deduped, logs, quarantine)
    viewed = []
    for rec, src, line in deduped:
        try:
            rec["_view"] = _view(rec)
            viewed.append((rec, src, line))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            quarantine.bad(_bad_span(Path(src), line, None, exc),
                           canonical_json({k: v for k, v in rec.items()}))
    try:
        return keep_tenants(_build(viewed, tenant, quarantine), tenant, wanted)
    except UNEXPECTED as exc:  # last-resort guard (see unexpected_input); not a real check
        raise unexpected_input(exc, (src for _, src, _ in viewed)) from exc


def _bad_span(f: Path, line: int, i: int | None, exc: Exception) -> LoadError:
    return LoadError(source=str(f), line=line, field="spans" if i is None else f"spans[{i}]",
                     reason="bad_span", detail=str(exc), fix="Each span needs traceId, spanId, "
                     "times and attributes as OTLP/JSON {key, value} pairs.")


def _has_any(doc: Any) -> bool:
    """An export with an empty ``resourceSpans`` / ``resourceLogs`` array (nothing to load)."""
    return isinstance(doc, dict) and any(isinstance(doc.get(k), list) for k in (
        "resourceSpans", "resource_spans", "resourceLogs", "resource_logs"))


def _json_documents(f: Path, bar: Any, quarantine: Quarantine
                    ) -> Iterator[tuple[int, Any, bytes | None]]:
    """The JSON documents of one file: (line, document, raw text); bad ones quarantined (in
    file order, as they are reached)."""
    native = _native_documents(f, bar, quarantine)
    if native is not None:
        yield from native
        return
    try:
        if f.suffix.lower() in _LINE_SUFFIXES:
            docs = [(ln, raw) for ln, raw in iter_lines(f, bar) if raw.strip()]
        else:
            data = f.read_bytes()
            bar.update(len(data))
            docs = [(1, data)]
    except OSError as exc:  # one bad row; the other files load
        quarantine.bad(unreadable(str(f), exc))
        return
    packed_err = compressed(str(f), docs[0][1][:8]) if docs else None
    if packed_err is not None:
        quarantine.bad(packed_err)
        return
    if docs and docs[0][0] == 1 and docs[0][1].startswith(b"\xef\xbb\xbf"):
        docs[0] = (1, docs[0][1][3:])  # a UTF-8 byte order mark, as sniff accepts
    for line, raw in docs:
        try:
            doc = loads(raw)
        except _BAD_JSON as exc:
            quarantine.bad(LoadError(source=str(f), line=line, reason="bad_json",
                                     detail=f"is not valid JSON ({exc})",
                                     fix="Re-export the traces as OTLP/JSON."), raw)
            continue
        yield line, doc, raw


def _join_logs(recs: list[tuple[dict[str, Any], str, int]],
               logs: list[tuple[dict[str, Any], str, int]], quarantine: Quarantine) -> None:
    """Attach each log record to the span its trace and span ids name (``rec["logs"]``, in
    time order; identical copies once). A GenAI event naming no loaded span is quarantined
    (``orphan_log_record``); other log records without a span are not agent events: skipped."""
    by_id = {(rec["traceId"], rec["spanId"]): rec for rec, _, _ in recs}
    seen: set[str] = set()
    for item, src, line in logs:
        text = canonical_json(item)
        if text in seen:
            continue
        seen.add(text)
        rec = by_id.get((item["traceId"], item["spanId"]))
        if rec is None:
            if _is_genai_event(item["name"]) or str(item["name"] or "").startswith(
                    "gen_ai."):
                quarantine.bad(LoadError(
                    source=src, line=line, field="logRecords.spanId",
                    reason="orphan_log_record",
                    detail=f"the {item['name']} event names span {item['spanId']} of trace "
                    f"{item['traceId']}, which no file read holds",
                    fix="Load the trace export together with its log export."), text)
            continue
        rec.setdefault("logs", []).append({k: v for k, v in item.items()
                                           if k not in ("traceId", "spanId")})
    for rec, _, _ in recs:
        if "logs" in rec:
            rec["logs"].sort(key=lambda e: e["timeUnixNano"])


def _dedupe(recs: list[tuple[dict[str, Any], str, int]], quarantine: Quarantine
            ) -> list[tuple[dict[str, Any], str, int]]:
    """One record per (trace id, span id).

    Identical copies (the same span exported to several files, or twice in one) are kept once
    with a :class:`DuplicateSpanWarning`; copies whose content differs are all quarantined
    (``conflicting_span``: which one is right cannot be told) and, under ``errors="raise"``,
    raise a LoadError naming both places.
    """
    groups: dict[tuple[str, str], list[int]] = {}
    for i, (rec, _, _) in enumerate(recs):
        groups.setdefault((rec["traceId"], rec["spanId"]), []).append(i)
    drop: set[int] = set()
    dropped: dict[tuple[str, str], int] = {}
    fix = "Load one export of each trace, or make the exports agree."
    for (trace, sid), idx in groups.items():
        if len(idx) == 1:
            continue
        texts = [canonical_json({k: v for k, v in recs[i][0].items() if k != "_view"})
                 for i in idx]
        drop.update(idx[1:])
        if len(set(texts)) == 1:
            for i in idx[1:]:
                pair = (recs[idx[0]][1], recs[i][1])
                dropped[pair] = dropped.get(pair, 0) + 1
            continue
        drop.add(idx[0])
        places = [f"{recs[i][1]}:{recs[i][2]}" for i in idx]
        for i, text in zip(idx, texts, strict=True):
            others = ", ".join(pl for pl in places if pl != f"{recs[i][1]}:{recs[i][2]}")
            quarantine.bad(LoadError(
                source=recs[i][1], line=recs[i][2], field="spanId", reason="conflicting_span",
                detail=f"span {sid} of trace {trace} is also read from {others or 'this line'} "
                "with different content", fix=fix), text)
    for (a, b), n in sorted(dropped.items()):
        where = f"both {a} and {b}" if a != b else f"{a} more than once"
        warnings.warn(f"{n} span(s) appear in {where} with identical content; each is "
                      "loaded once", DuplicateSpanWarning, stacklevel=3)
    return [r for i, r in enumerate(recs) if i not in drop]


def _build(recs: list[tuple[dict[str, Any], str, int]], tenant: str,
           quarantine: Quarantine) -> EventLog:
    conv: dict[str, str] = {}
    span_ids: dict[str, set[str]] = {}
    for rec, _, _ in recs:
        span_ids.setdefault(rec["traceId"], set()).add(rec["spanId"])
        c = _scalar_text(rec["attributes"].get("gen_ai.conversation.id"), "")
        if c is not None and rec["traceId"] not in conv:
            conv[rec["traceId"]] = c
    def run_of(rec: dict[str, Any]) -> str:
        return conv.get(rec["traceId"], rec["traceId"])

    # per run, not per trace: a conversation's tool span and the message that hands its
    # result back to the model may sit in different traces
    covered = _link_tool_spans(recs, run_of)
    answered: dict[str, set[str]] = {}
    asked: dict[str, set[str]] = {}
    rows: list[dict[str, Any]] = []
    # message-derived tool results: the first model span (by start) that was given one
    by_start = sorted(range(len(recs)), key=lambda i: (recs[i][0]["startTimeUnixNano"], i))
    span_rows: dict[int, list[dict[str, Any]]] = {}
    for i in by_start:
        rec, src, line = recs[i]
        root = rec["parentSpanId"] is None or rec["parentSpanId"] not in span_ids[rec["traceId"]]
        run = run_of(rec)
        out = _rows_of_span(rec, rec["_view"], root, covered.get(run, set()),
                            answered.setdefault(run, set()), asked.setdefault(run, set()))
        parent_run = rec["attributes"].get("replaykit.parent_run_id") if root else None
        for r in out:
            r.update(run_id=run, source=f"{FORMAT}:{src}", source_line=line,
                     _trace=rec["traceId"], _res=rec["resource"], _parent_run=parent_run)
        span_rows[i] = out
    for i in range(len(recs)):  # rows in read order: ties in time keep file order
        rows.extend(span_rows[i])
    # a result given in a message may not name its tool: the call it answers does, whether a
    # tool span, an output message or a later call's input history records that call
    names: dict[tuple[str, Any], str] = {}
    for rec, _, _ in recs:
        v = rec["_view"]
        for part in _parts(v["out"], "tool_call") + _parts(v["inp"], "tool_call"):
            name, cid = _loose_text(part.get("name")), _loose_text(part.get("id"))
            if name is not None and cid is not None:
                names.setdefault((run_of(rec), cid), name)
    names.update({(r["run_id"], r["ref_id"]): r["tool_name"] for r in rows
                  if r["kind"] == "tool_call" and r.get("tool_name") is not None})
    for r in rows:  # a result given in a message may not name its tool: the call does
        if r["kind"] == "tool_result" and r.get("tool_name") is None:
            r["tool_name"] = names.get((r["run_id"], r["ref_id"]))
    runs_table = _runs(rows, tenant)
    if not rows:
        return EventLog(empty_events(), runs=runs_table, quarantine=quarantine.table(runs_table))
    run_arr = np.array([r["run_id"] for r in rows], dtype=object)
    t = np.array([r["_t"] for r in rows], dtype=np.int64)
    start = np.array([r["_start"] for r in rows], dtype=np.int64)
    pos = np.arange(len(rows))
    run_codes, _ = _factorize(run_arr)
    order = np.lexsort((pos, start, t, run_codes))
    sorted_runs = run_codes[order]
    first = np.r_[True, sorted_runs[1:] != sorted_runs[:-1]]
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
    seq = np.empty(len(rows), dtype=np.int64)
    seq[order] = np.arange(len(order)) - group_start
    cols: dict[str, Any] = {name: [r.get(name) for r in rows] for name in (
        "run_id", "type", "kind", "event_id", "ref_id", "tool_name", "args_hash", "is_error",
        "finish", "input_tokens", "output_tokens", "text", "payload", "source", "source_line",
        "chunk_type")}
    cols["seq"] = seq
    cols["tenant_id"] = [tenant] * len(rows)
    cols["ts"] = pa.array(t // 1000, type=pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    evals = _evaluations(recs, run_of, tenant)
    return EventLog(events_table(cols), runs=runs_table, quarantine=quarantine.table(runs_table),
                    extras={"otel_evaluations": evals} if evals.num_rows else None)


#: ``log.extras["otel_evaluations"]``: one row per ``gen_ai.evaluation.result`` event
EVALUATIONS_SCHEMA = pa.schema([
    ("tenant_id", pa.string()), ("run_id", pa.string()), ("span_id", pa.string()),
    ("name", pa.string()), ("score_value", pa.float64()), ("score_label", pa.string()),
    ("explanation", pa.string()), ("attributes", pa.large_string())])


def _evaluations(recs: list[tuple[dict[str, Any], str, int]], run_of: Any,
                 tenant: str) -> pa.Table:
    """The ``gen_ai.evaluation.result`` events (span events and log records) of every span."""
    rows: dict[str, list[Any]] = {f.name: [] for f in EVALUATIONS_SCHEMA}
    for rec, _, _ in recs:
        for e in rec["events"] + rec.get("logs", []):
            if e.get("name") != "gen_ai.evaluation.result":
                continue
            a = e.get("attributes") or {}
            score = a.get("gen_ai.evaluation.score.value")
            rows["tenant_id"].append(tenant)
            rows["run_id"].append(run_of(rec))
            rows["span_id"].append(rec["spanId"])
            rows["name"].append(_loose_text(a.get("gen_ai.evaluation.name")))
            rows["score_value"].append(float(score) if isinstance(score, (int, float))
                                       and not isinstance(score, bool) else None)
            rows["score_label"].append(_loose_text(a.get("gen_ai.evaluation.score.label")))
            rows["explanation"].append(_loose_text(a.get("gen_ai.evaluation.explanation")))
            rows["attributes"].append(canonical_json(a))
    return pa.table(rows, schema=EVALUATIONS_SCHEMA)


def _link_tool_spans(recs: list[tuple[dict[str, Any], str, int]],
                     run_of: Any) -> dict[str, set[str]]:
    """Tool call ids that have a tool span, per run (``run_of(rec)``); gives tool spans without
    a call id the id of the call the model asked for.

    OpenInference tool spans carry the tool's name but not the call id: the k-th tool span of
    a name (by start time) takes the k-th unclaimed call of that name that a model span of
    the same trace requested before the tool started. No such call: the span id stays the id.
    """
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for rec, _, _ in recs:
        by_trace.setdefault(run_of(rec), []).append(rec)
    covered: dict[str, set[str]] = {}
    for trace, spans in by_trace.items():
        asked: list[tuple[int, str | None, str]] = []  # (model span end, tool name, call id)
        for rec in spans:
            v = rec["_view"]
            if v["op"] in MODEL_OPERATIONS:
                for part in _parts(v["out"], "tool_call"):
                    cid = part.get("id")
                    if isinstance(cid, str) and cid:
                        name = part.get("name")
                        asked.append((rec["endTimeUnixNano"],
                                      name if isinstance(name, str) else None, cid))
        asked.sort(key=lambda x: x[0])
        queues: dict[str | None, deque[tuple[int, str]]] = {}
        for t_end, name, cid in asked:
            queues.setdefault(name, deque()).append((t_end, cid))
        tools = sorted((r for r in spans if r["_view"]["op"] == "execute_tool"),
                       key=lambda r: r["startTimeUnixNano"])
        claimed = {r["_view"]["call_id"] for r in tools if r["_view"]["call_id"]}
        for rec in tools:  # by start; each name's queue by the asking span's end: one pass
            v = rec["_view"]
            if v["call_id"]:
                continue
            q = queues.get(v["tool_name"])
            while q and q[0][1] in claimed:
                q.popleft()
            if q and q[0][0] <= rec["startTimeUnixNano"]:
                v["call_id"] = q.popleft()[1]
                claimed.add(v["call_id"])
        # a tool span still without a call id executes the call of its name that a later
        # request's history hands back (openai-agents: the span names no call, the next
        # request's input has the call with its id): one execution, one call row
        later: list[tuple[int, str | None, str, Any]] = []
        for rec in spans:
            v = rec["_view"]
            if v["op"] in MODEL_OPERATIONS:
                for part in _parts(v["inp"], "tool_call"):
                    cid = part.get("id")
                    if isinstance(cid, str) and cid and cid not in claimed \
                            and cid not in {c for _, _, c, _ in later}:
                        later.append((rec["startTimeUnixNano"], _loose_text(part.get("name")),
                                      cid, part.get("arguments")))
        later.sort(key=lambda x: x[0])
        for rec in tools:
            v = rec["_view"]
            if v["call_id"]:
                continue
            fits = [c for c in later if c[1] == v["tool_name"] and c[2] not in claimed
                    and c[0] >= rec["startTimeUnixNano"]]
            same = [c for c in fits if _maybe_json(c[3])[0] == _maybe_json(v["args"])[0]]
            pick = (same or fits)[:1]
            if pick:
                v["call_id"] = pick[0][2]
                claimed.add(pick[0][2])
        covered[trace] = {r["_view"]["call_id"] for r in tools if r["_view"]["call_id"]}
    return covered


def _factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    uniq, codes = np.unique(values.astype(str), return_inverse=True)
    return codes.astype(np.int64), uniq


def _runs(rows: list[dict[str, Any]], tenant: str) -> pa.Table:
    if not rows:
        return RUNS_SCHEMA.empty_table()
    by_run: dict[str, dict[str, Any]] = {}
    for r in rows:
        info = by_run.setdefault(r["run_id"], {"traces": [], "replayable": True, "t": r["_t"],
                                                "resource": r["_res"], "source": r["source"],
                                                "parent": None})
        if info["parent"] is None and isinstance(r.get("_parent_run"), str):
            info["parent"] = r["_parent_run"]
        if r["_trace"] not in info["traces"]:
            info["traces"].append(r["_trace"])
        info["replayable"] = info["replayable"] and r["_replayable"]
        info["t"] = min(info["t"], r["_start"])
    ids = sorted(by_run)
    return pa.table({
        "tenant_id": pa.array([tenant] * len(ids), pa.string()),
        "run_id": pa.array(ids, pa.string()),
        "parent_run_id": pa.array([by_run[i]["parent"] for i in ids], pa.string()),
        "format": pa.array([FORMAT] * len(ids), pa.string()),
        "source": pa.array([by_run[i]["source"] for i in ids], pa.string()),
        "created_at": pa.array([by_run[i]["t"] // 1000 for i in ids], pa.int64()).cast(
            pa.timestamp("us", tz="UTC")),
        "attrs": pa.array([canonical_json({"trace_ids": by_run[i]["traces"],
                                           "replayable": by_run[i]["replayable"],
                                           "resource": by_run[i]["resource"]}) for i in ids],
                          pa.large_string()),
    }, schema=RUNS_SCHEMA)


def _native_documents(f: Path, bar: Any, quarantine: Quarantine
                      ) -> Iterator[tuple[int, Any, bytes | None]] | None:
    """:func:`_json_documents` on the native path (``_nativepath``): the documents the core
    decoded as :class:`Records` (raw text None), the others decoded here as the reference
    does (a bad one quarantined when it is reached, as there); None when the core is off
    (the reference reads the file)."""
    if not _use_native():
        return None
    try:
        data = f.read_bytes()
    except OSError as exc:  # one bad row; the other files load
        quarantine.bad(unreadable(str(f), exc))
        return iter(())
    got = _native_scan(data, f.suffix.lower() in _LINE_SUFFIXES)
    if got is None:
        return None
    bar.update(len(data))
    if got:
        _, a, b, _ = got[0]
        packed_err = compressed(str(f), data[a:min(b, a + 8)])
        if packed_err is not None:
            quarantine.bad(packed_err)
            return iter(())
    return _native_items(f, data, got, quarantine)


def _native_items(f: Path, data: bytes, got: list[tuple[int, int, int, Any]],
                  quarantine: Quarantine) -> Iterator[tuple[int, Any, bytes | None]]:
    for line, a, b, records in got:
        if records is not None:
            yield line, records, None
            continue
        raw = data[a:b]
        if line == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]  # a UTF-8 byte order mark, as sniff accepts
        try:
            doc = loads(raw)
        except _BAD_JSON as exc:
            quarantine.bad(LoadError(source=str(f), line=line, reason="bad_json",
                                     detail=f"is not valid JSON ({exc})",
                                     fix="Re-export the traces as OTLP/JSON."), raw)
            continue
        yield line, doc, raw
