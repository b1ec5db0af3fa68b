"""Sequence alignment of two event runs in O(n log n) (plus a bounded native edit script).

``difflib.SequenceMatcher`` is quadratic in run length: a 40,000-event replay took 17 s to diff.
:func:`align` aligns two sequences of hashable keys (event signatures, tool-call keys) in steps
that stay near-linear:

1. the common prefix and suffix are cut off column-wise (numpy);
2. in what remains, keys that occur exactly once on each side are anchors; the longest
   increasing run of anchors (patience diff, O(k log k)) splits the middle into gaps;
3. each gap is aligned by rapidfuzz's native Levenshtein edit script when its two sides
   multiply to at most :data:`GAP_CELLS`, recursively by its own anchors otherwise, and
   position by position as a last resort (which keeps the cost bounded whatever the input).

The result is a list of ``(tag, i1, i2, j1, j2)`` opcodes with difflib's tags (``equal``,
``replace``, ``delete``, ``insert``), and :func:`expand` turns them into aligned index arrays
without a Python loop over events.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["GAP_CELLS", "align", "expand"]

#: Largest ``len(a_gap) * len(b_gap)`` handed to the native edit script in one piece.
GAP_CELLS = 400_000_000

Opcode = tuple[str, int, int, int, int]


def _codes(a: Sequence[Any] | np.ndarray, b: Sequence[Any] | np.ndarray
           ) -> tuple[np.ndarray, np.ndarray]:
    """Both sides as dense int64 codes of one shared vocabulary (vectorised factorize)."""
    a = np.asarray(a) if not isinstance(a, np.ndarray) else a
    b = np.asarray(b) if not isinstance(b, np.ndarray) else b
    if a.dtype == object or b.dtype == object or a.dtype != b.dtype:
        both = pd.Series(list(a) + list(b), dtype=object)
    else:
        both = pd.Series(np.concatenate([a, b]))
    codes, _ = pd.factorize(both, use_na_sentinel=False)
    codes = codes.astype(np.int64)
    return codes[: len(a)], codes[len(a):]


def _native(a: np.ndarray, b: np.ndarray, i0: int, j0: int) -> list[Opcode]:
    from rapidfuzz.distance import Levenshtein

    out: list[Opcode] = []
    for op in Levenshtein.opcodes(a.tolist(), b.tolist()):  # one opcode per block
        out.append((op.tag, op.src_start + i0, op.src_end + i0,
                    op.dest_start + j0, op.dest_end + j0))
    return out


def _positional(n: int, m: int, i0: int, j0: int) -> list[Opcode]:
    k = min(n, m)
    out: list[Opcode] = []
    if k:
        out.append(("replace", i0, i0 + k, j0, j0 + k))
    if n > k:
        out.append(("delete", i0 + k, i0 + n, j0 + k, j0 + k))
    if m > k:
        out.append(("insert", i0 + k, i0 + k, j0 + k, j0 + m))
    return out


def _anchors(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions (in a, in b) of the longest increasing chain of keys unique on both sides."""
    ua, ia, ca = np.unique(a, return_index=True, return_counts=True)
    ub, ib, cb = np.unique(b, return_index=True, return_counts=True)
    ua, ia = ua[ca == 1], ia[ca == 1]
    ub, ib = ub[cb == 1], ib[cb == 1]
    common, xa, xb = np.intersect1d(ua, ub, assume_unique=True, return_indices=True)
    if not len(common):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    pa_, pb_ = ia[xa], ib[xb]
    order = np.argsort(pa_, kind="stable")
    pa_, pb_ = pa_[order], pb_[order]
    if len(pb_) < 2 or bool(np.all(np.diff(pb_) > 0)):
        return pa_, pb_
    # Longest increasing subsequence of pb_ (patience sorting, O(k log k)).
    tails: list[int] = []
    tails_at: list[int] = []
    prev = np.full(len(pb_), -1, dtype=np.int64)
    for k, v in enumerate(pb_.tolist()):  # over anchors, not events; O(k log k)
        p = bisect_left(tails, v)
        if p == len(tails):
            tails.append(v)
            tails_at.append(k)
        else:
            tails[p] = v
            tails_at[p] = k
        prev[k] = tails_at[p - 1] if p else -1
    chain = []
    k = tails_at[-1]
    while k >= 0:
        chain.append(k)
        k = int(prev[k])
    sel = np.asarray(chain[::-1], dtype=np.int64)
    return pa_[sel], pb_[sel]


def _align(a: np.ndarray, b: np.ndarray, i0: int, j0: int, depth: int) -> list[Opcode]:
    n, m = len(a), len(b)
    if n == 0 and m == 0:
        return []
    if n == 0:
        return [("insert", i0, i0, j0, j0 + m)]
    if m == 0:
        return [("delete", i0, i0 + n, j0, j0)]
    k = min(n, m)
    neq = np.flatnonzero(a[:k] != b[:k])
    pre = int(neq[0]) if len(neq) else k
    neq = np.flatnonzero(a[n - k + pre:][::-1] != b[m - k + pre:][::-1]) if k > pre else neq[:0]
    suf = int(neq[0]) if len(neq) else k - pre
    out: list[Opcode] = []
    if pre:
        out.append(("equal", i0, i0 + pre, j0, j0 + pre))
    ma, mb = a[pre:n - suf], b[pre:m - suf]
    mi, mj = i0 + pre, j0 + pre
    if len(ma) == 0 or len(mb) == 0 or len(ma) * len(mb) <= GAP_CELLS:
        out += _native(ma, mb, mi, mj) if len(ma) and len(mb) else _align(ma, mb, mi, mj, 0)
    else:
        xa, xb = _anchors(ma, mb) if depth < 8 else (np.zeros(0, np.int64),) * 2
        if not len(xa):
            out += _positional(len(ma), len(mb), mi, mj)
        else:
            # Runs of consecutive anchors become one equal block; only the gaps between
            # runs are aligned further (column-wise, so a near-copy costs O(n)).
            brk = np.flatnonzero((np.diff(xa) != 1) | (np.diff(xb) != 1)) + 1
            rs = np.r_[0, brk]
            re_ = np.r_[brk, len(xa)]
            pi = pj = 0
            for s0, e0 in zip(rs.tolist(), re_.tolist(), strict=True):  # over anchor runs
                ai, bj, ln = int(xa[s0]), int(xb[s0]), e0 - s0
                out += _align(ma[pi:ai], mb[pj:bj], mi + pi, mj + pj, depth + 1)
                out.append(("equal", mi + ai, mi + ai + ln, mj + bj, mj + bj + ln))
                pi, pj = ai + ln, bj + ln
            out += _align(ma[pi:], mb[pj:], mi + pi, mj + pj, depth + 1)
    if suf:
        out.append(("equal", i0 + n - suf, i0 + n, j0 + m - suf, j0 + m))
    return out


def _merge(ops: list[Opcode]) -> list[Opcode]:
    """Adjacent opcodes of one tag joined; a delete next to an insert becomes a replace."""
    out: list[Opcode] = []
    for op in ops:  # over opcodes
        if op[1] == op[2] and op[3] == op[4]:
            continue
        if out:
            t, i1, i2, j1, j2 = out[-1]
            if t == op[0] and i2 == op[1] and j2 == op[3]:
                out[-1] = (t, i1, op[2], j1, op[4])
                continue
        out.append(op)
    return out


def align(a: Sequence[Any] | np.ndarray, b: Sequence[Any] | np.ndarray) -> list[Opcode]:
    """difflib-style opcodes aligning ``a`` to ``b``, near-linear in ``len(a) + len(b)``.

    Example:
        >>> align([1, 2, 3, 4], [1, 9, 3, 4, 5])  # doctest: +NORMALIZE_WHITESPACE
        [('equal', 0, 1, 0, 1), ('replace', 1, 2, 1, 2), ('equal', 2, 4, 2, 4),
         ('insert', 4, 4, 4, 5)]
    """
    ca, cb = _codes(a, b)
    return _merge(_align(ca, cb, 0, 0, 0))


def expand(ops: list[Opcode]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Opcodes as aligned rows: ``(status, i, j)`` arrays, -1 where a side has no event.

    ``status`` is ``same``, ``changed`` (paired positions of a replace), ``removed`` (only in
    ``a``) or ``added`` (only in ``b``), in alignment order.
    """
    segs: list[tuple[str, int, int, int]] = []  # (status, i start, j start, length)
    for tag, i1, i2, j1, j2 in ops:  # over opcodes
        if tag == "equal":
            segs.append(("same", i1, j1, i2 - i1))
            continue
        pairs = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        if pairs:
            segs.append(("changed", i1, j1, pairs))
        if i2 - i1 > pairs:
            segs.append(("removed", i1 + pairs, -1, i2 - i1 - pairs))
        if j2 - j1 > pairs:
            segs.append(("added", -1, j1 + pairs, j2 - j1 - pairs))
    st = [s[0] for s in segs]
    i_start = [s[1] for s in segs]
    j_start = [s[2] for s in segs]
    length = [s[3] for s in segs]
    lens = np.asarray(length, dtype=np.int64)
    total = int(lens.sum()) if len(lens) else 0
    offs = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
    i0 = np.repeat(np.asarray(i_start, dtype=np.int64), lens)
    j0 = np.repeat(np.asarray(j_start, dtype=np.int64), lens)
    i = np.where(i0 >= 0, i0 + offs, -1)
    j = np.where(j0 >= 0, j0 + offs, -1)
    status = np.repeat(np.asarray(st, dtype=object), lens)
    return status, i, j
