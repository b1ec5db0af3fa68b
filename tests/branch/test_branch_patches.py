"""Branch values and patch operations (replaykit.branch)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import replaykit as rk
from replaykit._base.json import args_hash
from replaykit.branch import Branch
from replaykit.branch.patches import apply_operations, apply_tool_args_patch

DATA = Path(__file__).resolve().parents[2] / "data" / "isplay"


@pytest.fixture(scope="module")
def log() -> rk.EventLog:
    return rk.read_isplay(DATA, owner="acme")


@pytest.fixture(scope="module")
def branch(log: rk.EventLog) -> Branch:
    return Branch.load(DATA / "branch-drop-fraud-clause.json", base=log, tenant_id="acme")


# ------------------------------------------------------------------ patch shapes (reference)

def test_replace_text_shape() -> None:
    doc = {"prompt": "Decide. Escalate suspected fraud. Be kind."}
    out, bad = apply_operations(doc, [{"op": "replace_text", "path": "/prompt", "value": {
        "search": "Escalate suspected fraud.", "replacement": ""}}])
    assert bad == [] and out["prompt"] == "Decide.  Be kind."
    assert doc["prompt"].startswith("Decide. Escalate")  # input untouched


def test_mask_span_shape() -> None:
    text = "Please triage claim C-104: travel reimbursement of 900 EUR."
    doc = {"messages": [{"role": "user", "content": text}]}
    out, bad = apply_operations(doc, [{"op": "mask_span", "path": "/messages/0/content",
                                       "value": {"start": 20, "end": 55,
                                                 "replacement": "[MASKED]"}}])
    assert bad == []
    assert out["messages"][0]["content"] == text[:20] + "[MASKED]" + text[55:]


def test_rfc6902_shape() -> None:
    doc = {"settings": {"temperature": 0.2}, "tools": ["a", "b", "c"]}
    out, bad = apply_operations(doc, [{"op": "replace", "path": "/settings/temperature",
                                       "value": 0}, {"op": "remove", "path": "/tools/2"}])
    assert bad == [] and out == {"settings": {"temperature": 0}, "tools": ["a", "b"]}


def test_tool_args_shape_recomputes_hash_and_drops_artifact() -> None:
    ev = {"toolName": "risk-signals", "args": {"claimedAmount": 1800}, "argsHash": "x",
          "argsArtifactId": "art-args"}
    new_args = {"claimId": "C-104", "claimedAmount": 900, "merchant": "City Travel Desk"}
    out, bad = apply_tool_args_patch(ev, {"toolName": "risk-signals", "args": new_args})
    assert bad == [] and out["args"] == new_args
    assert out["argsHash"] == args_hash(new_args) == "87529baee44bed63b2c011e2e53c3540"
    assert "argsArtifactId" not in out and ev["argsArtifactId"] == "art-args"


def test_failing_operations_keep_value_and_report() -> None:
    doc = {"a": "text", "n": 1}
    out, bad = apply_operations(doc, [
        {"op": "remove", "path": "/missing"},
        {"op": "replace_text", "path": "/a", "value": {"search": "zzz", "replacement": ""}},
        {"op": "mask_span", "path": "/n", "value": {"start": 0, "end": 1}},
        {"op": "mask_span", "path": "/a", "value": {"start": 2, "end": 99}},
        {"op": "replace", "path": "/n", "value": 2},
    ])
    assert out == {"a": "text", "n": 2}
    assert [b["index"] for b in bad] == [0, 1, 2, 3]
    assert all(b["error"] for b in bad)


@given(st.text(max_size=30), st.integers(0, 30), st.integers(0, 30), st.text(max_size=5))
def test_mask_span_property(text: str, a: int, b: int, repl: str) -> None:
    start, end = min(a, b), max(a, b)
    out, bad = apply_operations({"t": text}, [{"op": "mask_span", "path": "/t", "value": {
        "start": start, "end": end, "replacement": repl}}])
    if end <= len(text):
        assert bad == [] and out["t"] == text[:start] + repl + text[end:]
    else:
        assert len(bad) == 1 and out["t"] == text


# ------------------------------------------------------------------ Branch value

def test_branch_loads_sample_and_resolves_checkpoint(branch: Branch) -> None:
    assert branch.run_id == "run-claims-C-104" and branch.checkpoint == "cp-intake"
    assert branch.checkpoint_seq() == 2
    assert branch.project_id == "proj-claims"
    assert [iv.kind for iv in branch.interventions] == [
        "prompt_patch", "mask", "json_patch", "tool_args_patch"]


def test_branch_roundtrip_matches_file_shape(branch: Branch, log: rk.EventLog,
                                             tmp_path: Path) -> None:
    original = json.loads((DATA / "branch-drop-fraud-clause.json").read_text())
    assert branch.to_dict() == original
    p = branch.save(tmp_path / "b.json")
    again = Branch.load(p, base=log, tenant_id="acme")
    assert again == branch and rk.read_isplay_branch(p).branch_id == "br-drop-fraud-clause"


def test_intervene_returns_new_branch(log: rk.EventLog) -> None:
    b = Branch(base=log, run_id="run-claims-C-104", tenant_id="acme", checkpoint=2, name="x")
    b2 = b.intervene(kind="tool_args_patch", target="tc-104-2",
                     patch={"args": {"claimId": "C-104"}}, description="d")
    assert b.interventions == () and len(b2.interventions) == 1
    assert b2.interventions[0].selector == {"target_ref": "tc-104-2"}
    assert b2.checkpoint_seq() == 2
    d = b2.to_dict()
    assert d["checkpointSeq"] == 2
    assert Branch.from_dict(d, base=log, tenant_id="acme").checkpoint == 2


def test_intervene_rejects_bad_input(log: rk.EventLog) -> None:
    b = Branch(base=log, run_id="run-claims-C-104", tenant_id="acme", checkpoint="cp-intake",
               name="x")
    with pytest.raises(ValueError, match="unknown_selector_key"):
        b.intervene(kind="mask", targetRef="x", patch={"operations": [
            {"op": "remove", "path": "/a"}]})
    with pytest.raises(ValueError, match="unknown_kind"):
        b.intervene(kind="nope", target="x", patch={})


def test_branch_requires_tenant_and_known_checkpoint(log: rk.EventLog) -> None:
    with pytest.raises(TypeError, match="tenant_id"):
        Branch(base=log, run_id="run-claims-C-104", tenant_id="", checkpoint=2, name="x")
    b = Branch(base=log, run_id="run-claims-C-104", tenant_id="acme", checkpoint="cp-nope",
               name="x")
    with pytest.raises(rk.ReplayError, match="cp-nope"):
        b.checkpoint_seq()
    other = Branch(base=log, run_id="run-claims-C-104", tenant_id="globex", checkpoint=2,
                   name="x")
    with pytest.raises(rk.ReplayError, match="globex"):
        other.checkpoint_seq()
