"""``replaykit ingest``: the command line's face of rk.ingest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import replaykit as rk
from replaykit.cli import main
from replaykit.ingest._store import Lock

DATA = Path(__file__).resolve().parents[2] / "data"


def test_ingest_command_json_report_and_rerun(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "ds"
    assert main(["ingest", str(DATA / "pleach"), str(DATA / "toh"), "--into", str(root),
                 "--owner", "lab", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    lines = sum(1 for f in (DATA / "pleach").glob("*.jsonl")
                for x in f.read_bytes().splitlines() if x.strip())
    pleach = [s for s in report["sources"] if s["format"] == "pleach"]
    jsonl = next(s for s in pleach if s["path"].endswith(".jsonl"))
    assert jsonl["input_rows"] == lines  # every non-blank line: loaded or quarantined
    assert report["files"] == {"new": len(report["sources"])}
    assert report["rows"] == len(rk.read_parquet(root)) + len(rk.read_parquet(root).quarantine)
    # again: nothing read, one summary line
    assert main(["ingest", str(DATA / "pleach"), str(DATA / "toh"), "--into", str(root),
                 "--owner", "lab"]) == 0
    out = capsys.readouterr().out
    assert f"{len(report['sources'])} unchanged; 0 rows read" in out
    assert "0 part file(s) written" in out


def test_ingest_command_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "ds"
    assert main(["ingest", str(DATA / "toh"), "--into", str(root)]) == 2
    assert "records no tenant, so its owner must be named: pass --owner ID" in \
        capsys.readouterr().err
    root.mkdir(exist_ok=True)
    with Lock(root):
        assert main(["ingest", str(DATA / "pleach"), "--into", str(root)]) == 2
    assert "another ingest" in capsys.readouterr().err
    assert main(["ingest", str(DATA / "pleach"), "--into", str(root),
                 "--memory-limit", "lots"]) == 2
    assert "memory_limit" in capsys.readouterr().err
