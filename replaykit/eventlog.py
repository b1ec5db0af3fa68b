"""EventLog: an immutable Arrow table of events in the canonical schema, plus its side tables."""

from __future__ import annotations

import html
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from .errors import SchemaError
from .schema import (
    EVENTS_SCHEMA,
    QUARANTINE_SCHEMA,
    _dictionary_rank,
    empty_events,
    sort_events,
    validate,
)

__all__ = ["EventLog", "RUNS_SCHEMA", "concat", "read_parquet"]

_DICT = pa.dictionary(pa.int32(), pa.string())

#: Per-run metadata that loaders find in headers (not computed from events).
RUNS_SCHEMA: pa.Schema = pa.schema(
    [
        pa.field("tenant_id", pa.string(), nullable=False),
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("parent_run_id", pa.string()),
        pa.field("format", pa.string(), nullable=False),
        pa.field("source", pa.string()),
        pa.field("created_at", pa.timestamp("us", tz="UTC")),
        pa.field("attrs", pa.large_string()),  # JSON object of every other header field
    ]
)

#: The computed columns of :meth:`EventLog.runs_df`, in order (header attributes follow them).
RUN_STAT_COLUMNS: tuple[str, ...] = (
    "tenant_id",
    "run_id",
    "parent_run_id",
    "events",
    "first_ts",
    "last_ts",
    "turns",
    "model_calls",
    "tool_calls",
    "errors",
)

_NULLABLE_PANDAS = {
    pa.int8(): pd.Int8Dtype(),
    pa.int16(): pd.Int16Dtype(),
    pa.int32(): pd.Int32Dtype(),
    pa.int64(): pd.Int64Dtype(),
    pa.bool_(): pd.BooleanDtype(),
}


def to_pandas(table: pa.Table) -> pd.DataFrame:
    """Arrow -> pandas with nullable integer/boolean dtypes (no int -> float surprises)."""
    return table.to_pandas(types_mapper=_NULLABLE_PANDAS.get)


def _empty_runs() -> pa.Table:
    return RUNS_SCHEMA.empty_table()


def _str_values(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return pc.cast(arr, pa.string())


class EventLog:
    """Events in the canonical schema, sorted by (tenant_id, run_id, seq). Immutable.

    Build one with a loader (:func:`replaykit.read_toh`, :func:`replaykit.read_pleach`,
    :func:`replaykit.read_isplay`, :func:`replaykit.read_events`, :func:`read_parquet`) or
    from a table: ``EventLog(table)``. No method changes the table it was given; filters and
    windows return new logs.

    Attributes:
        table: the events (``pyarrow.Table`` in :data:`replaykit.schema.EVENTS_SCHEMA`).
        runs: per-run header metadata (:data:`RUNS_SCHEMA`), possibly empty.
        quarantine: rows that could not be loaded, with reasons
            (:data:`replaykit.schema.QUARANTINE_SCHEMA`); empty when everything loaded.
        extras: format-specific side tables (e.g. isplay ``checkpoints``), name -> table.

    Example:
        >>> import replaykit as rk
        >>> log = rk.read_events("data/", tenant_id="demo")  # doctest: +SKIP
        >>> log.runs_df()[["run_id", "events", "tool_calls"]]  # doctest: +SKIP
    """

    __slots__ = ("_table", "_runs", "_quarantine", "_extras")

    def __init__(
        self,
        table: pa.Table,
        *,
        runs: pa.Table | None = None,
        quarantine: pa.Table | None = None,
        extras: dict[str, pa.Table] | None = None,
        sort: bool = True,
    ) -> None:
        if sort:
            canonical = table.schema.names[:len(EVENTS_SCHEMA)] == EVENTS_SCHEMA.names
            table = sort_events(table) if canonical else table
        validate(table)
        self._table = table
        self._runs = _empty_runs() if runs is None else runs.cast(RUNS_SCHEMA)
        self._quarantine = QUARANTINE_SCHEMA.empty_table() if quarantine is None else quarantine
        self._extras = dict(extras or {})

    # ------------------------------------------------------------------ basic access
    @property
    def table(self) -> pa.Table:
        """The events table (read-only by convention: Arrow tables are immutable)."""
        return self._table

    @property
    def runs(self) -> pa.Table:
        """Header metadata per run, as loaded (see :meth:`runs_df` for the full picture)."""
        return self._runs

    @property
    def quarantine(self) -> pa.Table:
        """Rows that could not be loaded, each with source, line, field, reason and raw text."""
        return self._quarantine

    @property
    def extras(self) -> dict[str, pa.Table]:
        """Format-specific side tables (a copy of the mapping)."""
        return dict(self._extras)

    def __len__(self) -> int:
        return self._table.num_rows

    @property
    def num_runs(self) -> int:
        """Number of distinct (tenant_id, run_id) pairs."""
        return len(self._run_keys())

    @property
    def tenants(self) -> list[str]:
        """Distinct tenant ids, sorted."""
        return sorted(pc.unique(_str_values(self._table.column("tenant_id"))).to_pylist())

    @property
    def run_ids(self) -> list[str]:
        """Distinct run ids, sorted."""
        return sorted(pc.unique(_str_values(self._table.column("run_id"))).to_pylist())

    def _run_keys(self) -> pa.Table:
        t = pa.table(
            {
                "tenant_id": _str_values(self._table.column("tenant_id")),
                "run_id": _str_values(self._table.column("run_id")),
            }
        )
        return t.group_by(["tenant_id", "run_id"], use_threads=False).aggregate([])

    def _replace(self, table: pa.Table, *, runs: pa.Table | None = None) -> EventLog:
        new = object.__new__(EventLog)
        new._table = table
        new._runs = self._runs if runs is None else runs
        new._quarantine = self._quarantine
        new._extras = self._extras
        return new

    # ------------------------------------------------------------------ grain tables
    def events_df(self) -> pd.DataFrame:
        """One row per event, in the canonical schema (categoricals for dictionary columns).

        >>> log.events_df().columns[:4].tolist()  # doctest: +SKIP
        ['tenant_id', 'run_id', 'parent_run_id', 'seq']
        """
        return to_pandas(self._table)

    def runs_df(self) -> pd.DataFrame:
        """One row per run: tenant_id, run_id, parent_run_id, format, events, first_ts,
        last_ts, turns, model_calls, tool_calls, errors, created_at, plus header attributes.

        ``turns`` counts distinct turn numbers; ``model_calls`` counts events that close a
        model call (a non-null ``finish``); ``tool_calls`` counts ``tool_call`` events;
        ``errors`` counts events with ``is_error``. Runs known only from headers (no events)
        appear with ``events == 0``.
        """
        t = self._table
        kind = _str_values(t.column("kind"))
        stats_in = pa.table(
            {
                "tenant_id": _str_values(t.column("tenant_id")),
                "run_id": _str_values(t.column("run_id")),
                "parent_run_id": _str_values(t.column("parent_run_id")),
                "ts": t.column("ts"),
                "turn": t.column("turn"),
                "seq": t.column("seq"),
                "is_call": pc.cast(pc.is_valid(t.column("finish")), pa.int64()),
                "is_tool": pc.cast(pc.equal(kind, "tool_call"), pa.int64()),
                "is_err": pc.cast(t.column("is_error"), pa.int64()),
            }
        )
        stats = stats_in.group_by(["tenant_id", "run_id"], use_threads=False).aggregate(
            [
                ("parent_run_id", "first"),
                ("seq", "count"),
                ("ts", "min"),
                ("ts", "max"),
                ("turn", "count_distinct"),
                ("is_call", "sum"),
                ("is_tool", "sum"),
                ("is_err", "sum"),
            ]
        )
        stats = stats.rename_columns(list(RUN_STAT_COLUMNS))
        df = to_pandas(stats)
        meta = to_pandas(self._runs)
        if len(meta):
            meta = meta.drop_duplicates(["tenant_id", "run_id"], keep="first")
            df = df.merge(
                meta, on=["tenant_id", "run_id"], how="outer", suffixes=("", "_meta")
            )
            df["parent_run_id"] = df["parent_run_id"].fillna(df.pop("parent_run_id_meta"))
            attrs = _expand_attrs(df.pop("attrs"))
            df = pd.concat([df, attrs], axis=1)
        else:
            df["format"] = self._formats_per_run(df)
            df["source"] = pd.Series([None] * len(df), dtype="object")
            df["created_at"] = pd.Series(pd.NaT, index=df.index, dtype="datetime64[us, UTC]")
        for col in ("events", "turns", "model_calls", "tool_calls", "errors"):
            df[col] = df[col].fillna(0).astype("int64")
        return df.sort_values(["tenant_id", "run_id"], ignore_index=True)

    def _formats_per_run(self, df: pd.DataFrame) -> pd.Series:
        src = _str_values(self._table.column("source"))
        fmt = pc.utf8_slice_codeunits(src, 0, 1_000)
        fmt = pc.replace_substring_regex(fmt, r":.*$", "")
        t = pa.table(
            {
                "tenant_id": _str_values(self._table.column("tenant_id")),
                "run_id": _str_values(self._table.column("run_id")),
                "format": fmt,
            }
        ).group_by(["tenant_id", "run_id"], use_threads=False).aggregate([("format", "first")])
        m = to_pandas(t).rename(columns={"format_first": "format"})
        return df[["tenant_id", "run_id"]].merge(m, how="left")["format"].to_numpy()

    def calls_df(self) -> pd.DataFrame:
        """One row per model call. See :func:`replaykit.grain.calls_df`."""
        from .grain import calls_df

        return calls_df(self)

    def tools_df(self) -> pd.DataFrame:
        """One row per tool call, with its result. See :func:`replaykit.grain.tools_df`."""
        from .grain import tools_df

        return tools_df(self)

    def turns_df(self) -> pd.DataFrame:
        """One row per turn, with its end reason. See :func:`replaykit.grain.turns_df`."""
        from .grain import turns_df

        return turns_df(self)

    def stamps_df(self) -> pd.DataFrame:
        """Reproducibility stamps per run (model, provider, versions, sampling config, prompt,
        policy and tool identities). See :func:`replaykit.stamps.stamps_df`."""
        from .stamps import stamps_df

        return stamps_df(self)

    # ------------------------------------------------------------------ selection
    def filter(
        self,
        *,
        tenant_id: str | Sequence[str] | None = None,
        run_ids: str | Sequence[str] | None = None,
        types: str | Sequence[str] | None = None,
        kinds: str | Sequence[str] | None = None,
    ) -> EventLog:
        """Events of the given tenant(s), run(s), source types and/or kinds (all ANDed).

        Each argument takes one value or a list; None means "any". Returns a new EventLog;
        this one is unchanged.

        >>> log.filter(tenant_id="acme", types=["tool/call", "tool/result"])  # doctest: +SKIP
        """
        mask = None
        for col, values in (
            ("tenant_id", tenant_id),
            ("run_id", run_ids),
            ("type", types),
            ("kind", kinds),
        ):
            if values is None:
                continue
            vals = [values] if isinstance(values, str) else list(values)
            column = _str_values(self._table.column(col))
            m = pc.is_in(column, value_set=pa.array(vals, pa.string()))
            mask = m if mask is None else pc.and_(mask, m)
        if mask is None:
            return self
        table = self._table.filter(mask)
        runs = self._runs
        if runs.num_rows and (tenant_id is not None or run_ids is not None):
            rmask = None
            for col, values in (("tenant_id", tenant_id), ("run_id", run_ids)):
                if values is None:
                    continue
                vals = [values] if isinstance(values, str) else list(values)
                m = pc.is_in(runs.column(col), value_set=pa.array(vals, pa.string()))
                rmask = m if rmask is None else pc.and_(rmask, m)
            runs = runs.filter(rmask)
        return self._replace(table, runs=runs)

    def window(self, from_seq: int | None = None, up_to_seq: int | None = None) -> EventLog:
        """Events with ``from_seq < seq <= up_to_seq`` (exclusive lower, inclusive upper bound).

        Either bound may be None (unbounded). Applies to every run in the log.
        """
        seq = self._table.column("seq")
        mask = None
        if from_seq is not None:
            mask = pc.greater(seq, from_seq)
        if up_to_seq is not None:
            m = pc.less_equal(seq, up_to_seq)
            mask = m if mask is None else pc.and_(mask, m)
        if mask is None:
            return self
        return self._replace(self._table.filter(mask))

    def run(self, run_id: str, *, tenant_id: str) -> EventLog:
        """Events of one run of one tenant (both required: a run id alone never picks a tenant).

        Raises:
            KeyError: the tenant has no such run in this log.
        """
        if not isinstance(tenant_id, str) or not tenant_id:
            raise TypeError(f"tenant_id is required (a non-empty string), got {tenant_id!r}")
        sub = self.filter(tenant_id=tenant_id, run_ids=run_id)
        if len(sub) == 0:
            raise KeyError(
                f"tenant {tenant_id!r} has no run {run_id!r} in this log; "
                f"see log.runs_df() for the runs it holds"
            )
        return sub

    # ------------------------------------------------------------------ combine / persist
    def to_parquet(self, path: str | os.PathLike[str], *, overwrite: bool = False,
                   partition_events: int | None = None) -> Path:
        """Write the log as a Parquet dataset partitioned by tenant (hive layout).

        Layout: ``path/tenant_id=<id>/part-*.parquet`` holding whole runs sorted by
        (run_id, seq), plus ``path/_runs.parquet`` and ``path/_quarantine.parquet``.
        Read it back with :func:`read_parquet`. With ``partition_events=N`` each file holds
        about N events and never splits a run: one task per file for ``engine="dask"``
        (see :func:`replaykit.engine.write_partitioned`).

        Raises:
            FileExistsError: ``path`` exists and is not empty, unless ``overwrite=True``.
        """
        if partition_events is not None:
            from .engine import write_partitioned

            return write_partitioned(self, path, partition_events=partition_events,
                                     overwrite=overwrite)
        out = Path(path)
        if out.exists() and any(out.iterdir()):
            if not overwrite:
                raise FileExistsError(f"{out} exists and is not empty; pass overwrite=True")
        out.mkdir(parents=True, exist_ok=True)
        ds.write_dataset(
            self._table,
            out,
            format="parquet",
            partitioning=ds.partitioning(
                pa.schema([("tenant_id", pa.string())]), flavor="hive"
            ),
            existing_data_behavior="delete_matching",
            basename_template="part-{i}.parquet",
            max_rows_per_group=1_000_000,
        )
        import pyarrow.parquet as pq

        pq.write_table(self._runs, out / "_runs.parquet")
        pq.write_table(self._quarantine, out / "_quarantine.parquet")
        return out

    # ------------------------------------------------------------------ display
    def summary(self) -> dict[str, Any]:
        """Small dict summary: events, runs, tenants, formats, time span, quarantined rows."""
        t = self._table
        ts = t.column("ts")
        fmts = pc.unique(
            pc.replace_substring_regex(_str_values(t.column("source")), r":.*$", "")
        ).to_pylist()
        return {
            "events": t.num_rows,
            "runs": self.num_runs,
            "tenants": len(self.tenants),
            "formats": sorted(f for f in fmts if f),
            "first_ts": pc.min(ts).as_py() if t.num_rows else None,
            "last_ts": pc.max(ts).as_py() if t.num_rows else None,
            "quarantined": self._quarantine.num_rows,
        }

    def __repr__(self) -> str:
        s = self.summary()
        return (
            f"EventLog({s['events']:,} events, {s['runs']:,} runs, {s['tenants']} tenants, "
            f"formats={s['formats']}, quarantined={s['quarantined']})"
        )

    def _repr_html_(self) -> str:
        s = self.summary()
        esc = html.escape
        head = (
            f"<b>EventLog</b>: {s['events']:,} events &middot; {s['runs']:,} runs &middot; "
            f"{s['tenants']} tenant(s) &middot; formats: {esc(', '.join(s['formats']))}"
        )
        if s["first_ts"] is not None:
            head += f" &middot; {esc(str(s['first_ts']))} &rarr; {esc(str(s['last_ts']))}"
        if s["quarantined"]:
            head += f" &middot; <span style='color:#b00'>{s['quarantined']} quarantined</span>"
        runs = self.runs_df()
        cols = [c for c in RUN_STAT_COLUMNS if c in runs.columns and not c.endswith("_ts")]
        shown = runs[cols].head(10)
        table = shown.to_html(index=False, escape=True, na_rep="", border=0)
        more = f"<div>&hellip; {len(runs) - 10:,} more runs</div>" if len(runs) > 10 else ""
        return f"<div class='replaykit-eventlog'><div>{head}</div>{table}{more}</div>"


def _expand_attrs(attrs: pd.Series) -> pd.DataFrame:
    """Header attributes (JSON objects per run) as columns (one row per run, not per event)."""
    from ._json import loads

    records = [loads(a) if isinstance(a, str) and a else {} for a in attrs]
    frame = pd.DataFrame.from_records(records, index=attrs.index)
    return frame


def concat(logs: Iterable[EventLog]) -> EventLog:
    """One EventLog holding every event of ``logs``.

    Raises:
        SchemaError: two logs hold the same (tenant_id, run_id, seq).
    """
    logs = list(logs)
    if not logs:
        return EventLog(empty_events())
    tables = [lg.table for lg in logs]
    same = all(t.schema == tables[0].schema for t in tables)
    # logs with extension columns (a replay's replay_origin): the others get nulls there
    table = pa.concat_tables(tables, promote_options="none" if same else "permissive")
    table = table.unify_dictionaries().combine_chunks()
    table = sort_events(table)
    if table.num_rows > 1:
        tenant = _dictionary_rank(table.column("tenant_id"))
        run = _dictionary_rank(table.column("run_id"))
        seq = table.column("seq").to_numpy()
        dup = (tenant[1:] == tenant[:-1]) & (run[1:] == run[:-1]) & (seq[1:] == seq[:-1])
        if dup.any():
            i = int(np.flatnonzero(dup)[0]) + 1
            raise SchemaError(
                [
                    f"duplicate event (tenant_id={table.column('tenant_id')[i].as_py()!r}, "
                    f"run_id={table.column('run_id')[i].as_py()!r}, seq={seq[i]}) in the logs "
                    "being concatenated; filter one side first"
                ]
            )
    runs = pa.concat_tables([lg.runs for lg in logs])
    quarantine = pa.concat_tables([lg.quarantine for lg in logs])
    extras: dict[str, list[pa.Table]] = {}
    for lg in logs:
        for name, t in lg.extras.items():
            extras.setdefault(name, []).append(t)
    merged = {
        name: pa.concat_tables(ts, promote_options="permissive") for name, ts in extras.items()
    }
    return EventLog(table, runs=runs, quarantine=quarantine, extras=merged, sort=False)


def read_parquet(
    path: str | os.PathLike[str],
    *,
    tenant_id: str | Sequence[str] | None = None,
    run_ids: str | Sequence[str] | None = None,
    types: str | Sequence[str] | None = None,
    since: Any = None,
    until: Any = None,
) -> EventLog:
    """Read a dataset written by :meth:`EventLog.to_parquet`, pushing filters down.

    ``tenant_id`` prunes partitions (other tenants' files are never opened); ``run_ids``,
    ``types`` and the ``since``/``until`` time bounds (inclusive; anything pandas can turn
    into a UTC timestamp) are pushed into the Parquet scan so row groups that cannot match
    are skipped.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        LoadError: a file of the dataset is not readable Parquet or not a replaykit table
            (reason ``bad_parquet``, naming the dataset folder).
    """
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such Parquet dataset")
    for bound in (since, until):  # a bad bound is the caller's error: raised as itself, here
        if bound is not None:
            pd.Timestamp(bound, tz="UTC")
    try:
        return _read_dataset(root, tenant_id, run_ids, types, since, until)
    except (pa.ArrowException, OSError, KeyError, ValueError) as exc:
        from .errors import LoadError

        raise LoadError(
            source=str(root), line=None, reason="bad_parquet",
            detail=f"is not a readable replaykit Parquet dataset ({type(exc).__name__}: "
                   f"{str(exc)[:300]})",
            fix="Write it again with EventLog.to_parquet, or remove the damaged file.",
        ) from exc


def _read_dataset(root: Path, tenant_id: str | Sequence[str] | None,
                  run_ids: str | Sequence[str] | None, types: str | Sequence[str] | None,
                  since: Any, until: Any) -> EventLog:  # fmt: skip
    dataset = ds.dataset(
        root,
        format="parquet",
        partitioning=ds.partitioning(pa.schema([("tenant_id", pa.string())]), flavor="hive"),
    )
    expr = None

    def _and(e: ds.Expression) -> None:
        nonlocal expr
        expr = e if expr is None else (expr & e)

    def _values(v: str | Sequence[str]) -> list[str]:
        return [v] if isinstance(v, str) else list(v)

    if tenant_id is not None:
        _and(ds.field("tenant_id").isin(_values(tenant_id)))
    if run_ids is not None:
        _and(ds.field("run_id").isin(_values(run_ids)))
    if types is not None:
        _and(ds.field("type").isin(_values(types)))
    if since is not None:
        _and(ds.field("ts") >= pa.scalar(pd.Timestamp(since, tz="UTC").as_unit("us"),
                                          type=pa.timestamp("us", tz="UTC")))
    if until is not None:
        _and(ds.field("ts") <= pa.scalar(pd.Timestamp(until, tz="UTC").as_unit("us"),
                                          type=pa.timestamp("us", tz="UTC")))
    table = dataset.to_table(filter=expr)
    table = table.select(EVENTS_SCHEMA.names)
    table = pa.Table.from_arrays(
        [
            table.column(f.name).cast(f.type) if table.column(f.name).type != f.type
            else table.column(f.name)
            for f in EVENTS_SCHEMA
        ],
        schema=EVENTS_SCHEMA,
    ).unify_dictionaries().combine_chunks()
    import pyarrow.parquet as pq

    runs = pq.read_table(root / "_runs.parquet") if (root / "_runs.parquet").exists() else None
    if runs is not None and tenant_id is not None:
        runs = runs.filter(pc.is_in(runs.column("tenant_id"), pa.array(_values(tenant_id))))
    if runs is not None and run_ids is not None:
        runs = runs.filter(pc.is_in(runs.column("run_id"), pa.array(_values(run_ids))))
    quarantine = None
    if (root / "_quarantine.parquet").exists():
        quarantine = pq.read_table(root / "_quarantine.parquet")
    return EventLog(table, runs=runs, quarantine=quarantine)
