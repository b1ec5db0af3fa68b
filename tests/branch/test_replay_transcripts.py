"""Interventions on coding-agent transcripts (issue 29 item 3).

Claude Code keeps a tool call's arguments in a ``tool_use`` content block of the assistant
line (``message.content[k].input``; one line may hold several blocks), Codex in the rollout
line's ``payload.arguments`` (JSON text). A ``tool_args_patch`` must reach them there, change
the row's ``args_hash`` / ``text``, make the call divergent (served by the tool policy), and
show in the argument-change metric.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import replaykit as rk
from replaykit._base.json import args_hash
from replaykit.branch import Branch

DATA = Path(__file__).resolve().parents[1] / "data"
CLAUDE = DATA / "claude_code" / "spotter" / "tool_heavy.jsonl"
CODEX = sorted((DATA / "codex" / "localpush").glob("*.jsonl"))


def _first_call(log: rk.EventLog, want: Any = dict) -> dict[str, Any]:
    t = log.table.to_pandas()
    calls = t[t.kind == "tool_call"]
    for _, r in calls.iterrows():
        if isinstance(json.loads(r.text), want):
            return dict(r)
    raise AssertionError("no tool call with such arguments")


def _replay(log: rk.EventLog, call: dict[str, Any], new_args: Any) -> Any:
    run = str(call["run_id"])
    b = Branch(base=log, run_id=run, tenant_id="acme", checkpoint=int(call["seq"]) - 1,
               name="patch-args")
    b = b.intervene(kind="tool_args_patch", target=str(call["ref_id"]),
                    patch={"args": new_args}, description="change one argument")
    seen: list[tuple[str, Any]] = []

    def executor(tool: str, args: Any, **kw: Any) -> Any:
        seen.append((tool, args))
        return {"output": "patched result"}

    return rk.replay(b, model_policy="recorded-only", tool_policy="live-explicit",
                     tool_executor=executor), seen


def test_claude_code_tool_args_patch_reaches_the_tool_use_block() -> None:
    log = rk.read_claude_code(CLAUDE, owner="acme")
    call = _first_call(log)
    old = json.loads(call["text"])
    key = next(k for k, v in old.items() if isinstance(v, str))
    new = {**old, key: old[key] + " # patched"}
    res, seen = _replay(log, call, new)
    assert res.status == "completed"
    t = res.events.table.to_pandas()
    row = t[(t.kind == "tool_call") & (t.ref_id == call["ref_id"])].iloc[0]
    # the row and the transcript's own block both carry the new arguments
    assert json.loads(row.text) == new
    assert row.args_hash == args_hash(new) != call["args_hash"]
    payload = json.loads(row.payload)
    block = next(b for b in payload["message"]["content"]
                 if b.get("type") == "tool_use" and b["id"] == call["ref_id"])
    assert block["input"] == new
    assert payload["replayPatch"][0]["status"] == "applied"
    # divergent: the executor ran it with the patched arguments, and the metric says so
    assert seen == [(call["tool_name"], new)]
    assert res.metrics["tool_argument_changed"] == 1
    eff = res.effects_df()
    assert eff[eff.ref_id == call["ref_id"]].divergent.tolist() == [True]


def test_claude_code_patch_on_a_multi_block_line_changes_only_its_block(tmp_path: Path
                                                                         ) -> None:
    """Two tool_use blocks on one assistant line: patching the second leaves the first."""
    line = {"type": "assistant", "uuid": "u2", "parentUuid": "u1", "sessionId": "s1",
            "timestamp": "2026-01-01T00:00:01Z", "message": {
                "id": "m1", "role": "assistant", "model": "claude-x", "content": [
                    {"type": "tool_use", "id": "toolu_a", "name": "Read",
                     "input": {"file_path": "a.py"}},
                    {"type": "tool_use", "id": "toolu_b", "name": "Read",
                     "input": {"file_path": "b.py"}}],
                "usage": {"input_tokens": 3, "output_tokens": 4}}}
    user = {"type": "user", "uuid": "u1", "sessionId": "s1", "timestamp":
            "2026-01-01T00:00:00Z", "message": {"role": "user", "content": "read both"}}
    results = {"type": "user", "uuid": "u3", "parentUuid": "u2", "sessionId": "s1",
               "timestamp": "2026-01-01T00:00:02Z", "message": {"role": "user", "content": [
                   {"type": "tool_result", "tool_use_id": "toolu_a", "content": "A"},
                   {"type": "tool_result", "tool_use_id": "toolu_b", "content": "B"}]}}
    p = tmp_path / "s1.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in (user, line, results)) + "\n")
    log = rk.read_claude_code(p, owner="acme")
    t = log.table.to_pandas()
    call = dict(t[(t.kind == "tool_call") & (t.ref_id == "toolu_b")].iloc[0])
    res, seen = _replay(log, call, {"file_path": "c.py"})
    out = res.events.table.to_pandas()
    calls = out[out.kind == "tool_call"].set_index("ref_id")
    assert json.loads(calls.loc["toolu_a"].text) == {"file_path": "a.py"}
    assert json.loads(calls.loc["toolu_b"].text) == {"file_path": "c.py"}
    # each row keeps its own block of the line (the loader splits it); only b's changed
    for ref, want in (("toolu_a", "a.py"), ("toolu_b", "c.py")):
        blocks = json.loads(calls.loc[ref].payload)["message"]["content"]
        assert [(b["id"], b["input"]) for b in blocks if b["type"] == "tool_use"] == [
            (ref, {"file_path": want})]
    assert seen == [("Read", {"file_path": "c.py"})]


@pytest.mark.parametrize("path", CODEX[:1], ids=lambda p: p.name[:30])
def test_codex_tool_args_patch_reaches_the_payload(path: Path) -> None:
    log = rk.read_codex(path, owner="acme")
    t = log.table.to_pandas()
    call = dict(t[t.kind == "tool_call"].iloc[0])
    new = {"query": "patched"}
    res, seen = _replay(log, call, new)
    assert res.status == "completed"
    out = res.events.table.to_pandas()
    row = out[(out.kind == "tool_call") & (out.ref_id == call["ref_id"])].iloc[0]
    assert row.args_hash == args_hash(new) != call["args_hash"]
    payload = json.loads(row.payload)
    # Codex keeps arguments as JSON text: they stay JSON text
    assert isinstance(payload["payload"]["arguments"], str)
    assert json.loads(payload["payload"]["arguments"]) == new
    assert seen == [(call["tool_name"], payload["payload"]["arguments"])]
    assert res.metrics["tool_argument_changed"] == 1
