"""The Dask engine: per-run computations mapped over run-aligned partitions.

Every entry point imports Dask lazily (``MissingExtraError`` without the ``dask`` extra) and
maps one task per partition (:mod:`._parts`): a file of a Parquet dataset, a slice of an
in-memory log, or a partition of a ``dask.dataframe``. Results are equal to the local
engine's on the same data (tests check it on a LocalCluster of two worker processes).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import MissingExtraError
from ..eventlog import EventLog, read_parquet
from ..schema import empty_events
from ._parts import DEFAULT_PARTITION_EVENTS, EngineError, Partition, partitions

__all__ = [
    "DaskStateFrame",
    "dask_cohorts",
    "dask_compare",
    "dask_fold",
    "dask_verify_chain",
    "fold_to_parquet",
]


# ----------------------------------------------------------------------------- plumbing
def _require_dask(feature: str = 'engine="dask"') -> Any:
    try:
        import dask  # noqa: F401
        import distributed
    except ImportError:
        raise MissingExtraError(feature, "dask", "dask[dataframe,distributed]") from None
    return distributed


def _is_ddf(obj: Any) -> bool:
    return type(obj).__module__.startswith("dask") and hasattr(obj, "to_delayed")


def _sources(source: Any, partition_events: int, check: bool = True
             ) -> tuple[list[Partition], list[Any] | None]:
    """Partitions of ``source`` plus, for a dask.dataframe, its delayed pandas partitions."""
    if _is_ddf(source):
        delayed = list(source.to_delayed())
        return [Partition(name=f"partition {i}", index=i) for i in range(len(delayed))], delayed
    return partitions(source, partition_events=partition_events, check=check), None


def _client(client: Any) -> Any:
    distributed = _require_dask()
    if client is not None:
        return client
    try:
        return distributed.default_client()
    except ValueError:
        return None


def _call(fn: Callable[..., Any], part: Partition, data: Any, *args: Any) -> Any:
    """Worker-side wrapper: any failure becomes an EngineError naming the partition."""
    try:
        return fn(part, data, *args)
    except EngineError:
        raise
    except Exception as exc:
        raise EngineError(part.name, f"{type(exc).__name__}: {exc}", exc) from exc


def _call_safe(fn: Callable[..., Any], part: Partition, data: Any, *args: Any
               ) -> tuple[bool, Any]:
    try:
        return True, _call(fn, part, data, *args)
    except EngineError as exc:
        return False, exc


def _run(fn: Callable[..., Any], parts: list[Partition], data: list[Any] | None,
         args: Sequence[Any], *, client: Any, desc: str, progress: bool | None,
         fail_fast: bool = True) -> dict[int, Any]:
    """Run ``fn(part, data, *args)`` for every partition; results by partition index.

    With a ``distributed`` client (given, or the default one) tasks run on the cluster and
    finish in any order; otherwise Dask's local threaded scheduler runs them. A failing
    partition raises :class:`EngineError` naming it (with ``fail_fast=False`` only after
    every other partition has finished, so their outputs are kept).
    """
    from ..io._common import Progress

    distributed = _require_dask()
    client = _client(client)
    bar = Progress(len(parts), desc=desc, unit="part", enabled=progress)
    results: dict[int, Any] = {}
    errors: list[EngineError] = []
    try:
        if client is None:  # no cluster: Dask's threaded scheduler in this process
            import dask

            tasks = [dask.delayed(_call_safe, pure=False)(
                fn, p, None if data is None else data[i], *args) for i, p in enumerate(parts)]
            for p, (ok, value) in zip(parts, dask.compute(*tasks, scheduler="threads"),
                                      strict=True):
                if ok:
                    results[p.index] = value
                elif fail_fast:
                    raise value
                else:
                    errors.append(value)
                bar.update(1)
        else:
            token = uuid.uuid4().hex[:8]
            inputs: list[Any] = [None] * len(parts)
            if data is not None:
                inputs = client.compute(data)
            elif any(p.table is not None for p in parts):  # in-memory: scatter, not graph
                inputs = client.scatter([p.table for p in parts], hash=False)
                parts = [dataclasses.replace(p, table=None) for p in parts]
            shared = [client.scatter(a, broadcast=True)
                      if isinstance(a, (pd.DataFrame, pa.Table)) else a for a in args]
            futures = {
                client.submit(_call, fn, p, inputs[i], *shared, pure=False,
                              key=f"replaykit-{desc}-{p.index}-{token}"): p
                for i, p in enumerate(parts)
            }
            for fut in distributed.as_completed(list(futures)):
                p = futures.pop(fut)
                if fut.status == "finished":
                    results[p.index] = fut.result()
                else:
                    exc = fut.exception()
                    err = exc if isinstance(exc, EngineError) else EngineError(
                        p.name, f"the task failed on the cluster ({type(exc).__name__}: {exc})",
                        exc)
                    if fail_fast:
                        client.cancel(list(futures))
                        raise err
                    errors.append(err)
                fut.release()
                bar.update(1)
    finally:
        bar.close()
    if errors:
        names = ", ".join(repr(e.partition) for e in errors[:5])
        more = f" and {len(errors) - 5} more" if len(errors) > 5 else ""
        first = errors[0]
        raise EngineError(
            first.partition,
            f"{first.message}. {len(errors)} of {len(parts)} partitions failed ({names}{more}); "
            "finished partitions are kept -- re-run with the same arguments to resume.",
            first.cause,
        )
    return results


def _ordered(results: dict[int, Any]) -> list[Any]:
    return [results[i] for i in sorted(results)]


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if f is not None]
    nonempty = [f for f in frames if len(f)]
    if not nonempty:
        return frames[0].iloc[0:0].reset_index(drop=True) if frames else pd.DataFrame()
    out = pd.concat(nonempty, ignore_index=True)
    for c in out.columns:  # categoricals: the union of the partitions' categories
        cols = [f[c] for f in nonempty]
        if all(isinstance(x.dtype, pd.CategoricalDtype) for x in cols):
            out[c] = pd.api.types.union_categoricals(cols, sort_categories=True)
    return out


# ----------------------------------------------------------------------------- fold
def _fold_part(part: Partition, data: Any, projections: Any, state_hash: bool, what: str
               ) -> pd.DataFrame:
    from ..fold import fold

    sf = fold(part.load(data), projections, state_hash=state_hash)
    if what == "steps":
        return sf.steps_df()
    return sf.final(with_state=what == "final")


class DaskStateFrame:
    """A fold mapped over run-aligned partitions: what ``rk.fold(..., engine="dask")``
    returns. Nothing runs until you ask for a result.

    :meth:`final` and :meth:`steps_df` compute on the cluster and collect (equal to the local
    :class:`~replaykit.StateFrame`'s); :meth:`to_parquet` streams results to Parquet without
    collecting them (out-of-core); :meth:`at` folds just one run locally.

    Example:
        >>> sf = rk.fold("events/", rk.agent(), engine="dask", client=client)  # doctest: +SKIP
        >>> sf.final()  # doctest: +SKIP
        >>> sf.to_parquet("folded/")  # doctest: +SKIP
    """

    def __init__(self, source: Any, projections: Any, *, state_hash: bool = True,
                 client: Any = None, partition_events: int = DEFAULT_PARTITION_EVENTS,
                 progress: bool | None = None) -> None:
        from ..fold.projection import resolve_projections

        resolve_projections(projections)  # bad projections fail here, not on a worker
        self.source = source
        self.projections = projections
        self.state_hash = state_hash
        self.client = client
        self.progress = progress
        self.partition_events = partition_events
        self.partitions, self._data = _sources(source, partition_events)

    def __repr__(self) -> str:
        return f"DaskStateFrame({len(self.partitions)} partitions of {self.source!r})"

    def _collect(self, what: str) -> pd.DataFrame:
        res = _run(_fold_part, self.partitions, self._data,
                   (self.projections, self.state_hash, what), client=self.client,
                   desc="fold", progress=self.progress)
        return _concat(_ordered(res))

    def final(self, *, with_state: bool = True) -> pd.DataFrame:
        """One row per run, as :meth:`StateFrame.final` (collected to the client).

        Raises:
            EngineError: a partition failed (named in the error).
        """
        return self._collect("final" if with_state else "final_nostate")

    def steps_df(self) -> pd.DataFrame:
        """One row per event, as :meth:`StateFrame.steps_df` (collected: mind the size).

        Raises:
            EngineError: a partition failed (named in the error).
        """
        return self._collect("steps")

    def to_parquet(self, path: str | os.PathLike[str], *, what: str = "final") -> pd.DataFrame:
        """Fold partition by partition, writing results to ``path`` (see
        :func:`fold_to_parquet`)."""
        return fold_to_parquet(self.source, self.projections, path, what=what,
                               state_hash=self.state_hash, client=self.client,
                               progress=self.progress, partition_events=self.partition_events)

    def at(self, run_id: str, seq: int | None, *, tenant_id: str) -> Any:
        """The state of one run after ``seq``: reads and folds only that run, locally.

        Raises:
            TypeError: ``tenant_id`` is None or empty. ReplayError: no such run.
            NotImplementedError: the source is a dask.dataframe.
        """
        from ..fold import fold
        from ..fold.frame import _require_tenant

        _require_tenant(tenant_id)
        if isinstance(self.source, EventLog):
            log = self.source.filter(tenant_id=tenant_id, run_ids=run_id)
        elif isinstance(self.source, (str, os.PathLike)):
            log = read_parquet(self.source, tenant_id=tenant_id, run_ids=run_id)
        else:
            raise NotImplementedError("at() on a dask.dataframe source: fold the run locally")
        return fold(log, self.projections, state_hash=self.state_hash).at(
            run_id, seq, tenant_id=tenant_id)


def dask_fold(source: Any, projections: Any, *, state_hash: bool = True, client: Any = None,
              partition_events: int = DEFAULT_PARTITION_EVENTS,
              progress: bool | None = None) -> DaskStateFrame:
    """``rk.fold(source, projections, engine="dask")``: a lazy :class:`DaskStateFrame`.

    ``source``: a Parquet dataset path (EventLog.to_parquet / write_partitioned layout), an
    EventLog (cut at run boundaries into ~``partition_events``-event partitions) or a
    dask.dataframe in the canonical schema whose partitions hold whole runs.

    Raises:
        MissingExtraError: Dask is not installed.
        EngineError: dataset files split a run.
    """
    _require_dask()
    return DaskStateFrame(source, projections, state_hash=state_hash, client=client,
                          partition_events=partition_events, progress=progress)


def _json_objects(df: pd.DataFrame) -> pd.DataFrame:
    """Object columns (states, collections, reducer values) as canonical JSON text."""
    from .._json import canonical_json

    df = df.copy()
    for c in df.columns:
        if df[c].dtype == object:
            df[c] = pd.array([None if v is None else canonical_json(v) for v in df[c]],
                             dtype="string")
    return df


def _fold_out_part(part: Partition, data: Any, projections: Any, state_hash: bool, what: str,
                   out: str) -> dict[str, Any]:
    import pyarrow.parquet as pq

    t0 = time.perf_counter()
    log = part.load(data)
    from ..fold import fold

    sf = fold(log, projections, state_hash=state_hash)
    df = sf.steps_df() if what == "steps" else sf.final(with_state=True)
    df = _json_objects(df)
    if part.path is not None and "tenant_id" in df:  # hive layout: the directory names it
        df = df.drop(columns="tenant_id")
    target = Path(out) / _out_name(part)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp)
    os.replace(tmp, target)
    info = {"partition": part.name, "output": str(target.relative_to(out)),
            "events": len(log), "rows": len(df), "seconds": time.perf_counter() - t0}
    marker = _marker(Path(out), part)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps(info))
    return info


def _out_name(part: Partition) -> str:
    if part.path is not None:
        return part.name  # same hive layout as the input: tenant_id=<id>/part-<k>.parquet
    return f"part-{part.index}.parquet"


def _marker(out: Path, part: Partition) -> Path:
    return out / "_done" / (_out_name(part).replace("/", "__") + ".json")


def fold_to_parquet(source: Any, projections: Any, path: str | os.PathLike[str], *,
                    what: str = "final", state_hash: bool = True, client: Any = None,
                    progress: bool | None = None,
                    partition_events: int = DEFAULT_PARTITION_EVENTS) -> pd.DataFrame:
    """Out-of-core fold: fold each partition on a worker and write its result to Parquet.

    Nothing is collected: each task reads one run-aligned partition, folds it, writes
    ``path/<partition>.parquet`` (``what="final"``: one row per run with ``state`` as
    canonical JSON; ``"steps"``: one row per event) and then a marker
    ``path/_done/<partition>.json``. A re-run skips partitions whose marker and output exist,
    so after a failure it resumes where it stopped. Read the result with
    ``pd.read_parquet(path)`` (hive layout: ``tenant_id`` comes back as a column).

    Returns:
        One row per partition: partition, output, events, rows, seconds, status
        (``"written"`` now or ``"skipped"``, done by an earlier run).

    Example:
        >>> from replaykit.engine import fold_to_parquet  # doctest: +SKIP
        >>> fold_to_parquet("events/", rk.agent(), "folded/", client=client)  # doctest: +SKIP

    Raises:
        MissingExtraError: Dask is not installed.
        ValueError: ``what`` is not "final" or "steps".
        EngineError: a partition failed (raised after the others finished; named in the
            error), or the dataset's files split a run.
    """
    if what not in ("final", "steps"):
        raise ValueError(f'what must be "final" or "steps", got {what!r}')
    _require_dask()
    from ..fold.projection import resolve_projections

    resolve_projections(projections)
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    parts, data = _sources(source, partition_events)
    done: list[dict[str, Any]] = []
    todo: list[int] = []
    for i, p in enumerate(parts):
        m = _marker(out, p)
        if m.exists() and (out / _out_name(p)).exists():
            done.append({**json.loads(m.read_text()), "status": "skipped"})
        else:
            todo.append(i)
    res = _run(_fold_out_part, [parts[i] for i in todo],
               None if data is None else [data[i] for i in todo],
               (projections, state_hash, what, str(out)), client=client, desc="fold",
               progress=progress, fail_fast=False)
    written = [{**r, "status": "written"} for r in _ordered(res)]
    df = pd.DataFrame(done + written, columns=["partition", "output", "events", "rows",
                                               "seconds", "status"])
    order = {p.name: p.index for p in parts}
    df = df.sort_values("partition", key=lambda s: s.map(order)).reset_index(drop=True)
    return df.astype({"partition": "string", "output": "string", "events": "Int64",
                      "rows": "Int64", "seconds": "Float64", "status": "string"})


# ----------------------------------------------------------------------------- verify_chain
def _verify_part(part: Partition, data: Any, heads: pd.DataFrame | None
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    from ..integrity import verify_chain

    log = part.load(data)
    t = log.table
    keys = pd.DataFrame({c: pc.cast(t.column(c), pa.string()).to_numpy(
        zero_copy_only=False) for c in ("tenant_id", "run_id")}).drop_duplicates()
    mine = None
    if heads is not None and len(heads):
        runs = set(keys["run_id"])
        pairs = set(zip(keys["tenant_id"], keys["run_id"], strict=True))
        tn, rn = heads["tenant_id"].to_numpy(object), heads["run_id"].to_numpy(object)
        ok = np.array([(r in runs) if t_ is None else ((t_, r) in pairs)
                       for t_, r in zip(tn, rn, strict=True)], dtype=bool)
        mine = heads[ok]
    return verify_chain(log, mine), keys


def dask_verify_chain(source: Any, expected_heads: Any = None, *, client: Any = None,
                      partition_events: int = DEFAULT_PARTITION_EVENTS,
                      progress: bool | None = None) -> pd.DataFrame:
    """``rk.verify_chain(source, engine="dask")``: the local result, computed per partition.

    Anchored heads are checked in the partition that holds their run; heads of runs in no
    partition are reported as ``head_mismatch`` exactly as the local engine does.

    Raises:
        MissingExtraError: Dask is not installed.
        EngineError: a partition failed (named), or dataset files split a run.
        TypeError / ValueError: as :func:`replaykit.verify_chain`.
    """
    from ..integrity import PROBLEM_KINDS, _normalise_heads, verify_chain

    _require_dask()
    heads = None if expected_heads is None else _normalise_heads(expected_heads)
    parts, data = _sources(source, partition_events)
    res = _ordered(_run(_verify_part, parts, data, (heads,), client=client, desc="verify_chain",
                        progress=progress))
    frames = [r[0] for r in res]
    if heads is not None and len(heads):
        keys = pd.concat([r[1] for r in res], ignore_index=True) if res else \
            pd.DataFrame({"tenant_id": [], "run_id": []})
        runs = set(keys["run_id"])
        pairs = set(zip(keys["tenant_id"], keys["run_id"], strict=True))
        seen = np.array([(r in runs) if t is None else ((t, r) in pairs) for t, r in zip(
            heads["tenant_id"].to_numpy(object), heads["run_id"].to_numpy(object),
            strict=True)], dtype=bool)
        if (~seen).any():
            frames.append(verify_chain(EventLog(empty_events()), heads[~seen]))
    df = _concat(frames) if frames else verify_chain(EventLog(empty_events()))
    if len(df):
        rank = {k: i for i, k in enumerate(PROBLEM_KINDS)}
        df = df.assign(_k=df["kind"].map(rank)).sort_values(
            ["tenant_id", "run_id", "seq", "_k"], kind="stable", na_position="last")
        df = df.drop(columns="_k").reset_index(drop=True)
    return df


# ----------------------------------------------------------------------------- compare
def _read_runs(src: Any, tenants: list[str] | None, runs: list[str]) -> EventLog:
    if isinstance(src, EventLog):
        return src.filter(tenant_id=tenants, run_ids=runs)
    return read_parquet(src, tenant_id=tenants, run_ids=runs)


def _compare_part(part: Partition, data: Any, base: Any, pairs: pd.DataFrame | None
                  ) -> pd.DataFrame:
    from ..branch.compare import compare

    if pairs is None:  # pairs come from the replay partition's parent_run_id
        replay = part.load(data)
        t = replay.table
        parents = pc.unique(pc.drop_null(pc.cast(
            t.column("parent_run_id"), pa.string()))).to_pylist()
        tenants = pc.unique(pc.cast(t.column("tenant_id"),
                                                    pa.string())).to_pylist()
        return compare(_read_runs(base, tenants, parents), replay)
    replay_src = part.root if part.root is not None else data
    tenants = None
    if "tenant_id" in pairs:
        tenants = sorted(set(pairs["tenant_id"].dropna().astype(str)))
    b = _read_runs(base, tenants, sorted(set(pairs["base_run_id"].astype(str))))
    r = _read_runs(replay_src, tenants, sorted(set(pairs["replay_run_id"].astype(str))))
    return compare(b, r, pairs)


def dask_compare(base: Any, replay: Any, pairs: pd.DataFrame | None = None, *,
                 client: Any = None, pairs_per_task: int = 5_000,
                 partition_events: int = DEFAULT_PARTITION_EVENTS,
                 progress: bool | None = None) -> pd.DataFrame:
    """``rk.compare(base, replay, engine="dask")``: the local result, computed per partition.

    ``base`` and ``replay`` are Parquet dataset paths or EventLogs. Without ``pairs`` one task
    per replay partition pairs its runs with their parents (read from ``base`` with the run
    ids pushed into the scan); with ``pairs``, one task per ``pairs_per_task`` pairs reads just
    the runs it needs from both sides. Rows come back in the local engine's order.

    Raises:
        MissingExtraError: Dask is not installed.
        EngineError: a partition failed (named; e.g. a pair names a missing run).
        TypeError: a source that is neither a path nor an EventLog.
    """
    _require_dask()
    for s in (base, replay):
        if not isinstance(s, (str, os.PathLike, EventLog)):
            raise TypeError("compare with engine='dask' takes Parquet dataset paths or "
                            f"EventLogs, got {type(s).__name__}")
    if isinstance(base, os.PathLike):
        base = str(base)
    if pairs is None:
        parts, data = _sources(replay, partition_events)
        res = _run(_compare_part, parts, data, (base, None), client=client, desc="compare",
                   progress=progress)
        return _concat(_ordered(res))
    missing = {"base_run_id", "replay_run_id"} - set(pairs.columns)
    if missing:
        raise ValueError(f"pairs needs columns base_run_id and replay_run_id; missing "
                         f"{sorted(missing)}")
    chunks = [pairs.iloc[a:a + pairs_per_task] for a in range(0, len(pairs), pairs_per_task)]
    root = str(replay) if isinstance(replay, (str, os.PathLike)) else None
    parts = [Partition(name=f"pairs {i}", index=i, root=root) for i in range(len(chunks))]
    data = None if root is not None else [replay] * len(chunks)
    res = _ordered(_run(_compare_part_pairs, parts, data, (base, chunks), client=client,
                        desc="compare", progress=progress))
    return _concat(res)


def _compare_part_pairs(part: Partition, data: Any, base: Any, chunks: list[pd.DataFrame]
                        ) -> pd.DataFrame:
    return _compare_part(part, data, base, chunks[part.index])


# ----------------------------------------------------------------------------- cohorts
def _cohort_part(part: Partition, data: Any, kw: dict[str, Any], tenants: list[str] | None,
                 runs: pa.Table | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    from ..cohorts import Cohorts

    log = part.load(data)
    if tenants is not None:
        log = log.filter(tenant_id=tenants)
    meta = part.run_meta(log)
    if meta is None and runs is not None and runs.num_rows:  # an in-memory EventLog source
        ids = pc.unique(pc.cast(log.table.column("run_id"), pa.string()))
        meta = runs.filter(pc.is_in(pc.cast(runs.column("run_id"), pa.string()), ids))
    log = EventLog(log.table, runs=meta, sort=False)
    cs = Cohorts(log, **kw)
    return cs._frame(), cs._tool_counts()


def dask_cohorts(source: Any, by: Any = "semester", *, tenant_id: Any = None,
                 calendar: Any = None, cache: Any = None, cache_mode: str = "best-effort",
                 pair_on: Any = "prompt", client: Any = None,
                 partition_events: int = DEFAULT_PARTITION_EVENTS,
                 progress: bool | None = None) -> Any:
    """``rk.cohorts(source, by, engine="dask")``: per-run measures computed per partition.

    Returns a :class:`~replaykit.Cohorts` whose ``runs_df``, ``labels``, ``summary()`` (without
    replays) and ``tool_mix_df`` equal the local engine's; replay-based methods need the local
    engine (its ``log`` holds no events). ``by`` must be per run (a column, header attribute,
    payload field, "semester", or a callable that labels each row on its own).

    Raises:
        MissingExtraError: Dask is not installed.
        EngineError: a partition failed (named), e.g. ``by`` names nothing in it.
        KeyError: none of the given tenants has runs.
    """
    from ..cohorts import Cohorts, SemesterCalendar

    _require_dask()
    tenants = None
    if tenant_id is not None:
        tenants = [tenant_id] if isinstance(tenant_id, str) else list(tenant_id)
        if not tenants or not all(isinstance(v, str) and v for v in tenants):
            raise TypeError(f"tenant_id must be a non-empty string or list of them, got "
                            f"{tenant_id!r}")
    if calendar is not None and not isinstance(calendar, SemesterCalendar):
        calendar = SemesterCalendar(terms=tuple(calendar))
    kw = {"by": by, "calendar": calendar, "cache": cache, "cache_mode": cache_mode,
          "pair_on": pair_on}
    parts, data = _sources(source, partition_events)
    if tenants is not None and parts and parts[0].path is not None:
        keep = [i for i, p in enumerate(parts) if p.tenant_id in tenants]
        parts = [parts[i] for i in keep]
    runs_meta = source.runs if isinstance(source, EventLog) else None
    res = _ordered(_run(_cohort_part, parts, data, (kw, tenants, runs_meta), client=client,
                        desc="cohorts", progress=progress))
    if tenants is not None and not sum(len(r[0]) for r in res):
        raise KeyError(f"tenant(s) {tenants} not in the source")
    runs = pd.concat([r[0] for r in res], ignore_index=True)
    tools = pd.concat([r[1] for r in res], ignore_index=True).fillna(0).astype(np.int64)
    tools = tools[sorted(tools.columns)] if len(tools.columns) else tools
    order = np.lexsort((runs["run_id"].astype(str).to_numpy(),
                        runs["tenant_id"].astype(str).to_numpy()))
    runs = runs.iloc[order].reset_index(drop=True)
    tools = tools.iloc[order].reset_index(drop=True)
    cs = Cohorts(EventLog(empty_events()), by, calendar=calendar, cache=cache,
                 cache_mode=cache_mode, pair_on=pair_on)  # type: ignore[arg-type]
    cs._runs = runs
    cs._tools = tools
    return cs
