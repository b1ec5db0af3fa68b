"""rk.replay: every policy combination of the reference's table, pause/resume, patches,
unmatched interventions, fail-fast live policies and the four comparability classes."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.compute as pc
import pytest

import replaykit as rk
from replaykit._base.json import args_hash
from replaykit.branch import Branch, Fixture, FixtureRegistry, ReplayResult, replay

DATA = Path(__file__).resolve().parents[2] / "data" / "isplay"
FIXTURES = DATA / "fixtures.json"
RUN = "run-claims-C-104"


@pytest.fixture(scope="module")
def log() -> rk.EventLog:
    return rk.read_isplay(DATA, owner="acme")


@pytest.fixture(scope="module")
def branch(log: rk.EventLog) -> Branch:
    return Branch.load(DATA / "branch-drop-fraud-clause.json", base=log, tenant_id="acme")


@pytest.fixture(scope="module")
def plain(log: rk.EventLog) -> Branch:
    return Branch(base=log, run_id=RUN, tenant_id="acme", checkpoint="cp-intake", name="plain")


def _payloads(res: ReplayResult) -> list[dict]:
    return [json.loads(p) for p in res.events.table.column("payload").to_pylist()]


# ------------------------------------------------------------------ Default RCA + resume

def test_default_rca_pauses_then_resumes(branch: Branch) -> None:
    res = replay(branch)  # recorded-only / pause-for-fixture from the branch file
    assert (res.status, res.model_policy, res.tool_policy) == (
        "paused", "recorded-only", "pause-for-fixture")
    req = res.requirements_df()
    assert req[["tool_name", "ref_id", "args_hash", "status"]].iloc[0].tolist() == [
        "risk-signals", "tc-104-2", "87529baee44bed63b2c011e2e53c3540", "open"]
    assert json.loads(req.loc[0, "args"])["claimedAmount"] == 900
    assert int(req.loc[0, "step"]) == len(res.events) - 1  # paused at the divergent call
    assert res.comparability == "non_comparable"
    done = res.resume(FIXTURES)
    assert done.status == "completed" and res.status == "paused"
    eff = done.effects_df().set_index("ref_id")
    assert eff.loc["tc-104-2", ["action", "fixture_id", "provenance"]].tolist() == [
        "fixture", "fx-risk-900", "analyst"]
    assert eff.loc["tc-104-1", "action"] == "recorded"
    served = [p for p in _payloads(done) if p.get("fixtureId") == "fx-risk-900"]
    assert served[0]["output"] == {"score": 0.34, "signals": ["duplicate_receipt"]}
    m = done.metrics
    assert m["fixture_dependency_count"] == 1 and m["sensitive_to_fixture"] is True
    assert m["first_divergence_step"] == 3 and m["tool_argument_changed"] == 1
    assert m["tool_sequence_distance"] == 0 and m["tool_signature_distance"] == 1
    assert done.comparability == "diverged_but_comparable"


def test_interventions_applied_to_events(branch: Branch) -> None:
    res = replay(branch, fixtures=FIXTURES)
    p = _payloads(res)
    first_call = p[3]
    assert "Escalate suspected fraud." not in first_call["prompt"]
    assert first_call["messages"][0]["content"][20:28] == "[MASKED]"
    assert first_call["settings"]["temperature"] == 0 and len(first_call["tools"]) == 3
    assert [r["interventionId"] for r in first_call["replayPatch"]] == ["iv-1", "iv-2", "iv-3"]
    call = next(x for x in p if x.get("refId") == "tc-104-2" and x["type"] == "tool.call")
    assert "argsArtifactId" not in call and call["args"]["claimedAmount"] == 900
    assert res.events.table.column("inherited").to_pylist()[:3] == [True] * 3
    assert res.annotations_df()["origin"].value_counts()["fixture"] == 1
    assert res.events.table.column("parent_run_id")[0].as_py() == RUN


# ------------------------------------------------------------------ Exact trace check

def test_exact_trace_check_fails_instead_of_pausing(branch: Branch) -> None:
    res = replay(branch, model_policy="recorded-only", tool_policy="recorded-only")
    assert res.status == "failed" and "risk-signals" in res.error
    assert res.requirements_df()["tool_name"].tolist() == ["risk-signals"]
    ok = replay(branch, model_policy="recorded-only", tool_policy="recorded-only",
                fixtures=FIXTURES)
    assert ok.status == "completed"


# ------------------------------------------------------------------ Nondeterminism probe

def test_determinism_probe(branch: Branch) -> None:
    calls = []

    def steady(request: dict, *, policy: str) -> dict:
        calls.append(policy)
        return {"text": "same"}

    res = replay(branch, model_policy="determinism-probe", tool_policy="pause-for-fixture",
                 fixtures=FIXTURES, model_executor=steady, probe_runs=3)
    pr = res.probes_df()
    assert len(pr) == 4 and pr["deterministic"].all() and not pr["matches_recorded"].any()
    assert len(calls) == 12 and set(calls) == {"determinism-probe"}
    counter = iter(range(1000))
    res2 = replay(branch, model_policy="determinism-probe", fixtures=FIXTURES,
                  model_executor=lambda req, policy: {"text": str(next(counter))})
    assert not res2.probes_df()["deterministic"].any()
    assert res2.probes_df()["distinct_outputs"].tolist() == [2, 2, 2, 2]
    # the recorded outputs are served: same trace as a recorded-only replay
    base = replay(branch, fixtures=FIXTURES)
    assert res2.events.table.column("text").equals(base.events.table.column("text"))


# ------------------------------------------------------------------ Side-effect audit

def test_side_effect_audit_blocks_everything(branch: Branch) -> None:
    def never(*a, **k):  # pragma: no cover - must not be called
        raise AssertionError("executor called under blocked policy")

    res = replay(branch, model_policy="blocked", tool_policy="blocked", tool_executor=never,
                 model_executor=never)
    assert res.status == "completed"
    eff = res.effects_df()
    assert (eff["action"] == "blocked").sum() == 5  # 4 model calls + the divergent tool call
    blocked_tool = eff[eff["tool_name"] == "risk-signals"].iloc[0]
    assert bool(blocked_tool["divergent"]) and blocked_tool["action"] == "blocked"
    res_row = [p for p in _payloads(res) if p.get("blocked")]
    assert len(res_row) == 1 and res_row[0]["isError"] is True
    t = res.events.table
    err = [e for e, k in zip(t.column("is_error").to_pylist(),
                             t.column("kind").to_pylist(), strict=True) if k == "tool_result"]
    assert err.count(True) == 1
    assert res.metrics["fixture_dependency_count"] == 0


# ------------------------------------------------------------------ Live exploration

@pytest.mark.parametrize("mp", ["pinned-live", "compatible-live"])
@pytest.mark.parametrize("tp", ["live-readonly", "live-explicit"])
def test_live_exploration(branch: Branch, mp: str, tp: str) -> None:
    tool_calls = []

    def model(request: dict, *, policy: str) -> dict:
        assert policy == mp
        return {"text": f"live answer ({policy})", "finish": "stop"}

    def tool(name: str, args: dict, *, policy: str, readonly: bool) -> dict:
        tool_calls.append((name, args["claimedAmount"], policy, readonly))
        return {"output": {"score": 0.1}, "isError": False}

    res = replay(branch, model_policy=mp, tool_policy=tp, model_executor=model,
                 tool_executor=tool)
    assert res.status == "completed"
    assert tool_calls == [("risk-signals", 900, tp, tp == "live-readonly")]
    t = res.events.table
    texts = [x for x, k in zip(t.column("text").to_pylist(), t.column("kind").to_pylist(),
                               strict=True)
             if k == "model_response"]
    assert texts == [f"live answer ({mp})"] * 4
    assert res.effects_df().set_index("ref_id").loc["tc-104-2", "action"] == "executed"
    assert res.comparability in ("diverged_but_comparable", "aligned")
    assert res.metrics["first_divergence_step"] == 3


@pytest.mark.parametrize("mp,tp,missing", [
    ("pinned-live", "live-readonly", "model_executor"),
    ("compatible-live", "pause-for-fixture", "model_executor"),
    ("determinism-probe", "pause-for-fixture", "model_executor"),
    ("recorded-only", "live-readonly", "tool_executor"),
    ("recorded-only", "live-explicit", "tool_executor"),
])
def test_live_policies_without_executor_fail_fast(branch: Branch, mp: str, tp: str,
                                                  missing: str) -> None:
    with pytest.raises(rk.ReplayError, match=missing):
        replay(branch, model_policy=mp, tool_policy=tp)


def test_unknown_policy(branch: Branch) -> None:
    with pytest.raises(ValueError, match="model_policy"):
        replay(branch, model_policy="yolo")
    with pytest.raises(ValueError, match="tool_policy"):
        replay(branch, tool_policy="yolo")


# ------------------------------------------------------------------ patches in a replay

def test_failing_patch_recorded_on_event(plain: Branch) -> None:
    b = plain.intervene(kind="json_patch", target_event="ev-104-007",
                        patch={"operations": [{"op": "remove", "path": "/nope"}]})
    res = replay(b)
    assert res.status == "completed"
    ev = next(p for p in _payloads(res) if p.get("eventId") == "ev-104-007")
    rec = ev["replayPatch"][0]
    assert rec["status"] == "failed" and rec["failures"][0]["path"] == "/nope"
    assert "nope" not in ev and ev["settings"]["temperature"] == 0.2
    assert res.comparability == "exact"  # the failed patch changed nothing that is compared


def test_unmatched_intervention_becomes_synthetic_event(plain: Branch) -> None:
    b = plain.intervene(kind="mask", target_ref="no-such-ref", description="nothing here",
                        patch={"operations": [{"op": "remove", "path": "/x"}]})
    res = replay(b)
    t = res.events.table
    kinds = t.column("kind").to_pylist()
    assert kinds.count("intervention") == 1
    i = kinds.index("intervention")
    assert i == 3  # right after the checkpoint (seq 2)
    assert t.column("type")[i].as_py() == "intervention.created"
    payload = json.loads(t.column("payload")[i].as_py())
    assert payload["matched"] is False and payload["interventionId"] == "iv-1"
    assert res.metrics["first_divergence_step"] == 3


def test_interventions_before_checkpoint_do_not_apply(log: rk.EventLog) -> None:
    b = Branch(base=log, run_id=RUN, tenant_id="acme", checkpoint="cp-before-decision",
               name="late").intervene(kind="tool_args_patch", target="tc-104-2",
                                      patch={"args": {"claimId": "C-104"}})
    res = replay(b)
    assert res.status == "completed"
    assert "intervention" in res.events.table.column("kind").to_pylist()


def test_json_pointer_selector(plain: Branch) -> None:
    b = plain.intervene(kind="json_patch", target_type="model.call",
                        json_pointer="/contextRefs",
                        patch={"operations": [{"op": "remove", "path": "/contextRefs"}]})
    res = replay(b)
    patched = [p for p in _payloads(res) if "replayPatch" in p]
    assert [p["eventId"] for p in patched] == ["ev-104-007", "ev-104-012"]
    assert all("contextRefs" not in p for p in patched)


# ------------------------------------------------------------------ comparability classes

def test_comparability_exact(plain: Branch) -> None:
    res = replay(plain)
    m = res.metrics
    assert res.comparability == "exact" and m["first_divergence_step"] == -1
    assert m["changed_descendants"] == 0 and len(res.events) == 19


def test_comparability_aligned(plain: Branch) -> None:
    b = plain.intervene(kind="prompt_patch", target_event="ev-104-003", patch={"operations": [
        {"op": "replace_text", "path": "/prompt",
         "value": {"search": "Escalate suspected fraud.", "replacement": ""}}]})
    res = replay(b)
    assert res.comparability == "aligned"
    assert res.metrics["first_divergence_step"] == 3
    assert res.metrics["tool_signature_distance"] == 0
    d = res.diff_df()
    assert d["status"].value_counts().to_dict() == {"same": 18, "changed": 1}


def test_comparability_diverged_but_comparable(branch: Branch) -> None:
    res = replay(branch, fixtures=FIXTURES)
    assert res.comparability == "diverged_but_comparable"
    assert res.metrics["changed_descendants"] == 2


def test_comparability_non_comparable(branch: Branch) -> None:
    assert replay(branch).comparability == "non_comparable"
    assert set(rk.COMPARABILITY) == {"exact", "aligned", "diverged_but_comparable",
                                     "non_comparable"}
    assert all(v["advice"] for v in rk.COMPARABILITY.values())


# ------------------------------------------------------------------ fixtures, formats, persist

def test_fixture_resolution_rules() -> None:
    reg = FixtureRegistry.from_file(FIXTURES)
    args = {"claimId": "C-104", "claimedAmount": 900, "merchant": "City Travel Desk"}
    assert reg.resolve(tool_name="risk-signals", args=args, project_id="proj-claims") is None
    assert reg.resolve(tool_name="risk-signals", args=args, project_id="proj-claims",
                       branch_id="br-drop-fraud-clause").fixture_id == "fx-risk-900"
    assert reg.resolve(tool_name="approve-claim", args={"claimId": "C-104"},
                       replay_id="rp-0007").provenance == "ai"
    assert reg.resolve(tool_name="approve-claim", args={"claimId": "C-104"}) is None
    assert reg.resolve(tool_name="claim-lookup", args={"claimId": "C-104"},
                       project_id="other") is None
    better = reg.add(Fixture("fx-h", "proj-claims", "claim-lookup", output=1,
                             args_hash=args_hash({"claimId": "C-104"}),
                             provenance="simulator"))
    assert better.resolve(tool_name="claim-lookup", args={"claimId": "C-104"}).fixture_id == "fx-h"
    with pytest.raises(ValueError, match="provenance"):
        Fixture("x", "p", "t", args_subset={}, provenance="guess")


def test_pleach_target_event_is_seq() -> None:
    log = rk.read_pleach(Path(__file__).resolve().parents[2] / "data" / "pleach")
    t = log.table
    tenant = t.column("tenant_id")[0].as_py()
    run = t.column("run_id")[0].as_py()
    b = Branch(base=log, run_id=run, tenant_id=tenant, checkpoint=1, name="p").intervene(
        kind="tool_args_patch", target_event=4, patch={"args": {"path": "lib"}})
    res = replay(b)
    assert res.status == "paused"
    assert res.requirements_df()["args"].tolist() == ['{"path":"lib"}']
    fx = Fixture("fx-lib", "any", "list_dir", output="a.py\nb.py", args_subset={"path": "lib"},
                 provenance="simulator")
    done = res.resume([fx])
    assert done.status == "completed"
    assert done.metrics["fixture_dependency_count"] == 1
    assert done.metrics["tool_argument_changed"] == 1


def test_save_and_load(branch: Branch, tmp_path: Path) -> None:
    res = replay(branch, fixtures=FIXTURES)
    res.save(tmp_path / "rp")
    back = ReplayResult.load(tmp_path / "rp")
    assert back.status == "completed" and back.metrics == res.metrics
    # every column round-trips but source, which names files relative to their folder
    # instead of by this machine's absolute path (issue 28)
    keep = [c for c in res.events.table.column_names if c != "source"]
    assert back.events.table.select(keep).equals(res.events.table.select(keep))
    assert not any(s.startswith("isplay:/") for s in
                   back.events.table.column("source").to_pylist())
    pd.testing.assert_frame_equal(back.effects_df(), res.effects_df())
    assert len(back.fixtures) == 4
    with pytest.raises(rk.ReplayError):
        back.resume()


def test_saved_result_with_a_bad_tenant_id_does_not_load(branch: Branch, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    replay(branch, fixtures=FIXTURES).save(tmp_path / "rp")
    f = tmp_path / "rp" / "events.parquet"
    t = pq.read_table(f)
    n = t.num_rows
    pq.write_table(t.set_column(0, "tenant_id", pa.array(["acme\x00x"] * n)), f)
    with pytest.raises(rk.LoadError) as e:
        ReplayResult.load(tmp_path / "rp")
    assert e.value.reason == "bad_tenant" and e.value.source == str(f)


def test_toh_format_by_seq() -> None:
    log = rk.read_toh(Path(__file__).resolve().parents[2] / "data" / "toh", owner="acme")
    run = log.run_ids[0]
    t = log.run(run, tenant_id="acme").table
    kinds = t.column("kind").to_pylist()
    i = kinds.index("tool_call")
    call_seq = int(t.column("seq")[i].as_py())
    b = Branch(base=log, run_id=run, tenant_id="acme", checkpoint=call_seq - 1, name="t")
    assert replay(b).comparability == "exact"
    b2 = b.intervene(kind="tool_args_patch", target_event=call_seq, patch={"args": {"x": 1}})
    # args replace the whole arguments: the recorded "path" is dropped, and the replay says so
    with pytest.warns(UserWarning, match="the call had path, which the patch's args do not"):
        res = replay(b2, tool_policy="blocked")
    assert res.status == "completed"
    assert res.metrics["tool_argument_changed"] == 1
    assert res.metrics["first_divergence_step"] == i
    assert res.comparability == "diverged_but_comparable"
    # the patch lands where the harness keeps arguments: data.arguments, still a JSON string
    patched = res.events.filter(kinds="tool_call").table
    first = patched.filter(pc.equal(patched.column("seq"), call_seq))
    payload = json.loads(first.column("payload")[0].as_py())
    assert "args" not in payload
    assert json.loads(payload["data"]["arguments"]) == {"x": 1}
    assert first.column("args_hash")[0].as_py() == args_hash({"x": 1})
    assert first.column("tool_name")[0].as_py() == payload["data"]["name"]


def test_artifact_and_context_selectors_match_refs_exactly(plain: Branch) -> None:
    def patched_ids(**selector):
        b = plain.intervene(kind="json_patch", **selector,
                            patch={"operations": [{"op": "add", "path": "/hit", "value": 1}]})
        return [p["eventId"] for p in _payloads(replay(b)) if p.get("hit") == 1]

    assert patched_ids(target_artifact="art-claim-C-104") != []
    assert patched_ids(target_context="ctx-risk") == ["ev-104-012"]
    assert patched_ids(target_context="ctx-claim", target_context_path="/claim/receipts") == [
        "ev-104-012"
    ]
    # the id must be a context ref of the event: a context id used as an artifact id matches
    # nothing (the intervention becomes a synthetic event instead)
    assert patched_ids(target_artifact="ctx-risk") == []
    assert patched_ids(target_context="ctx-risk", target_context_path="/claim") == []


# ------------------------------------------------------- live model outputs drive tool calls
def _recorded_outputs(log: rk.EventLog) -> dict[str, dict]:
    """model call id -> its recorded output (with its toolCalls), for a replaying executor."""
    t = log.filter(run_ids=RUN).table
    return {ref: json.loads(p)["output"]
            for ref, k, p in zip(t.column("ref_id").to_pylist(), t.column("kind").to_pylist(),
                                 t.column("payload").to_pylist(), strict=True)
            if k == "model_response"}


def _tools(res: ReplayResult) -> list[tuple[str, str]]:
    t = res.events.table
    return [(ref, tool) for ref, tool, k in zip(
        t.column("ref_id").to_pylist(), t.column("tool_name").to_pylist(),
        t.column("kind").to_pylist(), strict=True) if k == "tool_call"]


def _executor(outputs: dict[str, dict]):
    def model(request: dict, *, policy: str) -> dict:
        return outputs[request["modelCallId"]]
    return model


def test_live_output_that_repeats_the_recording_is_served_from_it(log, plain) -> None:
    executed = []
    res = replay(plain, model_policy="compatible-live", tool_policy="live-explicit",
                 model_executor=_executor(_recorded_outputs(log)),
                 tool_executor=lambda *a, **k: executed.append(a))
    assert res.status == "completed" and executed == []  # every call's result was recorded
    base = rk.replay(plain)  # recorded-only
    assert _tools(res) == _tools(base)
    eff = res.effects_df()
    assert (eff["action"] == "recorded").all() and not eff["divergent"].any()
    results = res.events.filter(types="tool.result").table.column("text").to_pylist()
    assert results == base.events.filter(types="tool.result").table.column("text").to_pylist()


def test_live_output_with_other_tool_calls_replaces_the_recorded_ones(log, plain) -> None:
    outputs = _recorded_outputs(log)
    outputs["mc-104-2"] = {"text": "Look it up again.", "toolCalls": [
        {"toolName": "claim-lookup", "args": {"claimId": "C-104"}, "toolCallId": "tc-live"}]}
    executed = []

    def tool(name: str, args: dict, *, policy: str, readonly: bool) -> dict:
        executed.append((name, args))
        return {"output": {"claimId": args["claimId"], "found": True}, "isError": False}

    res = replay(plain, model_policy="pinned-live", tool_policy="live-explicit",
                 model_executor=_executor(outputs), tool_executor=tool)
    assert res.status == "completed"
    assert executed == [("claim-lookup", {"claimId": "C-104"})]
    assert _tools(res) == [("tc-104-1", "claim-lookup"), ("tc-live", "claim-lookup"),
                           ("tc-104-3", "escalate-to-siu")]
    assert "tc-104-2" not in set(res.events.table.column("ref_id").to_pylist())
    eff = res.effects_df().set_index("ref_id")
    assert eff.loc["tc-live", "action"] == "executed" and bool(eff.loc["tc-live", "divergent"])
    call = [p for p in _payloads(res) if p.get("refId") == "tc-live"]
    assert call[0]["modelCallId"] == "mc-104-2"
    assert call[1]["output"] == {"claimId": "C-104", "found": True}
    assert res.metrics["first_divergence_step"] >= 0
    # the same live output under pause-for-fixture: paused, the new call is the requirement
    paused = replay(plain, model_policy="pinned-live", tool_policy="pause-for-fixture",
                    model_executor=_executor(outputs))
    assert paused.status == "paused"
    req = paused.requirements_df()
    assert req[["tool_name", "ref_id"]].values.tolist() == [["claim-lookup", "tc-live"]]
    assert req.loc[0, "args_hash"] == args_hash({"claimId": "C-104"})


def test_live_output_without_tool_calls_drops_the_recorded_ones(log, plain) -> None:
    outputs = _recorded_outputs(log)
    outputs["mc-104-3"] = {"text": "Approving.", "toolCalls": []}
    res = replay(plain, model_policy="pinned-live", tool_policy="pause-for-fixture",
                 model_executor=_executor(outputs))
    assert res.status == "completed"
    assert [t for _, t in _tools(res)] == ["claim-lookup", "risk-signals"]
    assert "tc-104-3" not in set(res.events.table.column("ref_id").to_pylist())


def test_live_tool_call_without_a_name_is_an_error(log, plain) -> None:
    outputs = _recorded_outputs(log)
    outputs["mc-104-1"] = {"text": "?", "toolCalls": [{"args": {}}]}
    with pytest.raises(rk.ReplayError, match="no tool name"):
        replay(plain, model_policy="pinned-live", model_executor=_executor(outputs))


def test_tool_args_patch_follows_the_call_into_the_live_output(log, branch) -> None:
    """The branch patches tc-104-2's claimedAmount to 900; a live model that asks for the
    recorded call (1800) under the same id gets the patch applied, and the patched call is
    executed."""
    executed = []

    def tool(name: str, args: dict, *, policy: str, readonly: bool) -> dict:
        executed.append((name, args["claimedAmount"]))
        return {"output": {"score": 0.1}, "isError": False}

    res = replay(branch, model_policy="compatible-live", tool_policy="live-explicit",
                 model_executor=_executor(_recorded_outputs(log)), tool_executor=tool)
    assert executed == [("risk-signals", 900)]
    call = next(p for p in _payloads(res) if p.get("refId") == "tc-104-2"
                and p.get("type") == "tool.call")
    assert call["args"]["claimedAmount"] == 900
    assert call["replayPatch"][0]["status"] == "applied"
