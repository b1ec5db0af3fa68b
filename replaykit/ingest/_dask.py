"""``rk.ingest(..., engine="dask")``: the first pass and the merge on a Dask cluster.

The units of the first pass (batches of files of one format, line-aligned byte ranges of large
pleach files; :func:`._parse.plan_units`) are parsed on the workers, each by its format's own
reader, and the parsed events stay there (persisted). Only the small pieces come back to the
client: per-run key counts, quarantine, run headers, spawns, per-source counts. From those the
client plans each tenant's ranges exactly as the local engine does (:func:`._merge.plan_tenant`)
and numbers them; the events then go through Dask's own shuffle (``dask.dataframe``
``shuffle`` on the range number), and one task per shuffled partition settles and writes its
ranges (:func:`._merge.merge_range`, into the new generation's folder). The client names the
files ``part-<k>`` in range order, links the kept files, writes the side tables, manifest and
journal, and commits (:func:`._merge.finish_tenant` and the driver): the same dataset as the
local engine, with the same atomicity.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..schema import EVENTS_SCHEMA
from ._merge import (
    RangeContext,
    TenantJob,
    TenantPlan,
    finish_tenant,
    merge_range,
    plan_tenant,
    range_context,
)
from ._parse import Source, Staged, parse_unit, plan_units

GID = "_ingest_range"
_SEP = "\x1f"  # between tenant and run id in the range lookup key (not in either)


def _plain_schema() -> pa.Schema:
    """EVENTS_SCHEMA with dictionary columns as their values (what goes through the shuffle)."""
    return pa.schema([pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type)
                               else f.type) for f in EVENTS_SCHEMA])


def _frame(staged: tuple[Staged, list[Any]], keys: pa.Array, gids: pa.Array) -> Any:
    """A parsed unit's events as a pandas frame (Arrow-backed columns) with its range number."""
    import pandas as pd

    schema = _plain_schema()
    tables = staged[0].tables
    t = pa.concat_tables(tables) if tables else schema.empty_table()
    cols = [t.column(f.name).cast(f.type) for f in schema]
    t = pa.Table.from_arrays(cols, schema=schema)
    key = pc.binary_join_element_wise(t.column("tenant_id"), t.column("run_id"), _SEP)
    gid = pc.take(gids, pc.index_in(key, value_set=keys))
    t = t.append_column(GID, gid.cast(pa.int64()))
    return t.to_pandas(types_mapper=pd.ArrowDtype, ignore_metadata=True)


def _run_keys(tenant: str, runs: Any) -> pa.Array:
    """``tenant<SEP>run`` for each run id (the range lookup key)."""
    r = pc.cast(runs, pa.string())
    r = r.combine_chunks() if isinstance(r, pa.ChunkedArray) else r
    return pc.binary_join_element_wise(pa.array([tenant] * len(r), pa.string()), r, _SEP)


def _meta(staged: tuple[Staged, list[Any]]) -> tuple[Staged, list[Any], int]:
    """What the client needs of a parsed unit: everything but its events (and their count)."""
    s, counts = staged
    light = Staged(keys=s.keys, quarantine=s.quarantine, headers=s.headers, spawns=s.spawns,
                   mem_bytes=s.mem_bytes)
    return light, counts, sum(t.num_rows for t in s.tables)


def _events(df: Any) -> pa.Table:
    """A shuffled frame back to canonical Arrow types."""
    t = pa.Table.from_pandas(df, preserve_index=False)
    cols = [t.column(f.name).cast(f.type) for f in EVENTS_SCHEMA]
    return pa.Table.from_arrays(cols, schema=EVENTS_SCHEMA)


def _reduce(df: Any, groups: dict[int, tuple[str, str, str, Any]],
            ctxs: dict[str, RangeContext]) -> list[tuple[int, dict[str, Any]]]:
    """One shuffled partition: each range in it settled and written (in range-number order)."""
    if not len(df):
        return []
    gid_all = pa.array(df[GID].to_numpy(dtype=np.int64))
    table = _events(df.drop(columns=[GID]))
    out = []
    for g in np.unique(gid_all.to_numpy()).tolist():
        tenant, _, out_dir, old = groups[g]
        sub = table.filter(pc.equal(gid_all, g))
        out.append((g, merge_range(ctxs[tenant], old, sub, Path(out_dir), str(g))))
    return out


def _merge_alone(ctx: RangeContext, old: Any, out_dir: str, g: int) -> list[tuple[int, Any]]:
    return [(g, merge_range(ctx, old, None, Path(out_dir), str(g)))]


class DaskIngest:
    """One ingest's work on a Dask cluster (``client``) or Dask's threaded scheduler."""

    def __init__(self, client: Any = None) -> None:
        from ..engine import default_client

        self.client = default_client(client)
        self.parsed: list[Any] = []

    # ------------------------------------------------------------------ scheduling
    def _persist(self, tasks: list[Any]) -> list[Any]:
        import dask

        if self.client is not None:
            return list(self.client.persist(tasks))
        return list(dask.persist(*tasks, scheduler="threads"))

    def _compute(self, tasks: list[Any],
                 each: Callable[[int, Any], None] | None = None) -> list[Any]:
        import dask

        if self.client is None:
            out = list(dask.compute(*tasks, scheduler="threads"))
            for i, r in enumerate(out):
                if each is not None:
                    each(i, r)
            return out
        from distributed import as_completed

        futures = self.client.compute(tasks)
        index = {f.key: i for i, f in enumerate(futures)}
        results: list[Any] = [None] * len(futures)
        try:
            for f in as_completed(futures):
                r = f.result()  # a task's error is raised here, as it was raised on the worker
                i = index[f.key]
                results[i] = r
                if each is not None:
                    each(i, r)
        except BaseException:
            self.client.cancel(futures)
            raise
        return results

    def release(self) -> None:
        """Drop the persisted parsed units from the workers' memory."""
        if self.client is not None and self.parsed:
            from distributed import futures_of

            self.client.cancel(futures_of(self.parsed))
        self.parsed = []

    # ------------------------------------------------------------------ the two passes
    def parse(self, todo: list[Source], *, owner: str | None, errors: str, chunk_bytes: int,
              on_bytes: Callable[[int, int, int], None]) -> Staged:
        """Parse every unit on the workers; the events stay there; the small pieces and the
        per-source counts come back (in unit order, as the local pass makes them)."""
        from dask import delayed

        out = Staged()
        units = plan_units(todo, out, errors=errors, chunk_bytes=chunk_bytes, ranges=True)
        for s in todo:
            if s.format is None:
                on_bytes(s.size, 0, 1)
        tasks = [delayed(parse_unit, pure=False)(u, owner=owner, errors=errors) for u in units]
        self.parsed = self._persist(tasks)
        by_key = {s.key: s for s in todo}
        last = {id(u.sources[-1]): i for i, u in enumerate(units)}  # a file's last unit
        seen_last: set[int] = set()

        def each(i: int, r: Any) -> None:
            u = units[i]
            n = r[2]
            done = [s for s in u.sources if last.get(id(s)) == i and id(s) not in seen_last]
            seen_last.update(id(s) for s in done)
            on_bytes(u.nbytes, n, len(done))

        metas = self._compute([delayed(_meta)(p) for p in self.parsed], each)
        for light, counts, _ in metas:
            out.keys.extend(light.keys)
            out.quarantine.extend(light.quarantine)
            out.headers.extend(light.headers)
            out.spawns.extend(light.spawns)
            out.mem_bytes += light.mem_bytes
            for key, loaded, quarantined, names in counts:
                s = by_key[key]
                s.loaded += loaded
                s.quarantined += quarantined
                s.names.update(names)
        out.remote = True  # the events are on the workers
        for s in todo:
            s.input_rows = s.loaded + s.quarantined
        return out

    def merge(self, jobs: list[TenantJob]) -> list[dict[str, Any]]:
        """Every tenant's new generation: ranges planned here, events shuffled by range with
        ``dask.dataframe``, each shuffled partition's ranges written by a worker, then each
        tenant finished here (names, links, side tables)."""
        import dask.dataframe as dd
        from dask import delayed

        plans: list[TenantPlan] = []
        groups: dict[int, tuple[str, str, str, Any]] = {}
        ctxs: dict[str, RangeContext] = {}
        order: list[list[int]] = []
        key_parts: list[pa.Array] = []
        gid_parts: list[np.ndarray] = []
        g = 0
        for job in jobs:
            job.out.mkdir(parents=True)
            plan = plan_tenant(job)
            plans.append(plan)
            ctxs[job.tenant] = range_context(job, plan)
            mine = []
            for lo, _hi, old in plan.groups:
                groups[g] = (job.tenant, lo, str(job.out), old)
                mine.append(g)
                g += 1
            order.append(mine)
            # each staged run -> the number of the range holding it (ranges are disjoint)
            runs = job.new_keys.column("run_id").to_numpy(zero_copy_only=False).astype(object)
            if len(runs) and plan.groups:
                lows = np.asarray([lo for lo, _, _ in plan.groups], dtype=object)
                by_lo = np.argsort(lows, kind="stable")
                at = np.searchsorted(lows[by_lo], runs, side="right") - 1
                idx = np.asarray(mine, dtype=np.int64)[by_lo][at]
                key_parts.append(_run_keys(job.tenant, job.new_keys.column("run_id")))
                gid_parts.append(idx)
        results: dict[int, dict[str, Any]] = {}
        tasks: list[Any] = []
        with_rows: set[int] = set()
        if key_parts and self.parsed:
            keys = pa.concat_arrays(key_parts)
            gids = pa.array(np.concatenate(gid_parts), pa.int64())
            with_rows = set(np.unique(gids.to_numpy()).tolist())
            frames = [delayed(_frame)(p, keys, gids) for p in self.parsed]
            meta = _frame((Staged(), []), keys, gids)
            ddf = dd.from_delayed(frames, meta=meta, verify_meta=False)
            shuffled = ddf.shuffle(on=GID, npartitions=max(1, len(with_rows)))
            groups_d, ctxs_d = delayed(groups, traverse=False), delayed(ctxs, traverse=False)
            tasks += [delayed(_reduce)(part, groups_d, ctxs_d)
                      for part in shuffled.to_delayed()]
        # ranges with no staged rows (a file rewritten for rows removed or a parent changed)
        for gg, (tenant, _, out_dir, old) in groups.items():
            if gg not in with_rows:
                tasks.append(delayed(_merge_alone)(ctxs[tenant], old, out_dir, gg))
        for done in self._compute(tasks):
            for gg, res in done:
                results[gg] = res
        return [finish_tenant(job, plan, [results[gg] for gg in mine])
                for job, plan, mine in zip(jobs, plans, order, strict=True)]
