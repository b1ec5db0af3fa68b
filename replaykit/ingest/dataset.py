""":func:`open_dataset`: a lazy handle on a run-aligned Parquet dataset (nothing is loaded until
asked; the grain tables are computed one part file at a time)."""

from __future__ import annotations

import os
import re
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..engine import Partition
from ..engine._parts import _check_no_split
from ..eventlog.dataset import (
    RUNS_FILE,
    _partition_dirs,
    partition_files,
    pin_folders,
    read_parquet,
    utc_time,
)
from ..eventlog.log import RUN_STAT_COLUMNS, RUNS_SCHEMA, EventLog, runs_frame
from ..tenancy import check_tenant_ids, partition_dir_tenant
from ._merge import STATS_FILE, STATS_SCHEMA

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow.dataset as ds

__all__ = ["Dataset", "open_dataset"]


def _utc(v: Any) -> Any:
    """A time bound as a UTC ``pandas.Timestamp`` (:func:`replaykit.eventlog.dataset.utc_time`)."""
    return utc_time(v)


def _values(v: str | Sequence[str] | None) -> list[str] | None:
    return None if v is None else ([v] if isinstance(v, str) else list(v))


class Dataset:
    """A lazy view of a dataset written by :func:`replaykit.ingest` or
    :meth:`EventLog.to_parquet`: filters are recorded, and pushed into the Parquet scan when
    something is computed. Build it with :func:`open_dataset`.

    :func:`replaykit.cohorts`, :func:`replaykit.fold`, :func:`replaykit.compare` and
    :func:`replaykit.verify_chain` take a Dataset and run out of core on the Dask engine, one
    task per part file the filters can match (:meth:`engine_partitions`), with the in-memory
    engine's answer on :meth:`load` (Dask's threaded scheduler, or a cluster with
    ``client=``).

    Example:
        >>> ds = rk.open_dataset("semester/")  # doctest: +SKIP
        >>> ds.runs_df()  # from the side files: no event is read  # doctest: +SKIP
        >>> week = ds.filter(since="2026-03-02", until="2026-03-08")  # doctest: +SKIP
        >>> week.tools_df()  # one part file at a time  # doctest: +SKIP
        >>> ds.run("chat_42", tenant_id="acme").calls_df()  # doctest: +SKIP
        >>> rk.cohorts(ds, by="semester").compare("2025-fall", "2026-spring")  # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike[str], *, tenant_id: list[str] | None = None,
                 runs: list[str] | None = None, since: Any = None, until: Any = None,
                 types: list[str] | None = None) -> None:
        self.path = Path(path)
        self._tenants = tenant_id
        self._runs = runs
        self._since = since
        self._until = until
        self._types = types

    # ------------------------------------------------------------------ selection
    def filter(self, *, tenant_id: str | Sequence[str] | None = None,
               runs: str | Sequence[str] | None = None, since: Any = None, until: Any = None,
               types: str | Sequence[str] | None = None) -> Dataset:
        """A narrower view (ANDed with this one's filters): tenants (folders not opened),
        runs, a time window (inclusive, anything pandas reads as a UTC time) and source
        event types; all pushed into the Parquet scan.

        Raises:
            LoadError: ``reason="bad_tenant"``: a tenant id breaks the tenant-id rule.
        """

        def both(old: list[str] | None, new: list[str] | None) -> list[str] | None:
            if new is None:
                return old
            return new if old is None else [v for v in old if v in set(new)]

        tenants = None if tenant_id is None else check_tenant_ids(
            tenant_id, source="Dataset.filter(tenant_id=...)")
        since = None if since is None else _utc(since)  # a bad bound raises here
        until = None if until is None else _utc(until)
        s = since if self._since is None else (
            self._since if since is None else max(since, self._since))
        u = until if self._until is None else (
            self._until if until is None else min(until, self._until))
        return Dataset(self.path, tenant_id=both(self._tenants, tenants),
                       runs=both(self._runs, _values(runs)), since=s, until=u,
                       types=both(self._types, _values(types)))

    def _expr(self) -> ds.Expression | None:
        import pyarrow.dataset as ds

        expr = None
        parts = []
        if self._runs is not None:
            parts.append(ds.field("run_id").isin(self._runs))
        if self._types is not None:
            parts.append(ds.field("type").isin(self._types))
        ts = pa.timestamp("us", tz="UTC")
        if self._since is not None:
            parts.append(ds.field("ts") >= pa.scalar(self._since.as_unit("us"), type=ts))
        if self._until is not None:
            parts.append(ds.field("ts") <= pa.scalar(self._until.as_unit("us"), type=ts))
        for p in parts:
            expr = p if expr is None else expr & p
        return expr

    @property
    def whole_runs(self) -> bool:
        """Whether the view holds its runs whole: it filters by tenant and run at most (a
        time window or event types keep only some rows of a run)."""
        return self._since is None and self._until is None and self._types is None

    @property
    def tenants(self) -> list[str]:
        """The tenants of the view (folder names; no file is opened)."""
        out = []
        for d in _partition_dirs(self.path, self._tenants):
            t, problem = partition_dir_tenant(d.name)
            if problem is None and t is not None and (self._tenants is None
                                                       or t in self._tenants):
                out.append(t)
        return out

    def files(self) -> list[tuple[str, Path]]:
        """(tenant, part file) of the view, in dataset order."""
        if not self.path.exists():
            raise FileNotFoundError(f"{self.path}: no such Parquet dataset")
        # each tenant folder resolved once: one call sees one generation of each tenant
        return partition_files(self.path, self._tenants,
                               pins=pin_folders(self.path, self._tenants))

    def __len__(self) -> int:
        """Events in the dataset's files (from the footers; filters other than tenants are
        not applied: use ``len(view.load())`` for those)."""
        return sum(pq.ParquetFile(f).metadata.num_rows for _, f in self.files())

    def engine_partitions(self, *, check: bool = True) -> list[Partition]:
        """The view's work for the engine (:func:`replaykit.engine.partitions`): one
        :class:`~replaykit.engine.Partition` per part file that can hold a row of the view,
        each carrying the view's filters (``Partition.filter``, pushed into its scan).

        Only the view's tenants' folders are listed; each listed file's footer is read once,
        and a file whose statistics say it cannot match (its run-id range holds none of the
        view's runs, its ``ts`` range lies outside the time window) gets no partition, so
        no task opens it. Partitions are in (tenant, first run id) order, the order of the
        loaded log's runs.

        Raises:
            FileNotFoundError: the dataset folder does not exist.
            EngineError: ``check=True`` and two files of one tenant hold overlapping run ids
                (a run split across files; per-run results would be wrong).
        """
        if not self.path.exists():
            raise FileNotFoundError(f"{self.path}: no such Parquet dataset")
        pins = pin_folders(self.path, self._tenants)  # one generation of each tenant
        by_dir = {v: k for k, v in pins.items()}
        root = self.path.absolute()
        runs = None if self._runs is None else sorted(self._runs)
        expr = self._expr()
        kept: list[tuple[str, str, str, Path, tuple[str, str] | None]] = []
        for tenant, f in partition_files(self.path, self._tenants, pins=pins):
            span = _footer_spans(f)
            run_span = span.get("run_id")
            if runs is not None and run_span is not None and not _any_within(runs, *run_span):
                continue
            ts_span = span.get("ts")
            if ts_span is not None and (
                    (self._since is not None and ts_span[1] < self._since)
                    or (self._until is not None and ts_span[0] > self._until)):
                continue
            folder = f.parent
            while folder not in by_dir and folder != folder.parent:
                folder = folder.parent
            rel = f.relative_to(folder) if folder in by_dir else Path(f.name)
            name = f"{by_dir.get(folder, _dir_of(root, tenant))}/{rel.as_posix()}"
            kept.append((tenant, "" if run_span is None else str(run_span[0]), name, f,
                         None if run_span is None else (str(run_span[0]), str(run_span[1]))))
        kept.sort(key=lambda k: (k[0], k[1], _natural(k[2])))
        parts = [Partition(name=name, index=i, path=str(f.absolute()), tenant_id=tenant,
                           root=str(root), filter=expr)
                 for i, (tenant, _, name, f, _) in enumerate(kept)]
        if check:
            _check_no_split(parts, [k[4] for k in kept])
        return parts

    def partitions(self) -> Iterator[EventLog]:
        """The view one part file at a time, each an EventLog of whole runs (the filters
        pushed into the scan; files whose footer statistics cannot match are not opened)."""
        for part in self.engine_partitions(check=False):
            log = part.load()
            if len(log):
                yield log

    # ------------------------------------------------------------------ tables
    def runs_df(self) -> pd.DataFrame:
        """:meth:`EventLog.runs_df` of the view. From the side files only (the per-run
        numbers ``ingest`` keeps beside each tenant's parts and ``_runs.parquet``) when the
        view filters by tenant and run at most; otherwise (a time window, event types, or a
        dataset without those side files) computed part file by part file."""
        exact = self.whole_runs
        stats, runs = [], []
        pins = pin_folders(self.path, self._tenants)
        for tenant in self.tenants:
            name = _dir_of(self.path, tenant)
            d = pins.get(name, self.path / name)
            st = d / STATS_FILE
            if not (exact and st.exists()):
                return self._runs_df_by_part()
            stats.append(pq.read_table(st).cast(STATS_SCHEMA))
            if (d / RUNS_FILE).exists():
                runs.append(pq.read_table(d / RUNS_FILE).cast(RUNS_SCHEMA))
        stat = pa.concat_tables(stats) if stats else STATS_SCHEMA.empty_table()
        run = pa.concat_tables(runs) if runs else RUNS_SCHEMA.empty_table()
        if self._runs is not None:
            keep = pa.array(self._runs, pa.string())
            stat = stat.filter(pc.is_in(stat.column("run_id"), keep))
            run = run.filter(pc.is_in(run.column("run_id"), keep))
        stat = stat.sort_by([("tenant_id", "ascending"), ("run_id", "ascending")])
        formats = stat.column("format").to_numpy(zero_copy_only=False)
        return runs_frame(stat.select(list(RUN_STAT_COLUMNS)), run, lambda _df: formats)

    def _runs_df_by_part(self) -> pd.DataFrame:
        """runs_df over the view's rows, one part file at a time: each part's per-run numbers
        (runs are whole in a file), then the header rows, as EventLog.runs_df joins them."""
        stats, formats = [], []
        for p in self.partitions():
            stats.append(p._run_stats())
            formats.append(p._formats_per_run(None))
        import numpy as np

        stat = pa.concat_tables(stats) if stats else EventLog(_empty())._run_stats()
        fmt = np.concatenate(formats) if formats else np.zeros(0, dtype=object)
        return runs_frame(stat, self.load_runs(), lambda _df: fmt)

    def load_runs(self) -> pa.Table:
        """The view's ``_runs.parquet`` rows (run headers)."""
        runs = []
        pins = pin_folders(self.path, self._tenants)  # the generation the parts are read from
        for tenant in self.tenants:
            name = _dir_of(self.path, tenant)
            f = pins.get(name, self.path / name) / RUNS_FILE
            if f.exists():
                runs.append(pq.read_table(f).cast(RUNS_SCHEMA))
        t = pa.concat_tables(runs) if runs else RUNS_SCHEMA.empty_table()
        if self._runs is not None:
            t = t.filter(pc.is_in(t.column("run_id"), pa.array(self._runs, pa.string())))
        return t

    def _grain(self, name: str) -> pd.DataFrame:
        import pandas as pd

        frames = [getattr(p, name)() for p in self.partitions()]
        if not frames:
            return getattr(EventLog(_empty()), name)()
        return pd.concat(frames, ignore_index=True)

    def calls_df(self) -> pd.DataFrame:
        """:meth:`EventLog.calls_df` of the view, one part file at a time (runs are whole in
        a file, so the rows are those of the loaded log)."""
        return self._grain("calls_df")

    def tools_df(self) -> pd.DataFrame:
        """:meth:`EventLog.tools_df` of the view, one part file at a time."""
        return self._grain("tools_df")

    def turns_df(self) -> pd.DataFrame:
        """:meth:`EventLog.turns_df` of the view, one part file at a time."""
        return self._grain("turns_df")

    # ------------------------------------------------------------------ materialise
    def load(self) -> EventLog:
        """The view as an ordinary in-memory EventLog (:func:`replaykit.read_parquet` with
        the view's filters).

        Raises:
            LoadError: as :func:`replaykit.read_parquet`.
        """
        # read_parquet takes the bounds as text (pd.Timestamp(aware, tz=...) would refuse them)
        return read_parquet(self.path, tenant_id=self._tenants, run_ids=self._runs,
                            types=self._types,
                            since=None if self._since is None else self._since.isoformat(),
                            until=None if self._until is None else self._until.isoformat())

    def run(self, run_id: str, *, tenant_id: str | None = None) -> EventLog:
        """One run as an EventLog (only its tenant's folder is scanned, and Parquet statistics
        skip the files that cannot hold it). ``tenant_id`` may be left out when the view
        holds one tenant.

        Raises:
            KeyError: no such run.
            ValueError: ``tenant_id`` left out and the view holds several tenants.
        """
        if tenant_id is None:
            tenants = self.tenants
            if len(tenants) != 1:
                raise ValueError(f"the dataset holds {len(tenants)} tenants: name the run's "
                                 f"tenant, run({run_id!r}, tenant_id=...)")
            tenant_id = tenants[0]
        log = self.filter(tenant_id=tenant_id, runs=[run_id]).load()
        if not len(log):
            raise KeyError(f"tenant {tenant_id!r} has no run {run_id!r} in {self.path}; see "
                           "runs_df() for the runs it holds")
        return log

    def __repr__(self) -> str:
        f = {k: v for k, v in (("tenant_id", self._tenants), ("runs", self._runs),
                               ("since", self._since), ("until", self._until),
                               ("types", self._types)) if v is not None}
        extra = "".join(f", {k}={v!r}" for k, v in f.items())
        return f"Dataset({str(self.path)!r}{extra})"


_DIGITS = re.compile(r"(\d+)")


def _natural(name: str) -> tuple[Any, ...]:
    return tuple(int(v) if v.isdigit() else v for v in _DIGITS.split(name))


def _footer_spans(path: Path) -> dict[str, tuple[Any, Any]]:
    """(min, max) of the ``run_id`` and ``ts`` columns of a part file, over its row groups,
    from its footer (a column without statistics in some row group is left out: nothing
    can be skipped on it). An unreadable footer gives nothing (its task then fails and
    names the file)."""
    try:
        md = pq.ParquetFile(path).metadata
    except (OSError, pa.ArrowException):
        return {}
    if md.num_rows == 0:
        return {}
    cols = {md.schema.column(i).path: i for i in range(md.num_columns)}
    out: dict[str, tuple[Any, Any]] = {}
    for name in ("run_id", "ts"):
        i = cols.get(name)
        if i is None:
            continue
        lo = hi = None
        for g in range(md.num_row_groups):
            st = md.row_group(g).column(i).statistics
            if md.row_group(g).num_rows == 0:
                continue
            if st is None or not st.has_min_max:
                lo = None
                break
            mn, mx = st.min, st.max
            if isinstance(mn, bytes):
                mn, mx = mn.decode(), mx.decode()
            lo = mn if lo is None or mn < lo else lo
            hi = mx if hi is None or mx > hi else hi
        if lo is not None:
            out[name] = (lo, hi)
    if "ts" in out:  # aware datetimes, compared with the view's UTC bounds
        out["ts"] = (_utc(out["ts"][0]), _utc(out["ts"][1]))
    return out


def _any_within(sorted_values: list[str], lo: str, hi: str) -> bool:
    """Whether any of ``sorted_values`` lies in [lo, hi]."""
    i = bisect_left(sorted_values, lo)
    return i < len(sorted_values) and sorted_values[i] <= hi


def _dir_of(root: Path, tenant: str) -> str:
    from ..tenancy import partition_dir_name

    return partition_dir_name(tenant)


def _empty() -> pa.Table:
    from ..schema import empty_events

    return empty_events()


def open_dataset(path: str | os.PathLike[str]) -> Dataset:
    """A lazy handle on a dataset written by :func:`replaykit.ingest` (or
    :meth:`EventLog.to_parquet`): ``runs_df()`` from the side files, ``calls_df()`` /
    ``tools_df()`` / ``turns_df()`` one part file at a time, ``filter(...)`` pushed into the
    scan, ``load()`` / ``run(...)`` for an ordinary EventLog; ``rk.cohorts`` / ``rk.fold`` /
    ``rk.compare`` / ``rk.verify_chain`` take it and run out of core (docs/scaling.md).

    >>> ds = rk.open_dataset("semester/")  # doctest: +SKIP
    >>> ds.filter(tenant_id="acme").runs_df()  # doctest: +SKIP

    Raises:
        FileNotFoundError: ``path`` does not exist.
    """
    p = Path(path)
    if not p.is_dir():
        raise FileNotFoundError(f"{p}: no such Parquet dataset (write one with rk.ingest)")
    return Dataset(p)
