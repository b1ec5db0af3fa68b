"""Execution engines: run per-run computations partition by partition (local or Dask).

Runs are independent, so :func:`~replaykit.fold`, :func:`~replaykit.verify_chain`,
:func:`~replaykit.compare` and cohort summaries can run one run-aligned partition at a time.
``engine="dask"`` on those functions dispatches here. Importing this package does not import
Dask; only calling a Dask entry point does (:class:`~replaykit.MissingExtraError` without it).

See docs/scaling.md.
"""

from __future__ import annotations

from ._dask import (
    DaskStateFrame,
    dask_cohorts,
    dask_compare,
    dask_fold,
    dask_verify_chain,
    fold_to_parquet,
)
from ._dispatch import ENGINES
from ._parts import EngineError, Partition, partitions, write_partitioned

__all__ = [
    "ENGINES",
    "DaskStateFrame",
    "EngineError",
    "Partition",
    "dask_cohorts",
    "dask_compare",
    "dask_fold",
    "dask_verify_chain",
    "fold_to_parquet",
    "partitions",
    "write_partitioned",
]
