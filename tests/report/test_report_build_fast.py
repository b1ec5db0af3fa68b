"""The RCA report's first build, made faster (issue 18: <= 5 s for a 100,000-event replay):
each new fast path against the expression it replaced, on random input.

* ``event_signatures`` hashes each column's distinct values once (dictionary indices) and
  combines the columns as pandas does: equal to ``hash_pandas_object`` over the four columns;
* ``payload_fields`` puts each text on its own line with an element-wise join and replaces
  newlines only when there is one: equal to the two regex replaces it had;
* ``compare``'s per-event frame is built in Arrow (run boundaries, text columns straight to
  pandas' ``str`` dtype): equal to the frame built from Python strings;
* ``compare`` reads the stamps of a log that holds only the pair's runs without filtering it
  first: equal to the filtered log's;
* the stamps' per-document decode pauses the cyclic GC and restores it afterwards.
"""

from __future__ import annotations

import gc
import importlib
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit._base import json as _json
from replaykit.datasets import generate_isplay
from replaykit.provenance import stamps

compare_mod = importlib.import_module("replaykit.branch.compare")

_cell = st.one_of(st.none(), st.text(alphabet=st.sampled_from("ab\u5317 \x00\ud7ff|"),
                                     max_size=6), st.sampled_from(["", "tool_call", "None"]))


def _old_event_signatures(table: pa.Table) -> np.ndarray:
    """The expression event_signatures had before (one Python string per cell)."""
    df = pd.DataFrame({c: compare_mod._s(table.column(c)).to_numpy(zero_copy_only=False)
                       for c in ("kind", "tool_name", "args_hash", "text")})
    return pd.util.hash_pandas_object(df.fillna(""), index=False).to_numpy()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(_cell, _cell, _cell, _cell), max_size=30), st.booleans(),
       st.booleans(), st.integers(0, 5))
def test_event_signatures_equal_hash_pandas_object(rows, dictionary, chunked, cut):
    cols = list(zip(*rows, strict=True)) if rows else [(), (), (), ()]
    arrays = {}
    for name, vals, typ in zip(("kind", "tool_name", "args_hash", "text"), cols,
                               (pa.string(), pa.string(), pa.string(), pa.large_string()),
                               strict=True):
        arr = pa.array(list(vals), typ)
        if dictionary and name != "text":
            arr = arr.dictionary_encode()
        arrays[name] = pa.chunked_array([arr[:cut], arr[cut:]], arr.type) if chunked \
            else pa.chunked_array([arr], arr.type)
    t = pa.table(arrays)
    got = compare_mod.event_signatures(t)
    assert got.dtype == np.uint64
    assert got.tolist() == _old_event_signatures(t).tolist()
    if len(t) > 1:  # a slice of the table: its own rows' signatures
        assert compare_mod.event_signatures(t.slice(1)).tolist() == got[1:].tolist()


def test_event_signatures_equal_the_old_ones_on_a_generated_run(tmp_path):
    generate_isplay(tmp_path, runs=1, events_per_run=600, seed=3)
    log = rk.read_isplay(tmp_path, owner="t", progress=False)
    got = compare_mod.event_signatures(log.table)
    assert got.tolist() == _old_event_signatures(log.table).tolist()
    assert len(set(got.tolist())) > 100  # distinct events, distinct signatures


def _old_frame(table: pa.Table) -> pd.DataFrame:
    """The expression compare's _frame had before (numpy object arrays)."""
    _s = compare_mod._s
    tenant = _s(table.column("tenant_id")).to_numpy(zero_copy_only=False)
    run = _s(table.column("run_id")).to_numpy(zero_copy_only=False)
    kind = _s(table.column("kind")).to_numpy(zero_copy_only=False)
    n = table.num_rows
    if n:
        new_run = np.r_[True, (run[1:] != run[:-1]) | (tenant[1:] != tenant[:-1])]
        starts = np.flatnonzero(new_run)
        pos = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
    else:
        pos = np.zeros(0, dtype=np.int64)
    is_tr = kind == "tool_result"
    fixture = np.zeros(n, dtype=bool)
    if is_tr.any():
        fixture[is_tr] = np.asarray(pc.fill_null(pc.match_substring(
            table.column("payload").filter(pa.array(is_tr)), '"fixtureId":'), False))
    return pd.DataFrame({
        "tenant_id": tenant, "run_id": run, "pos": pos,
        "sig": compare_mod.event_signatures(table), "kind": kind,
        "finish": _s(table.column("finish")).to_numpy(zero_copy_only=False),
        "tool_name": _s(table.column("tool_name")).to_numpy(zero_copy_only=False),
        "args_hash": _s(table.column("args_hash")).to_numpy(zero_copy_only=False),
        "fixture": fixture})


_key = st.one_of(st.none(), st.sampled_from(["t1", "t2", "r1", "r2", ""]))
_kind = st.one_of(st.none(), st.sampled_from(["tool_call", "tool_result", "model_request"]))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(_key, _key, _kind, _cell, _cell, _cell, st.booleans()), max_size=25),
       st.booleans())
def test_compare_frame_equals_the_python_string_frame(rows, dictionary):
    cols = list(zip(*rows, strict=True)) if rows else [()] * 7
    tenant, run, kind, finish, tool, args, fx = cols
    arrays = {"tenant_id": pa.array(list(tenant), pa.string()),
              "run_id": pa.array(list(run), pa.string()),
              "kind": pa.array(list(kind), pa.string()),
              "finish": pa.array(list(finish), pa.string()),
              "tool_name": pa.array(list(tool), pa.string()),
              "args_hash": pa.array(list(args), pa.string()),
              "text": pa.array(list(args), pa.large_string()),
              "payload": pa.array(['{"fixtureId": 1}' if f else "{}" for f in fx],
                                  pa.large_string())}
    if dictionary:
        arrays = {k: (v.dictionary_encode() if k in ("tenant_id", "run_id", "kind") else v)
                  for k, v in arrays.items()}
    t = pa.table(arrays)
    pd.testing.assert_frame_equal(compare_mod._frame(t), _old_frame(t))


_line_text = st.lists(st.one_of(
    st.none(), st.text(alphabet=st.sampled_from('{}"a:1 \n\r\\\u00e9'), max_size=10)),
    max_size=12)


@given(_line_text, st.integers(0, 4))
def test_one_per_line_equals_the_regex_replaces(texts, start):
    arr = pa.array(texts, pa.large_string())[min(start, len(texts)):]
    old = pc.replace_substring_regex(pc.replace_substring(arr, "\n", " "), "$", "\n")
    got = _json._one_per_line(arr)
    assert got.to_pylist() == old.to_pylist()
    assert "\n" not in "".join(x[:-1] for x in got.to_pylist() if x is not None)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.fixed_dictionaries({}, optional={
    "a": st.one_of(st.integers(-5, 5), st.none()),
    "b": st.fixed_dictionaries({}, optional={"c": st.text(alphabet="x\ny", max_size=4)})}),
    min_size=1, max_size=10), st.sampled_from([None, 1, 2]))
def test_payload_fields_reads_pretty_printed_payloads(docs, indent):
    """Payloads written across several lines (pretty-printed) read the same values."""
    arr = pa.array([json.dumps(d, indent=indent) for d in docs], pa.large_string())
    got = _json.payload_fields(arr, {"a": pa.int64(), "b.c": pa.string()})
    assert got.column("a").to_pylist() == [d.get("a") for d in docs]
    assert got.column("b.c").to_pylist() == [d.get("b", {}).get("c") for d in docs]


def test_holds_only_is_true_exactly_when_filter_keeps_everything(tmp_path):
    generate_isplay(tmp_path, runs=3, events_per_run=60, seed=2)
    log = rk.read_isplay(tmp_path, owner="t", progress=False)
    ids = sorted(log.run_ids)
    one = log.run(ids[0], tenant_id="t")
    assert compare_mod._holds_only(log, ids)
    assert compare_mod._holds_only(one, [ids[0]])
    assert not compare_mod._holds_only(log, ids[:2])
    assert not compare_mod._holds_only(one, [ids[1]])
    # events of the runs only, but a run header of another run: filter() would drop it
    extra = log.filter(run_ids=ids[:1])._replace(log.table.filter(pc.equal(
        pc.cast(log.table.column("run_id"), pa.string()), ids[0])), runs=log.runs)
    assert not compare_mod._holds_only(extra, [ids[0]])
    assert compare_mod._holds_only(log.filter(run_ids=ids[:2]), ids[:2])


def test_stamps_changed_unfiltered_equals_filtered(tmp_path, monkeypatch):
    """compare's stamps column with the filter skipped equals the column computed through
    filter() every time (the previous way), for pairs that cover the log and pairs that
    do not."""
    generate_isplay(tmp_path, runs=3, events_per_run=80, seed=4)
    log = rk.read_isplay(tmp_path, owner="t", progress=False)
    ids = sorted(log.run_ids)
    # the "replay" side: the same runs with temperature changed in their model calls
    pay = pc.replace_substring(log.table.column("payload"), '"temperature": 0.2',
                               '"temperature": 0.7')
    pay = pc.replace_substring(pay, '"temperature":0.2', '"temperature":0.7')
    other = log._replace(log.table.set_column(log.table.column_names.index("payload"),
                                              "payload", pay))
    cases = [pd.DataFrame({"tenant_id": ["t"] * 3, "base_run_id": ids, "replay_run_id": ids}),
             pd.DataFrame({"tenant_id": ["t"], "base_run_id": [ids[1]],
                           "replay_run_id": [ids[1]]})]
    got = [compare_mod._stamps_changed(log, other, p).tolist() for p in cases]
    assert "temperature" in got[0][0]
    monkeypatch.setattr(compare_mod, "_holds_only", lambda *_: False)
    stamps._STAMPS_MEMO.clear()
    want = [compare_mod._stamps_changed(log, other, p).tolist() for p in cases]
    assert got == want


@pytest.mark.parametrize("enabled", [True, False])
def test_map_distinct_objects_restores_the_gc_state(enabled):
    texts = pa.array(['{"a": 1}', '{"a": [2]}', "not json", "[3]", '{"a": 1}'],
                     pa.large_string())
    seen = []

    def fn(doc):
        seen.append(gc.isenabled())
        return doc["a"]

    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        values, idx = stamps._map_distinct_objects(texts, fn, default="-")
        assert gc.isenabled() is enabled
        assert seen == [False, False]  # paused while the documents are decoded
        assert [values[i] for i in idx.tolist()] == [1, [2], "-", "-", 1]

        def boom(doc):
            raise KeyError("x")

        with pytest.raises(KeyError):
            stamps._map_distinct_objects(texts, boom, default=None)
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


def _old_run_tree(tables):
    """run_tree's node loop as it was: every run filtered out of its table."""
    tr = importlib.import_module("replaykit.report._transcript")
    nodes = []
    for t in tables:
        for run_id in pc.unique(pc.cast(t.column("run_id"), pa.string())).to_pylist():
            sub = t.filter(pc.equal(pc.cast(t.column("run_id"), pa.string()), run_id))
            nodes.append(tr._run_node(sub, run_id, tr.MAX_TREE_NODES))
    return nodes


def test_run_tree_of_one_run_tables_equals_the_filtered_nodes(tmp_path):
    tr = importlib.import_module("replaykit.report._transcript")
    generate_isplay(tmp_path, runs=2, events_per_run=120, seed=6)
    log = rk.read_isplay(tmp_path, owner="t", progress=False)
    one = [log.run(r, tenant_id="t").table for r in sorted(log.run_ids)]
    # one run per table (the fast path), and both runs in one table (filtered)
    for tables in (one, [log.table], one[:1]):
        got = tr.run_tree(tables)
        want = _old_run_tree(tables)
        flat = [n for root in got for n in [root, *root["children"]]]
        assert sorted(flat, key=lambda n: n["run_id"]) == \
            sorted(want, key=lambda n: n["run_id"])
    # a table whose run ids are all null: no events are a run's (as the filter had it)
    nul = one[0].set_column(one[0].column_names.index("run_id"), "run_id",
                            pa.nulls(one[0].num_rows, pa.string()))
    assert tr.run_tree([nul])[0]["events"] == _old_run_tree([nul])[0]["events"] == 0


def test_tool_sequences_of_the_selected_columns_equal_the_whole_tables(tmp_path):
    from replaykit import plots

    generate_isplay(tmp_path, runs=2, events_per_run=150, seed=8)
    log = rk.read_isplay(tmp_path, owner="t", progress=False)
    a, b = (log.run(r, tenant_id="t").table for r in sorted(log.run_ids))
    cols = ("tenant_id", "run_id", "seq", "kind", "tool_name")
    whole = pa.concat_tables([a, b], promote_options="permissive")
    some = pa.concat_tables([t.select(list(cols)) for t in (a, b)],
                            promote_options="permissive")
    assert plots.tool_sequences(some, max_points=40).to_json() == \
        plots.tool_sequences(whole, max_points=40).to_json()


def test_stamps_digest_is_remembered_per_live_table_only(tmp_path, monkeypatch):
    generate_isplay(tmp_path, runs=1, events_per_run=80, seed=9)
    log = rk.read_isplay(tmp_path, owner="t", progress=False)
    calls = []
    real = stamps._log_digest

    def counted(t, runs):
        calls.append(id(t))
        return real(t, runs)

    monkeypatch.setattr(stamps, "_log_digest", counted)
    stamps._DIGESTS.clear()
    stamps._STAMPS_MEMO.clear()
    first = stamps.stamps_df(log)
    again = stamps.stamps_df(log)
    assert len(calls) == 1  # the same live table: its digest is not recomputed
    pd.testing.assert_frame_equal(first, again)
    view = log.run(log.run_ids[0], tenant_id="t")  # another table object, same content
    pd.testing.assert_frame_equal(stamps.stamps_df(view), first)
    assert len(calls) == 2
    # a different table (changed payloads) never reuses an entry, even at a recycled id
    other = log._replace(log.table.set_column(
        log.table.column_names.index("payload"), "payload",
        pc.replace_substring(log.table.column("payload"), "gpt-4.1-mini", "gpt-4o")))
    stamps._DIGESTS[id(other.table)] = (lambda: None, lambda: None, b"stale")
    got = stamps.stamps_df(other)
    assert len(calls) == 3
    assert set(got["model"].dropna()) == {"gpt-4o"} != set(first["model"].dropna())


@pytest.mark.parametrize("first,max_events", [(0, 50), (37, 60), (250, 100), (399, 40),
                                              (0, 5000)])
def test_scrubber_of_a_prefix_fold_equals_the_whole_runs(tmp_path, first, max_events):
    """Without ``states`` a one-run log's scrubber folds only the rows up to the window's
    end: the same data as from the fold of the whole run (``states=`` keeps that path)."""
    from replaykit.fold import agent, fold

    core = importlib.import_module("replaykit.report._core")
    generate_isplay(tmp_path, runs=1, events_per_run=400, seed=10)
    log = rk.read_isplay(tmp_path, owner="t", progress=False)
    whole = fold(log, agent())
    got, got_h = core._scrubber_data(log, tenant_id="t", first=first, max_events=max_events)
    want, want_h = core._scrubber_data(log, tenant_id="t", first=first,
                                       max_events=max_events, states=whole)
    assert got == want
    assert got["total"] == log.table.num_rows and got["shown"] == len(got["seq"])
    assert got_h[0].tolist() == want_h[0].tolist() and got_h[1] == want_h[1]
    # the base side, with the replay's data as ``like``
    other, _ = core._scrubber_data(log, tenant_id="t", first=first, max_events=max_events,
                                   like=(want, want_h))
    again, _ = core._scrubber_data(log, tenant_id="t", first=first, max_events=max_events,
                                   like=(want, want_h), states=whole)
    assert other == again
