"""Event logs in SQL databases (SQLite, PostgreSQL) through ADBC: Arrow end to end.

Rows arrive as Arrow record batches from the ADBC drivers (no per-row Python), every value in
a query is a bound parameter, and every read names its tenant(s): rows of other tenants are
never returned. (On PostgreSQL the filter values are bound as one JSON parameter to a
transaction-local setting that the query reads, because the ADBC driver streams results
through binary COPY only for queries without parameters.)

Table layout
------------
The ``harness_event_log`` export columns come first, then the canonical columns an
:class:`~replaykit.EventLog` needs to round-trip exactly. PostgreSQL DDL (what
:func:`write_sql` creates when the table does not exist)::

    CREATE TABLE IF NOT EXISTS harness_event_log (
        "tenant_id"       TEXT COLLATE "C" NOT NULL,   -- tenant_id
        "chat_id"         TEXT COLLATE "C" NOT NULL,   -- run_id
        "sequence_number" BIGINT NOT NULL,             -- seq
        "event_type"      TEXT NOT NULL,               -- type
        "payload"         TEXT NOT NULL,               -- payload (JSON text, verbatim)
        "created_at"      TIMESTAMPTZ,                 -- ts
        "prev_hash"       TEXT,
        "row_hash"        TEXT,
        "parent_run_id"   TEXT,
        "kind"            TEXT NOT NULL,
        "turn"            INTEGER,
        "step"            INTEGER,
        "event_id"        TEXT,
        "ref_id"          TEXT,
        "tool_name"       TEXT,
        "args_hash"       TEXT,
        "cache_key"       TEXT,
        "is_error"        BOOLEAN NOT NULL,
        "finish"          TEXT,
        "input_tokens"    BIGINT,
        "output_tokens"   BIGINT,
        "chunk_type"      TEXT,
        "text"            TEXT,
        "inherited"       BOOLEAN NOT NULL,
        "source"          TEXT NOT NULL,
        "source_line"     BIGINT,
        PRIMARY KEY ("tenant_id", "chat_id", "sequence_number")
    );

SQLite uses the same columns with SQLite types: ``INTEGER`` for the integers and the booleans
(0/1) and ``TEXT`` for ``created_at``, stored as ISO-8601 UTC with six fractional digits
(``2025-03-01T12:00:00.000000Z``) so that text order is time order and microseconds survive.
``payload`` is TEXT, not JSONB: JSONB re-orders and re-spaces objects, which would change the
bytes the hash chain covers.

The plain export table
----------------------
:func:`read_sql` also reads a table with only the eight export columns (``tenant_id``,
``chat_id``, ``sequence_number``, ``event_type``, ``payload`` as TEXT/JSON/JSONB,
``created_at`` as TIMESTAMPTZ, ISO-8601 text or epoch ms, ``prev_hash``, ``row_hash``), which
is what producers keep; the typed columns are derived by the pleach loader's code.

Parallel reads
--------------
When read_sql opens the connection itself (a URI, not a connection object) and the table is
large (SQLite: a rowid span of 200,000 or more; PostgreSQL: 64 MB or more), the rows are
fetched on up to four connections at once (one per core): SQLite in rowid ranges, PostgreSQL
in block (``ctid``) ranges, every connection importing one snapshot exported by the first
(``pg_export_snapshot``), so the parts form one consistent read; a URI's row-level-security
options apply to every connection. The drivers decode rows without holding the GIL.

Row-level security
------------------
Reads filter on ``tenant_id`` in the query, and are meant to run under a database role whose
row-level-security policy limits it to its tenant(s), e.g.::

    ALTER TABLE harness_event_log ENABLE ROW LEVEL SECURITY;
    CREATE POLICY tenant_isolation ON harness_event_log
        USING (tenant_id = current_setting('app.tenant_id', true));

with the connection scoped through the URI:
``postgresql://reader@host/db?options=-c%20app.tenant_id%3Dacme``. Both must agree for a row
to be returned.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ._json import canonical_json, loads
from .errors import MissingExtraError
from .eventlog import EventLog
from .schema import EVENTS_SCHEMA, events_table

__all__ = ["DEFAULT_TABLE", "EXPORT_COLUMNS", "ddl", "read_sql", "write_sql"]

DEFAULT_TABLE = "harness_event_log"

#: (database column, canonical column, PostgreSQL type, SQLite type, NOT NULL)
_COLUMNS: tuple[tuple[str, str, str, str, bool], ...] = (
    ("tenant_id", "tenant_id", 'TEXT COLLATE "C"', "TEXT", True),
    ("chat_id", "run_id", 'TEXT COLLATE "C"', "TEXT", True),
    ("sequence_number", "seq", "BIGINT", "INTEGER", True),
    ("event_type", "type", "TEXT", "TEXT", True),
    ("payload", "payload", "TEXT", "TEXT", True),
    ("created_at", "ts", "TIMESTAMPTZ", "TEXT", False),
    ("prev_hash", "prev_hash", "TEXT", "TEXT", False),
    ("row_hash", "row_hash", "TEXT", "TEXT", False),
    ("parent_run_id", "parent_run_id", "TEXT", "TEXT", False),
    ("kind", "kind", "TEXT", "TEXT", True),
    ("turn", "turn", "INTEGER", "INTEGER", False),
    ("step", "step", "INTEGER", "INTEGER", False),
    ("event_id", "event_id", "TEXT", "TEXT", False),
    ("ref_id", "ref_id", "TEXT", "TEXT", False),
    ("tool_name", "tool_name", "TEXT", "TEXT", False),
    ("args_hash", "args_hash", "TEXT", "TEXT", False),
    ("cache_key", "cache_key", "TEXT", "TEXT", False),
    ("is_error", "is_error", "BOOLEAN", "INTEGER", True),
    ("finish", "finish", "TEXT", "TEXT", False),
    ("input_tokens", "input_tokens", "BIGINT", "INTEGER", False),
    ("output_tokens", "output_tokens", "BIGINT", "INTEGER", False),
    ("chunk_type", "chunk_type", "TEXT", "TEXT", False),
    ("text", "text", "TEXT", "TEXT", False),
    ("inherited", "inherited", "BOOLEAN", "INTEGER", True),
    ("source", "source", "TEXT", "TEXT", True),
    ("source_line", "source_line", "BIGINT", "INTEGER", False),
)
_DB_TO_CANON = {db: canon for db, canon, *_ in _COLUMNS}
_CANON_TO_DB = {canon: db for db, canon, *_ in _COLUMNS}
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$")
_INSTALL_FEATURE = "replaykit.read_sql / write_sql"
_BATCH_ROWS = 250_000
_PARALLEL_MIN_ROWS = 200_000
_PARALLEL_MIN_PAGES = 8_192  # 64 MB of 8 kB blocks, roughly 200,000 events


def _quote_table(table: str) -> str:
    if not isinstance(table, str) or not _IDENT.match(table):
        raise ValueError(
            f"table must be a plain SQL identifier such as 'harness_event_log' or "
            f"'schema.harness_event_log' (letters, digits, underscores), got {table!r}"
        )
    return ".".join(f'"{part}"' for part in table.split("."))


def ddl(dialect: str, table: str = DEFAULT_TABLE) -> str:
    """The ``CREATE TABLE IF NOT EXISTS`` statement :func:`write_sql` uses.

    ``dialect`` is ``"postgresql"`` or ``"sqlite"``.

    Raises:
        ValueError: unknown dialect or a table name that is not a plain identifier.

    >>> print(ddl("sqlite").splitlines()[1].strip())
    "tenant_id" TEXT NOT NULL,
    """
    if dialect not in ("postgresql", "sqlite"):
        raise ValueError(f"dialect must be 'postgresql' or 'sqlite', got {dialect!r}")
    cols = []
    for db, _canon, pg_type, lite_type, not_null in _COLUMNS:
        typ = pg_type if dialect == "postgresql" else lite_type
        cols.append(f'    "{db}" {typ}{" NOT NULL" if not_null else ""},')
    cols.append('    PRIMARY KEY ("tenant_id", "chat_id", "sequence_number")')
    return f"CREATE TABLE IF NOT EXISTS {_quote_table(table)} (\n" + "\n".join(cols) + "\n)"


# --------------------------------------------------------------------------- connections


def _dialect_of(uri: str) -> str:
    if uri.startswith(("postgresql://", "postgres://")):
        return "postgresql"
    if uri.startswith("sqlite:"):
        return "sqlite"
    raise ValueError(
        f"unsupported database URI {uri!r}: use sqlite:///path/to/file.db or "
        "postgresql://user@host:port/dbname"
    )


def _sqlite_target(uri: str) -> str:
    rest = uri[len("sqlite:") :]
    if rest.startswith("///"):
        return rest[3:] or ":memory:"  # sqlite:///rel.db and sqlite:////abs/path.db
    if rest.startswith("//"):
        return rest[2:] or ":memory:"
    return rest or ":memory:"


def _connect(uri: Any) -> tuple[Any, str, bool]:
    """(DB-API connection, dialect, whether we opened it and must close it)."""
    if isinstance(uri, Path):
        uri = f"sqlite:///{uri}"
    if not isinstance(uri, str):
        vendor = ""
        try:
            vendor = str(uri.adbc_get_info().get("vendor_name", "")).lower()
        except AttributeError as exc:
            raise TypeError(
                f"uri must be a database URI string or an ADBC DB-API connection, "
                f"got {type(uri).__name__}"
            ) from exc
        return uri, ("postgresql" if "postgres" in vendor else "sqlite"), False
    dialect = _dialect_of(uri)
    if dialect == "sqlite":
        try:
            import adbc_driver_sqlite.dbapi as driver
        except ImportError as exc:
            raise MissingExtraError(_INSTALL_FEATURE, "sql", "adbc_driver_sqlite") from exc
        return driver.connect(_sqlite_target(uri)), dialect, True
    try:
        import adbc_driver_postgresql.dbapi as pg_driver
    except ImportError as exc:
        raise MissingExtraError(_INSTALL_FEATURE, "sql", "adbc_driver_postgresql") from exc
    return pg_driver.connect(uri), dialect, True


# --------------------------------------------------------------------------- argument checks


def _tenant_list(tenant_id: Any) -> list[str]:
    values = [tenant_id] if isinstance(tenant_id, str) else tenant_id
    if values is None or isinstance(values, (bytes, bytearray)):
        values = None
    else:
        try:
            values = list(values)
        except TypeError:
            values = None
    if not values or not all(isinstance(v, str) and v for v in values):
        raise TypeError(
            "tenant_id is required: pass the tenant to read (a non-empty string) or a list of "
            f"them, e.g. read_sql(uri, tenant_id='acme'); got {tenant_id!r}"
        )
    return list(dict.fromkeys(values))


def _str_list(name: str, value: Any) -> list[str] | None:
    if value is None:
        return None
    values = [value] if isinstance(value, str) else list(value)
    if not all(isinstance(v, str) for v in values):
        raise TypeError(f"{name} must be a string or a list of strings, got {value!r}")
    return list(dict.fromkeys(values))


def _utc(value: Any, name: str) -> pd.Timestamp:
    try:
        t = pd.Timestamp(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} must be a time (datetime or ISO-8601 text), got {value!r}"
        ) from exc
    if t is pd.NaT:
        raise ValueError(f"{name} must be a time, got {value!r}")
    return t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")


def _iso(t: pd.Timestamp) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


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
    params: list[Any] = list(tenants)
    clauses = [f'"tenant_id" IN ({", ".join("?" * len(tenants))})']
    if runs is not None:
        clauses.append(f'"chat_id" IN ({", ".join("?" * len(runs))})' if runs else "1 = 0")
        params.extend(runs)
    for bound, op in ((lo, ">="), (hi, "<=")):
        if bound is not None:
            clauses.append(f'"created_at" {op} ?')
            params.append(_iso(bound))
    where = " AND ".join(clauses)
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
    workers = min(4, os.cpu_count() or 1)
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
) -> pa.Table:
    """Matching rows; ``uri`` (we opened the connection) allows parallel reads."""
    # The ADBC PostgreSQL driver streams a query through COPY (binary, fast) only when the
    # query has no bind parameters. So the filter values travel as ONE bound parameter, a JSON
    # document, into a transaction-local setting, and the query reads them from there: the
    # values never appear in the SQL text, and the rows still arrive through COPY.
    spec = {
        "tenants": tenants,
        "runs": runs,
        "since": None if lo is None else _iso(lo),
        "until": None if hi is None else _iso(hi),
    }
    cur.execute("SELECT set_config('replaykit.read_filter', $1, true)", (json.dumps(spec),))
    cur.fetch_arrow_table()
    setting = "current_setting('replaykit.read_filter')::jsonb"
    clauses = [f"\"tenant_id\" IN (SELECT jsonb_array_elements_text({setting} -> 'tenants'))"]
    if runs is not None:
        clauses.append(f"\"chat_id\" IN (SELECT jsonb_array_elements_text({setting} -> 'runs'))")
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


def _snapshot_sql(snapshot: str) -> str:
    if not re.fullmatch(r"[0-9A-Fa-f-]+", snapshot or ""):
        raise ValueError(f"unexpected snapshot id {snapshot!r}")
    return f"SET TRANSACTION SNAPSHOT '{snapshot}'"


def _ctid_ranges(cur: Any, table: str) -> list[tuple[int, int | None]] | None:
    """Split a large PostgreSQL table into one block range per core (None: one read)."""
    workers = min(4, os.cpu_count() or 1)
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


def _layout(columns: dict[str, str], table: str) -> str:
    """``"full"`` (the :func:`ddl` layout) or ``"plain"`` (the export columns only)."""
    if all(db in columns for db, *_ in _COLUMNS):
        return "full"
    missing = [c for c in _PLAIN_REQUIRED if c not in columns]
    if not columns or missing:
        raise ValueError(
            f"table {table!r} is not a harness_event_log table: "
            + ("it does not exist or has no columns" if not columns else f"it lacks {missing}")
            + "; it needs at least tenant_id, chat_id, sequence_number, event_type and payload"
        )
    return "plain"


def _plain_select(
    dialect: str, cur: Any, table: str, columns: dict[str, str], where: str
) -> str:
    present = [c for c in EXPORT_COLUMNS if c in columns]
    if dialect == "postgresql":
        exprs = [
            f'"{c}"::text AS "{c}"' if c == "payload" and "json" in columns[c] else f'"{c}"'
            for c in present
        ]
        return f"SELECT {', '.join(exprs)} FROM {_quote_table(table)} WHERE {where}"
    # SQLite: a typed sentinel row first (see _select_sql); created_at holds either text or
    # epoch milliseconds, so its sentinel takes the type of the stored values.
    ts_kind = "text"
    if "created_at" in columns:
        cur.execute(
            f'SELECT typeof("created_at") FROM {_quote_table(table)} '
            'WHERE "created_at" IS NOT NULL LIMIT 1'
        )
        found = cur.fetch_arrow_table().column(0).to_pylist()
        ts_kind = found[0] if found else "text"
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


def _fetch_rows(
    uri: Any,
    *,
    tenant_id: Any,
    table: str = DEFAULT_TABLE,
    run_ids: Any = None,
    since: Any = None,
    until: Any = None,
) -> tuple[pa.Table, str, str, frozenset[str]]:
    """(rows as fetched, dialect, layout ``"full"``/``"plain"``, names of JSONB columns)."""
    tenants = _tenant_list(tenant_id)
    runs = _str_list("run_ids", run_ids)
    lo = None if since is None else _utc(since, "since")
    hi = None if until is None else _utc(until, "until")
    _quote_table(table)
    conn, dialect, owned = _connect(uri)
    try:
        cur = conn.cursor()
        try:
            columns = _table_columns(cur, dialect, table)
            layout = _layout(columns, table)
            jsonb = frozenset(c for c, typ in columns.items() if typ == "jsonb")
            if layout == "full":
                def select(where: str) -> str:
                    return _select_sql(dialect, table, where)
            else:
                def select(where: str) -> str:
                    return _plain_select(dialect, cur, table, columns, where)
                lo = hi = None  # created_at may be text or epoch ms: bounded after conversion
            if dialect == "postgresql":
                raw = _fetch_postgresql(
                    cur, select, tenants, runs, lo, hi, table, uri if owned else None
                )
            else:
                target = None
                if owned:  # we opened it from a URI: parallel connections may open it too
                    target = str(uri) if isinstance(uri, Path) else _sqlite_target(uri)
                    if target == ":memory:" or target.startswith("file:"):
                        target = None
                raw = _fetch_sqlite(cur, select, tenants, runs, lo, hi, table, target)
        finally:
            cur.close()
    finally:
        if owned:
            conn.close()
    return raw, dialect, layout, jsonb


def _canonical_payloads(raw: pa.Table) -> pa.Table:
    """JSONB payload text (re-spaced, keys re-ordered by PostgreSQL) -> canonical JSON text.

    JSONB keeps a payload's value but not its bytes; the hash chain covers the bytes the
    producer hashed, which for pleach exports is the canonical JSON of the payload. One JSON
    decode and encode per row (orjson when installed): the one per-row step of this path.
    """
    i = raw.schema.get_field_index("payload")
    values = raw.column(i).to_pylist()
    text = [None if v is None else canonical_json(loads(v)) for v in values]
    return raw.set_column(i, "payload", pa.array(text, type=pa.large_string()))


def _plain_to_log(
    raw: pa.Table,
    dialect: str,
    table: str,
    lo: pd.Timestamp | None,
    hi: pd.Timestamp | None,
    jsonb: frozenset[str] = frozenset(),
) -> EventLog:
    """Export-column rows -> EventLog with the pleach loader's mapping (same code)."""
    from .io.pleach import _runs_table, events_from_arrow

    if "payload" in jsonb:
        raw = _canonical_payloads(raw)
    log = events_from_arrow(raw, source=f"pleach:{dialect}:{table}")
    t = log.table
    t = t.set_column(
        t.schema.get_field_index("source_line"),
        t.schema.field("source_line"),
        pa.nulls(t.num_rows, t.schema.field("source_line").type),
    )
    if lo is not None or hi is not None:
        ts = t.column("ts")
        keep = pc.is_valid(ts)
        if lo is not None:
            keep = pc.and_(keep, pc.greater_equal(ts, pa.scalar(lo, ts.type)))
        if hi is not None:
            keep = pc.and_(keep, pc.less_equal(ts, pa.scalar(hi, ts.type)))
        t = t.filter(pc.fill_null(keep, False))
    return EventLog(t, runs=_runs_table(t), quarantine=log.quarantine, sort=False)


def _read_log(uri: Any, *, tenant_id: Any, table: str = DEFAULT_TABLE, run_ids: Any = None,
              since: Any = None, until: Any = None) -> EventLog:
    raw, dialect, layout, jsonb = _fetch_rows(
        uri, tenant_id=tenant_id, table=table, run_ids=run_ids, since=since, until=until
    )
    if layout == "plain":
        lo = None if since is None else _utc(since, "since")
        hi = None if until is None else _utc(until, "until")
        return _plain_to_log(raw, dialect, table, lo, hi, jsonb)
    return EventLog(_to_canonical(raw, dialect), sort=False)


def _read_table(uri: Any, *, tenant_id: Any, table: str = DEFAULT_TABLE, **kwargs: Any) -> pa.Table:
    """The matching rows as a canonical-schema Arrow table, sorted (used by verify-chain)."""
    return _read_log(uri, tenant_id=tenant_id, table=table, **kwargs).table


def _to_canonical(raw: pa.Table, dialect: str) -> pa.Table:
    cols: dict[str, Any] = {}
    for db, canon, *_ in _COLUMNS:
        col = raw.column(db).combine_chunks()
        field = EVENTS_SCHEMA.field(canon)
        if canon == "ts" and dialect == "sqlite":
            col = pc.cast(pc.cast(col, pa.string()), field.type)
        elif pa.types.is_boolean(field.type) and not pa.types.is_boolean(col.type):
            col = pc.not_equal(col, 0)
        cols[canon] = col
    if raw.num_rows == 0:
        cols = {
            k: pa.array(
                [],
                type=(
                    EVENTS_SCHEMA.field(k).type.value_type
                    if pa.types.is_dictionary(EVENTS_SCHEMA.field(k).type)
                    else EVENTS_SCHEMA.field(k).type
                ),
            )
            for k in cols
        }
    return events_table(cols, sort=True)


def read_sql(
    uri: str | os.PathLike[str] | Any,
    *,
    tenant_id: str | Sequence[str],
    table: str = DEFAULT_TABLE,
    run_ids: str | Sequence[str] | None = None,
    since: Any = None,
    until: Any = None,
) -> EventLog:
    """Read a tenant's events from a SQLite or PostgreSQL table into an EventLog.

    ``uri`` is ``sqlite:///relative.db``, ``sqlite:////absolute/path.db``,
    ``postgresql://user@host:port/db`` (libpq URI; ``?options=-c%20app.tenant_id%3D...``
    scopes a row-level-security session) or an open ADBC DB-API connection.

    Two table layouts are read, told apart by the table's columns:

    * the layout of :func:`ddl` (what :func:`write_sql` creates: export columns plus the
      canonical ones), read back exactly;
    * a plain ``harness_event_log`` table with only the export columns
      (:data:`EXPORT_COLUMNS`; ``payload`` TEXT/JSON/JSONB, ``created_at`` timestamp, ISO text
      or epoch ms; ``prev_hash``/``row_hash`` optional), converted with the pleach file
      loader's mapping (:func:`replaykit.io.pleach.events_from_arrow`): the result equals
      ``read_pleach`` of the same rows except ``source`` (``"pleach:<dialect>:<table>"``)
      and ``source_line`` (null). A JSONB payload is re-encoded as canonical JSON (see
      docs/integrity.md).

    Large SQLite files opened from a URI are read in rowid ranges on parallel connections.

    Only rows whose ``tenant_id`` is one of the named tenants are returned; ``run_ids``
    narrows to those runs; ``since``/``until`` (inclusive, UTC; naive times are taken as UTC)
    bound ``created_at``, and rows without a time are left out when a bound is given. Every
    value travels as a bound parameter, never inside the SQL text.

    Raises:
        TypeError: ``tenant_id`` is None, empty, or not a string / list of strings.
        ValueError: an unsupported URI, a table name that is not a plain identifier, a
            table that does not exist or lacks the export columns, or a bad
            ``since``/``until``.
        LoadError: a plain-layout row the pleach mapping rejects (e.g. a payload that is not
            a JSON object, an unparseable ``created_at``, a duplicate sequence number).
        MissingExtraError: the ADBC driver is not installed
            (``pip install "replaykit[sql]"``).
        SchemaError: the rows do not form a valid log (e.g. duplicate seq in a run).

    >>> log = read_sql("sqlite:///events.db", tenant_id="acme")  # doctest: +SKIP
    >>> log.runs_df()[["run_id", "events"]]  # doctest: +SKIP
    """
    return _read_log(
        uri, tenant_id=tenant_id, table=table, run_ids=run_ids, since=since, until=until
    )


# --------------------------------------------------------------------------- writing


def _db_batch(table: pa.Table, dialect: str) -> pa.Table:
    arrays = []
    names = []
    for db, canon, *_ in _COLUMNS:
        col = table.column(canon).combine_chunks()
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        if pa.types.is_large_string(col.type):
            col = col.cast(pa.string())
        if canon == "ts" and dialect == "sqlite":
            col = pc.strftime(col, "%Y-%m-%dT%H:%M:%SZ")
        elif pa.types.is_boolean(col.type) and dialect == "sqlite":
            col = pc.cast(col, pa.int64())
        arrays.append(col)
        names.append(db)
    return pa.Table.from_arrays(arrays, names=names)


def write_sql(
    log: EventLog,
    uri: str | os.PathLike[str] | Any,
    table: str = DEFAULT_TABLE,
    *,
    create: bool = True,
) -> int:
    """Append every event of ``log`` to a SQLite or PostgreSQL table; return rows written.

    With ``create=True`` the table is created first when it does not exist (layout: see
    :func:`ddl`; the primary key (tenant_id, chat_id, sequence_number) rejects events that
    are already there). Rows go in through ADBC bulk ingestion (PostgreSQL ``COPY``), in
    one transaction. The log is written as is, hash columns included.

    Raises:
        TypeError: ``log`` is not an EventLog.
        ValueError: an unsupported URI or table name; text with NUL characters bound for
            PostgreSQL (which cannot store them).
        MissingExtraError: the ADBC driver is not installed
            (``pip install "replaykit[sql]"``).

    >>> write_sql(rk.stamp_chain(log), "sqlite:///events.db")  # doctest: +SKIP
    10000
    """
    if not isinstance(log, EventLog):
        raise TypeError(f"write_sql takes an EventLog, got {type(log).__name__}")
    _quote_table(table)
    conn, dialect, owned = _connect(uri)
    try:
        data = log.table
        if dialect == "postgresql":
            for name in ("payload", "text", "tenant_id", "run_id", "type", "source"):
                col = data.column(name)
                if (
                    col.null_count < len(col)
                    and pc.any(pc.match_substring(pc.cast(col, pa.large_string()), "\x00")).as_py()
                ):
                    raise ValueError(
                        f"column {name!r} holds NUL characters, which PostgreSQL TEXT cannot "
                        "store; escape or strip them before writing"
                    )
        cur = conn.cursor()
        try:
            if create:
                cur.execute(ddl(dialect, table))
            written = 0
            for start in range(0, data.num_rows, _BATCH_ROWS):
                batch = _db_batch(data.slice(start, _BATCH_ROWS), dialect)
                cur.adbc_ingest(
                    table.split(".")[-1],
                    batch,
                    mode="append",
                    db_schema_name=table.split(".")[0] if "." in table else None,
                )
                written += batch.num_rows
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        finally:
            cur.close()
    finally:
        if owned:
            conn.close()
    return int(written)
