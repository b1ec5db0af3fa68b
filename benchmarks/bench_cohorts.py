"""rk.cohorts benchmarks: summary and compare of a two-semester generated dataset.

``run(quick)`` returns rows ``{name, value, unit, baseline, ratio, target}``. Full size: 20,000
runs of ~100 events (~2,000,000 events) over two semesters (``generate_cohorts``, with drift
in tool mix, error rate and cache eviction). Timed: ``rk.cohorts(...)`` (labels and per-run
measures) + ``.summary()`` + ``.compare(a, b)`` (2,000 bootstrap replicates, paired analysis
included); target under 30 s. Baseline: the naive pandas way -- ``events_df()`` then a
``groupby(run).apply`` computing each run's measures in Python, a ``groupby(cohort)`` for the
summary, and a bootstrap loop that resamples runs with ``DataFrame.sample`` per replicate.
The baseline's per-run apply and its bootstrap loop run on a sample (stated in the row name)
and are extrapolated linearly to the full size; its ``events_df()`` is measured in full.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import pandas as pd

from benchmarks._harness import interleave, tiny


def _naive_run(g: pd.DataFrame) -> pd.Series:
    kind = g["kind"].astype(str)
    return pd.Series({
        "start": g["ts"].min(),
        "events": len(g),
        "tool_calls": int((kind == "tool_call").sum()),
        "tool_results": int((kind == "tool_result").sum()),
        "tool_errors": int(((kind == "tool_result") & g["is_error"]).sum()),
        "model_calls": int(g["finish"].notna().sum()),
        "tokens": int(g["input_tokens"].fillna(0).sum() + g["output_tokens"].fillna(0).sum()),
        "has_error": bool(g["is_error"].any()),
        "aborted": bool((kind == "turn_start").sum() > (kind == "turn_end").sum()),
    })


def _naive_label(ts: pd.Timestamp) -> str:
    term = "spring" if ts.month < 6 else "summer" if ts.month < 9 else "fall"
    return f"{ts.year}-{term}"


def _baseline(log: Any, sample_runs: int, n_boot_sample: int, n_runs: int,
              n_boot: int) -> float:
    t0 = time.perf_counter()
    ev = log.events_df()
    t_df = time.perf_counter() - t0
    ids = ev["run_id"].drop_duplicates()
    step = max(1, len(ids) // max(sample_runs, 1))
    keep = ev["run_id"].isin(ids.iloc[::step].iloc[:sample_runs])  # spread over both terms
    sub = ev[keep]
    t0 = time.perf_counter()
    per_run = sub.groupby(["tenant_id", "run_id"], observed=True).apply(_naive_run)
    per_run["cohort"] = per_run["start"].map(_naive_label)
    per_run.drop(columns=["start"]).groupby("cohort").agg(["sum", "mean"])
    t_apply = (time.perf_counter() - t0) * n_runs / max(sample_runs, 1)
    cohorts = sorted(per_run["cohort"].unique())
    a = per_run[per_run["cohort"] == cohorts[0]]
    b = per_run[per_run["cohort"] == cohorts[-1]]
    cols = ["events", "tool_calls", "model_calls", "tokens", "has_error", "aborted"]
    t0 = time.perf_counter()
    for i in range(n_boot_sample):
        ra = a.sample(len(a), replace=True, random_state=i)[cols].astype(float).mean()
        rb = b.sample(len(b), replace=True, random_state=i)[cols].astype(float).mean()
        _ = rb - ra
    t_boot = (time.perf_counter() - t0) * (n_boot / n_boot_sample) * (n_runs / max(
        sample_runs, 1))
    return t_df + t_apply + t_boot


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Run the cohorts benchmark; one row per measurement."""
    import replaykit as rk
    from replaykit.datasets import generate_cohorts

    n_runs = tiny(2_000) if quick else 20_000
    t0 = time.perf_counter()
    data = generate_cohorts(runs=n_runs, events_per_run=100, error_rate=[0.04, 0.07],
                            cache_eviction=[0.4, 0.05],
                            tool_mix=[None, {"bash": 3, "grep": 2, "read_file": 2}], seed=0)
    t_gen = time.perf_counter() - t0
    n_events = len(data.log)
    t_sum: list[float] = []
    t_cmp: list[float] = []

    def both() -> Any:  # the whole path; its two parts timed inside (fresh Cohorts each run)
        t0 = time.perf_counter()
        cs = rk.cohorts(data.log, by="semester", cache=data.cache)
        s = cs.summary()
        t1 = time.perf_counter()
        c = cs.compare("2025-fall", "2026-spring", n_boot=2000, seed=0)
        t_sum.append(t1 - t0)
        t_cmp.append(time.perf_counter() - t1)
        return s, c

    res = interleave({"both": both}, repeat=2, warmup=False, keep_value=True)  # best of 2
    s, c = res["both"].value
    assert int(s["runs"].sum()) == n_runs and int(s["events"].sum()) == n_events
    assert (c["analysis"] == "paired").any()
    best = res["both"].best_s

    sample = 500 if quick else 1_000
    base = _baseline(data.log, sample, 20, n_runs, 2000)
    return [
        {"name": f"cohorts summary+compare, {n_runs:,} runs / {n_events:,} events (baseline: "
                 f"pandas groupby-apply + bootstrap loop, {sample:,} runs and 20 replicates "
                 "extrapolated)",
         "value": round(best, 3), "unit": "s", "baseline": round(base, 2),
         "ratio": round(base / best, 1), "target": "< 30 s (full size)"},
        {"name": "cohorts: rk.cohorts + summary() alone", "value": round(min(t_sum), 3),
         "unit": "s", "baseline": None, "ratio": None, "target": "-"},
        {"name": "cohorts: compare() alone (2,000 replicates, paired included)",
         "value": round(min(t_cmp), 3), "unit": "s", "baseline": None, "ratio": None,
         "target": "-"},
        {"name": "cohorts: generate_cohorts (not part of the target)",
         "value": round(t_gen, 3), "unit": "s", "baseline": None, "ratio": None,
         "target": "-"},
    ]


if __name__ == "__main__":  # pragma: no cover
    for row in run(quick="--quick" in sys.argv):
        print(row)
