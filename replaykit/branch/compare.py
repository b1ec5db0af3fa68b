"""Bulk comparison of base and replayed runs, column-wise: one row per run pair."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import MissingExtraError
from ..eventlog.log import EventLog
from .metrics import NON_COMPARABLE_DISTANCE, levenshtein

__all__ = ["COMPARE_COLUMNS", "compare", "event_signatures", "tool_distance_matrix",
           "tool_seq_diff"]

#: Columns of :func:`compare`, in order.
COMPARE_COLUMNS = (
    "tenant_id", "base_run_id", "replay_run_id", "status", "base_events", "replay_events",
    "base_tool_calls", "replay_tool_calls", "first_divergence_step", "changed_descendants",
    "tool_sequence_distance", "tool_sequence_distance_norm", "tool_signature_distance",
    "tool_argument_changed", "fixture_dependency_count", "sensitive_to_fixture",
    "same_terminal", "comparability", "stamps_changed",
)

_CODE_BASE = 0xE000  # code points from here up avoid surrogates; room for ~1.1M symbols


def _table(log: Any) -> pa.Table:
    return log.table if isinstance(log, EventLog) else log


def _s(col: Any) -> pa.Array:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return pc.cast(arr, pa.string())


def event_signatures(table: pa.Table) -> np.ndarray:
    """A uint64 signature per event: hash of (kind, tool_name, args_hash, text).

    Ids (event_id, ref_id) and times are left out, so a replay that re-creates the same event
    under new ids has the same signature. Column-wise (pandas' vectorised hashing): the
    values are those of ``pd.util.hash_pandas_object`` over the four columns (nulls as
    ``""``, no index), each column's distinct values hashed once and spread back by their
    dictionary indices.
    """
    n = table.num_rows
    out = np.full(n, 0x345678, dtype=np.uint64)  # pandas' combine_hash_arrays, 4 columns
    mult = np.uint64(1000003)
    cols = ("kind", "tool_name", "args_hash", "text")
    for i, c in enumerate(cols):
        enc = pc.fill_null(_s(table.column(c)), "").dictionary_encode()
        values = np.asarray(enc.dictionary.to_numpy(zero_copy_only=False), dtype=object)
        hashed = pd.util.hash_array(values, categorize=False)
        out ^= hashed[enc.indices.to_numpy(zero_copy_only=False)]
        out *= mult
        mult += np.uint64(82520 + 2 * (len(cols) - i))
    out += np.uint64(97531)
    return out


def _frame(table: pa.Table) -> pd.DataFrame:
    """Per event: tenant, run, position in run, signature, tool codes, fixture flag, kind.

    Column-wise in Arrow; the text columns reach pandas as its ``str`` dtype straight from
    Arrow (no Python string per cell)."""
    tenant = _s(table.column("tenant_id"))
    run = _s(table.column("run_id"))
    kind = _s(table.column("kind"))
    n = table.num_rows
    if n:
        new_run = np.r_[True, _differs(run) | _differs(tenant)]
        starts = np.flatnonzero(new_run)
        pos = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
    else:
        pos = np.zeros(0, dtype=np.int64)
    is_tr = np.asarray(pc.fill_null(pc.equal(kind, "tool_result"), False), dtype=bool)
    fixture = np.zeros(n, dtype=bool)
    if is_tr.any():
        fixture[is_tr] = np.asarray(pc.fill_null(pc.match_substring(
            table.column("payload").filter(pa.array(is_tr)), '"fixtureId":'), False))
    return pd.DataFrame({
        "tenant_id": _str_series(tenant), "run_id": _str_series(run), "pos": pos,
        "sig": event_signatures(table), "kind": _str_series(kind),
        "finish": _str_series(_s(table.column("finish"))),
        "tool_name": _str_series(_s(table.column("tool_name"))),
        "args_hash": _str_series(_s(table.column("args_hash"))),
        "fixture": fixture,
    })


def _str_series(arr: pa.Array) -> pd.Series:
    """A string array as the Series pandas makes of its Python values: ``str`` dtype straight
    from Arrow when it holds a string (``object`` when every value is null, as pandas
    infers)."""
    if arr.null_count < len(arr):
        out = arr.to_pandas()
        if out.dtype == "str":
            return out
    return pd.Series(arr.to_numpy(zero_copy_only=False))


def _differs(arr: pa.Array) -> np.ndarray:
    """Per row after the first: the value differs from the previous row's (null equals null
    only), i.e. numpy's ``a[1:] != a[:-1]`` on the Python values."""
    a, b = arr.slice(1), arr.slice(0, len(arr) - 1)
    na, nb = pc.is_null(a), pc.is_null(b)
    ne = pc.if_else(pc.or_(na, nb), pc.xor(na, nb), pc.not_equal(a, b))
    return np.asarray(ne, dtype=bool)


def _strings(codes: np.ndarray, run_index: np.ndarray, n_runs: int) -> list[str]:
    """One string per run whose characters are the codes of its tool calls, in order."""
    order = np.argsort(run_index, kind="stable")
    cp = (codes[order] + _CODE_BASE).astype("<u4")
    full = cp.tobytes().decode("utf-32-le") if len(cp) else ""
    counts = np.bincount(run_index, minlength=n_runs)
    ends = np.cumsum(counts)
    starts = ends - counts
    # one slice per run (not per event)
    return [full[s:e] for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]


def _distances(a: list[str], b: list[str]) -> np.ndarray:
    try:
        from rapidfuzz.distance import Levenshtein
        from rapidfuzz.process import cpdist
    except ImportError:  # pure-Python fallback (slow, correct)
        return np.array([levenshtein(x, y) for x, y in zip(a, b, strict=True)], dtype=np.int64)
    if not a:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(cpdist(a, b, scorer=Levenshtein.distance, workers=-1), dtype=np.int64)


def _first_diff(pairs_n: int, left: pd.DataFrame, right: pd.DataFrame, key: str
                ) -> tuple[np.ndarray, np.ndarray]:
    """(first differing position per pair or -1, differing positions after it per pair)."""
    m = left.merge(right, on=["pair", "pos"], how="outer", suffixes=("_b", "_r"))
    diff = (m[f"{key}_b"] != m[f"{key}_r"]).to_numpy() | m[f"{key}_b"].isna().to_numpy() \
        | m[f"{key}_r"].isna().to_numpy()
    d = m.loc[diff, ["pair", "pos"]]
    first = np.full(pairs_n, -1, dtype=np.int64)
    if len(d):
        g = d.groupby("pair")["pos"]
        mins = g.min()
        first[mins.index.to_numpy()] = mins.to_numpy()
        counts = g.size()
        after = np.zeros(pairs_n, dtype=np.int64)
        after[counts.index.to_numpy()] = counts.to_numpy() - 1
        return first, after
    return first, np.zeros(pairs_n, dtype=np.int64)


def _recorded_pairs(B: pd.DataFrame, R: pd.DataFrame) -> pd.DataFrame:
    """Pairs for :func:`compare` without ``pairs`` when no run of the second log is a replay
    of a run of the first (no ``parent_run_id`` found there): two recorded runs, one on each
    side, are paired with each other; otherwise none are, and a warning names the call that
    pairs them."""
    import warnings

    b_runs = B[["tenant_id", "run_id"]].drop_duplicates()
    r_runs = R[["tenant_id", "run_id"]].drop_duplicates()
    if len(b_runs) == 1 and len(r_runs) == 1 \
            and b_runs["tenant_id"].iloc[0] == r_runs["tenant_id"].iloc[0]:
        return pd.DataFrame({"tenant_id": b_runs["tenant_id"].to_numpy(),
                             "replay_run_id": r_runs["run_id"].to_numpy(),
                             "base_run_id": b_runs["run_id"].to_numpy()})
    ex_b = str(b_runs["run_id"].iloc[0]) if len(b_runs) else "A"
    ex_r = str(r_runs["run_id"].iloc[0])
    warnings.warn(
        f"rk.compare: no run of the second log ({len(r_runs)} run(s)) is a replay of a run of "
        f"the first ({len(b_runs)} run(s)): no parent_run_id pairs them, so nothing is "
        "compared. For recorded runs, pair them: rk.compare_runs(first, second, by='prompt') "
        "(or by='task' / a runs_df column), or name the pairs: rk.compare(first, second, "
        f"pairs=pd.DataFrame({{'base_run_id': [{ex_b!r}], 'replay_run_id': [{ex_r!r}]}}))",
        UserWarning, stacklevel=3)
    return pd.DataFrame(columns=["tenant_id", "replay_run_id", "base_run_id"])


def compare(base_log: EventLog, replay_log: EventLog, pairs: pd.DataFrame | None = None,
            *, engine: str = "local", client: Any = None) -> pd.DataFrame:
    """One row per (base run, replay run) pair with every replay metric, computed column-wise.

    ``pairs`` has columns ``base_run_id`` and ``replay_run_id`` (optional ``tenant_id``,
    ``status`` -- default ``"completed"`` -- and ``exact_policies`` -- default True, i.e. the
    logs alone are trusted to carry no live execution). Without ``pairs`` every replay run
    with a ``parent_run_id`` present in ``base_log`` (same tenant) is paired with it; when
    none is (recorded runs, not replays), a log of one run on each side (same tenant) is
    paired as that one pair, and otherwise nothing is compared and a warning names the call
    that pairs them (:func:`replaykit.compare_runs` with ``by=``, or ``pairs=``).

    Columns (:data:`COMPARE_COLUMNS`; definitions in docs/metrics.md): first_divergence_step,
    changed_descendants, tool_sequence_distance (+ ``_norm``), tool_signature_distance (over
    (tool, args hash)), tool_argument_changed, fixture_dependency_count, sensitive_to_fixture,
    same_terminal, comparability, stamps_changed (the reproducibility-stamp fields recorded
    on both runs whose values differ, comma-separated; ``""`` when none: see
    :func:`replaykit.provenance.stamps_df`).

    ``engine="dask"`` (optional ``client=``) computes the same frame partition by partition
    from Parquet dataset paths, EventLogs or dask.dataframes whose partitions hold whole runs
    (see docs/scaling.md). When either side is a :class:`replaykit.ingest.Dataset`
    (:func:`replaykit.open_dataset`; its filters pushed into each file's scan) the call runs
    that way too, on Dask's threaded scheduler unless ``client=``.

    Example:
        >>> df = rk.compare(log, res.events)  # doctest: +SKIP
        >>> df.loc[0, "comparability"]  # doctest: +SKIP
        'diverged_but_comparable'

    Raises:
        KeyError: a pair names a run that is not in its log.
        ValueError: ``pairs`` lacks base_run_id / replay_run_id.
    """
    from ..engine import is_partition_source

    if engine != "local" or is_partition_source(base_log) or is_partition_source(replay_log):
        from ..engine import dispatch  # branch/_dask.py registers the implementation

        # a Dataset (rk.open_dataset) runs out of core, partition by partition, on Dask
        return dispatch("dask" if engine == "local" else engine, compare, base_log,
                        replay_log, pairs, client=client)
    bt, rt = _table(base_log), _table(replay_log)
    B, R = _frame(bt), _frame(rt)
    if pairs is None:
        keys = pd.DataFrame({
            "tenant_id": _s(rt.column("tenant_id")).to_numpy(zero_copy_only=False),
            "replay_run_id": _s(rt.column("run_id")).to_numpy(zero_copy_only=False),
            "base_run_id": _s(rt.column("parent_run_id")).to_numpy(zero_copy_only=False),
        }).drop_duplicates().dropna()
        have = B[["tenant_id", "run_id"]].drop_duplicates().rename(columns={"run_id":
                                                                            "base_run_id"})
        pairs = keys.merge(have, on=["tenant_id", "base_run_id"])
        if pairs.empty and len(R):
            pairs = _recorded_pairs(B, R)
    else:
        missing = {"base_run_id", "replay_run_id"} - set(pairs.columns)
        if missing:
            raise ValueError(f"pairs needs columns base_run_id and replay_run_id; missing "
                             f"{sorted(missing)}")
        pairs = pairs.copy()
    P = pairs.reset_index(drop=True)
    n = len(P)
    if "status" not in P:
        P["status"] = "completed"
    if "exact_policies" not in P:
        P["exact_policies"] = True

    # run index of every event, then pair index for both sides (column-wise joins)
    bkey = ["tenant_id", "run_id"] if "tenant_id" in P else ["run_id"]
    b_runs = B[bkey].drop_duplicates().reset_index(drop=True)
    r_runs = R[bkey].drop_duplicates().reset_index(drop=True)
    b_runs["bi"] = np.arange(len(b_runs))
    r_runs["ri"] = np.arange(len(r_runs))
    B = B.merge(b_runs, on=bkey, how="left")
    R = R.merge(r_runs, on=bkey, how="left")
    pk = P.rename(columns={"base_run_id": "run_id"})[bkey].merge(b_runs, on=bkey, how="left")
    rk_ = P.rename(columns={"replay_run_id": "run_id"})[bkey].merge(r_runs, on=bkey, how="left")
    if pk["bi"].isna().any() or rk_["ri"].isna().any():
        bad = P[pk["bi"].isna().to_numpy() | rk_["ri"].isna().to_numpy()].iloc[0]
        raise KeyError(f"pair ({bad['base_run_id']!r}, {bad['replay_run_id']!r}) names a run "
                       "missing from its log")
    p_bi = pk["bi"].to_numpy().astype(np.int64)
    p_ri = rk_["ri"].to_numpy().astype(np.int64)

    # expand events to pairs: a run may appear in several pairs
    def expand(F: pd.DataFrame, idx_col: str, p_idx: np.ndarray, n_runs: int) -> pd.DataFrame:
        order = np.argsort(F[idx_col].to_numpy(), kind="stable")
        F = F.iloc[order].reset_index(drop=True)
        counts = np.bincount(F[idx_col].to_numpy(), minlength=n_runs)
        starts = np.r_[0, np.cumsum(counts)[:-1]]
        lens = counts[p_idx]
        rows = np.repeat(starts[p_idx] - np.r_[0, np.cumsum(lens)[:-1]], lens) \
            + np.arange(lens.sum())
        out = F.iloc[rows].reset_index(drop=True)
        out["pair"] = np.repeat(np.arange(len(p_idx)), lens)
        return out

    EB = expand(B, "bi", p_bi, len(b_runs))
    ER = expand(R, "ri", p_ri, len(r_runs))
    first, after = _first_diff(n, EB[["pair", "pos", "sig"]], ER[["pair", "pos", "sig"]], "sig")

    # tool sequences as strings of codes (shared code book across both logs)
    TB = B[B["kind"] == "tool_call"]
    TR = R[R["kind"] == "tool_call"]
    names = pd.concat([TB["tool_name"], TR["tool_name"]]).fillna("")
    sigs = names + "\x1f" + pd.concat([TB["args_hash"], TR["args_hash"]]).fillna("")
    name_codes, _ = pd.factorize(names)
    sig_codes, _ = pd.factorize(sigs)
    nb = len(TB)
    b_bi, r_ri = TB["bi"].to_numpy(), TR["ri"].to_numpy()
    bn = _strings(name_codes[:nb], b_bi, len(b_runs))
    rn = _strings(name_codes[nb:], r_ri, len(r_runs))
    bs = _strings(sig_codes[:nb], b_bi, len(b_runs))
    rs = _strings(sig_codes[nb:], r_ri, len(r_runs))
    a_names = [bn[i] for i in p_bi.tolist()]
    b_names = [rn[i] for i in p_ri.tolist()]
    dist = _distances(a_names, b_names)
    sdist = _distances([bs[i] for i in p_bi.tolist()], [rs[i] for i in p_ri.tolist()])
    tb_len = np.bincount(b_bi, minlength=len(b_runs))[p_bi]
    tr_len = np.bincount(r_ri, minlength=len(r_runs))[p_ri]
    longest = np.maximum(tb_len, tr_len)
    norm = np.where(longest > 0, dist / np.maximum(longest, 1), 0.0)

    # tool_argument_changed: at the first (tool, args) difference, same tool on both sides
    def tools_of(F: pd.DataFrame, codes_name: np.ndarray, codes_sig: np.ndarray, idx: str,
                 p_idx: np.ndarray, n_runs: int) -> pd.DataFrame:
        T = F[F["kind"] == "tool_call"].copy()
        T["tpos"] = T.groupby(idx).cumcount().to_numpy()
        T["nc"], T["sc"] = codes_name, codes_sig
        X = expand(T[[idx, "tpos", "nc", "sc"]], idx, p_idx, n_runs)
        return X.rename(columns={"tpos": "pos"})[["pair", "pos", "nc", "sc"]]

    XB = tools_of(B, name_codes[:nb], sig_codes[:nb], "bi", p_bi, len(b_runs))
    XR = tools_of(R, name_codes[nb:], sig_codes[nb:], "ri", p_ri, len(r_runs))
    tfirst, _ = _first_diff(n, XB[["pair", "pos", "sc"]], XR[["pair", "pos", "sc"]], "sc")
    m = pd.DataFrame({"pair": np.arange(n), "pos": tfirst})
    at_b = m.merge(XB, on=["pair", "pos"], how="left")
    at_r = m.merge(XR, on=["pair", "pos"], how="left")
    arg_changed = ((tfirst >= 0) & (at_b["nc"].to_numpy() == at_r["nc"].to_numpy())
                   & at_b["nc"].notna().to_numpy() & at_r["nc"].notna().to_numpy()
                   & (at_b["sc"].to_numpy() != at_r["sc"].to_numpy())).astype(np.int64)

    # fixtures and terminal state
    fixtures = np.bincount(R["ri"].to_numpy(), weights=R["fixture"].to_numpy(),
                           minlength=len(r_runs)).astype(np.int64)[p_ri]
    last_b = B.groupby("bi").tail(1).set_index("bi")
    last_r = R.groupby("ri").tail(1).set_index("ri")
    term_b = (last_b["kind"] + "|" + last_b["finish"].fillna("")).reindex(range(len(b_runs)))
    term_r = (last_r["kind"] + "|" + last_r["finish"].fillna("")).reindex(range(len(r_runs)))
    same_terminal = term_b.to_numpy()[p_bi] == term_r.to_numpy()[p_ri]

    status = P["status"].astype(str).to_numpy()
    exact_pol = P["exact_policies"].astype(bool).to_numpy()
    comp = np.select(
        [(status != "completed") | (norm > NON_COMPARABLE_DISTANCE),
         (first == -1) & exact_pol,
         (sdist == 0) & same_terminal],
        ["non_comparable", "exact", "aligned"], default="diverged_but_comparable")
    tenant = P["tenant_id"] if "tenant_id" in P else pd.Series([None] * n)
    out = pd.DataFrame({
        "tenant_id": tenant.to_numpy(), "base_run_id": P["base_run_id"].to_numpy(),
        "replay_run_id": P["replay_run_id"].to_numpy(), "status": status,
        "base_events": np.bincount(B["bi"].to_numpy(), minlength=len(b_runs))[p_bi],
        "replay_events": np.bincount(R["ri"].to_numpy(), minlength=len(r_runs))[p_ri],
        "base_tool_calls": tb_len, "replay_tool_calls": tr_len,
        "first_divergence_step": first, "changed_descendants": after,
        "tool_sequence_distance": dist, "tool_sequence_distance_norm": norm,
        "tool_signature_distance": sdist, "tool_argument_changed": arg_changed,
        "fixture_dependency_count": fixtures, "sensitive_to_fixture": fixtures > 0,
        "same_terminal": same_terminal, "comparability": comp,
        "stamps_changed": _stamps_changed(base_log, replay_log, P),
    })
    ints = ["base_events", "replay_events", "base_tool_calls", "replay_tool_calls",
            "first_divergence_step", "changed_descendants", "tool_sequence_distance",
            "tool_signature_distance", "tool_argument_changed", "fixture_dependency_count"]
    return out.astype({c: "Int64" for c in ints} | {"sensitive_to_fixture": "boolean",
                                                    "same_terminal": "boolean",
                                                    "tenant_id": "string",
                                                    "base_run_id": "string",
                                                    "replay_run_id": "string",
                                                    "status": "string",
                                                    "comparability": "string",
                                                    "stamps_changed": "string"})


def _stamps_changed(base_log: Any, replay_log: Any, pairs: pd.DataFrame) -> np.ndarray:
    """Per pair: stamp fields recorded on both runs with different values (see stamps.py)."""
    from ..provenance.stamps import run_stamps, stamps_changed, stamps_df

    if not len(pairs):
        return np.zeros(0, dtype=object)

    def side(log: Any, ids: pd.Series) -> pd.DataFrame:
        lg = log if isinstance(log, EventLog) else EventLog(_table(log), sort=False)
        want = sorted(set(ids.astype(str)))
        # a log holding only those runs (a replay's base run and its replay) is its own
        # filter: the copy filter() makes would be the same rows, at the cost of a copy
        if not _holds_only(lg, want):
            lg = lg.filter(run_ids=want)
        return run_stamps(stamps_df(lg))

    return stamps_changed(side(base_log, pairs["base_run_id"]),
                          side(replay_log, pairs["replay_run_id"]), pairs)


def _holds_only(log: EventLog, run_ids: list[str]) -> bool:
    """True when every event and every run header of ``log`` belongs to one of ``run_ids``
    (``log.filter(run_ids=run_ids)`` would return the same events and runs)."""
    want = pa.array(run_ids, pa.string())
    for tab in (log.table, log.runs):
        if not tab.num_rows:
            continue
        if "run_id" not in tab.column_names:
            return False
        got = _s(pc.unique(tab.column("run_id")))
        if got.null_count or not pc.all(pc.is_in(got, value_set=want)).as_py():
            return False
    return True


def tool_distance_matrix(log: EventLog, runs: Sequence[str] | None = None, *,
                         normalised: bool = False) -> pd.DataFrame:
    """All-pairs edit distance between the tool-name sequences of runs (a square frame).

    Rows and columns are run ids (``runs`` in that order, default every run sorted). Uses the
    native ``rapidfuzz`` library (multi-threaded).

    Example:
        >>> mat = rk.tool_distance_matrix(log)  # doctest: +SKIP
        >>> mat.loc["run-claims-C-104", "run-claims-C-231"]  # doctest: +SKIP
        2

    Raises:
        MissingExtraError: ``rapidfuzz`` is not installed (``pip install "replaykit[replay]"``).
        KeyError: a run in ``runs`` is not in the log.
    """
    try:
        from rapidfuzz.distance import Levenshtein
        from rapidfuzz.process import cdist
    except ImportError:
        raise MissingExtraError("tool_distance_matrix", "replay", "rapidfuzz") from None
    t = _table(log)
    run = _s(t.column("run_id")).to_numpy(zero_copy_only=False)
    ids = sorted(set(pc.unique(_s(t.column("run_id"))).to_pylist())) if runs is None \
        else list(runs)
    pos = {r: i for i, r in enumerate(ids)}
    missing = [r for r in ids if r not in set(run)] if runs is not None else []
    if missing:
        raise KeyError(f"runs not in the log: {missing[:5]}")
    kind = _s(t.column("kind")).to_numpy(zero_copy_only=False)
    sel = (kind == "tool_call") & pd.Series(run).isin(pos).to_numpy()
    idx = pd.Series(run[sel]).map(pos).to_numpy().astype(np.int64)
    codes, _ = pd.factorize(_s(t.column("tool_name")).to_numpy(zero_copy_only=False)[sel])
    strs = _strings(codes.astype(np.int64), idx, len(ids))
    if normalised:
        from rapidfuzz.distance import Levenshtein as Lv

        mat = cdist(strs, strs, scorer=Lv.normalized_distance, workers=-1)
    else:
        mat = cdist(strs, strs, scorer=Levenshtein.distance, workers=-1, dtype=np.int32)
    return pd.DataFrame(mat, index=pd.Index(ids, name="run_id"), columns=pd.Index(ids))


def tool_seq_diff(base_t: pa.Table, rep_t: pa.Table) -> pd.DataFrame:
    """The tool calls of two runs (one-run tables) side by side, aligned by (tool, arguments
    hash) (near-linear, :mod:`replaykit._base.align`): one row per aligned call with ``status``
    (same / changed / added / removed), ``base_seq``, ``base_tool``, ``replay_seq``,
    ``replay_tool`` and ``note`` (``arguments changed`` / ``tool changed``). The RCA report's
    tool-sequence diff and :meth:`replaykit.branch.runs.RunComparison.tools_df`."""
    def calls(t: pa.Table) -> tuple[list[Any], list[Any], list[Any]]:
        m = pc.fill_null(pc.equal(pc.cast(t.column("kind"), pa.string()), "tool_call"), False)
        s = t.filter(m)
        return (pc.cast(s.column("tool_name"), pa.string()).to_pylist(),
                pc.cast(s.column("args_hash"), pa.string()).to_pylist(),
                s.column("seq").to_pylist())

    from .._base.align import align, expand

    bt, bh, bs = calls(base_t)
    rt, rh, rs = calls(rep_t)
    # near-linear alignment of the (tool, args hash) keys, then column-wise rows
    status, i, j = expand(align([f"{t}\x1f{h}" for t, h in zip(bt, bh, strict=True)],
                                [f"{t}\x1f{h}" for t, h in zip(rt, rh, strict=True)]))

    def take(vals: list[Any], idx: np.ndarray) -> list[Any]:
        arr = np.asarray(vals + [None], dtype=object)
        return arr[np.where(idx >= 0, idx, len(vals))].tolist()

    b_tool, r_tool = take(bt, i), take(rt, j)
    note = np.where(status == "changed",
                    np.where(np.asarray(b_tool, dtype=object) == np.asarray(r_tool, dtype=object),
                             "arguments changed", "tool changed"), "")
    return pd.DataFrame({"status": status, "base_seq": take(bs, i), "base_tool": b_tool,
                         "replay_seq": take(rs, j), "replay_tool": r_tool, "note": note})
