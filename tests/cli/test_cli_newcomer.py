"""The command line of a newcomer's first hour (issue 19): version, help, formats, table
output, quarantine, empty answers, progress frames, generators, and verify-chain's words."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import replaykit as rk
from replaykit.cli import _output as cli
from replaykit.cli import app as cli_app
from replaykit.cli import messages as cli_messages
from replaykit.cli.app import main

EXE = str(Path(sys.executable).with_name("replaykit"))


def run(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([EXE, *argv], capture_output=True, text=True, check=False, cwd=cwd,
                          env=env)


# ------------------------------------------------------------------------------ help
def test_version_is_the_package_version():
    proc = run("--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith(f"replaykit {rk.__version__}, native core ")


def test_top_level_help_lists_every_command():
    proc = run("--help")
    assert proc.returncode == 0
    sub = next(a for a in cli_app._parser()._actions if isinstance(a, argparse._SubParsersAction))
    commands = set(sub.choices)
    assert commands == {"summary", "generate", "branch", "replay", "diff", "verify-chain",
                        "report", "ingest"}
    for name in commands:
        assert f"\n    {name}" in proc.stdout, name


def _all_parsers() -> list[argparse.ArgumentParser]:
    out, todo = [], [cli_app._parser()]
    while todo:
        p = todo.pop()
        out.append(p)
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                todo.extend(v for v in a.choices.values() if v.add_help)
    from replaykit.cli.report import _parser as report_parser

    report = report_parser()
    sub = next(a for a in report._actions if isinstance(a, argparse._SubParsersAction))
    return (out + [cli_app._replay_view_parser(v) for v in cli._RESULT_VIEWS]
            + [report, *sub.choices.values()])


def test_every_option_and_argument_has_help():
    parsers = _all_parsers()
    assert len(parsers) >= 12
    missing = [f"{p.prog} {a.dest}" for p in parsers for a in p._actions
               if not isinstance(a, argparse._SubParsersAction) and not (a.help or "").strip()]
    assert missing == []
    # and the policy options name every policy the library has
    from replaykit.branch.vocab import MODEL_POLICIES, TOOL_POLICIES

    replay_help = run("replay", "--help").stdout
    for pol in (*MODEL_POLICIES, *TOOL_POLICIES):
        assert pol in replay_help


def test_verify_chain_help_has_help_on_every_option():
    proc = run("verify-chain", "--help")
    assert proc.returncode == 0
    assert "--table" in proc.stdout and "inspect" in proc.stdout and "otel" in proc.stdout


# ------------------------------------------------------------------------------ formats
def test_format_accepts_every_format_the_library_reads(data_dir, tmp_path, capsys):
    from replaykit.io import FORMATS

    sub = next(a for a in cli_app._parser()._actions if isinstance(a, argparse._SubParsersAction))
    choices = next(a for a in sub.choices["summary"]._actions if a.dest == "format").choices
    assert set(choices) == {"auto", "parquet", *FORMATS}
    # a Parquet dataset written by to_parquet, by sniffing and by name
    ds = rk.read_pleach(data_dir / "pleach", progress=False).to_parquet(tmp_path / "ds")
    for fmt in ("auto", "parquet"):
        assert main(["summary", str(ds), "--format", fmt, "--tenant", "acme", "--csv"]) == 0
        runs = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
        assert set(runs["tenant_id"]) == {"acme"} and len(runs) > 0
    # inspect and otel reach their loaders (which reject a file of another format), not
    # argparse's "invalid choice"
    for fmt in ("inspect", "otel"):
        code = main(["summary", str(data_dir / "isplay" / "claims-triage-C-104.json"),
                     "--format", fmt, "--tenant", "t"])
        err = capsys.readouterr().err
        assert code in (1, 2) and "invalid choice" not in err and err.strip()


# ------------------------------------------------------------------------------ output
def test_summary_json_csv_and_limit(data_dir, capsys):
    full = rk.read_pleach(data_dir / "pleach", progress=False).runs_df()
    assert len(full) > 3
    assert main(["summary", str(data_dir / "pleach"), "--json"]) == 0
    cap = capsys.readouterr()
    rows = json.loads(cap.out)
    assert [r["run_id"] for r in rows] == full["run_id"].tolist()
    assert "events in" in cap.err  # the human line is not mixed into the JSON
    assert main(["summary", str(data_dir / "pleach"), "--csv", "--limit", "2"]) == 0
    cap = capsys.readouterr()
    csv_rows = pd.read_csv(__import__("io").StringIO(cap.out))
    assert csv_rows["run_id"].tolist() == full["run_id"].head(2).tolist()
    assert f"{len(full) - 2:,} more runs" in cap.err
    assert main(["summary", str(data_dir / "pleach"), "--limit", "1"]) == 0
    out = capsys.readouterr().out
    assert full["run_id"][0] in out and full["run_id"][1] not in out
    assert main(["summary", str(data_dir / "pleach"), "--limit", "-1"]) == 2


def test_text_summary_is_limited_by_default(tmp_path, capsys):
    from replaykit.datasets import generate_pleach

    f = generate_pleach(tmp_path / "many.jsonl", events=3_000, runs=120, seed=1)
    assert main(["summary", str(f)]) == 0
    out = capsys.readouterr().out
    table_lines = [ln for ln in out.splitlines() if ln.strip().startswith(("acme", "globex",
                                                                           "initech"))]
    assert len(table_lines) == cli._DEFAULT_LIMIT
    assert "70 more runs" in out


def test_no_progress_frames_when_stderr_is_not_a_terminal(data_dir):
    proc = run("summary", str(data_dir / "toh"), str(data_dir / "pleach"), "--owner", "demo",
               "--errors", "quarantine")
    assert "\r" not in proc.stderr
    assert "it/s" not in proc.stderr and "B/s" not in proc.stderr


# ------------------------------------------------------------------------------ quarantine
def test_errors_quarantine_skips_unknown_files_and_writes_them_out(data_dir, tmp_path, capsys):
    mixed = tmp_path / "mixed"
    (mixed / "toh").mkdir(parents=True)
    for f in (data_dir / "toh" / "garden-report").iterdir():
        (mixed / "toh" / f.name).write_bytes(f.read_bytes())
    (mixed / "notes.json").write_text('{"hello": "not a log"}')
    (mixed / "table.parquet").write_bytes(
        (data_dir / "pleach" / "harness_event_log_hashed.parquet").read_bytes()[:100])
    # a folder's files of no known format are skipped and counted under both error modes
    assert main(["summary", str(mixed), "--owner", "demo", "--no-progress"]) == 0
    assert "2 file(s) skipped" in capsys.readouterr().out
    for out in ("q.parquet", "q.csv"):
        code = main(["summary", str(mixed), "--owner", "demo", "--errors", "quarantine",
                     "--quarantine-out", str(tmp_path / out)])
        text = capsys.readouterr().out
        assert code == 0
        assert "2 file(s) skipped" in text and f"written to {tmp_path / out}" in text
        table = (pq.read_table(tmp_path / out).to_pandas() if out.endswith(".parquet")
                 else pd.read_csv(tmp_path / out))
        assert sorted(Path(s).name for s in table["source"]) == ["notes.json", "table.parquet"]
        assert set(table["reason"]) == {"unknown_format"}  # a cut Parquet file sniffs as none
    expected = rk.read_toh(mixed / "toh", owner="demo", progress=False)
    assert main(["summary", str(mixed), "--owner", "demo", "--errors", "quarantine",
                 "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sum(r["events"] for r in rows) == len(expected)
    assert main(["summary", str(mixed), "--owner", "demo", "--errors", "quarantine",
                 "--quarantine-out", str(tmp_path / "q.txt")]) == 2


def test_unreadable_file_is_skipped_under_quarantine(data_dir, tmp_path, monkeypatch, capsys):
    import replaykit.io as rio

    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes((data_dir / "pleach" / "harness_event_log.jsonl")
                                     .read_bytes())
    (folder / "locked.jsonl").write_text("{}\n")
    real = rio.detect_format

    def detect(path):  # root reads any file: simulate the permission error of a user
        if Path(path).name == "locked.jsonl":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(rio, "detect_format", detect)
    out = tmp_path / "q.csv"
    assert main(["summary", str(folder), "--errors", "quarantine", "--quarantine-out",
                 str(out)]) == 0
    assert "1 file(s) skipped" in capsys.readouterr().out
    q = pd.read_csv(out)
    assert q["reason"].tolist() == ["unreadable"]
    assert "Permission denied" in q["message"][0]


# ------------------------------------------------------------------------------ empty answers
def test_tenant_matching_nothing_exits_1_listing_tenants_and_a_near_match(data_dir, capsys):
    assert main(["summary", str(data_dir / "pleach"), "--tenant", "ACME"]) == 1
    err = capsys.readouterr().err
    assert "no events of tenant 'ACME'" in err
    assert "tenants present: acme, globex, initech, umbrella" in err
    assert "did you mean --tenant acme?" in err
    assert main(["summary", str(data_dir / "pleach"), "--tenant", "globx"]) == 1
    assert "did you mean --tenant globex?" in capsys.readouterr().err
    assert main(["summary", str(data_dir / "pleach"), "--tenant", "zzz"]) == 1
    assert "did you mean" not in capsys.readouterr().err


def test_verify_chain_that_verified_nothing_is_not_success(data_dir, capsys):
    hashed = str(data_dir / "pleach" / "harness_event_log_hashed.parquet")
    assert main(["verify-chain", hashed]) == 0
    assert capsys.readouterr().out.startswith("intact:")
    assert main(["verify-chain", hashed, "--tenant", "nobody"]) == 1
    out = capsys.readouterr().out
    assert "nothing verified" in out and "intact" not in out


def test_verify_chain_without_tenant_speaks_cli(data_dir):
    proc = run("verify-chain", str(data_dir / "toh"))
    assert proc.returncode == 2
    assert "pass --owner ID" in proc.stderr
    assert "TypeError" not in proc.stderr and "tenant_id" not in proc.stderr


def test_cli_error_text_rewrites_python_spellings():
    from replaykit.errors import LoadError

    e = LoadError(source="x.jsonl", line=3, reason="bad_json", detail="is not JSON")
    assert "pass --errors quarantine" in cli_messages.cli_error_text(e)
    assert cli_messages.cli_error_text(KeyError("tenant 'a' has no run 'r'")) == \
        "tenant 'a' has no run 'r'"
    m = LoadError(source="s.jsonl", line=None, reason="missing_tenant", detail="d")
    assert cli_messages.cli_error_text(m).startswith("s.jsonl:") and \
        "--owner ID" in cli_messages.cli_error_text(m)


# ------------------------------------------------------------------------------ generate
def test_generate_cohorts_feeds_the_cohort_report_from_the_shell_alone(tmp_path):
    proc = run("generate", "cohorts", "cohorts", "--runs", "40", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # the sample a newcomer meets carries a known, named drift (issue 28)
    assert "planted drift: tool-errors" in proc.stdout
    log = rk.read_parquet(tmp_path / "cohorts" / "events.parquet")
    planted = rk.datasets.generate_cohorts(runs=40, drift="tool-errors")
    assert planted.log.table.column("is_error").to_pylist() == \
        log.table.column("is_error").to_pylist()
    assert log.num_runs == 40
    again = run("generate", "cohorts", str(tmp_path / "again"), "--runs", "40")
    assert again.returncode == 0
    assert rk.read_parquet(tmp_path / "again" / "events.parquet").table.equals(log.table)
    runs = run("summary", "cohorts/events.parquet", "--json", cwd=tmp_path)
    assert runs.returncode == 0 and len(json.loads(runs.stdout)) == 40


@pytest.mark.parametrize("kind", ["pleach", "toh", "isplay"])
def test_generate_other_formats_reads_back(kind, tmp_path):
    out = tmp_path / ("x.jsonl" if kind == "pleach" else
                      "toh/session.jsonl" if kind == "toh" else "isplay")
    proc = run("generate", kind, str(out), "--events", "200", "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    log = rk.read_events(out, owner="t", progress=False)
    assert len(log) > 0 and log.summary()["formats"] == [kind]


# ------------------------------------------------------------------------------ rca args
def test_rca_and_the_cli_agree_on_what_is_required(data_dir, tmp_path):
    import inspect
    import re

    from replaykit.cli.report import _parser as report_parser
    from replaykit.cli.report import report_command
    from replaykit.report import rca

    params = inspect.signature(rca).parameters
    lib_required = {n for n, p in params.items() if p.default is p.empty and n != "result"}
    sub = next(a for a in report_parser()._actions if isinstance(a, argparse._SubParsersAction))
    cli_required = {a.dest for a in sub.choices["rca"]._actions if a.required}
    # the CLI needs what makes the replay result (log, branch) and where to write it; the
    # library takes the result itself: neither demands a title or a question
    assert lib_required == set()
    assert cli_required == {"log", "branch", "output"}
    branch = data_dir / "isplay" / "branch-drop-fraud-clause.json"
    fixtures = data_dir / "isplay" / "fixtures.json"
    log = rk.read_isplay(data_dir / "isplay", owner="demo", progress=False)
    res = rk.replay(rk.Branch.load(branch, base=log, tenant_id="demo"), fixtures=fixtures)
    page = rca(res).html
    out = tmp_path / "rca.html"
    assert report_command(["rca", "--log", str(data_dir / "isplay"), "--owner", "demo",
                           "--branch", str(branch), "--fixtures", str(fixtures), "-o", str(out),
                           "--no-progress"]) == 0
    cli_page = out.read_text(encoding="utf-8")

    def title(text: str) -> str:
        return re.search(r"<title>(.*?)</title>", text, flags=re.S).group(1)  # type: ignore[union-attr]

    def question(text: str) -> str:
        return re.search(r"<b>Question.</b> (.*?)</p>", text, flags=re.S).group(1)  # type: ignore[union-attr]

    assert title(page) == title(cli_page) == "Replay of run-claims-C-104: remove escalation clause"
    assert question(page) == question(cli_page)
    assert "run-claims-C-104" in question(page)


# ------------------------------------------------------ one --format list (issue 42 item 11)
def _parsers(parser: argparse.ArgumentParser, name: str = "replaykit"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, p in action.choices.items():
                yield from _parsers(p, f"{name} {sub}")


def test_every_command_lists_every_format_from_one_place(capsys):
    from replaykit.cli import app
    from replaykit.cli import report as cli_report
    from replaykit.cli.verify import verify_chain_command
    from replaykit.io import FORMATS

    want = ("auto", *FORMATS, "parquet")  # the loaders' formats, read here from replaykit.io
    seen = {}
    for root in (app._parser(), cli_report._parser()):
        for name, p in _parsers(root):
            for action in p._actions:
                if "--format" in action.option_strings:
                    seen[name] = tuple(action.choices)
    assert {"replaykit summary", "replaykit replay", "replaykit branch create",
            "replaykit report rca", "replaykit report cohort"} <= set(seen) or \
        {"replaykit rca", "replaykit cohort"} <= set(seen), seen
    assert all(v == want for v in seen.values()), seen
    assert verify_chain_command(["--help"]) == 0
    helptext = " ".join(capsys.readouterr().out.split())
    assert ", ".join(want) in helptext


def test_report_cohort_names_an_unknown_cohort_in_command_line_words(tmp_path, capsys):
    from replaykit.cli.app import main

    assert main(["generate", "cohorts", str(tmp_path / "c"), "--runs", "40", "--drift", "none",
                 "--no-progress"]) == 0
    capsys.readouterr()
    for flag, bad, hint in (("--a", "x", ""), ("--b", "2026-sprin", "did you mean --b "
                                                                        "2026-spring?")):
        args = {"--a": "2025-fall", "--b": "2026-spring", flag: bad}
        rc = main(["report", "cohort", "--log", str(tmp_path / "c" / "events.parquet"), "--by",
                   "semester", "--a", args["--a"], "--b", args["--b"], "-o",
                   str(tmp_path / "r.html"), "--no-progress"])
        err = capsys.readouterr().err
        assert rc == 2 and not (tmp_path / "r.html").exists()
        assert err.startswith(f"replaykit report cohort: {flag} {bad}: no cohort of that name")
        assert "cohorts: 2025-fall, 2026-spring" in err and hint in err
        assert "KeyError" not in err and "\"'" not in err and "['" not in err


def test_report_errors_are_written_as_every_command_writes_them(capsys, monkeypatch,
                                                                 tmp_path):
    """A KeyError escaping a report command prints its message, not its repr."""
    from replaykit.cli import report as cli_report

    def boom(args):
        raise KeyError("no run 'r1' of tenant 'acme'")

    monkeypatch.setattr(cli_report, "_rca", boom)
    (tmp_path / "b.json").write_text("{}")
    rc = cli_report.report_command(["rca", "--log", "x.jsonl", "--branch",
                                    str(tmp_path / "b.json"), "-o", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert rc == 2 and err == "replaykit report rca: no run 'r1' of tenant 'acme'\n"


# ----------------------------------------------- one rule for written files' modes (item 13)
@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_files_the_command_line_writes_get_the_mode_python_gives(tmp_path, data_dir, umask):
    """Every file and folder a command writes has the mode Python's own open() / mkdir()
    give under the same umask (0644 / 0755 under 022), as the same report written from
    Python does: never mkstemp's 0600 or mkdtemp's 0700."""
    import stat

    iplay = str(data_dir / "isplay")
    branch = str(data_dir / "isplay" / "branch-drop-fraud-clause.json")
    fixtures = str(data_dir / "isplay" / "fixtures.json")
    out = tmp_path / f"u{umask:o}"
    commands = [
        (["report", "rca", "--log", iplay, "--owner", "demo", "--branch", branch,
          "--fixtures", fixtures, "-o", str(out / "rca.html")], out / "rca.html"),
        (["summary", str(data_dir / "pleach"), "--quarantine-out", str(out / "q.csv")],
         out / "q.csv"),
        (["branch", "create", "--from", "run-claims-C-104", "--checkpoint", "cp-intake",
          "--name", "x", "--log", iplay, "--owner", "demo", "-o", str(out / "b.json")],
         out / "b.json"),
        (["replay", iplay, "--owner", "demo", "--branch", branch, "--fixtures", fixtures,
          "-o", str(out / "replay")], out / "replay"),
        (["generate", "pleach", str(out / "g.jsonl"), "--events", "200"], out / "g.jsonl"),
        (["generate", "cohorts", str(out / "cohorts"), "--runs", "20"], out / "cohorts"),
    ]
    python = (
        "import os, sys, replaykit as rk\n"
        f"os.umask({umask})\n"
        "from replaykit.report.demo import main\n"
        "main([sys.argv[1]])\n"
        "log = rk.read_events(sys.argv[2], owner='demo')\n"
        "rk.to_otel(log, sys.argv[3])\n"
    )
    out.mkdir()
    file_mode, dir_mode = 0o666 & ~umask, 0o777 & ~umask  # open() and mkdir() under it
    for argv, written in commands:
        quiet = [] if argv[0] == "branch" else ["--no-progress"]
        proc = subprocess.run([sys.executable, "-m", "replaykit.cli", *argv, *quiet],
                              capture_output=True, text=True, check=False,
                              preexec_fn=lambda: os.umask(umask))  # noqa: PLW1509
        assert proc.returncode == 0, (argv, proc.stderr)
        for p in [written, *(written.rglob("*") if written.is_dir() else [])]:
            mode = stat.S_IMODE(p.stat().st_mode)
            assert mode == (dir_mode if p.is_dir() else file_mode), (argv, p, oct(mode))
        assert not list(out.glob(".*.tmp")), argv  # no temporary file left beside
    proc = subprocess.run([sys.executable, "-c", python, str(out / "py-rca.html"), iplay,
                           str(out / "otel.json")], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    for name in ("py-rca.html", "otel.json"):
        assert stat.S_IMODE((out / name).stat().st_mode) == file_mode, name
    assert stat.S_IMODE((out / "rca.html").stat().st_mode) == \
        stat.S_IMODE((out / "py-rca.html").stat().st_mode)
