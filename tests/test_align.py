"""replaykit._base.align: near-linear alignment behind diff_df and the RCA report's diffs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replaykit._base import align as _align
from replaykit._base.align import align, expand


def _check_valid(a: list[int], b: list[int], ops: list[tuple[str, int, int, int, int]]) -> None:
    i = j = 0
    for tag, i1, i2, j1, j2 in ops:
        assert (i1, j1) == (i, j), "opcodes must be contiguous"
        assert tag in ("equal", "replace", "delete", "insert")
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
        if tag == "delete":
            assert j1 == j2 and i2 > i1
        if tag == "insert":
            assert i1 == i2 and j2 > j1
        i, j = i2, j2
    assert (i, j) == (len(a), len(b))


seqs = st.lists(st.integers(0, 6), max_size=40)


@given(seqs, seqs)
@settings(max_examples=300, deadline=None)
def test_opcodes_cover_both_sides_and_equal_blocks_are_equal(a: list[int], b: list[int]) -> None:
    ops = align(a, b)
    _check_valid(a, b, ops)
    status, i, j = expand(ops)
    # Every element of each side appears exactly once, in order.
    assert i[i >= 0].tolist() == list(range(len(a)))
    assert j[j >= 0].tolist() == list(range(len(b)))
    same = status == "same"
    assert [a[k] for k in i[same]] == [b[k] for k in j[same]]


@given(seqs, seqs, st.integers(1, 50))
@settings(max_examples=200, deadline=None)
def test_anchor_path_is_valid_too(a: list[int], b: list[int], cells: int) -> None:
    old = _align.GAP_CELLS
    _align.GAP_CELLS = cells  # force the anchor / positional paths on small inputs
    try:
        ops = align(a + list(range(100, 120)) + a, b + list(range(100, 120)) + b)
    finally:
        _align.GAP_CELLS = old
    _check_valid(a + list(range(100, 120)) + a, b + list(range(100, 120)) + b, ops)


def test_identical_and_substituted_runs() -> None:
    rng = np.random.default_rng(7)
    a = rng.integers(0, 2**40, 5000)
    assert align(a, a.copy()) == [("equal", 0, 5000, 0, 5000)]
    b = a.copy()
    where = np.sort(rng.choice(np.arange(10, 4990), 25, replace=False))
    b[where] = rng.integers(2**41, 2**42, 25)  # new values, never in a
    status, i, j = expand(align(a, b))
    assert (status == "changed").sum() == 25
    assert sorted(i[status == "changed"].tolist()) == where.tolist()
    assert (status == "same").sum() == 5000 - 25


def _work(n: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """Cells handed to the native edit script plus elements the Python levels touch."""
    counted = {"cells": 0, "steps": 0}
    native, inner = _align._native, _align._align

    def counting_native(a, b, i0, j0):  # type: ignore[no-untyped-def]
        counted["cells"] += len(a) * len(b)
        return native(a, b, i0, j0)

    def counting_align(a, b, i0, j0, depth):  # type: ignore[no-untyped-def]
        counted["steps"] += len(a) + len(b)
        return inner(a, b, i0, j0, depth)

    monkeypatch.setattr(_align, "_native", counting_native)
    monkeypatch.setattr(_align, "_align", counting_align)
    monkeypatch.setattr(_align, "GAP_CELLS", 10_000)
    rng = np.random.default_rng(n)
    a = rng.integers(0, 2**40, n)
    b = a.copy()
    k = n // 50
    b[rng.choice(n, k, replace=False)] = rng.integers(2**41, 2**42, k)  # 2% edited
    b = np.concatenate([b[: n // 2], rng.integers(2**43, 2**44, n // 10), b[n // 2:]])
    align(a, b)
    monkeypatch.undo()
    return counted["cells"] + counted["steps"]


def test_work_grows_linearly_when_the_run_doubles(monkeypatch: pytest.MonkeyPatch) -> None:
    # Not timed: the work counted at n and 2n. difflib's SequenceMatcher (what diff_df used)
    # grows ~4x here; near-linear alignment stays near 2x.
    w1, w2, w4 = (_work(n, monkeypatch) for n in (20_000, 40_000, 80_000))
    assert w2 / w1 < 2.5 and w4 / w2 < 2.5, (w1, w2, w4)
