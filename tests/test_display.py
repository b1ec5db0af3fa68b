"""Notebook displays: compact summaries, escaped (log content is untrusted)."""

from __future__ import annotations

import pandas as pd
import pytest

import replaykit as rk
from replaykit._base import display as _display
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


def test_for_people_shows_times_in_the_one_format():
    import re

    times = ["2026-01-01 10:00:04.150", "2026-01-01 10:01:00", None]
    df = pd.DataFrame({"first_ts": pd.to_datetime(times, utc=True, format="ISO8601"),
                       "total": [3.0, 10.0, None]})
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", rk.for_people(df).to_html())
    assert cells == ["2026-01-01 10:00:04.150Z", "3", "2026-01-01 10:01:00.000Z", "10",
                     "", ""]


def test_for_people_without_jinja_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "jinja2", None)  # "import jinja2" raises ImportError
    monkeypatch.delitem(sys.modules, "pandas.io.formats.style", raising=False)
    with pytest.raises(rk.MissingExtraError, match=r"replaykit\[viz\]"):
        rk.for_people(pd.DataFrame({"a": [1]}))


# ------------------------------------------------------------- one missing-value style
_MISSING_SPELLINGS = ("<NA>", "NaN", "NaT", "None", "nan")


def _every_missing_kind() -> pd.DataFrame:
    """One column per pandas missing value (None, NaN, NaT, pd.NA in nullable ints, strings
    and booleans) beside a present value, as frames of logs hold them."""
    import numpy as np

    return pd.DataFrame({
        "run_id": ["r1", None],
        "rate": [0.5, np.nan],
        "first_ts": pd.to_datetime(["2026-01-01T00:00:00.152Z", None], utc=True),
        "turns": pd.array([3, None], dtype="Int64"),
        "tool": pd.array(["Bash", None], dtype="string"),
        "ok": pd.array([True, None], dtype="boolean"),
        "attrs": [{"k": [1, None]}, None],
    })


def _table_cells(html_text: str) -> list[str]:
    import re

    return [re.sub(r"<[^>]+>", "", c).strip()
            for c in re.findall(r"<td[^>]*>(.*?)</td>", html_text, flags=re.S)]


def test_every_table_surface_writes_missing_values_one_way():
    """Notebook reprs, widgets' and reports' tables, rk.for_people (HTML and text) and the
    command line's text table: a missing value is blank in each, whatever its pandas kind,
    and a timestamp has the one format."""
    from replaykit.cli._output import _frame_text
    from replaykit.report._parts import _table

    df = _every_missing_kind()
    styler = rk.for_people(df)
    surfaces = {
        "frame_html": _table_cells(_display.frame_html(df)),
        "summary_html": _table_cells(_display.summary_html("T", {}, table=df)),
        "for_people": _table_cells(styler.to_html()),
        "report": _table_cells(_table(df)),
        "people_frame": _display.people_frame(df).values.ravel().tolist(),
    }
    for name, cells in surfaces.items():
        assert len(cells) == 14, name
        assert cells[7:] == [""] * 7, (name, cells)  # the second row: all missing, all blank
        assert cells[2] == "2026-01-01 00:00:00.152Z", (name, cells)
        assert '"k": [1, null]' in cells[6].replace("&quot;", '"'), (name, cells)
    texts = {"cli": _frame_text(df), "for_people print": str(styler),
             "for_people repr": repr(styler)}
    for name, text in texts.items():
        lines = text.split("\n")
        assert len(lines) == 3 and lines[2] == "", (name, text)
        assert not any(s in text for s in _MISSING_SPELLINGS), (name, text)
        assert "2026-01-01 00:00:00.152Z" in text and "Styler object" not in text


def test_for_people_prints_as_a_table_in_a_script():
    import subprocess
    import sys

    code = ("import pandas as pd, replaykit as rk\n"
            "print(rk.for_people(pd.DataFrame({'tool': ['Bash', None], 'n': [12345, None]})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split("\n")[:3] == ["tool      n", "Bash 12,345", ""]


def test_eventlog_repr_uses_the_one_time_format(data_dir):
    log = rk.read_events(data_dir / "isplay" / "claims-triage-C-104.json", owner="demo")
    page = log._repr_html_()
    assert "2025-03-04 10:14:00.000Z" in page and "+00:00" not in page
