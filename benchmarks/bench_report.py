"""Report benchmark: rk.report.rca for a 10,000-event replay, size and time to write.

``run(quick)`` returns rows ``{name, value, unit, baseline, ratio, target}``. The replay: a
synthetic 10,000-event run (``replaykit.fold.synth.synthetic_log``) branched at its third
event with one tool-argument intervention on an early tool call, replayed under
recorded-only / blocked (so it diverges there). Timed: building the report and writing the
file (the replay itself is not timed). Baseline for the time: plotly's own
``fig.write_html(include_plotlyjs=True)`` of the report's divergence figure alone (one figure,
no tables, no scrubber). Baseline for the size: the plotly.js bundle the page inlines.
Targets: under 8 MB and under 3 s.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _replay(n_events: int) -> Any:
    import pyarrow.compute as pc

    import replaykit as rk
    from replaykit.fold.synth import synthetic_log

    log = synthetic_log(n_events, 1, tenants=("bench",), seed=3)
    run_id = log.run_ids[0]
    t = log.table
    calls = t.filter(pc.equal(pc.cast(t.column("kind"), "string"), "tool_call"))
    ref = calls.column("ref_id")[0].as_py()
    seq0 = int(t.column("seq")[2].as_py())
    branch = rk.Branch(base=log, run_id=run_id, tenant_id="bench", checkpoint=seq0,
                       name="bench").intervene(kind="tool_args_patch", target_ref=ref,
                                                patch={"args": {"changed": True}})
    return rk.replay(branch, model_policy="recorded-only", tool_policy="blocked")


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Run the report benchmark (the same 10,000-event size quick or not; quick: 1 repeat)."""
    from plotly.offline import get_plotlyjs

    import replaykit as rk
    from replaykit import plots

    n_events = 10_000
    res = _replay(n_events)
    assert len(res.events) >= n_events * 0.9, len(res.events)
    times = []
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "rca.html"
        for _ in range(1 if quick else 3):
            t0 = time.perf_counter()
            rk.report.rca(res, title="bench", question="what changes?").save_html(out)
            times.append(time.perf_counter() - t0)
        size = out.stat().st_size
        t0 = time.perf_counter()
        plots.divergence_timeline(res).write_html(Path(d) / "fig.html", include_plotlyjs=True)
        base = time.perf_counter() - t0
    best = min(times)
    js = len(get_plotlyjs().encode("utf-8"))
    return [
        {"name": f"report rca for a {len(res.events):,}-event replay: file size (baseline: the "
                 "inlined plotly.js)",
         "value": round(size / 1e6, 2), "unit": "MB", "baseline": round(js / 1e6, 2),
         "ratio": round(size / js, 2), "target": "< 8 MB"},
        {"name": f"report rca for a {len(res.events):,}-event replay: build + write (baseline: "
                 "one plotly figure's write_html)",
         "value": round(best, 2), "unit": "s", "baseline": round(base, 2),
         "ratio": round(best / base, 2), "target": "< 3 s"},
    ]


if __name__ == "__main__":  # pragma: no cover
    for row in run(quick="--quick" in sys.argv):
        print(row)
