"""Record a real Arize Phoenix span export for tests/data/phoenix/recorded/.

Not run by the tests or CI: it needs arize-phoenix, which the project does not depend on (it
is under the Elastic License 2.0), so run it in a throwaway virtualenv:

    python3 -m venv /tmp/phx-venv
    /tmp/phx-venv/bin/pip install arize-phoenix==20.26.1 \
        openinference-instrumentation-openai==0.1.66 openai==3.57.0
    /tmp/phx-venv/bin/python tools/samples/make_phoenix_export.py tests/data/phoenix/recorded

What it does, all on loopback (nothing leaves the machine, no API key):

1. starts tools/samples/fake_openai.py's OpenAI-compatible server on 127.0.0.1;
2. starts a Phoenix server (``phoenix serve``) on 127.0.0.1 with a scratch working dir
   (SQLite), telemetry off;
3. instruments the ``openai`` client with OpenInference's ``OpenAIInstrumentor`` and sends its
   spans to that Phoenix through ``phoenix.otel.register`` (OTLP/HTTP, simple processor);
4. runs three traces: a weather agent (AGENT root, a chat call that asks for a tool, a TOOL
   span, a chat call that answers), a two-turn chat (CHAIN root, two chat calls, in a
   session), and a chat call the server rejects with HTTP 500 (an ERROR LLM span, no root);
5. exports what Phoenix stored with Phoenix's own client:
   ``Client().spans.get_spans_dataframe()`` -> ``spans.parquet`` (``DataFrame.to_parquet``) and
   ``spans_dataframe.jsonl`` (``to_json(orient="records", lines=True)``), and
   ``Client().spans.get_spans()`` (the REST API's span objects) -> ``spans_rest.jsonl``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fake_openai  # noqa: E402

PROJECT = "replaykit-sample"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(url: str, proc: subprocess.Popen[bytes], seconds: float = 120) -> None:
    import urllib.request

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"phoenix exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(1)
    raise TimeoutError(url)


def _run_traces(base_url: str, tracer_provider: object) -> None:
    import openai
    from openinference.instrumentation import using_session
    from openinference.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)
    client = openai.OpenAI(base_url=base_url, api_key="not-a-key", max_retries=0)
    tracer = tracer_provider.get_tracer("replaykit.samples")  # an OpenInference OITracer
    weather = {"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}}

    # parameters= given: without it the decorator's schema holds ``"city": {}``, and pyarrow
    # cannot write an empty struct (df.to_parquet and TraceDataset.save both fail)
    @tracer.tool(name="get_weather", description="The weather in a city.",
                 parameters=weather["function"]["parameters"])
    def get_weather(city: str) -> str:
        return f"rainy, 14 C in {city}"

    # trace 1: an agent that calls a tool
    with tracer.start_as_current_span("weather-agent", openinference_span_kind="agent") as sp:
        question = "What is the weather in Paris?"
        sp.set_input(question)
        messages: list[dict[str, object]] = [
            {"role": "system", "content": "You answer weather questions."},
            {"role": "user", "content": question}]
        first = client.chat.completions.create(model="gpt-4o-mini", messages=messages,
                                               tools=[weather], temperature=0.2)
        msg = first.choices[0].message
        messages.append(msg.model_dump(exclude_none=True))
        for call in msg.tool_calls or []:
            args = json.loads(call.function.arguments)
            messages.append({"role": "tool", "tool_call_id": call.id,
                             "content": get_weather(**args)})
        final = client.chat.completions.create(model="gpt-4o-mini", messages=messages,
                                               tools=[weather], temperature=0.2)
        sp.set_output(final.choices[0].message.content)

    # trace 2: a two-turn chat in a session
    with using_session("session-chat-1"):
        with tracer.start_as_current_span("chat-session",
                                          openinference_span_kind="chain") as sp:
            history: list[dict[str, object]] = []
            for turn in ("Hello, who are you?", "Tell me a short joke."):
                history.append({"role": "user", "content": turn})
                out = client.chat.completions.create(model="gpt-4o-mini", messages=history,
                                                     max_tokens=64, seed=7)
                history.append({"role": "assistant",
                                "content": out.choices[0].message.content})
            sp.set_input("Hello, who are you?")
            sp.set_output(history[-1]["content"])

    # trace 3: a call the server rejects (a root LLM span with status ERROR)
    try:
        client.chat.completions.create(model="fail-model",
                                       messages=[{"role": "user", "content": "fail please"}])
    except openai.APIStatusError:
        pass


def main(out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    srv, base_url = fake_openai.serve()
    port, grpc = _free_port(), _free_port()
    work = tempfile.mkdtemp(prefix="phoenix-work-")
    env = {**os.environ, "PHOENIX_WORKING_DIR": work, "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(grpc),
           "PHOENIX_TELEMETRY_ENABLED": "false", "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false"}
    phoenix_bin = Path(sys.executable).with_name("phoenix")
    proc = subprocess.Popen([str(phoenix_bin), "serve"], env=env,
                            stdout=open(Path(work, "phoenix.log"), "wb"),
                            stderr=subprocess.STDOUT)
    try:
        endpoint = f"http://127.0.0.1:{port}"
        _wait(endpoint + "/healthz", proc)
        from phoenix.otel import register

        tp = register(project_name=PROJECT, endpoint=endpoint + "/v1/traces",
                      protocol="http/protobuf", batch=False, set_global_tracer_provider=False,
                      verbose=False)
        _run_traces(base_url, tp)
        tp.force_flush()
        time.sleep(3)  # Phoenix inserts received spans in the background

        from phoenix.client import Client

        client = Client(base_url=endpoint)
        df = client.spans.get_spans_dataframe(project_identifier=PROJECT)
        df.to_parquet(out / "spans.parquet")
        df.to_json(out / "spans_dataframe.jsonl", orient="records", lines=True)
        spans = client.spans.get_spans(project_identifier=PROJECT, limit=1000)
        (out / "spans_rest.jsonl").write_text(
            "".join(json.dumps(s, sort_keys=True) + "\n" for s in spans))
        import phoenix

        print(f"phoenix {phoenix.__version__}: {len(df)} spans in the dataframe, "
              f"{len(spans)} from get_spans, in {len(set(df['context.trace_id']))} traces")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        srv.shutdown()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/phoenix/recorded")
