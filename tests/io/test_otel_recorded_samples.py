"""OTLP/JSON recorded from real instrumentations that cannot be installed beside the project's
pinned packages, read with read_otel and counted again here with plain ``json``.

``tests/data/otel/langtrace/langtrace.otlp.json``: Langtrace's Python SDK 3.8.21 (its OpenAI
instrumentation, recorded by ``tools/samples/make_langtrace_otlp.py`` against a fake loopback
server; provenance in ``tests/data/README.md``). The older content form: each chat span has a
``gen_ai.content.prompt`` event whose attribute ``gen_ai.prompt`` is JSON text of the request's
messages and a ``gen_ai.content.completion`` event with ``gen_ai.completion`` (the answer's
messages; a tool call kept as an OpenAI ``{"id", "type": "function", "function"}`` object in
``content``); ``gen_ai.usage.input_tokens`` / ``output_tokens``; no finish reasons.

``tests/data/otel/openlit/``: OpenLIT 1.45.0's OpenAI instrumentation (``make_openlit_otlp.py``,
the same three traces): the current conventions' ``gen_ai.input.messages`` /
``gen_ai.output.messages`` span attributes, ``gen_ai.tool.*`` attributes on the chat span that
asked for a tool (no ``execute_tool`` span), and one ``gen_ai.client.inference.operation.details``
log record per successful call in ``openlit.logs.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import replaykit as rk

DATA = Path(__file__).resolve().parents[1] / "data" / "otel"
LANGTRACE = DATA / "langtrace" / "langtrace.otlp.json"
OPENLIT = DATA / "openlit"
#: GenAI / OpenAI finish reasons -> replaykit's ``finish`` (docs/formats/otel.md)
FINISH = {"stop": "stop", "tool_calls": "tool-calls", "tool_call": "tool-calls"}


def _value(v: dict[str, Any]) -> Any:
    (kind, x), = v.items()
    if kind == "arrayValue":
        return [_value(i) for i in x.get("values", [])]
    return int(x) if kind == "intValue" else x


def _attrs(item: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: _value(a["value"]) for a in item.get("attributes", [])}


def _spans(path: Path) -> list[dict[str, Any]]:
    doc = json.loads(path.read_text())
    return [sp for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for sp in ss["spans"]]


def _event(span: dict[str, Any], name: str, key: str) -> Any:
    for e in span.get("events", []):
        if e["name"] == name:
            return json.loads(_attrs(e)[key])
    return None


def _langtrace_counts() -> dict[str, Any]:
    spans = sorted(_spans(LANGTRACE), key=lambda s: (s["traceId"], int(s["startTimeUnixNano"])))
    chats = [s for s in spans if _attrs(s).get("gen_ai.operation.name") == "chat"]
    asked: dict[str, dict[str, Any]] = {}
    for s in chats:
        for m in _event(s, "gen_ai.content.completion", "gen_ai.completion") or []:
            content = m.get("content")
            for c in content if isinstance(content, list) else []:
                if isinstance(c, dict) and c.get("type") == "function":
                    asked[c["id"]] = {"name": c["function"]["name"],
                                      "args": json.loads(c["function"]["arguments"])}
    results = {m["tool_call_id"]: m["content"]
               for s in chats for m in _event(s, "gen_ai.content.prompt", "gen_ai.prompt")
               if isinstance(m, dict) and m.get("role") == "tool"}
    return {"runs": sorted({s["traceId"] for s in spans}),
            "calls": len(chats),
            "input_tokens": [_attrs(s).get("gen_ai.usage.input_tokens") for s in chats],
            "output_tokens": [_attrs(s).get("gen_ai.usage.output_tokens") for s in chats],
            "failed": sum(s.get("status", {}).get("code") == "STATUS_CODE_ERROR" for s in chats),
            "asked": asked, "results": results,
            "models": [_attrs(s)["gen_ai.request.model"] for s in chats]}


def _sorted(values: Any) -> list[tuple[bool, int]]:
    """Token counts in a comparable order, absent ones (a failed call) first."""
    return sorted((False, 0) if v is None or pd.isna(v) else (True, int(v)) for v in values)


def test_langtrace_prompt_and_completion_events_agree_with_a_reading_of_the_file() -> None:
    want = _langtrace_counts()
    log = rk.read_otel(LANGTRACE, owner="acme")
    assert len(log.quarantine) == 0
    # the OTLP trace ids are base64 in OTLP/JSON's protobuf mapping; count them, not spell them
    assert len(log.run_ids) == len(want["runs"]) == 3
    calls = log.calls_df()
    assert len(calls) == want["calls"] == 5
    assert _sorted(calls.input_tokens) == _sorted(want["input_tokens"])
    assert _sorted(calls.output_tokens) == _sorted(want["output_tokens"])
    assert int(calls.finish.eq("error").sum()) == want["failed"] == 1
    assert set(calls.finish) == {"unknown", "error"}  # Langtrace records no finish reason
    assert int(calls.tool_calls.sum()) == len(want["asked"]) == 1
    tools = log.tools_df()
    assert tools.call_id.tolist() == list(want["asked"])
    assert tools.tool_name.tolist() == [c["name"] for c in want["asked"].values()]
    assert [json.loads(a) for a in tools.arguments] == [c["args"] for c in want["asked"].values()]
    assert tools.result_text.tolist() == [want["results"][c] for c in want["asked"]]
    assert tools.has_result.all()
    texts = [t for t in calls.text if isinstance(t, str) and t]
    assert "It is rainy, 14 C." in texts and "Answer 4: Tell me a short joke." in texts
    st = log.stamps_df()
    assert len(st) == 3 and set(st.model) == set(want["models"])
    assert set(st.provider) == {"openai"}


def _openlit_counts() -> dict[str, Any]:
    spans = sorted(_spans(OPENLIT / "openlit.otlp.json"),
                   key=lambda s: (s["traceId"], int(s["startTimeUnixNano"])))
    chats = [s for s in spans if _attrs(s).get("gen_ai.operation.name") == "chat"]
    asked: dict[str, dict[str, Any]] = {}
    results: dict[str, Any] = {}
    for s in chats:
        a = _attrs(s)
        for m in json.loads(a.get("gen_ai.output.messages", "[]")):
            for part in m["parts"]:
                if part["type"] == "tool_call":
                    asked[part["id"]] = {"name": part["name"], "args": part["arguments"]}
        for m in json.loads(a.get("gen_ai.input.messages", "[]")):
            for part in m["parts"]:
                if part["type"] == "tool_call_response":
                    results[part["id"]] = part["response"]
    logs = json.loads((OPENLIT / "openlit.logs.json").read_text())
    records = [r for rl in logs["resourceLogs"] for sl in rl["scopeLogs"]
               for r in sl["logRecords"]]
    return {"runs": {s["traceId"] for s in spans}, "chats": chats, "asked": asked,
            "results": results, "records": records,
            "finish": sorted("error" if s.get("status", {}).get("code") == "STATUS_CODE_ERROR"
                             else FINISH[_attrs(s)["gen_ai.response.finish_reasons"][0]]
                             for s in chats)}


@pytest.mark.parametrize("path", [OPENLIT, OPENLIT / "openlit.otlp.json"])
def test_openlit_current_attributes_agree_with_a_reading_of_the_file(path: Path) -> None:
    """The spans alone or with their log records: the same calls, tools and stamps (the
    content is on the spans too; the records join their spans, none is an orphan)."""
    want = _openlit_counts()
    log = rk.read_otel(path, owner="acme")
    assert len(log.quarantine) == 0
    assert len(log.run_ids) == len(want["runs"]) == 3
    calls = log.calls_df()
    chats = want["chats"]
    assert len(calls) == len(chats) == 5
    assert _sorted(calls.input_tokens) == _sorted(
        _attrs(s).get("gen_ai.usage.input_tokens") for s in chats)
    assert _sorted(calls.output_tokens) == _sorted(
        _attrs(s).get("gen_ai.usage.output_tokens") for s in chats)
    assert sorted(calls.finish) == want["finish"]
    tools = log.tools_df()
    assert tools.call_id.tolist() == list(want["asked"]) == ["call_001"]
    assert tools.tool_name.tolist() == [c["name"] for c in want["asked"].values()]
    assert [json.loads(a) for a in tools.arguments] == [c["args"] for c in want["asked"].values()]
    assert tools.result_text.tolist() == [want["results"][c] for c in want["asked"]]
    # one operation-details record per call that returned, each naming one of the spans
    ok = [s for s in chats if s.get("status", {}).get("code") != "STATUS_CODE_ERROR"]
    assert len(want["records"]) == len(ok)
    assert {(r["traceId"], r["spanId"]) for r in want["records"]} == {
        (s["traceId"], s["spanId"]) for s in ok}
    # OpenLIT records request parameters it was not given as their defaults: read as written
    st = log.stamps_df().set_index("model")
    sent = {_attrs(s).get("gen_ai.request.seed") for s in chats
            if _attrs(s).get("gen_ai.request.max_tokens") is None
            and _attrs(s).get("gen_ai.request.model") == "gpt-4o-mini"}
    assert sent == {0}
    assert sorted(st.seed.dropna().astype(int)) == [0, 7]


@pytest.mark.parametrize("path", [LANGTRACE, OPENLIT])
def test_recorded_otel_samples_are_sniffed(path: Path) -> None:
    sniffed = rk.read_events(path, owner="acme", progress=False)
    assert set(sniffed.runs.to_pandas().format) == {"otel"}
    assert len(sniffed.calls_df()) == len(rk.read_otel(path, owner="acme").calls_df())
