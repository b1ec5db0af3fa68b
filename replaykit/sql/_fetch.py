"""Reading rows out of SQLite and PostgreSQL: the SELECTs, the parallel page ranges, the
table layouts (canonical or plain export), the malformed-row checks."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .._base import native as _native
from ..errors import LoadError, ReplayKitError, SchemaError
from ..io._common import ErrorPolicy, Quarantine, times_in_years
from ..schema import EVENTS_SCHEMA
from .connection import (
    _COLUMNS,
    DEFAULT_TABLE,
    _connect,
    _db_errors,
    _iso,
    _quote_table,
    _sqlite_target,
    _str_list,
    _tenant_list,
    _utc,
)

__all__ = ["EXPORT_COLUMNS", "TableSchemaError"]

_PARALLEL_MIN_ROWS = 200_000
_PARALLEL_MIN_PAGES = 8_192  # 64 MB of 8 kB blocks, roughly 200,000 events


# --------------------------------------------------------------------------- reading


def _select_sql(dialect: str, table: str, where: str) -> str:
    cols = ", ".join(f'"{db}"' for db, *_ in _COLUMNS)
    if dialect == "postgresql":
        return f"SELECT {cols} FROM {_quote_table(table)} WHERE {where}"
    # SQLite has no column types: the ADBC driver infers each column's Arrow type from the
    # first rows, so a column that starts with NULLs would be typed wrongly. One typed
    # sentinel row (flag 1) comes first and is dropped after the fetch.
    sentinel = ", ".join(
        ("0" if lite == "INTEGER" else "''") + f' AS "{db}"' for db, _c, _p, lite, _n in _COLUMNS
    )
    return (
        f'SELECT 1 AS "__rk_sentinel", {sentinel} '
        f"UNION ALL SELECT 0, {cols} FROM {_quote_table(table)} WHERE {where}"
    )


def _fetch_sqlite(
    cur: Any,
    select: Any,
    tenants: list[str],
    runs: list[str] | None,
    lo: pd.Timestamp | None,
    hi: pd.Timestamp | None,
    table: str = DEFAULT_TABLE,
    target: str | None = None,
) -> pa.Table:
    """Matching rows, sentinel dropped; ``target`` (the database file) allows parallel reads."""
    where, params = _sqlite_where(tenants, runs, lo, hi)
    ranges = _rowid_ranges(cur, table) if target else None
    if not ranges:
        cur.execute(select(where), tuple(params))
        return _drop_sentinel(cur.fetch_arrow_table())
    # A large table is read in rowid ranges on parallel connections: the driver steps SQLite
    # and builds Arrow arrays without holding the GIL, so the ranges fetch side by side.
    sql = select(f"{where} AND rowid BETWEEN ? AND ?")
    import adbc_driver_sqlite.dbapi as driver

    def fetch_range(bounds: tuple[int, int]) -> pa.Table:
        with driver.connect(target) as conn, conn.cursor() as part_cur:
            part_cur.execute(sql, (*params, *bounds))
            return _drop_sentinel(part_cur.fetch_arrow_table())

    with ThreadPoolExecutor(len(ranges)) as pool:
        return pa.concat_tables(list(pool.map(fetch_range, ranges)))


def _sqlite_where(
    tenants: list[str], runs: list[str] | None, lo: pd.Timestamp | None, hi: pd.Timestamp | None
) -> tuple[str, list[Any]]:
    """The WHERE clause and its parameters. ``COLLATE BINARY`` makes the tenant and run
    comparisons byte-exact whatever collation (NOCASE, RTRIM) the table declares, and only
    TEXT tenant ids match: in a column of INTEGER or NUMERIC affinity SQLite compares the
    tenant asked for as a number, so ``'123'`` would match an INTEGER ``123`` stored by
    another tenant ``'0123'`` or ``'123.0'`` (see :func:`_sqlite_tenant_collisions`)."""
    params: list[Any] = list(tenants)
    clauses = ["typeof(\"tenant_id\") = 'text'",
               f'"tenant_id" COLLATE BINARY IN ({", ".join("?" * len(tenants))})']
    if runs is not None:
        clauses.append(
            f'"chat_id" COLLATE BINARY IN ({", ".join("?" * len(runs))})' if runs else "1 = 0"
        )
        params.extend(runs)
    for bound, op in ((lo, ">="), (hi, "<=")):
        if bound is not None:
            clauses.append(f'"created_at" {op} ?')
            params.append(_iso(bound))
    return " AND ".join(clauses), params


def _numeric_affinity(declared: str) -> bool:
    """Whether a SQLite column of this declared type has INTEGER, REAL or NUMERIC affinity
    (SQLite's rules, in their order): only those compare a text value as a number."""
    t = (declared or "").lower()
    if "int" in t:
        return True
    if any(k in t for k in ("char", "clob", "text")) or "blob" in t or not t:
        return False
    return True  # REAL ("real", "floa", "doub") or NUMERIC (anything else)


def _sqlite_tenant_collisions(cur: Any, table: str, tenants: list[str],
                              errors: ErrorPolicy,
                              columns: Mapping[str, str] | None = None) -> pa.Table | None:
    """Rows whose ``tenant_id`` is not TEXT (an INTEGER, REAL or BLOB) but which SQLite's
    comparison would match to a tenant asked for (a column of numeric affinity compares
    ``'123'`` with ``123``; the producer's ``'0123'`` or ``'123.0'`` may be stored as it).
    They belong to no tenant: never read as the tenant's, raised
    (``LoadError(reason="malformed_value")``) or quarantined without their content. One
    indexed lookup per tenant asked for, and none at all when the column has TEXT or BLOB
    affinity (where no stored value compares equal to a tenant id but its own text); None
    when there are none."""
    if columns is not None and not _numeric_affinity(columns.get("tenant_id", "")):
        return None
    rowid = "rowid" if _has_rowid(cur, table) else "NULL"
    found: list[tuple[str, Any, str, str]] = []
    for t in tenants:
        cur.execute(
            f'SELECT {rowid} AS "rowid", typeof("tenant_id") AS "storage", '
            f'CAST(quote("tenant_id") AS BLOB) AS "literal" FROM {_quote_table(table)} '
            "WHERE typeof(\"tenant_id\") != 'text' AND \"tenant_id\" COLLATE BINARY IN (?) "
            "LIMIT 10001",
            (t,),
        )
        for rec in cur.fetch_arrow_table().to_pylist():
            lit = rec["literal"]
            lit = lit.decode("utf-8", "backslashreplace") if isinstance(lit, bytes) else str(lit)
            found.append((t, rec["rowid"], rec["storage"], lit))
    if not found:
        return None
    fix = ("Store tenant ids as TEXT (declare the column TEXT, as replaykit.sql.ddl() does): "
           "in a column of INTEGER or NUMERIC affinity SQLite turns '0123' or '123.0' into the "
           "number 123, which no longer says whose the row is. Restore the rows from a "
           "trusted copy; errors=\"quarantine\" reads the other rows.")

    def detail(t: str, r: Any, storage: str, lit: str) -> str:
        where = f"rowid {r}" if r is not None else "a row"
        return (f"{where}: 'tenant_id' holds {storage.upper()} {_short(lit)}, not TEXT; SQLite "
                f"would compare it equal to tenant {t!r}, but it is no tenant's id, so it is "
                "not read as that tenant's")

    if errors == "raise":
        more = f"; and {len(found) - 5} more row(s)" if len(found) > 5 else ""
        raise LoadError(
            source=f"sqlite:{table}", line=None, field="tenant_id", reason="malformed_value",
            detail=f"{len(found)} row(s) hold a tenant_id that is not TEXT: "
            + "; ".join(detail(*f) for f in found[:5]) + more,
            fix=fix)
    quarantine = Quarantine(errors)
    for t, r, storage, lit in found:
        record = {"rowid": r, "tenant_id": t, "chat_id": None, "sequence_number": None,
                  "columns": {"tenant_id": "TEXT"}, "values": {"tenant_id": lit}}
        quarantine.bad(
            LoadError(source=f"sqlite:{table}", line=r, field="tenant_id",
                      reason="malformed_value", detail=detail(t, r, storage, lit), fix=fix),
            raw=json.dumps(record, ensure_ascii=False), tenant_id=t)
    return quarantine.table()


def _drop_sentinel(raw: pa.Table) -> pa.Table:
    flag = raw.column("__rk_sentinel")
    if raw.num_rows and flag[0].as_py() == 1 and pc.sum(flag).as_py() == 1:
        raw = raw.slice(1)  # the usual case: sentinel first, dropped without a copy
    else:
        raw = raw.filter(pc.equal(flag, 0))
    return raw.drop_columns(["__rk_sentinel"])


def _rowid_ranges(cur: Any, table: str) -> list[tuple[int, int]] | None:
    """Split a large rowid table into one rowid range per core (None: read it in one go)."""
    try:
        cur.execute(f"SELECT min(rowid), max(rowid) FROM {_quote_table(table)}")
        lo, hi = cur.fetch_arrow_table().to_pylist()[0].values()
    except Exception:  # noqa: BLE001 - a WITHOUT ROWID table or a view: no rowid ranges
        return None
    workers = min(4, _native.threads())  # connections: replaykit's threads, at most 4
    if lo is None or hi is None or workers < 2 or hi - lo < _PARALLEL_MIN_ROWS:
        return None
    step = (hi - lo) // workers + 1
    return [(lo + i * step, min(hi, lo + (i + 1) * step - 1)) for i in range(workers)]


def _fetch_postgresql(
    cur: Any,
    select: Any,
    tenants: list[str],
    runs: list[str] | None,
    lo: pd.Timestamp | None,
    hi: pd.Timestamp | None,
    table: str = DEFAULT_TABLE,
    uri: str | None = None,
    columns: Mapping[str, str] | None = None,
) -> pa.Table:
    """Matching rows; ``uri`` (we opened the connection) allows parallel reads."""
    # The ADBC PostgreSQL driver streams a query through COPY (binary, fast) only when the
    # query has no bind parameters. So the filter values travel as ONE bound parameter, a JSON
    # document, into a session setting, and the query reads them from there: the
    # values never appear in the SQL text, and the rows still arrive through COPY.
    spec = {
        "tenants": tenants,
        "runs": runs,
        "since": None if lo is None else _iso(lo),
        "until": None if hi is None else _iso(hi),
    }
    # session-level (is_local false): on an autocommit connection a transaction-local setting
    # would be gone before the query runs; cleared again once the rows are in
    cur.execute("SELECT set_config('replaykit.read_filter', $1, false)", (json.dumps(spec),))
    cur.fetch_arrow_table()
    out = _fetch_pg_filtered(cur, select, spec, runs, lo, hi, table, uri, columns)
    cur.execute("SELECT set_config('replaykit.read_filter', '', false)")
    cur.fetch_arrow_table()
    return out


def _fetch_pg_filtered(cur: Any, select: Any, spec: dict[str, Any], runs: list[str] | None,
                       lo: pd.Timestamp | None, hi: pd.Timestamp | None, table: str,
                       uri: str | None, columns: Mapping[str, str] | None) -> pa.Table:
    setting = "current_setting('replaykit.read_filter')::jsonb"
    # COLLATE "C": byte-exact whatever the column's collation (a nondeterministic ICU one
    # would match "ACME" to "acme"); a column of another type (citext, ...) is compared as text.
    tenant, chat = (_pg_exact(c, (columns or {}).get(c, "text")) for c in ("tenant_id", "chat_id"))
    clauses = [f"{tenant} IN (SELECT jsonb_array_elements_text({setting} -> 'tenants'))"]
    if runs is not None:
        clauses.append(f"{chat} IN (SELECT jsonb_array_elements_text({setting} -> 'runs'))")
    if lo is not None:
        clauses.append(f"\"created_at\" >= ({setting} ->> 'since')::timestamptz")
    if hi is not None:
        clauses.append(f"\"created_at\" <= ({setting} ->> 'until')::timestamptz")
    where = " AND ".join(clauses)
    ranges = _ctid_ranges(cur, table) if uri else None
    if not ranges:
        cur.execute(select(where))
        return cur.fetch_arrow_table()
    # A large table is read in block (ctid) ranges on parallel connections that share one
    # snapshot (exported here, imported there), so the parts form one consistent read: the
    # driver decodes COPY data without holding the GIL, so the parts decode side by side.
    cur.execute("SELECT pg_export_snapshot()")
    snapshot = cur.fetch_arrow_table().column(0)[0].as_py()
    import adbc_driver_postgresql.dbapi as pg_driver

    def fetch_range(bounds: tuple[int, int | None]) -> pa.Table:
        first, end = bounds
        part = f"{where} AND ctid >= '({int(first)},0)'::tid"
        if end is not None:
            part += f" AND ctid < '({int(end)},0)'::tid"
        with pg_driver.connect(uri) as conn, conn.cursor() as part_cur:
            part_cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            part_cur.execute(_snapshot_sql(snapshot))
            part_cur.execute(
                "SELECT set_config('replaykit.read_filter', $1, true)", (json.dumps(spec),)
            )
            part_cur.fetch_arrow_table()
            part_cur.execute(select(part))
            out = part_cur.fetch_arrow_table()
            conn.rollback()
            return out

    with ThreadPoolExecutor(len(ranges)) as pool:
        return pa.concat_tables(list(pool.map(fetch_range, ranges)))


def _pg_exact(column: str, declared: str) -> str:
    """``column`` as an expression whose comparisons with text are byte-exact."""
    if declared == "text" or declared.startswith(("character varying", "character(", "varchar")):
        return f'"{column}" COLLATE "C"'
    return f'("{column}"::text COLLATE "C")'


def _snapshot_sql(snapshot: str) -> str:
    if not re.fullmatch(r"[0-9A-Fa-f-]+", snapshot or ""):
        raise ValueError(f"unexpected snapshot id {snapshot!r}")
    return f"SET TRANSACTION SNAPSHOT '{snapshot}'"


def _ctid_ranges(cur: Any, table: str) -> list[tuple[int, int | None]] | None:
    """Split a large PostgreSQL table into one block range per core (None: one read)."""
    workers = min(4, _native.threads())  # connections: replaykit's threads, at most 4
    if workers < 2:
        return None
    cur.execute(
        "SELECT (pg_relation_size(to_regclass($1)) / current_setting('block_size')::bigint)"
        "::bigint",
        (_quote_table(table),),
    )
    pages = cur.fetch_arrow_table().column(0)[0].as_py() or 0
    if pages < _PARALLEL_MIN_PAGES:
        return None
    step = pages // workers + 1
    return [(i * step, (i + 1) * step if i < workers - 1 else None) for i in range(workers)]


#: The ``harness_event_log`` export columns (the "plain" layout our users' tables have).
EXPORT_COLUMNS = (
    "tenant_id",
    "chat_id",
    "sequence_number",
    "event_type",
    "payload",
    "created_at",
    "prev_hash",
    "row_hash",
)
_PLAIN_REQUIRED = EXPORT_COLUMNS[:5]


def _table_columns(cur: Any, dialect: str, table: str) -> dict[str, str]:
    """{column name: declared type, lower case} of ``table`` ({} when it does not exist)."""
    if dialect == "sqlite":
        schema, _, name = table.rpartition(".")
        cur.execute(
            "SELECT name, lower(type) FROM pragma_table_info(?, ?)", (name, schema or "main")
        )
    else:
        cur.execute(
            "SELECT attname::text, lower(format_type(atttypid, atttypmod)) FROM pg_attribute "
            "WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped",
            (_quote_table(table),),
        )
    t = cur.fetch_arrow_table()
    return dict(zip(t.column(0).to_pylist(), t.column(1).to_pylist(), strict=True))


class TableSchemaError(SchemaError, ValueError):
    """A database table :func:`read_sql` cannot read as events: it does not exist, or lacks
    columns. A :class:`~replaykit.errors.SchemaError` (so a ``ReplayKitError``); also a
    ``ValueError``, which this case raised before, so old handlers keep working.

    Attributes:
        table: the table named. missing: the required columns it lacks (every one when the
            table does not exist).
    """

    def __init__(self, table: str, missing: list[str], *, exists: bool) -> None:
        self.table = table
        self.missing = list(missing)
        what = ("it does not exist or has no columns" if not exists
                else f"it lacks {self.missing}")
        self.problems = [f"table {table!r}: {what}"]
        ReplayKitError.__init__(
            self,
            f"table {table!r} is not a harness_event_log table: {what}; it needs at least "
            "tenant_id, chat_id, sequence_number, event_type and payload (the layout of "
            "replaykit.sql.ddl() has them all): name the right table with table=..., or add "
            "the columns")


def _layout(columns: dict[str, str], table: str) -> str:
    """``"full"`` (the :func:`ddl` layout) or ``"plain"`` (the export columns only).

    Raises:
        TableSchemaError: the table does not exist or lacks a required export column.
    """
    if all(db in columns for db, *_ in _COLUMNS):
        return "full"
    missing = [c for c in _PLAIN_REQUIRED if c not in columns]
    if not columns or missing:
        raise TableSchemaError(table, missing or list(_PLAIN_REQUIRED), exists=bool(columns))
    return "plain"


def _plain_select(
    dialect: str, table: str, columns: dict[str, str], where: str, ts_kind: str = "text"
) -> str:
    present = [c for c in EXPORT_COLUMNS if c in columns]
    if dialect == "postgresql":
        exprs = [
            f'"{c}"::text AS "{c}"' if c == "payload" and "json" in columns[c] else f'"{c}"'
            for c in present
        ]
        return f"SELECT {', '.join(exprs)} FROM {_quote_table(table)} WHERE {where}"
    # SQLite: a typed sentinel row first (see _select_sql); created_at holds either text or
    # epoch milliseconds, so its sentinel takes the type of the stored values (ts_kind).
    sentinel = ", ".join(
        ("0" if c == "sequence_number" or (c == "created_at" and ts_kind == "integer")
         else "''") + f' AS "{c}"'
        for c in present
    )
    cols = ", ".join(f'"{c}"' for c in present)
    return (
        f'SELECT 1 AS "__rk_sentinel", {sentinel} '
        f"UNION ALL SELECT 0, {cols} FROM {_quote_table(table)} WHERE {where}"
    )


def _sqlite_ts_kind(cur: Any, table: str, columns: Mapping[str, str]) -> str:
    """``"text"`` or ``"integer"``: how a plain table's ``created_at`` holds its times (the
    storage class of its first non-null value)."""
    if "created_at" not in columns:
        return "text"
    cur.execute(
        f'SELECT typeof("created_at") FROM {_quote_table(table)} '
        'WHERE "created_at" IS NOT NULL LIMIT 1'
    )
    found = cur.fetch_arrow_table().column(0).to_pylist()
    return "integer" if found and found[0] in ("integer", "real") else "text"


class _Fetched:
    """What one read fetched: rows (None when the SQLite driver refused mixed types), the
    dialect, the layout, JSONB column names, the SQLite type checks, quarantined rows."""

    def __init__(self, raw: pa.Table | None, dialect: str, layout: str, jsonb: frozenset[str],
                 checks: list[_Check], quarantine: pa.Table | None = None) -> None:
        self.raw = raw
        self.dialect = dialect
        self.layout = layout
        self.jsonb = jsonb
        self.checks = checks
        self.quarantine = quarantine


def _fetch_rows(
    uri: Any,
    *,
    tenant_id: Any,
    table: str = DEFAULT_TABLE,
    run_ids: Any = None,
    since: Any = None,
    until: Any = None,
    guarded: bool = False,
    errors: ErrorPolicy = "raise",
) -> _Fetched:
    """Fetch the matching rows, re-checked column-wise against the tenants and runs asked for.

    ``guarded`` (SQLite): read through the type guards of :func:`_fetch_sqlite_guarded`, which
    find the rows holding values not of their column's type (raised, or quarantined).
    """
    tenants = _tenant_list(tenant_id)
    runs = _str_list("run_ids", run_ids)
    lo = None if since is None else _utc(since, "since")
    hi = None if until is None else _utc(until, "until")
    _quote_table(table)
    quarantine = None
    with _db_errors(table, "read"):
        conn, dialect, owned = _connect(uri, reading=table)
        try:
            cur = conn.cursor()
            try:
                columns = _table_columns(cur, dialect, table)
                layout = _layout(columns, table)
                jsonb = frozenset(c for c, typ in columns.items() if typ == "jsonb")
                ts_kind = "text"
                if dialect == "sqlite" and layout == "plain":
                    ts_kind = _sqlite_ts_kind(cur, table, columns)
                checks = _sqlite_checks(layout, columns, ts_kind) if dialect == "sqlite" else []
                if layout == "full":
                    def select(where: str) -> str:
                        return _select_sql(dialect, table, where)
                else:
                    def select(where: str) -> str:
                        return _plain_select(dialect, table, columns, where, ts_kind)
                    lo = hi = None  # created_at may be text or epoch ms: bounded after conversion
                raw: pa.Table | None
                if dialect == "postgresql":
                    raw = _fetch_postgresql(
                        cur, select, tenants, runs, lo, hi, table, uri if owned else None,
                        columns,
                    )
                elif guarded:
                    collided = _sqlite_tenant_collisions(cur, table, tenants, errors, columns)
                    raw, quarantine = _fetch_sqlite_guarded(
                        cur, table, layout, checks, tenants, runs, lo, hi, errors
                    )
                    if collided is not None:
                        quarantine = pa.concat_tables([collided, quarantine])
                else:
                    quarantine = _sqlite_tenant_collisions(cur, table, tenants, errors, columns)
                    target = None
                    if owned:  # we opened it from a URI: parallel connections may open it too
                        target = str(uri) if isinstance(uri, Path) else _sqlite_target(uri)
                        if target == ":memory:" or target.startswith("file:"):
                            target = None
                    try:
                        raw = _fetch_sqlite(cur, select, tenants, runs, lo, hi, table, target)
                    except (OSError, pa.ArrowException):
                        # the driver met a value of another type than the column's first ones
                        raw = None
            finally:
                cur.close()
        finally:
            if owned:
                conn.close()
    if raw is not None:
        raw = _recheck(raw, tenants, runs)
    return _Fetched(raw, dialect, layout, jsonb, checks, quarantine)


def _recheck(raw: pa.Table, tenants: list[str], runs: list[str] | None) -> pa.Table:
    """Keep only rows whose tenant (and run) is byte-for-byte one asked for.

    The query already filters; this does not trust it to (a collation, a view or a hostile
    server could return more). Column-wise: one hash lookup per row in Arrow.
    """
    keep = None
    for name, wanted in (("tenant_id", tenants), ("chat_id", runs)):
        if wanted is None:
            continue
        col = raw.column(name)
        if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
            col = pc.cast(col, pa.string())
        hit = pc.is_in(col, value_set=pa.array(wanted, col.type))
        keep = hit if keep is None else pc.and_(keep, hit)
    if keep is None or pc.all(keep).as_py():
        return raw
    return raw.filter(keep)


# --------------------------------------------------------------------------- malformed values
# SQLite stores any value in any column. A value that is not of its column's type (text in
# sequence_number, a real in turn, 'yes' in is_error, unparseable created_at) was not written
# by replaykit or the producer: it is reported as tampering, never silently converted.


class _Check:
    """One column's type rule: storage class, nullability, an extra SQL condition, in words."""

    def __init__(self, column: str, storage: str, nullable: bool, extra: str = "",
                 holds: str = "") -> None:
        self.column = column
        self.storage = storage  # "integer" or "text"
        self.nullable = nullable
        self.extra = extra
        self.holds = holds or storage.upper()

    def ok_sql(self) -> str:
        """A SQL condition that is true exactly when the value follows the rule."""
        q = f'"{self.column}"'
        ok = f"typeof({q}) = '{self.storage}'"
        if self.extra:
            ok = f"({ok} AND {self.extra})"
        return f"({q} IS NULL OR {ok})" if self.nullable else ok


def _sqlite_checks(layout: str, columns: Mapping[str, str], ts_kind: str) -> list[_Check]:
    out = []
    if layout == "full":
        for db, canon, _pg, lite, not_null in _COLUMNS:
            typ = EVENTS_SCHEMA.field(canon).type
            storage = lite.lower()
            if pa.types.is_boolean(typ):
                out.append(_Check(db, storage, not not_null, f'"{db}" IN (0, 1)',
                                  "0 or 1 (INTEGER)"))
            elif pa.types.is_int32(typ):
                out.append(_Check(db, storage, not not_null,
                                  f'"{db}" BETWEEN -2147483648 AND 2147483647',
                                  "a 32-bit INTEGER"))
            elif canon == "ts":
                out.append(_Check(db, storage, True, holds="ISO-8601 UTC TEXT"))
            else:
                out.append(_Check(db, storage, not not_null))
        return out
    for c in EXPORT_COLUMNS:
        if c not in columns:
            continue
        if c == "sequence_number":
            out.append(_Check(c, "integer", False))
        elif c == "created_at":
            out.append(_Check(c, ts_kind, True, holds="ISO-8601 TEXT or epoch ms INTEGER"))
        else:
            out.append(_Check(c, "text", c in ("prev_hash", "row_hash")))
    return out


def _failing_rows(arr: pa.Array, convert: Any) -> list[int]:
    """Indices of ``arr`` where ``convert`` fails, by halving (only used on a failed read)."""
    try:
        convert(arr)
        return []
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, ValueError):
        if len(arr) == 1:
            return [0]
    half = len(arr) // 2
    return _failing_rows(arr.slice(0, half), convert) + [
        half + i for i in _failing_rows(arr.slice(half), convert)
    ]


def _has_rowid(cur: Any, table: str) -> bool:
    try:
        cur.execute(f"SELECT rowid FROM {_quote_table(table)} LIMIT 0")
        cur.fetch_arrow_table()
        return True
    except Exception:  # noqa: BLE001 - a WITHOUT ROWID table or a view
        return False


def _shown_keys(keys: pa.Table) -> list[dict[str, Any]]:
    """Rows of ``keys`` as Python, text that is not UTF-8 shown with backslash escapes."""
    cols = {}
    for name in keys.column_names:
        col = keys.column(name)
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            cols[name] = [None if v is None else v.decode("utf-8", "backslashreplace")
                          for v in col.cast(pa.large_binary()).to_pylist()]
        else:
            cols[name] = col.to_pylist()
    return [dict(zip(cols, vals, strict=True)) for vals in zip(*cols.values(), strict=True)]


def _sqlite_literals(cur: Any, table: str, rowids: list[int], checks: list[_Check]
                     ) -> dict[int, dict[str, str]]:
    """{rowid: {column: the stored value as an SQL literal}} for a few rows."""
    # as bytes: a TEXT value need not be UTF-8
    cols = ", ".join(f'CAST(quote("{c.column}") AS BLOB) AS "{c.column}"' for c in checks)
    out: dict[int, dict[str, str]] = {}
    for i in range(0, len(rowids), 500):
        part = rowids[i : i + 500]
        cur.execute(
            f'SELECT rowid AS "__rk_rowid", {cols} FROM {_quote_table(table)} '
            f"WHERE rowid IN ({', '.join('?' * len(part))})",
            tuple(part),
        )
        for rec in cur.fetch_arrow_table().to_pylist():
            out[rec.pop("__rk_rowid")] = {
                k: "NULL" if v is None else v.decode("utf-8", "backslashreplace")
                if isinstance(v, bytes) else str(v) for k, v in rec.items()
            }
    return out


_MALFORMED_FIX = (
    "Neither replaykit nor the producer writes such values: treat the rows as tampered with "
    "and restore them from a trusted copy; errors=\"quarantine\" reads the other rows "
    "(replaykit verify-chain reports these as malformed_value)."
)


def _fetch_sqlite_guarded(
    cur: Any,
    table: str,
    layout: str,
    checks: list[_Check],
    tenants: list[str],
    runs: list[str] | None,
    lo: pd.Timestamp | None,
    hi: pd.Timestamp | None,
    errors: ErrorPolicy,
) -> tuple[pa.Table, pa.Table]:
    """Read with every value guarded by its column's type rule; the rows that break one are
    raised (``LoadError(reason="malformed_value")``) or returned as quarantine rows."""
    where, params = _sqlite_where(tenants, runs, lo, hi)
    rowid = "rowid" if _has_rowid(cur, table) else "NULL"
    oks = [c.ok_sql() for c in checks]
    bad_sql = " + ".join(f"(CASE WHEN {ok} THEN 0 ELSE {1 << i} END)" for i, ok in enumerate(oks))
    cols = ", ".join(f'CASE WHEN {ok} THEN "{c.column}" END' for c, ok in zip(checks, oks,
                                                                              strict=True))
    sentinel = ", ".join(("0" if c.storage == "integer" else "''") + f' AS "{c.column}"'
                         for c in checks)
    cur.execute(
        f'SELECT 1 AS "__rk_sentinel", 0 AS "__rk_rowid", 0 AS "__rk_bad", {sentinel} '
        f"UNION ALL SELECT 0, {rowid}, {bad_sql}, {cols} FROM {_quote_table(table)} "
        f"WHERE {where}",
        tuple(params),
    )
    raw = _recheck(_drop_sentinel(cur.fetch_arrow_table()), tenants, runs)
    bad = raw.column("__rk_bad").to_numpy().astype(np.int64)
    for i, chk in enumerate(checks):  # TEXT must also be UTF-8 (SQLite stores any bytes)
        if chk.storage == "text":
            col = raw.column(chk.column).combine_chunks()
            if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
                for k in _failing_rows(col, lambda a: a.validate(full=True)):
                    bad[k] |= 1 << i
    if layout == "full":  # created_at must also parse as a time
        i = [c.column for c in checks].index("created_at")
        ts_type = EVENTS_SCHEMA.field("ts").type
        col = raw.column("created_at").combine_chunks()
        for k in _failing_rows(col, lambda a: _sqlite_times(a, ts_type)):
            bad[k] |= 1 << i
    rows = np.flatnonzero(bad)
    quarantine = Quarantine(errors)
    if rows.size:
        rowids = raw.column("__rk_rowid").take(pa.array(rows)).to_pylist()
        known = [r for r in rowids if r is not None]
        shown = known if errors == "quarantine" else known[:5]
        literals = _sqlite_literals(cur, table, shown, checks) if shown else {}
        keys = _shown_keys(raw.select(["tenant_id", "chat_id", "sequence_number"])
                           .take(pa.array(rows)))
        problems = []
        for n, (r, key) in enumerate(zip(rowids, keys, strict=True)):
            if errors == "raise" and n >= 5:
                break
            lit = literals.get(r, {})
            broken = [c for i, c in enumerate(checks) if bad[rows[n]] >> i & 1]
            what = "; ".join(
                f"'{c.column}' holds {_short(lit.get(c.column, '?'))}, not {c.holds}"
                for c in broken
            )
            where_row = f"rowid {r}" if r is not None else "a row"
            detail = (f"{where_row} (tenant {key['tenant_id']!r}, chat_id {key['chat_id']!r}, "
                      f"sequence_number {key['sequence_number']}): {what}")
            problems.append((r, broken[0].column, detail, key, lit, broken))
        if errors == "raise":
            more = f"; and {rows.size - len(problems)} more row(s)" if rows.size > 5 else ""
            raise LoadError(
                source=f"sqlite:{table}", line=None, field=problems[0][1],
                reason="malformed_value",
                detail=f"{rows.size} row(s) hold values not of their column's type: "
                + "; ".join(p[2] for p in problems) + more,
                fix=_MALFORMED_FIX,
            )
        for r, field, detail, key, lit, broken in problems:
            record = {"rowid": r, **key, "columns": {c.column: c.holds for c in broken},
                      "values": lit}
            quarantine.bad(
                LoadError(source=f"sqlite:{table}", line=r, field=field,
                          reason="malformed_value", detail=detail, fix=_MALFORMED_FIX),
                raw=json.dumps(record, ensure_ascii=False),
                tenant_id=key["tenant_id"], run_id=key["chat_id"],
            )
        raw = raw.filter(pa.array(bad == 0))
    return raw.drop_columns(["__rk_rowid", "__rk_bad"]), quarantine.table()


def _short(literal: str, limit: int = 60) -> str:
    return literal if len(literal) <= limit else literal[: limit - 3] + "..."


def malformed_problems(quarantine: pa.Table, *, every_reason: bool = False) -> pa.Table:
    """Quarantined rows as :func:`~replaykit.verify_chain` problems of kind ``malformed_value``
    (tenant_id, run_id, seq, kind, expected, found): the ``malformed_value`` rows, or with
    ``every_reason`` every row (a row of a database that the loader rejected for another
    reason, such as a payload that is not a JSON object, has expected = the reason, found =
    the message, and no tenant, run or seq)."""
    reasons = quarantine.column("reason")
    rows = quarantine
    if not every_reason and len(reasons):
        rows = quarantine.filter(pc.equal(reasons, "malformed_value"))
    recs = []
    for q in rows.to_pylist():
        if q["reason"] != "malformed_value":
            recs.append({"tenant_id": None, "run_id": None, "seq": None,
                         "kind": "malformed_value", "expected": q["reason"],
                         "found": q["message"]})
            continue
        try:
            rec = json.loads(q["raw"]) if q["raw"] else {}
        except ValueError:
            rec = None
        if not isinstance(rec, dict) or "columns" not in rec:
            # a row of another store (a Parquet file's text that is not UTF-8): the
            # quarantine row says whose it is and what is wrong, the bytes shown escaped
            recs.append({"tenant_id": q["tenant_id"], "run_id": q["run_id"], "seq": None,
                         "kind": "malformed_value",
                         "expected": f"{q['field']}: {q['reason']}", "found": q["message"]})
            continue
        cols = rec.get("columns", {})
        vals = rec.get("values", {})
        recs.append({
            "tenant_id": rec.get("tenant_id"),
            "run_id": rec.get("chat_id"),
            "seq": rec.get("sequence_number"),
            "kind": "malformed_value",
            "expected": "; ".join(f"{c}: {h}" for c, h in cols.items()),
            "found": "; ".join(f"{c}: {_short(vals.get(c, '?'))}" for c in cols)
            + f" (rowid {rec.get('rowid')})",
        })
    schema = pa.schema([("tenant_id", pa.string()), ("run_id", pa.string()),
                        ("seq", pa.int64()), ("kind", pa.string()),
                        ("expected", pa.string()), ("found", pa.string())])
    return pa.Table.from_pylist(recs, schema=schema)


def _sqlite_times(col: pa.Array, ts_type: pa.DataType) -> pa.Array:
    """SQLite ``created_at`` text as timestamps; ArrowInvalid for text that is no time or a
    time outside years 1 to 9999 (Arrow parses year 0000, which no datetime can show)."""
    ts = pc.cast(pc.cast(col, pa.string()), ts_type)
    if times_in_years(ts)[1].any():
        raise pa.ArrowInvalid("created_at outside years 1 to 9999")
    return ts
