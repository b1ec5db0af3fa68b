"""replaykit: load, fold, branch, replay and compare recorded AI-agent event logs.

Quick start::

    import replaykit as rk
    log = rk.read_events("data/", owner="demo")       # any supported format
    log.runs_df()                                     # one row per run
    log.tools_df()                                    # one row per tool call

``import replaykit`` stays light: it imports pandas and pyarrow, never plotting or widget
libraries.
"""

from __future__ import annotations

from . import _integrity_dask, datasets, engine, schema  # noqa: F401
from . import _toh_api as toh  # rk.toh: toh_scripts + script_player
from .branch import (
    COMPARABILITY,
    Branch,
    Fixture,
    FixtureRegistry,
    ReplayResult,
    compare,
    replay,
    tool_distance_matrix,
)
from .branch.fixtures import read_isplay_fixtures
from .branch.types import IsplayBranch, read_isplay_branch
from .cachekey import cache_key
from .cohorts import Cohorts, SemesterCalendar, cohorts
from .errors import (
    FormatDetectionError,
    LoadError,
    MissingExtraError,
    MissingTenantError,
    ReplayCacheMissError,
    ReplayDivergenceError,
    ReplayError,
    ReplayKitError,
    ReplayUnknownEventError,
    SchemaError,
    SQLError,
)
from .eventlog import EventLog, concat, read_parquet
from .fold import (  # rk.fold is the function; field builders live in replaykit.fold
    InMemoryCache,
    ParquetCache,
    Projection,
    StateFrame,
    Verdict,
    agent,
    aggregate,
    cache_coverage,
    check_determinism,
    fold,
    fork,
    harness,
    open_replay,
    projection,
)
from .fold.inspect import inspect_state
from .grain import calls_df, tools_df, turns_df
from .integrity import (
    ChainManifest,
    chain_heads,
    chain_manifest,
    chain_proof,
    stamp_chain,
    verify_chain,
    verify_proof,
)
from .io import detect_format, read_events, read_isplay, read_pleach, read_toh
from .io.inspect import read_inspect
from .io.otel import read_otel
from .io.toh import OrphanRunWarning
from .schema import EVENTS_SCHEMA, validate
from .sql import read_sql, write_sql
from .stamps import STAMP_FIELDS, stamp_diff, stamp_drift

__version__ = "0.1.0"

__all__ = [
    "EVENTS_SCHEMA",
    "EventLog",
    "FormatDetectionError",
    "LoadError",
    "MissingExtraError",
    "MissingTenantError",
    "OrphanRunWarning",
    "calls_df",
    "tools_df",
    "turns_df",
    "ReplayKitError",
    "SchemaError",
    "SQLError",
    "__version__",
    "concat",
    "datasets",
    "engine",
    "detect_format",
    "read_events",
    "read_isplay",
    "read_isplay_branch",
    "read_isplay_fixtures",
    "inspect_state",
    "read_inspect",
    "read_otel",
    "IsplayBranch",
    "read_parquet",
    "read_pleach",
    "read_toh",
    "schema",
    "toh",
    "validate",
    # fold / replay
    "InMemoryCache",
    "ParquetCache",
    "Projection",
    "ReplayCacheMissError",
    "ReplayDivergenceError",
    "ReplayError",
    "ReplayUnknownEventError",
    "StateFrame",
    "Verdict",
    "agent",
    "aggregate",
    "cache_coverage",
    "cache_key",
    "check_determinism",
    "fold",
    "fork",
    "harness",
    "open_replay",
    "projection",
    # integrity / databases
    "ChainManifest",
    "chain_heads",
    "chain_manifest",
    "chain_proof",
    "read_sql",
    "stamp_chain",
    "verify_chain",
    "verify_proof",
    "write_sql",
    # branch / replay / compare
    "Branch",
    "COMPARABILITY",
    "Fixture",
    "FixtureRegistry",
    "ReplayResult",
    "compare",
    "replay",
    "tool_distance_matrix",
    # reproducibility stamps
    "STAMP_FIELDS",
    "stamp_diff",
    "stamp_drift",
    # cohorts
    "Cohorts",
    "SemesterCalendar",
    "cohorts",
]


def __getattr__(name: str) -> object:
    """``rk.plots``, ``rk.widgets`` and ``rk.report`` load plotly / ipywidgets only when first
    used."""
    if name in ("plots", "widgets", "report"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'replaykit' has no attribute {name!r}")
