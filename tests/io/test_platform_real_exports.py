"""Real tracing-platform exports (tests/data/README.md names their sources), read by replaykit
and counted again here with plain ``json``.

* Langfuse: trace downloads from the Langfuse UI merged with their observations, as the
  Langfuse repository ships them for its seeder (pydantic-ai, OpenAI Agents SDK, LangGraph,
  LangChain + Vertex) -- OTel-ingested observations whose span attributes sit in
  ``metadata.attributes``, tool calls both as ``TOOL`` observations and only inside generation
  outputs, four output shapes (GenAI parts, OpenAI chat, LangChain, the Responses API).
* Phoenix: see the Phoenix section below.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import replaykit as rk

DATA = Path(__file__).resolve().parents[1] / "data"
# the first three traces taken (the rest, and these, are read by test_platform_figures.py)
LANGFUSE = [DATA / "langfuse" / "framework-traces" / f"{name}.json" for name in (
    "langgraph-2025-08-22", "openai-agents-2025-09-30", "pydantic-ai-tools-2025-12-04")]


# ---------------------------------------------------------------- an independent reading


def _calls_in_output(out: Any) -> set[str]:
    """Every tool call id a generation output holds, in whichever shape: found by walking the
    JSON for objects that look like calls (no shared code with the loader)."""
    found: set[str] = set()

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            if v.get("type") == "tool_call" and isinstance(v.get("id"), str):
                found.add(v["id"])
            elif v.get("type") == "function_call" and isinstance(v.get("call_id"), str):
                found.add(v["call_id"])
            elif isinstance(v.get("function"), dict) and isinstance(v.get("id"), str):
                found.add(v["id"])
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(out)
    return found


def _langfuse_counts(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_text())
    obs = doc["observations"]
    gens = [o for o in obs if o["type"] == "GENERATION"]
    tools = [o for o in obs if o["type"] == "TOOL"]
    asked = set().union(*(_calls_in_output(g["output"]) for g in gens)) if gens else set()
    explicit = {(o.get("metadata") or {}).get("attributes", {}).get("gen_ai.tool.call.id")
                for o in tools} - {None}
    # a TOOL observation without a call id executes one of the calls asked for (matched by
    # name in the loader); each call is one tool, whichever records it
    unlinked = [o for o in tools
                if (o.get("metadata") or {}).get("attributes", {}).get("gen_ai.tool.call.id")
                is None]
    return {"traces": {doc["trace"]["id"]}, "generations": len(gens),
            "input_tokens": sorted(g["usageDetails"].get("input", 0) for g in gens),
            "tools": len(asked | explicit) + max(0, len(unlinked) - len(asked - explicit)),
            "tool_observations": len(tools)}


@pytest.mark.parametrize("path", LANGFUSE, ids=lambda p: p.stem)
def test_langfuse_framework_traces_agree_with_a_reading_of_the_file(path: Path) -> None:
    want = _langfuse_counts(path)
    log = rk.read_langfuse(path, owner="acme")
    assert set(log.run_ids) == want["traces"]
    calls = log.calls_df()
    assert len(calls) == want["generations"]
    assert sorted(calls.input_tokens.fillna(0).astype(int)) == want["input_tokens"]
    tools = log.tools_df()
    assert len(tools) == want["tools"]
    assert tools.call_id.is_unique
    assert len(log.quarantine) == 0


def test_langfuse_pydantic_ai_tools_link_to_the_model_calls() -> None:
    """pydantic-ai through OTel: TOOL observations named ``running tool: <name>`` carry the
    model's call id in ``metadata.attributes``; the evaluator's output tool is asked for in a
    generation's output only (no TOOL observation, no result recorded)."""
    path = DATA / "langfuse" / "framework-traces" / "pydantic-ai-tools-2025-12-04.json"
    doc = json.loads(path.read_text())
    attrs = [o["metadata"]["attributes"] for o in doc["observations"] if o["type"] == "TOOL"]
    log = rk.read_langfuse(path, owner="acme")
    tools = log.tools_df().set_index("call_id")
    for a in attrs:
        row = tools.loc[a["gen_ai.tool.call.id"]]
        assert row.tool_name == a["gen_ai.tool.name"]
        assert json.loads(row.arguments) == a["tool_arguments"]
        assert row.result_text == a["tool_response"]
    assert tools.loc["call_ZuzwalMMtvv9BC6xlVe3fiBP"].tool_name == "final_result"
    assert not tools.loc["call_ZuzwalMMtvv9BC6xlVe3fiBP"].has_result
    # finish reasons from the output messages (GenAI shape), text from their text parts
    calls = log.calls_df()
    gens = sorted((o for o in doc["observations"] if o["type"] == "GENERATION"),
                  key=lambda o: o["startTime"])
    assert calls.finish.tolist() == [
        {"tool_call": "tool-calls"}.get(g["output"][-1]["finish_reason"],
                                        g["output"][-1]["finish_reason"]) for g in gens]
    assert calls.text.iloc[2] == gens[2]["output"][0]["parts"][0]["content"]


def test_langfuse_openai_agents_tool_without_call_id_takes_the_asked_call() -> None:
    """OpenInference spans in Langfuse: the TOOL observation names no call; it takes the call
    of its name the Responses API output asked for, so the trace has one tool, not two."""
    path = DATA / "langfuse" / "framework-traces" / "openai-agents-2025-09-30.json"
    log = rk.read_langfuse(path, owner="acme")
    tools = log.tools_df()
    assert tools.call_id.tolist() == ["call_Kud0j0DxWSmLzv9W5m6qVqXn"]
    assert tools.tool_name.tolist() == ["get_weather"]
    assert tools.result_text.tolist() == ["The weather in Tokyo is sunny."]
    assert log.calls_df().text.iloc[1].startswith("The weather in Tokyo is currently sunny")


def test_langfuse_langgraph_tool_from_generation_output_and_input() -> None:
    """LangChain's generations: the call in ``additional_kwargs.tool_calls`` of one output,
    its result a ``role: tool`` message in the next generation's input."""
    path = DATA / "langfuse" / "framework-traces" / "langgraph-2025-08-22.json"
    doc = json.loads(path.read_text())
    gens = sorted((o for o in doc["observations"] if o["type"] == "GENERATION"),
                  key=lambda o: o["startTime"])
    call = gens[0]["output"]["additional_kwargs"]["tool_calls"][0]
    result = next(m for m in gens[1]["input"] if m["role"] == "tool")
    log = rk.read_langfuse(path, owner="acme")
    tools = log.tools_df()
    assert tools.call_id.tolist() == [call["id"]] == [result["tool_call_id"]]
    assert tools.tool_name.tolist() == [call["function"]["name"]]
    assert json.loads(tools.arguments.iloc[0]) == call["function"]["arguments"]
    assert json.loads(tools.result_text.iloc[0]) == result["content"]
    kinds = [k for k in log.table.column("kind").to_pylist() if k != "other"]
    assert kinds == ["session", "model_response", "tool_call", "tool_result", "model_response"]


# ------------------------------------------------------- the same trace in several files


def _events_per_run(log: rk.EventLog) -> dict[str, int]:
    return log.events_df().groupby("run_id").size().to_dict()


def test_langfuse_trace_exported_twice_is_read_once(tmp_path: Path) -> None:
    src = DATA / "langfuse" / "framework-traces" / "pydantic-ai-tools-2025-12-04.json"
    once = rk.read_langfuse(src, owner="acme")
    n_records = 1 + len(json.loads(src.read_text())["observations"])
    for name in ("download.json", "download (1).json"):
        (tmp_path / name).write_bytes(src.read_bytes())
    with pytest.warns(rk.io.DuplicateRecordWarning, match=f"{n_records} langfuse record"):
        twice = rk.read_langfuse(tmp_path, owner="acme")
    assert _events_per_run(twice) == _events_per_run(once)
    assert len(twice.runs) == 1 and len(twice.quarantine) == 0
    assert len(twice.tools_df()) == len(once.tools_df()) == 4


def test_langfuse_conflicting_copies_are_quarantined_with_a_reason(tmp_path: Path) -> None:
    src = DATA / "langfuse" / "framework-traces" / "openai-agents-2025-09-30.json"
    doc = json.loads(src.read_text())
    (tmp_path / "a.json").write_text(json.dumps(doc))
    tool = next(o for o in doc["observations"] if o["type"] == "TOOL")
    tool["output"] = "The weather in Tokyo is rainy."  # a later export that disagrees
    (tmp_path / "b.json").write_text(json.dumps(doc))
    with pytest.raises(rk.LoadError, match="conflicting_record"):
        rk.read_langfuse(tmp_path, owner="acme")
    with pytest.warns(rk.io.DuplicateRecordWarning):
        log = rk.read_langfuse(tmp_path, owner="acme", errors="quarantine")
    q = log.quarantine.to_pandas()
    assert q.reason.tolist() == ["conflicting_record"] * 2
    assert sorted(Path(s).name for s in q.source) == ["a.json", "b.json"]
    assert all(tool["id"] in m for m in q.message)
    # the rest loads once; the call is still known from the generations (asked in one
    # output, answered in the next input), its result the one the model was given
    tools = log.tools_df()
    assert tools.call_id.tolist() == ["call_Kud0j0DxWSmLzv9W5m6qVqXn"]
    assert tools.result_text.tolist() == ["The weather in Tokyo is sunny."]
    assert len(log.calls_df()) == 2 and len(log.runs) == 1


def test_langfuse_trace_split_over_files_is_one_run(tmp_path: Path) -> None:
    src = DATA / "langfuse" / "framework-traces" / "langgraph-2025-08-22.json"
    doc = json.loads(src.read_text())
    half = len(doc["observations"]) // 2
    (tmp_path / "1.json").write_text(json.dumps({"trace": doc["trace"],
                                                 "observations": doc["observations"][:half]}))
    (tmp_path / "2.json").write_text(json.dumps(doc["observations"][half:]))
    whole = rk.read_langfuse(src, owner="acme")
    split = rk.read_langfuse(tmp_path, owner="acme")
    assert len(split.runs) == 1
    assert split.events_df().kind.tolist() == whole.events_df().kind.tolist()


def test_phoenix_spans_exported_twice_are_read_once(tmp_path: Path) -> None:
    src = DATA.parent.parent / "data" / "phoenix" / "spans.jsonl"
    lines = src.read_text().splitlines()
    once = rk.read_phoenix(src, owner="acme")
    (tmp_path / "export-1.jsonl").write_text(src.read_text())
    (tmp_path / "export-2.jsonl").write_text(src.read_text())
    with pytest.warns(rk.io.DuplicateRecordWarning, match=f"{len(lines)} phoenix record"):
        twice = rk.read_phoenix(tmp_path, owner="acme")
    assert _events_per_run(twice) == _events_per_run(once)
    assert len(twice.runs) == 1
    # one span changed in the second export: both copies of it are quarantined
    spans = [json.loads(x) for x in lines]
    llm = next(s for s in spans if s["span_kind"] == "LLM")
    llm["attributes.llm.token_count.prompt"] += 1
    (tmp_path / "export-2.jsonl").write_text("\n".join(json.dumps(s) for s in spans) + "\n")
    with pytest.warns(rk.io.DuplicateRecordWarning, match=f"{len(lines) - 1} phoenix record"):
        log = rk.read_phoenix(tmp_path, owner="acme", errors="quarantine")
    q = log.quarantine.to_pandas()
    assert q.reason.tolist() == ["conflicting_record"] * 2
    assert q.line.tolist() == [spans.index(llm) + 1] * 2
    assert len(log.calls_df()) == len(once.calls_df()) - 1


def test_langsmith_run_exported_twice_and_post_patch_split_over_files(tmp_path: Path) -> None:
    """LangSmith: the same batch in two files is read once; a post and its patch in two
    files make one run; a patch that disagrees with another copy is a conflict."""
    src = DATA / "langsmith" / "sdk" / "langsmith_py_wrap_openai_reasoning.json"
    doc = json.loads(src.read_text())
    once = rk.read_langsmith(src, owner="acme")
    (tmp_path / "a.json").write_bytes(src.read_bytes())
    (tmp_path / "b.json").write_bytes(src.read_bytes())
    with pytest.warns(rk.io.DuplicateRecordWarning, match="langsmith record"):
        twice = rk.read_langsmith(tmp_path, owner="acme")
    assert _events_per_run(twice) == _events_per_run(once) and len(twice.runs) == 1
    split = tmp_path / "split"
    split.mkdir()
    (split / "1-post.json").write_text(json.dumps({"post": doc["post"], "patch": []}))
    (split / "2-patch.json").write_text(json.dumps({"post": [], "patch": doc["patch"]}))
    parts = rk.read_langsmith(split, owner="acme")
    assert parts.calls_df().drop(columns=["run_id"]).equals(
        once.calls_df().drop(columns=["run_id"]))
    assert _events_per_run(parts) == _events_per_run(once)
    # two whole copies of the run that disagree (another export, other inputs): a conflict
    other = json.loads(json.dumps(doc["post"]))
    other[0]["inputs"] = {"messages": [{"role": "user", "content": "something else"}]}
    (split / "3-post.json").write_text(json.dumps({"post": other, "patch": []}))
    with pytest.raises(rk.LoadError, match="conflicting_record"):
        rk.read_langsmith(split, owner="acme")
    log = rk.read_langsmith(split, owner="acme", errors="quarantine")
    assert log.quarantine.column("reason").to_pylist() == ["conflicting_record"] * 3
    assert len(log.events_df()) == 0
