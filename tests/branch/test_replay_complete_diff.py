"""Issue 28: every field that differs between a base and a replay event counts as a change.

Property: for a random edit of a random payload member (request parameters such as
temperature or tools, any other member, added or replaced) of a random event after the
checkpoint, the edit shows in every view: ``diff_df`` marks the event changed,
``changes_df`` names the path with its before and after, the divergence timeline draws the
base event as changed, the summary's first change is at or before it, and the DiffExplorer
visits it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit import plots
from replaykit._base.envelope import is_bookkeeping
from replaykit.branch.findings import BOOKKEEPING_KEYS, content_changed

DATA = Path(__file__).resolve().parents[2] / "data" / "isplay"


@pytest.fixture(scope="module")
def log() -> Any:
    return rk.read_isplay(DATA, owner="demo", progress=False)


def _content_key(k: str) -> bool:
    """Not bookkeeping in isplay payloads (the replay's keys, the format's ids)."""
    return k not in BOOKKEEPING_KEYS and not is_bookkeeping(f"/{k}", "isplay") and k != "type"


_KEY = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8).filter(_content_key)
_VALUE = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6)
                      | st.text(max_size=12),
                      lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(_KEY, inner, max_size=3), max_leaves=6)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_payload_edit_shows_in_every_view(log: Any, data: Any) -> None:
    run = log.run("run-claims-C-104", tenant_id="demo").table
    payloads = [json.loads(p) for p in run.column("payload").to_pylist()]
    ids = run.column("event_id").to_pylist()
    kinds = run.column("kind").to_pylist()
    # an event after the checkpoint (seq 2) that is not a tool call (their args drive the
    # tool policy) and not the terminal event
    pos = data.draw(st.sampled_from([i for i in range(3, len(ids) - 1)
                                     if kinds[i] not in ("tool_call", "tool_result")]))
    doc = payloads[pos]
    members = [k for k in doc if _content_key(k)]
    how = data.draw(st.sampled_from(["replace", "add"] if members else ["add"]))
    if how == "replace":
        key = data.draw(st.sampled_from(members))
        value = data.draw(_VALUE.filter(lambda v: v != doc[key]))
    else:
        key = data.draw(_KEY.filter(lambda k: k not in doc))
        value = data.draw(_VALUE)
    br = rk.Branch(base=log, run_id="run-claims-C-104", tenant_id="demo",
                   checkpoint="cp-intake", name="edit").intervene(
        kind="json_patch", target_event=ids[pos],
        patch={"operations": [{"op": how, "path": f"/{key}", "value": value}]})
    res = rk.replay(br, fixtures=DATA / "fixtures.json")
    assert res.status == "completed"
    diff = res.diff_df()
    row = diff[diff["replay_seq"] == pos]
    assert row["status"].tolist() == ["changed"], (key, value)
    ch = res.changes_df()
    at_key = (ch["path"] == f"/{key}") | ch["path"].str.startswith(f"/{key}/")
    mine = ch[(ch["replay_seq"] == pos) & at_key]  # (not "/reason" for the key "r")
    assert len(mine) >= 1 and mine["key"].all()
    if how == "replace" and not isinstance(value, (dict, list)) \
            and not isinstance(doc[key], (dict, list)):
        assert json.loads(mine["after"].iloc[0]) == value
    fig = plots.divergence_timeline(res)
    changed_x = [x for t in fig.data if t.name == "base: changed" for x in t.x]
    assert pos in changed_x
    assert fig.layout.shapes[0].x0 <= pos
    s = res.summary()
    first = next(x for x in s.sentences("outcome") if "first diverges" in x)
    step = int(first.split("at step ", 1)[1].split(" ", 1)[0].replace(",", ""))
    assert step <= pos
    assert not s.answer.startswith("Unchanged: the replay reproduces")
    from replaykit import widgets

    d = widgets.DiffExplorer(res)
    visited = {d.step_change(1) for _ in range(int((diff["status"] != "same").sum()))}
    assert int(row.index[0]) in visited


def test_content_changed_ignores_bookkeeping_only() -> None:
    a = {"settings": {"temperature": 0.2}, "eventId": "e1", "ts": "t1"}
    assert not content_changed(json.dumps(a), json.dumps(dict(a, eventId="e2", ts="t2")))
    assert not content_changed(a, dict(a, replayPatch=[{"interventionId": "iv"}]))
    assert content_changed(a, dict(a, settings={"temperature": 0}))
    assert content_changed(a, dict(a, tools=["x"]))


def test_unsupported_findings_name_each_rule(log: Any) -> None:
    """Issue 28: a fixture matched on part of the arguments answering a call with more
    arguments, a copied output after a change, and a call to a tool the changed request no
    longer offers are each an "unsupported" finding naming the step; summary() counts them."""
    br = rk.Branch(base=log, run_id="run-claims-C-104", tenant_id="demo",
                   checkpoint="cp-intake", name="lookup").intervene(
        kind="tool_args_patch", target="tc-104-1",
        patch={"args": {"claimId": "C-104", "includeHistory": True}})
    res = rk.replay(br, fixtures=DATA / "fixtures.json")
    assert res.status == "completed"
    s = res.summary()
    u = s.unsupported
    fx = u[u["reason"] == "fixture_args"]
    assert len(fx) == 1 and fx["tool_name"].iloc[0] == "claim-lookup"
    assert "fx-lookup-C-104" in fx["sentence"].iloc[0] and "includeHistory" in \
        fx["sentence"].iloc[0]
    assert int(fx["because_step"].iloc[0]) == 5  # the patched call
    # the model output after the changed tool result is copied, so unsupported too
    cp = u[u["reason"] == "copied_output"]
    assert len(cp) and (cp["step"] > 5).all()
    assert "tool_not_offered" not in set(u["reason"])  # no request changed its tools
    assert s.counts["unsupported"] == len(u) == len(s.sentences("unsupported"))
    assert s.answer.startswith("Undetermined:")
    # an exact-hash fixture is evidence for its arguments: no fixture_args finding
    demo = rk.replay(rk.Branch.load(DATA / "branch-drop-fraud-clause.json", base=log,
                                    tenant_id="demo"), fixtures=DATA / "fixtures.json")
    du = demo.summary().unsupported
    assert list(du["step"]) == [4, 8, 13, 14, 17]
    assert list(du["reason"]) == ["copied_output"] * 3 + ["tool_not_offered", "copied_output"]
    # a replay that changes nothing supports everything
    plain = rk.replay(rk.Branch(base=log, run_id="run-claims-C-104", tenant_id="demo",
                                checkpoint="cp-intake", name="plain"))
    assert plain.summary().unsupported.empty and plain.summary().counts["unsupported"] == 0
    assert plain.summary().answer.startswith("Unchanged: the replay reproduces")


def test_changes_df_reuses_the_diffs_decoded_pairs(log: Any) -> None:
    """The JSON changes the diff computed for the pairs it had to decode (payload texts
    differ, signatures equal) are what changes_df shows for them, without diffing again."""
    from replaykit.branch import findings

    demo = rk.replay(rk.Branch.load(DATA / "branch-drop-fraud-clause.json", base=log,
                                    tenant_id="demo"), fixtures=DATA / "fixtures.json")
    demo.diff_df()
    assert demo._pair_changes  # the patched request: same signature, other payload
    calls = []
    real = findings.json_changes

    def counted(before: Any, after: Any) -> Any:
        calls.append(1)
        return real(before, after)

    findings.json_changes = counted
    try:
        cached = demo.changes_df()
        n_cached = len(calls)
        saved, demo._pair_changes = demo._pair_changes, {}
        fresh = demo.changes_df()
    finally:
        findings.json_changes = real
        demo._pair_changes = saved
    assert cached.equals(fresh)
    assert len(calls) - n_cached == n_cached + len(saved)  # each kept pair not diffed again
