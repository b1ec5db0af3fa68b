"""Fold event logs into state: projections, the column-wise engine, StateFrame, replay handles.

See docs/fold.md. Public names are re-exported from :mod:`replaykit`.
"""

from __future__ import annotations

from ._dask import DaskStateFrame, dask_fold, fold_to_parquet
from ._frozen import FrozenDict, state_hash, state_json
from .cache import (
    CACHE_MODES,
    CacheBackend,
    CacheLookup,
    InMemoryCache,
    ParquetCache,
    cache_coverage,
)
from .frame import StateFrame, fold
from .handle import Done, ReplayHandle, StepResult, TurnResult, open_replay
from .ops import Verdict, aggregate, check_determinism, fork
from .projection import (
    NOTNULL,
    Projection,
    agent,
    collection,
    counter,
    from_payload,
    harness,
    last,
    maximum,
    minimum,
    on,
    projection,
    reducer,
)
from .scalar import ScalarReducer, reference_fold

__all__ = [
    "CACHE_MODES",
    "NOTNULL",
    "CacheBackend",
    "CacheLookup",
    "DaskStateFrame",
    "Done",
    "FrozenDict",
    "InMemoryCache",
    "ParquetCache",
    "Projection",
    "ReplayHandle",
    "ScalarReducer",
    "StateFrame",
    "StepResult",
    "TurnResult",
    "Verdict",
    "aggregate",
    "cache_coverage",
    "check_determinism",
    "dask_fold",
    "fork",
    "open_replay",
    "agent",
    "collection",
    "counter",
    "fold",
    "fold_to_parquet",
    "from_payload",
    "harness",
    "last",
    "maximum",
    "minimum",
    "on",
    "projection",
    "reducer",
    "reference_fold",
    "state_hash",
    "state_json",
]
