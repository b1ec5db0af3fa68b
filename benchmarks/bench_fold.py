"""Fold / replay benchmarks: column-wise fold vs the scalar reducer, peak memory, seek latency.

``rk.fold`` computes the ``state_hash`` column by default, so every fold number here includes
it; one informational row measures the ``state_hash=False`` opt-out.

``run(quick)`` returns rows ``{name, value, unit, baseline, ratio, target}``. The full run uses
the sizes the project targets (2,000,000 events / 20,000 runs; a 1,000,000-event run for
seeking); ``quick=True`` uses a tenth of that.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

SCALAR_SAMPLE = 100_000  # events the scalar reducer folds to measure its rate


def _fold_rate(log: Any) -> tuple[float, float]:
    import replaykit as rk

    rk.fold(log, rk.agent())  # warm-up
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        rk.fold(log, rk.agent())
        times.append(time.perf_counter() - t0)
    best = float(np.median(times))
    return len(log) / best, best


def _scalar_rate(log: Any) -> float:
    import replaykit as rk
    from replaykit.fold import reference_fold

    sub = log.table.slice(0, min(SCALAR_SAMPLE, len(log)))
    t0 = time.perf_counter()
    reference_fold(sub, rk.agent())
    return sub.num_rows / (time.perf_counter() - t0)


_RSS_CHILD = r"""
import json, resource, sys
import pyarrow as pa
import pyarrow.parquet as pq
import replaykit as rk
from replaykit.schema import EVENTS_SCHEMA
import psutil
base = psutil.Process().memory_info().rss  # current RSS after the imports
table = pq.read_table(sys.argv[1])
if table.schema != EVENTS_SCHEMA:
    table = table.cast(EVENTS_SCHEMA)
log = rk.EventLog(table, sort=False)
pa.default_memory_pool().release_unused()
loaded = psutil.Process().memory_info().rss
frame = rk.fold(log, rk.agent())
assert len(frame) == len(log)
def hwm():
    # VmHWM is this process's own high-water mark; ru_maxrss can carry the parent's peak
    # across fork+exec on Linux
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
peak = hwm()
print(json.dumps({"nbytes": table.nbytes, "base": base, "loaded": loaded, "peak": peak}))
"""


def _peak_rss(log: Any) -> dict[str, float]:
    """Peak RSS of a fresh process that reads the log from Parquet and folds it (bytes)."""
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.parquet"
        pq.write_table(log.table, path)
        out = subprocess.run([sys.executable, "-c", _RSS_CHILD, str(path)], check=False,
                             capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"peak-RSS child failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _seek(n_events: int) -> tuple[float, float]:
    import replaykit as rk
    from replaykit.fold.synth import synthetic_log

    log = synthetic_log(n_events, 1, tenants=("acme",), seed=4)
    run = log.run_ids[0]
    h = rk.open_replay(log, run, tenant_id="acme")
    h.seek(1)  # folds the window once
    rng = np.random.default_rng(0)
    targets = rng.integers(1, n_events + 1, 200)
    times = []
    for s in targets:
        t0 = time.perf_counter()
        h.seek(int(s))
        times.append(time.perf_counter() - t0)
    # baseline: what seek costs when it re-folds (column-wise) from the start each time
    base = []
    for s in targets[:5]:
        t0 = time.perf_counter()
        rk.fold(log.window(None, int(s)), rk.agent()).at(run, int(s), tenant_id="acme")
        base.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3, float(np.median(base)) * 1e3


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Run the fold benchmarks; one row per measurement."""
    from replaykit.fold.synth import synthetic_log

    n_events, n_runs = (200_000, 2_000) if quick else (2_000_000, 20_000)
    log = synthetic_log(n_events, n_runs, seed=1)
    fold_rate, fold_s = _fold_rate(log)
    scalar_rate = _scalar_rate(log)
    rss = _peak_rss(log)
    table_mb, peak_mb = rss["nbytes"] / 1e6, rss["peak"] / 1e6
    data_mb = (rss["peak"] - rss["base"]) / 1e6  # above the interpreter + imports
    seek_ms, refold_ms = _seek(100_000 if quick else 1_000_000)
    import replaykit as rk

    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        rk.fold(log, rk.agent(), state_hash=False)
        times.append(time.perf_counter() - t0)
    nohash_rate = len(log) / float(np.median(times))
    size = f"{n_events:,} events / {n_runs:,} runs"
    return [
        {"name": f"fold agent() incl. state_hash events/s ({size})", "value": round(fold_rate),
         "unit": "events/s", "baseline": round(scalar_rate),
         "ratio": round(fold_rate / scalar_rate, 1),
         "target": ">= 5,000,000 events/s and >= 20x the scalar reducer"},
        {"name": "scalar reference reducer events/s (agent())", "value": round(scalar_rate),
         "unit": "events/s", "baseline": None, "ratio": None, "target": "reference only"},
        {"name": f"fold agent() peak RSS, whole process ({size})", "value": round(peak_mb, 1),
         "unit": "MB", "baseline": round(table_mb, 1), "ratio": round(peak_mb / table_mb, 2),
         "target": "< 3x the input table's in-memory size"},
        {"name": f"fold agent() peak RSS above interpreter+imports ({size})",
         "value": round(data_mb, 1), "unit": "MB", "baseline": round(table_mb, 1),
         "ratio": round(data_mb / table_mb, 2),
         "target": "< 3x the input table's in-memory size (table + fold)"},
        {"name": f"seek median ({'100,000' if quick else '1,000,000'}-event run)",
         "value": round(seek_ms, 4), "unit": "ms", "baseline": round(refold_ms, 2),
         "ratio": round(seek_ms / refold_ms, 5), "target": "< 1 ms (baseline: re-fold)"},
        {"name": f"fold agent(), state_hash=False (opt-out) events/s ({size})",
         "value": round(nohash_rate), "unit": "events/s", "baseline": round(fold_rate),
         "ratio": round(nohash_rate / fold_rate, 3),
         "target": "informational (the default fold above includes state_hash)"},
        {"name": f"fold agent() peak RSS above the loaded table ({size})",
         "value": round((rss["peak"] - rss["loaded"]) / 1e6, 1), "unit": "MB",
         "baseline": round(table_mb, 1), "ratio": round((rss["peak"] - rss["loaded"]) / 1e6
                                                        / table_mb, 2),
         "target": "informational: what fold itself adds"},
    ]


if __name__ == "__main__":  # pragma: no cover
    for row in run(quick="--quick" in sys.argv):
        print(row)
