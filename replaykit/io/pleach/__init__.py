"""Loader for pleach ``harness_event_log`` exports (JSONL or Parquet).

A row: ``tenant_id``, ``chat_id``, ``sequence_number``, ``event_type``, ``payload`` (a JSON
object), ``created_at`` (ISO-8601 text or epoch milliseconds), ``prev_hash``, ``row_hash``.
See docs/formats.md for every event type and its mapping to the canonical columns.

How JSONL is read (fast path, per block of ~16 MB, less for a file of fewer than four blocks
per thread; no Python loop over rows; as many blocks are read at a time on worker threads as
replaykit has threads (``_native.threads()``), their rows are checked and quarantined in file
order):

1. Arrow's JSON reader parses every line once for the envelope scalars (this also checks
   that every line is valid JSON of the right types).
2. The payload's byte span is located column-wise: its key is the first ``"payload":`` of
   the line (that byte sequence can only be an object key in valid JSON) and it ends at the
   line's second-to-last ``}``. The spans are cut out of the block with one Arrow ``take``.
3. The spans are parsed by Arrow again, for the typed payload fields (ids, tool, finish,
   usage, cacheKey, ...). That parse is also the proof that each span is exactly one JSON
   object: a wrong span would not parse, or would parse to a different number of rows.

A block where any step fails (bad JSON, invalid UTF-8, a type the reader does not expect,
a span that cannot be proven) goes to the robust path: every line is decoded on its own
(orjson when installed) to find and report the bad rows; the good lines then go through the
fast path again. Should that still fail (e.g. payload fields whose JSON types differ between
rows), the good rows are built from the decoded objects and their ``payload`` column holds
the canonical JSON of the object instead of the source text (same value, keys sorted).

Per block, on the reading threads: tool arguments, ``text`` and the row-wise canonical
columns (the typed payload fields are then dropped). At the end only ``type``/``kind``, one
stable sort on a packed integer key (which also finds duplicate keys) and one copy of the
large text columns into sorted order (``_take_runs``) remain; each block's source is freed
as soon as it is copied. Allocation goes through Arrow's system-allocator pool during the
load (mimalloc's eager return of freed pages to the OS made page faults the largest cost).

The package, one story per module: ``_shapes`` (constants, a block's rows), ``_fastpath`` (the
column-wise JSONL path), ``_rows`` (rows decoded one by one, for the robust path), ``_checks``
(row checks and quarantine reports), ``_derive`` (the derived canonical columns), ``_finish``
(sort, duplicates, the runs table) and ``_parquet`` (Parquet files and Arrow tables); this
module reads the files (blocks, the fast path, the robust path) and re-exports every name.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ..._base import native as _native
from ..._base.json import JSONDecodeError, gc_paused, loads
from ...eventlog.log import EventLog
from ...tenancy import tenant_id_problem
from .._common import (
    ErrorPolicy,
    Progress,
    Quarantine,
    check_errors_arg,
    compressed,
    expand_paths,
    unreadable,
)
from ._checks import (  # noqa: F401 (the old module's names, re-exported)
    _EPOCH_MS,
    _bad,
    _check_rows,
    _parse_created,
    _raw_row,
    _scope_quarantine,
    _tenant_filter,
    _value_at,
)
from ._derive import (  # noqa: F401 (the old module's names, re-exported)
    _TEXT_FIELDS,
    DERIVED_COLUMNS,
    _all_open_objects,
    _canonical_columns,
    _fill_derived,
    _segments,
    _slim,
    _tool_args,
    _type_and_kind,
    _typed_payloads,
    derive_columns,
)
from ._fastpath import (  # noqa: F401 (the old module's names, re-exported)
    _BLANK,
    _INF,
    _NAN,
    _NONFINITE,
    _PAYLOAD_KEY,
    _PLACEHOLDER,
    _WS,
    _check_depth,
    _envelope_schema,
    _fast_block,
    _may_hold_nonfinite,
    _parse_lines,
    _parse_payloads,
    _payload_spans,
    _positions,
    _scratch,
    _slices,
)
from ._finish import (  # noqa: F401 (the old module's names, re-exported)
    _MIN_COLUMNS,
    _finish,
    _key_order,
    _release,
    _runs_table,
    _take_runs,
)
from ._nativepath import native_block
from ._parquet import (  # noqa: F401 (the old module's names, re-exported)
    _created_type_ok,
    _map_to_dict,
    _parquet_payloads,
    _part_from_arrow,
    _payload_type_ok,
    _read_parquet,
    _read_parquet_file,
    events_from_arrow,
)
from ._rows import (  # noqa: F401 (the old module's names, re-exported)
    _DECODER,
    _JSON_WS,
    _coerce,
    _empty_part,
    _is_utf8_error,
    _member_text,
    _part_from_objects,
    _row_problem,
    _skip_ws,
    _typed_from_objects,
    duplicate_tenants,
)
from ._shapes import (  # noqa: F401 (the old module's names, re-exported)
    _BLOCK,
    _ENVELOPE_FIELDS,
    _FIX_TENANT,
    _PATTERNS,
    _REQUIRED_COLUMNS,
    _STR,
    _TYPED,
    EVENT_KINDS,
    FORMAT,
    _Counts,
    _FastPathFailed,
    _Part,
)
from ._summary import RunSummary
from ._summary import check as _summary_check
from ._summary import per_run as _per_run
from ._summary import prepare as _summary_prepare
from ._summary import reduce as _summary_reduce

__all__ = [
    "DERIVED_COLUMNS", "EVENT_KINDS", "FORMAT", "derive_columns", "events_from_arrow",
    "read_pleach", "sniff",
]


# ----------------------------------------------------------------------------- sniffing
def sniff(path: Path) -> str | None:
    """None if ``path`` looks like a pleach export, else the reason it does not.

    A JSONL file's first non-blank line must be a JSON object with ``tenant_id``, ``chat_id``,
    ``sequence_number``, ``event_type`` and ``payload``; a Parquet file must have those columns.
    """
    p = Path(path)
    try:
        if p.suffix == ".parquet":
            import pyarrow.parquet as pq

            try:
                names = set(pq.read_schema(p).names)
            except pa.ArrowException as exc:
                return f"not a readable Parquet file ({exc})"
            missing = [c for c in _REQUIRED_COLUMNS if c not in names]
            return f"Parquet columns {missing} are missing" if missing else None
        with open(p, "rb") as fh:
            for raw in fh:
                if raw.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark (line 1)
                    raw = raw[3:]
                if raw.strip():
                    break
            else:
                return "file is empty"
        try:
            obj = loads(raw)
        except JSONDecodeError:
            return "first line is not valid JSON"
        if not isinstance(obj, dict):
            return "first line is not a JSON object"
        missing = [c for c in _REQUIRED_COLUMNS if c not in obj]
        if missing:
            return f"first row lacks harness_event_log fields {missing}"
        return None
    except OSError as exc:
        return f"cannot read file: {exc}"


# ----------------------------------------------------------------------------- public API
def read_pleach(
    path_or_glob: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    tenant_id: str | Sequence[str] | None = None,
    errors: ErrorPolicy = "raise",
    progress: bool | None = None,
    threads: int | None = None,
) -> EventLog:
    """Load pleach ``harness_event_log`` exports (JSONL or Parquet) into an EventLog.

    ``path_or_glob`` is a file, a directory (searched recursively for ``*.jsonl``,
    ``*.ndjson``, ``*.json``, ``*.parquet``), a glob, or a list of those. Each row becomes
    one event: ``run_id = chat_id``, ``seq = sequence_number``, ``type = event_type``,
    ``payload`` = the source's JSON text of the payload object (lossless), plus the typed
    columns of docs/formats.md (kind, ref_id, tool_name, args_hash, cache_key, is_error,
    finish, input/output tokens, text; ``turn`` is carried forward from ``turn.started``;
    a chat named by ``subagent.spawned.child_chat_id`` gets that chat as parent_run_id).

    Rows carry their own tenant: ``tenant_id=`` is a *filter* (a string or a list of
    strings); rows of other tenants are skipped, neither loaded nor quarantined, and counted
    in ``log.extras["pleach_counts"]`` (``input_rows == loaded + quarantined + filtered_out``
    per file). Blank lines are not rows. Every tenant id follows the one tenant-id rule
    (:mod:`replaykit.tenancy`): a row breaking it is an error (reason ``bad_tenant``; a
    missing or empty one: ``missing_tenant``). A quarantined row keeps its tenant and run in
    ``log.quarantine`` when they can be read; with a ``tenant_id=`` filter, quarantined rows
    that are not the requested tenants' (another tenant's, or one whose tenant cannot be
    read) are left out of ``log.quarantine`` and counted as ``filtered_out``: only an
    all-tenants load shows them.

    Duplicate ``(tenant_id, chat_id, sequence_number)``: the first row in file order (files in
    sorted path order) is kept; every later one is an error (reason ``duplicate_seq``).

    Args:
        path_or_glob: where to read.
        tenant_id: keep only these tenants' rows (None: all tenants).
        errors: ``"raise"`` stops at the first bad row with a LoadError; ``"quarantine"``
            puts each bad row, with its reason, in ``log.quarantine`` and keeps going.
        progress: show a progress bar over bytes (None: only when interactive).
        threads: read on at most this many threads (None: every core the process may use,
            capped by ``REPLAYKIT_THREADS``; see ``replaykit._base.native.threads``). The result
            is the same on any count.

    Returns:
        An EventLog sorted by (tenant_id, run_id, seq).

    Raises:
        LoadError: a bad row under ``errors="raise"``; reasons: ``bad_json``, ``not_object``,
            ``bad_utf8``, ``missing_tenant``, ``bad_tenant``, ``missing_field`` (chat_id),
            ``bad_seq``,
            ``unknown_event`` (missing/empty event_type), ``bad_payload``,
            ``bad_timestamp``, ``bad_type``, ``duplicate_seq``, ``bad_schema`` (Parquet).
        FileNotFoundError: nothing matches ``path_or_glob``.
        LoadError: ``reason="bad_tenant"``: ``tenant_id`` is given but an id in it breaks the
            tenant-id rule (:mod:`replaykit.tenancy`), or it is an empty list.
        ValueError: ``errors`` is not ``"raise"`` or ``"quarantine"``.
        SettingError: ``threads`` or ``REPLAYKIT_THREADS`` is not a whole number >= 1.

    Example:
        >>> import replaykit as rk
        >>> log = rk.read_pleach("data/pleach/*.jsonl", tenant_id="acme")  # doctest: +SKIP
        >>> log.runs_df()[["run_id", "events", "tool_calls"]]  # doctest: +SKIP
    """
    policy = check_errors_arg(errors)
    tenants = _tenant_filter(tenant_id)
    files = expand_paths(path_or_glob, patterns=_PATTERNS)
    # Arrow's default pool (mimalloc) hands freed pages back to the OS quickly; the loader
    # allocates and frees hundreds of MB per second, and re-faulting those pages cost more
    # kernel time than the parsing itself. The system allocator reuses them. The previous
    # pool is restored on return (buffers remember the pool they came from).
    with _native.using_threads(threads), _system_memory_pool(), \
            (gc_paused() if _native.enabled() else nullcontext()):
        # native path: the collector paused (the load makes few Python objects, none in
        # cycles; its collections were ~1% of the load's CPU)
        return _read_pleach(files, policy, tenants, progress)


def read_pleach_runs(
    path_or_glob: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    tenant_id: str | Sequence[str] | None = None,
    errors: ErrorPolicy = "raise",
    progress: bool | None = None,
    threads: int | None = None,
) -> RunSummary:
    """What ``replaykit summary`` asks of :func:`read_pleach`'s log, without the log: the
    same arguments, rows, checks, errors, quarantine and counts, but only the per-run numbers
    (a ``RunSummary``; ``io/pleach/_summary.py`` says how)."""
    policy = check_errors_arg(errors)
    tenants = _tenant_filter(tenant_id)
    files = expand_paths(path_or_glob, patterns=_PATTERNS)
    with _native.using_threads(threads), _system_memory_pool(), \
            (gc_paused() if _native.enabled() else nullcontext()):
        quarantine = Quarantine(policy)
        prepare = partial(_summary_prepare, fallback=_prepare_block, make_block=_Block)
        parts, counts_rows = _read_files(files, quarantine, tenants, progress,
                                         prepare=prepare, check=_summary_check,
                                         reduce=_summary_reduce)
        stats, runs, events, span, dup_by_source = _per_run(parts, quarantine)
        counts = _counts_table(counts_rows, dup_by_source,
                               _scope_quarantine(quarantine, tenants))
        return RunSummary(stats, runs, quarantine.table(), {"pleach_counts": counts},
                                   events, span)


_POOL_LOCK = threading.Lock()
_pool_state: dict[str, Any] = {"users": 0, "saved": None}


@contextmanager
def _system_memory_pool() -> Iterator[None]:
    """Use Arrow's system-allocator pool while loading (nested/concurrent calls are safe)."""
    with _POOL_LOCK:
        if _pool_state["users"] == 0:
            _pool_state["saved"] = pa.default_memory_pool()
            pa.set_memory_pool(pa.system_memory_pool())
        _pool_state["users"] += 1
    try:
        yield
    finally:
        with _POOL_LOCK:
            _pool_state["users"] -= 1
            if _pool_state["users"] == 0:
                pa.set_memory_pool(_pool_state["saved"])
                _pool_state["saved"] = None


def _read_pleach(
    files: list[Path], policy: ErrorPolicy, tenants: frozenset[str] | None,
    progress: bool | None,
) -> EventLog:
    quarantine = Quarantine(policy)
    parts, counts_rows = _read_files(files, quarantine, tenants, progress)
    # every row read by the native scan: the block's bytes were checked UTF-8, and so is
    # every text column made of them (slices, text the scan decoded or wrote, hex hashes)
    # or by Python (file names, event kinds): the table's UTF-8 pass is left out
    # (tests/io/test_pleach_native_utf8.py). Parquet parts and the reference's are checked.
    text_checked = bool(parts) and all(part.native for _, part in parts)
    table, dup_by_source = _finish(parts, quarantine)
    counts = _counts_table(counts_rows, dup_by_source, _scope_quarantine(quarantine, tenants))
    runs = _runs_table(table)
    extras = {"pleach_counts": counts}
    # the rows are already in (tenant_id, run_id, seq) order: EventLog only validates that
    return EventLog._loaded(table, runs=runs, quarantine=quarantine.table(), extras=extras,
                            text_checked=text_checked)


def _read_files(
    files: list[Path], quarantine: Quarantine, tenants: frozenset[str] | None,
    progress: bool | None, *, prepare: Any = None, check: Any = None, reduce: Any = None,
) -> tuple[list[tuple[str, Any]], list[dict[str, Any]]]:
    """Every file's checked parts, in file order, with their source, and one row of counts
    per file (completed by :func:`_counts_table`). ``prepare`` / ``check`` replace
    :func:`_prepare_block` / :func:`_check_rows` for JSONL blocks and ``reduce`` maps each
    Parquet part (the summary path, ``_summary``); None: the loader's own."""
    total = sum(f.stat().st_size for f in files)
    parts: list[tuple[str, Any]] = []
    counts_rows: list[dict[str, Any]] = []
    with Progress(total, desc="pleach", unit="B", enabled=progress) as bar:
        for f in files:
            source = f"{FORMAT}:{f}"
            counts = _Counts()
            before = len(quarantine)
            if f.suffix == ".parquet":
                file_parts = _read_parquet_file(f, source, quarantine, tenants, counts)
                if reduce is not None:
                    file_parts = [reduce(p) for p in file_parts]
                bar.update(f.stat().st_size)
            else:
                try:
                    with open(f, "rb") as fh:
                        file_err = compressed(source, fh.read(8))
                    if file_err is None:
                        file_parts = list(
                            _read_jsonl(f, source, quarantine, tenants, counts, bar,
                                        prepare=prepare, check=check))
                except OSError as exc:
                    file_err = unreadable(source, exc)
                if file_err is not None:  # the whole file is one bad row; the others load
                    del quarantine.rows[before:]
                    counts.input_rows, counts.filtered_out = 1, 0
                    quarantine.bad(file_err)
                    file_parts = []
            counts.quarantined = len(quarantine) - before
            parts.extend((source, p) for p in file_parts)
            del file_parts  # _finish frees the blocks as it copies them
            counts_rows.append(
                {
                    "source": source,
                    "input_rows": counts.input_rows,
                    "filtered_out": counts.filtered_out,
                    "quarantined_in_file": counts.quarantined,
                }
            )
    return parts, counts_rows


def _counts_table(counts_rows: list[dict[str, Any]], dup_by_source: dict[str, int],
                  not_theirs: dict[str, int]) -> pa.Table:
    """``extras["pleach_counts"]``: per file, its rows loaded, quarantined (duplicates
    included) and filtered out (quarantined rows of other tenants included)."""
    for row in counts_rows:
        row["quarantined"] = row.pop("quarantined_in_file") + dup_by_source.get(row["source"], 0)
        row["quarantined"] -= not_theirs.get(row["source"], 0)
        row["filtered_out"] += not_theirs.get(row["source"], 0)
        row["loaded"] = row["input_rows"] - row["filtered_out"] - row["quarantined"]
    return pa.Table.from_pylist(counts_rows, schema=_COUNTS_SCHEMA)


_COUNTS_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("input_rows", pa.int64()),
        ("filtered_out", pa.int64()),
        ("quarantined", pa.int64()),
        ("loaded", pa.int64()),
    ]
)


# ----------------------------------------------------------------------------- JSONL
def _iter_blocks(path: Path, bar: Progress, block: int | None = None) -> Iterator[bytearray]:
    """Yield blocks of ~``block`` bytes (None: _BLOCK), each ending at a line end (a final
    one is added)."""
    block = _BLOCK if block is None else block
    with open(path, "rb") as fh:
        first = True
        left = _file_size(fh)
        while True:
            # a file smaller than a block gets a buffer of its size (+1 to see the end):
            # a 16 MB buffer zero-filled per small file was most of reading one
            chunk = bytearray(min(block, max(left, 0) + 1))
            got = fh.readinto(chunk)
            left = block if got == len(chunk) else left - got  # it grew: full blocks again
            if not got:
                return
            del chunk[got:]
            if first and chunk.startswith(b"\xef\xbb\xbf"):
                chunk[:3] = b"   "  # a UTF-8 byte order mark: JSON whitespace, offsets kept
            first = False
            bar.update(got)
            if not chunk.endswith(b"\n"):
                tail = fh.readline()  # complete the last line (extends in place, no copy)
                bar.update(len(tail))
                chunk += tail
                if not chunk.endswith(b"\n"):
                    chunk += b"\n"
            yield chunk


_SLACK = 1 << 20  # room after a block's _BLOCK bytes for the rest of its last line


def _file_size_of(path: Path) -> int:
    """``path``'s size in bytes (0 when it cannot be told: the blocks are then full-size)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _file_size(fh: Any) -> int:
    """The bytes left to read in ``fh`` (a regular file's size; a pipe or a file that grows
    as it is read only changes how the blocks are cut, never which lines they hold)."""
    try:
        return max(os.fstat(fh.fileno()).st_size - fh.tell(), 0)
    except (OSError, ValueError):
        return _BLOCK


def _give_back(pool: list[bytearray], buf: bytearray, block: int | None = None) -> None:
    """Return a block buffer to ``pool`` when it is a full-size one for blocks of ``block``
    bytes (None: _BLOCK; a small file's own buffer or a long line's block is not reused)."""
    if len(buf) == (_BLOCK if block is None else block) + _SLACK:
        pool.append(buf)


def _block_size(size: int, threads: int) -> int:
    """The block size for a file of ``size`` bytes read on ``threads`` threads: _BLOCK, or
    less for a file of fewer than about four blocks per thread (down to 1 MB), so every
    thread has blocks to read and the last ones do not leave the others idle."""
    if threads <= 1:
        return _BLOCK
    return min(_BLOCK, max(1 << 20, -(-size // (4 * threads))))


def _iter_native_blocks(path: Path, bar: Progress, pool: list[bytearray],
                        block: int | None = None) -> Iterator[tuple[bytearray, memoryview]]:
    """_iter_blocks for the native path: the same blocks (a BOM blanked, a final line end
    added), each a view of a buffer taken from ``pool`` (buffers of _BLOCK + _SLACK bytes the
    caller hands back once a block is read), so the file is read into the same few buffers:
    no fresh pages, zero-filling or reallocation per block. A block whose last line does not
    fit the slack is a fresh bytearray; so is the rest of a file shorter than a block (its
    own size: a small file costs no 17 MB buffer). Only full-size buffers go back to the
    pool. ``block``: the block size (None: _BLOCK; buffers of ``block`` + _SLACK bytes)."""
    block = _BLOCK if block is None else block
    with open(path, "rb") as fh:
        first = True
        left = _file_size(fh)
        while True:
            if pool:
                buf = pool.pop()
            elif left < block:  # the file's rest fits: a buffer of its size (see above)
                buf = bytearray(max(left, 0) + 2)
            else:
                buf = bytearray(block + _SLACK)
            view = memoryview(buf)
            want = min(block, len(buf) - 1)
            got = fh.readinto(view[:want])
            left = block if got == want < block else left - got  # it grew: full blocks again
            if not got:
                view.release()
                _give_back(pool, buf, block)
                return
            if first and buf.startswith(b"\xef\xbb\xbf"):
                buf[:3] = b"   "  # a UTF-8 byte order mark: JSON whitespace, offsets kept
            first = False
            bar.update(got)
            used = got
            if buf[used - 1] != 10:
                tail = fh.readline()  # complete the last line
                left -= len(tail)
                bar.update(len(tail))
                if len(tail) < len(buf) - used:
                    buf[used:used + len(tail)] = tail
                    used += len(tail)
                    if buf[used - 1] != 10:
                        buf[used] = 10
                        used += 1
                else:  # a very long line: a block of its own size
                    big = bytearray(view[:used]) + tail
                    if not big.endswith(b"\n"):
                        big += b"\n"
                    view.release()
                    _give_back(pool, buf, block)
                    yield big, memoryview(big)
                    continue
            yield buf, view[:used]


@dataclass
class _Block:
    """One block's lines (line numbers relative to the block) and its fast-path part."""

    block: bytes | bytearray
    n_lines: int
    starts: np.ndarray
    ends: np.ndarray
    lineno: np.ndarray  # 0-based within the block until the reader adds the offset
    part: _Part | None  # None: the fast path failed (or no rows)


def _prepare_block(block: bytes | bytearray | memoryview) -> _Block:
    """Line spans of a block and, when possible, its rows read column-wise (thread-safe).

    The native core reads the block when it can (``_nativepath``: the same rows, in one
    pass); otherwise the column-wise Arrow path below, the reference. A memoryview (a pooled
    buffer, see _iter_native_blocks) is not kept: the reference reads a copy of it.
    """
    native = native_block(block)
    if native is not None:
        n_lines, line, part = native
        return _Block(b"", n_lines, line, line, line, part)
    if isinstance(block, memoryview):
        block = bytearray(block)
    b = np.frombuffer(block, dtype=np.uint8)
    nl = _positions(b, 10)
    starts = np.empty(len(nl), dtype=np.int64)
    if len(nl):
        starts[0] = 0
        starts[1:] = nl[:-1] + 1
    ends = nl.copy()
    cr = (ends > starts) & (b[np.maximum(ends - 1, 0)] == 13)
    ends[cr] -= 1
    lineno = np.arange(len(nl), dtype=np.int64)
    nonblank = ends > starts
    # a line of only whitespace is blank too (checked one by one: such lines are rare)
    for i in np.flatnonzero(nonblank & _BLANK[b[np.minimum(starts, max(len(b) - 1, 0))]]):
        if not bytes(block[starts[i]:ends[i]]).strip():
            nonblank[i] = False
    if not nonblank.all():
        # a line of only spaces/tabs is blank too
        starts, ends, lineno = starts[nonblank], ends[nonblank], lineno[nonblank]
    part = None
    if len(starts):
        try:
            part = _slim(_fast_block(block, b, starts, ends, lineno, threads=False))
        except _FastPathFailed:
            part = None
    return _Block(block, len(nl), starts, ends, lineno, part)


def _read_jsonl(
    path: Path,
    source: str,
    quarantine: Quarantine,
    tenants: frozenset[str] | None,
    counts: _Counts,
    bar: Progress,
    *,
    prepare: Any = None,
    check: Any = None,
) -> Iterator[_Part]:
    # Blocks are read column-wise on replaykit's threads (_native.threads(): Arrow, numpy
    # and the native core release the GIL); the results are taken in file order, so row
    # checks and quarantine stay sequential (on this thread).
    first_line = 1
    # the native path reads the file into a few reused buffers (handed back below, once the
    # block is read); the reference path reads a new bytearray per block
    buffers: list[bytearray] | None = [] if _native.enabled() else None
    prepare = _prepare_block if prepare is None else prepare
    check = _check_rows if check is None else check
    n_threads = _native.threads()
    block_size = _block_size(_file_size_of(path), n_threads)
    with ThreadPoolExecutor(n_threads) as pool:
        pending: deque[Any] = deque()
        blocks: Iterator[Any] = (_iter_blocks(path, bar, block_size) if buffers is None
                                 else _iter_native_blocks(path, bar, buffers, block_size))
        done = False
        # native path: one block more in flight than there are threads, so a thread finding
        # its block done picks up the next at once while this thread checks rows and reads on
        depth = n_threads if buffers is None else n_threads + 1
        while True:
            while not done and len(pending) < depth:
                block = next(blocks, None)
                if block is None:
                    done = True
                elif buffers is None:
                    pending.append((None, None, pool.submit(prepare, block)))
                else:
                    buf, view = block
                    pending.append((buf, view, pool.submit(prepare, view)))
            if not pending:
                break
            buf, view, fut = pending.popleft()
            blk = fut.result()
            if buf is not None:
                view.release()
                _give_back(buffers, buf, block_size)  # type: ignore[arg-type]
                del buf, view
            lineno = blk.lineno + first_line
            first_line += blk.n_lines
            counts.input_rows += len(blk.starts)
            if not len(blk.starts):
                continue
            part = blk.part
            if part is None:
                part = _slim(
                    _robust_block(
                        blk.block, blk.starts, blk.ends, lineno, source, quarantine,
                        tenants, counts,
                    )
                )
            else:
                part.line = lineno
            del blk
            part = check(part, source, quarantine, tenants, counts)
            if part is not None:
                yield part


def _robust_block(
    block: bytes | bytearray,
    starts: np.ndarray,
    ends: np.ndarray,
    lineno: np.ndarray,
    source: str,
    quarantine: Quarantine,
    tenants: frozenset[str] | None,
    counts: _Counts,
) -> _Part:
    """Decode every line on its own; report bad ones; load the good ones."""
    view = memoryview(block)
    good_lines: list[bytes] = []
    good_no: list[int] = []
    objs: list[dict[str, Any]] = []
    for lo, hi, no in zip(starts.tolist(), ends.tolist(), lineno.tolist(), strict=True):
        raw = bytes(view[lo:hi])
        if not raw.strip():
            continue  # whitespace-only line: blank, not a row
        try:
            obj = loads(raw)
        except UnicodeDecodeError:
            _bad(quarantine, source, no, "bad_utf8", "line is not valid UTF-8", raw,
                 fix="Re-export the file as UTF-8, or pass errors=\"quarantine\".")
            continue
        except JSONDecodeError as exc:
            if _is_utf8_error(raw):
                _bad(quarantine, source, no, "bad_utf8", "line is not valid UTF-8", raw,
                     fix="Re-export the file as UTF-8, or pass errors=\"quarantine\".")
            else:
                _bad(quarantine, source, no, "bad_json",
                     f"line is not valid JSON ({exc}); truncated or corrupted row", raw)
            continue
        if not isinstance(obj, dict):
            _bad(quarantine, source, no, "not_object",
                 f"line is a JSON {type(obj).__name__}, expected an object", raw)
            continue
        dups = duplicate_tenants(raw)
        if dups is not None:
            _bad(quarantine, source, no, "bad_tenant",
                 f"is given {len(dups)} times in the row ({', '.join(map(repr, dups[:4]))}): "
                 "whose row it is is ambiguous (JSON readers differ on which one counts)", raw,
                 "tenant_id", "Write each row's tenant_id once: fix the export, or pass "
                 'errors="quarantine" to load the other rows.')
            continue
        t = obj.get("tenant_id")
        if tenants is not None and tenant_id_problem(t) is None and t not in tenants:
            counts.filtered_out += 1  # another tenant's row: skipped, never reported
            continue
        problem = _row_problem(obj)
        if problem is not None:
            reason, fld, detail = problem
            _bad(quarantine, source, no, reason, detail, raw, fld,
                 _FIX_TENANT if reason in ("missing_tenant", "bad_tenant") else None,
                 owner=(t, obj.get("chat_id")))
            continue
        good_lines.append(raw)
        good_no.append(no)
        objs.append(obj)
    lines_no = np.asarray(good_no, dtype=np.int64)
    if not good_lines:
        return _empty_part()
    # the good lines again through the fast path, for the source text of each payload
    joined = b"\n".join(good_lines) + b"\n"
    jb = np.frombuffer(joined, dtype=np.uint8)
    nl = np.flatnonzero(jb == 10)
    st = np.empty(len(nl), dtype=np.int64)
    st[0] = 0
    st[1:] = nl[:-1] + 1
    try:
        return _fast_block(joined, jb, st, nl, lines_no, threads=True, strict_checked=True)
    except _FastPathFailed:
        return _part_from_objects(objs, lines_no, good_lines)
