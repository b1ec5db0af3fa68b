"""Comparing datasets: an ingested one against ``read_events(...).to_parquet(...)`` read back."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

import replaykit as rk


def plain(t: pa.Table) -> pa.Table:
    """Dictionary columns as strings (dictionaries differ by construction, values must not)."""
    cols = [pc.cast(c, c.type.value_type) if pa.types.is_dictionary(c.type) else c
            for c in t.columns]
    return pa.Table.from_arrays([c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c
                                 for c in cols], names=t.schema.names)


def rows(t: pa.Table, keys: list[str]) -> list[dict]:
    """The rows of a side table, in a canonical order."""
    out = plain(t).to_pylist()
    return sorted(out, key=lambda r: tuple(str(r.get(k)) for k in keys))


def same_log(a: rk.EventLog, b: rk.EventLog) -> None:
    """Same events in the same order, same quarantine and run headers (as sets of rows)."""
    assert len(a) == len(b)
    pa_, pb = plain(a.table), plain(b.table)
    for name in pa_.schema.names:
        assert pa_.column(name).equals(pb.column(name)), name
    qk = ["source", "line", "reason", "message", "tenant_id", "run_id"]
    assert rows(a.quarantine, qk) == rows(b.quarantine, qk)
    rk_ = ["tenant_id", "run_id", "source"]
    assert rows(a.runs, rk_) == rows(b.runs, rk_)
