"""Database read benchmarks: read_sql (ADBC, Arrow end to end) vs pandas.read_sql (SQLAlchemy).

``run(quick)`` returns rows ``{name, value, unit, baseline, ratio, target}``. The full run
writes 1,000,000 events (``quick=True``: 100,000) to SQLite and to a throwaway PostgreSQL
server (Debian's ``postgresql`` binaries; skipped with a note when missing), in two layouts:

* ``full``: the table :func:`replaykit.write_sql` creates (export columns + canonical ones);
  read_sql builds the sorted, dictionary-encoded EventLog from the stored columns.
* ``plain``: only the eight ``harness_event_log`` export columns (payload TEXT in SQLite,
  JSONB in PostgreSQL; created_at ISO text in SQLite, TIMESTAMPTZ in PostgreSQL), the table
  users have; read_sql derives every canonical column from ``event_type`` + ``payload`` with
  the pleach loader's code (JSON parse of every payload; JSONB payloads are also re-encoded
  as canonical JSON, one orjson call per row).

A second figure per database (``full`` layout) is what the tenant checks of issue 14 cost:
the same ``read_sql`` with and without them (without: no ``COLLATE BINARY`` / ``COLLATE "C"``
in the filter, no column-wise re-check of the returned tenants and runs, no SQLite type check),
interleaved, best of N; the target is at most 10% (ratio <= 1.10).

The baseline is what a user would write without replaykit: ``pandas.read_sql`` over a
SQLAlchemy engine running the same parameterised query for the same columns, then
``pd.to_datetime(created_at, utc=True)`` where the database returns text. It yields a plain
DataFrame (no typed columns derived, no sorting, no validation), so the comparison favours
the baseline. Both run in the same process, alternating; the machine load average is
reported with the numbers (other jobs may share the cores).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks._harness import interleave, tiny

TENANTS = ("acme", "globex", "initech")
EXPORT = ("tenant_id", "chat_id", "sequence_number", "event_type", "payload", "created_at",
          "prev_hash", "row_hash")


def _query(layout: str) -> str:
    from replaykit.sql.connection import _COLUMNS

    names = [db for db, *_ in _COLUMNS] if layout == "full" else list(EXPORT)
    cols = ", ".join(f'"{c}"' for c in names)
    return f'SELECT {cols} FROM harness_event_log WHERE "tenant_id" IN (:t0, :t1, :t2)'


def _measure(label: str, layout: str, uri: str, engine_url: str, n: int) -> dict[str, Any]:
    import pandas as pd
    import sqlalchemy as sa

    import replaykit as rk

    got = rk.read_sql(uri, tenant_id=list(TENANTS))
    assert len(got) == n
    engine = sa.create_engine(engine_url)
    params = {f"t{i}": t for i, t in enumerate(TENANTS)}
    query = sa.text(_query(layout))

    def baseline(conn: Any) -> pd.DataFrame:
        df = pd.read_sql(query, conn, params=params)
        if df["created_at"].dtype == object:  # SQLite: text -> times, as a user would
            df["created_at"] = pd.to_datetime(df["created_at"], utc=True, format="ISO8601")
        return df

    load0 = os.getloadavg()[0]
    with engine.connect() as conn:
        assert len(baseline(conn)) == n
        # interleaved (both see the same machine load), best of 2; warmed up just above
        res = interleave({"ours": lambda: rk.read_sql(uri, tenant_id=list(TENANTS)),
                          "pandas": lambda: baseline(conn)}, repeat=2, warmup=False)
    engine.dispose()
    ours_s, theirs_s = res["ours"].best_s, res["pandas"].best_s
    load1 = os.getloadavg()[0]
    return {
        "name": f"read_sql {label} {layout} layout events/s ({n:,} events)",
        "value": round(n / ours_s),
        "unit": "events/s",
        "baseline": round(n / theirs_s),
        "ratio": round(theirs_s / ours_s, 1),
        "target": (">= 5x pandas.read_sql via SQLAlchemy" if layout == "full" else
                   "reference (derives every column from payload)")
        + f"; best of 2 interleaved; load average {load0:.1f}-{load1:.1f}",
    }


@contextmanager
def _checks_off() -> Iterator[None]:
    """read_sql as before the tenant checks: plain filters, no re-check, no type check."""
    import replaykit.sql._fetch as rksql
    import replaykit.sql.read as rksql_read

    saved = {k: getattr(rksql, k) for k in ("_recheck", "_sqlite_where", "_pg_exact")}
    saved_typed = rksql_read._well_typed

    def where(tenants: Any, runs: Any, lo: Any, hi: Any) -> tuple[str, list[Any]]:
        text, params = saved["_sqlite_where"](tenants, runs, lo, hi)
        return text.replace(" COLLATE BINARY", ""), params

    rksql._recheck = lambda raw, tenants, runs: raw
    rksql_read._well_typed = lambda raw, checks: True
    rksql._sqlite_where = where
    rksql._pg_exact = lambda column, declared: f'"{column}"'
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(rksql, k, v)
        rksql_read._well_typed = saved_typed


def _checks_cost(label: str, uri: str, n: int, rounds: int = 6) -> list[dict[str, Any]]:
    import replaykit as rk

    def read() -> Any:
        return rk.read_sql(uri, tenant_id=list(TENANTS))

    with _checks_off():
        assert len(read()) == n
    assert len(read()) == n
    load0 = os.getloadavg()[0]
    def read_unchecked() -> Any:
        with _checks_off():
            return read()

    # interleaved, so both see the same machine load; both warmed up just above
    # on/off, off/on, ...: neither always goes first
    res = interleave({"on": read, "off": read_unchecked}, repeat=rounds, warmup=False,
                     alternate=True)
    load1 = os.getloadavg()[0]
    on, off = res["on"].walls, res["off"].walls
    ratio = min(on) / min(off)
    return [{
        "name": f"read_sql {label} full layout: tenant checks on vs off ({n:,} events)",
        "value": round((ratio - 1) * 100, 1),
        "unit": "% slower",
        "baseline": round(n / min(off)),
        "ratio": round(ratio, 3),
        "target": f"<= 10% (ratio <= 1.10); best of {rounds}, order alternating; load average "
        f"{load0:.1f}-{load1:.1f}",
    }, _checks_share(label, uri, n, min(on))]


def _checks_share(label: str, uri: str, n: int, read_s: float) -> dict[str, Any]:
    """The checks' own time (re-check of tenants and runs, SQLite type check) on the fetched
    rows, as a share of the whole read: steadier than the end-to-end ratio on a busy machine."""
    import replaykit.sql._fetch as rksql
    import replaykit.sql.read as rksql_read

    got = rksql._fetch_rows(uri, tenant_id=list(TENANTS))
    raw = got.raw
    runs = sorted(set(raw.column("chat_id").to_pylist()))

    def checks() -> None:
        rksql._recheck(raw, list(TENANTS), runs)
        rksql_read._well_typed(raw, got.checks)

    spent = interleave({"checks": checks}, repeat=7)["checks"].best_s
    return {
        "name": f"read_sql {label} full layout: tenant checks' own time, with every run id "
        f"named ({n:,} events)",
        "value": round(100 * spent / read_s, 2),
        "unit": "% of the read",
        "baseline": round(read_s, 3),
        "ratio": None,
        "target": "<= 10% of the read",
    }


def _plain_table(log: Any, ts_as_text: bool) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    t = log.table
    ts = t.column("ts")
    if ts_as_text:
        ts = pc.strftime(ts, "%Y-%m-%dT%H:%M:%SZ")  # ISO with microseconds (%S has them)
    cols = {
        "tenant_id": t.column("tenant_id").cast(pa.string()),
        "chat_id": t.column("run_id").cast(pa.string()),
        "sequence_number": t.column("seq"),
        "event_type": t.column("type").cast(pa.string()),
        "payload": t.column("payload").cast(pa.string()),
        "created_at": ts,
        "prev_hash": t.column("prev_hash").cast(pa.string()),
        "row_hash": t.column("row_hash").cast(pa.string()),
    }
    return pa.table(cols)


_PLAIN_SQLITE = (
    "CREATE TABLE harness_event_log (tenant_id TEXT NOT NULL, chat_id TEXT NOT NULL, "
    "sequence_number INTEGER NOT NULL, event_type TEXT NOT NULL, payload TEXT NOT NULL, "
    "created_at TEXT, prev_hash TEXT, row_hash TEXT, "
    "PRIMARY KEY (tenant_id, chat_id, sequence_number))"
)
_PLAIN_PG = (
    "CREATE TABLE harness_event_log (tenant_id TEXT NOT NULL, chat_id TEXT NOT NULL, "
    "sequence_number BIGINT NOT NULL, event_type TEXT NOT NULL, payload JSONB NOT NULL, "
    "created_at TIMESTAMPTZ, prev_hash TEXT, row_hash TEXT, "
    "PRIMARY KEY (tenant_id, chat_id, sequence_number))"
)


def _write_plain_sqlite(log: Any, path: Path) -> None:
    import adbc_driver_sqlite.dbapi as driver

    with driver.connect(str(path)) as conn, conn.cursor() as cur:
        cur.execute(_PLAIN_SQLITE)
        cur.adbc_ingest("harness_event_log", _plain_table(log, True), mode="append")
        conn.commit()


def _write_plain_pg(log: Any, uri: str) -> None:
    import adbc_driver_postgresql.dbapi as driver

    with driver.connect(uri) as conn, conn.cursor() as cur:
        cur.execute(_PLAIN_PG)
        cur.adbc_ingest("rk_stage", _plain_table(log, False), mode="create")
        cur.execute(
            "INSERT INTO harness_event_log SELECT tenant_id, chat_id, sequence_number, "
            "event_type, payload::jsonb, created_at, prev_hash, row_hash FROM rk_stage"
        )
        cur.execute("DROP TABLE rk_stage")
        conn.commit()


def _write_row(label: str, n: int, seconds: float) -> dict[str, Any]:
    return {
        "name": f"write_sql {label} events/s ({n:,} events)",
        "value": round(n / seconds),
        "unit": "events/s",
        "baseline": None,
        "ratio": None,
        "target": "reference only",
    }


def run(quick: bool = False) -> list[dict[str, Any]]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from _chainlogs import make_log
    from _pgserver import find_pg_bindir, temporary_postgres

    import replaykit as rk

    n = tiny(100_000) if quick else 1_000_000
    log = rk.stamp_chain(make_log(n, n_runs=max(1, n // 1000), tenants=TENANTS))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="rk-bench-sql-") as tmp:
        db = Path(tmp) / "events.db"
        t0 = time.perf_counter()
        rk.write_sql(log, f"sqlite:///{db}")
        write_s = time.perf_counter() - t0
        rows.append(_measure("SQLite", "full", f"sqlite:///{db}", f"sqlite:///{db}", n))
        rows.extend(_checks_cost("SQLite", f"sqlite:///{db}", n, 3 if quick else 5))
        rows.append(_write_row("SQLite", n, write_s))
        plain = Path(tmp) / "plain.db"
        _write_plain_sqlite(log, plain)
        rows.append(_measure("SQLite", "plain", f"sqlite:///{plain}", f"sqlite:///{plain}", n))
    if find_pg_bindir() is None:
        rows.append(
            {
                "name": "read_sql PostgreSQL",
                "value": None,
                "unit": "events/s",
                "baseline": None,
                "ratio": None,
                "target": "skipped: PostgreSQL binaries not installed",
            }
        )
        return rows
    with temporary_postgres() as server:
        import adbc_driver_postgresql.dbapi as driver

        with driver.connect(server.uri(), autocommit=True) as conn, conn.cursor() as cur:
            cur.execute("CREATE DATABASE rk_plain")
        uri = server.uri()
        t0 = time.perf_counter()
        rk.write_sql(log, uri)
        write_s = time.perf_counter() - t0
        sa_url = uri.replace("postgresql://", "postgresql+psycopg://", 1)
        rows.append(_measure("PostgreSQL", "full", uri, sa_url, n))
        rows.extend(_checks_cost("PostgreSQL", uri, n, 3 if quick else 5))
        rows.append(_write_row("PostgreSQL", n, write_s))
        plain_uri = uri.rsplit("/", 1)[0] + "/rk_plain"
        _write_plain_pg(log, plain_uri)
        rows.append(_measure(
            "PostgreSQL", "plain", plain_uri,
            plain_uri.replace("postgresql://", "postgresql+psycopg://", 1), n,
        ))
    return rows


def checks_only(n: int = 200_000) -> list[dict[str, Any]]:
    """Just the tenant-check figures (``python -m benchmarks.bench_sql --checks [N]``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from _chainlogs import make_log
    from _pgserver import find_pg_bindir, temporary_postgres

    import replaykit as rk

    log = rk.stamp_chain(make_log(n, n_runs=max(1, n // 1000), tenants=TENANTS))
    rows = []
    with tempfile.TemporaryDirectory(prefix="rk-bench-sql-") as tmp:
        db = Path(tmp) / "events.db"
        rk.write_sql(log, f"sqlite:///{db}")
        rows.extend(_checks_cost("SQLite", f"sqlite:///{db}", n))
    if find_pg_bindir() is not None:
        with temporary_postgres() as server:
            rk.write_sql(log, server.uri())
            rows.extend(_checks_cost("PostgreSQL", server.uri(), n))
    return rows


if __name__ == "__main__":  # pragma: no cover
    if "--checks" in sys.argv:
        args = [a for a in sys.argv[1:] if a.isdigit()]
        for row in checks_only(int(args[0]) if args else 200_000):
            print(row)
    else:
        for row in run(quick="--quick" in sys.argv):
            print(row)
