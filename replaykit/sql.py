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
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .errors import MissingExtraError
from .eventlog import EventLog
from .schema import EVENTS_SCHEMA, events_table

__all__ = ["DEFAULT_TABLE", "ddl", "read_sql", "write_sql"]

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
    table: str,
    tenants: list[str],
    runs: list[str] | None,
    lo: pd.Timestamp | None,
    hi: pd.Timestamp | None,
) -> pa.Table:
    params: list[Any] = list(tenants)
    clauses = [f'"tenant_id" IN ({", ".join("?" * len(tenants))})']
    if runs is not None:
        clauses.append(f'"chat_id" IN ({", ".join("?" * len(runs))})' if runs else "1 = 0")
        params.extend(runs)
    for bound, op in ((lo, ">="), (hi, "<=")):
        if bound is not None:
            clauses.append(f'"created_at" {op} ?')
            params.append(_iso(bound))
    cur.execute(_select_sql("sqlite", table, " AND ".join(clauses)), tuple(params))
    return cur.fetch_arrow_table()


def _fetch_postgresql(
    cur: Any,
    table: str,
    tenants: list[str],
    runs: list[str] | None,
    lo: pd.Timestamp | None,
    hi: pd.Timestamp | None,
) -> pa.Table:
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
    cur.execute(_select_sql("postgresql", table, " AND ".join(clauses)))
    return cur.fetch_arrow_table()


def _read_table(
    uri: Any,
    *,
    tenant_id: Any,
    table: str = DEFAULT_TABLE,
    run_ids: Any = None,
    since: Any = None,
    until: Any = None,
) -> pa.Table:
    """The matching rows as a canonical-schema Arrow table (sorted, not yet validated)."""
    tenants = _tenant_list(tenant_id)
    runs = _str_list("run_ids", run_ids)
    lo = None if since is None else _utc(since, "since")
    hi = None if until is None else _utc(until, "until")
    _quote_table(table)
    conn, dialect, owned = _connect(uri)
    try:
        cur = conn.cursor()
        try:
            if dialect == "postgresql":
                raw = _fetch_postgresql(cur, table, tenants, runs, lo, hi)
            else:
                raw = _fetch_sqlite(cur, table, tenants, runs, lo, hi)
        finally:
            cur.close()
    finally:
        if owned:
            conn.close()
    if dialect == "sqlite":
        flag = raw.column("__rk_sentinel")
        if raw.num_rows and flag[0].as_py() == 1 and pc.sum(flag).as_py() == 1:
            raw = raw.slice(1)  # the usual case: sentinel first, dropped without a copy
        else:
            raw = raw.filter(pc.equal(flag, 0))
        raw = raw.drop_columns(["__rk_sentinel"])
    return _to_canonical(raw, dialect)


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
    scopes a row-level-security session) or an open ADBC DB-API connection. The table must
    have the layout of :func:`ddl` (the ``harness_event_log`` export columns plus the
    canonical ones).

    Only rows whose ``tenant_id`` is one of the named tenants are returned; ``run_ids``
    narrows to those runs; ``since``/``until`` (inclusive, UTC; naive times are taken as UTC)
    bound ``created_at``, and rows without a time are left out when a bound is given. Every
    value travels as a bound parameter, never inside the SQL text.

    Raises:
        TypeError: ``tenant_id`` is None, empty, or not a string / list of strings.
        ValueError: an unsupported URI, a table name that is not a plain identifier, or a
            bad ``since``/``until``.
        MissingExtraError: the ADBC driver is not installed
            (``pip install "replaykit[sql]"``).
        SchemaError: the rows do not form a valid log (e.g. duplicate seq in a run).

    >>> log = read_sql("sqlite:///events.db", tenant_id="acme")  # doctest: +SKIP
    >>> log.runs_df()[["run_id", "events"]]  # doctest: +SKIP
    """
    t = _read_table(
        uri, tenant_id=tenant_id, table=table, run_ids=run_ids, since=since, until=until
    )
    return EventLog(t, sort=False)


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
