""":func:`verify_chain`: the link, sequence, head and manifest checks, one problem row each."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .._base import native as _native
from ..eventlog.log import EventLog, to_pandas
from ..schema import escape_table_utf8
from ..schema import run_starts as _run_starts
from .chain import GENESIS, _as_table, _verify_hashes
from .content import _plain
from .derived import _derived_rest, _derived_side, _pleach_rows
from .manifest import _MANIFEST_KEY, ChainManifest, ManifestError
from .problems import _PROBLEM_SCHEMA, _problem_frame, _problems

__all__ = ["verify_chain"]

def _as_manifest(expected_heads: Any) -> ChainManifest | None:
    """``expected_heads`` as a manifest (a ChainManifest or its dict form), else None."""
    if isinstance(expected_heads, ChainManifest):
        return expected_heads
    if isinstance(expected_heads, Mapping) and (
            _MANIFEST_KEY in expected_heads
            or isinstance(expected_heads.get("tenants"), Mapping)):
        # a manifest's dict form, even one missing its version member: read as a manifest,
        # whose errors name the member that is missing (never as a mapping of run heads)
        return ChainManifest.from_dict(expected_heads)
    return None


_ANCHOR_FIX = ("anchor the log with a manifest of a trusted copy: "
               "verify_chain(log, expected_heads=chain_manifest(trusted)); or pass "
               "expected_heads=None to check the links only (then runs deleted or cut at "
               "their end cannot be detected)")


def _anchor_error(problem: str) -> ManifestError:
    return ManifestError(f"expected_heads {problem}: {_ANCHOR_FIX}")


def _normalise_heads(expected_heads: Any) -> pd.DataFrame:
    """Anchors as a frame with tenant_id (maybe null), run_id, seq (maybe null), row_hash."""
    if isinstance(expected_heads, pa.Table):
        expected_heads = expected_heads.to_pandas()
    if isinstance(expected_heads, pd.DataFrame):
        if not {"run_id", "row_hash"} <= set(expected_heads.columns):
            raise _anchor_error(
                "needs columns run_id and row_hash (tenant_id and seq optional; "
                "chain_heads(log) builds them)")
        df = expected_heads.copy()
    elif isinstance(expected_heads, Mapping):
        recs = []
        for key, value in expected_heads.items():
            tenant, run = key if isinstance(key, tuple) else (None, key)
            recs.append({"tenant_id": tenant, "run_id": run, "row_hash": value})
        df = pd.DataFrame.from_records(recs, columns=["tenant_id", "run_id", "row_hash"])
    elif isinstance(expected_heads, Iterable) and not isinstance(expected_heads, (str, bytes)):
        recs = list(expected_heads)
        if not recs:
            raise _anchor_error("is empty, so it anchors nothing")
        if not all(isinstance(r, Mapping) for r in recs):
            raise _anchor_error("must be records (mappings) with run_id and row_hash")
        df = pd.DataFrame.from_records(recs)
        if not {"run_id", "row_hash"} <= set(df.columns):
            raise _anchor_error("needs run_id and row_hash in each record")
    else:
        raise TypeError(
            "expected_heads must be a DataFrame (see chain_heads), a mapping "
            "{run_id or (tenant_id, run_id): row_hash} or a list of records"
        )
    if not len(df):  # checking against nothing would pass a log with any run deleted
        raise _anchor_error("is empty, so it anchors nothing")
    bad = next((h for h in df["row_hash"].tolist() if not isinstance(h, str)), "")
    if not isinstance(bad, str):
        raise _anchor_error(f"holds a row_hash that is not a hash string ({type(bad).__name__}"
                            f" {str(bad)[:60]!r}); a manifest's dict form needs its "
                            f"{_MANIFEST_KEY!r} member (ChainManifest.to_dict())")
    if df["run_id"].isna().any():
        raise _anchor_error("holds a head without a run_id")
    for col in ("tenant_id", "seq"):
        if col not in df.columns:
            df[col] = None
    try:
        seq = pd.array(df["seq"], dtype="Int64")
    except (TypeError, ValueError) as exc:
        raise _anchor_error(f"holds a seq that is not an integer ({exc})") from None
    out = pd.DataFrame(
        {
            "tenant_id": df["tenant_id"].astype(object).where(df["tenant_id"].notna(), None),
            "run_id": df["run_id"].astype(str),
            "seq": seq,
            "row_hash": df["row_hash"].astype(object),
        }
    )
    return out.reset_index(drop=True)


def _head_problems(table: pa.Table, starts: np.ndarray, heads: pd.DataFrame) -> pa.Table | None:
    if heads.empty:
        return None
    rows = to_pandas(
        pa.table(
            {
                "tenant_id": _plain(table.column("tenant_id")),
                "run_id": _plain(table.column("run_id")),
                "seq": table.column("seq").combine_chunks(),
                "row_hash": _plain(table.column("row_hash")),
            }
        )
    )
    last_mask = np.append(starts[1:], True) if len(rows) else np.zeros(0, dtype=bool)
    lasts = rows[last_mask]
    out = []
    for with_seq in (True, False):
        anchors = heads[heads["seq"].notna() == with_seq]
        for with_tenant in (True, False):
            a = anchors[anchors["tenant_id"].notna() == with_tenant]
            if a.empty:
                continue
            keys = (
                (["tenant_id"] if with_tenant else []) + ["run_id"] + (["seq"] if with_seq else [])
            )
            right = rows if with_seq else lasts
            a = a.drop(columns=[c for c in ("tenant_id", "seq") if c not in keys])
            merged = a.merge(right, on=keys, how="left", suffixes=("_expected", "_found"))
            bad = merged[
                merged["row_hash_found"].isna()
                | (
                    merged["row_hash_found"].astype(object)
                    != merged["row_hash_expected"].astype(object)
                )
            ]
            if bad.empty:
                continue
            out.append(
                pa.table(
                    {
                        "tenant_id": pa.array(bad["tenant_id"].astype(object), pa.string()),
                        "run_id": pa.array(bad["run_id"].astype(object), pa.string()),
                        "seq": pa.array(bad["seq"].astype(object), pa.int64()),
                        "kind": pa.array(["head_mismatch"] * len(bad), pa.string()),
                        "expected": pa.array(bad["row_hash_expected"].astype(object), pa.string()),
                        "found": pa.array(
                            bad["row_hash_found"]
                            .astype(object)
                            .where(bad["row_hash_found"].notna(), None),
                            pa.string(),
                        ),
                    },
                    schema=_PROBLEM_SCHEMA,
                )
            )
    return pa.concat_tables(out) if out else None


def _manifest_problems(
    table: pa.Table, starts: np.ndarray, manifest: ChainManifest
) -> list[pa.Table]:
    """unexpected_run, missing_run and head_mismatch of a log against its manifest."""
    n = table.num_rows
    last = np.flatnonzero(np.append(starts[1:], True)) if n else np.zeros(0, dtype=np.int64)
    idx = pa.array(last, pa.int64())
    lasts = to_pandas(
        pa.table(
            {
                "tenant_id": _plain(table.column("tenant_id")).take(idx),
                "run_id": _plain(table.column("run_id")).take(idx),
                "seq": table.column("seq").combine_chunks().take(idx),
                "row_hash": pc.cast(_plain(table.column("row_hash")), pa.string()).take(idx),
            }
        )
    )
    heads = manifest.heads()
    merged = lasts.merge(
        heads, on=["tenant_id", "run_id"], how="outer", suffixes=("_found", "_expected"),
        indicator=True,
    )

    def frame(rows: pd.DataFrame, kind: str, seq: str, expected: str | None,
              found: str | None) -> pa.Table:
        def strings(col: str | None) -> pa.Array:
            if col is None:
                return pa.nulls(len(rows), pa.string())
            v = rows[col].astype(object)
            return pa.array(v.where(v.notna(), None), pa.string())

        return pa.table(
            {
                "tenant_id": pa.array(rows["tenant_id"].astype(object), pa.string()),
                "run_id": pa.array(rows["run_id"].astype(object), pa.string()),
                "seq": pa.array(rows[seq].astype(object), pa.int64()),
                "kind": pa.array([kind] * len(rows), pa.string()),
                "expected": strings(expected),
                "found": strings(found),
            },
            schema=_PROBLEM_SCHEMA,
        )

    out = []
    extra = merged[merged["_merge"] == "left_only"]
    if len(extra):  # in the log, not in the manifest: seq/found = the run's head
        out.append(frame(extra, "unexpected_run", "seq_found", None, "row_hash_found"))
    gone = merged[merged["_merge"] == "right_only"]
    if len(gone):  # in the manifest, not in the log
        out.append(frame(gone, "missing_run", "seq_expected", "row_hash_expected", None))
    both = manifest.heads().merge(lasts[["tenant_id", "run_id"]], on=["tenant_id", "run_id"])
    hp = _head_problems(table, starts, both)  # the anchored row must hold the anchored hash
    if hp is not None:
        out.append(hp)
    matched = merged[merged["_merge"] == "both"]
    grown = matched[matched["seq_found"].astype("Int64") != matched["seq_expected"].astype("Int64")]
    grown = grown[grown["seq_found"].astype("Int64") > grown["seq_expected"].astype("Int64")]
    if len(grown):  # rows after the anchored head: the run's head is not the anchored one
        out.append(frame(grown, "head_mismatch", "seq_found", "row_hash_expected",
                         "row_hash_found"))
    return out


#: sys.setswitchinterval while verify_chain's threads run (Python's default: 5 ms).
_SWITCH_INTERVAL_S = 0.0005
_switch_lock = threading.Lock()
_switch_users = 0
_switch_saved = 0.005


@contextmanager
def _short_switches() -> Iterator[None]:
    """A short GIL switch interval for the block: the hashing loop holds the GIL, and each
    of the other threads' Arrow calls must win it back to return (up to one interval each,
    5 ms by default). Process-wide: saved by the first of concurrent users, restored by the
    last."""
    global _switch_users, _switch_saved
    with _switch_lock:
        if _switch_users == 0:
            _switch_saved = sys.getswitchinterval()
            sys.setswitchinterval(min(_switch_saved, _SWITCH_INTERVAL_S))
        _switch_users += 1
    try:
        yield
    finally:
        with _switch_lock:
            _switch_users -= 1
            if _switch_users == 0:
                sys.setswitchinterval(_switch_saved)


def verify_chain(log: EventLog | pa.Table, expected_heads: Any = None, *,
                 derived: bool = True, engine: str = "local", client: Any = None,
                 threads: int | None = None) -> pd.DataFrame:
    """Check the hash chain of every run; one row per problem, an empty frame when intact.

    Columns: ``tenant_id``, ``run_id``, ``seq``, ``kind``, ``expected``, ``found``. Kinds:

    * ``hash_mismatch`` -- the stored ``row_hash`` (found) is not sha256 of the stored
      ``prev_hash`` and the row's content (expected): the row was changed.
    * ``link_mismatch`` -- the stored ``prev_hash`` (found) is not the previous row's
      ``row_hash`` (or :data:`GENESIS` on a run's first row) (expected): a row before it was
      deleted, inserted or reordered.
    * ``seq_gap`` -- ``seq`` jumps by more than one (expected = previous seq + 1).
    * ``duplicate_seq`` -- more than one row holds this seq (found = how many rows).
    * ``head_mismatch`` -- an anchored head (``expected_heads``) is not in the log with that
      hash (found = the stored hash, or null when the row is missing); with a manifest, also
      a run that goes on past its anchored head (at its last seq, found = its last hash).
    * ``unexpected_run`` -- (manifest) a run of the log the manifest does not list, e.g. a
      fabricated run with its own valid chain (seq/found = the run's head).
    * ``missing_run`` -- (manifest) a run the manifest lists that is not in the log.
    * ``derived_mismatch`` -- a stored derived column (tool_name, is_error, text, tokens,
      ...) differs from what the loader derives from the row's hashed type + payload;
      expected / found are ``"<column>=<value>"``. Checked for rows whose ``source`` is
      pleach (re-derived by :func:`replaykit.io.pleach.derive_columns`); ``derived=False``
      skips the check. Rows of every other format hash their derived columns (the
      ``derived`` member of :func:`row_content`), so an edit there is a ``hash_mismatch``.
    * ``malformed_value`` -- a stored row held a value not of its column's type (SQLite:
      text in ``sequence_number``, a real in ``turn``, ...), so the loader quarantined it
      (``read_sql(..., errors="quarantine")``): tampering (expected = the columns' types,
      found = the stored values and the rowid). Reported for an :class:`EventLog`'s quarantine.

    ``log`` may be an :class:`EventLog` or a ``pyarrow.Table`` with the content and hash
    columns in any order (rows are stably sorted by tenant, run, seq; a raw table may hold
    duplicate seqs, which an EventLog cannot). Without ``expected_heads`` rows cut from the
    *end* of a run, and whole runs added or removed, cannot be detected. The anchor to use is
    a :class:`ChainManifest` (:func:`chain_manifest`; or its dict form): every run of every
    tenant with its head. Older anchors are still accepted: the frame :func:`chain_heads`
    returns, a mapping ``{run_id or (tenant_id, run_id):
    row_hash}`` (checked against the run's last row) or records with ``run_id``,
    ``row_hash`` and optional ``tenant_id`` and ``seq`` (a ``seq`` anchor only requires that
    row to exist with that hash, so a run may have grown since it was anchored).

    ``engine="dask"`` (optional ``client=``) checks a Parquet dataset path, EventLog or
    dask.dataframe partition by partition and returns the same frame (docs/scaling.md). A
    :class:`replaykit.ingest.Dataset` (:func:`replaykit.open_dataset`) is always checked that
    way (its tenant and run filters pushed into each file's scan: the result is that of
    ``view.load()``; a view that keeps only some rows of its runs, by time or event type, is
    refused).
    ``threads``: check on at most this many threads (None: every core the process may use,
    capped by ``REPLAYKIT_THREADS``; ``replaykit._base.native.threads``); the same frame on any.

    Raises:
        TypeError: ``log`` or ``expected_heads`` has the wrong type.
        ValueError: a table lacks the needed columns; a manifest or ``derived=False`` with
            ``engine="dask"`` or a Dataset; a Dataset filtered by time or event type.
        ManifestError: (a ``ValueError``) ``expected_heads`` anchors nothing (an empty
            mapping, frame, table or list: a log with a run deleted would pass), lacks
            run_id/row_hash, holds a row_hash that is not a string or a seq that is not an
            integer; a manifest (dict form) that is malformed (e.g. without its
            ``replaykit_chain_manifest`` member) or whose digest does not match its content.
            An empty :class:`ChainManifest` is a manifest of no runs: every run of the log
            is then ``unexpected_run``.
        SettingError: ``threads`` or ``REPLAYKIT_THREADS`` is not a whole number >= 1.

    >>> problems = verify_chain(log, expected_heads=chain_manifest(trusted))  # doctest: +SKIP
    >>> problems.empty  # doctest: +SKIP
    True
    """
    from ..engine import is_partition_source

    if engine != "local" or is_partition_source(log):
        # a Dataset (rk.open_dataset) runs out of core, partition by partition, on Dask
        where = "a Dataset" if engine == "local" else f"engine={engine!r}"
        if not derived:
            raise ValueError(f"derived=False is supported by engine='local' only, not on "
                             f"{where} (load() the view first)")
        if _as_manifest(expected_heads) is not None:
            raise ValueError(
                f"a ChainManifest is checked by engine='local' only, not on {where}; pass "
                "expected_heads=manifest.heads() to check its heads per partition"
            )
        if not getattr(log, "whole_runs", True):
            raise ValueError(
                f"verify_chain checks whole runs, and {log!r} keeps only some rows of its runs "
                "(a time window or event types): every cut would be reported, and checks "
                "across runs (a child's parent_run_id from its parent's spawn row) would see "
                "only the parts in one file. Filter the Dataset by tenant_id / runs only, or "
                "check the rows it keeps with verify_chain(view.load())")
        from ..engine import dispatch  # _integrity_dask.py registers the implementation

        return dispatch("dask" if engine == "local" else engine, verify_chain, log,
                        expected_heads, client=client)
    with _native.using_threads(threads) as n_threads:
        return _verify_local(log, expected_heads, derived, n_threads)


def _verify_local(log: EventLog | pa.Table, expected_heads: Any, derived: bool,
                  n_threads: int) -> pd.DataFrame:
    """:func:`verify_chain` in this process, on ``n_threads`` threads."""
    manifest = _as_manifest(expected_heads)
    if manifest is not None:
        heads = None
    else:
        heads = None if expected_heads is None else _normalise_heads(expected_heads)
    parts: list[pa.Table] = []
    if isinstance(log, pa.Table):  # a caller's table: text that is not UTF-8 is reported
        log, bad_text = escape_table_utf8(log)
        table = _as_table(log)
        parts.extend(_utf8_problems(log, bad_text))
    else:  # an EventLog's text was checked when it was built
        table = _as_table(log)
    n = table.num_rows
    # the derived-column check but the tool calls' arguments (_derived_side: Arrow's parse
    # of the payloads, which releases the GIL for its whole run, and column steps) runs on
    # a thread of its own while this one hashes (the content bytes are built on two more,
    # _blocks_ahead) and then canonicalises the arguments (Python, holding the GIL); short
    # GIL switches let the other threads' many short Arrow calls through (_short_switches)
    # With the native core, the side thread first tries the whole check natively
    # (_native_check: one pass over the payloads, GIL released, then the same column-wise
    # comparison); `native` tells this thread whether it did, before the arguments are needed
    sub = _pleach_rows(table) if derived else None
    pool = ThreadPoolExecutor(1) if sub is not None else None
    derived_parts: list[pa.Table] = []
    try:
        with _short_switches():
            native: Future[bool] = Future()
            side = None if pool is None else pool.submit(_derived_side, sub, native)
            # the derived side thread takes one core: the content builders the others
            workers = max(1, n_threads - 1) if side is not None else n_threads
            starts = _chain_problems(table, n, parts, workers=workers)
            if side is not None and sub is not None:
                if native.result():
                    derived_parts = [t for _, t in side.result()[2]]
                else:
                    from ..io.pleach._derive import table_tool_args

                    tool_args = table_tool_args(sub)
                    derived_parts = _derived_rest(sub, side.result(), tool_args)
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    if heads is not None:
        hp = _head_problems(table, starts, heads)
        if hp is not None:
            parts.append(hp)
    if manifest is not None:
        parts.extend(_manifest_problems(table, starts, manifest))
    parts.extend(derived_parts)
    if isinstance(log, EventLog) and log.quarantine.num_rows:
        from ..sql._fetch import malformed_problems

        parts.append(malformed_problems(log.quarantine))
    return _problem_frame(parts)


def _utf8_problems(table: pa.Table, found: dict[str, np.ndarray]) -> list[pa.Table]:
    """``malformed_value`` problems of the rows of a caller's table whose text was not UTF-8
    (``found``: column -> rows; ``table``: that text already shown escaped). Expected says
    which column, found its value with the bytes escaped."""
    out = []
    for name, rows in found.items():
        at = pa.array(rows)
        out.append(pa.table({
            "tenant_id": _plain(table.column("tenant_id")).take(at),
            "run_id": _plain(table.column("run_id")).take(at),
            "seq": table.column("seq").combine_chunks().take(at).cast(pa.int64()),
            "kind": pa.array(["malformed_value"] * len(rows), pa.string()),
            "expected": pa.array([f"{name}: UTF-8 text"] * len(rows), pa.string()),
            "found": pc.cast(_plain(table.column(name)).take(at), pa.string()),
        }, schema=_PROBLEM_SCHEMA))
    return out


def _chain_problems(table: pa.Table, n: int, parts: list[pa.Table], *,
                    workers: int = 2) -> np.ndarray:
    """hash_mismatch, link_mismatch, seq_gap and duplicate_seq of a sorted table (added to
    ``parts``); returns the run-start mask. ``workers``: threads building content bytes
    ahead of the hashing loop (:func:`_blocks_ahead`)."""
    if not n:
        return np.zeros(0, dtype=bool)
    if n:
        starts = _run_starts(table)
        stored_row = pc.cast(_plain(table.column("row_hash")), pa.string())
        stored_prev = pc.cast(_plain(table.column("prev_hash")), pa.string())
        computed = _verify_hashes(table, stored_prev, workers=workers)
        hash_ok = pc.fill_null(pc.equal(computed, stored_row), False)
        if not pc.all(hash_ok).as_py():
            parts.append(
                _problems(table, pc.invert(hash_ok), "hash_mismatch", computed, stored_row)
            )
        shifted = pa.concat_arrays([pa.array([GENESIS], pa.string()), stored_row.slice(0, n - 1)])
        expected_prev = pc.if_else(pa.array(starts), pa.scalar(GENESIS), shifted)
        link_ok = pc.fill_null(pc.equal(expected_prev, stored_prev), False)
        if not pc.all(link_ok).as_py():
            missing = pc.fill_null(expected_prev, "")
            parts.append(
                _problems(table, pc.invert(link_ok), "link_mismatch", missing, stored_prev)
            )
        seq = table.column("seq").to_numpy()
        same = np.zeros(n, dtype=bool)
        same[1:] = ~starts[1:]
        step = np.zeros(n, dtype=np.int64)
        step[1:] = seq[1:] - seq[:-1]
        gap = same & (step > 1)
        if gap.any():
            prev_seq = np.zeros(n, dtype=np.int64)
            prev_seq[1:] = seq[:-1] + 1
            parts.append(
                _problems(
                    table, gap, "seq_gap", pa.array(prev_seq), table.column("seq").combine_chunks()
                )
            )
        dup = same & (step == 0)
        if dup.any():
            block = np.cumsum(~dup)  # rows sharing (run, seq) share a block id
            sizes = np.bincount(block)[block]
            first_extra = dup & ~np.append(False, dup[:-1])
            parts.append(
                _problems(
                    table,
                    first_extra,
                    "duplicate_seq",
                    pa.array(np.full(n, "1 row", dtype=object), pa.string()),
                    pa.array([f"{s} rows" for s in sizes.tolist()], pa.string()),
                )
            )
    return starts
