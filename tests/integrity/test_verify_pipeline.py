"""verify_chain's speed paths give the bytes and values of their reference forms (issue 14).

* ``_verify_hashes`` (content bytes built block by block on worker threads while the main
  thread hashes) equals ``_hash_rows`` over ``_content_column`` of the whole table, for any
  block size and worker count, on sealed (derived-member) rows and pleach rows alike, with
  dictionary columns whose dictionary outgrows a block.
* ``_tool_args`` (the loader's and the check's canonical arguments) keeps integers past
  64 bits, canonicalises deep nesting, hashes a string argument by the JSON it holds.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replaykit._base.json import MAX_DEPTH, args_hash, canonical_json
from replaykit.integrity.chain import _digests, _hex_column, _verify_hashes, stamp_chain
from replaykit.integrity.content import _content_column, row_content
from replaykit.io.pleach._derive import _tool_args
from replaykit.io.pleach._shapes import _STR, _Part

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _chainlogs import make_log  # noqa: E402


@pytest.fixture(autouse=True, params=["native", "reference"])
def _path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test on both paths: the native core (content and hashes in one pass, which
    ignores the block size) and the reference pipeline (REPLAYKIT_NATIVE=0)."""
    if request.param == "reference":
        monkeypatch.setenv("REPLAYKIT_NATIVE", "0")
    else:
        monkeypatch.delenv("REPLAYKIT_NATIVE", raising=False)


@functools.cache
def _sealed_table() -> pa.Table:
    return stamp_chain(make_log(3_000, n_runs=40)).table


def _hash_rows(prev: pa.Array, content: pa.Array) -> pa.Array:
    """The whole table's hashes in one go: prev || content joined, then one sha256 each."""
    joined = pc.binary_join_element_wise(pc.cast(pc.fill_null(prev, ""), pa.large_string()),
                                         content, pa.scalar("", pa.large_string()))
    return _hex_column(_digests(joined))


def _reference(table: pa.Table) -> list[str]:
    """The definition: sha256(prev_hash || row_content(row)) row by row; and the same as
    the whole table's column-wise bytes hashed in one go."""
    want = [hashlib.sha256((r["prev_hash"] or "").encode() + row_content(r)).hexdigest()
            for r in table.to_pylist()]
    whole = _hash_rows(table.column("prev_hash").combine_chunks(),
                       _content_column(table, strict=False)).to_pylist()
    assert whole == want
    return want


def _mixed_table() -> pa.Table:
    """Sealed and pleach rows in one table, some payloads NULL, uniform and all-null
    columns in places: every branch of the column-wise content builder."""
    t = _sealed_table().slice(0, 600)
    src = t.column("source").combine_chunks().cast(pa.string()).to_pylist()
    src = [("pleach:x.jsonl" if (i // 50) % 2 else s) for i, s in enumerate(src)]
    payload = t.column("payload").combine_chunks().to_pylist()
    payload = [None if i % 97 == 5 else p for i, p in enumerate(payload)]
    t = t.set_column(t.schema.get_field_index("source"), "source",
                     pa.array(src).dictionary_encode())
    return t.set_column(t.schema.get_field_index("payload"), "payload",
                        pa.array(payload, pa.large_string()))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block=st.integers(1, 4_000), workers=st.integers(1, 3),
       start=st.integers(0, 2_000), length=st.integers(0, 1_000))
def test_pipelined_hashes_are_the_whole_table_hashes(block, workers, start, length):
    # a slice keeps the whole table's dictionaries: blocks then see dictionaries larger
    # than themselves, which _json_string_column and _formats decode first
    table = _sealed_table().slice(start, length)
    got = _verify_hashes(table, table.column("prev_hash").combine_chunks(),
                         block_rows=block, workers=workers).to_pylist()
    assert got == _reference(table)
    assert got == table.column("row_hash").to_pylist()  # and the stamped chain holds


@pytest.mark.parametrize("block", [1, 7, 50, 64, 600])
def test_pipelined_hashes_of_mixed_blocks(block):
    table = _mixed_table()
    got = _verify_hashes(table, table.column("prev_hash").combine_chunks(), block_rows=block)
    assert got.to_pylist() == _reference(table)


def test_pipelined_hashes_see_a_changed_row_in_any_block():
    table = _sealed_table()
    i = 2_345
    text = table.column("text").combine_chunks().to_pylist()
    text[i] = (text[i] or "") + "!"
    forged = table.set_column(table.schema.get_field_index("text"), "text",
                              pa.array(text, table.schema.field("text").type))
    got = _verify_hashes(forged, forged.column("prev_hash").combine_chunks(), block_rows=100)
    pairs = zip(got.to_pylist(), forged.column("row_hash").to_pylist(), strict=True)
    assert [j for j, (a, b) in enumerate(pairs) if a != b] == [i]


def test_pipelined_hashes_of_pleach_rows():
    import tempfile

    import replaykit as rk
    from replaykit.datasets import generate_pleach

    path = generate_pleach(Path(tempfile.mkdtemp()) / "log.jsonl", events=1_500, runs=7,
                           seed=3)
    table = rk.read_pleach(path, progress=False).table
    got = _verify_hashes(table, table.column("prev_hash").combine_chunks(), block_rows=97)
    assert got.to_pylist() == _reference(table)


# ----------------------------------------------------------------------- tool arguments

def _part(types: list[str], payloads: list[str]) -> _Part:
    n = len(types)
    return _Part(env=pa.table({"event_type": pa.array(types, _STR)}),
                 created_at=pa.nulls(n, _STR), payload=pa.array(payloads, pa.large_string()),
                 typed=pa.table({}), line=np.zeros(n, dtype=np.int64))


_scalar = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
_value = st.recursive(_scalar, lambda kids: st.one_of(
    st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=6), kids, max_size=4)),
    max_leaves=12)
_payload = st.one_of(
    st.fixed_dictionaries({"tool": st.text(max_size=5)}),
    st.fixed_dictionaries({"args": st.none()}),
    st.fixed_dictionaries({"tool": st.text(max_size=5), "args": _value}),
    st.builds(lambda v: {"args": json.dumps(v)}, _value),  # a string that holds JSON
)


@settings(max_examples=150, deadline=None)
@given(objs=st.lists(st.tuples(st.booleans(), _payload), max_size=10))
def test_tool_args_are_the_definition(objs):
    # orjson direct for most calls, loads() for 19-digit runs: either way the definition
    types = ["tool.called" if called else "tool.completed" for called, _ in objs]
    payloads = [json.dumps(o, ensure_ascii=bool(i % 2)) for i, (_, o) in enumerate(objs)]
    text, hashes = _tool_args(_part(types, payloads), {})
    for (called, o), t, h in zip(objs, text.to_pylist(), hashes.to_pylist(), strict=True):
        if not called or o.get("args") is None:
            assert t is None and h is None
        else:
            assert t == canonical_json(o["args"]) and h == args_hash(o["args"])


def test_tool_args_routes_long_integers_and_deep_nesting_to_the_row_loop():
    big = 123456789012345678901234567890  # orjson cannot hold it: the lossless decode does
    deep: Any = 1
    for _ in range(MAX_DEPTH // 2 + 5):
        deep = [deep]
    types = ["tool.called", "model.completed", "tool.called", "tool.called", "tool.called"]
    payloads = [json.dumps({"args": {"b": 1, "a": big}}), json.dumps({"text": "hi"}),
                json.dumps({"args": {"z": [1, 2], "y": "é"}}), json.dumps({"args": deep}),
                json.dumps({"args": "not json"})]
    text, hashes = _tool_args(_part(types, payloads), {})
    assert text.to_pylist() == [
        '{"a":123456789012345678901234567890,"b":1}', None, '{"y":"é","z":[1,2]}',
        canonical_json(deep), '"not json"']
    assert hashes.to_pylist()[0] == args_hash({"a": big, "b": 1})
    assert hashes.to_pylist()[1] is None
    assert hashes.to_pylist()[4] == args_hash("not json")


@pytest.mark.parametrize("payload", ["[1, 2]", "1", '"args"', "null", "[]"])
def test_tool_args_of_a_payload_that_is_not_an_object_are_none(payload):
    # only a tampered table holds such a payload (the loader refuses it): it has no
    # arguments, so the derived check reports the row instead of raising AttributeError
    text, hashes = _tool_args(_part(["tool.called", "tool.called"],
                                    [payload, json.dumps({"args": {"b": 1, "a": 2}})]), {})
    assert text.to_pylist() == [None, '{"a":2,"b":1}']
    assert hashes.to_pylist()[0] is None and hashes.to_pylist()[1] is not None


@pytest.mark.parametrize("block", [1, 7, 64])
def test_stamp_chain_in_blocks_is_the_one_block_chain(block, monkeypatch):
    import replaykit.integrity.chain as integrity

    log = make_log(300, n_runs=4, seed=5)
    whole = stamp_chain(log).table
    monkeypatch.setattr(integrity, "_HASH_BLOCK_ROWS", block)
    blocked = stamp_chain(log).table
    for c in ("prev_hash", "row_hash"):
        assert blocked.column(c).to_pylist() == whole.column(c).to_pylist()
    # and the chain is the definition: each row's hash over its prev and row_content
    rows = blocked.to_pylist()
    assert all(r["row_hash"] == hashlib.sha256(r["prev_hash"].encode() + row_content(r))
               .hexdigest() for r in rows)
    starts = [i == 0 or (r["tenant_id"], r["run_id"]) != (rows[i - 1]["tenant_id"],
                                                         rows[i - 1]["run_id"])
              for i, r in enumerate(rows)]
    assert all(r["prev_hash"] == ("0" * 64 if s else rows[i - 1]["row_hash"])
               for i, (r, s) in enumerate(zip(rows, starts, strict=True)))


@pytest.mark.parametrize("enabled", [True, False])
def test_tool_args_pause_the_collector_and_restore_it(enabled, monkeypatch):
    import gc

    import replaykit.io.pleach._derive as derive

    monkeypatch.setenv("REPLAYKIT_NATIVE", "0")  # the reference loop (the core has no loop)
    seen: list[bool] = []
    real = derive.canonical_json

    def spy(value: Any) -> str:
        seen.append(gc.isenabled())
        return real(value)

    monkeypatch.setattr(derive, "canonical_json", spy)
    big = 12345678901234567890123  # takes loads()/canonical_json(), where the spy sits
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        text, _ = _tool_args(_part(["tool.called"], [json.dumps({"args": [big]})]), {})
        assert text.to_pylist() == [f"[{big}]"]
        assert seen == [False] and gc.isenabled() is enabled
        # a payload that is not an object has no arguments; the collector is restored
        text, _ = _tool_args(_part(["tool.called"], ["[1, 2]"]), {})
        assert text.to_pylist() == [None]
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
