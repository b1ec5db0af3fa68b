"""Determinism gate, fork-from-prefix, and multi-tenant aggregation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .._base.json import canonical_json
from ..errors import ReplayError
from ..eventlog.log import EventLog
from ..schema import EVENTS_SCHEMA, KINDS, events_table
from ._frozen import FrozenDict
from .engine import Columns, fold_field
from .frame import StateFrame, _require_tenant
from .handle import Done, open_replay
from .projection import agent, resolve_projections

__all__ = ["Verdict", "aggregate", "check_determinism", "fork"]


@dataclass(frozen=True)
class Verdict:
    """Result of :func:`check_determinism`.

    Attributes:
        deterministic: every handle produced byte-identical canonical JSON at every step.
        steps: how many steps the walk took (the longest walk when they differ).
        first_divergence_at: 1-based step number where states first differ (None if none).
        first_divergence_seq: the seq of that step (None if none).
    """

    deterministic: bool
    steps: int
    first_divergence_at: int | None = None
    first_divergence_seq: int | None = None

    def _repr_html_(self) -> str:
        from .._base.display import verdict_html

        return verdict_html(self)


def check_determinism(
    log: EventLog,
    run_id: str,
    *,
    tenant_id: str,
    n: int = 3,
    projections: Any = None,
    from_seq: int | None = None,
    up_to_seq: int | None = None,
) -> Verdict:
    """Open ``n`` independent handles, walk each to the end, report the first differing step.

    States are compared as canonical JSON bytes. A pure projection always gives
    ``Verdict(deterministic=True, ...)``; a projection that reads a clock, a random number
    or global state is caught at the step where it first changes the state.

    >>> rk.check_determinism(log, "chat-1", tenant_id="acme")  # doctest: +SKIP
    Verdict(deterministic=True, steps=42, first_divergence_at=None, first_divergence_seq=None)

    Raises:
        TypeError: missing tenant_id; ValueError: ``n < 2``; ReplayError: as
        :func:`replaykit.open_replay`.
    """
    _require_tenant(tenant_id)
    if n < 2:
        raise ValueError(f"check_determinism needs n >= 2 handles, got {n}")
    walks: list[list[tuple[int, str]]] = []
    for _ in range(n):
        with open_replay(log, run_id, tenant_id=tenant_id, from_seq=from_seq,
                         up_to_seq=up_to_seq, projections=projections or agent(),
                         cache=None) as h:
            walk = [(-1, canonical_json(h.state))]
            while True:
                res = h.step()
                if isinstance(res, Done):
                    break
                walk.append((res.seq, canonical_json(res.state)))
            walks.append(walk)
    longest = max(len(w) for w in walks)
    for k in range(longest):
        seen = {w[k][1] if k < len(w) else None for w in walks}
        if len(seen) > 1:
            seq = next(w[k][0] for w in walks if k < len(w))
            return Verdict(False, longest - 1, k, None if seq < 0 else seq)
    return Verdict(True, longest - 1)


def fork(
    log: EventLog,
    run_id: str,
    *,
    tenant_id: str,
    at_seq: int,
    events: Sequence[Mapping[str, Any]] = (),
    new_run_id: str | None = None,
) -> EventLog:
    """A new run: ``run_id`` up to ``at_seq`` (inclusive), then ``events`` spliced after it.

    The new run's ``parent_run_id`` is ``run_id``; copied rows have ``inherited=True``. Each
    synthetic event is a dict with at least ``type``; ``kind`` defaults to
    ``"intervention"``, ``payload`` may be a dict (stored as canonical JSON), any other
    canonical column may be given. Synthetic events get seq ``last + 1, last + 2, ...``.
    The input log is not modified (its table is the same object with the same bytes).
    Returns only the forked run (``rk.concat([log, forked])`` to combine).

    Raises:
        TypeError: missing tenant_id; ValueError: a bad synthetic event;
        ReplayError: the tenant has no such run, or no event at or before ``at_seq``.
    """
    _require_tenant(tenant_id)
    try:
        run = log.run(run_id, tenant_id=tenant_id)
    except KeyError:
        raise ReplayError(
            f"tenant {tenant_id!r} has no run {run_id!r} to fork; pass the owning tenant",
            run_id=run_id, tenant_id=tenant_id,
        ) from None
    prefix = run.window(None, at_seq).table
    if prefix.num_rows == 0:
        raise ReplayError(f"no event at or before seq {at_seq}; fork at a later seq",
                          run_id=run_id, tenant_id=tenant_id)
    last_seq = int(pc.max(prefix.column("seq")).as_py())
    synth_tag = canonical_json([dict(e) for e in events]) if events else ""
    import hashlib

    digest = hashlib.sha256(synth_tag.encode()).hexdigest()[:8]
    new_id = new_run_id or f"{run_id}~fork@{at_seq}-{digest}"
    k = prefix.num_rows
    dict_t = pa.dictionary(pa.int32(), pa.string())
    cols = {name: prefix.column(name) for name in EVENTS_SCHEMA.names}
    cols["run_id"] = pa.array([new_id] * k, pa.string()).dictionary_encode().cast(dict_t)
    cols["parent_run_id"] = pa.array([run_id] * k, pa.string()).dictionary_encode().cast(dict_t)
    cols["inherited"] = pa.array(np.ones(k, bool))
    head = pa.Table.from_arrays([cols[n].combine_chunks() if isinstance(cols[n], pa.ChunkedArray)
                                 else cols[n] for n in EVENTS_SCHEMA.names], schema=EVENTS_SCHEMA)
    tables = [head]
    if events:
        rows: dict[str, list[Any]] = {name: [] for name in EVENTS_SCHEMA.names}
        for j, ev in enumerate(events):
            if "type" not in ev or not ev["type"]:
                raise ValueError(f"synthetic event {j} needs a non-empty 'type'")
            bad = set(ev) - set(EVENTS_SCHEMA.names)
            if bad:
                raise ValueError(f"synthetic event {j} has unknown columns {sorted(bad)}")
            kind = ev.get("kind", "intervention")
            if kind not in KINDS:
                raise ValueError(f"synthetic event {j}: kind {kind!r} is not one of {KINDS}")
            payload = ev.get("payload", {})
            values = dict(ev)
            values.update(
                tenant_id=tenant_id, run_id=new_id, parent_run_id=run_id,
                seq=last_seq + 1 + j, kind=kind,
                payload=payload if isinstance(payload, str) else canonical_json(payload),
                source=ev.get("source", f"fork:{run_id}@{at_seq}"),
                is_error=bool(ev.get("is_error", False)), inherited=False,
            )
            for name in EVENTS_SCHEMA.names:
                rows[name].append(values.get(name))
        tables.append(events_table(rows, sort=False))
    table = pa.concat_tables(tables).unify_dictionaries().combine_chunks()
    runs = pa.table(
        {
            "tenant_id": [tenant_id], "run_id": [new_id], "parent_run_id": [run_id],
            "format": ["fork"], "source": [f"fork:{run_id}@{at_seq}"],
            "created_at": pa.nulls(1, pa.timestamp("us", tz="UTC")),
            "attrs": [canonical_json({"forked_from": run_id, "at_seq": at_seq,
                                      "synthetic_events": len(events)})],
        }
    )
    return EventLog(table, runs=runs)


def aggregate(
    log: EventLog,
    *,
    tenant_ids: Sequence[str],
    projections: Any = None,
    aggregation: Literal["per-tenant", "merged"] = "per-tenant",
) -> pd.DataFrame:
    """Fold the named tenants' events into per-tenant states, or one merged state.

    Each tenant's events (all its runs, ordered by run_id then seq) fold as one stream
    through ``projections``; with ``"merged"`` all named tenants fold as one stream. Only
    the named tenants' rows are read.

    Returns:
        One row per tenant (per-tenant) or one row (merged): ``tenant_id`` (for merged, the
        tenant ids joined by ","), ``runs``, ``events``, ``state`` (immutable).

    Raises:
        TypeError: ``tenant_ids`` is None/empty or holds a None/empty id.
        ValueError: unknown ``aggregation``.
    """
    if tenant_ids is None or isinstance(tenant_ids, str) or len(tenant_ids) == 0:
        raise TypeError(f"tenant_ids is required (a non-empty list of tenant ids), got "
                        f"{tenant_ids!r}")
    for t in tenant_ids:
        _require_tenant(t, "tenant_ids")
    if aggregation not in ("per-tenant", "merged"):
        raise ValueError(f"aggregation must be 'per-tenant' or 'merged', got {aggregation!r}")
    fields = resolve_projections(projections or agent())
    sub = log.filter(tenant_id=list(tenant_ids)).table
    n = sub.num_rows
    # one segment per tenant (or one for all): give every row the same run id
    group_col = (
        sub.column("tenant_id") if aggregation == "per-tenant"
        else pa.array(["*"] * n, pa.string()).dictionary_encode()
    )
    const_run = pa.array(["*"] * n, pa.string()).dictionary_encode()
    seg_table = sub.set_column(0, "tenant_id", group_col).set_column(1, "run_id", const_run)
    cols = Columns(seg_table)
    results = [fold_field(f, cols) for f in fields]
    frame = StateFrame(seg_table, fields, cols, results, None)
    zero = FrozenDict({f.name: f.out(f.init()) for f in fields})
    groups = list(tenant_ids) if aggregation == "per-tenant" else [",".join(tenant_ids)]
    seg_names = (
        seg_table.column("tenant_id").take(pa.array(cols.starts)).to_pylist()
        if aggregation == "per-tenant" else ([",".join(tenant_ids)] if n else [])
    )
    states = {name: zero for name in groups}
    events = dict.fromkeys(groups, 0)
    for s, name in enumerate(seg_names):  # one lookup per tenant
        start, end = int(cols.starts[s]), int(cols.ends[s])
        states[name] = StateFrame.state_at_row(frame, end - 1, start)
        events[name] = end - start
    runs_t = pa.table({"t": pc.cast(sub.column("tenant_id"), pa.string()),
                       "r": pc.cast(sub.column("run_id"), pa.string())})
    runs_t = runs_t.group_by(["t", "r"]).aggregate([]) if n else runs_t
    per = runs_t.group_by("t").aggregate([("r", "count")]).to_pydict() if n else {"t": [],
                                                                                    "r_count": []}
    run_counts = dict(zip(per["t"], per["r_count"], strict=False))
    if aggregation == "merged":
        run_counts = {groups[0]: sum(run_counts.values())}
    return pd.DataFrame(
        {
            "tenant_id": groups,
            "runs": pd.array([run_counts.get(g, 0) for g in groups], dtype="Int64"),
            "events": pd.array([events[g] for g in groups], dtype="Int64"),
            "state": [states[g] for g in groups],
        }
    )
