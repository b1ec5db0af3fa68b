"""The benchmark harness measures what it says (interleaving, best of N, CPU, peak RSS), the
fold peers compute exactly rk.fold's columns, and --write-docs only touches the marked table.

No speed is asserted here (benchmarks measure speed, tests do not).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import _harness  # noqa: E402
from benchmarks._harness import interleave, row  # noqa: E402


class _Clock:
    """A fake ``time`` module: contenders advance wall and CPU time explicitly."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.cpu = 0.0

    def perf_counter(self) -> float:
        return self.wall

    def process_time(self) -> float:
        return self.cpu


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    c = _Clock()
    monkeypatch.setattr(_harness, "time", c)
    return c


def test_contenders_run_interleaved_and_report_their_best(clock: _Clock) -> None:
    calls: list[str] = []
    costs = {"a": iter([(3.0, 2.0), (1.0, 0.5), (2.0, 1.0)]),
             "b": iter([(0.5, 0.5), (0.4, 0.1), (0.6, 0.6)])}

    def contender(name: str) -> Any:
        def fn() -> str:
            calls.append(name)
            wall, cpu = next(costs[name])
            clock.wall += wall
            clock.cpu += cpu
            return name
        return fn

    res = interleave({"a": contender("a"), "b": contender("b")}, repeat=3, warmup=False,
                     keep_value=True)
    assert calls == ["a", "b", "a", "b", "a", "b"]  # A B, A B, A B: never back to back
    a, b = res["a"], res["b"]
    assert a.walls == pytest.approx([3.0, 1.0, 2.0])
    assert a.best_s == pytest.approx(1.0)  # best of 3, not the median (2.0)
    assert a.cpu_s == pytest.approx(0.5)  # the CPU time of the best-wall run
    assert b.best_s == pytest.approx(0.4) and b.cpu_s == pytest.approx(0.1)
    assert a.value == "a"
    r = row("a vs b", a, b, target="t", ratio="contender/baseline")
    assert r["ratio"] == pytest.approx(2.5) and r["value"] == pytest.approx(1.0)
    assert r["baseline"] == pytest.approx(0.4)
    assert "best of 3, interleaved" in r["name"] and "CPU 0.5 s" in r["name"]
    speedup = row("a vs b", b, a, target="t")  # baseline/contender: > 1 is faster
    assert speedup["ratio"] == pytest.approx(2.5)


def test_alternate_reverses_every_other_round() -> None:
    calls: list[str] = []
    res = interleave({"x": lambda: calls.append("x"), "y": lambda: calls.append("y"),
                      "z": lambda: calls.append("z")}, repeat=4, warmup=False, alternate=True)
    assert "".join(calls) == "xyzzyxxyzzyx"  # no contender always first
    assert all(len(r.walls) == 4 for r in res.values())


def test_warmup_runs_each_contender_once_more_untimed() -> None:
    calls: list[str] = []
    res = interleave({"x": lambda: calls.append("x"), "y": lambda: calls.append("y")},
                     repeat=2)
    assert calls == ["x", "y", "x", "y", "x", "y"]
    assert len(res["x"].walls) == 2


def test_cpu_time_is_measured_by_the_process_clock() -> None:
    def burn() -> int:  # real CPU work (no sleeping): CPU time close to its wall time
        x = 0
        for i in range(300_000):
            x += i * i
        return x

    res = interleave({"burn": burn}, repeat=2, warmup=False)
    r = res["burn"]
    assert r.cpu_s > 0 and r.best_s > 0
    assert r.cpu_s <= r.best_s * 1.5 + 0.01  # one thread: CPU cannot be far above wall


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmHWM reset is Linux-only")
def test_peak_rss_is_per_run_not_the_process_high_water_mark() -> None:
    big = np.ones(40_000_000 // 8)  # 40 MB touched before: must not count for "small"
    del big

    def alloc() -> int:
        a = np.ones(200_000_000 // 8)  # 200 MB, every page touched
        return int(a[-1])

    res = interleave({"alloc": alloc, "small": lambda: sum(range(1000))}, repeat=2,
                     warmup=False)
    assert res["alloc"].peak_rss_mb is not None
    assert 150 < res["alloc"].peak_rss_mb < 400
    assert res["small"].peak_rss_mb is not None and res["small"].peak_rss_mb < 50
    assert "VmHWM" in _harness.rss_method()


def test_machine_names_cores_memory_and_versions() -> None:
    m = _harness.machine()
    assert m["nproc"] and m["nproc"] >= 1
    assert m["ram_gb"] and m["ram_gb"] > 0
    assert m["pyarrow"] and m["numpy"] and m["python"]


@pytest.fixture(scope="module")
def small_pleach(tmp_path_factory: pytest.TempPathFactory) -> Any:
    import replaykit as rk
    from replaykit.datasets import generate_pleach

    path = tmp_path_factory.mktemp("pleach") / "p.jsonl"
    generate_pleach(path, events=4_000, runs=40, seed=3)
    return rk.read_pleach(path, progress=False)


def test_fold_peers_compute_exactly_the_fold_columns(small_pleach: Any) -> None:
    pytest.importorskip("polars")
    pytest.importorskip("duckdb")
    from benchmarks import bench_fold

    assert bench_fold.check_peers(small_pleach) == len(small_pleach)


def test_the_peer_check_fails_on_a_wrong_peer(small_pleach: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    pl = pytest.importorskip("polars")
    pytest.importorskip("duckdb")
    from benchmarks import bench_fold

    right = bench_fold.polars_fold

    def off_by_one(df: Any) -> Any:  # counts one tool call too many on every row
        out = right(df)
        return out.with_columns(pl.col("tool_calls") + 1)

    monkeypatch.setattr(bench_fold, "polars_fold", off_by_one)
    with pytest.raises(AssertionError, match="tool_calls"):
        bench_fold.check_peers(small_pleach)


def test_dict_reducer_counts_match_fold_final(small_pleach: Any) -> None:
    import replaykit as rk
    from benchmarks import bench_fold

    fin = rk.fold(small_pleach, rk.agent()).final(with_state=False)
    got = bench_fold.dict_reducer(small_pleach.table)
    assert len(got) == len(fin) == 40
    total = sum(s["tool_calls"] for s in got.values())
    assert total == int(fin["tool_calls"].sum()) > 0


def test_write_docs_replaces_only_the_marked_table(tmp_path: Path) -> None:
    from benchmarks.__main__ import BEGIN, END, write_performance_md

    page = tmp_path / "performance.md"
    page.write_text(f"# Perf\n\nintro\n\n{BEGIN}\nold table\n{END}\n\n## Notes\nkept\n")
    results = {"machine": {**_harness.machine(), "rss_method": "x"}}
    rows = [{"name": "fold vs polars", "value": 0.5, "unit": "s", "baseline": 0.6,
             "ratio": 0.833, "target": "<= 1.0"}]
    write_performance_md(results, rows, ((1.0, 1.0, 1.0), (2.0, 2.0, 2.0)), path=page,
                         duration_s=600)
    text = page.read_text()
    assert "old table" not in text
    assert text.startswith("# Perf\n\nintro\n\n") and text.endswith("## Notes\nkept\n")
    assert "| fold vs polars | 0.5 | s | 0.6 | 0.833 | <= 1.0 |" in text
    assert "1.0, 1.0, 1.0 / 2.0, 2.0, 2.0" in text and "10.0 min" in text
    assert f"{_harness.machine()['nproc']} cores" in text


def test_write_docs_refuses_a_quick_run() -> None:
    from benchmarks.__main__ import main

    with pytest.raises(SystemExit):
        main(["--quick", "--write-docs"])
