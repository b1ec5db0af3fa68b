"""Run-aligned partitions of an events dataset (no Dask here: plain pyarrow).

A *partition* is a unit of work that holds whole runs: one Parquet file of a dataset in the
:meth:`EventLog.to_parquet` layout (``root/tenant_id=<id>/part-*.parquet``), one slice of an
in-memory log, or one partition of a ``dask.dataframe``. Partitioning never splits a run:
:func:`write_partitioned` cuts only at run boundaries, and :func:`partitions` checks the
Parquet footers of a dataset (run-id ranges per file must not overlap within a tenant).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .._base.delegates import provide
from ..errors import LoadError, ReplayKitError
from ..eventlog.dataset import (
    NO_TENANT_QUARANTINE_FILE,
    QUARANTINE_FILE,
    RUNS_FILE,
    partition_files,
    read_partition_files,
)
from ..eventlog.log import TENANT_KEY, EventLog
from ..schema import EVENTS_SCHEMA, _dictionary_rank
from ..schema import run_starts as _run_starts
from ..tenancy import (
    check_tenant_column,
    compact_dictionaries,
    partition_dir_name,
    partition_dir_tenant,
)

__all__ = ["EngineError", "Partition", "PartitionSource", "is_partition_source", "partitions",
           "write_partitioned"]

#: Default size of one partition written by :func:`write_partitioned` (events, approximate:
#: a partition closes at the first run boundary at or after this many events).
DEFAULT_PARTITION_EVENTS = 250_000


class EngineError(ReplayKitError):
    """A partition failed on an engine (a worker died, or the computation raised).

    Attributes:
        partition: the partition's name (a file path relative to the dataset, or
            ``"partition <i>"`` for in-memory and dask.dataframe sources).
        cause: the underlying exception (None when not available).
    """

    def __init__(self, partition: str, message: str, cause: BaseException | None = None) -> None:
        self.partition = partition
        self.cause = cause
        self.message = message
        super().__init__(f"partition {partition!r}: {message}")
        # Pickling (across Dask or process-pool workers) is ReplayKitError's: ``cause``
        # crosses as itself when it pickles, else as a RuntimeError naming its type and message.


@dataclass(frozen=True)
class Partition:
    """One run-aligned unit of work.

    Attributes:
        name: stable name (relative file path, or ``"partition <i>"``); used in errors,
            progress and as the key of out-of-core outputs.
        index: position in the dataset order (tenant, then file number).
        path: the Parquet file (None for in-memory / dask.dataframe partitions).
        tenant_id: the tenant of a hive partition directory (None when not known).
        root: the dataset root (its tenant folders' ``_runs.parquet`` hold run header
            metadata).
        table: the events of an in-memory partition (None otherwise).
        filter: a ``pyarrow.dataset`` expression pushed into the file's scan (the filters of
            a :class:`replaykit.ingest.Dataset` view; None: every row). Row groups whose
            statistics cannot match are skipped.
    """

    name: str
    index: int
    path: str | None = None
    tenant_id: str | None = None
    root: str | None = None
    table: pa.Table | None = None
    filter: Any = None

    def load(self, data: Any = None) -> EventLog:
        """The partition as a sorted, canonical :class:`EventLog` (``data``: a pandas
        partition of a dask.dataframe source, or a scattered Arrow table)."""
        if self.table is not None:
            return EventLog(self.table)
        if isinstance(data, pa.Table):
            return EventLog(data)
        if data is not None:
            return EventLog(_canonical(pa.Table.from_pandas(data, preserve_index=False)))
        assert self.path is not None
        if self.tenant_id is None:
            return EventLog(_canonical(pq.read_table(self.path, filters=self.filter)))
        # the same partition check as read_parquet: rows must be the folder's tenant's
        return EventLog(read_partition_files([(self.tenant_id, self.path)], filter=self.filter))

    def run_meta(self, log: EventLog) -> pa.Table | None:
        """Rows of the dataset's ``_runs.parquet`` for the runs of ``log`` (None: none)."""
        if self.root is None:
            return None
        f = Path(self.root) / RUNS_FILE  # the layout before issue 30: one file at the root
        if self.tenant_id is not None and not f.exists():
            f = Path(self.root) / partition_dir_name(self.tenant_id) / RUNS_FILE
        if not f.exists() or len(log) == 0:
            return None
        runs = pc.unique(pc.cast(log.table.column("run_id"), pa.string()))
        meta = pq.read_table(f, filters=pc.field("run_id").isin(runs))
        if self.tenant_id is not None and "tenant_id" in meta.schema.names:
            meta = meta.filter(pc.equal(pc.cast(meta.column("tenant_id"), pa.string()),
                                        self.tenant_id))
        return meta


def _canonical(t: pa.Table) -> pa.Table:
    missing = [f.name for f in EVENTS_SCHEMA if f.name not in t.schema.names]
    cols = []
    for f in EVENTS_SCHEMA:
        if f.name in missing:
            cols.append(pa.nulls(t.num_rows, f.type))
            continue
        c = t.column(f.name)
        cols.append(c.cast(f.type) if c.type != f.type else c)
    return pa.Table.from_arrays(cols, schema=EVENTS_SCHEMA).unify_dictionaries().combine_chunks()


def _cuts(table: pa.Table, partition_events: int) -> list[tuple[int, int]]:
    """Row ranges [a, b) of whole runs, about ``partition_events`` rows each, never crossing
    a tenant boundary (column-wise: one cumulative sum over run starts)."""
    n = table.num_rows
    if n == 0:
        return []
    if partition_events < 1:
        raise ValueError(f"partition_events must be >= 1, got {partition_events}")
    starts = np.flatnonzero(_run_starts(table))
    tenant = _dictionary_rank(table.column("tenant_id"))
    t_of_run = tenant[starts]
    new_tenant = np.r_[True, t_of_run[1:] != t_of_run[:-1]]
    tenant_first_row = starts[new_tenant][np.cumsum(new_tenant) - 1]
    bucket = (starts - tenant_first_row) // partition_events  # by where each run starts
    key = np.cumsum(new_tenant) * (n + 1) + bucket
    cut = np.r_[True, key[1:] != key[:-1]]
    lo = starts[cut]
    hi = np.r_[lo[1:], n]
    return list(zip(lo.tolist(), hi.tolist(), strict=True))


@provide("EventLog.to_parquet")
def write_partitioned(
    log: EventLog,
    path: str | os.PathLike[str],
    *,
    partition_events: int = DEFAULT_PARTITION_EVENTS,
    overwrite: bool = False,
) -> Path:
    """Write ``log`` in the :meth:`EventLog.to_parquet` layout, one file per run-aligned
    partition of about ``partition_events`` events (a file never splits a run).

    Layout: ``path/tenant_id=<id>/part-<k>.parquet`` (runs sorted by run_id, seq), and in
    each tenant's folder its side files ``_runs.parquet`` and ``_quarantine.parquet`` (with
    their ``tenant_id`` column); at the root only ``_quarantine_no_tenant.parquet``, the
    quarantined rows whose tenant could not be read. :func:`replaykit.read_parquet` reads
    it, and the Dask engine maps one task per file.

    Example:
        >>> import replaykit as rk  # doctest: +SKIP
        >>> rk.engine.write_partitioned(log, "events/", partition_events=500_000)  # doctest: +SKIP

    Folder names are :func:`replaykit.tenancy.partition_dir_name` (the tenant id
    percent-encoded, reversibly), and every file names its tenant in its footer metadata
    (key ``replaykit.tenant_id``) so readers check each file against its folder; the
    ``tenant_id`` column itself is left to the folder (hive layout, as pandas and Dask read
    it).

    Raises:
        FileExistsError: ``path`` exists and is not empty, unless ``overwrite=True``.
        ValueError: ``partition_events < 1``.
        LoadError: ``reason="bad_tenant"``: a tenant id of the events, runs or quarantine
            breaks the tenant-id rule (checked before anything is written).
    """
    out = Path(path)
    check_tenant_column(log.table.column("tenant_id"), source=f"{out} (events to write)")
    check_tenant_column(log.runs.column("tenant_id"), source=f"{out} (runs to write)")
    check_tenant_column(log.quarantine.column("tenant_id"), nullable=True,
                        source=f"{out} (quarantine to write)")
    # every tenant of the events, runs or quarantine gets a folder (its side files live there)
    side_tenants = {*_strings(log.runs.column("tenant_id")),
                    *_strings(log.quarantine.column("tenant_id"))}
    all_tenants = sorted(set(log.tenants) | side_tenants)
    for tenant in all_tenants:  # every folder name must fit, before anything is written
        try:
            partition_dir_name(tenant)
        except LoadError as err:
            raise LoadError(source=f"{out} (events to write)", line=None, field="tenant_id",
                            reason="bad_tenant", detail=err.detail, fix=err.fix) from None
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise FileExistsError(f"{out} exists and is not empty; pass overwrite=True")
        import shutil

        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    # every tenant's folder first, each one new: on a file system that folds case (macOS,
    # Windows) or normalises names, "ACME" and "acme" would otherwise share one folder and
    # one tenant's part-0.parquet would replace the other's
    made: dict[str, str] = {}
    for tenant in all_tenants:
        d = out / partition_dir_name(tenant)
        try:
            d.mkdir()
        except FileExistsError:
            other = next((t for t, name in made.items()
                          if (out / name).exists() and os.path.samefile(out / name, d)), None)
            import shutil

            for name in made.values():
                shutil.rmtree(out / name, ignore_errors=True)
            raise LoadError(
                source=str(out), line=None, field="tenant_id", reason="bad_tenant",
                detail=(f"tenant ids {other!r} and {tenant!r} get the same partition folder "
                        "on this file system (it folds case or normalises names); nothing "
                        "was written"),
                fix=("write the dataset on a case-sensitive file system, write those "
                     "tenants to separate datasets, or store them with write_sql")) from None
        made[tenant] = d.name
    table = log.table
    counters: dict[str, int] = {}
    cuts = _cuts(table, partition_events)
    body = table.drop_columns(["tenant_id"])
    tenants = table.column("tenant_id")
    for a, b in cuts:
        tenant = tenants[a].as_py()
        k = counters.get(tenant, 0)
        counters[tenant] = k + 1
        d = out / made[tenant]
        # the file names its tenant in its footer (TENANT_KEY), which readers check against
        # the folder; no tenant_id column, so hive readers (pandas.read_parquet(path), ...)
        # still take it from the folder without a type clash
        # ... and its dictionary pages hold only its own values (a slice keeps the whole
        # log's dictionaries: other tenants' run ids, tool names, sources)
        part = compact_dictionaries(body.slice(a, b - a)).replace_schema_metadata(
            {**(body.schema.metadata or {}), TENANT_KEY: tenant.encode("utf-8")})
        pq.write_table(part, d / f"part-{k}.parquet",
                       row_group_size=min(1_000_000, max(1, b - a)))
    # side files per tenant, inside its folder (whoever may open only tenant_id=<id>/ reads
    # that tenant completely, and nothing of another), each with its tenant_id column and
    # only its own dictionary values; at the root only the quarantined rows of no known tenant
    runs_t = _strings_column(log.runs.column("tenant_id"))
    quar_t = _strings_column(log.quarantine.column("tenant_id"))
    for tenant, name in made.items():
        for side, col, file in ((log.runs, runs_t, RUNS_FILE),
                                (log.quarantine, quar_t, QUARANTINE_FILE)):
            mine = side.filter(pc.fill_null(pc.equal(col, tenant), False))
            pq.write_table(compact_dictionaries(mine), out / name / file)
    pq.write_table(compact_dictionaries(log.quarantine.filter(pc.is_null(quar_t))),
                   out / NO_TENANT_QUARANTINE_FILE)
    return out


def _strings_column(col: pa.ChunkedArray) -> pa.Array:
    arr = col.combine_chunks()
    return arr if arr.type == pa.string() else pc.cast(arr, pa.string())


def _strings(col: pa.ChunkedArray) -> list[str]:
    return [v for v in pc.unique(_strings_column(col)).to_pylist() if v is not None]


_PART_NO = re.compile(r"(\d+)")


def _natural(name: str) -> tuple[Any, ...]:
    return tuple(int(s) if s.isdigit() else s for s in _PART_NO.split(name))


def _file_partitions(root: Path, check: bool) -> list[Partition]:
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such Parquet dataset")
    # the same folder rule as read_parquet: canonical tenant_id=<encoded id> folders only
    found = partition_files(root)
    if not found:
        raise FileNotFoundError(
            f"{root}: no tenant_id=<id>/*.parquet files; write the dataset with "
            "EventLog.to_parquet or replaykit.engine.write_partitioned"
        )
    found.sort(key=lambda tf: (tf[0], _natural(str(tf[1].relative_to(root)))))
    parts = [
        Partition(name=str(f.relative_to(root)), index=i, path=str(f), tenant_id=t,
                  root=str(root))
        for i, (t, f) in enumerate(found)
    ]
    if check:
        _check_no_split(parts)
    return parts


def _run_range(path: str) -> tuple[str, str] | None:
    try:
        md = pq.ParquetFile(path).metadata
    except (OSError, pa.ArrowException):  # unreadable: its task fails and names the file
        return None
    if md.num_rows == 0:
        return None
    names = md.schema.to_arrow_schema().names
    if "run_id" not in names:
        return None
    col = names.index("run_id")
    lo: str | None = None
    hi: str | None = None
    for g in range(md.num_row_groups):
        st = md.row_group(g).column(col).statistics
        if st is None or not st.has_min_max:
            return None
        mn, mx = st.min, st.max
        mn = mn.decode() if isinstance(mn, bytes) else mn
        mx = mx.decode() if isinstance(mx, bytes) else mx
        lo = mn if lo is None or mn < lo else lo
        hi = mx if hi is None or mx > hi else hi
    assert lo is not None and hi is not None
    return lo, hi


def _check_no_split(parts: list[Partition],
                    ranges: list[tuple[str, str] | None] | None = None) -> None:
    """Files of one tenant must hold disjoint run-id ranges (Parquet footer statistics;
    ``ranges``: the files' :func:`_run_range`, read here when not given)."""
    if ranges is None:
        ranges = [_run_range(p.path) for p in parts if p.path is not None]
    by_tenant: dict[str | None, list[tuple[str, str, str]]] = {}
    for p, r in zip(parts, ranges, strict=True):
        if r is not None:
            by_tenant.setdefault(p.tenant_id, []).append((r[0], r[1], p.name))
    for tenant, spans in by_tenant.items():
        spans.sort()
        for (_, hi, name), (lo2, _, name2) in zip(spans, spans[1:], strict=False):
            if lo2 <= hi:
                raise EngineError(
                    name2,
                    f"its run ids overlap those of {name!r} (tenant {tenant!r}): a run may be "
                    "split across files, and per-run results would be wrong. Rewrite the "
                    "dataset with replaykit.engine.write_partitioned(log, path) (files that "
                    "never split a run).",
                )


@dataclass(frozen=True)
class FileIndex:
    """Which files of a Parquet dataset can hold which runs, from the files' footers.

    Built once on the client (:func:`file_index`: one footer read per file) and shipped to
    the tasks, so a task that needs a few runs opens only the files that can hold them
    instead of every file of the dataset. Per tenant, the files' run-id ranges (Parquet
    min/max statistics, :func:`_run_range`) are sorted by their lower bound; they are
    disjoint (:func:`_check_no_split`), so one ``np.searchsorted`` finds the only file that
    can hold a run. A file without statistics can hold anything and is always read.

    Attributes:
        root: the dataset root.
        files: the partition files, in dataset order.
        ranged: tenant -> (lows, highs, positions in ``files``) of its files with
            statistics, sorted by low.
        unranged: tenant -> positions in ``files`` of its files without statistics.
        tenants: the folder tenant of each file of ``files`` (empty: read from the path, a
            ``tenant_id=<id>`` folder right under ``root``).
        filter: a ``pyarrow.dataset`` expression ANDed into every read (a
            :class:`replaykit.ingest.Dataset` view's filters; None: none).
    """

    root: str
    files: tuple[str, ...]
    ranged: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]
    unranged: dict[str, np.ndarray]
    tenants: tuple[str, ...] = ()
    filter: Any = None

    def lookup(self, tenants: list[str] | None, run_ids: list[str]) -> list[str]:
        """The files that can hold any of ``run_ids`` of ``tenants`` (None: any tenant), in
        dataset order."""
        if not run_ids:
            return []
        runs = np.asarray(run_ids, dtype=str)
        hits: list[np.ndarray] = []
        for tenant in (self.ranged.keys() | self.unranged.keys()) if tenants is None \
                else tenants:
            if tenant in self.ranged:
                lows, highs, pos = self.ranged[tenant]
                i = np.searchsorted(lows, runs, side="right") - 1  # last file with low <= run
                ok = i >= 0
                ok[ok] = runs[ok] <= highs[i[ok]]
                hits.append(pos[np.unique(i[ok])])
            if tenant in self.unranged:
                hits.append(self.unranged[tenant])
        found = np.unique(np.concatenate(hits)) if hits else np.zeros(0, np.int64)
        return [self.files[k] for k in found.tolist()]

    def read(self, tenants: list[str] | None, run_ids: list[str]) -> EventLog:
        """The events of ``run_ids`` of ``tenants`` (None: any tenant), as
        :func:`replaykit.read_parquet` with those filters gives them, but opening only the
        files that can hold them (:meth:`lookup`). The log carries no run metadata
        (``_runs.parquet``).

        Raises:
            OSError / pyarrow.ArrowException: a file to read is unreadable.
        """
        import pyarrow.dataset as ds

        from ..schema import empty_events

        files = self.lookup(tenants, run_ids)
        if not files:
            return EventLog(empty_events())
        owned = []
        tenant_of = dict(zip(self.files, self.tenants, strict=True)) if self.tenants else {}
        for f in files:  # the folder's tenant (checked when the index was built)
            tenant = tenant_of.get(f)
            if tenant is None:
                tenant, _ = partition_dir_tenant(Path(f).relative_to(self.root).parts[0])
            assert tenant is not None
            owned.append((tenant, f))
        expr = ds.field("run_id").isin(run_ids)
        if self.filter is not None:
            expr = expr & self.filter
        # the same partition check as read_parquet: rows must be the folder's tenant's
        return EventLog(read_partition_files(owned, filter=expr))


def file_index(source: Any) -> FileIndex:
    """The :class:`FileIndex` of a dataset in the :meth:`EventLog.to_parquet` layout (its
    footers are checked as :func:`partitions` checks them), or of a
    :class:`PartitionSource` (a :class:`replaykit.ingest.Dataset` view: only its files, its
    filters ANDed into every read).

    Raises:
        FileNotFoundError: no such dataset, or it holds no partition files.
        EngineError: two files of one tenant hold overlapping run ids.
    """
    if is_partition_source(source):
        parts = source.engine_partitions(check=False)
        root = Path(source.path).absolute()
        expr = parts[0].filter if parts else None  # one view: the same filter on each
    else:
        root = Path(source).absolute()  # workers may have another working directory
        parts = _file_partitions(root, check=False)
        expr = None
    ranges = [_run_range(p.path) for p in parts if p.path is not None]
    _check_no_split(parts, ranges)
    ranged: dict[str, list[tuple[str, str, int]]] = {}
    unranged: dict[str, list[int]] = {}
    for k, (p, r) in enumerate(zip(parts, ranges, strict=True)):
        tenant = str(p.tenant_id)
        if r is None:
            unranged.setdefault(tenant, []).append(k)
        else:
            ranged.setdefault(tenant, []).append((r[0], r[1], k))
    arrays: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for tenant, spans in ranged.items():
        spans.sort()
        arrays[tenant] = (np.asarray([s[0] for s in spans], dtype=str),
                          np.asarray([s[1] for s in spans], dtype=str),
                          np.asarray([s[2] for s in spans], dtype=np.int64))
    return FileIndex(root=str(root), files=tuple(str(p.path) for p in parts), ranged=arrays,
                     unranged={t: np.asarray(v, dtype=np.int64) for t, v in unranged.items()},
                     tenants=tuple(str(p.tenant_id) for p in parts), filter=expr)


def _table_partitions(log: EventLog, partition_events: int) -> list[Partition]:
    t = log.table
    return [Partition(name=f"partition {i}", index=i, table=t.slice(a, b - a))
            for i, (a, b) in enumerate(_cuts(t, partition_events))]


class PartitionSource(Protocol):
    """A lazy view of a dataset that plans its own partitions (what
    :class:`replaykit.ingest.Dataset` is): ``engine_partitions(check=...)`` gives its
    run-aligned file partitions, each carrying the view's filters (``Partition.filter``),
    and ``path`` is the dataset root. The engine takes it wherever it takes a dataset path,
    without importing the layer that defines it."""

    path: Any

    def engine_partitions(self, *, check: bool = True) -> list[Partition]: ...


def is_partition_source(obj: Any) -> bool:
    """Whether ``obj`` is a :class:`PartitionSource` (e.g. a :class:`replaykit.ingest.Dataset`)."""
    return callable(getattr(obj, "engine_partitions", None)) and hasattr(obj, "path")


def partitions(
    source: Any, *, partition_events: int = DEFAULT_PARTITION_EVENTS, check: bool = True
) -> list[Partition]:
    """The run-aligned partitions of ``source``, in dataset order.

    ``source``: a dataset directory (:meth:`EventLog.to_parquet` / :func:`write_partitioned`
    layout; one partition per file, checked with ``check=True`` from the Parquet footers not
    to split runs), a :class:`PartitionSource` (a :class:`replaykit.ingest.Dataset` view: the
    files its filters can match, each with the filters pushed into its scan), or an
    :class:`EventLog` (cut into slices of about ``partition_events`` events at run
    boundaries). dask.dataframe sources are handled by the Dask engine.

    >>> parts = partitions("events/")  # doctest: +SKIP
    >>> parts[0].name  # doctest: +SKIP
    'tenant_id=acme/part-0.parquet'

    Raises:
        FileNotFoundError: no such dataset, or it holds no partition files.
        EngineError: two files of one tenant hold overlapping run ids.
        TypeError: ``source`` is neither a path nor an EventLog.
    """
    if isinstance(source, (str, os.PathLike)):
        # absolute: the tasks may run in worker processes with another working directory
        return _file_partitions(Path(source).absolute(), check)
    if isinstance(source, EventLog):
        return _table_partitions(source, partition_events)
    if is_partition_source(source):
        return list(source.engine_partitions(check=check))
    raise TypeError(
        "source must be a Parquet dataset path, a replaykit.ingest.Dataset, an EventLog or a "
        "dask.dataframe in the "
        f"canonical schema, got {type(source).__name__}"
    )
