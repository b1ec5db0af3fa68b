"""``json_changes`` answers most payload pairs without jsonpatch (issue 44 item 4): the
rows must be exactly those of the jsonpatch-based implementation it replaced
(``_old_json_changes.py``), value types included (``1``, ``1.0`` and ``true`` are different
JSON; so are ``0.0`` and ``-0.0``; two NaNs are the same)."""

from __future__ import annotations

import copy
import math
from typing import Any

from _old_json_changes import old_json_changes
from hypothesis import given, settings
from hypothesis import strategies as st

from replaykit.branch import findings
from replaykit.branch.findings import json_changes

_KEYS = st.sampled_from(["a", "b", "c", "~", "/", "a/b", "~1", "", "0", "1", "temperature"])
_LEAF = (st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.0, -0.0, 1.0,
         0.2, math.nan, math.inf, 2**70, 1e300]) | st.text("xy", max_size=2))
_VALUE = st.recursive(_LEAF, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(_KEYS, inner, max_size=4), max_leaves=12)
_DOC = st.dictionaries(_KEYS, _VALUE, max_size=5)


def _edit(draw: Any, doc: Any, depth: int = 0) -> Any:
    """A copy of ``doc`` with a few edits (the pairs a replay makes: mostly the same)."""
    if isinstance(doc, dict):
        out = {}
        for k, v in doc.items():
            what = draw(st.sampled_from(["keep", "keep", "keep", "edit", "drop", "swap"]))
            if what == "drop":
                continue
            out[k] = draw(_VALUE) if what == "swap" else (
                _edit(draw, v, depth + 1) if what == "edit" else copy.deepcopy(v))
        for k in draw(st.lists(_KEYS, max_size=2)):
            out.setdefault(k, draw(_VALUE))
        return out
    if isinstance(doc, list) and draw(st.booleans()):
        return [_edit(draw, v, depth + 1) for v in doc]
    if isinstance(doc, float) and draw(st.booleans()):
        return draw(st.sampled_from([int(doc) if math.isfinite(doc) else doc, -doc, doc]))
    if isinstance(doc, int) and draw(st.booleans()):
        return draw(st.sampled_from([float(doc), bool(doc), doc]))
    return draw(_VALUE) if draw(st.booleans()) else copy.deepcopy(doc)


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_rows_are_the_jsonpatch_rows(data: Any) -> None:
    before = data.draw(_DOC)
    after = _edit(data.draw, before)
    keep_b, keep_a = copy.deepcopy(before), copy.deepcopy(after)
    got = json_changes(before, after)
    want = old_json_changes(before, after)
    # repr tells 1, 1.0, True and -0.0 apart (== does not), and keeps the row order
    assert repr(got) == repr(want)
    # the inputs are left alone and the rows hold copies, not the inputs' objects
    assert repr((before, after)) == repr((keep_b, keep_a))
    for r in got:
        for side in ("before", "after"):
            if isinstance(r[side], (dict, list)):
                assert all(r[side] is not v for v in _members(before) + _members(after))


def _members(doc: Any) -> list[Any]:
    out = [doc]
    for v in doc.values() if isinstance(doc, dict) else doc if isinstance(doc, list) else ():
        out += _members(v)
    return out


def test_fast_path_answers_the_replay_pairs_and_hands_over_the_rest() -> None:
    # a patched request: a parameter replaced, the replay's record added
    b = {"settings": {"temperature": 0.2, "top_p": 1}, "messages": [{"role": "user"}]}
    a = {"settings": {"temperature": 0, "top_p": 1}, "messages": [{"role": "user"}],
         "replayPatch": [{"interventionId": "iv-1"}]}
    assert findings._dict_changes(b, a) == [
        {"path": "/replayPatch", "op": "added", "before": None,
         "after": [{"interventionId": "iv-1"}]},
        {"path": "/settings/temperature", "op": "changed", "before": 0.2, "after": 0}]
    # 1 and 1.0 are == in Python but not the same JSON: a change
    assert findings._dict_changes({"x": [1]}, {"x": [1.0]}) is None  # a list differs
    assert findings._dict_changes({"x": {"y": 1}}, {"x": {"y": 1.0}}) == [
        {"path": "/x/y", "op": "changed", "before": 1, "after": 1.0}]
    assert findings._dict_changes({"x": math.nan}, {"x": math.nan}) == []
    # a member removed and another added: perhaps a move, jsonpatch decides
    assert findings._dict_changes({"a": 1}, {"b": 1}) is None
    assert json_changes({"a": 1}, {"b": 1}) == old_json_changes({"a": 1}, {"b": 1})


@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_the_diffs_own_decoding_gives_the_same_rows(data: Any) -> None:
    # the diff's content status decodes payload texts itself: with the 19-digit runs found
    # by one Arrow pass, and rows that hold the decoded documents' own values (no copies);
    # the rows are still the jsonpatch rows of json.loads' values
    import json

    import pyarrow as pa

    from replaykit.branch._recorded import _long_int_runs

    before = data.draw(_DOC)
    after = _edit(data.draw, before)
    texts = [json.dumps(before), json.dumps(after)]
    flags = _long_int_runs(pa.array(texts, pa.string()))
    assert flags == [findings._has_long_int(t) for t in texts]
    seen: list[Any] = []
    got = findings._content_changes(texts[0], texts[1], "claude_code", tuple(flags),
                                    seen.append)
    want = old_json_changes(json.loads(texts[0]), json.loads(texts[1]))
    assert repr(got[1]) == repr(want)
    assert repr(got) == repr(findings._content_changes(texts[0], texts[1], "claude_code"))
    assert repr(seen) == repr([json.loads(texts[1])])  # the decoded "after", once


@settings(max_examples=120, deadline=None)
@given(values=st.lists(st.tuples(_VALUE, st.sampled_from([None, "claude_code"]),
                                 st.sampled_from(["/a", "/message", "/cwd"])), max_size=8))
def test_value_texts_are_value_json_whatever_was_asked_before(values: list[Any]) -> None:
    # changes_df remembers each distinct value's JSON text: the text is _value_json's for
    # every value, asked in any order and again (1 / 1.0 / True, 0.0 / -0.0, NaN, 2**70)
    texts = findings._ValueTexts()
    for v, fmt, path in values + values[::-1]:
        assert texts(v, fmt, path) == findings._value_json(v, fmt, path)
    zero = findings._ValueTexts()
    assert [zero(x, None, "/a") for x in (0.0, -0.0, 0, False, 1, 1.0, True)] == [
        "0.0", "-0.0", "0", "false", "1", "1.0", "true"]
