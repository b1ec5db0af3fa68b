"""One contender, one process: ``python -m benchmarks._worker NAME PATH``.

Prints one JSON line: {"name", "seconds", "cpu_seconds", "rows", "peak_rss_mb"}. ``seconds``
is wall time, ``cpu_seconds`` the process's user + system CPU time over the same span (all
threads). Peak RSS is the process's own high-water mark (``resource.getrusage``), so imports
are included for every contender.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from collections.abc import Callable
from typing import Any


def pleach_replaykit(path: str) -> int:
    from replaykit.io.pleach import read_pleach

    return len(read_pleach(path, progress=False))


def pleach_replaykit_reference(path: str) -> int:
    """read_pleach on its reference path (REPLAYKIT_NATIVE=0, set before the import): the
    Arrow/numpy implementation the native core replaces, so the core's gain is a ratio."""
    from replaykit.io.pleach import read_pleach

    return len(read_pleach(path, progress=False))


def pleach_pandas(path: str) -> int:
    """What a user does without replaykit: read_json, then payload back to text and ts."""
    import pandas as pd

    df = pd.read_json(path, lines=True, convert_dates=False)
    df["payload"] = df["payload"].map(lambda p: json.dumps(p, ensure_ascii=False))
    df["created_at"] = pd.to_datetime(df["created_at"], utc=True, format="ISO8601")
    return len(df)


def pleach_polars(path: str) -> int:
    """polars.read_ndjson of the same file: the 8 envelope columns, payload as text."""
    import polars as pl

    schema = {
        "tenant_id": pl.String, "chat_id": pl.String, "sequence_number": pl.Int64,
        "event_type": pl.String, "payload": pl.String, "created_at": pl.String,
        "prev_hash": pl.String, "row_hash": pl.String,
    }
    return pl.read_ndjson(path, schema=schema).height


def pleach_duckdb(path: str) -> int:
    """DuckDB's read_json of the same file, payload kept as JSON, materialised as Arrow."""
    import duckdb

    cols = (
        "{tenant_id:'VARCHAR', chat_id:'VARCHAR', sequence_number:'BIGINT', "
        "event_type:'VARCHAR', payload:'JSON', created_at:'VARCHAR', prev_hash:'VARCHAR', "
        "row_hash:'VARCHAR'}"
    )
    con = duckdb.connect()
    t = con.sql(
        f"SELECT * FROM read_json('{path}', format='newline_delimited', columns={cols})"
    ).to_arrow_table()
    return t.num_rows


def pleach_duckdb_typed(path: str) -> int:
    """DuckDB's read_json of what read_pleach's fast path parses: the envelope columns and the
    payload's typed fields as a STRUCT (read_pleach's two JSON parses, by DuckDB), as Arrow.
    The parser's share of read_pleach, without its strictness (DuckDB accepts trailing commas,
    nan/inf literals and numbers read into text columns) or the payload's source text."""
    import duckdb
    import pyarrow as pa

    from replaykit.io.pleach import _TYPED

    def ddl(typ: Any) -> str:
        if pa.types.is_struct(typ):
            return "STRUCT(" + ", ".join(f'"{f.name}" {ddl(f.type)}' for f in typ) + ")"
        return {"string": "VARCHAR", "int64": "BIGINT", "bool": "BOOLEAN"}[str(typ)]

    cols = {"tenant_id": "VARCHAR", "chat_id": "VARCHAR", "sequence_number": "BIGINT",
            "event_type": "VARCHAR", "created_at": "VARCHAR", "prev_hash": "VARCHAR",
            "row_hash": "VARCHAR", "payload": ddl(pa.struct(list(_TYPED)))}
    con = duckdb.connect()
    t = con.read_json(path, format="newline_delimited", columns=cols).to_arrow_table()
    return t.num_rows


#: the typed payload fields read_pleach extracts (see replaykit.io.pleach._TYPED)
_DUCK_FIELDS = {
    "turn": "BIGINT", "message_id": "VARCHAR", "call_id": "VARCHAR", "tool": "VARCHAR",
    "finish": "VARCHAR", "text": "VARCHAR", "result": "VARCHAR", "is_error": "BOOLEAN",
    "cacheKey": "VARCHAR", "interrupt_id": "VARCHAR", "reason": "VARCHAR",
    "subagent_id": "VARCHAR", "child_chat_id": "VARCHAR", "checkpoint_id": "VARCHAR",
    "export_id": "VARCHAR", "card_id": "VARCHAR", "message": "VARCHAR",
}


def pleach_duckdb_same_work(path: str) -> int:
    """DuckDB doing part of read_pleach's work: the read, the typed payload fields (incl.
    token usage and tool args), timestamps, and the sort by (tenant, chat, seq). Still less
    than read_pleach does: no validation or quarantine, no canonical args hash, no kind
    mapping, no duplicate check."""
    import duckdb

    cols = (
        "{tenant_id:'VARCHAR', chat_id:'VARCHAR', sequence_number:'BIGINT', "
        "event_type:'VARCHAR', payload:'JSON', created_at:'VARCHAR', prev_hash:'VARCHAR', "
        "row_hash:'VARCHAR'}"
    )
    typed = ", ".join(f"CAST(json_extract_string(payload, '$.{k}') AS {t}) AS \"{k}\""
                      for k, t in _DUCK_FIELDS.items())
    con = duckdb.connect()
    t = con.sql(
        "SELECT tenant_id, chat_id, sequence_number, event_type, payload, "
        "CAST(created_at AS TIMESTAMPTZ) AS ts, prev_hash, row_hash, "
        f"{typed}, "
        "CAST(json_extract(payload, '$.usage.input_tokens') AS BIGINT) AS input_tokens, "
        "CAST(json_extract(payload, '$.usage.output_tokens') AS BIGINT) AS output_tokens, "
        "json_extract(payload, '$.args') AS args "
        f"FROM read_json('{path}', format='newline_delimited', columns={cols}) "
        "ORDER BY tenant_id, chat_id, sequence_number"
    ).to_arrow_table()
    return t.num_rows


def toh_replaykit(path: str) -> int:
    from replaykit.io.toh import read_toh

    return len(read_toh(path, owner="bench", progress=False))


def toh_naive(path: str) -> int:
    """Baseline: json.loads per line, keeping the decoded objects (no expansion)."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            out.append(json.loads(line))
    return len(out)


CONTENDERS: dict[str, Callable[[str], int]] = {
    f.__name__: f
    for f in (pleach_replaykit, pleach_replaykit_reference, pleach_polars, pleach_pandas,
              pleach_duckdb, pleach_duckdb_typed, pleach_duckdb_same_work,
              toh_replaykit, toh_naive)
}


#: modules imported before the clock starts: each contender's own, and the libraries its
#: call would import on first use (``import replaykit`` is lazy, and pyarrow imports pandas
#: the first time ``pa.array`` sees a numpy array; DuckDB imports pyarrow for
#: ``to_arrow_table``), so no contender's timed work includes an import
_IMPORTS = {
    "pleach_replaykit": ("replaykit.io.pleach", "pandas"),
    "pleach_replaykit_reference": ("replaykit.io.pleach", "pandas"),
    "pleach_polars": ("polars",),
    "pleach_pandas": ("pandas",),
    "pleach_duckdb": ("duckdb", "pyarrow"),
    "pleach_duckdb_typed": ("duckdb", "pyarrow", "replaykit.io.pleach"),
    "pleach_duckdb_same_work": ("duckdb", "pyarrow"),
    "toh_replaykit": ("replaykit.io.toh", "pandas"),
    "toh_naive": (),
}


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def main(argv: list[str]) -> None:
    name, path = argv
    fn = CONTENDERS[name]
    if name.endswith("_reference"):
        import os

        os.environ["REPLAYKIT_NATIVE"] = "0"  # before replaykit is imported
    for mod in _IMPORTS[name]:  # imports are not part of the timed work
        __import__(mod)
    c0 = _cpu()
    t0 = time.perf_counter()
    rows = fn(path)
    seconds = time.perf_counter() - t0
    cpu = _cpu() - c0
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result: dict[str, Any] = {
        "name": name,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "rows": rows,
        "peak_rss_mb": peak_kb / 1024,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
