"""Issue 41 item 3: envelope and content.

Each format declares which payload members are bookkeeping (replaykit/_base/envelope.py). Diffs of
replays over real Claude Code, Langfuse and Codex logs keep those changes but list and count
them after the agent's own content: ``changes_df`` puts every content row first and marks the
bookkeeping ones with their group; the findings, the answer line and the DiffExplorer lead
with the tool, its arguments or result, and say "N bookkeeping changes (ids, times, cwd)"
after. Terminal states read as words (``stopped: end_turn``, ``error: tool failed``), never a
bare kind such as "other" or "checkpoint".

Every expectation about a file is read from the file here with ``json.loads``, not through the
reader.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit._base.envelope import (
    BOOKKEEPING,
    BOOKKEEPING_GROUPS,
    bookkeeping_group,
    content_first,
    is_bookkeeping,
    terminal_state,
)
from replaykit.branch.findings import _terminal, json_changes

DATA = Path(__file__).resolve().parents[1] / "data"
CLAUDE_SHORT = DATA / "claude_code" / "spotter" / "short.jsonl"
CLAUDE_TOOLS = DATA / "claude_code" / "spotter" / "tool_heavy.jsonl"
LANGFUSE = DATA / "langfuse" / "framework-traces" / "openai-agents-2025-09-30.json"
CODEX = sorted((DATA / "codex" / "localpush").glob("*.jsonl"))


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _first_tool_result(path: Path) -> dict[str, Any]:
    """The first Claude Code line holding a tool_result block (an independent reading)."""
    for doc in _lines(path):
        content = (doc.get("message") or {}).get("content")
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") ==
                                             "tool_result" for b in content):
            return doc
    raise AssertionError("no tool_result line")


def _tool_name_of(path: Path, call_id: str) -> str:
    for doc in _lines(path):
        for b in (doc.get("message") or {}).get("content") or []:
            if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id") == call_id:
                return str(b["name"])
    raise AssertionError(call_id)


def _patch_event(log: rk.EventLog, seq: int, ops: list[dict[str, Any]], **kw: Any) -> Any:
    run = log.table.column("run_id")[0].as_py()
    tenant = log.tenants[0]
    br = rk.Branch(base=log, run_id=run, tenant_id=tenant, checkpoint=seq - 1,
                   name="envelope").intervene(kind="json_patch", target_event=seq,
                                              patch={"operations": ops})
    res = rk.replay(br, **kw)
    assert res.status == "completed"
    return res


def _assert_content_first(ch: Any) -> None:
    key = ch["key"].tolist()
    assert key == sorted(key, reverse=True), "a bookkeeping row comes before a content row"
    assert ch.loc[ch["key"], "bookkeeping"].isna().all()
    assert ch.loc[~ch["key"], "bookkeeping"].notna().all()


# ----------------------------------------------------------------------------- Claude Code
def test_claude_code_tool_result_patch_leads_with_the_result() -> None:
    doc = _first_tool_result(CLAUDE_SHORT)
    block = next(b for b in doc["message"]["content"] if b.get("type") == "tool_result")
    tool = _tool_name_of(CLAUDE_SHORT, block["tool_use_id"])
    log = rk.read_claude_code(CLAUDE_SHORT, owner="acme")
    t = log.table.to_pandas()
    seq = int(t[(t.kind == "tool_result") & (t.ref_id == block["tool_use_id"])].seq.iloc[0])
    res = _patch_event(log, seq, [
        {"op": "replace", "path": "/message/content/0/content", "value": "PATCHED OUTPUT"},
        {"op": "replace", "path": "/timestamp", "value": "2030-01-01T00:00:00Z"},
        {"op": "replace", "path": "/cwd", "value": "/somewhere/else"},
        {"op": "replace", "path": "/uuid", "value": "00000000-0000-0000-0000-000000000000"}])
    ch = res.changes_df()
    _assert_content_first(ch)
    assert ch["label"].iloc[0] == "message.content[0].content"
    assert json.loads(ch["after"].iloc[0]) == "PATCHED OUTPUT"
    assert json.loads(ch["before"].iloc[0]) == block["content"]
    bk = ch[~ch["key"]]
    assert dict(zip(bk["label"], bk["bookkeeping"], strict=True)) == {
        "cwd": "cwd", "timestamp": "times", "uuid": "ids", "replayPatch": "replay"}
    s = res.summary()
    # the answer opens with what the tool returned, never with the envelope
    assert s.answer.startswith(f'Unchanged outcome: after {tool} returned '
                               'message.content[0].content')
    assert '"PATCHED OUTPUT"' in s.answer
    for word in ("cwd", "timestamp", "uuid", "/somewhere"):
        assert word not in s.answer
    outcome = s.sentences("outcome")
    # the first finding names the tool; the value sentence names the result, then counts
    # the envelope (the replay's own patch record is said by "patched by", not counted)
    assert f"(tool_result {tool}, patched by iv-1)" in outcome[0]
    said = next(x for x in outcome if x.startswith(f"{tool} returned"))
    assert said.index('"PATCHED OUTPUT"') < said.index("3 bookkeeping changes (ids, times, cwd)")
    assert said.endswith("; besides, 3 bookkeeping changes (ids, times, cwd).")


def test_claude_code_live_result_counts_the_lost_envelope_after_the_content() -> None:
    """The issue's case: a live executor's result has none of the transcript line's
    envelope (cwd, gitBranch, uuids ...); it used to open the finding."""
    lines = _lines(CLAUDE_TOOLS)
    log = rk.read_claude_code(CLAUDE_TOOLS, owner="acme")
    t = log.table.to_pandas()
    call = t[t.kind == "tool_call"].iloc[2]
    args = json.loads(call.text)
    br = rk.Branch(base=log, run_id=str(call.run_id), tenant_id="acme",
                   checkpoint=int(call.seq) - 1, name="live").intervene(
        kind="tool_args_patch", target=str(call.ref_id), patch={"args": {**args, "n": 1}})
    res = rk.replay(br, model_policy="recorded-only", tool_policy="live-explicit",
                    tool_executor=lambda tool, a, **kw: {"output": "live result"})
    ch = res.changes_df()
    _assert_content_first(ch)
    # the transcript lines' envelope, read from the file: the live result has none of it;
    # every such member is counted as bookkeeping, none is named as content
    result_line = next(d for d in lines if any(
        isinstance(b, dict) and b.get("tool_use_id") == call.ref_id
        for b in (d.get("message") or {}).get("content") or []))
    envelope = {"cwd", "gitBranch", "uuid", "timestamp", "sessionId", "version"}
    assert envelope <= set(result_line)
    live = ch[(ch.kind == "tool_result") & (ch.origin == "executor")]
    assert envelope <= set(live.loc[~live.key, "label"])
    assert not (set(live.loc[live.key, "label"]) & envelope)
    assert all(is_bookkeeping(p, "claude_code") for p in live.loc[~live.key, "path"])
    step = live[live.label.isin(sorted(envelope))]
    s = res.summary()
    said = next(x for x in s.sentences("outcome")
                if x.startswith(f"{call.tool_name} returned") and "live result" in x)
    assert said.index('output "live result" added') < said.index("bookkeeping change")
    for word in ("cwd", "gitBranch", "sessionId", "/home/"):
        assert word not in said.split("; besides,")[0]
    n_bk = int(((ch.kind == "tool_result") & ~ch.key & (ch.bookkeeping != "replay")
                & (ch.replay_seq == step.replay_seq.iloc[0])).sum())
    assert f"besides, {n_bk} bookkeeping changes (ids, times, cwd, git, versions, ui" in said
    assert s.answer.startswith(f"Undetermined: after {call.tool_name} was called with")
    assert "(interrupted by the user)" in s.answer  # the last line: a user interrupt
    assert "[Request interrupted by user]" in json.dumps(lines[-1])


def test_claude_code_diff_explorer_leads_with_content() -> None:
    from replaykit import widgets

    log = rk.read_claude_code(CLAUDE_SHORT, owner="acme")
    t = log.table.to_pandas()
    seq = int(t[t.kind == "tool_result"].seq.iloc[0])
    res = _patch_event(log, seq, [
        {"op": "replace", "path": "/message/content/0/content", "value": "PATCHED OUTPUT"},
        {"op": "replace", "path": "/timestamp", "value": "2030-01-01T00:00:00Z"}])
    d = widgets.DiffExplorer(res)
    d.jump_to_first_divergence()
    html = d.values_view.value
    # the content row, then the line counting the envelope, then its rows
    assert html.index("message.content[0].content") < html.index(
        "2 bookkeeping changes (times, replay)") < html.index("<code>timestamp</code>")
    for view in (d.base_view.value, d.replay_view.value):
        # the event leads with kind, tool and text; inside the payload the message comes
        # before cwd, uuid and timestamp
        assert view.index("&quot;kind&quot;") < view.index("&quot;payload&quot;")
        assert view.index("&quot;message&quot;") < view.index("&quot;cwd&quot;")
        assert view.index("&quot;message&quot;") < view.index("&quot;uuid&quot;")


# ------------------------------------------------------------------------------ Langfuse
def test_langfuse_tool_output_leads_and_end_time_is_counted() -> None:
    doc = json.loads(LANGFUSE.read_text(encoding="utf-8"))
    obs = doc.get("observations") or doc.get("data", {}).get("observations") or []
    tools = [o for o in obs if o.get("type") == "TOOL" or o.get("name") == "get_weather"]
    assert tools, "the trace holds a tool observation"
    recorded_output = tools[0]["output"]
    log = rk.read_langfuse(LANGFUSE, owner="acme")
    t = log.table.to_pandas()
    res_row = t[t.kind == "tool_result"].iloc[0]
    assert json.loads(res_row.payload)["output"] == recorded_output
    res = _patch_event(log, int(res_row.seq), [
        {"op": "replace", "path": "/output", "value": "The weather in Tokyo is snowing."},
        {"op": "replace", "path": "/endTime", "value": "2031-01-01T00:00:00.000Z"},
        {"op": "replace", "path": "/id", "value": "call_other"}])
    ch = res.changes_df()
    _assert_content_first(ch)
    assert ch["label"].iloc[0] == "output"
    assert dict(zip(ch.loc[~ch.key, "label"], ch.loc[~ch.key, "bookkeeping"], strict=True)) \
        == {"endTime": "times", "id": "ids", "replayPatch": "replay"}
    s = res.summary()
    tool = res_row.tool_name
    # (a model output after the result is copied: undetermined, and said so)
    assert s.answer.startswith(f"Undetermined: after {tool} returned output ")
    assert "snowing" in s.answer and "endTime" not in s.answer
    said = next(x for x in s.sentences("outcome") if x.startswith(f"{tool} returned"))
    assert said.startswith(f'{tool} returned output "{recorded_output}" \u2192 '
                           '"The weather in Tokyo is snowing."')
    assert said.endswith("; besides, 2 bookkeeping changes (ids, times).")


# ------------------------------------------------------------------------------ Codex
@pytest.mark.parametrize("path", CODEX[:1], ids=lambda p: p.name[:30])
def test_codex_message_change_leads_and_the_timestamp_follows(path: Path) -> None:
    lines = _lines(path)
    first_msg = next(d for d in lines if d.get("type") == "response_item"
                     and d["payload"].get("type") == "message"
                     and d["payload"].get("role") == "assistant")
    log = rk.read_codex(path, owner="acme")
    t = log.table.to_pandas()
    row = t[t.kind == "model_response"].iloc[0]
    assert json.loads(row.payload)["payload"] == first_msg["payload"]
    res = _patch_event(log, int(row.seq), [
        {"op": "replace", "path": "/payload/content/0/text", "value": "a different answer"},
        {"op": "replace", "path": "/timestamp", "value": "2031-01-01T00:00:00.000Z"}])
    ch = res.changes_df()
    _assert_content_first(ch)
    assert ch["label"].iloc[0] == "payload.content[0].text"
    assert json.loads(ch["before"].iloc[0]) == first_msg["payload"]["content"][0]["text"]
    assert ch.loc[ch.label == "timestamp", "bookkeeping"].tolist() == ["times"]
    s = res.summary()
    assert "payload.content[0].text" in s.answer and "timestamp" not in s.answer
    said = next(x for x in s.sentences("outcome") if "payload.content[0].text" in x)
    assert said.index("a different answer") < said.index("1 bookkeeping change (times)")


def test_codex_terminal_state_skips_the_trailing_token_count() -> None:
    """A Codex rollout ends on a token_count record (usage, not the agent): the terminal
    state is read from the last agent event before it."""
    path = CODEX[0]
    lines = _lines(path)
    assert lines[-1]["payload"]["type"] == "token_count"
    log = rk.read_codex(path, owner="acme")
    words, _ = _terminal(log.table)
    assert words is not None and words not in ("other", "(other)")
    assert "record" not in words  # an agent event, not the envelope


# ----------------------------------------------------------------------- terminal words
@pytest.mark.parametrize(("event", "words"), [
    ({"kind": "model_response", "finish": "stop", "raw_finish": "end_turn"}, "stopped: end_turn"),
    ({"kind": "model_response", "finish": "stop"}, "stopped: finished"),
    ({"kind": "model_response", "finish": "stop", "raw_finish": "STOP"}, "stopped: finished"),
    ({"kind": "model_request"}, "a model request, not answered"),
    ({"kind": "turn_end", "payload": {"data": {"reason": {"kind": "error", "error": {
        "code": "SERVER", "message": "provider unavailable (HTTP 503)"}}}}},
     "error: provider unavailable (HTTP 503)"),
    ({"kind": "model_response", "finish": "tool-calls", "raw_finish": "tool_use"},
     "stopped: tool calls"),
    ({"kind": "model_response", "finish": "max-tokens", "raw_finish": "length"}, "max tokens"),
    ({"kind": "model_response", "finish": "content-filter"}, "stopped: content filter"),
    ({"kind": "model_response", "finish": "error", "is_error": True},
     "error: model call failed"),
    ({"kind": "model_response", "finish": "cancelled"}, "cancelled"),
    ({"kind": "model_response", "finish": "unknown"}, "the model answered"),
    ({"kind": "model_chunk", "finish": "tool-calls"}, "stopped: tool calls"),
    ({"kind": "tool_result", "is_error": True, "tool_name": "Bash"}, "error: tool failed (Bash)"),
    ({"kind": "tool_result", "tool_name": "Read"}, "a tool returned (Read)"),
    ({"kind": "tool_call", "tool_name": "web_search"}, "stopped at a tool call (web_search)"),
    ({"kind": "approval_request"}, "asked the user"),
    ({"kind": "approval_decision", "payload": {"outcome": "approved"}},
     "the user answered: approved"),
    ({"kind": "user_message", "text": "[Request interrupted by user]"},
     "interrupted by the user"),
    ({"kind": "user_message", "text": "hello"}, "a user message, not answered"),
    ({"kind": "turn_end", "text": "[Request interrupted by user]"}, "interrupted by the user"),
    ({"kind": "turn_end", "payload": {"data": {"reason": {"kind": "completed"}}}},
     "turn ended"),
    ({"kind": "turn_end", "payload": {"reason": "max_turns"}}, "turn ended: max_turns"),
    ({"kind": "turn_end", "is_error": True, "payload": {
        "error": "ToolException: order service timed out", "reason": "error"}},
     "error: ToolException: order service timed out"),
    ({"kind": "turn_end", "type_": "turn_aborted"}, "cancelled"),
    ({"kind": "session", "type_": "run.completed", "payload": {"outcome": "escalated"}},
     "run completed"),
    ({"kind": "session", "type_": "run.cancelled"}, "cancelled"),
    ({"kind": "subagent_end"}, "subagent ended"),
    ({"kind": "error", "payload": {"code": "E1", "message": "rate limited"}},
     "error: rate limited"),
    ({"kind": "checkpoint"}, "a checkpoint was saved"),
    ({"kind": "other", "type_": "file-history-snapshot"},
     "ended on a file-history-snapshot record"),
    ({"kind": "other", "type_": "RETRIEVER", "is_error": True,
      "payload": {"status_message": "index offline"}}, "error: index offline"),
])
def test_terminal_state_words(event: dict[str, Any], words: str) -> None:
    kind = event.pop("kind")
    assert terminal_state(kind, **event) == words


@pytest.mark.parametrize("kind", list(rk.schema.KINDS))
def test_no_terminal_state_is_a_bare_kind(kind: str) -> None:
    got = terminal_state(kind)
    assert got and got != kind and "(" + kind + ")" not in got
    assert got not in ("other", "checkpoint", "(other)", "(checkpoint)")


def test_terminal_states_of_real_files() -> None:
    """Read from the files here: a Claude Code session that the user interrupted, a
    LangSmith trace that ended in a tool error."""
    cc = rk.read_claude_code(CLAUDE_TOOLS, owner="acme")
    assert _terminal(cc.table)[0] == "interrupted by the user"
    ls_path = Path(__file__).resolve().parents[2] / "data" / "langsmith" / \
        "support-bot-runs.jsonl"
    runs = _lines(ls_path)
    errors = [r["error"] for r in runs if r.get("error") and r.get("parent_run_id") is None]
    ls = rk.read_langsmith(ls_path, owner="acme")
    last_run = ls.table.column("run_id")[-1].as_py()
    words, _ = _terminal(ls.run(last_run, tenant_id="acme").table)
    assert words.startswith("error: ") and words[len("error: "):].rstrip("\u2026") in \
        " ".join(errors)


def test_claude_code_and_codex_stop_reasons_read_as_the_source_spells_them() -> None:
    """The bundled Claude Code session ends (before its trailing compact summary, a
    checkpoint row) on an assistant message whose stop_reason the file records; a Codex
    rollout (before its token count) on a function call."""
    folder = Path(__file__).resolve().parents[2] / "data" / "claude_code"
    files = sorted(folder.rglob("*.jsonl"))
    log = rk.read_claude_code(folder, owner="acme")
    checked = 0
    for f in files:
        lines = _lines(f)
        stops = [d["message"]["stop_reason"] for d in lines if d.get("type") == "assistant"
                 and (d.get("message") or {}).get("stop_reason")]
        run = next(r for r in log.run_ids if r == lines[-1].get("sessionId")) \
            if any(r == lines[-1].get("sessionId") for r in log.run_ids) else None
        if run is None or not stops:
            continue
        words, _ = _terminal(log.run(run, tenant_id="acme").table)
        assert words == f"stopped: {stops[-1]}" or stops[-1] == "tool_use"
        assert stops[-1] != "end_turn" or words == "stopped: end_turn"
        checked += 1
    assert checked >= 1
    path = CODEX[0]
    calls = [d["payload"]["name"] for d in _lines(path) if d.get("type") == "response_item"
             and d["payload"].get("type") == "function_call"]
    words, _ = _terminal(rk.read_codex(path, owner="acme").table)
    assert words == f"stopped at a tool call ({calls[-1]})"


# ------------------------------------------------------------------------ the declaration
def test_every_declared_group_is_named_and_patterns_are_pointers() -> None:
    for fmt, groups in BOOKKEEPING.items():
        assert fmt in {"pleach", "toh", "isplay", "claude_code", "codex", "inspect",
                       "langfuse", "langsmith", "phoenix", "otel"}
        for g, pats in groups.items():
            assert g in BOOKKEEPING_GROUPS
            assert all(p.startswith(("/", "**/")) for p in pats), (fmt, g)
    # a declared member matches itself and what is under it, and nothing beside it
    assert bookkeeping_group("/message/usage/input_tokens", "claude_code") == "usage"
    assert bookkeeping_group("/message/usages", "claude_code") is None
    assert bookkeeping_group("/attributes.llm.token_count.prompt", "phoenix") == "usage"
    assert bookkeeping_group("/snapshot/timestamp", "claude_code") == "times"
    assert bookkeeping_group("", "claude_code") is None
    assert bookkeeping_group("/cwd", "langfuse") is None  # another format's envelope
    assert bookkeeping_group("/cwd", None) is None


_WORD = st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=6)
_SCALAR = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=8)
_JSON = st.recursive(_SCALAR, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(_WORD, inner, max_size=3), max_leaves=8)
#: top-level members Claude Code declares as bookkeeping (no wildcard), by group
_CC_BK = sorted(p[1:] for g, ps in BOOKKEEPING["claude_code"].items() for p in ps
                if p.count("/") == 1 and "*" not in p)


@settings(max_examples=25, deadline=None)
@given(doc=st.dictionaries(_WORD.filter(lambda k: not is_bookkeeping(f"/{k}", "claude_code")),
                           _JSON, max_size=5),
       data=st.data())
def test_content_first_keeps_every_member_and_puts_the_envelope_last(doc: dict[str, Any],
                                                                    data: Any) -> None:
    env = data.draw(st.dictionaries(st.sampled_from(_CC_BK), _SCALAR, max_size=6))
    whole = {**doc, **env}
    out = content_first(whole, "claude_code")
    assert out == whole  # no member lost or changed
    keys = list(out)
    assert keys == sorted(doc) + sorted(env)


@pytest.fixture(scope="module")
def tiny_session(tmp_path_factory: Any) -> rk.EventLog:
    """A three-line Claude Code session written here (the multi-block test's shape)."""
    base = {"cwd": "/repo", "gitBranch": "main", "version": "2.1.38", "sessionId": "s1",
            "userType": "external", "isSidechain": False}
    user = base | {"type": "user", "uuid": "u1", "parentUuid": None,
                   "timestamp": "2026-01-01T00:00:00Z",
                   "message": {"role": "user", "content": "read a.py"}}
    call = base | {"type": "assistant", "uuid": "u2", "parentUuid": "u1",
                   "timestamp": "2026-01-01T00:00:01Z", "requestId": "req_1",
                   "message": {"id": "m1", "role": "assistant", "model": "claude-x",
                               "content": [{"type": "tool_use", "id": "toolu_a",
                                            "name": "Read", "input": {"file_path": "a.py"}}],
                               "stop_reason": "tool_use",
                               "usage": {"input_tokens": 3, "output_tokens": 4}}}
    result = base | {"type": "user", "uuid": "u3", "parentUuid": "u2",
                     "timestamp": "2026-01-01T00:00:02Z",
                     "message": {"role": "user", "content": [
                         {"type": "tool_result", "tool_use_id": "toolu_a", "content": "A"}]}}
    answer = base | {"type": "assistant", "uuid": "u4", "parentUuid": "u3",
                     "timestamp": "2026-01-01T00:00:03Z", "requestId": "req_2",
                     "message": {"id": "m2", "role": "assistant", "model": "claude-x",
                                 "content": [{"type": "text", "text": "done"}],
                                 "stop_reason": "end_turn",
                                 "usage": {"input_tokens": 5, "output_tokens": 1}}}
    p = tmp_path_factory.mktemp("cc") / "s1.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in (user, call, result, answer)) + "\n")
    return rk.read_claude_code(p, owner="acme")


@settings(max_examples=12, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_random_edits_content_first_and_nothing_lost(tiny_session: rk.EventLog,
                                                     data: Any) -> None:
    """For random content members added to the tool result and random bookkeeping members
    added or changed beside them: changes_df lists every content change before every
    bookkeeping one, loses none (its rows are json_changes of the two payloads), counts the
    bookkeeping ones by the groups declared, and the sentence counts them after the
    content."""
    t = tiny_session.table.to_pandas()
    row = t[t.kind == "tool_result"].iloc[0]
    before = json.loads(row.payload)
    content = data.draw(st.dictionaries(
        _WORD.filter(lambda k: not is_bookkeeping(f"/{k}", "claude_code") and k not in before
                     and k != "type"), _JSON, max_size=3))
    env = data.draw(st.dictionaries(st.sampled_from(_CC_BK), _SCALAR.filter(
        lambda v: v is not None), max_size=5))
    env = {k: v for k, v in env.items() if before.get(k) != v}
    ops = [{"op": "add", "path": f"/{k}", "value": v} for k, v in content.items()]
    ops += [{"op": "add", "path": f"/{k}", "value": v} for k, v in env.items()]
    if not ops:
        return
    res = _patch_event(tiny_session, int(row.seq), ops)
    ch = res.changes_df()
    mine = ch[ch.replay_seq == int(row.seq)]
    if not content:  # the envelope alone: the event's content did not change
        assert res.diff_df().loc[lambda d: d.replay_seq == int(row.seq), "status"].tolist() \
            == ["same"]
        assert mine.empty
        return
    _assert_content_first(ch)
    after = json.loads(res.events.table.column("payload")[int(row.seq)].as_py())
    want = json_changes(before, after)
    assert len(mine) == len(want)  # none lost, none invented
    assert sorted(mine.loc[mine.key, "path"]) == sorted(f"/{k}" for k in content)
    bk = mine[~mine.key & (mine.bookkeeping != "replay")]
    assert sorted(bk["path"]) == sorted(f"/{k}" for k in env)
    assert sorted(bk["bookkeeping"]) == sorted(bookkeeping_group(f"/{k}", "claude_code")
                                               for k in env)
    assert int(mine.key.sum()) + len(bk) + int((mine.bookkeeping == "replay").sum()) \
        == len(want)
    said = next(x for x in res.summary().sentences("outcome") if x.startswith(
        "Read returned"))
    if env:
        n = len(env)
        assert f"; besides, {n} bookkeeping change{'s' if n > 1 else ''} (" in said
        assert said.index(mine.loc[mine.key, "label"].iloc[0]) < said.index("; besides,")
    else:
        assert "bookkeeping" not in said


def test_the_report_doc_lists_every_declared_member() -> None:
    """docs/report.md, "Envelope and content": one row per format, every pattern named."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "report.md").read_text()
    section = doc.split("### Envelope and content", 1)[1].split("\n### ", 1)[0]
    rows = {line.split("|")[1].strip(): line for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| format")}
    from replaykit._base.envelope import REPLAY_BOOKKEEPING

    for fmt, groups in [("every format (the replay)", REPLAY_BOOKKEEPING),
                        *BOOKKEEPING.items()]:
        assert fmt in rows, fmt
        for g, pats in groups.items():
            assert f"**{g}**" in rows[fmt]
            for p in pats:
                assert f"`{p}`" in rows[fmt], (fmt, p)


def test_langfuse_live_result_and_the_scrubber_lead_with_the_output() -> None:
    """The issue's Langfuse case: a live result has none of the observation's endTime and
    id; the finding names the output and counts those after it, and the Scrubber's event
    pane shows the output before the envelope."""
    from replaykit import widgets

    path = DATA / "langfuse" / "framework-traces" / "pydantic-ai-tools-2025-12-04.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    obs = raw.get("observations") or []
    tool_obs = [o for o in obs if o.get("name") == "get_pun_suggestion"
                or (o.get("metadata") or {}).get("attributes", {}).get("gen_ai.tool.name")
                == "get_pun_suggestion"]
    assert tool_obs and all("endTime" in o and "id" in o for o in tool_obs)
    log = rk.read_langfuse(path, owner="acme")
    t = log.table.to_pandas()
    call = t[(t.kind == "tool_call") & (t.tool_name == "get_pun_suggestion")].iloc[0]
    br = rk.Branch(base=log, run_id=str(call.run_id), tenant_id="acme",
                   checkpoint=int(call.seq) - 1, name="live").intervene(
        kind="tool_args_patch", target=str(call.ref_id), patch={"args": {"topic": "cats"}})
    res = rk.replay(br, model_policy="recorded-only", tool_policy="live-explicit",
                    tool_executor=lambda tool, a, **kw: {"output": "Pun idea: cat-astrophe"})
    said = next(x for x in res.summary().sentences("outcome")
                if x.startswith("get_pun_suggestion returned"))
    assert said.startswith("get_pun_suggestion returned output ")
    assert said.index('"Pun idea: cat-astrophe"') < said.index("; besides, ")
    head, tail = said.split("; besides, ")
    assert "endTime" not in head and " id " not in head
    assert "bookkeeping changes (ids, times)" in tail
    ch = res.changes_df()
    live = ch[(ch.kind == "tool_result") & (ch.origin == "executor")]
    assert {"endTime": "times", "id": "ids"}.items() <= dict(zip(
        live.label, live.bookkeeping, strict=True)).items()
    s = widgets.Scrubber.for_replay(res)
    step = int(live.step.iloc[0])
    s.show(step)
    pane = s.event_view.value
    assert pane.index("&quot;output&quot;") < pane.index("&quot;refId&quot;")
    assert pane.index("&quot;kind&quot;") < pane.index("&quot;payload&quot;") < \
        pane.index("&quot;run_id&quot;")
