"""Per-run access and summaries (issue 18) against polars and DuckDB, in the same process.

``run(quick)`` returns rows ``{name, value, unit, baseline, ratio, target}``. Input: the
pleach JSONL ``$REPLAYKIT_BENCH_PLEACH`` (default ``/work/bench-shared/pleach_2000000.jsonl``
when it exists, else a generated 2,000,000-event file in ``bench-data/``; ``--quick``:
a generated 20,000-event file), read once with ``rk.read_pleach``. Every figure pairs a
replaykit call with a peer computing the same columns from the same Arrow table (polars
from ``pl.from_arrow``, DuckDB scanning the table in place, results as pandas frames like
replaykit's); the peers' results are checked equal to replaykit's on a small log first.
Contenders run interleaved (A B, A B, ...), best of N, wall and CPU time; the ratio is
replaykit's best wall time over the peer's.

* ``log.run(r)`` on a fresh log for 500 random runs (the first call builds the run index and
  is reported apart) vs a polars filter on (tenant_id, run_id);
* ``runs_df`` (on a fresh log: index build included), ``calls_df``, ``tools_df``,
  ``turns_df`` vs the DuckDB SQL below;
* ``_repr_html_`` on a fresh log (target < 100 ms);
* a walk over every run with ``iter_runs()`` and each run's three grain tables (target
  <= 30 s), with the per-run way (``log.run`` + grain tables per run, 100 runs timed and
  extrapolated) as the reference;
* ``replaykit summary FILE`` as a whole process vs a DuckDB process reading the file and
  grouping by run (full size only: each reads the whole file).

The SQL reads payload fields with ``json_extract_string`` at the paths replaykit tries
(``replaykit.eventlog.grain.FIELD_PATHS``); on payloads where a path holds an object instead of a
scalar the two differ (replaykit gives null), which the generated data does not have.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from benchmarks._harness import tiny

SHARED = Path("/work/bench-shared/pleach_2000000.jsonl")


def _interleaved(contenders: dict[str, Callable[[], Any]], repeat: int
                 ) -> dict[str, dict[str, float]]:
    """Best wall and CPU seconds of each contender over ``repeat`` interleaved rounds."""
    best = {name: {"wall": float("inf"), "cpu": float("inf")} for name in contenders}
    for _ in range(repeat):
        for name, fn in contenders.items():
            w0, c0 = time.perf_counter(), time.process_time()
            fn()
            w, c = time.perf_counter() - w0, time.process_time() - c0
            best[name]["wall"] = min(best[name]["wall"], w)
            best[name]["cpu"] = min(best[name]["cpu"], c)
    return best


# ----------------------------------------------------------------------------- SQL peers
def _paths(name: str) -> str:
    from replaykit.eventlog.grain import FIELD_PATHS

    return ", ".join(f"json_extract_string(payload, '$.{p}')" for p in FIELD_PATHS[name])


RUNS_SQL = """
select coalesce(s.tenant_id, h.tenant_id) as tenant_id, coalesce(s.run_id, h.run_id) as run_id,
       coalesce(s.parent, h.parent_run_id) as parent_run_id,
       coalesce(s.events, 0) as events, coalesce(s.first_ts, h.created_at) as first_ts,
       coalesce(s.last_ts, h.created_at) as last_ts, coalesce(s.turns, 0) as turns,
       coalesce(s.model_calls, 0) as model_calls, coalesce(s.tool_calls, 0) as tool_calls,
       coalesce(s.errors, 0) as errors, h.format, h.source, h.created_at
from (select tenant_id::varchar as tenant_id, run_id::varchar as run_id,
             first(parent_run_id::varchar order by seq)
                 filter (where parent_run_id is not null) as parent,
             count(*) as events, min(ts) as first_ts, max(ts) as last_ts,
             count(distinct turn) as turns, count(finish) as model_calls,
             count(*) filter (where kind = 'tool_call') as tool_calls,
             count(*) filter (where is_error) as errors
      from events group by all) s
full outer join (select distinct on (tenant_id, run_id) * from runs) h
  on s.tenant_id = h.tenant_id and s.run_id = h.run_id
order by 1, 2
"""


def _turns_sql() -> str:
    return f"""
with sub as (select tenant_id::varchar as t, run_id::varchar as r, turn, seq, step,
                    kind::varchar as kind, is_error, payload
             from events where turn is not null),
agg as (select t, r, turn, min(seq) filter (where kind = 'turn_start') as start_s,
               min(seq) as min_seq, min(seq) filter (where kind = 'turn_end') as end_seq,
               count(distinct step) as steps,
               count(*) filter (where kind = 'tool_call') as tool_calls
        from sub group by all),
ends as (select t, r, turn,
                first(coalesce({_paths('turn_end_reason')},
                               case when is_error then 'error' else 'completed' end)
                      order by seq) as end_reason,
                first(coalesce({_paths('turn_error_code')}) order by seq) as error_code
         from sub where kind = 'turn_end' group by all)
select agg.t as tenant_id, agg.r as run_id, agg.turn,
       coalesce(start_s, min_seq) as start_seq, end_seq, end_reason, error_code, steps,
       tool_calls
from agg left join ends on agg.t = ends.t and agg.r = ends.r and agg.turn = ends.turn
order by 1, 2, 3
"""


def _tools_sql() -> str:
    return f"""
with c as (select tenant_id::varchar as tenant_id, run_id::varchar as run_id, turn, step,
                  ref_id as call_id, tool_name::varchar as tool_name, args_hash,
                  text as arguments, seq as call_seq
           from events where kind = 'tool_call'),
r as (select tenant_id::varchar as tenant_id, run_id::varchar as run_id, ref_id as call_id,
             min(seq) as result_seq, first(text order by seq) as result_text,
             first(is_error order by seq) as is_error,
             first(tool_name::varchar order by seq) as result_tool,
             first(case when is_error then coalesce({_paths('tool_error_name')}) end
                   order by seq) as error_name,
             first(case when is_error then coalesce({_paths('tool_error_code')}) end
                   order by seq) as error_code
      from events where kind = 'tool_result' and ref_id is not null group by all)
select c.tenant_id, c.run_id, c.turn, c.step, c.call_id,
       coalesce(c.tool_name, r.result_tool) as tool_name, c.args_hash, c.arguments,
       c.call_seq, r.result_seq, r.result_text, r.is_error, r.error_name, r.error_code,
       r.result_seq is not null as has_result
from c left join r
  on c.tenant_id = r.tenant_id and c.run_id = r.run_id and c.call_id = r.call_id
order by c.tenant_id, c.run_id, c.call_seq
"""


def _calls_sql() -> str:
    def tokens(name: str) -> str:
        from replaykit.eventlog.grain import FIELD_PATHS

        return ", ".join(f"try_cast(json_extract(payload, '$.{p}') as bigint)"
                         for p in FIELD_PATHS[name])

    return f"""
with m as (select tenant_id::varchar as t, run_id::varchar as r, ref_id, seq, turn, step,
                  kind::varchar as kind, chunk_type::varchar as ct, finish::varchar as finish,
                  is_error, input_tokens, output_tokens, text, payload
           from events
           where kind in ('model_request', 'model_chunk', 'model_response')
             and ref_id is not null),
agg as (
  select t, r, ref_id, min(seq) as first_seq, max(seq) as last_seq,
         first(turn order by seq) filter (where turn is not null) as turn,
         first(step order by seq) filter (where step is not null) as step,
         count(*) filter (where kind = 'model_chunk') as chunks,
         string_agg(coalesce(text, ''), '' order by seq)
             filter (where kind = 'model_chunk' and ct = 'text') as chunk_text,
         string_agg(coalesce(text, ''), '' order by seq)
             filter (where kind = 'model_chunk' and ct = 'reasoning') as reasoning,
         string_agg(coalesce(text, ''), '' order by seq)
             filter (where kind = 'model_response') as response_text,
         sum(input_tokens) as input_tokens, sum(output_tokens) as output_tokens,
         sum(coalesce({tokens('cache_read_tokens')}))
             filter (where input_tokens is not null or output_tokens is not null)
             as cache_read_tokens,
         sum(coalesce({tokens('reasoning_tokens')}))
             filter (where input_tokens is not null or output_tokens is not null)
             as reasoning_tokens,
         first(finish order by seq) filter (where finish is not null) as finish,
         first(coalesce({_paths('call_error_code')}) order by seq)
             filter (where finish is not null and is_error
                     and coalesce({_paths('call_error_code')}) is not null) as error_code
  from m group by all),
tools as (select tenant_id::varchar as t, run_id::varchar as r, seq
          from events where kind = 'tool_call'),
owned as (select agg.t, agg.r, agg.ref_id, count(*) as n
          from tools asof join agg on tools.t = agg.t and tools.r = agg.r
                                  and tools.seq > agg.last_seq
          group by all)
select agg.t as tenant_id, agg.r as run_id, agg.turn, agg.step,
       (row_number() over (partition by agg.t, agg.r, agg.turn, agg.step
                           order by agg.first_seq) - 1) as call_index,
       agg.ref_id, agg.first_seq, agg.last_seq, agg.chunks,
       coalesce(agg.chunk_text, agg.response_text) as text, agg.reasoning,
       coalesce(owned.n, 0) as tool_calls, agg.input_tokens, agg.output_tokens,
       agg.cache_read_tokens, agg.reasoning_tokens, agg.finish, agg.error_code,
       agg.finish is not null as finished
from agg left join owned
  on agg.t = owned.t and agg.r = owned.r and agg.ref_id = owned.ref_id
order by agg.t, agg.r, agg.first_seq
"""


def _duckdb(log: Any) -> tuple[Any, dict[str, Callable[[], pd.DataFrame]]]:
    import duckdb

    con = duckdb.connect()
    con.register("events", log.table)
    con.register("runs", log.runs)
    sql = {"runs_df": RUNS_SQL, "turns_df": _turns_sql(), "tools_df": _tools_sql(),
           "calls_df": _calls_sql()}
    return con, {name: (lambda q=q: con.execute(q).df()) for name, q in sql.items()}


def _norm(v: Any) -> Any:
    if v is None or (not isinstance(v, str) and pd.isna(v)):
        return None
    if isinstance(v, pd.Timestamp):
        return v.tz_convert("UTC").value // 1000 if v.tzinfo else v.value // 1000
    if hasattr(v, "item"):
        return v.item()
    return v


def _check_same(ours: pd.DataFrame, peer: pd.DataFrame, what: str) -> None:
    """The peer computes the same rows and columns (values compared as Python objects)."""
    cols = [c for c in peer.columns]
    missing = [c for c in cols if c not in ours.columns]
    assert not missing, f"{what}: replaykit has no column {missing}"
    assert len(ours) == len(peer), f"{what}: {len(ours)} rows vs {len(peer)}"
    for c in cols:
        a = [_norm(v) for v in ours[c].tolist()]
        b = [_norm(v) for v in peer[c].tolist()]
        if a != b:
            i = next(i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y)
            raise AssertionError(f"{what}: column {c!r} differs at row {i}: {a[i]!r} vs "
                                 f"{b[i]!r}")


def _check_peers(small: Any) -> None:
    con, peers = _duckdb(small)
    try:
        for name, peer in peers.items():
            _check_same(getattr(small, name)(), peer(), name)
    finally:
        con.close()


# ----------------------------------------------------------------------------- figures
def _input(quick: bool) -> Path:
    from replaykit.datasets import generate_pleach

    env = os.environ.get("REPLAYKIT_BENCH_PLEACH")
    if env:
        return Path(env)
    if not quick and SHARED.exists():
        return SHARED
    events = tiny(20_000) if quick else 2_000_000
    out = Path("bench-data") / f"access_pleach_{events}"
    if not out.exists():
        generate_pleach(out, events=events, runs=max(events // 100, 1), seed=18)
    return out


def _row(name: str, ours: dict[str, float], peer: dict[str, float] | None, target: str,
         unit: str = "s", scale: float = 1.0) -> dict[str, Any]:
    value = ours["wall"] * scale
    base = None if peer is None else peer["wall"] * scale
    return {"name": name, "value": round(value, 6), "unit": unit,
            "baseline": None if base is None else round(base, 6),
            "ratio": None if not base else round(value / base, 3), "target": target,
            "cpu": round(ours["cpu"] * scale, 6),
            "baseline_cpu": None if peer is None else round(peer["cpu"] * scale, 6)}


def _bench_run(log: Any, pl_df: Any, repeat: int, rows: list[dict[str, Any]]) -> None:
    import polars as pl

    idx = log._run_index()
    rng = random.Random(18)
    keys = [(idx.tenants[i], idx.run_ids[i]) for i in rng.sample(range(len(idx)),
                                                                 min(500, len(idx)))]
    fresh = log._replace(log.table)  # no run index yet
    w0, c0 = time.perf_counter(), time.process_time()
    fresh.run(keys[0][1], tenant_id=keys[0][0])
    first = {"wall": time.perf_counter() - w0, "cpu": time.process_time() - c0}

    def ours() -> None:
        for t, r in keys:
            fresh.run(r, tenant_id=t)

    def polars() -> None:
        for t, r in keys:
            pl_df.filter((pl.col("tenant_id") == t) & (pl.col("run_id") == r))

    best = _interleaved({"ours": ours, "polars": polars}, repeat)
    print(f"log.run: {best}", flush=True)
    n = len(keys)
    rows.append(_row(f"log.run(r), mean of {n} random runs (baseline: polars filter on "
                     "tenant_id, run_id)", best["ours"], best["polars"], "<= 1 ms",
                     unit="ms", scale=1000 / n))
    rows.append(_row("log.run(r), first call on a fresh log (builds the run index)", first,
                     None, "informational", unit="ms", scale=1000))


def _bench_summaries(log: Any, repeat: int, rows: list[dict[str, Any]]) -> None:
    con, peers = _duckdb(log)
    try:
        for name in ("runs_df", "calls_df", "tools_df", "turns_df"):
            if name == "runs_df":
                def ours() -> None:
                    log._replace(log.table).runs_df()  # fresh: run index built each time
            else:
                def ours(name: str = name) -> None:
                    getattr(log, name)()
            best = _interleaved({"ours": ours, "duckdb": peers[name]}, repeat)
            print(f"{name}: {best}", flush=True)
            rows.append(_row(f"{name}() vs the DuckDB SQL computing the same columns"
                             + (" (fresh log)" if name == "runs_df" else ""),
                             best["ours"], best["duckdb"], "<= 2x DuckDB"))
    finally:
        con.close()

    def html() -> None:
        log._replace(log.table)._repr_html_()

    best = _interleaved({"ours": html}, repeat)
    rows.append(_row("_repr_html_ on a fresh log", best["ours"], None, "< 100 ms", unit="ms",
                     scale=1000))


def _bench_walk(log: Any, rows: list[dict[str, Any]]) -> None:
    n = log.num_runs
    w0, c0 = time.perf_counter(), time.process_time()
    for _, view in log.iter_runs():
        view.calls_df()
        view.tools_df()
        view.turns_df()
    walk = {"wall": time.perf_counter() - w0, "cpu": time.process_time() - c0}
    idx = log._run_index()
    sample = list(range(0, n, max(1, n // 100)))[:100]
    w0, c0 = time.perf_counter(), time.process_time()
    for i in sample:
        one = log.run(idx.run_ids[i], tenant_id=idx.tenants[i])
        one.calls_df()
        one.tools_df()
        one.turns_df()
    scale = n / max(len(sample), 1)
    per_run = {"wall": (time.perf_counter() - w0) * scale,
               "cpu": (time.process_time() - c0) * scale}
    rows.append(_row(f"iter_runs() over {n:,} runs with calls_df, tools_df, turns_df each "
                     f"(baseline: log.run + the three tables per run, {len(sample)} runs "
                     "extrapolated)", walk, per_run, "<= 30 s"))


def _bench_cli(path: Path, repeat: int, rows: list[dict[str, Any]]) -> None:
    duck = ("import duckdb, sys\n"
            "con = duckdb.connect()\n"
            "rows = con.execute(\"select tenant_id, chat_id, count(*) as events, "
            "min(created_at) as first_ts, max(created_at) as last_ts, "
            "count(*) filter (where event_type = 'tool.called') as tool_calls "
            "from read_json(?) group by all order by all\", [sys.argv[1]]).df()\n"
            "print(rows.head(50).to_string())\n")

    def run(cmd: list[str]) -> Callable[[], None]:
        def go() -> None:
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            assert proc.returncode == 0, proc.stderr[-2000:]
        return go

    cli = [sys.executable, "-m", "replaykit.cli", "summary", str(path), "--no-progress"]
    peer = [sys.executable, "-c", duck, str(path)]
    best = {name: {"wall": float("inf"), "cpu": float("inf")} for name in ("ours", "duckdb")}
    for _ in range(repeat):
        for name, fn in (("ours", run(cli)), ("duckdb", run(peer))):
            before = os.times()
            w0 = time.perf_counter()
            fn()
            after = os.times()
            cpu = (after.children_user - before.children_user
                   + after.children_system - before.children_system)
            best[name]["wall"] = min(best[name]["wall"], time.perf_counter() - w0)
            best[name]["cpu"] = min(best[name]["cpu"], cpu)
    rows.append(_row("replaykit summary FILE, whole process (baseline: a DuckDB process "
                     "reading the file, grouping by run)", best["ours"], best["duckdb"],
                     "<= 1.5x DuckDB"))
    # where the process's time goes: start-up (imports) ...
    imports = {name: {"wall": float("inf"), "cpu": float("inf")} for name in ("ours", "duckdb")}
    for _ in range(repeat):
        for name, code in (("ours", "import replaykit.cli"), ("duckdb", "import duckdb")):
            before, w0 = os.times(), time.perf_counter()
            run([sys.executable, "-c", code])()
            after = os.times()
            imports[name]["wall"] = min(imports[name]["wall"], time.perf_counter() - w0)
            imports[name]["cpu"] = min(imports[name]["cpu"], after.children_user
                                       - before.children_user + after.children_system
                                       - before.children_system)
    rows.append(_row("summary CLI start-up: python -c 'import replaykit.cli' (baseline: "
                     "'import duckdb')", imports["ours"], imports["duckdb"], "informational"))


def _bench_summary_work(log: Any, repeat: int, rows: list[dict[str, Any]]) -> None:
    """What ``replaykit summary`` does after the read: the runs table on Arrow and its first
    50 rows printed, the summary line; against the way it was (runs_df through pandas)."""
    import argparse
    import contextlib
    import io

    from replaykit.cli import _output as cli

    args = argparse.Namespace(limit=None, json=False, csv=False, all_columns=False)

    def work() -> None:
        fresh = log._replace(log.table)
        with contextlib.redirect_stdout(io.StringIO()):
            cli._emit_summary(fresh, args)
            fresh.summary()

    def through_pandas() -> None:
        fresh = log._replace(log.table)
        with contextlib.redirect_stdout(io.StringIO()):
            runs = fresh.runs_df()
            cli._emit_table(runs[[c for c in cli._summary_columns() if c in runs.columns]],
                            args, noun="runs")
            fresh.summary()

    best = _interleaved({"ours": work, "pandas": through_pandas}, repeat)
    rows.append(_row("summary CLI work after the read (the runs table of a fresh log on "
                     "Arrow, the 50-row table, the summary line) (baseline: runs_df and the "
                     "table through pandas, as before)", best["ours"], best["pandas"],
                     "informational"))


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Run the access benchmark; one row per measurement (see the module docstring)."""
    import polars as pl

    import replaykit as rk
    from replaykit.datasets import generate_pleach

    repeat = 2 if quick else 3
    rows: list[dict[str, Any]] = []
    small_dir = Path("bench-data") / "access_check"
    if not small_dir.exists():
        generate_pleach(small_dir, events=3_000, runs=30, seed=7)
    _check_peers(rk.read_pleach(small_dir, progress=False))
    path = _input(quick)
    load = os.getloadavg()
    log = rk.read_pleach(path, progress=False)
    pl_df = pl.from_arrow(log.table, rechunk=False)
    _bench_run(log, pl_df, repeat, rows)
    del pl_df
    _bench_summaries(log, repeat, rows)
    _bench_walk(log, rows)
    _bench_summary_work(log, repeat, rows)
    events = len(log)
    del log
    if not quick:
        _bench_cli(path, repeat, rows)
    after = os.getloadavg()
    for row in rows:
        row["name"] += f" [{events:,} events; load average {load[0]:.1f} -> {after[0]:.1f}]"
    return rows


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    for r in run(quick=quick):
        print(r)
