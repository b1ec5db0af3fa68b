"""rk.report: content, escaping of hostile logs, saving, CLI and demo (no browser here)."""

from __future__ import annotations

import html
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

import replaykit as rk
from replaykit.cli.report import report_command
from replaykit.report import Report, cohort, rca, scrubber_data
from replaykit.report._embed import script_json

pytest.importorskip("plotly")

DATA = Path(__file__).resolve().parents[2] / "data" / "isplay"
BRANCH = DATA / "branch-drop-fraud-clause.json"
FIXTURES = DATA / "fixtures.json"

# Payloads that would run code if any log string reached the page unescaped.
XSS_SCRIPT = "<script>window.__pwned='script'</script>"
XSS_IMG = "<img src=x onerror=\"window.__pwned='img'\">"
XSS_BREAK = "</script><script>window.__pwned='breakout'</script>"
XSS_URL = "javascript:window.__pwned='url'"
HOSTILE_RUN = f"run-{XSS_SCRIPT}"
HOSTILE_TOOL = f"lookup{XSS_IMG}"
HOSTILE_TOOL2 = f"risk{XSS_BREAK}"


def hostile_log_files(tmp: Path) -> tuple[Path, Path]:
    """An isplay run and a branch whose ids, tool names and payloads carry script payloads."""
    events = [
        {"eventId": "e0", "type": "run.started", "ts": "2025-01-01T00:00:00Z",
         "note": XSS_BREAK},
        {"eventId": "e1", "type": "checkpoint", "checkpointId": "cp-1"},
        {"eventId": "e2", "type": "model.call", "refId": "mc1", "model": XSS_SCRIPT,
         "provider": XSS_URL, "prompt": f"Read {XSS_BREAK} and {XSS_IMG}",
         "messages": [{"role": "user", "content": f"see [link]({XSS_URL})"}]},
        {"eventId": "e3", "type": "model.result", "refId": "mc1", "finish": "tool-calls",
         "output": {"text": XSS_BREAK}},
        {"eventId": "e4", "type": "tool.call", "refId": "tc1", "toolName": HOSTILE_TOOL,
         "args": {"id": XSS_SCRIPT, "url": XSS_URL}},
        {"eventId": "e5", "type": "tool.result", "refId": "tc1", "toolName": HOSTILE_TOOL,
         "output": XSS_BREAK},
        {"eventId": "e6", "type": "tool.call", "refId": "tc2", "toolName": HOSTILE_TOOL2,
         "args": {"q": XSS_IMG}},
        {"eventId": "e7", "type": "tool.result", "refId": "tc2", "toolName": HOSTILE_TOOL2,
         "output": {"html": XSS_SCRIPT, "href": XSS_URL}},
        {"eventId": "e8", "type": "run.completed", "output": XSS_IMG},
    ]
    doc = {"format": "isplay.run/v1",
           "run": {"runId": HOSTILE_RUN, "projectId": "p1", "createdAt": "2025-01-01T00:00:00Z"},
           "checkpoints": [{"checkpointId": "cp-1", "eventId": "e1"}], "events": events}
    run = tmp / "hostile.json"
    run.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    branch = {"format": "isplay.branch/v1", "branchId": "br-x", "baseRunId": HOSTILE_RUN,
              "checkpointId": "cp-1", "projectId": "p1", "name": f"name {XSS_IMG}",
              "interventions": [{"interventionId": "iv-1", "kind": "tool_args_patch",
                                 "selector": {"target_ref": "tc1"},
                                 "patch": {"toolName": HOSTILE_TOOL,
                                           "args": {"id": XSS_BREAK, "url": XSS_URL}},
                                 "description": XSS_SCRIPT}]}
    bfile = tmp / "branch.json"
    bfile.write_text(json.dumps(branch), encoding="utf-8")
    return run, bfile


def hostile_result(tmp: Path) -> Any:
    run, bfile = hostile_log_files(tmp)
    log = rk.read_isplay(run, owner=f"t{XSS_IMG}", progress=False)
    branch = rk.Branch.load(bfile, base=log, tenant_id=f"t{XSS_IMG}")
    return rk.replay(branch, model_policy="recorded-only", tool_policy="blocked")


def demo_result(tenant: str = "acme") -> Any:
    log = rk.read_isplay(DATA, owner=tenant, progress=False)
    branch = rk.Branch.load(BRANCH, base=log, tenant_id=tenant)
    return rk.replay(branch, model_policy="recorded-only", tool_policy="pause-for-fixture",
                     fixtures=FIXTURES)


@pytest.fixture(scope="module")
def demo() -> Any:
    return demo_result()


@pytest.fixture(scope="module")
def demo_report(demo: Any) -> Report:
    return rca(demo, title="RCA-311", question="Does dropping the clause change the outcome?",
               notes="analyst notes")


def _scripts(page: str) -> list[str]:
    return re.findall(r"<script\b[^>]*>(.*?)</script>", page, flags=re.S)


# ------------------------------------------------------------------------------ content
def test_sections_in_order(demo_report: Report) -> None:
    assert demo_report.sections == [
        "question", "findings", "requirements", "interventions", "comparability", "changes",
        "first-divergence", "descendants", "tool-diff", "transcript", "fixtures", "integrity",
        "metrics", "repro", "figures", "scrubber"]
    for sid in demo_report.sections:
        assert f'<section id="{sid}">' in demo_report.html
    # every findings sentence links to a section that exists
    for row in demo_report.data["summary"].rows:
        assert row["section"] in demo_report.sections, row


def test_first_divergence_and_metrics(demo: Any, demo_report: Report) -> None:
    m = demo.metrics
    assert m["first_divergence_step"] == 3
    fd = demo_report.data["first_divergence"]
    assert fd["step"] == 3 and fd["kind"] == "model_request"
    assert [r["step"] for r in fd["rows"]] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert "First divergence at <b>step 3</b>" in demo_report.html
    # the prompt patch removed the clause: the diff shows it on the base side only
    assert any(line.startswith("-") and "Escalate suspected fraud." in line
               for line in fd["args_diff"])
    # ... and the changed-values table marks exactly the removed words
    assert "<del> Escalate suspected fraud. </del>" in demo_report.html
    for k in ("changed_descendants", "tool_signature_distance", "comparability"):
        assert re.search(r"<td [^>]*>" + re.escape(html.escape(str(m[k]))) + "</td>",
                         demo_report.html), k


def test_claim_comparability_and_fixture_wording(demo_report: Report) -> None:
    page = demo_report.html
    assert "not evidence of universal causality" in page
    assert "model policy recorded-only, tool policy pause-for-fixture" in page
    assert demo_report.data["comparability"] == "diverged_but_comparable"
    assert html.escape(rk.COMPARABILITY["diverged_but_comparable"]["advice"]) in page
    assert demo_report.data["sensitive_to_fixture"] is True
    assert "Sensitive to fixture." in page and "fx-risk-900" in page and "analyst" in page


def test_no_fixture_wording_without_fixtures(tmp_path: Path) -> None:
    res = hostile_result(tmp_path)
    rep = rca(res, title="t", question="q")
    assert rep.data["sensitive_to_fixture"] is False
    assert "Sensitive to fixture." not in rep.html


def test_integrity_and_stamp(demo_report: Report) -> None:
    assert demo_report.data["integrity"] == "not available"  # isplay exports carry no chain
    files = {Path(f["file"]).name: f for f in demo_report.data["inputs"]}
    import hashlib

    want = hashlib.sha256((DATA / "claims-triage-C-104.json").read_bytes()).hexdigest()
    assert files["claims-triage-C-104.json"]["sha256"] == want
    assert want in demo_report.html
    assert demo_report.data["versions"]["replaykit"] == rk.__version__
    assert "version pyarrow" in demo_report.html


def test_integrity_verified_for_a_chained_log(demo: Any) -> None:
    import pyarrow as pa

    from replaykit.report._core import _integrity

    base = demo.base.run(demo.branch.run_id, tenant_id="acme")
    chained = rk.stamp_chain(base).table
    assert _integrity(chained)["status"] == "verified"
    i = chained.schema.get_field_index("payload")
    payloads = chained.column("payload").to_pylist()
    tampered = chained.set_column(i, chained.schema.field(i),
                                  pa.array(['{"tampered":1}'] + payloads[1:],
                                           chained.schema.field(i).type))
    assert _integrity(tampered)["status"] == "broken"


def test_self_contained(demo_report: Report) -> None:
    page = demo_report.html
    from plotly.offline import get_plotlyjs

    marker = get_plotlyjs()[:200]
    assert page.count(marker) == 1  # plotly.js inlined exactly once
    assert "cdn." not in page.replace(get_plotlyjs(), "")
    # no element that loads a URL: no src= / href= other than in-page anchors
    shell = page.replace(get_plotlyjs(), "")
    for tag in re.findall(r"<[a-zA-Z][^>]*>", re.sub(r"<script[^>]*>.*?</script>", "", shell,
                                                      flags=re.S)):
        assert " src=" not in tag, tag
        for href in re.findall(r"href=['\"]([^'\"]*)", tag):
            assert href.startswith("#"), tag
    assert "default-src 'none'" in page  # CSP: the browser refuses any fetch


def test_figures_embedded(demo_report: Report) -> None:
    specs = re.findall(r"<script type='application/json' class='rk-figure' data-target="
                       r"'(rk-fig-\d+)'>(.*?)</script>", demo_report.html, flags=re.S)
    assert len(specs) == len(demo_report.data["figures"]) >= 3
    fig = json.loads(specs[0][1])
    assert fig["layout"]["shapes"][0]["x0"] == 3  # divergence timeline marks step 3


def test_scrubber_data_matches_state_frame(demo: Any) -> None:
    scrub = scrubber_data(demo.events, tenant_id="acme")
    sf = rk.fold(demo.events, rk.agent())
    state = dict(scrub["zero"])
    for i, seq in enumerate(scrub["seq"]):
        state.update(scrub["delta"][i])
        want = json.loads(json.dumps(sf.at(demo.run_id, seq, tenant_id="acme"),
                                     default=lambda o: dict(o) if hasattr(o, "items")
                                     else list(o)))
        assert state == want, i


def test_repr_html_and_save(demo_report: Report, tmp_path: Path) -> None:
    frag = demo_report._repr_html_()
    assert frag.startswith("<iframe") and "srcdoc=" in frag and "<script" not in frag
    p = demo_report.save_html(tmp_path / "sub" / "r.html")
    assert p is not None and p.read_text(encoding="utf-8") == demo_report.html
    buf = io.StringIO()
    assert demo_report.save_html(buf) is None and buf.getvalue() == demo_report.html
    bbuf = io.BytesIO()
    demo_report.save_html(bbuf)
    assert bbuf.getvalue().decode("utf-8") == demo_report.html


def test_title_and_question_required(demo: Any) -> None:
    with pytest.raises(TypeError, match="question"):
        rca(demo, title="t", question="")
    with pytest.raises(TypeError, match="title"):
        rca(demo, title="  ", question="q")


# ------------------------------------------------------------------------------ escaping
def test_script_json_cannot_break_out() -> None:
    val = {"a": XSS_BREAK, "b": "x\u2028y\u2029z & <!-- -->"}
    text = script_json(val)
    assert "<" not in text and ">" not in text and "&" not in text
    assert "\u2028" not in text and "\u2029" not in text
    assert json.loads(text) == val


def test_hostile_log_is_escaped_everywhere(tmp_path: Path) -> None:
    res = hostile_result(tmp_path)
    assert res.run_id.startswith(HOSTILE_RUN)
    rep = rca(res, title=f"T {XSS_SCRIPT}", question=f"Q {XSS_BREAK}", notes=XSS_IMG)
    page = rep.html
    from plotly.offline import get_plotlyjs

    shell = page.replace(get_plotlyjs(), "PLOTLY")
    for raw in (XSS_SCRIPT, XSS_IMG, XSS_BREAK, "onerror=\"", "<img", "<script>window"):
        assert raw not in shell, raw
    # plotly renders category labels as HTML: run ids / tool names arrive there escaped
    for spec in re.findall(r"class='rk-figure' data-target='rk-fig-\d+'>(.*?)</script>", shell,
                           flags=re.S):
        fig = json.loads(spec)
        axes = [v for k, v in fig["layout"].items() if k.startswith(("xaxis", "yaxis"))]
        for values in ([t.get("x") for t in fig["data"]] + [t.get("y") for t in fig["data"]]
                       + [a.get("categoryarray") for a in axes]):
            for v in values if isinstance(values, list) else []:
                assert not (isinstance(v, str) and "<" in v), v
    assert any(html.escape(HOSTILE_RUN, quote=False) in json.dumps(json.loads(spec))
               for spec in re.findall(r"class='rk-figure'[^>]*>(.*?)</script>", shell, re.S))
    # exactly the page's own scripts: plotly, the figure/scrubber JSON, and the page code
    scripts = re.findall(r"<script\b([^>]*)>", shell)
    assert all(a in ("", ' type="application/json" id="rk-scrub-data"')
               or a.startswith(" type='application/json' class='rk-figure'") for a in scripts)
    assert shell.count("<script>") == 2  # plotly.js and the page code
    # the strings are there as text
    from markupsafe import escape

    assert html.escape(HOSTILE_TOOL) in shell or str(escape(HOSTILE_TOOL)) in shell
    assert html.escape(XSS_URL) in shell or XSS_URL in shell
    # JSON blocks still decode to the original values
    data = json.loads(re.search(r'id="rk-scrub-data">(.*?)</script>', shell, re.S).group(1))
    assert data["replay"]["run_id"] == res.run_id
    assert HOSTILE_TOOL in data["replay"]["tool"] and HOSTILE_TOOL in data["base"]["tool"]


# ------------------------------------------------------------------------------ cohort
def test_cohort_report_from_compare_frame(demo: Any) -> None:
    frame = rk.compare(demo.base, demo.events)
    rep = cohort(frame, title="compare", question="How far do replays drift?",
                 metric="first_divergence_step")
    assert rep.sections == ["question", "findings", "table", "figures", "repro"]
    assert "Comparability: diverged_but_comparable 1 of 1." in rep.html
    assert "rk-fig-0" in rep.html and "diverged_but_comparable" in rep.html
    with pytest.raises(ValueError):
        cohort(frame.iloc[:0], title="t", question="q")


def test_cohort_report_from_cohorts_compare() -> None:
    from replaykit.datasets import generate_cohorts

    log = generate_cohorts(runs=40, events_per_run=20, seed=1).log
    cs = rk.cohorts(log, by="semester")
    a, b = cs.labels[:2]
    out = cs.compare(a, b, n_boot=50)
    rep = cohort(out, title="cohorts", question="q")
    # one interval figure per unit group (rates, counts, tokens), each on its own axis
    assert rep.data["figures"] == ["rates", "counts", "tokens"]
    assert len(re.findall(r"class='rk-figure'", rep.html)) == 3
    assert html.escape(str(out["metric"].iloc[0])) in rep.html
    assert rep.sections[:2] == ["question", "findings"] and "table-unpaired" in rep.sections
    m = int((out["analysis"] == "unpaired").sum())
    k = int(out.loc[out["analysis"] == "unpaired", "excludes_zero"].sum())
    assert rep.data["headline"].startswith(f"unpaired: {k} of {m} measures moved beyond")
    adj = rep.data["adjusted"]
    assert {"p_value", "p_holm", "p_bh", "holm", "bh", "unit"} <= set(adj.columns)
    assert "Holm p" in rep.html and "BH p" in rep.html
    # numbers for people: no unrounded floats such as -1.6699999999999946 in the tables
    tables = rep.html[rep.html.index('id="table-unpaired"'):rep.html.index('id="figures"')]
    assert not re.search(r"\d\.\d{6,}", tables)


# ------------------------------------------------------------------------------ CLI, demo
def test_cli_rca(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rca.html"
    rc = report_command(["rca", "--log", str(DATA), "--owner", "demo", "--branch", str(BRANCH),
                         "--fixtures", str(FIXTURES), "--no-progress", "-o", str(out)])
    assert rc == 0
    line = capsys.readouterr().out.strip().splitlines()
    assert len(line) == 1 and "first divergence step 3" in line[0] and str(out) in line[0]
    page = out.read_text(encoding="utf-8")
    assert "First divergence at <b>step 3</b>" in page
    assert "1800 \u2192 900" in page and "0.81 \u2192 0.34" in page  # the summary names values
    import hashlib

    assert hashlib.sha256(BRANCH.read_bytes()).hexdigest() in page  # branch file stamped


def test_cli_rca_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = report_command(["rca", "--log", str(DATA), "--branch", str(BRANCH), "--no-progress",
                         "-o", str(tmp_path / "x.html")])
    err = capsys.readouterr().err  # in the words every command uses (cli_error_text)
    assert rc == 2 and "pass --owner ID" in err and "--tenant only filters" in err
    assert "read_events(" not in err and "LoadError" not in err  # the command line's words
    assert report_command(["rca", "-o", "x.html"]) == 2  # missing --log / --branch
    assert not (tmp_path / "x.html").exists()


def test_cli_cohort(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from replaykit.datasets import generate_cohorts

    cd = generate_cohorts(tmp_path / "gen", runs=40, events_per_run=20, seed=1)
    cs = rk.cohorts(cd.log, by="semester")
    a, b = cs.labels[:2]
    want = cs.compare(a, b)
    out = tmp_path / "cohort.html"
    rc = report_command(["cohort", "--log", str(tmp_path / "gen" / "events.parquet"),
                         "--by", "semester", "--a", a, "--b", b, "--no-progress",
                         "-o", str(out)])
    assert rc == 0
    line = capsys.readouterr().out.strip().splitlines()
    assert line == [f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB): {len(want)} "
                    f"comparison row(s), cohorts {a} vs {b}"]
    page = out.read_text(encoding="utf-8")
    assert f"Cohorts {a} vs {b}" in page
    for metric in want["metric"].astype(str).unique():
        assert html.escape(metric) in page
    # a cohort label the data does not have: a usage error naming it, no file written
    rc = report_command(["cohort", "--log", str(tmp_path / "gen" / "events.parquet"),
                         "--by", "semester", "--a", a, "--b", "1999-spring", "--no-progress",
                         "-o", str(tmp_path / "none.html")])
    assert rc == 2 and "1999-spring" in capsys.readouterr().err
    assert not (tmp_path / "none.html").exists()


def test_demo_main(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from replaykit.report.demo import main

    out = tmp_path / "demo-rca.html"
    assert main([str(out)]) == 0
    text = capsys.readouterr().out
    assert "first_divergence_step" in text and "diverged_but_comparable" in text
    assert str(out.resolve()) in text
    assert "Sensitive to fixture." in out.read_text(encoding="utf-8")


def test_lazy_import() -> None:
    import subprocess
    import sys

    code = ("import sys, replaykit as rk; assert 'plotly' not in sys.modules; "
            "assert callable(rk.report.rca); assert 'plotly' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------------------ summary
def test_summary_names_changed_values_sources_and_policy_caveat(demo: Any) -> None:
    s = demo.summary()
    outcome = " ".join(s.sentences("outcome"))
    # the key changed values, from what to what, and where each came from
    assert "args.claimedAmount 1800 \u2192 900 at step 9 (patched by intervention iv-4)" in outcome
    assert "output.score 0.81 \u2192 0.34" in outcome
    assert "fixture fx-risk-900 (provenance analyst, by analyst@northwind.example)" in outcome
    assert "first diverges from the recording at step 3" in outcome
    assert "same terminal state" in outcome
    evidence = " ".join(s.sentences("evidence"))
    assert "Comparability diverged_but_comparable" in evidence
    assert "Sensitive to fixture: 1 of 3 tool call(s)" in evidence
    caveat = " ".join(s.sentences("caveat"))
    assert "Model outputs after step 3 (4 model response(s)) were copied from the recording" \
        in caveat and "guaranteed by the policy, not observed" in caveat
    df = s.to_frame()
    assert list(df.columns) == ["kind", "sentence", "section", "derived_from"]
    assert set(df["kind"]) == {"answer", "outcome", "unsupported", "evidence", "caveat"}
    # the answer line opens the text, then the outcome
    assert s.text.startswith(s.answer + "\nOutcome:\n  - ") and "Caveats:" in s.text
    # the values it names are rows of changes_df
    v = s.values
    assert set(zip(v["label"], v["before"], v["after"], strict=True)) >= {
        ("args.claimedAmount", "1800", "900"), ("output.score", "0.81", "0.34")}
    assert not v["label"].isin(["argsHash", "replayPatch"]).any()


def test_summary_caveat_follows_the_policy(demo: Any) -> None:
    """A live model policy gives a different caveat: the outputs are observed, not copied."""
    calls: list[Any] = []

    def model(req: Any, policy: str) -> Any:
        calls.append(req)
        return {"text": "live answer"}

    live = rk.replay(demo.branch, model_policy="pinned-live", tool_policy="pause-for-fixture",
                     fixtures=FIXTURES, model_executor=model)
    caveat = " ".join(live.summary().sentences("caveat"))
    assert calls and "came from a live model (policy pinned-live)" in caveat
    assert "copied from the recording" not in caveat


def test_paused_summary_names_the_requirement(demo: Any) -> None:
    paused = rk.replay(demo.branch)  # no fixtures: pauses at the patched risk-signals call
    assert paused.status == "paused"
    req = paused.requirements_df().iloc[0]
    s = paused.summary()
    text = " ".join(s.sentences("requirement"))
    for part in (req["tool_name"], req["ref_id"], req["args_hash"], "--fixtures FILE",
                 f"toolName={req['tool_name']} and argsHash={req['args_hash']}"):
        assert part in text, part
    assert "The replay did not finish: it paused at step 9" in s.sentences("outcome")[0]
    # the spec is a valid fixture: resuming with it completes the replay
    spec = s.requirements[0]["fixture"]
    assert spec["matcher"] == {"argsHash": req["args_hash"]}
    fx = dict(spec, output={"score": 0.5})
    import tempfile

    path = Path(tempfile.mkdtemp()) / "fixtures.json"
    path.write_text(json.dumps({"format": "isplay.fixtures/v1", "fixtures": [fx]}))
    done = paused.resume(path)
    assert done.status == "completed"
    rep = rca(paused, title="paused", question="q")
    assert "id='rk-req-0'" in rep.html.replace('"', "'")
    assert html.escape(json.dumps(spec["matcher"])[1:-1]).replace("&quot;", '"') in rep.html \
        or req["args_hash"] in rep.html


def test_json_changes_paths_before_after() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from replaykit.branch.findings import json_changes

    got = json_changes({"a": {"b": [1, 2, 3]}}, {"a": {"b": [1, 5, 3]}, "c": None})
    assert sorted(got, key=lambda r: r["path"]) == [
        {"path": "/a/b/1", "op": "changed", "before": 2, "after": 5},
        {"path": "/c", "op": "added", "before": None, "after": None}]
    assert json_changes(1, 2) == [{"path": "", "op": "changed", "before": 1, "after": 2}]
    assert json_changes({"x": 1}, {"x": 1}) == []

    leaves = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3)
    docs = st.recursive(leaves, lambda c: st.lists(c, max_size=3)
                        | st.dictionaries(st.text("abc", max_size=2), c, max_size=3),
                        max_leaves=8)

    objs = st.recursive(leaves, lambda c: st.dictionaries(st.text("abc", max_size=2), c,
                                                          max_size=3), max_leaves=8)

    @settings(max_examples=150, deadline=None)
    @given(docs, docs)
    def check(a: Any, b: Any) -> None:
        rows = json_changes(a, b)
        assert (rows == []) == (a == b)
        # the top-level keys named are exactly those whose values differ
        if isinstance(a, dict) and isinstance(b, dict) and rows and rows[0]["path"]:
            named = {r["path"].split("/")[1] for r in rows}
            gone = object()
            assert named == {k for k in a.keys() | b.keys()
                             if a.get(k, gone) is gone or b.get(k, gone) is gone
                             or a[k] != b[k]}

    @settings(max_examples=150, deadline=None)
    @given(objs, objs)
    def check_objects(a: Any, b: Any) -> None:
        import jsonpointer

        for r in json_changes(a, b):  # without lists, paths name places in a and in b
            if r["path"] == "":
                assert (r["before"], r["after"]) == (a, b)
                continue
            if r["op"] in ("changed", "removed"):
                assert jsonpointer.resolve_pointer(a, r["path"]) == r["before"]
            if r["op"] in ("changed", "added"):
                assert jsonpointer.resolve_pointer(b, r["path"]) == r["after"]

    check()
    check_objects()


def test_cohort_adjustments_holm_bh() -> None:
    import numpy as np
    import pandas as pd

    from replaykit.report._cohort import _bh, _holm, adjust

    p = np.array([0.01, 0.04, 0.03, 0.5])
    # Holm: sorted 0.01*4, 0.03*3, 0.04*2 (monotone), 0.5*1 -> 0.04, 0.09, 0.09, 0.5
    assert np.allclose(_holm(p), [0.04, 0.09, 0.09, 0.5])
    # BH: 0.01*4/1, 0.03*4/2, 0.04*4/3, 0.5 -> min from the top: 0.04, 0.0533, 0.0533, 0.5
    assert np.allclose(_bh(p), [0.04, 0.16 / 3, 0.16 / 3, 0.5])
    f = pd.DataFrame({"analysis": ["unpaired"] * 2 + ["paired"], "metric": ["a", "b", "a"],
                      "statistic": ["rate", "mean", "rate"], "diff": [0.1, 1.0, 0.1],
                      "ci_low": [0.05, -1.0, 0.05], "ci_high": [0.15, 3.0, 0.15],
                      "ci_level": 0.95, "excludes_zero": [True, False, True]})
    out = adjust(f)
    assert list(out["unit"]) == ["rates", "counts", "rates"]
    # the families are separate: the paired row's p is its own (not multiplied by 3)
    assert out["p_holm"].iloc[2] == pytest.approx(out["p_value"].iloc[2])
    assert bool(out["holm"].iloc[0]) and not bool(out["holm"].iloc[1])


def test_cli_rca_paused_exits_3_and_names_the_requirement(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from replaykit.cli.report import EXIT_FAILED, EXIT_PAUSED

    out = tmp_path / "paused.html"
    rc = report_command(["rca", "--log", str(DATA), "--owner", "demo", "--branch", str(BRANCH),
                         "--no-progress", "-o", str(out)])
    assert rc == EXIT_PAUSED == 3
    err = capsys.readouterr().err
    assert "risk-signals" in err and "tc-104-2" in err and "87529baee44bed63b2c011e2e53c3540" \
        in err and "--fixtures FILE" in err
    spec = json.loads(err.split("fixture that would satisfy it: ", 1)[1].splitlines()[0])
    assert spec["matcher"] == {"argsHash": "87529baee44bed63b2c011e2e53c3540"}
    assert out.exists() and "rk-req-0" in out.read_text(encoding="utf-8")
    # recorded-only tool policy fails instead of pausing: a different code
    rc = report_command(["rca", "--log", str(DATA), "--owner", "demo", "--branch", str(BRANCH),
                         "--tool-policy", "recorded-only", "--no-progress", "-o",
                         str(tmp_path / "failed.html")])
    assert rc == EXIT_FAILED == 4


def test_cohort_rows_without_interval_width_are_not_findings() -> None:
    """One shared prompt gives a paired interval of zero width: no p-value, no finding."""
    import numpy as np
    import pandas as pd

    from replaykit.report._cohort import adjust, cohort_findings

    f = pd.DataFrame({"analysis": ["unpaired", "paired"], "metric": ["events_per_run"] * 2,
                      "statistic": "mean", "cohort_a": "a", "cohort_b": "b",
                      "n_a": [40, 1], "n_b": [30, 1], "value_a": [10.0, 40.0],
                      "value_b": [12.0, 26.0], "diff": [2.0, -14.0], "ci_low": [1.0, -14.0],
                      "ci_high": [3.0, -14.0], "ci_level": 0.95, "excludes_zero": [True, True]})
    out = adjust(f)
    assert np.isnan(out["p_holm"].iloc[1]) and not out["holm"].iloc[1]
    assert bool(out["holm"].iloc[0])
    head, rows = cohort_findings(out)
    # one pair is below the minimum sample (MIN_PAIRS): not counted as beyond its interval
    assert "paired: 0 of 1 measures moved beyond their 95% interval; 0 after Holm" in head
    text = " ".join(r["sentence"] for r in rows)
    assert "Too few to test: all 1 paired measures rest on 1 pair(s)" in text
    assert "No paired measure could be tested" in text


def test_summary_counts_blocked_calls(tmp_path: Path) -> None:
    res = hostile_result(tmp_path)  # tool policy blocked: the patched call is blocked
    evidence = " ".join(res.summary().sentences("evidence"))
    assert "1 of 2 tool call(s) after the checkpoint got their recorded (or executed) output; " \
        "1 were blocked." in evidence
    assert "were blocked (they got an error result)" in " ".join(
        res.summary().sentences("caveat"))


def test_cohort_report_opens_with_an_answer_line() -> None:
    """Issue 28: a planted drift reads as a change naming its measure; a no-drift sample as
    no change (or, for a chance hit in one analysis only, as undetermined)."""
    from replaykit.datasets import generate_cohorts
    from replaykit.report import cohort

    for drift, start in (("tool-errors", "Changed:"), ("none", "No change:")):
        g = generate_cohorts(runs=200, seed=1, drift=drift)
        cs = rk.cohorts(g.log, by="semester")
        rep = cohort(cs.compare("2025-fall", "2026-spring", n_boot=400), title="t",
                     question="q?")
        answer = rep.data["answer"]
        assert answer.startswith(start), answer
        assert f"<p class=\"answer {start[:-1].lower()}\" id=\"rk-answer\"" in rep.html
        if drift == "tool-errors":
            assert "tool_error_rate rose from" in answer
        else:
            assert "no measure moved beyond what chance explains" in answer


def test_cohort_trend_panels_keep_tiny_changes_small() -> None:
    """Issue 31 item 11: a 0.03-point change is not drawn as a cliff; a real change fills
    its panel; long measure names break instead of running into the next panel."""
    from replaykit.report._cohort_page import TREND_MIN_SPAN, _panel_title, trend_range

    lo, hi = trend_range([10.0, 10.03, 10.01], "rates")
    assert hi - lo >= TREND_MIN_SPAN["rates"] and lo < 10.0 and hi > 10.03
    lo, hi = trend_range([5.0, 15.0], "rates")
    assert lo <= 5.0 and hi >= 15.0 and (hi - lo) < 2 * 10.0 * 1.2
    lo, hi = trend_range([0.2, 0.4], "rates")
    assert lo == 0.0 and hi >= 0.4
    lo, hi = trend_range([99.0, 99.9], "rates")
    assert hi == 100.0 and lo <= 99.0
    lo, hi = trend_range([12000.0, 12010.0], "tokens")
    assert hi - lo >= 0.2 * 12010 and lo >= 0
    assert trend_range([], "counts") is None
    assert _panel_title("tool_share.web_search", True) == "tool_share.<br>web_search \u2605"
    assert _panel_title("abort_rate", False) == "abort_rate"
