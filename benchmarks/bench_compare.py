"""rk.compare / rk.tool_distance_matrix benchmarks against pure-Python baselines.

``run(quick)`` returns rows ``{name, value, unit, baseline, ratio, target}``. Full size: compare
over 20,000 run pairs of ~50 events each (target < 5 s) and a 1000 x 1000 tool-distance matrix
(target < 0.5 s). The pure-Python baselines (the scalar definitions in
``replaykit.branch.metrics``) run on a sample in the same process; their time is extrapolated
linearly to the full size (stated in the row name).
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np
import pandas as pd

from benchmarks._harness import interleave, tiny

TOOLS = np.array(["read", "grep", "bash", "edit", "write", "list_dir", "fetch", "test"])


def _logs(n_runs: int, events: int, seed: int = 7) -> tuple[Any, Any, pd.DataFrame]:
    """A base log and a replay log (each replay a mutated copy of one base run)."""
    import replaykit as rk
    from replaykit.schema import events_table

    rng = np.random.default_rng(seed)
    n = n_runs * events
    run = np.repeat(np.arange(n_runs), events)
    seq = np.tile(np.arange(events), n_runs)
    is_tool = rng.random(n) < 0.4
    kind = np.where(is_tool, "tool_call", np.where(seq % 2 == 0, "model_request",
                                                   "model_response"))
    tool = np.where(is_tool, TOOLS[rng.integers(0, len(TOOLS), n)], None)
    args = np.where(is_tool, rng.integers(0, 50, n).astype(str), None)

    def build(run_ids: np.ndarray, tool_a: np.ndarray, args_a: np.ndarray,
              parent: np.ndarray | None) -> Any:
        cols = {"tenant_id": np.full(n, "bench"), "run_id": run_ids, "seq": seq,
                "type": kind, "kind": kind, "tool_name": tool_a, "args_hash": args_a,
                "payload": np.full(n, "{}"), "source": np.full(n, "bench:mem")}
        if parent is not None:
            cols["parent_run_id"] = parent
        return rk.EventLog(events_table(cols), sort=False)

    base_ids = np.char.add("b", run.astype(str))
    rep_ids = np.char.add("r", run.astype(str))
    mut = is_tool & (rng.random(n) < 0.05)
    tool_r = tool.copy()
    tool_r[mut] = TOOLS[rng.integers(0, len(TOOLS), int(mut.sum()))]
    args_r = args.copy()
    amut = is_tool & (rng.random(n) < 0.05)
    args_r[amut] = "x"
    base = build(base_ids, tool, args, None)
    rep = build(rep_ids, tool_r, args_r, base_ids)
    pairs = pd.DataFrame({"tenant_id": "bench", "base_run_id": np.char.add("b", np.arange(
        n_runs).astype(str)), "replay_run_id": np.char.add("r", np.arange(n_runs).astype(str))})
    return base, rep, pairs


def _python_compare(base: Any, rep: Any, pairs: pd.DataFrame, sample: int) -> float:
    """Seconds for all pairs with the scalar definitions (per-row Python): converting the
    logs to Python rows (measured in full) plus the per-pair work measured on ``sample``
    pairs and scaled to every pair."""
    from replaykit.branch import metrics as M

    sub = pairs.iloc[:sample]
    keep_b = set(sub["base_run_id"])
    keep_r = set(sub["replay_run_id"])
    t0 = time.perf_counter()
    bdf = base.table.select(["run_id", "kind", "tool_name", "args_hash"]).to_pylist()
    rdf = rep.table.select(["run_id", "kind", "tool_name", "args_hash"]).to_pylist()
    runs: dict[str, list[tuple]] = {}
    t_conv = time.perf_counter() - t0
    t0 = time.perf_counter()
    for r in bdf + rdf:
        if r["run_id"] in keep_b or r["run_id"] in keep_r:
            runs.setdefault(r["run_id"], []).append((r["kind"], r["tool_name"], r["args_hash"]))
    for b, r in zip(sub["base_run_id"], sub["replay_run_id"], strict=True):
        eb, er = runs[b], runs[r]
        tb = [e[1] for e in eb if e[0] == "tool_call"]
        tr = [e[1] for e in er if e[0] == "tool_call"]
        sb = [(e[1], e[2]) for e in eb if e[0] == "tool_call"]
        sr = [(e[1], e[2]) for e in er if e[0] == "tool_call"]
        M.first_divergence_step(eb, er)
        M.changed_descendants(eb, er)
        M.tool_sequence_distance(tb, tr)
        M.levenshtein(sb, sr)
        M.tool_argument_changed(sb, sr)
    return t_conv + (time.perf_counter() - t0) / sample * len(pairs)


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Run the compare benchmarks; one row per measurement."""
    import replaykit as rk
    from replaykit.branch.metrics import levenshtein

    n_pairs = tiny(2_000) if quick else 20_000
    base, rep, pairs = _logs(n_pairs, 50)
    rk.compare(base, rep, pairs.iloc[:100])  # warm-up
    res = interleave({"compare": lambda: rk.compare(base, rep, pairs)}, repeat=3,
                     warmup=False, keep_value=True)
    assert len(res["compare"].value) == n_pairs
    best = res["compare"].best_s
    py_total = _python_compare(base, rep, pairs, min(500, n_pairs))

    m = min(200, n_pairs) if quick else 1000
    sub = base.filter(run_ids=[f"b{i}" for i in range(m)])
    res = interleave({"matrix": lambda: rk.tool_distance_matrix(sub)}, repeat=3,
                     keep_value=True)
    mat, mt = res["matrix"].value, res["matrix"].walls
    assert mat.shape == (m, m)
    t = sub.table.to_pydict()
    per_run: dict[str, list[str]] = {}
    for r, k, tl in zip(t["run_id"], t["kind"], t["tool_name"], strict=True):
        if k == "tool_call":
            per_run.setdefault(r, []).append(tl)
    seqs = list(per_run.values())
    n_sample = 2_000
    rng = np.random.default_rng(1)
    ii = rng.integers(0, len(seqs), (n_sample, 2))
    t0 = time.perf_counter()
    for a, b in ii:
        levenshtein(seqs[a], seqs[b])
    py_matrix = (time.perf_counter() - t0) / n_sample * m * m
    return [
        {"name": f"rk.compare over {n_pairs:,} run pairs of 50 events (baseline: scalar "
                 "definitions, 500 pairs extrapolated)",
         "value": round(best, 3), "unit": "s", "baseline": round(py_total, 2),
         "ratio": round(py_total / best, 1), "target": "< 5 s (full size)"},
        {"name": f"rk.tool_distance_matrix {m}x{m} (baseline: pure-Python Levenshtein, "
                 f"{n_sample:,} pairs extrapolated)",
         "value": round(min(mt), 3), "unit": "s", "baseline": round(py_matrix, 2),
         "ratio": round(py_matrix / min(mt), 1), "target": "< 0.5 s (full size)"},
    ]


if __name__ == "__main__":  # pragma: no cover
    for row in run(quick="--quick" in sys.argv):
        print(row)
