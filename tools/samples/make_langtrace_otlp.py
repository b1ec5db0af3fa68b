"""Record real Langtrace OpenAI spans (the older ``gen_ai.prompt`` JSON form) as OTLP/JSON, for
tests/data/otel/langtrace/.

Langtrace's Python SDK writes the prompt as one span attribute ``gen_ai.prompt`` holding a JSON
array of the request's messages, and the completion as a span event
``gen_ai.content.completion`` whose attribute ``gen_ai.completion`` is JSON text. Not run by the
tests or CI (the SDK pins old boto3 and pulls transformers): run it in a throwaway virtualenv:

    python3 -m venv /tmp/lt-venv
    /tmp/lt-venv/bin/pip install langtrace-python-sdk==3.8.21 openai==3.57.0 \
        opentelemetry-exporter-otlp-proto-common==1.45.2
    /tmp/lt-venv/bin/python tools/samples/make_langtrace_otlp.py tests/data/otel/langtrace

It drives the SDK's ``OpenAIInstrumentation`` directly under an OpenTelemetry SDK tracer
provider with the in-memory exporter (``langtrace.init`` is not called: it would check PyPI for
a newer SDK and start Sentry error reporting), against tools/samples/fake_openai.py's server on
127.0.0.1 (nothing leaves the machine, no API key). Three traces: a weather agent under
``@with_langtrace_root_span`` (a chat call asking for ``get_weather``, the tool run by the
script without a span, a chat call answering); a two-turn chat under a root span; a chat call
the server fails with HTTP 500 (status ERROR). The spans are encoded with the OTLP exporter's
own encoder and written as OTLP/JSON (``langtrace.otlp.json``), what a collector's file exporter
writes.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fake_openai  # noqa: E402

os.environ.setdefault("LANGTRACE_ERROR_REPORTING", "False")


def main(out_dir: str) -> None:
    import openai
    from google.protobuf import json_format
    from langtrace_python_sdk.instrumentation import OpenAIInstrumentation
    from langtrace_python_sdk.utils.with_root_span import with_langtrace_root_span
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    srv, base_url = fake_openai.serve()
    exporter = InMemorySpanExporter()
    tp = TracerProvider(resource=Resource.create({"service.name": "replaykit-sample"}))
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(tp)  # with_langtrace_root_span uses the global provider
    OpenAIInstrumentation().instrument(tracer_provider=tp)
    client = openai.OpenAI(base_url=base_url, api_key="not-a-key", max_retries=0)
    weather = {"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}}

    @with_langtrace_root_span("weather-agent")
    def agent() -> None:
        messages: list[dict[str, object]] = [
            {"role": "system", "content": "You answer weather questions."},
            {"role": "user", "content": "What is the weather in Paris?"}]
        first = client.chat.completions.create(model="gpt-4o-mini", messages=messages,
                                               tools=[weather], temperature=0.2)
        msg = first.choices[0].message
        messages.append(msg.model_dump(exclude_none=True))
        for call in msg.tool_calls or []:
            city = json.loads(call.function.arguments)["city"]
            messages.append({"role": "tool", "tool_call_id": call.id,
                             "content": f"rainy, 14 C in {city}"})
        client.chat.completions.create(model="gpt-4o-mini", messages=messages,
                                       tools=[weather], temperature=0.2)

    @with_langtrace_root_span("chat-session")
    def chat() -> None:
        history: list[dict[str, object]] = []
        for turn in ("Hello, who are you?", "Tell me a short joke."):
            history.append({"role": "user", "content": turn})
            ans = client.chat.completions.create(model="gpt-4o-mini", messages=history,
                                                 max_tokens=64, seed=7)
            history.append({"role": "assistant", "content": ans.choices[0].message.content})

    agent()
    chat()
    try:
        client.chat.completions.create(model="fail-model",
                                       messages=[{"role": "user", "content": "fail please"}])
    except openai.APIStatusError:
        pass
    tp.force_flush()
    spans = exporter.get_finished_spans()
    (out / "langtrace.otlp.json").write_text(
        json_format.MessageToJson(encode_spans(spans)) + "\n")
    srv.shutdown()
    import importlib.metadata as md

    print(f"langtrace-python-sdk {md.version('langtrace-python-sdk')}: {len(spans)} spans in "
          f"{len({s.context.trace_id for s in spans})} traces")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/otel/langtrace")
