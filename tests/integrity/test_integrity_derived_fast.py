"""The derived-column check's shortcuts (issue 14): verify_chain flags exactly the cells a
straightforward cell-by-cell comparison with ``derive_columns`` flags; ``text`` compared
source by source agrees with comparing the built column."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit.datasets import generate_pleach
from replaykit.integrity.derived import _text_mismatch
from replaykit.integrity.verify import verify_chain
from replaykit.io.pleach import derive_columns


@functools.cache
def _log() -> rk.EventLog:
    path = generate_pleach(Path(tempfile.mkdtemp()) / "log.jsonl", events=500, runs=5,
                           tenants=("acme",), seed=11)
    return rk.read_pleach(path, progress=False)


# parent_run_id is left out: a stored parent outside the checked rows is not checkable by
# design (tests/integrity/test_integrity_sealed.py covers it); every other derived column is here
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


# ----------------------------------------------------------------- ref_id / event_id by type

_REF = {"model.requested": "call_id", "model.completed": "call_id", "tool.called": "call_id",
        "tool.completed": "call_id", "interrupt.raised": "interrupt_id",
        "interrupt.resolved": "interrupt_id", "subagent.spawned": "subagent_id",
        "subagent.completed": "subagent_id", "turn.started": "message_id",
        "turn.completed": "message_id"}
_EVENT = {"message.user": "message_id", "checkpoint.created": "checkpoint_id",
          "export.created": "export_id", "user_card.shown": "card_id"}
_ID_FIELDS = ("call_id", "interrupt_id", "subagent_id", "message_id", "checkpoint_id",
              "export_id", "card_id")


@given(rows=st.lists(st.tuples(
    st.sampled_from([*_REF, *_EVENT, "error.raised", "other.thing", ""]),
    st.dictionaries(st.sampled_from(_ID_FIELDS), st.text(max_size=3), max_size=4)),
    max_size=25))
@settings(max_examples=100, deadline=None)
def test_ref_and_event_ids_come_from_the_field_their_type_names(rows):
    import json

    from replaykit.io.pleach._derive import _canonical_columns, _typed_payloads

    env = pa.table({"event_type": pa.array([r[0] for r in rows], pa.string())})
    payload = pa.array([json.dumps(r[1]) for r in rows], pa.large_string())
    typed = _typed_payloads(payload)
    cols = _canonical_columns(env, typed, pa.nulls(len(rows), pa.string()))
    assert pc.cast(cols["ref_id"], pa.string()).to_pylist() == [
        r[1].get(_REF[r[0]]) if r[0] in _REF else None for r in rows]
    assert pc.cast(cols["event_id"], pa.string()).to_pylist() == [
        r[1].get(_EVENT[r[0]]) if r[0] in _EVENT else None for r in rows]


@given(edits=st.lists(edit, max_size=6))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_split_check_gives_the_one_pass_problems_in_order(edits):
    # verify_chain runs the check in two parts (the arguments-free part on the parse
    # thread, args_hash and text after the arguments): the same rows, in the same order
    from replaykit.integrity.derived import _compare_derived, _derived_rest, _derived_side
    from replaykit.io.pleach._derive import _derived, table_tool_args

    t = _tampered(edits)
    split = _derived_rest(t, _derived_side(t), table_tool_args(t))
    derived, sources = _derived(t)  # one pass: every column derived, then compared
    whole = [p for _, p in _compare_derived(t, derived, sources, None)]
    assert [p.to_pylist() for p in split] == [p.to_pylist() for p in whole]


def test_short_switches_restores_the_interval_after_the_last_user():
    import sys
    import threading

    from replaykit.integrity.verify import _SWITCH_INTERVAL_S, _short_switches

    before = sys.getswitchinterval()
    inside: list[float] = []
    gate = threading.Barrier(2)

    def user() -> None:
        with _short_switches():
            gate.wait()
            inside.append(sys.getswitchinterval())
            gate.wait()

    threads = [threading.Thread(target=user) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert inside == [min(before, _SWITCH_INTERVAL_S)] * 2
    assert sys.getswitchinterval() == before
    try:
        with _short_switches():
            raise KeyError("x")
    except KeyError:
        pass
    assert sys.getswitchinterval() == before
