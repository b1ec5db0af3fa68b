"""The determinism contract, property-tested: for every run and every n,
n step()s == seek(seq_n) == StateFrame.at(seq_n) == at_step(n) == scalar reducer over n events,
as canonical JSON bytes; and the column-wise state_hash equals state_hash(state) of every
path's materialised state."""

from __future__ import annotations

import itertools

from _fold_strategies import logs
from hypothesis import HealthCheck, given, settings

import replaykit as rk
from replaykit._base.json import canonical_json
from replaykit.fold import (
    NOTNULL,
    ScalarReducer,
    collection,
    counter,
    from_payload,
    last,
    maximum,
    minimum,
    on,
    reducer,
    state_hash,
)


def _recent_kinds(prev, ev):
    return (list(prev) + [ev["kind"]])[-3:]


CUSTOM = rk.projection(
    "custom",
    top_tokens=maximum("input_tokens"),
    low_score=minimum(from_payload("score", "int"), kinds=["other", "error"]),
    last_score=last(from_payload("score", "int")),
    doubled=counter(kinds="tool_call", value=2),
    err_finish=counter(where={"is_error": True, "finish": NOTNULL}),
    tokens_by_tool=counter(by="tool_name", value="input_tokens"),
    ids=collection(add=on(types=["chunk", "checkpoint.created"]), remove=on(kinds="error"),
                   key="ref_id", remove_key="ref_id"),
    recent=reducer(_recent_kinds, initial=[], kinds=["tool_call", "tool_result", "turn_end"]),
)
PROJECTIONS = [rk.agent(), rk.harness(), CUSTOM]

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _j(state) -> str:
    return canonical_json(state)


@SETTINGS
@given(log=logs)
def test_every_path_agrees_at_every_step(log: rk.EventLog) -> None:
    frame = rk.fold(log, PROJECTIONS)  # state_hash is on by default
    ref = ScalarReducer(PROJECTIONS)
    hashes = frame.state_hash()
    runs = log.runs_df()[["tenant_id", "run_id"]].itertuples(index=False)
    for tenant, run in runs:
        rows = log.run(run, tenant_id=tenant).table.to_pylist()
        expected = [_j(ref.snapshot(ref.zero()))] + [_j(s) for s in ref.states(rows)]
        start, end = frame.run_bounds(run, tenant_id=tenant)
        assert end - start == len(rows)
        stepper = rk.open_replay(log, run, tenant_id=tenant, projections=PROJECTIONS)
        seeker = rk.open_replay(log, run, tenant_id=tenant, projections=PROJECTIONS)
        assert _j(stepper.state) == expected[0]
        assert _j(frame.at_step(run, 0, tenant_id=tenant)) == expected[0]
        for n in range(1, len(rows) + 1):
            seq = rows[n - 1]["seq"]
            res = stepper.step()
            assert res.seq == seq and res.index == n
            assert _j(res.state) == expected[n]
            assert _j(seeker.seek(seq)) == expected[n]
            assert _j(frame.at(run, seq, tenant_id=tenant)) == expected[n]
            assert _j(frame.at_step(run, n, tenant_id=tenant)) == expected[n]
            # state_hash: the column equals state_hash() of every path's materialised state
            h = int(hashes[start + n - 1])
            assert h == state_hash(ref.states(rows[:n])[-1])
            assert h == state_hash(res.state) == state_hash(seeker.state)
            assert h == state_hash(frame.at(run, seq, tenant_id=tenant))
        assert stepper.step().done is True
        # seek backwards then step forward again: continues at the next event
        if rows:
            k = len(rows) // 2
            seeker.seek(rows[k - 1]["seq"] if k else None)
            for n in range(k + 1, len(rows) + 1):
                assert _j(seeker.step().state) == expected[n]


@SETTINGS
@given(log=logs)
def test_two_handles_walk_identically(log: rk.EventLog) -> None:
    for tenant, run in log.runs_df()[["tenant_id", "run_id"]].itertuples(index=False):
        a = [(s.seq, _j(s.state)) for s in rk.open_replay(log, run, tenant_id=tenant,
                                                          projections=PROJECTIONS)]
        b = [(s.seq, _j(s.state)) for s in rk.open_replay(log, run, tenant_id=tenant,
                                                          projections=PROJECTIONS)]
        assert a == b
        verdict = rk.check_determinism(log, run, tenant_id=tenant, projections=PROJECTIONS)
        assert verdict == rk.Verdict(True, len(a))


def test_non_deterministic_projection_caught_at_the_right_step() -> None:
    from replaykit.fold.synth import synthetic_log

    log = synthetic_log(200, 2, seed=3)
    ticks = itertools.count()

    def leaky(prev, ev):  # reads global state: differs between handles
        return next(ticks) if ev["seq"] >= 5 else 0

    proj = rk.projection("leaky", tick=reducer(leaky, initial=0))
    run = log.run_ids[0]
    tenant = log.runs_df().set_index("run_id").loc[run, "tenant_id"]
    verdict = rk.check_determinism(log, run, tenant_id=tenant, projections=proj, n=3)
    assert verdict.deterministic is False
    assert verdict.first_divergence_at == 5
    assert verdict.first_divergence_seq == 5
    assert verdict.steps == len(log.run(run, tenant_id=tenant))
