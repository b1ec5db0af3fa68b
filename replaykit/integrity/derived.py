"""The derived check: pleach rows' derived columns re-derived from ``type`` + ``payload`` and
compared with the stored ones (they are not hashed)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .content import _LS, REDERIVED_FORMAT, _formats, _plain
from .problems import _problems

__all__ = []

def _pleach_rows(table: pa.Table) -> pa.Table | None:
    """The rows of ``table`` whose derived columns are re-derived (None: none): the pleach
    rows, and every row that names no format (no ``source`` column, or a null there). Those
    hash in the six-key form like pleach rows, so every row either hashes its derived
    columns (:func:`_sealed_rows`) or has them re-derived: none escapes both."""
    from ..io.pleach import DERIVED_COLUMNS as PLEACH_DERIVED

    names = table.schema.names
    if not table.num_rows or not any(c in names for c in PLEACH_DERIVED):
        return None
    formats = _formats(table)
    if formats is None:
        return table
    mine = pc.fill_null(pc.equal(formats, REDERIVED_FORMAT), True)
    count = pc.sum(pc.cast(mine, pa.int64())).as_py() or 0
    if not count:
        return None
    return table if count == table.num_rows else table.filter(mine)


def _typed_of(sub: pa.Table, *, threads: bool = True) -> pa.Table:
    """The pleach loader's typed payload fields of ``sub`` (one Arrow parse, GIL released;
    ``threads=False``: on this thread only)."""
    from ..io.pleach import _typed_payloads

    return _typed_payloads(pc.cast(_plain(sub.column("payload")), _LS), threads=threads)


def _parsed_of(sub: pa.Table) -> pa.Table:
    """The typed fields of ``sub``'s payloads for the derived-column check, parsed on a
    second thread while the first builds the content bytes and hashes: Arrow's JSON reader
    on this one thread (it releases the GIL for its whole run, so it overlaps the hashing
    loop on the other core instead of competing with it for both cores). The tool calls'
    arguments (:func:`replaykit.io.pleach._derive.table_tool_args`, Python holding the GIL)
    are decoded afterwards on the first thread: on the second they only queued behind the
    hashing loop (measured: 1.50 s against 1.91 s for 300,000 rows, interleaved)."""
    return _typed_of(sub, threads=False)


def _text_mismatch(stored: pa.ChunkedArray | pa.Array, sources: list[Any]
                   ) -> np.ndarray | None:
    """The rows whose stored ``text`` is not the derived one, compared source by source.

    The derived ``text`` is the first non-null of ``sources`` (``_derived``); each row is
    compared with its first non-null source (a row with none must store null), so the
    derived column is never built. None when ``stored`` is not a string column (then the
    caller compares the built column).
    """
    col = _plain(stored)
    if pa.types.is_large_string(col.type):
        try:
            col = col.cast(pa.string())  # new offsets, the same data buffer
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
    if not pa.types.is_string(col.type):
        return None
    n = len(col)
    if len(sources) == 1 and isinstance(sources[0], pa.Array):  # (the native core's text)
        try:
            only = sources[0].cast(pa.string())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            only = None
        if only is not None and col.equals(only):  # the same values and nulls: none differs
            return np.zeros(n, dtype=bool)
    same = np.zeros(n, dtype=bool)
    todo = np.ones(n, dtype=bool)  # rows whose first non-null source is not yet reached
    for src in sources:
        if src.type != pa.string():
            src = src.cast(pa.string())
        valid = pc.is_valid(src).to_numpy(zero_copy_only=False)
        first = valid & todo
        if first.any():
            eq = pc.fill_null(pc.equal(col, src), False).to_numpy(zero_copy_only=False)
            same[first] = eq[first]
        todo &= ~valid
    same[todo] = ~pc.is_valid(col).to_numpy(zero_copy_only=False)[todo]
    return ~same


#: The derived columns that depend on the tool calls' canonical arguments (the rest are
#: compared on the parse thread while the main thread canonicalises the arguments).
_ARGS_COLUMNS = ("args_hash", "text")


#: What :func:`_derived_side` returns: the derived columns, the ``text`` sources, and the
#: ``(column, derived_mismatch rows)`` found so far (None: the whole check, in
#: :data:`DERIVED_COLUMNS` order, when the native core derived every column).
_Side = tuple[dict[str, pa.Array], list[Any], list[tuple[str, pa.Table]]]


def _native_check(sub: pa.Table) -> list[tuple[str, pa.Table]] | None:
    """The whole derived-column check of ``sub`` with the columns re-derived by the native
    core (:func:`replaykit.io.pleach._derive.native_derived`: one pass over the payloads,
    GIL released, every core) and compared column-wise by :func:`_compare_derived` (the
    reference's comparison, so the same problems); None when the core is off or declines
    (then the reference derivation runs)."""
    from ..io.pleach._derive import native_derived

    got = native_derived(sub)
    if got is None:
        return None
    derived, sources = got
    return _compare_derived(sub, derived, sources, None)


def _derived_side(sub: pa.Table, native: Any = None) -> _Side:
    """The part of the derived-column check that needs no tool-call arguments, for a thread
    of its own: the Arrow parse of the payloads (:func:`_parsed_of`), the derived columns,
    and the comparison of all but :data:`_ARGS_COLUMNS` (placeholders stand in for the
    arguments until :func:`_derived_rest` puts them in). ``native``: a Future told whether
    the native core did the whole check first (:func:`_native_check`; then its problems
    are the third member and the rest is empty), so the caller knows at once whether it
    must canonicalise the tool calls' arguments itself."""
    from ..io.pleach._derive import _derived

    if native is not None:
        try:
            done = _native_check(sub)
        except Exception:  # (a panic caught at the core's boundary, say): the reference
            done = None    # decides, and raises what it raises
        native.set_result(done is not None)
        if done is not None:
            return {}, [], done
    typed = _parsed_of(sub)
    n = sub.num_rows
    none = pa.nulls(n, pa.string())
    derived, sources = _derived(sub, typed=typed, tool_args=(none, none))
    rest = [c for c in sub.schema.names if c not in _ARGS_COLUMNS]
    return derived, sources, _compare_derived(sub, derived, sources, rest)


def _derived_rest(sub: pa.Table, side: tuple[dict[str, pa.Array], list[Any],
                                            list[tuple[str, pa.Table]]],
                  tool_args: tuple[pa.Array, pa.Array]) -> list[pa.Table]:
    """derived_mismatch problems of ``sub`` (the rows whose ``source`` names the pleach
    format, :func:`_pleach_rows`, re-derived by the pleach loader's own code) from
    :func:`_derived_side`'s result and the tool calls' arguments
    (:func:`replaykit.io.pleach._derive.table_tool_args`): ``expected`` / ``found`` are
    ``"<column>=<value>"`` (``null`` for a missing value), in DERIVED_COLUMNS order."""
    from ..io.pleach import DERIVED_COLUMNS
    from ..schema import EVENTS_SCHEMA

    derived, sources, done = side
    args, hashes = tool_args
    derived = dict(derived)
    derived["args_hash"] = _plain(hashes).cast(EVENTS_SCHEMA.field("args_hash").type)
    sources = [args, *sources[1:]]
    found = dict(done + _compare_derived(sub, derived, sources, _ARGS_COLUMNS))
    return [found[c] for c in DERIVED_COLUMNS if c in found]


def _compare_derived(sub: pa.Table, derived: dict[str, pa.Array], text_sources: list[Any],
                     only: Iterable[str] | None) -> list[tuple[str, pa.Table]]:
    """``(column, derived_mismatch rows)`` of each stored derived column of ``sub`` (of
    ``only``, if given) that differs from ``derived`` (``text``: from its sources), in
    :data:`DERIVED_COLUMNS` order."""
    from ..io.pleach import DERIVED_COLUMNS
    from ..io.pleach._derive import _text_column

    wanted = None if only is None else set(only)
    cols = [c for c in DERIVED_COLUMNS
            if c in sub.schema.names and (wanted is None or c in wanted)]
    out: list[tuple[str, pa.Table]] = []
    for c in cols:
        text_bad = _text_mismatch(sub.column(c), text_sources) if c == "text" else None
        if text_bad is not None and not text_bad.any():
            continue  # text holds: the column is never built
        if c == "text":
            derived[c] = _text_column(text_sources)
        stored, want = _plain(sub.column(c)), _plain(derived[c])
        if stored.type != want.type:
            try:
                stored = stored.cast(want.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                stored, want = pc.cast(stored, _LS), pc.cast(want, _LS)
        if text_bad is not None:
            bad = pa.array(text_bad)
        elif stored.equals(want):
            continue  # (nulls equal nulls, as below): one Arrow comparison, no masks built
        else:
            same = pc.or_kleene(
                pc.fill_null(pc.equal(stored, want), False),
                pc.and_(pc.is_null(stored), pc.is_null(want)),
            )
            bad = pc.invert(same)
        if c == "parent_run_id" and pc.any(bad).as_py():
            # a parent in another part of the log cannot be re-derived from this part:
            # only a stored parent that is a run here (or a parent the rows give) is checked
            tenant = pc.cast(_plain(sub.column("tenant_id")), pa.string())
            sep = pa.scalar("\x1f")
            runs = pc.unique(pc.binary_join_element_wise(
                tenant, pc.cast(_plain(sub.column("run_id")), pa.string()), sep))
            named = pc.binary_join_element_wise(tenant, pc.cast(stored, pa.string()), sep)
            checkable = pc.or_(pc.is_valid(want), pc.fill_null(pc.is_in(named, runs), False))
            bad = pc.and_(bad, checkable)
        if not pc.any(bad).as_py():
            continue

        def shown(arr: pa.Array, col: str = c) -> pa.Array:
            text = pc.fill_null(pc.cast(arr, _LS), "null")
            return pc.binary_join_element_wise(pa.scalar(col + "=", _LS), text,
                                               pa.scalar("", _LS))

        out.append((c, _problems(sub, bad, "derived_mismatch", shown(want), shown(stored))))
    return out
