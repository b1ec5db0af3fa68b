"""The fold's fast paths give what the plain paths give: the lazily computed ``state_hash``
equals the one computed inside ``fold``; ``steps_df``'s sparse string columns equal an Arrow
take."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from _fold_strategies import logs
from hypothesis import given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit.fold import engine, reducer
from replaykit.fold.projection import resolve_projections
from replaykit.fold.synth import synthetic_log

FRAME = importlib.import_module("replaykit.fold.frame")  # rk.fold is the function


def _eager(log: Any, proj: Any) -> np.ndarray:
    """``state_hash`` as ``fold`` computed it before it was deferred: every field's terms
    together with its fold, then the running sum."""
    fields = resolve_projections(proj)
    cols = engine.Columns(log.table)
    results, terms = engine.fold_fields(fields, cols, terms=True)
    return engine.state_hashes(results, cols, terms)


@pytest.fixture
def count_terms(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = engine.field_terms

    def counted(res: Any, c: Any) -> Any:
        calls.append(1)
        return real(res, c)

    monkeypatch.setattr(engine, "field_terms", counted)
    monkeypatch.setattr(FRAME, "field_terms", counted)
    return calls


def test_fold_defers_state_hash_to_the_first_read(count_terms: list[int]) -> None:
    log = synthetic_log(3_000, 12, seed=3)
    want = _eager(log, rk.agent())
    count_terms.clear()
    sf = rk.fold(log, rk.agent())
    assert count_terms == []  # fold itself hashes nothing
    h = sf.state_hash()
    n_fields = len(sf.fields)
    assert h is not None and len(count_terms) == n_fields
    assert sf.state_hash() is h and len(count_terms) == n_fields  # kept, not recomputed
    np.testing.assert_array_equal(h, want)
    df = sf.steps_df()
    assert len(count_terms) == n_fields
    np.testing.assert_array_equal(df["state_hash"].to_numpy(np.uint64), h)


def test_steps_df_computes_a_pending_hash_once(count_terms: list[int]) -> None:
    log = synthetic_log(3_000, 12, seed=4)
    want = _eager(log, rk.agent())
    count_terms.clear()
    sf = rk.fold(log, rk.agent())
    df = sf.steps_df()  # the hash is computed with the columns
    assert len(count_terms) == len(sf.fields)
    np.testing.assert_array_equal(df["state_hash"].to_numpy(np.uint64), want)
    sf.state_hash()
    sf.final()
    assert len(count_terms) == len(sf.fields)


def test_a_reducer_field_hashes_inside_fold(count_terms: list[int]) -> None:
    log = synthetic_log(500, 3, seed=2)
    proj = [rk.agent(), rk.projection("p", n=reducer(lambda acc, ev: acc + 1, initial=0))]
    sf = rk.fold(log, proj)
    assert len(count_terms) == len(sf.fields)  # computed in fold, as before
    h = sf.state_hash()
    assert len(count_terms) == len(sf.fields)
    np.testing.assert_array_equal(h, _eager(log, proj))


def test_state_hash_false_stays_off(count_terms: list[int]) -> None:
    sf = rk.fold(synthetic_log(500, 3, seed=2), rk.agent(), state_hash=False)
    assert sf.state_hash() is None and "state_hash" not in sf.steps_df().columns
    assert count_terms == []


@pytest.mark.parametrize("threads", [False, True])
@settings(max_examples=25, deadline=None)
@given(log=logs, steps_first=st.booleans())
def test_lazy_state_hash_equals_the_eager_one(log: Any, steps_first: bool,
                                              threads: bool) -> None:
    proj = [rk.agent(), rk.harness()]
    want = _eager(log, proj)
    saved = (engine.PARALLEL_MIN_ROWS, engine._workers)
    if threads:
        engine.PARALLEL_MIN_ROWS, engine._workers = 0, lambda: 2  # type: ignore[assignment]
    try:
        sf = rk.fold(log, proj)
        if steps_first:
            col = sf.steps_df()["state_hash"].to_numpy(np.uint64)
            np.testing.assert_array_equal(col, want)
        got = sf.state_hash()
        assert got is not None
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(sf.steps_df()["state_hash"].to_numpy(np.uint64), want)
    finally:
        engine.PARALLEL_MIN_ROWS, engine._workers = saved  # type: ignore[assignment]


def test_lazy_state_hash_of_an_empty_log() -> None:
    log = synthetic_log(10, 1, seed=1)
    empty = rk.EventLog(log.table.slice(0, 0), sort=False)
    sf = rk.fold(empty, rk.agent())
    h = sf.state_hash()
    assert h is not None and h.dtype == np.uint64 and len(h) == 0
    assert list(sf.steps_df()["state_hash"]) == []


def _take(values: pa.Array, pos: np.ndarray, n: int, large: bool) -> pa.Array:
    idx = np.full(n, -1, dtype=np.int64)
    idx[pos] = np.arange(len(pos))
    src = values.cast(pa.large_string()) if large and values.type == pa.string() else values
    return src.take(pa.array(idx, mask=idx < 0))


@settings(max_examples=150, deadline=None)
@given(n=st.integers(0, 40), data=st.data(), large=st.booleans(), sliced=st.booleans(),
       typ=st.sampled_from([pa.string(), pa.large_string()]))
def test_spread_strings_equals_a_take(n: int, data: Any, large: bool, sliced: bool,
                                      typ: pa.DataType) -> None:
    pos = np.array(sorted(data.draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=n))
                          if n else []), dtype=np.int64)
    texts = data.draw(st.lists(st.one_of(st.none(), st.text(max_size=5)),
                               min_size=len(pos) + 2, max_size=len(pos) + 2))
    values = pa.array(texts, typ)
    values = values.slice(1, len(pos)) if sliced else values.slice(0, len(pos))
    got = engine.spread_strings(values, pos, n, large=large)
    got.validate(full=True)
    want = _take(values, pos, n, large)
    assert got.type == want.type and got.equals(want)


def test_spread_strings_falls_back_to_a_take_when_rows_repeat() -> None:
    values = pa.array(["a", "b", "c"])
    pos = np.array([1, 1, 3])
    got = engine.spread_strings(values, pos, 5, large=False)
    assert got.equals(_take(values, pos, 5, large=False))


def test_steps_df_sparse_string_columns_unchanged() -> None:
    """The collection and keyed-counter columns of steps_df as the take built them."""
    log = synthetic_log(4_000, 10, seed=9)
    sf = rk.fold(log, rk.agent())
    df = sf.steps_df()
    by_name = {r.field.name: r for r in sf._results}
    n = len(log)
    for name in ("open_tool_calls", "pending_approvals", "active_subagents"):
        res = by_name[name]
        for part, keys, pos in (("added", res.add_keys, res.add_pos),
                                ("removed", res.rem_keys, res.rem_pos)):
            want = _take(keys, pos, n, large=True).to_pandas(types_mapper=pd.ArrowDtype)
            got = df[f"{name}_{part}"]
            assert got.isna().tolist() == want.isna().tolist()
            assert got.dropna().tolist() == want.dropna().tolist()
            assert got.notna().sum() == len(pos) > 0 or part == "removed"
    kc = by_name["tool_calls_by_tool"]
    want = _take(kc.key_array, kc.pos, n, large=True).to_pylist()
    assert df["tool_calls_by_tool_key"].astype(object).where(
        df["tool_calls_by_tool_key"].notna(), None).tolist() == want


@settings(max_examples=150, deadline=None)
@given(runs=st.lists(st.integers(1, 6), min_size=1, max_size=8), data=st.data())
def test_sparse_dense_is_the_step_function_of_each_run(runs: list[int], data: Any) -> None:
    """Counters and collection sizes: the value of the latest change row of the run, else 0."""
    starts = np.cumsum([0, *runs[:-1]])
    n = int(sum(runs))
    seg = np.repeat(np.arange(len(runs)), runs)
    c = engine.Columns.__new__(engine.Columns)
    c.n, c.starts, c.seg = n, starts.astype(np.int64), seg
    rows = np.array(sorted(data.draw(st.sets(st.integers(0, n - 1)))), dtype=np.int64)
    vals = np.array(data.draw(st.lists(st.integers(-50, 50), min_size=len(rows),
                                       max_size=len(rows))), dtype=np.int64)
    want = np.zeros(n, dtype=np.int64)
    for i in range(n):  # the reference: a loop over rows
        before = [k for k, r in enumerate(rows) if r <= i and seg[r] == seg[i]]
        want[i] = vals[before[-1]] if before else 0
    got = engine._sparse_dense(rows.astype(np.int32), vals, c)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dictionary", [["r1", "r2", "r1"], ["r1", "r2", None]])
def test_run_boundaries_from_dictionary_codes_need_distinct_values(dictionary: list) -> None:
    """Runs are found from the dictionary indices only when each value is there once: a
    dictionary that holds a value twice (or a null) falls back to comparing values."""
    idx = pa.array([0, 2, 2, 1, 1, 0], pa.int32())
    run = pa.DictionaryArray.from_arrays(idx, pa.array(dictionary, pa.string()))
    ten = pa.DictionaryArray.from_arrays(pa.array([0] * 6, pa.int32()), pa.array(["t"]))
    c = engine.Columns(pa.table({"tenant_id": ten, "run_id": run}))
    values = run.to_pylist()
    want = [0] + [i for i in range(1, 6) if values[i] != values[i - 1]]
    assert c.starts.tolist() == want
    plain = engine.Columns(pa.table({"tenant_id": ten, "run_id": pa.array(values)}))
    assert plain.starts.tolist() == want


@pytest.mark.parametrize("threads", [False, True])
def test_steps_df_equals_one_arrow_table_converted(threads: bool) -> None:
    """steps_df converts column by column (in the fields' tasks): the same frame, dtypes
    included, as one canonical Arrow table of the same columns through to_pandas."""
    from replaykit.eventlog.log import to_pandas

    log = synthetic_log(6_000, 20, seed=11)
    proj = [rk.agent(), rk.harness()]
    saved = (engine.PARALLEL_MIN_ROWS, engine._workers)
    if threads:
        engine.PARALLEL_MIN_ROWS, engine._workers = 0, lambda: 2  # type: ignore[assignment]
    try:
        sf = rk.fold(log, proj)
        got = sf.steps_df()
    finally:
        engine.PARALLEL_MIN_ROWS, engine._workers = saved  # type: ignore[assignment]
    t = log.table
    ref = {k: t.column(k) for k in ("tenant_id", "run_id", "seq", "type", "kind")}
    ref.update(sf._columns(dense=False))
    ref["state_hash"] = pa.array(sf.state_hash(), pa.uint64())
    want = to_pandas(pa.table(ref))
    pd.testing.assert_frame_equal(got, want)
    assert list(got.columns)[:6] == ["tenant_id", "run_id", "seq", "type", "kind", "turn"]


@pytest.mark.parametrize("runs", [[1], [5], [1, 9], [9, 1], [3, 3, 3], [1, 1, 1, 7], [7, 1, 1, 1]])
def test_state_hashes_split_at_any_run_layout(runs: list[int],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The running sum in two halves (split at the run start nearest the middle, on two
    threads) equals the state_hash of every materialised state, whatever the run lengths."""
    from replaykit.fold.hashing import state_hash

    monkeypatch.setattr(engine, "PARALLEL_MIN_ROWS", 0)
    monkeypatch.setattr(engine, "_workers", lambda: 2)
    tables = [synthetic_log(k, 1, tenants=("acme",), seed=i).table for i, k in enumerate(runs)]
    tables = [t.set_column(t.schema.get_field_index("run_id"), "run_id",
                           pa.array([f"run-{i}"] * t.num_rows).dictionary_encode())
              for i, t in enumerate(tables)]
    log = rk.EventLog(pa.concat_tables(tables).unify_dictionaries().combine_chunks())
    sf = rk.fold(log, rk.agent())
    h = sf.state_hash()
    assert h is not None and len(h) == sum(runs)
    starts = sf._cols.starts
    for i in range(len(log)):
        s = int(starts[np.searchsorted(starts, i, side="right") - 1])
        assert int(h[i]) == state_hash(sf.state_at_row(i, s))
