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
(``pg_export_snapshot``), so the parts form one consistent read; every connection logs in as
the URI's role, so a row-level-security policy applies to each. The drivers decode rows
without holding the GIL.

Row-level security
------------------
Reads filter on ``tenant_id`` in the query (byte-exact, whatever the column's collation) and
re-check the rows that come back. Against a reader who can run any SQL, PostgreSQL enforces the
scope itself with the recipe of docs/security.md (:func:`rls_setup_sql`,
:func:`rls_grant_sql`): the policy keys on ``current_user`` through a mapping table the reader
cannot write, with ``FORCE ROW LEVEL SECURITY``, so no connection option, ``SET`` or
``set_config`` a client sends changes what it reads. :func:`write_sql` writes under that
policy too (staged through a temporary table, since PostgreSQL refuses ``COPY`` under RLS).
Driver errors become :class:`~replaykit.SQLError` (table, reason, fix).
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ._json import canonical_json, loads
from .errors import LoadError, MissingExtraError, ReplayKitError, SchemaError, SQLError
from .eventlog import EventLog
from .io._common import ErrorPolicy, Quarantine, check_errors_arg, times_in_years
from .schema import EVENTS_SCHEMA, QUARANTINE_SCHEMA, events_table
from .tenancy import bad_tenant_mask, check_tenant_id, tenant_id_problem

__all__ = [
    "DEFAULT_MAPPING_TABLE",
    "DEFAULT_TABLE",
    "EXPORT_COLUMNS",
    "TableSchemaError",
    "ddl",
    "read_sql",
    "RLS_MARKER",
    "rls_audit",
    "rls_grant",
    "rls_grant_sql",
    "rls_setup",
    "rls_setup_sql",
    "write_sql",
]

DEFAULT_TABLE = "harness_event_log"
#: The table mapping database roles to the tenants they may read and write (docs/security.md).
DEFAULT_MAPPING_TABLE = "replaykit.tenant_roles"

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


def _require_sqlite_file(target: str, table: str) -> None:
    """Refuse to read a SQLite file that does not exist (connecting would create it empty)."""
    if target == ":memory:" or target.startswith("file:"):
        return
    if not Path(target).is_file():
        raise SQLError(
            table=table, operation="read", reason="no_database",
            detail=f"there is no SQLite database file at {target!r}",
            fix="check the path (sqlite:///relative.db or sqlite:////absolute/path.db); "
                "read_sql never creates a database",
        )


def _connect(uri: Any, reading: str | None = None) -> tuple[Any, str, bool]:
    """(DB-API connection, dialect, whether we opened it and must close it).

    ``reading`` (the table a read is for): a SQLite file that does not exist is an error
    instead of a new empty database."""
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
        target = _sqlite_target(uri)
        if reading is not None:
            _require_sqlite_file(target, reading)
        return driver.connect(target), dialect, True
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
    for v in values:
        check_tenant_id(v, source="read_sql(tenant_id=...)")
    return list(dict.fromkeys(values))


# --------------------------------------------------------------------------- driver errors

_FIXES = {
    ("rls_denied", "write"): (
        "A row-level-security policy refused rows of a tenant this role is not mapped to: "
        "write each tenant's events through a role mapped to that tenant (see "
        "docs/security.md, rls_grant_sql), or split the log with log.filter(tenant_id=...)."
    ),
    ("rls_denied", "read"): (
        "The table is under row-level security for this role: read with row_security on "
        "(the default); the policy then returns the role's own tenants only."
    ),
    ("permission_denied", "read"): (
        "Grant the role SELECT on the table (and on the tenant mapping table under the "
        "docs/security.md recipe), or connect as a role that has it."
    ),
    ("permission_denied", "write"): (
        "Grant the role INSERT on the table (and SELECT on the tenant mapping table under the "
        "docs/security.md recipe), or connect as a role that has it."
    ),
    ("duplicate_key", "write"): (
        "Events with these (tenant_id, chat_id, sequence_number) are already in the table: "
        "write only new runs or events (nothing of this call was written)."
    ),
    ("bad_value", "read"): "A stored value does not fit its column: compare the table with ddl().",
    ("bad_value", "write"): (
        "A value does not fit its column: compare the table's layout with ddl() (nothing of "
        "this call was written)."
    ),
    ("unsupported", "read"): "The database does not support this read; see docs/security.md.",
    ("unsupported", "write"): "The database does not support this write; see docs/security.md.",
    ("connection", "read"): (
        "Check the URI (PostgreSQL: host, port, database, user, and that the server lets this "
        "role connect with these options; SQLite: that the path is an existing database file)."
    ),
    ("database_error", "read"): "See the database's message above.",
}


def _reason_of(exc: BaseException) -> tuple[str, str | None]:
    """(reason code, SQLSTATE) of a driver error."""
    state = getattr(exc, "sqlstate", None) or None
    text = str(exc).lower()
    if "row-level security" in text or "row level security" in text:
        return "rls_denied", state
    if state == "42501" or "permission denied" in text:
        return "permission_denied", state
    if state == "23505" or "unique constraint" in text or "duplicate key" in text:
        return "duplicate_key", state
    if (state or "").startswith("22") or "datatype mismatch" in text:
        return "bad_value", state
    if state == "0A000":
        return "unsupported", state
    if (state or "").startswith(("08", "28", "3D")) or any(
        k in text for k in ("failed to connect", "failed to open", "unable to open",
                            "not a database")
    ):
        return "connection", state
    return "database_error", state


def _driver_errors() -> tuple[type[BaseException], ...]:
    try:
        import adbc_driver_manager
    except ImportError:  # pragma: no cover - no driver, no driver errors
        return ()
    return (adbc_driver_manager.Error,)


def _sql_error(exc: BaseException, table: str, operation: str) -> SQLError:
    reason, state = _reason_of(exc)
    detail = " ".join(str(exc).split())
    detail = re.sub(r"\s*Query was: .*$", "", detail)[:600]
    fix = (_FIXES.get((reason, operation)) or _FIXES.get((reason, "read"))
           or _FIXES[("database_error", "read")])
    return SQLError(table=table, operation=operation, reason=reason, detail=detail, fix=fix,
                    sqlstate=state)


@contextmanager
def _db_errors(table: str, operation: str) -> Iterator[None]:
    """Driver errors (adbc: DataError, OperationalError, NotSupportedError, ProgrammingError,
    IntegrityError, ...) -> :class:`SQLError` naming the table and the fix."""
    errors = _driver_errors()
    try:
        yield
    except ReplayKitError:
        raise
    except errors as exc:
        raise _sql_error(exc, table, operation) from exc


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


def _well_typed(raw: pa.Table, checks: list[_Check]) -> bool:
    """Column-wise: every checked column arrived with its type, nulls and range (SQLite)."""
    for chk in checks:
        col = raw.column(chk.column)
        if chk.storage == "integer":
            if not pa.types.is_int64(col.type):
                return False
        elif not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
            return False
        else:
            try:  # SQLite keeps any bytes as TEXT: invalid UTF-8 would make invalid strings
                col.validate(full=True)
            except pa.ArrowInvalid:
                return False
        if not chk.nullable and col.null_count:
            return False
        if chk.extra and len(col) > col.null_count:
            mm = pc.min_max(col).as_py()
            lo, hi = (0, 1) if " IN (0, 1)" in chk.extra else (-(2**31), 2**31 - 1)
            if mm["min"] < lo or mm["max"] > hi:
                return False
    return True


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
        rec = json.loads(q["raw"]) if q["raw"] else {}
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
    errors: ErrorPolicy = "raise",
    quarantine: pa.Table | None = None,
) -> EventLog:
    """Export-column rows -> EventLog with the pleach loader's mapping (same code)."""
    from .io.pleach import _runs_table, events_from_arrow

    if "payload" in jsonb:
        raw = _canonical_payloads(raw)
    log = events_from_arrow(raw, source=f"pleach:{dialect}:{table}", errors=errors)
    found = log.quarantine
    if quarantine is not None and quarantine.num_rows:
        found = pa.concat_tables([quarantine, found.cast(QUARANTINE_SCHEMA)])
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
    return EventLog(t, runs=_runs_table(t), quarantine=found, sort=False)


def _to_log(got: _Fetched, table: str, since: Any, until: Any, errors: ErrorPolicy) -> EventLog:
    assert got.raw is not None
    if got.layout == "plain":
        lo = None if since is None else _utc(since, "since")
        hi = None if until is None else _utc(until, "until")
        return _plain_to_log(got.raw, got.dialect, table, lo, hi, got.jsonb, errors,
                             got.quarantine)
    return EventLog(_to_canonical(got.raw, got.dialect), quarantine=got.quarantine, sort=False)


def _read_log(uri: Any, *, tenant_id: Any, table: str = DEFAULT_TABLE, run_ids: Any = None,
              since: Any = None, until: Any = None, errors: ErrorPolicy = "raise") -> EventLog:
    policy = check_errors_arg(errors)
    kwargs = {"tenant_id": tenant_id, "table": table, "run_ids": run_ids, "since": since,
              "until": until}
    got = _fetch_rows(uri, errors=policy, **kwargs)
    if got.dialect == "sqlite":
        # Fast path: the rows arrived with their columns' types; else (SQLite stores anything
        # anywhere) read again through the type guards, which name the rows that break them.
        if got.raw is not None and _well_typed(got.raw, got.checks):
            try:
                return _to_log(got, table, since, until, policy)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                pass
        got = _fetch_rows(uri, guarded=True, errors=policy, **kwargs)
    return _to_log(got, table, since, until, policy)


def _read_table(uri: Any, *, tenant_id: Any, table: str = DEFAULT_TABLE, **kwargs: Any) -> pa.Table:
    """The matching rows as a canonical-schema Arrow table, sorted."""
    return _read_log(uri, tenant_id=tenant_id, table=table, **kwargs).table


def _sqlite_times(col: pa.Array, ts_type: pa.DataType) -> pa.Array:
    """SQLite ``created_at`` text as timestamps; ArrowInvalid for text that is no time or a
    time outside years 1 to 9999 (Arrow parses year 0000, which no datetime can show)."""
    ts = pc.cast(pc.cast(col, pa.string()), ts_type)
    if times_in_years(ts)[1].any():
        raise pa.ArrowInvalid("created_at outside years 1 to 9999")
    return ts


def _to_canonical(raw: pa.Table, dialect: str) -> pa.Table:
    cols: dict[str, Any] = {}
    for db, canon, *_ in _COLUMNS:
        col = raw.column(db).combine_chunks()
        field = EVENTS_SCHEMA.field(canon)
        if canon == "ts" and dialect == "sqlite":
            col = _sqlite_times(col, field.type)
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
    errors: ErrorPolicy = "raise",
) -> EventLog:
    """Read a tenant's events from a SQLite or PostgreSQL table into an EventLog.

    ``uri`` is ``sqlite:///relative.db``, ``sqlite:////absolute/path.db``,
    ``postgresql://user@host:port/db`` (libpq URI; under the row-level-security recipe of
    docs/security.md the user is the tenant's role) or an open ADBC DB-API connection.

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

    Only rows whose ``tenant_id`` is byte for byte one of the named tenants are returned
    (whatever the column's collation: SQLite ``NOCASE``/``RTRIM``, a case-insensitive ICU
    collation or ``citext`` on PostgreSQL), and the rows that come back are checked again,
    column-wise, against the tenants (and runs) asked for: the database is not trusted to
    have filtered. ``run_ids`` narrows to those runs (byte-exact too); ``since``/``until``
    (inclusive, UTC; naive times are taken as UTC) bound ``created_at``, and rows without a
    time are left out when a bound is given. Every value travels as a bound parameter, never
    inside the SQL text.

    SQLite stores any value in any column. A row holding a value that is not of its column's
    type (text in ``sequence_number``, a real in ``turn``, ``'yes'`` in ``is_error``, an
    unparseable ``created_at``) is treated as tampering: under ``errors="raise"`` a
    ``LoadError(reason="malformed_value")`` names the table, the rowids, the columns and the
    stored values; under ``errors="quarantine"`` those rows go to ``log.quarantine`` (``line``
    is the rowid, ``raw`` a JSON record of the row's stored values) and
    :func:`~replaykit.verify_chain` reports them as ``malformed_value``. Under
    ``errors="quarantine"`` plain-layout rows the pleach mapping rejects are quarantined too.

    Raises:
        TypeError: ``tenant_id`` is None, empty, or not a string / list of strings.
        ValueError: an unsupported URI, a table name that is not a plain identifier, a bad
            ``since``/``until`` or ``errors``.
        TableSchemaError: (a ``SchemaError``, also a ``ValueError``) the table does not
            exist or lacks a required export column (the message names them).
        LoadError: a tenant id that breaks the tenant-id rule (``reason="bad_tenant"``); a
            malformed stored value (``reason="malformed_value"``, see above); a plain-layout
            row the pleach mapping rejects (e.g. a payload that is not a JSON object, an
            unparseable ``created_at``, a duplicate sequence number).
        SQLError: the database refused the read (connection, permission, row-level
            security, ...): the driver's error translated, naming the table and the fix.
        MissingExtraError: the ADBC driver is not installed
            (``pip install "replaykit[sql]"``).
        SchemaError: the rows do not form a valid log (e.g. duplicate seq in a run).

    >>> log = read_sql("sqlite:///events.db", tenant_id="acme")  # doctest: +SKIP
    >>> log.runs_df()[["run_id", "events"]]  # doctest: +SKIP
    """
    return _read_log(
        uri, tenant_id=tenant_id, table=table, run_ids=run_ids, since=since, until=until,
        errors=errors,
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

    PostgreSQL refuses ``COPY`` into a table under row-level security, so there the rows are
    bulk-loaded into a temporary table and moved with one ``INSERT ... SELECT``, which the
    table's policy checks row by row: a role writes its own tenants' rows and is refused
    (``SQLError(reason="rls_denied")``, nothing written) for any other (docs/security.md).

    Raises:
        TypeError: ``log`` is not an EventLog.
        ValueError: an unsupported URI or table name; text with NUL characters bound for
            PostgreSQL (which cannot store them).
        LoadError: a tenant id in the log breaks the tenant-id rule (``reason="bad_tenant"``).
        SQLError: the database refused the write (``rls_denied``: a tenant the role may not
            write; ``duplicate_key``: events already in the table; ``permission_denied``,
            ``connection``, ...), naming the table and the fix. Nothing is written.
        MissingExtraError: the ADBC driver is not installed
            (``pip install "replaykit[sql]"``).

    >>> write_sql(rk.stamp_chain(log), "sqlite:///events.db")  # doctest: +SKIP
    10000
    """
    if not isinstance(log, EventLog):
        raise TypeError(f"write_sql takes an EventLog, got {type(log).__name__}")
    _quote_table(table)
    tenants = log.table.column("tenant_id")
    bad = bad_tenant_mask(tenants)
    if bad.any():
        check_tenant_id(tenants[int(np.flatnonzero(bad)[0])].as_py(),
                        source=f"write_sql({table!r})")
    with _db_errors(table, "write"):
        return _write(log, uri, table, create)


def _under_rls(cur: Any, table: str) -> bool:
    """Whether row-level security is enabled on a PostgreSQL table."""
    cur.execute(
        "SELECT coalesce((SELECT relrowsecurity FROM pg_class WHERE oid = to_regclass($1)), "
        "false)",
        (_quote_table(table),),
    )
    return bool(cur.fetch_arrow_table().column(0)[0].as_py())


def _write(log: EventLog, uri: Any, table: str, create: bool) -> int:
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
            if create and not _table_columns(cur, dialect, table):
                cur.execute(ddl(dialect, table))  # (a writer role may lack CREATE: ask first)
            # COPY is refused under row-level security: load a temporary table, then one
            # INSERT ... SELECT that the policy checks row by row
            staged = dialect == "postgresql" and _under_rls(cur, table)
            stage = f"rk_stage_{uuid.uuid4().hex}"
            cols = ", ".join(f'"{db}"' for db, *_ in _COLUMNS)
            written = 0
            for start in range(0, data.num_rows, _BATCH_ROWS):
                batch = _db_batch(data.slice(start, _BATCH_ROWS), dialect)
                if staged:
                    cur.adbc_ingest(stage, batch, mode="create_append", temporary=True)
                else:
                    cur.adbc_ingest(
                        table.split(".")[-1],
                        batch,
                        mode="append",
                        db_schema_name=table.split(".")[0] if "." in table else None,
                    )
                written += batch.num_rows
            if staged and written:
                cur.execute(
                    f'INSERT INTO {_quote_table(table)} ({cols}) '
                    f'SELECT {cols} FROM pg_temp."{stage}"'
                )
                cur.execute(f'DROP TABLE pg_temp."{stage}"')
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


# --------------------------------------------------------------------------- row-level security


def _ident(name: str, what: str) -> str:
    """``name`` as a quoted PostgreSQL identifier (any text without control characters)."""
    if not isinstance(name, str) or not name or len(name.encode()) > 63 or tenant_id_problem(
        name
    ):
        raise ValueError(f"{what} must be a PostgreSQL name (1-63 bytes, no control "
                         f"characters), got {name!r}")
    return '"' + name.replace('"', '""') + '"'


def _literal(value: str) -> str:
    """``value`` as a PostgreSQL string literal that means the same whatever the session's
    ``standard_conforming_strings`` (an escape string: backslashes and quotes doubled)."""
    return "E'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def _dollar(body: str) -> str:
    """``body`` dollar-quoted with a tag that does not occur in it."""
    k = 0
    while f"$rk{k}$" in body:
        k += 1
    return f"$rk{k}${body}$rk{k}$"


#: The comment replaykit puts on every policy it writes: how its setup and grants tell its
#: own policies from any other (an older recipe's, a name someone else took).
RLS_MARKER = "replaykit row-level security v2 (docs/security.md)"


def _rls_names(table: str, mapping_table: str) -> tuple[str, str, str, str, str]:
    """(table, mapping table, mapping schema, table policy, mapping policy), quoted and
    schema-qualified (an unqualified table is in ``public``, an unqualified mapping table in
    the ``replaykit`` schema): the recipe never depends on the session's ``search_path``."""
    _quote_table(table)
    _quote_table(mapping_table)
    qualified = table if "." in table else f"public.{table}"
    mapping = mapping_table if "." in mapping_table else f"replaykit.{mapping_table}"
    if mapping.split(".")[0] in ("public", "pg_catalog"):
        raise ValueError(
            f"mapping_table {mapping_table!r} must live in a schema of its own (such as "
            "'replaykit.tenant_roles'), which readers cannot create objects in; not in "
            "public, where readers may be allowed to create a table of that name first")
    policy = _ident(f"replaykit_tenant_{qualified.split('.')[-1]}"[:63], "policy name")
    return (_quote_table(qualified), _quote_table(mapping), f'"{mapping.split(".")[0]}"',
            policy, '"replaykit_own_rows"')


def _rls_check_block(t: str, m: str, schema: str, policy: str, mpolicy: str, *,
                     granting: bool, role: str | None = None) -> str:
    """A ``DO`` block that raises (so the whole transaction rolls back) unless the session may
    safely set up (``granting=False``) or grant on (``granting=True``) the recipe."""
    marker = _literal(RLS_MARKER)
    checks = [f"""
    tbl regclass := to_regclass({_literal(t)});
    map regclass;
    me oid := (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = current_user);
    bad text;
BEGIN
    IF tbl IS NULL THEN
        RAISE EXCEPTION 'replaykit: table % does not exist', {_literal(t)};
    END IF;
    IF (SELECT relowner FROM pg_catalog.pg_class WHERE oid = tbl) <> me THEN
        RAISE EXCEPTION 'replaykit: run the row-level-security recipe as the owner of %',
            {_literal(t)};
    END IF;
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_namespace
               WHERE nspname = {_literal(schema.strip('"'))} AND nspowner <> me) THEN
        RAISE EXCEPTION 'replaykit: schema % exists and is owned by another role; its owner '
            'could change the mapping table', {_literal(schema)};
    END IF;
    map := to_regclass({_literal(m)});
    SELECT string_agg(quote_ident(p.polname) || ' ON ' || p.polrelid::regclass::text, ', ')
        INTO bad FROM pg_catalog.pg_policy AS p
        WHERE p.polrelid IN (tbl, coalesce(map, tbl))
          AND pg_catalog.obj_description(p.oid, 'pg_policy') IS DISTINCT FROM {marker};
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'replaykit: policies replaykit did not write are on the table: % '
            '(permissive policies are ORed: one that trusts a session setting opens every '
            'tenant). Drop them (DROP POLICY name ON table) once you know they are not '
            'needed, then run the recipe again', bad;
    END IF;
    IF map IS NOT NULL AND (SELECT relowner FROM pg_catalog.pg_class WHERE oid = map) <> me
    THEN
        RAISE EXCEPTION 'replaykit: the mapping table % exists and is owned by another role '
            '(who could map itself to every tenant); drop it or pick another mapping_table',
            {_literal(m)};
    END IF;"""]
    if granting:
        checks.append(f"""
    IF map IS NULL OR NOT EXISTS (
            SELECT 1 FROM pg_catalog.pg_policy AS p WHERE p.polrelid = tbl
              AND pg_catalog.obj_description(p.oid, 'pg_policy') = {marker}) THEN
        RAISE EXCEPTION 'replaykit: % is not under the replaykit recipe; run '
            'replaykit.sql.rls_setup_sql() first', {_literal(t)};
    END IF;
    IF NOT (SELECT relrowsecurity AND relforcerowsecurity FROM pg_catalog.pg_class
            WHERE oid = tbl) THEN
        RAISE EXCEPTION 'replaykit: row-level security is not enabled and forced on %',
            {_literal(t)};
    END IF;""")
    if role is not None:
        checks.append(f"""
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = {_literal(role)}) THEN
        RAISE EXCEPTION 'replaykit: role % does not exist: create it first', {_literal(role)};
    END IF;
    IF (SELECT rolsuper OR rolbypassrls FROM pg_catalog.pg_roles
        WHERE rolname = {_literal(role)}) THEN
        RAISE EXCEPTION 'replaykit: role % is a superuser or has BYPASSRLS: row-level '
            'security never applies to it', {_literal(role)};
    END IF;
    IF (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = {_literal(role)}) = me THEN
        RAISE EXCEPTION 'replaykit: do not map the table owner; connect readers as roles '
            'of their own';
    END IF;""")
    body = "\nDECLARE" + "".join(checks) + "\nEND\n"
    return f"DO {_dollar(body)}"


def _rls_setup_statements(table: str, mapping_table: str) -> list[str]:
    t, m, schema, policy, mpolicy = _rls_names(table, mapping_table)
    own = (f"\n        SELECT m.\"tenant_id\" FROM {m} AS m\n"
           "        WHERE m.\"role_name\" OPERATOR(pg_catalog.=) current_user")
    marker = _literal(RLS_MARKER)
    return [
        "SET LOCAL search_path TO pg_catalog, pg_temp",
        _rls_check_block(t, m, schema, policy, mpolicy, granting=False),
        f"CREATE SCHEMA IF NOT EXISTS {schema}",
        f"REVOKE ALL ON SCHEMA {schema} FROM PUBLIC",
        f"""CREATE TABLE IF NOT EXISTS {m} (
    "role_name" pg_catalog.text COLLATE "C" NOT NULL,
    "tenant_id" pg_catalog.text COLLATE "C" NOT NULL,
    PRIMARY KEY ("role_name", "tenant_id")
)""",
        f"REVOKE ALL ON {m} FROM PUBLIC",
        f"ALTER TABLE {m} ENABLE ROW LEVEL SECURITY",
        f"DROP POLICY IF EXISTS {mpolicy} ON {m}",
        f"""CREATE POLICY {mpolicy} ON {m} FOR SELECT
    USING ("role_name" OPERATOR(pg_catalog.=) current_user)""",
        f"COMMENT ON POLICY {mpolicy} ON {m} IS {marker}",
        f"REVOKE ALL ON {t} FROM PUBLIC",
        f"ALTER TABLE {t} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {t} FORCE ROW LEVEL SECURITY",
        f"DROP POLICY IF EXISTS {policy} ON {t}",
        f"""CREATE POLICY {policy} ON {t}
    USING ("tenant_id" COLLATE "C" IN ({own}))
    WITH CHECK ("tenant_id" COLLATE "C" IN ({own}))""",
        f"COMMENT ON POLICY {policy} ON {t} IS {marker}",
    ]


def _rls_grant_statements(role: str, tenants: str | Sequence[str], table: str,
                          mapping_table: str, write: bool) -> list[str]:
    r = _ident(role, "role")
    values = [tenants] if isinstance(tenants, str) else list(tenants)
    for v in values:
        check_tenant_id(v, source="rls_grant_sql(tenants=...)")
    t, m, schema, policy, mpolicy = _rls_names(table, mapping_table)
    out = ["SET LOCAL search_path TO pg_catalog, pg_temp",
           _rls_check_block(t, m, schema, policy, mpolicy, granting=True, role=role),
           f"GRANT SELECT{', INSERT' if write else ''} ON {t} TO {r}",
           f"GRANT USAGE ON SCHEMA {schema} TO {r}",
           f"GRANT SELECT ON {m} TO {r}"]
    out += [f'INSERT INTO {m} ("role_name", "tenant_id") VALUES ({_literal(role)}, '
            f"{_literal(v)}) ON CONFLICT DO NOTHING" for v in values]
    return out


def _script(header: str, statements: list[str]) -> str:
    return header + "BEGIN;\n" + "".join(s + ";\n" for s in statements) + "COMMIT;\n"


def rls_setup_sql(table: str = DEFAULT_TABLE, *,
                  mapping_table: str = DEFAULT_MAPPING_TABLE) -> str:
    """The PostgreSQL row-level-security setup for ``table``, as SQL to run once as its owner
    (``psql -v ON_ERROR_STOP=1``; :func:`rls_setup` runs the same statements from Python).

    A session's tenants come from its role: the policy keys on ``current_user`` through
    ``mapping_table`` (role name -> tenant id), which readers can read only their own rows of
    and no reader or writer can change. Nothing a client sets (URI ``options``, ``SET``,
    ``set_config``) enters the policy. ``FORCE ROW LEVEL SECURITY`` puts the table's owner
    under the policy too (it reads nothing unless mapped). Tenant comparisons use
    ``COLLATE "C"``: byte-exact.

    The script holds whatever the database had before: it is one transaction (it fails
    whole, never leaving the table without its policy); it is idempotent (run it again to
    repair); it names every object with its schema and sets ``search_path`` to
    ``pg_catalog`` for its own statements, so the owner session's settings do not matter;
    literals are escape strings (the same under any ``standard_conforming_strings``); and
    it refuses (an exception, nothing changed) a table that has policies replaykit did not
    write (an older recipe's, a name already taken: permissive policies are ORed), a
    mapping schema or table owned by another role, or a session that is not the table's
    owner. The mapping table lives in a schema of its own (default ``replaykit``), closed to
    ``PUBLIC``, so no reader can create a table of its name first. Give each role its
    tenants with :func:`rls_grant_sql`; check the result with :func:`rls_audit`.

    Raises:
        ValueError: a table name that is not a plain identifier; a mapping table in
            ``public``.

    >>> print(rls_setup_sql().splitlines()[0])
    -- replaykit row-level security for "public"."harness_event_log" (docs/security.md)
    """
    t = _rls_names(table, mapping_table)[0]
    return _script(f"-- replaykit row-level security for {t} (docs/security.md)\n",
                   _rls_setup_statements(table, mapping_table))


def rls_grant_sql(role: str, tenants: str | Sequence[str], *, table: str = DEFAULT_TABLE,
                  mapping_table: str = DEFAULT_MAPPING_TABLE, write: bool = False) -> str:
    """SQL (run as the table's owner) that lets database ``role`` read ``tenants``' rows of
    ``table`` under :func:`rls_setup_sql` (and, with ``write=True``, insert them).

    The role itself is created by the administrator (``CREATE ROLE acme_reader LOGIN
    PASSWORD '...'``): not a superuser, no ``BYPASSRLS``, not the table's owner, and not a
    member of another tenant's role. One transaction, which refuses (nothing granted) a
    table that is not under the replaykit recipe or carries policies replaykit did not
    write, and a role that is a superuser, has ``BYPASSRLS`` or owns the table.

    Raises:
        ValueError: a role name that is not a PostgreSQL name; a table name that is not a
            plain identifier.
        LoadError: a tenant id that breaks the tenant-id rule (``reason="bad_tenant"``).

    >>> print(rls_grant_sql("acme_reader", "acme").splitlines()[-2].split(" VALUES ")[1])
    (E'acme_reader', E'acme') ON CONFLICT DO NOTHING;
    """
    return _script("", _rls_grant_statements(role, tenants, table, mapping_table, write))


def _run_statements(conn_or_uri: Any, statements: list[str], table: str, what: str) -> None:
    with _db_errors(table, what):
        conn, dialect, owned = _connect(conn_or_uri)
        try:
            if dialect != "postgresql":
                raise ValueError("row-level security is a PostgreSQL feature; this "
                                 f"connection is {dialect}")
            try:
                with conn.cursor() as cur:
                    for stmt in statements:
                        cur.execute(stmt)
                conn.commit()
            except BaseException as exc:
                conn.rollback()
                refused = re.search(r"ERROR:\s+(replaykit: .*?)(?:\s+CONTEXT:|\s+Query was:|$)",
                                    " ".join(str(exc).split()))
                if refused:  # the recipe's own check said no: its message, not the query
                    raise SQLError(
                        table=table, operation=what, reason="rls_refused",
                        detail=refused.group(1) + "; nothing was changed",
                        fix="see docs/security.md (the PostgreSQL recipe); "
                            "replaykit.sql.rls_audit(conn, table) lists what to fix",
                        sqlstate="P0001") from None
                raise
        finally:
            if owned:
                conn.close()


def rls_setup(conn_or_uri: Any, table: str = DEFAULT_TABLE, *,
              mapping_table: str = DEFAULT_MAPPING_TABLE) -> None:
    """Run :func:`rls_setup_sql` on a PostgreSQL connection (or URI), as the table's owner,
    in one transaction.

    >>> rk.sql.rls_setup("postgresql://owner@db/events")  # doctest: +SKIP

    Raises:
        SQLError: ``reason="rls_refused"``: the recipe's check refused (a policy replaykit
            did not write, a mapping schema or table owned by another role, not the table's
            owner, ...), named in the message; or the database refused a statement. Either
            way nothing was changed.
        ValueError: as :func:`rls_setup_sql`, or a connection that is not PostgreSQL.
    """
    _run_statements(conn_or_uri, _rls_setup_statements(table, mapping_table), table, "write")


def rls_grant(conn_or_uri: Any, role: str, tenants: str | Sequence[str], *,
              table: str = DEFAULT_TABLE, mapping_table: str = DEFAULT_MAPPING_TABLE,
              write: bool = False) -> None:
    """Run :func:`rls_grant_sql` on a PostgreSQL connection (or URI), in one transaction.

    Raises:
        SQLError: ``reason="rls_refused"`` (see :func:`rls_grant_sql`) or the database
            refused a statement; nothing was granted.
        ValueError / LoadError: as :func:`rls_grant_sql`.
    """
    _run_statements(conn_or_uri, _rls_grant_statements(role, tenants, table, mapping_table,
                                                       write), table, "write")


#: (check, severity, SQL returning (object, detail) rows for the problem, fix). ``$1`` is the
#: table, ``$2`` the mapping table (both quoted and schema-qualified), ``$3`` the marker.
_AUDIT_CHECKS: tuple[tuple[str, str, str, str], ...] = (
    ("rls_not_enabled", "error",
     "SELECT $1, 'row-level security is not enabled' FROM pg_catalog.pg_class "
     "WHERE oid = to_regclass($1) AND NOT relrowsecurity",
     "run replaykit.sql.rls_setup_sql() as the table's owner"),
    ("rls_not_forced", "error",
     "SELECT $1, 'row-level security is not forced: the table owner bypasses it' "
     "FROM pg_catalog.pg_class WHERE oid = to_regclass($1) AND NOT relforcerowsecurity",
     "ALTER TABLE ... FORCE ROW LEVEL SECURITY (rls_setup_sql does)"),
    ("no_replaykit_policy", "error",
     "SELECT $1, 'no policy written by replaykit' WHERE to_regclass($1) IS NOT NULL AND "
     "NOT EXISTS (SELECT 1 FROM pg_catalog.pg_policy p WHERE p.polrelid = to_regclass($1) "
     "AND pg_catalog.obj_description(p.oid, 'pg_policy') = $3)",
     "run replaykit.sql.rls_setup_sql() as the table's owner"),
    ("foreign_policy", "error",
     "SELECT p.polname || ' ON ' || p.polrelid::regclass::text, "
     "'a policy replaykit did not write (policies are ORed): ' || "
     "coalesce(pg_catalog.pg_get_expr(p.polqual, p.polrelid), 'no USING clause') "
     "FROM pg_catalog.pg_policy p WHERE p.polrelid IN (to_regclass($1), to_regclass($2)) "
     "AND pg_catalog.obj_description(p.oid, 'pg_policy') IS DISTINCT FROM $3",
     "drop it (DROP POLICY name ON table) unless you know why it is needed"),
    ("mapping_missing", "error",
     "SELECT $2, 'the mapping table does not exist' WHERE to_regclass($2) IS NULL",
     "run replaykit.sql.rls_setup_sql() as the table's owner"),
    ("mapping_not_owned", "error",
     "SELECT $2, 'owned by ' || m.relowner::regrole::text || ', not by the table owner ' || "
     "t.relowner::regrole::text FROM pg_catalog.pg_class m, pg_catalog.pg_class t "
     "WHERE m.oid = to_regclass($2) AND t.oid = to_regclass($1) AND m.relowner <> t.relowner",
     "the mapping table's owner can map itself to every tenant: drop it and run the setup"),
    ("mapping_schema", "error",
     "SELECT n.nspname::text, 'schema of the mapping table is owned by ' || "
     "n.nspowner::regrole::text || ', not by the table owner' "
     "FROM pg_catalog.pg_class m JOIN pg_catalog.pg_namespace n ON n.oid = m.relnamespace, "
     "pg_catalog.pg_class t WHERE m.oid = to_regclass($2) AND t.oid = to_regclass($1) "
     "AND n.nspowner <> t.relowner",
     "keep the mapping table in a schema the table owner owns (rls_setup_sql does)"),
    ("mapping_schema_create", "error",
     "SELECT n.nspname::text, 'CREATE on the mapping schema is granted to ' || "
     "CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END "
     "FROM pg_catalog.pg_class m JOIN pg_catalog.pg_namespace n ON n.oid = m.relnamespace, "
     "aclexplode(n.nspacl) a WHERE m.oid = to_regclass($2) AND a.privilege_type = 'CREATE' "
     "AND a.grantee <> n.nspowner",
     "REVOKE CREATE ON SCHEMA ... FROM PUBLIC (and from those roles)"),
    ("mapping_writable", "error",
     "SELECT $2, a.privilege_type || ' granted to ' || "
     "CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END "
     "FROM pg_catalog.pg_class m, aclexplode(m.relacl) a WHERE m.oid = to_regclass($2) "
     "AND a.grantee <> m.relowner AND a.privilege_type IN "
     "('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'TRIGGER', 'REFERENCES')",
     "REVOKE ... ON the mapping table: whoever writes it chooses its tenants"),
    ("mapping_rls_off", "warning",
     "SELECT $2, 'row-level security is off: every grantee sees every role''s tenants' "
     "FROM pg_catalog.pg_class WHERE oid = to_regclass($2) AND NOT relrowsecurity",
     "ALTER TABLE ... ENABLE ROW LEVEL SECURITY (rls_setup_sql does)"),
    ("public_grant", "error",
     "SELECT $1, a.privilege_type || ' granted to PUBLIC' FROM pg_catalog.pg_class t, "
     "aclexplode(t.relacl) a WHERE t.oid = to_regclass($1) AND a.grantee = 0",
     "REVOKE ALL ON the table FROM PUBLIC; grant each role with rls_grant_sql"),
    ("bypass_role", "error",
     "SELECT r.rolname::text, CASE WHEN r.rolsuper THEN 'a superuser' ELSE 'has BYPASSRLS' "
     "END || ' and may read the table: row-level security does not apply to it' "
     "FROM pg_catalog.pg_roles r WHERE (r.rolbypassrls AND NOT r.rolsuper AND r.rolcanlogin "
     "AND pg_catalog.has_table_privilege(r.oid, to_regclass($1), 'SELECT')) "
     "OR ((r.rolsuper OR r.rolbypassrls) "
     "AND r.oid = (SELECT relowner FROM pg_catalog.pg_class WHERE oid = to_regclass($1)))",
     "do not connect applications as superusers or BYPASSRLS roles; for the owner, "
     "ALTER TABLE ... OWNER TO a plain role"),
    ("mapped_bypass_role", "error",
     "SELECT m.role_name, 'mapped, but a superuser or BYPASSRLS role: it reads every tenant' "
     "FROM pg_catalog.pg_roles r JOIN (SELECT DISTINCT role_name FROM %(mapping)s) m "
     "ON m.role_name = r.rolname WHERE r.rolsuper OR r.rolbypassrls",
     "ALTER ROLE ... NOSUPERUSER NOBYPASSRLS"),
    ("mapped_member", "warning",
     "SELECT a.role_name || ' -> ' || b.role_name, 'a member of another mapped role reads "
     "its tenants too (membership is authorisation)' FROM (SELECT DISTINCT role_name FROM "
     "%(mapping)s) a, (SELECT DISTINCT role_name FROM %(mapping)s) b, pg_catalog.pg_roles ra, "
     "pg_catalog.pg_roles rb WHERE ra.rolname = a.role_name AND rb.rolname = b.role_name "
     "AND ra.oid <> rb.oid AND pg_catalog.pg_has_role(ra.oid, rb.oid, 'MEMBER')",
     "REVOKE the membership unless the role should read both tenants"),
    ("bypassing_view", "error",
     "SELECT DISTINCT v.oid::regclass::text, 'a view over the table owned by ' || "
     "v.relowner::regrole::text || ', which bypasses row-level security, and not "
     "security_invoker' FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_rewrite w "
     "ON w.oid = d.objid JOIN pg_catalog.pg_class v ON v.oid = w.ev_class "
     "JOIN pg_catalog.pg_roles o ON o.oid = v.relowner WHERE d.refobjid = to_regclass($1) "
     "AND v.oid <> to_regclass($1) AND (o.rolsuper OR o.rolbypassrls) AND NOT "
     "coalesce('security_invoker=true' = ANY (v.reloptions) OR "
     "'security_invoker=on' = ANY (v.reloptions), false)",
     "recreate it as the table's owner or WITH (security_invoker = true)"),
    ("bypassing_security_definer", "warning",
     "SELECT p.oid::regprocedure::text, 'SECURITY DEFINER function owned by ' || "
     "p.proowner::regrole::text || ', which bypasses row-level security: whatever it "
     "reads, its callers get' FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_roles o "
     "ON o.oid = p.proowner WHERE p.prosecdef AND (o.rolsuper OR o.rolbypassrls) AND "
     "p.pronamespace NOT IN (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname IN "
     "('pg_catalog', 'information_schema'))",
     "make it SECURITY INVOKER, or own it by a plain role under the policy"),
    ("public_schema_create", "warning",
     "SELECT n.nspname::text, 'PUBLIC may create objects in the table''s schema (functions, "
     "views, tables that an owner session with that schema first in search_path would use)' "
     "FROM pg_catalog.pg_class t JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace, "
     "aclexplode(n.nspacl) a WHERE t.oid = to_regclass($1) AND a.grantee = 0 "
     "AND a.privilege_type = 'CREATE'",
     "REVOKE CREATE ON SCHEMA ... FROM PUBLIC (the PostgreSQL 15 default)"),
)


def rls_audit(conn_or_uri: Any, table: str = DEFAULT_TABLE, *,
              mapping_table: str = DEFAULT_MAPPING_TABLE) -> pd.DataFrame:
    """Check a PostgreSQL table against the row-level-security recipe and the pitfalls it
    cannot close by itself (docs/security.md): one row per problem found, columns
    ``check``, ``severity`` (``error``: a tenant can read or write another's rows;
    ``warning``: a risk to look at), ``object``, ``detail`` and ``fix``. Empty: nothing
    found. Run it as the table's owner (or a role that may read the catalogs and the
    mapping table).

    It reports: row-level security not enabled or not forced; the replaykit policy missing;
    policies replaykit did not write on the table or the mapping table; a mapping table (or
    its schema) missing, owned by another role, writable by others or open to ``CREATE``;
    grants to ``PUBLIC``; login roles with ``BYPASSRLS`` that may read the table, or a table
    owner that is a superuser or has ``BYPASSRLS`` (superusers as such always exist and are
    not reported: never connect applications as one);
    mapped roles that are superusers, have ``BYPASSRLS`` or are members of another mapped
    role; views over the table owned by a role that bypasses row-level security;
    ``SECURITY DEFINER`` functions owned by such roles; ``CREATE`` on the table's schema for
    ``PUBLIC``.

    >>> rk.sql.rls_audit("postgresql://owner@db/events")  # doctest: +SKIP
    Empty DataFrame ...

    Raises:
        SQLError: the database refused the catalog queries.
        ValueError: a table name that is not a plain identifier; a connection that is not
            PostgreSQL.
    """
    t, m, *_ = _rls_names(table, mapping_table)
    rows: list[dict[str, Any]] = []
    with _db_errors(table, "read"):
        conn, dialect, owned = _connect(conn_or_uri)
        try:
            if dialect != "postgresql":
                raise ValueError("rls_audit checks PostgreSQL row-level security; this "
                                 f"connection is {dialect}")
            with conn.cursor() as cur:
                cur.execute(f"SELECT to_regclass({_literal(m)}) IS NOT NULL")
                has_mapping = bool(cur.fetchone()[0])
                for check, severity, sql, fix in _AUDIT_CHECKS:
                    if "%(mapping)s" in sql:
                        if not has_mapping:
                            continue
                        sql = sql % {"mapping": m}
                    # the table and mapping names (plain identifiers, quoted) and the marker
                    # as escape-string literals: the same under any session settings
                    for k, v in (("$1", t), ("$2", m), ("$3", RLS_MARKER)):
                        sql = sql.replace(k, _literal(v))
                    cur.execute(sql)
                    for obj, detail in cur.fetchall():
                        rows.append({"check": check, "severity": severity, "object": obj,
                                     "detail": detail, "fix": fix})
            conn.rollback()
        finally:
            if owned:
                conn.close()
    return pd.DataFrame(rows, columns=["check", "severity", "object", "detail", "fix"])
