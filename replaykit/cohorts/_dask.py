"""``rk.cohorts(..., engine="dask")``: per-run cohort measures computed per partition.

The engine (:mod:`replaykit.engine`) maps the kernel over run-aligned partitions and knows
nothing about cohorts; this module registers :func:`dask_cohorts` as
:func:`~replaykit.cohorts`'s ``engine="dask"`` implementation.
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
    implements,
    require_dask,
    run_partitions,
    source_partitions,
)
from ..eventlog.log import EventLog
from ..schema import empty_events
from ._core import Cohorts, cohorts
from .calendar import SemesterCalendar

__all__ = ["dask_cohorts"]


def _cohort_part(part: Partition, data: Any, kw: dict[str, Any], tenants: list[str] | None,
                 runs: pa.Table | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    log = part.load(data)
    if tenants is not None:
        log = log.filter(tenant_id=tenants)
    meta = part.run_meta(log)
    if meta is None and runs is not None and runs.num_rows:  # an in-memory EventLog source
        ids = pc.unique(pc.cast(log.table.column("run_id"), pa.string()))
        meta = runs.filter(pc.is_in(pc.cast(runs.column("run_id"), pa.string()), ids))
    log = EventLog(log.table, runs=meta, sort=False)
    cs = Cohorts(log, **kw)
    return cs._frame(), cs._tool_counts()


@implements(cohorts, "dask")
def dask_cohorts(source: Any, by: Any = "semester", *, tenant_id: Any = None,
                 calendar: Any = None, cache: Any = None, cache_mode: str = "best-effort",
                 pair_on: Any = "prompt", client: Any = None,
                 partition_events: int = DEFAULT_PARTITION_EVENTS,
                 progress: bool | None = None) -> Any:
    """``rk.cohorts(source, by, engine="dask")``: per-run measures computed per partition.

    Returns a :class:`~replaykit.Cohorts` whose ``runs_df``, ``labels``, ``summary()`` (without
    replays) and ``tool_mix_df`` equal the local engine's; replay-based methods need the local
    engine (its ``log`` holds no events). ``by`` must be per run (a column, header attribute,
    payload field, "semester", or a callable that labels each row on its own).

    Raises:
        MissingExtraError: Dask is not installed.
        EngineError: a partition failed (named), e.g. ``by`` names nothing in it.
        KeyError: none of the given tenants has runs.
    """
    require_dask()
    tenants = None
    if tenant_id is not None:
        tenants = [tenant_id] if isinstance(tenant_id, str) else list(tenant_id)
        if not tenants or not all(isinstance(v, str) and v for v in tenants):
            raise TypeError(f"tenant_id must be a non-empty string or list of them, got "
                            f"{tenant_id!r}")
    if calendar is not None and not isinstance(calendar, SemesterCalendar):
        calendar = SemesterCalendar(terms=tuple(calendar))
    kw = {"by": by, "calendar": calendar, "cache": cache, "cache_mode": cache_mode,
          "pair_on": pair_on}
    parts, data = source_partitions(source, partition_events)
    if tenants is not None and parts and parts[0].path is not None:
        keep = [i for i, p in enumerate(parts) if p.tenant_id in tenants]
        parts = [parts[i] for i in keep]
    runs_meta = source.runs if isinstance(source, EventLog) else None
    res = run_partitions(_cohort_part, parts, data=data, args=(kw, tenants, runs_meta),
                         client=client, desc="cohorts", progress=progress)
    if tenants is not None and not sum(len(r[0]) for r in res):
        raise KeyError(f"tenant(s) {tenants} not in the source")
    # a partition without a row of the view (its filters pushed into the scan) gives frames
    # of no run, whose dtypes would widen the others' in the concatenation
    res = [r for r in res if len(r[0])]
    if not res:  # nothing matched: the frames of no run
        empty = Cohorts(EventLog(empty_events()), **kw)
        res = [(empty._frame(), empty._tool_counts())]
    runs = pd.concat([r[0] for r in res], ignore_index=True)
    tools = pd.concat([r[1] for r in res], ignore_index=True).fillna(0).astype(np.int64)
    tools = tools[sorted(tools.columns)] if len(tools.columns) else tools
    order = np.lexsort((runs["run_id"].astype(str).to_numpy(),
                        runs["tenant_id"].astype(str).to_numpy()))
    runs = runs.iloc[order].reset_index(drop=True)
    tools = tools.iloc[order].reset_index(drop=True)
    cs = Cohorts(EventLog(empty_events()), by, calendar=calendar, cache=cache,
                 cache_mode=cache_mode, pair_on=pair_on)  # type: ignore[arg-type]
    cs._runs = runs
    cs._tools = tools
    return cs
