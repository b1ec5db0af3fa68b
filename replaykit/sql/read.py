""":func:`read_sql`: a table of events as an EventLog."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .._base.json import canonical_json, loads
from ..eventlog.log import EventLog
from ..io._common import ErrorPolicy, check_errors_arg
from ..schema import EVENTS_SCHEMA, QUARANTINE_SCHEMA, events_table
from ._fetch import _Check, _fetch_rows, _Fetched, _sqlite_times
from .connection import _COLUMNS, DEFAULT_TABLE, _utc

__all__ = ["read_sql"]

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
    from ..io.pleach import _runs_table, events_from_arrow

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
