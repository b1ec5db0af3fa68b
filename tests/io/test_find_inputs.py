"""One rule for the files of a folder, in Python and on the command line (issue 42, item 3):
files of no known format are skipped, counted and named; a file named explicitly still
raises; replaykit's own side files (a ``cache.parquet``, a dataset's ``_runs.parquet`` and
``_quarantine.parquet``, chain and replay manifests) are never taken for logs."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import replaykit as rk
from replaykit.cli._inputs import _expand_inputs
from replaykit.cli.app import main
from replaykit.errors import FormatDetectionError
from replaykit.io import SkippedFilesWarning, find_inputs, is_own_side_file

DATA = Path(__file__).resolve().parents[2] / "data"


def _no_skip_warning(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", SkippedFilesWarning)
        return fn(*args, **kwargs)


@pytest.fixture(scope="module")
def cohorts_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cohorts") / "co"
    rk.datasets.generate_cohorts(out, runs=12, events_per_run=12, scenarios=4)
    return out


def test_generate_cohorts_folder_reads_without_a_skip(cohorts_dir: Path, capsys):
    assert sorted(p.name for p in cohorts_dir.iterdir()) == ["cache.parquet", "events.parquet"]
    # an independent reading of what the folder holds: the Parquet part files' rows
    parts = sorted((cohorts_dir / "events.parquet").rglob("part-*.parquet"))
    rows = sum(pq.read_metadata(p).num_rows for p in parts)
    log = _no_skip_warning(rk.read_events, cohorts_dir)
    assert len(log) == rows > 0
    assert find_inputs(cohorts_dir).skipped == []
    assert main(["summary", str(cohorts_dir), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert f"{rows:,} events" in out and "skipped" not in out
    # named explicitly, the cache is not a log: it raises, as any named non-log does
    with pytest.raises(FormatDetectionError):
        rk.read_events(cohorts_dir / "cache.parquet")


def _replay_result(folder: Path) -> Path:
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps(
        {"format": "replaykit.replay/v1", "replayId": "r", "status": "completed"}, indent=2))
    for name in ("metrics.json", "requirements.json", "effects.json"):
        (folder / name).write_text("{}" if name == "metrics.json" else "[]")
    pq.write_table(pa.table({"tenant_id": ["t"], "run_id": ["r"], "seq": [0]}),
                   folder / "events.parquet")
    return folder


def test_own_side_files_are_not_logs_and_not_unknown(tmp_path: Path):
    d = tmp_path / "mixed"
    shutil.copytree(DATA / "toh" / "shed-fork", d / "toh")
    ds = rk.read_pleach(DATA / "pleach" / "harness_event_log.jsonl",
                        progress=False).to_parquet(tmp_path / "ds")
    stray = tmp_path / "stray"  # (a folder holding _runs.parquet is read as a dataset)
    stray.mkdir()
    shutil.copy(next(ds.rglob("_runs.parquet")), stray / "_runs.parquet")
    shutil.copy(next(ds.rglob("_quarantine.parquet")), stray / "_quarantine.parquet")
    assert is_own_side_file(stray / "_runs.parquet")
    assert is_own_side_file(stray / "_quarantine.parquet")
    rk.ParquetCache.write(d / "cache.parquet", {"k1": "v1"})
    log = rk.read_pleach(DATA / "pleach" / "harness_event_log_hashed.parquet", progress=False)
    (d / "heads.json").write_text(rk.chain_manifest(log).to_json())
    _replay_result(d / "result")
    (d / "notes.json").write_text('{"hello": "not a log"}')
    own = ["cache.parquet", "heads.json",
           "result/manifest.json", "result/metrics.json", "result/events.parquet"]
    assert [is_own_side_file(d / n) for n in own] == [True] * len(own)
    assert not is_own_side_file(d / "notes.json")
    assert not is_own_side_file(DATA / "pleach" / "harness_event_log_hashed.parquet")
    # a Parquet log with key and value among other columns is not a cache
    pq.write_table(pa.table({"key": ["a"], "value": ["b"], "run_id": ["r"]}), d / "kv.parquet")
    assert not is_own_side_file(d / "kv.parquet")

    expected = len(rk.read_toh(d / "toh", owner="o", progress=False))
    with pytest.warns(SkippedFilesWarning) as rec:
        got = rk.read_events(d, owner="o", progress=False)
    assert len(got) == expected
    files = [e for w in rec if w.category is SkippedFilesWarning for e in w.message.files]
    assert sorted((Path(e.source).name, e.reason) for e in files) == [
        ("kv.parquet", "unknown_format"), ("notes.json", "unknown_format")]


def test_python_and_the_command_line_skip_the_same_files(tmp_path: Path, capsys):
    root = tmp_path / "logs"
    (root / "a" / "deeper").mkdir(parents=True)
    shutil.copy(DATA / "pleach" / "harness_event_log.jsonl", root / "a" / "events.jsonl")
    shutil.copytree(DATA / "toh" / "garden-report", root / "a" / "deeper" / "toh")
    (root / "a" / "README.md").write_text("# notes\n")
    (root / "a" / "deeper" / "events.jsonl.gz").write_bytes(b"\x1f\x8b\x08\x00rest")
    (root / "a" / "notes.json").write_text('{"hello": "not a log"}')
    rk.ParquetCache.write(root / "a" / "cache.parquet", {"k": "v"})
    want = [("README.md", "unknown_format"), ("events.jsonl.gz", "compressed"),
            ("notes.json", "unknown_format")]
    for given in ([root], [str(root / "*")], [root / "a"]):
        with pytest.warns(SkippedFilesWarning) as rec:
            log = rk.read_events(given, owner="o", progress=False)
        py = sorted((Path(e.source).name, e.reason)
                    for w in rec if w.category is SkippedFilesWarning for e in w.message.files)
        assert py == want
        keep, skipped = _expand_inputs([str(g) for g in given])
        assert sorted((Path(r["source"]).name, r["reason"]) for r in skipped) == want
        assert sorted(Path(k).name for k in keep) == sorted(
            Path(p).name for p in find_inputs(given).paths)
        assert len(log) == len(rk.read_pleach(root / "a" / "events.jsonl", progress=False)) + \
            len(rk.read_toh(root / "a" / "deeper" / "toh", owner="o", progress=False))
    assert main(["summary", str(root), "--owner", "o", "--no-progress"]) == 0
    assert f"{len(want)} file(s) skipped" in capsys.readouterr().out
    # a file named explicitly must be a log, in both
    with pytest.raises(FormatDetectionError):
        rk.read_events(root / "a" / "notes.json", owner="o")
    assert main(["summary", str(root / "a" / "notes.json"), "--owner", "o",
                 "--no-progress"]) == 1


def test_the_warning_lists_at_most_ten_names_and_counts_all(tmp_path: Path):
    shutil.copytree(DATA / "toh" / "shed-fork", tmp_path / "toh")
    for i in range(12):
        (tmp_path / f"n{i:02}.txt").write_text("not a log")
    with pytest.warns(SkippedFilesWarning) as rec:
        rk.read_events(tmp_path, owner="o", progress=False)
    (w,) = [r.message for r in rec if r.category is SkippedFilesWarning]
    assert len(w.files) == 12
    text = str(w)
    assert text.startswith("12 file(s) of no known format skipped: ")
    assert "n09.txt" in text and "n10.txt" not in text and "and 2 more" in text


def test_a_folder_with_no_files_and_a_glob_matching_nothing(tmp_path: Path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="holds no files"):
        rk.read_events(tmp_path / "empty", owner="o")
    with pytest.raises(FileNotFoundError, match="no such file, directory or glob match"):
        rk.read_events(tmp_path / "nothing-*.jsonl", owner="o")
