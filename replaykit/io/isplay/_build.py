"""The column-wise pass of the isplay loader: collected run documents -> one EventLog.

Pulls the typed fields out of every event payload at once
(:func:`~replaykit._base.json.payload_fields`),
flags bad rows with numpy masks (missing fields, bad times, argsHash mismatches, duplicate ids
and seqs), maps event types to kinds (:data:`TYPE_KINDS`) and resolves each run's checkpoints
to seqs (:data:`CHECKPOINTS_SCHEMA`, ``log.extras["checkpoints"]``).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._base.json import json_type, payload_fields
from ...errors import LoadError
from ...eventlog.log import RUNS_SCHEMA, EventLog
from ...schema import empty_events, events_table
from .._common import Quarantine, times_in_years
from ._documents import _FIX, _Runs
from ._format import FORMAT
from ._text import _raw_text

__all__ = ["CHECKPOINTS_SCHEMA", "TYPE_KINDS"]

#: isplay event type -> canonical ``kind``. Any other type loads as ``"other"`` (kept).
TYPE_KINDS: dict[str, str] = {
    "run.started": "session",
    "run.completed": "session",
    "run.failed": "session",
    "message.user": "user_message",
    "model.call": "model_request",
    "model.result": "model_response",
    "tool.call": "tool_call",
    "tool.result": "tool_result",
    "checkpoint": "checkpoint",
    "approval.requested": "approval_request",
    "approval.resolved": "approval_decision",
    "intervention.created": "intervention",
    "error": "error",
}

#: Side table ``log.extras["checkpoints"]``: one row per checkpoint of a loaded run.
CHECKPOINTS_SCHEMA: pa.Schema = pa.schema(
    [
        pa.field("tenant_id", pa.string(), nullable=False),
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("checkpoint_id", pa.string(), nullable=False),
        pa.field("event_id", pa.string(), nullable=False),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("label", pa.string()),
    ]
)

_FIELDS = {
    "type": pa.string(),
    "eventId": pa.string(),
    "refId": pa.string(),
    "modelCallId": pa.string(),
    "checkpointId": pa.string(),
    "seq": pa.int64(),
    "ts": pa.string(),
    "turn": pa.int64(),
    "step": pa.int64(),
    "toolName": pa.string(),
    "argsHash": pa.string(),
    "finish": pa.string(),
    "isError": pa.bool_(),
    "cacheKey": pa.string(),
    "usage.inputTokens": pa.int64(),
    "usage.outputTokens": pa.int64(),
}


def _parse_ts(values: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """(timestamps, bad mask) for ISO-8601 strings, column-wise."""
    import pandas as pd  # on use: loading other formats needs no pandas

    s = pd.Series(values.to_pandas(), dtype="object")
    parsed = pd.to_datetime(s, utc=True, format="ISO8601", errors="coerce")
    bad = (s.notna() & parsed.isna()).to_numpy()
    arr, out = times_in_years(pa.array(parsed.dt.as_unit("us"), type=pa.timestamp("us", tz="UTC")))
    return arr, bad | out


def _build(acc: _Runs, tenant: str, quarantine: Quarantine) -> EventLog:
    import pandas as pd  # on use: loading other formats needs no pandas

    n = len(acc.payload)
    doc = np.asarray(acc.doc, dtype=np.int64)
    index = np.asarray(acc.index, dtype=np.int64)
    payload = pa.array(acc.payload, type=pa.large_string())
    f = payload_fields(payload, _FIELDS) if n else None

    def col(name: str) -> pa.Array:
        assert f is not None
        c = f.column(name)
        return c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c

    reason = np.full(n, None, dtype=object)
    bad_field = np.full(n, None, dtype=object)
    detail = np.full(n, None, dtype=object)

    def flag(mask: np.ndarray, why: str, fld: str, what: str) -> None:
        m = mask & (reason == None)  # noqa: E711 - elementwise on an object array
        reason[m] = why
        bad_field[m] = fld
        detail[m] = what

    if n:
        typ = col("type")
        typ_s = typ.to_numpy(zero_copy_only=False)
        is_null = lambda name: np.asarray(pc.is_null(col(name)))  # noqa: E731
        flag(is_null("type"), "missing_field", "type", "is required (the event type)")
        flag(is_null("eventId"), "missing_field", "eventId", "is required (a unique event id)")
        tool_call = typ_s == "tool.call"
        tool_any = tool_call | (typ_s == "tool.result")
        model_any = (typ_s == "model.call") | (typ_s == "model.result")
        flag(tool_call & is_null("toolName"), "missing_field", "toolName",
             "is required on tool.call events")
        flag(tool_any & is_null("refId"), "missing_field", "refId",
             "is required on tool events (the tool call id)")
        flag(model_any & is_null("modelCallId") & is_null("refId"), "missing_field",
             "modelCallId", "is required on model events (the model call id)")
        ts, bad_ts = _parse_ts(col("ts"))
        flag(bad_ts, "bad_ts", "ts", "is not an ISO-8601 time within years 1 to 9999")
        computed = pa.array(acc.computed_hash, type=pa.string())
        given = col("argsHash")
        mismatch = np.asarray(pc.fill_null(pc.not_equal(computed, given), False))
        flag(mismatch, "args_hash_mismatch", "argsHash",
             "does not match the hash of args")
        eid = col("eventId").to_numpy(zero_copy_only=False)
        keys = pd.DataFrame({"d": doc, "e": eid})
        dup = keys.duplicated(keep="first").to_numpy() & ~is_null("eventId")
        flag(dup, "duplicate_event_id", "eventId", "repeats an earlier event id of this run")
        seq_given = col("seq")
        seq = np.asarray(pc.fill_null(seq_given, pa.array(index, type=pa.int64())))
        dup_seq = pd.DataFrame({"d": doc, "s": seq}).duplicated(keep="first").to_numpy()
        flag(dup_seq, "duplicate_seq", "seq", "repeats an earlier seq of this run")
        bad_idx = np.flatnonzero(reason != None)  # noqa: E711
    else:
        bad_idx = np.zeros(0, dtype=np.int64)

    for i in bad_idx:  # bad rows only (rare): build their errors
        d = int(doc[i])
        quarantine.bad(
            LoadError(
                source=acc.sources[d],
                line=int(acc.line[i]),
                field=f"events[{int(index[i])}].{bad_field[i]}",
                reason=str(reason[i]),
                detail=str(detail[i]),
                fix=_FIX[str(reason[i])],
            ),
            acc.payload[i],
        )

    run_ids = pa.array(acc.run_ids, type=pa.string())
    runs_table = pa.table(
        {
            "tenant_id": pa.array([tenant] * len(acc.run_ids), type=pa.string()),
            "run_id": run_ids,
            "parent_run_id": pa.array(acc.parent_ids, type=pa.string()),
            "format": pa.array([FORMAT] * len(acc.run_ids), type=pa.string()),
            "source": pa.array([f"{FORMAT}:{s}" for s in acc.sources], type=pa.string()),
            "created_at": _created_at(acc.created),
            "attrs": pa.array(acc.attrs, type=pa.large_string()),
        },
        schema=RUNS_SCHEMA,
    )
    if n == 0:
        cps = _checkpoints(acc, tenant, pa.table({"d": pa.array([], pa.int64()),
                                                  "event_id": pa.array([], pa.string()),
                                                  "seq": pa.array([], pa.int64())}), quarantine)
        return EventLog(empty_events(), runs=runs_table, quarantine=quarantine.table(runs_table),
                        extras={"checkpoints": cps})

    keep = pa.array(reason == None)  # noqa: E711
    typ_d = pc.dictionary_encode(typ)
    kind_dict = pa.array([TYPE_KINDS.get(t, "other") for t in typ_d.dictionary.to_pylist()],
                         type=pa.string())
    kind = pc.take(kind_dict, typ_d.indices)
    ref = pc.if_else(pa.array(model_any), pc.coalesce(col("modelCallId"), col("refId")),
                     col("refId"))
    ref = pc.if_else(pc.equal(typ, "checkpoint"), pc.coalesce(col("checkpointId"), ref), ref)
    finish = col("finish")
    is_error = pc.or_(
        pc.fill_null(col("isError"), False),
        pc.fill_null(
            pc.or_(pc.is_in(typ, pa.array(["error", "run.failed"])), pc.equal(finish, "error")),
            False,
        ),
    )
    src_pos: dict[str, int] = {}
    src_of_doc = np.asarray([src_pos.setdefault(s, len(src_pos)) for s in acc.sources],
                            dtype=np.int32)
    src_dict = pa.array([f"{FORMAT}:{s}" for s in src_pos], type=pa.string())
    doc_idx = pa.array(doc, type=pa.int32())
    columns = {
        "tenant_id": pa.DictionaryArray.from_arrays(
            pa.array(np.zeros(n, dtype=np.int32)), pa.array([tenant])
        ),
        "run_id": pa.DictionaryArray.from_arrays(doc_idx, run_ids),
        "parent_run_id": pc.take(pa.array(acc.parent_ids, type=pa.string()), doc_idx),
        "seq": pa.array(seq, type=pa.int64()),
        "type": typ,
        "kind": kind,
        "ts": ts,
        "turn": col("turn"),
        "step": col("step"),
        "event_id": col("eventId"),
        "ref_id": ref,
        "tool_name": col("toolName"),
        "args_hash": pc.coalesce(computed, given),
        "cache_key": col("cacheKey"),
        "is_error": is_error,
        "finish": finish,
        "input_tokens": col("usage.inputTokens"),
        "output_tokens": col("usage.outputTokens"),
        "text": pa.array(acc.text, type=pa.large_string()),
        "payload": payload,
        "source": pa.DictionaryArray.from_arrays(pa.array(src_of_doc[doc]), src_dict),
        "source_line": pa.array(acc.line, type=pa.int64()),
    }
    if len(bad_idx):
        columns = {k: pc.filter(v, keep) for k, v in columns.items()}
    table = events_table(columns)
    loaded = pa.table(
        {
            "d": pc.filter(pa.array(doc, type=pa.int64()), keep) if len(bad_idx) else doc,
            "event_id": columns["event_id"],
            "seq": columns["seq"],
        }
    )
    cps = _checkpoints(acc, tenant, loaded, quarantine)
    return EventLog(table, runs=runs_table, quarantine=quarantine.table(runs_table),
                    extras={"checkpoints": cps})


def _created_at(values: list[Any]) -> pa.Array:
    import pandas as pd  # on use: loading other formats needs no pandas

    parsed = pd.to_datetime(pd.Series(values, dtype="object"), utc=True, format="ISO8601",
                            errors="coerce")
    return times_in_years(pa.array(parsed.dt.as_unit("us"), type=pa.timestamp("us", tz="UTC")))[0]


def _checkpoints(acc: _Runs, tenant: str, loaded: pa.Table, quarantine: Quarantine) -> pa.Table:
    """Checkpoint entries of every run, resolved to the seq of the event they name."""
    rows: dict[str, list[Any]] = {"d": [], "j": [], "line": [], "checkpoint_id": [],
                                  "event_id": [], "label": [], "raw": []}
    for d, entries in enumerate(acc.checkpoints):  # checkpoint entries: a handful per run
        seen: set[str] = set()
        for cp, j, line in entries:
            src = acc.sources[d]
            problem = None
            if not isinstance(cp, dict):
                problem = ("", "not_object", f"must be an object, got {json_type(cp)}")
            else:
                for key, required in (("checkpointId", True), ("eventId", True),
                                      ("label", False)):
                    v = cp.get(key)
                    if (required and v is None) or (v is not None and not isinstance(v, str)):
                        problem = (key, "missing_field" if v is None else "bad_type",
                                   f"must be a string, got {json_type(v)}")
                        break
                if problem is None and cp["checkpointId"] in seen:
                    problem = ("checkpointId", "duplicate_checkpoint_id",
                               f"{cp['checkpointId']!r} repeats an earlier checkpoint id")
            if problem is not None:
                fld, why, what = problem
                quarantine.bad(
                    LoadError(source=src, line=line, field=f"checkpoints[{j}].{fld}".rstrip("."),
                              reason=why, detail=what, fix=_FIX[why]),
                    json.dumps(cp, default=str),
                )
                continue
            seen.add(cp["checkpointId"])
            rows["d"].append(d)
            rows["j"].append(j)
            rows["line"].append(line)
            rows["checkpoint_id"].append(cp["checkpointId"])
            rows["event_id"].append(cp["eventId"])
            rows["label"].append(cp.get("label"))
            rows["raw"].append(_raw_text(cp))
    cp_t = pa.table(
        {
            "d": pa.array(rows["d"], pa.int64()),
            "j": pa.array(rows["j"], pa.int64()),
            "line": pa.array(rows["line"], pa.int64()),
            "checkpoint_id": pa.array(rows["checkpoint_id"], pa.string()),
            "event_id": pa.array(rows["event_id"], pa.string()),
            "label": pa.array(rows["label"], pa.string()),
            "raw": pa.array(rows["raw"], pa.string()),
        }
    )
    joined = cp_t.join(loaded, keys=["d", "event_id"], join_type="left outer",
                       use_threads=False).sort_by([("d", "ascending"), ("j", "ascending")])
    missing = np.flatnonzero(np.asarray(pc.is_null(joined.column("seq"))))
    for i in missing:
        d = joined.column("d")[int(i)].as_py()
        eid = joined.column("event_id")[int(i)].as_py()
        quarantine.bad(
            LoadError(
                source=acc.sources[d],
                line=joined.column("line")[int(i)].as_py(),
                field=f"checkpoints[{joined.column('j')[int(i)].as_py()}].eventId",
                reason="unknown_checkpoint_event",
                detail=f"names {eid!r}, which is not a loaded event of run {acc.run_ids[d]!r}",
                fix=_FIX["unknown_checkpoint_event"],
            ),
            joined.column("raw")[int(i)].as_py(),
        )
    joined = joined.filter(pc.is_valid(joined.column("seq")))
    d_idx = joined.column("d").combine_chunks()
    return pa.table(
        {
            "tenant_id": pa.array([tenant] * joined.num_rows, type=pa.string()),
            "run_id": pc.take(pa.array(acc.run_ids, type=pa.string()), d_idx),
            "checkpoint_id": joined.column("checkpoint_id"),
            "event_id": joined.column("event_id"),
            "seq": joined.column("seq"),
            "label": joined.column("label"),
        },
        schema=CHECKPOINTS_SCHEMA,
    )
