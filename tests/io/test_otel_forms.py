"""Every generation's way of writing GenAI content, read to the same rows.

Hand-written OTLP/JSON spans in each form (the current attributes, ``gen_ai.prompt`` /
``gen_ai.completion`` JSON, OpenLLMetry's numbered attributes, span events, log records), the
renames between generations, every ``gen_ai.operation.name``, OTLP protobuf files, and issue 30
item 10: one tool execution is one tool result whichever forms carry it. Real instrumentation
output for the generations that can still be produced is in test_otel_instrumentations.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit._base.json import args_hash
from replaykit.errors import LoadError
from replaykit.io import detect_format
from replaykit.io.otel import read_otel

T1 = "0af7651916cd43dd8448eb211c80319c"
T2 = "1bf7651916cd43dd8448eb211c80319c"


def _v(x: Any) -> dict[str, Any]:
    if isinstance(x, bool):
        return {"boolValue": x}
    if isinstance(x, int):
        return {"intValue": str(x)}
    if isinstance(x, float):
        return {"doubleValue": x}
    if isinstance(x, list):
        return {"arrayValue": {"values": [_v(i) for i in x]}}
    if isinstance(x, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": _v(i)} for k, i in x.items()]}}
    return {"stringValue": x}


def _attrs(d: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _v(v)} for k, v in d.items()]


def span(sid: str, name: str, attrs: dict[str, Any], *, start: int, end: int,
         parent: str | None = None, trace: str = T1, events: list[Any] | None = None,
         error: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"traceId": trace, "spanId": sid, "name": name,
                           "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
                           "attributes": _attrs(attrs)}
    if parent:
        out["parentSpanId"] = parent
    if events:
        out["events"] = [{"name": n, "timeUnixNano": str(start), "attributes": _attrs(a)}
                         for n, a in events]
    if error:
        out["status"] = {"code": 2, "message": "failed"}
    return out


def traces(*spans: dict[str, Any], resource: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {"attributes": _attrs(resource or {})},
                               "scopeSpans": [{"scope": {"name": "t"}, "spans": list(spans)}]}]}


def log_records(*records: tuple[str, str, str, Any]) -> dict[str, Any]:
    """(trace id, span id, event name, body) records."""
    return {"resourceLogs": [{"scopeLogs": [{"logRecords": [
        {"traceId": t, "spanId": s, "eventName": n, "timeUnixNano": "5",
         "body": _v(b)} for t, s, n, b in records]}]}]}


def _write(tmp: Path, name: str, doc: dict[str, Any]) -> Path:
    p = tmp / name
    p.write_text(json.dumps(doc))
    return p


def _col(log: rk.EventLog, name: str) -> list[Any]:
    c = log.table.column(name)
    return (pc.cast(c, "string") if str(c.type).startswith("dictionary") else c).to_pylist()


ROOT = "a000000000000001"
CHAT = "a000000000000002"


def _chat(attrs: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return traces(span(ROOT, "agent", {"gen_ai.operation.name": "invoke_agent"}, start=1,
                       end=100),
                  span(CHAT, "chat m", {"gen_ai.request.model": "m", **attrs}, start=10,
                       end=20, parent=ROOT, **kw))


#: the same call -- user asks, the model asks for a tool -- in each generation's form
CURRENT = {"gen_ai.operation.name": "chat",
           "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
               {"type": "text", "content": "weather?"}]}]),
           "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
               {"type": "text", "content": "Let me look."},
               {"type": "tool_call", "id": "c1", "name": "get_weather",
                "arguments": {"city": "Paris"}}], "finish_reason": "tool_call"}]),
           "gen_ai.response.finish_reasons": ["tool_call"],
           "gen_ai.usage.input_tokens": 12, "gen_ai.usage.output_tokens": 5}
_OPENAI_OUT = [{"role": "assistant", "content": "Let me look.", "tool_calls": [
    {"id": "c1", "type": "function",
     "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}]
PROMPT_JSON = {"gen_ai.operation.name": "chat",
               "gen_ai.prompt": json.dumps([{"role": "user", "content": "weather?"}]),
               "gen_ai.completion": json.dumps(_OPENAI_OUT),
               "gen_ai.response.finish_reasons": ["tool_calls"],
               "gen_ai.usage.prompt_tokens": 12, "gen_ai.usage.completion_tokens": 5}
NUMBERED = {"llm.request.type": "chat", "gen_ai.system": "openai",
            "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "weather?",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "Let me look.",
            "gen_ai.completion.0.finish_reason": "tool_calls",
            "gen_ai.completion.0.tool_calls.0.id": "c1",
            "gen_ai.completion.0.tool_calls.0.name": "get_weather",
            "gen_ai.completion.0.tool_calls.0.arguments": '{"city": "Paris"}',
            "llm.usage.prompt_tokens": 12, "llm.usage.completion_tokens": 5}
EVENTS = [("gen_ai.content.prompt", {"gen_ai.prompt": PROMPT_JSON["gen_ai.prompt"]}),
          ("gen_ai.content.completion", {"gen_ai.completion": PROMPT_JSON["gen_ai.completion"]})]
MESSAGE_EVENTS = [("gen_ai.user.message", {"content": "weather?"}),
                  ("gen_ai.choice", {"index": 0, "finish_reason": "tool_calls",
                                     "message": json.dumps(_OPENAI_OUT[0])})]


def _forms(tmp: Path) -> dict[str, list[Path]]:
    tok = {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 12,
           "gen_ai.usage.output_tokens": 5}
    out = {
        "attributes": [_write(tmp, "a.json", _chat(CURRENT))],
        "gen_ai.prompt": [_write(tmp, "b.json", _chat(PROMPT_JSON))],
        "numbered": [_write(tmp, "c.json", _chat(NUMBERED))],
        "span events gen_ai.content.*": [_write(tmp, "d.json", _chat(
            {**tok, "gen_ai.response.finish_reasons": ["tool_calls"]}, events=EVENTS))],
        "span events per message": [_write(tmp, "e.json", _chat(tok, events=MESSAGE_EVENTS))],
    }
    (tmp / "f").mkdir()
    out["log records"] = [
        _write(tmp / "f", "t.json", _chat(tok)),
        _write(tmp / "f", "l.json", log_records(
            (T1, CHAT, "gen_ai.user.message", {"content": "weather?"}),
            (T1, CHAT, "gen_ai.choice", {"index": 0, "finish_reason": "tool_calls",
                                         "message": _OPENAI_OUT[0]})))]
    out["operation details"] = [
        _write(tmp / "f", "t2.json", _chat(tok)).rename(tmp / "g.json"),
        _write(tmp, "g.logs.json", {"resourceLogs": [{"scopeLogs": [{"logRecords": [
            {"traceId": T1, "spanId": CHAT, "timeUnixNano": "15", "attributes": _attrs({
                "event.name": "gen_ai.client.inference.operation.details",
                "gen_ai.input.messages": json.loads(CURRENT["gen_ai.input.messages"]),
                "gen_ai.output.messages": json.loads(CURRENT["gen_ai.output.messages"]),
                "gen_ai.response.finish_reasons": ["tool_call"]})}]}]}]})]
    out["operation details"][0] = tmp / "g.json"
    return out


@pytest.mark.parametrize("form", ["attributes", "gen_ai.prompt", "numbered",
                                  "span events gen_ai.content.*", "span events per message",
                                  "log records", "operation details"])
def test_every_form_reads_to_the_same_rows(tmp_path: Path, form: str) -> None:
    files = _forms(tmp_path)[form]
    log = read_otel(files, owner="acme")
    assert _col(log, "kind") == ["session", "model_response", "tool_call"]
    assert _col(log, "finish")[1] == "tool-calls"
    assert _col(log, "text")[1] == "Let me look."
    assert log.table.column("input_tokens")[1].as_py() == 12
    assert log.table.column("output_tokens")[1].as_py() == 5
    assert _col(log, "ref_id")[2] == "c1" and _col(log, "tool_name")[2] == "get_weather"
    assert log.table.column("args_hash")[2].as_py() == args_hash({"city": "Paris"})
    payload = json.loads(_col(log, "payload")[1])
    assert payload["replayable"] is True
    if form != "attributes":
        assert payload["genai"]["contentForms"]
    assert log.tools_df().tool_name.tolist() == ["get_weather"]


def test_missing_content_in_every_form_is_flagged(tmp_path: Path) -> None:
    log = read_otel(_write(tmp_path, "x.json", _chat({"llm.request.type": "chat"})),
                    owner="acme")
    payload = json.loads(_col(log, "payload")[1])
    assert payload["replayable"] is False
    assert payload["missingContent"] == ["gen_ai.output.messages", "gen_ai.input.messages"]


def test_renames_both_ways(tmp_path: Path) -> None:
    old = {"gen_ai.operation.name": "chat", "gen_ai.system": "anthropic",
           "gen_ai.usage.prompt_tokens": 7, "gen_ai.usage.completion_tokens": 3,
           "gen_ai.usage.cache_read_input_tokens": 4,
           "gen_ai.usage.cache_creation_input_tokens": 2}
    new = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic",
           "gen_ai.usage.input_tokens": 7, "gen_ai.usage.output_tokens": 3,
           "gen_ai.usage.cache_read.input_tokens": 4,
           "gen_ai.usage.cache_write.input_tokens": 2}
    got = []
    for name, attrs in (("old", old), ("new", new)):
        log = read_otel(_write(tmp_path, f"{name}.json", _chat(attrs)), owner="acme")
        calls = log.calls_df()
        payload = json.loads(_col(log, "payload")[1])
        got.append((calls.input_tokens.tolist(), calls.output_tokens.tolist(),
                    calls.cache_read_tokens.tolist(), payload["usage"],
                    log.stamps_df().provider.tolist()))
    assert got[0] == got[1] == ([7], [3], [4], {"cache_read_input_tokens": 4,
                                                "cache_creation_input_tokens": 2},
                                ["anthropic"])


@pytest.mark.parametrize(("op", "root_kind", "nested"), [
    ("invoke_agent", "session", ["subagent_start", "subagent_end"]),
    ("create_agent", "session", ["subagent_start", "subagent_end"]),
    ("invoke_workflow", "session", ["subagent_start", "subagent_end"]),
    ("plan", "other", ["other"]),
    ("execute_tool", "tool_call", ["tool_call", "tool_result"]),
    ("text_completion", "model_response", ["model_response"]),
])
def test_operation_names(tmp_path: Path, op: str, root_kind: str, nested: list[str]) -> None:
    doc = traces(span(ROOT, op, {"gen_ai.operation.name": op}, start=1, end=50),
                 span(CHAT, op, {"gen_ai.operation.name": op}, start=2, end=3, parent=ROOT))
    log = read_otel(_write(tmp_path, "ops.json", doc), owner="acme")
    kinds = _col(log, "kind")
    assert kinds[0] == root_kind
    assert [k for k, e in zip(kinds, _col(log, "event_id"), strict=True) if e == CHAT] == nested
    assert set(_col(log, "type")) >= {op}


# ------------------------------------------------------------------------- OTLP protobuf


def _proto_bytes(doc: dict[str, Any]) -> bytes:
    import base64

    from google.protobuf import json_format
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
        ExportLogsServiceRequest,
    )
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    doc = json.loads(json.dumps(doc))
    for rs in doc.get("resourceSpans", []) + doc.get("resourceLogs", []):
        for ss in rs.get("scopeSpans", []) + rs.get("scopeLogs", []):
            for sp in ss.get("spans", []) + ss.get("logRecords", []):
                for k in ("traceId", "spanId", "parentSpanId"):
                    if k in sp:  # protobuf's JSON mapping reads bytes as base64
                        sp[k] = base64.b64encode(bytes.fromhex(sp[k])).decode()
    cls = ExportTraceServiceRequest if "resourceSpans" in doc else ExportLogsServiceRequest
    return json_format.ParseDict(doc, cls()).SerializeToString()


def test_protobuf_files_read_like_json(tmp_path: Path) -> None:
    files = _forms(tmp_path)["log records"]
    want = read_otel(files, owner="acme")
    single = tmp_path / "traces.pb"
    single.write_bytes(_proto_bytes(json.loads(files[0].read_text())))
    logs = tmp_path / "logs.binpb"
    msg = _proto_bytes(json.loads(files[1].read_text()))
    logs.write_bytes(len(msg).to_bytes(4, "big") + msg)  # the collector file exporter's framing
    assert detect_format(single) == "otel" and detect_format(logs) == "otel"
    got = read_otel([single, logs], owner="acme")
    for c in ("kind", "ref_id", "tool_name", "finish", "text", "input_tokens", "args_hash"):
        assert _col(got, c) == _col(want, c), c
    framed = tmp_path / "both.otlp"
    t = _proto_bytes(json.loads(files[0].read_text()))
    framed.write_bytes(len(t).to_bytes(4, "big") + t + len(msg).to_bytes(4, "big") + msg)
    assert _col(read_otel(framed, owner="acme"), "kind") == _col(want, "kind")


@pytest.mark.parametrize("data", [b"\x0a\xff\xff\xff\xff\x0f", b"\x00\x00\x00\x09\x0a\x01",
                                  b"\x0a\x02\x08\x01", b"\x0a"])
def test_bad_protobuf_is_a_reason(tmp_path: Path, data: bytes) -> None:
    p = tmp_path / "bad.pb"
    p.write_bytes(data)
    with pytest.raises(LoadError) as info:
        read_otel(p, owner="acme")
    assert info.value.reason == "bad_document"
    q = read_otel(p, owner="acme", errors="quarantine").quarantine
    assert q.column("reason").to_pylist() == ["bad_document"]


# ------------------------------------------------ issue 30 item 10: one execution, one result


def _tool_span(sid: str, cid: str, *, trace: str = T1, start: int = 30,
               parent: str = ROOT) -> dict[str, Any]:
    return span(sid, "execute_tool get_weather", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.id": cid, "gen_ai.tool.call.arguments": '{"city": "Paris"}',
        "gen_ai.tool.call.result": "rainy", "gen_ai.conversation.id": "conv"},
        start=start, end=start + 5, parent=parent, trace=trace)


def _history(cid: str, *, name: bool = True) -> str:
    return json.dumps([
        {"role": "user", "parts": [{"type": "text", "content": "weather?"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": cid, "name": "get_weather",
                                         "arguments": {"city": "Paris"}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": cid,
                                    "response": "rainy",
                                    **({"name": "get_weather"} if name else {})}]}])


def test_tool_span_and_later_trace_message_are_one_result(tmp_path: Path) -> None:
    """A conversation over two traces: the tool span in the first, the result handed back in
    the second trace's input messages. One call, one result."""
    conv = {"gen_ai.conversation.id": "conv", "gen_ai.operation.name": "chat"}
    first = traces(
        span(ROOT, "agent", {"gen_ai.operation.name": "invoke_agent", **conv}, start=1,
             end=40),
        span(CHAT, "chat", {**conv, "gen_ai.operation.name": "chat",
                            "gen_ai.output.messages": json.dumps([{"role": "assistant",
                            "parts": [{"type": "tool_call", "id": "c1",
                                       "name": "get_weather"}]}])}, start=2, end=20,
             parent=ROOT),
        _tool_span("a000000000000003", "c1"))
    second = traces(span("b000000000000001", "chat", {
        **conv, "gen_ai.input.messages": _history("c1"),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": "Rainy."}]}])}, start=50, end=60, trace=T2))
    log = read_otel([_write(tmp_path, "1.json", first), _write(tmp_path, "2.json", second)],
                    owner="acme")
    assert log.run_ids == ["conv"]
    kinds = _col(log, "kind")
    assert kinds.count("tool_call") == 1 and kinds.count("tool_result") == 1
    tools = log.tools_df()
    assert tools.call_id.tolist() == ["c1"] and tools.result_text.tolist() == ["rainy"]


def test_result_in_two_forms_of_one_span_is_one_row(tmp_path: Path) -> None:
    """The same history in the span's attributes and in its log records."""
    doc = _chat({"gen_ai.operation.name": "chat", "gen_ai.input.messages": _history("c9")})
    logs = log_records((T1, CHAT, "gen_ai.assistant.message", {"tool_calls": [
        {"id": "c9", "function": {"name": "get_weather", "arguments": "{}"}}]}),
        (T1, CHAT, "gen_ai.tool.message", {"id": "c9", "content": "rainy"}))
    log = read_otel([_write(tmp_path, "t.json", doc), _write(tmp_path, "l.json", logs)],
                    owner="acme")
    kinds = _col(log, "kind")
    assert kinds.count("tool_result") == 1 and kinds.count("tool_call") == 1


@pytest.mark.parametrize("where", ["history", "earlier output"])
def test_message_results_are_named_by_the_call_they_answer(tmp_path: Path, where: str) -> None:
    spans = [span(ROOT, "agent", {"gen_ai.operation.name": "invoke_agent"}, start=1, end=90)]
    if where == "earlier output":
        spans.append(span("a000000000000009", "chat", {
            "gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps([
                {"role": "assistant", "parts": [{"type": "tool_call", "id": "c5",
                                                 "name": "lookup"}]}])},
            start=2, end=3, parent=ROOT))
    hist = json.loads(_history("c5", name=False))
    hist[1]["parts"][0]["name"] = "lookup"
    spans.append(span(CHAT, "chat", {"gen_ai.operation.name": "chat",
                                     "gen_ai.input.messages": json.dumps(hist)},
                      start=10, end=20, parent=ROOT))
    log = read_otel(_write(tmp_path, "n.json", traces(*spans)), owner="acme")
    names = {(k, n) for k, n in zip(_col(log, "kind"), _col(log, "tool_name"), strict=True)
             if k in ("tool_call", "tool_result")}
    assert names == {("tool_call", "lookup"), ("tool_result", "lookup")}
    assert log.tools_df().tool_name.tolist() == ["lookup"]


def test_read_events_finds_protobuf_files_in_folders(tmp_path: Path) -> None:
    files = _forms(tmp_path)["attributes"]
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "t.binpb").write_bytes(_proto_bytes(json.loads(files[0].read_text())))
    log = rk.read_events(tmp_path / "dir", owner="acme")
    assert _col(log, "kind") == ["session", "model_response", "tool_call"]


# ------------------------------------------------- property: every form, the same rows


_NAMES = st.sampled_from(["get_weather", "search", "lookup"])
_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_ARGS = st.dictionaries(st.sampled_from(["q", "city", "n"]),
                        st.one_of(st.integers(-5, 5), _TEXT), max_size=2)
_ROUND = st.tuples(_TEXT, st.lists(st.tuples(_NAMES, _ARGS, _TEXT), max_size=3))


def _provider_msgs(user: str, rounds: list[Any], upto: int) -> list[dict[str, Any]]:
    """OpenAI-style history before call ``upto`` (user, then each round's assistant message
    and its tool results)."""
    msgs: list[dict[str, Any]] = [{"role": "user", "content": user}]
    for r, (text, calls) in enumerate(rounds[:upto]):
        m: dict[str, Any] = {"role": "assistant"}
        if text:
            m["content"] = text
        if calls:
            m["tool_calls"] = [{"id": f"c{r}_{j}", "type": "function", "function": {
                "name": n, "arguments": json.dumps(a)}} for j, (n, a, _) in enumerate(calls)]
        msgs.append(m)
        msgs += [{"role": "tool", "tool_call_id": f"c{r}_{j}", "content": res}
                 for j, (_, _, res) in enumerate(calls)]
    return msgs


def _parts_msg(m: dict[str, Any]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if m["role"] == "tool":
        parts.append({"type": "tool_call_response", "id": m["tool_call_id"],
                      "response": m["content"]})
    elif m.get("content"):
        parts.append({"type": "text", "content": m["content"]})
    for c in m.get("tool_calls", []):
        parts.append({"type": "tool_call", "id": c["id"], "name": c["function"]["name"],
                      "arguments": json.loads(c["function"]["arguments"])})
    return {"role": m["role"], "parts": parts}


def _numbered_attrs(side: str, msgs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, m in enumerate(msgs):
        out[f"gen_ai.{side}.{i}.role"] = m["role"]
        if m.get("content") or "tool_call_id" in m:
            out[f"gen_ai.{side}.{i}.content"] = m["content"]
        if "tool_call_id" in m:
            out[f"gen_ai.{side}.{i}.tool_call_id"] = m["tool_call_id"]
        for j, c in enumerate(m.get("tool_calls", [])):
            out[f"gen_ai.{side}.{i}.tool_calls.{j}.id"] = c["id"]
            out[f"gen_ai.{side}.{i}.tool_calls.{j}.name"] = c["function"]["name"]
            out[f"gen_ai.{side}.{i}.tool_calls.{j}.arguments"] = c["function"]["arguments"]
    return out


def _encode(form: str, user: str, rounds: list[Any], tmp: Path) -> list[Path]:
    spans, records = [], []
    for r in range(len(rounds)):
        sid = f"c{r + 1:015x}"
        hist = _provider_msgs(user, rounds, r)
        out = _provider_msgs(user, rounds, r + 1)[len(hist)]
        reason = "tool_calls" if rounds[r][1] else "stop"
        a: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": r}
        if form == "attributes":
            a["gen_ai.input.messages"] = json.dumps([_parts_msg(m) for m in hist])
            a["gen_ai.output.messages"] = json.dumps([_parts_msg(out)])
            a["gen_ai.response.finish_reasons"] = [reason]
        elif form == "gen_ai.prompt":
            a["gen_ai.prompt"] = json.dumps(hist)
            a["gen_ai.completion"] = json.dumps([out])
            a["gen_ai.response.finish_reasons"] = [reason]
        elif form == "numbered":
            a.update(_numbered_attrs("prompt", hist))
            a.update(_numbered_attrs("completion", [out]))
            a["gen_ai.completion.0.finish_reason"] = reason
        else:  # one log record per message
            for m in hist:
                body = {k: v for k, v in m.items() if k not in ("role", "tool_call_id")}
                if m["role"] == "tool":
                    body["id"] = m["tool_call_id"]
                records.append((T1, sid, f"gen_ai.{m['role']}.message", body))
            records.append((T1, sid, "gen_ai.choice", {
                "index": 0, "finish_reason": reason,
                "message": {k: v for k, v in out.items() if k != "role"}}))
        spans.append(span(sid, "chat", a, start=10 * (r + 1), end=10 * (r + 1) + 5,
                          parent=ROOT))
    root = span(ROOT, "agent", {"gen_ai.operation.name": "invoke_agent"}, start=1,
                end=10 * len(rounds) + 50)
    (tmp / form).mkdir(exist_ok=True)
    files = [_write(tmp / form, "t.json", traces(root, *spans))]
    if records:
        files.append(_write(tmp / form, "l.json", log_records(*records)))
    return files


def _rows(log: rk.EventLog) -> list[tuple[Any, ...]]:
    return list(zip(_col(log, "kind"), _col(log, "ref_id"), _col(log, "tool_name"),
                    _col(log, "args_hash"), _col(log, "text"), _col(log, "finish"),
                    strict=True))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(user=_TEXT, rounds=st.lists(_ROUND, min_size=1, max_size=4))
def test_every_form_gives_the_same_rows(tmp_path_factory: pytest.TempPathFactory, user: str,
                                        rounds: list[Any]) -> None:
    tmp = tmp_path_factory.mktemp("forms")
    got = {}
    for form in ("attributes", "gen_ai.prompt", "numbered", "log records"):
        log = read_otel(_encode(form, user, rounds, tmp), owner="acme")
        assert len(log.quarantine) == 0
        got[form] = _rows(log)
    assert got["gen_ai.prompt"] == got["attributes"]
    assert got["numbered"] == got["attributes"]
    assert got["log records"] == got["attributes"]
    # one call row and one result row per tool call the conversation made (the last
    # round's calls are answered in no later history: no result row for them)
    kinds = [r[0] for r in got["attributes"]]
    n_calls = sum(len(c) for _, c in rounds)
    assert kinds.count("tool_call") == n_calls
    assert kinds.count("tool_result") == n_calls - len(rounds[-1][1])


def test_stamps_of_older_generations(tmp_path: Path) -> None:
    """OpenLLMetry's numbered form (provider in gen_ai.system, the system prompt as the first
    prompt message) and OpenInference (llm.model_name, llm.provider, invocation parameters)."""
    numbered = {**NUMBERED, "gen_ai.request.model": "gpt-4o", "gen_ai.request.temperature": 0.3,
                "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "Be brief.",
                "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "weather?"}
    st_ = read_otel(_write(tmp_path, "n.json", _chat(numbered)), owner="acme").stamps_df()
    assert st_.loc[0, ["model", "provider", "temperature", "system_prompt"]].tolist() == [
        "gpt-4o", "openai", 0.3, "Be brief."]
    oi = {"openinference.span.kind": "LLM", "llm.model_name": "claude-x",
          "llm.provider": "anthropic",
          "llm.invocation_parameters": json.dumps({"temperature": 0.7, "max_tokens": 256}),
          "llm.output_messages.0.message.role": "assistant",
          "llm.output_messages.0.message.content": "hi"}
    doc = traces(span(CHAT, "ChatCompletion", oi, start=10, end=20))
    st_ = read_otel(_write(tmp_path, "o.json", doc), owner="acme").stamps_df()
    assert st_.loc[0, ["model", "provider", "temperature", "max_tokens"]].tolist() == [
        "claude-x", "anthropic", 0.7, 256]
