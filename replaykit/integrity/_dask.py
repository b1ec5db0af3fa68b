"""``rk.verify_chain(..., engine="dask")``: the chain-check kernel and its combine step.

The engine (:mod:`replaykit.engine`) maps the kernel over run-aligned partitions and knows
nothing about hash chains; this module registers :func:`dask_verify_chain` as
:func:`~replaykit.verify_chain`'s ``engine="dask"`` implementation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..engine import (
    DEFAULT_PARTITION_EVENTS,
    Partition,
    concat_frames,
    implements,
    require_dask,
    run_partitions,
    source_partitions,
)
from ..eventlog.log import EventLog
from ..schema import empty_events
from .problems import PROBLEM_KINDS
from .verify import _normalise_heads, verify_chain

__all__ = ["dask_verify_chain"]


def _verify_part(part: Partition, data: Any, heads: pd.DataFrame | None
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    log = part.load(data)
    t = log.table
    keys = pd.DataFrame({c: pc.cast(t.column(c), pa.string()).to_numpy(
        zero_copy_only=False) for c in ("tenant_id", "run_id")}).drop_duplicates()
    mine = None
    if heads is not None and len(heads):
        runs = set(keys["run_id"])
        pairs = set(zip(keys["tenant_id"], keys["run_id"], strict=True))
        tn, rn = heads["tenant_id"].to_numpy(object), heads["run_id"].to_numpy(object)
        ok = np.array([(r in runs) if t_ is None else ((t_, r) in pairs)
                       for t_, r in zip(tn, rn, strict=True)], dtype=bool)
        # a partition holding no anchored run: no heads to check here (an empty frame
        # would be an anchor set that anchors nothing, which verify_chain refuses)
        mine = heads[ok] if ok.any() else None
    return verify_chain(log, mine), keys


@implements(verify_chain, "dask")
def dask_verify_chain(source: Any, expected_heads: Any = None, *, client: Any = None,
                      partition_events: int = DEFAULT_PARTITION_EVENTS,
                      progress: bool | None = None) -> pd.DataFrame:
    """``rk.verify_chain(source, engine="dask")``: the local result, computed per partition.

    Anchored heads are checked in the partition that holds their run; heads of runs in no
    partition are reported as ``head_mismatch`` exactly as the local engine does.

    Raises:
        MissingExtraError: Dask is not installed.
        EngineError: a partition failed (named), or dataset files split a run.
        TypeError / ValueError: as :func:`replaykit.verify_chain`.
    """
    require_dask()
    heads = None if expected_heads is None else _normalise_heads(expected_heads)
    parts, data = source_partitions(source, partition_events)
    res = run_partitions(_verify_part, parts, data=data, args=(heads,), client=client,
                         desc="verify_chain", progress=progress)
    frames = [r[0] for r in res]
    if heads is not None and len(heads):
        keys = pd.concat([r[1] for r in res], ignore_index=True) if res else \
            pd.DataFrame({"tenant_id": [], "run_id": []})
        runs = set(keys["run_id"])
        pairs = set(zip(keys["tenant_id"], keys["run_id"], strict=True))
        seen = np.array([(r in runs) if t is None else ((t, r) in pairs) for t, r in zip(
            heads["tenant_id"].to_numpy(object), heads["run_id"].to_numpy(object),
            strict=True)], dtype=bool)
        if (~seen).any():
            frames.append(verify_chain(EventLog(empty_events()), heads[~seen]))
    df = concat_frames(frames) if frames else verify_chain(EventLog(empty_events()))
    if len(df):
        rank = {k: i for i, k in enumerate(PROBLEM_KINDS)}
        df = df.assign(_k=df["kind"].map(rank)).sort_values(
            ["tenant_id", "run_id", "seq", "_k"], kind="stable", na_position="last")
        df = df.drop(columns="_k").reset_index(drop=True)
    return df
