"""Issue 28: what is shared names no path of the machine that made it.

A report, its reproducibility stamp and a saved replay result built from a deep temporary
folder must not contain that folder's absolute path: sources are named relative to the folder
the user passed, or by file name.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq

import replaykit as rk
from replaykit.branch._shared import shared_name, shared_source
from replaykit.report import rca

DATA = Path(__file__).resolve().parents[2] / "data" / "isplay"


def _deep_copy(tmp_path: Path) -> Path:
    deep = tmp_path / "users" / "ana-secret-home" / "projects" / "claims" / "2026" / "inputs"
    shutil.copytree(DATA, deep)
    return deep


def test_report_stamp_and_saved_result_name_no_absolute_path(tmp_path: Path) -> None:
    deep = _deep_copy(tmp_path)
    log = rk.read_isplay(deep, owner="demo", progress=False)
    assert str(deep) in log.table.column("source").to_pylist()[0]  # the loader's own record
    br = rk.Branch.load(deep / "branch-drop-fraud-clause.json", base=log, tenant_id="demo")
    res = rk.replay(br, fixtures=deep / "fixtures.json")
    secret = str(tmp_path)
    for inputs in (None, [deep], [deep / "claims-triage-C-104.json", deep / "fixtures.json"]):
        rep = rca(res, title="paths", question="q?", inputs=inputs)
        out = rep.save_html(tmp_path / "r.html")
        page = Path(str(out)).read_text(encoding="utf-8")
        assert secret not in page and "ana-secret-home" not in page, inputs
        names = [f["file"] for f in rep.data["inputs"]]
        assert names and all(not n.startswith("/") for n in names), names
        if inputs == [deep]:  # relative to the folder passed, under its name
            assert "inputs/claims-triage-C-104.json" in names
        else:
            assert "claims-triage-C-104.json" in names
    saved = res.save(tmp_path / "saved")
    for f in saved.iterdir():
        if f.suffix == ".json":
            assert secret not in f.read_text(encoding="utf-8"), f.name
        else:
            src = pq.read_table(f).column("source").to_pylist()
            assert all(secret not in s for s in src), (f.name, src[:2])
            assert "isplay:inputs/claims-triage-C-104.json" in src
    back = rk.ReplayResult.load(saved)
    assert back.summary().answer == res.summary().answer
    assert json.loads((saved / "manifest.json").read_text())["status"] == "completed"


def test_shared_names() -> None:
    assert shared_name("/a/b/c/d.json", "/a/b") == "b/c/d.json"
    assert shared_name("/a/b/c/d.json", "/x/y") == "d.json"
    assert shared_name(Path("rel/d.json")) == "d.json"
    assert shared_source("toh:/very/deep/secret/log.jsonl") == "toh:log.jsonl"
    assert shared_source("toh:/very/deep/secret/log.jsonl", "/very/deep") == \
        "toh:deep/secret/log.jsonl"
    assert shared_source("memory") == "memory" and shared_source(None) is None
    assert shared_source("replay:rp-1") == "replay:rp-1"
