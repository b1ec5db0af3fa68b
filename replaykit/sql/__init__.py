"""Event logs in SQL databases (SQLite, PostgreSQL) through ADBC: ``rk.read_sql``, ``rk.write_sql``.

:mod:`.connection` (URIs, dialects, errors), :mod:`.read` (with :mod:`._fetch`: the SELECTs and
the malformed-row checks), :mod:`.write`, :mod:`.rls` (the row-level-security recipe).
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing
import warnings as _warnings

from replaykit.errors import ReplayKitDeprecationWarning as _ReplayKitDeprecationWarning

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
#: names the old module had that moved to a module of this package: they still resolve
#: here, with a ReplayKitDeprecationWarning naming the new path, for one release.
_OLD = "replaykit.sql"
_MOVED: dict[str, str] = {
    "Any": ".connection",
    "Iterator": ".connection",
    "Mapping": "._fetch",
    "Path": ".connection",
    "Sequence": ".read",
    "ThreadPoolExecutor": "._fetch",
    "_AUDIT_CHECKS": ".rls",
    "_BATCH_ROWS": ".connection",
    "_CANON_TO_DB": ".connection",
    "_COLUMNS": ".connection",
    "_Check": "._fetch",
    "_DB_TO_CANON": ".connection",
    "_FIXES": ".connection",
    "_Fetched": "._fetch",
    "_IDENT": ".connection",
    "_INSTALL_FEATURE": ".connection",
    "_MALFORMED_FIX": "._fetch",
    "_PARALLEL_MIN_PAGES": "._fetch",
    "_PARALLEL_MIN_ROWS": "._fetch",
    "_PLAIN_REQUIRED": "._fetch",
    "_canonical_payloads": ".read",
    "_connect": ".connection",
    "_ctid_ranges": "._fetch",
    "_db_batch": ".write",
    "_db_errors": ".connection",
    "_dialect_of": ".connection",
    "_dollar": ".rls",
    "_driver_errors": ".connection",
    "_drop_sentinel": "._fetch",
    "_failing_rows": "._fetch",
    "_fetch_pg_filtered": "._fetch",
    "_fetch_postgresql": "._fetch",
    "_fetch_rows": "._fetch",
    "_fetch_sqlite": "._fetch",
    "_fetch_sqlite_guarded": "._fetch",
    "_has_rowid": "._fetch",
    "_ident": ".rls",
    "_iso": ".connection",
    "_layout": "._fetch",
    "_literal": ".rls",
    "_numeric_affinity": "._fetch",
    "_pg_exact": "._fetch",
    "_plain_select": "._fetch",
    "_plain_to_log": ".read",
    "_quote_table": ".connection",
    "_read_log": ".read",
    "_read_table": ".read",
    "_reason_of": ".connection",
    "_recheck": "._fetch",
    "_require_sqlite_file": ".connection",
    "_rls_check_block": ".rls",
    "_rls_grant_statements": ".rls",
    "_rls_names": ".rls",
    "_rls_setup_statements": ".rls",
    "_rowid_ranges": "._fetch",
    "_run_statements": ".rls",
    "_script": ".rls",
    "_select_sql": "._fetch",
    "_short": "._fetch",
    "_shown_keys": "._fetch",
    "_snapshot_sql": "._fetch",
    "_sql_error": ".connection",
    "_sqlite_checks": "._fetch",
    "_sqlite_literals": "._fetch",
    "_sqlite_target": ".connection",
    "_sqlite_tenant_collisions": "._fetch",
    "_sqlite_times": "._fetch",
    "_sqlite_ts_kind": "._fetch",
    "_sqlite_where": "._fetch",
    "_str_list": ".connection",
    "_table_columns": "._fetch",
    "_tenant_list": ".connection",
    "_to_canonical": ".read",
    "_to_log": ".read",
    "_under_rls": ".write",
    "_utc": ".connection",
    "_well_typed": ".read",
    "_write": ".write",
    "contextmanager": ".connection",
    "json": "._fetch",
    "malformed_problems": "._fetch",
    "np": "._fetch",
    "os": "._fetch",
    "pa": "._fetch",
    "pc": "._fetch",
    "pd": ".connection",
    "re": ".connection",
    "uuid": ".write",
}


def __getattr__(name: str) -> object:
    """Import the module behind a public name on first use; forward a moved name with a
    ReplayKitDeprecationWarning that names its new module."""
    if name in _EXPORTS:
        value = getattr(_importlib.import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value
        return value
    if name in _MOVED:
        new = f"{__name__}{_MOVED[name]}"
        _warnings.warn(f"{_OLD}.{name} moved to {new}.{name}: import it from there "
                       "(the old path goes in the next release)", _ReplayKitDeprecationWarning,
                       stacklevel=2)
        return getattr(_importlib.import_module(new), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
