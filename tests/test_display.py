"""Notebook displays: compact summaries, escaped (log content is untrusted)."""

from __future__ import annotations

import pandas as pd
import pytest

import replaykit as rk
from replaykit import _display
from replaykit.fold import Verdict


@pytest.fixture(scope="module")
def isplay(data_dir):
    return rk.read_isplay(data_dir / "isplay", owner="acme")


@pytest.fixture(scope="module")
def replays(isplay, data_dir):
    branch = rk.Branch.load(data_dir / "isplay" / "branch-drop-fraud-clause.json", base=isplay,
                            tenant_id="acme")
    paused = rk.replay(branch)
    return paused, paused.resume(data_dir / "isplay" / "fixtures.json")


def test_state_frame_html_summarises_and_escapes(isplay):
    evil = rk.fork(isplay, "run-claims-C-104", tenant_id="acme", at_seq=3,
                   new_run_id="<img src=x onerror=alert(1)>")
    sf = rk.fold(rk.concat([isplay, evil]), rk.agent())
    out = sf._repr_html_()
    assert "<img" not in out
    assert "&lt;img src=x onerror=alert(1)&gt;" in out
    assert "events: <code>41</code>" in out and "runs: <code>3</code>" in out
    assert "tool_calls" in out and "_added" not in out
    assert repr(sf).startswith("StateFrame(41 events, 3 runs; fields: turn, ")


def test_replay_result_html(replays):
    paused, done = replays
    p = paused._repr_html_()
    assert ">paused</span>" in p and ">non_comparable</span>" in p
    assert "risk-signals" in p and "req-1" in p  # the open requirement is listed
    d = done._repr_html_()
    assert ">completed</span>" in d and ">diverged_but_comparable</span>" in d
    assert ">sensitive to fixture</span>" in d
    assert "first_divergence_step: <code>3</code>" in d
    assert "fx-risk-900" in d  # effects table when nothing is open
    assert repr(done).startswith("ReplayResult(status='completed', events=19")


def test_verdict_html():
    ok = Verdict(True, 19)
    assert ">deterministic</span>" in ok._repr_html_()
    assert "first_divergence" not in ok._repr_html_()
    bad = Verdict(False, 19, 4, 7)
    html = bad._repr_html_()
    assert ">nondeterministic</span>" in html
    # the same names as a replay's display: a 0-based step (first_divergence_at counts from 1)
    assert "first_divergence_step: <code>3</code>" in html
    assert "first_divergence_at" not in html
    assert "first_divergence_seq: <code>7</code>" in html
    assert repr(bad) == ("Verdict(deterministic=False, steps=19, first_divergence_at=4, "
                         "first_divergence_seq=7)")


def test_summary_and_frame_html_escape_everything():
    df = pd.DataFrame({"<th>": ["<td>x</td>", "y" * 200, None], "n": pd.array([1, None, 3],
                                                                                dtype="Int64")})
    out = _display.summary_html("<b>T</b>", {"<k>": "<v>"}, badges=["<x>"], table=df)
    assert "<b>T</b>" not in out and "&lt;b&gt;T&lt;/b&gt;" in out
    assert "&lt;k&gt;: <code>&lt;v&gt;</code>" in out and "&lt;x&gt;</span>" in out
    assert "&lt;td&gt;x&lt;/td&gt;" in out and "<td>x</td>" not in out
    assert "y" * 79 + "\u2026" in out and "y" * 81 not in out
    assert "&lt;NA&gt;" not in out and "None" not in out
    long = _display.frame_html(pd.DataFrame({"a": range(25)}))
    assert "15 more rows" in long and long.count("<tr>") == 10  # body rows


def test_eventlog_html_still_escapes(isplay):
    assert "<b>EventLog</b>" in isplay._repr_html_()


def test_cohort_results_display_escaped_summaries():
    import replaykit as rk
    from replaykit.datasets import generate_cohorts

    data = generate_cohorts(runs=40, events_per_run=20, seed=3)
    groups = rk.cohorts(data.log, by="semester")
    html_text = groups._repr_html_()
    assert "Cohorts" in html_text and "runs: <code>40</code>" in html_text
    for label in groups.labels:
        assert label in html_text
    hostile = rk.cohorts(data.log, by=lambda runs: ["<script>x</script>"] * len(runs))
    out = hostile._repr_html_()
    assert "<script>x" not in out and "&lt;script&gt;x" in out


def test_for_people_formats_what_is_shown_and_keeps_the_values():
    """Issue 31 item 10: an opt-in display of any frame with numbers for people; the values,
    dtypes and pandas' global options are untouched."""
    import re

    df = pd.DataFrame({"run_id": ["<b>r1</b>", "r2"], "events": [12345, 7],
                       "first_divergence_step": [3, -1], "rate": [0.333333, 1.6699999999999946],
                       "depth": pd.array([2, None], dtype="Int64"), "ok": [True, False]})
    before = pd.get_option("display.float_format"), pd.get_option("display.precision")
    styler = rk.for_people(df)
    assert styler.data is df and df["events"].dtype == "int64"
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", styler.to_html())
    assert cells == ["&lt;b&gt;r1&lt;/b&gt;", "12,345",
                     "3", "0.333", "2", "True", "r2", "7", "exact", "1.67", "", "False"]
    assert (pd.get_option("display.float_format"), pd.get_option("display.precision")) == before
    assert len(re.findall(r"<tr>", rk.for_people(df, max_rows=1).to_html())) == 2  # head + 1
    # the same numbers as the reports' tables
    assert rk.report.people_frame(df).loc[1, "first_divergence_step"] == "exact"
    assert rk.report.fmt_number is _display.fmt_number


def test_frame_html_spaces_its_columns_and_right_aligns_numbers():
    """A widget's table (an ipywidgets HTML gets none of JupyterLab's table styles) carries
    its own padding, keeps short values on one line and right-aligns number columns only."""
    import re

    shown = _display.people_frame(pd.DataFrame({"run_id": ["run-claims-C-104", "r2"],
                                                "events": [12345, 7], "rate": [0.25, None],
                                                "first_divergence_step": [-1, 3]}))
    out = _display.frame_html(shown)
    cls = re.search(r'class="dataframe rk-table (rk-t\w+)"', out).group(1)
    assert f".{cls} th,.{cls} td{{padding:2px 10px;text-align:left;white-space:nowrap;" in out
    right = sorted(int(k) for k in re.findall(rf"\.{cls} td:nth-child\((\d+)\)", out))
    assert right == [2, 3, 4]  # events, rate ("0.25" and blank), first_divergence_step ("exact")
    assert _display.frame_html(shown) == out  # the same table, the same class


def test_for_people_aligns_text_left_and_hides_a_bare_row_number():
    df = pd.DataFrame({"tool": ["add", "sub"], "n": [1, 2]}, index=[0, 3])
    page = rk.for_people(df).to_html()
    assert "row_heading" not in page and ".col0 {\n  text-align: left;" in page
    named = rk.for_people(df.set_index("tool")).to_html()
    assert 'class="row_heading level0 row0" >add</th>' in named  # a named index is kept


def test_for_people_shows_times_to_the_millisecond_at_most():
    import re

    times = ["2026-01-01 10:00:04.150", "2026-01-01 10:01:00", None]
    df = pd.DataFrame({"first_ts": pd.to_datetime(times, utc=True, format="ISO8601"),
                       "total": [3.0, 10.0, None]})
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", rk.for_people(df).to_html())
    assert cells == ["2026-01-01 10:00:04.150+00:00", "3", "2026-01-01 10:01:00+00:00", "10",
                     "", ""]


def test_for_people_without_jinja_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "jinja2", None)  # "import jinja2" raises ImportError
    monkeypatch.delitem(sys.modules, "pandas.io.formats.style", raising=False)
    with pytest.raises(rk.MissingExtraError, match=r"replaykit\[viz\]"):
        rk.for_people(pd.DataFrame({"a": [1]}))
