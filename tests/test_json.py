"""Canonical JSON is the same text whether or not orjson is installed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replaykit._base.json import (
    HAVE_ORJSON,
    _canonical_json_stdlib,
    _float_text,
    args_hash,
    canonical_json,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@pytest.mark.skipif(not HAVE_ORJSON, reason="compares against orjson")
@settings(max_examples=400, deadline=None)
@given(json_values)
def test_stdlib_canonical_json_matches_orjson(value):
    assert _canonical_json_stdlib(value) == canonical_json(value)


def test_float_text_examples():
    assert _float_text(1e-7) == "1e-7"
    assert _float_text(-1.5e-05) == "-0.000015"
    assert _float_text(1e16) == "1e+16"
    assert _float_text(0.1) == "0.1"
    with pytest.raises(ValueError):
        _float_text(float("nan"))


def test_args_hash_ignores_key_order_and_whitespace():
    assert args_hash('{"b": 1, "a": [1, 2]}') == args_hash({"a": [1, 2], "b": 1})
    assert args_hash("not json") != args_hash('"not json"'[1:-1] + " ")


exact_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(exact_values)
def test_loads_and_canonical_json_are_lossless(value):
    """Any JSON value (integers of any size) survives text -> loads -> canonical_json -> loads,
    with the fast path and the standard-library path agreeing byte for byte."""
    import json

    from replaykit._base.json import loads

    text = json.dumps(value)
    assert loads(text) == value and loads(text.encode()) == value
    canon = canonical_json(value)
    assert canon == _canonical_json_stdlib(value)
    assert loads(canon) == value
