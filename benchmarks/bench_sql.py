"""Database read benchmarks: read_sql (ADBC, Arrow end to end) vs pandas.read_sql (SQLAlchemy).

``run(quick)`` returns rows ``{name, value, unit, baseline, ratio, target}``. The full run
writes 1,000,000 events (``quick=True``: 100,000) to SQLite and to a throwaway PostgreSQL
server (Debian's ``postgresql`` binaries; skipped with a note when missing), then times
reading them all back for their tenants with :func:`replaykit.read_sql` and with
``pandas.read_sql`` over a SQLAlchemy engine running the same parameterised query, in the
same process. read_sql's time includes building the sorted, dictionary-encoded EventLog.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

TENANTS = ("acme", "globex", "initech")


def _best(fn: Any, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _pandas_query() -> str:
    from replaykit.sql import _COLUMNS

    cols = ", ".join(f'"{db}"' for db, *_ in _COLUMNS)
    return f'SELECT {cols} FROM harness_event_log WHERE "tenant_id" IN (:t0, :t1, :t2)'


def _measure(label: str, uri: str, engine_url: str, n: int) -> list[dict[str, Any]]:
    import pandas as pd
    import sqlalchemy as sa

    import replaykit as rk

    got = rk.read_sql(uri, tenant_id=list(TENANTS))
    assert len(got) == n
    ours = _best(lambda: rk.read_sql(uri, tenant_id=list(TENANTS)))
    engine = sa.create_engine(engine_url)
    params = {f"t{i}": t for i, t in enumerate(TENANTS)}
    query = sa.text(_pandas_query())
    with engine.connect() as conn:
        assert len(pd.read_sql(query, conn, params=params)) == n
        theirs = _best(lambda: pd.read_sql(query, conn, params=params), repeat=2)
    engine.dispose()
    return [
        {
            "name": f"read_sql {label} events/s ({n:,} events)",
            "value": round(n / ours),
            "unit": "events/s",
            "baseline": round(n / theirs),
            "ratio": round(theirs / ours, 1),
            "target": ">= 5x pandas.read_sql via SQLAlchemy",
        },
    ]


def run(quick: bool = False) -> list[dict[str, Any]]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from _chainlogs import make_log
    from _pgserver import find_pg_bindir, temporary_postgres

    import replaykit as rk

    n = 100_000 if quick else 1_000_000
    log = rk.stamp_chain(make_log(n, n_runs=max(1, n // 1000), tenants=TENANTS))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="rk-bench-sql-") as tmp:
        db = Path(tmp) / "events.db"
        t0 = time.perf_counter()
        rk.write_sql(log, f"sqlite:///{db}")
        write_s = time.perf_counter() - t0
        rows += _measure("SQLite", f"sqlite:///{db}", f"sqlite:///{db}", n)
        rows.append(
            {
                "name": f"write_sql SQLite events/s ({n:,} events)",
                "value": round(n / write_s),
                "unit": "events/s",
                "baseline": None,
                "ratio": None,
                "target": "reference only",
            }
        )
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
        uri = server.uri()
        t0 = time.perf_counter()
        rk.write_sql(log, uri)
        write_s = time.perf_counter() - t0
        sa_url = uri.replace("postgresql://", "postgresql+psycopg://", 1)
        rows += _measure("PostgreSQL", uri, sa_url, n)
        rows.append(
            {
                "name": f"write_sql PostgreSQL events/s ({n:,} events)",
                "value": round(n / write_s),
                "unit": "events/s",
                "baseline": None,
                "ratio": None,
                "target": "reference only",
            }
        )
    return rows


if __name__ == "__main__":  # pragma: no cover
    for row in run(quick="--quick" in sys.argv):
        print(row)
