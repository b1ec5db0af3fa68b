"""``replaykit summary``'s text table is computed on Arrow and printed without pandas: the same
rows as ``runs_df()`` and the same text as printing it through pandas (the way it was)."""

from __future__ import annotations

import argparse
import contextlib
import io
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
def test_text_table_is_pandas_to_string(columns, name):
    strings, ints, stamps = columns
    table = pa.table({name: pa.array(strings, pa.string()), "n": pa.array(ints, pa.int64()),
                      "first_ts": pa.array(stamps, pa.int64()).cast(UTC_US)})
    text = cli._text_table(table)
    # control characters are escaped (terminal_safe) on both paths; what is still not
    # printable after that (e.g. U+2028) goes through pandas
    if any(s is not None and not cli_files.terminal_safe(s).isprintable() for s in strings):
        assert text is None
        return
    with pd.option_context("display.max_rows", None, "display.max_columns", 60,
                           "display.width", 200):
        assert text == cli._safe_frame(table.to_pandas()).to_string(index=False, na_rep="")
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
    assert "1970-01-01 00:00:01+00:00" in _summary_text(log, None)


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
