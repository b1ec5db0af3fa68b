"""``rk.fold(..., engine="dask")``: the fold kernels and their combine steps.

The engine (:mod:`replaykit.engine`) maps these kernels over run-aligned partitions and knows
nothing about folds; this module registers :func:`dask_fold` as :func:`~replaykit.fold`'s
``engine="dask"`` implementation.
"""

from __future__ import annotations

import os
from typing import Any

import pandas as pd

from .._base.json import canonical_json
from ..engine import (
    DEFAULT_PARTITION_EVENTS,
    Partition,
    concat_frames,
    implements,
    is_partition_source,
    require_dask,
    run_partitions,
    run_to_parquet,
    source_partitions,
)
from ..eventlog.dataset import read_parquet
from ..eventlog.log import EventLog
from .frame import _require_tenant, fold
from .projection import resolve_projections

__all__ = ["DaskStateFrame", "dask_fold", "fold_to_parquet"]


def _fold_part(part: Partition, data: Any, projections: Any, state_hash: bool, what: str
               ) -> pd.DataFrame:
    sf = fold(part.load(data), projections, state_hash=state_hash)
    if what == "steps":
        return sf.steps_df()
    return sf.final(with_state=what == "final")


class DaskStateFrame:
    """A fold mapped over run-aligned partitions: what ``rk.fold(..., engine="dask")``
    returns. Nothing runs until you ask for a result.

    :meth:`final` and :meth:`steps_df` compute on the cluster and collect (equal to the local
    :class:`~replaykit.StateFrame`'s); :meth:`to_parquet` streams results to Parquet without
    collecting them (out-of-core); :meth:`at` folds just one run locally.

    Example:
        >>> sf = rk.fold("events/", rk.agent(), engine="dask", client=client)  # doctest: +SKIP
        >>> sf.final()  # doctest: +SKIP
        >>> sf.to_parquet("folded/")  # doctest: +SKIP
    """

    def __init__(self, source: Any, projections: Any, *, state_hash: bool = True,
                 client: Any = None, partition_events: int = DEFAULT_PARTITION_EVENTS,
                 progress: bool | None = None) -> None:
        resolve_projections(projections)  # bad projections fail here, not on a worker
        self.source = source
        self.projections = projections
        self.state_hash = state_hash
        self.client = client
        self.progress = progress
        self.partition_events = partition_events
        self.partitions, self._data = source_partitions(source, partition_events)

    def __repr__(self) -> str:
        return f"DaskStateFrame({len(self.partitions)} partitions of {self.source!r})"

    def _collect(self, what: str) -> pd.DataFrame:
        if not self.partitions:  # e.g. a Dataset view no file can match: no run, same columns
            from ..schema import empty_events

            empty = Partition(name="partition 0", index=0, table=empty_events())
            return _fold_part(empty, None, self.projections, self.state_hash, what)
        return run_partitions(_fold_part, self.partitions, data=self._data,
                              args=(self.projections, self.state_hash, what),
                              combine=concat_frames, client=self.client, desc="fold",
                              progress=self.progress)

    def final(self, *, with_state: bool = True) -> pd.DataFrame:
        """One row per run, as :meth:`StateFrame.final` (collected to the client).

        Raises:
            EngineError: a partition failed (named in the error).
        """
        return self._collect("final" if with_state else "final_nostate")

    def steps_df(self) -> pd.DataFrame:
        """One row per event, as :meth:`StateFrame.steps_df` (collected: mind the size).

        Raises:
            EngineError: a partition failed (named in the error).
        """
        return self._collect("steps")

    def to_parquet(self, path: str | os.PathLike[str], *, what: str = "final") -> pd.DataFrame:
        """Fold partition by partition, writing results to ``path`` (see
        :func:`fold_to_parquet`)."""
        return fold_to_parquet(self.source, self.projections, path, what=what,
                               state_hash=self.state_hash, client=self.client,
                               progress=self.progress, partition_events=self.partition_events)

    def at(self, run_id: str, seq: int | None, *, tenant_id: str) -> Any:
        """The state of one run after ``seq``: reads and folds only that run, locally.

        Raises:
            TypeError: ``tenant_id`` is None or empty. ReplayError: no such run.
            NotImplementedError: the source is a dask.dataframe.
        """
        _require_tenant(tenant_id)
        if isinstance(self.source, EventLog):
            log = self.source.filter(tenant_id=tenant_id, run_ids=run_id)
        elif isinstance(self.source, (str, os.PathLike)):
            log = read_parquet(self.source, tenant_id=tenant_id, run_ids=run_id)
        elif is_partition_source(self.source):  # a Dataset view: its filters apply
            log = self.source.filter(tenant_id=tenant_id, runs=[run_id]).load()
        else:
            raise NotImplementedError("at() on a dask.dataframe source: fold the run locally")
        return fold(log, self.projections, state_hash=self.state_hash).at(
            run_id, seq, tenant_id=tenant_id)


@implements(fold, "dask")
def dask_fold(source: Any, projections: Any, *, state_hash: bool = True, client: Any = None,
              partition_events: int = DEFAULT_PARTITION_EVENTS,
              progress: bool | None = None) -> DaskStateFrame:
    """``rk.fold(source, projections, engine="dask")``: a lazy :class:`DaskStateFrame`.

    ``source``: a Parquet dataset path (EventLog.to_parquet / write_partitioned layout), a
    :class:`replaykit.ingest.Dataset` view (its filters pushed into each file's scan), an
    EventLog (cut at run boundaries into ~``partition_events``-event partitions) or a
    dask.dataframe in the canonical schema whose partitions hold whole runs.

    Raises:
        MissingExtraError: Dask is not installed.
        EngineError: dataset files split a run.
    """
    require_dask()
    return DaskStateFrame(source, projections, state_hash=state_hash, client=client,
                          partition_events=partition_events, progress=progress)


def _json_objects(df: pd.DataFrame) -> pd.DataFrame:
    """Object columns (states, collections, reducer values) as canonical JSON text."""
    df = df.copy()
    for c in df.columns:
        if df[c].dtype == object:
            df[c] = pd.array([None if v is None else canonical_json(v) for v in df[c]],
                             dtype="string")
    return df


def _fold_out_part(part: Partition, data: Any, projections: Any, state_hash: bool, what: str
                   ) -> tuple[pd.DataFrame, int]:
    """The out-of-core kernel: a partition's folded rows (objects as canonical JSON) and
    the number of events it read; the engine writes them (:func:`run_to_parquet`)."""
    log = part.load(data)
    sf = fold(log, projections, state_hash=state_hash)
    df = sf.steps_df() if what == "steps" else sf.final(with_state=True)
    return _json_objects(df), len(log)


def fold_to_parquet(source: Any, projections: Any, path: str | os.PathLike[str], *,
                    what: str = "final", state_hash: bool = True, client: Any = None,
                    progress: bool | None = None,
                    partition_events: int = DEFAULT_PARTITION_EVENTS) -> pd.DataFrame:
    """Out-of-core fold: fold each partition on a worker and write its result to Parquet.

    Nothing is collected: each task reads one run-aligned partition, folds it, writes
    ``path/<partition>.parquet`` (``what="final"``: one row per run with ``state`` as
    canonical JSON; ``"steps"``: one row per event) and then a marker
    ``path/_done/<partition>.json``. A re-run skips partitions whose marker and output exist,
    so after a failure it resumes where it stopped. Read the result with
    ``pd.read_parquet(path)`` (hive layout: ``tenant_id`` comes back as a column).

    Returns:
        One row per partition: partition, output, events, rows, seconds, status
        (``"written"`` now or ``"skipped"``, done by an earlier run).

    Example:
        >>> from replaykit.fold import fold_to_parquet  # doctest: +SKIP
        >>> fold_to_parquet("events/", rk.agent(), "folded/", client=client)  # doctest: +SKIP

    Raises:
        MissingExtraError: Dask is not installed.
        ValueError: ``what`` is not "final" or "steps".
        EngineError: a partition failed (raised after the others finished; named in the
            error), or the dataset's files split a run.
    """
    if what not in ("final", "steps"):
        raise ValueError(f'what must be "final" or "steps", got {what!r}')
    require_dask()
    resolve_projections(projections)
    parts, data = source_partitions(source, partition_events)
    return run_to_parquet(_fold_out_part, parts, path, args=(projections, state_hash, what),
                          data=data, client=client, desc="fold", progress=progress)
