"""The engine: runs per-partition kernels over run-aligned partitions (locally or on Dask).

Runs are independent, so a per-run computation can run one run-aligned partition at a time.
The engine knows partitions (:func:`partitions`, :func:`write_partitioned`,
:class:`FileIndex`), scheduling, progress, resume and errors (:func:`run_partitions`,
:func:`run_to_parquet`, :class:`EngineError`) -- and nothing about what runs on it: fold,
verify_chain, compare and cohorts each pass their own kernel and combine step down
(``fold/_dask.py``, ``_integrity_dask.py``, ``branch/_dask.py``, ``cohorts/_dask.py``) and
register their ``engine="dask"`` implementation with :func:`implements`; the public
functions hand over with :func:`dispatch`. Nothing here imports them.

Importing this package does not import Dask; only calling a Dask entry point does
(:class:`~replaykit.MissingExtraError` without it). See docs/scaling.md and
docs/architecture.md.
"""

from __future__ import annotations

from ._parts import (
    DEFAULT_PARTITION_EVENTS,
    EngineError,
    FileIndex,
    Partition,
    PartitionSource,
    file_index,
    is_partition_source,
    partitions,
    write_partitioned,
)
from ._parts import _canonical as canonical_events
from ._runner import (
    ENGINES,
    Kernel,
    check_engine,
    concat_frames,
    dask_partitions,
    default_client,
    delayed_parts,
    dispatch,
    implements,
    is_dask_dataframe,
    require_dask,
    run_partitions,
    run_to_parquet,
    source_partitions,
)

__all__ = [
    "DEFAULT_PARTITION_EVENTS",
    "ENGINES",
    "EngineError",
    "FileIndex",
    "Kernel",
    "Partition",
    "PartitionSource",
    "canonical_events",
    "check_engine",
    "concat_frames",
    "dask_partitions",
    "default_client",
    "delayed_parts",
    "dispatch",
    "file_index",
    "implements",
    "is_dask_dataframe",
    "is_partition_source",
    "partitions",
    "require_dask",
    "run_partitions",
    "run_to_parquet",
    "source_partitions",
    "write_partitioned",
]
