"""Text that is not UTF-8 in stored data (issue 42, red-team finding 14), closed at its class.

Arrow does not check that string columns hold UTF-8 when it reads Parquet or takes a table
from a caller; Python does, on the first value it converts (a raw UnicodeDecodeError or
pyarrow.ArrowException far from the file). Every storage boundary checks its string
columns, dictionary ones included: the events files of a dataset (read_parquet, the
partition-file reader), its ``_runs.parquet`` and ``_quarantine.parquet`` side files, an
EventLog built from an Arrow table (events and headers), verify_chain of a raw table, and
read_sql (SQLite keeps any bytes as TEXT). Each reports or quarantines the rows, with the
bytes shown escaped, on the native and the reference (REPLAYKIT_NATIVE=0) paths. The row
locator is checked against Python's own decoder (Hypothesis).
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _chainlogs import make_log
from hypothesis import given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit import EventLog, LoadError, SchemaError
from replaykit.eventlog.log import RUNS_SCHEMA
from replaykit.schema import EVENTS_SCHEMA, escape_invalid_utf8, invalid_utf8

BAD = b"\xff\xfe"  # never in UTF-8


@pytest.fixture(params=["native", "reference"])
def path_kind(request, monkeypatch):
    if request.param == "reference":
        monkeypatch.setenv("REPLAYKIT_NATIVE", "0")
    else:
        monkeypatch.delenv("REPLAYKIT_NATIVE", raising=False)
    return request.param


def _string_columns(schema: pa.Schema) -> list[str]:
    def is_text(t: pa.DataType) -> bool:
        t = t.value_type if pa.types.is_dictionary(t) else t
        return pa.types.is_string(t) or pa.types.is_large_string(t)

    return [f.name for f in schema if is_text(f.type)]


def _spoil(table: pa.Table, column: str, rows: list[int]) -> pa.Table:
    """``table`` with BAD put in front of ``column``'s value at ``rows`` (for a dictionary
    column: in front of those rows' dictionary entries), with no validation."""
    i = table.schema.get_field_index(column)
    col = table.column(i).combine_chunks()
    is_dict = pa.types.is_dictionary(col.type)
    base = col.dictionary if is_dict else col
    big = pa.types.is_large_string(base.type)
    binary = pa.large_binary() if big else pa.binary()
    values = base.cast(binary).to_pylist()
    valid = np.flatnonzero(np.asarray(col.is_valid()))
    if is_dict and not len(valid):  # an all-null column: one new entry for those rows
        idx = col.indices.to_pylist()
        for r in rows:
            idx[r] = len(values)
        values.append(b"")
        col = pa.DictionaryArray.from_arrays(pa.array(idx, pa.int32()),
                                             pa.array(values, binary).view(base.type))
        valid = np.asarray(rows)
    if is_dict and len(valid):  # a null row has no entry: the nearest row that has one
        rows = [int(valid[min(np.searchsorted(valid, r), len(valid) - 1)]) for r in rows]
    targets = sorted({col.indices[r].as_py() for r in rows}) if is_dict else rows
    for t in targets:
        values[t] = BAD + (values[t] or b"x")
    spoiled = pa.array(values, binary).view(base.type)
    if is_dict:
        spoiled = pa.DictionaryArray.from_arrays(col.indices, spoiled)
    return table.set_column(i, table.schema.field(i), spoiled)


def _not_utf8_rows(table: pa.Table, column: str) -> list[int]:
    """An independent reading: the rows whose bytes Python's decoder refuses."""
    col = table.column(column).combine_chunks()
    if pa.types.is_dictionary(col.type):
        col = col.dictionary.take(col.indices)
    binary = pa.large_binary() if pa.types.is_large_string(col.type) else pa.binary()
    out = []
    for i, v in enumerate(col.view(binary).to_pylist()):
        if v is None:
            continue
        try:
            v.decode("utf-8")
        except UnicodeDecodeError:
            out.append(i)
    return out


def _printable(df) -> str:
    """The frame as text and as CSV (what a user does with it): both must work."""
    text = df.to_string()
    df.to_csv()
    text.encode("utf-8")
    return text


@pytest.fixture(scope="module")
def chained() -> EventLog:
    return rk.stamp_chain(make_log(60, n_runs=4, odd_ids=False))


# ------------------------------------------------------------------ the row locator


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=12),
                          st.text(max_size=6).map(lambda s: s.encode("utf-8"))), max_size=30),
       st.sampled_from(["string", "large_string", "dictionary"]), st.integers(0, 5))
def test_the_row_locator_agrees_with_pythons_decoder(values, kind, cut):
    big = kind == "large_string"
    arr = pa.array(values, pa.large_binary() if big else pa.binary()).view(
        pa.large_string() if big else pa.string())
    if kind == "dictionary":
        idx = pa.array([None if v is None else i for i, v in enumerate(values)], pa.int32())
        arr = pa.DictionaryArray.from_arrays(idx, arr)
    arr = arr.slice(min(cut, len(values)))
    expected = []
    for i, v in enumerate(values[min(cut, len(values)):]):
        if v is not None:
            try:
                v.decode("utf-8")
            except UnicodeDecodeError:
                expected.append(i)
    assert invalid_utf8(arr).tolist() == expected
    assert invalid_utf8(pa.chunked_array([arr, arr])).tolist() == (
        expected + [len(arr) + i for i in expected])
    fixed = escape_invalid_utf8(arr)
    fixed.validate(full=True)
    got = fixed.to_pylist()
    for i, v in enumerate(values[min(cut, len(values)):]):
        want = None if v is None else v.decode("utf-8", "backslashreplace")
        assert got[i] == want


# ------------------------------------------------------------------ EventLog from a table

_EVENT_TEXT = _string_columns(EVENTS_SCHEMA)


@pytest.mark.parametrize("column", _EVENT_TEXT)
def test_an_eventlog_refuses_text_that_is_not_utf8(chained, column):
    t = chained.table
    bad = _spoil(t, column, [t.num_rows - 1])
    rows = _not_utf8_rows(bad, column)
    assert rows
    with pytest.raises(SchemaError) as info:
        EventLog(bad)
    msg = str(info.value)
    assert f"column {column!r} holds {len(rows)} value(s) that are not UTF-8" in msg
    assert "\\xff\\xfe" in msg and "\\\\x" not in msg
    msg.encode("utf-8")


@pytest.mark.parametrize("column", _string_columns(RUNS_SCHEMA))
def test_an_eventlog_refuses_header_text_that_is_not_utf8(chained, column):
    runs = pa.table({"tenant_id": ["acme"], "run_id": ["run-00000"], "parent_run_id": ["p"],
                     "format": ["gen"], "source": ["s"], "created_at": [None],
                     "attrs": ['{"a": 1}']}).cast(RUNS_SCHEMA)
    with pytest.raises(SchemaError, match=f"runs column {column!r}.*not UTF-8"):
        EventLog(chained.table, runs=_spoil(runs, column, [0]))


def test_a_quarantine_passed_in_is_shown_escaped(chained):
    q = rk.schema.quarantine_table([{"source": "s", "reason": "bad_json", "message": "m",
                                     "raw": "r", "tenant_id": "acme", "run_id": "x"}])
    log = EventLog(chained.table, quarantine=_spoil(_spoil(q, "raw", [0]), "run_id", [0]))
    assert log.quarantine.column("raw").to_pylist() == ["\\xff\\xfer"]
    assert "\\xff\\xfex" in _printable(log.quarantine_df())


# ------------------------------------------------------------------ verify_chain of a table


@pytest.mark.parametrize("column", _EVENT_TEXT)
def test_verify_chain_of_a_table_reports_text_that_is_not_utf8(chained, column, path_kind):
    t = chained.table
    row = t.num_rows - 1
    bad = _spoil(t, column, [row])
    rows = _not_utf8_rows(bad, column)
    problems = verify_chain = rk.verify_chain(bad)
    text = _printable(verify_chain)
    mal = problems[problems["kind"] == "malformed_value"]
    assert len(mal) == len(rows)
    assert set(mal["expected"]) == {f"{column}: UTF-8 text"}
    assert all("\\xff\\xfe" in f for f in mal["found"])
    assert "\\xff\\xfe" in text
    # the other runs' chains are still checked: only spoiled rows have problems
    spoiled_keys = {(bad.column("seq")[r].as_py()) for r in rows}
    assert set(problems["seq"].dropna().astype(int)) <= spoiled_keys | {
        int(s) + 1 for s in spoiled_keys}


# ------------------------------------------------------------------ Parquet datasets


def _dataset(tmp: Path, log: EventLog) -> Path:
    root = tmp / "ds"
    shutil.rmtree(root, ignore_errors=True)
    log.to_parquet(root)
    return root


def _events_file(root: Path, tenant: str = "acme") -> Path:
    return sorted((root / f"tenant_id={tenant}").glob("part-*.parquet"))[0]


def _rewrite(path: Path, column: str, rows: list[int]) -> list[int]:
    """Spoil ``column`` at ``rows`` of a Parquet file in place (its footer kept); returns the
    rows whose text is now not UTF-8 (an independent reading)."""
    f = pq.ParquetFile(path)
    t = f.read()
    meta = f.schema_arrow.metadata
    bad = _spoil(t, column, rows)
    pq.write_table(bad.replace_schema_metadata(meta), path)
    return _not_utf8_rows(bad, column)


_STORED_TEXT = [c for c in _EVENT_TEXT if c != "tenant_id"]  # the folder names the tenant


@pytest.mark.parametrize("tenant_filter", [None, "acme"])
@pytest.mark.parametrize("column", _STORED_TEXT)
def test_read_parquet_quarantines_event_rows_that_are_not_utf8(tmp_path, chained, column,
                                                                tenant_filter, path_kind):
    root = _dataset(tmp_path, chained)
    f = _events_file(root)
    n_file = pq.read_metadata(f).num_rows
    spoiled = _rewrite(f, column, [0, n_file - 1])
    assert spoiled
    with pytest.raises(LoadError) as info:
        rk.read_parquet(root, tenant_id=tenant_filter)
    err = info.value
    assert (err.reason, err.field, err.source) == ("malformed_value", column, str(f))
    assert "\\xff\\xfe" in str(err)
    log = rk.read_parquet(root, tenant_id=tenant_filter, errors="quarantine")
    want = len(chained.filter(tenant_id=tenant_filter)) if tenant_filter else len(chained)
    assert len(log) == want - len(spoiled)
    q = log.quarantine_df()
    mal = q[q["reason"] == "malformed_value"]
    assert len(mal) == len(spoiled)
    assert set(mal["field"]) == {column}
    assert set(mal["tenant_id"]) == {"acme"}
    assert all("\\xff\\xfe" in m for m in mal["message"])
    _printable(q)
    _printable(log.runs_df())
    log.table.to_pandas()  # every value converts
    problems = rk.verify_chain(log)
    assert "malformed_value" in set(problems["kind"])
    _printable(problems)


def test_read_parquet_quarantines_header_rows_that_are_not_utf8(tmp_path, chained):
    root = _dataset(tmp_path, chained)
    runs_file = root / "tenant_id=acme" / "_runs.parquet"
    runs = pa.table({"tenant_id": ["acme", "acme"], "run_id": ["run-00000", "run-00002"],
                     "parent_run_id": [None, None], "format": ["gen", "gen"],
                     "source": ["a", "b"], "created_at": [None, None],
                     "attrs": ['{"k": 1}', '{"k": 2}']}).cast(RUNS_SCHEMA)
    for column in _string_columns(RUNS_SCHEMA):
        bad = _spoil(runs, column, [1])
        pq.write_table(bad, runs_file)
        with pytest.raises(LoadError) as info:
            rk.read_parquet(root)
        # a tenant id that is not the folder's (whatever its bytes) is another tenant's row
        reason = "partition_mismatch" if column == "tenant_id" else "malformed_value"
        assert (info.value.reason, info.value.field) == (reason, column)
        assert str(runs_file) in str(info.value)
        str(info.value).encode("utf-8")
        log = rk.read_parquet(root, tenant_id="acme", errors="quarantine")
        assert log.runs.column("run_id").to_pylist() == ["run-00000"]
        q = log.quarantine_df()
        mal = q[q["reason"] == reason]
        assert mal["field"].tolist() == [column]
        assert mal["tenant_id"].tolist() == ["acme"]
        _printable(q)
        _printable(log.runs_df())


def test_read_parquet_shows_a_side_quarantine_that_is_not_utf8_escaped(tmp_path, chained):
    root = _dataset(tmp_path, chained)
    qfile = root / "tenant_id=acme" / "_quarantine.parquet"
    q = rk.schema.quarantine_table([{"source": "s", "reason": "bad_json", "message": "m",
                                     "raw": "r", "tenant_id": "acme", "run_id": "x"}])
    pq.write_table(_spoil(_spoil(q, "raw", [0]), "message", [0]), qfile)
    log = rk.read_parquet(root, tenant_id="acme", errors="quarantine")
    rows = log.quarantine_df()
    assert rows["raw"].tolist() == ["\\xff\\xfer"]
    assert rows["message"].tolist() == ["\\xff\\xfem"]
    _printable(rows)


def test_a_file_of_another_tenant_with_bad_text_is_no_tenants(tmp_path, chained):
    """Rows of a planted file (another tenant's footer) are never the folder's, whatever
    else is wrong with them."""
    root = _dataset(tmp_path, chained)
    src = _events_file(root, "globex")
    planted = root / "tenant_id=acme" / "part-planted.parquet"
    shutil.copy(src, planted)
    spoiled = _rewrite(planted, "run_id", [0])
    log = rk.read_parquet(root, errors="quarantine")
    q = log.quarantine_df()
    mal = q[(q["reason"] == "malformed_value") & (q["source"] == str(planted))]
    assert len(mal) == len(spoiled) and mal["tenant_id"].isna().all()
    acme = rk.read_parquet(root, tenant_id="acme", errors="quarantine").quarantine_df()
    assert not (acme["source"] == str(planted)).any() or acme.loc[
        acme["source"] == str(planted), "raw"].isna().all()


# ------------------------------------------------------------------ SQLite (read_sql)

_SQL_TEXT = ["chat_id", "event_type", "payload", "prev_hash", "row_hash", "kind", "tool_name",
             "text", "source", "finish", "ref_id"]


@pytest.mark.parametrize("column", _SQL_TEXT)
def test_read_sql_quarantines_text_that_is_not_utf8(tmp_path, chained, column, path_kind):
    pytest.importorskip("adbc_driver_sqlite")
    uri = f"sqlite:///{tmp_path / 'db.sqlite'}"
    acme = chained.filter(tenant_id="acme")
    rk.sql.write_sql(acme, uri)
    con = sqlite3.connect(tmp_path / "db.sqlite")
    rowid = con.execute("SELECT min(rowid) FROM harness_event_log").fetchone()[0]
    con.execute(f'UPDATE harness_event_log SET "{column}" = CAST(x\'fffe41\' AS TEXT) '
                "WHERE rowid = ?", (rowid,))
    con.commit()
    con.close()
    with pytest.raises(LoadError) as info:
        rk.sql.read_sql(uri, tenant_id="acme")
    assert info.value.reason == "malformed_value"
    back = rk.sql.read_sql(uri, tenant_id="acme", errors="quarantine")
    assert len(back) == len(acme) - 1
    assert back.quarantine.column("reason").to_pylist() == ["malformed_value"]
    _printable(back.quarantine_df())
    _printable(rk.verify_chain(back))
    assert np.array_equal(invalid_utf8(back.quarantine.column("raw")), [])
