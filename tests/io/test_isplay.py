"""isplay run exports, branch files (interventions) and fixture files."""

from __future__ import annotations

import copy
import hashlib
import importlib
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from _imports import imports_of, replaykit_files
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replaykit._base.json import args_hash, canonical_json
from replaykit.branch.fixtures import read_isplay_fixtures
from replaykit.branch.types import IsplayBranch, read_isplay_branch
from replaykit.datasets._isplay import generate_isplay
from replaykit.errors import LoadError
from replaykit.io.isplay import (
    CHECKPOINTS_SCHEMA,
    is_side_file,
    read_isplay,
    sniff,
)
from replaykit.schema import validate

DATA = Path(__file__).resolve().parents[2] / "data" / "isplay"
C104 = DATA / "claims-triage-C-104.json"
C231 = DATA / "claims-triage-C-231.json"
BRANCH = DATA / "branch-drop-fraud-clause.json"
FIXTURES = DATA / "fixtures.json"


def _doc(run_id: str = "r1", events: list[Any] | None = None, **extra: Any) -> dict[str, Any]:
    if events is None:
        events = [
            {"eventId": "e0", "type": "run.started", "ts": "2025-01-01T00:00:00Z"},
            {"eventId": "e1", "type": "checkpoint", "checkpointId": "cp-1"},
            {"eventId": "e2", "type": "tool.call", "refId": "tc1", "toolName": "lookup",
             "args": {"id": 1}},
            {"eventId": "e3", "type": "tool.result", "refId": "tc1", "toolName": "lookup",
             "output": "ok"},
        ]
    doc: dict[str, Any] = {
        "format": "isplay.run/v1",
        "run": {"runId": run_id, "projectId": "p1", "createdAt": "2025-01-01T00:00:00Z"},
        "checkpoints": [{"checkpointId": "cp-1", "eventId": "e1"}],
        "events": events,
    }
    doc.update(extra)
    return doc


def _write(tmp: Path, doc: Any, name: str = "run.json", *, indent: int | None = 2) -> Path:
    p = tmp / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=indent))
    return p


def _input_rows(log: Any) -> int:
    return len(log) + log.extras["checkpoints"].num_rows + log.quarantine.num_rows


# ------------------------------------------------------------------------ samples


@pytest.fixture(scope="module")
def sample():
    return read_isplay(DATA, owner="acme")


def test_samples_load_both_runs_and_skip_side_files(sample):
    validate(sample.table)
    assert sample.run_ids == ["run-claims-C-104", "run-claims-C-231"]
    assert len(sample) == 19 + 18
    assert sample.quarantine.num_rows == 0
    assert sample.tenants == ["acme"]


def test_samples_mapping_of_tool_and_model_events(sample):
    df = sample.events_df().set_index("event_id")
    call = df.loc["ev-104-009"]
    assert (call["type"], call["kind"], call["ref_id"], call["tool_name"]) == (
        "tool.call", "tool_call", "tc-104-2", "risk-signals")
    args = {"claimId": "C-104", "claimedAmount": 1800, "merchant": "City Travel Desk"}
    assert call["args_hash"] == args_hash(args)
    assert call["text"] == canonical_json(args)
    assert json.loads(call["payload"])["argsArtifactId"] == "art-args-tc-104-2"
    res = df.loc["ev-104-010"]
    assert (res["kind"], res["ref_id"], res["tool_name"], bool(res["is_error"])) == (
        "tool_result", "tc-104-2", "risk-signals", False)
    assert json.loads(res["text"]) == {"score": 0.81, "signals": ["duplicate_receipt",
                                                                  "amount_doubled"]}
    # content parts are joined
    assert df.loc["ev-104-015", "text"] == "SIU case SIU-2025-0193 opened."
    req = df.loc["ev-104-003"]
    assert (req["kind"], req["ref_id"]) == ("model_request", "mc-104-1")
    assert req["text"].endswith("Never promise a payout amount to the claimant.")
    resp = df.loc["ev-104-004"]
    assert (resp["kind"], resp["ref_id"], resp["finish"]) == ("model_response", "mc-104-1",
                                                              "tool-calls")
    assert (resp["input_tokens"], resp["output_tokens"]) == (612, 41)
    assert resp["text"] == "Looking up the claim first."
    assert df.loc["ev-104-017", "finish"] == "stop"
    assert df.loc["ev-104-002", "kind"] == "checkpoint"
    assert df.loc["ev-104-002", "ref_id"] == "cp-intake"
    assert df.loc["ev-104-001", "kind"] == "user_message"
    assert df.loc["ev-104-000", "kind"] == "session"
    # the tool error of run C-231 and the cache key of its third call
    assert bool(df.loc["ev-231-006", "is_error"]) is True
    assert int(df["is_error"].sum()) == 1
    assert df.loc["ev-231-012", "cache_key"] == "ck-7f3a"
    # a tool call with args but no argsHash in the file still gets the hash
    assert df.loc["ev-231-013", "args_hash"] == args_hash({"claimId": "C-231"})


def test_samples_seq_ts_source_and_lines(sample):
    df = sample.events_df()
    run = df[df.run_id == "run-claims-C-104"]
    assert run["seq"].tolist() == list(range(19))
    assert run["ts"].iloc[0] == pd.Timestamp("2025-03-04T10:14:00.000Z")
    assert set(run["source"].astype(str)) == {f"isplay:{C104}"}
    lines = C104.read_text().splitlines()
    start = lines.index('  "events": [')
    for eid in ("ev-104-000", "ev-104-009", "ev-104-018"):
        # the event object opens on the line before its eventId (indent=2 sample)
        want = next(i for i, ln in enumerate(lines) if i > start and f'"eventId": "{eid}"' in ln)
        got = int(run.loc[run.event_id == eid, "source_line"].iloc[0])
        assert got == want
        assert lines[got - 1].strip() == "{"


def test_samples_unknown_fields_stay_in_payload(sample):
    df = sample.events_df().set_index("event_id")
    assert json.loads(df.loc["ev-231-006", "payload"])["latencyMs"] == 5003
    assert json.loads(df.loc["ev-104-006", "payload"])["artifactRefs"] == [
        {"artifactId": "art-claim-C-104", "kind": "claim-record"}]


def test_samples_runs_table_and_checkpoints(sample):
    runs = sample.runs.to_pandas().set_index("run_id")
    assert runs.loc["run-claims-C-104", "format"] == "isplay"
    assert runs.loc["run-claims-C-104", "created_at"] == pd.Timestamp("2025-03-04T10:14:00Z")
    attrs = json.loads(runs.loc["run-claims-C-104", "attrs"])
    assert attrs["projectId"] == "proj-claims"
    assert attrs["metadata"]["claimId"] == "C-104"
    assert attrs["agent"] == {"name": "claims-triage", "version": "2.3.0"}
    cps = sample.extras["checkpoints"]
    assert cps.schema == CHECKPOINTS_SCHEMA
    assert cps.to_pylist() == [
        {"tenant_id": "acme", "run_id": "run-claims-C-104", "checkpoint_id": "cp-start",
         "event_id": "ev-104-000", "seq": 0, "label": "run started"},
        {"tenant_id": "acme", "run_id": "run-claims-C-104", "checkpoint_id": "cp-intake",
         "event_id": "ev-104-002", "seq": 2, "label": "after intake message"},
        {"tenant_id": "acme", "run_id": "run-claims-C-104",
         "checkpoint_id": "cp-before-decision", "event_id": "ev-104-011", "seq": 11,
         "label": "risk signals in, before the decision"},
        {"tenant_id": "acme", "run_id": "run-claims-C-231", "checkpoint_id": "cp-231-intake",
         "event_id": "ev-231-002", "seq": 2, "label": None},
    ]
    summary = sample.runs_df().set_index("run_id")
    assert summary.loc["run-claims-C-104", "tool_calls"] == 3
    assert summary.loc["run-claims-C-104", "model_calls"] == 4
    assert summary.loc["run-claims-C-231", "errors"] == 1


def test_sample_files_are_small_and_untouched():
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in DATA.iterdir()}
    read_isplay(DATA, owner="acme")
    read_isplay_branch(BRANCH)
    read_isplay_fixtures(FIXTURES)
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in DATA.iterdir()} == before
    assert sum(p.stat().st_size for p in DATA.iterdir()) < 150_000


def test_sniff_and_side_files(tmp_path):
    assert sniff(C104) is None
    assert "side file" in sniff(BRANCH)
    assert "side file" in sniff(FIXTURES)
    assert is_side_file(BRANCH) and is_side_file(FIXTURES)
    assert not is_side_file(C104)
    other = _write(tmp_path, {"type": "session", "id": "x"}, "x.jsonl", indent=None)
    assert "format" in sniff(other)
    assert "extension" in sniff(tmp_path / "x.parquet")


def test_read_events_auto_picks_isplay_and_skips_side_files():
    from replaykit.io import read_events

    log = read_events(DATA, owner="acme")
    assert log.run_ids == ["run-claims-C-104", "run-claims-C-231"]
    assert len(log) == 37


@pytest.mark.parametrize("bad", [None, "", 7])
def test_tenant_is_required(bad):
    with pytest.raises(LoadError, match="reason=bad_tenant"):
        read_isplay(C104, owner=bad)


# ------------------------------------------------------------------------ variants


def test_jsonl_variant_one_run_per_line(tmp_path):
    d1, d2 = _doc("r1"), _doc("r2")
    p = tmp_path / "runs.jsonl"
    p.write_text(json.dumps(d1) + "\n\n" + json.dumps(d2) + "\n")
    log = read_isplay(p, owner="t")
    df = log.events_df()
    assert log.run_ids == ["r1", "r2"]
    assert df.groupby("run_id", observed=True)["source_line"].unique().map(list).to_dict() == {
        "r1": [1], "r2": [3]}
    assert log.extras["checkpoints"].column("run_id").to_pylist() == ["r1", "r2"]
    single = read_isplay(_write(tmp_path, d1), owner="t")
    assert single.table.column("payload").to_pylist() == log.filter(
        run_ids="r1").table.column("payload").to_pylist()


def test_explicit_seq_and_parent_run(tmp_path):
    doc = _doc(events=[
        {"eventId": "a", "type": "run.started", "seq": 10},
        {"eventId": "b", "type": "message.user", "seq": 4, "text": "hi"},
    ])
    doc["checkpoints"] = []
    doc["run"]["parentRunId"] = "base-run"
    log = read_isplay(_write(tmp_path, doc), owner="t")
    df = log.events_df()
    assert df["seq"].tolist() == [4, 10]
    assert df["event_id"].tolist() == ["b", "a"]
    assert df["parent_run_id"].astype(str).tolist() == ["base-run", "base-run"]
    assert df["text"].tolist()[0] == "hi"


def test_unknown_event_type_is_kept_as_other(tmp_path):
    doc = _doc(events=[{"eventId": "a", "type": "widget.shown", "ts": None, "x": {"y": 1}}])
    doc["checkpoints"] = []
    log = read_isplay(_write(tmp_path, doc), owner="t")
    row = log.events_df().iloc[0]
    assert (row["type"], row["kind"]) == ("widget.shown", "other")
    assert json.loads(row["payload"]) == {"eventId": "a", "type": "widget.shown", "ts": None,
                                          "x": {"y": 1}}


def test_unknown_document_fields_go_to_attrs(tmp_path):
    log = read_isplay(_write(tmp_path, _doc(exportedBy="isplay 1.9")), owner="t")
    attrs = json.loads(log.runs.column("attrs")[0].as_py())
    assert attrs == {"projectId": "p1", "documentFields": {"exportedBy": "isplay 1.9"}}


# ------------------------------------------------------------------------ bad input


def _events_with(extra: dict[str, Any], at: int = 2) -> list[dict[str, Any]]:
    evs = _doc()["events"]
    evs[at] = {**evs[at], **extra}
    return evs


BAD_EVENT_CASES = [
    # (events, reason, field, line of the bad event in an indent=2 dump)
    (_events_with({"eventId": "e0"}), "duplicate_event_id", "events[2].eventId"),
    (_events_with({"argsHash": "0" * 32}), "args_hash_mismatch", "events[2].argsHash"),
    (_events_with({"ts": "yesterday"}), "bad_ts", "events[2].ts"),
    (_events_with({"seq": "7a"}), "bad_type", "events[2].seq"),
    (_events_with({"seq": -1}), "bad_seq", "events[2].seq"),
    (_events_with({"seq": 0}), "duplicate_seq", "events[2].seq"),
    (_events_with({"type": None}), "missing_field", "events[2].type"),
    (_events_with({"eventId": None}), "missing_field", "events[2].eventId"),
    (_events_with({"refId": None}), "missing_field", "events[2].refId"),
    (_events_with({"toolName": None}), "missing_field", "events[2].toolName"),
    (_events_with({"usage": {"inputTokens": 1.5}}), "bad_type", "events[2].usage.inputTokens"),
    (_events_with({"isError": "yes"}), "bad_type", "events[2].isError"),
    (_events_with({"type": "model.result", "refId": None}), "missing_field",
     "events[2].modelCallId"),
    (_events_with({"prompt": ["not", "text"]}), "bad_type", "events[2].prompt"),
]


@pytest.mark.parametrize(("events", "reason", "field"), BAD_EVENT_CASES,
                         ids=[c[1] + ":" + c[2] for c in BAD_EVENT_CASES])
def test_bad_event_raises_then_quarantines(tmp_path, events, reason, field):
    doc = _doc(events=events)
    p = _write(tmp_path, doc)
    with pytest.raises(LoadError) as err:
        read_isplay(p, owner="t")
    e = err.value
    assert (e.reason, e.field, e.source) == (reason, field, str(p))
    text_lines = p.read_text().splitlines()
    assert text_lines[e.line - 1].strip() == "{"  # the line where events[2] opens
    assert '"e' in text_lines[e.line] or '"' in text_lines[e.line]
    assert f"{p}:{e.line}" in str(e) and "reason=" + reason in str(e)
    log = read_isplay(p, owner="t", errors="quarantine")
    q = log.quarantine.to_pylist()
    assert [(r["reason"], r["field"]) for r in q] == [(reason, field)]
    assert len(log) == 3
    assert _input_rows(log) == 4 + 1


def test_non_object_event(tmp_path):
    p = _write(tmp_path, _doc(events=[*_doc()["events"], "oops"]))
    with pytest.raises(LoadError, match=r"events\[4\].*not_object"):
        read_isplay(p, owner="t")
    log = read_isplay(p, owner="t", errors="quarantine")
    assert log.quarantine.column("raw").to_pylist() == ['"oops"']
    assert len(log) == 4


def test_checkpoint_pointing_at_unknown_event(tmp_path):
    doc = _doc()
    doc["checkpoints"].append({"checkpointId": "cp-2", "eventId": "nope", "label": "x"})
    doc["checkpoints"].append({"checkpointId": "cp-1", "eventId": "e0"})
    p = _write(tmp_path, doc)
    with pytest.raises(LoadError) as err:
        read_isplay(p, owner="t")
    assert (err.value.reason, err.value.field) == ("duplicate_checkpoint_id",
                                                   "checkpoints[2].checkpointId")
    log = read_isplay(p, owner="t", errors="quarantine")
    assert sorted(log.quarantine.column("reason").to_pylist()) == [
        "duplicate_checkpoint_id", "unknown_checkpoint_event"]
    assert log.extras["checkpoints"].column("checkpoint_id").to_pylist() == ["cp-1"]
    assert _input_rows(log) == 4 + 3
    del doc["checkpoints"][2]
    with pytest.raises(LoadError, match="unknown_checkpoint_event") as err:
        read_isplay(_write(tmp_path, doc), owner="t")
    assert err.value.field == "checkpoints[1].eventId"


def test_checkpoint_on_quarantined_event_is_quarantined_too(tmp_path):
    doc = _doc(events=_events_with({"ts": "bad"}, at=1))
    log = read_isplay(_write(tmp_path, doc), owner="t", errors="quarantine")
    assert log.quarantine.column("reason").to_pylist() == ["bad_ts", "unknown_checkpoint_event"]
    assert _input_rows(log) == 5


DOC_CASES = [
    ('{"format": "isplay.run/v1", "run": {"runId": "r"}, "events": [{"eventId": ',
     "bad_json", 1),
    ('{"format": "isplay.run/v1",\n "run": {"runId": "r"},\n "events": [1,,]}', "bad_json", 3),
    ("[1, 2]", "not_object", 1),
    ("   \n", "bad_json", 1),
    (json.dumps({"format": "isplay.run/v2", "run": {"runId": "r"}}), "bad_format", 1),
    (json.dumps({"format": "isplay.run/v1", "run": {"projectId": "p"}}), "missing_run_id", 1),
    (json.dumps({"format": "isplay.run/v1", "run": {"runId": ""}}), "missing_run_id", 1),
    (json.dumps({"format": "isplay.run/v1", "run": {"runId": "r"}, "events": {}}), "bad_type", 1),
    (json.dumps({"format": "isplay.run/v1", "run": {"runId": "r", "createdAt": 5}}),
     "bad_type", 1),
]


@pytest.mark.parametrize(("text", "reason", "line"), DOC_CASES,
                         ids=[f"{c[1]}-{i}" for i, c in enumerate(DOC_CASES)])
def test_bad_document(tmp_path, text, reason, line):
    p = _write(tmp_path, text)
    with pytest.raises(LoadError) as err:
        read_isplay(p, owner="t")
    assert (err.value.reason, err.value.line) == (reason, line)
    log = read_isplay(p, owner="t", errors="quarantine")
    assert log.quarantine.column("reason").to_pylist() == [reason]
    assert len(log) == 0 and log.runs.num_rows == 0


def test_invalid_utf8(tmp_path):
    p = tmp_path / "bad.json"
    p.write_bytes(b'{"format": "isplay.run/v1",\n"run": {"runId": "r\xff"}}')
    with pytest.raises(LoadError) as err:
        read_isplay(p, owner="t")
    assert (err.value.reason, err.value.line) == ("bad_utf8", 2)


def test_jsonl_bad_lines_are_quarantined_one_by_one(tmp_path):
    p = tmp_path / "runs.jsonl"
    p.write_text("\n".join([json.dumps(_doc("r1")), "{broken", "[]", json.dumps(_doc("r1")),
                            json.dumps(_doc("r2"))]) + "\n")
    with pytest.raises(LoadError) as err:
        read_isplay(p, owner="t")
    assert (err.value.reason, err.value.line) == ("bad_json", 2)
    log = read_isplay(p, owner="t", errors="quarantine")
    assert [(r["line"], r["reason"]) for r in log.quarantine.to_pylist()] == [
        (2, "bad_json"), (3, "not_object"), (4, "duplicate_run_id")]
    assert log.run_ids == ["r1", "r2"] and len(log) == 8


def test_side_file_passed_as_run_export():
    with pytest.raises(LoadError) as err:
        read_isplay(BRANCH, owner="t")
    assert err.value.reason == "side_file"
    assert "read_isplay_branch" in str(err.value)


def test_duplicate_run_across_files(tmp_path):
    a = _write(tmp_path, _doc("same"), "a.json")
    _write(tmp_path, _doc("same"), "b.json")
    with pytest.raises(LoadError, match="duplicate_run_id") as err:
        read_isplay(tmp_path, owner="t")
    assert str(a) in str(err.value)


def test_argshash_without_args_is_taken_as_given(tmp_path):
    h = "ab" * 16
    doc = _doc(events=[{"eventId": "x", "type": "tool.call", "refId": "t1", "toolName": "big",
                        "argsArtifactId": "art-1", "argsHash": h}])
    doc["checkpoints"] = []
    log = read_isplay(_write(tmp_path, doc), owner="t")
    row = log.events_df().iloc[0]
    assert row["args_hash"] == h
    assert pd.isna(row["text"])


_CORRUPTIONS = {
    "drop_event_id": lambda ev: ev.pop("eventId", None),
    "bad_ts": lambda ev: ev.__setitem__("ts", "not-a-time"),
    "bad_type": lambda ev: ev.__setitem__("toolName", 3),
    "dup_id": lambda ev: ev.__setitem__("eventId", "e0"),
    "bad_hash": lambda ev: ev.__setitem__("argsHash", "f" * 32) if "args" in ev else None,
    "none": lambda ev: None,
}


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n_events=st.integers(1, 12),
    corrupt=st.lists(st.tuples(st.integers(0, 11), st.sampled_from(sorted(_CORRUPTIONS))),
                     max_size=6),
    n_cps=st.integers(0, 3),
    ghost_cp=st.booleans(),
)
def test_property_loaded_plus_quarantined_is_input_rows(tmp_path, n_events, corrupt, n_cps,
                                                         ghost_cp):
    events: list[Any] = []
    for i in range(n_events):
        ev: dict[str, Any] = {"eventId": f"e{i}", "type": "tool.call" if i % 2 else "note",
                              "ts": f"2025-01-01T00:00:{i:02d}Z"}
        if i % 2:
            ev.update(refId=f"t{i}", toolName="x", args={"i": i})
        events.append(ev)
    for at, how in corrupt:
        if at < n_events:
            _CORRUPTIONS[how](events[at])
    cps = [{"checkpointId": f"c{k}", "eventId": f"e{k % n_events}"} for k in range(n_cps)]
    if ghost_cp:
        cps.append({"checkpointId": "ghost", "eventId": "missing"})
    doc = _doc(events=events)
    doc["checkpoints"] = cps
    p = _write(tmp_path, doc, indent=None)
    log = read_isplay(p, owner="t", errors="quarantine")
    assert _input_rows(log) == n_events + len(cps)
    validate(log.table)
    ids = log.table.column("event_id").to_pylist()
    assert len(ids) == len(set(ids))
    clean = not any(at < n_events and how != "none" for at, how in corrupt) and not ghost_cp
    if clean:
        assert log.quarantine.num_rows == 0 and len(log) == n_events


# ------------------------------------------------------------------------ branches


def test_branch_sample_values_and_round_trip():
    b = read_isplay_branch(BRANCH)
    assert (b.branch_id, b.base_run_id, b.checkpoint_id, b.name) == (
        "br-drop-fraud-clause", "run-claims-C-104", "cp-intake", "remove escalation clause")
    assert (b.replay_policy.model, b.replay_policy.tool) == ("recorded-only", "pause-for-fixture")
    assert b.project_id == "proj-claims" and b.parent_branch_id is None
    assert b.metadata == {"author": "analyst@northwind.example", "ticket": "RCA-311"}
    assert [iv.kind for iv in b.interventions] == ["prompt_patch", "mask", "json_patch",
                                                   "tool_args_patch"]
    ops = [iv.patch.get("operations", [{}])[0].get("op") for iv in b.interventions]
    assert ops == ["replace_text", "mask_span", "replace", None]
    assert b.interventions[3].patch["args"]["claimedAmount"] == 900
    assert b.interventions[2].selector == {"target_type": "model.call", "json_pointer": "/settings"}
    assert b.to_dict() == json.loads(BRANCH.read_text())
    assert IsplayBranch.from_dict(b.to_dict()) == b
    with pytest.raises(AttributeError):
        b.name = "x"  # type: ignore[misc]


def test_branch_points_at_a_loaded_checkpoint_and_events(sample):
    b = read_isplay_branch(BRANCH)
    cps = sample.extras["checkpoints"].to_pandas()
    hit = cps[(cps.run_id == b.base_run_id) & (cps.checkpoint_id == b.checkpoint_id)]
    assert hit["seq"].tolist() == [2]
    df = sample.events_df()
    ev = df[df.event_id == b.interventions[0].selector["target_event"]].iloc[0]
    search = b.interventions[0].patch["operations"][0]["value"]["search"]
    assert search in json.loads(ev["payload"])["prompt"]
    tc = df[df.ref_id == b.interventions[3].selector["target_ref"]]
    assert tc["kind"].astype(str).tolist() == ["tool_call", "tool_result"]


def _branch(**iv: Any) -> dict[str, Any]:
    base = {"interventionId": "iv", "kind": "json_patch", "selector": {"target_ref": "x"},
            "patch": {"operations": [{"op": "remove", "path": "/a"}]}, "description": "d"}
    base.update(iv)
    return {"format": "isplay.branch/v1", "branchId": "b", "baseRunId": "r",
            "checkpointId": "c", "name": "n", "interventions": [base]}


BRANCH_ERRORS = [
    (dict(kind="rewrite"), "unknown_kind", "interventions[0].kind"),
    (dict(selector={"targetRef": "x"}), "unknown_selector_key",
     "interventions[0].selector.targetRef"),
    (dict(selector={}), "empty_selector", "interventions[0].selector"),
    (dict(selector={"target_event": -1}), "bad_type", "interventions[0].selector.target_event"),
    (dict(selector={"json_pointer": "settings"}), "bad_patch_op",
     "interventions[0].selector.json_pointer"),
    (dict(patch={"operations": [{"op": "replace", "path": "/a"}]}), "bad_patch_op",
     "interventions[0].patch.operations[0].value"),
    (dict(patch={"operations": [{"op": "frobnicate", "path": "/a"}]}), "bad_patch_op",
     "interventions[0].patch.operations[0].op"),
    (dict(patch={"operations": [{"op": "remove", "path": "a/b"}]}), "bad_patch_op",
     "interventions[0].patch.operations[0].path"),
    (dict(patch={"operations": [{"op": "move", "path": "/a", "from": "x"}]}), "bad_patch_op",
     "interventions[0].patch.operations[0].from"),
    (dict(patch={"operations": [{"op": "remove", "path": "/a~2"}]}), "bad_patch_op",
     "interventions[0].patch.operations[0].path"),
    (dict(patch={"operations": []}), "bad_type", "interventions[0].patch.operations"),
    (dict(patch={}), "missing_field", "interventions[0].patch.operations"),
    (dict(kind="prompt_patch", patch={"operations": [
        {"op": "replace_text", "path": "/prompt", "value": {"search": "", "replacement": ""}}]}),
     "bad_patch_op", "interventions[0].patch.operations[0].value"),
    (dict(kind="mask", patch={"operations": [
        {"op": "mask_span", "path": "/m", "value": {"start": 9, "end": 3}}]}),
     "bad_patch_op", "interventions[0].patch.operations[0].value"),
    (dict(kind="mask", patch={"operations": [{"op": "add", "path": "/m", "value": 1}]}),
     "bad_patch_op", "interventions[0].patch.operations[0].op"),
    (dict(kind="tool_args_patch", patch={"toolName": "t"}), "bad_patch",
     "interventions[0].patch"),
    (dict(kind="tool_args_patch", patch={"args": [1]}), "bad_type",
     "interventions[0].patch.args"),
    (dict(interventionId=None), "missing_field", "interventions[0].interventionId"),
]


@pytest.mark.parametrize(("change", "reason", "field"), BRANCH_ERRORS,
                         ids=[f"{c[1]}-{i}" for i, c in enumerate(BRANCH_ERRORS)])
def test_branch_validation_errors(tmp_path, change, reason, field):
    p = _write(tmp_path, _branch(**change), "branch.json")
    with pytest.raises(LoadError) as err:
        read_isplay_branch(p)
    assert (err.value.reason, err.value.field, err.value.source) == (reason, field, str(p))


def test_branch_error_hints_and_document_level_checks(tmp_path):
    with pytest.raises(LoadError, match="did you mean 'target_ref'"):
        IsplayBranch.from_dict(_branch(selector={"targetRef": "x"}))
    doc = _branch()
    doc["interventions"].append(copy.deepcopy(doc["interventions"][0]))
    with pytest.raises(LoadError, match="duplicate_intervention_id"):
        IsplayBranch.from_dict(doc)
    doc = _branch()
    doc["replayPolicy"] = {"model": "recorded-only", "tool": "live"}
    with pytest.raises(LoadError) as err:
        IsplayBranch.from_dict(doc)
    assert (err.value.reason, err.value.field) == ("unknown_policy", "replayPolicy.tool")
    doc = _branch()
    del doc["baseRunId"]
    with pytest.raises(LoadError, match="baseRunId"):
        IsplayBranch.from_dict(doc)
    with pytest.raises(LoadError, match="bad_format"):
        read_isplay_branch(C104)
    bad = tmp_path / "b.json"
    bad.write_text('{"format": "isplay.branch/v1",\n "name": }')
    with pytest.raises(LoadError) as err:
        read_isplay_branch(bad)
    assert (err.value.reason, err.value.line) == ("bad_json", 2)


def test_branch_target_shortcut_and_extra_fields_kept():
    doc = _branch(selector={"target": "tc-1"}, reviewer="kim")
    doc["parentBranchId"] = "b0"
    doc["labels"] = ["x"]
    b = IsplayBranch.from_dict(doc)
    assert b.interventions[0].selector == {"target_ref": "tc-1"}
    assert b.interventions[0].extra == {"reviewer": "kim"}
    assert b.parent_branch_id == "b0" and b.extra == {"labels": ["x"]}
    out = b.to_dict()
    assert out["labels"] == ["x"] and out["interventions"][0]["reviewer"] == "kim"
    assert IsplayBranch.from_dict(out) == b
    with pytest.raises(LoadError, match="target is its shortcut"):
        IsplayBranch.from_dict(_branch(selector={"target": "a", "target_ref": "b"}))


def test_branch_seq_target_for_formats_without_ids():
    b = IsplayBranch.from_dict(_branch(selector={"target_event": 7}))
    assert b.interventions[0].selector == {"target_event": 7}


# ------------------------------------------------------------------------ fixtures


def test_fixture_sample_values():
    fx = read_isplay_fixtures(FIXTURES)
    assert fx["fixture_id"].tolist() == ["fx-risk-900", "fx-lookup-C-104", "fx-siu-sim",
                                         "fx-approve-ai"]
    assert fx["provenance"].tolist() == ["analyst", "live", "simulator", "ai"]
    assert list(fx["provenance"].cat.categories) == ["analyst", "ai", "simulator", "live"]
    risk = fx.iloc[0]
    assert risk["args_hash"] == args_hash({"claimId": "C-104", "claimedAmount": 900,
                                           "merchant": "City Travel Desk"})
    assert risk["scope_branch_id"] == "br-drop-fraud-clause" and pd.isna(risk["scope_replay_id"])
    assert json.loads(risk["output"]) == {"score": 0.34, "signals": ["duplicate_receipt"]}
    assert json.loads(fx.iloc[1]["args_subset"]) == {"claimId": "C-104"}
    assert fx["is_error"].tolist() == [False, False, False, True]
    assert str(fx["is_error"].dtype) == "boolean"
    assert json.loads(fx.iloc[3]["extra"]) == {"reviewedBy": "analyst@northwind.example"}
    assert fx.iloc[3]["scope_replay_id"] == "rp-0007"
    assert json.loads(fx.iloc[2]["output"]) == "SIU case SIM-0001 opened."


def test_fixture_matches_the_branch_tool_args_patch():
    b = read_isplay_branch(BRANCH)
    fx = read_isplay_fixtures(FIXTURES)
    patched = b.interventions[3].patch
    hit = fx[(fx.tool_name == patched["toolName"]) & (fx.args_hash == args_hash(patched["args"]))]
    assert hit["fixture_id"].tolist() == ["fx-risk-900"]


def _fixtures(**change: Any) -> dict[str, Any]:
    fx = {"fixtureId": "f1", "projectId": "p", "toolName": "t",
          "matcher": {"argsSubset": {"a": 1}}, "output": 1, "provenance": "analyst"}
    fx.update(change)
    return {"format": "isplay.fixtures/v1", "fixtures": [fx]}


FIXTURE_ERRORS = [
    (dict(provenance="human"), "unknown_provenance", "fixtures[0].provenance"),
    (dict(matcher={"argsHash": "a" * 32, "argsSubset": {}}), "bad_matcher", "fixtures[0].matcher"),
    (dict(matcher={}), "bad_matcher", "fixtures[0].matcher"),
    (dict(matcher={"argsHash": "XYZ"}), "bad_args_hash", "fixtures[0].matcher.argsHash"),
    (dict(matcher={"argsSubset": [1]}), "bad_type", "fixtures[0].matcher.argsSubset"),
    (dict(scope={"replayId": "a", "branchId": "b"}), "bad_value", "fixtures[0].scope"),
    (dict(scope={"runId": "a"}), "unknown_field", "fixtures[0].scope.runId"),
    (dict(toolName=None), "missing_field", "fixtures[0].toolName"),
    (dict(isError="no"), "bad_type", "fixtures[0].isError"),
]


@pytest.mark.parametrize(("change", "reason", "field"), FIXTURE_ERRORS,
                         ids=[f"{c[1]}-{i}" for i, c in enumerate(FIXTURE_ERRORS)])
def test_fixture_validation_errors(tmp_path, change, reason, field):
    p = _write(tmp_path, _fixtures(**change), "fx.json")
    with pytest.raises(LoadError) as err:
        read_isplay_fixtures(p)
    assert (err.value.reason, err.value.field) == (reason, field)


def test_fixture_missing_output_and_duplicates(tmp_path):
    doc = _fixtures()
    del doc["fixtures"][0]["output"]
    with pytest.raises(LoadError, match="output"):
        read_isplay_fixtures(_write(tmp_path, doc, "a.json"))
    a = _write(tmp_path, _fixtures(), "b.json")
    c = _write(tmp_path, _fixtures(), "c.json")
    with pytest.raises(LoadError, match="duplicate_fixture_id") as err:
        read_isplay_fixtures([a, c])
    assert str(a) in str(err.value) and err.value.source == str(c)
    empty = read_isplay_fixtures(_write(tmp_path, {"format": "isplay.fixtures/v1",
                                                   "fixtures": []}, "e.json"))
    assert len(empty) == 0 and "fixture_id" in empty.columns


# ------------------------------------------------------------------------ generator


def test_generator_is_deterministic_and_loads_cleanly(tmp_path):
    a = generate_isplay(tmp_path / "a.jsonl", runs=5, events_per_run=23, seed=3)
    b = generate_isplay(tmp_path / "b.jsonl", runs=5, events_per_run=23, seed=3)
    c = generate_isplay(tmp_path / "c.jsonl", runs=5, events_per_run=23, seed=4)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()
    log = read_isplay(a, owner="t")
    assert log.quarantine.num_rows == 0
    counts = log.runs_df().set_index("run_id")["events"]
    assert counts.tolist() == [23] * 5
    df = log.events_df()
    calls = df[df.kind == "tool_call"]
    results = df[df.kind == "tool_result"]
    assert sorted(calls.ref_id) == sorted(results.ref_id)
    # the file's argsHash values were verified on load; every call has one
    assert calls["args_hash"].notna().all()
    cps = log.extras["checkpoints"].to_pandas()
    assert (cps.groupby("run_id").size() >= 1).all()
    assert set(df.loc[df.event_id.isin(cps.event_id), "kind"].astype(str)) == {"checkpoint"}
    # 23 - 6 = 17 = 4 cycles (16) + 1 note, with a checkpoint taking one slot in cycle 3
    assert df[df.run_id == df.run_id.iloc[0]]["type"].iloc[-3:].tolist() == [
        "model.call", "model.result", "run.completed"]


def test_generator_folder_variant_has_event_lines(tmp_path):
    out = generate_isplay(tmp_path / "runs", runs=3, events_per_run=10, seed=0)
    files = sorted(out.glob("*.json"))
    assert [f.name for f in files] == ["run-000000.json", "run-000001.json", "run-000002.json"]
    log = read_isplay(out, owner="t")
    first = log.filter(run_ids=log.run_ids[0]).table.column("source_line").to_pylist()
    assert first == list(range(2, 12))
    assert log.quarantine.num_rows == 0


def test_generator_rejects_too_few_events(tmp_path):
    with pytest.raises(ValueError, match="events_per_run must be >= 6"):
        generate_isplay(tmp_path / "x.jsonl", runs=1, events_per_run=5)
    assert generate_isplay(tmp_path / "y.jsonl", runs=0, events_per_run=6).read_text() == ""


def test_empty_load_has_typed_extras(tmp_path):
    p = _write(tmp_path, _doc(events=[]) | {"checkpoints": []})
    log = read_isplay(p, owner="t")
    assert len(log) == 0 and log.runs.num_rows == 1
    assert log.extras["checkpoints"].schema == CHECKPOINTS_SCHEMA
    assert isinstance(log.extras["checkpoints"], pa.Table)


def test_loaders_never_import_the_branch_layer():
    # the branch vocabulary (policies, interventions, selectors, fixture types) lives in
    # replaykit.branch, above the loaders: no module of replaykit.io reaches up into it
    files = replaykit_files("io")
    assert any(f.parts[-2:] == ("isplay", "_documents.py") for f in files)  # a package now
    for f in files:
        up = sorted(f"{m}:{n}" for m, n in imports_of(f)
                    if (m == "replaykit" and n == "branch") or m == "replaykit.branch"
                    or m.startswith("replaykit.branch."))
        assert up == [], f"{f} imports {up}"


def test_branch_takes_only_format_tags_and_parsed_documents_from_the_loader():
    # the branch layer defines its own concepts; from the isplay loader it needs only the file
    # format tags and the parsed side documents
    allowed = {"BRANCH_FORMAT", "FIXTURES_FORMAT", "read_side_document"}
    seen = set()
    for f in replaykit_files("branch"):
        for m, n in imports_of(f):
            if m.startswith("replaykit.io.isplay"):
                assert n in allowed, f"{f.name} takes {n} from {m}"
                seen.add(n)
    assert seen == allowed


def test_the_branch_names_live_only_in_the_branch_layer():
    import replaykit as rk
    import replaykit.io.isplay as isplay_loader
    from replaykit.branch import types as branch_types
    from replaykit.branch import vocab

    assert rk.IsplayBranch is branch_types.IsplayBranch
    assert rk.read_isplay_branch is branch_types.read_isplay_branch
    assert rk.read_isplay_fixtures.__module__ == "replaykit.branch.fixtures"
    assert "recorded-only" in vocab.MODEL_POLICIES and "live" in vocab.FIXTURE_PROVENANCES
    for name, where in (("IsplayBranch", "replaykit.branch.types"),
                        ("MODEL_POLICIES", "replaykit.branch.vocab"),
                        ("read_isplay_fixtures", "replaykit.branch.fixtures")):
        with pytest.raises(AttributeError, match=f"has no attribute '{name}'"):
            getattr(isplay_loader, name)
        assert hasattr(importlib.import_module(where), name)
    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        isplay_loader.nothing_here  # noqa: B018
