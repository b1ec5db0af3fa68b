"""Branch and replay from the shell: branch create / intervene, replay, the result views and
the diff shortcut, each run as the installed console command."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import replaykit as rk
from replaykit.cli._output import EXIT_PAUSED
from replaykit.cli.app import main

EXE = str(Path(sys.executable).with_name("replaykit"))
RUN = "run-claims-C-104"
ARGS = {"claimId": "C-104", "claimedAmount": 900, "merchant": "City Travel Desk"}


def run(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    """The command in this process (fast), captured like a subprocess."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return subprocess.CompletedProcess(list(argv), code, out.getvalue(), err.getvalue())


def test_the_shell_workflow_through_the_console_script(data_dir, tmp_path):
    """create -> intervene -> replay -> diff as separate processes of the installed command."""
    env = {**os.environ, "COLUMNS": "200"}

    def sh(*argv: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([EXE, *map(str, argv)], capture_output=True, text=True,
                              check=False, env=env)

    b = tmp_path / "b.json"
    assert sh("branch", "create", "--from", RUN, "--checkpoint", "cp-intake", "--name", "n",
              "-o", b).returncode == 0
    assert sh("branch", "intervene", b, "--kind", "tool_args_patch", "--target-ref",
              "tc-104-2", "--patch-json", json.dumps({"args": ARGS})).returncode == 0
    rep = sh("replay", data_dir / "isplay", "--owner", "demo", "--branch", b, "-o",
             tmp_path / "r")
    assert rep.returncode == 3, rep.stderr
    diff = sh("diff", tmp_path / "r", "--csv")
    assert diff.returncode == 0 and diff.stdout.startswith("status,base_seq,replay_seq")


@pytest.fixture()
def branch_file(data_dir: Path, tmp_path: Path) -> Path:
    out = tmp_path / "branch.json"
    proc = run("branch", "create", "--from", RUN, "--checkpoint", "cp-intake", "--name",
               "real amount", "--log", data_dir / "isplay", "--owner", "demo", "-o", out)
    assert proc.returncode == 0, proc.stderr
    return out


def test_branch_create_writes_a_branch_file_the_library_reads(branch_file, data_dir):
    doc = json.loads(branch_file.read_text())
    assert doc["format"] == "isplay.branch/v1"
    assert (doc["baseRunId"], doc["checkpointId"], doc["name"]) == (RUN, "cp-intake",
                                                                    "real amount")
    assert doc["interventions"] == []
    log = rk.read_isplay(data_dir / "isplay", owner="demo", progress=False)
    b = rk.Branch.load(branch_file, base=log, tenant_id="demo")
    assert b.checkpoint_seq() == 2  # cp-intake in the bundled run's checkpoint table


def test_branch_create_checks_run_and_checkpoint_against_the_log(data_dir, tmp_path):
    bad_cp = run("branch", "create", "--from", RUN, "--checkpoint", "cp-nope", "--name", "x",
                 "--log", data_dir / "isplay", "--owner", "demo", "-o", tmp_path / "b.json")
    assert bad_cp.returncode == 1 and "cp-nope" in bad_cp.stderr
    bad_run = run("branch", "create", "--from", "run-x", "--checkpoint", "cp-intake", "--name",
                  "x", "--log", data_dir / "isplay", "--owner", "demo", "-o", tmp_path / "b.json")
    assert bad_run.returncode == 1 and "run-x" in bad_run.stderr
    assert not (tmp_path / "b.json").exists()
    # a seq checkpoint on a log: accepted and recorded as a seq
    seq = run("branch", "create", "--from", RUN, "--checkpoint", "5", "--name", "x",
              "--log", data_dir / "isplay", "--owner", "demo", "-o", tmp_path / "s.json")
    assert seq.returncode == 0, seq.stderr
    assert json.loads((tmp_path / "s.json").read_text())["checkpointSeq"] == 5
    again = run("branch", "create", "--from", RUN, "--checkpoint", "5", "--name", "x",
                "-o", tmp_path / "s.json")
    assert again.returncode == 2 and "--overwrite" in again.stderr


def test_branch_intervene_adds_each_selector_kind(branch_file, tmp_path):
    patch = tmp_path / "patch.json"
    patch.write_text(json.dumps({"toolName": "risk-signals", "args": ARGS}))
    proc = run("branch", "intervene", branch_file, "--kind", "tool_args_patch", "--target-ref",
               "tc-104-2", "--target-tool", "risk-signals", "--patch", patch,
               "--description", "send the real amount")
    assert proc.returncode == 0, proc.stderr
    ops = {"operations": [{"op": "replace_text", "path": "/prompt",
                           "value": {"search": "Escalate suspected fraud.", "replacement": ""}}]}
    flags = [("--target-event", "ev-104-003", "target_event"),
             ("--target-type", "model.call", "target_type"),
             ("--target-model-call", "mc-104-1", "target_model_call"),
             ("--target-artifact", "art-1", "target_artifact"),
             ("--target-context", "ctx-1", "target_context"),
             ("--target-context-path", "/a/b", "target_context_path"),
             ("--target", "tc-104-1", "target_ref")]
    for flag, value, _key in flags:
        p = run("branch", "intervene", branch_file, "--kind", "json_patch", flag, value,
                "--json-pointer", "/prompt", "--patch-json", json.dumps(
                    {"operations": [{"op": "replace", "path": "/prompt", "value": "x"}]}))
        assert p.returncode == 0, (flag, p.stderr)
    p = run("branch", "intervene", branch_file, "--kind", "prompt_patch", "--target-event",
            "ev-104-003", "--patch-json", json.dumps(ops), "--id", "drop-clause")
    assert p.returncode == 0, p.stderr
    ivs = json.loads(branch_file.read_text())["interventions"]
    assert len(ivs) == 1 + len(flags) + 1
    assert ivs[0]["selector"] == {"target_ref": "tc-104-2", "target_tool": "risk-signals"}
    assert ivs[0]["patch"] == {"toolName": "risk-signals", "args": ARGS}
    assert ivs[0]["description"] == "send the real amount"
    for iv, (_flag, value, key) in zip(ivs[1:-1], flags, strict=True):
        assert iv["selector"] == {key: value, "json_pointer": "/prompt"}
    assert ivs[-1]["interventionId"] == "drop-clause"
    assert len({iv["interventionId"] for iv in ivs}) == len(ivs)


def test_branch_intervene_rejects_bad_input_and_leaves_the_file(branch_file):
    before = branch_file.read_text()
    none = run("branch", "intervene", branch_file, "--kind", "mask", "--patch-json", "{}")
    assert none.returncode == 2 and "--target-ref" in none.stderr
    bad = run("branch", "intervene", branch_file, "--kind", "mask", "--target-event", "e",
              "--patch-json", '{"operations": []}')
    assert bad.returncode == 1 and "operations" in bad.stderr
    kind = run("branch", "intervene", branch_file, "--kind", "nope", "--target-event", "e",
               "--patch-json", "{}")
    assert kind.returncode == 2 and "invalid choice" in kind.stderr
    assert branch_file.read_text() == before


def _intervened(branch_file: Path) -> Path:
    proc = run("branch", "intervene", branch_file, "--kind", "tool_args_patch", "--target-ref",
               "tc-104-2", "--patch-json", json.dumps({"toolName": "risk-signals",
                                                       "args": ARGS}))
    assert proc.returncode == 0, proc.stderr
    return branch_file


def test_replay_pauses_with_its_own_exit_code_and_lists_requirements(branch_file, data_dir,
                                                                     tmp_path):
    out = tmp_path / "paused"
    proc = run("replay", data_dir / "isplay", "--owner", "demo", "--branch",
               _intervened(branch_file), "--model-policy", "recorded-only", "--tool-policy",
               "pause-for-fixture", "-o", out)
    assert proc.returncode == EXIT_PAUSED == 3, proc.stderr
    assert "paused for 1 fixture(s) (risk-signals)" in proc.stdout
    reqs = json.loads((out / "requirements.json").read_text())
    assert [(r["tool_name"], r["status"]) for r in reqs] == [("risk-signals", "open")]
    view = run("replay", "requirements", out, "--json")
    assert view.returncode == 0
    assert json.loads(view.stdout)[0]["args_hash"] == reqs[0]["args_hash"]
    get = run("replay", "get", out, "--json")
    assert json.loads(get.stdout)["status"] == "paused"
    # recorded-only fails instead of pausing: exit 1, not 0 and not 3
    failed = run("replay", data_dir / "isplay", "--owner", "demo", "--branch", branch_file,
                 "--tool-policy", "recorded-only", "-o", tmp_path / "failed")
    assert failed.returncode == 1, failed.stdout
    assert json.loads((tmp_path / "failed" / "manifest.json").read_text())["status"] == "failed"


def test_replay_writes_the_result_folder_matching_the_library(data_dir, tmp_path):
    branch = data_dir / "isplay" / "branch-drop-fraud-clause.json"
    fixtures = data_dir / "isplay" / "fixtures.json"
    out = tmp_path / "result"
    proc = run("replay", data_dir / "isplay", "--owner", "demo", "--branch", branch,
               "--fixtures", fixtures, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("replay completed")
    log = rk.read_isplay(data_dir / "isplay", owner="demo", progress=False)
    res = rk.replay(rk.Branch.load(branch, base=log, tenant_id="demo"), fixtures=fixtures)
    got = pq.read_table(out / "events.parquet")
    keep = [c for c in got.column_names if c != "source"]
    assert got.select(keep).equals(res.events.table.select(keep))
    # the written sources name the files, not this machine's absolute paths (issue 28)
    assert not any(s.startswith("isplay:/") for s in got.column("source").to_pylist())
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["first_divergence_step"] == res.metrics["first_divergence_step"]
    assert metrics["comparability"] == res.comparability
    assert json.loads((out / "effects.json").read_text()) == res.effects
    assert json.loads((out / "requirements.json").read_text()) == res.requirements
    # the views print what the library computes
    views = {v: run("replay", v, out, "--json") for v in
             ("get", "events", "diff", "metrics", "effects", "requirements")}
    assert all(p.returncode == 0 for p in views.values()), {k: p.stderr for k, p in
                                                             views.items()}
    assert json.loads(views["get"].stdout)["comparability"] == res.comparability
    assert len(json.loads(views["events"].stdout)) == len(res.events)
    assert json.loads(views["metrics"].stdout)["tool_sequence_distance"] == \
        res.metrics["tool_sequence_distance"]
    assert [e["action"] for e in json.loads(views["effects"].stdout)] == \
        [e["action"] for e in res.effects]
    diff = pd.DataFrame(json.loads(views["diff"].stdout))
    assert diff["status"].tolist() == res.diff_df()["status"].tolist()
    # the shortcut is the same view
    short = run("diff", out, "--json")
    assert short.returncode == 0 and short.stdout == views["diff"].stdout
    text = run("diff", out, "--limit", "3")
    assert "more rows" in text.stdout and "changed" in res.diff_df()["status"].tolist()
    # a second replay into the same folder needs --overwrite
    again = run("replay", data_dir / "isplay", "--owner", "demo", "--branch", branch,
                "-o", out)
    assert again.returncode == 2 and "--overwrite" in again.stderr


def test_result_views_on_a_folder_without_a_result_are_usage_errors(tmp_path, capsys):
    for view in ("get", "events", "diff", "metrics", "effects", "requirements"):
        assert main(["replay", view, str(tmp_path)]) == 2
        assert "not a replay result folder" in capsys.readouterr().err
    assert main(["diff", str(tmp_path)]) == 2


def test_replay_of_a_run_the_tenant_lacks_exits_1(data_dir, tmp_path, capsys):
    branch = data_dir / "isplay" / "branch-drop-fraud-clause.json"
    code = main(["replay", str(data_dir / "pleach"), "--branch", str(branch), "-o",
                 str(tmp_path / "r")])
    assert code == 1
    assert "no run 'run-claims-C-104'" in capsys.readouterr().err
