"""OTLP/JSON input that real exports contain: odd attribute types, overlapping exports, the
finish-reason spellings of several producers. Hand-written documents (no SDK needed)."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

import replaykit as rk
from replaykit.errors import LoadError
from replaykit.io.otel import FINISH, DuplicateSpanWarning, read_otel

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def _attr(key: Any, value: dict[str, Any]) -> dict[str, Any]:
    return {"key": key, "value": value}


def _span(sid: str, attrs: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"traceId": TRACE, "spanId": sid, "name": "s", "startTimeUnixNano": "1000",
            "endTimeUnixNano": "2000", "attributes": attrs, **extra}


def _doc(*spans: dict[str, Any], resource: list[Any] | None = None) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {"attributes": resource or []},
                               "scopeSpans": [{"scope": {"name": "t"}, "spans": list(spans)}]}]}


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc))
    return path


OK = _span("00f067aa0ba902b7", [_attr("gen_ai.operation.name", {"stringValue": "chat"}),
                                _attr("gen_ai.usage.input_tokens", {"intValue": "3"})])

#: (span attributes/extra, expected outcome): "bad" = a bad_span row naming the field;
#: otherwise a check on the loaded row.
BAD_SPANS = {
    "operation name not a string": ([_attr("gen_ai.operation.name", {"intValue": "5"})], {},
                                    "gen_ai.operation.name"),
    "token count a string": ([_attr("gen_ai.operation.name", {"stringValue": "chat"}),
                              _attr("gen_ai.usage.input_tokens", {"stringValue": "many"})], {},
                             "gen_ai.usage.input_tokens"),
    "token count fractional": ([_attr("gen_ai.operation.name", {"stringValue": "chat"}),
                                _attr("gen_ai.usage.output_tokens", {"doubleValue": 1.5})], {},
                               "gen_ai.usage.output_tokens"),
    "token count negative": ([_attr("gen_ai.operation.name", {"stringValue": "chat"}),
                              _attr("gen_ai.usage.output_tokens", {"intValue": "-2"})], {},
                             "gen_ai.usage.output_tokens"),
    "token count a bool": ([_attr("gen_ai.operation.name", {"stringValue": "chat"}),
                            _attr("gen_ai.usage.output_tokens", {"boolValue": True})], {},
                           "gen_ai.usage.output_tokens"),
    "tool name an array": ([_attr("gen_ai.operation.name", {"stringValue": "execute_tool"}),
                            _attr("gen_ai.tool.name", {"arrayValue": {"values": []}})], {},
                           "gen_ai.tool.name"),
    "attribute key a number": ([_attr(7, {"stringValue": "x"})], {}, "key must be a string"),
    "attribute without key": ([{"value": {"stringValue": "x"}}], {}, "key must be a string"),
    "attribute not an object": (["oops"], {}, "must be a {key, value} object"),
    "event attribute key a number": ([], {"events": [{"name": "e", "attributes": [
        _attr(1, {"stringValue": "x"})]}]}, "events[0].attributes[0].key"),
}


@pytest.mark.parametrize("case", sorted(BAD_SPANS))
def test_bad_attribute_types_are_bad_spans(tmp_path: Path, case: str) -> None:
    attrs, extra, needle = BAD_SPANS[case]
    f = _write(tmp_path / "t.json", _doc(OK, _span("00f067aa0ba902b8", attrs, **extra)))
    with pytest.raises(LoadError) as info:
        read_otel(f, owner="acme")
    assert info.value.reason == "bad_span" and needle in str(info.value)
    log = read_otel(f, owner="acme", errors="quarantine")
    assert log.quarantine.column("reason").to_pylist() == ["bad_span"]
    assert needle in log.quarantine.column("message")[0].as_py()
    assert log.table.column("event_id").to_pylist() == ["00f067aa0ba902b7"]


def test_scalar_ids_and_names_are_coerced_to_their_json_text(tmp_path: Path) -> None:
    tool = _span("00f067aa0ba902b8", [
        _attr("gen_ai.operation.name", {"stringValue": "execute_tool"}),
        _attr("gen_ai.tool.name", {"intValue": "5"}),
        _attr("gen_ai.tool.call.id", {"doubleValue": 2.5}),
        _attr("gen_ai.conversation.id", {"intValue": 42}),
    ])
    chat = _span("00f067aa0ba902b9", [
        _attr("gen_ai.operation.name", {"stringValue": "chat"}),
        _attr("gen_ai.usage.input_tokens", {"doubleValue": 12.0}),  # integral float: 12
        _attr("gen_ai.usage.output_tokens", {"intValue": 3}),
        _attr("gen_ai.response.finish_reasons", {"arrayValue": {"values": [{"intValue": 9}]}}),
    ], events=[{"timeUnixNano": "1500", "attributes": []}],  # an event without a name
        status={"code": 2, "message": {"nested": True}})
    log = read_otel(_write(tmp_path / "t.json", _doc(tool, chat)), owner="acme")
    t = log.table
    assert pc.cast(t.column("run_id"), "string").unique().to_pylist() == ["42"]
    kinds = pc.cast(t.column("kind"), "string").to_pylist()
    assert kinds == ["tool_call", "tool_result", "model_response"]
    assert pc.cast(t.column("tool_name"), "string").to_pylist() == ["5", "5", None]
    assert t.column("ref_id").to_pylist()[:2] == ["2.5", "2.5"]
    assert t.column("input_tokens").to_pylist()[2] == 12
    assert t.column("output_tokens").to_pylist()[2] == 3
    # an error status wins over the (unmappable) finish reason
    assert pc.cast(t.column("finish"), "string").to_pylist()[2] == "error"
    payload = json.loads(t.column("payload")[2].as_py())
    assert payload["events"][0]["name"] is None
    assert payload["status"]["message"] == '{"nested":true}'


def test_bad_resource_attribute_fails_its_spans_only(tmp_path: Path) -> None:
    doc = _doc(OK, resource=[{"value": {"stringValue": "svc"}}])  # resource attribute, no key
    doc["resourceSpans"].append(_doc(_span("00f067aa0ba902b8", []))["resourceSpans"][0])
    f = _write(tmp_path / "t.json", doc)
    with pytest.raises(LoadError, match=r"resourceSpans\[0\].resource.attributes\[0\].key"):
        read_otel(f, owner="acme")
    log = read_otel(f, owner="acme", errors="quarantine")
    assert log.quarantine.column("reason").to_pylist() == ["bad_span"]
    assert log.table.column("event_id").to_pylist() == ["00f067aa0ba902b8"]


@pytest.mark.parametrize("reason,finish", [
    ("stop", "stop"), ("length", "max-tokens"), ("content_filter", "content-filter"),
    ("tool_call", "tool-calls"), ("error", "error"),  # the semantic conventions' values
    ("tool_calls", "tool-calls"), ("function_call", "tool-calls"), ("end_turn", "stop"),
    ("stop_sequence", "stop"), ("tool_use", "tool-calls"), ("max_tokens", "max-tokens"),
    ("refusal", "content-filter"), ("STOP", "stop"), ("MAX_TOKENS", "max-tokens"),
    ("SAFETY", "content-filter"), ("something_new", "something_new"),
])
def test_finish_reasons(tmp_path: Path, reason: str, finish: str) -> None:
    span = _span("00f067aa0ba902b7", [
        _attr("gen_ai.operation.name", {"stringValue": "chat"}),
        _attr("gen_ai.response.finish_reasons",
              {"arrayValue": {"values": [{"stringValue": reason}]}})])
    log = read_otel(_write(tmp_path / "t.json", _doc(span)), owner="acme")
    assert pc.cast(log.table.column("finish"), "string").to_pylist() == [finish]
    assert set(FINISH.values()) == {"stop", "tool-calls", "max-tokens", "content-filter",
                                    "error"}


def _three_spans() -> dict[str, Any]:
    chat = [_attr("gen_ai.operation.name", {"stringValue": "chat"})]
    return _doc(_span("00f067aa0ba902b1", chat), _span("00f067aa0ba902b2", chat),
                _span("00f067aa0ba902b3", chat))


def test_identical_spans_in_several_files_load_once(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.json", _three_spans())
    shutil.copy(a, tmp_path / "b.json")
    shutil.copy(a, tmp_path / "c.json")
    with pytest.warns(DuplicateSpanWarning, match="identical content") as rec:
        log = read_otel(tmp_path, owner="acme")
    assert len(rec) == 2 and "b.json" in str(rec[0].message)
    assert log.table.num_rows == 3
    assert sorted(log.table.column("event_id").to_pylist()) == [
        "00f067aa0ba902b1", "00f067aa0ba902b2", "00f067aa0ba902b3"]
    assert log.table.column("seq").to_pylist() == [0, 1, 2]
    assert {s.split(":", 1)[1] for s in pc.cast(log.table.column("source"),
                                                  "string").to_pylist()} == {str(a)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_otel(a, owner="acme").table.num_rows == 3  # no warning for one copy


def test_conflicting_duplicate_spans_are_quarantined(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.json", _three_spans())
    other = _three_spans()
    other["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["name"] = "renamed"
    b = _write(tmp_path / "b.json", other)
    with pytest.raises(LoadError) as info:
        read_otel([a, b], owner="acme")
    assert info.value.reason == "conflicting_span"
    assert str(a) in str(info.value) and str(b) in str(info.value)
    with pytest.warns(DuplicateSpanWarning):
        log = read_otel([a, b], owner="acme", errors="quarantine")
    assert sorted(log.table.column("event_id").to_pylist()) == ["00f067aa0ba902b1",
                                                                "00f067aa0ba902b3"]
    q = log.quarantine
    assert q.column("reason").to_pylist() == ["conflicting_span"] * 2
    assert sorted(q.column("source").to_pylist()) == sorted([str(a), str(b)])
    assert all("00f067aa0ba902b2" in m for m in q.column("message").to_pylist())
    assert rk.ReplayKitError in type(info.value).__mro__


def _oi(sid: str, kind: str, start: int, end: int, **attrs: Any) -> dict[str, Any]:
    vals = [_attr("openinference.span.kind", {"stringValue": kind})] + [
        _attr(k.replace("__", "."), {"stringValue": v} if isinstance(v, str) else {"intValue": v})
        for k, v in attrs.items()]
    return {"traceId": TRACE, "spanId": sid, "name": kind.lower(), "attributes": vals,
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(end)}


def test_openinference_tool_spans_take_the_call_ids_the_model_asked_for(tmp_path: Path) -> None:
    tc = "llm__output_messages__0__message__tool_calls__{}__tool_call__{}"
    llm = _oi("00000000000000a1", "LLM", 10, 20, **{
        "llm__token_count__prompt": 7, "llm__token_count__completion": 2,
        tc.format(0, "id"): "c-1", tc.format(0, "function__name"): "read",
        tc.format(0, "function__arguments"): '{"p": 1}',
        tc.format(1, "id"): "c-2", tc.format(1, "function__name"): "read",
        tc.format(2, "id"): "c-3", tc.format(2, "function__name"): "write"})
    tools = [_oi("00000000000000b1", "TOOL", 30, 31, tool__name="read", input__value='{"p": 1}',
                 output__value="one"),
             _oi("00000000000000b2", "TOOL", 32, 33, tool__name="read", output__value="two"),
             _oi("00000000000000b3", "TOOL", 5, 6, tool__name="write"),  # before the ask
             _oi("00000000000000b4", "TOOL", 40, 41, tool__name="read")]  # nothing left
    log = read_otel(_write(tmp_path / "t.json", _doc(llm, *tools)), owner="acme")
    t = log.table
    calls = [(r, n) for r, n, k in zip(t.column("ref_id").to_pylist(),
                                       pc.cast(t.column("tool_name"), "string").to_pylist(),
                                       pc.cast(t.column("kind"), "string").to_pylist(),
                                       strict=True) if k == "tool_call"]
    # c-3 has no tool span after the ask: its row comes from the model's message
    assert calls == [("00000000000000b3", "write"), ("c-3", "write"), ("c-1", "read"),
                     ("c-2", "read"), ("00000000000000b4", "read")]
    model = t.filter(pc.equal(pc.cast(t.column("kind"), "string"), "model_response"))
    assert model.column("input_tokens").to_pylist() == [7]
    assert pc.cast(model.column("finish"), "string").to_pylist() == ["unknown"]


@pytest.mark.parametrize("value", [{"boolValue": "false"}, {"boolValue": 0}, {"boolValue": "true"},
                                   {"doubleValue": True}, {"doubleValue": [1.5]},
                                   {"doubleValue": "abc"}])  # fmt: skip
def test_wrongly_typed_bool_and_double_values_are_bad_spans(tmp_path: Path, value: dict) -> None:
    """bool("false") is True and float(True) is 1.0: such values were loaded silently."""
    from test_messy_input import _otel_doc

    p = tmp_path / "t.json"
    p.write_text(_otel_doc(value))
    with pytest.raises(LoadError) as info:
        rk.read_otel(p, owner="t")
    assert info.value.reason == "bad_span" and "'custom'" in str(info.value)
    log = rk.read_otel(p, owner="t", errors="quarantine")
    assert len(log) == 0 and log.quarantine.column("reason").to_pylist() == ["bad_span"]


@pytest.mark.parametrize(("value", "loaded"), [
    ({"boolValue": False}, False), ({"boolValue": None}, False), ({"doubleValue": "1.5"}, 1.5),
    ({"doubleValue": 2}, 2.0), ({"doubleValue": None}, 0.0)])  # fmt: skip
def test_bool_and_double_values_as_protobuf_json_writes_them(tmp_path: Path, value: dict,
                                                            loaded: Any) -> None:
    from test_messy_input import _otel_doc

    p = tmp_path / "t.json"
    p.write_text(_otel_doc(value))
    payload = rk.read_otel(p, owner="t").table.column("payload")[0].as_py()
    assert json.loads(payload)["attributes"]["custom"] == loaded
