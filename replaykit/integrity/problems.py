"""The problem table of :func:`~replaykit.integrity.verify_chain`: its kinds and schema."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..eventlog.log import to_pandas
from .content import _plain

__all__ = ["PROBLEM_KINDS"]

#: The ``kind`` values of :func:`verify_chain` problems.
PROBLEM_KINDS: tuple[str, ...] = (
    "hash_mismatch",
    "link_mismatch",
    "seq_gap",
    "duplicate_seq",
    "head_mismatch",
    "unexpected_run",
    "missing_run",
    "derived_mismatch",
    "malformed_value",
)


# --------------------------------------------------------------------------- verification

_PROBLEM_SCHEMA = pa.schema(
    [
        ("tenant_id", pa.string()),
        ("run_id", pa.string()),
        ("seq", pa.int64()),
        ("kind", pa.string()),
        ("expected", pa.string()),
        ("found", pa.string()),
    ]
)


def _problem_frame(parts: list[pa.Table]) -> pd.DataFrame:
    table = pa.concat_tables(parts) if parts else _PROBLEM_SCHEMA.empty_table()
    df = to_pandas(table)
    if len(df):
        rank = {k: i for i, k in enumerate(PROBLEM_KINDS)}
        df["_k"] = df["kind"].map(rank)
        df = df.sort_values(["tenant_id", "run_id", "seq", "_k"], kind="stable", na_position="last")
        df = df.drop(columns="_k").reset_index(drop=True)
    return df


def _problems(
    table: pa.Table, mask: np.ndarray | pa.Array, kind: str, expected: Any, found: Any
) -> pa.Table:
    m = pa.array(np.asarray(mask, dtype=bool)) if isinstance(mask, np.ndarray) else mask
    cols = {
        "tenant_id": _plain(table.column("tenant_id")).filter(m),
        "run_id": _plain(table.column("run_id")).filter(m),
        "seq": table.column("seq").combine_chunks().filter(m),
        "kind": pa.array([kind] * int(pc.sum(pc.cast(m, pa.int64())).as_py() or 0), pa.string()),
        "expected": pc.cast(expected.filter(m), pa.string()),
        "found": pc.cast(found.filter(m), pa.string()),
    }
    return pa.table(cols, schema=_PROBLEM_SCHEMA)
