"""Dask engine benchmarks: fold and compare time against events, local vs Dask (1 and 2 workers).

``run(quick)`` returns rows ``{name, value, unit, baseline, ratio, target}`` and writes the
scaling figure ``docs/img/scaling.html`` and ``.png`` (a quick or custom-size run writes
``bench-data/scaling-quick.*`` instead) and ``bench-data/dask_scaling.json`` with every
measurement, per-partition costs and worker peak memory, which docs/scaling.md's estimate
uses. Quick: 1e5 and 3e5 events. Full: 1e5 .. 2e7 events; the 2e7 run is the out-of-core
one (results streamed to Parquet, each worker limited to 2 GB; the local engine is not run at
that size). ``REPLAYKIT_BENCH_DASK_SIZES=100000,1000000`` overrides the sizes.

Every Dask figure is wall time of ``fold_to_parquet`` (read each partition, fold, write its
per-run result with the state as canonical JSON) on a fresh ``LocalCluster`` of worker
processes with one thread each; the local figure is ``read_parquet`` + ``fold`` + ``final()``
in this process. Datasets are generated once into ``bench-data/dask_<events>/`` (runs of ~100
events, partitions of ~250,000 events, files never split a run).
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._harness import is_tiny, tiny

ROOT = Path.cwd()
DATA = ROOT / "bench-data"
FIG = ROOT / "docs" / "img" / "scaling.html"
EVENTS_PER_RUN = 100
PARTITION_EVENTS = 250_000
CHUNK = 1_000_000
WORKER_MEMORY = "2GB"
LOCAL_MAX = 20_000_000  # the local engine holds the whole log in memory (~8 GB at 2e7)
COMPARE_MAX = 20_000_000


def _rename(log: Any, prefix: str, parent: bool = False) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    import replaykit as rk
    from replaykit.schema import events_table

    t = log.table
    run = pc.cast(t.column("run_id"), pa.string())
    cols = {n: t.column(n) for n in t.column_names}
    cols["run_id"] = pc.binary_join_element_wise(prefix, run, "")
    if parent:  # a replay of every run: parent = the base run; every 50th tool renamed
        cols["parent_run_id"] = cols["run_id"]  # the base dataset's (prefixed) run id
        tool = pc.cast(t.column("tool_name"), pa.string())
        import numpy as np

        mask = np.zeros(t.num_rows, bool)
        mask[::50] = True
        cols["tool_name"] = pc.if_else(pc.and_(pa.array(mask), pc.is_valid(tool)),
                                       pa.scalar("other_tool"), tool)
        cols["run_id"] = pc.binary_join_element_wise("rep-", cols["run_id"], "")
    return rk.EventLog(events_table(cols), sort=False)


def _dataset(events: int, replay: bool = False) -> Path:
    """A run-partitioned dataset of ``events`` events, generated in 1M-event chunks."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from replaykit.engine import write_partitioned
    from replaykit.fold.synth import synthetic_log

    path = DATA / (f"dask_{events}" + ("_replay" if replay else ""))
    if (path / "_quarantine_no_tenant.parquet").exists():  # (the current dataset layout)
        return path
    t0 = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(dir=DATA))
    out = tmp / "ds"
    k = 0
    side: dict[tuple[str, str], list] = {}  # (tenant folder, side file) -> every chunk's rows
    for start in range(0, events, CHUNK):
        n = min(CHUNK, events - start)
        log = synthetic_log(n, max(1, n // EVENTS_PER_RUN), seed=k)
        log = _rename(log, f"c{k:04d}-", parent=replay)
        part = write_partitioned(log, tmp / f"chunk{k}", partition_events=PARTITION_EVENTS)
        for f in sorted(part.glob("tenant_id=*/*.parquet")):
            if f.name.startswith("_"):  # the tenant's side files (runs, quarantine)
                side.setdefault((f.parent.name, f.name), []).append(pq.read_table(f))
                continue
            dest = out / f.parent.name / f"part-{k * 1000 + int(f.stem.split('-')[1])}.parquet"
            dest.parent.mkdir(parents=True, exist_ok=True)
            f.rename(dest)
        if k == 0:
            shutil.copy(part / "_quarantine_no_tenant.parquet",
                        out / "_quarantine_no_tenant.parquet")
        shutil.rmtree(part)
        k += 1
    for (folder, name), tables in side.items():
        (out / folder).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.concat_tables(tables), out / folder / name)
    if path.exists():
        shutil.rmtree(path)
    out.rename(path)
    shutil.rmtree(tmp)
    print(f"  generated {path} in {time.perf_counter() - t0:.1f}s", flush=True)
    return path


def _local_fold(path: Path) -> float:
    import replaykit as rk

    t0 = time.perf_counter()
    log = rk.read_parquet(path)
    rk.fold(log, rk.agent()).final()
    return time.perf_counter() - t0


def _local_compare(base: Path, rep: Path) -> float:
    import replaykit as rk

    t0 = time.perf_counter()
    df = rk.compare(rk.read_parquet(base), rk.read_parquet(rep))
    seconds = time.perf_counter() - t0
    _check_pairs(df, rep)
    return seconds


def _check_pairs(df: Any, rep: Path) -> None:
    """Every replay run was paired with its base run (a compare of nothing is not timed)."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    runs = ds.dataset(sorted(rep.glob("tenant_id=*/*.parquet")), format="parquet").to_table(
        columns=["run_id"]).column("run_id")
    n_runs = len(pc.unique(pc.cast(runs, "string")))
    assert n_runs and len(df) == n_runs, f"compare paired {len(df)} of {n_runs} runs in {rep}"


def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _dask_runs(path: Path, rep: Path | None, workers: int) -> dict[str, Any]:
    from distributed import Client, LocalCluster

    import replaykit as rk
    from replaykit.fold import fold_to_parquet

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      memory_limit=WORKER_MEMORY, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        # workers up, replaykit imported, before the clock starts (a long-lived cluster)
        client.run(importlib.import_module, "replaykit.fold._dask")
        out = Path(tempfile.mkdtemp(dir=DATA)) / "folded"
        t0 = time.perf_counter()
        report = fold_to_parquet(path, rk.agent(), out, client=client, progress=False)
        fold_s = time.perf_counter() - t0
        shutil.rmtree(out.parent)
        compare_s = None
        pairs = None
        if rep is not None:
            t0 = time.perf_counter()
            df = rk.compare(path, rep, engine="dask", client=client)
            compare_s = time.perf_counter() - t0
            _check_pairs(df, rep)
            pairs = len(df)
        peaks = client.run(_peak_rss_mb)
    return {"fold_s": fold_s, "compare_s": compare_s, "pairs": pairs,
            "partitions": len(report), "events": int(report["events"].sum()),
            "part_seconds": [float(x) for x in report["seconds"]],
            "part_events": [int(x) for x in report["events"]],
            "worker_peak_rss_mb": max(peaks.values())}


def _figure(points: list[dict[str, Any]], fig_path: Path = FIG) -> None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=("fold (agent projection)",
                                                        "compare (every run vs its replay)"))
    styles = {"local": "#444", "dask-1": "#1f77b4", "dask-2": "#d62728"}
    for col, key in ((1, "fold_s"), (2, "compare_s")):
        for engine, color in styles.items():
            pts = sorted((p["events"], p[key]) for p in points
                         if p["engine"] == engine and p.get(key) is not None)
            if not pts:
                continue
            fig.add_trace(go.Scatter(x=[x for x, _ in pts], y=[y for _, y in pts],
                                     mode="lines+markers", name=engine, legendgroup=engine,
                                     showlegend=col == 1, line={"color": color}), 1, col)
        fig.update_xaxes(type="log", title_text="events", row=1, col=col)
        fig.update_yaxes(type="log", title_text="wall time (s)", row=1, col=col)
    fig.update_layout(title="replaykit: time against events, local engine vs Dask "
                      "(LocalCluster, 1 thread per worker, 2 GB per worker)",
                      width=1100, height=480, template="plotly_white")
    fig_path.parent.mkdir(parents=True, exist_ok=True)
    fig.write_html(fig_path, include_plotlyjs="cdn")
    _screenshot(fig, fig_path.with_suffix(".png"))


def _screenshot(fig: Any, png: Path) -> None:
    """PNG of the figure through headless Chromium (skipped when it is not installed)."""
    import subprocess

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists() or is_tiny():  # the smoke run draws no picture
        return
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "fig.html"
        fig.write_html(page, include_plotlyjs=True, full_html=True,
                       config={"displayModeBar": False})
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", f"--screenshot={png}", "--window-size=1120,500",
                        "--virtual-time-budget=5000", page.as_uri()],
                       capture_output=True, timeout=120, check=False)


def run(quick: bool = False) -> list[dict[str, Any]]:
    DATA.mkdir(exist_ok=True)
    env = os.environ.get("REPLAYKIT_BENCH_DASK_SIZES")
    if env:
        sizes = [int(float(s)) for s in env.split(",")]
    else:
        sizes = tiny([100_000, 300_000]) if quick else [100_000, 1_000_000, 5_000_000, 20_000_000]
    if is_tiny():  # the smoke run: one size shows every row runs (each size starts 2 clusters)
        sizes = sizes[:1]
    points: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for n in sizes:
        path = _dataset(n)
        rep = _dataset(n, replay=True) if n <= COMPARE_MAX else None
        print(f"dask: {n:,} events, {len(list(path.glob('tenant_id=*/*.parquet')))} "
              "partitions", flush=True)
        local = None
        if n <= LOCAL_MAX:
            local = {"fold_s": _local_fold(path),
                     "compare_s": _local_compare(path, rep) if rep is not None else None}
            points.append({"engine": "local", "events": n, **local})
        d = {}
        for w in (1, 2):
            d[w] = _dask_runs(path, rep, w)
            points.append({"engine": f"dask-{w}", "events": n, **d[w]})
        base = local["fold_s"] if local else None
        for w in (1, 2):
            rows.append({
                "name": f"dask fold, {w} worker{'s' if w > 1 else ''}, {n:,} events",
                "value": d[w]["fold_s"], "unit": "s",
                "baseline": base, "ratio": (base / d[w]["fold_s"]) if base else None,
                "target": "informational (ratio = local time / Dask time)"})
        rows.append({"name": f"dask fold speed-up 2 vs 1 workers, {n:,} events",
                     "value": d[1]["fold_s"] / d[2]["fold_s"], "unit": "x",
                     "baseline": d[1]["fold_s"], "ratio": d[1]["fold_s"] / d[2]["fold_s"],
                     "target": "> 1 (scales with workers)"})
        if rep is not None:
            cb = local["compare_s"] if local else None
            rows.append({"name": f"dask compare, 2 workers, {n:,} events",
                         "value": d[2]["compare_s"], "unit": "s", "baseline": cb,
                         "ratio": (cb / d[2]["compare_s"]) if cb else None,
                         "target": "informational"})
        per = [s / e * PARTITION_EVENTS for s, e in zip(d[1]["part_seconds"],
                                                         d[1]["part_events"], strict=True)]
        rows.append({"name": f"dask per-partition fold cost ({PARTITION_EVENTS:,} events), "
                             f"{n:,}", "value": sorted(per)[len(per) // 2], "unit": "s",
                     "baseline": None, "ratio": None, "target": "informational (median)"})
        rows.append({"name": f"dask worker peak RSS, {n:,} events",
                     "value": max(d[1]["worker_peak_rss_mb"], d[2]["worker_peak_rss_mb"]),
                     "unit": "MB", "baseline": 2000.0,
                     "ratio": max(d[1]["worker_peak_rss_mb"], d[2]["worker_peak_rss_mb"])
                     / 2000.0,
                     "target": "< 2 GB per worker" + (" (20M out-of-core run completes)"
                                                      if n >= 20_000_000 else "")})
    # only a full run replaces the figure in the docs; a quick run draws into bench-data/
    _figure(points, DATA / "scaling-quick.html" if quick or env else FIG)
    (DATA / ("dask_scaling-quick.json" if quick else "dask_scaling.json")).write_text(
        json.dumps({"points": points, "load_avg": os.getloadavg()}, indent=1))
    return rows


if __name__ == "__main__":
    import sys

    for r in run(quick="--quick" in sys.argv):
        print(r)
