"""The command line without surprises (issue 31 items 5-8, 13) and as an attack surface
(issue 30 items 6-8). Most tests run the installed console script, as a user would."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from _cli_batch import run_batch

import replaykit as rk
from replaykit.cli import _output as cli
from replaykit.cli import app as cli_app
from replaykit.cli import files as _cli_files
from replaykit.cli import files as cli_files

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
EXE = shutil.which("replaykit", path=str(Path(sys.executable).parent)) or "replaykit"


def run(*args: str, cwd: Path | None = None, timeout: float = 120,
        stdin: int | None = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([EXE, *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=timeout, stdin=stdin, check=False)


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The error a command printed: exactly one line, no traceback, no Python warning form."""
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "Warning:" not in proc.stderr
    return lines[0]


# ------------------------------------------------------------------ --version / --help (8)
def test_version_and_help_import_nothing_heavy():
    code = ("import sys, contextlib, io\n"
            "from replaykit.cli import main\n"
            "for argv in (['--version'], ['--help']):\n"
            "    with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "        assert main(argv) == 0\n"
            "    assert out.getvalue().strip(), argv\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in\n"
            "               ('pandas', 'pyarrow', 'numpy', 'replaykit.branch'))\n"
            "heavy += sorted(m for m in sys.modules if m.startswith(('replaykit.io',\n"
            "                'replaykit.eventlog', 'replaykit.branch')))\n"
            "print(heavy)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert proc.stdout.strip() == "[]"
    out = run("--version")
    assert out.returncode == 0 and out.stdout.strip() == cli_app.version_text()
    assert out.stdout.startswith(f"replaykit {rk.__version__}")
    # the native core's version and the CPU features it uses (issue 27)
    from replaykit._base import native as _native

    if _native.available():
        state = "off (REPLAYKIT_NATIVE=0)" if _native._switched_off() else "on"
        assert f"native core {_native.version()} ({state}; CPU features: " in out.stdout
    else:
        assert "native core: not built" in out.stdout


@pytest.mark.parametrize("argv", [
    ["summary", "--help"], ["generate", "--help"], ["branch", "--help"],
    ["branch", "create", "--help"], ["branch", "intervene", "--help"], ["replay", "--help"],
    ["diff", "--help"], ["report", "--help"], ["report", "rca", "--help"],
    ["report", "cohort", "--help"],
])
def test_a_command_s_help_imports_nothing_heavy(argv: list[str]) -> None:
    """A command's help (the policies' help comes from branch.vocab) imports neither pandas,
    pyarrow nor numpy, nor the loaders or the replay engine (verify-chain's help, which
    imports its reader at 0.4 s, is left out)."""
    code = ("import sys, contextlib, io\n"
            "from replaykit.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            f"    assert main({argv!r}) == 0\n"
            "assert 'usage: replaykit' in out.getvalue()\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in\n"
            "               ('pandas', 'pyarrow', 'numpy'))\n"
            "heavy += sorted(m for m in sys.modules if m.startswith(('replaykit.io',\n"
            "                'replaykit.eventlog', 'replaykit.branch.replay',\n"
            "                'replaykit.branch.compare')))\n"
            "print(heavy)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert proc.stdout.strip() == "[]", proc.stdout


def test_help_lists_exit_codes_and_every_policy_is_explained():
    from replaykit.branch.vocab import MODEL_POLICIES, TOOL_POLICIES

    assert set(cli_files.MODEL_POLICY_HELP) == set(MODEL_POLICIES)
    assert set(cli_files.TOOL_POLICY_HELP) == set(TOOL_POLICIES)
    assert "130" in run("--help").stdout
    text = " ".join(run("replay", "--help").stdout.split())  # argparse wraps lines
    for name, what in [*cli_files.MODEL_POLICY_HELP.items(), *cli_files.TOOL_POLICY_HELP.items()]:
        assert f"{name}: {' '.join(what.split())}" in text
    text = " ".join(run("report", "rca", "--help").stdout.split())
    assert all(name + ":" in text for name in (*MODEL_POLICIES, *TOOL_POLICIES))


def test_readme_exit_codes_are_the_cli_s():
    readme = " ".join((ROOT / "README.md").read_text().split())
    m = re.search(r"Every command exits (.*?)\. A replay result", readme)
    assert m, "README states the exit codes"
    said = m.group(1)
    for code in (cli.EXIT_OK, cli.EXIT_EMPTY, cli.EXIT_USAGE, cli.EXIT_PAUSED,
                 cli.EXIT_INTERRUPTED):
        assert re.search(rf"\b{code}\b", said), (code, said)
    assert cli.EXIT_INTERRUPTED == 130


@pytest.mark.parametrize("argv, hint", [
    (["summary", "data/pleach", "--tenat", "acme"], "--tenant"),
    (["summary", "data/pleach", "--no-progrss"], "--no-progress"),
    (["sumary", "data/pleach"], "summary"),
    (["replay", "data/isplay", "--branch", "b.json", "-o", "x", "--model-polcy", "blocked"],
     "--model-policy"),
    (["generate", "pleech", "out.jsonl"], "pleach"),
    (["verify-chain", "data/pleach", "--tenants", "acme"], "--tenant"),
    (["report", "rca", "--log", "x", "--branch", "b", "-o", "o.html", "--fixturs", "f"],
     "--fixtures"),
])
def test_a_mistyped_option_or_command_suggests_the_right_one(argv, hint):
    proc = run(*argv)
    assert proc.returncode == 2
    assert f"did you mean {hint}?" in proc.stderr


def test_loader_warnings_print_as_one_line_cli_messages(tmp_path):
    # the same OTLP export twice: the loader warns about the duplicate spans
    for k in (1, 2):
        shutil.copy(DATA / "otel" / "genai-traces.json", tmp_path / f"copy{k}.json")
    proc = run("summary", str(tmp_path), "--owner", "demo", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    warned = [ln for ln in proc.stderr.splitlines() if ln]
    assert warned and all(ln.startswith("replaykit: warning: ") for ln in warned), proc.stderr
    assert "UserWarning" not in proc.stderr and ".py:" not in proc.stderr


# ------------------------------------------------------------------ --owner / --tenant (6)
def test_owner_and_tenant_are_separate_and_dropped_rows_are_counted():
    everything = rk.read_events([DATA / "pleach", DATA / "toh"], owner="demo", progress=False)
    kept = everything.filter(tenant_id="acme")
    proc = run("summary", str(DATA / "pleach"), str(DATA / "toh"), "--owner", "demo",
               "--tenant", "acme", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith(f"{len(kept):,} events in {kept.num_runs:,} runs of 1 tenant(s)")
    assert f"{len(everything) - len(kept):,} row(s) of other tenants left out by --tenant acme" \
        in last
    # --owner alone: every tenant, nothing left out
    proc = run("summary", str(DATA / "pleach"), str(DATA / "toh"), "--owner", "demo",
               "--no-progress")
    assert f"{len(everything):,} events in" in proc.stdout and "left out" not in proc.stdout
    # a tenant-less log without --owner: the error names the option to pass
    proc = run("summary", str(DATA / "toh"), "--no-progress")
    assert proc.returncode == 2 and "pass --owner ID" in one_line_error(proc)


def test_tenant_alone_never_names_the_owner():
    """--tenant filters, in every command and format; logs that record no tenant need
    --owner, and the usage error says so (the old meaning of --tenant is gone)."""
    proc = run("summary", str(DATA / "toh"), "--tenant", "demo", "--no-progress")
    assert proc.returncode == 2 and proc.stdout == ""
    err = one_line_error(proc)
    assert "pass --owner ID" in err and "--tenant only filters" in err
    assert "note:" not in proc.stderr and "tenant_id" not in proc.stderr
    ok = run("summary", str(DATA / "toh"), "--owner", "demo", "--tenant", "demo",
             "--no-progress")
    assert ok.returncode == 0 and "of 1 tenant(s)" in ok.stdout


# ------------------------------------------------------------------ paths (5)
def _mixed(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    (root / "a" / "deeper").mkdir(parents=True)
    shutil.copy(DATA / "pleach" / "harness_event_log.jsonl", root / "a" / "events.jsonl")
    shutil.copytree(DATA / "toh" / "garden-report", root / "a" / "deeper" / "toh")
    (root / "a" / "README.md").write_text("# notes\n")
    (root / "a" / "deeper" / "events.jsonl.gz").write_bytes(b"\x1f\x8b\x08\x00rest")
    (root / "a" / "notes.json").write_text('{"hello": "not a log"}')
    return root


def test_a_glob_of_folders_and_a_folder_walk_read_and_skip_the_same(tmp_path):
    root = _mixed(tmp_path)
    by_folder = run("summary", str(root), "--owner", "o", "--no-progress")
    by_glob = run("summary", str(root / "*"), "--owner", "o", "--no-progress")
    by_glob_inner = run("summary", str(root / "a" / "*"), "--owner", "o", "--no-progress")
    for proc in (by_folder, by_glob, by_glob_inner):
        assert proc.returncode == 0, proc.stderr
        assert "3 file(s) skipped" in proc.stdout.splitlines()[-1]  # .md, .gz, notes.json
    assert by_folder.stdout == by_glob.stdout == by_glob_inner.stdout
    # the same files, listed with their reasons, under quarantine
    q = tmp_path / "q.csv"
    proc = run("summary", str(root / "*"), "--owner", "o", "--errors", "quarantine",
               "--quarantine-out", str(q), "--no-progress")
    assert proc.returncode == 0
    import pandas as pd

    sources = sorted(Path(s).name for s in pd.read_csv(q)["source"])
    assert sources == ["README.md", "events.jsonl.gz", "notes.json"]
    # a file named on the command line must be a log
    proc = run("summary", str(root / "a" / "README.md"), "--owner", "o", "--no-progress")
    assert proc.returncode == 1 and "README.md" in one_line_error(proc)


# ------------------------------------------------------------------ writers (30.6)
def test_quarantine_out_never_follows_a_link_overwrites_an_input_or_an_existing_file(tmp_path):
    root = _mixed(tmp_path)
    victim = tmp_path / "victim.csv"
    victim.write_text("precious\n")
    link = tmp_path / "q.csv"
    link.symlink_to(victim)
    args = [str(root), "--owner", "o", "--no-progress", "--quarantine-out"]
    proc = run("summary", *args, str(link), "--overwrite")
    assert proc.returncode == 2 and "symbolic link" in one_line_error(proc)
    assert victim.read_text() == "precious\n"
    parquet_input = root / "a" / "log.parquet"
    shutil.copy(DATA / "pleach" / "harness_event_log_hashed.parquet", parquet_input)
    before = parquet_input.read_bytes()
    proc = run("summary", *args, str(parquet_input), "--overwrite")
    assert proc.returncode == 2 and "is an input of this command" in one_line_error(proc)
    assert parquet_input.read_bytes() == before
    out = tmp_path / "out.csv"
    out.write_text("old\n")
    proc = run("summary", *args, str(out))
    assert proc.returncode == 2 and "--overwrite" in one_line_error(proc)
    assert out.read_text() == "old\n"
    assert run("summary", *args, str(out), "--overwrite").returncode == 0
    assert out.read_text().startswith("tenant_id") or "source" in out.read_text()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_branch_and_generate_writers_refuse_links_inputs_and_existing_paths(tmp_path):
    target = tmp_path / "target.json"
    target.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    create = ["branch", "create", "--from", "r", "--checkpoint", "c", "--name", "n", "-o"]
    proc = run(*create, str(link), "--overwrite")
    assert proc.returncode == 2 and "symbolic link" in one_line_error(proc)
    assert target.read_text() == "{}"
    branch = tmp_path / "b.json"
    assert run(*create, str(branch)).returncode == 0
    proc = run(*create, str(branch))
    assert proc.returncode == 2 and "--overwrite" in one_line_error(proc)
    patch = tmp_path / "patch.json"
    patch.write_text('{"operations": [{"op": "replace", "path": "/prompt", "value": "x"}]}')
    proc = run("branch", "intervene", str(branch), "--kind", "prompt_patch", "--target-ref",
               "x", "--patch", str(patch), "-o", str(patch), "--overwrite")
    assert proc.returncode == 2 and "is an input" in one_line_error(proc)
    assert json.loads(patch.read_text())["operations"][0]["value"] == "x"
    out = tmp_path / "gen.jsonl"
    assert run("generate", "pleach", str(out), "--events", "50").returncode == 0
    first = out.read_bytes()
    proc = run("generate", "pleach", str(out), "--events", "60", "--seed", "4")
    assert proc.returncode == 2 and out.read_bytes() == first
    assert run("generate", "pleach", str(out), "--events", "60", "--seed", "4",
               "--overwrite").returncode == 0
    assert out.read_bytes() != first
    folder_link = tmp_path / "folder-link"
    folder_link.symlink_to(tmp_path / "elsewhere")
    proc = run("generate", "isplay", str(folder_link), "--overwrite")
    assert proc.returncode == 2 and not (tmp_path / "elsewhere").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_atomic_write_leaves_the_old_file_when_the_writer_fails(tmp_path):
    target = tmp_path / "t.txt"
    target.write_text("old")

    def half(tmp: Path) -> None:
        tmp.write_text("half a fi")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _cli_files.atomic_write(target, half)
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["t.txt"]
    link = tmp_path / "l.txt"
    link.symlink_to(target)
    _cli_files.atomic_write_text(link, "new")  # replaces the link itself, never its target
    assert target.read_text() == "old" and not link.is_symlink() and link.read_text() == "new"


# ------------------------------------------------------------------ hostile files (30.7)
def _hostile(tmp_path: Path) -> dict[str, Path]:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    deep_obj = tmp_path / "deep-obj.json"
    deep_obj.write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as fh:  # sparse: large on paper, nothing on disk
        fh.truncate(_cli_files.MAX_OPTION_FILE_BYTES + 1)
    folder = tmp_path / "folder.json"
    folder.mkdir()
    binary = tmp_path / "binary.json"
    binary.write_bytes(bytes(range(256)) * 4)
    return {"fifo": fifo, "device": Path("/dev/zero"), "deep": deep, "deep-obj": deep_obj,
            "huge": huge, "folder": folder, "binary": binary}


@pytest.mark.slow  # 35 commands: in `make test`, not `make check`
@pytest.mark.parametrize("kind", ["fifo", "device", "deep", "deep-obj", "huge", "folder",
                                  "binary"])
def test_hostile_option_files_get_one_line_and_exit_2(tmp_path, kind):
    bad = _hostile(tmp_path)[kind]
    branch = tmp_path / "b.json"
    assert run("branch", "create", "--from", "r", "--checkpoint", "c", "--name", "n", "-o",
               str(branch)).returncode == 0  # the console script itself, once
    calls = [
        ["branch", "intervene", str(branch), "--kind", "prompt_patch", "--target-ref", "x",
         "--patch", str(bad)],
        ["branch", "intervene", str(bad), "--kind", "prompt_patch", "--target-ref", "x",
         "--patch-json", "{}"],
        ["replay", str(DATA / "isplay"), "--owner", "demo", "--branch", str(bad), "-o",
         str(tmp_path / "res")],
        ["replay", str(DATA / "isplay"), "--owner", "demo", "--branch",
         str(DATA / "isplay" / "branch-drop-fraud-clause.json"), "--fixtures", str(bad), "-o",
         str(tmp_path / "res")],
        ["verify-chain", str(DATA / "pleach"), "--heads", str(bad)],
    ]
    # a FIFO must not block: the timeout would fail here
    for argv, proc in zip(calls, run_batch(calls, timeout=120), strict=True):
        assert proc.returncode == 2, (argv, proc.stderr)
        line = one_line_error(proc)
        assert str(bad.name) in line or "nest" in line, line
    assert json.loads(branch.read_text())["interventions"] == []


def test_a_fifo_or_device_given_as_a_log_is_refused_without_blocking(tmp_path):
    bad = _hostile(tmp_path)
    for kind in ("fifo", "device"):
        proc = run("summary", str(bad[kind]), "--owner", "o", "--no-progress", timeout=60)
        assert proc.returncode == 2 and "not a log file or folder" in one_line_error(proc)


@pytest.mark.slow
def test_seeded_fuzz_of_patch_files_never_tracebacks(tmp_path):
    rng = random.Random(31)
    branch = tmp_path / "b.json"
    assert run("branch", "create", "--from", "r", "--checkpoint", "c", "--name", "n", "-o",
               str(branch)).returncode == 0
    pieces = ['{"', '":', "[", "]", "{", "}", '"\\ud800"', "1e999999", "-", "\x00", "\xff",
              "null", ",", '"operations"', "\n", "\u202e", '{"op":"replace"}']
    calls = []
    for k in range(12):
        f = tmp_path / f"fuzz{k}.json"
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 400)))
        f.write_bytes(text.encode("utf-8", "surrogatepass") if k % 3 else
                      bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))))
        calls.append(["branch", "intervene", str(branch), "--kind", "json_patch",
                      "--target-ref", "x", "--patch", str(f), "-o",
                      str(tmp_path / f"out{k}.json")])
    for proc in run_batch(calls):
        assert proc.returncode in (0, 2), proc.stderr
        if proc.returncode:
            line = one_line_error(proc)
            assert "\x1b" not in line and "\u202e" not in line


# ------------------------------------------------------------------ control characters (30.8)
EVIL = "run-\x1b[31mred\x1b[0m\r\x08\u202eevil"


def _evil_log(tmp_path: Path) -> Path:
    rows = [{"tenant_id": "t", "chat_id": EVIL, "sequence_number": i,
             "event_type": "message.user", "payload": {"message_id": "m", "text": "x\x1b[2J"},
             "created_at": f"2026-01-01T00:00:0{i}.000Z", "prev_hash": None,
             "row_hash": None} for i in range(2)]
    p = tmp_path / "evil.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def _no_raw_controls(text: str) -> None:
    assert "\x1b" not in text and "\r" not in text and "\x08" not in text, repr(text)
    assert "\u202e" not in text


def test_control_characters_are_escaped_in_text_json_and_errors(tmp_path):
    log = _evil_log(tmp_path)
    loaded = rk.read_events(log, progress=False)
    assert EVIL in loaded.run_ids  # the loader keeps the value; only printing escapes it
    text = run("summary", str(log), "--no-progress")
    assert text.returncode == 0, text.stderr
    _no_raw_controls(text.stdout)
    assert "run-\\x1b[31mred" in text.stdout and "\\u202eevil" in text.stdout
    js = run("summary", str(log), "--json", "--no-progress")
    _no_raw_controls(js.stdout)
    assert [r["run_id"] for r in json.loads(js.stdout)] == [EVIL]  # same value once parsed
    missing = run("summary", str(log), "--tenant", "nobody\x1b[31m", "--no-progress")
    assert missing.returncode == 2  # a tenant id with a control character is bad usage
    assert "control character" in one_line_error(missing)
    _no_raw_controls(missing.stderr)


def test_every_output_mode_is_escaped_on_a_terminal(tmp_path):
    import pty

    log = _evil_log(tmp_path)
    for mode in ("--csv", "--json", "--all-columns"):
        pid, fd = pty.fork()
        if pid == 0:  # the child: the console command on a terminal
            os.environ["PYTHONPATH"] = str(ROOT)
            os.execv(EXE, [EXE, "summary", str(log), mode, "--no-progress"])
        chunks = []
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        _, status = os.waitpid(pid, 0)
        out = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
        assert os.waitstatus_to_exitcode(status) == 0, out
        _no_raw_controls(out)
        if mode == "--all-columns":  # the text table fits the terminal: a long id is cut
            assert "run-\\x1b[3" in out, out  # in the middle, its escapes still visible
        else:
            assert "\\x1b[31mred" in out or "\\u001b[31mred" in out, out


# ------------------------------------------------------------------ Ctrl-C and progress (7)
def test_ctrl_c_during_generate_ends_with_one_line_exit_130_and_no_file(tmp_path):
    import pty

    out = tmp_path / "big.jsonl"
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["PYTHONPATH"] = str(ROOT)
        os.execv(EXE, [EXE, "generate", "pleach", str(out), "--events", "20000000"])
    seen = b""
    while b"replaykit generate pleach: writing" not in seen:  # the progress line, on a tty
        seen += os.read(fd, 4096)
    os.kill(pid, signal.SIGINT)
    rest = b""
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        rest += data
    _, status = os.waitpid(pid, 0)
    text = (seen + rest).decode("utf-8", "replace")
    assert os.waitstatus_to_exitcode(status) == cli.EXIT_INTERRUPTED
    assert "Traceback" not in text and "KeyboardInterrupt" not in text
    assert text.rstrip().splitlines()[-1].strip() == "replaykit: interrupted"
    assert not out.exists() and [p for p in tmp_path.iterdir()] == []


def test_generate_shows_no_progress_off_a_terminal(tmp_path):
    proc = run("generate", "toh", str(tmp_path / "s.jsonl"), "--events", "40")
    assert proc.returncode == 0 and proc.stderr == ""
    assert "--owner ID" in proc.stdout


# ------------------------------------------------------------------ unknown duration (13)
def test_a_run_without_event_times_has_an_unknown_duration():
    log = rk.read_toh(DATA / "toh", owner="demo", progress=False)
    assert log.table.column("ts").null_count == len(log)  # toh events carry no time
    runs = log.runs_df()
    assert runs["first_ts"].notna().all()  # the header's createdAt: when the run started
    assert runs["last_ts"].isna().all()  # when it ended is not known
    assert (runs["first_ts"] == runs["created_at"]).all()
    table = cli._summary_table(log)
    assert table.column("last_ts").null_count == table.num_rows
    timed = rk.read_pleach(DATA / "pleach", progress=False).runs_df()
    assert (timed["last_ts"] >= timed["first_ts"]).all() and timed["last_ts"].notna().all()


def test_every_owner_option_says_which_formats_it_owns(data_dir: Path) -> None:
    """Each command's ``--owner`` help says what holds: every bundled format but pleach needs
    an owner (a format added later is covered without editing four help strings)."""
    from replaykit.errors import MissingTenantError
    from replaykit.io import FORMATS

    for name in sorted(FORMATS):
        folder = data_dir / name
        if name == "pleach" or not folder.is_dir():
            continue
        with pytest.raises(MissingTenantError):
            rk.read_events(folder, progress=False)
    for argv in (["replay", "--help"], ["report", "rca", "--help"],
                 ["verify-chain", "--help"], ["branch", "create", "--help"]):
        out = run(*argv)
        assert out.returncode == 0, argv
        assert "record no tenant (every format but pleach)" in " ".join(out.stdout.split()), argv
