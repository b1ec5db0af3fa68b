"""The replaykit console command."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from replaykit.cli.app import main


def test_summary_prints_one_row_per_run(data_dir, capsys):
    code = main(["summary", str(data_dir / "toh"), "--owner", "demo", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0
    import replaykit as rk

    runs = rk.read_toh(data_dir / "toh", owner="demo", progress=False).runs_df()
    for run_id in runs["run_id"]:
        assert run_id in out
    assert f"{runs['events'].sum():,} events in {len(runs)} runs of 1 tenant(s)" in out


def test_summary_without_tenant_for_untenanted_format_is_a_usage_error(data_dir, capsys):
    code = main(["summary", str(data_dir / "toh"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    # the CLI's words, naming the file: no Python call syntax, no TypeError text
    assert "pass --owner ID" in err and "session" in err
    assert "tenant_id" not in err and "TypeError" not in err


def test_summary_bad_input_exits_1_and_quarantine_continues(tmp_path, capsys):
    bad = tmp_path / "session.jsonl"
    bad.write_text(
        '{"type":"session","version":0,"id":"s1","createdAt":0,"cwd":"/"}\n'
        '{"type":"turn/start","data":{"turn":1}}\n'
        '{"type":"turn/end","data":\n'
    )
    assert main(["summary", str(bad), "--owner", "t", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:3" in err
    # the fix is said in the CLI's words, without the stray quotes of a Python repr
    assert "pass --errors quarantine" in err and 'errors="quarantine"' not in err
    assert not err.startswith(("'", '"', "replaykit summary: '", 'replaykit summary: "'))
    assert main(["summary", str(bad), "--owner", "t", "--no-progress", "--errors",
                 "quarantine"]) == 0
    assert "1 row(s) quarantined" in capsys.readouterr().out


def test_missing_path_is_a_usage_error(tmp_path, capsys):
    assert main(["summary", str(tmp_path / "nope.jsonl"), "--owner", "t"]) == 2
    assert "nope.jsonl" in capsys.readouterr().err


def test_console_script_is_installed(data_dir):
    exe = shutil.which("replaykit", path=str(Path(sys.executable).parent))
    assert exe is not None
    out = subprocess.run(
        [exe, "summary", str(data_dir / "pleach"), "--no-progress"],
        capture_output=True, text=True, check=True,
    )
    assert "pleach" in out.stdout


def test_progress_bar_names_files_and_counts_bytes(data_dir, capsys):
    import replaykit as rk

    rk.read_toh(data_dir / "toh", owner="demo", progress=True)
    err = capsys.readouterr().err
    assert "toh [1/4]" in err and "[4/4]" in err
    rk.read_toh(data_dir / "toh", owner="demo", progress=False)
    assert capsys.readouterr().err == ""
