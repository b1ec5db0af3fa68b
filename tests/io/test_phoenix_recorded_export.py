"""A real Arize Phoenix span export, read by replaykit and counted again here with pandas /
pyarrow / json.

``tests/data/phoenix/recorded/`` holds what Phoenix 20.26.1 itself exported after storing the
spans of OpenInference's OpenAI instrumentation (recorded against a fake loopback server by
``tools/samples/make_phoenix_export.py``; provenance in ``tests/data/README.md``):

* ``spans.parquet``: ``Client().spans.get_spans_dataframe()`` saved with ``to_parquet``
  (``context.span_id`` is the dataframe's index and also a column; lists of message dicts;
  token counts as float64, null off LLM spans);
* ``spans_dataframe.jsonl``: the same dataframe ``to_json(orient="records", lines=True)``
  (times as epoch milliseconds);
* ``spans_rest.jsonl``: ``Client().spans.get_spans()``, the REST API's span objects (nested
  ``context``, ``attributes`` with flat dotted keys and numbered lists
  ``llm.output_messages.0.message.content``, ISO times).

Three traces: an AGENT root with two LLM spans and a TOOL span, a CHAIN root with two LLM spans
in a session, and a lone LLM span the server failed (status ERROR). The independent reading
below shares no code with the loader.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

import replaykit as rk

DIR = Path(__file__).resolve().parents[1] / "data" / "phoenix" / "recorded"
FILES = ["spans.parquet", "spans_dataframe.jsonl", "spans_rest.jsonl"]
#: OpenAI finish reasons -> replaykit's ``finish`` (docs/formats/phoenix.md)
FINISH = {"stop": "stop", "tool_calls": "tool-calls"}


# ------------------------------------------------------------------ an independent reading


def _unflatten(attrs: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The REST form's numbered list ``key.<i>.<rest>`` as a list of dicts."""
    got: dict[int, dict[str, Any]] = {}
    for k, v in attrs.items():
        m = re.fullmatch(re.escape(key) + r"\.(\d+)\.(.+)", k)
        if m:
            got.setdefault(int(m.group(1)), {})[m.group(2)] = v
    return [got[i] for i in sorted(got)]


def _frame(name: str) -> pd.DataFrame:
    """Every file as one flat frame: trace, span, kind, start, status and the attributes used."""
    path = DIR / name
    if name == "spans_rest.jsonl":
        recs = [json.loads(x) for x in path.read_text().splitlines()]
        rows = []
        for r in recs:
            a = r.get("attributes", {})
            rows.append({"trace": r["context"]["trace_id"], "span": r["context"]["span_id"],
                         "kind": r["span_kind"], "parent": r.get("parent_id"),
                         "start": pd.Timestamp(r["start_time"]), "status": r["status_code"],
                         "prompt": a.get("llm.token_count.prompt"),
                         "completion": a.get("llm.token_count.completion"),
                         "finish": a.get("llm.finish_reason"),
                         "out": _unflatten(a, "llm.output_messages"),
                         "tool": a.get("tool.name"), "input": a.get("input.value"),
                         "output": a.get("output.value"), "session": a.get("session.id")})
        return pd.DataFrame(rows)
    if name.endswith(".parquet"):
        df = pq.read_table(path).to_pandas()
        start = df["start_time"]
    else:
        df = pd.DataFrame([json.loads(x) for x in path.read_text().splitlines()])
        start = pd.to_datetime(df["start_time"], unit="ms", utc=True)

    def out(v: Any) -> list[dict[str, Any]]:
        return [] if v is None or (isinstance(v, float) and pd.isna(v)) else list(v)

    return pd.DataFrame({
        "trace": df["context.trace_id"].to_numpy(), "span": df["context.span_id"].to_numpy(),
        "kind": df["span_kind"].to_numpy(), "parent": df["parent_id"].to_numpy(),
        "start": start.to_numpy(), "status": df["status_code"].to_numpy(),
        "prompt": df["attributes.llm.token_count.prompt"].to_numpy(),
        "completion": df["attributes.llm.token_count.completion"].to_numpy(),
        "finish": df["attributes.llm.finish_reason"].to_numpy(),
        "out": [out(v) for v in df["attributes.llm.output_messages"]],
        "tool": df["attributes.tool.name"].to_numpy(),
        "input": df["attributes.input.value"].to_numpy(),
        "output": df["attributes.output.value"].to_numpy(),
        "session": df["attributes.session.id"].to_numpy()})


def _num(v: Any) -> int | None:
    return None if v is None or pd.isna(v) else int(v)


def _asked(message: dict[str, Any]) -> list[str]:
    """The ids of the tool calls an output message asks for: a list (the dataframe) or
    numbered keys ``message.tool_calls.<i>.tool_call.id`` (REST)."""
    calls = message.get("message.tool_calls")
    if calls is not None:
        return [c["tool_call.id"] for c in calls]
    return [v for k, v in sorted(message.items())
            if re.fullmatch(r"message\.tool_calls\.\d+\.tool_call\.id", k)]


def _counts(f: pd.DataFrame) -> dict[str, Any]:
    f = f.sort_values(["trace", "start"], kind="stable")
    llm = f[f.kind == "LLM"]
    tool = f[f.kind == "TOOL"]
    asked = [cid for msgs in llm.out for m in msgs for cid in _asked(m)]
    return {
        "runs": sorted(set(f.trace)),
        "calls_per_run": llm.groupby("trace").size().to_dict(),
        "input_tokens": [_num(v) for v in llm.prompt],
        "output_tokens": [_num(v) for v in llm.completion],
        "failed_calls": int((llm.status == "ERROR").sum()),
        "finish": ["error" if s == "ERROR" else FINISH[r]
                   for s, r in zip(llm.status, llm.finish, strict=True)],
        "tools": tool.tool.tolist(), "tool_args": [json.loads(x) for x in tool.input],
        "tool_results": tool.output.tolist(), "tool_calls_asked": asked,
        "roots": f[f.parent.isna()].groupby("trace").kind.first().to_dict(),
        "sessions": sorted(set(f.session.dropna())),
    }


# -------------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("name", FILES)
def test_phoenix_recorded_export_agrees_with_an_independent_reading(name: str) -> None:
    want = _counts(_frame(name))
    log = rk.read_phoenix(DIR / name, owner="acme", progress=False)
    assert len(log.quarantine) == 0
    assert log.run_ids == want["runs"] and len(want["runs"]) == 3
    calls = log.calls_df().sort_values(["run_id", "step"], kind="stable")
    assert calls.groupby("run_id").size().to_dict() == want["calls_per_run"]
    assert [None if pd.isna(v) else int(v) for v in calls.input_tokens] == want["input_tokens"]
    assert [None if pd.isna(v) else int(v) for v in calls.output_tokens] == want["output_tokens"]
    assert calls.finish.tolist() == want["finish"]
    assert int(calls.finish.eq("error").sum()) == want["failed_calls"] == 1
    tools = log.tools_df()
    assert tools.tool_name.tolist() == want["tools"] == ["get_weather"]
    assert [json.loads(a) for a in tools.arguments] == want["tool_args"]
    assert tools.result_text.tolist() == want["tool_results"]
    assert tools.has_result.all() and not tools.is_error.any()
    # each tool call the model asked for ran once as a TOOL span, which names no call: the
    # loader gives it the asked call's id (matched by tool name)
    assert tools.call_id.tolist() == want["tool_calls_asked"] == ["call_001"]
    assert int(calls.tool_calls.sum()) == len(want["tool_calls_asked"])
    # Phoenix has no turn marker: a trace is one turn
    ev = log.events_df()
    assert ev.groupby("run_id").turn.unique().map(list).to_dict() == {
        r: [1] for r in want["runs"]}
    kinds = ev.groupby("run_id").kind.first().to_dict()
    assert {r: kinds[r] for r in want["roots"]} == {
        r: "model_response" if k == "LLM" else "session" for r, k in want["roots"].items()}
    sessions = [json.loads(a).get("session_id") for a in log.runs.to_pandas()["attrs"]]
    assert sorted(s for s in sessions if s) == want["sessions"] == ["session-chat-1"]


def test_phoenix_recorded_forms_load_to_the_same_log() -> None:
    """Parquet, the dataframe as JSONL and the REST spans: the same runs, rows and numbers
    (times to the millisecond: the dataframe's JSONL keeps epoch milliseconds)."""
    cols = ["run_id", "kind", "type", "turn", "step", "tool_name", "is_error", "finish",
            "input_tokens", "output_tokens", "text", "args_hash"]
    logs = [rk.read_phoenix(DIR / n, owner="acme", progress=False) for n in FILES]
    frames = [lg.events_df()[cols].reset_index(drop=True) for lg in logs]
    for f in frames[1:]:
        pd.testing.assert_frame_equal(f, frames[0])
    ts = [lg.events_df().ts.dt.floor("ms").reset_index(drop=True) for lg in logs]
    for t in ts[1:]:
        pd.testing.assert_series_equal(t, ts[0])
    st = [lg.stamps_df()[["run_id", "model", "provider", "temperature", "max_tokens", "seed"]]
          for lg in logs]
    for s in st[1:]:
        pd.testing.assert_frame_equal(s, st[0])
    s = st[0].set_index("run_id")
    assert set(s.provider) == {"openai"}
    # the model of each trace's LLM spans: llm.model_name, or for the failed call (which has
    # none) the request's, from llm.invocation_parameters
    recs = [json.loads(x) for x in (DIR / "spans_rest.jsonl").read_text().splitlines()]
    want = {r["context"]["trace_id"]: r["attributes"].get(
                "llm.model_name", json.loads(r["attributes"]["llm.invocation_parameters"])["model"])
            for r in recs if r["span_kind"] == "LLM"}
    assert s.model.to_dict() == want
    assert sorted(want.values()) == ["fail-model", "gpt-4o-mini", "gpt-4o-mini"]


@pytest.mark.parametrize("name", FILES)
def test_phoenix_recorded_export_is_sniffed(name: str) -> None:
    sniffed = rk.read_events(DIR / name, owner="acme", progress=False)
    direct = rk.read_phoenix(DIR / name, owner="acme", progress=False)
    assert set(sniffed.runs.to_pandas().format) == {"phoenix"}
    pd.testing.assert_frame_equal(sniffed.events_df(), direct.events_df())


def test_phoenix_one_export_in_two_forms_is_a_conflict_with_a_reason() -> None:
    """The folder holds each span three times in three shapes: not the same record, so every
    copy is quarantined as ``conflicting_record`` (load one form), never a raw exception."""
    n = len(_frame("spans_rest.jsonl"))
    with pytest.raises(rk.LoadError, match="conflicting_record"):
        rk.read_phoenix(DIR, owner="acme", progress=False)
    log = rk.read_phoenix(DIR, owner="acme", errors="quarantine", progress=False)
    q = log.quarantine.to_pandas()
    assert q.reason.tolist() == ["conflicting_record"] * (3 * n)
    assert len(log.calls_df()) == 0


def test_phoenix_tool_spans_take_the_asked_call_ids_by_name_in_order(tmp_path: Path) -> None:
    """Two calls of one tool asked in one answer, run as two TOOL spans, then a TOOL span no
    answer asked for (keeps its span id) and one naming its call (``tool_call.id``)."""
    def span(sid: str, kind: str, t: int, **attrs: Any) -> dict[str, Any]:
        return {"name": attrs.pop("name", kind.lower()), "span_kind": kind,
                "parent_id": None if sid == "root" else "root",
                "context": {"trace_id": "t1", "span_id": sid},
                "start_time": f"2026-01-01T00:00:0{t}+00:00",
                "end_time": f"2026-01-01T00:00:0{t}+00:00", "status_code": "OK",
                "attributes": attrs}

    spans = [span("root", "AGENT", 0),
             span("llm1", "LLM", 1, **{
                 "llm.output_messages.0.message.role": "assistant",
                 "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_a",
                 "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "w",
                 "llm.output_messages.0.message.tool_calls.1.tool_call.id": "call_b",
                 "llm.output_messages.0.message.tool_calls.1.tool_call.function.name": "w"}),
             span("tool1", "TOOL", 2, **{"tool.name": "w", "input.value": '{"x": 1}'}),
             span("tool2", "TOOL", 3, **{"tool.name": "w", "input.value": '{"x": 2}'}),
             span("tool3", "TOOL", 4, **{"tool.name": "w", "input.value": '{"x": 3}'}),
             span("tool4", "TOOL", 5, **{"tool.name": "v", "tool_call.id": "call_z"})]
    (tmp_path / "spans.jsonl").write_text("".join(json.dumps(s) + "\n" for s in spans))
    tools = rk.read_phoenix(tmp_path, owner="acme").tools_df()
    assert tools.call_id.tolist() == ["call_a", "call_b", "tool3", "call_z"]
    assert [json.loads(a) for a in tools.arguments[:3]] == [{"x": 1}, {"x": 2}, {"x": 3}]
    assert tools.has_result.all()


def test_phoenix_finish_reasons_map_as_otel_does() -> None:
    from replaykit.io import otel, phoenix

    assert phoenix.FINISH == otel.FINISH
