"""Issue 14, item 8 for every format: the chain covers what the analysis reads.

Rows whose derived columns cannot be re-derived from ``type`` + ``payload`` (toh, isplay, otel,
inspect, replays, forks, synthetic rows: every format but pleach) hash them instead: a
``derived`` member in the row's canonical content (docs/integrity.md). A stored derived value
edited in a file or a database is then a ``hash_mismatch``; relabelling a row's ``source``
to or from pleach changes which form is hashed, so it breaks the row too.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit import EventLog
from replaykit.cli.verify import verify_chain_command
from replaykit.datasets import generate_pleach
from replaykit.integrity.chain import stamp_chain
from replaykit.integrity.content import SEALED_MEMBERS, _content_column, row_content, source_format
from replaykit.integrity.proofs import chain_proof, verify_proof
from replaykit.integrity.verify import verify_chain
from replaykit.schema import DERIVED_COLUMNS, EVENTS_SCHEMA, events_table

DATA = Path(__file__).resolve().parents[2] / "data"


@functools.cache
def sealed_log(fmt: str) -> EventLog:
    """A stamped log of a sealed format read from the bundled samples."""
    log = rk.read_events(DATA / fmt, owner="demo", progress=False)
    return stamp_chain(log, overwrite=True)


def _kinds(problems) -> dict[str, int]:
    return {k: int(v) for k, v in problems["kind"].value_counts().items()}


def _typ(col: pa.ChunkedArray) -> pa.DataType:
    return col.type.value_type if pa.types.is_dictionary(col.type) else col.type


def _forge(t: pa.Table, column: str, i: int):
    """A value for row ``i`` of ``column`` that differs from the stored one."""
    col = t.column(column)
    typ = _typ(col)
    old = pc.cast(col.combine_chunks(), typ)[i].as_py()
    if column == "kind":  # must stay one of KINDS
        return "other" if old != "other" else "session"
    if pa.types.is_boolean(typ):
        return not old
    if pa.types.is_integer(typ):
        return 7 if old is None else old + 1
    return "forged" if old != "forged" else "forged-2"


def _row_with(t: pa.Table, column: str) -> int:
    """A row whose ``column`` holds a value (else the first row)."""
    valid = np.flatnonzero(np.asarray(t.column(column).is_valid()))
    return int(valid[len(valid) // 2]) if len(valid) else 0


def _set_value(t: pa.Table, column: str, i: int, value) -> pa.Table:
    col = t.column(column).combine_chunks()
    typ = _typ(t.column(column))
    values = pc.cast(col, typ).to_pylist()
    values[i] = value
    arr = pa.array(values, typ)
    if pa.types.is_dictionary(col.type):
        arr = arr.dictionary_encode().cast(col.type)
    return t.set_column(t.schema.get_field_index(column), t.schema.field(column), arr)


def test_schema_and_pleach_agree_on_the_derived_columns():
    from replaykit.io.pleach import DERIVED_COLUMNS as PLEACH

    assert PLEACH == DERIVED_COLUMNS
    assert set(DERIVED_COLUMNS) <= set(EVENTS_SCHEMA.names)
    assert SEALED_MEMBERS == tuple(sorted((*DERIVED_COLUMNS, "format")))


@pytest.mark.parametrize("fmt", ["toh", "isplay", "claude_code", "codex", "langsmith",
                                 "langfuse", "phoenix"])
def test_untampered_sealed_formats_verify_after_parquet_and_sqlite(fmt, tmp_path):
    log = sealed_log(fmt)
    assert set(pc.unique(pc.cast(log.table.column("source"), pa.string())).to_pylist()) <= {
        s for s in pc.unique(pc.cast(log.table.column("source"), pa.string())).to_pylist()
        if source_format(s) == fmt}
    assert verify_chain(log).empty
    log.to_parquet(tmp_path / "ds")
    assert verify_chain(rk.read_parquet(tmp_path / "ds")).empty
    uri = f"sqlite:///{tmp_path / 'db.sqlite'}"
    rk.write_sql(log, uri)
    assert verify_chain(rk.read_sql(uri, tenant_id="demo")).empty


@pytest.mark.parametrize("column", DERIVED_COLUMNS)
@pytest.mark.parametrize("fmt", ["toh", "isplay"])
def test_edited_derived_value_of_a_sealed_format_breaks_the_row(fmt, column, tmp_path):
    log = sealed_log(fmt)
    t = log.table
    i = _row_with(t, column)
    forged = _set_value(t, column, i, _forge(t, column, i))
    EventLog(forged, runs=log.runs).to_parquet(tmp_path / "ds")
    p = verify_chain(rk.read_parquet(tmp_path / "ds"))
    assert _kinds(p) == {"hash_mismatch": 1}, p
    assert p.iloc[0]["seq"] == t.column("seq")[i].as_py()
    assert p.iloc[0]["run_id"] == pc.cast(t.column("run_id"), pa.string())[i].as_py()


@pytest.mark.parametrize("column", ["tool_name", "is_error", "text", "output_tokens", "kind"])
def test_edited_derived_value_in_sqlite_is_broken_in_the_cli(column, tmp_path, capsys):
    log = sealed_log("toh")
    db = tmp_path / "events.db"
    uri = f"sqlite:///{db}"
    rk.write_sql(log, uri)
    t = log.table
    i = _row_with(t, column)
    value = _forge(t, column, i)
    key = (pc.cast(t.column("run_id"), pa.string())[i].as_py(), t.column("seq")[i].as_py())
    with sqlite3.connect(db) as con:
        n = con.execute(
            f'UPDATE harness_event_log SET "{column}" = ? WHERE tenant_id = ? AND chat_id = ? '
            "AND sequence_number = ?",
            (int(value) if isinstance(value, bool) else value, "demo", *key),
        ).rowcount
    assert n == 1
    assert verify_chain_command([uri, "--tenant", "demo", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["problem_counts"] == {"hash_mismatch": 1}
    assert (report["problems"][0]["run_id"], report["problems"][0]["seq"]) == key


def _relabel(t: pa.Table, i: int, source: str) -> pa.Table:
    return _set_value(t, "source", i, source)


def test_relabelling_source_across_the_pleach_line_breaks_the_row(tmp_path):
    toh = sealed_log("toh")
    t = toh.table
    p = verify_chain(EventLog(_relabel(t, 3, "pleach:/x.jsonl"), runs=toh.runs))
    assert p["kind"].isin(["hash_mismatch", "derived_mismatch"]).all()
    assert "hash_mismatch" in set(p["kind"]) and set(p["seq"]) == {t.column("seq")[3].as_py()}
    path = generate_pleach(tmp_path / "g.jsonl", events=300, runs=3, seed=4)
    pl = rk.read_pleach(path, progress=False)
    assert verify_chain(pl).empty
    p = verify_chain(EventLog(_relabel(pl.table, 5, "toh:/x.jsonl"), runs=pl.runs))
    assert _kinds(p) == {"hash_mismatch": 1}
    # a relabel within a sealed format changes the hashed format member too
    p = verify_chain(EventLog(_relabel(t, 3, "isplay:/x.json"), runs=toh.runs))
    assert _kinds(p) == {"hash_mismatch": 1}
    # the path after the format is provenance, not hashed
    src = pc.cast(t.column("source"), pa.string())[3].as_py()
    assert verify_chain(EventLog(_relabel(t, 3, src + ".moved"), runs=toh.runs)).empty


def test_proof_of_a_sealed_row_carries_and_checks_its_derived_columns():
    log = sealed_log("toh")
    t = log.table
    run = pc.cast(t.column("run_id"), pa.string())[0].as_py()
    seqs = log.run(run, tenant_id="demo").table.column("seq").to_pylist()
    proof = chain_proof(log, run, seqs[0], tenant_id="demo", head_seq=seqs[min(5, len(seqs) - 1)])
    proof = json.loads(json.dumps(proof))
    assert proof["replaykit_chain_proof"] == 2
    assert set(proof["event"]["derived"]) == set(SEALED_MEMBERS)
    assert proof["event"]["derived"]["format"] == "toh"
    assert verify_proof(proof)
    forged = json.loads(json.dumps(proof))
    forged["event"]["derived"]["kind"] = _forge(t, "kind", 0)
    assert not verify_proof(forged)
    stripped = json.loads(json.dumps(proof))
    del stripped["path"][0]["derived"]
    assert not verify_proof(stripped)


def test_raw_table_without_the_derived_columns_is_refused():
    t = sealed_log("toh").table
    keep = ["tenant_id", "run_id", "seq", "ts", "type", "payload", "prev_hash", "row_hash",
            "source"]
    with pytest.raises(ValueError, match="derived columns"):
        verify_chain(t.select(keep))
    # without a source the rows cannot be sealed-format rows: the content form is checked
    p = verify_chain(t.select(keep[:-1]))
    assert _kinds(p) == {"hash_mismatch": t.num_rows}


# --------------------------------------------------------------------------- reference form

_FORMATS = st.sampled_from(["pleach:/a.jsonl", "pleach:sqlite:t", "toh:/s.jsonl", "isplay:b",
                            "otel:t.json", "inspect:e.eval", "replay:r1", "fork:r@3",
                            "synthetic:mem", "pleach"])
_TEXT = st.none() | st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_INT = st.none() | st.integers(-(2**40), 2**40)


@st.composite
def _rows(draw):
    n = draw(st.integers(1, 12))
    rows = []
    for s in range(n):
        rows.append({
            "tenant_id": "acme", "run_id": draw(st.sampled_from(["r1", "r2"])), "seq": s,
            "type": draw(st.sampled_from(["a", "tool.call", "é\"\\"])),
            "kind": draw(st.sampled_from(["other", "tool_call", "tool_result"])),
            "ts": draw(st.none() | st.integers(0, 2**45)),
            "payload": draw(st.sampled_from(['{}', '{"a": 1}', '{"t":"\\u00e9"}'])),
            "source": draw(_FORMATS),
            "tool_name": draw(_TEXT), "text": draw(_TEXT), "event_id": draw(_TEXT),
            "turn": draw(st.none() | st.integers(0, 2**20)),
            "input_tokens": draw(_INT), "is_error": draw(st.booleans()),
            "inherited": draw(st.booleans()),
        })
    return rows


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_rows())
def test_column_wise_content_is_the_reference_form(rows):
    cols = {k: [r[k] for r in rows] for k in rows[0]}
    cols["ts"] = pa.array(cols["ts"], pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    table = events_table(cols)
    got = [c.encode() for c in _content_column(table, strict=False).to_pylist()]
    want = [row_content(r) for r in table.to_pylist()]
    assert got == want
    for r, content in zip(table.to_pylist(), got, strict=True):
        sealed = source_format(r["source"]) != "pleach"
        assert content.startswith(b'{"derived":{') == sealed
        if sealed:
            member = json.loads(content)["derived"]
            assert set(member) == set(SEALED_MEMBERS)
            assert member["format"] == source_format(r["source"])
            assert member["tool_name"] == r["tool_name"]
            assert member["is_error"] is r["is_error"]


def test_content_bytes_built_in_blocks_ahead_are_the_same_bytes():
    from replaykit.integrity.chain import _blocks_ahead

    t = sealed_log("toh").table
    one = _content_column(t, strict=False)
    for size in (1, 3, t.num_rows // 2 + 1, t.num_rows):
        blocks = list(_blocks_ahead(t.num_rows, lambda s, k: _content_column(
            t.slice(s, k), strict=False), block_rows=size))
        assert [at for at, _ in blocks] == list(range(0, t.num_rows, size))
        two = pa.concat_arrays([b for _, b in blocks])
        assert two.equals(one) and len(two) == t.num_rows
