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
import pyarrow.parquet as pq

from ..errors import MissingExtraError
from ..eventlog import EventLog, read_parquet
from ..schema import empty_events
from ._parts import (
    DEFAULT_PARTITION_EVENTS,
    EngineError,
    FileIndex,
    Partition,
    _canonical,
    file_index,
    partitions,
)

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
            shared = [client.scatter(a, broadcast=True)
                      if isinstance(a, (pd.DataFrame, pa.Table)) else
                      client.scatter(a, broadcast=True, hash=False) if isinstance(a, EventLog)
                      else a for a in args]
            if data is not None:  # one graph: each task runs as soon as its inputs exist
                import dask

                tasks = [dask.delayed(_call, pure=False)(
                    fn, p, data[i], *shared, dask_key_name=f"replaykit-{desc}-{p.index}-{token}")
                    for i, p in enumerate(parts)]
                futures = dict(zip(client.compute(tasks), parts, strict=True))
            else:
                inputs: list[Any] = [None] * len(parts)
                if any(p.table is not None for p in parts):  # in-memory: scatter, not graph
                    inputs = client.scatter([p.table for p in parts], hash=False)
                    parts = [dataclasses.replace(p, table=None) for p in parts]
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
    out = Path(path).absolute()  # written by workers, whose working directory may differ
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
@dataclasses.dataclass(frozen=True)
class _Inputs:
    """What a compare task gets besides its partition (Dask computes it before the task).

    Attributes:
        pairs: the task's pairs (rows of the caller's ``pairs``; the index is their position
            there), or None: pair the replay partition's runs with their parents.
        replay: the replay partitions the task needs (pandas partitions of a dask.dataframe,
            or the Arrow table of an in-memory partition), or None: the task reads them.
        base: the base partitions (pandas partitions of a dask.dataframe) that hold the runs
            the task needs, or None: the task reads them.
    """

    pairs: pd.DataFrame | None
    replay: list[Any] | None
    base: list[Any] | None


def _frames_log(frames: list[Any], tenants: list[str] | None = None,
                runs: list[str] | None = None) -> EventLog:
    """Partitions (pandas frames in the canonical schema, or canonical Arrow tables) as one
    EventLog, keeping only ``runs`` of ``tenants`` (None: every run / tenant)."""
    tables = []
    for f in frames:
        t = f if isinstance(f, pa.Table) else _canonical(pa.Table.from_pandas(
            f, preserve_index=False))
        if runs is not None:
            keep = pc.is_in(pc.cast(t.column("run_id"), pa.string()),
                            value_set=pa.array(runs, pa.string()))
            if tenants is not None:
                keep = pc.and_(keep, pc.is_in(pc.cast(t.column("tenant_id"), pa.string()),
                                              value_set=pa.array(tenants, pa.string())))
            t = t.filter(keep)
        tables.append(t)
    if not tables:
        return EventLog(empty_events())
    if len(tables) == 1:
        return EventLog(tables[0])
    return EventLog(pa.concat_tables(tables).unify_dictionaries().combine_chunks())


def _side_runs(src: Any, frames: list[Any] | None, tenants: list[str] | None,
               runs: list[str]) -> EventLog:
    """The events of ``runs`` of ``tenants`` from one side of a compare: the given
    dask.dataframe partitions, an in-memory EventLog, or a dataset's :class:`FileIndex`
    (only the files that can hold the runs are opened, the run ids pushed into the scan).
    No run metadata (``_runs.parquet``) is read: compare uses only the events."""
    if frames is not None:
        return _frames_log(frames, tenants, runs)
    if isinstance(src, EventLog):
        return src.filter(tenant_id=tenants, run_ids=runs)
    assert isinstance(src, FileIndex)
    return src.read(tenants, runs)


def _compare_part(part: Partition, data: Any, base: Any, replay: Any) -> pd.DataFrame:
    """One compare task: a replay partition paired with its parents, or a chunk of pairs.

    ``base`` / ``replay``: a :class:`FileIndex`, an EventLog, or None for a dask.dataframe
    (its partitions come in ``data``, an :class:`_Inputs`).
    """
    from ..branch.compare import compare

    inputs = data if isinstance(data, _Inputs) else _Inputs(None, None, None)
    if inputs.pairs is None:  # pairs come from the replay partition's parent_run_id
        if inputs.replay is not None:
            rep = _frames_log(inputs.replay)
        else:
            rep = part.load(None if isinstance(data, _Inputs) else data)
        t = rep.table
        parents = pc.unique(pc.drop_null(pc.cast(
            t.column("parent_run_id"), pa.string()))).to_pylist()
        tenants = pc.unique(pc.cast(t.column("tenant_id"), pa.string())).to_pylist()
        return compare(_side_runs(base, inputs.base, tenants, parents), rep)
    pairs = inputs.pairs
    tenants = None
    if "tenant_id" in pairs:
        tenants = sorted(set(pairs["tenant_id"].dropna().astype(str)))
    b = _side_runs(base, inputs.base, tenants, sorted(set(pairs["base_run_id"].astype(str))))
    r = _side_runs(replay, inputs.replay, tenants,
                   sorted(set(pairs["replay_run_id"].astype(str))))
    return compare(b, r, pairs)


_KEY_COLUMNS = ["tenant_id", "run_id", "part"]


def _keys_part(part: Partition, data: Any, cols: list[str]) -> pd.DataFrame:
    """Distinct (tenant_id, ``cols[1]``) of one partition as strings (rows with a null
    dropped; the second column is named ``run_id``), reading only those columns."""
    if isinstance(data, pa.Table):
        t = data.select(cols)
    elif data is not None:  # a pandas partition of a dask.dataframe (already projected)
        t = pa.Table.from_pandas(data[cols], preserve_index=False)
    elif part.table is not None:
        t = part.table.select(cols)
    else:
        assert part.path is not None
        names = pq.read_schema(part.path).names
        t = pq.read_table(part.path, columns=[c for c in cols if c in names])
        for c in cols:
            if c not in t.column_names:
                value = part.tenant_id if c == "tenant_id" else None
                t = t.append_column(c, pa.array([value] * t.num_rows, pa.string()))
    df = pd.DataFrame({new: pc.cast(t.column(c), pa.string()).to_numpy(zero_copy_only=False)
                       for c, new in zip(cols, ["tenant_id", "run_id"], strict=True)})
    return df.dropna().drop_duplicates()


def _delayed_parts(ddf: Any, cols: list[str] | None = None) -> list[Any]:
    """The partitions of a dask.dataframe as Delayed objects (only ``cols`` if given).

    Partition ``i`` holds the same rows with or without ``cols``: Dask's tuning stage, which
    merges small Parquet partitions into fewer and merges more of them once columns are
    projected, is turned off, so the partitions are the dask.dataframe's own. A projection is
    still pushed into a Parquet read.
    """
    import dask

    with dask.config.set({"optimization.tune.active": False}):
        return list((ddf if cols is None else ddf[cols]).to_delayed())


def _key_index(source: Any, parts: list[Partition], cols: list[str], *, client: Any,
               progress: bool | None) -> pd.DataFrame:
    """One cheap pass over ``source``'s partitions: every distinct (tenant_id, ``cols[1]``)
    with the partition (``part``: its index) that holds it. Only those two columns are read
    (a Parquet-backed dask.dataframe reads just them); in-memory partitions are scanned
    here, the others on the cluster.

    Raises:
        EngineError: a partition failed (named).
    """
    if _is_ddf(source):
        projected = _delayed_parts(source, cols)
        assert len(projected) == len(parts)
        res = _run(_keys_part, parts, projected, (cols,), client=client,
                   desc="compare index", progress=progress)
    elif all(p.table is not None for p in parts):
        res = {p.index: _keys_part(p, None, cols) for p in parts}
    else:
        res = _run(_keys_part, parts, None, (cols,), client=client, desc="compare index",
                   progress=progress)
    frames = [df.assign(part=i) for i, df in sorted(res.items())]
    if not frames:
        return pd.DataFrame({c: pd.Series([], dtype=object if c != "part" else np.int64)
                             for c in _KEY_COLUMNS})
    return pd.concat(frames, ignore_index=True)


def _locate(pairs: pd.DataFrame, col: str, keys: pd.DataFrame, side: str) -> pd.DataFrame:
    """(pos, part): the partitions holding each pair's ``col`` run (matched on tenant_id too
    when ``pairs`` has it).

    Raises:
        EngineError: a pair names a run that is in no partition of ``side``.
    """
    on = ["tenant_id", "run_id"] if "tenant_id" in pairs else ["run_id"]
    q = pd.DataFrame({"pos": np.arange(len(pairs)),
                      "run_id": pairs[col].astype(str).to_numpy(object)})
    if "tenant_id" in pairs:
        tenant = pairs["tenant_id"].astype(object)
        q["tenant_id"] = tenant.where(tenant.notna(), None).to_numpy(object)
    m = q.merge(keys[[*on, "part"]].drop_duplicates(), on=on, how="left")
    lost = m["part"].isna().to_numpy()
    if lost.any():
        bad = pairs.iloc[int(m["pos"].to_numpy()[lost][0])]
        run = bad[col]
        raise EngineError("pairs", f"pair ({bad['base_run_id']!r}, {bad['replay_run_id']!r}) "
                          f"names a run missing from its log: {side} run {run!r} is in no "
                          f"partition of the {side} dask.dataframe")
    return pd.DataFrame({"pos": m["pos"].to_numpy(), "part": m["part"].to_numpy(np.int64)})


def _by_task(where: pd.DataFrame, task_of_pos: np.ndarray, n_tasks: int) -> list[list[int]]:
    """Per task, the sorted partitions holding the runs of its pairs."""
    t = pd.DataFrame({"task": task_of_pos[where["pos"].to_numpy()],
                      "part": where["part"].to_numpy()}).drop_duplicates()
    out: list[list[int]] = [[] for _ in range(n_tasks)]
    for task, grp in t.groupby("task")["part"]:
        out[int(task)] = sorted(grp.tolist())
    return out


def _side(src: Any) -> Any:
    """How tasks read one side: a :class:`FileIndex` (a dataset path), the EventLog, or None
    (a dask.dataframe: its partitions are task inputs)."""
    if isinstance(src, (str, os.PathLike)):
        return file_index(src)
    return None if _is_ddf(src) else src


def dask_compare(base: Any, replay: Any, pairs: pd.DataFrame | None = None, *,
                 client: Any = None, pairs_per_task: int = 5_000,
                 partition_events: int = DEFAULT_PARTITION_EVENTS,
                 progress: bool | None = None) -> pd.DataFrame:
    """``rk.compare(base, replay, engine="dask")``: the local result, computed per partition.

    ``base`` and ``replay`` are each a Parquet dataset path (:meth:`EventLog.to_parquet`
    layout), an EventLog, or a dask.dataframe in the canonical schema whose partitions hold
    whole runs (the caller's contract: the engine cannot check it up front; a run split
    across partitions gives wrong metrics).

    Without ``pairs`` one task per replay partition pairs its runs with their parents. With
    ``pairs``, each task takes up to ``pairs_per_task`` pairs: sorted by replay run (so a
    task reads few replay files), or, for a dask.dataframe replay, routed to the replay
    partition that holds their replay run. Each task reads only the runs it needs: from a
    dataset, only the files whose footer run-id range (indexed once on the client) can hold
    them, with the run ids pushed into the scan; from a dask.dataframe, only the partitions
    that hold them, found by one first pass that reads just ``tenant_id`` and ``run_id`` (and
    ``parent_run_id`` on the replay side without pairs); a partition several tasks need is
    computed once. Rows and dtypes are the local engine's.

    Raises:
        MissingExtraError: Dask is not installed.
        EngineError: a partition failed (named; e.g. a pair names a run missing from a
            dataset), a pair names a run in no partition of a dask.dataframe side
            (partition ``"pairs"``), or dataset files split a run.
        TypeError: a source that is not a path, an EventLog or a dask.dataframe.
        ValueError: ``pairs`` lacks base_run_id / replay_run_id, or ``pairs_per_task < 1``.
    """
    import dask

    from ..branch.compare import compare

    _require_dask()
    for s in (base, replay):
        if not (isinstance(s, (str, os.PathLike, EventLog)) or _is_ddf(s)):
            raise TypeError("compare with engine='dask' takes Parquet dataset paths, EventLogs "
                            f"or dask.dataframes in the canonical schema, got {type(s).__name__}")
    if pairs is not None:
        missing = {"base_run_id", "replay_run_id"} - set(pairs.columns)
        if missing:
            raise ValueError(f"pairs needs columns base_run_id and replay_run_id; missing "
                             f"{sorted(missing)}")
        if pairs_per_task < 1:
            raise ValueError(f"pairs_per_task must be >= 1, got {pairs_per_task}")
    client = _client(client)
    empty = EventLog(empty_events())
    base_src = _side(base)
    bdel = _delayed_parts(base) if _is_ddf(base) else None
    bkeys = None
    if _is_ddf(base):
        bparts = [Partition(name=f"partition {i}", index=i) for i in range(len(bdel or []))]
        bkeys = _key_index(base, bparts, ["tenant_id", "run_id"], client=client,
                           progress=progress)
    run = {"client": client, "desc": "compare", "progress": progress}

    if pairs is None:
        rdata = _delayed_parts(replay) if _is_ddf(replay) else None
        parts = partitions(replay, partition_events=partition_events) if rdata is None else \
            [Partition(name=f"partition {i}", index=i) for i in range(len(rdata))]
        if bdel is None and rdata is None:
            res = _run(_compare_part, parts, None, (base_src, None), **run)
        else:
            need: list[list[int]] = [[] for _ in parts]
            if bkeys is not None:
                pk = _key_index(replay, parts, ["tenant_id", "parent_run_id"], client=client,
                                progress=progress)
                m = pk.merge(bkeys, on=["tenant_id", "run_id"], suffixes=("", "_b"))
                need = _by_task(m.rename(columns={"part": "pos", "part_b": "part"}),
                                np.arange(len(parts)), len(parts))
            tables: list[Any] = [p.table for p in parts]
            if client is not None and any(t is not None for t in tables):
                tables = client.scatter(tables, hash=False)
            data = []
            for i, p in enumerate(parts):
                rin = [rdata[i]] if rdata is not None else \
                    [tables[i]] if p.table is not None else None
                bin_ = None if bdel is None else [bdel[j] for j in need[i]]
                data.append(dask.delayed(_Inputs, pure=False)(None, rin, bin_))
            parts = [dataclasses.replace(p, table=None) for p in parts]
            res = _run(_compare_part, parts, data, (base_src, None), **run)
        out = _concat(_ordered(res)) if res else compare(empty, empty)
        # the local engine's order (replay runs sorted), whatever the partitions' order
        order = np.lexsort((pd.factorize(out["replay_run_id"].astype(str), sort=True)[0],
                            pd.factorize(out["tenant_id"].astype(str), sort=True)[0]))
        return out.iloc[order].reset_index(drop=True)

    P = pairs.reset_index(drop=True)
    if not len(P):
        return compare(empty, empty, P)
    replay_src = _side(replay)
    rdel = _delayed_parts(replay) if _is_ddf(replay) else None
    chunks: list[np.ndarray] = []
    names: list[str] = []
    rwhere = None
    if rdel is not None:  # route each pair to the replay partition holding its replay run
        rparts = [Partition(name=f"partition {i}", index=i) for i in range(len(rdel))]
        rkeys = _key_index(replay, rparts, ["tenant_id", "run_id"], client=client,
                           progress=progress)
        rwhere = _locate(P, "replay_run_id", rkeys, "replay")
        home = rwhere.groupby("pos")["part"].min().sort_index().to_numpy()
        for h in np.unique(home):
            pos = np.flatnonzero(home == h)
            for a in range(0, len(pos), pairs_per_task):
                names.append(f"pairs {len(chunks)} (replay partition {h})")
                chunks.append(pos[a:a + pairs_per_task])
    else:  # sorted by replay run: a chunk's replay runs sit in few files
        keys = [pd.factorize(P["replay_run_id"].astype(str), sort=True)[0]]
        if "tenant_id" in P:
            keys.append(pd.factorize(P["tenant_id"].astype(str), sort=True)[0])
        pos = np.lexsort(keys)
        chunks = [pos[a:a + pairs_per_task] for a in range(0, len(pos), pairs_per_task)]
        names = [f"pairs {k}" for k in range(len(chunks))]
    task_of_pos = np.empty(len(P), dtype=np.int64)
    for k, c in enumerate(chunks):
        task_of_pos[c] = k
    rneed = None if rwhere is None else _by_task(rwhere, task_of_pos, len(chunks))
    bneed = None if bkeys is None else _by_task(_locate(P, "base_run_id", bkeys, "base"),
                                                 task_of_pos, len(chunks))
    parts = [Partition(name=name, index=k) for k, name in enumerate(names)]
    data = [dask.delayed(_Inputs, pure=False)(
        P.iloc[c], None if rneed is None or rdel is None else [rdel[j] for j in rneed[k]],
        None if bneed is None or bdel is None else [bdel[j] for j in bneed[k]])
        for k, c in enumerate(chunks)]
    res = _run(_compare_part, parts, data, (base_src, replay_src), **run)
    out = _concat(_ordered(res))
    at = np.concatenate(chunks)  # the pairs' positions, in result order
    return out.iloc[np.argsort(at, kind="stable")].reset_index(drop=True)


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
