"""The replay handle: tenant scoping, step/seek/replay_turn, windows, cache modes, errors."""

from __future__ import annotations

import pytest

import replaykit as rk
from replaykit._base.json import canonical_json
from replaykit.errors import (
    ReplayCacheMissError,
    ReplayDivergenceError,
    ReplayError,
    ReplayKitError,
    ReplayUnknownEventError,
)
from replaykit.fold import InMemoryCache, ScalarReducer
from replaykit.fold.synth import synthetic_log
from replaykit.schema import events_table


@pytest.fixture(scope="module")
def log() -> rk.EventLog:
    return synthetic_log(800, 4, seed=11)


RUN = "run-000000"  # tenant acme (runs alternate acme / globex)


@pytest.mark.parametrize("bad", [None, ""])
def test_tenant_is_required(log: rk.EventLog, bad: object) -> None:
    with pytest.raises(TypeError, match="tenant_id"):
        rk.open_replay(log, RUN, tenant_id=bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tenant_id"):
        rk.check_determinism(log, RUN, tenant_id=bad)  # type: ignore[arg-type]


def test_run_id_is_required(log: rk.EventLog) -> None:
    with pytest.raises(TypeError, match="run_id"):
        rk.open_replay(log, "", tenant_id="acme")


def test_other_tenant_gets_replay_error_not_rows(log: rk.EventLog) -> None:
    with pytest.raises(ReplayError) as info:
        rk.open_replay(log, RUN, tenant_id="globex")
    assert info.value.tenant_id == "globex" and info.value.run_id == RUN


def test_zero_state_frozen_and_seq_is_from_seq(log: rk.EventLog) -> None:
    h = rk.open_replay(log, RUN, tenant_id="acme", from_seq=5, up_to_seq=9,
                       projections=rk.harness())
    assert h.seq == 5
    assert canonical_json(h.state) == (
        '{"eventCount":0,"exports":[],"interrupts":[],"subagents":[],"userCards":[]}')
    with pytest.raises(TypeError):
        h.state["eventCount"] = 3  # type: ignore[index]
    zero = h.state
    results = list(h)
    assert [r.seq for r in results] == [6, 7, 8, 9]
    assert [r.state["eventCount"] for r in results] == [1, 2, 3, 4]
    assert zero["eventCount"] == 0 and results[0].state is not results[1].state
    done = h.step()
    assert done.done is True and done.seq == 9 and done.state["eventCount"] == 4


def test_seek_is_idempotent_and_step_continues(log: rk.EventLog) -> None:
    h = rk.open_replay(log, RUN, tenant_id="acme")
    a = h.seek(40)
    b = h.seek(40)
    assert canonical_json(a) == canonical_json(b)
    assert h.seq == 40 and h.position == 40
    nxt = h.step()
    assert nxt.seq == 41
    fresh = rk.open_replay(log, RUN, tenant_id="acme")
    for _ in range(41):
        last = fresh.step()
    assert canonical_json(last.state) == canonical_json(nxt.state)
    assert canonical_json(h.seek(None)) == canonical_json(fresh.seek(0))
    assert h.seq is None and h.position == 0


def test_seek_past_the_end_clamps(log: rk.EventLog) -> None:
    h = rk.open_replay(log, RUN, tenant_id="acme")
    n = len(h)
    state = h.seek(10**9)
    assert h.position == n and h.step().done is True
    ref = ScalarReducer(rk.agent()).states(log.run(RUN, tenant_id="acme").table.to_pylist())
    assert canonical_json(state) == canonical_json(ref[-1])


def test_replay_turn(log: rk.EventLog) -> None:
    h = rk.open_replay(log, RUN, tenant_id="acme")
    first = h.replay_turn()
    assert first.boundary is True
    assert first.steps[-1].kind == "turn_end" and first.steps[-1].type == "turn.completed"
    assert len(first.steps) == 15  # the synthetic turn template
    assert first.state == first.steps[-1].state
    # a named message id: skip ahead to that turn's end
    third = h.replay_turn(message_id=f"{RUN}.t3.msg")
    assert third.boundary is True and third.message_id == f"{RUN}.t3.msg"
    assert third.steps[-1].seq == 3 * 16 - 1
    missing = h.replay_turn(message_id="no-such-message")
    assert missing.boundary is False and h.step().done is True


def test_replay_turn_without_turn_end_rows_uses_turn_values() -> None:
    t = events_table({
        "tenant_id": ["t"] * 5, "run_id": ["r"] * 5, "seq": [1, 2, 3, 4, 5],
        "type": ["a", "b", "a", "b", "c"], "kind": ["other"] * 5, "turn": [1, 1, 2, 2, 2],
        "payload": ["{}"] * 5, "source": ["x:mem"] * 5,
    })
    h = rk.open_replay(rk.EventLog(t), "r", tenant_id="t", projections=rk.harness())
    assert [s.seq for s in h.replay_turn().steps] == [1, 2]
    assert [s.seq for s in h.replay_turn().steps] == [3, 4, 5]


def test_close_context_manager_iterator(log: rk.EventLog) -> None:
    with rk.open_replay(log, RUN, tenant_id="acme") as h:
        seqs = [r.seq for r in h]
    assert seqs == list(range(1, len(log.run(RUN, tenant_id="acme")) + 1))
    h.close()  # idempotent
    with pytest.raises(ReplayError, match="closed"):
        h.step()
    with pytest.raises(ReplayError, match="closed"):
        h.seek(3)


def _keyed_log() -> rk.EventLog:
    return rk.EventLog(events_table({
        "tenant_id": ["t"] * 3, "run_id": ["r"] * 3, "seq": [1, 2, 3],
        "type": ["turn.started", "tool.completed", "turn.completed"],
        "kind": ["turn_start", "tool_result", "turn_end"],
        "cache_key": [None, "k-miss", "k-hit"],
        "payload": ["{}"] * 3, "source": ["x:mem"] * 3,
    }))


def test_cache_cross_mode_readable_raises_on_miss() -> None:
    h = rk.open_replay(_keyed_log(), "r", tenant_id="t", cache=InMemoryCache({"k-hit": 1}))
    assert h.step().cache_lookup is None
    with pytest.raises(ReplayCacheMissError) as info:
        h.step()
    err = info.value
    assert (err.key, err.mode, err.seq, err.run_id, err.tenant_id) == (
        "k-miss", "cross-mode-readable", 2, "r", "t")
    assert "best-effort" in str(err)
    assert h.position == 1  # the failing row was not consumed


def test_cache_best_effort_records_live_lookups() -> None:
    h = rk.open_replay(_keyed_log(), "r", tenant_id="t", cache=InMemoryCache({"k-hit": 1}),
                       cache_mode="best-effort")
    lookups = [r.cache_lookup for r in h]
    assert lookups[0] is None
    assert (lookups[1].via, lookups[1].hit) == ("live", False)
    assert (lookups[2].via, lookups[2].hit, lookups[2].value) == ("cache", True, 1)


def test_cache_strict_mode_raises_on_any_read() -> None:
    h = rk.open_replay(_keyed_log(), "r", tenant_id="t", cache=InMemoryCache({"k-hit": 1}),
                       cache_mode="strict-mode", up_to_seq=3, from_seq=2)
    with pytest.raises(ReplayCacheMissError) as info:
        h.step()
    assert info.value.key == "k-hit" and info.value.mode == "strict-mode"
    with pytest.raises(ValueError, match="cache_mode"):
        rk.open_replay(_keyed_log(), "r", tenant_id="t", cache_mode="lenient")  # type: ignore


def test_unknown_event_row_raises() -> None:
    log = rk.EventLog(events_table({
        "tenant_id": ["t", "t"], "run_id": ["r", "r"], "seq": [1, 2], "type": ["ok", ""],
        "kind": ["other", "other"], "payload": ["{}", "{}"], "source": ["x:mem"] * 2,
    }))
    h = rk.open_replay(log, "r", tenant_id="t")
    assert h.step().seq == 1
    with pytest.raises(ReplayUnknownEventError) as info:
        h.step()
    assert info.value.seq == 2 and info.value.event_type == ""


def test_error_hierarchy() -> None:
    assert issubclass(ReplayCacheMissError, ReplayDivergenceError)
    assert issubclass(ReplayDivergenceError, ReplayError)
    assert issubclass(ReplayUnknownEventError, ReplayError)
    assert issubclass(ReplayError, ReplayKitError)
    assert not issubclass(NotImplementedError, ReplayError)
    for name in ("ReplayError", "ReplayDivergenceError", "ReplayCacheMissError",
                 "ReplayUnknownEventError"):
        assert name in rk.__all__ and getattr(rk, name).__name__ == name
