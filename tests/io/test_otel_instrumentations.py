"""Spans made by real GenAI instrumentation libraries, read back with ``read_otel``.

Each library runs for real against a mocked HTTP transport (``httpx.MockTransport``) or
pydantic-ai's ``FunctionModel`` -- no network, no API key -- under the OpenTelemetry SDK's
in-memory exporter; the spans are encoded by the OTLP exporter's own encoder and written as
OTLP/JSON. The packages are pinned in the ``dev`` extra (pyproject.toml): without them these
tests skip locally and fail under CI=true.

* OpenTelemetry's ``opentelemetry-instrumentation-openai-v2`` (GenAI conventions, content on
  the span with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY``);
* OpenLLMetry's ``opentelemetry-instrumentation-openai`` (finish reason ``tool_call``);
* the OpenAI Agents SDK through ``openinference-instrumentation-openai-agents`` (OpenInference
  conventions: tool spans without call ids);
* pydantic-ai's own instrumentation, format versions 2 (``tool_arguments`` /
  ``tool_response``) to 6.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

import replaykit as rk
from replaykit._base.json import args_hash
from replaykit.io.otel import read_otel

_NEEDED = ("openai", "httpx", "agents", "pydantic_ai", "opentelemetry.sdk",
           "opentelemetry.instrumentation.openai_v2", "opentelemetry.instrumentation.openai",
           "openinference.instrumentation.openai_agents")


def _absent(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except ModuleNotFoundError:  # a parent package is missing
        return True


_MISSING = [m for m in _NEEDED if _absent(m)]
if _MISSING:  # pragma: no cover - depends on the environment
    if os.environ.get("CI") == "true":
        raise ImportError(f"instrumentation test packages missing: {_MISSING}")
    pytest.skip(f"instrumentation packages not installed: {_MISSING}", allow_module_level=True)

import httpx  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

TENANT = "acme"
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object",
                                          "properties": {"city": {"type": "string"}}}}}


@pytest.fixture
def provider() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    yield tp, exporter
    tp.shutdown()


def _read(exporter: InMemorySpanExporter, path: Path) -> tuple[rk.EventLog, list[Any]]:
    spans = list(exporter.get_finished_spans())
    path.write_text(json_format.MessageToJson(encode_spans(spans)))
    return read_otel(path, owner=TENANT), spans


def _hex(span_id: int) -> str:
    return format(span_id, "016x")


def _col(t: Any, name: str) -> list[Any]:
    c = t.column(name)
    return (pc.cast(c, "string") if str(c.type).startswith("dictionary") else c).to_pylist()


def _check_tree(log: rk.EventLog, spans: list[Any]) -> None:
    """Every span is a row (its first row has event_id = span id) whose payload keeps the
    SDK's parent span id; the whole trace is one run."""
    parent = {_hex(s.context.span_id): _hex(s.parent.span_id) if s.parent else None
              for s in spans}
    t = log.table
    assert set(_col(t, "event_id")) == set(parent)
    for eid, payload in zip(_col(t, "event_id"), _col(t, "payload"), strict=True):
        p = json.loads(payload)
        if "part" not in p:
            assert p["parentSpanId"] == parent[eid]
    assert len({s.context.trace_id for s in spans}) == 1 == len(log.run_ids)


def _chat_handler() -> Any:
    """An OpenAI chat-completions endpoint: a tool call first, then text."""
    calls = {"n": 0}

    def handle(request: httpx.Request) -> httpx.Response:
        calls["n"] += 1
        if calls["n"] == 1:
            msg = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_abc", "type": "function",
                 "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}
            finish, usage = "tool_calls", (11, 7)
        else:
            sent = json.loads(request.content)["messages"]
            assert sent[-1] == {"role": "tool", "tool_call_id": "call_abc",
                                "content": "rainy, 57F"}
            msg, finish, usage = {"role": "assistant", "content": "Rainy."}, "stop", (30, 2)
        return httpx.Response(200, json={
            "id": f"chatcmpl-{calls['n']}", "object": "chat.completion", "created": 1,
            "model": "gpt-4o-mini", "choices": [{"index": 0, "finish_reason": finish,
                                                 "message": msg}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                      "total_tokens": sum(usage)}})
    return handle


def _drive_openai(tp: TracerProvider) -> None:
    """Two chat calls under one application span, the tool run by the application."""
    import openai

    client = openai.OpenAI(api_key="test", base_url="http://mock/v1",
                           http_client=httpx.Client(transport=httpx.MockTransport(
                               _chat_handler())))
    messages: list[dict[str, Any]] = [{"role": "user", "content": "weather in Paris?"}]
    with tp.get_tracer("app").start_as_current_span("handle request"):
        first = client.chat.completions.create(model="gpt-4o-mini", messages=messages,
                                               tools=[WEATHER_TOOL])
        call = first.choices[0].message.tool_calls[0]
        messages += [first.choices[0].message.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call.id, "content": "rainy, 57F"}]
        client.chat.completions.create(model="gpt-4o-mini", messages=messages,
                                       tools=[WEATHER_TOOL])


def _check_openai_run(log: rk.EventLog, spans: list[Any]) -> None:
    _check_tree(log, spans)
    t = log.table
    assert _col(t, "kind") == ["other", "model_response", "tool_call", "tool_result",
                               "model_response"]
    assert _col(t, "finish")[1::3] == ["tool-calls", "stop"]
    assert t.column("input_tokens").to_pylist()[1::3] == [11, 30]
    assert t.column("output_tokens").to_pylist()[1::3] == [7, 2]
    assert _col(t, "text")[4] == "Rainy."
    assert _col(t, "ref_id")[2:4] == ["call_abc", "call_abc"]
    assert _col(t, "tool_name")[2:4] == ["get_weather", "get_weather"]
    assert json.loads(_col(t, "text")[2]) == {"city": "Paris"}
    assert t.column("args_hash")[2].as_py() == args_hash({"city": "Paris"})
    assert _col(t, "text")[3] == "rainy, 57F"
    assert _col(t, "is_error") == [False] * 5
    tools = log.tools_df()
    assert tools.tool_name.tolist() == ["get_weather"]
    assert all(json.loads(p)["replayable"] for p in _col(t, "payload"))


def test_opentelemetry_openai_v2(provider: Any, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    from opentelemetry.instrumentation import _semconv
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    monkeypatch.setattr(_semconv._OpenTelemetrySemanticConventionStability, "_initialized",
                        False)  # read the opt-in again (it is cached process-wide)
    tp, exporter = provider
    inst = OpenAIInstrumentor()
    inst.instrument(tracer_provider=tp)
    try:
        _drive_openai(tp)
    finally:
        inst.uninstrument()
    log, spans = _read(exporter, tmp_path / "v2.json")
    assert [s.name for s in spans if s.name.startswith("chat")] == ["chat gpt-4o-mini"] * 2
    _check_openai_run(log, spans)


def test_openllmetry_openai(provider: Any, tmp_path: Path) -> None:
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    tp, exporter = provider
    inst = OpenAIInstrumentor()
    inst.instrument(tracer_provider=tp)
    try:
        _drive_openai(tp)
    finally:
        inst.uninstrument()
    log, spans = _read(exporter, tmp_path / "openllmetry.json")
    reasons = [s.attributes.get("gen_ai.response.finish_reasons") for s in spans]
    assert ("tool_call",) in reasons  # the semantic conventions' spelling, mapped
    _check_openai_run(log, spans)


def test_openai_agents_openinference(provider: Any, tmp_path: Path) -> None:
    import agents
    import openai
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    tp, exporter = provider
    n = {"i": 0}

    def handle(request: httpx.Request) -> httpx.Response:
        n["i"] += 1
        if n["i"] == 1:
            msg: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_abc", "type": "function", "function": {
                    "name": "get_weather", "arguments": '{"city": "Paris"}'}},
                {"id": "call_bad", "type": "function", "function": {
                    "name": "explode", "arguments": "{}"}}]}
            finish = "tool_calls"
        else:
            msg, finish = {"role": "assistant", "content": "Rainy in Paris."}, "stop"
        return httpx.Response(200, json={
            "id": f"c{n['i']}", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "finish_reason": finish, "message": msg}],
            "usage": {"prompt_tokens": 10 * n["i"], "completion_tokens": 3 * n["i"],
                      "total_tokens": 13 * n["i"]}})

    @agents.function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"rainy in {city}"

    @agents.function_tool
    def explode() -> str:
        """Always fails."""
        raise RuntimeError("boom")

    client = openai.AsyncOpenAI(api_key="test", base_url="http://mock/v1",
                                http_client=httpx.AsyncClient(
                                    transport=httpx.MockTransport(handle)))
    agent = agents.Agent(name="planner", instructions="be brief", tools=[get_weather, explode],
                         model=agents.OpenAIChatCompletionsModel(model="m",
                                                                 openai_client=client))
    inst = OpenAIAgentsInstrumentor()
    inst.instrument(tracer_provider=tp, exclusive_processor=True)  # no export to OpenAI
    try:
        assert agents.Runner.run_sync(agent, "weather?").final_output == "Rainy in Paris."
    finally:
        inst.uninstrument()
    log, spans = _read(exporter, tmp_path / "agents.json")
    _check_tree(log, spans)
    t = log.table
    kinds = _col(t, "kind")
    assert kinds[0] == "session" and kinds.count("subagent_start") == 1
    models = [i for i, k in enumerate(kinds) if k == "model_response"]
    assert [t.column("input_tokens")[i].as_py() for i in models] == [10, 20]
    assert [t.column("output_tokens")[i].as_py() for i in models] == [3, 6]
    # OpenInference records no finish reason: not guessed
    assert [_col(t, "finish")[i] for i in models] == ["unknown", "unknown"]
    assert _col(t, "text")[models[1]] == "Rainy in Paris."
    calls = [i for i, k in enumerate(kinds) if k == "tool_call"]
    results = [i for i, k in enumerate(kinds) if k == "tool_result"]
    # one row pair per tool span, linked to the call ids the model asked for
    assert [_col(t, "ref_id")[i] for i in calls] == ["call_abc", "call_bad"]
    assert [_col(t, "ref_id")[i] for i in results] == ["call_abc", "call_bad"]
    assert [_col(t, "tool_name")[i] for i in calls] == ["get_weather", "explode"]
    assert json.loads(_col(t, "text")[calls[0]]) == {"city": "Paris"}
    assert _col(t, "text")[results[0]] == "rainy in Paris"
    assert [_col(t, "is_error")[i] for i in results] == [False, True]
    assert models[0] < calls[0] < results[0] < models[1]


@pytest.mark.parametrize("version", [2, 3, 4, 5, 6])
def test_pydantic_ai(provider: Any, tmp_path: Path, version: int) -> None:
    import warnings

    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.usage import RequestUsage

    def model(messages: list[Any], info: Any) -> ModelResponse:
        if not any(isinstance(p, ToolReturnPart) for m in messages
                   for p in getattr(m, "parts", [])):
            return ModelResponse(parts=[
                ToolCallPart("get_weather", {"city": "Paris"}, tool_call_id="call_1"),
                ToolCallPart("explode", {}, tool_call_id="call_2")],
                usage=RequestUsage(input_tokens=10, output_tokens=3), finish_reason="tool_call")
        return ModelResponse(parts=[TextPart("Rainy.")], finish_reason="stop",
                             usage=RequestUsage(input_tokens=20, output_tokens=4))

    tp, exporter = provider
    agent = Agent(FunctionModel(model))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # formats 2-4 are deprecated, still written
        agent.instrument = InstrumentationSettings(tracer_provider=tp, version=version,
                                                   include_content=True)

    @agent.tool_plain
    def get_weather(city: str) -> str:
        return f"rainy in {city}"

    @agent.tool_plain(retries=1)
    def explode() -> str:
        raise ModelRetry("boom")

    assert agent.run_sync("weather?").output == "Rainy."
    log, spans = _read(exporter, tmp_path / f"pydantic_ai_v{version}.json")
    tool_attrs = [s.attributes for s in spans if s.attributes.get("gen_ai.tool.name")]
    if version == 2:
        assert all("tool_arguments" in a and "gen_ai.tool.call.arguments" not in a
                   for a in tool_attrs)
    _check_tree(log, spans)
    t = log.table
    assert _col(t, "kind") == ["session", "model_response", "tool_call", "tool_call",
                               "tool_result", "tool_result", "model_response"]
    assert _col(t, "finish")[1::5] == ["tool-calls", "stop"]
    assert t.column("input_tokens").to_pylist()[1::5] == [10, 20]
    assert t.column("output_tokens").to_pylist()[1::5] == [3, 4]
    assert _col(t, "text")[6] == "Rainy."
    assert sorted(zip(_col(t, "ref_id")[2:6], _col(t, "tool_name")[2:6],
                      _col(t, "kind")[2:6], _col(t, "text")[2:6],
                      _col(t, "is_error")[2:6], strict=True)) == [
        ("call_1", "get_weather", "tool_call", '{"city":"Paris"}', False),
        ("call_1", "get_weather", "tool_result", "rainy in Paris", False),
        ("call_2", "explode", "tool_call", "{}", False),
        ("call_2", "explode", "tool_result", "boom", True)]
    assert all(json.loads(p)["replayable"] for p in _col(t, "payload"))
    conv = {s.attributes.get("gen_ai.conversation.id") for s in spans}
    assert log.run_ids == sorted(conv)


# ------------------------------------------------------------------ content in OTLP log records


@pytest.fixture
def logs() -> Iterator[Any]:
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import (
        InMemoryLogRecordExporter,
        SimpleLogRecordProcessor,
    )

    exporter = InMemoryLogRecordExporter()
    lp = LoggerProvider()
    lp.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    yield lp, exporter
    lp.shutdown()


def _read_with_logs(exporter: InMemorySpanExporter, log_exporter: Any, tmp_path: Path,
                    name: str) -> tuple[rk.EventLog, list[Any], list[Any]]:
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs

    spans = list(exporter.get_finished_spans())
    records = list(log_exporter.get_finished_logs())
    (tmp_path / f"{name}.traces.json").write_text(json_format.MessageToJson(encode_spans(spans)))
    (tmp_path / f"{name}.logs.json").write_text(json_format.MessageToJson(encode_logs(records)))
    return read_otel(tmp_path, owner=TENANT), spans, records


def _event_names(records: list[Any]) -> list[str]:
    out = []
    for r in records:
        lr = getattr(r, "log_record", r)
        out.append(getattr(lr, "event_name", None) or (lr.attributes or {}).get("event.name"))
    return out


def _span_content_free(spans: list[Any]) -> None:
    """The spans themselves hold no content: it is only in the log records."""
    for s in spans:
        assert not any(k.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.prompt",
                                     "gen_ai.completion")) for k in s.attributes), s.attributes


def test_openai_v2_operation_details_events(provider: Any, logs: Any, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """openai-v2 with the latest conventions and EVENT_ONLY: one
    gen_ai.client.inference.operation.details record per call carries the messages."""
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "EVENT_ONLY")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT", "true")
    from opentelemetry.instrumentation import _semconv
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    monkeypatch.setattr(_semconv._OpenTelemetrySemanticConventionStability, "_initialized",
                        False)
    tp, exporter = provider
    lp, log_exporter = logs
    inst = OpenAIInstrumentor()
    inst.instrument(tracer_provider=tp, logger_provider=lp)
    try:
        _drive_openai(tp)
    finally:
        inst.uninstrument()
    log, spans, records = _read_with_logs(exporter, log_exporter, tmp_path, "v2details")
    assert _event_names(records) == ["gen_ai.client.inference.operation.details"] * 2
    _span_content_free(spans)
    _check_openai_run(log, spans)


def _record_openllmetry_events(out: str) -> None:
    """OpenLLMetry with use_attributes=False, in a fresh process (run by the tests below):
    after an earlier instrument/uninstrument in the same process its wrappers stay on and
    emit every event twice, half of them inside spans of the earlier, shut-down provider."""
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import (
        InMemoryLogRecordExporter,
        SimpleLogRecordProcessor,
    )

    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    log_exporter = InMemoryLogRecordExporter()
    lp = LoggerProvider()
    lp.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
    OpenAIInstrumentor(use_attributes=False).instrument(tracer_provider=tp, logger_provider=lp)
    _drive_openai(tp)
    spans, records = exporter.get_finished_spans(), log_exporter.get_finished_logs()
    Path(out, "openllmetry.traces.json").write_text(
        json_format.MessageToJson(encode_spans(spans)))
    Path(out, "openllmetry.logs.json").write_text(
        json_format.MessageToJson(encode_logs(records)))


@pytest.fixture(scope="module")
def openllmetry_events(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("openllmetry_events")
    here = Path(__file__).resolve().parent
    subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                    "import test_otel_instrumentations as t; "
                    "t._record_openllmetry_events(sys.argv[2])", str(here), str(out)],
                   check=True, capture_output=True, timeout=120,
                   env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    return out


def _spans_of_file(path: Path) -> list[dict[str, Any]]:
    doc = json.loads(path.read_text())
    return [sp for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for sp in ss["spans"]]


def test_openllmetry_log_events(openllmetry_events: Path) -> None:
    """OpenLLMetry with use_attributes=False: per-message gen_ai.*.message / gen_ai.choice
    log records (tool calls beside the choice's message, tool messages without their call
    id), joined to the chat spans."""
    log = read_otel(openllmetry_events, owner=TENANT)
    logs_doc = json.loads((openllmetry_events / "openllmetry.logs.json").read_text())
    names = [r["eventName"] for rl in logs_doc["resourceLogs"] for sl in rl["scopeLogs"]
             for r in sl["logRecords"]]
    assert {"gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.tool.message",
            "gen_ai.choice"} <= set(names)
    spans = _spans_of_file(openllmetry_events / "openllmetry.traces.json")
    assert not any(a["key"].startswith(("gen_ai.input", "gen_ai.output", "gen_ai.prompt",
                                        "gen_ai.completion"))
                   for sp in spans for a in sp.get("attributes", []))
    t = log.table
    assert _col(t, "kind") == ["other", "model_response", "tool_call", "tool_result",
                               "model_response"]
    assert _col(t, "finish")[1::3] == ["tool-calls", "stop"]
    assert t.column("input_tokens").to_pylist()[1::3] == [11, 30]
    assert _col(t, "text")[4] == "Rainy."
    assert _col(t, "ref_id")[2:4] == ["call_abc", "call_abc"]
    assert _col(t, "tool_name")[2:4] == ["get_weather", "get_weather"]
    assert _col(t, "text")[3] == "rainy, 57F"
    result = json.loads(_col(t, "payload")[3])
    assert result["messagePart"]["idFrom"] == "position"  # the event lost the call id
    chat = json.loads(_col(t, "payload")[1])
    assert chat["genai"]["contentForms"] == ["message events"]
    assert [e["name"] for e in chat["logs"]] == ["gen_ai.user.message", "gen_ai.choice"]


def test_logs_without_their_spans_are_orphans(openllmetry_events: Path) -> None:
    only_logs = openllmetry_events / "openllmetry.logs.json"
    with pytest.raises(rk.LoadError, match="orphan_log_record"):
        read_otel(only_logs, owner=TENANT)
    q = read_otel(only_logs, owner=TENANT, errors="quarantine").quarantine
    assert q.column("reason").to_pylist() == ["orphan_log_record"] * 6


# ------------------------------------------------------------- util-genai: workflow/agent/tool


def _drive_util_genai(h: Any, gt: Any) -> None:
    """A workflow running an agent that asks for a tool, runs it and answers."""
    with h.workflow("weather-flow"), h.invoke_local_agent(agent_name="planner"):
        with h.inference("openai", request_model="gpt-4o-mini") as chat:
            chat.input_messages = [gt.InputMessage("user", [gt.Text("weather in Paris?")])]
            chat.output_messages = [gt.OutputMessage(
                "assistant", [gt.ToolCallRequest({"city": "Paris"}, "get_weather", "call_1")],
                "tool_call")]
            chat.input_tokens, chat.output_tokens = 11, 7
            chat.finish_reasons = ["tool_call"]
        with h.tool("get_weather", tool_call_id="call_1") as tool:
            tool.arguments = {"city": "Paris"}
            tool.tool_result = "rainy"


def test_util_genai_workflow_agent_tool(provider: Any, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenTelemetry's GenAI utility (what its instrumentations build on) writes
    invoke_workflow, invoke_agent, chat and execute_tool spans."""
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    from opentelemetry.instrumentation import _semconv
    from opentelemetry.util.genai import handler as genai_handler
    from opentelemetry.util.genai import types as gt

    monkeypatch.setattr(_semconv._OpenTelemetrySemanticConventionStability, "_initialized",
                        False)
    tp, exporter = provider
    _drive_util_genai(genai_handler.TelemetryHandler(tracer_provider=tp), gt)
    log, spans = _read(exporter, tmp_path / "util_genai.json")
    ops = [s.attributes.get("gen_ai.operation.name") for s in spans]
    assert {"invoke_workflow", "invoke_agent", "execute_tool", "chat"} <= set(ops)
    _check_tree(log, spans)
    t = log.table
    kinds_ = _col(t, "kind")
    assert kinds_[0] == "session" and _col(t, "type")[0] == "invoke_workflow"
    assert kinds_.count("subagent_start") == 1 == kinds_.count("subagent_end")
    assert kinds_.count("tool_call") == 1 == kinds_.count("tool_result")
    tools = log.tools_df()
    assert tools.tool_name.tolist() == ["get_weather"]
    calls = log.calls_df()
    assert calls.input_tokens.tolist() == [11] and calls.output_tokens.tolist() == [7]


# ----------------------------------------------------------- bundled samples, counted twice


DATA = Path(__file__).resolve().parents[2] / "data" / "otel"


def _json_spans(path: Path) -> list[dict[str, Any]]:
    doc = json.loads(path.read_text())
    return [sp for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for sp in ss["spans"]]


def _attr(sp: dict[str, Any], key: str) -> Any:
    for a in sp.get("attributes", []):
        if a["key"] == key:
            return next(iter(a["value"].values()))
    return None


@pytest.mark.parametrize("sample", ["openai-v2", "openllmetry-events"])
def test_bundled_samples_agree_with_an_independent_count(sample: str) -> None:
    """The counts read_otel gives for data/otel, against a reading of the raw JSON: chat spans
    (operation chat), their token attributes, and the tool calls in their output (attribute
    messages, or gen_ai.choice log records)."""
    folder = DATA / sample
    log = read_otel(folder, owner=TENANT)
    spans = _json_spans(folder / "traces.json")
    chats = [sp for sp in spans if _attr(sp, "gen_ai.operation.name") == "chat"]
    calls = log.calls_df()
    assert len(calls) == len(chats) == 2
    assert sorted(calls.input_tokens) == sorted(int(_attr(sp, "gen_ai.usage.input_tokens"))
                                                for sp in chats)
    if sample == "openai-v2":
        asked = [p for sp in chats for m in json.loads(_attr(sp, "gen_ai.output.messages"))
                 for p in m["parts"] if p["type"] == "tool_call"]
    else:
        doc = json.loads((folder / "logs.json").read_text())
        choices = [r for rl in doc["resourceLogs"] for sl in rl["scopeLogs"]
                   for r in sl["logRecords"] if r.get("eventName") == "gen_ai.choice"]
        asked = [c for r in choices for kv in r["body"]["kvlistValue"]["values"]
                 if kv["key"] == "tool_calls" for c in kv["value"]["arrayValue"]["values"]]
    tools = log.tools_df()
    assert len(tools) == len(asked) == 1
    assert tools.has_result.tolist() == [True]
    assert len(log.quarantine) == 0 and len(log.run_ids) == 1
