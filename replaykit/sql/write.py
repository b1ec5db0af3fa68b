""":func:`write_sql`: an EventLog into a table, in batches."""

from __future__ import annotations

import os
import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..eventlog.log import EventLog
from ..tenancy import bad_tenant_mask, check_tenant_id
from ._fetch import _table_columns
from .connection import (
    _BATCH_ROWS,
    _COLUMNS,
    DEFAULT_TABLE,
    _connect,
    _db_errors,
    _quote_table,
    ddl,
)

__all__ = ["write_sql"]

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
