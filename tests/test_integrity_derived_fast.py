"""The derived-column check's shortcuts (issue 14): verify_chain flags exactly the cells a
straightforward cell-by-cell comparison with ``derive_columns`` flags; the tool calls'
arguments encoded in one orjson call are the texts the per-call loop gives; ``text`` compared
source by source agrees with comparing the built column."""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit._json import HAVE_ORJSON, args_hash
from replaykit.datasets import generate_pleach
from replaykit.integrity import _text_mismatch, verify_chain
from replaykit.io.pleach import derive_columns
from replaykit.io.pleach._derive import _SEP, _fast_args, _slow_args, _tool_args
from replaykit.io.pleach._shapes import _Part

needs_orjson = pytest.mark.skipif(not HAVE_ORJSON, reason="the fast path needs orjson")


@functools.cache
def _log() -> rk.EventLog:
    path = generate_pleach(Path(tempfile.mkdtemp()) / "log.jsonl", events=500, runs=5,
                           tenants=("acme",), seed=11)
    return rk.read_pleach(path, progress=False)


# parent_run_id is left out: a stored parent outside the checked rows is not checkable by
# design (tests/test_integrity_sealed.py covers it); every other derived column is here
_COLUMNS = ["kind", "turn", "step", "event_id", "ref_id", "tool_name", "args_hash",
            "cache_key", "is_error", "finish", "input_tokens", "output_tokens", "chunk_type",
            "text", "inherited"]


def _values(t: pa.Table, column: str) -> tuple[pa.DataType, list[Any]]:
    col = t.column(column).combine_chunks()
    typ = col.type.value_type if pa.types.is_dictionary(col.type) else col.type
    return typ, pc.cast(col, typ).to_pylist()


def _forged(typ: pa.DataType, old: Any, other: Any, how: int) -> Any:
    """A stored value for a cell: null, another row's value, or one near the old value."""
    if how == 0:
        return None
    if how == 1:
        return other
    if pa.types.is_boolean(typ):
        return not old
    if pa.types.is_integer(typ):
        return 1 if old is None else old + 1
    if not old:
        return "x" if old is None else "y"
    return old[:-1] + chr((ord(old[-1]) + 1) % 0x250)  # one character changed


def _tampered(edits: list[tuple[int, int, int, int]]) -> pa.Table:
    t = _log().table
    n = t.num_rows
    for col_i, row, other, how in edits:
        column = _COLUMNS[col_i % len(_COLUMNS)]
        typ, values = _values(t, column)
        values[row % n] = _forged(typ, values[row % n], values[other % n], how)
        field = t.schema.field(column)
        arr = pa.array(values, typ)
        if pa.types.is_dictionary(field.type):
            arr = arr.dictionary_encode().cast(field.type)
        t = t.set_column(t.schema.get_field_index(column), field, arr)
    return t


def _reference_cells(t: pa.Table) -> set[tuple[str, int, str]]:
    """(run_id, seq, column) of every cell whose stored value is not derive_columns' value,
    compared one cell at a time in Python."""
    derived = derive_columns(t)
    runs = pc.cast(t.column("run_id"), pa.string()).to_pylist()
    seqs = t.column("seq").to_pylist()
    bad = set()
    for column in _COLUMNS:
        _, stored = _values(t, column)
        want = pc.cast(derived[column], _values(t, column)[0]).to_pylist()
        for i, (s, w) in enumerate(zip(stored, want, strict=True)):
            if s != w:
                bad.add((runs[i], seqs[i], column))
    return bad


edit = st.tuples(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6),
                 st.integers(0, 2))


@given(edits=st.lists(edit, max_size=8))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_verify_flags_exactly_the_cells_a_cell_by_cell_check_flags(edits):
    t = _tampered(edits)
    want = _reference_cells(t)
    p = verify_chain(t)
    assert set(p["kind"]) <= {"derived_mismatch"}, p
    got = {(r.run_id, int(r.seq), r.found.split("=", 1)[0]) for r in p.itertuples()}
    assert got == want
    # what is shown as found is the stored value
    for r in p.itertuples():
        column = r.found.split("=", 1)[0]
        assert r.expected.startswith(column + "=")


def test_the_property_sees_tampering_of_every_column():
    # each column forged on a row where it holds a value (or, for always-null columns, any
    # row) is flagged: the property above cannot pass by flagging nothing
    t = _log().table
    for i, column in enumerate(_COLUMNS):
        typ, values = _values(t, column)
        row = next((j for j, v in enumerate(values) if v is not None), 0)
        bad = _reference_cells(_tampered([(i, row, 0, 2)]))
        assert bad, column
        p = verify_chain(_tampered([(i, row, 0, 2)]))
        assert {r.found.split("=", 1)[0] for r in p.itertuples()} == {column}


# ----------------------------------------------------------------- tool-call arguments

_json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8), st.sampled_from([_SEP, "\u2028", "\x7f", '"\\', "数据"]),
)
_json_value = st.recursive(
    _json_leaf,
    lambda kids: st.one_of(st.lists(kids, max_size=4),
                           st.dictionaries(st.text(max_size=4), kids, max_size=4)),
    max_leaves=12,
)
_payload = st.one_of(
    st.fixed_dictionaries({"args": _json_value, "call_id": st.text(max_size=5)}),
    st.fixed_dictionaries({"call_id": st.text(max_size=5)}),
)


def _part(payloads: list[str]) -> _Part:
    n = len(payloads)
    return _Part(env=pa.table({"event_type": pa.array(["tool.called"] * n)}),
                 created_at=pa.nulls(n, pa.string()), payload=pa.array(payloads, pa.large_string()),
                 typed=pa.table({}), line=np.zeros(n, dtype=np.int64))


def _slow(payloads: list[str]) -> tuple[list[Any], list[Any]]:
    arr = pa.array(payloads, pa.large_string())
    long_ints = np.asarray(pc.match_substring_regex(arr, r"[0-9]{19}")).tolist()
    return _slow_args(arr, long_ints, {})


@given(objs=st.lists(_payload, min_size=1, max_size=12), spaced=st.booleans())
@settings(max_examples=200, deadline=None)
def test_tool_args_are_the_per_call_loops_texts(objs, spaced):
    payloads = [json.dumps(o, ensure_ascii=spaced, separators=(", ", ": ") if spaced else None)
                for o in objs]
    text, hashes = _slow(payloads)
    got_text, got_hashes = _tool_args(_part(payloads), {})
    assert got_text.to_pylist() == text
    assert got_hashes.to_pylist() == hashes


@needs_orjson
def test_fast_args_is_taken_and_matches_on_ordinary_payloads():
    payloads = [json.dumps({"args": {"b": [1, 2.5, "ü"], "a": {"z": None, "c": True}},
                            "call_id": "c1"}),
                json.dumps({"call_id": "c2"}),  # no args: null text and hash
                json.dumps({"args": '{"y": 1, "x": 2}', "call_id": "c3"}),  # a string argument
                json.dumps({"args": [], "call_id": "c4"})]
    arr = pa.array(payloads, pa.large_string())
    fast = _fast_args(arr, np.zeros(len(payloads), dtype=bool), {})
    assert fast is not None
    text, hashes = _slow(payloads)
    assert fast[0].to_pylist() == text == ['{"a":{"c":true,"z":null},"b":[1,2.5,"ü"]}', None,
                                           '"{\\"y\\": 1, \\"x\\": 2}"', "[]"]
    assert fast[1].to_pylist() == hashes
    assert hashes[2] == args_hash({"x": 2, "y": 1})  # a string argument: by its JSON value


@needs_orjson
def test_fast_args_hands_separator_long_ints_and_deep_payloads_to_the_slow_path():
    sep_inside = json.dumps({"args": [1, _SEP, 2], "call_id": "c"})
    long_int = json.dumps({"args": {"n": 2**80}, "call_id": "c"})
    deep = json.dumps({"args": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]
                       * 8, "call_id": "c"})
    plain = json.dumps({"args": {"a": 1}, "call_id": "c"})
    for odd in (sep_inside, long_int, deep):
        payloads = [plain, odd, plain]
        arr = pa.array(payloads, pa.large_string())
        long_ints = np.asarray(pc.match_substring_regex(arr, r"[0-9]{19}"))
        assert _fast_args(arr, long_ints, {}) is None
        text, hashes = _slow(payloads)
        got = _tool_args(_part(payloads), {})
        assert got[0].to_pylist() == text and got[1].to_pylist() == hashes
    assert _slow([sep_inside])[0] == ['[1,"\\u0000\\u001f\\u0000",2]']


def test_a_payload_the_loader_cannot_decode_still_raises_as_before():
    with pytest.raises(ValueError):
        _tool_args(_part(['{"args": [1, 2]', '{"args": 1}']), {})
    with pytest.raises(AttributeError):  # a tool.called payload that is not an object
        _tool_args(_part(['[1, 2]']), {})


# ----------------------------------------------------------------- text, source by source

_cell = st.one_of(st.none(), st.sampled_from(["", "a", "b", "ab", "数据", "a\n"]))


@given(rows=st.lists(st.tuples(_cell, st.lists(_cell, min_size=5, max_size=5)), min_size=1,
                     max_size=30),
       chunks=st.integers(1, 3), large=st.booleans())
@settings(max_examples=200, deadline=None)
def test_text_mismatch_is_the_comparison_with_the_built_column(rows, chunks, large):
    stored = [r[0] for r in rows]
    sources = []
    for k in range(5):
        values = [r[1][k] for r in rows]
        cut = [0, *sorted({len(values) * c // chunks for c in range(1, chunks)}), len(values)]
        sources.append(pa.chunked_array(
            [pa.array(values[a:b], pa.string()) for a, b in zip(cut[:-1], cut[1:], strict=True)],
            type=pa.string()))
    want = [next((v for v in r[1] if v is not None), None) for r in rows]
    col = pa.array(stored, pa.large_string() if large else pa.string())
    bad = _text_mismatch(col, sources)
    assert bad is not None
    assert bad.tolist() == [s != w for s, w in zip(stored, want, strict=True)]


def test_text_mismatch_leaves_a_non_string_column_to_the_built_comparison():
    assert _text_mismatch(pa.array([1, 2]), [pa.array(["1", "2"])]) is None
