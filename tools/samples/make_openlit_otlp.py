"""Record real OpenLIT OpenAI spans and log records as OTLP/JSON, for tests/data/otel/openlit/.

OpenLIT 1.45's OpenAI instrumentation writes the current conventions' ``gen_ai.input.messages``
/ ``gen_ai.output.messages`` / ``gen_ai.system_instructions`` span attributes (its Mistral,
Together and AI21 ones add ``gen_ai.content.prompt`` span events carrying the same), a
``gen_ai.client.inference.operation.details`` log record per call, and request parameters it
was not given as their defaults (``seed`` 0, ``temperature`` / ``top_p`` 1.0). Not run by the
tests or CI (OpenLIT needs ``openai<3`` and pins OpenTelemetry's instrumentations below the
project's): run it in a throwaway virtualenv (opentelemetry-sdk 1.40: OpenLIT imports
``ConsoleLogRecordExporter``, which 1.38 lacks):

    python3 -m venv /tmp/olit-venv
    /tmp/olit-venv/bin/pip install openlit==1.45.0 "openai>=1.92,<3" \
        opentelemetry-sdk==1.40.0 opentelemetry-api==1.40.0 opentelemetry-exporter-otlp==1.40.0 \
        opentelemetry-instrumentation==0.61b0 opentelemetry-semantic-conventions==0.61b0 \
        opentelemetry-instrumentation-{aiohttp-client,asgi,django,falcon,fastapi,flask,httpx,\
pyramid,requests,starlette,tornado,urllib,urllib3,wsgi}==0.61b0
    /tmp/olit-venv/bin/python tools/samples/make_openlit_otlp.py tests/data/otel/openlit

It drives OpenLIT's ``OpenAIInstrumentor`` directly (``openlit.init`` is not called: it would
download a pricing table) with content capture on and metrics off, under OpenTelemetry SDK
tracer and logger providers with in-memory exporters, against tools/samples/fake_openai.py's
server on 127.0.0.1 (nothing leaves the machine, no API key). The same three traces as
make_langtrace_otlp.py, with plain root spans. Spans are encoded with the OTLP exporter's own
encoder (``openlit.otlp.json``); log records, if any, likewise (``openlit.logs.json``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fake_openai  # noqa: E402


def main(out_dir: str) -> None:
    import openai
    from google.protobuf import json_format
    from openlit._config import OpenlitConfig
    from openlit.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry import _logs, trace
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
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
    trace.set_tracer_provider(tp)  # OpenLIT's instrumentor uses the global providers
    logs = InMemoryLogRecordExporter()
    lp = LoggerProvider(resource=tp.resource)
    lp.add_log_record_processor(SimpleLogRecordProcessor(logs))
    _logs.set_logger_provider(lp)
    OpenlitConfig()  # its defaults (openlit.init would set them): content capture on
    OpenAIInstrumentor().instrument(environment="sample", application_name="replaykit-sample",
                                    pricing_info={}, capture_message_content=True,
                                    disable_metrics=True)
    tracer = tp.get_tracer("replaykit.samples")
    client = openai.OpenAI(base_url=base_url, api_key="not-a-key", max_retries=0)
    weather = {"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}}

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

    def chat() -> None:
        history: list[dict[str, object]] = []
        for turn in ("Hello, who are you?", "Tell me a short joke."):
            history.append({"role": "user", "content": turn})
            ans = client.chat.completions.create(model="gpt-4o-mini", messages=history,
                                                 max_tokens=64, seed=7)
            history.append({"role": "assistant", "content": ans.choices[0].message.content})

    with tracer.start_as_current_span("weather-agent"):
        agent()
    with tracer.start_as_current_span("chat-session"):
        chat()
    try:
        client.chat.completions.create(model="fail-model",
                                       messages=[{"role": "user", "content": "fail please"}])
    except openai.APIStatusError:
        pass
    tp.force_flush()
    lp.force_flush()
    spans = exporter.get_finished_spans()
    (out / "openlit.otlp.json").write_text(
        json_format.MessageToJson(encode_spans(spans)) + "\n")
    records = logs.get_finished_logs()
    if records:
        (out / "openlit.logs.json").write_text(
            json_format.MessageToJson(encode_logs(records)) + "\n")
    srv.shutdown()
    import importlib.metadata as md

    print(f"openlit {md.version('openlit')}: {len(spans)} spans in "
          f"{len({s.context.trace_id for s in spans})} traces, {len(records)} log records")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/otel/openlit")
