"""The canonical table of all files at once, column-wise: run ids and parents, one ordering over
rows and members, implicit sequence numbers, duplicates, model-call ids and the runs table.
"""

from __future__ import annotations

import importlib
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._base.json import (
    HAVE_ORJSON,
    canonical_json,
)
from ...eventlog.log import RUNS_SCHEMA
from ...schema import EVENTS_SCHEMA
from .._common import (
    Quarantine,
)
from ._packed import _json_strings, _member_payloads
from ._shapes import (
    _CHUNK_OF_CODE,
    _RARE_FIELDS,
    _ROW_FIELDS,
    FORMAT,
    KIND_OF_TYPE,
    OrphanRunWarning,
    _FileCtx,
    _Rows,
)


# --------------------------------------------------------------------------- assembly
def _run_ids(ctxs: list[_FileCtx]) -> tuple[list[str | None], list[str | None]]:
    """run_id and parent_run_id per file (None for files without a valid header)."""
    ok = [c for c in ctxs if c.header is not None]
    by_id: dict[str, list[_FileCtx]] = {}
    for c in ok:
        by_id.setdefault(c.header["id"], []).append(c)  # type: ignore[index]
    root = Path(os.path.commonpath([str(c.path.resolve().parent) for c in ok])) if ok else None
    run_of: dict[int, str] = {}
    for hid, group in by_id.items():
        for c in group:
            if len(group) == 1:
                run_of[c.fi] = hid
            else:
                rel = c.path.resolve().relative_to(root).as_posix()  # type: ignore[arg-type]
                run_of[c.fi] = f"{hid}@{rel}"
    run_ids: list[str | None] = [run_of.get(c.fi) for c in ctxs]
    parents: list[str | None] = [None] * len(ctxs)
    for c in ok:
        ps = c.header.get("parentSession")  # type: ignore[union-attr]
        if ps is None:
            continue
        cands = [p for p in by_id.get(ps, []) if p.fi != c.fi]
        same_dir = [p for p in cands if p.path.resolve().parent == c.path.resolve().parent]
        pick = same_dir[0] if same_dir else (cands[0] if len(cands) == 1 else None)
        if pick is not None:
            parents[c.fi] = run_of[pick.fi]
            continue
        parents[c.fi] = ps
        why = (
            f"{len(cands)} loaded logs have that id, none in the same folder"
            if cands
            else "no loaded log has that id"
        )
        warnings.warn(
            f"{c.path}: child session {c.header['id']!r} names parentSession {ps!r}, but "  # type: ignore[index]
            f"{why}; it is loaded with parent_run_id={ps!r}. Load the parent's log too "
            "to link them.",
            OrphanRunWarning,
            stacklevel=3,
        )
    return run_ids, parents


def _runs_table(ctxs: list[_FileCtx], run_ids: list, parents: list, tenant: str) -> pa.Table:
    recs: dict[str, list] = {f.name: [] for f in RUNS_SCHEMA}
    for c in ctxs:
        if c.header is None:
            continue
        h = c.header
        ca = h.get("createdAt")
        recs["tenant_id"].append(tenant)
        recs["run_id"].append(run_ids[c.fi])
        recs["parent_run_id"].append(parents[c.fi])
        recs["format"].append(FORMAT)
        recs["source"].append(f"{FORMAT}:{c.path}")
        recs["created_at"].append(int(round(ca * 1000)) if ca is not None else None)
        recs["attrs"].append(
            canonical_json({k: v for k, v in h.items() if k not in ("type", "createdAt")})
        )
    cols = {k: v for k, v in recs.items() if k != "created_at"}
    t = pa.table(
        {**cols, "created_at": pa.array(recs["created_at"], pa.int64())},
    )
    return pa.table(
        [t.column(f.name).cast(f.type) for f in RUNS_SCHEMA], schema=RUNS_SCHEMA
    )


def _fill_tool_result_names(kind_idx: np.ndarray, kinds: list[str], fi: np.ndarray,
                            ref: pa.Array, name: pa.Array) -> pa.Array:  # fmt: skip
    """tool_name on tool_result rows from the tool_call row with the same (file, ref_id)."""
    if "tool_call" not in kinds or "tool_result" not in kinds:
        return name
    is_call = kind_idx == kinds.index("tool_call")
    is_res = kind_idx == kinds.index("tool_result")
    if not is_call.any() or not is_res.any():
        return name
    base = pa.table({"fi": fi, "ref": ref, "name": name, "pos": np.arange(len(fi))})
    calls = base.filter(pa.array(is_call)).filter(pc.is_valid(pc.field("ref"))
                                                  & pc.is_valid(pc.field("name")))
    calls = calls.group_by(["fi", "ref"], use_threads=False).aggregate([("name", "first")])
    res = base.filter(pc.and_(pa.array(is_res), pc.is_null(name))).select(["fi", "ref", "pos"])
    joined = res.join(calls, ["fi", "ref"], join_type="inner", use_threads=False)
    if not joined.num_rows:
        return name
    joined = joined.sort_by("pos")
    mask = np.zeros(len(fi), dtype=bool)
    mask[joined.column("pos").to_numpy()] = True
    return pc.replace_with_mask(name, pa.array(mask), joined.column("name_first").combine_chunks())


def _ascending(*keys: np.ndarray) -> bool:
    """True when the rows are already in lexicographic order of ``keys`` (a sort by them,
    stable, would leave them in place)."""
    if len(keys[0]) < 2:
        return True
    ok = np.zeros(len(keys[0]) - 1, dtype=bool)  # a row is in order after its predecessor
    tie = np.ones(len(ok), dtype=bool)  # all keys so far equal
    for key in keys:
        d = np.diff(key)
        ok |= tie & (d > 0)
        tie &= d == 0
    return bool((ok | tie).all())


def _call_ids(type_idx: np.ndarray, types: list[str], fi: np.ndarray, turn: pa.Array,
              step: pa.Array, is_finish: np.ndarray) -> pa.Array:  # fmt: skip
    """Synthetic model-call ids ``t{turn}.s{step}.c{k}`` for assistant/chunk and message rows.

    The ids are written once per run of rows sharing one id, then taken into place.
    """
    n = len(type_idx)
    out = pa.nulls(n, pa.string())
    code_c = types.index("assistant/chunk") if "assistant/chunk" in types else -1
    code_m = types.index("assistant/message") if "assistant/message" in types else -1
    is_c = type_idx == code_c
    is_m = type_idx == code_m
    sel = np.flatnonzero(is_c | is_m)
    if not len(sel):
        return out
    tn = pc.fill_null(turn, -(2**31)).to_numpy()[sel].astype(np.int64)
    sp = pc.fill_null(step, -(2**31)).to_numpy()[sel].astype(np.int64)
    f = fi[sel]
    order = np.arange(len(sel)) if _ascending(f, tn, sp) else np.lexsort((sel, sp, tn, f))
    s_sel = sel[order]
    s_tn, s_sp, s_f = tn[order], sp[order], f[order]
    s_c = is_c[s_sel]
    fin = is_finish[s_sel] & s_c
    m = len(s_sel)
    new_grp = np.ones(m, dtype=bool)
    new_grp[1:] = (s_f[1:] != s_f[:-1]) | (s_tn[1:] != s_tn[:-1]) | (s_sp[1:] != s_sp[:-1])
    gstart = np.maximum.accumulate(np.where(new_grp, np.arange(m), 0))
    cum = np.cumsum(fin)
    base = np.where(gstart > 0, cum[gstart - 1], 0)
    k_chunk = cum - fin - base  # finishes before this row within its (file, turn, step)
    last_c = np.maximum.accumulate(np.where(s_c, np.arange(m), -1))
    has_c = (last_c >= gstart) & (last_c >= 0)
    k = np.where(s_c, k_chunk, k_chunk[np.maximum(last_c, 0)])
    valid = s_c | has_c
    # one id per run of consecutive rows with the same (turn, step, k)
    new_id = new_grp.copy()
    new_id[1:] |= k[1:] != k[:-1]
    run = np.cumsum(new_id) - 1
    heads = np.flatnonzero(new_id)
    h_tn, h_sp = s_tn[heads], s_sp[heads]
    ts = pc.cast(pa.array(h_tn), pa.string())
    ts = pc.if_else(pa.array(h_tn == -(2**31)), "", ts)
    ss = pc.cast(pa.array(h_sp), pa.string())
    ss = pc.if_else(pa.array(h_sp == -(2**31)), "", ss)
    ids = pc.binary_join_element_wise("t", ts, ".s", ss, ".c",
                                      pc.cast(pa.array(k[heads]), pa.string()), "")  # fmt: skip
    # scatter: position -> its run's id (other rows and rows without a call stay null)
    idx = np.zeros(n, dtype=np.int64)
    ok = np.zeros(n, dtype=bool)
    idx[s_sel] = run
    ok[s_sel] = valid
    return ids.take(pa.array(idx, mask=~ok))


def _dict_first(row_vals: pa.Array, mem_codes: np.ndarray, mem_values: list[str],
                order: np.ndarray) -> tuple[pa.DictionaryArray, list[str], np.ndarray]:  # fmt: skip
    """The dictionary column of rows' values then members' (``mem_values[mem_codes]``), taken
    in ``order``: the same array as ``dictionary_encode`` of that string column (dictionary
    in order of first appearance), built without the per-row strings. Also returns the
    dictionary as a list and the codes (-1 for null)."""
    rd = row_vals.dictionary_encode()
    values = rd.dictionary.to_pylist()
    values += [v for v in mem_values if v not in values]
    pos = {v: i for i, v in enumerate(values)}
    mem_map = np.array([pos[v] for v in mem_values], dtype=np.int64)
    r_idx = pc.fill_null(rd.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    codes = np.concatenate([r_idx, mem_map[mem_codes]])[order]
    valid = codes >= 0
    seen = np.zeros(len(values), dtype=bool)
    first = np.full(len(values), len(codes), dtype=np.int64)
    for c in range(len(values)):  # a handful of distinct values
        hit = codes == c
        if hit.any():
            seen[c] = True
            first[c] = int(np.argmax(hit))
    by_first = [c for c in np.argsort(first, kind="stable").tolist() if seen[c]]
    renum = np.full(len(values), -1, dtype=np.int64)
    renum[by_first] = np.arange(len(by_first))
    new = np.where(valid, renum[np.maximum(codes, 0)], -1)
    dictionary = [values[c] for c in by_first]
    arr = pa.DictionaryArray.from_arrays(
        pa.array(np.maximum(new, 0).astype(np.int32), mask=~valid),
        pa.array(dictionary, pa.string()))
    return arr, dictionary, new


_META_INT = ("fi", "line", "code", "turn", "step", "index", "seq0", "time0", "n")


def _packed_columns(acc: _Rows) -> tuple[dict[str, Any], np.ndarray, pa.Array, pa.Array,
                                         list[pa.Array]]:  # fmt: skip
    """The packed lines of both kinds (read line by line, and proven column-wise), as
    (per-line columns, gaps with a 0 in front of each line's, member texts, their JSON string
    literals, the proven members' payloads). Lines read line by line come first (the first
    ``p_old`` lines, ``m_old`` members), then the proven ones, file by file."""
    p = len(acc.p_meta)
    pm = list(zip(*acc.p_meta, strict=True)) if p else [()] * 11
    old = dict(zip(("fi", "line", "code", "turn", "step", "index", "seq0", "time0", "n", "id",
                    "name"), pm, strict=True))  # fmt: skip
    acc.p_meta = []
    cols: dict[str, list[np.ndarray]] = {name: [] for name in (*_META_INT, "id", "name",
                                                               "has_seq0", "has_time0")}
    for name in ("seq0", "time0"):
        has = np.array([v is not None for v in old[name]], dtype=bool).reshape(p)
        cols["has_" + name].append(has)
        cols[name].append(np.where(has, np.asarray(old[name], dtype=object), 0).astype(np.int64))
    for name in ("fi", "line", "code", "turn", "step", "index", "n"):
        cols[name].append(np.asarray(old[name], dtype=np.int64).reshape(p))
    for name in ("id", "name"):
        cols[name].append(np.asarray(old[name], dtype=object).reshape(p))
    dts = [np.asarray(acc.p_dt, dtype=np.int64)]
    acc.p_dt = []
    texts = [pa.array(acc.p_texts, pa.large_string())]
    acc.p_texts = []
    esc = [_json_strings(texts[0])]
    for fi, c in acc.p_cols:
        m = len(c.line)
        zero = np.zeros(m, dtype=np.int64)
        for name, v in (("fi", np.full(m, fi, dtype=np.int64)), ("line", c.line),
                        ("code", c.code), ("turn", c.turn), ("step", c.step),
                        ("index", c.index), ("n", c.n), ("seq0", zero), ("time0", zero),
                        ("id", c.id_json), ("name", c.name_json),
                        ("has_seq0", zero.astype(bool)), ("has_time0", zero.astype(bool))):
            cols[name].append(v)
        gaps = np.zeros(int(c.n.sum()), dtype=np.int64)  # 0, then the line's gaps
        rest = np.ones(len(gaps), dtype=bool)
        rest[np.cumsum(c.n) - c.n] = False
        gaps[rest] = c.dt
        dts.append(gaps)
        texts.append(c.texts)
        esc.append(c.esc)
    proven = [(c.payload if c.payload is not None else c.member_payloads()).cast(
        pa.large_string()) for _, c in acc.p_cols]
    acc.p_cols = []
    meta: dict[str, Any] = {name: np.concatenate(v) for name, v in cols.items()}
    meta["p_old"], meta["m_old"] = p, len(texts[0])
    return (meta, np.concatenate(dts), pa.concat_arrays(texts).cast(pa.large_string()),
            pa.concat_arrays(esc).cast(pa.large_string()), proven)


#: the rows' columns and their types (rows read line by line, then rows proven column-wise)
_ROW_TYPES = {
    "type": pa.string(), "payload": pa.large_string(), "turn": pa.int64(), "step": pa.int64(),
    "chunk_type": pa.string(), "text": pa.large_string(), "seq": pa.int64(),
    "time": pa.float64(), "ref_id": pa.string(), "tool_name": pa.string(),
    "args_hash": pa.string(), "cache_key": pa.string(), "is_error": pa.bool_(),
    "finish": pa.string(), "input_tokens": pa.int64(), "output_tokens": pa.int64(),
    "event_id": pa.string(),
}  # fmt: skip


def _row_columns(r: dict[str, Any], r_fi: np.ndarray, r_line: np.ndarray, acc: _Rows
                 ) -> tuple[np.ndarray, np.ndarray, dict[str, pa.Array]]:  # fmt: skip
    """(file index, line, columns) of all non-packed rows: those read line by line (``r``,
    lists) followed by those proven column-wise (``acc.r_cols``)."""
    parts: dict[str, list[pa.Array]] = {}
    for name, typ in _ROW_TYPES.items():
        if name == "payload":
            a = pa.array(r[name], pa.binary() if HAVE_ORJSON else pa.large_string())
            a = a.cast(typ)
        else:
            a = pa.array(r[name], typ)
        parts[name] = [a]
    fis, lns = [r_fi], [r_line]
    for fi, c in acc.r_cols:
        m = len(c.line)
        fis.append(np.full(m, fi, dtype=np.int64))
        lns.append(c.line)
        given = {"type": pa.repeat(pa.scalar(c.type, pa.string()), m), "payload": c.payload,
                 "turn": c.turn, "step": c.step, "chunk_type": c.chunk_type,
                 "is_error": c.is_error, "finish": c.finish, "input_tokens": c.input_tokens,
                 "output_tokens": c.output_tokens}  # fmt: skip
        for name, typ in _ROW_TYPES.items():
            a = given.get(name)
            parts[name].append(pa.nulls(m, typ) if a is None else a.cast(typ))
    acc.r_cols = []
    cols = {name: pa.concat_arrays(v) if len(v) > 1 else v[0] for name, v in parts.items()}
    return np.concatenate(fis), np.concatenate(lns), cols


def _assemble(ctxs: list[_FileCtx], acc: _Rows, tenant: str, q: Quarantine
              ) -> tuple[pa.Table, pa.Table]:  # fmt: skip
    run_ids, parents = _run_ids(ctxs)
    runs = _runs_table(ctxs, run_ids, parents, tenant)
    native = acc.n_parts
    acc.n_parts = []
    if not native:
        ev = _reference_events(acc)
    elif not (acc.rows or acc.p_meta or acc.phantoms or acc.p_cols or acc.r_cols):
        ev = _nativepath().native_events(native)
    else:  # some files read by the reference: both parts, merged by file (call ids are
        # per file: the reference part's are computed before the merge)
        ref = _reference_events(acc)
        ref["call_ids"] = _event_call_ids(ref)
        ev = _nativepath().merge_events(ref, _nativepath().native_events(native))
    return _finish(ctxs, ev, run_ids, parents, tenant, q), runs


def _nativepath() -> Any:
    """The module ``_nativepath`` (imported by name, see ``_lines._nativepath``)."""
    return importlib.import_module("replaykit.io.toh._nativepath")


def _reference_events(acc: _Rows) -> dict[str, Any]:
    """The events of the files read by the reference path (``acc``), in (file, line, member)
    order, as the columns :func:`_finish` takes."""
    # ---- non-packed rows -> columns
    k_rows = len(acc.rows)
    cols: list[Any] = list(zip(*acc.rows, strict=True)) if k_rows else [()] * len(_ROW_FIELDS)
    acc.rows = []
    r: dict[str, Any] = dict(zip(_ROW_FIELDS, cols, strict=True))
    r_fi = np.fromiter(r["fi"], np.int64, k_rows)
    r_line = np.fromiter(r["line"], np.int64, k_rows)
    # sparse fields: scatter into object arrays (numpy does the loop)
    rare_cols = list(zip(*acc.rare, strict=True)) if acc.rare else [()] * (3 + len(_RARE_FIELDS))
    acc.rare = []
    rare_idx = np.asarray(rare_cols[0], dtype=np.int64)
    for name, vals in zip(("seq", "time", *_RARE_FIELDS), rare_cols[1:], strict=True):
        full = np.full(k_rows, False if name == "is_error" else None, dtype=object)
        if len(rare_idx):
            full[rare_idx] = np.asarray(vals, dtype=object)
        r[name] = full.tolist()  # pa.array converts lists much faster than object arrays
    r_fi, r_line, ra = _row_columns(r, r_fi, r_line, acc)
    k_rows = len(r_fi)
    r_seq = ra["seq"]
    r_time = ra["time"]

    # ---- packed rows -> members (column-wise)
    meta, dt, m_texts, m_esc, m_proven = _packed_columns(acc)
    p = len(meta["fi"])
    n_mem = meta["n"]
    m_total = int(n_mem.sum())
    rep = np.repeat(np.arange(p), n_mem)
    line_first = np.cumsum(n_mem) - n_mem
    k = np.arange(m_total) - line_first[rep]
    # cumulative dt within each packed line (dt[first] is the 0 we put in front)
    cdt = np.cumsum(dt) - np.repeat(np.cumsum(dt)[line_first] - dt[line_first], n_mem) \
        if m_total else dt  # fmt: skip
    has_seq0, seq0 = meta["has_seq0"], meta["seq0"]
    has_time0, time0 = meta["has_time0"], meta["time0"]
    m_has_seq = has_seq0[rep]
    m_has_time = has_time0[rep]
    m_seq = seq0[rep] + k
    m_time = time0[rep] + cdt
    # the members' payload texts are built on a second thread (Arrow releases the GIL) while
    # this one orders the rows and builds the other columns
    # (packed rows proven column-wise came with theirs, built while the file was read)
    p_old, m_old = meta.pop("p_old"), meta.pop("m_old")
    pool = ThreadPoolExecutor(1)
    if m_old:
        o = slice(0, int(m_old))
        m_payload_f = pool.submit(_member_payloads, {f: v[: int(p_old)] for f, v in meta.items()},
                                  rep[o], k[o], m_esc[o], m_seq[o], m_time[o], m_has_seq[o],
                                  m_has_time[o])  # fmt: skip
    else:
        m_payload_f = pool.submit(pa.array, [], pa.large_string())
    pool.shutdown(wait=False)
    m_code = meta["code"][rep] if p else np.zeros(0, np.int64)

    # ---- phantoms (quarantined lines keep their implicit-seq slots)
    ph = np.asarray(acc.phantoms, dtype=np.int64).reshape(-1, 3)

    # ---- one ordering over rows, members and phantoms: (file, line, member k)
    n_all = k_rows + m_total + len(ph)
    e_fi = np.concatenate([r_fi, meta["fi"][rep] if p else np.zeros(0, np.int64), ph[:, 0]])
    e_line = np.concatenate([r_line, meta["line"][rep] if p else np.zeros(0, np.int64), ph[:, 1]])
    e_k = np.concatenate([np.zeros(k_rows, np.int64), k, np.zeros(len(ph), np.int64)])
    weight = np.concatenate([np.ones(k_rows + m_total, np.int64), ph[:, 2]])
    order = np.lexsort((e_k, e_line, e_fi))
    w = weight[order]
    f_sorted = e_fi[order]
    cw = np.cumsum(w) - w
    first = np.ones(n_all, dtype=bool)
    first[1:] = f_sorted[1:] != f_sorted[:-1]
    file_base = np.maximum.accumulate(np.where(first, np.arange(n_all), 0))
    implicit = cw - cw[file_base]
    real = order < (k_rows + m_total)
    order = order[real]
    implicit = implicit[real]

    def combine(row_vals: Any, mem_vals: Any, typ: pa.DataType) -> pa.Array:
        a = row_vals if isinstance(row_vals, pa.Array) else pa.array(row_vals, typ)
        b = mem_vals if isinstance(mem_vals, pa.Array) else pa.array(mem_vals, typ)
        if a.type != typ:
            a = a.cast(typ)
        if b.type != typ:
            b = b.cast(typ)
        return pa.concat_arrays([a, b]).take(pa.array(order))

    fi = np.concatenate([r_fi, meta["fi"][rep] if p else np.zeros(0, np.int64)])[order]
    line = np.concatenate([r_line, meta["line"][rep] if p else np.zeros(0, np.int64)])[order]
    explicit = combine(r_seq, pa.array(m_seq, mask=~m_has_seq), pa.int64())
    seq = np.where(np.asarray(pc.is_valid(explicit)),
                   np.asarray(pc.fill_null(explicit, 0)), implicit).astype(np.int64)  # fmt: skip
    time_ms = combine(r_time, pa.array(m_time.astype(np.float64), mask=~m_has_time), pa.float64())

    type_dict, _, _ = _dict_first(
        ra["type"], np.zeros(m_total, np.int64), ["assistant/chunk"], order)
    turn = combine(ra["turn"], meta["turn"][rep] if p else [], pa.int32())
    step = combine(ra["step"], meta["step"][rep] if p else [], pa.int32())
    chunk_dict, _, _ = _dict_first(ra["chunk_type"], m_code, list(_CHUNK_OF_CODE), order)
    text = combine(ra["text"], m_texts, pa.large_string())
    m_payload = pa.concat_arrays([m_payload_f.result().cast(pa.large_string()), *m_proven])
    payload = combine(ra["payload"], m_payload, pa.large_string())

    is_row = order < k_rows
    row_take = pa.array(np.where(is_row, order, 0), mask=~is_row)

    def rows_only(name: str, typ: pa.DataType) -> pa.Array:
        return ra[name].cast(typ).take(row_take)

    return {
        "fi": fi, "line": line, "seq": seq, "time_ms": time_ms, "type": type_dict,
        "turn": turn, "step": step, "chunk_type": chunk_dict, "text": text, "payload": payload,
        "is_error": combine(ra["is_error"], pa.array(np.zeros(m_total, bool)), pa.bool_()),
        **{name: rows_only(name, typ) for name, typ in _ROWS_ONLY.items()},
    }  # fmt: skip


#: the columns only non-packed rows have (members' are null), and their types
_ROWS_ONLY = {
    "ref_id": pa.string(), "tool_name": pa.string(), "event_id": pa.string(),
    "args_hash": pa.string(), "cache_key": pa.string(), "finish": pa.string(),
    "input_tokens": pa.int64(), "output_tokens": pa.int64(),
}  # fmt: skip


def _codes(d: pa.DictionaryArray) -> tuple[list[str], np.ndarray]:
    """(dictionary values, codes with -1 for null) of a dictionary column."""
    return (d.dictionary.to_pylist(),
            pc.fill_null(d.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64))


def _event_call_ids(ev: dict[str, Any]) -> pa.Array:
    """:func:`_call_ids` of the events ``ev`` (the columns :func:`_finish` takes)."""
    types, type_idx = _codes(ev["type"])
    chunk_types, chunk_idx = _codes(ev["chunk_type"])
    is_finish = (chunk_idx == chunk_types.index("finish")) if "finish" in chunk_types \
        else np.zeros(len(ev["fi"]), dtype=bool)  # fmt: skip
    return _call_ids(type_idx, types, ev["fi"], ev["turn"], ev["step"], is_finish)


def _finish(ctxs: list[_FileCtx], ev: dict[str, Any], run_ids: list, parents: list,
            tenant: str, q: Quarantine) -> pa.Table:  # fmt: skip
    """The canonical table of the events ``ev`` (columns in (file, line, member) order, see
    :func:`_reference_events`): tool names of results, duplicate seqs quarantined, model-call
    ids, inheritance, timestamps and the per-file columns."""
    fi, line, seq, time_ms = ev["fi"], ev["line"], ev["seq"], ev["time_ms"]
    turn, step, text, payload = ev["turn"], ev["step"], ev["text"], ev["payload"]
    type_dict = ev["type"]
    types, type_idx = _codes(type_dict)
    n = len(fi)
    kinds_all = sorted(set(KIND_OF_TYPE.values()) | {"other"})
    kind_code = np.array([kinds_all.index(KIND_OF_TYPE.get(t_, "other")) for t_ in types],
                         dtype=np.int64)  # fmt: skip
    kind_idx = kind_code[type_idx] if n else np.zeros(0, np.int64)
    ref_id = ev["ref_id"]
    tool_name = _fill_tool_result_names(kind_idx, kinds_all, fi, ref_id, ev["tool_name"])

    # ---- duplicate seq within a file: quarantine the later line
    keep = np.ones(n, dtype=bool)
    # (seqs rising within each file, as implicit ones always do, cannot repeat: no sort)
    if n > 1 and not bool(np.all((np.diff(fi) > 0) | (np.diff(seq) > 0))):
        o2 = np.lexsort((line, seq, fi))
        dup = np.zeros(n, dtype=bool)
        same = (fi[o2][1:] == fi[o2][:-1]) & (seq[o2][1:] == seq[o2][:-1])
        dup[o2[1:][same]] = True
        if dup.any():
            bad = sorted(set(zip(fi[dup].tolist(), line[dup].tolist(), strict=True)))
            first_pos: dict[tuple[int, int], int] = {}
            for pos in np.flatnonzero(dup).tolist():
                first_pos.setdefault((int(fi[pos]), int(line[pos])), pos)
            for f_i, ln in bad:
                pos = first_pos[(f_i, ln)]
                ctx = ctxs[f_i]
                q.bad(ctx.err(ln, "duplicate_seq",
                              f"repeats seq {int(seq[pos])}, already used by an earlier line of "
                              "this session", field="seq"),
                      payload[pos].as_py())  # fmt: skip
            bad_keys = np.array([f_i * (1 << 32) + ln for f_i, ln in bad], dtype=np.int64)
            keep = ~np.isin(fi * (1 << 32) + line, bad_keys)

    # ---- ids, flags, per-file columns
    call_ids = ev["call_ids"] if "call_ids" in ev else _event_call_ids(ev)
    ref_id = pc.coalesce(ref_id, call_ids)
    run_arr = np.array(run_ids, dtype=object)
    if "subagent/descriptor" in types:
        desc = type_idx == types.index("subagent/descriptor")
        own = pa.array(run_arr[fi], pa.string())
        ref_id = pc.if_else(pc.and_(pa.array(desc), pc.is_null(ref_id)), own, ref_id)
    seed = np.array(
        [
            c.header.get("seedLength") if c.header is not None and
            c.header.get("seedLength") is not None else -1
            for c in ctxs
        ],
        dtype=np.int64,
    )  # fmt: skip
    inherited = seq < seed[fi] if n else np.zeros(0, bool)

    ts_ms = time_ms.to_numpy(zero_copy_only=False)
    ts_valid = ~np.isnan(ts_ms)
    ts_us = pa.array(np.round(np.where(ts_valid, ts_ms, 0) * 1000).astype(np.int64),
                     mask=~ts_valid).cast(pa.timestamp("us", tz="UTC"))  # fmt: skip

    # dictionary columns by file index (no per-row strings)
    def by_file(values: list[str | None]) -> pa.DictionaryArray:
        uniq = sorted({v for v in values if v is not None})
        pos = {v: i for i, v in enumerate(uniq)}
        code = np.array([pos.get(v, -1) if v is not None else -1 for v in values], np.int32)
        codes = code[fi] if n else np.zeros(0, np.int32)
        return pa.DictionaryArray.from_arrays(
            pa.array(codes, mask=codes < 0), pa.array(uniq, pa.string()))

    kind_dict = pa.array(kinds_all, pa.string())

    def dict_col(values: pa.Array) -> pa.Array:
        return pc.cast(values, pa.string()).dictionary_encode()

    columns = {
        "tenant_id": pa.DictionaryArray.from_arrays(
            pa.array(np.zeros(n, np.int32)), pa.array([tenant])),
        "run_id": by_file(run_ids),
        "parent_run_id": by_file(parents),
        "seq": pa.array(seq),
        "type": type_dict,
        "kind": pa.DictionaryArray.from_arrays(pa.array(kind_idx.astype(np.int32)), kind_dict),
        "ts": ts_us,
        "turn": turn,
        "step": step,
        "event_id": ev["event_id"],
        "ref_id": ref_id,
        "tool_name": dict_col(tool_name),
        "args_hash": ev["args_hash"],
        "cache_key": ev["cache_key"],
        "is_error": ev["is_error"],
        "finish": dict_col(ev["finish"]),
        "input_tokens": ev["input_tokens"],
        "output_tokens": ev["output_tokens"],
        "chunk_type": ev["chunk_type"],
        "text": text,
        "inherited": pa.array(inherited, pa.bool_()),
        "payload": payload,
        "prev_hash": pa.nulls(n, pa.string()),
        "row_hash": pa.nulls(n, pa.string()),
        "source": by_file([f"{FORMAT}:{c.path}" for c in ctxs]),
        "source_line": pa.array(line, pa.int64()),
    }
    arrays = []
    for f in EVENTS_SCHEMA:
        a = columns[f.name]
        if a.type != f.type:
            a = a.cast(f.type)
        arrays.append(a)
    table = pa.Table.from_arrays(arrays, schema=EVENTS_SCHEMA)
    if not keep.all():
        table = table.filter(pa.array(keep))
    return table
