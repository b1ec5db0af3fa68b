"""Hash-chain benchmarks: column-wise verify_chain vs a plain per-row Python loop.

``run(quick)`` returns rows ``{name, value, unit, baseline, ratio, target}``. The full run
verifies a 1,000,000-row chained log (``quick=True``: 100,000 rows); the baseline is the
obvious per-row loop (build each row's canonical JSON with ``json.dumps``, hash, compare,
check the link), timed on a 100,000-row sample of the same log in the same process.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

BASELINE_SAMPLE = 100_000


def _make_log(n: int) -> Any:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from _chainlogs import make_log

    from replaykit.integrity import stamp_chain

    return stamp_chain(make_log(n, n_runs=max(1, n // 1000)))


def _per_row_loop(rows: list[dict[str, Any]]) -> int:
    """The naive verifier: one dict, one json.dumps, one sha256 and one compare per row."""
    problems = 0
    prev_key = None
    prev_hash = "0" * 64
    for r in rows:
        key = (r["tenant_id"], r["run_id"])
        if key != prev_key:
            prev_key, prev_hash = key, "0" * 64
        ts = r["ts"]
        micros = None if ts is None else int(ts.timestamp() * 1_000_000)
        envelope = json.dumps(
            {
                "run_id": r["run_id"],
                "seq": r["seq"],
                "tenant_id": r["tenant_id"],
                "ts": micros,
                "type": r["type"],
            },
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
        content = '{"payload":' + r["payload"] + "," + envelope[1:]
        h = hashlib.sha256((r["prev_hash"] + content).encode("utf-8")).hexdigest()
        if h != r["row_hash"] or r["prev_hash"] != prev_hash:
            problems += 1
        prev_hash = r["row_hash"]
    return problems


def run(quick: bool = False) -> list[dict[str, Any]]:
    from replaykit.integrity import _content_column, stamp_chain, verify_chain

    n = 100_000 if quick else 1_000_000
    log = _make_log(n)
    verify_chain(log)  # warm-up
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        problems = verify_chain(log)
        times.append(time.perf_counter() - t0)
    assert problems.empty
    rate = n / float(np.median(times))

    t0 = time.perf_counter()
    _content_column(log.table, strict=False)
    content_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    stamp_chain(log, overwrite=True)
    stamp_rate = n / (time.perf_counter() - t0)

    sample = log.table.slice(0, min(BASELINE_SAMPLE, n)).to_pylist()
    t0 = time.perf_counter()
    bad = _per_row_loop(sample)
    base_rate = len(sample) / (time.perf_counter() - t0)
    assert bad == 0  # the naive loop agrees the chain is intact

    size = f"{n:,} rows"
    return [
        {
            "name": f"verify_chain rows/s ({size})",
            "value": round(rate),
            "unit": "rows/s",
            "baseline": round(base_rate),
            "ratio": round(rate / base_rate, 1),
            "target": ">= 300,000 rows/s (baseline: plain per-row Python loop)",
        },
        {
            "name": f"verify_chain: canonical bytes built column-wise ({size})",
            "value": round(content_s * 1000, 1),
            "unit": "ms",
            "baseline": None,
            "ratio": None,
            "target": "share of verify time (rest: one sha256 per row + column checks)",
        },
        {
            "name": f"stamp_chain rows/s ({size})",
            "value": round(stamp_rate),
            "unit": "rows/s",
            "baseline": round(base_rate),
            "ratio": round(stamp_rate / base_rate, 1),
            "target": "reference only (sequential by definition)",
        },
    ]


if __name__ == "__main__":  # pragma: no cover
    for row in run(quick="--quick" in sys.argv):
        print(row)
