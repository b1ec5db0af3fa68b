"""Scrubber benchmark: one slider move on a 100,000-event run, against a re-fold per move.

``run(quick)`` returns rows ``{name, value, unit, baseline, ratio, target}``. A move sets
``scrubber.slider.value`` (headless ipywidgets), which materialises the state after that event
from the StateFrame built once, plus the state before it, the changes and three escaped JSON
panes. The baseline is what a widget without a StateFrame would do per move: fold the run again
(``rk.fold(run, rk.agent())``) and read the state at that event. Both are the median over the
same random positions. Target: a move under 50 ms.
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

import numpy as np

from benchmarks._harness import tiny


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Run the Scrubber benchmark; one row per measurement."""
    import replaykit as rk
    from replaykit.fold.synth import synthetic_log
    from replaykit.widgets import Scrubber

    n_events = tiny(20_000) if quick else 100_000
    log = synthetic_log(n_events, 1, tenants=("bench",), seed=11)
    run_id = log.run_ids[0]
    t0 = time.perf_counter()
    scrub = Scrubber(log, run_id, tenant_id="bench")
    build = time.perf_counter() - t0
    rng = np.random.default_rng(5)
    positions = rng.integers(1, len(scrub), 15 if quick else 40).tolist()
    moves = []
    for i in positions:
        t0 = time.perf_counter()
        scrub.slider.value = int(i)
        moves.append(time.perf_counter() - t0)
        assert scrub.index == i
    refolds = []
    for i in positions[:5]:
        t0 = time.perf_counter()
        sf = rk.fold(log, rk.agent())
        sf.at(run_id, int(scrub.seqs[i]), tenant_id="bench")
        refolds.append(time.perf_counter() - t0)
    move = statistics.median(moves) * 1000
    base = statistics.median(refolds) * 1000
    return [
        {"name": f"Scrubber slider move on a {n_events:,}-event run (baseline: re-fold the run "
                 "per move)",
         "value": round(move, 2), "unit": "ms", "baseline": round(base, 1),
         "ratio": round(base / move, 1), "target": "< 50 ms"},
        {"name": f"Scrubber build (one fold) on a {n_events:,}-event run",
         "value": round(build * 1000, 1), "unit": "ms", "baseline": round(base, 1),
         "ratio": round(base / (build * 1000), 2), "target": "one fold"},
    ]


if __name__ == "__main__":  # pragma: no cover
    for row in run(quick="--quick" in sys.argv):
        print(row)
