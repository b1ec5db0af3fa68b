"""Event logs in SQL databases (SQLite, PostgreSQL) through ADBC: ``rk.read_sql``, ``rk.write_sql``.

:mod:`.connection` (URIs, dialects, errors), :mod:`.read` (with :mod:`._fetch`: the SELECTs and
the malformed-row checks), :mod:`.write`, :mod:`.rls` (the row-level-security recipe).
"""

from __future__ import annotations

import typing as _typing

from .._base.delegates import lazy_exports

if _typing.TYPE_CHECKING:
    from ._fetch import EXPORT_COLUMNS, TableSchemaError
    from .connection import DEFAULT_MAPPING_TABLE, DEFAULT_TABLE, ddl
    from .read import read_sql
    from .rls import RLS_MARKER, rls_audit, rls_grant, rls_grant_sql, rls_setup, rls_setup_sql
    from .write import write_sql

__all__ = [
    "DEFAULT_MAPPING_TABLE",
    "DEFAULT_TABLE",
    "EXPORT_COLUMNS",
    "RLS_MARKER",
    "TableSchemaError",
    "ddl",
    "read_sql",
    "rls_audit",
    "rls_grant",
    "rls_grant_sql",
    "rls_setup",
    "rls_setup_sql",
    "write_sql",
]

#: where each public name lives (imported on first use, PEP 562).
_EXPORTS: dict[str, str] = {
    "DEFAULT_MAPPING_TABLE": ".connection",
    "DEFAULT_TABLE": ".connection",
    "EXPORT_COLUMNS": "._fetch",
    "RLS_MARKER": ".rls",
    "TableSchemaError": "._fetch",
    "ddl": ".connection",
    "read_sql": ".read",
    "rls_audit": ".rls",
    "rls_grant": ".rls",
    "rls_grant_sql": ".rls",
    "rls_setup": ".rls",
    "rls_setup_sql": ".rls",
    "write_sql": ".write",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
