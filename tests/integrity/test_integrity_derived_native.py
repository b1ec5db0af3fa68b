"""The derived-column check re-derived by the native core (issue 27,
``replaykit._core.derive_pleach`` via :func:`replaykit.io.pleach._derive.native_derived`)
against the reference path (``REPLAYKIT_NATIVE=0``): identical problems tables on sealed
pleach logs of several sizes, with every derived column tampered (values, nulls, types,
large_string, chunks), without a ``source`` column, with rows of other formats, and with
hypothesis-mutated payloads (which the core may decline: then the reference decides)."""

from __future__ import annotations

import functools
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit._base import native as _native
from replaykit.datasets import generate_pleach
from replaykit.integrity.derived import _pleach_rows
from replaykit.integrity.verify import verify_chain
from replaykit.io.pleach._derive import _derived, native_derived
from replaykit.schema import DERIVED_COLUMNS

pytestmark = pytest.mark.skipif(
    not _native.available() or _native._switched_off(),
    reason="the native core is not built or switched off (REPLAYKIT_NATIVE=0): nothing to compare")


@contextmanager
def _reference():
    old = os.environ.get("REPLAYKIT_NATIVE")
    os.environ["REPLAYKIT_NATIVE"] = "0"
    try:
        yield
    finally:
        if old is None:
            del os.environ["REPLAYKIT_NATIVE"]
        else:
            os.environ["REPLAYKIT_NATIVE"] = old


@functools.cache
def _log(events: int) -> rk.EventLog:
    path = generate_pleach(Path(tempfile.mkdtemp()) / "log.jsonl", events=events,
                           runs=max(1, events // 100), tenants=("acme", "beta"), seed=7)
    return rk.read_pleach(path, progress=False)


def _both(t: pa.Table) -> pd.DataFrame:
    """verify_chain's problems on the native path and on the reference path: identical."""
    try:
        with _reference():
            want = verify_chain(t)
    except Exception as exc:  # the reference's own failure (see test_reference_failures)
        with pytest.raises(type(exc)):
            verify_chain(t)
        return pd.DataFrame()
    got = verify_chain(t)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True))
    return got


def _native_used(t: pa.Table) -> bool:
    from replaykit.integrity.chain import _as_table

    sub = _pleach_rows(_as_table(t))
    return sub is not None and native_derived(sub) is not None


@pytest.mark.parametrize("events", [1, 40, 500, 9000])
def test_native_columns_are_the_reference_columns(events):
    t = _log(events).table
    got = native_derived(t)
    assert got is not None
    cols, sources = got
    with _reference():
        want, want_sources = _derived(t)
    assert list(cols) == list(want)
    for name in want:
        assert cols[name].equals(want[name]), name
    text = pc.coalesce(*want_sources)
    text = text.combine_chunks() if isinstance(text, pa.ChunkedArray) else text
    assert pc.coalesce(*sources).cast(pa.large_string()).equals(text.cast(pa.large_string()))


@pytest.mark.parametrize("events", [1, 40, 500, 9000])
def test_intact_logs_have_no_problems_on_both_paths(events):
    t = _log(events).table
    assert _native_used(t)
    assert _both(t).empty


def _set(t: pa.Table, name: str, arr: Any) -> pa.Table:
    arr = arr if isinstance(arr, (pa.Array, pa.ChunkedArray)) else pa.array(arr)
    return t.set_column(t.schema.get_field_index(name), pa.field(name, arr.type), arr)


def _plain_values(t: pa.Table, name: str) -> tuple[pa.DataType, list[Any]]:
    col = t.column(name).combine_chunks()
    typ = col.type.value_type if pa.types.is_dictionary(col.type) else col.type
    return typ, pc.cast(col, typ).to_pylist()


def _forge(t: pa.Table, name: str, rows: list[int], how: str) -> pa.Table:
    typ, values = _plain_values(t, name)
    for r in rows:
        old = values[r]
        if how == "null":
            values[r] = None
        elif how == "other":
            values[r] = values[(r + 7) % len(values)]
        elif pa.types.is_boolean(typ):
            values[r] = not old
        elif pa.types.is_integer(typ):
            values[r] = 1 if old is None else old + 1
        else:
            values[r] = "x" if not old else old[:-1] + "#"
    field = t.schema.field(name)
    arr = pa.array(values, typ)
    if pa.types.is_dictionary(field.type):
        arr = arr.dictionary_encode().cast(field.type)
    return t.set_column(t.schema.get_field_index(name), field, arr)


@pytest.mark.parametrize("column", DERIVED_COLUMNS)
@pytest.mark.parametrize("how", ["null", "other", "near"])
def test_every_tampered_column_gives_the_reference_problems(column, how):
    t = _log(500).table
    typ, values = _plain_values(t, column)
    held = [i for i, v in enumerate(values) if v is not None][:3] or [0, 1, 2]
    forged = _forge(t, column, [*held, 499], how)
    p = _both(forged)
    if how == "near" or (how == "null" and any(values[i] is not None for i in held)):
        if column != "parent_run_id":
            assert (p["kind"] == "derived_mismatch").any(), column  # the test can fail


@pytest.mark.parametrize("column", DERIVED_COLUMNS)
def test_retyped_and_chunked_columns(column):
    t = _forge(_log(500).table, column, [3, 250], "near")
    typ, _ = _plain_values(t, column)
    plain = pc.cast(t.column(column).combine_chunks(), typ)
    variants = [plain]  # the dictionary decoded
    for other in (pa.large_string(), pa.string(), pa.int64(), pa.float64()):
        try:
            variants.append(pc.cast(plain, other))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    for v in variants:
        _both(_set(t, column, v))
    # chunked: the whole table in uneven chunks
    parts = [t.slice(0, 1), t.slice(1, 200), t.slice(201)]
    _both(pa.concat_tables(parts))


def test_large_string_payload_type_and_text():
    t = _log(500).table
    t = _set(t, "payload", pc.cast(t.column("payload"), pa.string()))
    t = _set(t, "text", pc.cast(_forge(t, "text", [5], "near").column("text"), pa.large_string()))
    assert _native_used(t)
    assert len(_both(t))


def test_without_a_source_column_and_with_other_formats():
    t = _forge(_log(500).table, "tool_name", list(range(0, 500, 9)), "near")
    _both(t.drop_columns(["source"]))
    src = t.column("source").combine_chunks()
    typ = src.type.value_type if pa.types.is_dictionary(src.type) else src.type
    values = pc.cast(src, typ).to_pylist()
    for i in range(0, 500, 4):
        values[i] = "toh" if i % 8 else None
    p = _both(_set(t, "source", pa.array(values, typ)))
    assert len(p)


def test_parent_run_id_checkability_on_a_part_of_the_log():
    t = _log(9000).table
    parents = pc.cast(t.column("parent_run_id"), pa.string())
    assert pc.sum(pc.is_valid(parents)).as_py(), "the generated log has subagent runs"
    part = t.slice(t.num_rows // 3, t.num_rows // 3)  # runs whose spawn row is elsewhere
    _both(part)
    _both(_forge(part, "parent_run_id", list(range(0, part.num_rows, 97)), "near"))


# ------------------------------------------------------------------ mutated payloads

_MUTATIONS = [
    lambda p: p.replace('"tool":', '"t\\u006fol":', 1),          # an escaped key
    lambda p: p.replace('"args":{', '"args":"{\\"b\\": 1}", "x":{', 1),  # string arguments
    lambda p: p.replace('"args":{', '"args":"not json", "x":{', 1),
    lambda p: p.replace('"turn":', '"turn":1.5, "y":', 1),
    lambda p: p.replace('"turn":', '"turn":99999999999, "y":', 1),  # beyond int32
    lambda p: p.replace('"call_id":', '"call_id":7, "z":', 1),     # another JSON type
    lambda p: p[:-1] + ',"tool":"dup"}',                           # a duplicate field
    lambda p: " " + p,
    lambda p: p + " ",
    lambda p: "[1]",
    lambda p: "{",
    lambda p: p.replace('"is_error":false', '"is_error":true', 1),
    lambda p: p.replace('"finish":"', '"finish":"error","f":"', 1),
    lambda p: p[:-1] + ',"text":null,"result":"r","message":"m"}',
    lambda p: p[:-1] + ',"usage":{"input_tokens":3,"output_tokens":null}}',
    lambda p: p[:-1] + ',"usage":{"input_tokens":"3"}}',
    lambda p: p[:-1] + ',"args":{"b":[1.50,-0,1e400],"a":"\\u00e9"}}',
    lambda p: p[:-1] + ',"args":12345678901234567890123}',
    lambda p: p[:-1] + ',"args":null}',
    lambda p: p[:-1] + ',"child_chat_id":"chat_0_000001"}',
    lambda p: p.replace("{", "{\n", 1),
    lambda p: p.encode("utf-8")[:-2].decode("utf-8", "replace") + "}",
]


@given(edits=st.lists(st.tuples(st.integers(0, 499), st.integers(0, len(_MUTATIONS) - 1)),
                      min_size=1, max_size=6),
       retype=st.booleans())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_mutated_payloads_give_the_reference_problems(edits, retype):
    t = _log(500).table
    payload = pc.cast(t.column("payload"), pa.string()).to_pylist()
    for row, m in edits:
        payload[row] = _MUTATIONS[m](payload[row])
    t = _set(t, "payload", pa.array(payload, pa.large_string() if retype else pa.string()))
    if retype:  # the retyped type column too (dictionary decoded)
        t = _set(t, "type", pc.cast(t.column("type"), pa.string()))
    _both(t)


def test_the_mutations_reach_both_outcomes_of_the_core():
    # some mutations the core derives (string arguments, big numbers), others it declines
    t = _log(500).table
    rows = [i for i, ty in enumerate(pc.cast(t.column("type"), pa.string()).to_pylist())
            if ty == "tool.called"]
    payload = pc.cast(t.column("payload"), pa.string()).to_pylist()
    taken = []
    for m in _MUTATIONS:
        p = list(payload)
        p[rows[0]] = m(p[rows[0]])
        mutated = _set(t, "payload", pa.array(p, pa.string()))
        taken.append(_native_used(mutated))
        _both(mutated)
    assert any(taken) and not all(taken)


def test_string_arguments_hash_as_the_reference_hashes_them():
    t = _log(500).table
    types = pc.cast(t.column("type"), pa.string()).to_pylist()
    payload = pc.cast(t.column("payload"), pa.string()).to_pylist()
    rows = [i for i, ty in enumerate(types) if ty == "tool.called"][:3]
    for r, args in zip(rows, ['"{\\"b\\": 1, \\"a\\": 2}"', '"plain"', '"[1, 2]"'],
                       strict=True):
        obj = json.loads(payload[r])
        obj["args"] = json.loads(args)
        payload[r] = json.dumps(obj)
    t = _set(t, "payload", pa.array(payload, pa.string()))
    got = native_derived(t)
    assert got is not None
    with _reference():
        want, _ = _derived(t)
    assert got[0]["args_hash"].equals(want["args_hash"])
    assert not np.all(pc.is_null(want["args_hash"]).to_numpy(zero_copy_only=False)[rows])


@pytest.mark.parametrize("kind", ["tool.called", "tool.completed", "model.completed"])
@pytest.mark.parametrize("value", ["[1]", "1", '"text"', "null", "[]"])
def test_a_payload_that_is_not_an_object_is_a_problem_not_a_crash(kind: str, value: str):
    # only a tampered table holds one (the loader refuses such rows): verify_chain reports
    # the broken chain (and any derived column that no longer follows) on both paths alike
    t = _log(500).table
    types = pc.cast(t.column("type"), pa.string()).to_pylist()
    payload = pc.cast(t.column("payload"), pa.string()).to_pylist()
    r = types.index(kind)
    payload[r] = value
    tampered = _set(t, "payload", pa.array(payload, pa.string()))
    with _reference():
        want = verify_chain(tampered)
    got = verify_chain(tampered)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True))
    assert len(got) >= 1  # the row's hash no longer holds


def test_type_encodings():
    # the core reads a dictionary-encoded type as stored (unused and repeated dictionary
    # values); nulls and plain text take the decoded route: the reference's problems each time
    t = _forge(_log(500).table, "kind", [3, 40], "near")
    values = pc.cast(t.column("type"), pa.string()).to_pylist()
    names = sorted(set(values))
    extra = ["zzz.unused", *names, names[0]]  # an unused value, and names[0] twice
    idx = [extra.index(v) if i % 2 else len(extra) - 1 if v == names[0] else extra.index(v)
           for i, v in enumerate(values)]
    variants = [
        pa.DictionaryArray.from_arrays(pa.array(idx, pa.int32()), pa.array(extra)),
        pa.DictionaryArray.from_arrays(pa.array([None if i == 7 else j for i, j in
                                                 enumerate(idx)], pa.int32()), pa.array(extra)),
        pa.array(values, pa.large_string()),
        pa.array([None if i % 50 == 0 else v for i, v in enumerate(values)], pa.string()),
    ]
    for v in variants:
        assert len(_both(_set(t, "type", v)))
