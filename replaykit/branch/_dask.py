"""``rk.compare(..., engine="dask")``: the compare kernels, task routing and combine step.

The engine (:mod:`replaykit.engine`) maps these kernels over run-aligned partitions (or over
chunks of pairs) and knows nothing about comparisons; this module registers
:func:`dask_compare` as :func:`~replaykit.compare`'s ``engine="dask"`` implementation.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..engine import (
    DEFAULT_PARTITION_EVENTS,
    EngineError,
    FileIndex,
    Partition,
    canonical_events,
    concat_frames,
    dask_partitions,
    default_client,
    delayed_parts,
    file_index,
    implements,
    is_dask_dataframe,
    is_partition_source,
    partitions,
    require_dask,
    run_partitions,
)
from ..eventlog.log import EventLog
from ..schema import empty_events
from .compare import compare

__all__ = ["dask_compare"]


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
        t = f if isinstance(f, pa.Table) else canonical_events(pa.Table.from_pandas(
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


def _key_index(source: Any, parts: list[Partition], cols: list[str], *, client: Any,
               progress: bool | None) -> pd.DataFrame:
    """One cheap pass over ``source``'s partitions: every distinct (tenant_id, ``cols[1]``)
    with the partition (``part``: its index) that holds it. Only those two columns are read
    (a Parquet-backed dask.dataframe reads just them); in-memory partitions are scanned
    here, the others on the cluster.

    Raises:
        EngineError: a partition failed (named).
    """
    run = {"args": (cols,), "client": client, "desc": "compare index", "progress": progress}
    if is_dask_dataframe(source):
        projected = delayed_parts(source, cols)
        assert len(projected) == len(parts)
        res = run_partitions(_keys_part, parts, data=projected, **run)
    elif all(p.table is not None for p in parts):
        res = [_keys_part(p, None, cols) for p in sorted(parts, key=lambda p: p.index)]
    else:
        res = run_partitions(_keys_part, parts, **run)
    order = sorted(p.index for p in parts)
    frames = [df.assign(part=i) for i, df in zip(order, res, strict=True)]
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
    if isinstance(src, (str, os.PathLike)) or is_partition_source(src):
        return file_index(src)  # a Dataset view: its files, its filters in every read
    return None if is_dask_dataframe(src) else src


@implements(compare, "dask")
def dask_compare(base: Any, replay: Any, pairs: pd.DataFrame | None = None, *,
                 client: Any = None, pairs_per_task: int = 5_000,
                 partition_events: int = DEFAULT_PARTITION_EVENTS,
                 progress: bool | None = None) -> pd.DataFrame:
    """``rk.compare(base, replay, engine="dask")``: the local result, computed per partition.

    ``base`` and ``replay`` are each a Parquet dataset path (:meth:`EventLog.to_parquet`
    layout), a :class:`replaykit.ingest.Dataset` view (its filters pushed into every read),
    an EventLog, or a dask.dataframe in the canonical schema whose partitions hold
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

    require_dask()
    for s in (base, replay):
        if not (isinstance(s, (str, os.PathLike, EventLog)) or is_dask_dataframe(s)
                or is_partition_source(s)):
            raise TypeError("compare with engine='dask' takes Parquet dataset paths, Datasets "
                            "(rk.open_dataset), EventLogs or dask.dataframes in the canonical "
                            f"schema, got {type(s).__name__}")
    if pairs is not None:
        missing = {"base_run_id", "replay_run_id"} - set(pairs.columns)
        if missing:
            raise ValueError(f"pairs needs columns base_run_id and replay_run_id; missing "
                             f"{sorted(missing)}")
        if pairs_per_task < 1:
            raise ValueError(f"pairs_per_task must be >= 1, got {pairs_per_task}")
    client = default_client(client)
    empty = EventLog(empty_events())
    base_src = _side(base)
    bdel = delayed_parts(base) if is_dask_dataframe(base) else None
    bkeys = None
    if is_dask_dataframe(base):
        bparts = dask_partitions(len(bdel or []))
        bkeys = _key_index(base, bparts, ["tenant_id", "run_id"], client=client,
                           progress=progress)
    run = {"client": client, "desc": "compare", "progress": progress}

    if pairs is None:
        rdata = delayed_parts(replay) if is_dask_dataframe(replay) else None
        parts = partitions(replay, partition_events=partition_events) if rdata is None else \
            dask_partitions(len(rdata))
        if bdel is None and rdata is None:
            res = run_partitions(_compare_part, parts, args=(base_src, None), **run)
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
            res = run_partitions(_compare_part, parts, data=data, args=(base_src, None), **run)
        out = concat_frames(res) if res else compare(empty, empty)
        # the local engine's order (replay runs sorted), whatever the partitions' order
        order = np.lexsort((pd.factorize(out["replay_run_id"].astype(str), sort=True)[0],
                            pd.factorize(out["tenant_id"].astype(str), sort=True)[0]))
        return out.iloc[order].reset_index(drop=True)

    P = pairs.reset_index(drop=True)
    if not len(P):
        return compare(empty, empty, P)
    replay_src = _side(replay)
    rdel = delayed_parts(replay) if is_dask_dataframe(replay) else None
    chunks: list[np.ndarray] = []
    names: list[str] = []
    rwhere = None
    if rdel is not None:  # route each pair to the replay partition holding its replay run
        rparts = dask_partitions(len(rdel))
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
    out = run_partitions(_compare_part, parts, data=data, args=(base_src, replay_src),
                         combine=concat_frames, **run)
    at = np.concatenate(chunks)  # the pairs' positions, in result order
    return out.iloc[np.argsort(at, kind="stable")].reset_index(drop=True)
