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
    assert main(["ingest", str(DATA / "pleach"), "--into", str(root),
                 "--scheduler", "tcp://127.0.0.1:1"]) == 2
    assert "--scheduler needs --engine dask" in capsys.readouterr().err


def test_ingest_command_dask_engine_writes_the_local_dataset(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--engine dask without --scheduler: Dask's threaded scheduler in this process."""
    pytest.importorskip("distributed")
    reports = []
    for engine in ("local", "dask"):
        assert main(["ingest", str(DATA / "pleach"), "--into", str(tmp_path / engine),
                     "--engine", engine, "--partition-events", "50", "--json"]) == 0
        d = json.loads(capsys.readouterr().out)
        reports.append({k: v for k, v in d.items() if k not in ("seconds", "dataset")})
    assert reports[0] == reports[1] and reports[1]["parts_written"] > 1
    a, b = rk.read_parquet(tmp_path / "local"), rk.read_parquet(tmp_path / "dask")
    assert a.table.to_pylist() == b.table.to_pylist()
    assert a.quarantine.to_pylist() == b.quarantine.to_pylist()
