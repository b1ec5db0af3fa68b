"""stamps_df's column-wise helpers against the per-row code they replaced (issue 18: the RCA
report of a 100,000-event replay spent ~40% of its first build in stamps_df).

Each helper is checked equal to the old expression on random input (Hypothesis), and
stamps_df as a whole is checked equal to stamps_df computed through the old expressions, on
logs whose model-call payloads are random (long integers, placeholders, empty strings,
objects where text is expected, broken JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit._base import json as stamps_json
from replaykit._base.json import map_distinct_documents
from replaykit.provenance import stamps

DATA = Path(__file__).resolve().parents[2] / "data"


# --------------------------------------------------------------- the replaced expressions
def _old_source_format(source):
    return pc.replace_substring_regex(stamps._s(source), r":.*$", "")


def _old_rows_holding(payloads, needles):
    hit = None
    for nd in needles:
        h = pc.match_substring(payloads, nd)
        hit = h if hit is None else pc.or_(hit, h)
    return np.flatnonzero(np.asarray(pc.fill_null(hit, False)))


def _old_map_distinct_objects(texts, fn, default):
    decoded, idx = map_distinct_documents(texts, fn, default=default)
    return decoded, idx.to_numpy(zero_copy_only=False)


# ------------------------------------------------------------------------- strategies
_text = st.text(alphabet=st.sampled_from('ab:"{}[]\\ 0123456789x'), max_size=12)
_sources = st.lists(st.one_of(st.none(), _text, st.sampled_from(
    ["isplay:/a/b.json", "toh:x:y", "pleach", "otel:", ":lead", "isplay"])), max_size=40)

_json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-10**25, 10**25),
                         st.floats(allow_nan=False, allow_infinity=False), _text,
                         st.sampled_from(["", "{{system}}", "gpt-4o", "{\"a\": 1}", "[1, 2]"]))
_json_value = st.recursive(_json_scalar, lambda c: st.one_of(
    st.lists(c, max_size=3), st.dictionaries(_text, c, max_size=3)), max_leaves=8)
_settings = st.fixed_dictionaries({}, optional={
    "model": _json_scalar, "provider": _json_scalar, "temperature": _json_scalar,
    "maxTokens": _json_scalar, "stopSequences": _json_value, "stop": _json_value,
    "safetyPolicy": _json_value, "seed": _json_scalar, "topP": _json_scalar})
_model_call = st.fixed_dictionaries({}, optional={
    "settings": _settings, "prompt": _json_value, "system": _json_value,
    "tools": _json_value, "model": _json_scalar, "messages": _json_value})


def _payload_text(doc, how):
    if how == "broken":
        return json.dumps(doc)[:-1] or "{"
    if how == "array":
        return json.dumps([doc])
    return json.dumps(doc, ensure_ascii=how == "ascii")


_payloads = st.lists(st.tuples(_model_call, st.sampled_from(
    ["plain", "plain", "plain", "ascii", "broken", "array"])), min_size=1, max_size=12)


# ------------------------------------------------------------------------- helpers
@given(_sources, st.booleans())
def test_source_format_equals_the_per_row_regex(values, chunked):
    arr = pa.array(values, pa.string())
    col = pa.chunked_array([arr[: len(arr) // 2], arr[len(arr) // 2:]]) if chunked else arr
    got = stamps._source_format(col)
    assert got.to_pylist() == _old_source_format(col).to_pylist()
    assert got.type == pa.string()


@given(st.lists(st.one_of(st.none(), st.text(alphabet=st.sampled_from('"abt ol'), max_size=10)),
                max_size=30),
       st.lists(st.sampled_from(['"a"', '"tools"', '"b"', "o", '"']), min_size=1, max_size=4,
                unique=True))
def test_rows_holding_equals_or_of_matches(texts, needles):
    arr = pa.array(texts, pa.large_string())
    assert stamps_json.rows_holding_any(arr, sorted(needles)).tolist() == \
        _old_rows_holding(arr, sorted(needles)).tolist()


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(st.one_of(
    st.builds(json.dumps, _json_value), _text,
    st.sampled_from(['{"n": 1234567890123456789012}', '{"a": NaN}', "[" * 250 + "]" * 250,
                     '{"a": ' * 210 + "1" + "}" * 210, '{"x": "\\ud800"}'])), max_size=12))
def test_map_distinct_objects_equals_map_distinct_documents(texts):
    arr = pa.array(texts, pa.large_string())

    def fn(doc):
        return json.dumps(doc, sort_keys=True, default=str)

    new_vals, new_idx = stamps._map_distinct_objects(arr, fn, default="-")
    old_vals, old_idx = _old_map_distinct_objects(arr, fn, default="-")
    assert [new_vals[i] for i in new_idx] == [old_vals[i] for i in old_idx]


def test_map_distinct_objects_keeps_long_integers_exact():
    arr = pa.array(['{"n": 12345678901234567890123}', '{"n": 1}'], pa.large_string())
    vals, idx = stamps._map_distinct_objects(arr, lambda d: d["n"], default=None)
    assert [vals[i] for i in idx] == [12345678901234567890123, 1]


# ------------------------------------------------------------------------- stamps_df
_BASE = rk.read_isplay(DATA / "isplay", owner="acme")


def _with_payloads(payloads):
    """The bundled isplay log with its model.call payloads replaced (cycling ``payloads``)."""
    t = _BASE.table
    typ = t.column("type").to_pylist()
    col = t.column("payload").to_pylist()
    calls = [i for i, x in enumerate(typ) if x == "model.call"]
    for k, i in enumerate(calls):
        doc, how = payloads[k % len(payloads)]
        col[i] = _payload_text(doc, how)
    t = t.set_column(t.schema.get_field_index("payload"), "payload",
                     pa.array(col, pa.large_string()))
    return rk.EventLog(t, runs=_BASE.runs)


def _old_stamps(log, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(stamps, "_source_format", _old_source_format)
        m.setattr(stamps_json, "rows_holding_any", _old_rows_holding)
        m.setattr(stamps, "_map_distinct_objects", _old_map_distinct_objects)
        return stamps._stamps_df(log, log.table)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(payloads=_payloads)
def test_stamps_df_equals_the_per_row_path_on_random_payloads(payloads, monkeypatch):
    log = _with_payloads(payloads)
    new = stamps._stamps_df(log, log.table)
    old = _old_stamps(log, monkeypatch)
    pd.testing.assert_frame_equal(new, old)


def test_stamps_df_equals_the_per_row_path_on_the_bundled_logs(monkeypatch):
    for log in (_BASE, rk.read_pleach(DATA / "pleach" / "harness_event_log.jsonl"),
                rk.read_toh(DATA / "toh", owner="demo")):
        pd.testing.assert_frame_equal(stamps._stamps_df(log, log.table),
                                      _old_stamps(log, monkeypatch))


@given(st.lists(st.sampled_from(range(5)), max_size=30))
def test_distinct_objects_round_trips_and_keeps_first_seen_order(picks):
    objs = [({"a": 1}, {}), ({}, {}), ({"b": 2}, {"b": "x"}), ({"a": 1}, {}), ({}, {})]
    values = [objs[i] for i in picks]
    uniq, which = stamps._distinct_objects(values)
    assert [uniq[i] for i in which] == values
    assert all(a is b for a, b in zip([uniq[i] for i in which], values, strict=True))
    assert [id(u) for u in uniq] == list(dict.fromkeys(id(v) for v in values))
