"""Best-effort replays of whole cohorts: :class:`ReplayBatch` and :func:`replay_runs` (what
:meth:`Cohorts.replay <replaykit.cohorts.Cohorts.replay>` runs): every selected run replayed
under its branch, failures kept as rows, metrics and cache reads measured column-wise
afterwards."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..eventlog.log import EventLog, concat
from ..fold.cache import _contains_many
from ..tenancy import scope_extras
from ._measures import _runs_index, _str

__all__ = ["ReplayBatch", "replay_runs"]


class ReplayBatch:
    """Replays of many runs: one row per base run in :attr:`runs`, all replayed events in
    :attr:`events`.

    ``runs`` columns: tenant_id, run_id, cohort, status (``completed``/``paused``/``failed``
    from the replay, ``error`` when the replay raised), error (the exception, ``Type: message``),
    replay_run_id, cache_reads / cache_hits / live_fallbacks (re-driven events carrying a
    ``cache_key``, how many the cache holds, how many fall back to live under best-effort;
    ``<NA>`` without a cache), and every metric of :func:`replaykit.compare` (``<NA>`` for
    runs that raised). ``live_fallbacks`` is the total.
    """

    def __init__(self, runs: pd.DataFrame, events: EventLog, cache_mode: str | None) -> None:
        self.runs = runs
        self.events = events
        self.cache_mode = cache_mode

    @property
    def live_fallbacks(self) -> int:
        """Total cache reads served live (best-effort misses) across every replay."""
        return int(self.runs["live_fallbacks"].fillna(0).sum())

    @property
    def errors(self) -> int:
        """Runs whose replay raised (their rows carry the error)."""
        return int((self.runs["status"] == "error").sum())

    def status_counts(self) -> dict[str, int]:
        """Runs per replay status."""
        return {str(k): int(v) for k, v in self.runs["status"].value_counts().items()}

    def __repr__(self) -> str:
        return (f"ReplayBatch(runs={len(self.runs)}, statuses={self.status_counts()}, "
                f"live_fallbacks={self.live_fallbacks})")

    def _repr_html_(self) -> str:
        from .._base.display import summary_html

        return summary_html(
            "Cohort replays",
            {"runs": len(self.runs), "live fallbacks": self.live_fallbacks, "errors": self.errors},
            badges=[f"{k}: {v}" for k, v in self.status_counts().items()],
            table=self.runs,
        )


def _default_branch(base: EventLog, tenant_id: str, run_id: str) -> Any:
    from ..branch import Branch

    first = int(base.table.column("seq")[0].as_py())
    return Branch(base=base, run_id=run_id, tenant_id=tenant_id, checkpoint=first,
                  name="cohort-replay")


def replay_runs(log: EventLog, frame: pd.DataFrame, labels: Sequence[str], cache: Any,
                cache_mode: str, branch: Any = None, *,
                cohort: str | Sequence[str] | None = None, model_policy: str | None = None,
                tool_policy: str | None = None, fixtures: Any = None,
                limit: int | None = None, progress: bool | None = None,
                **replay_kwargs: Any) -> ReplayBatch:
    """Replay the runs of ``frame`` (a cohorts' runs frame over ``log``, labelled with
    ``labels``): see :meth:`replaykit.cohorts.Cohorts.replay`, which calls it.

    Raises:
        KeyError: ``cohort`` names no cohort.
        TypeError: a keyword argument that :func:`replaykit.replay` does not take.
    """
    import inspect

    from ..branch import compare, replay
    from ..branch.vocab import EXACT_MODEL_POLICIES, EXACT_TOOL_POLICIES
    from ..io._common import Progress

    try:  # a misspelt keyword must fail here, not once per run inside the batch
        inspect.signature(replay).bind_partial(None, **replay_kwargs)
    except TypeError as exc:
        raise TypeError(f"replay() got an unexpected argument: {exc}") from None
    df = frame
    t = log.table
    _, starts = _runs_index(t)
    lens = np.diff(np.r_[starts, t.num_rows]) if len(starts) else np.zeros(0, np.int64)
    sel = np.ones(len(df), dtype=bool)
    if cohort is not None:
        wanted = [cohort] if isinstance(cohort, str) else list(cohort)
        unknown = [c for c in wanted if c not in set(labels)]
        if unknown:
            raise KeyError(f"no cohort {unknown}; cohorts: {labels}")
        sel &= df["cohort"].isin(wanted).to_numpy()
    todo = np.flatnonzero(sel)
    if limit is not None:
        todo = todo[:limit]
    make = branch if branch is not None else _default_branch
    # each replay reads the cache under the cohorts' locked read mode
    read_kw: dict[str, Any] = {}
    if cache is not None:
        read_kw = {k: v for k, v in (("cache", cache), ("cache_mode", cache_mode))
                   if k not in replay_kwargs}
    # each run's header row (project id, ...) and the side tables travel with its slice
    hdr = log.runs
    hdr_at: dict[tuple[str, str], int] = {}
    if hdr.num_rows:
        for j, key in enumerate(zip(_str(hdr.column("tenant_id")).tolist(),
                                    _str(hdr.column("run_id")).tolist(), strict=True)):
            hdr_at.setdefault(key, j)
    rows: list[dict[str, Any]] = []
    logs: list[EventLog] = []
    bar = Progress(len(todo), desc="replay", unit="run", enabled=progress)
    try:
        for i in todo.tolist():
            tenant, run = str(df.at[i, "tenant_id"]), str(df.at[i, "run_id"])
            row: dict[str, Any] = {"tenant_id": tenant, "run_id": run,
                                   "cohort": df.at[i, "cohort"], "status": "error",
                                   "error": None, "replay_run_id": None,
                                   "exact_policies": False}
            try:
                hj = hdr_at.get((tenant, run))
                base = EventLog(t.slice(int(starts[i]), int(lens[i])), sort=False,
                                runs=hdr.slice(hj, 1) if hj is not None else None,
                                extras=scope_extras(log.extras, tenants=[tenant],
                                                    run_ids=[run]))
                br = make(base, tenant, run)
                res = replay(br, model_policy=model_policy, tool_policy=tool_policy,
                             fixtures=fixtures, **read_kw, **replay_kwargs)
                row.update(status=res.status, error=res.error, replay_run_id=res.run_id,
                           exact_policies=(res.model_policy in EXACT_MODEL_POLICIES
                                           and res.tool_policy in EXACT_TOOL_POLICIES))
                if len(res.events):
                    logs.append(res.events)
                else:
                    row.update(status="error", error="ReplayError: the replay produced "
                               "no events")
            except Exception as exc:  # one run's failure never stops the batch
                row["error"] = f"{type(exc).__name__}: {exc}"
            rows.append(row)
            bar.update(1)
    finally:
        bar.close()
    runs = pd.DataFrame(rows, columns=["tenant_id", "run_id", "cohort", "status", "error",
                                       "replay_run_id", "exact_policies"])
    events = concat(logs)
    ok = runs["status"] != "error"
    if ok.any():
        pairs = runs.loc[ok, ["tenant_id", "run_id", "replay_run_id", "status",
                              "exact_policies"]].rename(columns={"run_id": "base_run_id"})
        met = compare(log, events, pairs.reset_index(drop=True))
        met = met.drop(columns=["status", "tenant_id"]).rename(
            columns={"base_run_id": "run_id"})
        met["tenant_id"] = pairs["tenant_id"].to_numpy()
        runs = runs.merge(met.drop(columns=["replay_run_id"]), on=["tenant_id", "run_id"],
                          how="left")
    else:
        from ..branch.compare import COMPARE_COLUMNS as CC

        for c in CC[4:]:
            if c not in runs:
                runs[c] = pd.NA
    # cache reads of the re-driven (non-inherited) replayed events, column-wise
    runs["cache_reads"] = pd.array([pd.NA] * len(runs), dtype="Int64")
    runs["cache_hits"] = pd.array([pd.NA] * len(runs), dtype="Int64")
    runs["live_fallbacks"] = pd.array([pd.NA] * len(runs), dtype="Int64")
    if cache is not None and events.table.num_rows:
        et = events.table
        m = pc.and_(pc.is_valid(et.column("cache_key")), pc.invert(et.column("inherited")))
        k = et.filter(m)
        keys = pc.cast(k.column("cache_key"), pa.string()).combine_chunks()
        hit = _contains_many(cache, keys) if len(keys) else np.zeros(0, bool)
        kr = pd.DataFrame({"replay_run_id": _str(k.column("run_id")), "hit": hit})
        agg = kr.groupby("replay_run_id")["hit"].agg(["size", "sum"])
        reads = runs["replay_run_id"].map(agg["size"])
        hits = runs["replay_run_id"].map(agg["sum"])
        has = ok.to_numpy()
        runs.loc[has, "cache_reads"] = reads[has].fillna(0).astype("int64").to_numpy()
        runs.loc[has, "cache_hits"] = hits[has].fillna(0).astype("int64").to_numpy()
        lf = runs["cache_reads"] - runs["cache_hits"]
        runs["live_fallbacks"] = lf if cache_mode == "best-effort" \
            else lf.where(lf.isna(), 0)
    runs = runs.astype({"tenant_id": "string", "run_id": "string", "cohort": "string",
                        "status": "string", "error": "string",
                        "replay_run_id": "string"})
    return ReplayBatch(runs, events, cache_mode if cache is not None else None)
