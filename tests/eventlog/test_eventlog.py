"""EventLog: selection, windows, concat, Parquet round trip, immutability, display."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import replaykit as rk
from replaykit.eventlog.log import RUNS_SCHEMA
from replaykit.schema import events_table


def _log() -> rk.EventLog:
    rows = [
        # tenant, run, seq, type, kind, ts(sec), turn, finish, is_error
        ("acme", "r1", 0, "turn.started", "turn_start", 10, 1, None, False),
        ("acme", "r1", 1, "tool.called", "tool_call", 11, 1, None, False),
        ("acme", "r1", 2, "tool.completed", "tool_result", 12, 1, None, True),
        ("acme", "r1", 3, "model.completed", "model_response", 13, 1, "stop", False),
        ("acme", "r2", 0, "turn.started", "turn_start", 20, 1, None, False),
        ("acme", "r2", 5, "model.completed", "model_response", 21, 1, "stop", False),
        ("beta", "r1", 0, "turn.started", "turn_start", 30, 1, None, False),
        ("beta", "r1", 1, "<script>", "other", 31, 2, None, False),
    ]
    cols = list(zip(*rows, strict=True))
    t = events_table(
        {
            "tenant_id": cols[0],
            "run_id": cols[1],
            "seq": cols[2],
            "type": cols[3],
            "kind": cols[4],
            "ts": pa.array([s * 1_000_000 for s in cols[5]], pa.timestamp("us", tz="UTC")),
            "turn": cols[6],
            "finish": cols[7],
            "is_error": cols[8],
            "payload": ["{}"] * len(rows),
            "source": ["demo:mem"] * len(rows),
        }
    )
    runs = pa.Table.from_pylist(
        [
            {"tenant_id": "acme", "run_id": "r1", "parent_run_id": None, "format": "demo",
             "source": "mem", "created_at": None, "attrs": '{"origin": "cli", "depth": 0}'},
        ],
        schema=RUNS_SCHEMA,
    )
    return rk.EventLog(t, runs=runs)


def test_runs_df_counts_per_run():
    df = _log().runs_df().set_index(["tenant_id", "run_id"])
    assert df.loc[("acme", "r1"), "events"] == 4
    assert df.loc[("acme", "r1"), "tool_calls"] == 1
    assert df.loc[("acme", "r1"), "errors"] == 1
    assert df.loc[("acme", "r1"), "model_calls"] == 1
    assert df.loc[("beta", "r1"), "turns"] == 2
    assert df.loc[("acme", "r1"), "origin"] == "cli"  # header attrs become columns
    assert str(df.loc[("acme", "r2"), "last_ts"]) == "1970-01-01 00:00:21+00:00"
    assert len(df) == 3


def test_filter_by_tenant_run_type_and_kind():
    log = _log()
    assert len(log.filter(tenant_id="beta")) == 2
    assert len(log.filter(tenant_id=["acme"], run_ids="r2")) == 2
    assert len(log.filter(types=["tool.called", "tool.completed"])) == 2
    assert len(log.filter(kinds="turn_start")) == 3
    assert len(log.filter(tenant_id="nobody")) == 0
    # run metadata follows the filter
    assert log.filter(tenant_id="beta").runs.num_rows == 0


def test_window_is_exclusive_lower_inclusive_upper():
    w = _log().filter(tenant_id="acme", run_ids="r1").window(0, 2)
    assert w.table.column("seq").to_pylist() == [1, 2]
    assert _log().window(up_to_seq=0).table.column("seq").to_pylist() == [0, 0, 0]


def test_run_requires_tenant_and_never_crosses_tenants():
    log = _log()
    with pytest.raises(rk.LoadError, match="reason=bad_tenant"):
        log.run("r1", tenant_id="")
    assert set(log.run("r1", tenant_id="beta").tenants) == {"beta"}
    with pytest.raises(KeyError, match="no run 'r2'"):
        log.run("r2", tenant_id="beta")


def test_methods_never_mutate_the_table():
    log = _log()
    table = log.table
    before = table.to_pylist()
    log.filter(tenant_id="acme").window(1, 2)
    log.runs_df()
    log.events_df()
    rk.concat([log.filter(tenant_id="acme"), log.filter(tenant_id="beta")])
    assert log.table is table
    assert log.table.to_pylist() == before


def test_concat_merges_and_rejects_duplicates():
    log = _log()
    both = rk.concat([log.filter(tenant_id="beta"), log.filter(tenant_id="acme")])
    # the same rows and types (each view's dictionaries hold only its own values, so the
    # merged dictionaries may list them in another order)
    assert both.table.schema == log.table.schema
    assert both.table.to_pylist() == log.table.to_pylist()
    with pytest.raises(rk.SchemaError, match="duplicate event"):
        rk.concat([log, log.filter(tenant_id="beta")])
    assert len(rk.concat([])) == 0


def test_parquet_round_trip_and_pushdown(tmp_path):
    log = _log()
    out = log.to_parquet(tmp_path / "ds")
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == [
        "tenant_id=acme",
        "tenant_id=beta",
    ]
    back = rk.read_parquet(out)
    assert back.table.equals(log.table)
    assert back.runs.num_rows == 1
    only = rk.read_parquet(out, tenant_id="beta")
    assert only.tenants == ["beta"] and len(only) == 2
    assert only.runs.num_rows == 0
    r2 = rk.read_parquet(out, tenant_id="acme", run_ids=["r2"], types="model.completed")
    assert r2.table.column("seq").to_pylist() == [5]
    timed = rk.read_parquet(out, since="1970-01-01T00:00:12Z", until="1970-01-01T00:00:21Z")
    assert sorted(timed.table.column("seq").to_pylist()) == [0, 2, 3, 5]
    # the same window as aware datetimes in another zone, naive (UTC) datetimes and text with
    # an offset: one meaning, no error
    plus2 = dt.timezone(dt.timedelta(hours=2))
    for since, until in [
        (dt.datetime(1970, 1, 1, 2, 0, 12, tzinfo=plus2), dt.datetime(1970, 1, 1, 2, 0, 21,
                                                                     tzinfo=plus2)),
        (dt.datetime(1970, 1, 1, 0, 0, 12), dt.datetime(1970, 1, 1, 0, 0, 21)),
        ("1970-01-01T02:00:12+02:00", "1970-01-01T02:00:21+02:00"),
    ]:
        same = rk.read_parquet(out, since=since, until=until)
        assert same.table.equals(timed.table), (since, until)
    with pytest.raises(FileExistsError):
        log.to_parquet(out)
    log.to_parquet(out, overwrite=True)
    with pytest.raises(FileNotFoundError):
        rk.read_parquet(tmp_path / "missing")


def test_repr_html_escapes_untrusted_values():
    html = _log()._repr_html_()
    assert "8 events" in html and "3 runs" in html
    assert "<script>" not in html
    assert "EventLog(8 events, 3 runs, 2 tenants" in repr(_log())


def test_events_df_uses_nullable_dtypes():
    df = _log().events_df()
    assert str(df["turn"].dtype) == "Int32"
    assert str(df["is_error"].dtype) == "boolean"
    assert df["input_tokens"].isna().all()
    assert pc.sum(_log().table.column("is_error")).as_py() == 1
