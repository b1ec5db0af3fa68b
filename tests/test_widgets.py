"""replaykit.widgets driven headless: set the controls, assert what the views show."""

from __future__ import annotations

import re
import sys

import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("plotly")

import pandas as pd  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import replaykit as rk  # noqa: E402
from replaykit import widgets  # noqa: E402
from replaykit.widgets import _pre, state_changes  # noqa: E402


@pytest.fixture(scope="module")
def pleach(data_dir):
    log = rk.read_pleach(data_dir / "pleach" / "harness_event_log.jsonl")
    sf = rk.fold(log, rk.agent())
    first = sf.final().iloc[0]
    return log, sf, first["run_id"], first["tenant_id"]


@pytest.fixture(scope="module")
def scrubber(pleach):
    log, sf, run_id, tenant = pleach
    return widgets.Scrubber(log, run_id, tenant_id=tenant, states=sf)


@pytest.fixture(scope="module")
def done(data_dir):
    log = rk.read_isplay(data_dir / "isplay", owner="acme")
    branch = rk.Branch.load(data_dir / "isplay" / "branch-drop-fraud-clause.json", base=log,
                            tenant_id="acme")
    return rk.replay(branch).resume(data_dir / "isplay" / "fixtures.json")


# --------------------------------------------------------------------------- Scrubber
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_scrubber_shows_state_frame_at(scrubber, pleach, data):
    _, sf, run_id, tenant = pleach
    i = data.draw(st.integers(0, len(scrubber) - 1))
    scrubber.slider.value = i
    seq = int(scrubber.seqs[i])
    expected = sf.at(run_id, seq, tenant_id=tenant)
    assert scrubber.index == i and scrubber.seq == seq
    assert scrubber.state == expected
    # the pane shows the state, a step / turn the log leaves null as the scrubber's own
    shown = dict(expected)
    if shown.get("step") is None and "step" in shown:
        shown["step"] = i
    if shown.get("turn") is None and "turn" in shown:
        shown["turn"] = scrubber.turn
    assert scrubber.state_view.value == _pre(shown)
    assert "null" not in scrubber.header.value and f"turn {scrubber.turn}" in \
        scrubber.header.value
    before = sf.at_step(run_id, i, tenant_id=tenant)
    assert scrubber.changes == state_changes(before, expected)
    assert scrubber.event["seq"] == seq
    assert f"seq {seq}" in scrubber.header.value


def test_scrubber_moves_without_refolding(pleach, monkeypatch):
    log, _, run_id, tenant = pleach
    s = widgets.Scrubber(log, run_id, tenant_id=tenant)  # folds once, here

    def no_fold(*a, **k):
        raise AssertionError("the scrubber re-folded")

    engine = sys.modules["replaykit.fold.engine"]  # rk.fold is the function, not the package
    frame = sys.modules["replaykit.fold.frame"]

    monkeypatch.setattr(frame, "fold_field", no_fold)
    monkeypatch.setattr(engine, "fold_field", no_fold)
    monkeypatch.setattr(frame, "fold", no_fold)
    s.slider.value = len(s) - 1
    assert s.state == s.states.at(run_id, int(s.seqs[-1]), tenant_id=tenant)
    s.play.value = 2  # the play button drives the same slider (a link the front end runs)
    assert s._link.source == (s.play, "value") and s._link.target == (s.slider, "value")


def test_scrubber_escapes_log_content(pleach):
    log, _, run_id, tenant = pleach
    last = int(log.run(run_id, tenant_id=tenant).table.column("seq").to_numpy()[-1])
    forked = rk.fork(log, run_id, tenant_id=tenant, at_seq=last, new_run_id="evil",
                     events=[{"type": "note", "kind": "other",
                              "payload": {"text": "<script>alert(1)</script>"}}])
    s = widgets.Scrubber(forked, "evil", tenant_id=tenant)
    s.slider.value = len(s) - 1
    assert "<script>" not in s.event_view.value
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in s.event_view.value
    assert s.event["payload"] == {"text": "<script>alert(1)</script>"}


def test_scrubber_needs_tenant_and_run(pleach):
    log, _, run_id, tenant = pleach
    with pytest.raises(TypeError, match="tenant_id"):
        widgets.Scrubber(log, run_id, tenant_id=None)
    with pytest.raises(KeyError, match="no run"):
        widgets.Scrubber(log, "no-such-run", tenant_id=tenant)
    s = widgets.Scrubber(log, run_id, tenant_id=tenant)
    with pytest.raises(IndexError):
        s.show(len(s))


def test_state_changes():
    before = {"n": 1, "m": {"a": 1, "b": 2}, "t": "x"}
    after = {"n": 2, "m": {"a": 5, "c": 3}, "t": "x"}
    assert state_changes(before, after) == {
        "n": {"before": 1, "after": 2},
        "m": {"added": {"c": 3}, "removed": ["b"], "changed": {"a": {"before": 1, "after": 5}}},
    }
    assert state_changes(after, after) == {}


# --------------------------------------------------------------------------- DiffExplorer
def test_diff_explorer_jumps_to_first_divergence(done):
    d = widgets.DiffExplorer(done)
    assert d.jump_to_first_divergence() == done.metrics["first_divergence_step"] == 3
    assert d.position.value == 3
    assert d.current["status"] == "changed" and d.current["base_seq"] == 3
    assert "status <b>changed</b>" in d.header.value
    assert "&quot;seq&quot;: 3" in d.base_view.value
    assert "&quot;seq&quot;: 3" in d.replay_view.value


def test_diff_explorer_filters_by_status(done):
    d = widgets.DiffExplorer(done)
    d.status.value = "changed"
    # every field counts: the four patched requests (temperature, tools) are changed too
    assert list(d.rows["status"]) == ["changed"] * 6
    assert d.rows["base_seq"].tolist() == [3, 7, 9, 10, 12, 16]
    assert d.position.max == 5
    d.position.value = 3
    assert int(d.current["base_seq"]) == 10
    d.status.value = "added"
    assert len(d.rows) == 0 and "no rows" in d.header.value
    d.jump_to_first_divergence()
    assert d.status.value == "all" and d.position.value == 3


# --------------------------------------------------------------------------- CohortExplorer
def test_cohort_explorer_links_figure_table_and_scrubber(done):
    log = rk.concat([done.base, done.events])
    cmp = rk.compare(done.base, done.events)
    other = cmp.assign(base_run_id="run-claims-C-231", changed_descendants=0,
                       comparability="exact")
    frame = pd.concat([cmp, other], ignore_index=True)  # two cohorts
    c = widgets.CohortExplorer(frame, log=log, metric="changed_descendants")
    boxes = [t.name for t in c.figure.data if t.type == "box"]
    assert boxes == ["all"]
    c.cohort.value = "comparability"
    boxes = [t.name for t in c.figure.data if t.type == "box"]
    assert boxes == ["diverged_but_comparable", "exact"]
    assert c.value.options == ("(all)", "diverged_but_comparable", "exact")
    c.value.value = "exact"
    assert list(c.rows["base_run_id"]) == ["run-claims-C-231"]
    assert c.run.value == "run-claims-C-231"
    assert "run-claims-C-231" in c.table_view.value
    s = c.open_run()
    assert c.scrubber is s and c.scrubber_box.children == (s.widget,)
    s.slider.value = 4
    assert s.state == s.states.at("run-claims-C-231", int(s.seqs[4]), tenant_id="acme")
    c.metric.value = "tool_signature_distance"
    assert c.figure.layout.yaxis.title.text == "tool_signature_distance"


def test_cohort_explorer_needs_log_to_open(done):
    c = widgets.CohortExplorer(rk.compare(done.base, done.events))
    assert c.metric.value == "changed_descendants"  # a replay metric, not a count of events
    assert "replay_run_id" not in c.cohort.options
    assert c.open.disabled
    with pytest.raises(ValueError, match="log="):
        c.open_run()


# --------------------------------------------------------------------------- values, not flags
def test_diff_explorer_shows_values_and_steps_change_to_change(done):
    d = widgets.DiffExplorer(done)
    assert d.jump_to_first_divergence() == 3
    # stepping visits every changed row in order and wraps around
    visited = [d.step_change(1) for _ in range(6)]
    assert visited == [7, 9, 10, 12, 16, 3]
    assert d.step_change(1) == 7 and d.step_change(1) == 9 and d.step_change(1) == 10
    # row 10: the fixture-served risk score, before and after, with the changed lines marked
    vals = d.current_changes.set_index("label")
    assert (vals.loc["output.score", "before"], vals.loc["output.score", "after"]) == \
        ("0.81", "0.34")
    assert "output.score" in d.values_view.value and "0.81" in d.values_view.value
    import html

    def marks(view: str) -> list[str]:
        return [html.unescape(m) for m in
                re.findall(r"<span class='rk-changed'[^>]*>(.*?)</span>", view)]

    marked = marks(d.replay_view.value)
    assert any('"score": 0.34' in m for m in marked)
    assert any('"score": 0.81' in m for m in marks(d.base_view.value))
    assert not any('"toolName"' in m for m in marked)  # unchanged keys are not marked
    # the buttons drive the same stepping
    d.next_change.click()
    assert d.position.value == 12
    d.prev_change.click()
    assert d.position.value == 10


def test_scrubber_for_replay_shows_base_beside_replay(done):
    s = widgets.Scrubber.for_replay(done)
    base = done.base.run(done.branch.run_id, tenant_id=done.branch.tenant_id)
    bsf = rk.fold(base, rk.agent())
    for i in (0, 9, 10, 18):
        s.slider.value = i
        assert s.base_event["seq"] == base.table.column("seq")[i].as_py()
        assert s.event["seq"] == done.events.table.column("seq")[i].as_py()
        assert s.base_state == bsf.at(base.run_ids[0], s.base_event["seq"], tenant_id="acme")
        assert f"step {i} of 18" in s.header.value
    assert "base (recording)" in s.widget.children[2].children[0].children[0].children[0].value


def test_marked_json_marks_paths_and_escapes():
    out = widgets.marked_json({"a": {"b": 1, "c": "<x>"}, "d": [1, 2]}, ["/a/c", "/d/1"])
    marked = re.findall(r"<span class='rk-changed'[^>]*>(.*?)</span>", out)
    assert marked == ['    &quot;c&quot;: &quot;&lt;x&gt;&quot;', "    2"]
    assert "<x>" not in out


def test_transcript_explorer(done):
    t = widgets.Transcript(done)
    text = t.transcript_view.value
    assert "risk-signals" in text and "claimedAmount" in text and "fixture" in text
    assert text.count("<details") >= 19  # every message's payload is collapsible
    tree = t.tree_view.value
    assert "child of run-claims-C-104" in tree and "model calls" in tree
    assert "style=\"left:" in tree  # the isplay sample has timestamps: a waterfall
    with pytest.raises(TypeError):
        widgets.Transcript(done.events, done.run_id)


def test_cohort_explorer_draws_a_yes_no_metric_as_shares():
    df = pd.DataFrame({"tenant_id": "acme", "run_id": [f"r{i}" for i in range(6)],
                       "grp": ["a", "a", "a", "b", "b", "b"],
                       "sensitive_to_fixture": [True, False, False, True, True, False],
                       "changed_descendants": [1, 2, 3, 4, 5, 6]})
    c = widgets.CohortExplorer(df, metric="sensitive_to_fixture", cohort="grp")
    bar = c.figure.data[0]
    assert bar.type == "bar" and list(bar.y) == pytest.approx([100 / 3, 200 / 3])
    assert list(bar.x) == ["a (n=3)", "b (n=3)"]
    c.metric.value = "changed_descendants"
    assert c.figure.data[0].type == "box"


# --------------------------------------------------------------------------- provenance badges
def test_explorers_badge_every_step_with_its_provenance_and_flag_unsupported(done):
    """Issue 28: each replayed step says where its content came from, with a legend; the
    steps the replay cannot support carry a flag naming why."""
    s = widgets.Scrubber.for_replay(done)
    ann = done.annotations_df().set_index("seq")
    for i in (0, 3, 10, 13, 14):
        s.slider.value = i
        prov = ann.loc[i, "provenance"]
        assert s.provenance == prov
        assert f"rk-badge {prov}" in s.header.value
    s.slider.value = 13  # a model output copied under recorded-only after its request changed
    assert s.provenance == "policy-copy" and "copied by policy" in s.header.value
    assert "unsupported" in s.header.value and "its request at step 12 changed" in s.header.value
    s.slider.value = 5
    assert "rk-flag" not in s.header.value.split("</b>", 1)[1]
    assert "copied by policy" in s.legend.value and "fixture" in s.legend.value
    d = widgets.DiffExplorer(done)
    d.position.value = 14
    assert d.provenance == "recorded"
    assert "no longer offers" in d.header.value and "escalate-to-siu" in d.header.value
    d.position.value = 10
    assert d.provenance == "fixture" and "rk-badge fixture" in d.header.value
    t = widgets.Transcript(done)
    v = t.transcript_view.value
    assert v.count("data-provenance=\"policy-copy\"") == 4
    assert "id=\"rk-provenance-legend\"" in v and v.count("class=\"flag\" title=") == 5


def test_cohort_explorer_dropdowns_runs_and_numbers_for_people(done):
    """Issue 31 item 11: "(none)" and "(all)" stay shown once picked, a value survives a
    round trip through "(none)", each run is listed once, -1 reads "exact"; item 10: the
    table's numbers are integers with separators or rounded."""
    cmp = rk.compare(done.base, done.events)
    again = cmp.assign(replay_run_id="run-claims-C-104~again")  # the same base run twice
    plain = cmp.assign(base_run_id="run-claims-C-231", first_divergence_step=-1,
                       comparability="exact", tool_sequence_distance_norm=1 / 3,
                       base_events=12345)
    frame = pd.concat([cmp, again, plain], ignore_index=True)
    c = widgets.CohortExplorer(frame, metric="first_divergence_step")
    assert c.cohort.value == "(none)" and c.cohort.label == "(none)"
    c.cohort.value = "comparability"
    c.value.value = "exact"
    assert c.cohort_value == "exact" and list(c.rows["base_run_id"]) == ["run-claims-C-231"]
    c.cohort.value = "(none)"
    assert c.cohort.label == "(none)" and c.cohort_column is None
    assert c.value.value == "(all)" and c.value.label == "(all)" and len(c.rows) == 3
    c.cohort.value = "comparability"
    c.value.value = "exact"
    c.metric.value = "changed_descendants"  # another metric keeps the chosen cohort value
    assert c.value.value == "exact" and len(c.rows) == 1
    c.value.value = "(all)"
    assert c.run.options == ("run-claims-C-104", "run-claims-C-231")  # each run once
    c.metric.value = "first_divergence_step"
    html_ = c.table_view.value
    assert ">exact<" in html_ and ">-1<" not in html_
    assert "12,345" in html_ and ">0.333<" in html_ and "0.3333" not in html_
    # the figure leaves the exact rows out of a step distribution and says so
    assert "1 exact rows without a divergence not drawn" in c.figure.layout.title.text
    assert all(-1 not in [float(v) for v in (t.y if t.y is not None else [])]
               for t in c.figure.data if t.type == "scatter")


def test_scrubber_shows_step_and_turn_and_cuts_long_text_at_words(done):
    """Issue 31 item 9: no null step/turn in the panes, long text cut at a word boundary
    with the whole value one click away."""
    s = widgets.Scrubber.for_replay(done)
    s.slider.value = 13
    assert s.step == 13 and s.turn == 1  # isplay records no turn: one user message so far
    assert "step 13 of 18 &middot; turn 1 &middot; seq 13" in s.header.value
    assert "&quot;step&quot;: null" not in s.state_view.value
    assert "&quot;turn&quot;: null" not in s.state_view.value
    s.slider.value = 0
    assert s.turn == 0
    words = " ".join(f"word{k}" for k in range(400))
    html_ = widgets._pre({"text": words})
    shown = html_.split("</pre>", 1)[0]
    cut = shown.split("&quot;text&quot;: &quot;", 1)[1].split("&quot;", 1)[0]
    assert cut.endswith("\u2026") and len(cut) <= widgets.TEXT_CHARS
    assert cut[:-1].split(" ")[-1] in words.split(" ")  # ends on a whole word
    assert "<details class='rk-whole'>" in html_ and words in html_  # the whole value
    assert widgets.cut_words("a" * 50, 10) == "a" * 9 + "\u2026"



def test_event_panes_name_sources_without_machine_paths(data_dir):
    """The Scrubber's and DiffExplorer's event panes (``_event_dict``) show ``source`` by
    file name: a saved notebook keeps what they show, so no absolute path of this machine
    (issue 28 item 5)."""
    log = rk.read_isplay(data_dir / "isplay", owner="acme")
    table = log.table
    raw = table.column("source")[0].as_py()
    assert str(data_dir.resolve()) in raw  # the loaded log keeps the full path
    shown = widgets._event_dict(table, 0)["source"]
    fmt, name = shown.split(":", 1)
    assert raw == f"{fmt}:{data_dir.resolve() / 'isplay' / name}"
    assert "/" not in name and str(data_dir.resolve()) not in shown


# ------------------------------------------------------- what stays on show (issue 42 item 10)
def test_diff_explorer_never_shows_another_rows_detail(done):
    """Every status after every other, from every row: the detail shown is the current row's,
    and a status with no rows shows no detail at all (not the previous row's)."""
    from itertools import permutations

    d = widgets.DiffExplorer(done)
    counts = d.diff["status"].value_counts()
    for before, after in permutations(widgets.DIFF_STATUSES, 2):
        d.status.value = before
        d.position.value = d.position.max  # the last row of that status, with its detail
        d.status.value = after
        n = (len(d.diff) if after == "all" else int((d.diff["status"] != "same").sum())
             if after == "not same" else int(counts.get(after, 0)))
        assert len(d.rows) == n
        if n == 0:
            assert d.detail.layout.display == "none"
            assert d.values_view.value == d.base_view.value == d.replay_view.value == ""
            assert d.current is None and len(d.current_changes) == 0
            assert d.table_view.value == "" and f"no rows with status {after}" in d.header.value
        else:
            assert d.detail.layout.display in (None, "")
            assert d.header.value.startswith(f"row {int(d.rows.index[0])} of ")
            assert int(d.current.name) == int(d.rows.index[0])


def test_explorer_panes_fit_their_pane_and_wrap_between_words(done, scrubber):
    """Every JSON pane is held to its pane (class rk-pane, the page's rule in PANE_CSS) and
    its <pre> wraps long lines between words, never inside one; status lines wrap."""
    s = widgets.Scrubber.for_replay(done)
    d = widgets.DiffExplorer(done)
    def walk(w, out):
        out.append(w)
        for c in getattr(w, "children", ()):
            walk(c, out)
        return out

    for view in (scrubber, s, d):
        html_widgets = walk(view.widget, [])
        css = [w for w in html_widgets if getattr(w, "value", None) == widgets.PANE_CSS]
        assert len(css) == 1
        panes = [w for w in html_widgets if "rk-pane" in getattr(w, "_dom_classes", ())]
        assert len(panes) >= 2 and all(p.layout.width == "100%" for p in panes)
        assert "rk-status" in view.header._dom_classes
        for p in panes:
            for style in re.findall(r"<pre style='([^']*)'", p.value):
                assert "white-space:pre-wrap" in style and "word-break:normal" in style
                assert "overflow-wrap:normal" in style and "max-width:100%" in style
    assert ".rk-pane>.widget-html-content{min-width:0;max-width:100%" in widgets.PANE_CSS


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["turn_start", "user_message", "tool_call",
                                           "model_request", "turn_end"]),
                          st.none() | st.integers(0, 5)), min_size=1, max_size=30))
def test_one_turn_numbering_for_scrubbers_and_run_tree(rows):
    """The report's scrubber and run tree and the notebook Scrubber number turns one way:
    the recorded turn, else the count of turns begun (turn_start, else user messages)."""
    import pyarrow as pa

    from replaykit.report._transcript import turn_numbers

    kinds = [k for k, _ in rows]
    table = pa.table({"kind": kinds, "turn": pa.array([t for _, t in rows], pa.int64())})
    opener = "turn_start" if "turn_start" in kinds else "user_message"
    begun, want = 0, []
    for k, t in rows:  # a reading written here, event by event
        begun += k == opener
        want.append(t if t is not None else begun)
    assert turn_numbers(table).tolist() == want
    assert widgets._turn_numbers(table) == want


def test_run_tree_and_scrubbers_name_a_turn_for_logs_without_turns(done):
    from replaykit.report._transcript import run_tree

    base = done.base.table
    assert base.column("turn").null_count == base.num_rows  # isplay records no turns
    tree = run_tree([base, done.events.table])

    def turns(node):
        yield from (t["turn"] for t in node["turns"])
        for c in node["children"]:
            yield from turns(c)

    got = [t for r in tree for t in turns(r)]
    assert got and all(isinstance(t, int) and t >= 1 for t in got)
    html_text = rk.report.run_tree_html([base])
    assert "turn (none)" not in html_text and "turn 1 &middot;" in html_text
    s = widgets.Scrubber.for_replay(done)
    assert all(t >= 0 for t in s._turns) and "turn 1" in s.header.value or s.turn == 0
