"""Run the benchmarks: ``python -m benchmarks [--quick] [--only pleach|toh|...]``.

Full size: read_pleach on a generated 2,000,000-event pleach JSONL against polars
(``read_ndjson``, the 8 envelope columns, payload as text), pandas (``read_json(lines=True)`` +
payload back to JSON text + ``created_at`` to datetime) and DuckDB (``read_json`` with payload as
JSON), and again at 300,000 events against pandas and polars; read_toh on a generated toh log
of >= 1,000,000 events against a json.loads-per-line loop. Loader contenders run interleaved
(A B C, A B C, ...), each run in its own subprocess; the best of N by wall time is reported,
with its CPU time and peak RSS. ``--quick`` uses small sizes (a smoke test).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path.cwd()
DATA = ROOT / "bench-data"

#: the load targets (issue 27, the native core; ratios measured in one run)
TARGETS = {
    "pleach_time_vs_polars": 0.8,  # read_pleach's time / polars.read_ndjson's time, 2M events
    "pleach_cpu_vs_polars": 1.0,  # read_pleach's CPU time / polars' CPU time
    "pleach_speedup_vs_pandas": 20.0,  # at 2M and at 300k events
    "pleach_rss_vs_file": 1.5,  # peak RSS / file size
    "toh_events_per_s": 1_500_000.0,
}


def _run_once(name: str, path: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks._worker", name, str(path)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )
    if proc.returncode != 0:
        return {"name": name, "error": proc.stderr.strip().splitlines()[-1:]}
    res: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return res


def _run(names: tuple[str, ...], path: Path, repeat: int) -> dict[str, dict[str, Any]]:
    """Best of ``repeat`` runs of each contender, interleaved (A B C, A B C, ...), each run in
    a fresh subprocess; "best" is the lowest wall time (its CPU time and peak RSS go with it),
    ``all_seconds`` lists every run's wall time."""
    best: dict[str, dict[str, Any]] = {}
    walls: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(repeat):
        for name in names:
            if "error" in best.get(name, {}):
                continue  # a failing contender is not retried
            res = _run_once(name, path)
            if "error" in res:
                best[name] = res
                continue
            walls[name].append(round(res["seconds"], 3))
            if name not in best or res["seconds"] < best[name]["seconds"]:
                best[name] = res
    for name, res in best.items():
        if "error" not in res:
            res["all_seconds"] = walls[name]
            res["repeat"] = repeat
    return best


def _dataset(kind: str, events: int) -> Path:
    from replaykit.datasets import generate_pleach, generate_toh

    DATA.mkdir(exist_ok=True)
    if kind == "pleach":
        path = DATA / f"pleach_{events}.jsonl"
        if not path.exists():
            t = time.perf_counter()
            tmp = path.with_suffix(".tmp")
            generate_pleach(tmp, events=events, runs=max(1, events // 100), seed=1)
            tmp.rename(path)
            print(f"  generated {path} in {time.perf_counter() - t:.1f}s", flush=True)
        return path
    path = DATA / f"toh_{events}" / "session.jsonl"
    if not path.exists():
        t = time.perf_counter()
        tmp = path.with_name("session.tmp")
        generate_toh(tmp, events=events, seed=1)
        tmp.rename(path)
        print(f"  generated {path} in {time.perf_counter() - t:.1f}s", flush=True)
    return path


_PLEACH_BIG = ("pleach_replaykit", "pleach_replaykit_reference", "pleach_polars",
               "pleach_duckdb", "pleach_duckdb_typed", "pleach_duckdb_same_work", "pleach_pandas")
_PLEACH_SMALL = ("pleach_replaykit", "pleach_replaykit_reference", "pleach_polars",
                 "pleach_duckdb_typed", "pleach_pandas")


def bench_pleach(events: int, repeat: int,
                 contenders: tuple[str, ...] = _PLEACH_BIG) -> dict[str, Any]:
    path = _dataset("pleach", events)
    size_mb = path.stat().st_size / 2**20
    print(f"pleach: {events:,} events, {size_mb:,.0f} MB, {', '.join(contenders)} interleaved, "
          f"best of {repeat}", flush=True)
    load = os.getloadavg()
    res = _run(contenders, path, repeat)
    return {"file_mb": size_mb, "events": events, "load_before": load,
            "load_after": os.getloadavg(), **res}


def bench_toh(events: int, repeat: int) -> dict[str, Any]:
    path = _dataset("toh", events)
    size_mb = path.stat().st_size / 2**20
    print(f"toh: >= {events:,} events, {size_mb:,.0f} MB, toh_replaykit, toh_naive "
          f"interleaved, best of {repeat}", flush=True)
    load = os.getloadavg()
    res = _run(("toh_replaykit", "toh_naive"), path, repeat)
    return {"file_mb": size_mb, "events": events, "load_before": load,
            "load_after": os.getloadavg(), **res}


def _fmt(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"{r['name']:<24} FAILED: {r['error']}"
    rate = r["rows"] / r["seconds"] if r["seconds"] else float("inf")
    return (
        f"{r['name']:<24} {r['seconds']:8.2f} s wall {r.get('cpu_seconds', float('nan')):7.2f} s "
        f"CPU  {r['rows']:>10,} rows  {rate:>12,.0f} rows/s  peak RSS "
        f"{r['peak_rss_mb']:8,.0f} MB"
    )


def _ok(p: dict[str, Any], *names: str) -> bool:
    return all(n in p and "error" not in p[n] for n in names)


def report(results: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for key in ("pleach", "pleach_small"):
        p = results.get(key)
        if not p:
            continue
        names = [n for n in _PLEACH_BIG if n in p]
        lines.append(f"pleach, {p['events']:,} events ({p['file_mb']:,.0f} MB):")
        lines += [_fmt(p[n]) for n in names]
        if not _ok(p, "pleach_replaykit"):
            continue
        rk = p["pleach_replaykit"]
        if _ok(p, "pleach_polars"):
            lines.append(f"  read_pleach time / polars.read_ndjson time: "
                         f"{rk['seconds'] / p['pleach_polars']['seconds']:6.2f} "
                         f"(target <= {TARGETS['pleach_time_vs_polars']:.1f})")
        if _ok(p, "pleach_pandas"):
            s = p["pleach_pandas"]["seconds"] / rk["seconds"]
            lines.append(f"  read_pleach speed-up vs pandas: {s:6.1f}x "
                         f"(target >= {TARGETS['pleach_speedup_vs_pandas']:.0f}x)")
        if _ok(p, "pleach_duckdb"):
            lines.append(f"  read_pleach time / DuckDB read_json time: "
                         f"{rk['seconds'] / p['pleach_duckdb']['seconds']:6.2f} (reference)")
        if _ok(p, "pleach_duckdb_typed"):
            lines.append(f"  read_pleach time / DuckDB typed read (its parses' share) time: "
                         f"{rk['seconds'] / p['pleach_duckdb_typed']['seconds']:6.2f} "
                         "(reference)")
        if _ok(p, "pleach_duckdb_same_work"):
            lines.append(f"  read_pleach time / DuckDB same-work time: "
                         f"{rk['seconds'] / p['pleach_duckdb_same_work']['seconds']:6.2f} "
                         "(reference)")
        if _ok(p, "pleach_replaykit_reference"):
            lines.append(f"  native / reference path time: "
                         f"{rk['seconds'] / p['pleach_replaykit_reference']['seconds']:6.2f}")
        lines.append(f"  read_pleach peak RSS / file size: "
                     f"{rk['peak_rss_mb'] / p['file_mb']:5.2f} "
                     f"(target <= {TARGETS['pleach_rss_vs_file']:.1f})")
    t = results.get("toh")
    if t:
        rk, nv = t["toh_replaykit"], t["toh_naive"]
        lines += [_fmt(rk), _fmt(nv)]
        if "error" not in rk and "error" not in nv:
            rate = rk["rows"] / rk["seconds"]
            lines.append(f"  read_toh: {rate:,.0f} events/s (target >= "
                         f"{TARGETS['toh_events_per_s']:,.0f}); "
                         f"time vs json.loads loop: {rk['seconds'] / nv['seconds']:.2f}; "
                         f"load {t['load_before'][0]:.1f} -> {t['load_after'][0]:.1f}")
    return lines


# Benchmark modules exposing run(quick) -> [{name, value, unit, baseline, ratio, target}, ...]
_SUITES = ("fold", "integrity", "sql", "compare", "widgets", "cohorts", "report", "dask",
           "parquet", "access", "transcripts", "ingest", "dataset", "otel", "platform")


def _run_suite(name: str, quick: bool) -> list[dict[str, Any]]:
    import importlib

    module = importlib.import_module(f"benchmarks.bench_{name}")
    try:
        return list(module.run(quick=quick))
    except Exception as exc:  # one failing suite must not hide the others' figures
        return [{"name": f"{name}: FAILED", "value": None, "unit": "", "baseline": None,
                 "ratio": None, "target": repr(exc)[:200]}]


def _fmt_row(row: dict[str, Any]) -> str:
    def f(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"
        return "-" if v is None else str(v)

    return (
        f"{row.get('name', '?'):<48} {f(row.get('value')):>12} {row.get('unit', ''):<10} "
        f"baseline {f(row.get('baseline')):>10}  ratio {f(row.get('ratio')):>8}  "
        f"target {row.get('target', '-')}"
    )


def loader_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The pleach/toh loader results as table rows (same shape as the suites' rows)."""
    rows: list[dict[str, Any]] = []
    for key in ("pleach", "pleach_small"):
        p = results.get(key)
        if not p or not _ok(p, "pleach_replaykit"):
            continue
        rk = p["pleach_replaykit"]
        n = f"{p['events']:,} events, best of {rk.get('repeat', '?')} interleaved"
        cpu = f"; CPU {rk.get('cpu_seconds', float('nan')):.2f} s"
        if _ok(p, "pleach_polars"):
            pl_ = p["pleach_polars"]
            rows.append({"name": f"read_pleach vs polars.read_ndjson, 8 columns ({n})",
                         "value": rk["seconds"], "unit": "s", "baseline": pl_["seconds"],
                         "ratio": rk["seconds"] / pl_["seconds"],
                         "target": f"<= {TARGETS['pleach_time_vs_polars']:.1f}x polars' time"
                                   f"{cpu}, polars CPU {pl_.get('cpu_seconds', 0):.2f} s"})
            rows.append({"name": f"read_pleach CPU vs polars.read_ndjson CPU ({n})",
                         "value": rk.get("cpu_seconds"), "unit": "s CPU",
                         "baseline": pl_.get("cpu_seconds"),
                         "ratio": rk.get("cpu_seconds", 0) / max(pl_.get("cpu_seconds", 0), 1e-9),
                         "target": f"<= {TARGETS['pleach_cpu_vs_polars']:.1f}x polars' CPU"})
        if _ok(p, "pleach_replaykit_reference"):
            ref = p["pleach_replaykit_reference"]
            rows.append({"name": f"read_pleach native core vs its reference path, "
                                 f"REPLAYKIT_NATIVE=0 ({n})",
                         "value": rk["seconds"], "unit": "s", "baseline": ref["seconds"],
                         "ratio": rk["seconds"] / ref["seconds"],
                         "target": f"informational: the native gain (time ratio){cpu}, "
                                   f"reference CPU {ref.get('cpu_seconds', 0):.2f} s"})
        if _ok(p, "pleach_pandas"):
            pd_ = p["pleach_pandas"]
            rows.append({"name": f"read_pleach vs pandas.read_json + normalisation ({n})",
                         "value": rk["seconds"], "unit": "s", "baseline": pd_["seconds"],
                         "ratio": pd_["seconds"] / rk["seconds"],
                         "target": f">= {TARGETS['pleach_speedup_vs_pandas']:.0f}x faster "
                                   "than pandas"})
        if _ok(p, "pleach_duckdb"):
            dd = p["pleach_duckdb"]
            rows.append({"name": f"read_pleach vs DuckDB read_json ({n})",
                         "value": rk["seconds"], "unit": "s", "baseline": dd["seconds"],
                         "ratio": rk["seconds"] / dd["seconds"],
                         "target": "reference (time ratio)"})
        if _ok(p, "pleach_duckdb_typed"):
            dt = p["pleach_duckdb_typed"]
            rows.append({"name": f"read_pleach vs DuckDB read_json of the envelope + typed "
                                 f"payload struct ({n})",
                         "value": rk["seconds"], "unit": "s", "baseline": dt["seconds"],
                         "ratio": rk["seconds"] / dt["seconds"],
                         "target": "reference (the JSON parsing read_pleach does, by DuckDB)"})
        if _ok(p, "pleach_duckdb_same_work"):
            ds = p["pleach_duckdb_same_work"]
            rows.append({"name": f"read_pleach vs DuckDB read + typed payload fields + sort "
                                 f"({n})",
                         "value": rk["seconds"], "unit": "s", "baseline": ds["seconds"],
                         "ratio": rk["seconds"] / ds["seconds"],
                         "target": "reference (DuckDB doing most of read_pleach's work)"})
        if key == "pleach":
            pd_ = p.get("pleach_pandas", {"error": "not run"})
            rows.append({"name": f"read_pleach peak RSS vs the file's size ({n})",
                         "value": rk["peak_rss_mb"], "unit": "MB", "baseline": p["file_mb"],
                         "ratio": rk["peak_rss_mb"] / p["file_mb"],
                         "target": f"<= {TARGETS['pleach_rss_vs_file']:.1f}x the file size"
                                   f" (pandas: {pd_.get('peak_rss_mb', float('nan')):,.0f} MB)"})
    t = results.get("toh")
    if t and "error" not in t["toh_replaykit"]:
        rk, nv = t["toh_replaykit"], t["toh_naive"]
        rows.append({"name": f"read_toh events/s ({rk['rows']:,} events)",
                     "value": rk["rows"] / rk["seconds"], "unit": "events/s",
                     "baseline": nv["rows"] / nv["seconds"] if "error" not in nv else None,
                     "ratio": nv["seconds"] / rk["seconds"] if "error" not in nv else None,
                     "target": f">= {TARGETS['toh_events_per_s']:,.0f} events/s (baseline: "
                               "json.loads per line, lines/s)"})
    return rows


BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def write_performance_md(results: dict[str, Any], rows: list[dict[str, Any]],
                         load: tuple[tuple[float, ...], tuple[float, ...]],
                         path: Path = Path("docs/performance.md"),
                         duration_s: float | None = None) -> None:
    """Replace the generated table in docs/performance.md (between the bench markers)."""

    def cell(v: Any) -> str:
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"
        return str(v).replace("|", "/")

    m = results["machine"]
    versions = ", ".join(f"{k} {m[k]}" for k in ("numpy", "pyarrow", "pandas", "polars",
                                                 "duckdb", "orjson", "dask") if m.get(k))
    took = "" if duration_s is None else f" The run took {duration_s / 60:.1f} min."
    lines = [
        BEGIN,
        "## Latest full run (generated)",
        "",
        f"Written by `python -m benchmarks --write-docs` on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Machine: {m.get('nproc')} "
        f"cores, {cell(m.get('cpu'))}, {m.get('ram_gb')} GB RAM, {cell(m.get('platform'))}; "
        f"Python {m.get('python')}, {versions}. "
        f"Load average before / after: {', '.join(f'{x:.1f}' for x in load[0])} / "
        f"{', '.join(f'{x:.1f}' for x in load[1])}.{took} Every baseline was measured in the "
        "same run; contenders compared in one process run interleaved (A B C, A B C, ...) "
        "and report their best of N (N in the row), with their CPU time; "
        f"peak RSS in process: {cell(m.get('rss_method'))}. "
        "Scaling curves: [img/scaling.png](img/scaling.png).",
        "",
        "| figure | value | unit | baseline | ratio | target |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {cell(r.get('name'))} | {cell(r.get('value'))} | {cell(r.get('unit'))} | "
            f"{cell(r.get('baseline'))} | {cell(r.get('ratio'))} | {cell(r.get('target'))} |"
        )
    lines += ["", END]
    text = path.read_text()
    block = "\n".join(lines)
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        marker = "\n## "
        i = text.find(marker)
        text = text + "\n" + block + "\n" if i < 0 else text[:i] + "\n" + block + text[i:]
    path.write_text(text)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    ap.add_argument("--tiny", action="store_true",
                    help="--quick at a twentieth of its sizes, one repeat: the test suite's "
                    "check that every benchmark runs (REPLAYKIT_BENCH_TINY=1)")
    ap.add_argument(
        "--only",
        choices=("pleach", "toh", *_SUITES),
        help="run one benchmark",
    )
    ap.add_argument("--pleach-events", type=int, default=None)
    ap.add_argument("--pleach-small-events", type=int, default=None,
                    help="the second, smaller pleach size (default 300,000; quick 20,000)")
    ap.add_argument("--toh-events", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=None,
                    help="loaders: best of N runs, every contender (default 3; quick 2)")
    ap.add_argument("--write-docs", action="store_true",
                    help="rewrite the results table of docs/performance.md (between the "
                         "bench markers) from this run; full runs only (no --quick/--only)")
    args = ap.parse_args(argv)
    if args.tiny:  # every suite reads its sizes through benchmarks._harness.tiny
        args.quick = True
        os.environ["REPLAYKIT_BENCH_TINY"] = "1"
    if args.write_docs and (args.quick or args.only):
        ap.error("--write-docs needs a full run: drop --quick and --only")
    started = time.perf_counter()
    # the measured processes import replaykit as an installed package does, from bytecode
    # (an editable install under PYTHONDONTWRITEBYTECODE would compile it in every process)
    import compileall

    import replaykit

    compileall.compile_dir(str(Path(replaykit.__file__).parent), quiet=1)
    from benchmarks._harness import machine, rss_method, tiny

    pleach_n = args.pleach_events or (tiny(100_000) if args.quick else 2_000_000)
    pleach_small = args.pleach_small_events or (tiny(20_000) if args.quick else 300_000)
    toh_n = args.toh_events or (tiny(50_000) if args.quick else 1_000_000)
    repeat = args.repeat or (1 if args.tiny else 2 if args.quick else 3)

    results: dict[str, Any] = {"machine": {**machine(),
                                           "rss_method": rss_method()},
                               "quick": args.quick}
    load_before = os.getloadavg()
    print("machine:", json.dumps(results["machine"]), flush=True)
    seconds: dict[str, float] = {}  # each suite's wall time (progress on a long run)

    def timed(name: str, fn: Any, *fn_args: Any) -> Any:
        t0 = time.perf_counter()
        out = fn(*fn_args)
        seconds[name] = round(time.perf_counter() - t0, 2)
        print(f"[{time.perf_counter() - started:6.0f} s] {name} done in {seconds[name]:.1f} s",
              flush=True)
        return out

    if args.only in (None, "pleach"):
        if not args.tiny:  # (the smoke run: the larger size has every contender)
            results["pleach_small"] = timed("pleach_small", bench_pleach, pleach_small,
                                            repeat, _PLEACH_SMALL)
        results["pleach"] = timed("pleach", bench_pleach, pleach_n, repeat)
    if args.only in (None, "toh"):
        results["toh"] = timed("toh", bench_toh, toh_n, repeat)
    for name in _SUITES:
        if args.only in (None, name):
            results[name] = timed(name, _run_suite, name, args.quick)
    results["suite_seconds"] = seconds
    print()
    for line in report(results):
        print(line)
    for name in _SUITES:
        for row in results.get(name, []):
            print(_fmt_row(row))
    duration = time.perf_counter() - started
    results["load_average"] = {"before": load_before, "after": os.getloadavg()}
    results["duration_s"] = duration
    print(f"\nrun took {duration:.0f} s; load average before {load_before}, after "
          f"{os.getloadavg()}")
    if args.write_docs:
        rows = loader_rows(results) + [r for n in _SUITES for r in results.get(n, [])]
        write_performance_md(results, rows, (load_before, os.getloadavg()),
                             duration_s=duration)
        print("table written to docs/performance.md")
    DATA.mkdir(exist_ok=True)
    out = DATA / ("results-quick.json" if args.quick else "results.json")
    out.write_text(json.dumps(results, indent=2))
    print(f"\nresults written to {out}")


if __name__ == "__main__":
    main()
