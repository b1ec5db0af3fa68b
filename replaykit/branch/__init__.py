"""Branch and replay: interventions on a recorded run, policy-driven replay, metrics, compare.

``rk.Branch`` names a base run, a checkpoint and interventions; ``rk.replay`` re-drives it under
explicit model / tool policies and fixtures; ``rk.compare`` and ``rk.tool_distance_matrix``
measure replays in bulk. Metric definitions: docs/metrics.md.
"""

from __future__ import annotations

from ._dask import dask_compare
from .branch import Branch
from .compare import compare, event_signatures, tool_distance_matrix
from .fixtures import Fixture, FixtureRegistry
from .metrics import COMPARABILITY, NON_COMPARABLE_DISTANCE
from .replay import ReplayResult, replay

__all__ = [
    "COMPARABILITY",
    "NON_COMPARABLE_DISTANCE",
    "Branch",
    "Fixture",
    "FixtureRegistry",
    "ReplayResult",
    "compare",
    "dask_compare",
    "event_signatures",
    "replay",
    "tool_distance_matrix",
]
