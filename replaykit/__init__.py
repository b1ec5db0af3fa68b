"""replaykit: load, fold, branch, replay and compare recorded AI-agent event logs.

Quick start::

    import replaykit as rk
    log = rk.read_events("data/", owner="demo")       # any supported format
    log.runs_df()                                     # one row per run
    log.tools_df()                                    # one row per tool call

``import replaykit`` is light: every public name (``rk.read_pleach``, ``rk.fold``, ...) imports
its module on first use, so the command line and a script pay only for what they use;
plotting and widget libraries load only with ``rk.plots``, ``rk.report`` and ``rk.widgets``.
"""

from __future__ import annotations

import importlib as _importlib
import sys as _sys
import types as _types
import typing as _typing

if _typing.TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ imports on use
    from . import (
        datasets,
        engine,
        schema,
        toh,  # rk.toh: toh_scripts + script_player
    )
    from ._base.display import for_people
    from .branch import (
        COMPARABILITY,
        Branch,
        Fixture,
        FixtureRegistry,
        ReplayResult,
        RunComparison,
        compare,
        compare_runs,
        replay,
        tool_distance_matrix,
    )
    from .branch.fixtures import read_isplay_fixtures
    from .branch.types import IsplayBranch, read_isplay_branch
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
    from .eventlog.grain import calls_df, tools_df, turns_df
    from .fold import (  # type: ignore[no-redef]  # mypy: the submodule fold.projection and the function
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
    from .ingest import Dataset, IngestError, IngestReport, ingest, open_dataset
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
    from .io.claude_code import read_claude_code
    from .io.codex import read_codex
    from .io.inspect import read_inspect
    from .io.langfuse import read_langfuse
    from .io.langsmith import read_langsmith
    from .io.otel import read_otel
    from .io.otel.export import to_otel, to_otel_evaluations
    from .io.phoenix import read_phoenix
    from .io.toh import OrphanRunWarning
    from .provenance import STAMP_FIELDS, stamp_diff, stamp_drift
    from .provenance.cachekey import cache_key
    from .schema import EVENTS_SCHEMA, validate
    from .sql import read_sql, write_sql

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
    "for_people",
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
    "to_otel",
    "to_otel_evaluations",
    "read_claude_code",
    "read_codex",
    "read_langfuse",
    "read_langsmith",
    "read_phoenix",
    "IsplayBranch",
    "read_parquet",
    "read_pleach",
    # ingest: logs of any size into the run-aligned dataset, and a lazy handle on it
    "Dataset",
    "IngestError",
    "IngestReport",
    "ingest",
    "open_dataset",
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
    "RunComparison",
    "compare",
    "compare_runs",
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


#: where each public name lives: ``rk.X`` imports its module on first use (PEP 562), so
#: ``import replaykit`` (and the command line) costs only what it uses. The import block under
#: TYPE_CHECKING above says the same for type checkers (tests/test_imports.py keeps the two
#: equal).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "._base.display": ("for_people",),
    ".branch": ("COMPARABILITY", "Branch", "Fixture", "FixtureRegistry", "ReplayResult",
                "RunComparison", "compare", "compare_runs", "replay", "tool_distance_matrix"),
    ".branch.fixtures": ("read_isplay_fixtures",),
    ".branch.types": ("IsplayBranch", "read_isplay_branch"),
    ".provenance.cachekey": ("cache_key",),
    ".cohorts": ("Cohorts", "SemesterCalendar", "cohorts"),
    ".errors": ("FormatDetectionError", "LoadError", "MissingExtraError", "MissingTenantError",
                "ReplayCacheMissError", "ReplayDivergenceError", "ReplayError",
                "ReplayKitError", "ReplayUnknownEventError",
                "SchemaError", "SQLError"),
    ".eventlog": ("EventLog", "concat", "read_parquet"),
    ".fold": ("InMemoryCache", "ParquetCache", "Projection", "StateFrame", "Verdict", "agent",
              "aggregate", "cache_coverage", "check_determinism", "fold", "fork", "harness",
              "open_replay", "projection"),
    ".fold.inspect": ("inspect_state",),
    ".eventlog.grain": ("calls_df", "tools_df", "turns_df"),
    ".ingest": ("Dataset", "IngestError", "IngestReport", "ingest", "open_dataset"),
    ".integrity": ("ChainManifest", "chain_heads", "chain_manifest", "chain_proof",
                   "stamp_chain", "verify_chain", "verify_proof"),
    ".io": ("detect_format", "read_events", "read_isplay", "read_pleach", "read_toh"),
    ".io.claude_code": ("read_claude_code",),
    ".io.codex": ("read_codex",),
    ".io.inspect": ("read_inspect",),
    ".io.langfuse": ("read_langfuse",),
    ".io.langsmith": ("read_langsmith",),
    ".io.otel": ("read_otel",),
    ".io.otel.export": ("to_otel", "to_otel_evaluations"),
    ".io.phoenix": ("read_phoenix",),
    ".io.toh": ("OrphanRunWarning",),
    ".schema": ("EVENTS_SCHEMA", "validate"),
    ".sql": ("read_sql", "write_sql"),
    ".provenance": ("STAMP_FIELDS", "stamp_diff", "stamp_drift"),
}
#: names that are modules: ``rk.toh`` is the façade over the toh scripts and their player;
#: any other submodule (``rk.plots``, ``rk.io``, ...) is found by its own name.
_MODULES = {"datasets": ".datasets", "engine": ".engine", "schema": ".schema",
            "toh": ".toh"}
_HOME = {name: (module, name) for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> object:
    """Import the module behind ``rk.<name>`` on first use and keep the name (PEP 562).

    ``rk.plots``, ``rk.widgets`` and ``rk.report`` (plotly, ipywidgets, jinja) load the same
    way, only when first used.

    Raises:
        AttributeError: ``name`` is neither a public name nor a submodule of replaykit.
    """
    if name in _HOME:
        module, attr = _HOME[name]
        value = getattr(_importlib.import_module(module, __name__), attr)
    elif name in _MODULES:
        value = _importlib.import_module(_MODULES[name], __name__)
    elif name.isidentifier() and not name.startswith("__") and _is_submodule(name):
        value = _importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'replaykit' has no attribute {name!r}")
    globals()[name] = value
    return value


class _Package(_types.ModuleType):
    """The package's module type: ``rk.fold`` and ``rk.cohorts`` stay the functions.

    Importing a submodule sets it as an attribute of its package; eagerly, the package's own
    ``from .fold import fold`` ran after that and won. Lazily, the submodule may be imported
    later (``rk.agent`` imports ``replaykit.fold``), so the function is kept here instead.
    """

    def __setattr__(self, name: str, value: object) -> None:
        if name in _SHADOWED and isinstance(value, _types.ModuleType):
            value = getattr(value, name)
        super().__setattr__(name, value)


#: public functions named like the subpackage that defines them.
_SHADOWED = frozenset({"fold", "cohorts", "ingest"})
_sys.modules[__name__].__class__ = _Package


def _is_submodule(name: str) -> bool:
    from importlib.util import find_spec

    try:
        return find_spec(f"{__name__}.{name}") is not None
    except (ImportError, ValueError):
        return False


def __dir__() -> list[str]:
    import pkgutil

    subs = {m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")}
    return sorted({*globals(), *__all__, *_MODULES, *subs})
