"""Several ``replaykit`` commands in one fresh interpreter: one start-up (about 0.6 s of
imports) instead of one per command, for tests that run many commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: the driver: each command through the console's own entry (``app._main``, as
#: ``console_main`` calls it, minus the fast exit) in one process, its streams captured apart
_BATCH = """
import contextlib, io, json, sys
from replaykit.cli.app import _main
got = []
for argv in json.loads(sys.stdin.read()):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = _main(argv, fast_exit=False)
    got.append([code, out.getvalue(), err.getvalue()])
sys.stdout.write(json.dumps(got))
"""


def run_batch(calls: list[list[str]], timeout: float = 120, cwd: Path | None = None
              ) -> list[subprocess.CompletedProcess[str]]:
    """The commands ``calls`` (argv without the program name), in order, in one fresh
    interpreter run in ``cwd``, each captured as ``subprocess.run`` captures one; the
    timeout covers them all, so a command that blocks (a FIFO read) fails the test."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", _BATCH], input=json.dumps(calls),
                          capture_output=True, text=True, env=env, timeout=timeout,
                          check=False, cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [subprocess.CompletedProcess(argv, code, out, err)
            for argv, (code, out, err) in zip(calls, json.loads(proc.stdout), strict=True)]
