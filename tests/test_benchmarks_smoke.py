"""`make bench` keeps working: the whole suite runs at its tiny sizes (--tiny: --quick at a
twentieth of its sizes, one repeat), which checks that every benchmark runs, not its figures.

Figures are not asserted against targets here (benchmarks measure speed; tests do not); what is
asserted is that every benchmark ran, produced a value and a same-run baseline where it has
one, and that each contender loaded every row.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUITES = ("fold", "integrity", "sql", "compare", "widgets", "cohorts", "report", "dask",
          "parquet", "access", "dataset")


@pytest.mark.slow
def test_quick_benchmarks_run_end_to_end(tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    pytest.importorskip("dask")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "--tiny"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, check=False, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads((tmp_path / "bench-data" / "results-quick.json").read_text())
    assert res["quick"] is True
    for fmt, contenders in (("pleach", ("pleach_replaykit", "pleach_duckdb",
                                       "pleach_duckdb_same_work", "pleach_pandas")),
                            ("toh", ("toh_replaykit",))):
        for name in contenders:
            got = res[fmt][name]
            assert "error" not in got, (name, got)
            assert got["seconds"] > 0 and got["peak_rss_mb"] > 0
        assert res[fmt][contenders[0]]["rows"] >= res[fmt]["events"]
    for suite in SUITES:
        rows = res[suite]
        assert rows, suite
        for row in rows:
            assert row["value"] is not None and row["value"] == row["value"], row  # not NaN
    dask_names = " ".join(r["name"] for r in res["dask"])
    assert "dask compare, 2 workers" in dask_names and "dask fold, 1 worker" in dask_names
    # a quick run never rewrites the committed performance page
    assert not (tmp_path / "docs").exists()
