"""EventLog conveniences a data scientist expects (issue 19): head, len, positions, DataFrame
views of the side tables, warnings for absent types, kinds= in read_parquet, snake_case
header columns, header times for runs without event times, polars and DuckDB interop."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit.errors import MissingExtraError


@pytest.fixture(scope="module")
def pleach(data_dir: Path) -> rk.EventLog:
    return rk.read_pleach(data_dir / "pleach", progress=False)


@pytest.fixture(scope="module")
def toh(data_dir: Path) -> rk.EventLog:
    return rk.read_toh(data_dir / "toh", owner="demo", progress=False)


# ------------------------------------------------------------------------------ positions
def test_head_is_the_first_events_as_a_frame(pleach):
    h = pleach.head()
    assert isinstance(h, pd.DataFrame) and len(h) == 5
    # the same rows and values; the categories are only the head's own (issue 30)
    assert h.astype(object).equals(pleach.events_df().head(5).astype(object))
    assert len(pleach.head(0)) == 0 and len(pleach.head(10**9)) == len(pleach)


@settings(max_examples=60, deadline=None)
@given(start=st.integers(-500, 500) | st.none(), stop=st.integers(-500, 500) | st.none(),
       step=st.sampled_from([None, 1, 2, 3, -1, -2]))
def test_slicing_matches_list_slicing(pleach_log, start, stop, step):
    sl = slice(start, stop, step)
    expected = list(range(len(pleach_log)))[sl]
    sub = pleach_log[sl]
    assert isinstance(sub, rk.EventLog) and len(sub) == len(expected)
    keys = list(zip(pleach_log.table.column("run_id").to_pylist(),
                    pleach_log.table.column("seq").to_pylist(), strict=True))
    got = list(zip(sub.table.column("run_id").to_pylist(), sub.table.column("seq").to_pylist(),
                   strict=True))
    assert got == [keys[i] for i in expected]
    # header rows follow the runs the slice holds, and no other
    assert set(sub.runs.column("run_id").to_pylist()) <= set(sub.run_ids)


@pytest.fixture(scope="module")
def pleach_log(data_dir: Path) -> rk.EventLog:
    return rk.read_pleach(data_dir / "pleach", progress=False)


def test_integer_positions(pleach):
    n = len(pleach)
    assert n == pleach.table.num_rows
    first, last = pleach[0], pleach[-1]
    assert first == pleach.table.slice(0, 1).to_pylist()[0]
    assert last == pleach.table.slice(n - 1, 1).to_pylist()[0]
    with pytest.raises(IndexError, match=f"outside this log of {n} events"):
        pleach[n]
    with pytest.raises(IndexError):
        pleach[-n - 1]
    with pytest.raises(TypeError, match="filter"):
        pleach["acme"]  # type: ignore[index]


# ------------------------------------------------------------------------------ side tables
def test_quarantine_df_is_a_frame_of_the_quarantine(tmp_path):
    bad = tmp_path / "session.jsonl"
    bad.write_text('{"type":"session","version":0,"id":"s1","createdAt":0,"cwd":"/"}\n'
                   '{"type":"turn/start","data":{"turn":1}}\n{"type":\n')
    log = rk.read_toh(bad, owner="t", errors="quarantine", progress=False)
    q = log.quarantine_df()
    assert isinstance(q, pd.DataFrame)
    assert q.columns.tolist() == log.quarantine.schema.names
    assert q["line"].tolist() == [3] and q["reason"].tolist() == ["bad_json"]
    assert q["source"].str.endswith("session.jsonl").all()


def test_extras_df_views_each_side_table(data_dir, pleach):
    isplay = rk.read_isplay(data_dir / "isplay", owner="demo", progress=False)
    cps = isplay.extras_df("checkpoints")
    assert isinstance(cps, pd.DataFrame)
    side = isplay.extras["checkpoints"]
    assert cps.columns.tolist() == side.schema.names and len(cps) == side.num_rows
    assert cps["checkpoint_id"].tolist() == side.column("checkpoint_id").to_pylist()
    assert "cp-intake" in set(cps["checkpoint_id"])
    counts = pleach.extras_df("pleach_counts")
    assert counts["input_rows"].sum() == len(pleach) + len(pleach.quarantine) + \
        counts["filtered_out"].sum()
    with pytest.raises(KeyError, match="it has: pleach_counts"):
        pleach.extras_df("checkpoints")


# ------------------------------------------------------------------------------ filters
def test_filter_with_an_absent_type_warns_with_the_types_present(toh):
    with pytest.warns(UserWarning, match="'tool.called' not in this log") as rec:
        out = toh.filter(types=["tool.called", "tool/call"])
    msg = str(rec[0].message)
    assert "tool/call" in msg and "session" in msg  # the log's own spelling is listed
    assert len(out) == len(toh.filter(types="tool/call"))
    with pytest.warns(UserWarning, match="kinds"):
        toh.filter(kinds="tool_calls")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        toh.filter(types="tool/call", kinds=["tool_call"])  # all present: silent


def test_read_parquet_takes_kinds_like_filter(pleach, tmp_path):
    ds = pleach.to_parquet(tmp_path / "ds")
    for kinds in ("tool_call", ["tool_call", "model_response"]):
        got = rk.read_parquet(ds, kinds=kinds)
        want = pleach.filter(kinds=kinds)
        assert len(got) == len(want) > 0
        assert got.table.column("seq").to_pylist() == want.table.column("seq").to_pylist()
    both = rk.read_parquet(ds, tenant_id="acme", kinds="tool_call")
    assert len(both) == len(pleach.filter(tenant_id="acme", kinds="tool_call"))


# ------------------------------------------------------------------------------ runs_df
def test_runs_df_header_attributes_are_snake_case(toh):
    runs = toh.runs_df().set_index("run_id")
    assert runs.loc["7d0c1e2a-0000-4000-8000-00000000c002", "seed_length"] == 13
    assert "parent_session" in runs.columns
    assert not [c for c in runs.columns if any(ch.isupper() for ch in c)]


def test_snake_case_never_shadows_a_computed_column():
    from replaykit.eventlog.log import _expand_attrs, _snake

    assert [_snake(k) for k in ("delegationDepth", "seedLength", "parentSession", "cwd",
                                "already_snake", "HTTPCode")] == \
        ["delegation_depth", "seed_length", "parent_session", "cwd", "already_snake",
         "httpcode"]
    frame = _expand_attrs(pd.Series(['{"events": 3, "runId": "x"}']), ["events"])
    assert frame.columns.tolist() == ["attr_events", "run_id"]


def test_integer_header_attributes_stay_integers_where_some_runs_lack_them(toh):
    """Issue 31 item 10: a count present in some headers only was float64 (13.0, NaN)."""
    from replaykit.eventlog.log import _expand_attrs

    runs = toh.runs_df()
    for col in ("seed_length", "delegation_depth", "version"):
        assert pd.api.types.is_integer_dtype(runs[col]), col
    assert str(runs["seed_length"].dtype) == "Int64"  # present in one header only
    assert runs["seed_length"].isna().any() and 13 in runs["seed_length"].dropna().tolist()
    frame = _expand_attrs(pd.Series(['{"n": 3, "t": 0.5, "w": 1.0}', '{"t": 2}', "{}"]))
    assert str(frame["n"].dtype) == "Int64" and frame["n"].tolist()[0] == 3
    assert frame["t"].dtype == "float64"  # a JSON float anywhere: the column stays float
    assert frame["w"].dtype == "float64"  # 1.0 is written as a float: kept as one


def test_toh_runs_without_event_times_take_the_header_created_at(toh):
    assert toh.table.column("ts").null_count == len(toh)  # toh events carry no time
    runs = toh.runs_df()
    assert runs["first_ts"].notna().all()
    assert (runs["first_ts"] == runs["created_at"]).all()
    # the events carry no time of their own: the duration is unknown, not zero (issue 31)
    assert runs["last_ts"].isna().all()


def test_runs_with_event_times_keep_them(pleach):
    runs = pleach.runs_df()
    ts = pleach.events_df().groupby(["tenant_id", "run_id"], observed=True)["ts"].min()
    got = runs.set_index(["tenant_id", "run_id"])["first_ts"]
    assert ts.notna().all() and got.reindex(ts.index).tolist() == ts.tolist()


# ------------------------------------------------------------------------------ interop
def test_to_polars_shares_the_events(pleach):
    pl = pytest.importorskip("polars")
    df = pleach.to_polars()
    assert isinstance(df, pl.DataFrame)
    assert df.height == len(pleach) and df.columns == pleach.table.schema.names
    assert df["seq"].to_list() == pleach.table.column("seq").to_pylist()
    assert df.filter(pl.col("kind") == "tool_call").height == \
        len(pleach.filter(kinds="tool_call"))
    # no copy: the numeric columns are the log's own Arrow buffers
    for name in ("seq", "input_tokens"):
        col = pleach.table.column(name)
        assert col.num_chunks == 1
        assert df[name].to_arrow().buffers()[1].address == col.chunk(0).buffers()[1].address


def test_to_duckdb_is_a_relation_over_the_arrow_table(pleach):
    duckdb = pytest.importorskip("duckdb")
    rel = pleach.to_duckdb()
    got = rel.query("events", "select kind, count(*) as n from events group by kind "
                    "order by kind").fetchall()
    want = pleach.events_df().groupby("kind", observed=True).size().sort_index()
    assert got == [(str(k), int(v)) for k, v in want.items()]
    con = duckdb.connect()
    assert pleach.to_duckdb(con).aggregate("count(*)").fetchall() == [(len(pleach),)]


@pytest.mark.parametrize("module,method", [("polars", "to_polars"), ("duckdb", "to_duckdb")])
def test_interop_without_the_extra_raises_missing_extra(pleach, monkeypatch, module, method):
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    with pytest.raises(MissingExtraError, match=r'replaykit\[frames\]'):
        getattr(pleach, method)()
