"""The lazy handle (issue 43): ``runs_df()`` of an ingested dataset, and a cohort comparison and
a fold over it (out of core, Dask's threaded scheduler in this process) against the same calls
on the in-memory log.

``run(quick)`` returns rows ``{name, value, unit, baseline, ratio, target}``. The data: two
terms of generated pleach exports (Parquet, three tenants, ``created_at`` moved into October
and March), ingested once into ``bench-data/dataset_<events>/``. Contenders are interleaved,
best of N (:mod:`benchmarks._harness`); peak RSS is what the call added to this process.
The in-memory baseline is the same call on ``read_parquet(dataset)`` (loaded before timing);
``ratio`` is the handle's wall per event over the in-memory call's wall per event (> 1: the
handle costs more per event). Sizes: quick 200,000 events, full 2,000,000 (the machine is
shared: the issue's 20M-event targets are not run here); ``REPLAYKIT_BENCH_DATASET_EVENTS``
overrides.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from benchmarks._harness import interleave, is_tiny, row, tiny

ROOT = Path.cwd()
DATA = ROOT / "bench-data"
RUNS_PER_1000_EVENTS = 10


def _exports(folder: Path, events: int) -> Path:
    """Two terms of pleach Parquet exports (``events`` rows in all), times moved per term."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from replaykit.datasets import generate_pleach

    folder.mkdir(parents=True, exist_ok=True)
    for term, days, seed in (("fall", -80, 1), ("spring", 60, 2)):
        out = folder / f"{term}.parquet"
        if out.exists():
            continue
        tmp = generate_pleach(folder / f"_{term}.parquet", events=events // 2,
                              runs=max(2, events // 2 * RUNS_PER_1000_EVENTS // 1000),
                              seed=seed, format="parquet", hashes=False)
        t = pq.read_table(tmp)
        ts = pd.to_datetime(t.column("created_at").to_pandas(), utc=True, format="ISO8601")
        moved = (ts + pd.Timedelta(days=days)).dt.strftime("%Y-%m-%dT%H:%M:%S.%f")
        text = pa.array(moved.str.slice(0, -3) + "Z", pa.string())  # milliseconds, as exported
        t = t.set_column(t.schema.get_field_index("created_at"), "created_at", text)
        pq.write_table(t, out)
        tmp.unlink()
    return folder


def _dataset(events: int) -> Path:
    import replaykit as rk

    root = DATA / f"dataset_{events}"
    if not (root / "_ingest_manifest.json").exists():
        _exports(DATA / f"dataset_{events}_exports", events)
        rk.ingest(DATA / f"dataset_{events}_exports", root, progress=False)
    return root


def run(quick: bool = True) -> list[dict[str, Any]]:
    import replaykit as rk

    env = os.environ.get("REPLAYKIT_BENCH_DATASET_EVENTS")
    events = int(env) if env else tiny(200_000 if quick else 2_000_000)
    repeat = 1 if is_tiny() else 3
    root = _dataset(events)
    ds = rk.open_dataset(root)
    log = rk.read_parquet(root)
    n = len(log)
    labels = rk.cohorts(log, by="semester").labels
    a, b = labels[0], labels[-1]

    res = interleave({
        "runs_df: handle": lambda: ds.runs_df(),
        "runs_df: read_parquet + runs_df": lambda: rk.read_parquet(root).runs_df(),
    }, repeat=repeat)
    rows = [row(f"dataset runs_df() ({n:,} events, {log.num_runs:,} runs)",
                res["runs_df: handle"], res["runs_df: read_parquet + runs_df"],
                target="<= 1 s (issue 43, at 20M events)", ratio="contender/baseline")]

    res = interleave({
        "cohorts: handle": lambda: rk.cohorts(ds, by="semester").compare(a, b, n_boot=200),
        "cohorts: in memory": lambda: rk.cohorts(log, by="semester").compare(a, b,
                                                                            n_boot=200),
        "fold: handle": lambda: rk.fold(ds, rk.agent()).final(),
        "fold: in memory": lambda: rk.fold(log, rk.agent()).final(),
    }, repeat=repeat)
    for what, target in (("cohorts", "cohorts(ds, by='semester').compare(a, b)"),
                         ("fold", "fold(ds, agent()).final()")):
        rows.append(row(f"{target} over the handle vs the in-memory log ({n:,} events; "
                        "ratio = wall per event, handle / in memory)",
                        res[f"{what}: handle"], res[f"{what}: in memory"],
                        target="peak RSS <= 2 GB (issue 43, at 20M events)",
                        ratio="contender/baseline"))
    return rows


if __name__ == "__main__":  # pragma: no cover
    for r in run(quick=os.environ.get("REPLAYKIT_BENCH_QUICK", "1") == "1"):
        print(r["name"], r["value"], r["unit"], "baseline", r["baseline"], "ratio", r["ratio"],
              "baseline CPU", r["baseline_cpu_s"], "baseline peak RSS MB",
              r["baseline_peak_rss_mb"])
