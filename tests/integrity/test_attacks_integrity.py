"""Attacks on the evidence promise (docs/integrity.md): an edit of a derived column is never
"verified intact", whatever the storage does to the row's ``source`` (the column that says
whether a row hashes its derived columns or has them re-derived)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import replaykit as rk

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(scope="module")
def pleach_chained() -> tuple[pa.Table, rk.ChainManifest]:
    log = rk.stamp_chain(rk.read_pleach(DATA / "pleach" / "harness_event_log.jsonl",
                                        progress=False))
    table = log.table.slice(0, 400)
    return table, rk.chain_manifest(table)


def _set(table: pa.Table, name: str, values: list) -> pa.Table:
    i = table.schema.get_field_index(name)
    typ = table.schema.field(name).type
    if pa.types.is_dictionary(typ):
        arr = pa.array(values, typ.value_type).dictionary_encode()
    else:
        arr = pa.array(values, typ)
    return table.set_column(i, pa.field(name, arr.type), arr)


def _edit(value, column: str):
    if column == "is_error":
        return not value
    if column in ("input_tokens", "output_tokens", "turn"):
        return (value or 0) + 1
    return ("x" if value is None else value + "x")


@settings(max_examples=60, deadline=None)
@given(pick=st.data(), column=st.sampled_from(["tool_name", "is_error", "input_tokens",
                                               "output_tokens", "text", "kind", "turn"]),
       relabel=st.sampled_from(["keep", "null", "drop_column", "bare_format"]))
def test_a_derived_edit_is_caught_whatever_the_source_says(pleach_chained, pick, column,
                                                           relabel) -> None:
    """A raw table is checked row by row in the form its ``source`` names: a null source, or
    no source column, used to mean "six-key form" (the pleach hash) *without* the pleach
    re-derivation, so a pleach row whose derived column was edited and whose source was
    nulled (or dropped) verified intact. Every row now either hashes its derived columns or
    has them re-derived."""
    table, manifest = pleach_chained
    row = pick.draw(st.integers(0, table.num_rows - 1))
    values = table.column(column).to_pylist()
    values[row] = _edit(values[row], column)
    edited = _set(table, column, values)
    if relabel == "null":
        src = edited.column("source").to_pylist()
        src[row] = None
        edited = _set(edited, "source", src)
    elif relabel == "drop_column":
        edited = edited.drop_columns(["source"])
    elif relabel == "bare_format":
        src = edited.column("source").to_pylist()
        src[row] = "pleach"
        edited = _set(edited, "source", src)
    problems = rk.verify_chain(edited, expected_heads=manifest)
    assert not problems.empty, (row, column, relabel)


def test_unedited_rows_without_a_source_still_verify(pleach_chained) -> None:
    table, manifest = pleach_chained
    assert rk.verify_chain(table.drop_columns(["source"]), expected_heads=manifest).empty
    src = [None] * table.num_rows
    assert rk.verify_chain(_set(table, "source", src), expected_heads=manifest).empty


_REQUIRED = ["run_id", "seq", "type", "kind", "is_error", "inherited", "payload", "source"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from _chainlogs import make_log

    root = tmp_path_factory.mktemp("ds") / "ds"
    rk.stamp_chain(make_log(40, n_runs=2, odd_ids=False)).to_parquet(root)
    return root


@pytest.mark.parametrize("column", _REQUIRED)
def test_a_null_in_a_required_column_of_a_dataset_file_names_the_file(tmp_path, dataset,
                                                                      column) -> None:
    """Storage that nulls a value no replaykit dataset leaves null (seq, payload, source, ...)
    made read_parquet raise a SchemaError naming no file, even under errors="quarantine".
    It is a LoadError(bad_parquet) naming the file and the column; under quarantine the
    file's rows are quarantined and the rest of the dataset is read."""
    import shutil

    import pyarrow.parquet as pq

    from replaykit.errors import LoadError

    root = tmp_path / "ds"
    shutil.copytree(dataset, root)
    f = next((root / "tenant_id=acme").glob("part-*.parquet"))
    ft = pq.read_table(f)
    meta = ft.schema.metadata
    i = ft.schema.get_field_index(column)
    typ = ft.schema.field(column).type
    typ = typ.value_type if pa.types.is_dictionary(typ) else typ
    values = ft.column(column).to_pylist()
    values[1] = None
    ft = ft.set_column(i, pa.field(column, typ), pa.array(values, typ))
    pq.write_table(ft.replace_schema_metadata(meta), f)
    with pytest.raises(LoadError) as err:
        rk.read_parquet(root)
    assert err.value.reason == "bad_parquet" and err.value.field == column
    assert err.value.source == str(f) and err.value.fix
    log = rk.read_parquet(root, errors="quarantine")
    assert log.tenants == ["globex"]
    q = log.quarantine
    assert set(q.column("reason").to_pylist()) == {"bad_parquet"}
    assert set(q.column("source").to_pylist()) == {str(f)}
    own = rk.read_parquet(root, tenant_id="acme", errors="quarantine")
    assert len(own) == 0 and own.quarantine.num_rows == 1  # the report, not the raw rows
    assert own.quarantine.column("raw").to_pylist() == [None]
