"""The canonical columns derived from ``type`` + ``payload``: tool-call arguments and their hash,
``text``, kind/ref/event ids, tokens, and the per-run ``turn`` and ``parent_run_id``
(:data:`DERIVED_COLUMNS`, :func:`derive_columns`, which ``verify_chain`` re-derives).
"""

from __future__ import annotations

import hashlib
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._base import native as _native
from ..._base.json import (
    MAX_DEPTH,
    JSONDecodeError,
    _orjson,
    args_hash,
    canonical_json,
    gc_paused,
    loads,
)
from ...schema import DERIVED_COLUMNS as SCHEMA_DERIVED_COLUMNS
from ...schema import EVENTS_SCHEMA
from ._fastpath import _parse_payloads
from ._rows import _typed_from_objects
from ._shapes import _STR, _TYPED, EVENT_KINDS, _Part

_TEXT_FIELDS = ("text", "result", "message", "reason")


def _slim(part: _Part) -> _Part:
    """Compute a block's tool arguments, ``text`` and canonical columns now.

    The typed payload fields are replaced by the block's canonical columns (all but
    ``type`` and ``kind``, which need the whole file's dictionary), so the large typed text
    columns never exist for the whole file at once and _finish only joins and sorts.
    """
    args, hashes = _tool_args(part, {})
    typed = part.typed
    text = pc.coalesce(args, *(typed.column(c) for c in _TEXT_FIELDS))
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    # the canonical columns are row-wise: built here, on the reading threads, per block
    # (rows without an event_type are quarantined later by _check_rows)
    env = part.env
    i = env.schema.get_field_index("event_type")
    env = env.set_column(i, env.schema.field(i), pc.fill_null(env.column(i), ""))
    cols = _canonical_columns(env, typed, hashes)
    part.typed = pa.table({k: v for k, v in cols.items() if k not in ("type", "kind")})
    part.args, part.hashes, part.text = args, hashes, text.cast(pa.large_string())
    return part


def _tool_args(part: _Part, cache: dict[str, str]) -> tuple[pa.Array, pa.Array]:
    """Canonical JSON text and hash of each tool.called row's ``args`` (null elsewhere).

    Per tool call (the only per-row step: the arguments are re-serialised canonically);
    each distinct canonical text is hashed once.
    """
    n = part.env.num_rows
    etype = part.env.column("event_type")
    called = np.flatnonzero(np.asarray(pc.fill_null(pc.equal(etype, "tool.called"), False)))
    args_text: list[str | None] = [None] * len(called)
    hashes: list[str | None] = [None] * len(called)
    payloads = part.payload.take(pa.array(called))
    todo: list[int] | None = None  # rows left to the loop below (None: all of them)
    if _native.enabled() and len(called):
        # the native core: canonical text and hash of every call's arguments in one call;
        # the rows it leaves (arguments given as a JSON string, payloads it does not read)
        # take the reference loop below
        binary = payloads.cast(pa.large_binary())
        a_col, h_col, rows = _native.core().tool_args_many(*_native.spans(binary))
        todo = np.frombuffer(rows, dtype=np.int64).tolist()
        if not todo:
            where = _scatter(n, called)
            return _native.to_arrow(a_col).take(where), _native.to_arrow(h_col).take(where)
        args_text = _native.to_arrow(a_col).to_pylist()
        hashes = _native.to_arrow(h_col).to_pylist()
    # one column-wise scan for runs of 19+ digits (integers that may not fit 64 bits): only
    # those payloads take the lossless slow decode, the rest skip the per-call check
    long_ints = np.asarray(pc.fill_null(pc.match_substring_regex(payloads, r"[0-9]{19}"),
                                        False))
    # the rest open at most MAX_DEPTH brackets, so loads() would be orjson's decode and its
    # depth check would pass: orjson is called directly for them (the same values)
    direct = ~long_ints
    if _orjson is None:
        direct[:] = False
    elif len(payloads):
        opened = pc.add(pc.count_substring(payloads, "{"), pc.count_substring(payloads, "["))
        direct &= ~np.asarray(pc.fill_null(pc.greater(opened, MAX_DEPTH), True))
    decode = None if _orjson is None else _orjson.loads
    encode = None if _orjson is None else partial(_orjson.dumps, option=_orjson.OPT_SORT_KEYS)
    long_list, direct_list = long_ints.tolist(), direct.tolist()
    # bytes: orjson decodes them a third faster than str (no UTF-8 view of the text); the
    # collector paused (gc_paused: the decoded payloads are garbage at once, no cycles)
    texts = payloads.cast(pa.large_binary())
    rows = (enumerate(texts.to_pylist()) if todo is None
            else ((j, texts[j].as_py()) for j in todo))
    with gc_paused():
        for j, ptxt in rows:
            # (a payload that is not an object, which only a tampered table holds: no args)
            if direct_list[j]:
                obj = decode(ptxt)  # type: ignore[misc]
                args = obj.get("args") if isinstance(obj, dict) else None
                if args is None:
                    continue
                a = args_text[j] = encode(args).decode("utf-8")  # type: ignore[misc]
            else:
                obj = loads(ptxt, long_ints=long_list[j])
                args = obj.get("args") if isinstance(obj, dict) else None
                if args is None:
                    continue
                a = args_text[j] = canonical_json(args)
            h = cache.get(a)
            if h is None:
                # args_hash(args): a string argument is hashed by the JSON value it holds
                h = cache[a] = (
                    args_hash(args) if isinstance(args, str)
                    else hashlib.sha256(a.encode("utf-8")).hexdigest()[:32]
                )
            hashes[j] = h
    where = _scatter(n, called)
    return (
        pa.array(args_text, type=_STR).take(where),
        pa.array(hashes, type=_STR).take(where),
    )


def _scatter(n: int, rows: np.ndarray) -> pa.Array:
    """Take indices that put ``len(rows)`` values at ``rows`` of ``n`` (null elsewhere)."""
    scatter = np.full(n, -1, dtype=np.int64)
    scatter[rows] = np.arange(len(rows))
    return pa.array(scatter, mask=scatter < 0)


def _type_and_kind(event_type: pa.ChunkedArray | pa.Array) -> dict[str, pa.Array]:
    """``type`` (dictionary-encoded event_type) and ``kind`` (EVENT_KINDS, else "other")."""
    etype = event_type.dictionary_encode()
    if isinstance(etype, pa.ChunkedArray):
        etype = etype.combine_chunks()
    kinds = [EVENT_KINDS.get(t, "other") for t in etype.dictionary.to_pylist()]
    kind_values = sorted(set(kinds))
    kind_code = np.array([kind_values.index(k) for k in kinds], dtype=np.int32)
    t_idx = etype.indices.to_numpy(zero_copy_only=False)
    kind = pa.DictionaryArray.from_arrays(
        pa.array(kind_code[t_idx] if len(kind_code) else np.zeros(0, np.int32)),
        pa.array(kind_values, type=_STR),
    )
    return {"type": etype, "kind": kind}


def _canonical_columns(
    env: pa.Table, typed: pa.Table, hash_col: pa.ChunkedArray | pa.Array
) -> dict[str, Any]:
    """kind, ref_id, event_id, tool_name, args_hash, cache_key, is_error, finish, tokens."""
    tk = _type_and_kind(env.column("event_type"))
    etype, kind = tk["type"], tk["kind"]
    type_names = etype.dictionary.to_pylist()
    t_idx = etype.indices.to_numpy(zero_copy_only=False)

    def is_type(*names: str) -> pa.Array:
        lut = np.fromiter((t in names for t in type_names), dtype=bool, count=len(type_names))
        return pa.array(lut[t_idx] if len(lut) else np.zeros(len(t_idx), dtype=bool))

    def col(name: str) -> pa.ChunkedArray:
        return typed.column(name)

    def pick(mask: pa.Array, values: pa.Array) -> pa.Array:
        return pc.if_else(mask, values, pa.nulls(len(values), values.type))

    def by_type(*pairs: tuple[tuple[str, ...], str]) -> pa.Array:
        """Field ``pairs[k][1]`` on the rows whose type is in ``pairs[k][0]`` (the type sets
        are disjoint), null elsewhere: one pass (choose) over the fields."""
        lut = np.zeros(len(type_names), dtype=np.int8)
        for k, (names, _) in enumerate(pairs, 1):
            lut[[i for i, t in enumerate(type_names) if t in names]] = k
        codes = pa.array(lut[t_idx] if len(lut) else np.zeros(len(t_idx), dtype=np.int8))
        return pc.choose(codes, pa.nulls(len(t_idx), _STR), *(col(f) for _, f in pairs))

    ref = by_type(
        (("model.requested", "model.completed", "tool.called", "tool.completed"), "call_id"),
        (("interrupt.raised", "interrupt.resolved"), "interrupt_id"),
        (("subagent.spawned", "subagent.completed"), "subagent_id"),
        (("turn.started", "turn.completed"), "message_id"),
    )
    event_id = by_type(
        (("message.user",), "message_id"), (("checkpoint.created",), "checkpoint_id"),
        (("export.created",), "export_id"), (("user_card.shown",), "card_id"),
    )
    tools = is_type("tool.called", "tool.completed")
    tool_name = pick(tools, col("tool"))
    model_done = is_type("model.completed")
    finish = pick(model_done, col("finish"))
    usage = typed.column("usage")
    in_tok = pick(model_done, pc.struct_field(usage, "input_tokens"))
    out_tok = pick(model_done, pc.struct_field(usage, "output_tokens"))
    is_error = pc.fill_null(pc.and_(is_type("tool.completed"), col("is_error")), False)
    is_error = pc.or_(is_error, is_type("error.raised"))
    is_error = pc.or_(is_error, pc.fill_null(pc.equal(finish, "error"), False))
    turn = pick(is_type("turn.started", "turn.completed"), col("turn"))
    wide = pc.fill_null(pc.or_(pc.less(turn, -(2**31)), pc.greater(turn, 2**31 - 1)), False)
    if pc.any(wide).as_py():  # a turn beyond the int32 column is read as null, like a bad type
        turn = pc.if_else(wide, pa.scalar(None, turn.type), turn)
    return {
        "type": etype,
        "kind": kind,
        "turn": turn,
        "event_id": event_id,
        "ref_id": ref,
        "tool_name": tool_name,
        "args_hash": hash_col,
        "cache_key": col("cacheKey"),
        "is_error": is_error,
        "finish": finish,
        "input_tokens": in_tok,
        "output_tokens": out_tok,
        "_child": pick(is_type("subagent.spawned"), col("child_chat_id")),
    }


#: The canonical columns read_pleach derives from ``type`` + ``payload`` (and the run):
#: what :func:`derive_columns` re-derives and ``verify_chain`` compares.
DERIVED_COLUMNS: tuple[str, ...] = SCHEMA_DERIVED_COLUMNS  # one list (replaykit.schema)


def _typed_payloads(payload: pa.Array, *, threads: bool = True) -> pa.Table:
    """The typed payload fields of payload texts, read exactly as the loader reads them.

    One Arrow parse when every text is a JSON object Arrow can read with the typed schema;
    otherwise the texts are decoded one by one (:func:`_typed_from_objects`: a field of
    another JSON type is null, as Arrow's typed parse would have refused it). A text that
    is not a JSON object (possible only in a tampered table) reads as ``{}``.
    ``threads=False`` keeps Arrow's parse on the calling thread (the same table). The
    native core reads the column in one pass when it is sure of every value
    (:func:`_native_typed`); the rest is this reference reading.
    """
    if _native.enabled():
        typed = _native_typed(payload)
        if typed is not None:
            return typed
    if _all_open_objects(payload) or pc.all(pc.fill_null(
            pc.starts_with(pc.utf8_ltrim_whitespace(payload), "{"), False)).as_py() is not False:
        if pc.any(pc.match_substring(payload, "\n")).as_py():
            payload = pc.replace_substring(payload, "\n", " ")  # whitespace: one line each
        typed = _parse_payloads(payload, threads=threads)
        if typed is not None:
            return typed
    objs: list[dict[str, Any]] = []
    for text in payload.to_pylist():  # only for tables Arrow cannot read column-wise
        try:
            obj = loads(text) if text is not None else None
        except JSONDecodeError:
            obj = None
        objs.append(obj if isinstance(obj, dict) else {})
    return _typed_from_objects(objs)


def _native_typed(payload: pa.Array) -> pa.Table | None:
    """The native core's reading of the typed payload fields (``replaykit._core``
    ``typed_payloads``), or None when it is not sure of some value (then the reference
    parses the column). The same table as Arrow's typed parse: a field of another JSON type,
    a key with escapes, a duplicate field or anything but one strict JSON object per value
    makes it None."""
    if payload.null_count:
        return None
    binary = payload.cast(pa.large_binary())
    got = _native.core().typed_payloads(*_native.spans(binary))
    if got is None:
        return None
    cols = {name: _native.to_arrow(col) for name, col in got}
    usage = pa.StructArray.from_arrays(
        [cols.pop("input_tokens"), cols.pop("output_tokens")],
        fields=list(_TYPED.field("usage").type),
        mask=pc.invert(cols.pop("usage")),
    )
    cols["is_error"] = pc.cast(cols["is_error"], pa.bool_())
    cols["usage"] = usage
    return pa.Table.from_arrays([cols[f.name] for f in _TYPED], schema=_TYPED)


def _all_open_objects(payload: pa.Array) -> bool:
    """True when every value of a large_string array is non-null and starts with ``{``
    (one gather over the offsets; False does not mean some value is not an object)."""
    n = len(payload)
    if payload.null_count or not n:
        return False
    offs = np.frombuffer(payload.buffers()[1], dtype=np.int64)[payload.offset:][: n + 1]
    if not (offs[1:] > offs[:-1]).all():
        return False
    data = np.frombuffer(payload.buffers()[2], dtype=np.uint8)
    return bool((data[offs[:-1]] == ord("{")).all())


def _derive_inputs(table: pa.Table) -> tuple[pa.Array, pa.Array]:
    """``type`` as plain strings (null as ``""``) and ``payload`` as large_string."""

    def plain(name: str) -> pa.Array:
        col = table.column(name)
        arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        return arr.cast(arr.type.value_type) if pa.types.is_dictionary(arr.type) else arr

    return pc.fill_null(plain("type").cast(_STR), ""), plain("payload").cast(pa.large_string())


def table_tool_args(table: pa.Table) -> tuple[pa.Array, pa.Array]:
    """Canonical ``args`` text and its hash of each tool.called row of ``table`` (null
    elsewhere), as :func:`derive_columns` derives them (``text`` and ``args_hash``); needs
    only ``type`` and ``payload``, so a verifier can run it apart from the typed parse."""
    etype, payload = _derive_inputs(table)
    n = table.num_rows
    return _tool_args(_Part(env=pa.table({"event_type": etype}), created_at=pa.nulls(n, _STR),
                            payload=payload, typed=pa.table({}), line=np.zeros(n, np.int64)), {})


def derive_columns(table: pa.Table, *, typed: pa.Table | None = None,
                   tool_args: tuple[pa.Array, pa.Array] | None = None
                   ) -> dict[str, pa.Array]:
    """The :data:`DERIVED_COLUMNS` that read_pleach would give the rows of ``table``.

    ``table`` is a canonical events table (or any table with ``tenant_id``, ``run_id``,
    ``type`` and ``payload``) sorted by (tenant_id, run_id, seq). The derivation is the
    loader's own code (:func:`_tool_args`, :func:`_canonical_columns`, :func:`_fill_derived`),
    column-wise, so a verifier can check stored derived columns against the hashed
    content (``replaykit.verify_chain``). ``turn`` is carried forward within each run and
    ``parent_run_id`` comes from ``subagent.spawned`` rows of the same tenant in ``table``.
    ``typed`` is ``_typed_payloads`` of the table's payloads when the caller has it already
    (e.g. parsed on another thread), ``tool_args`` likewise :func:`table_tool_args` of
    ``table``. Values have the canonical types, except that columns
    the schema dictionary-encodes other than ``kind`` and ``parent_run_id`` are plain
    strings (compare values, not encodings).

    >>> log = read_pleach("data/pleach/harness_event_log.jsonl")  # doctest: +SKIP
    >>> stored = log.table.column("tool_name").cast(pa.string())  # doctest: +SKIP
    >>> derive_columns(log.table)["tool_name"].equals(stored.combine_chunks())  # doctest: +SKIP
    True
    """
    cols, sources = _derived(table, typed=typed, tool_args=tool_args)
    cols["text"] = _text_column(sources)
    return {name: cols[name] for name in DERIVED_COLUMNS}


def _text_column(sources: list[Any]) -> pa.Array:
    """``text``: the first non-null of its sources (:func:`_derived`), as large_string."""
    text = pc.coalesce(*sources)
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    return text.cast(pa.large_string())


def _derived(table: pa.Table, *, typed: pa.Table | None = None,
             tool_args: tuple[pa.Array, pa.Array] | None = None
             ) -> tuple[dict[str, pa.Array], list[Any]]:
    """:func:`derive_columns` but ``text``, and the columns ``text`` coalesces (the first
    non-null of them, in order), so a verifier can compare ``text`` without building it."""
    n = table.num_rows
    etype, payload = _derive_inputs(table)
    env = pa.table({"event_type": etype})
    if typed is None:
        typed = _typed_payloads(payload)
    if tool_args is None:
        tool_args = _tool_args(_Part(env=env, created_at=pa.nulls(n, _STR), payload=payload,
                                     typed=typed, line=np.zeros(n, dtype=np.int64)), {})
    args, hashes = tool_args
    cols = _canonical_columns(env, typed, hashes)  # as _slim makes them for the loader
    sources = [args, *(typed.column(c) for c in _TEXT_FIELDS)]
    return _derived_from(table, cols, sources)


def _derived_from(table: pa.Table, cols: dict[str, Any], sources: list[Any]
                  ) -> tuple[dict[str, pa.Array], list[Any]]:
    """:func:`_derived` from the row-wise canonical columns (:func:`_canonical_columns`'
    names, ``turn`` not yet carried forward) and the ``text`` sources: the per-run columns
    (``turn``, ``parent_run_id``) and the schema's value types."""
    n = table.num_rows
    cols = dict(cols)
    child = cols.pop("_child")

    def keys(name: str) -> pa.Array:
        col = table.column(name)
        arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        arr = arr if pa.types.is_dictionary(arr.type) else pc.cast(arr, _STR).dictionary_encode()
        return arr.cast(EVENTS_SCHEMA.field(name).type)

    runs = pa.Table.from_arrays(
        [keys("tenant_id"), keys("run_id"), pc.cast(cols.pop("turn"), pa.int32()),
         pa.nulls(n, EVENTS_SCHEMA.field("parent_run_id").type)],
        schema=pa.schema([EVENTS_SCHEMA.field(c) for c in ("tenant_id", "run_id", "turn",
                                                            "parent_run_id")]),
    )
    runs = _fill_derived(runs, child)  # turn carried forward, parent_run_id from spawns
    out: dict[str, pa.Array] = {}
    for name in DERIVED_COLUMNS:
        if name == "text":
            continue
        typ = EVENTS_SCHEMA.field(name).type
        if name in ("turn", "parent_run_id"):
            arr = runs.column(name).combine_chunks()
        elif name == "kind":
            arr = cols["kind"]
        elif name in cols:
            arr = cols[name]
            arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
            value_type = typ.value_type if pa.types.is_dictionary(typ) else typ
            arr = arr if arr.type == value_type else arr.cast(value_type)
        elif name == "inherited":
            arr = pa.array(np.zeros(n, dtype=bool))
        else:  # step, chunk_type: pleach has neither
            arr = pa.nulls(n, typ.value_type if pa.types.is_dictionary(typ) else typ)
        out[name] = arr
    return out, sources


def _type_codes(event_type: pa.ChunkedArray | pa.Array) -> np.ndarray | None:
    """The native core's event type code of each row (``replaykit._core.EVENT_TYPES``'
    index; 255: another type, or null), or None when ``event_type`` is not text."""
    arr = event_type.combine_chunks() if isinstance(event_type, pa.ChunkedArray) else event_type
    try:
        if not pa.types.is_dictionary(arr.type):
            arr = arr.cast(_STR).dictionary_encode()
        names = arr.dictionary.cast(_STR).to_pylist()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    known = {t: i for i, t in enumerate(_native.core().EVENT_TYPES)}
    lut = np.array([known.get(t, 255) for t in names] + [255], dtype=np.uint8)
    idx = pc.fill_null(arr.indices, len(names)).to_numpy(zero_copy_only=False)
    return lut[idx]


def _one_array(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    """``col`` as one array without a copy when it has one chunk (Arrow's ``combine_chunks``
    copies even one: the payload of 300,000 rows is ~47 MB)."""
    if isinstance(col, pa.ChunkedArray):
        return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    return col


def native_derived(table: pa.Table) -> tuple[dict[str, pa.Array], list[Any]] | None:
    """:func:`_derived` of ``table`` by the native core (``replaykit._core.derive_pleach``:
    one pass over the payloads, GIL released, every core), or None when the core is off or
    not sure of some payload (then :func:`_derived` is the answer). The same columns; the
    ``text`` sources are the one ``text`` column (its coalesce, the same first non-null)."""
    if not _native.enabled() or not table.num_rows:
        return None
    typ = _one_array(table.column("type"))
    if (pa.types.is_dictionary(typ.type) and not typ.null_count
            and not typ.dictionary.null_count):
        # the stored encoding as it is (kind follows each value; `type` is not compared)
        pl = _one_array(table.column("payload"))  # (a loaded log's: one chunk, not copied)
        pl = pl.cast(pl.type.value_type) if pa.types.is_dictionary(pl.type) else pl
        etype, payload = typ, pl.cast(pa.large_string())  # (as _derive_inputs reads it)
    else:
        etype, payload = _derive_inputs(table)
    if payload.null_count:
        return None
    codes = _type_codes(typ)
    if codes is None:
        return None
    got = _native.core().derive_pleach(codes, *_native.spans(payload))
    if got is None:
        return None
    rows, native_cols = got
    cols = {name: _native.to_arrow(col) for name, col in native_cols}
    text, args = cols.pop("text"), cols.pop("args")
    py_rows = np.frombuffer(rows, dtype=np.int64)
    if len(py_rows):  # arguments given as a JSON string: hashed as the reference hashes them
        idx = pa.array(py_rows)
        hashes = [args_hash(loads(a)) for a in args.take(idx).to_pylist()]
        where = np.full(table.num_rows, -1, dtype=np.int64)
        where[py_rows] = np.arange(len(py_rows))
        patch = pa.array(hashes, _STR).take(pa.array(where, mask=where < 0))
        cols["args_hash"] = pc.coalesce(cols["args_hash"], patch)
    cols.update(_type_and_kind(etype))
    return _derived_from(table, cols, [text])


def _segments(table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """Start index and length of each (tenant_id, run_id) run in a sorted events table."""
    n = table.num_rows
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    t = table.column("tenant_id").combine_chunks().indices.to_numpy(zero_copy_only=False)
    r = table.column("run_id").combine_chunks().indices.to_numpy(zero_copy_only=False)
    change = np.ones(n, dtype=bool)
    change[1:] = (t[1:] != t[:-1]) | (r[1:] != r[:-1])
    starts = np.flatnonzero(change)
    lengths = np.diff(np.append(starts, n))
    return starts, lengths


def _strings(col: pa.ChunkedArray | pa.Array) -> list[Any]:
    """``col.to_pylist()``, decoded from a dictionary first (much faster for dictionaries)."""
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    return col.to_pylist()


def _fill_derived(table: pa.Table, child: pa.Array) -> pa.Table:
    """Carry ``turn`` forward within each run; set parent_run_id from subagent.spawned."""
    n = table.num_rows
    if n == 0:
        return table
    starts, lengths = _segments(table)
    seg_start = np.repeat(starts, lengths)
    # turn: the latest turn.started/turn.completed value at or before each row of the run
    turn_col = table.column("turn").combine_chunks()
    valid = np.asarray(turn_col.is_valid())
    last = np.maximum.accumulate(np.where(valid, np.arange(n), -1))
    ok = last >= seg_start
    values = turn_col.fill_null(0).to_numpy(zero_copy_only=False)
    turn = pa.array(values[np.maximum(last, 0)], type=pa.int32(), mask=~ok)
    # parent_run_id: chat named as child_chat_id by a subagent.spawned row of the same tenant
    parents: dict[tuple[str, str], str] = {}
    spawn_rows = np.flatnonzero(np.asarray(child.is_valid()))
    if len(spawn_rows):
        idx = pa.array(spawn_rows)
        tenants = _strings(table.column("tenant_id").take(idx))
        runs = _strings(table.column("run_id").take(idx))
        for t, r, c in zip(tenants, runs, child.take(idx).to_pylist(), strict=True):
            parents.setdefault((t, c), r)
    cols = {"turn": turn}
    if parents:
        seg_idx = pa.array(starts)
        seg_t = _strings(table.column("tenant_id").take(seg_idx))
        seg_r = _strings(table.column("run_id").take(seg_idx))
        seg_parent = [parents.get((t, r)) for t, r in zip(seg_t, seg_r, strict=True)]
        parent = pa.array(seg_parent, type=_STR).take(
            pa.array(np.repeat(np.arange(len(starts)), lengths))
        )
        cols["parent_run_id"] = parent.dictionary_encode().cast(
            table.schema.field("parent_run_id").type
        )
    for name, arr in cols.items():
        i = table.schema.get_field_index(name)
        table = table.set_column(i, table.schema.field(name), arr)
    return table
