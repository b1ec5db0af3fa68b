"""Fold / replay benchmarks: rk.fold against polars, DuckDB and a plain dict loop, the scalar
reducer, peak memory, seek latency.

``rk.fold`` computes the ``state_hash`` column on first read (``state_hash()``, ``steps_df()``,
``final()``): the ``rk.fold`` row folds only, like the peers (which compute no hash); the
``rk.fold + state_hash()`` row adds the full hash column, ``steps_df()`` includes it, and one
row measures the ``state_hash=False`` opt-out. The synthetic rates and the peak-RSS child read
``state_hash()``, so they include it.

**Peers** (issue 18), on a pleach JSONL file read once with ``rk.read_pleach`` (data the suite
did not fold-generate for itself: the loader's canonical table, 2,000,000 events / 20,000
runs in the full run, ``bench-data/pleach_2000000.jsonl``; ``--quick``: 100,000 events):

* ``rk.fold(log, rk.agent())``, ``rk.fold(...).state_hash()`` and ``rk.fold(...).steps_df()``;
* polars, the same columns as ``steps_df()`` (minus ``state_hash``) with window expressions
  (``cum_sum().over(run)``, ``forward_fill().over(run)``); the keyed collections'
  effective add/remove (an add of a present key, a remove of an absent one, change nothing)
  are found by one sort of the collection's rows by (run, key) -- ``shift().over(run, key)``
  is 15-20x slower in polars on this data. A second polars contender computes only the
  counters and last-values (no keyed columns): the cheapest thing an analyst would call
  "the same counters";
* DuckDB, the same columns with SQL window functions (``SUM(..) OVER``,
  ``LAST_VALUE(.. IGNORE NULLS) OVER``), materialised as Arrow in row order;
* a plain Python dict reducer keeping five counters per run (what a user writes by hand).

The polars/DuckDB frames are built from the table outside the timer (zero-copy Arrow), so
they get their native input for free. Before timing, every peer's columns are checked equal
to ``steps_df()`` (and the dict's counters to ``final()``) on the first runs of the same log.
All contenders run interleaved in one process, best of N (``benchmarks._harness``).

``run(quick)`` returns rows ``{name, value, unit, baseline, ratio, target}``. The synthetic
part (scalar reducer, peak RSS, seek) uses ``replaykit.fold.synth`` at 2,000,000 events /
20,000 runs (a 1,000,000-event run for seeking); ``quick=True`` a tenth of that.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._harness import interleave, row, tiny

SCALAR_SAMPLE = 100_000  # events the scalar reducer folds to measure its rate
REPEAT = 3
RUN = ["tenant_id", "run_id"]
#: agent()'s keyed collections: name -> (kind that adds, kind that removes); key ``ref_id``
COLLECTIONS = {"open_tool_calls": ("tool_call", "tool_result"),
               "pending_approvals": ("approval_request", "approval_decision"),
               "active_subagents": ("subagent_start", "subagent_end")}
PEER_COLUMNS = ["tenant_id", "run_id", "seq", "type", "kind", "turn", "step", "ref_id",
                "tool_name", "is_error", "finish", "input_tokens", "output_tokens"]
DICT_COUNTERS = ("tool_calls", "model_calls", "input_tokens", "output_tokens", "errors")


# ---------------------------------------------------------------------------- the peers
def polars_frame(table: Any) -> Any:
    """The columns the peers read, as a polars DataFrame (zero-copy from Arrow)."""
    import polars as pl

    return pl.from_arrow(table.select(PEER_COLUMNS))


def _polars_collection(df: Any, name: str, add: str, rem: str) -> Any:
    """Per-row ``ea``/``er`` (effective add / remove) of one keyed collection, as a frame
    of the collection's rows (``i``: row index): one sort by (run, key, row)."""
    import polars as pl

    kind = pl.col("kind")
    ops = (df.filter(((kind == add) | (kind == rem)) & pl.col("ref_id").is_not_null())
           .select("i", *RUN, "ref_id", (kind == add).alias("is_add"))
           .sort([*RUN, "ref_id", "i"]))
    same = ((pl.col("ref_id") == pl.col("ref_id").shift(1))
            & (pl.col("run_id") == pl.col("run_id").shift(1))
            & (pl.col("tenant_id") == pl.col("tenant_id").shift(1)))
    prev = (same & pl.col("is_add").shift(1)).fill_null(False)
    return ops.select("i", (pl.col("is_add") & ~prev).alias(f"_{name}_ea"),
                      (~pl.col("is_add") & prev).alias(f"_{name}_er"))


def polars_counters(df: Any) -> Any:
    """polars: only agent()'s counters and last-values (no keyed columns)."""
    import polars as pl

    def cum(e: Any) -> Any:
        return e.cast(pl.Int64).cum_sum().over(RUN)

    call = pl.col("kind") == "tool_call"
    return df.select(
        *RUN, "seq",
        pl.col("turn").forward_fill().over(RUN),
        pl.col("step").forward_fill().over(RUN),
        cum(pl.col("finish").is_not_null()).alias("model_calls"),
        cum(call).alias("tool_calls"),
        pl.when(call).then(pl.col("tool_name")).forward_fill().over(RUN).alias("last_tool"),
        pl.col("input_tokens").fill_null(0).cum_sum().over(RUN),
        pl.col("output_tokens").fill_null(0).cum_sum().over(RUN),
        cum(pl.col("is_error")).alias("errors"),
        pl.col("finish").forward_fill().over(RUN).alias("last_finish"),
    )


def polars_fold(df: Any) -> Any:
    """polars: every column of ``rk.fold(log, rk.agent()).steps_df()`` but ``state_hash``."""
    import polars as pl

    df = df.with_row_index("i")
    for name, (add, rem) in COLLECTIONS.items():
        df = df.join(_polars_collection(df, name, add, rem), on="i", how="left")

    def cum(e: Any) -> Any:
        return e.cast(pl.Int64).cum_sum().over(RUN)

    call = pl.col("kind") == "tool_call"
    coll = {}
    for name in COLLECTIONS:
        ea, er = pl.col(f"_{name}_ea").fill_null(False), pl.col(f"_{name}_er").fill_null(False)
        coll[name] = [
            (ea.cast(pl.Int64) - er.cast(pl.Int64)).cum_sum().over(RUN).alias(f"{name}_size"),
            pl.when(ea).then(pl.col("ref_id")).alias(f"{name}_added"),
            pl.when(er).then(pl.col("ref_id")).alias(f"{name}_removed"),
        ]
    return df.select(
        *RUN, "seq", "type", "kind",
        pl.col("turn").forward_fill().over(RUN),
        pl.col("step").forward_fill().over(RUN),
        cum(pl.col("finish").is_not_null()).alias("model_calls"),
        cum(call).alias("tool_calls"),
        pl.when(call).then(pl.col("tool_name")).alias("tool_calls_by_tool_key"),
        *coll["open_tool_calls"],
        pl.when(call).then(pl.col("tool_name")).forward_fill().over(RUN).alias("last_tool"),
        pl.col("input_tokens").fill_null(0).cum_sum().over(RUN),
        pl.col("output_tokens").fill_null(0).cum_sum().over(RUN),
        cum(pl.col("is_error")).alias("errors"),
        pl.col("finish").forward_fill().over(RUN).alias("last_finish"),
        *coll["pending_approvals"], *coll["active_subagents"],
    )


def _duckdb_sql() -> str:
    w = "OVER (PARTITION BY tenant_id, run_id ORDER BY seq ROWS UNBOUNDED PRECEDING)"
    ops, prev, eff = [], [], []
    for name, (add, rem) in COLLECTIONS.items():
        ops.append(f"CASE WHEN ref_id IS NOT NULL AND kind = '{add}' THEN 1 "
                   f"WHEN ref_id IS NOT NULL AND kind = '{rem}' THEN -1 END AS {name}_op")
        prev.append(f"LAST_VALUE({name}_op IGNORE NULLS) OVER (PARTITION BY tenant_id, "
                    f"run_id, ref_id ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND "
                    f"1 PRECEDING) = 1 AS {name}_prev")
    for name in COLLECTIONS:
        ea = f"({name}_op = 1 AND {name}_prev IS NOT TRUE)"
        er = f"({name}_op = -1 AND {name}_prev IS TRUE)"
        eff.append(f"CAST(SUM(CASE WHEN {ea} THEN 1 WHEN {er} THEN -1 ELSE 0 END) {w} "
                   f"AS BIGINT) AS {name}_size, CASE WHEN {ea} THEN ref_id END AS {name}_added, "
                   f"CASE WHEN {er} THEN ref_id END AS {name}_removed")
    return f"""
    WITH o AS (SELECT *, {', '.join(ops)} FROM t),
         p AS (SELECT *, {', '.join(prev)} FROM o)
    SELECT tenant_id, run_id, seq, type, kind,
      LAST_VALUE(turn IGNORE NULLS) {w} AS turn,
      LAST_VALUE(step IGNORE NULLS) {w} AS step,
      CAST(SUM(CASE WHEN finish IS NOT NULL THEN 1 ELSE 0 END) {w} AS BIGINT) AS model_calls,
      CAST(SUM(CASE WHEN kind = 'tool_call' THEN 1 ELSE 0 END) {w} AS BIGINT) AS tool_calls,
      CASE WHEN kind = 'tool_call' THEN tool_name END AS tool_calls_by_tool_key,
      {eff[0]},
      LAST_VALUE(CASE WHEN kind = 'tool_call' THEN tool_name END IGNORE NULLS) {w}
        AS last_tool,
      CAST(SUM(COALESCE(input_tokens, 0)) {w} AS BIGINT) AS input_tokens,
      CAST(SUM(COALESCE(output_tokens, 0)) {w} AS BIGINT) AS output_tokens,
      CAST(SUM(CASE WHEN is_error THEN 1 ELSE 0 END) {w} AS BIGINT) AS errors,
      LAST_VALUE(finish IGNORE NULLS) {w} AS last_finish,
      {eff[1]}, {eff[2]}
    FROM p ORDER BY tenant_id, run_id, seq
    """


def duckdb_fold(table: Any) -> Any:
    """DuckDB: the same columns as :func:`polars_fold`, SQL windows, Arrow out, row order."""
    import duckdb

    con = duckdb.connect()
    con.register("t", table.select(PEER_COLUMNS))
    try:
        return con.sql(_duckdb_sql()).to_arrow_table()
    finally:
        con.close()


def dict_reducer(table: Any) -> dict[tuple[str, str], dict[str, int]]:
    """A plain Python loop over the rows keeping five counters per run (final values)."""
    cols = table.select(["tenant_id", "run_id", "kind", "finish", "input_tokens",
                         "output_tokens", "is_error"]).to_pydict()
    states: dict[tuple[str, str], dict[str, int]] = {}
    for t, r, kind, finish, tin, tout, err in zip(
            cols["tenant_id"], cols["run_id"], cols["kind"], cols["finish"],
            cols["input_tokens"], cols["output_tokens"], cols["is_error"], strict=True):
        s = states.get((t, r))
        if s is None:
            s = states[(t, r)] = dict.fromkeys(DICT_COUNTERS, 0)
        if kind == "tool_call":
            s["tool_calls"] += 1
        if finish is not None:
            s["model_calls"] += 1
        if tin:
            s["input_tokens"] += tin
        if tout:
            s["output_tokens"] += tout
        if err:
            s["errors"] += 1
    return states


def _plain(values: list[Any]) -> list[Any]:
    import pandas as pd

    out: list[Any] = []
    for v in values:
        if v is None or v is pd.NA or (isinstance(v, float) and v != v):
            out.append(None)
        elif isinstance(v, (np.integer, int)) and not isinstance(v, bool):
            out.append(int(v))
        else:
            out.append(str(v) if not isinstance(v, (bool, np.bool_)) else bool(v))
    return out


def check_peers(log: Any) -> int:
    """Assert polars, DuckDB and the dict reducer compute what rk.fold does, on ``log``.

    Returns the number of rows compared. Raises AssertionError naming the column.
    """
    import replaykit as rk

    sf = rk.fold(log, rk.agent())
    want = sf.steps_df().drop(columns=["state_hash"])
    cols = list(want.columns)
    got_pl = polars_fold(polars_frame(log.table))
    got_dd = duckdb_fold(log.table)
    assert list(got_pl.columns) == cols, (list(got_pl.columns), cols)
    assert got_dd.column_names == cols, (got_dd.column_names, cols)
    for c in cols:
        w = _plain(want[c].astype(object).tolist())
        assert _plain(got_pl[c].to_list()) == w, f"polars column {c!r} differs"
        assert _plain(got_dd.column(c).to_pylist()) == w, f"DuckDB column {c!r} differs"
    counters = polars_counters(polars_frame(log.table))
    for c in counters.columns:
        assert _plain(counters[c].to_list()) == _plain(want[c].astype(object).tolist()), c
    fin = sf.final(with_state=False)
    d = dict_reducer(log.table)
    for t, r, *vals in zip(fin["tenant_id"].astype(str), fin["run_id"].astype(str),
                           *(fin[c] for c in DICT_COUNTERS), strict=True):
        assert [d[(t, r)][c] for c in DICT_COUNTERS] == [int(v) for v in vals], (t, r)
    assert len(d) == len(fin)
    return len(want)


def _pleach_path(events: int) -> Path:
    from replaykit.datasets import generate_pleach

    data = Path.cwd() / "bench-data"
    data.mkdir(exist_ok=True)
    path = data / f"pleach_{events}.jsonl"  # the loader benchmark's file, same seed
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        generate_pleach(tmp, events=events, runs=max(1, events // 100), seed=1)
        tmp.rename(path)
    return path


def peers(quick: bool = False, repeat: int = REPEAT) -> list[dict[str, Any]]:
    """rk.fold / steps_df against polars, DuckDB and the dict reducer on a pleach log."""
    import replaykit as rk

    events = tiny(100_000) if quick else 2_000_000  # quick: the loader benchmark's file
    path = _pleach_path(events)
    log = rk.read_pleach(path, progress=False)  # the only large log alive in this step
    n, n_runs = len(log), log.table.column("run_id").combine_chunks().dictionary.__len__()
    first = log.table.slice(0, 30_000)
    checked = check_peers(rk.EventLog(first, sort=False))
    df = polars_frame(log.table)
    table = log.table
    for warm in (lambda: rk.fold(log, rk.agent()).steps_df(), lambda: polars_fold(df),
                 lambda: polars_counters(df)):
        warm()  # the fast contenders' first calls (imports, caches); the slow ones need none
    load0 = os.getloadavg()
    res = interleave({
        "rk.fold": lambda: rk.fold(log, rk.agent()),
        "rk.fold + state_hash()": lambda: rk.fold(log, rk.agent()).state_hash(),
        "rk.fold state_hash=False": lambda: rk.fold(log, rk.agent(), state_hash=False),
        "rk.fold + steps_df": lambda: rk.fold(log, rk.agent()).steps_df(),
        "polars same columns": lambda: polars_fold(df),
        "polars counters only": lambda: polars_counters(df),
        "DuckDB same columns": lambda: duckdb_fold(table),
        "dict reducer": lambda: dict_reducer(table),
    }, repeat=repeat, warmup=False)
    load1 = os.getloadavg()
    for r in res.values():
        print("  " + r.summary(), flush=True)
    size = f"{n:,} pleach events / {n_runs:,} runs"
    note = (f"load average {load0[0]:.1f}-{load1[0]:.1f}; peers checked equal on the first "
            f"{checked:,} rows")
    fold, steps = res["rk.fold"], res["rk.fold + steps_df"]
    pl_same, pl_cnt = res["polars same columns"], res["polars counters only"]
    return [
        row(f"rk.fold(agent()) vs polars window expressions, same columns ({size})",
            fold, pl_same, ratio="contender/baseline",
            target=f"<= 1.0 (fold time / polars time; state_hash computed on first read); "
                   f"{note}"),
        row(f"rk.fold(agent()).state_hash() vs polars same columns ({size})",
            res["rk.fold + state_hash()"], pl_same, ratio="contender/baseline",
            target="informational: fold plus the full state_hash column (polars: no hash)"),
        row(f"rk.fold(agent()) vs polars, counters and last-values only ({size})",
            fold, pl_cnt, ratio="contender/baseline",
            target="informational: polars computes no keyed columns and no state_hash"),
        row(f"rk.fold(agent(), state_hash=False) vs polars same columns ({size})",
            res["rk.fold state_hash=False"], pl_same, ratio="contender/baseline",
            target="informational: like for like (no hash on either side)"),
        row(f"rk.fold(agent()).steps_df() vs polars same columns ({size})",
            steps, pl_same, ratio="contender/baseline",
            target="<= 1.5 (steps_df: fold + a pandas DataFrame; polars: a polars frame)"),
        row(f"rk.fold(agent()) vs DuckDB window functions, same columns ({size})",
            fold, res["DuckDB same columns"], ratio="contender/baseline",
            target="informational (fold time / DuckDB time)"),
        row(f"rk.fold(agent()) vs a plain Python dict reducer, 5 counters ({size})",
            fold, res["dict reducer"], ratio="baseline/contender",
            target="informational: speed-up over the hand-written loop"),
    ]


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
assert len(frame) == len(log) and len(frame.state_hash()) == len(log)
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
    import replaykit as rk
    from replaykit.fold.synth import synthetic_log

    rows = peers(quick)  # the pleach log is dropped before the synthetic one is built
    n_events, n_runs = tiny((200_000, 2_000)) if quick else (2_000_000, 20_000)
    log = synthetic_log(n_events, n_runs, seed=1)
    res = interleave({"hash": lambda: rk.fold(log, rk.agent()).state_hash(),
                      "nohash": lambda: rk.fold(log, rk.agent(), state_hash=False)},
                     repeat=REPEAT)
    fold_s, nohash_s = res["hash"].best_s, res["nohash"].best_s
    fold_rate, nohash_rate = len(log) / fold_s, len(log) / nohash_s
    scalar_rate = _scalar_rate(log)
    rss = _peak_rss(log)
    table_mb, peak_mb = rss["nbytes"] / 1e6, rss["peak"] / 1e6
    data_mb = (rss["peak"] - rss["base"]) / 1e6  # above the interpreter + imports
    seek_ms, refold_ms = _seek(tiny(100_000) if quick else 1_000_000)
    size = f"{n_events:,} events / {n_runs:,} runs"
    best = f"best of {REPEAT}, interleaved with the opt-out"
    return rows + [
        {"name": f"fold agent() incl. state_hash events/s ({size}; {best})",
         "value": round(fold_rate),
         "unit": "events/s", "baseline": round(scalar_rate),
         "ratio": round(fold_rate / scalar_rate, 1),
         "target": ">= 5,000,000 events/s and >= 20x the scalar reducer"},
        {"name": "scalar reference reducer events/s (agent(); one run of "
                 f"{SCALAR_SAMPLE:,} events)", "value": round(scalar_rate),
         "unit": "events/s", "baseline": None, "ratio": None, "target": "reference only"},
        {"name": f"fold agent() peak RSS, whole process ({size})", "value": round(peak_mb, 1),
         "unit": "MB", "baseline": round(table_mb, 1), "ratio": round(peak_mb / table_mb, 2),
         "target": "< 3x the input table's in-memory size"},
        {"name": f"fold agent() peak RSS above interpreter+imports ({size})",
         "value": round(data_mb, 1), "unit": "MB", "baseline": round(table_mb, 1),
         "ratio": round(data_mb / table_mb, 2),
         "target": "< 3x the input table's in-memory size (table + fold)"},
        {"name": f"seek median of 200 ({'100,000' if quick else '1,000,000'}-event run)",
         "value": round(seek_ms, 4), "unit": "ms", "baseline": round(refold_ms, 2),
         "ratio": round(seek_ms / refold_ms, 5),
         "target": "< 1 ms (baseline: re-fold, median of 5)"},
        {"name": f"fold agent(), state_hash=False (opt-out) events/s ({size}; {best})",
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
    if "--peers" in sys.argv:  # python -m benchmarks.bench_fold --peers [--quick]
        for r in peers(quick="--quick" in sys.argv):
            print(r)
    else:
        for r in run(quick="--quick" in sys.argv):
            print(r)
