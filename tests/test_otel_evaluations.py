"""replaykit's verdicts as OpenTelemetry ``gen_ai.evaluation.result`` events.

A divergence comparison (``rk.compare``) and a cohort comparison (``Cohorts.compare``) are
written as OTLP/JSON log records carrying the trace and root span id of each run judged; read
with the traces ``to_otel`` wrote, every record joins its run's root span (none is an orphan).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import replaykit as rk
from replaykit.datasets import generate_cohorts
from replaykit.io.otel.export import trace_id_of
from replaykit.schema import events_table


def _log(runs: dict[str, list[tuple[str, str | None]]],
         parents: dict[str, str] | None = None) -> rk.EventLog:
    cols: dict[str, list[Any]] = {k: [] for k in (
        "tenant_id", "run_id", "parent_run_id", "seq", "type", "kind", "tool_name", "ref_id",
        "args_hash", "text", "payload", "source")}
    for run, evs in runs.items():
        for i, (kind, tool) in enumerate(evs):
            for k, v in (("tenant_id", "t"), ("run_id", run),
                         ("parent_run_id", (parents or {}).get(run)), ("seq", i),
                         ("type", kind), ("kind", kind), ("tool_name", tool),
                         ("ref_id", f"c{i // 2}" if tool else f"m{i}"), ("args_hash", None),
                         ("text", None), ("payload", "{}"), ("source", "test:mem")):
                cols[k].append(v)
    return rk.EventLog(events_table(cols))


def _pair() -> tuple[rk.EventLog, rk.EventLog]:
    base = _log({"b1": [("tool_call", "a"), ("tool_result", "a"), ("tool_call", "b"),
                        ("tool_result", "b")]})
    rep = _log({"r1": [("tool_call", "a"), ("tool_result", "a"), ("tool_call", "c"),
                       ("tool_result", "c")]}, parents={"r1": "b1"})
    return base, rep


def _valid_otlp(doc: dict[str, Any]) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "_rt", Path(__file__).parent / "test_otel_roundtrip.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.valid_otlp(doc)


def _records(path: Path) -> list[dict[str, Any]]:
    doc = json.loads(path.read_text())
    return [r for rl in doc["resourceLogs"] for sl in rl["scopeLogs"] for r in sl["logRecords"]]


def _attrs(rec: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in rec["attributes"]}


def test_compare_verdicts_join_the_replay_traces(tmp_path: Path) -> None:
    base, rep = _pair()
    df = rk.compare(base, rep)
    assert df.loc[0, "first_divergence_step"] == 2
    rep.to_otel(tmp_path / "replay.otel.json")
    out = rk.to_otel_evaluations(df, tmp_path / "verdicts.otel.json", log=rep)
    _valid_otlp(json.loads(out.read_text()))
    _valid_otlp(json.loads((tmp_path / "replay.otel.json").read_text()))
    recs = _records(out)
    names = [_attrs(r)["gen_ai.evaluation.name"] for r in recs]
    assert "replaykit.first_divergence_step" in names and "replaykit.comparability" in names
    first = next(_attrs(r) for r in recs
                 if _attrs(r)["gen_ai.evaluation.name"] == "replaykit.first_divergence_step")
    assert first["gen_ai.evaluation.score.value"] == 2.0
    assert first["gen_ai.evaluation.score.label"] == df.loc[0, "comparability"]
    assert first["replaykit.base_run_id"] == "b1"
    assert {r["traceId"] for r in recs} == {trace_id_of("t", "r1")}
    assert all(r["eventName"] == "gen_ai.evaluation.result" for r in recs)
    # read back together: every verdict sits on the run's root span, none is an orphan
    back = rk.read_otel(tmp_path, owner="t")
    assert len(back.quarantine) == 0
    root = json.loads(back.table.column("payload")[0].as_py())
    assert root["name"] == "invoke_agent r1"
    assert [e["name"] for e in root["logs"]] == ["gen_ai.evaluation.result"] * len(recs)


def test_verdicts_as_span_events_of_to_otel(tmp_path: Path) -> None:
    base, rep = _pair()
    rep.to_otel(tmp_path / "r.json", evaluations=rk.compare(base, rep))
    spans = json.loads((tmp_path / "r.json").read_text())["resourceSpans"][0]["scopeSpans"][0][
        "spans"]
    root = next(s for s in spans if "parentSpanId" not in s)
    evals = [e for e in root["events"] if e["name"] == "gen_ai.evaluation.result"]
    assert len(evals) >= 2
    assert any(a["key"] == "gen_ai.evaluation.score.value" for e in evals
               for a in e["attributes"])


def test_cohort_verdicts_on_every_run_of_both_cohorts(tmp_path: Path) -> None:
    data = generate_cohorts(runs=80, error_rate=[0.02, 0.4], seed=5)
    cs = rk.cohorts(data.log.filter(tenant_id=data.log.tenants[0]))
    a, b = cs.labels[:2]
    res = cs.compare(a, b, n_boot=100, seed=1)
    res = res[res["analysis"] == "unpaired"]
    out = rk.to_otel_evaluations(res, tmp_path / "cohorts.otel.json", log=cs)
    recs = [_attrs(r) for r in _records(out)]
    runs = cs.runs_df()
    judged = runs[runs["cohort"].isin([a, b])]
    assert len(recs) == len(res) * len(judged)
    err = res[res["metric"] == "tool_error_rate"].iloc[0]
    got = [r for r in recs if r["gen_ai.evaluation.name"] == "replaykit.cohort.tool_error_rate"]
    assert {r["gen_ai.evaluation.score.label"] for r in got} == {
        "significant" if err["excludes_zero"] else "not_significant"}
    assert [r["gen_ai.evaluation.score.value"] for r in got] == [
        pytest.approx(err["diff"])] * len(got)
    assert {r["replaykit.cohort"] for r in got} == {a, b}


def test_bad_result_frames_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="columns"):
        rk.to_otel_evaluations(pd.DataFrame({"x": [1]}), tmp_path / "x.json")
    with pytest.raises(ValueError, match="Cohorts"):
        rk.to_otel_evaluations(pd.DataFrame({"metric": ["m"], "diff": [1.0]}),
                               tmp_path / "y.json")
    base, rep = _pair()
    df = rk.compare(base, rep)
    mixed = pd.concat([df, df.assign(tenant_id="other", replay_run_id="r2")])
    with pytest.raises(ValueError, match="one tenant"):  # never one file of two tenants
        rk.to_otel_evaluations(mixed, tmp_path / "m.json")
    assert not (tmp_path / "m.json").exists()
    with pytest.raises(ValueError, match="tenant of run"):  # no tenant: no trace id guessed
        rk.to_otel_evaluations(df.drop(columns="tenant_id"), tmp_path / "n.json")
    p = rk.to_otel_evaluations(df, tmp_path / "ok.json", log=rep)
    with pytest.raises(FileExistsError):
        rk.to_otel_evaluations(df, p, log=rep)


def test_read_otel_lists_the_verdicts_it_reads(tmp_path: Path) -> None:
    base, rep = _pair()
    df = rk.compare(base, rep)
    rep.to_otel(tmp_path / "replay.otel.json")
    rk.to_otel_evaluations(df, tmp_path / "verdicts.otel.json", log=rep)
    back = rk.read_otel(tmp_path, owner="t")
    ev = back.extras_df("otel_evaluations")
    first = ev[ev["name"] == "replaykit.first_divergence_step"]
    assert first["score_value"].tolist() == [2.0]
    assert first["score_label"].tolist() == [df.loc[0, "comparability"]]
    assert set(ev["run_id"]) == {"r1"} and set(ev["tenant_id"]) == {"t"}
    # a view of another tenant holds none of them
    assert "otel_evaluations" not in back.filter(tenant_id="other").extras or len(
        back.filter(tenant_id="other").extras["otel_evaluations"]) == 0
