"""``replaykit diff LOG --runs A B -o report.html`` and ``branch intervene --merge``."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
from pathlib import Path

from replaykit.cli.app import main

CC = Path(__file__).resolve().parents[1] / "data" / "claude_code" / "spotter"


def run(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return subprocess.CompletedProcess(list(argv), code, out.getvalue(), err.getvalue())


def _session_id(path: Path) -> str:
    return next(json.loads(x)["sessionId"] for x in path.read_text().splitlines()
                if "sessionId" in json.loads(x))


def test_diff_runs_writes_the_report(tmp_path: Path) -> None:
    a, b = _session_id(CC / "short.jsonl"), _session_id(CC / "tool_heavy.jsonl")
    out = tmp_path / "runs.html"
    proc = run("diff", CC / "short.jsonl", CC / "tool_heavy.jsonl", "--owner", "t",
               "--runs", a, b, "-o", out, "--no-progress")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Different: the runs part at step ")
    assert "associations, not causes" in proc.stdout
    assert f"wrote {out}" in proc.stderr and "tool-sequence distance 4" in proc.stderr
    page = out.read_text(encoding="utf-8")
    assert "id=\"rk-answer\"" in page and "Runs compared" in page
    assert "no intervention" in page.lower() and "Open requirements" not in page
    # the file exists now: not replaced without --overwrite (report rca's rule and words)
    again = run("diff", CC / "short.jsonl", CC / "tool_heavy.jsonl", "--owner", "t",
                "--runs", a, b, "-o", out)
    assert again.returncode == 2 and "exists; pass --overwrite" in again.stderr
    # without -o: the findings only
    plain = run("diff", CC / "short.jsonl", CC / "tool_heavy.jsonl", "--owner", "t",
                "--runs", a, b)
    assert plain.returncode == 0 and "Tool activity: run A made 2 tool call(s)" in plain.stdout


def test_diff_runs_unknown_run_names_the_runs(tmp_path: Path) -> None:
    a, b = _session_id(CC / "short.jsonl"), _session_id(CC / "tool_heavy.jsonl")
    proc = run("diff", CC / "short.jsonl", CC / "tool_heavy.jsonl", "--owner", "t",
               "--runs", a, "nope", "-o", tmp_path / "x.html")
    assert proc.returncode == 2
    assert "--runs: nope not in the logs; the runs they hold:" in proc.stderr
    assert a in proc.stderr and b in proc.stderr
    assert not (tmp_path / "x.html").exists()
    # the result-folder form is unchanged: one folder, no -o
    bad = run("diff", tmp_path, tmp_path)
    assert bad.returncode == 2 and "give one RESULT_DIR" in bad.stderr


def test_help_says_what_a_tool_args_patch_does() -> None:
    proc = run("branch", "intervene", "--help")
    text = " ".join(proc.stdout.split())
    assert "'args' REPLACES the call's whole arguments" in text
    assert "--merge" in text and "null removes one" in text
    diff = " ".join(run("diff", "--help").stdout.split())
    assert "--runs A B" in diff and "associations, not causes" in diff


def test_branch_intervene_merge_writes_mode(tmp_path: Path, data_dir: Path) -> None:
    branch = tmp_path / "b.json"
    made = run("branch", "create", "--from", "run-claims-C-104", "--checkpoint", "cp-intake",
               "--name", "merge", "-o", branch)
    assert made.returncode == 0, made.stderr
    proc = run("branch", "intervene", branch, "--kind", "tool_args_patch", "--target-ref",
               "tc-104-2", "--patch-json", json.dumps({"args": {"merchant": None}}), "--merge")
    assert proc.returncode == 0, proc.stderr
    iv = json.loads(branch.read_text())["interventions"][0]
    assert iv["patch"] == {"args": {"merchant": None}, "mode": "merge"}
    wrong = run("branch", "intervene", branch, "--kind", "json_patch", "--target-ref", "x",
                "--patch-json", json.dumps({"operations": []}), "--merge")
    assert wrong.returncode == 2 and "--merge applies to --kind tool_args_patch" in wrong.stderr
