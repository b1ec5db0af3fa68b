"""pleach exports in Parquet, and Arrow tables of the same columns (:func:`events_from_arrow`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._base.json import _DIGITS_B, MAX_DEPTH, JSONDecodeError, canonical_json, loads
from ...errors import LoadError
from ...eventlog.log import EventLog
from .._common import (
    ErrorPolicy,
    Quarantine,
    check_errors_arg,
)
from ._checks import _bad, _check_rows, _scope_quarantine, _tenant_filter
from ._derive import _slim
from ._fastpath import _NONFINITE, _bracket_counts, _may_hold_nonfinite, _parse_payloads
from ._finish import _finish, _runs_table
from ._rows import _typed_from_objects
from ._shapes import _ENVELOPE_FIELDS, _REQUIRED_COLUMNS, _STR, _Counts, _Part


# ----------------------------------------------------------------------------- Parquet
def _read_parquet_file(
    path: Path,
    source: str,
    quarantine: Quarantine,
    tenants: frozenset[str] | None,
    counts: _Counts,
) -> list[_Part]:
    """A Parquet file's parts; a file that cannot be read as an export is rejected whole.

    A rejected file (not Parquet, damaged, or the wrong columns/types) is one bad row: it
    raises :class:`LoadError` under ``errors="raise"``; under quarantine it is one quarantine
    row (``line`` null) and counts as one input row, and loading goes on.
    """
    before = len(quarantine.rows)
    try:
        return list(_read_parquet(path, source, quarantine, tenants, counts))
    except LoadError as exc:
        if exc.line is not None:  # a row error under errors="raise"
            raise
        err = exc
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        err = LoadError(
            source=source, line=None, reason="bad_parquet",
            detail=f"is not a readable Parquet file ({exc})",
            fix="Re-export the file, or remove it from the input (errors=\"quarantine\" skips it).",
        )
    del quarantine.rows[before:]
    counts.input_rows, counts.filtered_out = 1, 0
    quarantine.bad(err)
    return []


def _read_parquet(
    path: Path,
    source: str,
    quarantine: Quarantine,
    tenants: frozenset[str] | None,
    counts: _Counts,
) -> Iterator[_Part]:
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    all_names = pf.schema_arrow.names
    names = set(all_names)
    twice = sorted(c for c in names if all_names.count(c) > 1)
    if twice:  # which one is the row's tenant (or seq, ...)? never guessed
        counts.input_rows += pf.metadata.num_rows
        raise LoadError(
            source=source, line=None, reason="bad_schema", field=twice[0],
            detail=f"names {all_names.count(twice[0])} columns of the Parquet file "
                   f"(duplicated names: {twice})",
            fix="Export each harness_event_log column once.",
        )
    missing = [c for c in _REQUIRED_COLUMNS if c not in names]
    if missing:
        counts.input_rows += pf.metadata.num_rows
        raise LoadError(
            source=source, line=None, reason="bad_schema",
            detail=f"Parquet file lacks harness_event_log columns {missing}",
            fix="Export tenant_id, chat_id, sequence_number, event_type and payload.",
        )
    first = 1
    for batch in pf.iter_batches(batch_size=500_000):
        batch.validate(full=True)  # e.g. text that is not UTF-8 (Parquet readers do not check)
        t = pa.Table.from_batches([batch])
        n = t.num_rows
        counts.input_rows += n
        line = first + np.arange(n, dtype=np.int64)
        first += n
        part = _part_from_arrow(t, line, source, quarantine, tenants, counts)
        if part is not None:
            yield part


def _part_from_arrow(
    t: pa.Table,
    line: np.ndarray,
    source: str,
    quarantine: Quarantine,
    tenants: frozenset[str] | None,
    counts: _Counts,
) -> _Part | None:
    """One checked, slimmed part from an Arrow table of harness_event_log columns.

    Shared by the Parquet reader and :func:`events_from_arrow` (``replaykit.read_sql``).
    """
    n = t.num_rows
    env_cols = {}
    for name, typ in _ENVELOPE_FIELDS:
        if name in t.column_names:
            col = t.column(name)
            try:
                env_cols[name] = col.cast(typ)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise LoadError(
                    source=source, line=None, reason="bad_type", field=name,
                    detail=f"column has type {col.type}, expected {typ}",
                ) from exc
        else:
            env_cols[name] = pa.nulls(n, typ)
    env = pa.table(env_cols)
    created = (
        t.column("created_at").combine_chunks()
        if "created_at" in t.column_names
        else pa.nulls(n, _STR)
    )
    pcol = t.column("payload").combine_chunks()
    for name, col_type, ok in (
        ("payload", pcol.type, _payload_type_ok), ("created_at", created.type, _created_type_ok),
    ):
        if not ok(col_type):
            raise LoadError(
                source=source, line=None, reason="bad_type", field=name,
                detail=f"column has type {col_type}, which replaykit cannot read",
                fix="payload: JSON text (or a struct/map); created_at: ISO-8601 text, epoch "
                    "milliseconds or a timestamp.",
            )
    if pa.types.is_struct(pcol.type) or pa.types.is_map(pcol.type):
        payload = pa.array(
            [None if v is None else canonical_json(_map_to_dict(v)) for v in
             pcol.to_pylist()],
            type=pa.large_string(),
        )
    else:
        payload = pcol.cast(pa.large_string())
    part = _parquet_payloads(env, created, payload, line, source, quarantine)
    checked = _check_rows(part, source, quarantine, tenants, counts)
    return None if checked is None else _slim(checked)


def events_from_arrow(
    table: pa.Table | pa.RecordBatchReader,
    *,
    source: str,
    tenant_id: str | Sequence[str] | None = None,
    errors: ErrorPolicy = "raise",
) -> EventLog:
    """Convert in-memory ``harness_event_log`` rows (Arrow) into an EventLog, as read_pleach does.

    ``table`` has the export columns ``tenant_id``, ``chat_id``, ``sequence_number``,
    ``event_type``, ``payload`` (JSON object text) and optionally ``created_at`` (ISO-8601
    text, epoch milliseconds or a timestamp), ``prev_hash``, ``row_hash``; a record batch
    reader is read batch by batch. The mapping to the canonical columns is exactly that of
    :func:`read_pleach` (same code); ``source`` is stored in every row's ``source`` and
    ``source_line`` is the 1-based row number in ``table``. ``tenant_id`` filters as in
    read_pleach. Used by :func:`replaykit.read_sql` for plain ``harness_event_log`` tables.

    Raises:
        LoadError: a bad row under ``errors="raise"`` (reasons as in read_pleach; the
            "line" is the row number).
        LoadError: ``reason="bad_tenant"``: a bad ``tenant_id`` filter. ValueError: a bad
            ``errors``.

    Example:
        >>> import pyarrow as pa
        >>> t = pa.table({"tenant_id": ["acme"], "chat_id": ["c1"], "sequence_number": [0],
        ...               "event_type": ["tool.called"],
        ...               "payload": ['{"call_id":"k1","tool":"search","args":{"q":"x"}}']})
        >>> log = events_from_arrow(t, source="pleach:memory")
        >>> log.table.column("tool_name").to_pylist(), str(log.table.column("kind")[0])
        (['search'], 'tool_call')
    """
    policy = check_errors_arg(errors)
    tenants = _tenant_filter(tenant_id)
    missing = [c for c in _REQUIRED_COLUMNS if c not in table.schema.names]
    if missing:
        raise LoadError(
            source=source, line=None, reason="bad_schema",
            detail=f"rows lack harness_event_log columns {missing}",
            fix="Provide tenant_id, chat_id, sequence_number, event_type and payload.",
        )
    quarantine = Quarantine(policy)
    counts = _Counts()
    if isinstance(table, pa.Table):
        # few large batches: the per-batch steps (payload parse, checks) have fixed costs
        batches = table.combine_chunks().to_batches(max_chunksize=1 << 20)
    else:
        batches = table
    parts: list[tuple[str, _Part]] = []
    first = 1
    for batch in batches:
        n = batch.num_rows
        if not n:
            continue
        counts.input_rows += n
        line = first + np.arange(n, dtype=np.int64)
        first += n
        part = _part_from_arrow(
            pa.Table.from_batches([batch]), line, source, quarantine, tenants, counts
        )
        if part is not None:
            parts.append((source, part))
    out, _ = _finish(parts, quarantine)
    _scope_quarantine(quarantine, tenants)
    return EventLog(out, runs=_runs_table(out), quarantine=quarantine.table())


def _payload_type_ok(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_struct(t)
            or pa.types.is_map(t) or pa.types.is_null(t))  # fmt: skip


def _created_type_ok(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t)
            or pa.types.is_timestamp(t) or pa.types.is_null(t))  # fmt: skip


def _map_to_dict(v: Any) -> Any:
    if isinstance(v, list) and all(isinstance(x, tuple) and len(x) == 2 for x in v):
        return dict(v)
    return v


_TOO_LONG_INT = b"0" * 4301  # past Python's default digit limit, after digits -> "0"


def _strict_enough(payload: pa.Array) -> bool:
    """False when a payload text may hold what Arrow's parser accepts and JSON does not
    (NaN/Infinity, nesting past MAX_DEPTH, an integer past the digit limit), column-wise:
    those texts go row by row, as JSONL lines do."""
    arr = payload.cast(pa.large_string())
    n = len(arr)
    data = arr.buffers()[2]
    if not n or data is None:
        return True
    offs = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
    b = np.frombuffer(data, dtype=np.uint8)[int(offs[0]) : int(offs[-1])]
    raw = b.tobytes()
    if _may_hold_nonfinite(b) and _NONFINITE.search(raw):
        return False
    if _TOO_LONG_INT in raw.translate(_DIGITS_B):
        return False
    count = _bracket_counts(b, offs[:-1] - offs[0], offs[1:] - offs[0])
    return not (count > MAX_DEPTH).any()


def _parquet_payloads(
    env: pa.Table, created: pa.Array, payload: pa.Array, line: np.ndarray, source: str,
    quarantine: Quarantine,
) -> _Part:
    """Typed fields of Parquet payload text; rows whose payload is not an object are bad."""
    n = len(payload)
    ok = np.asarray(pc.fill_null(pc.starts_with(pc.utf8_ltrim_whitespace(payload), "{"), False))
    one_line = pc.replace_substring(payload, "\n", " ")
    typed = _parse_payloads(pc.if_else(pa.array(ok), one_line, "{}")) \
        if ok.all() and _strict_enough(payload) else None
    if typed is not None:
        return _Part(env, created, payload, typed, line)
    # row by row: find the payloads that are not JSON objects
    objs: list[dict[str, Any]] = []
    keep = np.zeros(n, dtype=bool)
    for i, text in enumerate(payload.to_pylist()):
        why = ""
        try:
            obj = loads(text) if text is not None else None
        except JSONDecodeError as exc:
            obj, why = None, f" ({str(exc)[:120]})"
        if not isinstance(obj, dict):
            _bad(quarantine, source, int(line[i]), "bad_payload",
                 f"must be the JSON text of an object, got {str(text)[:60]!r}{why}", text,
                 "payload", owner=(env.column("tenant_id")[i].as_py(),
                                   env.column("chat_id")[i].as_py()))
            continue
        keep[i] = True
        objs.append(obj)
    idx = pa.array(np.flatnonzero(keep))
    return _Part(
        env.take(idx), created.take(idx), payload.take(idx), _typed_from_objects(objs),
        line[keep],
    )
