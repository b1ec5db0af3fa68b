"""Interventions that say what they do: a tool_args_patch replaces the whole arguments (with a
warning naming what it drops) or merges (RFC 7396, null removes); nothing outside the
arguments changes; the fixture a paused replay prints loads as printed and resumes it."""

from __future__ import annotations

import contextlib
import io
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit.branch.patches import apply_tool_args_patch, merge_patch
from replaykit.errors import LoadError

DATA = Path(__file__).resolve().parents[1] / "data"
CC = DATA / "claude_code" / "spotter" / "short.jsonl"
LF = DATA / "langfuse" / "framework-traces"


def _bash_call() -> tuple[str, dict[str, Any]]:
    """The first Bash tool_use of the real transcript: (id, input), read with json.loads."""
    for line in CC.read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        for b in (d.get("message") or {}).get("content") or []:
            if isinstance(b, dict) and b.get("type") == "tool_use" and b["name"] == "Bash":
                return b["id"], b["input"]
    raise AssertionError("no Bash call")


def _replayed_input(log: rk.EventLog, ref: str, patch: dict[str, Any]) -> dict[str, Any]:
    run = log.run_ids[0]
    b = rk.Branch(base=log, run_id=run, tenant_id="t", checkpoint=0, name="p").intervene(
        kind="tool_args_patch", target=ref, patch=patch)
    res = rk.replay(b, tool_policy="pause-for-fixture")
    ev = res.events.table.to_pandas()
    payload = json.loads(ev[(ev["kind"] == "tool_call") & (ev["ref_id"] == ref)]
                         ["payload"].iloc[0])
    block = next(x for x in payload["message"]["content"] if x.get("id") == ref)
    return block


def test_replace_warns_naming_dropped_members_and_merge_keeps_them() -> None:
    ref, recorded = _bash_call()
    assert set(recorded) == {"command", "timeout"}
    log = rk.read_events(CC, owner="t")
    with pytest.warns(UserWarning, match=r"replaces the whole arguments: the call had "
                      r"timeout, which the patch's args do not name.*\"mode\": \"merge\""):
        block = _replayed_input(log, ref, {"args": {"command": "ls"}})
    assert block["input"] == {"command": "ls"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a merge drops nothing: no warning
        merged = _replayed_input(log, ref, {"args": {"command": "ls"}, "mode": "merge"})
        removed = _replayed_input(log, ref, {"args": {"timeout": None}, "mode": "merge"})
    assert merged["input"] == {**recorded, "command": "ls"}
    assert removed["input"] == {"command": recorded["command"]}
    assert merged["name"] == "Bash"  # the tool's name is untouched


@pytest.mark.parametrize("name", ["openai-agents-2025-09-30.json", "langgraph-2025-08-22.json",
                                  "pydantic-ai-tools-2025-12-04.json"])
def test_a_patch_on_a_langfuse_trace_touches_only_the_arguments(name: str) -> None:
    log = rk.read_events(LF / name, owner="t")
    ev = log.table.to_pandas()
    call = ev[ev["kind"] == "tool_call"].iloc[0]
    before = json.loads(call["payload"])
    b = rk.Branch(base=log, run_id=log.run_ids[0], tenant_id="t", checkpoint=0,
                  name="p").intervene(kind="tool_args_patch", target=call["ref_id"],
                                      patch={"args": {"q": "x"}, "mode": "merge"})
    res = rk.replay(b, tool_policy="pause-for-fixture")
    out = res.events.table.to_pandas()
    after = json.loads(out[(out["kind"] == "tool_call")
                           & (out["ref_id"] == call["ref_id"])]["payload"].iloc[0])
    assert "toolName" not in after and set(after) - set(before) == {"replayPatch"}
    changed = {k for k in before if before[k] != after[k]}
    args_key = "arguments" if "arguments" in before else "input"
    assert changed == {args_key}
    old = before[args_key]
    old = json.loads(old) if isinstance(old, str) else old
    new = after[args_key]
    new = json.loads(new) if isinstance(new, str) else new
    assert new == {**old, "q": "x"}


JSON = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
                    lambda c: st.dictionaries(st.text("abc", max_size=2), c, max_size=3),
                    max_leaves=8)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text("abcd", max_size=2), JSON, max_size=4),
       st.dictionaries(st.text("abcd", max_size=2), JSON, max_size=4))
def test_merge_changes_only_the_members_named(target: dict, patch: dict) -> None:
    out = merge_patch(target, patch)
    for k, v in target.items():  # members not named are kept as they were
        if k not in patch:
            assert out[k] == v
    for k, v in patch.items():
        if v is None:
            assert k not in out
        elif not isinstance(v, dict):
            assert out[k] == v
    assert merge_patch(out, patch) == out  # idempotent (RFC 7396)
    ev, fails = apply_tool_args_patch({"toolName": "t", "args": target}, {
        "args": patch, "mode": "merge"})
    assert ev["args"] == out and ev["toolName"] == "t" and not fails


def test_merge_on_text_arguments_is_a_recorded_failure() -> None:
    ev, fails = apply_tool_args_patch({"toolName": "t", "args": "free text"},
                                      {"args": {"a": 1}, "mode": "merge"})
    assert ev["args"] == "free text" and fails[0]["op"] == "merge"
    with pytest.raises(rk.LoadError, match="mode.*must be 'replace' or 'merge'"):
        rk.IsplayBranch.from_dict({"format": "isplay.branch/v1", "branchId": "b",
                                   "baseRunId": "r", "checkpointId": "c", "name": "n",
                                   "interventions": [{"interventionId": "i",
                                                      "kind": "tool_args_patch",
                                                      "selector": {"target_ref": "x"},
                                                      "patch": {"args": {}, "mode": "upsert"}}]})


# ------------------------------------------------------------------ fixture spec round trip
def test_the_printed_fixture_spec_loads_and_resumes(tmp_path: Path) -> None:
    """Pause a replay for a missing fixture (a Langfuse trace, a branch with no project), take
    the spec the command line prints, write it to a fixtures file as printed, load it with
    the fixture loader and resume."""
    from replaykit.cli.report import report_command

    src = LF / "openai-agents-2025-09-30.json"
    log = rk.read_events(src, owner="t")
    ref = log.table.to_pandas().query("kind == 'tool_call'")["ref_id"].iloc[0]
    branch = rk.Branch(base=log, run_id=log.run_ids[0], tenant_id="t", checkpoint=0,
                       name="paris").intervene(kind="tool_args_patch", target=ref,
                                               patch={"args": {"city": "Paris"}})
    assert branch.project_id is None
    bfile = branch.save(tmp_path / "branch.json")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = report_command(["rca", "--log", str(src), "--owner", "t", "--branch",
                               str(bfile), "--no-progress", "-o", str(tmp_path / "rca.html")])
    assert code == 3
    line = next(x for x in err.getvalue().splitlines()
                if x.startswith("fixture that would satisfy it: "))
    spec = json.loads(line.split(": ", 1)[1])
    assert spec["projectId"] == ""  # the branch names no project
    fx = tmp_path / "fixtures.json"
    fx.write_text(json.dumps({"format": "isplay.fixtures/v1", "fixtures": [spec]}))
    reg = rk.FixtureRegistry.from_file(fx)
    assert [f.fixture_id for f in reg] == [spec["fixtureId"]]
    paused = rk.replay(branch)
    assert paused.status == "paused"
    done = paused.resume(reg)
    assert done.status == "completed"
    eff = done.effects_df()
    assert eff.loc[eff["action"] == "fixture", "fixture_id"].tolist() == [spec["fixtureId"]]


def _fixture_error(tmp_path: Path, **entry: Any) -> LoadError:
    base = {"fixtureId": "fx-1", "projectId": "p", "toolName": "t",
            "matcher": {"argsSubset": {}}, "output": 1, "provenance": "analyst"}
    p = tmp_path / "fx.json"
    p.write_text(json.dumps({"format": "isplay.fixtures/v1", "fixtures": [base | entry]}))
    with pytest.raises(LoadError) as exc:
        rk.read_isplay_fixtures(p)
    return exc.value


def test_fixture_errors_name_what_is_wrong(tmp_path: Path) -> None:
    empty = _fixture_error(tmp_path, toolName="")
    assert (empty.field, empty.reason) == ("fixtures[0].toolName", "empty_value")
    assert "as a string" not in empty.fix and "non-empty" in empty.fix
    number = _fixture_error(tmp_path, projectId=7)
    assert (number.reason, number.fix) == ("bad_type", "Give 'projectId' as a string.")
    assert "got the number 7" in str(number)
