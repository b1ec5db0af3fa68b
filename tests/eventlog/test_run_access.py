"""Per-run access (issue 18): ``log.run`` slices at precomputed run offsets, ``iter_runs``
walks every run with its grain tables, and the column-wise ``runs_df`` / ``summary`` /
``_repr_html_`` give exactly what the group-by versions gave. The oracles below are the
previous implementations (filters and Arrow group-bys on the string columns)."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pandas.testing import assert_frame_equal

import replaykit as rk
from replaykit.eventlog._runs import RunKey
from replaykit.eventlog.log import RUN_STAT_COLUMNS, RUNS_SCHEMA, to_pandas
from replaykit.schema import QUARANTINE_SCHEMA, events_table
from replaykit.tenancy import scope_extras, scope_side_table

TENANTS = ["acme", "Acme", "beta", "\u00e9t\u00e9", "z z"]
RUNS = ["r1", "r10", "r2", "R1", "\u00e9"]
KINDS = ["turn_start", "tool_call", "tool_result", "model_response", "model_chunk", "other"]


@st.composite
def logs(draw: Any) -> rk.EventLog:
    """Random multi-tenant logs: interleaved tenants and runs (the same run id under several
    tenants), nulls in ts / turn / parent / finish, turns going back, header-only runs,
    quarantine rows of known and unknown tenants, extras with and without run columns, and
    sometimes a table of two chunks with different dictionaries."""
    n = draw(st.integers(0, 30))
    rows = []
    seqs: dict[tuple[str, str], int] = {}
    for _ in range(n):
        key = (draw(st.sampled_from(TENANTS)), draw(st.sampled_from(RUNS)))
        seqs[key] = seqs.get(key, -1) + draw(st.integers(1, 3))
        rows.append({
            "tenant_id": key[0], "run_id": key[1], "seq": seqs[key],
            "parent_run_id": draw(st.one_of(st.none(), st.sampled_from(["p1", "p2"]))),
            "type": "t", "kind": draw(st.sampled_from(KINDS)),
            "ts": draw(st.one_of(st.none(), st.integers(0, 10**9))),
            "turn": draw(st.one_of(st.none(), st.integers(-2, 3))),
            "finish": draw(st.one_of(st.none(), st.sampled_from(["stop", "error"]))),
            "is_error": draw(st.booleans()), "payload": "{}",
            "source": draw(st.sampled_from(["fmt_a:x.jsonl", "fmt_b:y:z", "fmt_a:w"])),
        })

    def table_of(part: list[dict[str, Any]]) -> pa.Table:
        cols = {k: [r[k] for r in part] for k in rows[0]} if part else {
            k: [] for k in ("tenant_id", "run_id", "seq", "type", "kind", "payload", "source")}
        if part:
            cols["ts"] = pa.array(cols["ts"], pa.timestamp("us", tz="UTC"))
        return events_table(cols)

    table = table_of(rows)
    if rows and draw(st.booleans()):  # two chunks, split between tenants
        tenants = sorted({r["tenant_id"] for r in rows})
        cut = draw(st.sampled_from(tenants))
        low = [r for r in rows if r["tenant_id"] < cut]
        high = [r for r in rows if r["tenant_id"] >= cut]
        if low and high:
            table = pa.concat_tables([table_of(low), table_of(high)])
    header = [{"tenant_id": draw(st.sampled_from(TENANTS)), "run_id": draw(st.sampled_from(RUNS)),
               "parent_run_id": draw(st.one_of(st.none(), st.just("hp"))), "format": "demo",
               "source": None, "created_at": None,
               "attrs": draw(st.sampled_from([None, '{"depth": 1}']))}
              for _ in range(draw(st.integers(0, 6)))]
    quarantine = [{"source": "s", "line": i, "field": None, "reason": "bad", "message": "m",
                   "raw": "x", "tenant_id": draw(st.one_of(st.none(), st.sampled_from(TENANTS))),
                   "run_id": draw(st.one_of(st.none(), st.sampled_from(RUNS)))}
                  for i in range(draw(st.integers(0, 6)))]
    k = draw(st.integers(0, 5))
    extras = {
        "per_run": pa.table({"tenant_id": pa.array([draw(st.sampled_from(TENANTS))
                                                   for _ in range(k)], pa.string())
                             .dictionary_encode(),
                             "run_id": [draw(st.sampled_from(RUNS)) for _ in range(k)],
                             "v": list(range(k))}),
        "per_tenant": pa.table({"tenant_id": ["acme"], "v": [1]}),
        "global": pa.table({"v": [1, 2]}),
    }
    return rk.EventLog(table, runs=pa.Table.from_pylist(header, schema=RUNS_SCHEMA),
                       quarantine=pa.Table.from_pylist(quarantine, schema=QUARANTINE_SCHEMA),
                       extras=extras)


def _filtered(log: rk.EventLog, tenant: str, run: str) -> dict[str, Any]:
    """What ``log.run`` returned before: the filter view, tables as Python rows."""
    table = log.table.filter(pc.and_(pc.equal(pc.cast(log.table.column("tenant_id"),
                                                       pa.string()), tenant),
                                      pc.equal(pc.cast(log.table.column("run_id"),
                                                       pa.string()), run)))
    runs = log.runs.filter(pc.and_(pc.equal(log.runs.column("tenant_id"), tenant),
                                   pc.equal(log.runs.column("run_id"), run))) \
        if log.runs.num_rows else log.runs
    quarantine = scope_side_table(log.quarantine, tenants=[tenant], run_ids=[run])
    assert quarantine is not None
    extras = scope_extras(log.extras, tenants=[tenant], run_ids=[run])
    return {"table": table.to_pylist(), "runs": runs.to_pylist(),
            "quarantine": quarantine.to_pylist(),
            "extras": {k: v.to_pylist() for k, v in extras.items()}}


def _as_rows(view: rk.EventLog) -> dict[str, Any]:
    return {"table": view.table.to_pylist(), "runs": view.runs.to_pylist(),
            "quarantine": view.quarantine.to_pylist(),
            "extras": {k: v.to_pylist() for k, v in view.extras.items()}}


def _keys(log: rk.EventLog) -> list[tuple[str, str]]:
    t = pa.table({"t": pc.cast(log.table.column("tenant_id"), pa.string()),
                  "r": pc.cast(log.table.column("run_id"), pa.string())})
    return list(dict.fromkeys(zip(t.column("t").to_pylist(), t.column("r").to_pylist(),
                                  strict=True)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs())
def test_run_equals_the_filter_view_for_every_run(log: rk.EventLog) -> None:
    keys = _keys(log)
    for tenant, run in keys:
        view = log.run(run, tenant_id=tenant)
        assert _as_rows(view) == _filtered(log, tenant, run)
        assert view.tenants == [tenant] and view.run_ids == [run]
    for tenant in TENANTS:  # every other (tenant, run): no data of another tenant, an error
        for run in RUNS:
            if (tenant, run) not in keys:
                with pytest.raises(KeyError, match="has no run"):
                    log.run(run, tenant_id=tenant)
    # iter_runs: every run once, in the log's order, each view equal to run()
    walked = list(log.iter_runs())
    assert [tuple(k) for k, _ in walked] == keys
    for key, view in walked:
        assert isinstance(key, RunKey)
        assert _as_rows(view) == _as_rows(log.run(key.run_id, tenant_id=key.tenant_id))


def _old_stats(log: rk.EventLog) -> pd.DataFrame:
    """runs_df's computed columns as the Arrow group-by computed them."""
    t = log.table

    def s(c: str) -> pa.Array:
        return pc.cast(t.column(c).combine_chunks(), pa.string())

    stats = pa.table({
        "tenant_id": s("tenant_id"), "run_id": s("run_id"), "parent_run_id": s("parent_run_id"),
        "ts": t.column("ts"), "turn": t.column("turn"), "seq": t.column("seq"),
        "is_call": pc.cast(pc.is_valid(t.column("finish")), pa.int64()),
        "is_tool": pc.cast(pc.equal(s("kind"), "tool_call"), pa.int64()),
        "is_err": pc.cast(t.column("is_error"), pa.int64()),
    }).group_by(["tenant_id", "run_id"], use_threads=False).aggregate([
        ("parent_run_id", "first"), ("seq", "count"), ("ts", "min"), ("ts", "max"),
        ("turn", "count_distinct"), ("is_call", "sum"), ("is_tool", "sum"), ("is_err", "sum"),
    ])
    return to_pandas(stats.rename_columns(list(RUN_STAT_COLUMNS)))


def _old_summary(log: rk.EventLog) -> dict[str, Any]:
    t = log.table
    fmts = pc.unique(pc.replace_substring_regex(pc.cast(t.column("source"), pa.string()),
                                                r":.*$", "")).to_pylist()
    return {"events": t.num_rows, "runs": len(_keys(log)),
            "tenants": len({k[0] for k in _keys(log)}),
            "formats": sorted(f for f in fmts if f),
            "first_ts": pc.min(t.column("ts")).as_py() if t.num_rows else None,
            "last_ts": pc.max(t.column("ts")).as_py() if t.num_rows else None,
            "quarantined": log.quarantine.num_rows}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs())
def test_column_wise_run_stats_equal_the_group_by(log: rk.EventLog) -> None:
    def by_key(df: pd.DataFrame) -> pd.DataFrame:  # a group-by's row order is its own
        return df.sort_values(["tenant_id", "run_id"], ignore_index=True)

    assert_frame_equal(by_key(to_pandas(log._run_stats())), by_key(_old_stats(log)))
    assert log.summary() == _old_summary(log)
    assert log.num_runs == len(_keys(log))
    assert log.tenants == sorted({k[0] for k in _keys(log)})
    assert log.run_ids == sorted({k[1] for k in _keys(log)})


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs(), st.integers(0, 4))
def test_repr_html_shows_the_head_of_runs_df(log: rk.EventLog, n: int) -> None:
    runs = log.runs_df()
    head, total = log._runs_head(n)
    assert total == len(runs)
    assert_frame_equal(head[list(RUN_STAT_COLUMNS)].head(n),
                       runs[list(RUN_STAT_COLUMNS)].head(n))
    html = log._repr_html_()
    cols = [c for c in RUN_STAT_COLUMNS if not c.endswith("_ts")]
    assert runs[cols].head(10).to_html(index=False, escape=True, na_rep="", border=0) in html
    assert (f"{len(runs) - 10:,} more runs" in html) == (len(runs) > 10)


def _no_header_log(log: rk.EventLog) -> rk.EventLog:
    return rk.EventLog(log.table, sort=False)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs())
def test_format_per_run_is_the_first_rows_source_format(log: rk.EventLog) -> None:
    plain = _no_header_log(log).runs_df()
    t = log.table
    want = {}
    for tenant, run, src in zip(pc.cast(t.column("tenant_id"), pa.string()).to_pylist(),
                                pc.cast(t.column("run_id"), pa.string()).to_pylist(),
                                pc.cast(t.column("source"), pa.string()).to_pylist(),
                                strict=True):
        want.setdefault((tenant, run), src.split(":", 1)[0])
    got = dict(zip(zip(plain["tenant_id"], plain["run_id"], strict=True), plain["format"],
                   strict=True))
    assert got == want


@pytest.fixture(scope="module")
def pleach(data_dir: Path) -> rk.EventLog:
    return rk.read_pleach(data_dir / "pleach", progress=False)


@pytest.fixture(scope="module")
def toh(data_dir: Path) -> rk.EventLog:
    return rk.read_toh(data_dir / "toh", owner="demo", progress=False)


@pytest.mark.parametrize("name", ["pleach", "toh"])
def test_iter_runs_grain_tables_equal_the_per_run_tables(name: str, request: Any) -> None:
    log = request.getfixturevalue(name)
    seen = 0
    for key, view in log.iter_runs():
        alone = log.run(key.run_id, tenant_id=key.tenant_id)
        for method in ("calls_df", "tools_df", "turns_df"):
            assert_frame_equal(getattr(view, method)(), getattr(alone, method)())
        assert_frame_equal(view.runs_df(), alone.runs_df())
        seen += 1
    assert seen == log.num_runs > 0


def test_iter_runs_grain_tables_of_a_multi_tenant_log() -> None:
    from replaykit.datasets import generate_cohorts

    log = generate_cohorts(runs=30, events_per_run=30, seed=5).log
    a = log.filter(tenant_id=log.tenants[0])
    zeta = pa.array(["zeta"] * len(a), pa.string()).dictionary_encode() \
        .cast(a.table.schema.field("tenant_id").type)
    both = rk.concat([a, rk.EventLog(a.table.set_column(0, "tenant_id", zeta))])
    assert len(both.tenants) == 2
    for key, view in both.iter_runs():
        alone = both.run(key.run_id, tenant_id=key.tenant_id)
        assert view.tenants == [key.tenant_id]
        for method in ("calls_df", "tools_df", "turns_df"):
            assert_frame_equal(getattr(view, method)(), getattr(alone, method)())


def test_a_walks_views_pickle_without_the_shared_tables(pleach: rk.EventLog) -> None:
    key, view = next(iter(pleach.iter_runs()))
    view.calls_df()  # computes the walk's shared whole-log table
    back = pickle.loads(pickle.dumps(view))
    assert back.table.equals(view.table)
    assert back._grain is None and view._grain is not None
    assert len(pickle.dumps(view)) < len(pickle.dumps(pleach))
    assert_frame_equal(back.calls_df(), view.calls_df())
    assert back.run(key.run_id, tenant_id=key.tenant_id).table.equals(view.table)


def test_run_still_checks_the_tenant(pleach: rk.EventLog) -> None:
    run = pleach.run_ids[0]
    with pytest.raises(rk.LoadError, match="reason=bad_tenant"):
        pleach.run(run, tenant_id="")
    with pytest.raises(rk.LoadError, match="reason=bad_tenant"):
        pleach.run(run, tenant_id=None)  # type: ignore[arg-type]
    with pytest.raises(KeyError, match="no run"):
        pleach.run(run, tenant_id="nobody")
    with pytest.raises(KeyError, match="no run"):
        pleach.run("no-such-run", tenant_id=pleach.tenants[0])


_VALUES = st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=3), st.booleans(),
                    st.dictionaries(st.sampled_from(["kind", "code", "x"]),
                                    st.one_of(st.integers(0, 2), st.text(max_size=2)),
                                    max_size=2))


@st.composite
def _payload(draw: Any) -> str | None:
    import json

    if draw(st.integers(0, 9)) == 0:
        return None
    keys = ["reason", "outcome", "error", "data", "usage", "other", "kind"]
    doc = draw(st.dictionaries(st.sampled_from(keys), _VALUES, max_size=3))
    text = json.dumps(doc, ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):  # a key spelled with an escape: the same key to a JSON parser
        text = text.replace('"reason"', '"\\u0072eason"').replace('"data"', '"d\\u0061ta"')
    return text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_payload(), max_size=12),
       st.sampled_from(["turn_end_reason", "turn_error_code", "tool_error_name",
                        "cache_read_tokens"]))
def test_payload_fields_parsed_only_where_a_path_can_be(payloads: list[str | None],
                                                        name: str) -> None:
    """grain._field parses only the payloads that name a path's first key; the values are
    those of parsing every payload (the previous way), conflicts and escapes included."""
    from replaykit.eventlog import grain

    typ = pa.int64() if name.endswith("tokens") else pa.string()
    arr = pa.array(payloads, pa.large_string())
    want = grain._parse_paths(arr, grain.FIELD_PATHS[name], typ) if len(arr) else \
        pa.array([], typ)
    assert grain._field(arr, name, typ).to_pylist() == want.to_pylist()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 8), max_size=15),
       st.lists(st.integers(0, 8), max_size=10, unique=True))
def test_left_join_by_sorted_search_equals_the_acero_join(left: list[int],
                                                          right: list[int]) -> None:
    from replaykit.eventlog.grain import _left_join

    lt = pa.table({"_key": pa.array(left, pa.int64()),
                   "_row": pa.array(range(len(left)), pa.int64())})
    rt = pa.table({"_key": pa.array(right, pa.int64()),
                   "v": pa.array([str(k) * 2 for k in right], pa.large_string()),
                   "n": pa.array([None if k % 3 == 0 else k for k in right], pa.int64())})
    got = _left_join(lt, rt)
    want = lt.join(rt, ["_key"], join_type="left outer", use_threads=False)
    want = want.take(pc.sort_indices(want, [("_row", "ascending")]))
    assert got.schema == want.schema
    assert got.to_pylist() == want.to_pylist()


def test_run_index_with_repeated_dictionary_values() -> None:
    """A dictionary holding a value twice (two codes, one run) still makes one run."""
    from replaykit.eventlog._runs import _run_start_rows
    from replaykit.schema import run_starts

    base = events_table({"tenant_id": ["t"] * 4, "run_id": ["a", "a", "a", "b"],
                         "seq": [0, 1, 2, 0], "type": ["x"] * 4, "kind": ["other"] * 4,
                         "payload": ["{}"] * 4, "source": ["s:m"] * 4})
    dup = pa.DictionaryArray.from_arrays(pa.array([0, 2, 0, 1], pa.int32()),
                                         pa.array(["a", "b", "a"]))
    table = base.set_column(1, "run_id", dup)
    assert _run_start_rows(table).tolist() == [0, 3] == np.flatnonzero(run_starts(table)).tolist()
    log = rk.EventLog(table, sort=False)
    assert log.num_runs == 2 and len(log.run("a", tenant_id="t")) == 3


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs())
def test_iter_runs_grain_tables_of_random_multi_tenant_logs(log: rk.EventLog) -> None:
    for key, view in log.iter_runs():
        alone = log.run(key.run_id, tenant_id=key.tenant_id)
        for method in ("calls_df", "tools_df", "turns_df"):
            assert_frame_equal(getattr(view, method)(), getattr(alone, method)())


def test_repr_html_head_with_a_header_tenant_holding_nul() -> None:
    """Header rows are matched by (tenant, run) pairs; a NUL in a (rule-breaking) header
    tenant takes the exact pairwise path, never a joined-string collision."""
    t = events_table({"tenant_id": ["a"] * 12, "run_id": [f"r{i:02d}" for i in range(12)],
                      "seq": [0] * 12, "type": ["x"] * 12, "kind": ["other"] * 12,
                      "payload": ["{}"] * 12, "source": ["s:m"] * 12})
    header = [{"tenant_id": "a\x00r01", "run_id": "", "parent_run_id": None, "format": "f",
               "source": None, "created_at": None, "attrs": None},
              {"tenant_id": "a", "run_id": "r00\x00", "parent_run_id": "p", "format": "f",
               "source": None, "created_at": None, "attrs": None},
              {"tenant_id": "a", "run_id": "r01", "parent_run_id": "q", "format": "f",
               "source": None, "created_at": None, "attrs": None}]
    log = rk.EventLog(t, runs=pa.Table.from_pylist(header, schema=RUNS_SCHEMA))
    runs = log.runs_df()
    head, total = log._runs_head(10)
    assert total == len(runs) == 14
    assert_frame_equal(head[list(RUN_STAT_COLUMNS)], runs[list(RUN_STAT_COLUMNS)].head(10))


def test_reversed_views_keep_their_displays_and_runs(pleach: rk.EventLog) -> None:
    back = pleach[::-1]  # runs still contiguous, in reverse order
    runs = back.runs_df()
    head, total = back._runs_head(10)
    assert total == len(runs) == pleach.num_runs
    assert_frame_equal(head[list(RUN_STAT_COLUMNS)].head(10),
                       runs[list(RUN_STAT_COLUMNS)].head(10))
    assert_frame_equal(runs, pleach.runs_df())
    key, view = next(iter(back.iter_runs()))
    assert _as_rows(view) == _filtered(back, key.tenant_id, key.run_id)
    alone = back.run(key.run_id, tenant_id=key.tenant_id)
    assert_frame_equal(view.calls_df(), alone.calls_df())
