"""read_sql / write_sql on SQLite (always) and a real PostgreSQL server (with row-level security).

The PostgreSQL server comes from Debian's ``postgresql`` package; without its binaries these
tests skip locally and FAIL when CI=true. The ADBC drivers (the ``[sql]`` extra) follow the
same rule.
"""

from __future__ import annotations

import importlib
import itertools
import os
import sqlite3
import sys

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from _chainlogs import make_log
from _pgserver import find_pg_bindir, temporary_postgres

from replaykit import EventLog, LoadError, MissingExtraError, ReplayKitError, SchemaError
from replaykit.cli.verify import verify_chain_command
from replaykit.integrity.chain import chain_heads, stamp_chain
from replaykit.integrity.verify import verify_chain
from replaykit.sql.connection import ddl
from replaykit.sql.read import read_sql
from replaykit.sql.write import write_sql

HOSTILE_TENANT = "x' OR '1'='1"
DROP = "1; DROP TABLE harness_event_log"
TENANTS = ("acme", "globex", HOSTILE_TENANT, DROP)


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _require(what: str, ok: bool) -> None:
    if not ok:
        if _in_ci():
            pytest.fail(f"{what} is required in CI (CI=true) but missing")
        pytest.skip(f"{what} not installed")


def _has(module: str) -> bool:
    try:
        importlib.import_module(module)
        return True
    except ImportError:
        return False


@pytest.fixture(scope="module")
def log() -> EventLog:
    return stamp_chain(make_log(3_000, n_runs=12, tenants=TENANTS, seed=7))


@pytest.fixture(scope="session")
def pg_server():
    _require("adbc-driver-postgresql", _has("adbc_driver_postgresql"))
    _require(
        "PostgreSQL server binaries (apt-get install postgresql)", find_pg_bindir() is not None
    )
    with temporary_postgres() as server:
        yield server


_db_counter = itertools.count()


@pytest.fixture
def pg_uri(pg_server) -> str:
    """A fresh, empty database on the test server; its superuser URI."""
    import adbc_driver_postgresql.dbapi as pg

    name = f"rk_test_{next(_db_counter)}"
    with pg.connect(pg_server.uri(), autocommit=True) as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {name}")
    return f"postgresql://{pg_server.superuser}@{pg_server.host}:{pg_server.port}/{name}"


@pytest.fixture
def sqlite_uri(tmp_path) -> str:
    _require("adbc-driver-sqlite", _has("adbc_driver_sqlite"))
    return f"sqlite:///{tmp_path / 'events.db'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def uri(request) -> str:
    return request.getfixturevalue("sqlite_uri" if request.param == "sqlite" else "pg_uri")


def _plain(table: pa.Table) -> pa.Table:
    """Dictionary columns decoded, chunks combined: equal data gives equal bytes."""
    cols = []
    for col in table.combine_chunks().columns:
        c = col.combine_chunks()
        cols.append(c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c)
    return pa.Table.from_arrays(cols, names=table.schema.names)


def _ipc_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


# --------------------------------------------------------------------------- round trip


def test_round_trip_gives_the_same_table_bytes(uri, log):
    assert write_sql(log, uri) == len(log)
    back = read_sql(uri, tenant_id=list(TENANTS))
    assert len(back) == len(log)
    want, got = _plain(log.table), _plain(back.table)
    assert got.schema == want.schema
    assert got.equals(want)
    assert _ipc_bytes(got) == _ipc_bytes(want)
    # the chain survives the database, anchored heads included
    assert verify_chain(back, expected_heads=chain_heads(log)).empty


def test_reads_only_the_named_tenants(uri, log):
    write_sql(log, uri)
    for tenants in (["acme"], ["globex", HOSTILE_TENANT], [DROP]):
        got = read_sql(uri, tenant_id=tenants if len(tenants) > 1 else tenants[0])
        assert sorted(got.tenants) == sorted(tenants)
        assert _plain(got.table).equals(_plain(log.filter(tenant_id=tenants).table))
    assert len(read_sql(uri, tenant_id="nobody")) == 0


def test_hostile_ids_are_bound_parameters(uri, log):
    write_sql(log, uri)
    hostile = read_sql(uri, tenant_id=HOSTILE_TENANT)
    assert hostile.tenants == [HOSTILE_TENANT]
    assert len(hostile) == len(log.filter(tenant_id=HOSTILE_TENANT))
    none = read_sql(uri, tenant_id="nobody", run_ids=[HOSTILE_TENANT, DROP])
    assert len(none) == 0
    none = read_sql(uri, tenant_id=DROP, run_ids=["' OR 1=1 --"])
    assert len(none) == 0
    # the table is still there, with every row
    assert len(read_sql(uri, tenant_id=list(TENANTS))) == len(log)
    with pytest.raises(ValueError, match="plain SQL identifier"):
        read_sql(uri, tenant_id="acme", table="harness_event_log; DROP TABLE x")
    with pytest.raises(ValueError, match="plain SQL identifier"):
        write_sql(log, uri, table='t" (x int); --')


@pytest.mark.parametrize("bad", [None, "", [], [""], ["acme", None], 7, b"acme"])
def test_tenant_is_mandatory(sqlite_uri, bad):
    with pytest.raises(TypeError, match="tenant_id is required"):
        read_sql(sqlite_uri, tenant_id=bad)


def test_run_and_time_filters(uri, log):
    write_sql(log, uri)
    runs = log.filter(tenant_id="acme").run_ids[:2]
    got = read_sql(uri, tenant_id="acme", run_ids=runs)
    assert _plain(got.table).equals(_plain(log.filter(tenant_id="acme", run_ids=runs).table))
    assert len(read_sql(uri, tenant_id="acme", run_ids=[])) == 0

    ts = log.filter(tenant_id="acme").events_df()["ts"].dropna().sort_values()
    lo, hi = ts.iloc[len(ts) // 4], ts.iloc[len(ts) // 2]
    got = read_sql(uri, tenant_id="acme", since=lo, until=hi.tz_convert(None))  # naive = UTC
    df = got.events_df()
    assert df["ts"].min() == lo and df["ts"].max() == hi  # inclusive on both ends
    want = log.filter(tenant_id="acme").events_df()
    assert len(df) == int(((want["ts"] >= lo) & (want["ts"] <= hi)).sum())
    with pytest.raises(ValueError, match="since"):
        read_sql(uri, tenant_id="acme", since="yesterday-ish")


def test_write_is_all_or_nothing(uri, log):
    from replaykit import SQLError

    write_sql(log, uri)
    with pytest.raises(SQLError):
        write_sql(log, uri)
    assert len(read_sql(uri, tenant_id=list(TENANTS))) == len(log)


def test_tampering_in_the_database_is_detected(sqlite_uri, log, capsys):
    write_sql(log, sqlite_uri)
    assert verify_chain_command([sqlite_uri, "--tenant", "acme"]) == 0
    acme = log.filter(tenant_id="acme")
    run, seq = acme.run_ids[0], 4
    path = sqlite_uri[len("sqlite:///") :]
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE harness_event_log SET payload = replace(payload, '\"amount\":', "
            "'\"amount\":9') WHERE tenant_id = ? AND chat_id = ? AND sequence_number = ?",
            ("acme", run, seq),
        )
    back = read_sql(sqlite_uri, tenant_id="acme")
    problems = verify_chain(back)
    assert problems[["run_id", "seq", "kind"]].values.tolist() == [[run, seq, "hash_mismatch"]]
    assert verify_chain_command([sqlite_uri, "--tenant", "acme"]) == 1
    assert verify_chain_command([sqlite_uri, "--tenant", "globex"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("intact: ") and lines[2].startswith("intact: ")
    assert lines[1].startswith("BROKEN: 1 problem(s) in 1 of 3 run(s) (hash_mismatch=1)")


def test_empty_result_has_the_canonical_schema(sqlite_uri, log):
    write_sql(log.filter(tenant_id="acme"), sqlite_uri)
    empty = read_sql(sqlite_uri, tenant_id="globex")
    assert len(empty) == 0
    assert empty.table.schema == log.table.schema


def test_ddl_names_the_export_columns_first():
    for dialect in ("sqlite", "postgresql"):
        text = ddl(dialect)
        cols = [line.split('"')[1] for line in text.splitlines()[1:9]]
        assert cols == [
            "tenant_id",
            "chat_id",
            "sequence_number",
            "event_type",
            "payload",
            "created_at",
            "prev_hash",
            "row_hash",
        ]
    assert "TIMESTAMPTZ" in ddl("postgresql") and "TIMESTAMPTZ" not in ddl("sqlite")


def test_missing_driver_names_the_extra(monkeypatch, log):
    monkeypatch.setitem(sys.modules, "adbc_driver_sqlite", None)
    monkeypatch.setitem(sys.modules, "adbc_driver_sqlite.dbapi", None)
    monkeypatch.setitem(sys.modules, "adbc_driver_postgresql", None)
    monkeypatch.setitem(sys.modules, "adbc_driver_postgresql.dbapi", None)
    for target in ("sqlite:///x.db", "postgresql://u@127.0.0.1:1/db"):
        with pytest.raises(MissingExtraError) as err:
            read_sql(target, tenant_id="acme")
        assert 'pip install "replaykit[sql]"' in str(err.value)
    with pytest.raises(MissingExtraError):
        write_sql(log, "sqlite:///x.db")


def test_unsupported_uri():
    with pytest.raises(ValueError, match="unsupported database URI"):
        read_sql("mysql://db/x", tenant_id="acme")


# --------------------------------------------------------------------------- row-level security


_role_counter = itertools.count()


class _Rls:
    """A database under the docs/security.md recipe: a non-superuser owner, a reader per
    tenant, a writer for acme. ``uri(role, options)`` connects as one of them."""

    def __init__(self, server, admin_uri: str, log: EventLog) -> None:
        import adbc_driver_postgresql.dbapi as pg

        from replaykit.sql.rls import rls_grant, rls_setup

        self.server = server
        self.dbname = admin_uri.rpartition("/")[2]
        k = next(_role_counter)
        self.owner, self.acme, self.globex, self.writer = (
            f"rk_owner_{k}", f"rk_acme_{k}", f"rk_globex_{k}", f"rk_acme_writer_{k}")
        write_sql(log, admin_uri)
        with pg.connect(admin_uri) as conn, conn.cursor() as cur:
            for role in (self.owner, self.acme, self.globex, self.writer):
                cur.execute(f'CREATE ROLE "{role}" LOGIN NOSUPERUSER NOBYPASSRLS')
            cur.execute(f'ALTER TABLE harness_event_log OWNER TO "{self.owner}"')
            cur.execute(f'GRANT CREATE ON SCHEMA public TO "{self.owner}"')
            cur.execute(f'GRANT CREATE ON DATABASE "{self.dbname}" TO "{self.owner}"')
            conn.commit()
        # the recipe runs as the (non-superuser) owner, exactly as documented
        owner = self.uri(self.owner)
        rls_setup(owner)
        rls_grant(owner, self.acme, "acme")
        rls_grant(owner, self.globex, ["globex", HOSTILE_TENANT])
        rls_grant(owner, self.writer, "acme", write=True)

    def uri(self, role: str, options: str | None = None) -> str:
        from urllib.parse import quote

        uri = f"postgresql://{role}@{self.server.host}:{self.server.port}/{self.dbname}"
        return uri + ("?options=" + quote(options, safe="") if options else "")


@pytest.fixture
def rls(pg_server, pg_uri, log) -> _Rls:
    return _Rls(pg_server, pg_uri, log)


def test_rls_recipe_scopes_each_role_to_its_mapped_tenants(rls, log, pg_uri, monkeypatch):
    n_acme = len(log.filter(tenant_id="acme"))
    got = read_sql(rls.uri(rls.acme), tenant_id=list(TENANTS))  # asks for every tenant ...
    assert got.tenants == ["acme"] and len(got) == n_acme  # ... and sees only its own
    assert _plain(got.table).equals(_plain(log.filter(tenant_id="acme").table))
    got = read_sql(rls.uri(rls.globex), tenant_id=list(TENANTS))
    assert sorted(got.tenants) == sorted(["globex", HOSTILE_TENANT])
    assert len(read_sql(rls.uri(rls.acme), tenant_id="globex")) == 0
    # the parallel read (several connections, one snapshot) keeps the scope
    import replaykit.sql._fetch as rksql

    monkeypatch.setattr(rksql, "_PARALLEL_MIN_PAGES", 0)
    got = read_sql(rls.uri(rls.acme), tenant_id=list(TENANTS))
    assert got.tenants == ["acme"] and len(got) == n_acme
    # control: every row is there (the superuser bypasses row-level security)
    assert len(read_sql(pg_uri, tenant_id=list(TENANTS))) == len(log)


def _raw_count(conn, tenant: str) -> int:
    with conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM harness_event_log WHERE tenant_id = $1", (tenant,))
        return int(cur.fetchone()[0])


@pytest.mark.parametrize("attempt", [
    "uri_option_app_tenant", "second_uri_option", "set_app_tenant", "set_config",
    "set_role", "uri_option_role", "reset_role", "session_authorization",
    "row_security_off", "write_mapping", "shadow_mapping", "table_owner",
])
def test_no_client_side_switch_reads_another_tenant(rls, log, attempt):
    """Every way a client can try to become globex leaves an acme reader with 0 globex rows
    (read_sql and a raw query alike); a refused attempt is a replaykit SQLError."""
    import adbc_driver_manager
    import adbc_driver_postgresql.dbapi as pg

    from replaykit import SQLError

    assert len(log.filter(tenant_id="globex")) > 0
    role, options, statement = rls.acme, None, None
    if attempt == "uri_option_app_tenant":
        options = "-c app.tenant_id=globex"
    elif attempt == "second_uri_option":
        options = "-c app.tenant_id=acme -c app.tenant_id=globex"
    elif attempt == "set_app_tenant":
        statement = "SET app.tenant_id = 'globex'"
    elif attempt == "set_config":
        statement = "SELECT set_config('app.tenant_id', 'globex', false)"
    elif attempt == "set_role":
        statement = f'SET ROLE "{rls.globex}"'
    elif attempt == "uri_option_role":
        options = f"-c role={rls.globex}"
    elif attempt == "reset_role":
        statement = "RESET ROLE"
    elif attempt == "session_authorization":
        statement = f'SET SESSION AUTHORIZATION "{rls.globex}"'
    elif attempt == "row_security_off":
        options = "-c row_security=off"
    elif attempt == "write_mapping":
        statement = (f"INSERT INTO replaykit.tenant_roles VALUES ('{rls.acme}', 'globex')")
    elif attempt == "shadow_mapping":  # a temp table of the same name, first in search_path
        statement = ("CREATE TEMP TABLE tenant_roles AS "
                     "SELECT current_user::text AS role_name, 'globex'::text AS tenant_id")
    elif attempt == "table_owner":
        role = rls.owner
    uri = rls.uri(role, options)
    if attempt in ("uri_option_role",):
        with pytest.raises(SQLError) as err:
            read_sql(uri, tenant_id="globex")
        assert err.value.reason == "permission_denied" and err.value.table == "harness_event_log"
        return
    if attempt == "row_security_off":
        with pytest.raises(SQLError) as err:
            read_sql(uri, tenant_id="globex")
        assert err.value.reason == "rls_denied"
        assert "row_security" in err.value.fix
        return
    with pg.connect(uri, autocommit=True) as conn:
        if statement is not None:
            refused = attempt in ("set_role", "session_authorization", "write_mapping")
            try:
                with conn.cursor() as cur:
                    cur.execute(statement)
                    if statement.startswith("SELECT"):
                        cur.fetchall()
                assert not refused, f"{statement!r} was accepted"
            except adbc_driver_manager.ProgrammingError:
                assert refused, f"{statement!r} was refused"
        assert len(read_sql(conn, tenant_id="globex")) == 0
        assert len(read_sql(conn, tenant_id=list(TENANTS))) == (
            0 if role == rls.owner else len(log.filter(tenant_id="acme")))
        assert _raw_count(conn, "globex") == 0


_SQL_DETOURS = {
    # objects the reader creates itself (in pg_temp: it has no CREATE on public) run as the
    # reader, so the policy still applies
    "temp_view": ["CREATE TEMP VIEW v AS SELECT * FROM harness_event_log",
                  "SELECT count(*) FROM v WHERE tenant_id = 'globex'"],
    "security_definer_function": [
        "CREATE FUNCTION pg_temp.f() RETURNS bigint LANGUAGE sql SECURITY DEFINER AS "
        "$$SELECT count(*) FROM harness_event_log WHERE tenant_id = 'globex'$$",
        "SELECT pg_temp.f()"],
    "cheap_leaky_function": [  # a function cheaper than the policy must not see its rows
        "CREATE TEMP TABLE seen (t text)",
        "CREATE FUNCTION pg_temp.leak(text) RETURNS bool LANGUAGE plpgsql COST 0.0000001 AS "
        "$$BEGIN INSERT INTO seen VALUES ($1); RETURN true; END$$",
        "CREATE TEMP TABLE n AS SELECT count(*) FROM harness_event_log "
        "WHERE pg_temp.leak(tenant_id)",
        "SELECT count(*) FROM seen WHERE t = 'globex'"],
    "prepared_statement": [
        "PREPARE p(text) AS SELECT count(*) FROM harness_event_log WHERE tenant_id = $1",
        "EXECUTE p('globex')"],
    "copy": ["COPY (SELECT count(*) FROM harness_event_log WHERE tenant_id = 'globex') "
             "TO STDOUT"],
    "cursor": ["BEGIN", "DECLARE k CURSOR FOR SELECT count(*) FROM harness_event_log "
               "WHERE tenant_id = 'globex'", "FETCH k", "COMMIT"],
    "tablesample": ["SELECT count(*) FROM harness_event_log TABLESAMPLE SYSTEM (100) "
                    "WHERE tenant_id = 'globex'"],
    "planner_statistics": ["SELECT count(*) FROM pg_stats WHERE tablename = "
                           "'harness_event_log'"],
    "owner_view": None,  # a view the table owner made and granted: still under the policy
    "owner_security_definer_function": None,
}


@pytest.mark.parametrize("detour", list(_SQL_DETOURS))
def test_no_sql_detour_reads_another_tenant(rls, log, pg_uri, detour):
    """Views, SECURITY DEFINER functions, cheap leaky functions, prepared statements,
    cursors, sampling and the planner's statistics (after ANALYZE) show an acme reader no
    globex row, whether the reader or the table owner made the object."""
    import adbc_driver_postgresql.dbapi as pg

    assert len(log.filter(tenant_id="globex")) > 0
    with pg.connect(pg_uri, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute("ANALYZE harness_event_log")  # pg_stats would hold every tenant's values
    statements = _SQL_DETOURS[detour]
    if statements is None:
        with pg.connect(rls.uri(rls.owner), autocommit=True) as conn, conn.cursor() as cur:
            if detour == "owner_view":
                cur.execute("CREATE VIEW own_v AS SELECT * FROM harness_event_log")
                cur.execute(f'GRANT SELECT ON own_v TO "{rls.acme}"')
                statements = ["SELECT count(*) FROM own_v WHERE tenant_id = 'globex'"]
            else:
                cur.execute("CREATE FUNCTION own_f() RETURNS bigint LANGUAGE sql SECURITY "
                            "DEFINER AS $$SELECT count(*) FROM harness_event_log "
                            "WHERE tenant_id = 'globex'$$")
                cur.execute(f'GRANT EXECUTE ON FUNCTION own_f() TO "{rls.acme}"')
                statements = ["SELECT own_f()"]
    # psql, one session: EXECUTE and FETCH cannot go through the driver (it wraps COPY)
    import shutil
    import subprocess

    if shutil.which("psql") is None:
        pytest.skip("psql is not installed")
    run = subprocess.run(["psql", rls.uri(rls.acme), "-X", "-q", "-t", "-A",
                          "-v", "ON_ERROR_STOP=1", "-c", "; ".join(statements)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["0"], (statements[-1], run.stdout)


def _renamed_runs(log: EventLog, prefix: str) -> EventLog:
    """``log`` with every run id prefixed (new runs, not yet in the table), re-stamped."""
    t = log.table
    runs = pc.binary_join_element_wise(prefix, pc.cast(t.column("run_id"), pa.string()), "")
    i = t.schema.get_field_index("run_id")
    return stamp_chain(EventLog(t.set_column(i, "run_id", runs.dictionary_encode())),
                       overwrite=True)


def test_write_sql_under_rls_writes_own_tenant_and_refuses_others(rls, pg_uri):
    from replaykit import SQLError

    fresh = _renamed_runs(make_log(400, n_runs=4, tenants=("acme", "globex"), seed=99), "new-")
    before = len(read_sql(pg_uri, tenant_id=list(TENANTS)))
    # another tenant's rows: refused with a replaykit error, nothing written
    with pytest.raises(SQLError) as err:
        write_sql(fresh, rls.uri(rls.writer))
    assert err.value.reason == "rls_denied" and err.value.operation == "write"
    assert "harness_event_log" in str(err.value) and "rls_grant_sql" in err.value.fix
    assert len(read_sql(pg_uri, tenant_id=list(TENANTS))) == before
    # a reader has no INSERT at all
    with pytest.raises(SQLError) as err:
        write_sql(fresh.filter(tenant_id="acme"), rls.uri(rls.acme))
    assert err.value.reason == "permission_denied"
    # its own tenant's rows go in (COPY is refused under RLS: the staged INSERT path)
    own = fresh.filter(tenant_id="acme")
    assert write_sql(own, rls.uri(rls.writer)) == len(own)
    back = read_sql(rls.uri(rls.acme), tenant_id="acme", run_ids=own.run_ids)
    assert _plain(back.table).equals(_plain(own.table))  # times, booleans, hashes exact
    assert verify_chain(back).empty
    assert len(read_sql(pg_uri, tenant_id=list(TENANTS))) == before + len(own)


def test_driver_errors_become_replaykit_errors(uri, log, pg_server):
    from replaykit import SQLError

    write_sql(log, uri)
    with pytest.raises(SQLError) as err:
        write_sql(log, uri)
    assert err.value.reason == "duplicate_key" and err.value.table == "harness_event_log"
    assert "already in the table" in err.value.fix
    assert len(read_sql(uri, tenant_id=list(TENANTS))) == len(log)
    if uri.startswith("postgresql"):
        assert err.value.sqlstate == "23505"
        with pytest.raises(SQLError) as err:
            read_sql(f"postgresql://no_such_role@{pg_server.host}:{pg_server.port}/x",
                     tenant_id="acme")
        assert err.value.reason == "connection" and "Check the URI" in err.value.fix
        # a role without SELECT on the table
        import adbc_driver_postgresql.dbapi as pg

        role = f"rk_nogrant_{next(_role_counter)}"
        with pg.connect(uri, autocommit=True) as conn, conn.cursor() as cur:
            cur.execute(f'CREATE ROLE "{role}" LOGIN')
        base, _, dbname = uri.rpartition("/")
        denied = f"postgresql://{role}@{base.split('@', 1)[1]}/{dbname}"
        with pytest.raises(SQLError) as err:
            read_sql(denied, tenant_id="acme")
        assert err.value.reason == "permission_denied" and "GRANT" not in err.value.detail
        assert "Grant the role SELECT" in err.value.fix and err.value.sqlstate == "42501"
    else:
        path = uri[len("sqlite:///") :]
        with open(path, "wb") as fh:
            fh.write(b"this is not a database file" * 100)
        with pytest.raises(SQLError) as err:
            read_sql(uri, tenant_id="acme")
        assert err.value.reason == "connection" and "existing database file" in err.value.fix


def test_docs_recipe_is_the_helper_and_the_old_one_is_gone():
    from pathlib import Path

    from replaykit.sql.rls import rls_setup_sql

    root = Path(__file__).resolve().parents[2]
    security = (root / "docs" / "security.md").read_text()
    assert rls_setup_sql().strip() in security
    for path in [root / "README.md", *root.glob("docs/*.md"),
                 *(root / "replaykit" / "sql").glob("*.py"),
                 root / "notebooks" / "tools" / "make_notebooks.py"]:
        if path.exists():
            text = path.read_text()
            assert "current_setting('app.tenant_id'" not in text, path


def test_postgres_rejects_nul_text(pg_uri):
    small = make_log(10, n_runs=1)
    t = small.table
    idx = t.schema.get_field_index("text")
    bad = t.set_column(idx, "text", pa.array(["a\x00b"] * len(small), pa.large_string()))
    with pytest.raises(ValueError, match="NUL"):
        write_sql(EventLog(bad), pg_uri)


def test_frames_read_back_match(uri, log):
    write_sql(log, uri)

    def frame(lg: EventLog) -> pd.DataFrame:  # categories differ by design: compare values
        df = lg.events_df()
        cats = df.select_dtypes("category").columns
        return df.astype({c: "str" for c in cats}).reset_index(drop=True)

    a, b = frame(read_sql(uri, tenant_id="acme")), frame(log.filter(tenant_id="acme"))
    pd.testing.assert_frame_equal(a, b)
    assert pc.sum(pc.cast(log.table.column("is_error"), pa.int64())).as_py() > 0


# --------------------------------------------------------------------------- plain export table
# The table our users have: only the eight harness_event_log export columns. read_sql maps it
# with the pleach loader's code, so it must equal read_pleach of the same rows, except for
# `source` ("pleach:<dialect>:<table>" instead of "pleach:<path>") and `source_line` (null: a
# database row has no line number).

PLAIN_DDL = {
    "sqlite_iso": (
        "CREATE TABLE harness_event_log (tenant_id TEXT NOT NULL, chat_id TEXT NOT NULL, "
        "sequence_number INTEGER NOT NULL, event_type TEXT NOT NULL, payload TEXT NOT NULL, "
        "created_at TEXT, prev_hash TEXT, row_hash TEXT)"
    ),
    "sqlite_epoch": (
        "CREATE TABLE harness_event_log (tenant_id TEXT NOT NULL, chat_id TEXT NOT NULL, "
        "sequence_number INTEGER NOT NULL, event_type TEXT NOT NULL, payload TEXT NOT NULL, "
        "created_at INTEGER, prev_hash TEXT, row_hash TEXT)"
    ),
    "postgresql": (
        "CREATE TABLE harness_event_log (tenant_id TEXT NOT NULL, chat_id TEXT NOT NULL, "
        "sequence_number BIGINT NOT NULL, event_type TEXT NOT NULL, payload JSONB NOT NULL, "
        "created_at TIMESTAMPTZ, prev_hash TEXT, row_hash TEXT, "
        "PRIMARY KEY (tenant_id, chat_id, sequence_number))"
    ),
}


def _export_rows(path) -> list[dict]:
    import json

    from replaykit._base.json import canonical_json

    rows = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            r["payload"] = canonical_json(r["payload"])  # the file's bytes (generator: canonical)
            rows.append(r)
    return rows


def _fill_plain(uri: str, flavour: str, rows: list[dict]) -> None:
    cols = ("tenant_id", "chat_id", "sequence_number", "event_type", "payload", "created_at",
            "prev_hash", "row_hash")
    if flavour.startswith("sqlite"):
        with sqlite3.connect(uri[len("sqlite:///") :]) as conn:
            conn.execute(PLAIN_DDL[flavour])
            conn.executemany(
                f"INSERT INTO harness_event_log VALUES ({', '.join('?' * len(cols))})",
                [tuple(r[c] for c in cols) for r in rows],
            )
        return
    import adbc_driver_postgresql.dbapi as pg

    stage = pa.table({c: pa.array([r[c] for r in rows], pa.string() if c != "sequence_number"
                                   else pa.int64()) for c in cols})
    with pg.connect(uri) as conn, conn.cursor() as cur:
        cur.execute(PLAIN_DDL[flavour])
        cur.adbc_ingest("rk_stage", stage, mode="create")
        cur.execute(
            "INSERT INTO harness_event_log SELECT tenant_id, chat_id, sequence_number, "
            "event_type, payload::jsonb, created_at::timestamptz, prev_hash, row_hash "
            "FROM rk_stage"
        )
        cur.execute("DROP TABLE rk_stage")
        conn.commit()


@pytest.fixture(scope="module")
def pleach_export(tmp_path_factory):
    from replaykit.datasets import generate_pleach

    out = {}
    for ts in ("iso", "epoch_ms"):
        path = generate_pleach(
            tmp_path_factory.mktemp(f"pleach_{ts}") / "export.jsonl",
            events=3_000, runs=12, tenants=TENANTS, seed=11, timestamps=ts,
        )
        out[ts] = path
    return out


@pytest.fixture(params=["sqlite_iso", "sqlite_epoch", "postgresql"])
def plain(request, pleach_export):
    """(uri, flavour, read_pleach of the same rows) for a filled 8-column table."""
    from replaykit.io.pleach import read_pleach

    flavour = request.param
    uri = request.getfixturevalue("pg_uri" if flavour == "postgresql" else "sqlite_uri")
    path = pleach_export["epoch_ms" if flavour == "sqlite_epoch" else "iso"]
    _fill_plain(uri, flavour, _export_rows(path))
    return uri, flavour, read_pleach(path)


def _no_source(table: pa.Table) -> pa.Table:
    return _plain(table.drop_columns(["source", "source_line"]))


def test_plain_table_reads_like_read_pleach(plain):
    uri, flavour, want = plain
    got = read_sql(uri, tenant_id=list(TENANTS))
    assert len(got) == len(want) == 3_000
    assert got.table.schema == want.table.schema
    assert _no_source(got.table).equals(_no_source(want.table))
    dialect = "postgresql" if flavour == "postgresql" else "sqlite"
    assert got.table.column("source").unique().to_pylist() == [
        f"pleach:{dialect}:harness_event_log"
    ]
    assert got.table.column("source_line").null_count == len(got)
    assert got.runs.drop_columns(["source"]).equals(want.runs.drop_columns(["source"]))
    # typed columns really were derived (not just copied through)
    kinds = set(got.table.column("kind").to_pylist())
    assert {"tool_call", "tool_result", "model_response", "turn_start"} <= kinds
    # the chain the producer wrote verifies after the database (JSONB included)
    assert verify_chain(got).empty
    assert verify_chain(got, expected_heads=chain_heads(want)).empty


def test_plain_table_tenant_scoping_and_hostile_ids(plain):
    uri, _flavour, want = plain
    for tenants in (["acme"], ["globex", HOSTILE_TENANT], [DROP]):
        got = read_sql(uri, tenant_id=tenants if len(tenants) > 1 else tenants[0])
        assert sorted(got.tenants) == sorted(tenants)
        ref = want.filter(tenant_id=tenants)
        assert _no_source(got.table).equals(_no_source(ref.table))
    assert len(read_sql(uri, tenant_id="nobody")) == 0
    assert len(read_sql(uri, tenant_id="nobody", run_ids=[HOSTILE_TENANT, DROP])) == 0
    assert len(read_sql(uri, tenant_id=DROP, run_ids=["' OR 1=1 --"])) == 0
    runs = want.filter(tenant_id=HOSTILE_TENANT).run_ids[:1]
    got = read_sql(uri, tenant_id=HOSTILE_TENANT, run_ids=runs)
    assert got.run_ids == runs
    assert len(read_sql(uri, tenant_id=list(TENANTS))) == len(want)  # table intact


def test_plain_table_time_bounds(plain):
    uri, _flavour, want = plain
    ref = want.filter(tenant_id="acme").events_df()
    ts = ref["ts"].dropna().sort_values()
    lo, hi = ts.iloc[len(ts) // 4], ts.iloc[len(ts) // 2]
    got = read_sql(uri, tenant_id="acme", since=lo, until=hi).events_df()
    assert got["ts"].min() == lo and got["ts"].max() == hi
    assert len(got) == int(((ref["ts"] >= lo) & (ref["ts"] <= hi)).sum())


def test_plain_table_tampering_is_detected(pleach_export, sqlite_uri):
    rows = _export_rows(pleach_export["iso"])
    victim = next(r for r in rows if r["tenant_id"] == "acme" and r["sequence_number"] == 3)
    victim["payload"] = victim["payload"].replace("{", '{"injected":1,', 1)
    _fill_plain(sqlite_uri, "sqlite_iso", rows)
    problems = verify_chain(read_sql(sqlite_uri, tenant_id="acme"))
    assert problems[["run_id", "seq", "kind"]].values.tolist() == [
        [victim["chat_id"], 3, "hash_mismatch"]
    ]
    # the CLI reads the plain table too
    assert verify_chain_command([sqlite_uri, "--tenant", "acme"]) == 1
    assert verify_chain_command([sqlite_uri, "--tenant", "globex"]) == 0


def test_table_without_export_columns_is_rejected(sqlite_uri):
    with sqlite3.connect(sqlite_uri[len("sqlite:///") :]) as conn:
        conn.execute("CREATE TABLE harness_event_log (tenant_id TEXT, chat_id TEXT)")
    with pytest.raises(SchemaError, match=r"lacks \['sequence_number', 'event_type', 'payload'\]"):
        read_sql(sqlite_uri, tenant_id="acme")
    with pytest.raises(SchemaError, match="does not exist"):
        read_sql(sqlite_uri, tenant_id="acme", table="no_such_table")


@pytest.mark.parametrize("drop", ["tenant_id", "chat_id", "sequence_number", "event_type",
                                  "payload"])
def test_a_table_missing_any_required_column_is_a_schema_error(tmp_path, drop):
    """Whichever required column a table lacks, read_sql raises a SchemaError (a
    ReplayKitError) naming the table and the column (issue 30 item 11); it pickles."""
    import pickle

    db = tmp_path / "t.db"
    cols = [c for c in ("tenant_id", "chat_id", "sequence_number", "event_type", "payload",
                        "created_at") if c != drop]
    with sqlite3.connect(db) as conn:
        conn.execute(f"CREATE TABLE events ({', '.join(cols)})")
    with pytest.raises(SchemaError) as info:
        read_sql(f"sqlite:///{db}", tenant_id="acme", table="events")
    err = info.value
    assert isinstance(err, ReplayKitError) and err.missing == [drop] and err.table == "events"
    assert f"'{drop}'" in str(err) and "'events'" in str(err)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err) and str(back) == str(err) and back.missing == [drop]


def test_sqlite_parallel_rowid_ranges_read_the_same_rows(sqlite_uri, log, monkeypatch, plain_rows):
    """Large SQLite tables are read in rowid ranges on parallel connections; force that path."""
    import replaykit.sql._fetch as rksql

    write_sql(log, sqlite_uri)
    serial = read_sql(sqlite_uri, tenant_id=list(TENANTS))
    monkeypatch.setattr(rksql, "_PARALLEL_MIN_ROWS", 0)
    calls = []
    real = rksql._rowid_ranges
    monkeypatch.setattr(rksql, "_rowid_ranges", lambda *a: calls.append(r := real(*a)) or r)
    # three cores for the process (replaykit's thread count, _native.threads)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    monkeypatch.delenv("REPLAYKIT_THREADS", raising=False)
    got = read_sql(sqlite_uri, tenant_id=list(TENANTS))
    assert len(calls[-1]) == 3  # three ranges, three connections
    assert _ipc_bytes(_plain(got.table)) == _ipc_bytes(_plain(serial.table))
    assert _plain(got.table).equals(_plain(log.table))
    runs = log.filter(tenant_id=HOSTILE_TENANT).run_ids[:2]
    got = read_sql(sqlite_uri, tenant_id=HOSTILE_TENANT, run_ids=runs)
    want = log.filter(tenant_id=HOSTILE_TENANT, run_ids=runs)
    assert _plain(got.table).equals(_plain(want.table))
    # the plain export layout takes the same path
    plain_uri = sqlite_uri.replace("events.db", "plain.db")
    path, rows = plain_rows
    _fill_plain(plain_uri, "sqlite_iso", rows)
    from replaykit.io.pleach import read_pleach

    got = read_sql(plain_uri, tenant_id=list(TENANTS))
    assert _no_source(got.table).equals(_no_source(read_pleach(path).table))


@pytest.fixture
def plain_rows(pleach_export):
    return pleach_export["iso"], _export_rows(pleach_export["iso"])


def test_postgres_parallel_block_ranges_read_the_same_rows(pg_uri, log, monkeypatch):
    """Large PostgreSQL tables are read in ctid ranges on parallel connections sharing one
    exported snapshot; force that path and compare with the serial read."""
    import replaykit.sql._fetch as rksql

    write_sql(log, pg_uri)
    serial = read_sql(pg_uri, tenant_id=list(TENANTS))
    monkeypatch.setattr(rksql, "_PARALLEL_MIN_PAGES", 0)
    # three cores for the process (replaykit's thread count, _native.threads)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    monkeypatch.delenv("REPLAYKIT_THREADS", raising=False)
    calls = []
    real = rksql._ctid_ranges
    monkeypatch.setattr(rksql, "_ctid_ranges", lambda *a: calls.append(r := real(*a)) or r)
    got = read_sql(pg_uri, tenant_id=list(TENANTS))
    assert calls and len(calls[-1]) == 3
    assert _ipc_bytes(_plain(got.table)) == _ipc_bytes(_plain(serial.table))
    assert _plain(got.table).equals(_plain(log.table))
    got = read_sql(pg_uri, tenant_id=[HOSTILE_TENANT, DROP], run_ids=None)
    want = log.filter(tenant_id=[HOSTILE_TENANT, DROP])
    assert _plain(got.table).equals(_plain(want.table))
    assert verify_chain(got).empty
    with pytest.raises(ValueError, match="snapshot"):
        rksql._snapshot_sql("x'; DROP TABLE harness_event_log; --")


# --------------------------------------------------------------------------- byte-exact tenants


@pytest.mark.parametrize("collation", ["NOCASE", "RTRIM"])
def test_sqlite_tenant_match_is_byte_exact_whatever_the_collation(sqlite_uri, log, collation):
    path = sqlite_uri[len("sqlite:///") :]
    text = ddl("sqlite").replace('"tenant_id" TEXT NOT NULL',
                                 f'"tenant_id" TEXT COLLATE {collation} NOT NULL')
    text = text.replace('"chat_id" TEXT NOT NULL', f'"chat_id" TEXT COLLATE {collation} NOT NULL')
    with sqlite3.connect(path) as conn:
        conn.execute(text)
    write_sql(log, sqlite_uri)
    acme = log.filter(tenant_id="acme")
    for lookalike in ("ACME", "Acme", "acme ", "acme  "):
        assert len(read_sql(sqlite_uri, tenant_id=lookalike)) == 0, lookalike
    run = acme.run_ids[0]
    for lookalike in (run.upper(), run + " "):
        if lookalike != run:
            assert len(read_sql(sqlite_uri, tenant_id="acme", run_ids=[lookalike])) == 0
    assert _plain(read_sql(sqlite_uri, tenant_id="acme").table).equals(_plain(acme.table))
    got = read_sql(sqlite_uri, tenant_id="acme", run_ids=[run])
    assert got.run_ids == [run] and len(got) == len(acme.filter(run_ids=[run]))


def test_postgres_tenant_match_is_byte_exact_under_a_case_insensitive_collation(
    pg_uri, pleach_export
):
    """A plain table whose tenant and run columns use a nondeterministic ICU collation."""
    import adbc_driver_postgresql.dbapi as pg

    from replaykit.io.pleach import read_pleach

    uri, want = pg_uri, read_pleach(pleach_export["iso"])
    _fill_plain(uri, "postgresql", _export_rows(pleach_export["iso"]))
    with pg.connect(uri) as conn, conn.cursor() as cur:
        cur.execute("CREATE COLLATION rk_ci (provider = icu, locale = 'und-u-ks-level2', "
                    "deterministic = false)")
        cur.execute("ALTER TABLE harness_event_log DROP CONSTRAINT harness_event_log_pkey")
        for col in ("tenant_id", "chat_id"):
            cur.execute(f"ALTER TABLE harness_event_log ALTER COLUMN {col} TYPE text "
                        "COLLATE rk_ci")
        cur.execute("SELECT count(*) FROM harness_event_log WHERE tenant_id = 'ACME'")
        assert cur.fetchone()[0] > 0  # the collation really folds case
        conn.commit()
    assert len(read_sql(uri, tenant_id="ACME")) == 0
    assert len(read_sql(uri, tenant_id=["ACME", "GLOBEX"])) == 0
    acme = want.filter(tenant_id="acme")
    run = acme.run_ids[0]
    assert len(read_sql(uri, tenant_id="acme", run_ids=[run.upper()])) == 0 or run.upper() == run
    assert _no_source(read_sql(uri, tenant_id="acme").table).equals(_no_source(acme.table))
    # citext compares case-insensitively through its own operators, whatever the collation
    with pg.connect(uri) as conn, conn.cursor() as cur:
        cur.execute("CREATE EXTENSION IF NOT EXISTS citext")
        cur.execute("ALTER TABLE harness_event_log ALTER COLUMN tenant_id TYPE citext")
        cur.execute("SELECT count(*) FROM harness_event_log WHERE tenant_id = 'ACME'")
        assert cur.fetchone()[0] > 0
        conn.commit()
    assert len(read_sql(uri, tenant_id="ACME")) == 0
    assert len(read_sql(uri, tenant_id="acme")) == len(acme)


def test_rows_the_database_should_not_have_returned_are_dropped(uri, log, monkeypatch):
    """The re-check: even when the query matches every row, only the tenant asked for (and
    its runs) come back."""
    import replaykit.sql._fetch as rksql

    write_sql(log, uri)
    monkeypatch.setattr(rksql, "_sqlite_where", lambda *a: ("1 = 1", []))
    monkeypatch.setattr(rksql, "_pg_exact", lambda column, declared: f'TRUE OR "{column}"')
    got = read_sql(uri, tenant_id="acme")
    assert got.tenants == ["acme"]
    assert _plain(got.table).equals(_plain(log.filter(tenant_id="acme").table))
    runs = log.filter(tenant_id="globex").run_ids[:1]
    got = read_sql(uri, tenant_id="globex", run_ids=runs)
    assert got.run_ids == runs


@pytest.mark.parametrize("bad", ["acme\x00x", "acme\ncme", "acme" + "x" * 253])
def test_tenant_arguments_and_stored_tenants_follow_the_rule(sqlite_uri, log, bad):
    from replaykit import LoadError

    with pytest.raises(LoadError) as err:
        read_sql(sqlite_uri, tenant_id=bad)
    assert err.value.reason == "bad_tenant"
    t = log.table
    i = t.schema.get_field_index("tenant_id")
    tenants = pc.cast(t.column("tenant_id"), pa.string()).to_pylist()
    tenants = [bad if v == "acme" else v for v in tenants]
    hostile = EventLog(t.set_column(i, "tenant_id", pa.array(tenants).dictionary_encode()))
    with pytest.raises(LoadError) as err:
        write_sql(hostile, sqlite_uri)
    assert err.value.reason == "bad_tenant" and "write_sql" in str(err.value)


# --------------------------------------------------------------------------- malformed values
# SQLite stores any value in any column. Values not of their column's type are tampering: a
# replaykit error naming table, column and rowid, or quarantined rows that verify-chain lists.

_WRONG = {  # column -> SQL literals that are not of its type (after SQLite's affinity)
    "sequence_number": ["'x'", "1.5", "X'00'"],
    "created_at": ["'garbage'", "'2025-13-45T99:00:00Z'", "X'3230'", "12345"],
    "is_error": ["'yes'", "2", "0.5", "-1"],
    "inherited": ["'no'", "7"],
    "turn": ["1.5", "'three'", "X'00'", "4294967296"],
    "step": ["2.25", "'x'", "-4294967296"],
    "input_tokens": ["'many'", "2.5e-3"],
    "source_line": ["'l'", "2.5"],
}
# (TEXT columns take no other type: SQLite's affinity turns numbers into text, and a BLOB past
# the driver's first rows is read as its bytes; see docs/security.md)


def _corrupt(path: str, edits: list[tuple[int, str, str]]) -> None:
    with sqlite3.connect(path) as conn:
        for rowid, col, literal in edits:
            conn.execute(f'UPDATE harness_event_log SET "{col}" = {literal} WHERE rowid = ?',
                         (rowid,))


def test_malformed_values_fuzz(tmp_path, log, capsys):
    """Seeded fuzz: random wrong-typed values in random rows. read_sql names every one under
    errors="raise", quarantines exactly those rows otherwise, and verify-chain says BROKEN."""
    import random
    import shutil

    from replaykit import LoadError

    _require("adbc-driver-sqlite", _has("adbc_driver_sqlite"))
    clean = tmp_path / "clean.db"
    write_sql(log, f"sqlite:///{clean}")
    with sqlite3.connect(clean) as conn:
        keyed = dict(((r, (t, c, s))) for r, t, c, s in conn.execute(
            "SELECT rowid, tenant_id, chat_id, sequence_number FROM harness_event_log"))
    acme_rowids = sorted(r for r, k in keyed.items() if k[0] == "acme")
    rng = random.Random(1414)
    for case in range(24):
        path = tmp_path / f"case{case}.db"
        shutil.copy(clean, path)
        uri = f"sqlite:///{path}"
        rows = rng.sample(acme_rowids, rng.randint(1, 3))
        edits = []
        for r in rows:
            col = rng.choice(sorted(_WRONG))
            edits.append((r, col, rng.choice(_WRONG[col])))
        _corrupt(str(path), edits)
        with pytest.raises(LoadError) as err:
            read_sql(uri, tenant_id="acme")
        e = err.value
        assert e.reason == "malformed_value" and e.source == "sqlite:harness_event_log"
        msg = str(e)
        for r, col, _lit in edits:
            assert f"rowid {r} " in msg and f"'{col}' holds" in msg, (edits, msg)
        got = read_sql(uri, tenant_id="acme", errors="quarantine")
        q = got.quarantine
        assert sorted(q.column("line").to_pylist()) == sorted(rows)
        assert set(q.column("reason").to_pylist()) == {"malformed_value"}
        assert set(q.column("tenant_id").to_pylist()) == {"acme"}  # whose rows they are
        assert len(got.filter(tenant_id="acme").quarantine) == len(rows)
        assert len(got.filter(tenant_id="globex").quarantine) == 0
        assert len(got) == len(log.filter(tenant_id="acme")) - len(rows)
        # the other tenants are untouched and their reads unaffected
        other = read_sql(uri, tenant_id="globex")
        assert _plain(other.table).equals(_plain(log.filter(tenant_id="globex").table))
        problems = verify_chain(got)
        bad = problems[problems["kind"] == "malformed_value"]
        assert sorted(bad["found"].str.extract(r"rowid (\d+)")[0].astype(int)) == sorted(rows)
        seqs = {keyed[r][2] for r, col, _ in edits if col != "sequence_number"}
        assert seqs <= set(bad["seq"].dropna().astype(int))
        assert verify_chain_command([uri, "--tenant", "acme"]) == 1
        out = capsys.readouterr().out
        assert out.startswith("BROKEN: ") and "malformed_value=" in out
        assert verify_chain_command([uri, "--tenant", "globex"]) == 0
        capsys.readouterr()


def test_malformed_values_in_a_plain_table(sqlite_uri, plain_rows, capsys):
    import json

    from replaykit import LoadError

    path, rows = plain_rows
    _fill_plain(sqlite_uri, "sqlite_iso", rows)
    db = sqlite_uri[len("sqlite:///") :]
    with sqlite3.connect(db) as conn:
        rid = conn.execute("SELECT min(rowid) FROM harness_event_log WHERE tenant_id = 'acme' "
                           "AND sequence_number = 2").fetchone()[0]
        conn.execute("UPDATE harness_event_log SET sequence_number = 'two' WHERE rowid = ?",
                     (rid,))
    with pytest.raises(LoadError, match=rf"rowid {rid} .*'sequence_number' holds 'two'"):
        read_sql(sqlite_uri, tenant_id="acme")
    got = read_sql(sqlite_uri, tenant_id="acme", errors="quarantine")
    assert got.quarantine.column("line").to_pylist() == [rid]
    assert verify_chain_command([sqlite_uri, "--tenant", "acme"]) == 1
    # a stored payload that is not a JSON object is a malformed stored value too: the CLI
    # lists it (BROKEN), it does not give up with "unreadable input"
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE harness_event_log SET sequence_number = 2 WHERE rowid = ?", (rid,))
        last = conn.execute("SELECT rowid FROM harness_event_log WHERE tenant_id = 'globex' "
                            "ORDER BY chat_id DESC, sequence_number DESC LIMIT 1").fetchone()[0]
        conn.execute("UPDATE harness_event_log SET payload = '[1, 2]' WHERE rowid = ?", (last,))
    assert verify_chain_command([sqlite_uri, "--tenant", "acme"]) == 0
    capsys.readouterr()
    assert verify_chain_command([sqlite_uri, "--tenant", "globex", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["problem_counts"] == {"malformed_value": 1}
    assert report["problems"][0]["expected"] == "bad_payload"


def test_reading_a_sqlite_file_that_does_not_exist_creates_nothing(tmp_path):
    from replaykit.errors import SQLError

    for uri in (f"sqlite:///{tmp_path / 'nope.db'}", tmp_path / "nope.db"):
        with pytest.raises(SQLError) as err:
            read_sql(uri, tenant_id="acme")
        assert err.value.reason == "no_database" and "nope.db" in str(err.value)
        assert "never creates" in err.value.fix
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- messy SQLite values
@pytest.mark.parametrize(("column", "value"), [
    ("payload", "x'7b2274223a22ff227d'"), ("text", "x'ff'"), ("chat_id", "x'63ff'"),
    ("event_type", "x'ff'"), ("created_at", "'0000-01-01T00:00:00Z'"),
    ("created_at", "'0001-01-01T00:00:00+01:00'"),
])  # fmt: skip
def test_sqlite_text_that_is_not_utf8_or_a_time_outside_years_1_to_9999(
        sqlite_uri, log, column, value):
    """SQLite keeps any bytes as TEXT and Arrow parses year 0: such rows loaded as invalid
    strings / times no datetime can show (and the report of a bad chat_id raised a raw
    UnicodeDecodeError); now each is one malformed_value row."""
    acme = log.filter(tenant_id="acme")
    write_sql(acme, sqlite_uri)
    path = sqlite_uri.removeprefix("sqlite:///")
    con = sqlite3.connect(path)
    rowid = con.execute("SELECT min(rowid) FROM harness_event_log").fetchone()[0]
    cast = f"CAST({value} AS TEXT)" if value.startswith("x'") else value
    con.execute(f'UPDATE harness_event_log SET "{column}" = {cast} WHERE rowid = ?', (rowid,))
    con.commit()
    con.close()
    with pytest.raises(LoadError) as info:
        read_sql(sqlite_uri, tenant_id="acme")
    assert (info.value.reason, info.value.field) == ("malformed_value", column)
    back = read_sql(sqlite_uri, tenant_id="acme", errors="quarantine")
    assert len(back) == len(acme) - 1
    q = back.quarantine
    assert q.column("reason").to_pylist() == ["malformed_value"]
    q.validate(full=True)
    for name in back.table.column_names:
        back.table.column(name).validate(full=True)
    back.table.column("ts").to_pylist()


_ODD_TENANTS = [123, 123.0, -0.0, 1e2, 2**62, b"acme", "0123", "123.0", "1e2"]


@pytest.mark.parametrize("decl", ["INTEGER", "NUMERIC", "REAL", "DECIMAL(10)", "", "BLOB",
                                  "TEXT", "VARCHAR(64)", "TEXT COLLATE NOCASE"])
def test_sqlite_tenant_ids_of_another_type_match_no_tenant(tmp_path, decl):
    """A tenant_id stored as INTEGER, REAL or BLOB (a column of numeric affinity turns the
    producer's '0123' or '123.0' into the number 123) is nobody's: SQLite's comparison
    would hand it to tenant '123' (or '0123', '100', ...); read_sql never returns it as a
    tenant's row, raises malformed_value naming tenant_id, or quarantines it without its
    content (issue 30 item 4). TEXT ids keep reading exactly."""
    _require("adbc-driver-sqlite", _has("adbc_driver_sqlite"))
    db = tmp_path / "t.db"
    with sqlite3.connect(db) as conn:
        conn.execute(f"CREATE TABLE harness_event_log (tenant_id {decl}, chat_id TEXT, "
                     "sequence_number INTEGER, event_type TEXT, payload TEXT, created_at TEXT)")
        for i, v in enumerate(_ODD_TENANTS):
            conn.execute("INSERT INTO harness_event_log VALUES (?, ?, 0, 'message', ?, "
                         "'2024-01-01T00:00:00Z')",
                         (v, f"r{i}", f'{{"role":"user","content":"SECRET-{i}"}}'))
        conn.execute("INSERT INTO harness_event_log VALUES ('acme', 'own', 0, 'message', "
                     "'{\"role\":\"user\",\"content\":\"mine\"}', '2024-01-01T00:00:00Z')")
        stored = dict(conn.execute("SELECT chat_id, typeof(tenant_id) FROM harness_event_log"))
    uri = f"sqlite:///{db}"
    asks = ["123", "123.0", "0", "-0.0", "100", "1e2", "0123", str(2**62), "acme"]
    for ask in asks:
        try:
            log = read_sql(uri, tenant_id=ask, errors="quarantine")
        except LoadError as exc:  # pragma: no cover - must not happen under quarantine
            pytest.fail(f"{decl} {ask}: {exc}")
        runs = log.table.column("run_id").to_pylist()
        # every row read has a TEXT tenant_id equal to the one asked
        assert all(stored[r] == "text" for r in runs), (decl, ask, runs)
        assert set(log.table.column("tenant_id").to_pylist()) <= {ask}
        q = log.quarantine
        for rec in q.to_pylist():
            if rec["field"] == "tenant_id":
                assert rec["reason"] == "malformed_value" and rec["tenant_id"] == ask
                assert "SECRET" not in (rec["raw"] or "") + rec["message"]
        collided = [rec for rec in q.to_pylist() if rec["field"] == "tenant_id"]
        if collided:
            with pytest.raises(LoadError) as info:
                read_sql(uri, tenant_id=ask)
            assert info.value.reason == "malformed_value" and info.value.field == "tenant_id"
        if ask == "acme":
            assert runs == ["own"]
    if decl in ("INTEGER", "NUMERIC", "DECIMAL(10)"):  # numbers collide: all quarantined
        got = read_sql(uri, tenant_id="123", errors="quarantine")
        assert len(got) == 0 and got.quarantine.num_rows >= 3


# ------------------------------------------------------- the recipe under real-world conditions


class _Db:
    """A fresh database with events, a non-superuser table owner and two plain roles,
    before any recipe ran (issue 30 item 5). ``sql(role, ...)`` runs statements as a role."""

    def __init__(self, server, admin_uri: str, log: EventLog) -> None:
        import adbc_driver_postgresql.dbapi as pg

        self.pg, self.server, self.admin = pg, server, admin_uri
        self.dbname = admin_uri.rpartition("/")[2]
        k = next(_role_counter)
        self.owner, self.reader, self.writer = (f"rk_o_{k}", f"rk_r'x\\{k}", f"rk_w_{k}")
        write_sql(log, admin_uri)
        self.sql(None, *[f'CREATE ROLE "{r}" LOGIN NOSUPERUSER NOBYPASSRLS'
                         for r in (self.owner, self.reader, self.writer)],
                 f'ALTER TABLE harness_event_log OWNER TO "{self.owner}"',
                 f'GRANT CREATE ON DATABASE "{self.dbname}" TO "{self.owner}"')

    def uri(self, role: str | None, options: str | None = None) -> str:
        from urllib.parse import quote

        if role is None:
            return self.admin
        uri = (f"postgresql://{quote(role, safe='')}@{self.server.host}:{self.server.port}/"
               f"{self.dbname}")
        return uri + ("?options=" + quote(options, safe="") if options else "")

    def sql(self, role: str | None, *statements: str) -> list:
        with self.pg.connect(self.uri(role)) as conn, conn.cursor() as cur:
            out = []
            for st in statements:
                cur.execute(st)
                try:
                    out = cur.fetchall()
                except Exception:  # noqa: BLE001 - a statement without rows
                    out = []
            conn.commit()
            return out

    def state(self) -> tuple:
        """What the recipe would change: RLS flags, policies, the mapping schema."""
        return (self.sql(None, "SELECT relrowsecurity, relforcerowsecurity FROM pg_class "
                               "WHERE oid = 'harness_event_log'::regclass")[0],
                sorted(self.sql(None, "SELECT polname FROM pg_policy")),
                self.sql(None, "SELECT count(*) FROM pg_namespace WHERE nspname = "
                               "'replaykit'")[0])


@pytest.fixture
def db(pg_server, pg_uri, log) -> _Db:
    return _Db(pg_server, pg_uri, log)


def test_rls_recipe_is_idempotent_and_scopes_reader_and_writer(db, log):
    """Setup and grants run twice (a repair, a re-deploy) give the same database; the reader
    (a role name with a quote and a backslash) reads only its tenant and the writer writes
    only its own; the audit finds nothing."""
    from replaykit import SQLError
    from replaykit.sql.rls import rls_audit, rls_grant, rls_setup

    owner = db.uri(db.owner)
    for _ in range(2):
        rls_setup(owner)
        rls_grant(owner, db.reader, "acme")
        rls_grant(owner, db.writer, HOSTILE_TENANT, write=True)
    assert db.sql(db.owner, "SELECT role_name, tenant_id FROM replaykit.tenant_roles "
                            "ORDER BY 2") == [(db.reader, "acme"), (db.writer, HOSTILE_TENANT)]
    got = read_sql(db.uri(db.reader), tenant_id=list(TENANTS))
    assert got.tenants == ["acme"] and len(got) == len(log.filter(tenant_id="acme"))
    fresh = _renamed_runs(make_log(60, n_runs=2, tenants=(HOSTILE_TENANT, "acme"), seed=5),
                          "w-")
    with pytest.raises(SQLError) as err:
        write_sql(fresh, db.uri(db.writer))
    assert err.value.reason == "rls_denied"
    assert write_sql(fresh.filter(tenant_id=HOSTILE_TENANT), db.uri(db.writer)) > 0
    assert rls_audit(owner).query("severity == 'error'").empty


@pytest.mark.parametrize("before", ["older_recipe_policy", "name_taken", "foreign_schema",
                                    "foreign_mapping_table"])
def test_rls_setup_refuses_what_it_did_not_write_and_changes_nothing(db, before):
    """A permissive policy from an older recipe (trusting app.tenant_id: ORed with ours it
    would open every tenant), a policy under replaykit's name that replaykit did not write,
    a mapping schema or table pre-created by another role (who could then map itself to
    every tenant): the setup refuses with the reason, in one transaction that leaves the
    database exactly as it was; grants are refused too."""
    from replaykit import SQLError
    from replaykit.sql.rls import rls_grant, rls_setup

    if before == "older_recipe_policy":
        db.sql(db.owner, "CREATE POLICY tenant_isolation ON harness_event_log USING "
                         "(tenant_id = current_setting('app.tenant_id', true))")
        want = "tenant_isolation"
    elif before == "name_taken":
        db.sql(db.owner, "CREATE POLICY replaykit_tenant_harness_event_log ON "
                         "harness_event_log USING (true)")
        want = "replaykit_tenant_harness_event_log"
    else:
        db.sql(None, f'GRANT CREATE ON DATABASE "{db.dbname}" TO "{db.writer}"')
        db.sql(db.writer, "CREATE SCHEMA replaykit",
               *(["CREATE TABLE replaykit.tenant_roles (role_name text, tenant_id text)"]
                 if before == "foreign_mapping_table" else []))
        want = "owned by another role"
    was = db.state()
    with pytest.raises(SQLError) as err:
        rls_setup(db.uri(db.owner))
    assert want in str(err.value)
    assert db.state() == was
    with pytest.raises(SQLError):
        rls_grant(db.uri(db.owner), db.reader, "acme")
    assert db.state() == was


def test_rls_recipe_holds_under_unusual_owner_session_settings(db):
    """The owner's session has standard_conforming_strings off (backslashes in literals
    are escapes) and a search_path whose first schema holds look-alike objects (a
    tenant_roles table mapping everyone to every tenant); the recipe names every object
    with its schema and quotes with escape strings, so the tenant id with a quote and a
    backslash is mapped exactly and the look-alike is never used."""
    from replaykit.sql.rls import rls_grant, rls_setup

    tenant = "o'b\\c"
    # (USAGE only: CREATE for PUBLIC would let the reader plant functions there, which
    # rls_grant refuses; test_the_recipe_leaves_readers_no_schema_others_use)
    db.sql(None, "CREATE SCHEMA evil", "GRANT USAGE ON SCHEMA evil TO PUBLIC",
           "CREATE TABLE evil.tenant_roles AS SELECT r.rolname::text AS role_name, "
           "t::text AS tenant_id FROM pg_roles r, unnest(ARRAY['acme', 'globex']) t",
           "GRANT ALL ON evil.tenant_roles TO PUBLIC")
    owner = db.uri(db.owner, "-c standard_conforming_strings=off -c search_path=evil,public")
    rls_setup(owner)
    rls_grant(owner, db.reader, [tenant, "acme"])
    assert sorted(db.sql(db.owner, "SELECT tenant_id FROM replaykit.tenant_roles")) == \
        sorted([(tenant,), ("acme",)])
    got = read_sql(db.uri(db.reader), tenant_id=list(TENANTS))
    assert got.tenants == ["acme"]  # not globex, which the look-alike table maps


def test_rls_audit_reports_the_pitfalls(db):
    """rls_audit names each pitfall the recipe cannot close by itself."""
    from replaykit.sql.rls import rls_audit, rls_grant, rls_setup

    before = rls_audit(db.uri(db.owner))
    assert {"rls_not_enabled", "rls_not_forced", "no_replaykit_policy",
            "mapping_missing"} <= set(before["check"])
    rls_setup(db.uri(db.owner))
    rls_grant(db.uri(db.owner), db.reader, "acme")
    assert rls_audit(db.uri(db.owner)).query("severity == 'error'").empty
    db.sql(None, f'GRANT INSERT ON replaykit.tenant_roles TO "{db.writer}"',
           "GRANT CREATE ON SCHEMA public TO PUBLIC",
           "CREATE VIEW all_events AS SELECT * FROM harness_event_log",  # superuser-owned
           "CREATE FUNCTION peek() RETURNS bigint LANGUAGE sql SECURITY DEFINER AS "
           "'SELECT count(*) FROM harness_event_log'",
           "GRANT SELECT ON harness_event_log TO PUBLIC")
    db.sql(db.owner, "CREATE POLICY open_all ON harness_event_log USING (true)")
    found = rls_audit(db.uri(db.owner))
    assert {"mapping_writable", "public_schema_create", "bypassing_view",
            "bypassing_security_definer", "public_grant", "foreign_policy"} <= \
        set(found["check"]), found
    assert found.set_index("check").loc["foreign_policy", "object"].startswith("open_all")
    assert list(found.columns) == ["check", "severity", "object", "detail", "fix"]


# ------------------------------------------ a reader's SECURITY DEFINER function (issue 42 #18)


class _Tenants(_Db):
    """_Db with the recipe run and two readers, one per tenant (acme: reader, globex:
    writer's role used as a second reader)."""

    def __init__(self, server, admin_uri: str, log: EventLog) -> None:
        from replaykit.sql.rls import rls_grant, rls_setup

        super().__init__(server, admin_uri, log)
        owner = self.uri(self.owner)
        rls_setup(owner)
        rls_grant(owner, self.reader, "acme")
        rls_grant(owner, self.writer, "globex")


@pytest.fixture
def tenants_db(pg_server, pg_uri, log) -> _Tenants:
    return _Tenants(pg_server, pg_uri, log)


def _plant_definer(db: _Tenants, schema: str) -> str:
    """As acme's reader: a SECURITY DEFINER function in ``schema`` returning every row its
    owner sees (callable by PUBLIC, the default); returns its qualified name."""
    fn = f'"{schema}".peek_rows'
    db.sql(db.reader, f"CREATE FUNCTION {fn}() RETURNS SETOF text LANGUAGE sql "
                      "SECURITY DEFINER AS 'SELECT tenant_id FROM public.harness_event_log'")
    return fn


@pytest.mark.parametrize("where", ["public (CREATE granted to the reader)",
                                   "public (CREATE granted to PUBLIC)",
                                   "a schema the reader owns, USAGE granted to PUBLIC"])
def test_a_readers_security_definer_function_is_found_by_the_audit(tenants_db, where):
    """The reader of acme, allowed to create functions in a schema others use, makes a
    SECURITY DEFINER function: globex's reader calling it got acme's rows, and the audit
    said the database was clean. Now the audit reports the function and the CREATE right
    as errors; the leak itself is shown first (the attack works, so the audit must see it)."""
    from replaykit.sql.rls import rls_audit

    db = tenants_db
    if where.startswith("public (CREATE granted to the reader"):
        db.sql(None, f'GRANT CREATE ON SCHEMA public TO "{db.reader}"')
        schema = "public"
    elif where.startswith("public (CREATE granted to PUBLIC"):
        db.sql(None, "GRANT CREATE ON SCHEMA public TO PUBLIC")
        schema = "public"
    else:
        db.sql(None, f'CREATE SCHEMA reader_s AUTHORIZATION "{db.reader}"')
        db.sql(db.reader, "GRANT USAGE ON SCHEMA reader_s TO PUBLIC")
        schema = "reader_s"
    fn = _plant_definer(db, schema)
    leaked = {t for (t,) in db.sql(db.writer, f"SELECT * FROM {fn}()")}
    assert leaked == {"acme"}  # globex's reader reads acme's rows through the function
    found = rls_audit(db.uri(db.owner))
    errors = found[found["severity"] == "error"]
    definer = errors[errors["check"] == "tenant_security_definer"]
    assert len(definer) == 1 and "peek_rows()" in definer["object"].iloc[0], found
    assert "PUBLIC" in definer["detail"].iloc[0]
    create = errors[errors["check"] == "reader_schema_create"]
    assert any(schema in o and "rk_r" in o for o in create["object"]), found


def test_a_definer_only_its_owner_may_call_is_not_a_leak(tenants_db):
    from replaykit.sql.rls import rls_audit

    db = tenants_db
    db.sql(None, f'CREATE SCHEMA private_s AUTHORIZATION "{db.reader}"')  # no USAGE to others
    fn = _plant_definer(db, "private_s")
    db.sql(db.reader, f"REVOKE EXECUTE ON FUNCTION {fn}() FROM PUBLIC")
    found = rls_audit(db.uri(db.owner))
    assert found.query("severity == 'error'").empty, found


def test_the_recipe_leaves_readers_no_schema_others_use(tenants_db):
    """rls_setup revokes CREATE on the table's schema from PUBLIC (as far as the owner can);
    rls_grant refuses a role that still may create in a schema others use, or that owns a
    SECURITY DEFINER function, and changes nothing."""
    from replaykit import SQLError
    from replaykit.sql.rls import rls_grant

    db = tenants_db
    newcomer = f"rk_new_{next(_role_counter)}"
    db.sql(None, f'CREATE ROLE "{newcomer}" LOGIN', f'GRANT CREATE ON SCHEMA public TO '
                 f'"{newcomer}"')
    mapped = lambda: db.sql(db.owner, "SELECT count(*) FROM replaykit.tenant_roles "  # noqa: E731
                                      f"WHERE role_name = '{newcomer}'")[0][0]
    with pytest.raises(SQLError) as err:
        rls_grant(db.uri(db.owner), newcomer, "acme")
    assert err.value.reason == "rls_refused" and "may create objects in schema" in str(err.value)
    assert mapped() == 0
    db.sql(None, f'REVOKE CREATE ON SCHEMA public FROM "{newcomer}"',
           f'CREATE SCHEMA own_s AUTHORIZATION "{newcomer}"')
    db.sql(newcomer, "CREATE FUNCTION own_s.f() RETURNS int LANGUAGE sql SECURITY DEFINER "
                     "AS 'SELECT 1'")
    with pytest.raises(SQLError) as err:
        rls_grant(db.uri(db.owner), newcomer, "acme")
    assert "owns SECURITY DEFINER" in str(err.value) and mapped() == 0
    db.sql(None, "DROP SCHEMA own_s CASCADE")
    rls_grant(db.uri(db.owner), newcomer, "acme")
    assert mapped() == 1


def test_the_setup_sql_revokes_create_on_the_tables_schema():
    from replaykit.sql.rls import rls_grant_sql, rls_setup_sql

    assert 'REVOKE CREATE ON SCHEMA "public" FROM PUBLIC;' in rls_setup_sql()
    assert 'REVOKE CREATE ON SCHEMA "events" FROM PUBLIC;' in rls_setup_sql("events.t")
    assert 'REVOKE CREATE ON SCHEMA "public" FROM "r";' in rls_grant_sql("r", "acme")
