"""Projections, the column-wise fold, StateFrame, fork, aggregate and cache coverage."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

import replaykit as rk
from replaykit._base.json import canonical_json
from replaykit.errors import ReplayError, SchemaError
from replaykit.fold import (
    ScalarReducer,
    collection,
    counter,
    from_payload,
    last,
    maximum,
    minimum,
    on,
    reference_fold,
)
from replaykit.fold.synth import synthetic_log
from replaykit.schema import events_table


def _log(rows: list[dict], tenant: str = "acme", run: str = "r1") -> rk.EventLog:
    cols: dict[str, list] = {}
    for i, r in enumerate(rows):
        full = {"tenant_id": tenant, "run_id": run, "seq": i + 1, "payload": "{}",
                "source": "test:mem", **r}
        if isinstance(full["payload"], dict):
            full["payload"] = canonical_json(full["payload"])
        for k in set(cols) | set(full):
            cols.setdefault(k, [None] * i).append(full.get(k))
    for k in ("is_error", "inherited"):
        if k in cols:
            cols[k] = [bool(v) for v in cols[k]]
    return rk.EventLog(events_table(cols))


AGENT_ROWS = [
    {"type": "turn.started", "kind": "turn_start", "turn": 1},
    {"type": "model.completed", "kind": "model_response", "turn": 1, "step": 1,
     "finish": "tool-calls", "input_tokens": 10, "output_tokens": 3},
    {"type": "tool.called", "kind": "tool_call", "ref_id": "c1", "tool_name": "search"},
    {"type": "tool.called", "kind": "tool_call", "ref_id": "c2", "tool_name": "shell"},
    {"type": "tool.completed", "kind": "tool_result", "ref_id": "c1", "tool_name": "search",
     "is_error": True},
    {"type": "interrupt.raised", "kind": "approval_request", "ref_id": "i1",
     "payload": {"interrupt_id": "i1", "kind": "approval", "reason": "rm -rf"}},
    {"type": "subagent.spawned", "kind": "subagent_start", "ref_id": "s1",
     "payload": {"subagent_id": "s1", "label": "helper"}},
    {"type": "export.created", "kind": "other",
     "payload": {"export_id": "e1", "format": "csv", "uri": "s3://b/e1"}},
    {"type": "mystery.event", "kind": "other"},
    {"type": "model.completed", "kind": "model_response", "turn": 1, "step": 2,
     "finish": "stop", "input_tokens": 20, "output_tokens": 5},
]


def test_harness_zero_state_is_exact() -> None:
    zero = ScalarReducer(rk.harness()).snapshot(ScalarReducer(rk.harness()).zero())
    assert canonical_json(zero) == canonical_json(
        {"interrupts": [], "subagents": [], "exports": [], "userCards": [], "eventCount": 0}
    )
    assert list(zero) == ["interrupts", "subagents", "exports", "userCards", "eventCount"]


def test_agent_state_values() -> None:
    log = _log(AGENT_ROWS)
    frame = rk.fold(log, rk.agent())
    s = frame.at("r1", 10, tenant_id="acme")
    assert s["turn"] == 1 and s["step"] == 2
    assert s["model_calls"] == 2
    assert s["tool_calls"] == 2
    assert dict(s["tool_calls_by_tool"]) == {"search": 1, "shell": 1}
    assert s["open_tool_calls"] == ({"id": "c2", "tool": "shell"},)
    assert s["last_tool"] == "shell"
    assert (s["input_tokens"], s["output_tokens"]) == (30, 8)
    assert s["errors"] == 1
    assert s["last_finish"] == "stop"
    assert s["pending_approvals"] == ("i1",)
    assert s["active_subagents"] == ("s1",)
    mid = frame.at("r1", 4, tenant_id="acme")
    assert [c["id"] for c in mid["open_tool_calls"]] == ["c1", "c2"]
    assert frame.at("r1", 0, tenant_id="acme")["tool_calls"] == 0


def test_harness_state_values() -> None:
    s = rk.fold(_log(AGENT_ROWS), rk.harness()).at("r1", 99, tenant_id="acme")
    assert s["interrupts"] == ({"id": "i1", "kind": "approval", "reason": "rm -rf"},)
    assert s["subagents"] == ({"id": "s1", "label": "helper"},)
    assert s["exports"] == ({"id": "e1", "format": "csv", "uri": "s3://b/e1"},)
    assert s["userCards"] == ()
    assert s["eventCount"] == 10


def test_states_are_immutable() -> None:
    s = rk.fold(_log(AGENT_ROWS), rk.agent()).at("r1", 99, tenant_id="acme")
    with pytest.raises(TypeError):
        s["turn"] = 5  # type: ignore[index]
    with pytest.raises(TypeError):
        s["tool_calls_by_tool"]["x"] = 1  # type: ignore[index]
    assert isinstance(s["open_tool_calls"], tuple)


def test_steps_df_and_final() -> None:
    log = synthetic_log(500, 4, seed=2)
    frame = rk.fold(log, [rk.agent(), rk.harness()], state_hash=True)
    df = frame.steps_df()
    assert len(df) == len(log)
    for col in ("tenant_id", "run_id", "seq", "tool_calls", "open_tool_calls_size",
                "open_tool_calls_added", "open_tool_calls_removed", "tool_calls_by_tool_key",
                "state_hash", "eventCount"):
        assert col in df.columns
    assert str(df["tool_calls"].dtype) == "Int64"
    assert (df["open_tool_calls_size"] >= 0).all()
    final = frame.final()
    assert len(final) == log.num_runs
    assert final["events"].sum() == len(log)
    ref = reference_fold(log.table, [rk.agent(), rk.harness()])
    last_rows = (df.groupby(["tenant_id", "run_id"], observed=True).cumcount(ascending=False)
                 == 0).to_numpy().nonzero()[0]
    assert sorted(canonical_json(ref[i]) for i in last_rows) == sorted(
        canonical_json(s) for s in final["state"])


def test_class_api_and_projection_function_agree() -> None:
    class Tools(rk.Projection):
        calls = counter(kinds="tool_call")
        last_tool = last("tool_name", kinds="tool_call")

    fn = rk.projection("tools", calls=counter(kinds="tool_call"),
                       last_tool=last("tool_name", kinds="tool_call"))
    log = _log(AGENT_ROWS)
    a = rk.fold(log, Tools).at("r1", 99, tenant_id="acme")
    b = rk.fold(log, fn).at("r1", 99, tenant_id="acme")
    assert a == b == {"calls": 2, "last_tool": "shell"}


def test_projection_errors() -> None:
    with pytest.raises(ValueError, match="more than one projection"):
        rk.fold(_log(AGENT_ROWS), [rk.agent(), rk.agent()])
    with pytest.raises(ValueError, match="not a canonical column"):
        last("nope")
    with pytest.raises(ValueError, match="not a canonical column"):
        on(where={"nope": 1})
    with pytest.raises(ValueError):
        rk.projection("empty")


def test_payload_type_mismatch_is_a_schema_error_in_both_engines() -> None:
    rows = [{"type": "x", "kind": "other", "payload": {"v": "text"}}]
    proj = rk.projection("p", v=last(from_payload("v", "int")))
    with pytest.raises(SchemaError, match="'v'"):
        rk.fold(_log(rows), proj)
    with pytest.raises(SchemaError, match="'v'"):
        reference_fold(_log(rows).table, proj)


def test_collection_without_remove_and_readd() -> None:
    rows = [
        {"type": "add", "kind": "other", "ref_id": "a"},
        {"type": "add", "kind": "other", "ref_id": "a"},  # no-op: already there
        {"type": "del", "kind": "other", "ref_id": "a"},
        {"type": "del", "kind": "other", "ref_id": "a"},  # no-op: absent
        {"type": "add", "kind": "other", "ref_id": "b"},
        {"type": "add", "kind": "other", "ref_id": "a"},
    ]
    proj = rk.projection("c", ids=collection(add=on(types="add"), remove=on(types="del")))
    frame = rk.fold(_log(rows), proj)
    assert frame.steps_df()["ids_size"].tolist() == [1, 1, 0, 0, 1, 2]
    assert frame.at("r1", 6, tenant_id="acme")["ids"] == ("b", "a")
    added = frame.steps_df()["ids_added"]
    assert added.iloc[0] == "a" and added.isna().tolist() == [False, True, True, True, False, False]


def test_frame_lookup_requires_owning_tenant() -> None:
    frame = rk.fold(_log(AGENT_ROWS), rk.agent())
    with pytest.raises(TypeError, match="tenant_id"):
        frame.at("r1", 1, tenant_id=None)  # type: ignore[arg-type]
    with pytest.raises(ReplayError):
        frame.at("r1", 1, tenant_id="other")


def test_fork_leaves_input_untouched() -> None:
    log = synthetic_log(300, 3, seed=5)
    table = log.table
    before = [c.to_pylist() for c in table.columns]
    run = log.run_ids[0]
    tenant = "acme"
    forked = rk.fork(log, run, tenant_id=tenant, at_seq=10,
                     events=[{"type": "note", "payload": {"why": "test"}},
                             {"type": "tool.called", "kind": "tool_call", "ref_id": "zz",
                              "tool_name": "shell"}])
    assert log.table is table
    assert [c.to_pylist() for c in log.table.columns] == before
    assert forked.num_runs == 1
    t = forked.table.to_pylist()
    assert len(t) == 12
    assert {r["parent_run_id"] for r in t} == {run}
    assert [r["inherited"] for r in t] == [True] * 10 + [False] * 2
    assert [r["seq"] for r in t[-2:]] == [11, 12]
    assert t[-2]["kind"] == "intervention" and t[-2]["payload"] == '{"why":"test"}'
    new_run = t[0]["run_id"]
    orig = rk.fold(log, rk.agent()).at(run, 10, tenant_id=tenant)
    fstate = rk.fold(forked, rk.agent()).at(new_run, 12, tenant_id=tenant)
    assert fstate["tool_calls"] == orig["tool_calls"] + 1
    with pytest.raises(ReplayError):
        rk.fork(log, run, tenant_id="globex", at_seq=10)
    with pytest.raises(TypeError, match="tenant_id"):
        rk.fork(log, run, tenant_id="", at_seq=10)


def test_aggregate_per_tenant_and_merged() -> None:
    log = synthetic_log(600, 6, tenants=("acme", "globex", "initech"), seed=7)
    per = rk.aggregate(log, tenant_ids=["acme", "globex"], projections=rk.harness())
    assert per["tenant_id"].tolist() == ["acme", "globex"]
    counts = log.events_df().groupby("tenant_id", observed=True).size()
    assert per["events"].tolist() == [counts["acme"], counts["globex"]]
    assert [s["eventCount"] for s in per["state"]] == [counts["acme"], counts["globex"]]
    assert per["runs"].tolist() == [2, 2]
    merged = rk.aggregate(log, tenant_ids=["acme", "globex"], projections=rk.harness(),
                          aggregation="merged")
    assert len(merged) == 1
    assert merged["state"][0]["eventCount"] == counts["acme"] + counts["globex"]
    none = rk.aggregate(log, tenant_ids=["nobody"], projections=rk.harness())
    assert none["events"].tolist() == [0] and none["state"][0]["eventCount"] == 0
    with pytest.raises(TypeError, match="tenant_ids"):
        rk.aggregate(log, tenant_ids=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tenant_ids"):
        rk.aggregate(log, tenant_ids=["acme", ""])


def test_cache_coverage_modes(tmp_path) -> None:
    log = synthetic_log(400, 2, seed=1)
    keys = log.table.column("cache_key").drop_null().to_pylist()
    assert keys, "the generator must produce keyed rows"
    cache = rk.InMemoryCache({keys[0]: "v"})
    cov = rk.cache_coverage(log, cache)
    assert len(cov) == len(keys)
    assert cov["hit"].tolist() == [k == keys[0] for k in keys]
    assert cov["via"].tolist() == ["cache" if k == keys[0] else "live" for k in keys]
    assert not cov["raises"].any()
    cross = rk.cache_coverage(log, cache, mode="cross-mode-readable")
    assert cross["raises"].tolist() == [k != keys[0] for k in keys]
    strict = rk.cache_coverage(log, cache, mode="strict-mode")
    assert strict["raises"].all()
    pq_cache = rk.ParquetCache.write(tmp_path / "cache.parquet", {keys[0]: "v", "zz": "w"})
    assert rk.cache_coverage(log, pq_cache)["hit"].tolist() == cov["hit"].tolist()
    assert pq_cache.get(keys[0]) == "v" and pq_cache.get("nope") is None
    with pytest.raises(ValueError):
        rk.cache_coverage(log, cache, mode="sometimes")  # type: ignore[arg-type]


def test_empty_log_folds() -> None:
    empty = rk.EventLog(rk.schema.empty_events())
    frame = rk.fold(empty, rk.agent(), state_hash=True)
    assert len(frame) == 0 and len(frame.steps_df()) == 0 and len(frame.final()) == 0


def test_fold_accepts_a_table_and_validates() -> None:
    t = _log(AGENT_ROWS).table
    assert rk.fold(t, rk.harness()).at("r1", 99, tenant_id="acme")["eventCount"] == 10
    with pytest.raises(SchemaError):
        rk.fold(pa.table({"x": [1]}), rk.harness())


def test_max_min_on_many_runs_and_values_match_a_pandas_oracle() -> None:
    import numpy as np

    # enough runs x distinct values that run * (values + 1) overflows int32
    rng = np.random.default_rng(0)
    n, runs = 120_000, 60_000
    run_ids = np.sort(rng.integers(0, runs, n))
    values = rng.integers(0, 10**9, n)
    values_masked = pa.array(values, mask=rng.random(n) < 0.2)
    t = events_table({
        "tenant_id": ["t"] * n, "run_id": pa.array([f"r{r:06d}" for r in run_ids]),
        "seq": np.arange(n), "type": ["x"] * n, "kind": ["other"] * n,
        "input_tokens": values_masked, "payload": ["{}"] * n, "source": ["x:mem"] * n,
    })
    proj = rk.projection("m", hi=maximum("input_tokens"), lo=minimum("input_tokens"))
    df = rk.fold(t, proj).steps_df()
    src = pd.DataFrame({"run": t.column("run_id").to_pylist(),
                        "v": t.column("input_tokens").to_pandas()})
    g = src.groupby("run", sort=False)["v"]
    # pandas leaves NaN at null rows; the field keeps the running value: forward-fill per run
    hi = src.assign(c=g.cummax()).groupby("run", sort=False)["c"].ffill()
    lo = src.assign(c=g.cummin()).groupby("run", sort=False)["c"].ffill()
    assert df["hi"].astype("float64").fillna(-1).tolist() == hi.fillna(-1).tolist()
    assert df["lo"].astype("float64").fillna(-1).tolist() == lo.fillna(-1).tolist()
