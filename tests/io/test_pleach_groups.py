"""_finish gathers the small columns a few at a time (each group's inputs freed once copied):
the groups cover every column once, in order, and are of similar size."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from replaykit.io.pleach._finish import _groups


@settings(max_examples=200, deadline=None)
@given(sizes=st.lists(st.integers(0, 5000), min_size=0, max_size=30),
       parts=st.integers(1, 8))
def test_groups_cover_every_column_once_in_order(sizes: list[int], parts: int) -> None:
    cols = {f"c{i}": pa.array(np.zeros(n, dtype=np.int64)) for i, n in enumerate(sizes)}
    groups = _groups(cols, parts=parts)
    assert [c for g in groups for c in g] == list(cols)
    assert all(g for g in groups)
    if len(cols) >= 2:  # every group holds two columns or more (the take's two threads)
        assert all(len(g) >= 2 for g in groups[:-1])
    total = sum(a.nbytes for a in cols.values())
    # no group but the last starts after the running size passed its share
    assert len(groups) <= max(1, parts + 1)
    assert sum(sum(cols[c].nbytes for c in g) for g in groups) == total


def test_groups_split_large_columns_apart() -> None:
    cols = {name: pa.array(np.zeros(n, dtype=np.int64))
            for name, n in (("a", 1000), ("b", 1000), ("c", 1000), ("d", 1000),
                            ("e", 1000), ("f", 1000), ("g", 1000), ("h", 1000))}
    assert _groups(cols, parts=4) == [["a", "b"], ["c", "d"], ["e", "f"], ["g", "h"]]
    assert _groups(cols, parts=1) == [list(cols)]
