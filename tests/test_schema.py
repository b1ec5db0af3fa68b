"""The canonical schema: building, validating and sorting events tables."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replaykit.errors import SchemaError
from replaykit.schema import EVENTS_SCHEMA, KINDS, events_table, sort_events, validate


def _cols(**over):
    base = {
        "tenant_id": ["t1", "t1"],
        "run_id": ["r1", "r1"],
        "seq": [0, 1],
        "type": ["a", "b"],
        "kind": ["other", "tool_call"],
        "payload": ["{}", '{"x":1}'],
        "source": ["demo:mem", "demo:mem"],
    }
    base.update(over)
    return base


def test_events_table_fills_defaults_and_types():
    t = events_table(_cols())
    assert t.schema == EVENTS_SCHEMA
    assert t.column("is_error").to_pylist() == [False, False]
    assert t.column("inherited").to_pylist() == [False, False]
    assert t.column("turn").null_count == 2
    assert pa.types.is_dictionary(t.schema.field("run_id").type)


def test_events_table_rejects_missing_required_and_unknown_columns():
    cols = _cols()
    del cols["payload"]
    with pytest.raises(SchemaError, match="'payload' is missing"):
        events_table(cols)
    with pytest.raises(SchemaError, match="unknown column 'bogus'"):
        events_table(_cols(bogus=[1, 2]))
    with pytest.raises(SchemaError, match="differ in length"):
        events_table(_cols(seq=[0]))


def test_validate_reports_unsorted_duplicate_and_bad_kind():
    t = events_table(_cols(seq=[1, 0]), sort=False)
    with pytest.raises(SchemaError, match="not strictly increasing"):
        validate(t)
    t = events_table(_cols(seq=[3, 3]))
    with pytest.raises(SchemaError, match="3 then 3"):
        validate(t)
    t = events_table(_cols(kind=["other", "nonsense"]))
    with pytest.raises(SchemaError, match="nonsense"):
        validate(t)
    with pytest.raises(SchemaError, match="missing columns"):
        validate(pa.table({"seq": [1]}))


def test_naive_timestamps_are_taken_as_utc():
    ts = pa.array([0, 1_000_000], type=pa.timestamp("us"))
    t = events_table(_cols(ts=ts))
    assert t.schema.field("ts").type == pa.timestamp("us", tz="UTC")
    assert t.column("ts")[1].as_py().isoformat() == "1970-01-01T00:00:01+00:00"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["r1", "r2"]),
                  st.integers(0, 10_000)),
        min_size=0,
        max_size=40,
        unique=True,
    )
)
def test_sort_events_matches_python_sort(rows):
    n = len(rows)
    t = events_table(
        {
            "tenant_id": [r[0] for r in rows],
            "run_id": [r[1] for r in rows],
            "seq": [r[2] for r in rows],
            "type": ["x"] * n,
            "kind": ["other"] * n,
            "payload": ["{}"] * n,
            "source": ["demo:mem"] * n,
        },
        sort=False,
    )
    s = sort_events(t)
    got = list(zip(s.column("tenant_id").to_pylist(), s.column("run_id").to_pylist(),
                   s.column("seq").to_pylist(), strict=True))
    assert got == sorted(rows)
    if n:
        validate(s)


def test_kinds_are_unique_and_include_other():
    assert len(set(KINDS)) == len(KINDS)
    assert "other" in KINDS
    assert np.all([isinstance(k, str) for k in KINDS])
