"""Deterministic generators of realistic agent logs, in every supported format.

Each generator writes a log of any size to ``path`` and returns the path; the same arguments
and ``seed`` always give the same bytes. Used by the benchmarks, the tests and the bundled
samples in ``data/``.

>>> from replaykit.datasets import generate_pleach, generate_toh
>>> generate_pleach("/tmp/rk/pleach.jsonl", events=1_000, runs=10)  # doctest: +SKIP
>>> generate_toh("/tmp/rk/toh/session.jsonl", events=1_000)  # doctest: +SKIP
"""

from __future__ import annotations

from ._cohorts import DRIFTS, CohortData, generate_cohorts
from ._pleach import generate_pleach
from ._toh import generate_toh

try:  # written separately; absent until the isplay generator lands
    from ._isplay import generate_isplay
except ImportError:  # pragma: no cover - depends on the tree state
    generate_isplay = None  # type: ignore[assignment]

__all__ = ["DRIFTS", "CohortData", "generate_cohorts", "generate_isplay", "generate_pleach",
           "generate_toh"]
