"""The loader benchmark's harness: contenders interleaved, best of N, figures against targets.

No timing is asserted (benchmarks measure speed, tests do not): what is asserted is the order in
which contenders run, which run counts as the best, and what the report rows compare.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks import __main__ as bench


def test_contenders_run_interleaved_and_best_of_n_is_kept(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    calls: list[str] = []
    walls = {"a": [3.0, 1.0, 2.0], "b": [5.0, 6.0, 4.0]}

    def fake(name: str, path: Path) -> dict[str, Any]:
        calls.append(name)
        sec = walls[name][sum(1 for c in calls if c == name) - 1]
        return {"name": name, "seconds": sec, "cpu_seconds": sec * 2, "rows": 10,
                "peak_rss_mb": 100 + sec}

    monkeypatch.setattr(bench, "_run_once", fake)
    res = bench._run(("a", "b"), Path("x"), 3)
    assert calls == ["a", "b", "a", "b", "a", "b"]
    assert res["a"]["seconds"] == 1.0 and res["a"]["peak_rss_mb"] == 101.0
    assert res["a"]["cpu_seconds"] == 2.0 and res["a"]["all_seconds"] == [3.0, 1.0, 2.0]
    assert res["b"]["seconds"] == 4.0 and res["b"]["repeat"] == 3


def test_a_failing_contender_is_reported_and_not_retried(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    calls: list[str] = []

    def fake(name: str, path: Path) -> dict[str, Any]:
        calls.append(name)
        if name == "bad":
            return {"name": name, "error": ["boom"]}
        return {"name": name, "seconds": 1.0, "cpu_seconds": 1.0, "rows": 1, "peak_rss_mb": 1.0}

    monkeypatch.setattr(bench, "_run_once", fake)
    res = bench._run(("ok", "bad"), Path("x"), 3)
    assert calls == ["ok", "bad", "ok", "ok"]
    assert res["bad"] == {"name": "bad", "error": ["boom"]}


def _r(name: str, sec: float, rss: float = 1000.0) -> dict[str, Any]:
    return {"name": name, "seconds": sec, "cpu_seconds": sec * 1.5, "rows": 2_000_000,
            "peak_rss_mb": rss, "repeat": 3}


def test_loader_rows_compare_against_polars_and_pandas_at_both_sizes() -> None:
    results = {
        "pleach": {"events": 2_000_000, "file_mb": 900.0,
                   "pleach_replaykit": _r("pleach_replaykit", 2.0, 2000.0),
                   "pleach_replaykit_reference": _r("pleach_replaykit_reference", 8.0),
                   "pleach_polars": _r("pleach_polars", 4.0),
                   "pleach_pandas": _r("pleach_pandas", 30.0, 10_000.0),
                   "pleach_duckdb": _r("pleach_duckdb", 1.0),
                   "pleach_duckdb_same_work": _r("pleach_duckdb_same_work", 5.0)},
        "pleach_small": {"events": 300_000, "file_mb": 130.0,
                         "pleach_replaykit": _r("pleach_replaykit", 0.5),
                         "pleach_polars": _r("pleach_polars", 0.25),
                         "pleach_pandas": _r("pleach_pandas", 4.0)},
    }
    rows = {r["name"].split(" (")[0] + f" @{r['name'].split('(')[1].split(' ')[0]}": r
            for r in bench.loader_rows(results)}
    polars_2m = rows["read_pleach vs polars.read_ndjson, 8 columns @2,000,000"]
    assert polars_2m["ratio"] == pytest.approx(0.5) and polars_2m["baseline"] == 4.0
    assert rows["read_pleach vs pandas.read_json + normalisation @2,000,000"]["ratio"] == 15.0
    assert rows["read_pleach vs pandas.read_json + normalisation @300,000"]["ratio"] == 8.0
    assert rows["read_pleach vs polars.read_ndjson, 8 columns @300,000"]["ratio"] == 2.0
    rss = rows["read_pleach peak RSS vs the file's size @2,000,000"]
    assert rss["value"] == 2000.0 and rss["ratio"] == pytest.approx(2000 / 900)
    native = rows["read_pleach native core vs its reference path, REPLAYKIT_NATIVE=0 @2,000,000"]
    assert native["ratio"] == pytest.approx(0.25) and native["baseline"] == 8.0
    cpu = rows["read_pleach CPU vs polars.read_ndjson CPU @2,000,000"]
    assert cpu["ratio"] == pytest.approx(0.5)
    assert not any(k.endswith("NATIVE=0 @300,000") for k in rows)
    assert not any("<= 2x DuckDB" in str(r["target"]) for r in rows.values())
    text = "\n".join(bench.report(results))
    assert "read_pleach time / polars.read_ndjson time:   0.50 (target <= 0.8)" in text
    assert "native / reference path time:   0.25" in text
    assert "speed-up vs pandas:    8.0x" in text


def test_polars_contender_reads_every_row(tmp_path: Path) -> None:
    pytest.importorskip("polars")
    from benchmarks import _worker
    from replaykit.datasets import generate_pleach

    path = tmp_path / "p.jsonl"
    generate_pleach(path, events=500, runs=5, seed=3)
    assert _worker.pleach_polars(str(path)) == 500 == _worker.pleach_replaykit(str(path))


def test_duckdb_typed_contender_reads_every_row_with_the_typed_fields(tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    from benchmarks import _worker
    from replaykit.datasets import generate_pleach

    path = tmp_path / "p.jsonl"
    generate_pleach(path, events=500, runs=5, seed=3)
    assert _worker.pleach_duckdb_typed(str(path)) == 500 == _worker.pleach_replaykit(str(path))


def test_loader_rows_show_the_duckdb_typed_read_as_a_reference() -> None:
    results = {"pleach": {"events": 300_000, "file_mb": 130.0,
                          "pleach_replaykit": _r("pleach_replaykit", 1.5),
                          "pleach_duckdb_typed": _r("pleach_duckdb_typed", 0.5)}}
    row, = (r for r in bench.loader_rows(results) if "typed payload struct" in r["name"])
    assert row["ratio"] == pytest.approx(3.0) and row["baseline"] == 0.5
    assert str(row["target"]).startswith("reference")
    text = "\n".join(bench.report(results))
    assert "DuckDB typed read (its parses' share) time:   3.00 (reference)" in text
