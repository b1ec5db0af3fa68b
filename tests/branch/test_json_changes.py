"""``json_changes`` is a faithful structural diff: its rows, applied in order as RFC 6902
operations, turn ``before`` into ``after``; each removed or changed row's ``before`` is the
value found there; neither input is modified; and rows never share a value with each other's
later edits (the document is patched in place on the function's own copy)."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonpatch
import jsonpointer
from hypothesis import given, settings
from hypothesis import strategies as st

from replaykit.branch.findings import json_changes

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["a", "b", "x", ""]),
    lambda c: st.lists(c, max_size=4)
    | st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e/f", "~"]), c, max_size=4),
    max_leaves=14)


def _replay(before: Any, rows: list[dict[str, Any]]) -> Any:
    doc = copy.deepcopy(before)
    for row in rows:
        if row["path"] == "":
            doc = copy.deepcopy(row["after"])
            continue
        if row["op"] in ("changed", "removed"):
            assert jsonpointer.resolve_pointer(doc, row["path"]) == row["before"], row
        op = {"changed": "replace", "added": "add", "removed": "remove"}[row["op"]]
        patch = {"op": op, "path": row["path"]}
        if op != "remove":
            patch["value"] = copy.deepcopy(row["after"])
        doc = jsonpatch.apply_patch(doc, [patch])
    return doc


@settings(max_examples=400, deadline=None)
@given(before=_JSON, after=_JSON)
def test_rows_rebuild_after_and_leave_inputs_alone(before: Any, after: Any) -> None:
    b0, a0 = copy.deepcopy(before), copy.deepcopy(after)
    rows = json_changes(before, after)
    snapshot = json.dumps(rows, sort_keys=True)
    assert before == b0 and after == a0
    assert _replay(before, rows) == after
    assert (rows == []) == (before == after)
    assert json.dumps(rows, sort_keys=True) == snapshot  # replaying edited no row's value


def test_a_value_added_then_edited_inside_keeps_its_row() -> None:
    """A later operation inside a value an earlier row added leaves that row as it was."""
    before = {"a": [1, 2, 3], "b": {"x": [1]}}
    after = {"a": [9], "b": {"x": [1, {"y": 2}], "z": [0]}, "c": {"k": [1, 2]}}
    rows = json_changes(before, after)
    assert _replay(before, rows) == after
    for row in rows:
        if row["op"] == "added" and row["path"] == "/c":
            assert row["after"] == {"k": [1, 2]}
