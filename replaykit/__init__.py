"""replaykit: load, fold, branch, replay and compare recorded AI-agent event logs.

Quick start::

    import replaykit as rk
    log = rk.read_events("data/", tenant_id="demo")   # any supported format
    log.runs_df()                                     # one row per run
    log.tools_df()                                    # one row per tool call

``import replaykit`` stays light: it imports pandas and pyarrow, never plotting or widget
libraries.
"""

from __future__ import annotations

from . import datasets, schema
from .errors import (
    FormatDetectionError,
    LoadError,
    MissingExtraError,
    ReplayKitError,
    SchemaError,
)
from .eventlog import EventLog, concat, read_parquet
from .io import detect_format, read_events, read_isplay, read_pleach, read_toh
from .schema import EVENTS_SCHEMA, validate

__version__ = "0.1.0"

__all__ = [
    "EVENTS_SCHEMA",
    "EventLog",
    "FormatDetectionError",
    "LoadError",
    "MissingExtraError",
    "ReplayKitError",
    "SchemaError",
    "__version__",
    "concat",
    "datasets",
    "detect_format",
    "read_events",
    "read_isplay",
    "read_parquet",
    "read_pleach",
    "read_toh",
    "schema",
    "validate",
]
