"""``replaykit summary``'s text table is computed on Arrow and printed without pandas: the same
rows as ``runs_df()`` and the same text as printing it through pandas (the way it was)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import sys
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit.cli import _inputs as cli_inputs
from replaykit.cli import _output as cli
from replaykit.cli import app as cli_app
from replaykit.cli import files as cli_files
from replaykit.eventlog.log import RUNS_SCHEMA
from replaykit.schema import events_table

UTC_US = pa.timestamp("us", tz="UTC")
#: the one timestamp format of every table replaykit shows (UTC to the millisecond)
_ONE_TIME_FORMAT = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z")


def _through_pandas(log: Any, limit: int | None) -> str:
    """What ``replaykit summary`` printed before: runs_df's columns through pandas."""
    runs = log.runs_df()
    runs = runs[[c for c in cli._summary_columns() if c in runs.columns]]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        cli._emit_table(runs, argparse.Namespace(limit=limit, json=False, csv=False),
                        noun="runs")
    return buf.getvalue()


def _summary_text(log: Any, limit: int | None) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        cli._emit_summary(log, argparse.Namespace(limit=limit, json=False, csv=False,
                                                  all_columns=False))
    return buf.getvalue()


def _rows(df: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for rec in df.to_dict("records"):
        out.append({k: (None if v is None or v is pd.NaT or (isinstance(v, float) and np.isnan(v))
                        else v.to_pydatetime() if isinstance(v, pd.Timestamp) else v)
                    for k, v in rec.items()})
    return out


def _check(log: Any) -> None:
    want = log.runs_df()[cli._summary_columns()]
    got = cli._summary_table(log)
    assert got.column_names == cli._summary_columns()
    assert got.to_pylist() == _rows(want)
    for limit in (None, 0, 2):
        shown = got if limit == 0 else got.slice(0, cli._DEFAULT_LIMIT if limit is None
                                                 else limit)
        if len(shown):
            assert cli._text_table(shown) is not None  # printed from Arrow, not pandas
        assert _summary_text(log, limit) == _through_pandas(log, limit)


def test_sample_logs_print_as_through_pandas(data_dir):
    _check(rk.read_pleach(data_dir / "pleach", progress=False))
    _check(rk.read_pleach(data_dir / "pleach", tenant_id="acme", progress=False))
    _check(cli_inputs._read([data_dir / "toh", data_dir / "isplay"], "auto", None, owner="demo"))
    mixed = rk.concat([rk.read_pleach(data_dir / "pleach", progress=False),
                       rk.read_toh(data_dir / "toh", owner="acme", progress=False)])
    _check(mixed)


def test_generated_pleach_prints_as_through_pandas(tmp_path):
    from replaykit.datasets import generate_pleach

    path = generate_pleach(tmp_path / "p.jsonl", events=3_000, runs=60, seed=3)
    _check(rk.read_pleach(path, progress=False))


def test_empty_log_prints_no_runs():
    log = rk.EventLog(events_table({"tenant_id": [], "run_id": [], "seq": [], "type": [],
                                    "kind": [], "payload": [], "source": []}))
    assert _summary_text(log, None) == "(no runs)\n" == _through_pandas(log, None)


_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1,
                 max_size=6)
_us = st.one_of(st.integers(0, 4_000_000_000) .map(lambda s: s * 1_000_000),
                st.integers(0, 4_000_000_000_000).map(lambda ms: ms * 1000),
                st.integers(0, 4_000_000_000_000_000))


@st.composite
def _logs(draw: Any) -> Any:
    runs = draw(st.lists(st.tuples(st.sampled_from(["acme", "umbrella"]), _names),
                         min_size=1, max_size=6, unique=True))
    cols: dict[str, list[Any]] = {c: [] for c in ("tenant_id", "run_id", "seq", "type", "kind",
                                                  "payload", "source", "ts", "parent_run_id",
                                                  "turn", "finish", "is_error")}
    for tenant, run in runs:
        n = draw(st.integers(1, 4))
        for seq in range(n):
            cols["tenant_id"].append(tenant)
            cols["run_id"].append(run)
            cols["seq"].append(seq)
            cols["type"].append("x")
            cols["kind"].append(draw(st.sampled_from(["tool_call", "other", "model_response"])))
            cols["payload"].append("{}")
            cols["source"].append(draw(st.sampled_from(["toh:a", "pleach:b", "isplay:c"])))
            cols["ts"].append(draw(st.none() | _us))
            cols["parent_run_id"].append(draw(st.none() | _names))
            cols["turn"].append(draw(st.none() | st.integers(0, 3)))
            cols["finish"].append(draw(st.none() | st.just("stop")))
            cols["is_error"].append(draw(st.booleans()))
    cols["ts"] = pa.array(cols["ts"], pa.int64()).cast(UTC_US)
    table = events_table(cols)
    if not draw(st.booleans()):
        return rk.EventLog(table)
    # header rows: some runs, header-only runs, repeated headers (the first one counts)
    keys = runs + draw(st.lists(st.tuples(st.sampled_from(["acme", "zeta"]), _names),
                                max_size=2))
    heads = draw(st.lists(st.sampled_from(keys), min_size=1, max_size=8))
    meta = pa.table({
        "tenant_id": [t for t, _ in heads], "run_id": [r for _, r in heads],
        "parent_run_id": [draw(st.none() | _names) for _ in heads],
        "format": [draw(st.sampled_from(["toh", "isplay"])) for _ in heads],
        "source": [None] * len(heads),
        "created_at": pa.array([draw(st.none() | _us) for _ in heads], pa.int64()).cast(UTC_US),
        "attrs": pa.array([draw(st.sampled_from([None, "", '{"a": 1}', '{"events": 2}']))
                           for _ in heads], pa.large_string()),
    }).cast(RUNS_SCHEMA)
    return rk.EventLog(table, runs=meta)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_logs())
def test_runs_table_and_text_equal_runs_df_through_pandas(log):
    want = log.runs_df()[cli._summary_columns()]
    assert cli._summary_table(log).to_pylist() == _rows(want)
    for limit in (None, 0, 2):
        assert _summary_text(log, limit) == _through_pandas(log, limit)


_cells = st.one_of(st.none(), st.text(max_size=8))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6).flatmap(lambda n: st.tuples(
    st.lists(_cells, min_size=n, max_size=n),
    st.lists(st.integers(-10**12, 10**12), min_size=n, max_size=n),
    st.lists(st.none() | _us, min_size=n, max_size=n))),
    st.sampled_from(["s", "a_longer_name"]))
def test_text_table_is_the_frame_text(columns, name):
    """The Arrow path and the pandas path print one table (cells and layout), at any width."""
    strings, ints, stamps = columns
    table = pa.table({name: pa.array(strings, pa.string()), "n": pa.array(ints, pa.int64()),
                      "first_ts": pa.array(stamps, pa.int64()).cast(UTC_US)})
    text = cli._text_table(table)
    # control characters are escaped (terminal_safe) on both paths; what is still not
    # printable after that (e.g. U+2028) goes through pandas
    if any(s is not None and not cli_files.terminal_safe(s).isprintable() for s in strings):
        assert text is None
        return
    assert text == cli._frame_text(table.to_pandas())
    for width in (40, 60):
        assert cli._text_table(table, width) == cli._frame_text(table.to_pandas(), width)
    stamps_shown = re.findall(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[.+\dZ:]*", text)
    assert len(stamps_shown) == sum(v is not None for v in stamps)
    assert all(_ONE_TIME_FORMAT.fullmatch(t) for t in stamps_shown)
    for s in strings:
        if s is not None and any(ord(c) < 32 for c in s):
            assert not any(ord(c) < 32 and c != "\n" for c in text)  # every one escaped


def test_a_run_id_pandas_would_escape_goes_through_pandas():
    log = rk.EventLog(events_table({"tenant_id": ["t", "t"], "run_id": ["a\tb", "c"],
                                    "seq": [0, 0], "type": ["x", "x"], "kind": ["other"] * 2,
                                    "payload": ["{}"] * 2, "source": ["toh:a"] * 2}))
    text = _summary_text(log, None)
    assert text == _through_pandas(log, None) and "a\\x09b" in text and "\t" not in text


def test_the_command_line_process_prints_all_and_keeps_exit_codes(data_dir, capsys):
    """The command-line process ends without the interpreter's teardown (os._exit): its
    buffered output is complete and its exit codes are the command's."""
    import subprocess
    import sys

    from replaykit.cli.app import main

    for argv, code in ((["summary", str(data_dir / "pleach"), "--limit", "0"], 0),
                       (["summary", str(data_dir / "pleach"), "--json"], 0),
                       (["summary", str(data_dir / "toh")], 2),
                       (["summary", str(data_dir / "pleach"), "--tenant", "nobody"], 1)):
        proc = subprocess.run([sys.executable, "-m", "replaykit.cli", *argv, "--no-progress"],
                              capture_output=True, text=True, check=False)
        assert main([*argv, "--no-progress"]) == code == proc.returncode
        here = capsys.readouterr()
        assert (proc.stdout, proc.stderr) == (here.out, here.err)


def test_runs_known_only_from_headers_print_as_through_pandas():
    empty = events_table({"tenant_id": [], "run_id": [], "seq": [], "type": [], "kind": [],
                          "payload": [], "source": []})
    meta = pa.table({
        "tenant_id": ["a", "a"], "run_id": ["r1", "r0"], "parent_run_id": [None, "r1"],
        "format": ["toh", "toh"], "source": [None, None],
        "created_at": pa.array([1_000_000, None], pa.int64()).cast(UTC_US),
        "attrs": pa.array([None, '{"x": 1}'], pa.large_string())}).cast(RUNS_SCHEMA)
    log = rk.EventLog(empty, runs=meta)
    _check(log)
    assert "1970-01-01 00:00:01.000Z" in _summary_text(log, None)


def test_main_without_argv_returns_in_process(data_dir, capsys, monkeypatch):
    """main() on sys.argv (as a notebook or a script calling it would) returns its code and
    never ends the interpreter; only the console command (console_main) exits fast."""
    import os

    def no_exit(code):
        raise AssertionError(f"os._exit({code}) called from main()")

    monkeypatch.setattr(os, "_exit", no_exit)
    monkeypatch.setattr(sys, "argv", ["replaykit", "summary", str(data_dir / "pleach"),
                                      "--limit", "0", "--no-progress"])
    assert cli_app.main() == 0
    out = capsys.readouterr().out
    assert out.strip()
    with pytest.raises(AssertionError, match=r"os\._exit\(0\)"):
        cli_app.console_main()
    assert capsys.readouterr().out == out


# ------------------------------------------------------------------ a terminal's width
def _in_terminal(argv: list[str], columns: int) -> tuple[int, str]:
    """Exit code and output of ``replaykit ARGV`` run on a pseudo-terminal ``columns`` wide
    (stdout is a terminal, as when a person types the command)."""
    import pty
    import subprocess

    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "50"}
    proc = subprocess.Popen([sys.executable, "-m", "replaykit.cli", *argv, "--no-progress"],
                            stdout=follower, stderr=follower, stdin=subprocess.DEVNULL, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return proc.wait(timeout=120), b"".join(chunks).decode().replace("\r\n", "\n")


def _elided_from(shown: str, whole: str) -> bool:
    """``shown`` is ``whole`` or ``whole`` cut in the middle with an ellipsis."""
    if "\u2026" not in shown:
        return shown == whole
    head, tail = shown.split("\u2026", 1)
    return len(shown) < len(whole) and whole.startswith(head) and whole.endswith(tail)


@pytest.mark.parametrize("columns", [60, 100])
def test_summary_fits_a_terminal_and_shows_every_run(data_dir, columns):
    isplay = sorted((data_dir / "isplay").glob("claims-*.json"))
    want = {}  # run id -> event count, read here from the files
    for f in isplay:
        doc = json.loads(f.read_text())
        want[doc["run"]["runId"]] = len(doc["events"])
    for extra in ([], ["--all-columns"]):
        rc, out = _in_terminal(["summary", str(data_dir / "isplay"), "--owner", "demo",
                                *extra], columns)
        assert rc == 0, out
        lines = out.rstrip("\n").split("\n")
        assert max(len(line) for line in lines) <= columns, out
        assert "unhashable" not in out and "+00:00" not in out
        stamps = re.findall(r"\d{4}-\d\d-\d\d \d\d:\d\d:\S+", out)
        assert stamps and all(_ONE_TIME_FORMAT.fullmatch(t) for t in stamps), stamps
        # every block of the wrapped table starts with the run id, each run on its own line
        blocks = [b.split("\n") for b in out.split("\n\n") if b.startswith(("tenant_id",
                                                                               "run_id"))]
        for block in blocks:
            header = block[0].split()
            at = header.index("run_id")
            rows = [r.split() for r in block[1:] if r.strip() and not r.startswith("...")]
            shown = [r[at] for r in rows[: len(want)]]
            assert sorted(shown) == sorted(want)  # ids short enough to stay whole
        first = blocks[0]  # tenant_id, run_id, parent_run_id (empty here), ..., events
        assert first[0].split()[:3] == ["tenant_id", "run_id", "parent_run_id"]
        got = {}
        for row in first[1:]:
            m = re.match(r"demo\s+(\S+)\s+(?:isplay\s+)?(\d+)(?:\s|$)", row)
            if m:
                got[m.group(1)] = int(m.group(2))
        assert got == want
        if extra:  # the runs' attrs (dicts) print as JSON text, cut to fit
            assert '{"name"' in out or '{"chan' in out


def test_summary_elides_long_run_ids_in_the_middle(data_dir):
    rc, out = _in_terminal(["summary", str(data_dir / "claude_code"), str(data_dir / "codex"),
                            "--owner", "demo"], 80)
    assert rc == 0
    assert max(len(line) for line in out.rstrip("\n").split("\n")) <= 80
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "replaykit.cli", "summary",
                           str(data_dir / "claude_code"), str(data_dir / "codex"), "--owner",
                           "demo", "--json", "--no-progress"], capture_output=True, text=True,
                          check=True)
    ids = [r["run_id"] for r in json.loads(proc.stdout)]  # the whole ids (JSON: never cut)
    shown = [r.split()[1] for r in out.split("\n")[1:] if r.startswith("demo")]
    assert len(shown) == len(ids) == 3
    assert all(_elided_from(s, i) for s, i in zip(shown, ids, strict=True))
    assert any("\u2026" in s for s in shown) and len(set(shown)) == 3


def test_summary_to_a_pipe_keeps_every_column_whole(data_dir):
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "replaykit.cli", "summary",
                           str(data_dir / "pleach"), "--no-progress", "--limit", "0"],
                          capture_output=True, text=True, check=False,
                          env={**os.environ, "COLUMNS": "60"})
    assert proc.returncode == 0
    head = proc.stdout.split("\n")[0].split()
    assert head == cli._summary_columns() and "\u2026" not in proc.stdout


_cell_text = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1,
                     max_size=40)


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 8).flatmap(lambda n: st.tuples(
    st.lists(st.sampled_from(["run_id", "tenant_id", "a", "long_column_name", "n", "b", "c",
                              "first_ts"]), min_size=n, max_size=n, unique=True),
    st.lists(st.booleans(), min_size=n, max_size=n),
    st.integers(1, 5).flatmap(lambda r: st.lists(st.lists(_cell_text, min_size=r, max_size=r),
                                                 min_size=n, max_size=n)))),
    st.integers(40, 160))
def test_layout_fits_whenever_a_block_can(shape, width):
    """The layout rule: lines fit ``width`` whenever the widest fixed column (a number) and
    the key fit beside each other; every cell is shown whole or cut in the middle; every row
    of every block is one row of the table."""
    heads, numeric, cols = shape
    cols = [[c if not num else str(len(c)) for c in col] for col, num in
            zip(cols, numeric, strict=True)]
    text = cli._layout(heads, [list(c) for c in cols], numeric, width)
    blocks = text.split("\n\n")
    key = heads.index("run_id") if "run_id" in heads else 0
    floor = [max(cli.MIN_ELIDED, len(h)) if not num else max(len(h), *map(len, col))
             for h, num, col in zip(heads, numeric, cols, strict=True)]
    if max(floor) + floor[key] + 2 <= width:
        assert max(len(line) for line in text.split("\n")) <= width
    shown_heads = []
    for b, block in enumerate(blocks):
        lines = block.split("\n")
        assert len(lines) == 1 + len(cols[0])  # one line per row in every block
        names = lines[0].split()
        if b and heads[key] in shown_heads:
            assert names[0] == heads[key]  # later blocks repeat the key column
            names = names[1:]
        shown_heads += names
        for r, line in enumerate(lines[1:]):  # a cell whole or cut in the middle
            cells = line.split()
            first = heads.index(lines[0].split()[0])
            assert _elided_from(cells[0], cols[first][r])
    assert shown_heads == heads  # every column once, in order
    whole = cli._layout(heads, [list(c) for c in cols], numeric, None)
    assert "\u2026" not in whole and "\n\n" not in whole
