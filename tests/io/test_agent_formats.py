"""Coding-agent transcripts (Claude Code, Codex CLI) and tracing-platform exports (LangSmith,
Langfuse, Phoenix): real files other projects ship (tests/data/, provenance in its README) and
the samples in data/, each checked against an independent reading of the format (json.loads,
csv, pyarrow) rather than against numbers copied from a run of the loader."""

from __future__ import annotations

import collections
import csv
import gzip
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit.errors import LoadError, MissingTenantError

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
REAL = Path(__file__).resolve().parents[1] / "data"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def _blocks(doc: dict[str, Any]) -> list[Any]:
    content = (doc.get("message") or {}).get("content")
    return [content] if isinstance(content, str) else list(content or [])


# ------------------------------------------------------------------------ claude code
def _claude_reading(folder: Path) -> dict[str, Any]:
    """Counts read straight off the JSONL lines."""
    out: dict[str, Any] = collections.Counter()
    runs = set()
    usage: dict[str, dict[str, Any]] = {}
    errors = 0
    for p in folder.rglob("*.jsonl"):
        docs = _lines(p)
        session = next(d["sessionId"] for d in docs if d.get("sessionId"))
        for d in docs:
            run = session if not d.get("isSidechain") else f"{session}/agent-{d['agentId']}"
            runs.add(run)
            out["lines"] += 1
            for b in _blocks(d):
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    out["tool_use"] += 1
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    out["tool_result"] += 1
                    errors += b.get("is_error") is True
            if d["type"] == "assistant":
                usage[(run, d["message"]["id"])] = d["message"]["usage"]  # the last line's
            if d["type"] == "user" and any(
                    (b if isinstance(b, str) else b.get("text") or "").startswith(
                        "[Request interrupted") for b in _blocks(d)):
                out["interrupts"] += 1
    out["runs"] = runs
    out["calls"] = len(usage)
    out["output_tokens"] = sum(u["output_tokens"] for u in usage.values())
    # every prompt token read: Anthropic's uncached remainder plus the cache reads and writes
    out["input_tokens"] = sum(u["input_tokens"] + u.get("cache_read_input_tokens", 0)
                              + u.get("cache_creation_input_tokens", 0) for u in usage.values())
    out["tool_errors"] = errors
    return out


@pytest.mark.parametrize("folder", [REAL / "claude_code" / "spotter",
                                    DATA / "claude_code"], ids=["spotter", "data"])
def test_claude_code_counts_agree_with_a_reading_of_the_lines(folder):
    want = _claude_reading(folder)
    log = rk.read_claude_code(folder, owner="me", progress=False)
    assert set(log.run_ids) == want["runs"]
    ev = log.events_df()
    assert len(set(zip(ev.source, ev.source_line, strict=True))) == want["lines"]
    assert (ev.kind == "tool_call").sum() == want["tool_use"]
    assert (ev.kind == "tool_result").sum() == want["tool_result"]
    assert (ev.kind == "turn_end").sum() == want["interrupts"]
    calls = log.calls_df()
    assert len(calls) == want["calls"]
    assert calls.output_tokens.sum() == want["output_tokens"]
    assert calls.input_tokens.sum() == want["input_tokens"]
    tools = log.tools_df()
    assert len(tools) == want["tool_use"] and tools.has_result.all()
    assert int(tools.is_error.sum()) == want["tool_errors"]
    assert log.quarantine.num_rows == 0
    rk.validate(log.table)


def test_claude_code_sample_turns_sidechain_and_compaction():
    log = rk.read_claude_code(DATA / "claude_code", owner="demo", progress=False)
    sid = "7f3c2a10-5b8e-4d21-9c4e-2f6a8b1d0e55"
    runs = log.runs_df().set_index("run_id")
    assert runs.loc[f"{sid}/agent-a3f09c1", "parent_run_id"] == sid
    main = log.run(sid, tenant_id="demo")
    turns = main.turns_df()
    assert turns.turn.tolist() == [1, 2]  # the compaction summary starts no turn
    assert turns.tool_calls.tolist() == [4, 1]
    tools = main.tools_df()
    assert tools.tool_name.tolist() == ["Bash", "Read", "Edit", "Bash", "Task"]
    assert tools.is_error.tolist() == [True, False, False, False, False]
    ev = main.events_df()
    checkpoints = ev[ev.kind == "checkpoint"]
    assert checkpoints.type.tolist() == ["summary", "system", "user"]
    assert "discount rounding" in checkpoints.text.iloc[0]
    calls = main.calls_df()
    assert calls.finish.tolist() == ["tool-calls"] * 4 + ["stop", "tool-calls", "stop"]
    st = log.stamps_df().set_index("run_id")
    assert st.loc[sid, "model"] == "claude-sonnet-4-5-20250929"
    assert st.loc[f"{sid}/agent-a3f09c1", "model"] == "claude-haiku-4-5-20251001"
    assert st.loc[sid, "harness_version"] == "claude-code@2.0.31"


def test_claude_code_multi_block_line_is_one_row_per_block(tmp_path):
    line = {"type": "assistant", "sessionId": "s1", "uuid": "u1", "timestamp":
            "2025-01-01T00:00:00Z", "message": {"id": "m1", "role": "assistant",
            "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 7},
            "content": [{"type": "text", "text": "Listing."},
                        {"type": "tool_use", "id": "t1", "name": "Bash",
                         "input": {"command": "ls"}},
                        {"type": "tool_use", "id": "t2", "name": "Bash",
                         "input": {"command": "pwd"}}]}}
    p = tmp_path / "s1.jsonl"
    p.write_text(json.dumps(line) + "\n")
    log = rk.read_claude_code(p, owner="me")
    ev = log.events_df()
    assert ev.kind.tolist() == ["model_response", "tool_call", "tool_call"]
    assert [json.loads(x)["contentIndex"] for x in ev.payload] == [0, 1, 2]
    assert log.calls_df().tool_calls.tolist() == [2]
    assert ev.input_tokens.fillna(0).sum() == 5  # the usage counted once


# ------------------------------------------------------------------------------ codex
def _codex_reading(folder: Path) -> dict[str, Any]:
    out: dict[str, Any] = collections.Counter()
    out_tokens = 0
    for p in folder.rglob("*.jsonl"):
        last_total = None
        prev = None  # the previous response item's type (None: an input came last)
        for d in _lines(p):
            out["lines"] += 1
            pl = d.get("payload") or {}
            if d["type"] == "event_msg" and pl.get("type") in ("task_started", "token_count"):
                prev = None
            if d["type"] == "response_item":
                output = pl.get("type") in ("reasoning", "function_call") or (
                    pl.get("type") == "message" and pl.get("role") == "assistant")
                if output and prev is None:
                    out["calls_opened"] += 1
                    out["calls_by_tool"] += pl.get("type") == "function_call"
                prev = pl.get("type") if output else None
            if d["type"] == "response_item" and pl.get("type") == "function_call":
                out["calls"] += 1
            if d["type"] == "response_item" and pl.get("type") == "function_call_output":
                out["outputs"] += 1
            if d["type"] == "event_msg" and pl.get("type") == "task_started":
                out["turns"] += 1
            if d["type"] == "event_msg" and pl.get("type") == "token_count" and pl.get("info"):
                total = pl["info"]["total_token_usage"]
                if total != last_total:
                    out_tokens += pl["info"]["last_token_usage"]["output_tokens"]
                    last_total = total
    out["output_tokens"] = out_tokens
    return out


@pytest.mark.parametrize("folder", [REAL / "codex" / "localpush", DATA / "codex"],
                         ids=["localpush", "data"])
def test_codex_counts_agree_with_a_reading_of_the_lines(folder):
    want = _codex_reading(folder)
    log = rk.read_codex(folder, owner="me", progress=False)
    ev = log.events_df()
    # one row per line, and a call row before a call's tool call when that opens the call
    assert len(ev) == want["lines"] + want["calls_by_tool"]
    assert len(log.calls_df()) == want["calls_opened"]
    assert log.runs_df().model_calls.sum() == want["calls_opened"]
    assert (ev.kind == "tool_call").sum() == want["calls"]
    assert (ev.kind == "tool_result").sum() == want["outputs"]
    assert len(log.turns_df()) == want["turns"]
    assert log.calls_df().output_tokens.sum() == want["output_tokens"]
    assert log.quarantine.num_rows == 0
    rk.validate(log.table)


def test_codex_sample_errors_aborts_and_stamps():
    log = rk.read_codex(DATA / "codex", owner="demo", progress=False)
    tools = log.tools_df()
    assert tools.tool_name.tolist() == ["shell", "apply_patch", "shell", "shell"]
    assert tools.is_error.fillna(False).tolist() == [False, False, True, False]  # exit_code 1
    assert tools.has_result.tolist() == [True, True, True, False]  # the aborted turn's call
    turns = log.turns_df()
    assert turns.end_reason.tolist() == ["completed", "error"]  # turn_aborted
    st = log.stamps_df().iloc[0]
    assert (st.model, st.provider, st.reasoning_effort, st.harness_version) == (
        "gpt-5-codex", "openai", "medium", "codex@0.53.0")
    assert json.loads(st.safety_policy)["approval"] == "on-request"


def test_codex_same_session_in_two_files_is_reported(tmp_path):
    src = next((DATA / "codex").rglob("*.jsonl"))
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_bytes(src.read_bytes())
    with pytest.raises(LoadError, match="duplicate_session"):
        rk.read_codex(tmp_path, owner="me")
    log = rk.read_codex(tmp_path, owner="me", errors="quarantine")
    assert log.num_runs == 1 and log.quarantine_df().reason.tolist() == ["duplicate_session"]


# ------------------------------------------------------------------------ langsmith
def _langsmith_runs(path: Path) -> list[dict[str, Any]]:
    doc = json.loads(path.read_text())
    runs = [dict(r) for r in doc["post"]]
    for patch in doc.get("patch", []):
        target = next(r for r in runs if r["dotted_order"] == patch["dotted_order"])
        target.update(patch)
    return runs


def test_langsmith_sdk_batches_agree_with_merging_posts_and_patches():
    files = sorted((REAL / "langsmith" / "sdk").glob("*.json"))
    runs = [r for f in files for r in _langsmith_runs(f)]
    log = rk.read_langsmith(REAL / "langsmith" / "sdk", owner="me", progress=False)
    assert sorted(log.run_ids) == sorted({r["trace_id"] for r in runs})
    calls = log.calls_df()
    assert len(calls) == sum(r["run_type"] == "llm" for r in runs)
    want_out = sum(r["outputs"]["usage_metadata"]["output_tokens"] for r in runs)
    assert calls.output_tokens.sum() == want_out
    texts = {r["trace_id"]: r["outputs"]["choices"][0]["message"]["content"] for r in runs}
    got = dict(zip(calls.run_id, calls.text, strict=True))
    assert got == texts
    st = log.stamps_df().set_index("run_id")
    for r in runs:
        assert st.loc[r["trace_id"], "model"] == r["extra"]["metadata"]["ls_model_name"]
        assert st.loc[r["trace_id"], "model_version"] == r["outputs"]["model"]


def test_langsmith_sample_tree_in_dotted_order():
    path = DATA / "langsmith" / "support-bot-runs.jsonl"
    runs = _lines(path)
    log = rk.read_langsmith(path, owner="demo", progress=False)
    tid = "5f1d3c2a-8e7b-4a69-b0c1-d2e3f4a5b6c7"
    one = log.run(tid, tenant_id="demo").events_df()
    want = [r["run_type"] for r in sorted((r for r in runs if r["trace_id"] == tid),
                                          key=lambda r: r["dotted_order"])]
    assert want == ["chain", "llm", "tool", "llm"]
    assert one.kind.tolist() == ["session", "model_response", "tool_call", "tool_result",
                                 "model_response", "turn_end"]
    tools = log.tools_df().set_index("tool_name")
    assert bool(tools.loc["cancel_order", "is_error"]) is True
    assert "timed out" in tools.loc["cancel_order", "result_text"]
    assert log.turns_df().end_reason.tolist() == ["completed", "error"]
    st = log.stamps_df().set_index("run_id").loc[tid]
    assert (st.temperature, st.max_tokens, st.harness_version) == (0.2, 512,
                                                                   "langsmith-py@0.4.37")


# ------------------------------------------------------------------------- langfuse
def test_langfuse_json_csv_and_parquet_agree_with_their_readings():
    doc = json.loads((DATA / "langfuse" / "trace-rag-answer.json").read_text())
    with open(DATA / "langfuse" / "observations.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    table = pq.read_table(DATA / "langfuse" / "observations.parquet").to_pylist()
    log = rk.read_langfuse(DATA / "langfuse", owner="demo", progress=False)
    assert sorted(log.run_ids) == sorted({doc["trace"]["id"]} | {r["trace_id"] for r in rows}
                                         | {r["trace_id"] for r in table})
    obs = doc["observations"] + rows + table
    calls = log.calls_df()
    assert len(calls) == sum(o["type"] == "GENERATION" for o in obs)

    def out_tokens(o: dict[str, Any]) -> int:
        u = o.get("usageDetails") or o.get("usage_details")
        return (json.loads(u) if isinstance(u, str) else u)["output"]

    assert calls.output_tokens.sum() == sum(out_tokens(o) for o in obs
                                            if o["type"] == "GENERATION")
    tools = log.tools_df()
    assert len(tools) == sum(o["type"] == "TOOL" for o in obs)
    assert int(tools.is_error.sum()) == sum(o["type"] == "TOOL" and o["level"] == "ERROR"
                                            for o in obs)
    st = log.stamps_df().set_index("run_id")
    assert st.loc[doc["trace"]["id"], "model"] == "gpt-4.1-mini"
    assert st.loc[doc["trace"]["id"], "client_version"] == "v2.3.1"
    assert st.loc[rows[0]["trace_id"], "model"] == rows[0]["provided_model_name"]


def test_langfuse_api_pages_and_jsonl_traces_with_nested_observations(tmp_path):
    doc = json.loads((DATA / "langfuse" / "trace-rag-answer.json").read_text())
    (tmp_path / "page.json").write_text(json.dumps({"data": doc["observations"],
                                                    "meta": {"page": 1}}))
    nested = {**doc["trace"], "id": "t-nested", "observations": [
        {k: v for k, v in o.items() if k != "traceId"} for o in doc["observations"]]}
    (tmp_path / "traces.jsonl").write_text(json.dumps(nested) + "\n")
    log = rk.read_langfuse(tmp_path, owner="me")
    assert sorted(log.run_ids) == sorted([doc["trace"]["id"], "t-nested"])
    per = log.events_df().groupby("run_id").kind.apply(list).to_dict()
    assert per["t-nested"][0] == "session"  # the trace record itself
    assert per["t-nested"][1:] == per[doc["trace"]["id"]]


# -------------------------------------------------------------------------- phoenix
@pytest.mark.parametrize("name", ["spans.jsonl", "spans.parquet"])
def test_phoenix_span_dataframe_agrees_with_its_reading(name):
    path = DATA / "phoenix" / name
    spans = _lines(path) if name.endswith(".jsonl") else pq.read_table(path).to_pylist()
    log = rk.read_phoenix(path, owner="demo", progress=False)
    assert log.run_ids == sorted({s["context.trace_id"] for s in spans})
    calls = log.calls_df()
    llm = [s for s in spans if s["span_kind"] == "LLM"]
    assert len(calls) == len(llm)
    assert calls.input_tokens.sum() == sum(s["attributes.llm.token_count.prompt"] for s in llm)
    assert calls.text.tolist()[-1] == "acme has 3 open tickets."
    tools = log.tools_df()
    assert tools.tool_name.tolist() == [s["attributes.tool.name"] for s in spans
                                        if s["span_kind"] == "TOOL"]
    assert tools.result_text.tolist() == ["3"]
    ev = log.events_df()
    assert ev[ev.is_error].type.tolist() == ["RETRIEVER"]
    st = log.stamps_df().iloc[0]
    assert (st.model, st.provider, st.temperature, st.max_tokens) == (
        "gpt-4o-2024-08-06", "openai", 0.1, 400)


def test_phoenix_nested_rest_shape(tmp_path):
    spans = [{"name": "llm", "span_kind": "LLM", "parent_id": None,
              "context": {"trace_id": "tr1", "span_id": "s1"},
              "start_time": "2025-01-01T00:00:00Z", "end_time": "2025-01-01T00:00:01Z",
              "status_code": "OK", "attributes": {"llm": {"model_name": "m-1",
                                                          "token_count": {"prompt": 3}}}}]
    (tmp_path / "spans.json").write_text(json.dumps({"data": spans}))
    log = rk.read_phoenix(tmp_path, owner="me")
    assert log.calls_df().input_tokens.tolist() == [3]
    assert log.stamps_df().model.tolist() == ["m-1"]


# ------------------------------------------------------------- read_events and owners
def test_read_events_sniffs_every_sample_and_names_the_owner():
    expect = {"claude_code": [REAL / "claude_code", DATA / "claude_code"],
              "codex": [REAL / "codex", DATA / "codex"],
              "langsmith": [REAL / "langsmith", DATA / "langsmith"],
              "langfuse": [DATA / "langfuse"], "phoenix": [DATA / "phoenix"]}
    for fmt, folders in expect.items():
        for folder in folders:
            for p in sorted(folder.rglob("*")):
                if p.is_file() and p.suffix in (".json", ".jsonl", ".csv", ".parquet"):
                    assert rk.detect_format(p) == fmt, p
    log = rk.read_events([DATA / "claude_code", DATA / "codex", DATA / "langsmith",
                          DATA / "langfuse", DATA / "phoenix"], owner="acme", progress=False)
    assert log.tenants == ["acme"]
    assert set(log.summary()["formats"]) == set(expect)
    with pytest.raises(MissingTenantError):
        rk.read_events(DATA / "codex")


def test_other_formats_are_not_claimed_by_the_new_sniffers():
    from replaykit.io import claude_code, codex, langfuse, langsmith, phoenix

    others = [DATA / "toh" / "shed-fork" / "session.jsonl",
              DATA / "pleach" / "harness_event_log.jsonl",
              next((DATA / "isplay").glob("claims-*.json"))]
    for p in others:
        for mod in (claude_code, codex, langfuse, langsmith, phoenix):
            assert mod.sniff(p) is not None, (mod.FORMAT, p)


@pytest.mark.parametrize("reader", ["read_claude_code", "read_codex", "read_langsmith",
                                    "read_langfuse", "read_phoenix"])
@pytest.mark.parametrize("bad", [None, "", 7])
def test_the_owner_is_never_invented(reader, bad):
    with pytest.raises(LoadError, match="bad_tenant"):
        getattr(rk, reader)(DATA / "codex", owner=bad)


# --------------------------------------------------------------------- bad input
def _first_claude_line() -> dict[str, Any]:
    path = next((DATA / "claude_code").glob("*/*.jsonl"))
    return next(d for d in _lines(path) if d.get("type") == "assistant")


BAD_LINES = [
    ("claude_code", b"{not json\n", "bad_json"),
    ("claude_code", b"[1, 2]\n", "not_object"),
    ("claude_code", b'{"type": "user", "sessionId": "s", "message": "hi"}\n', "bad_message"),
    ("claude_code", b'{"type": "user", "sessionId": "s", "message": {"content": 5}}\n',
     "bad_content"),
    ("claude_code", json.dumps({**_first_claude_line(), "message": {
        **_first_claude_line()["message"], "id": "msg_new", "usage": {"input_tokens": -3}}}
                               ).encode() + b"\n", "bad_tokens"),
    ("claude_code", b'{"sessionId": "s", "uuid": "u"}\n', "missing_type"),
    ("claude_code", b'{"type": "user", "sessionId": "\\ud800"}\n', "bad_json"),
    ("codex", b'{"timestamp": "t", "type": "event_msg", "payload": 3}\n', "bad_payload"),
    ("codex", b'{"timestamp": "t", "payload": {}}\n', "missing_type"),
    ("codex", b'{"type": "event_msg", "payload": {"type": "token_count", "info": {'
              b'"total_token_usage": {}, "last_token_usage": {"output_tokens": 1.5}}}}\n',
     "bad_tokens"),
    ("codex", b"\xff\xfe{}\n", "bad_encoding"),
    ("codex", b"[" * 3000 + b"]" * 3000 + b"\n", "too_deep"),
    ("langsmith", b'{"id": "r1", "run_type": "llm"}\n', "missing_trace"),
    ("langfuse", b'{"id": "o1", "type": "GENERATION", "traceId": 7}\n', "missing_trace"),
    ("phoenix", b'{"name": "x", "span_kind": "LLM", "context.span_id": "s"}\n',
     "missing_trace"),
]


@pytest.mark.parametrize(("fmt", "line", "reason"), BAD_LINES,
                         ids=[f"{f}-{r}" for f, _, r in BAD_LINES])
def test_a_bad_line_names_file_line_and_reason_and_the_rest_loads(tmp_path, fmt, line, reason):
    good = {"claude_code": next((DATA / "claude_code").glob("*/*.jsonl")),
            "codex": next((DATA / "codex").rglob("*.jsonl")),
            "langsmith": DATA / "langsmith" / "support-bot-runs.jsonl",
            "langfuse": None, "phoenix": DATA / "phoenix" / "spans.jsonl"}[fmt]
    body = good.read_bytes() if good is not None else b""
    if fmt == "langfuse":
        obs = json.loads((DATA / "langfuse" / "trace-rag-answer.json").read_text())
        body = b"".join(json.dumps(o).encode() + b"\n" for o in obs["observations"])
    n_good = sum(1 for ln in body.splitlines() if ln.strip())
    p = tmp_path / ("x.jsonl" if fmt != "codex" else "rollout-x.jsonl")
    p.write_bytes(body + line)
    before = p.read_bytes()
    reader = getattr(rk, f"read_{fmt}")
    with pytest.raises(LoadError) as info:
        reader(p, owner="me")
    err = info.value
    assert err.reason == reason and err.line == n_good + 1 and str(p) in str(err)
    assert "fix" in str(err).lower() or "errors=" in str(err)
    log = reader(p, owner="me", errors="quarantine")
    q = log.quarantine_df()
    assert q.reason.tolist() == [reason] and q.line.tolist() == [n_good + 1]
    assert q.tenant_id.tolist() == ["me"]
    assert len(log) > 0
    assert p.read_bytes() == before  # the input is never changed


@pytest.mark.parametrize("reader", ["read_langsmith", "read_langfuse", "read_phoenix"])
def test_whole_file_problems_have_their_reasons(tmp_path, reader):
    fn = getattr(rk, reader)
    cases = {
        "doc.json": (b'{"hello": "world"}', "bad_document"),
        "broken.json": (b'{"data": [', "bad_json"),
        "packed.jsonl": (gzip.compress(b'{"a": 1}\n'), "compressed"),
        "junk.parquet": (b"PAR1 not really", "bad_parquet"),
    }
    for name, (data, reason) in cases.items():
        d = tmp_path / name.replace(".", "_")
        d.mkdir()
        (d / name).write_bytes(data)
        with pytest.raises(LoadError) as info:
            fn(d, owner="me")
        assert info.value.reason == reason, name
        assert fn(d, owner="me", errors="quarantine").quarantine_df().reason.tolist() == [
            reason]


def test_langfuse_csv_cells_hold_json_and_a_bad_csv_is_reported(tmp_path):
    p = tmp_path / "obs.csv"
    p.write_text('id,trace_id,type,start_time\n"o1,t1,GENERATION\n')
    with pytest.raises(LoadError, match="bad_csv"):
        rk.read_langfuse(p, owner="me")


def test_parquet_with_wrong_column_types_still_loads_or_names_the_field(tmp_path):
    t = pq.read_table(DATA / "phoenix" / "spans.parquet")
    i = t.column_names.index("attributes.llm.token_count.prompt")
    t = t.set_column(i, "attributes.llm.token_count.prompt",
                     pa.array(["many"] * t.num_rows))
    pq.write_table(t, tmp_path / "spans.parquet")
    with pytest.raises(LoadError) as info:
        rk.read_phoenix(tmp_path, owner="me")
    assert info.value.reason == "bad_tokens"
    assert info.value.field == "attributes.llm.token_count.prompt"


# ------------------------------------------------------------------ property: any session

_BLOCK = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=8)),
    st.builds(lambda t: {"type": "thinking", "thinking": t}, st.text(max_size=8)),
    st.builds(lambda n: {"type": "tool_use", "name": n, "input": {"n": n}},
              st.sampled_from(["Bash", "Read", "Edit"])),
)


@st.composite
def _sessions(draw: Any) -> list[dict[str, Any]]:
    """A session: prompts, assistant messages split over lines of 1-3 blocks, tool results
    answering the tool uses, in any interleaving Claude Code writes."""
    lines: list[dict[str, Any]] = []
    n_tool = 0
    for turn in range(draw(st.integers(1, 3))):
        lines.append({"type": "user", "message": {"role": "user", "content": f"prompt {turn}"}})
        for m in range(draw(st.integers(0, 3))):
            mid = f"msg_{turn}_{m}"
            pending = []
            for _ in range(draw(st.integers(1, 3))):  # the message's lines
                blocks = draw(st.lists(_BLOCK, min_size=1, max_size=3))
                for b in blocks:
                    if b["type"] == "tool_use":
                        n_tool += 1
                        b["id"] = f"toolu_{n_tool}"
                        pending.append(b["id"])
                lines.append({"type": "assistant", "message": {
                    "id": mid, "role": "assistant", "content": blocks,
                    "usage": {"input_tokens": draw(st.integers(0, 50)),
                              "output_tokens": draw(st.integers(0, 50))}}})
            for tid in pending:
                lines.append({"type": "user", "message": {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": tid, "content": "ok",
                     "is_error": draw(st.booleans())}]}})
    for k, d in enumerate(lines):
        d.update(sessionId="s-prop", uuid=f"u{k}", timestamp=f"2025-01-01T00:00:{k % 60:02d}Z")
    return lines


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=_sessions())
def test_any_session_keeps_every_block_and_counts_each_message_once(tmp_path, lines):
    p = tmp_path / "s-prop.jsonl"
    p.write_text("".join(json.dumps(d) + "\n" for d in lines))
    log = rk.read_claude_code(p, owner="me")
    ev = log.events_df()
    blocks = [b for d in lines for b in _blocks(d)]
    assert (ev.kind == "tool_call").sum() == sum(b.get("type") == "tool_use" for b in blocks
                                                  if isinstance(b, dict))
    assert (ev.kind == "tool_result").sum() == sum(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks)
    last: dict[str, Any] = {}
    for d in lines:
        if d["type"] == "assistant":
            last[d["message"]["id"]] = d["message"]["usage"]
    calls = log.calls_df()
    assert sorted(calls.ref_id) == sorted(last)
    assert int(ev.output_tokens.fillna(0).sum()) == sum(u["output_tokens"] for u in last.values())
    assert log.turns_df().turn.tolist() == sorted({int(x) for x in ev.turn.dropna()})
    assert len(log.turns_df()) == sum(1 for d in lines if isinstance(
        (d.get("message") or {}).get("content"), str))
    tools = log.tools_df()
    assert tools.has_result.all()
    assert tools.is_error.astype(bool).sum() == sum(
        isinstance(b, dict) and b.get("is_error") is True for b in blocks)
    assert ev.event_id.is_unique


def test_a_first_line_longer_than_the_sniffers_head_is_still_recognised(tmp_path):
    from replaykit.io import claude_code, codex

    big = "x" * 200_000
    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps({"parentUuid": None, "isSidechain": False, "type": "user",
                             "sessionId": "s", "message": {"role": "user", "content": big}},
                            separators=(",", ":")) + "\n")
    assert claude_code.sniff(p) is None and rk.detect_format(p) == "claude_code"
    q = tmp_path / "rollout-x.jsonl"
    q.write_text(json.dumps({"timestamp": "2025-01-01T00:00:00Z", "type": "session_meta",
                             "payload": {"id": "c1", "instructions": big}},
                            separators=(",", ":")) + "\n")
    assert codex.sniff(q) is None and rk.detect_format(q) == "codex"
    assert rk.read_claude_code(p, owner="me").events_df().text.str.len().tolist() == [
        len(big)]


@pytest.mark.parametrize("ext", ["csv", "parquet", "json"])
def test_langsmith_runs_read_the_same_from_csv_parquet_and_json(tmp_path, ext):
    runs = _lines(DATA / "langsmith" / "support-bot-runs.jsonl")
    flat = [{k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in r.items()}
            for r in runs]
    keys = list(dict.fromkeys(k for r in flat for k in r))
    p = tmp_path / f"runs.{ext}"
    if ext == "csv":
        with open(p, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=keys)
            w.writeheader()
            w.writerows(flat)
    elif ext == "parquet":
        pq.write_table(pa.Table.from_pylist([{k: r.get(k) for k in keys} for r in flat]), p)
    else:
        p.write_text(json.dumps({"runs": runs}))
    assert rk.detect_format(p) == "langsmith"
    got = rk.read_langsmith(p, owner="me").events_df()
    want = rk.read_langsmith(DATA / "langsmith", owner="me").events_df()
    cols = ["run_id", "seq", "kind", "ref_id", "tool_name", "input_tokens", "output_tokens",
            "finish", "is_error", "text"]
    pd_got, pd_want = got[cols].reset_index(drop=True), want[cols].reset_index(drop=True)
    assert pd_got.astype(str).equals(pd_want.astype(str))


def test_a_line_whose_second_block_fails_is_quarantined_whole(tmp_path, monkeypatch):
    from replaykit.io import claude_code

    def failing_hash(args: Any) -> str:  # an unforeseen failure on the line's second block
        raise ValueError("boom")

    monkeypatch.setattr(claude_code, "args_hash", failing_hash)
    # the reference reader's rollback is what is tested (the native scan does not call it)
    monkeypatch.setenv("REPLAYKIT_NATIVE", "0")
    line = {"type": "assistant", "sessionId": "s1", "uuid": "u1",
            "message": {"id": "m1", "role": "assistant", "content": [
                {"type": "text", "text": "fine"},
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"a": 1}}]}}
    ok = {"type": "user", "sessionId": "s1", "uuid": "u2",
          "message": {"role": "user", "content": "next"}}
    p = tmp_path / "s1.jsonl"
    p.write_text(json.dumps(line) + "\n" + json.dumps(ok) + "\n")
    log = rk.read_claude_code(p, owner="me", errors="quarantine")
    q = log.quarantine_df()
    assert q.line.tolist() == [1] and q.reason.tolist() == ["unexpected_input"]
    ev = log.events_df()
    assert ev.source_line.tolist() == [2] and ev.seq.tolist() == [0] and ev.turn.tolist() == [1]


def test_a_quarantined_codex_line_changes_no_token_total(tmp_path):
    def count(out: Any, total: int) -> dict[str, Any]:
        return {"timestamp": "2025-01-01T00:00:01Z", "type": "event_msg", "payload": {
            "type": "token_count", "info": {"total_token_usage": {"total_tokens": total},
                                            "last_token_usage": {"input_tokens": 1,
                                                                 "output_tokens": out}}}}
    lines = [{"timestamp": "2025-01-01T00:00:00Z", "type": "session_meta",
              "payload": {"id": "c1"}},
             {"timestamp": "2025-01-01T00:00:00Z", "type": "response_item",
              "payload": {"type": "message", "role": "assistant",
                          "content": [{"type": "output_text", "text": "hi"}]}},
             count(-5, 10),  # a bad count, then the good one with the same total
             count(7, 10)]
    p = tmp_path / "rollout-c1.jsonl"
    p.write_text("".join(json.dumps(d) + "\n" for d in lines))
    log = rk.read_codex(p, owner="me", errors="quarantine")
    assert log.quarantine_df().line.tolist() == [3]
    assert log.calls_df().output_tokens.tolist() == [7]
