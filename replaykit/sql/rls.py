"""The row-level-security recipe for PostgreSQL: setup and grant SQL, applying them, the audit."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..errors import SQLError
from ..tenancy import check_tenant_id, tenant_id_problem
from .connection import DEFAULT_MAPPING_TABLE, DEFAULT_TABLE, _connect, _db_errors, _quote_table

__all__ = ["RLS_MARKER", "rls_audit", "rls_grant", "rls_grant_sql", "rls_setup", "rls_setup_sql"]

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


def _table_schema(quoted_table: str) -> str:
    """The quoted schema of a quoted, schema-qualified table name (``"public"."t"``)."""
    return quoted_table.split('"."')[0] + '"'


def _reader_check_block(role: str) -> str:
    """A ``DO`` block that raises unless ``role`` (about to be mapped to tenants) can neither
    create objects in a schema other roles use nor owns a SECURITY DEFINER function others
    may call: either would let it hand its tenants' rows to other sessions (a SECURITY
    DEFINER function runs as its owner, whose mapping the policy then applies)."""
    lit = _literal(role)
    body = f"""
DECLARE
    r oid := (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = {lit});
    bad text;
BEGIN
    SELECT string_agg(quote_ident(n.nspname), ', ') INTO bad FROM pg_catalog.pg_namespace n
        WHERE n.nspname <> 'information_schema'
          AND pg_catalog.left(n.nspname, 3) <> 'pg_'  -- the system's schemas
          AND pg_catalog.has_schema_privilege(r, n.oid, 'CREATE')
          AND EXISTS (SELECT 1 FROM aclexplode(coalesce(n.nspacl,
                      acldefault('n', n.nspowner))) u
                      WHERE u.privilege_type = 'USAGE' AND u.grantee <> r);
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'replaykit: role % may create objects in schema(s) % that other roles '
            'use: a SECURITY DEFINER function it makes there would hand its tenants'' rows '
            'to whoever calls it. REVOKE CREATE ON SCHEMA ... FROM it (and FROM PUBLIC) as '
            'the schema''s owner, then grant again', {lit}, bad;
    END IF;
    SELECT string_agg(p.oid::regprocedure::text, ', ') INTO bad FROM pg_catalog.pg_proc p
        WHERE p.proowner = r AND p.prosecdef;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'replaykit: role % owns SECURITY DEFINER function(s) %: mapped to '
            'tenants, each would run as it for whoever calls it. Drop them or make them '
            'SECURITY INVOKER, then grant again', {lit}, bad;
    END IF;
END
"""
    return f"DO {_dollar(body)}"


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
        # no reader may create functions in the schema others resolve names in (a SECURITY
        # DEFINER one runs as its owner and hands that owner's tenants to every caller);
        # only the schema's owner can revoke: for anyone else this is a no-op with a
        # warning, and rls_grant_sql refuses a role that still may create there
        f"REVOKE CREATE ON SCHEMA {_table_schema(t)} FROM PUBLIC",
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
           f"REVOKE CREATE ON SCHEMA {_table_schema(t)} FROM {r}",
           _reader_check_block(role),
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
    ``PUBLIC``, so no reader can create a table of its name first; ``CREATE`` on the table's
    schema is revoked from ``PUBLIC`` (effective when the table owner owns that schema), so
    no reader plants a ``SECURITY DEFINER`` function there that runs as it for others.
    Give each role its tenants with :func:`rls_grant_sql`; check the result with :func:`rls_audit`.

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
    write, and a role that is a superuser, has ``BYPASSRLS`` or owns the table, or that may
    create objects in a schema other roles use (after ``CREATE`` on the table's schema is
    revoked from it) or owns a ``SECURITY DEFINER`` function: mapped to tenants, such a
    function would run as it for whoever calls it.

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
    ("tenant_security_definer", "error",
     "SELECT p.oid::regprocedure::text, 'SECURITY DEFINER function owned by ' || "
     "quote_ident(o.rolname) || ', a role mapped to tenants: it runs as its owner, so "
     "whoever calls it reads that role''s tenants'' rows (callable by ' || "
     "string_agg(DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC' "
     "ELSE a.grantee::regrole::text END, ', ') || ')' "
     "FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_roles o ON o.oid = p.proowner "
     "JOIN (SELECT DISTINCT role_name FROM %(mapping)s) m ON m.role_name = o.rolname "
     "CROSS JOIN LATERAL aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a "
     "WHERE p.prosecdef AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner "
     "GROUP BY p.oid, o.rolname",
     "DROP FUNCTION it (or ALTER FUNCTION ... SECURITY INVOKER); readers must not own "
     "functions others call: REVOKE CREATE on every schema others use from them"),
    ("reader_schema_create", "error",
     "SELECT quote_ident(m.role_name) || ' on schema ' || quote_ident(n.nspname), "
     "'a role mapped to tenants may create objects in a schema other roles use: a "
     "SECURITY DEFINER function it makes there hands its tenants'' rows to whoever calls it, "
     "and a look-alike function or table is picked up through search_path' "
     "FROM (SELECT DISTINCT role_name FROM %(mapping)s) m "
     "JOIN pg_catalog.pg_roles r ON r.rolname = m.role_name, pg_catalog.pg_namespace n "
     "WHERE n.nspname <> 'information_schema' "
     "AND pg_catalog.left(n.nspname, 3) <> 'pg_' "
     "AND pg_catalog.has_schema_privilege(r.oid, n.oid, 'CREATE') "
     "AND EXISTS (SELECT 1 FROM aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) u "
     "WHERE u.privilege_type = 'USAGE' AND u.grantee <> r.oid)",
     "REVOKE CREATE ON SCHEMA ... FROM the role (and FROM PUBLIC), as the schema's owner; "
     "rls_setup_sql and rls_grant_sql revoke it on the table's schema"),
    ("reader_database_create", "warning",
     "SELECT quote_ident(m.role_name), 'a role mapped to tenants may create schemas in the "
     "database (a schema named after another role comes first in that role''s "
     "default search_path)' FROM (SELECT DISTINCT role_name FROM %(mapping)s) m "
     "JOIN pg_catalog.pg_roles r ON r.rolname = m.role_name "
     "WHERE pg_catalog.has_database_privilege(r.oid, current_database(), 'CREATE')",
     "REVOKE CREATE ON DATABASE ... FROM the role"),
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
    ``SECURITY DEFINER`` functions owned by such roles, or owned by a mapped role and
    callable by others (it runs as its owner: its callers read the owner's tenants);
    mapped roles that may create objects in a schema other roles use, or schemas in the
    database; ``CREATE`` on the table's schema for ``PUBLIC``.

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
