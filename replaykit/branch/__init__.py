"""Branch and replay: interventions on a recorded run, policy-driven replay, metrics, compare.

``rk.Branch`` names a base run, a checkpoint and interventions; ``rk.replay`` re-drives it under
explicit model / tool policies and fixtures; ``rk.compare`` and ``rk.tool_distance_matrix``
measure replays in bulk. Metric definitions: docs/metrics.md.

The names below are imported on first use (PEP 562), so importing a light module of the
package (``branch.vocab``, whose names the command line's help shows) does not import pandas
and the replay engine.
"""

from __future__ import annotations

import sys as _sys
import types as _types
import typing as _typing

from .._base.delegates import lazy_exports

if _typing.TYPE_CHECKING:
    from ._dask import dask_compare
    from .branch import Branch
    from .compare import compare, event_signatures, tool_distance_matrix
    from .fixtures import Fixture, FixtureRegistry
    from .metrics import COMPARABILITY, NON_COMPARABLE_DISTANCE
    from .replay import ReplayResult, replay
    from .runs import RunComparison, RunComparisons, compare_runs

__all__ = [
    "COMPARABILITY",
    "NON_COMPARABLE_DISTANCE",
    "Branch",
    "Fixture",
    "FixtureRegistry",
    "ReplayResult",
    "RunComparison",
    "RunComparisons",
    "compare",
    "compare_runs",
    "dask_compare",
    "event_signatures",
    "replay",
    "tool_distance_matrix",
]

#: where each public name lives (imported on first use).
_EXPORTS: dict[str, str] = {
    "COMPARABILITY": ".metrics",
    "NON_COMPARABLE_DISTANCE": ".metrics",
    "Branch": ".branch",
    "Fixture": ".fixtures",
    "FixtureRegistry": ".fixtures",
    "ReplayResult": ".replay",
    "RunComparison": ".runs",
    "RunComparisons": ".runs",
    "compare": ".compare",
    "compare_runs": ".runs",
    "dask_compare": "._dask",
    "event_signatures": ".compare",
    "replay": ".replay",
    "tool_distance_matrix": ".compare",
}

#: functions named like the module that holds them: ``replaykit.branch.replay`` and
#: ``replaykit.branch.compare`` are the functions (as they were when this package imported
#: them eagerly), even after the import system binds the submodule of that name here.
_SHADOWED = frozenset({"compare", "replay"})


class _Package(_types.ModuleType):
    def __setattr__(self, name: str, value: object) -> None:
        if name in _SHADOWED and isinstance(value, _types.ModuleType):
            value = getattr(value, name)  # the submodule has run: its function
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
