"""The older GenAI content forms, as real instrumentations write them today, read with read_otel.

test_otel_forms.py builds each form by hand; here each comes from an instrumentation library
run for real against a mocked HTTP transport (no network, no API key), its spans captured by
the OpenTelemetry SDK's in-memory exporter and written as OTLP/JSON with the OTLP exporter's own
encoder (what a collector's file exporter writes). The packages are pinned in the ``dev`` extra
(pyproject.toml); without them these tests skip locally and fail under CI=true.

* OpenLLMetry's ``opentelemetry-instrumentation-ollama``: numbered ``gen_ai.prompt.{i}.*`` /
  ``gen_ai.completion.{i}.*`` attributes, tool calls without ids (Ollama's API has none), no
  ``gen_ai.operation.name`` (``llm.request.type`` instead);
* ``openinference-instrumentation-openai``: OpenInference's ``llm.input_messages.*`` /
  ``llm.output_messages.*`` / ``llm.token_count.*`` / ``llm.finish_reason``;
* Azure AI Inference's tracing (``azure-ai-inference``): one span event per message
  (``gen_ai.user.message`` ... ``gen_ai.choice``) whose body is JSON in the event attribute
  ``gen_ai.event.content``.

Each test counts runs, calls, tool calls, tool results and tokens from the captured OTLP/JSON
itself (plain ``json``), and compares with what replaykit reads.

No instrumentation installable beside these pins writes ``gen_ai.prompt`` / ``gen_ai.completion``
as one JSON attribute or ``gen_ai.content.prompt`` span events: the span-event form is read from
Langtrace output recorded once (test_otel_recorded_samples.py), the attribute form from
hand-built spans in test_otel_forms.py only.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

import replaykit as rk
from replaykit.io.otel import read_otel

_NEEDED = ("openai", "httpx", "ollama", "requests", "opentelemetry.sdk",
           "opentelemetry.exporter.otlp.proto.common", "opentelemetry.instrumentation.ollama",
           "openinference.instrumentation.openai", "azure.ai.inference",
           "azure.core.tracing.ext.opentelemetry_span")


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
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}


@pytest.fixture
def provider() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    yield tp, exporter
    tp.shutdown()


def _write(exporter: InMemorySpanExporter, path: Path) -> Path:
    path.write_text(json_format.MessageToJson(encode_spans(exporter.get_finished_spans())))
    return path


# ------------------------------------------------------- an independent reading of OTLP/JSON


def _spans(path: Path) -> list[dict[str, Any]]:
    doc = json.loads(path.read_text())
    return [sp for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for sp in ss["spans"]]


def _value(v: dict[str, Any]) -> Any:
    (kind, x), = v.items()
    if kind == "arrayValue":
        return [_value(i) for i in x.get("values", [])]
    return int(x) if kind == "intValue" else x


def _attrs(item: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: _value(a["value"]) for a in item.get("attributes", [])}


def _col(log: rk.EventLog, name: str) -> list[Any]:
    c = log.table.column(name)
    return (pc.cast(c, "string") if str(c.type).startswith("dictionary") else c).to_pylist()


def _check_counts(log: rk.EventLog, path: Path, *, chats: list[dict[str, Any]],
                  tokens: tuple[str, str], tool_calls: int, tool_results: list[str]) -> None:
    """runs / calls / tools / results / tokens of ``log`` against the raw file's."""
    spans = _spans(path)
    assert len(log.run_ids) == len({sp["traceId"] for sp in spans}) == 1
    calls = log.calls_df()
    assert len(calls) == len(chats)
    assert calls.input_tokens.tolist() == [_attrs(sp)[tokens[0]] for sp in chats]
    assert calls.output_tokens.tolist() == [_attrs(sp)[tokens[1]] for sp in chats]
    tools = log.tools_df()
    assert len(tools) == tool_calls
    assert sorted(tools.result_text.tolist()) == sorted(tool_results)
    assert tools.has_result.all() and not tools.is_error.any()
    assert len(log.quarantine) == 0


# ------------------------------------------------------------------------------ the mocks


def _chat_reply(n: int) -> tuple[dict[str, Any], str, tuple[int, int]]:
    """An OpenAI-style assistant message: a tool call first, then text."""
    if n == 1:
        return ({"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_abc", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
                "tool_calls", (11, 7))
    return {"role": "assistant", "content": "Rainy."}, "stop", (30, 2)


def _completion(n: int) -> dict[str, Any]:
    msg, finish, (i, o) = _chat_reply(n)
    return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1,
            "model": "gpt-4o-mini", "choices": [{"index": 0, "finish_reason": finish,
                                                 "message": msg}],
            "usage": {"prompt_tokens": i, "completion_tokens": o, "total_tokens": i + o}}


# ------------------------------------------------------------- OpenLLMetry's Ollama spans


def _drive_ollama(tp: TracerProvider) -> None:
    import ollama

    n = {"i": 0}

    def handle(request: httpx.Request) -> httpx.Response:
        n["i"] += 1
        if n["i"] == 1:
            msg: dict[str, Any] = {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
                {"function": {"name": "get_weather", "arguments": {"city": "Lyon"}}}]}
        else:
            sent = json.loads(request.content)["messages"]
            assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool"]
            msg = {"role": "assistant", "content": "Rainy in both."}
        return httpx.Response(200, json={
            "model": "llama3.2", "created_at": "2026-01-01T00:00:00Z", "message": msg,
            "done": True, "done_reason": "stop", "prompt_eval_count": 11 * n["i"],
            "eval_count": 7 + n["i"]})

    client = ollama.Client(host="http://mock:11434", transport=httpx.MockTransport(handle))
    messages: list[dict[str, Any]] = [{"role": "user", "content": "weather in Paris and Lyon?"}]
    with tp.get_tracer("app").start_as_current_span("handle request"):
        first = client.chat(model="llama3.2", messages=messages, tools=[WEATHER])
        messages.append(first.message.model_dump(exclude_none=True))
        for call in first.message.tool_calls or []:
            messages.append({"role": "tool", "tool_name": call.function.name,
                             "content": f"rainy in {call.function.arguments['city']}"})
        client.chat(model="llama3.2", messages=messages, tools=[WEATHER])


def test_openllmetry_ollama_numbered_attributes(provider: Any, tmp_path: Path) -> None:
    from opentelemetry.instrumentation.ollama import OllamaInstrumentor

    tp, exporter = provider
    inst = OllamaInstrumentor()
    inst.instrument(tracer_provider=tp)
    try:
        _drive_ollama(tp)
    finally:
        inst.uninstrument()
    path = _write(exporter, tmp_path / "ollama.json")
    log = read_otel(path, owner=TENANT)
    spans = _spans(path)
    chats = [sp for sp in spans if _attrs(sp).get("llm.request.type") == "chat"]
    assert len(chats) == 2
    assert not any("gen_ai.operation.name" in _attrs(sp) for sp in spans)
    last = _attrs(chats[-1])
    # the form: numbered attributes; the calls the model asked for appear only in the next
    # call's history (gen_ai.completion.0.* has no tool calls), without ids
    assert not any(".tool_calls." in k for sp in chats for k in _attrs(sp)
                   if k.startswith("gen_ai.completion."))
    asked = sorted({k.split(".tool_calls.")[1].split(".")[0] for k in last
                    if k.startswith("gen_ai.prompt.") and ".tool_calls." in k})
    assert not any(k.endswith(".tool_calls.0.id") for k in last)
    results = [last[f"gen_ai.prompt.{i}.content"] for i in range(10)
               if last.get(f"gen_ai.prompt.{i}.role") == "tool"]
    _check_counts(log, path, chats=chats, tokens=("gen_ai.usage.input_tokens",
                                                  "gen_ai.usage.output_tokens"),
                  tool_calls=len(asked), tool_results=results)
    assert len(asked) == 2 and results == ["rainy in Paris", "rainy in Lyon"]
    kinds = _col(log, "kind")
    assert kinds == ["other", "model_response", "tool_call", "tool_call", "tool_result",
                     "tool_result", "model_response"]
    assert [json.loads(x) for x in _col(log, "text")[2:4]] == [{"city": "Paris"},
                                                              {"city": "Lyon"}]
    # the results answer the calls in order (the history names no call either)
    assert _col(log, "ref_id")[2:4] == _col(log, "ref_id")[4:6]
    assert len(set(_col(log, "ref_id")[2:4])) == 2
    assert _col(log, "text")[6] == "Rainy in both." == last["gen_ai.completion.0.content"]
    for payload in _col(log, "payload")[1::6]:
        assert json.loads(payload)["genai"]["contentForms"] == ["numbered"]


# ------------------------------------------------------- OpenInference's OpenAI spans


def _drive_openai(tp: TracerProvider) -> None:
    import openai

    n = {"i": 0}

    def handle(request: httpx.Request) -> httpx.Response:
        n["i"] += 1
        return httpx.Response(200, json=_completion(n["i"]))

    client = openai.OpenAI(api_key="test", base_url="http://mock/v1", http_client=httpx.Client(
        transport=httpx.MockTransport(handle)))
    messages: list[dict[str, Any]] = [{"role": "system", "content": "be brief"},
                                      {"role": "user", "content": "weather in Paris?"}]
    with tp.get_tracer("app").start_as_current_span("handle request"):
        first = client.chat.completions.create(model="gpt-4o-mini", messages=messages,
                                               tools=[WEATHER])
        call = first.choices[0].message.tool_calls[0]
        messages += [first.choices[0].message.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call.id, "content": "rainy, 57F"}]
        client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=[WEATHER])


def test_openinference_openai_llm_messages(provider: Any, tmp_path: Path) -> None:
    from openinference.instrumentation.openai import OpenAIInstrumentor

    tp, exporter = provider
    inst = OpenAIInstrumentor()
    inst.instrument(tracer_provider=tp)
    try:
        _drive_openai(tp)
    finally:
        inst.uninstrument()
    path = _write(exporter, tmp_path / "openinference.json")
    log = read_otel(path, owner=TENANT)
    spans = _spans(path)
    chats = [sp for sp in spans if _attrs(sp).get("openinference.span.kind") == "LLM"]
    assert len(chats) == 2
    out_calls = {v for sp in chats for k, v in _attrs(sp).items()
                 if k.startswith("llm.output_messages.") and k.endswith(".tool_call.id")}
    last = _attrs(chats[-1])
    results = [last[f"llm.input_messages.{i}.message.content"] for i in range(10)
               if last.get(f"llm.input_messages.{i}.message.role") == "tool"]
    assert out_calls == {"call_abc"} and results == ["rainy, 57F"]
    _check_counts(log, path, chats=chats, tokens=("llm.token_count.prompt",
                                                  "llm.token_count.completion"),
                  tool_calls=len(out_calls), tool_results=results)
    assert _col(log, "kind") == ["other", "model_response", "tool_call", "tool_result",
                                 "model_response"]
    # llm.finish_reason, the OpenAI spelling, mapped
    assert [_attrs(sp)["llm.finish_reason"] for sp in chats] == ["tool_calls", "stop"]
    assert _col(log, "finish")[1::3] == ["tool-calls", "stop"]
    assert _col(log, "ref_id")[2:4] == ["call_abc", "call_abc"]
    assert json.loads(_col(log, "text")[2]) == {"city": "Paris"}
    assert _col(log, "text")[4] == "Rainy." == last["llm.output_messages.0.message.content"]


# ------------------------------------------------------ Azure AI Inference's span events


def _record_azure(out: str) -> None:
    """Azure AI Inference's tracing, in a fresh process (run by the test below): azure-core
    traces through the global tracer provider, which a process can set only once."""
    import requests
    import urllib3
    from azure.ai.inference import ChatCompletionsClient
    from azure.ai.inference.models import (
        AssistantMessage,
        ChatCompletionsToolDefinition,
        FunctionDefinition,
        SystemMessage,
        ToolMessage,
        UserMessage,
    )
    from azure.ai.inference.tracing import AIInferenceInstrumentor
    from azure.core.credentials import AzureKeyCredential
    from azure.core.pipeline.transport import RequestsTransport
    from azure.core.settings import settings
    from opentelemetry import trace

    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(tp)
    settings.tracing_implementation = "opentelemetry"
    AIInferenceInstrumentor().instrument(enable_content_recording=True)
    n = {"i": 0}

    class Mock(requests.adapters.BaseAdapter):  # no network: every request answered here
        def send(self, request: Any, **kwargs: Any) -> requests.Response:
            n["i"] += 1
            data = json.dumps(_completion(n["i"])).encode()
            r = requests.Response()
            r.status_code, r.url, r.request = 200, request.url, request
            r.headers["content-type"] = "application/json"
            r.raw = urllib3.response.HTTPResponse(
                body=io.BytesIO(data), status=200, preload_content=False,
                headers={"content-type": "application/json", "content-length": str(len(data))})
            return r

        def close(self) -> None:
            pass

    session = requests.Session()
    session.mount("https://", Mock())
    client = ChatCompletionsClient(endpoint="https://mock.invalid/models",
                                   credential=AzureKeyCredential("test"),
                                   transport=RequestsTransport(session=session))
    tool = ChatCompletionsToolDefinition(function=FunctionDefinition(
        name="get_weather", parameters=WEATHER["function"]["parameters"]))
    messages: list[Any] = [SystemMessage("be brief"), UserMessage("weather in Paris?")]
    with tp.get_tracer("app").start_as_current_span("handle request"):
        first = client.complete(messages=messages, tools=[tool], model="gpt-4o-mini")
        calls = first.choices[0].message.tool_calls
        messages += [AssistantMessage(tool_calls=calls),
                     ToolMessage("rainy, 57F", tool_call_id=calls[0].id)]
        client.complete(messages=messages, tools=[tool], model="gpt-4o-mini")
    _write(exporter, Path(out, "azure.json"))


def test_azure_ai_inference_span_events(tmp_path: Path) -> None:
    here = Path(__file__).resolve().parent
    subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                    "import test_otel_older_instrumentations as t; t._record_azure(sys.argv[2])",
                    str(here), str(tmp_path)], check=True, capture_output=True, timeout=120,
                   env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    path = tmp_path / "azure.json"
    log = read_otel(path, owner=TENANT)
    spans = _spans(path)
    chats = [sp for sp in spans if _attrs(sp).get("gen_ai.operation.name") == "chat"]
    assert len(chats) == 2
    assert not any(k.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.prompt"))
                   for sp in chats for k in _attrs(sp))
    events = [(e["name"], json.loads(_attrs(e)["gen_ai.event.content"]))
              for sp in chats for e in sp.get("events", [])]
    assert {name for name, _ in events} == {"gen_ai.system.message", "gen_ai.user.message",
                                            "gen_ai.assistant.message", "gen_ai.tool.message",
                                            "gen_ai.choice"}
    asked = {c["id"] for name, body in events if name == "gen_ai.choice"
             for c in body["message"].get("tool_calls", [])}
    results = [body["content"] for name, body in events if name == "gen_ai.tool.message"]
    assert asked == {"call_abc"} and results == ["rainy, 57F"]
    _check_counts(log, path, chats=chats, tokens=("gen_ai.usage.input_tokens",
                                                  "gen_ai.usage.output_tokens"),
                  tool_calls=len(asked), tool_results=results)
    model = [i for i, k in enumerate(_col(log, "kind")) if k == "model_response"]
    assert [_col(log, "finish")[i] for i in model] == ["tool-calls", "stop"]
    assert _col(log, "text")[model[1]] == "Rainy."
    chat = json.loads(_col(log, "payload")[model[0]])
    assert chat["genai"]["contentForms"] == ["message events"]
    assert chat["genai"]["system_instructions"] == [{"type": "text", "content": "be brief"}]
