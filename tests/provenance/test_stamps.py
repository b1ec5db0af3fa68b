"""Reproducibility stamps: log.stamps_df(), rk.stamp_diff, rk.stamp_drift, compare's
stamps_changed -- on the bundled samples of every format, on OTel / Inspect logs made by the
real SDKs, and on the toh corpus."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pandas as pd
import pytest

import replaykit as rk
from replaykit._base.json import canonical_json
from replaykit.branch import Branch, replay
from replaykit.datasets import generate_cohorts
from replaykit.provenance.rules import STAMP_FIELDS

DATA = Path(__file__).resolve().parents[2] / "data"


def _h(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def test_columns_and_isplay_values():
    log = rk.read_isplay(DATA / "isplay", owner="acme")
    st = log.stamps_df()
    assert list(st.columns) == ["tenant_id", "run_id", "from_seq", "to_seq", *STAMP_FIELDS,
                                "sources", "changes"]
    assert len(st) == log.num_runs == 2  # one stamp per run: nothing switches
    doc = json.loads((DATA / "isplay" / "claims-triage-C-104.json").read_text())
    call = next(e for e in doc["events"] if e["type"] == "model.call")
    row = st.set_index("run_id").loc["run-claims-C-104"]
    assert row["model"] == call["settings"]["model"] == "gpt-4.1-mini"
    assert row["provider"] == call["settings"]["provider"]
    assert row["temperature"] == call["settings"]["temperature"]
    assert row["max_tokens"] == call["settings"]["maxTokens"]
    assert row["harness_version"] == f"{doc['run']['agent']['name']}@" \
                                     f"{doc['run']['agent']['version']}"
    assert row["system_prompt"] == call["prompt"]
    assert row["system_prompt_hash"] == _h(call["prompt"])
    assert row["tool_schema_hash"] == _h(canonical_json(call["tools"]))
    assert row["tools"] == len(call["tools"])
    assert pd.isna(row["seed"]) and pd.isna(row["top_p"]) and pd.isna(row["transport"])
    src = json.loads(row["sources"])
    assert src["model"] == "model.call settings.model"
    assert src["harness_version"] == "runs.attrs agent.version"
    assert "seed" not in src  # nothing recorded, nothing named
    assert (row["from_seq"], row["to_seq"]) == (0, len(log.run("run-claims-C-104",
                                                                tenant_id="acme")) - 1)


def test_pleach_model_switches_get_one_row_each_with_seq_ranges():
    log = rk.read_pleach(DATA / "pleach" / "harness_event_log.jsonl")
    st = log.stamps_df()
    # reference: decode every model.requested row one by one; a value holds until the run
    # records another one, and the first value recorded holds from the run's start
    ev = log.events_df()
    ev = ev[ev["type"] == "model.requested"]
    for run, g in ev.groupby("run_id", observed=True):
        recs = []
        for p in g["payload"]:
            d = json.loads(p)
            recs.append([d.get("model"), d.get("provider"),
                         (d.get("settings") or {}).get("temperature")])
        for j in range(3):
            known = [r[j] for r in recs if r[j] is not None]
            last = known[0] if known else None
            for r in recs:
                last = r[j] if r[j] is not None else last
                r[j] = last
        want = []
        for seq, r in zip(g["seq"], recs, strict=True):
            if not want or want[-1][1] != tuple(r):
                want.append((int(seq), tuple(r)))
        got = st[st["run_id"] == run]
        got_keys = [(m, p, float(t)) for m, p, t in zip(got["model"], got["provider"],
                                                       got["temperature"], strict=True)]
        # stamp rows may also split where only the response-side model changes
        collapsed = [k for i, k in enumerate(got_keys) if i == 0 or got_keys[i - 1] != k]
        assert collapsed == [k for _, k in want], run
        starts = [int(s) for i, s in enumerate(got["from_seq"])
                  if i and got_keys[i - 1] != got_keys[i]]
        assert starts == [s for s, _ in want[1:]], run
        assert int(got["from_seq"].iloc[0]) == 0
    # ranges tile each run without gaps
    for _, g in st.groupby("run_id"):
        assert (g["from_seq"].iloc[1:].to_numpy() == g["to_seq"].iloc[:-1].to_numpy() + 1).all()
    multi = st.groupby("run_id").size()
    assert (multi > 1).any()
    changed = st[st["changes"] != ""]
    assert changed["changes"].str.contains("model").any()


def test_toh_bundled_header_and_children_without_one():
    log = rk.read_toh(DATA / "toh", owner="demo")
    st = log.stamps_df().set_index("run_id")
    assert len(st) == log.num_runs
    root = st.loc["7d0c1e2a-0000-4000-8000-00000000a001"]
    assert (root["model"], root["provider"]) == ("demo-model-small", "demo-provider")
    assert root["system_prompt"] == "You are a gardening helper."
    assert root["tool_schema_hash"] == _h(canonical_json(["read", "write", "spawn_agent"]))
    assert root["tools"] == 3
    child = st.loc["7d0c1e2a-0000-4000-8000-00000000a002"]  # no request/header: unknown
    assert child[list(STAMP_FIELDS)].isna().all()
    assert child["sources"] == "{}"


def test_empty_log():
    st = rk.EventLog(rk.schema.empty_events()).stamps_df()
    assert len(st) == 0 and "model" in st.columns


# ----------------------------------------------------------------------------- OTel / Inspect
def test_otel_request_attributes_and_resource(tmp_path: Path):
    pytest.importorskip("opentelemetry.sdk") if os.environ.get("CI") != "true" else None
    from google.protobuf import json_format
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "agent",
                                                        "service.version": "4.2.0"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("demo.genai", "1.0")
    conv = {"gen_ai.conversation.id": "conv-1"}
    tools = json.dumps([{"type": "function", "name": "get_weather"}])
    with tracer.start_as_current_span("invoke_agent", attributes={
            "gen_ai.operation.name": "invoke_agent", **conv}):
        for model, temp in (("gpt-x", 0.2), ("gpt-x", 0.2), ("gpt-y", 0.7)):
            with tracer.start_as_current_span(f"chat {model}", attributes={
                    "gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                    "gen_ai.provider.name": "openai", "gen_ai.request.temperature": temp,
                    "gen_ai.request.max_tokens": 256, "gen_ai.request.seed": 42,
                    "gen_ai.request.stop_sequences": ["END"],
                    "gen_ai.system_instructions": "Be brief.",
                    "gen_ai.tool.definitions": tools, **conv}) as s:
                s.set_attribute("gen_ai.response.model", model + "-2025")
                s.set_attribute("gen_ai.response.finish_reasons", ["stop"])
    provider.shutdown()
    doc = json.loads(json_format.MessageToJson(encode_spans(exporter.get_finished_spans())))
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(doc))
    log = rk.read_otel(path, owner="t")
    st = log.stamps_df()
    assert st["run_id"].unique().tolist() == ["conv-1"]
    assert st["model"].tolist() == ["gpt-x", "gpt-y"]  # a switch: two stamps
    assert st["model_version"].tolist() == ["gpt-x-2025", "gpt-y-2025"]
    assert st["temperature"].tolist() == [0.2, 0.7]
    assert set(st["changes"].iloc[1].split(",")) == {"model", "model_version", "temperature"}
    first = st.iloc[0]
    assert (first["provider"], first["max_tokens"], first["seed"]) == ("openai", 256, 42)
    assert first["stop_sequences"] == '["END"]'
    assert first["system_prompt"] == "Be brief." and first["system_prompt_hash"] == _h(
        "Be brief.")
    assert first["tool_schema_hash"] == _h(canonical_json(json.loads(tools)))
    assert first["client_version"] == "4.2.0"
    src = json.loads(first["sources"])
    assert src["temperature"] == "model_response attributes.gen_ai.request.temperature"
    assert src["provider"] == "model_response attributes.gen_ai.provider.name"
    # the second stamp starts at the event that records the switch
    ev = log.events_df()
    third = ev[ev["kind"] == "model_response"]["seq"].iloc[2]
    assert st["from_seq"].tolist() == [0, third]
    assert st["to_seq"].iloc[1] == ev["seq"].max()


@pytest.fixture(scope="module")
def inspect_log(tmp_path_factory: pytest.TempPathFactory) -> rk.EventLog:
    try:
        from inspect_ai import Task, eval
        from inspect_ai.dataset import Sample
        from inspect_ai.model import ModelOutput, ModelUsage, get_model
        from inspect_ai.scorer import includes
        from inspect_ai.solver import generate
    except ImportError:  # pragma: no cover - depends on the environment
        if os.environ.get("CI") == "true":
            raise
        pytest.skip("inspect_ai is not installed")
    m = "mockllm/model"
    outs = []
    for text in ("10", "0"):
        o = ModelOutput.from_content(m, text)
        o.usage = ModelUsage(input_tokens=5, output_tokens=1, total_tokens=6)
        outs.append(o)
    task = Task(dataset=[Sample(input="1+2+3+4?", target="10", id="s1"),
                         Sample(input="1-1?", target="0", id="s2")],
                solver=[generate()], scorer=includes())
    d = tmp_path_factory.mktemp("inspect_stamps")
    logs = eval(task, model=get_model(m, custom_outputs=outs), log_dir=str(d), display="none",
                temperature=0.3, seed=7, max_tokens=64, max_samples=1)
    return rk.read_inspect(logs[0].location, owner="t")


def test_inspect_model_generate_config_and_packages(inspect_log: rk.EventLog):
    import inspect_ai

    st = inspect_log.stamps_df()
    assert len(st) == inspect_log.num_runs == 2
    assert set(st["model"]) == {"mockllm/model"}
    assert set(st["provider"]) == {"mockllm"}
    assert st["temperature"].tolist() == [0.3, 0.3]
    assert st["seed"].tolist() == [7, 7] and st["max_tokens"].tolist() == [64, 64]
    assert set(st["harness_version"]) == {f"inspect_ai@{inspect_ai.__version__}"}
    assert json.loads(st["package_versions"].iloc[0])["inspect_ai"] == inspect_ai.__version__


# ----------------------------------------------------------------------------- comparisons
@pytest.fixture(scope="module")
def isplay_log() -> rk.EventLog:
    return rk.read_isplay(DATA / "isplay", owner="acme")


def test_compare_names_the_changed_stamps(isplay_log: rk.EventLog):
    # the bundled branch sets temperature 0, drops a tool and edits the first prompt
    br = Branch.load(DATA / "isplay" / "branch-drop-fraud-clause.json", base=isplay_log,
                     tenant_id="acme")
    res = replay(br, fixtures=DATA / "isplay" / "fixtures.json")
    changed = res.metrics["stamps_changed"].split(",")
    assert changed == ["temperature", "system_prompt_hash", "system_prompt",
                       "tool_schema_hash", "tools"]
    plain = Branch(base=isplay_log, run_id="run-claims-C-104", tenant_id="acme",
                   checkpoint="cp-intake", name="plain")
    assert replay(plain).metrics["stamps_changed"] == ""
    df = rk.compare(isplay_log, res.events)
    assert df.columns[-1] == "stamps_changed"
    assert df["stamps_changed"].iloc[0] == res.metrics["stamps_changed"]
    diff = rk.stamp_diff(isplay_log.run("run-claims-C-104", tenant_id="acme"), res.events)
    d = diff.set_index("field")
    assert d.loc["temperature", "a"] == "0.2" and d.loc["temperature", "b"] == "0.0"
    assert bool(d.loc["temperature", "changed"]) and not bool(d.loc["model", "changed"])
    assert d.loc["tools", "b"] == "3"
    assert "seed" not in d.index  # recorded on neither side
    assert "seed" in rk.stamp_diff(isplay_log, res.events, all_fields=True)["field"].tolist()


def test_stamp_changed_on_one_side_only_is_not_a_change(isplay_log: rk.EventLog):
    base = isplay_log.run("run-claims-C-104", tenant_id="acme")
    bare = rk.EventLog(base.table)  # same events, no runs table: harness version unknown
    assert rk.stamp_diff(base, bare).set_index("field").loc["harness_version", "b"] is pd.NA
    pairs = pd.DataFrame({"base_run_id": ["run-claims-C-104"],
                          "replay_run_id": ["run-claims-C-104"]})
    assert rk.compare(base, bare, pairs)["stamps_changed"].iloc[0] == ""


def test_stamp_diff_of_two_cohorts_lists_counts():
    a = generate_cohorts(runs=40, semesters=["2025-fall"], model="gpt-5.1", seed=1).log
    b = generate_cohorts(runs=40, semesters=["2026-spring"], seed=1).log
    d = rk.stamp_diff(a, b).set_index("field")
    assert d.loc["model", "a"] == "gpt-5.1"
    counts = dict(part.rsplit(" (", 1) for part in d.loc["model", "b"].split(", "))
    assert sum(int(n.rstrip(")")) for n in counts.values()) == 40
    assert bool(d.loc["model", "changed"])
    with pytest.raises(TypeError):
        rk.stamp_diff(a, "not a log")


def test_stamp_drift_between_semesters():
    drift = generate_cohorts(runs=200, model=[None, "gpt-5.1"], seed=3)
    out = rk.stamp_drift(rk.cohorts(drift.log))
    row = out.set_index("field").loc["model"]
    assert (row["from_cohort"], row["to_cohort"], row["to_value"]) == (
        "2025-fall", "2026-spring", "gpt-5.1")
    assert row["to_share"] == 1.0 and row["shift"] == 1.0
    assert row["headline"].startswith("model changed from ")
    assert "gpt-5.1 (100%) between 2025-fall and 2026-spring" in row["headline"]
    # random model mix in both semesters: no drift; a shift threshold of 0 reports it
    steady = rk.cohorts(generate_cohorts(runs=200, seed=3).log)
    assert rk.stamp_drift(steady).empty
    assert not rk.stamp_drift(steady, min_shift=0.0).empty
    with pytest.raises(ValueError, match="unknown stamp fields"):
        rk.stamp_drift(steady, fields=["colour"])


# ----------------------------------------------------------------------------- corpus
@pytest.mark.corpus
# the corpus holds a child session whose parent log is not in it: the loader says so
@pytest.mark.filterwarnings("ignore::replaykit.io.toh.OrphanRunWarning")
def test_corpus_toh_stamps(toh_corpus: Path):
    log = rk.read_toh(toh_corpus, owner="corpus", errors="quarantine")
    st = log.stamps_df()
    assert st[["tenant_id", "run_id"]].drop_duplicates().shape[0] == log.num_runs
    # reference: the first request/header of each file, decoded line by line
    want: dict[str, str] = {}
    for f in sorted(toh_corpus.rglob("session*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            d = json.loads(line)
            if d.get("type") == "request/header":
                want[str(f)] = d["data"]["header"]["config"]["model"]
                break
    runs = log.runs_df()[["run_id", "source"]]
    first = st.drop_duplicates("run_id").merge(runs, on="run_id")
    got = {str(s).split(":", 1)[1]: m for s, m in zip(first["source"], first["model"],
                                                        strict=True)}
    checked = [k for k in want if k in got]
    assert len(checked) >= 100
    assert all(got[k] == want[k] for k in checked)
    # headless-profile switches reasoning effort mid-run (a request/header with
    # reason "change"): two stamp rows, the second starting at that header
    prof = st[st["run_id"].str.contains("headless-profile/session.expected")]
    assert prof["reasoning_effort"].tolist() == ["high", "off"]
    assert prof["changes"].tolist() == ["", "reasoning_effort"]
    ev = log.events_df()
    hdr = ev[(ev["run_id"] == prof["run_id"].iloc[0]) & (ev["type"] == "request/header")]
    assert int(prof["from_seq"].iloc[1]) == int(hdr["seq"].iloc[1])
    # safety policy from approval / sandbox / permission events, plugins from plugin messages
    assert st["safety_policy"].notna().sum() >= 20
    assert st["plugins"].str.contains("@buckeyestudio/toh-system-prompt").sum() >= 100


# ----------------------------------------------------------------------------- in the findings
def test_rca_findings_name_differed_and_pinned_variables(isplay_log: rk.EventLog):
    br = Branch.load(DATA / "isplay" / "branch-drop-fraud-clause.json", base=isplay_log,
                     tenant_id="acme")
    res = replay(br, fixtures=DATA / "isplay" / "fixtures.json")
    frame = res.summary().to_frame()
    line = frame[frame["sentence"].str.startswith("Controllable variables")]
    assert len(line) == 1 and line["kind"].iloc[0] == "evidence"
    text = line["sentence"].iloc[0]
    assert "temperature 0.2 in the base, 0.0 in the replay" in text
    assert "tools 4 in the base, 3 in the replay" in text
    assert "pinned (the same on both sides): model" in text
    assert "system_prompt (text changed)" in text  # long values are named, not pasted
    html = rk.report.rca(res, title="t", question="q").html
    assert "temperature 0.2 in the base, 0.0 in the replay" in html


def test_a_mid_run_switch_reads_as_a_sequence_not_as_a_change():
    from replaykit.branch.findings import stamp_change_text

    text = stamp_change_text("model", "gpt-4o -> gpt-4.1", "gpt-4.1")
    assert text == ("model gpt-4o, then gpt-4.1 (switched within the run) in the base, "
                    "gpt-4.1 in the replay")
    assert "->" not in text and "\u2192" not in text
    assert stamp_change_text("system_prompt", "x" * 41, "y") == "system_prompt (text changed)"


def test_cohort_report_headline_leads_with_stamp_drift():
    drift = generate_cohorts(runs=200, model=[None, "gpt-5.1"], seed=3)
    cs = rk.cohorts(drift.log, by="semester")
    diff = cs.compare("2025-fall", "2026-spring")
    html = rk.report.cohort(diff, title="t", question="q", cohorts=cs).html
    head = html[html.index("Stamp drift"):][:400]
    assert "model changed from" in head and "gpt-5.1 (100%)" in head
    steady = rk.cohorts(generate_cohorts(runs=200, seed=3).log, by="semester")
    plain = rk.report.cohort(steady.compare("2025-fall", "2026-spring"), title="t",
                             question="q", cohorts=steady).html
    assert "Stamp drift" not in plain


def test_findings_counts_have_thousands_separators():
    from replaykit.branch.findings import _count

    assert _count(20766) == "20,766" and _count(7) == "7" and _count(None) == "None"
