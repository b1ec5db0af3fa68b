"""ScriptPlayer: recorded toh scripts as a model executor (first-call binding, anonymous calls,
placeholders, exhaustion, consumption) -- on hand-made scripts and on every corpus scenario
with subagent children, replayed with rk.replay(model_policy="pinned-live")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import replaykit as rk
from replaykit.toh.player import (
    ScriptCallsExhaustedError,
    ScriptHangError,
    ScriptNotConsumedError,
    ScriptPlayer,
    ScriptSessionsExhaustedError,
    entry_output,
)
from replaykit.toh.scripts import SessionScript


def _text_call(text: str) -> dict:
    return {"kind": "chunks", "chunks": [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": text},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}},
        {"type": "finish", "reason": {"kind": "stop"}}]}


def _scripts() -> list[SessionScript]:
    primary = SessionScript("rec-parent", None, 1.0, True,
                            (_text_call("p0"), _text_call("id {{fromRequest:g-([0-9]+)}}")),
                            ("log", "log"), (0, 10))
    kid1 = SessionScript("rec-kid-1", None, 2.0, False, (_text_call("k1"),), ("log",), (0,))
    kid2 = SessionScript("rec-kid-2", None, 3.0, False, (_text_call("k2"),), ("log",), (0,))
    return [primary, kid1, kid2]


def test_first_call_order_binding_and_cursors():
    p = ScriptPlayer(_scripts())
    assert p(session_id="live-b")["text"] == "p0"  # first caller takes the first script
    assert p(session_id="live-a")["text"] == "k1"  # the next new session the next one
    out = p({"messages": [{"role": "user", "content": "g-1 then g-42"}]}, session_id="live-b")
    assert out["text"] == "id 42"  # its own cursor; the placeholder resolved (last match)
    assert p.bindings() == {"live-b": "rec-parent", "live-a": "rec-kid-1"}
    left = p.unconsumed_df()
    assert left["session_id"].tolist() == ["rec-kid-2"] and not bool(left["bound"].iloc[0])
    with pytest.raises(ScriptNotConsumedError, match="never bound") as err:
        p.assert_consumed()
    assert err.value.unconsumed["script"].tolist() == [2]
    assert p(session_id="live-c")["text"] == "k2"
    p.assert_consumed()
    with pytest.raises(ScriptSessionsExhaustedError, match="3 script"):
        p(session_id="live-d")  # more live sessions than recorded scripts
    with pytest.raises(ScriptCallsExhaustedError, match="call 2"):
        p(session_id="live-a")  # more calls than the script holds


def test_anonymous_calls_go_to_the_primary():
    p = ScriptPlayer(_scripts())
    assert p()["text"] == "p0"  # no session id: the primary
    assert p({"sessionId": "live-x"})["text"] == "k1"  # the primary is taken
    assert p({"messages": [{"role": "user", "content": "g-7"}]})["text"] == "id 7"
    assert p.bindings()["<anonymous>"] == "rec-parent"


def test_entry_output_shapes():
    call = {"kind": "chunks", "chunks": [
        {"type": "reasoning-delta", "index": 0, "text": "think"},
        {"type": "block-end", "index": 1, "block": {"type": "tool-call", "id": "c1",
                                                     "name": "grep", "arguments": '{"q":1}'}},
        {"type": "usage", "usage": {"inputTokens": 3}},
        {"type": "finish", "reason": {"kind": "tool-calls"}}]}
    out = entry_output(call)
    assert out["toolCalls"] == [{"toolCallId": "c1", "toolName": "grep", "args": '{"q":1}'}]
    assert (out["text"], out["reasoning"], out["finish"]) == (None, "think", "tool-calls")
    assert out["usage"] == {"inputTokens": 3} and out["chunks"] == call["chunks"]
    thrown = entry_output({"kind": "throw", "chunks": [], "message": "boom", "code": "E1"})
    assert thrown["finish"] == "error" and thrown["error"] == {"message": "boom", "code": "E1"}
    with pytest.raises(ScriptHangError):
        entry_output({"kind": "hang"})
    with pytest.raises(ValueError):
        ScriptPlayer([])


# ----------------------------------------------------------------------------- corpus
def _scenarios_with_children(root: Path) -> list[Path]:
    return sorted({p.parent for p in root.rglob("session.1.jsonl")})


def _replay_scenario(scen: Path, player: ScriptPlayer, runs: list[str] | None = None
                     ) -> dict[str, rk.ReplayResult]:
    log = rk.read_toh(scen, owner="corpus", errors="quarantine")
    have = set(log.run_ids)
    order = [s.session_id for s in player.scripts if s.session_id in have]
    out = {}
    for run in runs if runs is not None else order:  # live sessions call in script order
        br = rk.Branch(base=log, run_id=run, tenant_id="corpus", checkpoint=0, name="live")
        out[run] = rk.replay(br, model_policy="pinned-live",
                             model_executor=player.executor(f"live-{run}"))
    return out


@pytest.mark.corpus
@pytest.mark.filterwarnings("ignore::replaykit.OrphanRunWarning")
def test_corpus_scenarios_with_children_replay_from_their_scripts(toh_corpus: Path):
    scens = _scenarios_with_children(toh_corpus)
    assert len(scens) >= 15
    checked = 0
    for scen in scens:
        player = ScriptPlayer(scen)
        if len(player.scripts) < 2:
            continue
        results = _replay_scenario(scen, player)
        if len(results) != len(player.scripts):
            continue  # a child whose session id the loader renamed (placeholders)
        player.assert_consumed()  # every recorded call was served exactly once
        served = [(s["recorded_session"], s["call"]) for s in player.served]
        assert sorted(served) == sorted((s.session_id, k) for s in player.scripts
                                        for k in range(len(s.calls)))
        for run, res in results.items():
            origin = res.events.table.column("replay_origin").to_pylist()
            assert "executor" in origin, (scen.name, run)
            if res.status != "completed":
                continue
            m = res.metrics
            assert m["comparability"] in ("aligned", "diverged_but_comparable"), scen.name
            assert m["tool_signature_distance"] == 0, (scen.name, run)
        # the live outputs are the scripts' text: each scripted model response says so
        for s in player.scripts:
            res = results[s.session_id]
            resp = [json.loads(p) for p, k in zip(
                res.events.table.column("payload").to_pylist(),
                res.events.table.column("kind").to_pylist(), strict=True)
                if k == "model_response"]
            outs = [p["output"]["text"] for p in resp if "output" in p]
            want = [entry_output(c)["text"] for c in s.calls]
            assert outs == want[:len(outs)] and len(outs) == len(want), (scen.name, s.session_id)
        checked += 1
    assert checked >= 12


@pytest.mark.corpus
def test_corpus_too_many_sessions_and_unconsumed_children(toh_corpus: Path):
    scen = toh_corpus / "examples__acp-agent__tests__snapshots/subagent-multi"
    player = ScriptPlayer(scen)
    assert [len(s) for s in player.scripts] == [3, 1, 1]
    parent = player.scripts[0].session_id
    res = _replay_scenario(scen, player, runs=[parent])[parent]
    assert res.status == "completed" and res.metrics["first_divergence_step"] == -1
    with pytest.raises(ScriptNotConsumedError) as err:
        player.assert_consumed()  # the two children never called
    assert err.value.unconsumed["session_id"].tolist() == [s.session_id
                                                           for s in player.scripts[1:]]
    # a fourth live session has no script left
    player(session_id="kid-1")
    player(session_id="kid-2")
    player.assert_consumed()
    with pytest.raises(ScriptSessionsExhaustedError):
        player(session_id="kid-3")


@pytest.mark.corpus
def test_corpus_placeholder_resolves_against_the_live_request(toh_corpus: Path):
    scen = toh_corpus / "apps__web__tests__snapshots/goal-multi-turn-actions"
    player = rk.toh.ScriptPlayer(scen)
    goal = "goal-0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
    for _ in range(10):
        player(session_id="live")
    out = player({"messages": [{"role": "tool", "content": f"created {goal}"}]},
                 session_id="live")
    [call] = out["toolCalls"]
    assert json.loads(call["args"])["goal_id"] == goal
