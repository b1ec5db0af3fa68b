"""Second pass of an ingest: one tenant's new generation, range by range.

A tenant's part files hold disjoint run-id ranges (:func:`replaykit.engine.partitions` checks
it from the footers). The runs this ingest touches (new rows, rows of a changed source, a
``parent_run_id`` that a new ``subagent.spawned`` row changes) fall either inside an existing
file's range -- that file is *dirty*: read, merged with the staged rows of its range and
written again -- or in a gap between files: the staged rows of a gap are cut into ranges of
about ``target_rows`` (from the staged key counts) and each range is read from every staging
file with a Parquet filter on ``run_id`` (the staging files are sorted, so their statistics
skip the rest). Every other file is hard-linked into the new generation as it is.

Per range, whole runs are settled as one read of every source would have them
(:func:`settle`): duplicate (tenant, run, seq) keep the first row in source-path order (the
others are quarantined, reason ``duplicate_seq``, as :func:`replaykit.read_pleach` reports
them); pleach runs get ``turn`` carried forward over the whole run and ``parent_run_id`` from
every ``subagent.spawned`` row of the tenant.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..engine._parts import _cuts, _run_range
from ..eventlog.dataset import QUARANTINE_FILE, RUNS_FILE, read_partition_files
from ..eventlog.log import RUNS_SCHEMA, TENANT_KEY, EventLog
from ..io._common import Quarantine
from ..io.pleach._checks import _bad
from ..schema import EVENTS_SCHEMA, QUARANTINE_SCHEMA, _dictionary_rank
from ..tenancy import compact_dictionaries
from ._parse import SPAWNS_SCHEMA

KEYS_FILE = "_ingest_keys.parquet"  # run_id, source, rows: which source's rows each run holds
STATS_FILE = "_ingest_runstats.parquet"  # runs_df's computed columns + format, first source
HEADERS_FILE = "_ingest_headers.parquet"  # the readers' run headers (not pleach) + ingest_source
QUAR_FILE = "_ingest_quarantine.parquet"  # the tenant's quarantine + ingest_source
SPAWNS_FILE = "_ingest_spawns.parquet"  # subagent.spawned rows of the tenant's pleach runs

KEYS_SCHEMA = pa.schema([("run_id", pa.string()), ("source", pa.string()), ("rows", pa.int64())])
STATS_SCHEMA = pa.schema([
    ("tenant_id", pa.string()), ("run_id", pa.string()), ("parent_run_id", pa.string()),
    ("events", pa.int64()), ("first_ts", pa.timestamp("us", tz="UTC")),
    ("last_ts", pa.timestamp("us", tz="UTC")), ("turns", pa.int64()),
    ("model_calls", pa.int64()), ("tool_calls", pa.int64()), ("errors", pa.int64()),
    ("format", pa.string()), ("source", pa.string())])
HEADERS_SCHEMA = RUNS_SCHEMA.append(pa.field("ingest_source", pa.string()))
QUAR_SCHEMA = QUARANTINE_SCHEMA.append(pa.field("ingest_source", pa.string()))
_TURN_TYPES = ("turn.started", "turn.completed")


@dataclass
class TenantJob:
    """Everything the merge of one tenant needs."""

    tenant: str
    prev: Path | None  # the current generation (None: a new tenant)
    out: Path  # the new generation's folder
    staged: list[tuple[Path, str, str]]  # staging event files holding the tenant, run span
    mem: list[tuple[pa.Table, str, str]]  # staged events kept in memory, run span
    new_keys: pa.Table  # run_id, rows (this tenant's staged runs)
    new_quarantine: pa.Table  # QUAR_SCHEMA
    new_headers: pa.Table  # HEADERS_SCHEMA
    new_spawns: pa.Table  # SPAWNS_SCHEMA
    replaced_names: set[str]  # ``source`` strings of the sources being replaced
    replaced_keys: set[str]  # their manifest keys
    rank: dict[str, int]  # source path -> rank (duplicates: the lowest rank is kept)
    owner_of: Any  # source string -> manifest key
    next_part: int
    partition_events: int
    target_rows: int
    written: list[str] = field(default_factory=list)
    linked: list[str] = field(default_factory=list)


def _read_side(d: Path | None, name: str, schema: pa.Schema) -> pa.Table:
    if d is None or not (d / name).exists():
        return schema.empty_table()
    return pq.read_table(d / name).cast(schema)


def _parent_map(spawns: pa.Table) -> dict[str, str]:
    """child chat -> parent chat: the first spawn in (run, seq) order names it."""
    if not spawns.num_rows:
        return {}
    s = spawns.filter(pc.is_valid(spawns.column("child"))).sort_by(
        [("run_id", "ascending"), ("seq", "ascending")])
    out: dict[str, str] = {}
    for r, c in zip(s.column("run_id").to_pylist(), s.column("child").to_pylist(), strict=True):
        out.setdefault(c, r)
    return out


@dataclass
class TenantPlan:
    """What the merge of one tenant does: the ranges to write (``groups``: run-id range and the
    existing file it rewrites, or None for a gap), the files kept, the tenant's spawns."""

    files: list[tuple[str, str, Path]]  # existing part files: run range, path
    dirty: set[int]  # indexes into files: rewritten
    groups: list[tuple[str, str, Path | None]]  # (lo, hi, old file or None)
    spawns: pa.Table
    parents: dict[str, str]
    keys_old: pa.Table
    stats_old: pa.Table


@dataclass
class RangeContext:
    """What :func:`merge_range` needs (picklable: the Dask engine ships it to its workers)."""

    tenant: str
    parents: dict[str, str]
    replaced_names: set[str]
    rank: dict[str, int]
    partition_events: int


def plan_tenant(job: TenantJob) -> TenantPlan:
    """Which of the tenant's part files this ingest rewrites and which run ranges it writes
    (from the footers, the side tables and the staged key counts: no event is read)."""
    keys_old = _read_side(job.prev, KEYS_FILE, KEYS_SCHEMA)
    stats_old = _read_side(job.prev, STATS_FILE, STATS_SCHEMA)
    spawns_old = _read_side(job.prev, SPAWNS_FILE, SPAWNS_SCHEMA)
    replaced = pa.array(sorted(job.replaced_names), pa.string())
    spawns = pa.concat_tables([
        spawns_old.filter(pc.invert(pc.is_in(spawns_old.column("source"), replaced))),
        job.new_spawns])
    parents_old, parents = _parent_map(spawns_old), _parent_map(spawns)
    changed_parent = {c for c in parents_old.keys() | parents.keys()
                      if parents_old.get(c) != parents.get(c)}
    removed_runs = set(keys_old.filter(pc.is_in(keys_old.column("source"), replaced))
                       .column("run_id").to_pylist())
    new_runs = job.new_keys.column("run_id").to_pylist()
    affected = removed_runs | set(new_runs) | changed_parent
    # the existing files and their run ranges (footer statistics)
    files: list[tuple[str, str, Path]] = []
    if job.prev is not None:
        for f in sorted(job.prev.glob("part-*.parquet")):
            span = _run_range(str(f))
            files.append((span[0], span[1], f) if span else ("", "", f))
    files.sort(key=lambda x: x[0])
    lows = np.asarray([f[0] for f in files], dtype=object)
    highs = np.asarray([f[1] for f in files], dtype=object)
    dirty: set[int] = set()
    in_file: dict[str, int] = {}
    for r in affected:  # one lookup per affected run (runs, not events)
        i = int(np.searchsorted(lows, r, side="right")) - 1 if len(files) else -1
        if i >= 0 and r <= highs[i]:
            dirty.add(i)
            in_file[r] = i
    # gap ranges: staged runs outside every file, cut at about target_rows
    nk = job.new_keys.sort_by("run_id")
    gap_runs = [r for r in nk.column("run_id").to_pylist() if r not in in_file]
    gap_rows = dict(zip(nk.column("run_id").to_pylist(), nk.column("rows").to_pylist(),
                        strict=True))
    groups: list[tuple[str, str, Path | None]] = [(files[i][0], files[i][1], files[i][2])
                                                  for i in sorted(dirty)]
    cur: list[str] = []
    cur_rows = 0
    cur_gap = None
    for r in gap_runs:
        g = int(np.searchsorted(lows, r, side="right")) if len(files) else 0
        if cur and (g != cur_gap or cur_rows >= job.target_rows):
            groups.append((cur[0], cur[-1], None))
            cur, cur_rows = [], 0
        cur.append(r)
        cur_rows += gap_rows[r]
        cur_gap = g
    if cur:
        groups.append((cur[0], cur[-1], None))
    return TenantPlan(files=files, dirty=dirty, groups=groups, spawns=spawns, parents=parents,
                      keys_old=keys_old, stats_old=stats_old)


def range_context(job: TenantJob, plan: TenantPlan) -> RangeContext:
    return RangeContext(tenant=job.tenant, parents=plan.parents,
                        replaced_names=job.replaced_names, rank=job.rank,
                        partition_events=job.partition_events)


def merge_range(ctx: RangeContext, old: Path | None, staged: pa.Table | None, out: Path,
                tag: str) -> dict[str, Any]:
    """One range of a tenant: the old file's rows (minus the replaced sources') and the staged
    rows of its runs, settled, written as ``out/.range-<tag>-<j>.parquet`` files (renamed to
    ``part-<k>`` by the caller, in range order). Returns the files, the runs it touched,
    their stats and key rows and the duplicate rows (``ingest_source`` still the source
    string)."""
    parts = []
    touched: set[str] = set()
    if old is not None:
        t_old = read_partition_files([(ctx.tenant, old)])
        touched.update(pc.unique(t_old.column("run_id").cast(pa.string())).to_pylist())
        src = t_old.column("source").cast(pa.string())
        t_old = t_old.filter(pc.invert(pc.is_in(src, pa.array(sorted(ctx.replaced_names),
                                                               pa.string()))))
        parts.append(t_old)
    if staged is not None:
        parts.append(staged)
    table = pa.concat_tables(parts).unify_dictionaries().combine_chunks() if parts \
        else EVENTS_SCHEMA.empty_table()
    touched.update(pc.unique(table.column("run_id").cast(pa.string())).to_pylist())
    table, dups = settle(table, ctx.parents, ctx.rank)
    written: list[str] = []
    stats = keys = None
    if table.num_rows:
        stats, keys = _stats(table), _keys(table)
        for j, (a, b) in enumerate(_cuts(table, ctx.partition_events)):
            name = f".range-{tag}-{j}.parquet"
            _write_part(table.slice(a, b - a), ctx.tenant, out / name)
            written.append(name)
    del table, parts
    pa.default_memory_pool().release_unused()  # freed range buffers back to the OS
    return {"files": written, "touched": touched, "stats": stats, "keys": keys, "dups": dups}


def merge_tenant(job: TenantJob) -> dict[str, Any]:
    """Write the tenant's new generation into ``job.out``; returns its summary (parts written,
    linked, next part number, per-source loaded / quarantined counts)."""
    return merge_tenants([job], workers=1)[0]


def _one_range(job: TenantJob, ctx: RangeContext, i: int, lo: str, hi: str,
               old: Path | None) -> dict[str, Any]:
    staged = _read_range(job.staged, job.mem, job.tenant, lo, hi) \
        if job.staged or job.mem else None
    return merge_range(ctx, old, staged, job.out, str(i))


def merge_tenants(jobs: list[TenantJob], workers: int) -> list[dict[str, Any]]:
    """:func:`merge_tenant` of every job, their ranges (of all tenants) merged on ``workers``
    threads at once (Arrow's reads, sorts, takes and Parquet writes release the GIL; the
    caller sizes the ranges so that ``workers`` of them fit the memory limit together).
    Each range writes its own temporary files, named ``part-<k>`` in range order by
    :func:`finish_tenant` afterwards, so the dataset is the same for any ``workers``."""
    plans: list[tuple[TenantPlan, RangeContext]] = []
    tasks: list[tuple[int, int, str, str, Path | None]] = []
    for j, job in enumerate(jobs):
        job.out.mkdir(parents=True)
        plan = plan_tenant(job)
        plans.append((plan, range_context(job, plan)))
        tasks.extend((j, i, lo, hi, old) for i, (lo, hi, old) in enumerate(plan.groups))

    def run(task: tuple[int, int, str, str, Path | None]) -> dict[str, Any]:
        j, i, lo, hi, old = task
        return _one_range(jobs[j], plans[j][1], i, lo, hi, old)

    if workers <= 1 or len(tasks) <= 1:
        results = [run(t) for t in tasks]
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(workers, len(tasks)),
                                thread_name_prefix="replaykit-merge") as pool:
            results = list(pool.map(run, tasks))  # in task order; the first error re-raised
    per_job: list[list[dict[str, Any]]] = [[] for _ in jobs]
    for (j, *_), res in zip(tasks, results, strict=True):
        per_job[j].append(res)
    return [finish_tenant(job, plan, res)
            for job, (plan, _), res in zip(jobs, plans, per_job, strict=True)]


def finish_tenant(job: TenantJob, plan: TenantPlan,
                  results: list[dict[str, Any]]) -> dict[str, Any]:
    """The ranges' files named ``part-<k>`` in range order, the kept files linked, the side
    tables written; the tenant's summary."""
    touched: set[str] = set()
    stats_new: list[pa.Table] = []
    keys_new: list[pa.Table] = []
    dup_records: list[dict[str, Any]] = []
    for res in results:
        touched |= res["touched"]
        for rec in res["dups"]:
            rec["ingest_source"] = job.owner_of(rec["ingest_source"])
        dup_records.extend(res["dups"])
        if res["stats"] is not None:
            stats_new.append(res["stats"])
            keys_new.append(res["keys"])
        for tmp in res["files"]:
            name = f"part-{job.next_part}.parquet"
            os.replace(job.out / tmp, job.out / name)
            job.written.append(name)
            job.next_part += 1
    files, spawns = plan.files, plan.spawns
    keys_old, stats_old = plan.keys_old, plan.stats_old
    for i, (_, _, f) in enumerate(files):
        if i not in plan.dirty:
            try:
                os.link(f, job.out / f.name)  # the same file: same inode, same mtime
            except OSError:  # a file system without hard links: a copy, mtime kept
                import shutil

                shutil.copy2(f, job.out / f.name)
            job.linked.append(f.name)
    # side tables
    touched_a = pa.array(sorted(touched), pa.string())
    keys = pa.concat_tables([
        keys_old.filter(pc.invert(pc.is_in(keys_old.column("run_id"), touched_a))), *keys_new])
    stats = pa.concat_tables([
        stats_old.filter(pc.invert(pc.is_in(stats_old.column("run_id"), touched_a))),
        *stats_new]).sort_by([("run_id", "ascending")])
    headers_old = _read_side(job.prev, HEADERS_FILE, HEADERS_SCHEMA)
    quar_old = _read_side(job.prev, QUAR_FILE, QUAR_SCHEMA)
    rkeys = pa.array(sorted(job.replaced_keys), pa.string())
    headers = pa.concat_tables([
        headers_old.filter(pc.invert(pc.is_in(headers_old.column("ingest_source"), rkeys))),
        job.new_headers.cast(HEADERS_SCHEMA)])
    dup_q = (pa.Table.from_pylist(dup_records, schema=QUAR_SCHEMA) if dup_records
             else QUAR_SCHEMA.empty_table())
    quar = pa.concat_tables([
        quar_old.filter(pc.invert(pc.is_in(quar_old.column("ingest_source"), rkeys))),
        job.new_quarantine.cast(QUAR_SCHEMA), dup_q])
    for name, t in ((KEYS_FILE, keys), (STATS_FILE, stats), (HEADERS_FILE, headers),
                    (QUAR_FILE, quar), (SPAWNS_FILE, spawns)):
        pq.write_table(t, job.out / name)
    pleach = stats.filter(pc.equal(stats.column("format"), "pleach"))
    runs = pa.concat_tables([
        pa.table({"tenant_id": pleach.column("tenant_id"), "run_id": pleach.column("run_id"),
                  "parent_run_id": pleach.column("parent_run_id"),
                  "format": pleach.column("format"), "source": pleach.column("source"),
                  "created_at": pleach.column("first_ts"),
                  "attrs": pa.nulls(pleach.num_rows, pa.large_string())}, schema=RUNS_SCHEMA),
        headers.drop_columns(["ingest_source"])])
    pq.write_table(compact_dictionaries(runs), job.out / RUNS_FILE)
    pq.write_table(quar.drop_columns(["ingest_source"]), job.out / QUARANTINE_FILE)
    # per-source counts of this tenant (the manifest sums them over tenants)
    counts: dict[str, list[int]] = {}
    if keys.num_rows:
        by = keys.group_by("source", use_threads=False).aggregate([("rows", "sum")])
        for s, n in zip(by.column("source").to_pylist(), by.column("rows_sum").to_pylist(),
                        strict=True):
            counts.setdefault(job.owner_of(s), [0, 0])[0] += int(n)
    if quar.num_rows:
        by = quar.group_by("ingest_source", use_threads=False).aggregate([([], "count_all")])
        for s, n in zip(by.column("ingest_source").to_pylist(),
                        by.column("count_all").to_pylist(), strict=True):
            counts.setdefault(s, [0, 0])[1] += int(n)
    return {"written": job.written, "linked": job.linked, "next_part": job.next_part,
            "counts": counts}


def _read_range(staged: list[tuple[Path, str, str]], mem: list[tuple[pa.Table, str, str]],
                tenant: str, lo: str, hi: str) -> pa.Table:
    """The staged events of ``tenant`` with ``lo <= run_id <= hi``, canonical types: only
    the staging files (and kept tables) whose span of the tenant's runs meets the range are
    read, and the files' row-group statistics skip the rest (they are sorted by tenant, run)."""
    import pyarrow.dataset as ds

    pieces = []
    for t, a, b in mem:
        if a <= hi and b >= lo:
            run = t.column("run_id")
            keep = pc.and_(pc.equal(t.column("tenant_id"), tenant),
                           pc.and_(pc.greater_equal(run, lo), pc.less_equal(run, hi)))
            pieces.append(t.filter(keep))
    files = [str(f) for f, a, b in staged if a <= hi and b >= lo]
    if files:
        d = ds.dataset(files, format="parquet")
        expr = (ds.field("tenant_id") == tenant) & (ds.field("run_id") >= lo) & \
            (ds.field("run_id") <= hi)
        pieces.append(d.to_table(filter=expr, use_threads=False, batch_readahead=1,
                                 fragment_readahead=1))
    if not pieces:
        return EVENTS_SCHEMA.empty_table()
    cols = [pa.chunked_array([c for p in pieces
                              for c in p.column(f.name).cast(f.type).chunks], f.type)
            for f in EVENTS_SCHEMA]
    return pa.Table.from_arrays(cols, schema=EVENTS_SCHEMA)


def settle(table: pa.Table, parents: dict[str, str],
           rank: dict[str, int]) -> tuple[pa.Table, list[dict[str, Any]]]:
    """Whole runs of one tenant as one read of every source gives them: sorted, duplicate
    keys dropped (the first in source-path order, then line, is kept; the others become
    ``duplicate_seq`` quarantine rows), pleach ``turn`` and ``parent_run_id`` recomputed."""
    n = table.num_rows
    if n == 0:
        return table, []
    tenant = _dictionary_rank(table.column("tenant_id"))
    run = _dictionary_rank(table.column("run_id"))
    seq = table.column("seq").to_numpy()
    src = table.column("source").combine_chunks()
    src_vals = src.dictionary.to_pylist()
    src_rank = np.asarray([rank.get(_path_of(v), len(rank)) for v in src_vals] or [0],
                          dtype=np.int64)
    row_rank = src_rank[src.indices.fill_null(0).to_numpy(zero_copy_only=False)]
    line = table.column("source_line").fill_null(0).to_numpy(zero_copy_only=False)
    order = np.lexsort((line, row_rank, seq, run, tenant))
    same = (tenant[order][1:] == tenant[order][:-1]) & (run[order][1:] == run[order][:-1]) & \
        (seq[order][1:] == seq[order][:-1])
    records: list[dict[str, Any]] = []
    if same.any():
        drop = order[1:][same]
        q = Quarantine("quarantine")
        for i in np.sort(drop).tolist():
            t_id = table.column("tenant_id")[i].as_py()
            r_id = table.column("run_id")[i].as_py()
            s = src_vals[src.indices[i].as_py()]  # as read_pleach names it: "pleach:<path>"
            _bad(q, s, int(line[i]), "duplicate_seq",
                 f"(tenant_id, chat_id, sequence_number) = ({t_id!r}, {r_id!r}, {int(seq[i])}) "
                 "repeats an earlier row; the first is kept", None, "sequence_number",
                 owner=(t_id, r_id))
        records = q.rows
        owners = [src_vals[src.indices[i].as_py()] for i in np.sort(drop).tolist()]
        for rec, o in zip(records, owners, strict=True):
            rec["ingest_source"] = o  # resolved to the manifest key by the caller
        order = np.concatenate([order[:1], order[1:][~same]])
    if not np.array_equal(order, np.arange(n)):
        table = table.take(pa.array(order))
    return _pleach_columns(table, parents), records


def _path_of(source: str) -> str:
    return source.split(":", 1)[1] if ":" in source else source


def _pleach_columns(table: pa.Table, parents: dict[str, str]) -> pa.Table:
    """``turn`` carried forward over each whole pleach run (from its turn.started /
    turn.completed rows) and ``parent_run_id`` from the tenant's spawns, as
    :func:`replaykit.read_pleach` derives them over every file at once."""
    n = table.num_rows
    src = table.column("source").combine_chunks()
    is_pl = np.asarray([v.startswith("pleach:") for v in src.dictionary.to_pylist()] or [False])
    pl = is_pl[src.indices.fill_null(0).to_numpy(zero_copy_only=False)] if n else \
        np.zeros(0, bool)
    if not pl.any():
        return table
    run = _dictionary_rank(table.column("run_id"))
    starts = np.r_[True, run[1:] != run[:-1]]
    seg_start = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    typ = pc.cast(table.column("type"), pa.string())
    turn_col = table.column("turn").combine_chunks()
    own = np.asarray(pc.fill_null(pc.and_(pc.is_in(typ, pa.array(_TURN_TYPES)),
                                          pc.is_valid(turn_col)), False)) & pl
    last = np.maximum.accumulate(np.where(own, np.arange(n), -1))
    ok = last >= seg_start
    values = turn_col.fill_null(0).to_numpy(zero_copy_only=False)
    carried = values[np.maximum(last, 0)]
    old_valid = np.asarray(turn_col.is_valid())
    new_vals = np.where(pl, carried, values)
    new_mask = np.where(pl, ~ok, ~old_valid)
    turn = pa.array(new_vals.astype(np.int32), type=pa.int32(), mask=new_mask)
    ti = table.schema.get_field_index("turn")
    table = table.set_column(ti, table.schema.field(ti), turn)
    # parent_run_id of pleach runs: one lookup per run
    first = np.flatnonzero(starts)
    run_ids = pc.cast(table.column("run_id").take(pa.array(first)), pa.string()).to_pylist()
    seg_pl = pl[first]
    old_parent = pc.cast(table.column("parent_run_id").take(pa.array(first)),
                         pa.string()).to_pylist()
    per_run = [parents.get(r) if p else o for r, p, o in zip(run_ids, seg_pl, old_parent,
                                                             strict=True)]
    lengths = np.diff(np.r_[first, n])
    parent = pa.array(per_run, pa.string()).take(pa.array(np.repeat(np.arange(len(first)),
                                                                    lengths)))
    pi = table.schema.get_field_index("parent_run_id")
    return table.set_column(pi, table.schema.field(pi),
                            parent.dictionary_encode().cast(table.schema.field(pi).type))


def _stats(table: pa.Table) -> pa.Table:
    log = EventLog(table, sort=False)
    st = log._run_stats()
    idx = log._run_index()
    src = pc.cast(table.column("source").take(pa.array(idx.offsets[:-1])), pa.string())
    fmt = pc.replace_substring_regex(src, r":.*$", "")
    return st.append_column("format", fmt).append_column("source", src).cast(STATS_SCHEMA)


def _keys(table: pa.Table) -> pa.Table:
    t = pa.table({"run_id": table.column("run_id").cast(pa.string()),
                  "source": table.column("source").cast(pa.string())})
    g = t.group_by(["run_id", "source"], use_threads=False).aggregate([([], "count_all")])
    return g.rename_columns(["run_id", "source", "rows"]).cast(KEYS_SCHEMA)


#: min/max statistics only on the columns the readers prune on (run ranges of the files,
#: ``since=`` / ``until=`` on ``ts``, run slices on ``seq``); dictionary pages only for the
#: columns that repeat (not the payload, text, hashes and ids: Parquet would build a
#: dictionary per page and fall back to plain). About a fifth less CPU than the defaults.
PART_STATISTICS = ["run_id", "ts", "seq"]
_NO_DICTIONARY = {"event_id", "ref_id", "args_hash", "cache_key", "text", "payload",
                  "prev_hash", "row_hash"}


def part_write_options(schema: pa.Schema) -> dict[str, Any]:
    """The ``pq.write_table`` options of a part file of ``schema`` (see PART_STATISTICS)."""
    return {"write_statistics": [n for n in PART_STATISTICS if n in schema.names],
            "use_dictionary": [f.name for f in schema if f.name not in _NO_DICTIONARY
                               and not pa.types.is_large_string(f.type)]}


def _write_part(part: pa.Table, tenant: str, path: Path) -> None:
    """One part file as :func:`replaykit.engine.write_partitioned` writes it (the same
    columns and types; statistics and dictionary pages where the readers use them)."""
    body = part.drop_columns(["tenant_id"])
    body = compact_dictionaries(body).replace_schema_metadata(
        {**(body.schema.metadata or {}), TENANT_KEY: tenant.encode("utf-8")})
    pq.write_table(body, path, row_group_size=min(1_000_000, max(1, part.num_rows)),
                   **part_write_options(body.schema))
