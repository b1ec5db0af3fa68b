"""Reproducibility stamps: what a log records about the controllable variables of each run.

A re-execution against a hosted model is not bit-for-bit reproducible, but every variable the
caller controls (model id and provider, package versions, sampling settings, system prompt,
safety policy, tool definitions, plugins) can be read from the log, so a divergence between a
base and a replay -- or between two cohorts -- can be attributed to the variable that changed.

* :func:`stamps_df` (also ``log.stamps_df()``): one row per run, or one per distinct stamp
  with its seq range when the stamps change inside a run (a model switch);
* :func:`stamp_diff`: field, value in a, value in b for two runs or two cohorts;
* :func:`stamp_drift`: stamp changes between consecutive cohorts (what a cohort report puts in
  its headline, since a model or temperature change confounds every other difference);
* :func:`run_stamps` / :func:`stamps_changed`: one summary per run and the fields that differ
  per (base, replay) pair (used by :func:`replaykit.compare`).

Where each field comes from, per format: docs/formats.md ("Reproducibility stamps").

How it scales: the stamp-bearing events (request headers, model calls/requests, policy events,
session spans) are selected column-wise; their scalar fields (model, provider, sampling
settings) are read with Arrow's JSON reader in one pass; only payloads that hold an object-valued
field (tool definitions, prompts, stop lists) or a key with dots (OTel attributes) are decoded,
each distinct payload once; the per-run carry-forward and the change detection are pandas group
operations. No step loops over every event of the log (236k generated events, 4,000 runs:
1.4 s).
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .._base.delegates import provide
from .._base.json import _has_long_int, canonical_json, gc_paused, loads, rows_holding_any
from .rules import (
    _BAD_JSON,
    _FLOATS,
    _INTS,
    _OBJECT_FIELDS,
    _RESPONSE_FIELDS,
    _RULES,
    _RUN_RULES,
    STAMP_FIELDS,
    _Getter,
    _hash16,
    _maybe_json,
)

__all__ = ["run_stamps", "stamp_diff", "stamp_drift", "stamps_changed", "stamps_df"]

# Fields that collect every value a run records (a set, not a carried-forward value):
# format -> (event types, field, regex with one group over the payload text). Column-wise
# (Arrow regex extraction), so every matching event is read without decoding its JSON.
_SET_RULES: dict[str, list[tuple[tuple[str, ...], str, str]]] = {
    "toh": [(("user/message", "agent/inbox/spliced"), "plugins",
             r'"kind":"plugin","plugin":"(?P<v>[^"\\]+)"')],
}


def _set_fields(t: pa.Table) -> pd.DataFrame:
    """Per run: each set field as a sorted JSON list text, plus its source."""
    frames = []
    typ = _s(t.column("type"))
    fmt = _source_format(t.column("source"))
    for fname, rules in _SET_RULES.items():
        for types, field, regex in rules:
            m = pc.and_(pc.equal(fmt, fname), pc.is_in(typ, value_set=pa.array(types)))
            sub = t.filter(pc.fill_null(m, False))
            if not sub.num_rows:
                continue
            got = pc.struct_field(pc.extract_regex(sub.column("payload"), regex), "v")
            df = pd.DataFrame({"tenant_id": _s(sub.column("tenant_id")).to_numpy(
                zero_copy_only=False), "run_id": _s(sub.column("run_id")).to_numpy(
                zero_copy_only=False), "v": _s(got).to_numpy(zero_copy_only=False)}).dropna()
            if not len(df):
                continue
            agg = df.drop_duplicates().sort_values("v").groupby(
                ["tenant_id", "run_id"], sort=False)["v"].agg(list).reset_index()
            agg[field] = [canonical_json(v) for v in agg.pop("v")]
            agg[f"src:{field}"] = f"{'|'.join(types)} (every event)"
            frames.append(agg)
    if not frames:
        return pd.DataFrame(columns=["tenant_id", "run_id"])
    out = frames[0]
    for f in frames[1:]:
        out = out.merge(f, on=["tenant_id", "run_id"], how="outer")
    return out


# ------------------------------------------------------------------------------ extraction


def _finish(field: str, value: Any) -> tuple[str, Any] | list[tuple[str, Any]]:
    """Normalise one extracted value; tool definitions and system prompts become identities."""
    value = _maybe_json(value)
    if field == "tool_defs":
        n = len(value) if isinstance(value, list) else None
        return [("tool_schema_hash", _hash16(canonical_json(value))), ("tools", n)]
    if field == "system_prompt":
        text = value if isinstance(value, str) else canonical_json(value)
        return [("system_prompt_hash", _hash16(text)), ("system_prompt", text)]
    if field in ("stop_sequences",) or isinstance(value, (list, dict)):
        return field, canonical_json(value)
    return field, value


def _extract(doc: Any, getters: Mapping[str, _Getter], label: str
             ) -> tuple[dict[str, Any], dict[str, str]]:
    vals: dict[str, Any] = {}
    srcs: dict[str, str] = {}
    for field, get in getters.items():
        got = get(doc)
        if got is None:
            continue
        value, path = got
        done = _finish(field, value)
        for f, v in done if isinstance(done, list) else [done]:
            if v is None or f in vals:
                continue
            vals[f] = v
            srcs[f] = f"{label} {path}"
    return vals, srcs


def _fmt_of(source: pa.Array) -> np.ndarray:
    return np.asarray(pc.replace_substring_regex(pc.cast(source, pa.string()), r":.*$", "")
                      .to_numpy(zero_copy_only=False), dtype=object)


def _s(col: Any) -> pa.Array:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return pc.cast(arr, pa.string())


def _source_format(source: Any) -> pa.Array:
    """The format of each row's ``source`` (the text before the first ``:``), as a string
    array. A log holds few distinct sources: the prefix is cut once per distinct value (on
    the dictionary) and spread back with a take, not once per row."""
    enc = _s(source).dictionary_encode()
    cut = pc.replace_substring_regex(enc.dictionary, r":.*$", "")
    return pc.take(cut, enc.indices)


def _event_stamps(t: pa.Table) -> pd.DataFrame:
    """One row per stamp-bearing event: tenant_id, run_id, seq, one column per field found
    and ``src:<field>`` with where it came from."""
    if t.num_rows == 0:
        return pd.DataFrame(columns=["tenant_id", "run_id", "seq"])
    typ = _s(t.column("type"))
    kind = _s(t.column("kind"))
    fmt = _source_format(t.column("source"))
    frames = []
    # rows of another source (generated logs, custom loaders) get the rules that match their
    # source event type
    other = pc.invert(pc.is_in(fmt, value_set=pa.array(list(_RULES), pa.string())))
    for fname, rules in _RULES.items():
        in_fmt = pc.equal(fmt, fname)
        for match, values, getters in rules:
            col = typ if match == "type" else kind
            where = pc.or_(in_fmt, other) if match == "type" else in_fmt
            m = pc.and_(where, pc.is_in(col, value_set=pa.array(values, pa.string())))
            idx = np.flatnonzero(np.asarray(pc.fill_null(m, False)))
            if not len(idx):
                continue
            sub = t.select(["tenant_id", "run_id", "seq", "payload"]).take(pa.array(idx))
            label = "|".join(values)
            per = _rule_values(sub.column("payload").combine_chunks(), getters, label)
            if per.shape[1] == 0:
                continue
            per.insert(0, "seq", sub.column("seq").to_numpy())
            per.insert(0, "run_id", _s(sub.column("run_id")).to_numpy(zero_copy_only=False))
            per.insert(0, "tenant_id", _s(sub.column("tenant_id")).to_numpy(
                zero_copy_only=False))
            frames.append(per)
    if not frames:
        return pd.DataFrame(columns=["tenant_id", "run_id", "seq"])
    ev = pd.concat(frames, ignore_index=True)
    # several rules can hit one event: one row per event, first value per field
    return ev.groupby(["tenant_id", "run_id", "seq"], sort=True, as_index=False).first()


_SCALAR_TYPES = {"temperature": pa.float64(), "top_p": pa.float64(),
                 "max_tokens": pa.float64(), "seed": pa.float64()}
_OBJECT_VALUED = ("tool_defs", "system_prompt", "stop_sequences")


def _fast_getters(getters: Mapping[str, _Getter]) -> dict[str, list[list[str]]]:
    """The scalar fields of a rule whose paths Arrow's JSON reader can read (plain keys)."""
    out = {}
    for f, g in getters.items():
        paths = getattr(g, "paths", None)
        if f in _OBJECT_VALUED or f.startswith(_OBJECT_FIELDS) or not paths:
            continue
        if any("." in k for p in paths for k in p):
            continue
        out[f] = paths
    return out


def _rule_values(payloads: pa.Array, getters: Mapping[str, _Getter], label: str
                 ) -> pd.DataFrame:
    """Field values (and ``src:`` columns) of one rule's events, one row per event.

    Scalar fields are read column-wise with Arrow's JSON reader (``payload_fields``); the
    rest -- objects such as tool definitions and prompts, keys holding dots, or a reader
    failure on mixed JSON types -- by decoding each distinct payload that can hold them once,
    and extracting once per distinct value of the top-level keys they read.
    """
    from .._base.json import payload_fields

    n = len(payloads)
    fast = _fast_getters(getters)
    cols: dict[str, Any] = {}
    if fast:
        spec: dict[str, Any] = {}
        for f, paths in fast.items():
            for p in paths:
                spec[".".join(p)] = _SCALAR_TYPES.get(f, pa.string())
        try:
            tab = payload_fields(payloads, spec)
        except (pa.ArrowInvalid, pa.ArrowTypeError, KeyError, ValueError):
            fast = {}
        else:
            for f, paths in fast.items():
                val = np.full(n, None, dtype=object)
                src = np.full(n, None, dtype=object)
                for p in paths:
                    c = tab.column(".".join(p))
                    ok = pc.is_valid(c)
                    if pa.types.is_string(c.type):
                        ok = pc.and_(ok, pc.and_(pc.not_equal(c, ""), pc.invert(
                            pc.match_substring_regex(c, r"^\{\{.*\}\}$"))))
                    ok_np = np.asarray(pc.fill_null(ok, False)) & pd.isna(val)
                    if ok_np.any():
                        vals = c.to_numpy(zero_copy_only=False)
                        val[ok_np] = vals[ok_np]
                        src[ok_np] = f"{label} {'.'.join(p)}"
                if pd.notna(val).any():
                    cols[f] = val
                    cols[f"src:{f}"] = src
    slow = {f: g for f, g in getters.items() if f not in fast}
    frame = pd.DataFrame(cols, index=range(n))
    if slow:
        # only payloads that hold one of the slow fields' keys are decoded
        keys: list[list[list[str]]] = [getattr(g, "paths", None) or [] for g in slow.values()]
        rows = np.arange(n)
        if all(keys):
            needles = sorted({f'"{p[-1]}"' for ps in keys for p in ps if p})
            if needles:
                rows = rows_holding_any(payloads, needles)
        sel = payloads.take(pa.array(rows)) if len(rows) < n else payloads
        # every slow getter reads only under the first key of its paths: documents that agree
        # on those keys give the same values, so each distinct projection is extracted once
        tops = sorted({p[0] for ps in keys for p in ps if p}) if all(keys) else None
        memo: dict[str, tuple[dict[str, Any], dict[str, str]]] = {}

        def one(doc: Any, s: Mapping[str, _Getter] = slow, lb: str = label
                ) -> tuple[dict[str, Any], dict[str, str]]:
            if tops is None:
                return _extract(doc, s, lb)
            part = {k: doc[k] for k in tops if k in doc}
            try:
                mk = canonical_json(part)
            except (TypeError, ValueError):
                return _extract(doc, s, lb)
            got = memo.get(mk)
            if got is None:
                got = memo[mk] = _extract(part, s, lb)
            return got

        decoded, codes = _map_distinct_objects(sel, one, default=({}, {}))
        # payloads whose projections agree share one extracted value (the memo above): one
        # record per distinct value, spread back to the rows by index
        uniq, which = _distinct_objects(decoded)
        vals = pd.DataFrame.from_records([d[0] for d in uniq])
        srcs = pd.DataFrame.from_records([d[1] for d in uniq]).add_prefix("src:")
        per = pd.concat([vals, srcs], axis=1)
        if per.shape[1] and len(rows):
            per = per.iloc[which[codes]].set_axis(rows)
            frame = pd.concat([frame, per.reindex(range(n))], axis=1)
    return frame


def _distinct_objects(values: Sequence[Any]) -> tuple[list[Any], np.ndarray]:
    """The distinct objects of ``values`` by identity, in first-seen order, and each
    value's position among them (``[uniq[i] for i in which] == values``)."""
    seen: dict[int, int] = {}
    uniq: list[Any] = []
    which = np.empty(len(values), dtype=np.int64)
    for i, v in enumerate(values):
        j = seen.get(id(v))
        if j is None:
            j = seen[id(v)] = len(uniq)
            uniq.append(v)
        which[i] = j
    return uniq, which


def _map_distinct_objects(texts: pa.Array, fn: Callable[[Any], Any], default: Any
                          ) -> tuple[list[Any], np.ndarray]:
    """``fn(doc)`` once per distinct JSON object text (``default`` for text that is not a
    JSON object) and the row -> value index, as :func:`replaykit._base.json.map_distinct_documents`
    but with the 64-bit-integer check of :func:`replaykit._base.json.loads` done once over all the
    distinct texts instead of once per text (a run of 19 digits anywhere sends every text
    through the per-text check)."""
    enc = texts.dictionary_encode()
    dic = enc.dictionary
    data = dic.buffers()[2]
    long_ints = data is not None and _has_long_int(data.to_pybytes())
    values = []
    # the decoded documents are containers the cyclic GC would scan again and again while
    # the loop allocates them (each full collection walks the whole heap); none of them is
    # garbage here, so the collector is paused for the loop
    with gc_paused():
        for text in dic.to_pylist():
            try:
                doc = loads(text, long_ints=long_ints) if text is not None else None
            except _BAD_JSON:
                doc = None
            values.append(fn(doc) if isinstance(doc, dict) else default)
    return values, enc.indices.to_numpy(zero_copy_only=False)


def _run_level(runs: pa.Table) -> pd.DataFrame:
    """Run-level stamp values from the runs table's ``attrs`` (one decode per run header)."""
    rows = []
    if runs.num_rows:
        for tenant, run, fmt, attrs in zip(runs.column("tenant_id").to_pylist(),
                                           runs.column("run_id").to_pylist(),
                                           runs.column("format").to_pylist(),
                                           runs.column("attrs").to_pylist(), strict=True):
            getters = _RUN_RULES.get(str(fmt))
            if not getters or not attrs:
                continue
            try:
                doc = loads(attrs)
            except _BAD_JSON:
                continue
            if not isinstance(doc, Mapping):
                continue
            vals, srcs = _extract(doc, getters, "runs.attrs")
            rows.append({"tenant_id": tenant, "run_id": run, **vals,
                         **{f"src:{k}": v for k, v in srcs.items()}})
    if not rows:
        return pd.DataFrame(columns=["tenant_id", "run_id"])
    return pd.DataFrame.from_records(rows).drop_duplicates(["tenant_id", "run_id"])


def _assemble_objects(df: pd.DataFrame) -> pd.DataFrame:
    """``safety_policy.sandbox`` etc. -> one canonical JSON object column per field."""
    for field in _OBJECT_FIELDS:
        subs = [c for c in df.columns if c.startswith(field + ".")]
        if not subs:
            continue
        names = [c[len(field) + 1:] for c in subs]
        sub = df[subs]
        present = sub.notna().any(axis=1).to_numpy()
        vals = np.full(len(df), None, dtype=object)
        if present.any():
            records = sub[present].to_dict("records")
            texts = [canonical_json({n: r[c] for n, c in zip(names, subs, strict=True)
                                     if r[c] is not None and r[c] == r[c]}) for r in records]
            vals[present] = texts
        old = df[field] if field in df else pd.Series([None] * len(df), index=df.index)
        df[field] = old.where(old.notna(), pd.Series(vals, index=df.index))
        ssubs = [f"src:{c}" for c in subs if f"src:{c}" in df]
        if ssubs:
            src = df[ssubs].apply(lambda r: "; ".join(x for x in r if isinstance(x, str)),
                                  axis=1) if len(df) else pd.Series([], dtype=object)
            src = src.where(src != "", None)
            olds = df[f"src:{field}"] if f"src:{field}" in df else pd.Series(
                [None] * len(df), index=df.index)
            df[f"src:{field}"] = olds.where(olds.notna(), src)
        df = df.drop(columns=subs + ssubs)
    return df


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    n = len(df)
    for f in STAMP_FIELDS:
        if f not in df or not df[f].notna().any():  # never recorded: a typed null column
            dtype = "Float64" if f in _FLOATS else "Int64" if f in _INTS else "string"
            df[f] = pd.array(np.full(n, None, dtype=object), dtype=dtype)  # not a list: 10x
        elif f in _FLOATS:
            df[f] = pd.to_numeric(df[f], errors="coerce").astype("Float64")
        elif f in _INTS:
            num = pd.to_numeric(df[f], errors="coerce")
            df[f] = num.where(num == num.round()).astype("Float64").astype("Int64")
        else:
            col = df[f].astype(object)
            df[f] = col.where(col.notna(), None).astype("string")
    return df


def _fill_runs(ev: pd.DataFrame, cols: list[str], rk: list[str], back_first: bool = False
               ) -> None:
    """Carry values forward within each run, then back to the run's start (in place)."""
    if not cols:
        return
    one_run = len(ev[rk].drop_duplicates()) == 1
    if one_run:
        part = ev[cols]
        ev[cols] = (part.bfill().ffill() if back_first else part.ffill().bfill())
        return
    g = ev.groupby(rk, sort=False)[cols]
    if back_first:
        ev[cols] = g.bfill()
        g = ev.groupby(rk, sort=False)[cols]
    ev[cols] = g.ffill()
    ev[cols] = ev.groupby(rk, sort=False)[cols].bfill()


#: content digest of a log -> its stamps_df frame, for the last few logs: a replay's metrics
#: and its findings ask for the same two runs' stamps (a hit is the same answer: the key is
#: the digest of every column and run header the frame is computed from).
_STAMPS_MEMO: dict[bytes, pd.DataFrame] = {}
_STAMPS_MEMO_SIZE = 4


def _log_digest(t: pa.Table, runs: Any) -> bytes | None:
    """A digest of the events columns and the runs table stamps_df reads (None: unknown)."""
    h = hashlib.sha256()  # hardware-accelerated on x86-64 (SHA-NI): ~2x blake2b here
    try:
        for tab in (t.select([c for c in ("tenant_id", "run_id", "seq", "type", "kind",
                                          "source", "payload") if c in t.column_names]),
                    runs):
            if not isinstance(tab, pa.Table):
                return None
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, tab.schema) as w:
                w.write_table(tab)
            h.update(sink.getvalue())
    except (pa.ArrowException, TypeError, ValueError):
        return None
    return h.digest()


#: id(events table) -> (weak refs to it and its runs table, their digest): the digest of a
#: table asked for again while it is alive (a replay's events: the metrics' stamps, then the
#: findings' stamp_diff) is not recomputed. A live object's id is its own; Arrow tables are
#: immutable.
_DIGESTS: dict[int, tuple[Any, Any, bytes]] = {}
_DIGESTS_SIZE = 8


def _table_digest(t: pa.Table, runs: Any) -> bytes | None:
    """:func:`_log_digest`, remembered per live (events, runs) table pair."""
    got = _DIGESTS.get(id(t))
    if got is not None and got[0]() is t and got[1]() is runs:
        return got[2]
    key = _log_digest(t, runs)
    if key is not None and isinstance(runs, pa.Table):
        if len(_DIGESTS) >= _DIGESTS_SIZE:
            _DIGESTS.pop(next(iter(_DIGESTS)))
        _DIGESTS[id(t)] = (weakref.ref(t), weakref.ref(runs), key)
    return key


@provide("EventLog.stamps_df")
def stamps_df(log: Any) -> pd.DataFrame:
    """Reproducibility stamps of every run: one row per run and distinct stamp.

    Columns: ``tenant_id``, ``run_id``, ``from_seq``, ``to_seq`` (the seq range the stamp
    holds for), then :data:`STAMP_FIELDS` (null where the log does not say), then
    ``sources`` (JSON object text: field -> ``"<event type> <payload path>"`` or
    ``"runs.attrs <path>"``) and ``changes`` (fields that differ from the run's previous
    stamp row; empty on a run's first row).

    A value recorded anywhere in a run holds from the run's start until the run records a
    different value; a change (e.g. a model switch in a later request header) starts a new
    row at the seq of the event that records it. Runs with no stamp-bearing event still get
    one row (values from the runs table, else nulls). Placeholders such as ``{{system}}``
    count as not recorded.

    Example:
        >>> st = rk.read_isplay("data/isplay/claims-triage-C-104.json",
        ...                     owner="demo").stamps_df()  # doctest: +SKIP
        >>> st.loc[0, ["model", "provider", "temperature"]].tolist()  # doctest: +SKIP
        ['gpt-4.1-mini', 'openai', 0.2]
    """
    t = log.table
    cols = ["tenant_id", "run_id", "from_seq", "to_seq", *STAMP_FIELDS, "sources", "changes"]
    if t.num_rows == 0:
        return _typed(pd.DataFrame(columns=cols))[cols]
    key = _table_digest(t, getattr(log, "runs", None))
    hit = _STAMPS_MEMO.get(key) if key is not None else None
    if hit is None:
        hit = _stamps_df(log, t)
        if key is not None:
            if len(_STAMPS_MEMO) >= _STAMPS_MEMO_SIZE:
                _STAMPS_MEMO.pop(next(iter(_STAMPS_MEMO)))
            _STAMPS_MEMO[key] = hit
    return hit.copy()


def _stamps_df(log: Any, t: pa.Table) -> pd.DataFrame:
    keys = pa.table({"tenant_id": _s(t.column("tenant_id")), "run_id": _s(t.column("run_id")),
                     "seq": t.column("seq")})
    bounds = keys.group_by(["tenant_id", "run_id"], use_threads=False).aggregate(
        [("seq", "min"), ("seq", "max")]).to_pandas()
    ev = _event_stamps(t)
    runlvl = _run_level(log.runs)
    sets = _set_fields(t)
    if len(sets):
        runlvl = sets if not len(runlvl) else runlvl.merge(sets, on=["tenant_id", "run_id"],
                                                             how="outer")
    fields = [c for c in ev.columns if c not in ("tenant_id", "run_id", "seq")]
    rk = ["tenant_id", "run_id"]
    if len(ev):
        # a response-side value (the model the provider reported) belongs to the request
        # before it: fill it backwards first, so the request row already carries it
        late = [c for c in fields if c in _RESPONSE_FIELDS or c[4:] in _RESPONSE_FIELDS]
        _fill_runs(ev, late, rk, back_first=True)
        _fill_runs(ev, [c for c in fields if c not in late], rk)
    # runs without any stamp event: one row at the run's first seq
    have = ev[rk].drop_duplicates() if len(ev) else pd.DataFrame(columns=rk)
    missing = bounds.merge(have, on=rk, how="left", indicator=True)
    missing = missing[missing["_merge"] == "left_only"]
    filler = pd.DataFrame({"tenant_id": missing["tenant_id"], "run_id": missing["run_id"],
                           "seq": missing["seq_min"]})
    ev = pd.concat([ev, filler], ignore_index=True) if len(filler) else ev
    # run-level values fill what the events leave open
    if len(runlvl):
        ev = ev.merge(runlvl, on=rk, how="left", suffixes=("", "__run"))
        for c in [c for c in runlvl.columns if c not in rk]:
            if c + "__run" in ev:
                ev[c] = ev[c].where(ev[c].notna(), ev.pop(c + "__run"))
    ev = _assemble_objects(ev)
    ev = _typed(ev)
    ev = ev.sort_values(["tenant_id", "run_id", "seq"], ignore_index=True)
    # change detection: compare each stamp row with the previous one of its run
    F = list(STAMP_FIELDS)
    present = [f for f in F if ev[f].notna().any()]
    # one integer code per distinct value of each present field; a row changes the stamp
    # when a code differs from the previous row of the same run
    codes = np.stack([pd.factorize(ev[f].astype("string"), use_na_sentinel=False)[0]
                      for f in present], axis=1) if present else np.zeros((len(ev), 0), int)
    runc = pd.factorize(ev["tenant_id"].astype(str) + "\x1f" + ev["run_id"].astype(str))[0]
    first = np.r_[True, runc[1:] != runc[:-1]] if len(ev) else np.zeros(0, bool)
    dcode = np.zeros_like(codes, dtype=bool)
    if len(ev) > 1:
        dcode[1:] = codes[1:] != codes[:-1]
    dcode[first] = False
    keep = first | dcode.any(axis=1)
    seg = ev[keep].reset_index(drop=True)
    dseg = pd.DataFrame(dcode[keep], columns=present).reindex(columns=F, fill_value=False)
    seg = seg.merge(bounds, on=rk, how="left")
    seg["from_seq"] = np.where(first[keep], seg["seq_min"], seg["seq"])
    nxt = seg.groupby(rk, sort=False)["from_seq"].shift(-1)
    seg["to_seq"] = np.where(nxt.isna(), seg["seq_max"], nxt.fillna(0) - 1)
    src_cols = [c for c in seg.columns if c.startswith("src:")]
    src_recs = seg[src_cols].to_dict("records") if src_cols else [{}] * len(seg)
    seg["sources"] = [canonical_json({k[4:]: v for k, v in r.items()
                                      if isinstance(v, str)}) for r in src_recs]
    dcols = dseg.to_numpy()
    seg["changes"] = [",".join(f for f, d in zip(F, row, strict=True) if d) for row in dcols]
    out = seg[["tenant_id", "run_id", "from_seq", "to_seq", *F, "sources", "changes"]].copy()
    out = out.astype({"tenant_id": "string", "run_id": "string", "from_seq": "Int64",
                      "to_seq": "Int64", "sources": "string", "changes": "string"})
    return out.sort_values(["tenant_id", "run_id", "from_seq"], ignore_index=True)


# ------------------------------------------------------------------------------ comparisons


def run_stamps(stamps: pd.DataFrame) -> pd.DataFrame:
    """One row per run: each field's values over the run's stamp rows, in seq order and
    joined by ``" -> "`` when the run switches (a single value otherwise; null when never
    recorded). Input: the output of :func:`stamps_df`."""
    rk = ["tenant_id", "run_id"]
    F = list(STAMP_FIELDS)
    s = stamps.sort_values([*rk, "from_seq"])
    txt = s[F].astype("string")
    txt[rk] = s[rk]

    def join(x: pd.Series) -> Any:
        v = [str(a) for a in x if a is not pd.NA and a is not None]
        out: list[str] = []
        for a in v:
            if not out or out[-1] != a:
                out.append(a)
        return " -> ".join(out) if out else pd.NA

    if len(s) == len(s[rk].drop_duplicates()):
        return txt.reset_index(drop=True)[[*rk, *F]]
    return txt.groupby(rk, sort=False, as_index=False).agg(join)[[*rk, *F]]


def stamps_changed(base: pd.DataFrame, replay: pd.DataFrame, pairs: pd.DataFrame
                   ) -> np.ndarray:
    """Per pair (columns ``base_run_id``, ``replay_run_id``, optional ``tenant_id``): the
    stamp fields recorded on both runs whose values differ (comma-separated,
    :data:`STAMP_FIELDS` order; ``""`` when all agree). A field recorded on one side only
    is unknown on the other, not a change. ``base`` / ``replay``: :func:`run_stamps` frames."""
    F = list(STAMP_FIELDS)
    on = ["tenant_id", "run_id"] if "tenant_id" in pairs else ["run_id"]
    b = pairs.rename(columns={"base_run_id": "run_id"})[on].merge(
        base[[*on, *F]].drop_duplicates(on), on=on, how="left")
    r = pairs.rename(columns={"replay_run_id": "run_id"})[on].merge(
        replay[[*on, *F]].drop_duplicates(on), on=on, how="left")
    bs, rs = b[F].astype("string"), r[F].astype("string")
    both = (bs.notna() & rs.notna()).to_numpy()
    d = both & (bs.fillna("").to_numpy() != rs.fillna("").to_numpy())
    names = np.array(F, dtype=object)
    return np.array([",".join(names[row]) for row in d], dtype=object)


def _side(x: Any) -> pd.DataFrame:
    """A stamps frame from an EventLog, a stamps_df frame, or a run_stamps frame."""
    if isinstance(x, pd.DataFrame):
        return x
    if hasattr(x, "table"):
        return stamps_df(x)
    raise TypeError(f"expected an EventLog or a stamps_df() frame, got {type(x).__name__}")


def _summary(s: pd.DataFrame) -> dict[str, tuple[Any, int, int]]:
    """field -> (value text, runs having the dominant value, runs with any value)."""
    rs = run_stamps(s) if "from_seq" in s else s
    out: dict[str, tuple[Any, int, int]] = {}
    for f in STAMP_FIELDS:
        v = rs[f].dropna().astype(str) if f in rs else pd.Series([], dtype=str)
        if not len(v):
            out[f] = (None, 0, 0)
            continue
        counts = v.value_counts()
        if len(counts) == 1:
            out[f] = (counts.index[0], int(counts.iloc[0]), len(v))
        else:
            out[f] = (", ".join(f"{k} ({n})" for k, n in counts.items()), int(counts.iloc[0]),
                      len(v))
    return out


def stamp_diff(a: Any, b: Any, *, all_fields: bool = False) -> pd.DataFrame:
    """Field by field, the stamps of ``a`` against those of ``b``.

    ``a`` and ``b`` are EventLogs (one run each, or a whole cohort) or :func:`stamps_df`
    frames. For a side with several runs (a cohort) a value that differs between its runs
    is listed with its run counts (``"gpt-4o (12), gpt-4o-mini (3)"``).

    Returns columns ``field``, ``a``, ``b``, ``changed``; only fields recorded on at least one
    side, unless ``all_fields=True``.

    Example:
        >>> rk.stamp_diff(log.run("r1", tenant_id="t"), res.events)  # doctest: +SKIP

    Raises:
        TypeError: an argument that is neither an EventLog nor a DataFrame.
    """
    sa, sb = _summary(_side(a)), _summary(_side(b))
    rows = []
    for f in STAMP_FIELDS:
        va, vb = sa[f][0], sb[f][0]
        if not all_fields and va is None and vb is None:
            continue
        rows.append({"field": f, "a": va, "b": vb, "changed": va != vb})
    return pd.DataFrame(rows, columns=["field", "a", "b", "changed"]).astype(
        {"field": "string", "a": "string", "b": "string", "changed": "boolean"})


def stamp_drift(cohorts: Any, *, fields: Sequence[str] | None = None,
                min_shift: float = 0.2) -> pd.DataFrame:
    """Stamp changes between consecutive cohorts (chronological for semesters).

    ``cohorts`` is a :class:`replaykit.Cohorts`. Per field (default: every
    :data:`STAMP_FIELDS` field) and pair of consecutive cohorts, the field *drifts* when the
    cohorts' dominant values (the most common value among their runs; ``"(not recorded)"``
    counts as a value) differ and the distributions of the field's values over the runs
    differ by at least ``min_shift`` (total variation distance, 0..1: 1 when no run of one
    cohort has a value of the other). Runs mixing several models at random in both cohorts
    have a small shift and are not reported.

    One row per drift: ``field``, ``from_cohort``, ``to_cohort``, ``from_value``,
    ``to_value``, ``from_share`` / ``to_share`` (share of the cohort's runs with its dominant
    value), ``shift`` and ``headline`` (one sentence, e.g. ``"model changed from gpt-4o (100%
    of runs) to gpt-4.1 (100%) between 2025-fall and 2026-spring"``). Empty when nothing
    drifts. A cohort report should show the headlines first: a drifted stamp confounds
    every other difference between those cohorts.

    Example:
        >>> rk.stamp_drift(rk.cohorts(log))[["field", "headline"]]  # doctest: +SKIP

    Raises:
        ValueError: an unknown field, or ``min_shift`` outside [0, 1].
    """
    F = list(fields) if fields is not None else list(STAMP_FIELDS)
    unknown = [f for f in F if f not in STAMP_FIELDS]
    if unknown:
        raise ValueError(f"unknown stamp fields {unknown}; choose from {list(STAMP_FIELDS)}")
    if not 0.0 <= min_shift <= 1.0:
        raise ValueError(f"min_shift must be in [0, 1], got {min_shift}")
    runs = cohorts.runs_df()[["tenant_id", "run_id", "cohort"]].astype(
        {"tenant_id": "string", "run_id": "string", "cohort": "string"})
    rs = run_stamps(stamps_df(cohorts.log))
    rs = rs.astype({"tenant_id": "string", "run_id": "string"}).merge(
        runs, on=["tenant_id", "run_id"], how="inner")
    labels = list(cohorts.labels)
    cols = ["field", "from_cohort", "to_cohort", "from_value", "to_value", "from_share",
            "to_share", "shift", "headline"]
    rows = []
    for f in F:
        v = rs[f].astype("string").fillna("(not recorded)")
        share = pd.crosstab(rs["cohort"], v, normalize="index")  # cohort x value shares
        for c1, c2 in zip(labels, labels[1:], strict=False):
            if c1 not in share.index or c2 not in share.index:
                continue
            a, b = share.loc[c1], share.loc[c2]
            # dominant value: highest share, ties broken by the value's text
            v1 = sorted(a[a == a.max()].index)[0]
            v2 = sorted(b[b == b.max()].index)[0]
            shift = float((a - b).abs().sum() / 2)
            if v1 == v2 or shift < min_shift:
                continue
            s1, s2 = float(a[v1]), float(b[v2])
            rows.append({"field": f, "from_cohort": c1, "to_cohort": c2, "from_value": v1,
                         "to_value": v2, "from_share": s1, "to_share": s2, "shift": shift,
                         "headline": f"{f} changed from {v1} ({s1:.0%} of runs) to {v2} "
                                     f"({s2:.0%}) between {c1} and {c2}"})
    return pd.DataFrame(rows, columns=cols).astype(
        {"field": "string", "from_cohort": "string", "to_cohort": "string",
         "from_value": "string", "to_value": "string", "from_share": "float64",
         "to_share": "float64", "shift": "float64", "headline": "string"})
