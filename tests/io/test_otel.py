"""OpenTelemetry GenAI traces: spans made by the real OpenTelemetry SDK, exported as OTLP/JSON.

Spans are recorded with the SDK's in-memory exporter, encoded by the OTLP exporter's own
protobuf encoder and written as JSON (``google.protobuf.json_format``), as an OTLP/JSON file
exporter does. Without the SDK these tests skip locally and fail under CI=true.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

import replaykit as rk
from replaykit._base.json import args_hash
from replaykit.errors import LoadError
from replaykit.io import detect_format, read_events
from replaykit.io.otel import read_otel, sniff

try:
    from google.protobuf import json_format
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import Status, StatusCode
except ImportError:  # pragma: no cover - depends on the environment
    if os.environ.get("CI") == "true":
        raise
    pytest.skip("opentelemetry-sdk / otlp-proto-common not installed", allow_module_level=True)


def _record(content: bool) -> list[Any]:
    """One agent conversation (two chat calls, two tool calls, one failing) and one bare
    trace without a conversation id. ``content=False`` records no message/argument content."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "demo-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("demo.genai", "1.0")
    conv = {"gen_ai.conversation.id": "conv-1"}
    with tracer.start_as_current_span("invoke_agent planner", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner", **conv}):
        with tracer.start_as_current_span("chat gpt-x", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-x", **conv}) as s:
            s.set_attribute("gen_ai.response.model", "gpt-x-2025")
            s.set_attribute("gen_ai.usage.input_tokens", 100)
            s.set_attribute("gen_ai.usage.output_tokens", 12)
            s.set_attribute("gen_ai.response.finish_reasons", ["tool_calls"])
            if content:
                s.set_attribute("gen_ai.input.messages", json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": "weather?"}]}]))
                s.set_attribute("gen_ai.output.messages", json.dumps(
                    [{"role": "assistant", "parts": [{"type": "tool_call", "id": "call-1",
                                                       "name": "get_weather"}]}]))
        with tracer.start_as_current_span("execute_tool get_weather", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": "call-1", "custom.flag": True, **conv}) as s:
            if content:
                s.set_attribute("gen_ai.tool.call.arguments", '{"city": "Paris"}')
                s.set_attribute("gen_ai.tool.call.result", "rainy, 57F")
        with tracer.start_as_current_span("execute_tool get_time", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_time",
                "gen_ai.tool.call.id": "call-2", **conv}) as s:
            if content:
                s.set_attribute("gen_ai.tool.call.arguments", '{"tz": "CET"}')
            s.set_attribute("error.type", "TimeoutError")
            s.set_status(Status(StatusCode.ERROR, "timed out"))
        with tracer.start_as_current_span("chat gpt-x", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-x", **conv}) as s:
            s.set_attribute("gen_ai.usage.input_tokens", 150)
            s.set_attribute("gen_ai.usage.output_tokens", 20)
            s.set_attribute("gen_ai.response.finish_reasons", ["stop"])
            if content:
                s.set_attribute("gen_ai.input.messages", json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": "weather?"}]}]))
                s.set_attribute("gen_ai.output.messages", json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "Rainy."}]}]))
    with tracer.start_as_current_span("chat gpt-x", attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-x"}) as s:
        s.set_attribute("gen_ai.usage.input_tokens", 5)
        s.set_attribute("gen_ai.usage.output_tokens", 1)
        s.set_attribute("gen_ai.response.finish_reasons", ["length"])
        if content:
            s.set_attribute("gen_ai.input.messages", "[]")
            s.set_attribute("gen_ai.output.messages", "[]")
    provider.shutdown()
    return list(exporter.get_finished_spans())


def _write(spans: list[Any], path: Path, *, hex_ids: bool = False) -> Path:
    doc = json.loads(json_format.MessageToJson(encode_spans(spans)))
    if hex_ids:  # the OTLP/JSON spec writes ids as hex (protobuf's JSON mapping: base64)
        import base64

        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for sp in ss["spans"]:
                    for k in ("traceId", "spanId", "parentSpanId"):
                        if k in sp:
                            sp[k] = base64.b64decode(sp[k]).hex()
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(scope="module")
def recorded() -> dict[str, list[Any]]:
    return {"content": _record(True), "bare": _record(False)}


def test_sniff(recorded: dict[str, list[Any]], tmp_path: Path) -> None:
    p = _write(recorded["content"], tmp_path / "t.json")
    assert sniff(p) is None and detect_format(p) == "otel"
    other = tmp_path / "o.json"
    other.write_text('{"version": 2, "status": "success"}')
    assert "resourceSpans" in sniff(other)


@pytest.mark.parametrize("hex_ids", [False, True])
def test_spans_to_events(recorded: dict[str, list[Any]], tmp_path: Path, hex_ids: bool) -> None:
    spans = recorded["content"]
    log = read_otel(_write(spans, tmp_path / "t.json", hex_ids=hex_ids), owner="acme")
    t = log.table
    trace_ids = {format(s.context.trace_id, "032x") for s in spans}
    runs = set(pc.cast(t.column("run_id"), "string").to_pylist())
    bare = {format(s.context.trace_id, "032x") for s in spans
            if "gen_ai.conversation.id" not in s.attributes}
    assert runs == {"conv-1"} | bare and len(trace_ids) == 2
    conv = log.run("conv-1", tenant_id="acme").table
    kinds = pc.cast(conv.column("kind"), "string").to_pylist()
    assert kinds == ["session", "model_response", "tool_call", "tool_result", "tool_call",
                     "tool_result", "model_response"]
    assert conv.column("seq").to_pylist() == list(range(7))
    ts = conv.column("ts").to_pylist()
    assert ts == sorted(ts)
    assert pc.cast(conv.column("finish"), "string").to_pylist()[1::5] == ["tool-calls", "stop"]
    assert conv.column("input_tokens").to_pylist()[1::5] == [100, 150]
    assert conv.column("output_tokens").to_pylist()[1::5] == [12, 20]
    assert conv.column("ref_id").to_pylist()[2:6] == ["call-1", "call-1", "call-2", "call-2"]
    assert conv.column("is_error").to_pylist() == [False] * 5 + [True, False]
    assert conv.column("text").to_pylist()[2:4] == ['{"city": "Paris"}', "rainy, 57F"]
    assert conv.column("args_hash")[2].as_py() == args_hash({"city": "Paris"})
    first_chat = json.loads(conv.column("payload")[1].as_py())
    assert first_chat["attributes"]["gen_ai.response.model"] == "gpt-x-2025"
    assert first_chat["attributes"]["gen_ai.request.model"] == "gpt-x"
    call = json.loads(conv.column("payload")[2].as_py())
    assert call["attributes"]["custom.flag"] is True  # every other attribute kept
    assert call["resource"]["service.name"] == "demo-agent"
    # one span had no result captured: flagged, not guessed
    failing = json.loads(conv.column("payload")[4].as_py())
    assert failing["replayable"] is False
    assert failing["missingContent"] == ["gen_ai.tool.call.result"]
    assert conv.column("text")[5].as_py() == "timed out"
    tools = log.tools_df()
    assert tools[tools.run_id == "conv-1"].tool_name.tolist() == ["get_weather", "get_time"]
    attrs = {r["run_id"]: json.loads(r["attrs"]) for r in log.runs.to_pylist()}
    assert attrs["conv-1"]["replayable"] is False
    assert attrs[next(iter(bare))]["replayable"] is True
    state = rk.fold(log, rk.agent()).at_step("conv-1", 7, tenant_id="acme")
    assert state["tool_calls"] == 2 and state["input_tokens"] == 250


def test_without_content_capture_not_replayable(recorded: dict[str, list[Any]],
                                               tmp_path: Path) -> None:
    log = read_otel(_write(recorded["bare"], tmp_path / "b.json"), owner="acme")
    conv = log.run("conv-1", tenant_id="acme").table
    payloads = [json.loads(p) for p in conv.column("payload").to_pylist()]
    flags = [p["replayable"] for p in payloads]
    assert flags == [True, False, False, False, False, False, False]
    assert payloads[1]["missingContent"] == ["gen_ai.output.messages", "gen_ai.input.messages"]
    # no arguments captured: no text and no args hash (never guessed)
    assert conv.column("text")[2].as_py() is None
    assert conv.column("args_hash")[2].as_py() is None
    assert all(json.loads(a)["replayable"] is False for a in log.runs.column("attrs").to_pylist())


def test_jsonl_and_read_events(recorded: dict[str, list[Any]], tmp_path: Path) -> None:
    one = json.loads(json_format.MessageToJson(encode_spans(recorded["content"])))
    lines = tmp_path / "traces.jsonl"
    two = json.loads(json_format.MessageToJson(encode_spans(recorded["bare"])))
    lines.write_text(json.dumps(one) + "\n\n" + json.dumps(two).replace("conv-1", "conv-2") + "\n")
    assert detect_format(lines) == "otel"
    log = read_events(tmp_path, owner="acme")
    runs = set(pc.cast(log.table.column("run_id"), "string").to_pylist())
    assert {"conv-1", "conv-2"} <= runs
    conv2 = log.run("conv-2", tenant_id="acme").table
    assert set(conv2.column("source_line").to_pylist()) == {3}
    assert set(log.run("conv-1", tenant_id="acme").table.column("source_line").to_pylist()) == {1}


def test_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    span = {"traceId": "zz", "spanId": "00f067aa0ba902b7", "name": "x",
            "startTimeUnixNano": "1", "endTimeUnixNano": "2"}
    bad.write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [' + json.dumps(span)
                   + "]}]}]}\n{not json\n")
    with pytest.raises(LoadError) as info:
        read_otel(bad, owner="acme")
    assert info.value.reason == "bad_span" and info.value.line == 1
    log = read_otel(bad, owner="acme", errors="quarantine")
    assert log.table.num_rows == 0
    assert log.quarantine.column("reason").to_pylist() == ["bad_span", "bad_json"]
    with pytest.raises(LoadError, match="reason=bad_tenant"):
        read_otel(bad, owner="")
