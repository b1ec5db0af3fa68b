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

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import MissingExtraError, ReplayKitError, SQLError, special_file_kind
from ..tenancy import check_tenant_id

__all__ = ["DEFAULT_MAPPING_TABLE", "DEFAULT_TABLE", "ddl"]

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
    kind = special_file_kind(target)
    if kind is not None:  # the loaders' rule: a FIFO or device is said as such, never opened
        raise SQLError(
            table=table, operation="read", reason="special_file",
            detail=f"{target!r} is {kind}, not a SQLite database file (never opened)",
            fix="name the SQLite database file (sqlite:////absolute/path.db)")
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
