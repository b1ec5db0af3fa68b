"""Terminal output and output paths (issue 42, red-team finding 19), closed at their class.

1. Every output of every command that can reach a terminal escapes control characters
   (one helper: ``replaykit.cli.files.terminal_stdout`` installs ``TerminalSafeStream`` on
   a terminal's stdout, in ``main()`` as in the console command; stderr messages go through
   ``terminal_safe``, argparse's echo of what was typed included), while output to a file or
   a pipe keeps its exact bytes. ``summary --csv`` printed a run id's raw escape sequences.
2. Every command that writes refuses an output path whose folder cannot be made (a part of
   it is a regular file, a FIFO, a device) with a usage error (exit 2) naming that part,
   before it reads anything: ``replay -o FILE/x`` exited 1 with "File exists".
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from _chainlogs import make_log
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit.cli.app import main

# what a terminal must never receive from data: C0 but the line end, DEL, C1, bidi/zero-width
_RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
HOSTILE = "run\x1b[31mRED\x1b]0;pwned\x07\r\u202eevil\x08"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(argv, *, tty: bool):
    out = _Tty() if tty else io.StringIO()
    err = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def _dataset(root: Path, run_id: str) -> Path:
    log = rk.stamp_chain(make_log(24, n_runs=2, odd_ids=False))
    t = log.table
    i = t.schema.get_field_index("run_id")
    vals = [run_id if v == "run-00000" else v for v in t.column(i).to_pylist()]
    t = t.set_column(i, t.schema.field(i),
                     pa.array(vals).dictionary_encode().cast(t.schema.field(i).type))
    rk.EventLog(t).to_parquet(root, overwrite=True)
    return root


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    return _dataset(tmp_path_factory.mktemp("hostile") / "ds", HOSTILE)


OUTPUT_MODES = [
    ["summary", "{ds}"], ["summary", "{ds}", "--csv"], ["summary", "{ds}", "--json"],
    ["summary", "{ds}", "--all-columns"], ["summary", "{ds}", "--csv", "--all-columns"],
    ["verify-chain", "{ds}"], ["verify-chain", "{ds}", "--json"],
]


@pytest.mark.parametrize("argv", OUTPUT_MODES, ids=lambda a: " ".join(a[:1] + a[2:]) or a[0])
def test_every_output_mode_escapes_control_characters_on_a_terminal(hostile, argv):
    argv = [a.format(ds=hostile) for a in argv]
    code, out, err = _run(argv, tty=True)
    assert code in (0, 1), err
    assert not _RAW.search(out), repr(out[:400])
    assert not _RAW.search(err), repr(err[:400])
    if argv[0] == "summary":  # the run is there, shown escaped (\x1b, or \u001b in JSON);
        # the human table may cut a long value in the middle to fit the terminal (\u2026)
        assert ("run\\x1b[31" in out) or ("run\\u001b[31mRED" in out)


@pytest.mark.parametrize("mode", ["--csv", "--json"])
def test_output_to_a_file_or_pipe_keeps_its_exact_bytes(hostile, mode):
    code, out, _ = _run(["summary", hostile, mode], tty=False)
    assert code == 0
    if mode == "--csv":
        assert HOSTILE in out  # the bytes as they are
        ids = [r["run_id"] for r in csv.DictReader(io.StringIO(out, newline=""))]
    else:
        ids = [r["run_id"] for r in json.loads(out)]
    assert HOSTILE in ids  # an independent reading (csv / json modules) gets the run id back


def test_typed_arguments_echoed_by_usage_errors_are_escaped(hostile):
    code, out, err = _run(["summary", hostile, "--format", "\x1b[2Jx"], tty=True)
    assert code == 2
    assert "\x1b" not in err and "\\x1b[2Jx" in err


def test_the_console_command_on_a_real_terminal(hostile):
    """python -m replaykit.cli summary --csv with a pseudo-terminal as stdout."""
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(Path(rk.__file__).parent.parent)}
    proc = subprocess.Popen([sys.executable, "-m", "replaykit.cli", "summary", str(hostile),
                             "--csv"], stdout=slave, stderr=slave, stdin=subprocess.DEVNULL,
                            env=env)
    os.close(slave)
    data = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    proc.wait(timeout=60)
    os.close(master)
    text = data.decode("utf-8").replace("\r\n", "\n")
    assert proc.returncode == 0
    assert not _RAW.search(text) and "run\\x1b[31mRED" in text


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)),
               min_size=1, max_size=12))
def test_any_run_id_reaches_a_terminal_escaped_and_a_file_exactly(tmp_path, run_id):
    ds = _dataset(tmp_path / "h", "r" + run_id)
    code, out, err = _run(["summary", ds, "--csv"], tty=True)
    assert code == 0 and not _RAW.search(out), repr(out)
    code, out, _ = _run(["summary", ds, "--csv"], tty=False)
    ids = {r["run_id"] for r in csv.DictReader(io.StringIO(out, newline=""))}
    assert "r" + run_id in ids


# ---------------------------------------------------------------------------- output paths


def _writers(data_dir: Path, tmp: Path, out: str) -> dict[str, list[str]]:
    """Every command that writes, with the output option given ``out``."""
    isplay = data_dir / "isplay"
    branch = isplay / "branch-drop-fraud-clause.json"
    fixtures = isplay / "fixtures.json"
    own = tmp / "own-branch.json"
    own.write_text(branch.read_text())
    return {
        "generate": ["generate", "pleach", out],
        "branch create": ["branch", "create", "--from", "run-claims-C-104", "--checkpoint",
                          "cp-intake", "--name", "n", "--log", str(isplay), "--tenant",
                          "demo", "-o", out],
        "branch intervene": ["branch", "intervene", str(own), "--kind", "tool_args_patch",
                             "--target-ref", "tc-104-2", "--patch-json", "{}", "-o", out],
        "replay": ["replay", str(isplay), "--tenant", "demo", "--branch", str(branch),
                   "--fixtures", str(fixtures), "-o", out],
        "report rca": ["report", "rca", "--log", str(isplay), "--tenant", "demo", "--branch",
                       str(branch), "--fixtures", str(fixtures), "-o", out],
        "report cohort": ["report", "cohort", "--log", str(isplay), "--owner", "demo",
                          "--by", "run_id", "--a", "x", "--b", "y", "-o", out],
        "summary --quarantine-out": ["summary", str(isplay), "--owner", "demo",
                                     "--errors", "quarantine", "--quarantine-out", out],
    }


WRITERS = ["generate", "branch create", "branch intervene", "replay", "report rca",
           "report cohort", "summary --quarantine-out"]


@pytest.mark.parametrize("blocker", ["regular file", "FIFO", "device"])
@pytest.mark.parametrize("command", WRITERS)
def test_an_output_path_under_a_non_folder_is_a_usage_error(data_dir, tmp_path, command,
                                                            blocker):
    if blocker == "regular file":
        part = tmp_path / "notes.txt"
        part.write_text("not a folder\n")
        words = "is a file, not a folder"
    elif blocker == "FIFO":
        part = tmp_path / "pipe"
        os.mkfifo(part)
        words = "is a FIFO (named pipe), not a folder"
    else:
        part = Path("/dev/null")
        words = "is a device, not a folder"
    suffix = {"report rca": ".html", "report cohort": ".html",
              "summary --quarantine-out": ".csv", "branch create": ".json",
              "branch intervene": ".json"}.get(command, "")
    out = str(part / "sub" / f"x{suffix}")
    argv = _writers(data_dir, tmp_path, out)[command]
    code, _, err = _run(argv, tty=False)
    assert code == 2, err
    assert f"{part} {words}" in err, err
    assert "File exists" not in err and "Traceback" not in err
    if blocker == "regular file":
        assert part.read_text() == "not a folder\n"  # never touched
