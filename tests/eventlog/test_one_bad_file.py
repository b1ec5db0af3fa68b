"""One bad file fails a tenant (issue 42, red-team finding 17), closed at its class.

A planted or damaged file in a tenant's folder of a Parquet dataset -- a canonical column of
the wrong type (a ``tenant_id`` of integers, a ``seq`` of text, ...), a column named twice,
bytes that are not Parquet, a cut footer, data that cannot be cast -- made
``read_parquet(ds, tenant_id=..., errors="quarantine")`` raise for the whole tenant. Now
that file alone is refused: ``bad_parquet`` naming the file (and the column) under
``errors="raise"``, one quarantine row of the folder's tenant under ``"quarantine"`` while
every other file of the tenant (and of every other tenant) reads.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _chainlogs import make_log

import replaykit as rk
from replaykit import LoadError


@pytest.fixture(scope="module")
def log():
    return make_log(60, n_runs=6, odd_ids=False)


def _events(root: Path, tenant: str) -> Path:
    return sorted((root / f"tenant_id={tenant}").glob("part-*.parquet"))[0]


def _typed(t: pa.Table, name: str, arr: pa.Array) -> pa.Table:
    if name in t.schema.names:
        i = t.schema.get_field_index(name)
        return t.set_column(i, name, arr)
    return t.add_column(0, name, arr)


def _plant(kind: str, good: Path, target: Path) -> str | None:
    """Write a bad file of ``kind`` at ``target`` (from the good file ``good``); returns the
    column the error should name (None: the file as a whole)."""
    t = pq.read_table(good)
    n = t.num_rows
    if kind == "tenant_id int64":
        pq.write_table(_typed(t, "tenant_id", pa.array([7] * n, pa.int64())), target)
        return "tenant_id"
    if kind == "seq text":
        pq.write_table(_typed(t, "seq", pa.array([str(i) for i in range(n)])), target)
        return "seq"
    if kind == "ts text":
        pq.write_table(_typed(t, "ts", pa.array(["yesterday"] * n)), target)
        return "ts"
    if kind == "payload int64":
        pq.write_table(_typed(t, "payload", pa.array(range(n), pa.int64())), target)
        return "payload"
    if kind == "is_error text":
        pq.write_table(_typed(t, "is_error", pa.array(["no"] * n)), target)
        return "is_error"
    if kind == "run_id struct":
        pq.write_table(_typed(t, "run_id", pa.array([{"a": 1}] * n)), target)
        return "run_id"
    if kind == "column twice":
        dup = pa.Table.from_arrays([*t.columns, t.column("seq")], names=[*t.schema.names, "seq"])
        pq.write_table(dup, target)
        return "seq"
    if kind == "turn out of int32":
        pq.write_table(_typed(t, "turn", pa.array([2**40] * n, pa.int64())), target)
        return None
    if kind == "not parquet":
        target.write_bytes(b"PAR1 this is not a parquet file at all PAR1")
        return None
    if kind == "cut footer":
        target.write_bytes(good.read_bytes()[:-20])
        return None
    raise AssertionError(kind)


KINDS = ["tenant_id int64", "seq text", "ts text", "payload int64", "is_error text",
         "run_id struct", "column twice", "turn out of int32", "not parquet", "cut footer"]


@pytest.mark.parametrize("kind", KINDS)
def test_one_bad_file_is_refused_alone(tmp_path, log, kind):
    root = tmp_path / "ds"
    log.to_parquet(root)
    planted = root / "tenant_id=acme" / "part-planted.parquet"
    field = _plant(kind, _events(root, "acme"), planted)
    acme = log.filter(tenant_id="acme")
    # raise: the error names the file (and the column), not the folder or the dataset
    with pytest.raises(LoadError) as info:
        rk.read_parquet(root, tenant_id="acme")
    err = info.value
    assert err.reason == "bad_parquet" and err.source == str(planted)
    if field is not None:
        assert err.field == field
    # quarantine: the tenant's other files read in full, one row names the planted file
    for tenant_filter in ("acme", None):
        back = rk.read_parquet(root, tenant_id=tenant_filter, errors="quarantine")
        want = acme if tenant_filter else log
        assert len(back) == len(want)
        assert sorted(back.table.column("payload").to_pylist()) == sorted(
            want.table.column("payload").to_pylist())
        q = back.quarantine_df()
        rows = q[q["source"] == str(planted)]
        assert rows["reason"].tolist() == ["bad_parquet"]
        assert rows["tenant_id"].tolist() == ["acme"]
        assert rows["raw"].isna().all()
        if field is not None:
            assert rows["field"].tolist() == [field]
    # another tenant never sees it
    globex = rk.read_parquet(root, tenant_id="globex", errors="quarantine")
    assert len(globex) == len(log.filter(tenant_id="globex"))
    assert not (globex.quarantine_df()["source"] == str(planted)).any()


def test_two_bad_files_and_good_ones_in_one_folder(tmp_path, log):
    root = tmp_path / "ds"
    log.to_parquet(root, partition_events=10)
    good = _events(root, "acme")
    for i, kind in enumerate(["tenant_id int64", "not parquet"]):
        _plant(kind, good, root / "tenant_id=acme" / f"part-bad{i}.parquet")
    back = rk.read_parquet(root, tenant_id="acme", errors="quarantine")
    assert len(back) == len(log.filter(tenant_id="acme"))
    q = back.quarantine_df()
    assert sorted(Path(s).name for s in q["source"]) == ["part-bad0.parquet",
                                                         "part-bad1.parquet"]


def test_to_parquet_docstring_says_what_the_files_hold(tmp_path, log):
    """Events files name their tenant in the footer, without a tenant_id column; side files
    keep the column (read independently with pyarrow)."""
    root = tmp_path / "ds"
    rk.EventLog(log.table, quarantine=rk.schema.quarantine_table(
        [{"source": "s", "reason": "r", "message": "m", "tenant_id": "acme"}])).to_parquet(root)
    doc = rk.EventLog.to_parquet.__doc__
    assert "no ``tenant_id`` column" in doc and "side files keep their ``tenant_id``" in doc
    for f in (root / "tenant_id=acme").glob("part-*.parquet"):
        schema = pq.read_schema(f)
        assert "tenant_id" not in schema.names
        assert schema.metadata[b"replaykit.tenant_id"] == b"acme"
    side = pq.read_table(root / "tenant_id=acme" / "_quarantine.parquet")
    assert side.column("tenant_id").to_pylist() == ["acme"]
    shutil.rmtree(root)


SIDE_KINDS = ["not parquet", "created_at text", "tenant_id int64", "other columns"]


@pytest.mark.parametrize("kind", SIDE_KINDS)
@pytest.mark.parametrize("side", ["_runs.parquet", "_quarantine.parquet"])
def test_one_bad_side_file_is_refused_alone(tmp_path, log, side, kind):
    """The side files of a tenant folder are files of the class too."""
    root = tmp_path / "ds"
    log.to_parquet(root)
    target = root / "tenant_id=acme" / side
    n = 2
    if kind == "not parquet":
        target.write_bytes(b"PAR1 garbage PAR1")
    elif kind == "created_at text":
        pq.write_table(pa.table({"tenant_id": ["acme"] * n, "run_id": ["r"] * n,
                                 "created_at": ["not a time"] * n, "source": ["x"] * n}),
                       target)
    elif kind == "tenant_id int64":
        pq.write_table(pa.table({"tenant_id": pa.array([1] * n, pa.int64()),
                                 "run_id": ["r"] * n}), target)
    else:
        pq.write_table(pa.table({"tenant_id": ["acme"] * n, "whatever": [1] * n}), target)
    with pytest.raises(LoadError) as info:
        rk.read_parquet(root, tenant_id="acme")
    assert info.value.reason in ("bad_parquet", "partition_mismatch")
    assert info.value.source == str(target)
    back = rk.read_parquet(root, tenant_id="acme", errors="quarantine")
    assert len(back) == len(log.filter(tenant_id="acme"))  # every event of the tenant
    q = back.quarantine_df()
    assert (q["source"] == str(target)).any()
    globex = rk.read_parquet(root, tenant_id="globex", errors="quarantine")
    assert not (globex.quarantine_df()["source"] == str(target)).any()
