"""Row checks and quarantine reports: the tenant filter, the column-wise checks of a block's
rows (tenant, chat, sequence number, event type, ``created_at``) and each bad row's report.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._base.json import canonical_json
from ...errors import LoadError
from ...tenancy import bad_tenant_mask, check_tenant_ids, tenant_id_problem
from .._common import (
    EPOCH_MS_MAX,
    EPOCH_MS_MIN,
    Quarantine,
    times_in_years,
)
from ._shapes import _FIX_TENANT, _STR, _Counts, _Part


def _tenant_filter(tenant_id: object) -> frozenset[str] | None:
    if tenant_id is None:
        return None
    return frozenset(check_tenant_ids(tenant_id, source="read_pleach(tenant_id=...)"))


# ----------------------------------------------------------------------------- robust path
def _bad(
    quarantine: Quarantine,
    source: str,
    line: int,
    reason: str,
    detail: str,
    raw: bytes | str | None,
    field_name: str | None = None,
    fix: str | None = None,
    owner: tuple[Any, Any] = (None, None),
) -> None:
    tenant, run = owner
    if tenant_id_problem(tenant) is not None:  # a row whose tenant cannot be read: no owner
        tenant, run = None, None
    quarantine.bad(
        LoadError(source=source, line=line, reason=reason, detail=detail, field=field_name,
                  fix=fix),
        raw, tenant_id=tenant, run_id=run if isinstance(run, str) and run else None,
    )


def _scope_quarantine(quarantine: Quarantine, tenants: frozenset[str] | None) -> dict[str, int]:
    """With a tenant filter, drop quarantined rows that are not the requested tenants' (their
    tenant is another one, or could not be read): source -> how many were dropped."""
    if tenants is None:
        return {}
    dropped: dict[str, int] = {}
    kept = []
    for rec in quarantine.rows:
        if rec.get("tenant_id") in tenants:
            kept.append(rec)
        else:
            dropped[rec["source"]] = dropped.get(rec["source"], 0) + 1
    quarantine.rows[:] = kept
    return dropped


# ----------------------------------------------------------------------------- row checks
def _check_rows(
    part: _Part,
    source: str,
    quarantine: Quarantine,
    tenants: frozenset[str] | None,
    counts: _Counts,
) -> _Part | None:
    """Apply the tenant filter and the column-wise row checks; report bad rows."""
    env = part.env
    n = env.num_rows
    if n == 0:
        return None
    tenant = env.column("tenant_id").combine_chunks()
    keep = np.ones(n, dtype=bool)
    # the one tenant-id rule, column-wise (the native core checked it, and the other
    # checks but the timestamp's, when it marks the part checked)
    bad_t = np.zeros(n, dtype=bool) if part.checked else bad_tenant_mask(tenant)
    if tenants is not None:
        other = ~bad_t & np.asarray(
            pc.fill_null(pc.invert(pc.is_in(tenant, pa.array(sorted(tenants)))), False))
        counts.filtered_out += int(other.sum())
        keep &= ~other
    problems: list[tuple[np.ndarray, str, str, str]] = []

    def empty_or_null(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
        if part.checked:
            return np.zeros(n, dtype=bool)
        return np.asarray(pc.fill_null(pc.equal(pc.utf8_length(col), 0), True))

    missing_t = empty_or_null(tenant)
    problems.append((missing_t, "missing_tenant", "tenant_id", "must be a non-empty string"))
    problems.append(
        (bad_t & ~missing_t, "bad_tenant", "tenant_id",
         "breaks the tenant-id rule (at most 256 characters, no control characters)")
    )
    problems.append(
        (empty_or_null(env.column("chat_id")), "missing_field", "chat_id",
         "must be a non-empty string")
    )
    seq = env.column("sequence_number")
    problems.append(
        (np.zeros(n, dtype=bool) if part.checked
         else np.asarray(pc.fill_null(pc.less(seq, 0), True)), "bad_seq", "sequence_number",
         "must be an integer >= 0")
    )
    problems.append(
        (empty_or_null(env.column("event_type")), "unknown_event", "event_type",
         "must be a non-empty string (the event type)")
    )
    ts, bad_ts = _parse_created(part.created_at)
    problems.append(
        (bad_ts, "bad_timestamp", "created_at",
         "must be ISO-8601 text with a zone (e.g. 2026-01-01T00:00:00Z) or epoch milliseconds, "
         "within years 1 to 9999 (UTC)")
    )
    bad_any = np.zeros(n, dtype=bool)
    first_reason: list[tuple[int, str, str, str]] = []
    for mask, reason, fld, detail in problems:
        m = mask & keep & ~bad_any
        for i in np.flatnonzero(m).tolist():
            first_reason.append((i, reason, fld, detail))
        bad_any |= m
    for i, reason, fld, detail in sorted(first_reason):
        value = _value_at(env, part.created_at, fld, i)
        _bad(quarantine, source, int(part.line[i]), reason, f"{detail}, got {value!r}",
             _raw_row(part, i), fld,
             _FIX_TENANT if reason in ("missing_tenant", "bad_tenant") else None,
             owner=(tenant[i].as_py(), env.column("chat_id")[i].as_py()))
    keep &= ~bad_any
    extra = (part.args, part.hashes, part.text)
    if keep.all():
        return _Part(env, ts, part.payload, part.typed, part.line, None, *extra,
                     native=part.native)
    idx = pa.array(np.flatnonzero(keep))
    args, hashes, text = (None if a is None else a.take(idx) for a in extra)
    return _Part(
        env.take(idx), ts.take(idx), part.payload.take(idx), part.typed.take(idx),
        part.line[keep], None, args, hashes, text, native=part.native,
    )


def _created_value(created: pa.Array, i: int) -> Any:
    """created_at of row ``i`` as Python; a time no datetime can show (a Parquet timestamp
    outside years 1..9999) as its raw integer, named with its type."""
    try:
        return created[i].as_py()
    except (OverflowError, ValueError):
        return f"{created.type} {created.cast(pa.int64())[i].as_py()}"


def _value_at(env: pa.Table, created: pa.Array, fld: str, i: int) -> Any:
    if fld == "created_at":
        return _created_value(created, i)
    return env.column(fld)[i].as_py()


def _raw_row(part: _Part, i: int) -> str:
    row = {name: part.env.column(name)[i].as_py() for name in part.env.column_names}
    ts = _created_value(part.created_at, i)
    row["created_at"] = ts if not hasattr(ts, "isoformat") else ts.isoformat()
    return canonical_json(row)[:-1] + ',"payload":' + part.payload[i].as_py() + "}"


_EPOCH_MS = re.compile(r"^-?[0-9]+$")


def _in_years(ts: pa.Array, bad: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    ts, out = times_in_years(ts)
    return ts, bad | out


def _parse_created(values: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """created_at -> timestamp[us, UTC]; also a mask of values that could not be parsed or
    lie outside years 1 to 9999."""
    target = pa.timestamp("us", tz="UTC")
    n = len(values)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_timestamp(values.type):
        if values.type.tz is None:
            values = pc.assume_timezone(values, "UTC")
        return _in_years(values.cast(target), np.zeros(n, dtype=bool))
    if pa.types.is_integer(values.type):
        out_of_range = pc.or_(pc.less(values, EPOCH_MS_MIN), pc.greater(values, EPOCH_MS_MAX))
        bad = np.asarray(pc.fill_null(out_of_range, False))
        if bad.any():  # beyond years 1..9999: bad_timestamp, never an overflowed time
            values = pc.if_else(pa.array(bad), pa.scalar(None, values.type), values)
        us = pc.multiply_checked(values.cast(pa.int64()), 1000)
        return us.cast(target), bad
    values = values.cast(_STR)
    try:
        return _in_years(values.cast(target), np.zeros(n, dtype=bool))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    # mixed: epoch-ms digit strings, ISO text with a zone, ISO text without one (UTC)
    out: list[Any] = [None] * n
    bad = np.zeros(n, dtype=bool)
    import datetime as _dt

    for i, v in enumerate(values.to_pylist()):  # only for files mixing representations
        if v is None:
            continue
        try:
            if _EPOCH_MS.match(v):
                ms = int(v)
                if not EPOCH_MS_MIN <= ms <= EPOCH_MS_MAX:
                    raise ValueError("epoch milliseconds beyond years 1..9999")
                out[i] = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(
                    milliseconds=ms)
            else:
                d = _dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
                out[i] = d if d.tzinfo else d.replace(tzinfo=_dt.UTC)
        except (ValueError, OverflowError, OSError):
            bad[i] = True
    return _in_years(pa.array(out, type=target), bad)
