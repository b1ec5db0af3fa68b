"""Fast paths of the RCA report's build (issue 18) against the code they replaced."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from replaykit.branch import findings

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30),
                     st.floats(allow_nan=False), st.text(max_size=8))
_values = st.recursive(_scalars, lambda c: st.one_of(
    st.lists(c, max_size=3), st.dictionaries(st.text(max_size=4), c, max_size=3)),
    max_leaves=10)
_texts = st.one_of(
    st.builds(json.dumps, _values), st.text(max_size=20),
    st.sampled_from(['{"a": NaN}', '{"a": 1e400}', '{"x": "\\ud800"}', "\ufeff{}",
                     "18446744073709551616", "-9223372036854775809", '{"n": 1' + "0" * 30 + "}",
                     "[" * 2000 + "]" * 2000, " {} ", '{"a":1,"a":2}', "", "{"]))


def _old_decode(payload):
    if not isinstance(payload, str) or not payload:
        return payload
    try:
        return json.loads(payload)
    except ValueError:
        return payload


def _outcome(fn, text):
    try:
        return fn(text)
    except RecursionError:  # json.loads on text nested too deep: raised before, raised now
        return RecursionError


@given(st.one_of(_texts, st.none(), st.integers()))
def test_findings_decode_equals_json_loads(text):
    got, want = _outcome(findings._decode, text), _outcome(_old_decode, text)
    assert got == want
    assert repr(got) == repr(want)  # same types too (an int stays an int, -0.0 stays -0.0)


@given(st.lists(st.integers(-5, 40), max_size=30), st.lists(st.integers(-5, 45), max_size=10))
def test_positions_of_equals_the_dict_of_every_seq(seqs, wanted):
    import pyarrow as pa

    t = pa.table({"seq": pa.array(seqs, pa.int64())})
    full = findings._positions(t)
    assert findings._positions_of(t, wanted) == {s: full[s] for s in wanted if s in full}


@given(st.text(alphabet=st.sampled_from('<>&\u2028\u2029"\\ab/u0c'), max_size=40))
def test_script_json_equals_the_translate_table(text):
    from replaykit.report import _embed

    raw = json.dumps({"x": text, text: [text]}, ensure_ascii=False)
    assert _embed.script_json(raw, already_json=True) == raw.translate(_embed._JSON_ESCAPES)
    assert _embed.script_json({"x": text}) == json.dumps(
        {"x": text}, ensure_ascii=False).translate(_embed._JSON_ESCAPES)
