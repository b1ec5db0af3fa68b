"""Model-call scripts over every scenario of the toh corpus, checked against the reference rules.

Expectations were established under the reference replay plugin's rules (docs/toh_scripts.md):
a call is the chunks of one (turn, step) up to ``finish``, a marked compaction summary is a call
of its own, a fork child's seed is skipped. Each log's count is also re-derived here from the raw
JSON lines by an independent scan.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replaykit.toh.scripts import (
    UnfinishedCallError,
    load_override,
    model_scripts,
    resolve_placeholders,
    unfinished_calls,
)

#: every log -> calls derived from it alone (None: a call ends without finish; needs its sidecar)
DERIVED_CALLS = {
    "apps__web__tests__snapshots/cordis-tool-round/session.jsonl": 7,
    "apps__web__tests__snapshots/goal-multi-turn-actions/session.jsonl": 12,
    "apps__web__tests__snapshots/permission-policy-context/session.jsonl": 7,
    "apps__web__tests__snapshots/turn-tail-actions/session.jsonl": 2,
    "apps__web__tests__snapshots/web-search-round/session.jsonl": 2,
    "examples__acp-agent__tests__goal-snapshots/goal-round-driver/session.expected.jsonl": None,
    "examples__acp-agent__tests__goal-snapshots/goal-wrapup/session.expected.jsonl": 4,
    "examples__acp-agent__tests__snapshots/advanced-toolchain/session.1.jsonl": 1,
    "examples__acp-agent__tests__snapshots/advanced-toolchain/session.2.jsonl": 1,
    "examples__acp-agent__tests__snapshots/advanced-toolchain/session.jsonl": 6,
    "examples__acp-agent__tests__snapshots/agent-instructions/session.jsonl": 3,
    "examples__acp-agent__tests__snapshots/background-job-admission/session.jsonl": 5,
    "examples__acp-agent__tests__snapshots/bash-spill/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/bash-tool-turn/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/both-mode-turn/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/cancel-tool-calls/session.jsonl": 1,
    "examples__acp-agent__tests__snapshots/cancel/session.jsonl": None,
    "examples__acp-agent__tests__snapshots/code-mode-read-image/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/code-mode-turn/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/code-mode-workspace-context/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/cordis-inspect-jsdoc/session.jsonl": 3,
    "examples__acp-agent__tests__snapshots/empty-response-retry/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/error-finish/session.jsonl": 1,
    "examples__acp-agent__tests__snapshots/escalation-approved/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/escalation-rejected/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/fs-delete-recreate/session.jsonl": 5,
    "examples__acp-agent__tests__snapshots/fs-edit/session.jsonl": 3,
    "examples__acp-agent__tests__snapshots/fs-escalation-approved/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/fs-policy-reject/session.jsonl": 4,
    "examples__acp-agent__tests__snapshots/fs-read-window/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/fs-read/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/fs-write-overwrite-bounded/session.jsonl": 3,
    "examples__acp-agent__tests__snapshots/fs-write-overwrite/session.jsonl": 3,
    "examples__acp-agent__tests__snapshots/fs-write/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/hook-cc-invalid-matcher/session.jsonl": 1,
    "examples__acp-agent__tests__snapshots/hook-cc-posttool-block/session.jsonl": 3,
    "examples__acp-agent__tests__snapshots/hook-cc-posttool-context/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/hook-cc-pretool-ask/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/hook-cc-pretool-deny/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/hook-cc-promptsubmit-context/session.jsonl": 1,
    "examples__acp-agent__tests__snapshots/hook-cc-stop-continue/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/hook-codex-invalid-matcher/session.jsonl": 1,
    "examples__acp-agent__tests__snapshots/hook-codex-posttool-block/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/hook-codex-posttool-context/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/hook-codex-pretool-block/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/hook-codex-promptsubmit-context/session.jsonl": 1,
    "examples__acp-agent__tests__snapshots/hook-codex-stop-continue/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/inline-image-prompt/session.jsonl": 1,
    "examples__acp-agent__tests__snapshots/lsp-definition/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/max-tokens-continue/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/mcp-prompts-skill-load/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/memory-tool-turn/session.jsonl": 3,
    "examples__acp-agent__tests__snapshots/missing-sandbox-runner/session.jsonl": 4,
    "examples__acp-agent__tests__snapshots/multi-turn/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/packed-chunks/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/parallel-tool-calls/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/partial-landlock-child-failure/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/product-subagent-both/session.jsonl": 1,
    "examples__acp-agent__tests__snapshots/product-subagent-codex/session.jsonl": 1,
    "examples__acp-agent__tests__snapshots/product-subagent-result-diagnostic/session.jsonl": 7,
    "examples__acp-agent__tests__snapshots/pty-tools/session.jsonl": 7,
    "examples__acp-agent__tests__snapshots/read-image-dimension/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/read-image-text-route/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/read-image/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/repeat-tool-reminder/session.jsonl": 6,
    "examples__acp-agent__tests__snapshots/session-query-spill/session.jsonl": 3,
    "examples__acp-agent__tests__snapshots/session-sandbox-root/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/session-title-after-turn/session.jsonl": 1,
    "examples__acp-agent__tests__snapshots/skill-load/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/subagent-child-question-rejection/session.1.jsonl": 2,
    "examples__acp-agent__tests__snapshots/subagent-child-question-rejection/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/subagent-continuable-inheritance/session.1.jsonl": 1,
    "examples__acp-agent__tests__snapshots/subagent-continuable-inheritance/session.jsonl": 3,
    "examples__acp-agent__tests__snapshots/subagent-continuable/session.1.jsonl": 2,
    "examples__acp-agent__tests__snapshots/subagent-continuable/session.jsonl": 6,
    "examples__acp-agent__tests__snapshots/subagent-depth-two-rejection/session.1.jsonl": 2,
    "examples__acp-agent__tests__snapshots/subagent-depth-two-rejection/session.2.jsonl": 2,
    "examples__acp-agent__tests__snapshots/subagent-depth-two-rejection/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/subagent-fork-in-process/session.1.jsonl": 1,
    "examples__acp-agent__tests__snapshots/subagent-fork-in-process/session.jsonl": 3,
    "examples__acp-agent__tests__snapshots/subagent-list-agents/session.1.jsonl": 1,
    "examples__acp-agent__tests__snapshots/subagent-list-agents/session.jsonl": 5,
    "examples__acp-agent__tests__snapshots/subagent-max-tokens-partial/session.1.jsonl": 2,
    "examples__acp-agent__tests__snapshots/subagent-max-tokens-partial/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/subagent-mixed/session.1.jsonl": 1,
    "examples__acp-agent__tests__snapshots/subagent-mixed/session.2.jsonl": 1,
    "examples__acp-agent__tests__snapshots/subagent-mixed/session.jsonl": 4,
    "examples__acp-agent__tests__snapshots/subagent-multi/session.1.jsonl": 1,
    "examples__acp-agent__tests__snapshots/subagent-multi/session.2.jsonl": 1,
    "examples__acp-agent__tests__snapshots/subagent-multi/session.jsonl": 3,
    "examples__acp-agent__tests__snapshots/subagent-parallel/session.1.jsonl": 1,
    "examples__acp-agent__tests__snapshots/subagent-parallel/session.2.jsonl": 1,
    "examples__acp-agent__tests__snapshots/subagent-parallel/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/subagent-published-run-failure/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/subagent-report/session.1.jsonl": 2,
    "examples__acp-agent__tests__snapshots/subagent-report/session.jsonl": 4,
    "examples__acp-agent__tests__snapshots/subagent-spawn-in-process/session.1.jsonl": 1,
    "examples__acp-agent__tests__snapshots/subagent-spawn-in-process/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/text-turn/session.jsonl": 1,
    "examples__acp-agent__tests__snapshots/todo-write/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/tool-call-turn/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/turn-budget-policy/session.jsonl": 5,
    "examples__acp-agent__tests__snapshots/web-fetch/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/workflow-run/session.1.jsonl": 1,
    "examples__acp-agent__tests__snapshots/workflow-run/session.jsonl": 2,
    "examples__acp-agent__tests__snapshots/workspace-edit/session.jsonl": 4,
    "examples__headless-agent__tests__snapshots/advanced-toolchain/session.1.jsonl": 1,
    "examples__headless-agent__tests__snapshots/advanced-toolchain/session.2.jsonl": 1,
    "examples__headless-agent__tests__snapshots/advanced-toolchain/session.jsonl": 6,
    "examples__headless-agent__tests__snapshots/compaction-recovery/session.jsonl": 4,
    "examples__headless-agent__tests__snapshots/headless-profile/session.expected.jsonl": 2,
    "examples__headless-agent__tests__snapshots/pty-tools/session.jsonl": 7,
    "examples__jsonrpc-agent__tests__snapshots/bash-tool/session.jsonl": 2,
    "examples__jsonrpc-agent__tests__snapshots/persistent-tools/session.jsonl": 7,
    "examples__jsonrpc-agent__tests__snapshots/subagent-spawn-in-process/session.1.jsonl": 1,
    "scripts__snapshots__python-sdk-single-exe/advanced/session.1.jsonl": 1,
    "scripts__snapshots__python-sdk-single-exe/advanced/session.2.jsonl": 1,
}

#: the logs whose derivation fails, with the unfinished call (reference: "needs a sidecar")
UNFINISHED = {
    "examples__acp-agent__tests__goal-snapshots/goal-round-driver/session.expected.jsonl":
        ("t3.s1.c0", 3, 1, 2),
    "examples__acp-agent__tests__snapshots/cancel/session.jsonl": ("t1.s1.c0", 1, 1, 2),
}  # fmt: skip

#: scenario -> (sidecar form, primary calls after it is applied, patched indices)
SIDECARS = {
    "apps__web__tests__snapshots/goal-multi-turn-actions": ("patches", 12, [2, 7, 10]),
    "examples__acp-agent__tests__goal-snapshots/goal-round-driver": ("replace", 5, None),
    "examples__acp-agent__tests__snapshots/cancel": ("replace", 1, None),
    "examples__acp-agent__tests__snapshots/session-query-spill": ("replace", 3, None),
}


def _rel(root: Path, p: str | Path) -> str:
    return str(Path(p).relative_to(root))


def test_every_log_is_listed(toh_corpus: Path) -> None:
    logs = {_rel(toh_corpus, p) for p in toh_corpus.rglob("*.jsonl")}
    assert logs == set(DERIVED_CALLS)
    assert len(logs) == 117
    assert {_rel(toh_corpus, p.parent) for p in toh_corpus.rglob("replay.override.json")} == set(
        SIDECARS)  # fmt: skip


def test_unfinished_calls_are_exactly_two(toh_corpus: Path) -> None:
    df = unfinished_calls(toh_corpus)
    got = {_rel(toh_corpus, r.source): (r.call, r.turn, r.step, r.n_chunks)
           for r in df.itertuples()}  # fmt: skip
    assert got == UNFINISHED
    assert {k for k, v in DERIVED_CALLS.items() if v is None} == set(UNFINISHED)
    # both are in scenarios whose sidecar replaces the whole primary script
    for k in UNFINISHED:
        assert SIDECARS[str(Path(k).parent)][0] == "replace"


def _scan(path: Path, *, skip_seed: bool = True) -> int | None:
    """Independent count: finish chunks (+ marked compactions) after the seed (a child's role;
    ``skip_seed=False``: the log derived as a primary); None if a run of chunks ends without
    finish (a new (turn, step), a compaction, or the end of the log)."""
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    seed = (lines[0].get("seedLength") or 0) if skip_seed else 0
    events: list[dict] = []
    for ev in lines[1:]:
        if ev["type"] in ("text-chunks", "reasoning-chunks", "tool-call-chunks"):
            d = ev["data"]
            members = d.get("texts", d.get("args"))
            events += [{"type": "assistant/chunk", "data": {"turn": d["turn"], "step": d["step"],
                        "chunk": {"type": "delta"}}} for _ in members]  # fmt: skip
        else:
            events.append(ev)
    calls, open_key = 0, None
    for ev in events[seed:]:
        if ev["type"] == "compaction/summary":
            if open_key is not None:
                return None
            calls += ev["data"].get("llmStreamCall") is True
        elif ev["type"] == "assistant/chunk":
            key = (ev["data"].get("turn"), ev["data"].get("step"))
            if open_key is not None and key != open_key:
                return None
            open_key = key
            if ev["data"]["chunk"]["type"] == "finish":
                calls, open_key = calls + 1, None
    return None if open_key is not None else calls


@pytest.mark.parametrize("rel", sorted(DERIVED_CALLS))
def test_each_log_derives_as_expected(toh_corpus: Path, rel: str) -> None:
    path = toh_corpus / rel
    expected = DERIVED_CALLS[rel]
    assert _scan(path) == expected
    if expected is None:
        with pytest.raises(UnfinishedCallError) as ei:
            model_scripts(path, override=False)
        assert ei.value.source == str(path) and ei.value.call == UNFINISHED[rel][0]
        return
    [s] = model_scripts(path, override=False)
    # a log given as the primary is derived whole, as the reference does, seedLength or not
    assert len(s) == _scan(path, skip_seed=False) == s.derived_calls and s.seed_length == 0
    for call in s.calls:
        assert call["kind"] == "chunks" and call["chunks"][-1]["type"] == "finish"


def test_scenarios_with_sidecars(toh_corpus: Path) -> None:
    for rel, (form, n, patched) in SIDECARS.items():
        folder = toh_corpus / rel
        doc = load_override(folder / "replay.override.json")  # validates
        assert isinstance(doc, list) == (form == "replace")
        [primary] = model_scripts(folder)
        assert primary.primary and primary.override == str(folder / "replay.override.json")
        assert len(primary) == n
        if form == "patches":
            assert sorted(p["at"] for p in doc["patches"]) == patched
            assert [i for i, o in enumerate(primary.origins) if o == "override"] == patched
            assert primary.derived_calls == 12
        else:
            assert primary.origins == ("override",) * n and primary.calls == tuple(doc)
    cancel = model_scripts(toh_corpus / "examples__acp-agent__tests__snapshots/cancel")[0]
    assert cancel.calls == ({"kind": "hang", "readyFile": ".toh-snapshot-stream-ready"},)
    # session-query-spill's replacement equals what its log derives
    spill = toh_corpus / "examples__acp-agent__tests__snapshots/session-query-spill"
    assert model_scripts(spill)[0].calls == model_scripts(spill, override=False)[0].calls


def test_scenario_session_counts_and_order(toh_corpus: Path) -> None:
    expected = {}
    for rel, n in DERIVED_CALLS.items():
        expected.setdefault(str(Path(rel).parent), {})[Path(rel).name] = n
    for scen, files in expected.items():
        if scen in SIDECARS:
            continue
        scripts = model_scripts(toh_corpus / scen)
        by_file = {Path(s.source).name: len(s) for s in scripts}
        assert by_file == files, scen
        prim = [s.primary for s in scripts]
        assert prim == sorted(prim, reverse=True)  # primary (if any) first
        kids = [(s.created_at, s.session_id) for s in scripts if not s.primary]
        assert kids == sorted(kids)


def test_fork_child_seed_excluded(toh_corpus: Path) -> None:
    scen = toh_corpus / "examples__acp-agent__tests__snapshots/subagent-fork-in-process"
    parent, child = model_scripts(scen)
    assert child.seed_length == 42 and len(child) == 1
    assert all(q >= 42 for q in child.first_seqs)
    raw = (scen / "session.1.jsonl").read_text(encoding="utf-8")
    assert raw.count('"type":"finish"') > 1  # the seed holds the parent's calls
    # the same log as a scenario's primary: nothing is skipped (the reference's rule)
    [whole] = model_scripts(scen / "session.1.jsonl", override=False)
    assert whole.seed_length == 0 and len(whole) == raw.count('"type":"finish"') > len(child)
    assert whole.calls[-1] == child.calls[-1]


def test_marked_compaction_call(toh_corpus: Path) -> None:
    scen = toh_corpus / "examples__headless-agent__tests__snapshots/compaction-recovery"
    [s] = model_scripts(scen)
    assert "compaction" in s.origins
    c = s.calls[s.origins.index("compaction")]["chunks"]
    assert c[0]["type"] == "block-start" and c[-1] == {"type": "finish", "reason": {"kind": "stop"}}


def test_goal_multi_turn_placeholders_resolve(toh_corpus: Path) -> None:
    scen = toh_corpus / "apps__web__tests__snapshots/goal-multi-turn-actions"
    [s] = model_scripts(scen)
    with_ph = [i for i, c in enumerate(s.calls) if "{{fromRequest:" in json.dumps(c)]
    assert with_ph == [10]
    goal = "goal-0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
    request = [
        {"role": "user", "content": [{"type": "text", "text": "goal-00000000 was the old one"}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1",
                                      "content": [{"type": "text", "text": f"created {goal}"}]}]},
    ]  # fmt: skip
    entry = resolve_placeholders(s.calls[10], request)
    text = json.dumps(entry)
    assert "{{fromRequest:" not in text and goal in text
    args = [json.loads(ch["argumentsDelta"]) for ch in entry["chunks"]
            if ch["type"] == "tool-call-delta"]  # fmt: skip
    assert args == [{"goal_id": goal, "revision": 1, "action": "complete"}]
    block = [ch["block"] for ch in entry["chunks"] if ch["type"] == "block-end"
             and ch["block"]["type"] == "tool-call"][0]  # fmt: skip
    assert json.loads(block["arguments"])["goal_id"] == goal
    # every other call is returned unchanged
    assert resolve_placeholders(s.calls[9], request) is s.calls[9]
