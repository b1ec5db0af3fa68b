"""Tamper-evident logs: the per-run hash chain, its verification, and portable proofs.

The chain (full definition in ``docs/integrity.md``): within each (tenant_id, run_id), rows in
``seq`` order, ::

    row_hash = sha256( prev_hash  ||  row_content ).hexdigest()
    prev_hash = GENESIS ("0" * 64) for the first row, else the previous row's row_hash

where ``prev_hash`` enters as its 64 ASCII hex characters and ``row_content`` is the canonical
JSON (RFC 8785 style: sorted keys, no insignificant whitespace, UTF-8, ECMAScript number form)
of the row's *content* columns::

    {"payload":<payload text, verbatim>,"run_id":"…","seq":17,"tenant_id":"…",
     "ts":<microseconds since the Unix epoch, UTC, or null>,"type":"…"}

Content = what the producer recorded (:data:`CONTENT_COLUMNS`); a NULL payload (raw tables
only) leaves the ``payload`` member out. Everything else in the canonical schema is either
derived by a loader (:data:`~replaykit.schema.DERIVED_COLUMNS`: kind, ref_id, tool_name,
tokens, …), provenance/storage (source, source_line) or the chain itself (prev_hash,
row_hash). Derived columns of pleach rows are not hashed but re-derived from ``type`` +
``payload`` and compared by :func:`verify_chain`; rows of every other format (whose loaders
derive from file structure) hash them, with their format, as a ``derived`` member
(:data:`SEALED_MEMBERS`). :func:`chain_manifest` is the anchored
record of a log: every run of every tenant with its head, sealed by one digest.

Verification is column-wise: the canonical content bytes of every row are built with Arrow
string kernels, the link, sequence and head checks are numpy/Arrow comparisons, and only the
sha256 call itself runs once per row (hashing is per row by nature).
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .._base import native as _native
from ..eventlog.log import EventLog, to_pandas
from ..schema import DERIVED_COLUMNS, sort_order
from ..schema import run_starts as _run_starts
from .content import (
    _LS,
    CONTENT_COLUMNS,
    _chain_spec,
    _content_column,
    _hashable_ranges,
    _offsets,
    _plain,
    _sealed_rows,
)

__all__ = ["GENESIS", "chain_heads", "stamp_chain"]

#: ``prev_hash`` of the first row of every run: 64 ASCII zeros.
GENESIS = "0" * 64


def _row_hash(prev_hash: str, content: bytes) -> str:
    h = hashlib.sha256(prev_hash.encode("ascii", errors="replace"))
    h.update(content)
    return h.hexdigest()


def _digests(joined: pa.Array) -> bytes:
    """The raw 32-byte sha256 digest of every row of a large_string array, concatenated
    (cheaper than hexdigest per row; hex-encoded column-wise by :func:`_hex_column`)."""
    if _native.enabled():  # the native core: one call per block, GIL released, SHA-NI
        return bytes(_native.core().sha256_many(*_native.spans(joined)))
    mv, offs_list = _offsets(joined)
    sha = hashlib.sha256
    return b"".join([sha(mv[a:b]).digest()
                     for a, b in zip(offs_list[:-1], offs_list[1:], strict=True)])


#: Rows per block of verify_chain's hashing pipeline (:func:`_verify_hashes`).
_HASH_BLOCK_ROWS = 65_536


def _blocks_ahead(n: int, build: Callable[[int, int], pa.Array], *,
                  block_rows: int | None = None, workers: int = 2
                  ) -> Iterator[tuple[int, pa.Array]]:
    """``(start, build(start, length))`` of each block of ``n`` rows, in order, built ahead.

    ``workers`` threads build the next blocks (Arrow kernels, which release the GIL) while
    the caller consumes the current one (the hashing loop, which holds it). At most
    ``workers + 1`` blocks wait at a time, so memory stays bounded by the block size rather
    than the table's, and the blocks' buffers stay small enough to be reused rather than
    faulted in afresh. One block: built on the calling thread.
    """
    size = max(1, block_rows or _HASH_BLOCK_ROWS)
    if n <= size:
        yield 0, build(0, n)
        return
    starts = iter(range(0, n, size))
    with ThreadPoolExecutor(workers) as pool:
        pending: deque[tuple[int, Future[pa.Array]]] = deque(
            (s, pool.submit(build, s, min(size, n - s)))
            for _, s in zip(range(workers + 1), starts, strict=False)
        )
        while pending:
            at, fut = pending.popleft()
            block = fut.result()
            nxt = next(starts, None)
            if nxt is not None:
                pending.append((nxt, pool.submit(build, nxt, min(size, n - nxt))))
            yield at, block


def _verify_hashes(table: pa.Table, prev: pa.Array, *, block_rows: int | None = None,
                   workers: int = 2) -> pa.Array:
    """sha256(prev || content) of every row, as hex strings, content being
    :func:`_content_column` (``strict=False``): the same bytes as the whole table's, built
    block by block ahead of the hashing loop (:func:`_blocks_ahead`)."""
    spec = _chain_spec(table) if _native.enabled() else None
    if spec is not None:  # the native core: content and hashes in one pass, every core
        stored = pc.cast(prev, _LS)
        if isinstance(stored, pa.ChunkedArray):
            stored = stored.combine_chunks()
        return _native.chain_hex(*spec, ("stored", *_native.spans(stored),
                                         _native._validity(stored)), table.num_rows)
    prev = pc.cast(pc.fill_null(prev, ""), _LS)
    empty = pa.scalar("", _LS)

    def build(start: int, k: int) -> pa.Array:
        content = _content_column(table.slice(start, k), strict=False)
        return pc.binary_join_element_wise(prev.slice(start, k), content, empty)

    out = [_digests(joined) for _, joined in _blocks_ahead(
        table.num_rows, build, block_rows=block_rows, workers=workers)]
    return _hex_column(b"".join(out))


def _hex_column(digests: bytes) -> pa.Array:
    """The lowercase hex text of each 32-byte digest of ``digests``, as a string array."""
    text = digests.hex().encode("ascii")
    n = len(digests) // 32
    large = 64 * n > 2**31 - 1  # (over 33M rows: 64-bit offsets)
    offsets = np.arange(0, 64 * (n + 1), 64, dtype=np.int64 if large else np.int32)
    arr = pa.Array.from_buffers(pa.large_string() if large else pa.string(), n,
                                [None, pa.py_buffer(offsets), pa.py_buffer(text)])
    return arr


def _as_table(log: EventLog | pa.Table) -> pa.Table:
    if isinstance(log, EventLog):
        return log.table
    if isinstance(log, pa.Table):
        missing = [
            c for c in (*CONTENT_COLUMNS, "prev_hash", "row_hash") if c not in log.schema.names
        ]
        if missing:
            raise ValueError(f"table lacks the columns {missing} needed to check the chain")
        lacking = [c for c in DERIVED_COLUMNS if c not in log.schema.names]
        if lacking and _sealed_rows(log) is not None:
            raise ValueError(
                f"table lacks the derived columns {lacking}, which the chain of its rows of "
                "formats other than pleach covers; pass the full canonical table (all of "
                "replaykit.schema.DERIVED_COLUMNS)"
            )
        order = sort_order(log)
        if len(order) and not np.array_equal(order, np.arange(len(order))):
            log = log.take(pa.array(order))
        return log
    raise TypeError(f"expected an EventLog or a pyarrow.Table, got {type(log).__name__}")


# --------------------------------------------------------------------------- stamping


def stamp_chain(log: EventLog, *, overwrite: bool = False) -> EventLog:
    """A copy of ``log`` with ``prev_hash`` and ``row_hash`` filled in for every run.

    Each run is chained from :data:`GENESIS` in ``seq`` order (see the module docstring and
    ``docs/integrity.md``). Content bytes are built column-wise; the chaining itself is
    sequential, one sha256 per row.

    Raises:
        ValueError: ``log`` already carries hashes (re-stamping would launder tampering)
            unless ``overwrite=True``; or a ``seq`` outside +-(2**53 - 1).
        TypeError: ``log`` is not an EventLog.

    >>> chained = stamp_chain(log)  # doctest: +SKIP
    >>> verify_chain(chained).empty  # doctest: +SKIP
    True
    """
    if not isinstance(log, EventLog):
        raise TypeError(f"stamp_chain takes an EventLog, got {type(log).__name__}")
    table = log.table
    if not overwrite and table.column("row_hash").null_count < table.num_rows:
        raise ValueError(
            "log already has row hashes; verify it with verify_chain(log), or pass "
            "overwrite=True to re-stamp it (this replaces the existing chain)"
        )
    spec = _chain_spec(table) if _native.enabled() else None
    if spec is not None:  # the native core: content and chained hashes in one pass
        _hashable_ranges(table)
        starts_np = _run_starts(table)
        hashes = _native.chain_hex(*spec, ("chained", starts_np.astype(np.uint8),
                                           GENESIS.encode("ascii")), table.num_rows)
        n = table.num_rows
        shifted = pa.concat_arrays([pa.array([GENESIS], pa.string()), hashes.slice(0, n - 1)]) \
            if n else pa.array([], pa.string())  # fmt: skip
        prev_col = pc.if_else(pa.array(starts_np, pa.bool_()), pa.scalar(GENESIS), shifted)
        table = table.set_column(table.schema.get_field_index("prev_hash"), "prev_hash",
                                 prev_col)
        table = table.set_column(table.schema.get_field_index("row_hash"), "row_hash", hashes)
        return EventLog(table, runs=log.runs, quarantine=log.quarantine, extras=log.extras,
                        sort=False)
    starts = _run_starts(table).tolist()
    genesis = GENESIS.encode("ascii")
    sha = hashlib.sha256
    prevs: list[str] = []
    rows: list[str] = []
    prev = genesis
    # the content bytes are built block by block on worker threads ahead of this loop
    for at, content in _blocks_ahead(
            table.num_rows, lambda s, k: _content_column(table.slice(s, k))):
        mv, offs = _offsets(content)
        for j, start in enumerate(starts[at : at + len(content)]):
            if start:
                prev = genesis
            h = sha(prev)
            h.update(mv[offs[j] : offs[j + 1]])
            hx = h.hexdigest()
            prevs.append(prev.decode("ascii"))
            rows.append(hx)
            prev = hx.encode("ascii")
    idx = table.schema.get_field_index("prev_hash")
    table = table.set_column(idx, "prev_hash", pa.array(prevs, pa.string()))
    idx = table.schema.get_field_index("row_hash")
    table = table.set_column(idx, "row_hash", pa.array(rows, pa.string()))
    return EventLog(table, runs=log.runs, quarantine=log.quarantine, extras=log.extras, sort=False)


def chain_heads(log: EventLog | pa.Table) -> pd.DataFrame:
    """One row per run: tenant_id, run_id, seq and row_hash of its last row (its head).

    Store this frame somewhere the log's writer cannot change (a separate system, a signed
    file, a ledger): passed back to :func:`verify_chain` as ``expected_heads`` it detects
    rows cut from the end of a run, which the chain alone cannot.

    >>> heads = chain_heads(chained)  # doctest: +SKIP
    >>> verify_chain(chained, expected_heads=heads).empty  # doctest: +SKIP
    True
    """
    table = _as_table(log)
    n = table.num_rows
    if n == 0:
        return pd.DataFrame(
            {
                "tenant_id": pd.Series([], dtype="str"),
                "run_id": pd.Series([], dtype="str"),
                "seq": pd.Series([], dtype="Int64"),
                "row_hash": pd.Series([], dtype="str"),
            }
        )
    starts = _run_starts(table)
    last = np.flatnonzero(np.append(starts[1:], True))
    sub = table.take(pa.array(last)).select(["tenant_id", "run_id", "seq", "row_hash"])
    sub = pa.table({name: _plain(sub.column(name)) for name in sub.schema.names})
    return to_pandas(sub)
