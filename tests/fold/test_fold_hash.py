"""state_hash: defined by canonical JSON, structured (sets for collections), column-wise."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit._base.json import canonical_json
from replaykit.fold import state_hash
from replaykit.fold.hashing import hash_ints, hash_json, hash_texts, json_texts, value_hash
from replaykit.fold.projection import collection, counter, last, maximum, minimum, on
from replaykit.fold.synth import synthetic_log

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**62), 2**62), st.text(max_size=6),
                    st.floats(allow_nan=False, allow_infinity=False))


@settings(max_examples=80, deadline=None)
@given(values=st.lists(st.one_of(st.text(max_size=8), st.integers(-(10**12), 10**12)),
                       max_size=20))
def test_json_texts_are_canonical_json_column_wise(values: list) -> None:
    strs = [v for v in values if isinstance(v, str)] + [None]
    ints = [v for v in values if isinstance(v, int)] + [None]
    for vals, typ in ((strs, pa.string()), (ints, pa.int64())):
        arr = pa.array(vals, typ)
        expected = [canonical_json(v) for v in vals]
        assert json_texts(arr).to_pylist() == expected
        assert json_texts(arr.dictionary_encode()).to_pylist() == expected
        # hashing many texts at once == one at a time
        hs = hash_texts(json_texts(arr))
        assert [int(h) for h in hs] == [int(hash_texts([t])[0]) for t in expected]
        assert np.array_equal(hash_json(arr), hs)
        if len(vals) > 1:  # the fast path: no nulls (and strings without escapes)
            assert np.array_equal(hash_json(arr[:-1]), hs[:-1])
            assert np.array_equal(hash_json(arr.slice(1, len(vals) - 2)), hs[1:-1])


@settings(max_examples=80, deadline=None)
@given(items=st.lists(st.text(max_size=4), unique=True, max_size=6), data=st.data())
def test_state_hash_treats_collections_and_dicts_as_sets(items: list, data) -> None:
    shuffled = data.draw(st.permutations(items))
    d = {k: i for i, k in enumerate(items)}
    d2 = {k: d[k] for k in shuffled}
    a = {"c": tuple(items), "d": d, "n": 1}
    b = {"n": 1, "d": d2, "c": tuple(shuffled)}
    assert state_hash(a) == state_hash(b)
    assert state_hash(a) != state_hash({**a, "n": 2})
    if items:
        assert state_hash(a) != state_hash({**a, "c": tuple(items[1:])})
        assert state_hash(a) != state_hash({**a, "d": {**d, items[0]: d[items[0]] + 1}})


@settings(max_examples=60, deadline=None)
@given(v=SCALARS)
def test_scalar_values_hash_their_canonical_json(v) -> None:
    assert value_hash(v) == int(hash_texts([canonical_json(v)])[0])
    assert state_hash({"x": v}) != state_hash({"y": v})  # the field name is part of it


def test_state_hash_is_on_by_default_and_can_be_turned_off() -> None:
    log = synthetic_log(300, 3, seed=5)
    frame = rk.fold(log, rk.agent())
    hashes = frame.state_hash()
    assert hashes is not None and hashes.dtype == np.uint64 and len(hashes) == len(log)
    assert "state_hash" in frame.steps_df().columns
    run = log.run_ids[0]
    tenant = log.runs_df().set_index("run_id").loc[run, "tenant_id"]
    start, end = frame.run_bounds(run, tenant_id=tenant)
    for n in (1, (end - start) // 2, end - start):
        assert int(hashes[start + n - 1]) == state_hash(frame.at_step(run, n, tenant_id=tenant))
    off = rk.fold(log, rk.agent(), state_hash=False)
    assert off.state_hash() is None and "state_hash" not in off.steps_df().columns


def _rechunk(table: pa.Table, parts: int) -> pa.Table:
    """The same rows in ``parts`` chunks, each with its own dictionaries (as Parquet gives)."""
    step = -(-table.num_rows // parts)
    chunks = []
    for i in range(0, table.num_rows, step):
        sl = table.slice(i, step)
        cols = []
        for name in sl.column_names:
            c = sl.column(name).combine_chunks()
            if pa.types.is_dictionary(c.type):  # a fresh dictionary per chunk, in a new order
                vals = c.dictionary_decode() if hasattr(c, "dictionary_decode") else c.cast(
                    c.type.value_type)
                c = pa.compute.dictionary_encode(vals.take(pa.array(
                    np.arange(len(vals))[::-1]))).take(pa.array(np.arange(len(vals))[::-1]))
            cols.append(c)
        chunks.append(pa.Table.from_arrays(cols, schema=table.schema))
    return pa.concat_tables(chunks)


def test_chunked_tables_fold_like_combined_ones() -> None:
    log = synthetic_log(2_000, 6, seed=7)
    chunked = rk.EventLog(_rechunk(log.table, 5), sort=False)
    assert chunked.table.column("kind").num_chunks == 5
    projections = [rk.agent(), rk.harness()]
    a, b = rk.fold(log, projections), rk.fold(chunked, projections)
    assert np.array_equal(a.state_hash(), b.state_hash())
    pd_a, pd_b = a.steps_df(), b.steps_df()
    assert pd_a.astype(str).equals(pd_b.astype(str))
    for run in log.run_ids[:3]:
        tenant = log.runs_df().set_index("run_id").loc[run, "tenant_id"]
        assert canonical_json(a.at(run, 10**9, tenant_id=tenant)) == canonical_json(
            b.at(run, 10**9, tenant_id=tenant))


_STRING_COLUMNS = ["text", "payload", "tool_name", "ref_id", "type", "kind", "run_id",
                   "source", "finish", "chunk_type", "event_id"]


def _toh_log() -> rk.EventLog:
    from pathlib import Path

    return rk.read_toh(Path(__file__).resolve().parents[2] / "data" / "toh", owner="demo")


@pytest.mark.parametrize("column", _STRING_COLUMNS)
def test_state_hash_over_every_string_column_type(column: str) -> None:
    """``text``/``payload`` are large_string, the others string or dictionary columns: every
    last/maximum/minimum, keyed counter and collection over them hashes column-wise exactly as
    the state does (``last("text")`` raised ArrowNotImplementedError: string vs large_string).
    """
    log = _toh_log()
    assert log.table.schema.field("text").type == pa.large_string()
    proj = rk.projection(
        "p", last=last(column), hi=maximum(column), lo=minimum(column),
        by=counter(by=column),
        items=collection(add=on(kinds=["tool_call", "model_chunk", "user_message"]),
                            key=column, item={"v": column}))
    frame = rk.fold(log, proj)
    hashes = frame.state_hash()
    assert hashes is not None
    run = log.run_ids[0]
    start, end = frame.run_bounds(run, tenant_id="demo")
    for n in sorted({1, 2, (end - start) // 2, end - start}):
        state = frame.at_step(run, n, tenant_id="demo")
        assert int(hashes[start + n - 1]) == state_hash(state)
    final = frame.at_step(run, end - start, tenant_id="demo")
    values = [v for v in log.run(run, tenant_id="demo").table.column(column).to_pylist()
              if v is not None]
    assert final["last"] == values[-1] and final["hi"] == max(values)
    assert final["lo"] == min(values)


@pytest.mark.parametrize("typ", [pa.string(), pa.large_string(), pa.string_view()])
def test_json_texts_of_every_string_type(typ: pa.DataType) -> None:
    vals = ["a", None, 'q"uote', "new\nline", ""]
    arr = pa.array(vals, typ)
    expected = [canonical_json(v) for v in vals]
    assert json_texts(arr).to_pylist() == expected
    assert np.array_equal(hash_json(arr), hash_texts(pa.array(expected)))
    assert np.array_equal(hash_texts(pa.array(expected, typ)), hash_texts(expected))


INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64]


@settings(max_examples=200, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(INT_DTYPES))
def test_hash_ints_is_the_hash_of_the_decimal_text(data, dtype) -> None:
    """hash_ints (digits arithmetically) pinned to the text path it replaces for integers."""
    info = np.iinfo(dtype)
    vals = data.draw(st.lists(st.one_of(st.integers(int(info.min), int(info.max)),
                                        st.sampled_from([int(info.min), int(info.max), 0])),
                              max_size=30))
    arr = np.array(vals, dtype=dtype)
    want = hash_texts(json_texts(pa.array(arr)))
    np.testing.assert_array_equal(hash_ints(arr), want)
    assert [int(h) for h in hash_ints(arr)] == [value_hash(int(v)) for v in vals]


@settings(max_examples=150, deadline=None)
@given(data=st.data(), dtype=st.sampled_from([pa.int32(), pa.int64(), pa.uint64(), pa.int8()]),
       spread=st.sampled_from([3, 1000, 2**40]))
def test_integer_distinct_hashes_equal_the_dictionary_path(data, dtype, spread) -> None:
    """The integer fast path of _distinct_hashes (a range table, or every value) gives what
    the dictionary path (each distinct value's canonical JSON) gives, nulls included."""
    from replaykit.fold.engine import _distinct_hashes

    info = np.iinfo(dtype.to_pandas_dtype())
    lo, hi = max(int(info.min), -spread), min(int(info.max), spread)
    vals = data.draw(st.lists(st.one_of(st.none(), st.integers(lo, hi)), min_size=1,
                              max_size=40))
    arr = pa.array(vals, dtype)
    v0 = value_hash(None)
    enc = arr.dictionary_encode()
    dh = np.append(hash_json(enc.dictionary), np.uint64(v0))
    want = dh[pa.compute.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False)]
    np.testing.assert_array_equal(_distinct_hashes(arr, v0), want)


def _H(text: str) -> int:
    """``H`` straight from its definition, in Python integers (the pin for the kernels)."""
    p, k, mask = 0x100000001B3, 0x9E3779B97F4A7C15, 2**64 - 1
    b = text.encode("utf-8")
    x = (sum((c + 1) * pow(p, i, 2**64) for i, c in enumerate(b)) + len(b) * k) & mask
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & mask
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & mask
    return x ^ (x >> 31)


@settings(max_examples=150, deadline=None)
@given(width=st.integers(0, 40), n=st.integers(1, 30), data=st.data(),
       ascii_only=st.booleans(), large=st.booleans())
def test_text_hash_kernels_match_the_definition(width, n, data, ascii_only, large) -> None:
    """hash_texts / hash_json on texts of one width (the matrix-product path when their
    UTF-8 lengths agree) and of mixed widths (the block path) equal H computed in Python."""
    alphabet = st.characters(max_codepoint=126, min_codepoint=32) if ascii_only else \
        st.characters(blacklist_categories=("Cs",))
    texts = data.draw(st.lists(st.text(alphabet, min_size=width, max_size=width),
                               min_size=n, max_size=n))
    if data.draw(st.booleans()):
        texts.append(data.draw(st.text(alphabet, max_size=3)))  # one of another width
    arr = pa.array(texts, pa.large_string() if large else pa.string())
    want = [_H(t) for t in texts]
    assert [int(h) for h in hash_texts(arr)] == want
    assert [int(h) for h in hash_json(arr)] == [_H(canonical_json(t)) for t in texts]
    sliced = arr.slice(1)
    assert [int(h) for h in hash_json(sliced)] == [_H(canonical_json(t)) for t in texts[1:]]


def test_fixed_width_texts_across_blocks() -> None:
    """Many equal-width texts (more than one row block of the matrix path)."""
    texts = [f"tc_{i:06d}_{i % 97:05d}" for i in range(40_000)]
    got = hash_texts(pa.array(texts))
    for i in (0, 1, 17_475, 17_476, 39_999):
        assert int(got[i]) == _H(texts[i])
    hj = hash_json(pa.array(texts))
    assert int(hj[-1]) == _H(canonical_json(texts[-1]))


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(st.sampled_from(["", "", "a", "ab", "é", 'q"', "x\ny", "\x7f"]) |
                      st.text(max_size=5), min_size=1, max_size=12),
       typ=st.sampled_from([pa.string(), pa.large_string(), pa.string_view()]),
       cut=st.integers(0, 3), fresh=st.booleans())
def test_text_hashes_of_empty_strings_in_every_layout(texts, typ, cut, fresh) -> None:
    """Empty strings anywhere (first, last, only), in string / large_string / string_view
    arrays, sliced or dictionary-encoded, hash as the definition says, also in a fresh
    process whose power tables are still short (a trailing empty string read one entry past
    the table there: IndexError; issue 30 item 11)."""
    from replaykit.fold import hashing

    if fresh:
        hashing._POW = np.ones(1, dtype=np.uint64)
        hashing._INV = np.ones(1, dtype=np.uint64)
    arr = pa.array(["pad"] * cut + texts, typ).slice(cut)
    want = [_H(t) for t in texts]
    want_json = [_H(canonical_json(t)) for t in texts]
    assert [int(h) for h in hash_texts(arr)] == want
    assert [int(h) for h in hash_json(arr)] == want_json
    assert [int(h) for h in hash_json(pa.array(texts, pa.string()).dictionary_encode())] == \
        want_json
    assert [int(h) for h in hash_texts(texts)] == want
