"""Grain tables: one row per model call, per tool call, per turn, from any EventLog.

Everything here reads the canonical columns (``kind``, ``ref_id``, ``seq``, ``turn``, ``step``,
``chunk_type``, ``finish``, ``is_error``, tokens, ``text``) that every loader fills (see the
loader contract in docs/formats.md), so the tables work on every format. The few details that
have no canonical column (cache-read and reasoning tokens, error names and codes, turn end
reasons) are pulled column-wise from the payloads of small homogeneous subsets (usage rows,
error rows, turn-end rows) with :func:`replaykit._base.json.payload_fields`, trying the field paths
each known format uses.

All work is Arrow group-bys, joins and numpy; there is no Python loop over events.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .._base.delegates import provide
from .._base.json import payload_fields, rows_holding_any
from ..schema import run_starts, sort_events
from ._runs import _grain_rows
from .log import to_pandas

__all__ = ["calls_df", "tools_df", "turns_df"]

_KEYS = ["tenant_id", "run_id"]

#: Field paths tried (in order) for details without a canonical column, per known format.
#: toh payloads are the event line (``data.*``); pleach payloads are the event's payload object.
FIELD_PATHS: dict[str, list[str]] = {
    "cache_read_tokens": [
        "data.chunk.usage.cacheReadTokens",
        "usage.cacheReadTokens",
        "usage.cache_read_tokens",
        "usage.cache_read_input_tokens",
        # claude_code (the assistant line), codex (token_count event), inspect (model event)
        "message.usage.cache_read_input_tokens",
        "payload.info.last_token_usage.cached_input_tokens",
        "output.usage.input_tokens_cache_read",
        # platform formats (Langfuse, LangSmith, Phoenix): the figures the loader read
        "replaykitUsage.cache_read_tokens",
    ],
    "cache_write_tokens": [
        "data.chunk.usage.cacheWriteTokens",
        "usage.cacheWriteTokens",
        "usage.cache_write_tokens",
        # OTel's usage summary
        "usage.cache_creation_input_tokens",
        # claude_code (the assistant line), codex (token_count event), inspect (model event)
        "message.usage.cache_creation_input_tokens",
        "payload.info.last_token_usage.cache_write_input_tokens",
        "output.usage.input_tokens_cache_write",
        # platform formats (Langfuse, LangSmith, Phoenix)
        "replaykitUsage.cache_write_tokens",
    ],
    "reasoning_tokens": [
        "data.chunk.usage.reasoningTokens",
        "usage.reasoningTokens",
        "usage.reasoning_tokens",
        # codex (token_count event), inspect (model event)
        "payload.info.last_token_usage.reasoning_output_tokens",
        "output.usage.reasoning_tokens",
        # platform formats
        "replaykitUsage.reasoning_tokens",
    ],
    "call_error_code": [
        "data.chunk.reason.failure.code",
        "error.code",
        "failure.code",
    ],
    "tool_error_name": ["data.error.name", "error.name"],
    "tool_error_code": ["data.error.code", "error.code"],
    "turn_end_reason": ["data.reason.kind", "reason.kind", "reason", "outcome"],
    "turn_error_code": ["data.reason.error.code", "reason.error.code", "error.code"],
}


def _table(log: Any) -> pa.Table:
    """The events table of ``log``, sorted by (tenant_id, run_id, seq): the grain tables
    take their row order from it (an EventLog's table already is; a bare table is sorted
    here, or returned as is when it already is)."""
    return log.table if hasattr(log, "table") else sort_events(log)


def _str(col: Any) -> pa.Array:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return pc.cast(arr, pa.string())


def _one_path(payloads: pa.Array, path: str, typ: pa.DataType) -> pa.Array:
    """One field of many payloads; a path whose values have another JSON type gives nulls."""
    tries = [typ] if typ != pa.string() else [pa.string(), pa.int64(), pa.float64()]
    for t in tries:
        try:
            col = payload_fields(payloads, {path: t}).column(path).combine_chunks()
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            continue
        return col if col.type == typ else pc.cast(col, typ)
    if len(payloads) <= 1:
        return pa.nulls(len(payloads), typ)
    # The payloads disagree on the path's JSON type (a log mixing formats: ``error`` is an
    # object in one, a string in another). Each half is parsed on its own, down to the
    # single payloads that hold another type (null), so one format's rows never blank out
    # another's: the rows are in run order, so the halves are soon of one format each.
    half = len(payloads) // 2
    return pa.concat_arrays([_one_path(payloads.slice(0, half), path, typ),
                             _one_path(payloads.slice(half), path, typ)])


def _field(payloads: pa.Array, name: str, typ: pa.DataType) -> pa.Array:
    """The first non-null of the candidate paths :data:`FIELD_PATHS` [name], column-wise."""
    paths = FIELD_PATHS[name]
    if len(payloads) == 0:
        return pa.array([], typ)
    arr = payloads.combine_chunks() if isinstance(payloads, pa.ChunkedArray) else payloads
    # Only payloads naming a path's first key (or spelling keys with \u escapes) are parsed:
    # any other payload has none of the paths (null for each) and cannot make a parse fail
    # (fields not named are skipped unconverted), so the values are those of a full parse.
    patterns = [*(f'"{h}"' for h in sorted({p.split(".")[0] for p in paths})), "\\u"]
    head = arr.slice(0, 256)  # most frequent pattern first: often one scan marks every row
    patterns.sort(key=lambda pat: -int(pc.sum(pc.match_substring(head, pat)).as_py() or 0))
    keep = np.zeros(len(arr), dtype=bool)
    keep[rows_holding_any(arr, patterns)] = True
    if not keep.any():
        return pa.nulls(len(arr), typ)
    if keep.all():
        return _parse_paths(arr, paths, typ)
    mask = pa.array(keep)
    return pc.replace_with_mask(pa.nulls(len(arr), typ), mask,
                                _parse_paths(arr.filter(mask), paths, typ))


def _parse_paths(payloads: pa.Array, paths: list[str], typ: pa.DataType) -> pa.Array:
    """The first non-null of ``paths`` in each payload (one parse; per path on a conflict)."""
    try:
        t = payload_fields(payloads, dict.fromkeys(paths, typ))
        cols = [t.column(p).combine_chunks() for p in paths]
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        cols = [_one_path(payloads, p, typ) for p in paths]
    return pc.coalesce(*cols) if len(cols) > 1 else cols[0]


def _kind_is(table: pa.Table, *kinds: str, column: str = "kind") -> pa.Array:
    """Rows whose ``kind`` (or ``column``) is one of ``kinds``: compared on the dictionary
    entries, not on every row's string."""
    col = table.column(column)
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    values = pa.array(list(kinds), pa.string())
    if not pa.types.is_dictionary(arr.type):
        return pc.fill_null(pc.is_in(pc.cast(arr, pa.string()), value_set=values), False)
    hit = np.asarray(pc.fill_null(pc.is_in(pc.cast(arr.dictionary, pa.string()),
                                           value_set=values), False), dtype=bool)
    codes = arr.indices.fill_null(-1).to_numpy(zero_copy_only=False)
    return pa.array(np.append(hit, False)[codes])


def _payloads_at(table: pa.Table, rows: np.ndarray, mask: Any) -> pa.Array:
    """The ``payload`` of the rows ``rows[mask]`` of ``table``: only those payloads are
    copied (row filters leave the big payload column out)."""
    pick = rows[np.asarray(pc.fill_null(mask, False), dtype=bool)]
    col = table.column("payload").take(pa.array(pick, pa.int64()))
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def _left_join(left: pa.Table, right: pa.Table, key: str = "_key") -> pa.Table:
    """``left`` with the other columns of ``right`` appended, matched on the int64 ``key``
    (unique in ``right``; null where ``left``'s key is not there): a left outer join by
    sorted search that keeps ``left``'s row order."""
    lk = left.column(key).to_numpy()
    rk = right.column(key).to_numpy()
    rest = right.drop_columns([key])
    if len(rk) == 0:
        cols = [pa.nulls(len(lk), f.type) for f in rest.schema]
    else:
        order = np.argsort(rk, kind="stable")
        pos = np.minimum(np.searchsorted(rk[order], lk), len(rk) - 1)
        found = rk[order][pos] == lk
        cols = rest.take(pa.array(order[pos], mask=~found)).columns
    for field, col in zip(rest.schema, cols, strict=True):
        left = left.append_column(field.name, col)
    return left


def _base(table: pa.Table, names: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in names:
        col = table.column(name)
        if pa.types.is_dictionary(col.type):
            out[name] = _str(col)
        else:
            out[name] = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return out


def _joint_keys(left: list[Any], right: list[Any]) -> tuple[pa.Array, pa.Array]:
    """One int64 per row of ``left`` and of ``right`` (parallel lists of key columns), equal
    exactly when all key columns are equal (nulls equal nulls); column-wise: each column is
    dictionary-encoded over both sides and the codes are combined (re-encoded when the
    product of the cardinalities would overflow)."""
    n = len(left[0])
    key = None
    for lc, rc in zip(left, right, strict=True):
        both = pa.chunked_array(
            [c for col in (lc, rc) for c in (col.chunks if isinstance(col, pa.ChunkedArray)
                                             else [col])]
        )
        if pa.types.is_dictionary(both.type):
            # no decoding: one shared dictionary, its (possibly repeated) values coded once
            both = both.unify_dictionaries()
            dictionary = both.chunk(0).dictionary if both.num_chunks else \
                pa.array([], both.type.value_type)
            denc = dictionary.dictionary_encode()
            remap = np.append(pc.fill_null(denc.indices, -1).to_numpy(zero_copy_only=False)
                              .astype(np.int64), -1)
            idx = np.concatenate([pc.fill_null(c.indices, -1).to_numpy(zero_copy_only=False)
                                  for c in both.chunks]).astype(np.int64) \
                if both.num_chunks else np.zeros(0, np.int64)
            codes = remap[idx] + 1  # null (-1 -> remap[-1] = -1) -> 0
            size = len(denc.dictionary) + 1
        else:
            enc = both.dictionary_encode().combine_chunks()
            codes = pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
            codes += 1  # null -> 0
            size = len(enc.dictionary) + 1
        if key is None:
            key = codes
        else:
            if int(key.max(initial=0)) + 1 > (2**62) // size:
                key = np.unique(key, return_inverse=True)[1].astype(np.int64)
            key = key * size + codes
    assert key is not None
    return pa.array(key[:n]), pa.array(key[n:])


def _empty(columns: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series([], dtype=d) for c, d in columns.items()})


_CALL_COLUMNS = {
    "tenant_id": "str", "run_id": "str", "turn": "Int32", "step": "Int32",
    "call_index": "int64", "ref_id": "str", "first_seq": "int64", "last_seq": "int64",
    "chunks": "int64", "text": "str", "reasoning": "str", "tool_calls": "int64",
    "input_tokens": "Int64", "output_tokens": "Int64", "cache_read_tokens": "Int64",
    "cache_write_tokens": "Int64", "reasoning_tokens": "Int64", "finish": "str",
    "error_code": "str", "finished": "bool",
}  # fmt: skip


def _joined_text(t: pa.Table, mask: pa.Array, keys: list[str], name: str) -> pa.Table:
    """Per group: the ``text`` of the masked rows concatenated in seq order."""
    sub = t.filter(mask).select([*keys, "text"])
    sub = sub.set_column(sub.schema.get_field_index("text"), "text",
                         pc.fill_null(pc.cast(sub.column("text"), pa.large_string()), ""))
    agg = sub.group_by(keys, use_threads=False).aggregate([("text", "list")])
    joined = pc.binary_join(agg.column("text_list"), pa.scalar("", pa.large_string()))
    return agg.drop_columns(["text_list"]).append_column(name, joined)


@provide("EventLog.calls_df")
def calls_df(log: Any) -> pd.DataFrame:
    """One row per model call: its chunks, text, tool calls, tokens and how it finished.

    A model call is the set of rows sharing one model-call ``ref_id`` (kinds ``model_request``,
    ``model_chunk``, ``model_response``); for streaming formats that is the chunks of one
    (turn, step) up to and including the ``finish`` chunk, so a step may hold several calls.

    Columns: ``tenant_id``, ``run_id``, ``turn``, ``step``, ``call_index`` (0-based within
    (run, turn, step), by position), ``ref_id``, ``first_seq``/``last_seq`` (of the call's
    rows), ``chunks`` (number of ``model_chunk`` rows), ``text`` (text deltas joined; a
    chunkless call's response text), ``reasoning`` (reasoning deltas joined), ``tool_calls``
    (``tool_call`` events of the run after the call's last row and before the next call's
    last row: the calls it asked for), ``input_tokens`` (every prompt token the model read,
    cached or not) / ``output_tokens`` (every generated token, reasoning included), summed;
    ``cache_read_tokens`` / ``cache_write_tokens`` (how many of the input tokens were read
    from / written to the provider's prompt cache) and ``reasoning_tokens`` (the part of the
    output that was reasoning), from the usage payloads (:data:`FIELD_PATHS`; null where the
    source records no such figure, never 0); the convention per format: docs/formats.md,
    "Token figures"), ``finish`` (finish
    kind), ``error_code`` (of an error finish), ``finished`` (False for a stream that ended
    without a finish: cancelled or cut off).

    Example:
        >>> log.calls_df()[["run_id", "turn", "step", "finish", "finished"]]  # doctest: +SKIP

    Raises:
        KeyError: the table lacks a canonical column (it is not an events table).
    """
    shared = _grain_rows(log, "calls_df", calls_df)  # a view of an iter_runs walk
    if shared is not None:
        return shared if len(shared) else _empty(_CALL_COLUMNS)
    table = _table(log)
    mask = pc.and_(
        _kind_is(table, "model_request", "model_chunk", "model_response"),
        pc.is_valid(table.column("ref_id")),
    )
    used = ["tenant_id", "run_id", "ref_id", "seq", "turn", "step", "kind", "chunk_type",
            "finish", "is_error", "input_tokens", "output_tokens", "text"]
    rows = np.flatnonzero(np.asarray(mask, dtype=bool))
    sub = table.select(used).filter(mask)  # only the columns used are copied
    if sub.num_rows == 0:
        return _empty(_CALL_COLUMNS)
    b = _base(sub, used)
    # usage rows: the call's rows that carry tokens, and rows of any kind naming the call
    # whose chunk_type is "usage" (a loader that moved a usage event's tokens onto the call's
    # first row keeps that event, whose payload holds the cache and reasoning figures)
    u_mask = pc.and_(pc.and_(pc.is_valid(table.column("ref_id")),
                             _kind_is(table, "usage", column="chunk_type")),
                     pc.invert(mask))
    u_rows = np.flatnonzero(np.asarray(u_mask, dtype=bool))
    ub = _base(table.select(["tenant_id", "run_id", "ref_id"]).filter(u_mask),
               ["tenant_id", "run_id", "ref_id"])
    # one int64 per (tenant_id, run_id, ref_id): every grouping and join below uses it
    key, ukey = _joint_keys([b["tenant_id"], b["run_id"], b["ref_id"]],
                            [ub["tenant_id"], ub["run_id"], ub["ref_id"]])
    keys = ["_key"]
    is_chunk = pc.equal(b["kind"], "model_chunk")
    t = pa.table({
        "_key": key, "_row": pa.array(np.arange(sub.num_rows)),
        "seq": b["seq"], "turn": b["turn"], "step": b["step"],
        "chunk": pc.cast(is_chunk, pa.int64()),
        "finish": b["finish"], "input_tokens": b["input_tokens"],
        "output_tokens": b["output_tokens"],
        "text": b["text"],
    })  # fmt: skip
    agg = t.group_by(keys, use_threads=False).aggregate([
        ("_row", "min"),
        ("seq", "min"), ("seq", "max"), ("turn", "first"), ("step", "first"), ("chunk", "sum"),
        ("finish", "first"), ("input_tokens", "sum"), ("output_tokens", "sum"),
    ])  # fmt: skip
    ctype = pc.fill_null(b["chunk_type"], "")
    parts = [
        _joined_text(t, pc.and_(is_chunk, pc.equal(ctype, "text")), keys, "text"),
        _joined_text(t, pc.and_(is_chunk, pc.equal(ctype, "reasoning")), keys, "reasoning"),
        _joined_text(t, pc.equal(b["kind"], "model_response"), keys, "response_text"),
    ]
    # usage details and finish error codes from homogeneous payload subsets
    usage_mask = pc.or_(pc.is_valid(b["input_tokens"]), pc.is_valid(b["output_tokens"]))
    usage = pa.concat_tables([t.filter(usage_mask).select(keys),
                              pa.table({"_key": ukey})])
    upay = pa.concat_arrays([_payloads_at(table, rows, usage_mask).cast(pa.large_string()),
                             _str(table.column("payload").take(pa.array(u_rows, pa.int64())))
                             .cast(pa.large_string())])
    details = ("cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
    for name in details:
        usage = usage.append_column(name, _field(upay, name, pa.int64()))
    parts.append(usage.group_by(keys, use_threads=False).aggregate(
        [(name, "sum") for name in details]))  # fmt: skip
    err_mask = pc.and_(pc.is_valid(b["finish"]), b["is_error"])
    errs = t.filter(err_mask).select(keys)
    errs = errs.append_column("error_code", _field(_payloads_at(table, rows, err_mask),
                                                   "call_error_code", pa.string()))  # fmt: skip
    parts.append(errs.group_by(keys, use_threads=False).aggregate([("error_code", "first")]))
    for part in parts:
        agg = _left_join(agg, part)
    # the log's order: (tenant, run) as sorted, then first seq = the call's first row
    agg = agg.take(pa.array(np.argsort(agg.column("_row_min").to_numpy(), kind="stable")))
    first = agg.column("_row_min")
    ids = {k: b[k].take(first) for k in ("tenant_id", "run_id", "ref_id")}
    agg = agg.drop_columns(["_key", "_row_min"])
    for k, v in reversed(list(ids.items())):
        agg = agg.add_column(0, k, v)
    df = to_pandas(agg).rename(columns={
        "seq_min": "first_seq", "seq_max": "last_seq", "turn_first": "turn",
        "step_first": "step", "chunk_sum": "chunks", "finish_first": "finish",
        "input_tokens_sum": "input_tokens", "output_tokens_sum": "output_tokens",
        "cache_read_tokens_sum": "cache_read_tokens",
        "cache_write_tokens_sum": "cache_write_tokens", "reasoning_tokens_sum": "reasoning_tokens",
        "error_code_first": "error_code",
    })  # fmt: skip
    df["text"] = df["text"].where(df["text"].notna(), df.pop("response_text"))
    df["call_index"] = df.groupby(["tenant_id", "run_id", "turn", "step"],
                                  dropna=False, sort=False).cumcount().astype("int64")
    df["tool_calls"] = _tool_calls_per_call(table, df)
    df["finished"] = df["finish"].notna().astype(bool)
    df["chunks"] = df["chunks"].fillna(0).astype("int64")
    return df[list(_CALL_COLUMNS)].astype(
        {c: d for c, d in _CALL_COLUMNS.items() if d in ("Int32", "Int64", "int64", "bool")}
    )


def _tool_calls_per_call(table: pa.Table, calls: pd.DataFrame) -> np.ndarray:
    """Tool-call events per model call: those after its last row, up to the next call's last."""
    is_tool = _kind_is(table, "tool_call")
    tools = table.select(["tenant_id", "run_id", "seq"]).filter(is_tool)
    if tools.num_rows == 0 or len(calls) == 0:
        return np.zeros(len(calls), dtype=np.int64)
    c_key_, t_key_ = _joint_keys(
        [pa.array(calls[c].astype(str).to_numpy(object), pa.string())
         for c in ("tenant_id", "run_id")],
        [_str(tools.column(c)) for c in ("tenant_id", "run_id")])
    # dense run codes (0 .. runs-1), so code * 2**40 + seq fits an int64
    dense = np.unique(np.concatenate([c_key_.to_numpy(), t_key_.to_numpy()]),
                      return_inverse=True)[1].astype(np.int64)
    c_run, t_run = dense[: len(calls)], dense[len(calls):]
    shift = np.int64(1) << np.int64(40)
    c_key = c_run * shift + calls["last_seq"].to_numpy(dtype=np.int64)
    t_key = t_run * shift + tools.column("seq").to_numpy().astype(np.int64)
    order = np.argsort(c_key, kind="stable")
    pos = np.searchsorted(c_key[order], t_key, side="left") - 1
    ok = pos >= 0
    owner = order[np.maximum(pos, 0)]
    ok &= c_run[owner] == t_run
    return np.bincount(owner[ok], minlength=len(calls)).astype(np.int64)


_TOOL_COLUMNS = {
    "tenant_id": "str", "run_id": "str", "turn": "Int32", "step": "Int32", "call_id": "str",
    "tool_name": "str", "args_hash": "str", "arguments": "str", "call_seq": "int64",
    "result_seq": "Int64", "result_text": "str", "is_error": "boolean", "error_name": "str",
    "error_code": "str", "has_result": "bool",
}  # fmt: skip


@provide("EventLog.tools_df")
def tools_df(log: Any) -> pd.DataFrame:
    """One row per tool call, with its result (the first result naming the same call id).

    Columns: ``tenant_id``, ``run_id``, ``turn``, ``step``, ``call_id``, ``tool_name``,
    ``args_hash``, ``arguments`` (raw JSON text), ``call_seq``, ``result_seq``,
    ``result_text``, ``is_error`` (NA without a result), ``error_name``/``error_code`` (of an
    error result, null when absent), ``has_result``. A result whose call is not in the log has
    no row here (it is still in ``events_df()``).

    Example:
        >>> log.tools_df().groupby("tool_name")["is_error"].mean()  # doctest: +SKIP

    Raises:
        KeyError: the table lacks a canonical column (it is not an events table).
    """
    shared = _grain_rows(log, "tools_df", tools_df)  # a view of an iter_runs walk
    if shared is not None:
        return shared if len(shared) else _empty(_TOOL_COLUMNS)
    table = _table(log)
    call_cols = ["tenant_id", "run_id", "turn", "step", "ref_id", "tool_name", "args_hash",
                 "text", "seq"]
    calls = table.select(call_cols).filter(_kind_is(table, "tool_call"))
    if calls.num_rows == 0:
        return _empty(_TOOL_COLUMNS)
    cb = _base(calls, call_cols)
    ct = pa.table({
        "tenant_id": cb["tenant_id"], "run_id": cb["run_id"], "turn": cb["turn"],
        "step": cb["step"], "call_id": cb["ref_id"], "tool_name": cb["tool_name"],
        "args_hash": cb["args_hash"], "arguments": pc.cast(cb["text"], pa.large_string()),
        "call_seq": cb["seq"],
    })  # fmt: skip
    res_cols = ["tenant_id", "run_id", "ref_id", "seq", "text", "is_error", "tool_name"]
    res_mask = pc.and_(_kind_is(table, "tool_result"), pc.is_valid(table.column("ref_id")))
    res_rows = np.flatnonzero(np.asarray(pc.fill_null(res_mask, False), dtype=bool))
    res = table.select(res_cols).filter(res_mask)
    rb = _base(res, res_cols)
    rt = pa.table({
        "tenant_id": rb["tenant_id"], "run_id": rb["run_id"], "call_id": rb["ref_id"],
        "result_seq": rb["seq"], "result_text": pc.cast(rb["text"], pa.large_string()),
        "is_error": rb["is_error"], "result_tool": rb["tool_name"],
    })  # fmt: skip
    err = rb["is_error"]
    epay = _payloads_at(table, res_rows, err)
    names = pa.nulls(res.num_rows, pa.string())
    codes = pa.nulls(res.num_rows, pa.string())
    if len(epay):
        epos = pa.array(np.flatnonzero(np.asarray(err)))
        m = np.zeros(res.num_rows, dtype=bool)
        m[np.asarray(epos)] = True
        names = pc.replace_with_mask(names, pa.array(m), _field(epay, "tool_error_name",
                                                                pa.string()))  # fmt: skip
        codes = pc.replace_with_mask(codes, pa.array(m), _field(epay, "tool_error_code",
                                                                pa.string()))  # fmt: skip
    rt = rt.append_column("error_name", names).append_column("error_code", codes)
    # one integer key per (tenant_id, run_id, call_id) over calls and results together, so
    # the grouping and the join below work on int64 instead of three string columns
    ckey, rkey = _joint_keys([ct.column(c) for c in ("tenant_id", "run_id", "call_id")],
                             [rt.column(c) for c in ("tenant_id", "run_id", "call_id")])
    # first result per call id (the table is sorted by seq within a run)
    rt = rt.append_column("_key", rkey).append_column("_row", pa.array(np.arange(rt.num_rows)))
    firsts = rt.group_by(["_key"], use_threads=False).aggregate([("_row", "min")])
    rt = rt.take(firsts.column("_row_min")).drop_columns(
        ["_row", "tenant_id", "run_id", "call_id"])
    ct = ct.append_column("_key", ckey).append_column(
        "_crow", pa.array(np.arange(ct.num_rows)))
    joined = _left_join(ct, rt)  # keeps the calls' order (the log's: tenant, run, seq)
    df = to_pandas(joined.drop_columns(["_key", "_crow"]))
    df["tool_name"] = df["tool_name"].where(df["tool_name"].notna(), df.pop("result_tool"))
    df["has_result"] = df["result_seq"].notna().astype(bool)
    df["is_error"] = df["is_error"].astype("boolean").where(df["has_result"], pd.NA)
    return df[list(_TOOL_COLUMNS)].astype(
        {c: d for c, d in _TOOL_COLUMNS.items() if d != "str"}
    )


_TURN_COLUMNS = {
    "tenant_id": "str", "run_id": "str", "turn": "Int32", "start_seq": "int64",
    "end_seq": "Int64", "end_reason": "str", "error_code": "str", "steps": "int64",
    "tool_calls": "int64",
}  # fmt: skip


@provide("EventLog.turns_df")
def turns_df(log: Any) -> pd.DataFrame:
    """One row per turn (every turn number seen in a run), with how it ended.

    Columns: ``tenant_id``, ``run_id``, ``turn``, ``start_seq`` (its ``turn_start`` row, else
    its first row), ``end_seq`` (its first ``turn_end`` row; null when the turn never ended),
    ``end_reason`` (completed, aborted, error, max-tokens, ... from the end row; ``error``
    or ``completed`` when the end row names no reason; null when the turn never ended),
    ``error_code`` (of an error end), ``steps`` (distinct step numbers), ``tool_calls``
    (``tool_call`` events in the turn).

    Example:
        >>> log.turns_df()["end_reason"].value_counts()  # doctest: +SKIP

    Raises:
        KeyError: the table lacks a canonical column (it is not an events table).
    """
    shared = _grain_rows(log, "turns_df", turns_df)  # a view of an iter_runs walk
    if shared is not None:
        return shared if len(shared) else _empty(_TURN_COLUMNS)
    table = _table(log)
    sub = table.select(["tenant_id", "run_id", "turn", "seq", "step", "kind", "is_error"]) \
        .filter(pc.is_valid(table.column("turn")))
    turn_rows = np.flatnonzero(np.asarray(pc.is_valid(table.column("turn")), dtype=bool))
    if sub.num_rows == 0:
        return _empty(_TURN_COLUMNS)
    b = _base(sub, ["seq", "step", "is_error"])
    is_start, is_end = _kind_is(sub, "turn_start"), _kind_is(sub, "turn_end")
    seq = b["seq"]
    null_i64 = pa.scalar(None, pa.int64())
    # one int64 per (tenant_id, run_id, turn) for the grouping and the join
    key, _ = _joint_keys([sub.column(c) for c in ("tenant_id", "run_id", "turn")],
                         [sub.column(c).slice(0, 0) for c in ("tenant_id", "run_id", "turn")])
    keys = ["_key"]
    t = pa.table({
        "_key": key, "_row": pa.array(np.arange(sub.num_rows)),
        "seq": seq,
        "start": pc.if_else(is_start, seq, null_i64),
        "end": pc.if_else(is_end, seq, null_i64),
        "step": b["step"],
        "tool": pc.cast(_kind_is(sub, "tool_call"), pa.int64()),
    })  # fmt: skip
    agg = t.group_by(keys, use_threads=False).aggregate([
        ("_row", "min"), ("seq", "min"), ("start", "min"), ("end", "min"),
        ("step", "count_distinct", pc.CountOptions(mode="only_valid")), ("tool", "sum"),
    ])  # fmt: skip
    end_mask = is_end
    ends = t.filter(end_mask).select([*keys, "seq"])
    epay = _payloads_at(table, turn_rows, end_mask)
    reason = _field(epay, "turn_end_reason", pa.string())
    is_err = b["is_error"].filter(end_mask)
    reason = pc.coalesce(reason, pc.if_else(is_err, "error", "completed"))
    ends = ends.append_column("end_reason", reason)
    ends = ends.append_column("error_code", _field(epay, "turn_error_code", pa.string()))
    ends = ends.append_column("_row", pa.array(np.arange(ends.num_rows)))
    firsts = ends.group_by(keys, use_threads=False).aggregate([("_row", "min")])
    ends = ends.take(firsts.column("_row_min")).select([*keys, "end_reason", "error_code"])
    agg = _left_join(agg, ends)
    # ids of each turn from its first row; order (tenant, run) as the log, then turn
    first = agg.column("_row_min")
    ids = {k: _str(sub.column(k).take(first)) if k != "turn" else sub.column(k).take(first)
           for k in ("tenant_id", "run_id", "turn")}
    # a run's rank in the log's order: the runs' rows are contiguous in the sorted table
    run_rank = np.searchsorted(np.flatnonzero(run_starts(sub)), first.to_numpy(),
                               side="right") - 1
    order = np.lexsort((pc.fill_null(ids["turn"], -(2**31)).to_numpy(zero_copy_only=False),
                        run_rank))
    agg = agg.drop_columns(["_key", "_row_min"])
    for k, v in reversed(list(ids.items())):
        agg = agg.add_column(0, k, v)
    agg = agg.take(pa.array(order))
    df = to_pandas(agg).rename(columns={
        "end_min": "end_seq", "step_count_distinct": "steps", "tool_sum": "tool_calls",
    })  # fmt: skip
    df["start_seq"] = df.pop("start_min").fillna(df.pop("seq_min"))
    return df[list(_TURN_COLUMNS)].astype(
        {c: d for c, d in _TURN_COLUMNS.items() if d != "str"}
    )
