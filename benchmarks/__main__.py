"""Run the benchmarks: ``python -m benchmarks [--quick] [--only pleach|toh]``.

Full size: read_pleach on a generated 2,000,000-event pleach JSONL against pandas
(``read_json(lines=True)`` + payload back to JSON text + ``created_at`` to datetime) and
DuckDB (``read_json`` with payload as JSON); read_toh on a generated toh log of >= 1,000,000
events against a json.loads-per-line loop. ``--quick`` uses small sizes (a smoke test).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path.cwd()
DATA = ROOT / "bench-data"

TARGETS = {
    "pleach_speedup_vs_pandas": 10.0,  # read_pleach at least 10x faster
    "pleach_time_vs_duckdb": 2.0,  # read_pleach within 2x of DuckDB
    "pleach_peak_rss_mb": 2.5 * 1024,  # under 2.5 GB
    "toh_events_per_s": 300_000.0,
}


def _run(name: str, path: Path, repeat: int) -> dict[str, Any]:
    """Best of ``repeat`` runs of one contender, each in a fresh subprocess."""
    best: dict[str, Any] | None = None
    for _ in range(repeat):
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks._worker", name, str(path)],
            capture_output=True, text=True, cwd=ROOT, check=False,
        )
        if proc.returncode != 0:
            return {"name": name, "error": proc.stderr.strip().splitlines()[-1:]}
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        if best is None or res["seconds"] < best["seconds"]:
            best = res
    assert best is not None
    return best


def _machine() -> dict[str, Any]:
    import pandas
    import pyarrow

    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    info = {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "ram_gb": mem_gb,
        "python": platform.python_version(),
        "pyarrow": pyarrow.__version__,
        "pandas": pandas.__version__,
    }
    for mod in ("duckdb", "orjson"):
        try:
            info[mod] = __import__(mod).__version__
        except ImportError:
            info[mod] = None
    return info


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


def bench_pleach(events: int, repeat: int) -> dict[str, Any]:
    path = _dataset("pleach", events)
    size_mb = path.stat().st_size / 2**20
    print(f"pleach: {events:,} events, {size_mb:,.0f} MB", flush=True)
    res = {n: _run(n, path, repeat)
           for n in ("pleach_replaykit", "pleach_duckdb", "pleach_duckdb_same_work")}
    res["pleach_pandas"] = _run("pleach_pandas", path, repeat)  # best of N for every contender
    return {"file_mb": size_mb, "events": events, **res}


def bench_toh(events: int, repeat: int) -> dict[str, Any]:
    path = _dataset("toh", events)
    size_mb = path.stat().st_size / 2**20
    print(f"toh: >= {events:,} events, {size_mb:,.0f} MB", flush=True)
    res = {n: _run(n, path, repeat) for n in ("toh_replaykit", "toh_naive")}
    return {"file_mb": size_mb, "events": events, **res}


def _fmt(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"{r['name']:<18} FAILED: {r['error']}"
    rate = r["rows"] / r["seconds"] if r["seconds"] else float("inf")
    return (
        f"{r['name']:<18} {r['seconds']:8.2f} s  {r['rows']:>10,} rows  "
        f"{rate:>12,.0f} rows/s  peak RSS {r['peak_rss_mb']:8,.0f} MB"
    )


def report(results: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    p = results.get("pleach")
    if p:
        rk, pd_, dd = p["pleach_replaykit"], p["pleach_pandas"], p["pleach_duckdb"]
        ds = p.get("pleach_duckdb_same_work", {"error": "not run"})
        lines += [_fmt(rk), _fmt(dd), _fmt(ds), _fmt(pd_)]
        if "error" not in rk:
            if "error" not in pd_:
                s = pd_["seconds"] / rk["seconds"]
                lines.append(f"  read_pleach speed-up vs pandas: {s:6.1f}x "
                             f"(target >= {TARGETS['pleach_speedup_vs_pandas']:.0f}x)")
                lines.append(f"  peak RSS read_pleach / pandas: "
                             f"{rk['peak_rss_mb'] / pd_['peak_rss_mb']:6.2f}")
            if "error" not in dd:
                s = rk["seconds"] / dd["seconds"]
                lines.append(f"  read_pleach time / DuckDB time: {s:6.2f} "
                             f"(target <= {TARGETS['pleach_time_vs_duckdb']:.0f})")
            if "error" not in ds:
                lines.append(f"  read_pleach time / DuckDB same-work time: "
                             f"{rk['seconds'] / ds['seconds']:6.2f} (reference)")
            lines.append(f"  read_pleach peak RSS: {rk['peak_rss_mb'] / 1024:5.2f} GB "
                         f"(target < 2.5 GB)")
    t = results.get("toh")
    if t:
        rk, nv = t["toh_replaykit"], t["toh_naive"]
        lines += [_fmt(rk), _fmt(nv)]
        if "error" not in rk and "error" not in nv:
            rate = rk["rows"] / rk["seconds"]
            lines.append(f"  read_toh: {rate:,.0f} events/s (target >= 300,000); "
                         f"time vs json.loads loop: {rk['seconds'] / nv['seconds']:.2f}")
    return lines


# Benchmark modules exposing run(quick) -> [{name, value, unit, baseline, ratio, target}, ...]
_SUITES = ("fold", "integrity", "sql", "compare", "widgets", "cohorts", "report", "dask",
           "parquet", "access")


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
    p = results.get("pleach")
    if p and "error" not in p["pleach_replaykit"]:
        rk, pd_, dd = p["pleach_replaykit"], p["pleach_pandas"], p["pleach_duckdb"]
        n = f"{p['events']:,} events"
        if "error" not in pd_:
            rows.append({"name": f"read_pleach vs pandas.read_json + normalisation ({n})",
                         "value": rk["seconds"], "unit": "s", "baseline": pd_["seconds"],
                         "ratio": pd_["seconds"] / rk["seconds"],
                         "target": ">= 10x faster than pandas"})
        if "error" not in dd:
            rows.append({"name": f"read_pleach vs DuckDB read_json ({n})",
                         "value": rk["seconds"], "unit": "s", "baseline": dd["seconds"],
                         "ratio": rk["seconds"] / dd["seconds"],
                         "target": "<= 2x DuckDB's time"})
        ds = p.get("pleach_duckdb_same_work", {"error": "not run"})
        if "error" not in ds:
            rows.append({"name": f"read_pleach vs DuckDB read + typed payload fields + sort "
                                 f"({n})",
                         "value": rk["seconds"], "unit": "s", "baseline": ds["seconds"],
                         "ratio": rk["seconds"] / ds["seconds"],
                         "target": "reference (DuckDB doing most of read_pleach's work)"})
        rows.append({"name": f"read_pleach peak RSS ({n})", "value": rk["peak_rss_mb"],
                     "unit": "MB", "baseline": pd_.get("peak_rss_mb"),
                     "ratio": rk["peak_rss_mb"] / pd_["peak_rss_mb"] if "error" not in pd_
                     else None, "target": "< 2.5 GB"})
    t = results.get("toh")
    if t and "error" not in t["toh_replaykit"]:
        rk, nv = t["toh_replaykit"], t["toh_naive"]
        rows.append({"name": f"read_toh events/s ({rk['rows']:,} events)",
                     "value": rk["rows"] / rk["seconds"], "unit": "events/s",
                     "baseline": nv["rows"] / nv["seconds"] if "error" not in nv else None,
                     "ratio": nv["seconds"] / rk["seconds"] if "error" not in nv else None,
                     "target": ">= 300,000 events/s (baseline: json.loads per line, lines/s)"})
    return rows


BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def write_performance_md(results: dict[str, Any], rows: list[dict[str, Any]],
                         load: tuple[tuple[float, ...], tuple[float, ...]],
                         path: Path = Path("docs/performance.md")) -> None:
    """Replace the generated table in docs/performance.md (between the bench markers)."""

    def cell(v: Any) -> str:
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"
        return str(v).replace("|", "/")

    m = results["machine"]
    lines = [
        BEGIN,
        "## Latest `make bench` run (generated)",
        "",
        f"Written by `python -m benchmarks` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
        f". Machine: {m.get('nproc')} cores, {cell(m.get('cpu'))}, {m.get('ram_gb')} GB RAM, "
        f"Python {m.get('python')}, pyarrow {m.get('pyarrow')}, pandas {m.get('pandas')}. "
        f"Load average before / after: {', '.join(f'{x:.1f}' for x in load[0])} / "
        f"{', '.join(f'{x:.1f}' for x in load[1])}. Every baseline was measured in the same run. "
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
    ap.add_argument(
        "--only",
        choices=("pleach", "toh", *_SUITES),
        help="run one benchmark",
    )
    ap.add_argument("--pleach-events", type=int, default=None)
    ap.add_argument("--toh-events", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=None,
                    help="loaders: best of N runs, every contender (default 3; quick 2)")
    args = ap.parse_args(argv)
    pleach_n = args.pleach_events or (100_000 if args.quick else 2_000_000)
    toh_n = args.toh_events or (50_000 if args.quick else 1_000_000)
    repeat = args.repeat or (2 if args.quick else 3)
    results: dict[str, Any] = {"machine": _machine(), "quick": args.quick}
    load_before = os.getloadavg()
    print("machine:", json.dumps(results["machine"]), flush=True)
    if args.only in (None, "pleach"):
        results["pleach"] = bench_pleach(pleach_n, repeat)
    if args.only in (None, "toh"):
        results["toh"] = bench_toh(toh_n, repeat)
    for name in _SUITES:
        if args.only in (None, name):
            results[name] = _run_suite(name, args.quick)
    print()
    for line in report(results):
        print(line)
    for name in _SUITES:
        for row in results.get(name, []):
            print(_fmt_row(row))
    if not args.quick and args.only is None:
        rows = loader_rows(results) + [r for n in _SUITES for r in results.get(n, [])]
        write_performance_md(results, rows, (load_before, os.getloadavg()))
        print("\ntable written to docs/performance.md")
    DATA.mkdir(exist_ok=True)
    out = DATA / ("results-quick.json" if args.quick else "results.json")
    out.write_text(json.dumps(results, indent=2))
    print(f"\nresults written to {out}")


if __name__ == "__main__":
    main()
