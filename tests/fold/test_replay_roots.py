"""Snapshot-rooted replay (``open_replay(..., from_state=...)``) and the cache read mode locked
at handle creation."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from _fold_strategies import logs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit._base.json import canonical_json
from replaykit.fold import InMemoryCache, state_json

DATA = Path(__file__).resolve().parents[2] / "data"


@settings(max_examples=35, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=logs, cut=st.integers(0, 40), as_json=st.booleans(),
       projections=st.sampled_from(["agent", "harness"]))
def test_rooted_walk_equals_the_full_fold_at_every_later_step(log, cut, as_json, projections):
    proj = rk.agent() if projections == "agent" else rk.harness()
    sf = rk.fold(log, proj)
    for tenant, run in log.runs_df()[["tenant_id", "run_id"]].itertuples(index=False):
        seqs = log.run(run, tenant_id=tenant).table.column("seq").to_pylist()
        k = min(cut, len(seqs) - 1)
        saved = sf.at(run, seqs[k], tenant_id=tenant)
        h = rk.open_replay(log, run, tenant_id=tenant, projections=proj, from_seq=seqs[k],
                           from_state=state_json(saved) if as_json else saved)
        assert canonical_json(h.state) == canonical_json(saved)
        later = seqs[k + 1:]
        for n, res in enumerate(h, start=1):
            assert res.seq == later[n - 1]
            assert canonical_json(res.state) == canonical_json(
                sf.at(run, res.seq, tenant_id=tenant))
        assert h.position == len(later)
        # seek re-folds from the saved state, idempotently
        for s in reversed(later[:3]):
            assert canonical_json(h.seek(s)) == canonical_json(sf.at(run, s, tenant_id=tenant))
        assert canonical_json(h.seek(None)) == canonical_json(saved)


def test_from_state_takes_a_state_frame_row():
    log = rk.read_isplay(DATA / "isplay", owner="acme")
    sf = rk.fold(log, rk.agent())
    steps = sf.steps_df()
    run = "run-claims-C-104"
    mine = steps[steps["run_id"] == run].reset_index(drop=True)
    row = mine.iloc[6].to_dict()
    row["state"] = sf.at(run, int(row["seq"]), tenant_id="acme")
    h = rk.open_replay(log, run, tenant_id="acme", from_state=row)
    assert h.from_seq == int(row["seq"])
    nxt = h.step()
    assert nxt.seq == int(mine["seq"].iloc[7])
    assert canonical_json(nxt.state) == canonical_json(sf.at(run, nxt.seq, tenant_id="acme"))
    final = sf.final().set_index("run_id").loc[run]  # a final() row: nothing left to walk
    fr = {"run_id": run, "seq": int(final["seq"]), "state": final["state"]}
    assert rk.open_replay(log, run, tenant_id="acme", from_state=fr).step().done


def test_from_state_errors():
    log = rk.read_isplay(DATA / "isplay", owner="acme")
    run = "run-claims-C-104"
    st0 = rk.fold(log, rk.agent()).at(run, 3, tenant_id="acme")
    with pytest.raises(ValueError, match="needs from_seq"):
        rk.open_replay(log, run, tenant_id="acme", from_state=st0)
    with pytest.raises(ValueError, match="not valid JSON"):
        rk.open_replay(log, run, tenant_id="acme", from_seq=3, from_state="{nope")
    with pytest.raises(ValueError, match="lacks the fields"):
        rk.open_replay(log, run, tenant_id="acme", from_seq=3, from_state={"x": 1})
    with pytest.raises(ValueError, match="not 'run-claims-C-104'"):
        rk.open_replay(log, run, tenant_id="acme",
                       from_state={"run_id": "other", "seq": 3, "state": st0})
    with pytest.raises(ValueError, match="from_seq=4"):
        rk.open_replay(log, run, tenant_id="acme", from_seq=4,
                       from_state={"run_id": run, "seq": 3, "state": st0})


def test_cache_mode_is_locked_and_part_of_the_identity():
    log = rk.read_isplay(DATA / "isplay", owner="acme")
    run = "run-claims-C-104"
    h = rk.open_replay(log, run, tenant_id="acme", cache=InMemoryCache({}),
                       cache_mode="strict-mode")
    with pytest.raises(AttributeError, match="locked"):
        h.cache_mode = "best-effort"  # type: ignore[misc]
    assert h.cache_mode == "strict-mode"
    other = rk.open_replay(log, run, tenant_id="acme", cache_mode="best-effort")
    assert h.identity == ("acme", run, None, None, "strict-mode")
    assert h.identity != other.identity
    assert h.identity[:4] == other.identity[:4]


# ----------------------------------------------------------------------------- read modes
@pytest.fixture(scope="module")
def keyed():
    log = rk.read_pleach(DATA / "pleach" / "harness_event_log.jsonl")
    run = log.runs_df().iloc[0]
    br = rk.Branch(base=log, run_id=run.run_id, tenant_id=run.tenant_id, checkpoint=0,
                   name="keyed")
    t = log.run(run.run_id, tenant_id=run.tenant_id).table
    rows = [(s, k) for s, k in zip(t.column("seq").to_pylist(),
                                   t.column("cache_key").to_pylist(), strict=True)
            if k is not None and s > 0]
    assert len(rows) >= 3
    return br, rows


def test_replay_honours_the_three_read_modes(keyed):
    br, rows = keyed
    missing_seq, missing_key = rows[1]
    cache = InMemoryCache({k: "v" for s, k in rows if k != missing_key})
    best = rk.replay(br, cache=cache, cache_mode="best-effort")
    assert best.status == "completed"
    lk = best.cache_lookups_df()
    assert lk["cache_key"].tolist() == [k for _, k in rows]
    assert lk["base_seq"].tolist() == [s for s, _ in rows]
    assert lk.set_index("cache_key").loc[missing_key, "via"] == "live"
    assert int(lk["hit"].sum()) == len(rows) - 1
    with pytest.raises(rk.ReplayCacheMissError) as miss:
        rk.replay(br, cache=cache)  # cross-mode-readable is the default: a miss raises
    assert (miss.value.key, miss.value.seq, miss.value.mode) == (
        missing_key, missing_seq, "cross-mode-readable")
    full = InMemoryCache({k: "v" for _, k in rows})
    assert rk.replay(br, cache=full).status == "completed"  # every read hits
    with pytest.raises(rk.ReplayCacheMissError) as strict:
        rk.replay(br, cache=full, cache_mode="strict-mode")  # any read raises, even a hit
    assert (strict.value.key, strict.value.seq) == (rows[0][1], rows[0][0])
    assert rk.replay(br).cache_lookups_df().empty  # no cache: the log alone
    with pytest.raises(ValueError, match="cache_mode"):
        rk.replay(br, cache=full, cache_mode="lenient")
    # resume keeps the mode
    assert best.resume().cache_lookups_df()["via"].tolist() == lk["via"].tolist()


def test_cohort_replays_honour_the_read_modes():
    from replaykit.datasets import generate_cohorts

    d = generate_cohorts(runs=8, events_per_run=30, cache_eviction=[0.5, 0.0], seed=4)
    statuses = {}
    for mode in ("best-effort", "cross-mode-readable", "strict-mode"):
        rb = rk.cohorts(d.log, cache=d.cache, cache_mode=mode).replay(progress=False)
        statuses[mode] = rb.runs.set_index("run_id")["status"]
        if mode != "best-effort":
            err = rb.runs.loc[rb.runs["status"] == "error", "error"]
            assert err.str.startswith("ReplayCacheMissError").all()
    assert (statuses["best-effort"] == "completed").all()
    # cross-mode: exactly the runs with an evicted key after seq 0 fail
    cov = rk.cache_coverage(d.log, d.cache)
    cov = cov[cov["seq"] > 0]
    missing = set(cov.loc[~cov["hit"], "run_id"])
    assert missing and set(statuses["cross-mode-readable"][lambda s: s == "error"].index) \
        == missing
    assert set(statuses["strict-mode"][lambda s: s == "error"].index) == set(cov["run_id"])


# ----------------------------------------------------------------------------- cache keys
def test_cache_key_canonical_form():
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    cfg = {"model": "m", "temperature": 0.0, "maxTokens": 5, "stop": "END"}
    k = rk.cache_key(msgs, cfg)
    assert k.startswith("rk1:") and len(k) == 36
    # spelling, key order, ids, text parts, nulls and integral floats do not matter ...
    same = rk.cache_key(
        [{"content": "Be brief.", "role": "system", "id": "m1"},
         {"role": "user", "content": [{"type": "text", "text": "h"}, {"type": "text",
                                                                      "text": "i"}]}],
        {"max_tokens": 5.0, "stopSequences": ["END"], "temperature": 0, "model": "m",
         "seed": None})
    assert same == k
    # ... what the model sees does
    assert rk.cache_key(msgs, {**cfg, "temperature": 0.2}) != k
    assert rk.cache_key(msgs[1:], cfg) != k
    assert rk.cache_key(msgs, {**cfg, "tools": [{"name": "t"}]}) != k
    import hashlib

    want = {"v": 1, "config": {"max_tokens": 5, "model": "m", "stop": ["END"],
                               "temperature": 0},
            "messages": [{"role": "system", "content": "Be brief."},
                         {"role": "user", "content": "hi"}]}
    assert k == "rk1:" + hashlib.sha256(canonical_json(want).encode()).hexdigest()[:32]
    with pytest.raises(TypeError, match="messages"):
        rk.cache_key("hi", cfg)  # type: ignore[arg-type]


def test_cache_coverage_derives_keys_for_unkeyed_requests():
    from replaykit.provenance.cachekey import derive_keys

    log = rk.read_isplay(DATA / "isplay", owner="acme")
    keys = derive_keys(log)
    calls = log.events_df()
    calls = calls[calls["type"] == "model.call"]
    assert keys["seq"].tolist() == calls["seq"].tolist()
    import json

    first = json.loads(calls["payload"].iloc[0])
    s = first["settings"]
    want = rk.cache_key(first["messages"], {
        "model": s["model"], "provider": s["provider"], "temperature": s["temperature"],
        "max_tokens": s["maxTokens"], "system": first["prompt"], "tools": first["tools"]})
    assert keys["cache_key"].iloc[0] == want
    cache = InMemoryCache({want: "cached output"})
    cov = rk.cache_coverage(log, cache, derive=True)
    plain = rk.cache_coverage(log, cache)  # rows that carry their own key
    assert int(cov["derived"].sum()) == len(calls) and len(cov) == len(calls) + len(plain)
    assert cov.loc[~cov["derived"], "cache_key"].tolist() == plain["cache_key"].tolist()
    hits = cov[cov["hit"]]
    assert set(hits["cache_key"]) == {want} and len(hits) == (keys["cache_key"] == want).sum()
    pos = list(zip(cov["run_id"].astype(str), cov["seq"], strict=True))
    assert pos == sorted(pos)  # in log order
    # pleach: model.completed rows carry keys; derived keys only for the unkeyed requests
    pl = rk.read_pleach(DATA / "pleach" / "harness_event_log.jsonl")
    cov = rk.cache_coverage(pl, InMemoryCache({}), derive=True)
    assert cov.loc[~cov["derived"], "cache_key"].notna().all()
    assert set(cov.loc[cov["derived"], "type"]) == {"model.requested"}
    assert (cov["seq"].diff().fillna(1) != 0).all()


# ----------------------------------------------------------------------------- patch records
def test_patch_records_are_read_under_both_names():
    from replaykit.branch.patches import PATCH_RECORD_KEY, patch_records_df

    log = rk.read_isplay(DATA / "isplay", owner="acme")
    br = rk.Branch.load(DATA / "isplay" / "branch-drop-fraud-clause.json", base=log,
                        tenant_id="acme")
    br = br.intervene(kind="json_patch", target_type="model.call", intervention_id="iv-bad",
                      patch={"operations": [{"op": "replace", "path": "/no/such", "value": 1}]})
    res = rk.replay(br, fixtures=DATA / "isplay" / "fixtures.json")
    assert PATCH_RECORD_KEY == "replayPatch"
    p = res.patches_df()
    assert set(p["record_key"]) == {"replayPatch"}
    assert {"iv-1", "iv-2", "iv-3"} <= set(p["intervention_id"])
    # every patched event carries a record; the origin column agrees
    patched = res.events.table.column("replay_origin").to_pylist()
    seqs = {s for s, o in zip(res.events.table.column("seq").to_pylist(), patched,
                              strict=True) if o == "patched"}
    assert set(p["seq"]) == seqs
    # the same records under isplay's name are read alike
    t = res.events.table
    renamed = pa.array([x.replace('"replayPatch":', '"isplayPatch":')
                        for x in t.column("payload").to_pylist()], pa.large_string())
    other = rk.EventLog(t.set_column(t.schema.get_field_index("payload"), "payload", renamed))
    q = patch_records_df(other)
    assert set(q["record_key"]) == {"isplayPatch"}
    cols = ["seq", "intervention_id", "status", "failures"]
    pd.testing.assert_frame_equal(q[cols], p[cols])
    failed = q[q["status"] == "failed"]
    assert set(failed["intervention_id"]) == {"iv-bad"} and len(failed) == 4
    assert failed["failures"].str.contains("/no/such").all()


# ----------------------------------------------------------------------------- origin column
def test_replay_origin_travels_with_the_events(tmp_path: Path):
    log = rk.read_isplay(DATA / "isplay", owner="acme")
    br = rk.Branch.load(DATA / "isplay" / "branch-drop-fraud-clause.json", base=log,
                        tenant_id="acme")
    res = rk.replay(br, fixtures=DATA / "isplay" / "fixtures.json")
    t = res.events.table
    assert t.schema.names[-2:] == ["replay_origin", "replay_provenance"]
    assert t.schema.names[:-2] == rk.EVENTS_SCHEMA.names
    rk.validate(t)  # an extension column is part of the schema contract
    origin = t.column("replay_origin").to_pylist()
    assert origin == res.annotations_df()["origin"].tolist()
    inherited = t.column("inherited").to_pylist()
    assert [o == "copied" for o in origin] == inherited
    assert {"copied", "patched", "fixture", "recorded"} <= set(origin)
    # kept by a user who only keeps result.events, and by save / load
    kept = res.events.events_df()
    assert kept["replay_origin"].astype(str).tolist() == origin
    back = rk.ReplayResult.load(res.save(tmp_path / "r"))
    assert back.events.table.column("replay_origin").to_pylist() == origin
    # downstream: compare, concat with a plain log (nulls there), fold
    assert rk.compare(log, res.events)["comparability"].iloc[0] == res.comparability
    both = rk.concat([log, res.events])
    col = both.table.column("replay_origin")
    assert col.null_count == len(log) and len(both) == len(log) + len(res.events)
    assert len(rk.fold(res.events, rk.agent())) == len(res.events)
    # a wrong extension type, or an unknown extra column, is still refused
    bad = t.set_column(t.schema.get_field_index("replay_origin"), "replay_origin",
                       pa.array([1] * t.num_rows))
    with pytest.raises(rk.SchemaError, match="replay_origin"):
        rk.validate(bad)
    with pytest.raises(rk.SchemaError, match="unexpected columns"):
        rk.validate(t.append_column("colour", pa.array(["x"] * t.num_rows)))


def test_from_state_takes_every_documented_input():
    """open_replay(from_state=...) accepts each form its docstring lists: a state mapping
    (StateFrame.at, h.state), its JSON text (str or bytes), a final() row (dict or pandas
    row) and a steps_df() row (dict or pandas row), and each gives the full fold's states
    from there on (issue 30 item 11)."""
    log = rk.read_isplay(DATA / "isplay", owner="acme")
    sf = rk.fold(log, rk.agent())
    run = "run-claims-C-104"
    steps = sf.steps_df()
    mine = steps[steps["run_id"] == run].reset_index(drop=True)
    seq = int(mine["seq"].iloc[6])
    saved = sf.at(run, seq, tenant_id="acme")
    with rk.open_replay(log, run, tenant_id="acme") as h0:
        h0.seek(seq)
        live = h0.state
    final = sf.final()
    fin_row = final[final["run_id"] == run].iloc[0]
    inputs = {
        "at": (saved, seq), "h.state": (live, seq), "json": (state_json(saved), seq),
        "json bytes": (state_json(saved).encode(), seq),
        "steps row (pandas)": (mine.iloc[6], None),
        "steps row (dict)": (mine.iloc[6].to_dict(), None),
        "final row (pandas)": (fin_row, None), "final row (dict)": (fin_row.to_dict(), None),
    }
    for name, (given_state, from_seq) in inputs.items():
        h = rk.open_replay(log, run, tenant_id="acme", from_state=given_state,
                           from_seq=from_seq)
        want_seq = int(fin_row["seq"]) if name.startswith("final") else seq
        assert h.from_seq == want_seq, name
        assert canonical_json(h.state) == canonical_json(
            sf.at(run, want_seq, tenant_id="acme")), name
        for res in h:
            assert canonical_json(res.state) == canonical_json(
                sf.at(run, res.seq, tenant_id="acme")), (name, res.seq)
    # a steps_df() row of another tenant, run or log is refused, never silently re-rooted
    row = mine.iloc[6].to_dict()
    with pytest.raises(ValueError, match="tenant 'acme'"):
        rk.open_replay(log, run, tenant_id="globex", from_state=row)
    with pytest.raises(ValueError, match="state_hash"):
        rk.open_replay(log, run, tenant_id="acme",
                       from_state={**row, "state_hash": int(row["state_hash"]) ^ 1})
    with pytest.raises(ValueError, match="no event with that seq"):
        rk.open_replay(log, run, tenant_id="acme", from_state={**row, "seq": 10**9})
