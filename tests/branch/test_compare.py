"""rk.compare and rk.tool_distance_matrix against the scalar metric definitions."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit.branch import metrics as M
from replaykit.schema import events_table

# an event is (kind, tool, args) ; tool_call events have tool and args
EV = st.one_of(
    st.tuples(st.just("tool_call"), st.sampled_from("abc"), st.sampled_from(["1", "2"])),
    st.tuples(st.sampled_from(["model_request", "model_response"]), st.none(), st.none()),
)


def _log(runs: dict[str, list[tuple]], parents: dict[str, str] | None = None,
         fixture_runs: dict[str, int] | None = None) -> rk.EventLog:
    cols: dict[str, list] = {k: [] for k in ("tenant_id", "run_id", "parent_run_id", "seq",
                                             "type", "kind", "tool_name", "args_hash", "text",
                                             "payload", "source")}
    for run, evs in runs.items():
        evs = list(evs)
        for _k in range((fixture_runs or {}).get(run, 0)):
            evs.append(("tool_result", "a", None))
        for i, (kind, tool, args) in enumerate(evs):
            fixture = kind == "tool_result"
            cols["tenant_id"].append("t")
            cols["run_id"].append(run)
            cols["parent_run_id"].append((parents or {}).get(run))
            cols["seq"].append(i)
            cols["type"].append(kind)
            cols["kind"].append(kind)
            cols["tool_name"].append(tool)
            cols["args_hash"].append(args)
            cols["text"].append(None)
            cols["payload"].append('{"fixtureId":"f"}' if fixture else "{}")
            cols["source"].append("test:mem")
    return rk.EventLog(events_table(cols))


RUN = st.lists(EV, min_size=1, max_size=12)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(RUN, RUN), min_size=1,
                max_size=6))
def test_compare_matches_scalar_definitions(pairs: list[tuple[list, list]]) -> None:
    base = _log({f"b{i}": b for i, (b, _r) in enumerate(pairs)})
    rep = _log({f"r{i}": r for i, (_b, r) in enumerate(pairs)},
               parents={f"r{i}": f"b{i}" for i in range(len(pairs))})
    df = rk.compare(base, rep).set_index("replay_run_id")
    for i, (b, r) in enumerate(pairs):
        row = df.loc[f"r{i}"]
        if not b or not r:
            continue  # an empty run has no rows, so it is not in the log
        sig_b, sig_r = [tuple(e) for e in b], [tuple(e) for e in r]
        tools_b = [e[1] for e in b if e[0] == "tool_call"]
        tools_r = [e[1] for e in r if e[0] == "tool_call"]
        ts_b = [(e[1], e[2]) for e in b if e[0] == "tool_call"]
        ts_r = [(e[1], e[2]) for e in r if e[0] == "tool_call"]
        assert row["first_divergence_step"] == M.first_divergence_step(sig_b, sig_r)
        assert row["changed_descendants"] == M.changed_descendants(sig_b, sig_r)
        assert row["tool_sequence_distance"] == M.tool_sequence_distance(tools_b, tools_r)
        assert row["tool_sequence_distance_norm"] == pytest.approx(
            M.tool_sequence_distance(tools_b, tools_r, normalised=True))
        assert row["tool_signature_distance"] == M.levenshtein(ts_b, ts_r)
        assert row["tool_argument_changed"] == M.tool_argument_changed(ts_b, ts_r)
        same_terminal = (b[-1][0] == r[-1][0])
        assert row["comparability"] == M.classify(
            status="completed", exact_policies=True,
            first_divergence=M.first_divergence_step(sig_b, sig_r),
            signature_distance=M.levenshtein(ts_b, ts_r),
            normalised_distance=M.tool_sequence_distance(tools_b, tools_r, normalised=True),
            same_terminal=same_terminal)


def _tc(*names: str) -> list[tuple]:
    return [("tool_call", n, "1") for n in names] + [("model_response", None, None)]


def test_four_classes_by_construction() -> None:
    base = _log({"b": _tc("a", "b", "c", "d")})
    rep = _log({
        "exact": _tc("a", "b", "c", "d"),
        "aligned": [("tool_call", "a", "1"), ("tool_call", "b", "1"), ("tool_call", "c", "1"),
                    ("tool_call", "d", "1"), ("model_request", None, None),
                    ("model_response", None, None)][:4] + [("model_request", None, None),
                                                          ("model_response", None, None)],
        "diverged": _tc("a", "b", "x", "d"),
        "far": _tc("x", "y", "z", "d"),
        "paused": _tc("a", "b"),
    })
    pairs = pd.DataFrame({"base_run_id": ["b"] * 5,
                          "replay_run_id": ["exact", "aligned", "diverged", "far", "paused"],
                          "status": ["completed"] * 4 + ["paused"]})
    df = rk.compare(base, rep, pairs).set_index("replay_run_id")
    assert df["comparability"].to_dict() == {
        "exact": "exact", "aligned": "aligned", "diverged": "diverged_but_comparable",
        "far": "non_comparable", "paused": "non_comparable"}
    assert df.loc["far", "tool_sequence_distance_norm"] == pytest.approx(0.75)
    assert df.loc["diverged", "tool_argument_changed"] == 0  # the tool itself changed
    # live policies never give "exact", even with equal signatures
    live = rk.compare(base, rep, pairs.assign(exact_policies=False))
    assert live.set_index("replay_run_id").loc["exact", "comparability"] == "aligned"


def test_fixture_dependency_and_missing_runs() -> None:
    base = _log({"b": _tc("a")})
    rep = _log({"r": _tc("a")}, parents={"r": "b"}, fixture_runs={"r": 2})
    row = rk.compare(base, rep).iloc[0]
    assert row["fixture_dependency_count"] == 2 and bool(row["sensitive_to_fixture"])
    with pytest.raises(KeyError, match="missing"):
        rk.compare(base, rep, pd.DataFrame({"base_run_id": ["zz"], "replay_run_id": ["r"]}))
    with pytest.raises(ValueError, match="replay_run_id"):
        rk.compare(base, rep, pd.DataFrame({"base_run_id": ["b"]}))


def test_tool_distance_matrix() -> None:
    seqs = {"r1": _tc("a", "b", "c"), "r2": _tc("a", "c"), "r3": _tc(), "r4": _tc("c", "b", "a")}
    log = _log(seqs)
    mat = rk.tool_distance_matrix(log)
    names = {r: [e[1] for e in s if e[0] == "tool_call"] for r, s in seqs.items()}
    for a in seqs:
        for b in seqs:
            assert mat.loc[a, b] == M.levenshtein(names[a], names[b])
    sub = rk.tool_distance_matrix(log, runs=["r4", "r1"])
    assert list(sub.index) == ["r4", "r1"] and sub.loc["r4", "r1"] == 2
    norm = rk.tool_distance_matrix(log, normalised=True)
    assert norm.loc["r1", "r2"] == pytest.approx(1 / 3)
    with pytest.raises(KeyError):
        rk.tool_distance_matrix(log, runs=["nope"])
    assert np.array_equal(mat.to_numpy(), mat.to_numpy().T)


def test_tool_distance_matrix_needs_rapidfuzz(monkeypatch: pytest.MonkeyPatch) -> None:
    log = _log({"r1": _tc("a")})
    monkeypatch.setitem(sys.modules, "rapidfuzz", None)
    monkeypatch.setitem(sys.modules, "rapidfuzz.distance", None)
    monkeypatch.setitem(sys.modules, "rapidfuzz.process", None)
    with pytest.raises(rk.MissingExtraError, match="rapidfuzz"):
        rk.tool_distance_matrix(log)
    # compare falls back to the pure-Python edit distance
    base = _log({"b": _tc("a", "b")})
    rep = _log({"r": _tc("b")}, parents={"r": "b"})
    assert rk.compare(base, rep).loc[0, "tool_sequence_distance"] == 1
