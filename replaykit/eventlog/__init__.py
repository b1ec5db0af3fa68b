"""The canonical table: :class:`EventLog` (:mod:`.log`) and its Parquet datasets (:mod:`.dataset`).
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing
import warnings as _warnings

from replaykit.errors import ReplayKitDeprecationWarning as _ReplayKitDeprecationWarning

if _typing.TYPE_CHECKING:
    from ._runs import RunKey
    from .dataset import read_parquet
    from .log import RUNS_SCHEMA, EventLog, concat

__all__ = [
    "EventLog",
    "RUNS_SCHEMA",
    "RunKey",
    "concat",
    "read_parquet",
]

#: where each public name lives (imported on first use, PEP 562).
_EXPORTS: dict[str, str] = {
    "EventLog": ".log",
    "RUNS_SCHEMA": ".log",
    "RunKey": "._runs",
    "concat": ".log",
    "read_parquet": ".dataset",
}
#: names the old module had that moved to a module of this package: they still resolve
#: here, with a ReplayKitDeprecationWarning naming the new path, for one release.
_OLD = "replaykit.eventlog"
_MOVED: dict[str, str] = {
    "Any": ".log",
    "Iterable": ".log",
    "Iterator": ".log",
    "LegacyDatasetWarning": ".dataset",
    "NO_TENANT_QUARANTINE_FILE": ".dataset",
    "NamedTuple": "._runs",
    "Path": ".log",
    "QUARANTINE_FILE": ".dataset",
    "RUNS_FILE": ".dataset",
    "RUN_STAT_COLUMNS": ".log",
    "Sequence": ".log",
    "TENANT_KEY": ".log",
    "TYPE_CHECKING": ".log",
    "_CAMEL": ".log",
    "_DICT": ".log",
    "_GrainCache": ".log",
    "_NULLABLE_PANDAS": ".log",
    "_RunIndex": "._runs",
    "_as_quarantine": ".log",
    "_detached": ".log",
    "_distinct_strings": "._runs",
    "_empty_runs": ".log",
    "_expand_attrs": ".log",
    "_grain_rows": "._runs",
    "_key_positions": "._runs",
    "_partition_dirs": ".dataset",
    "_partition_error": ".dataset",
    "_read_dataset": ".dataset",
    "_run_start_rows": "._runs",
    "_segment_sums": "._runs",
    "_side_file": ".dataset",
    "_snake": ".log",
    "_str_values": "._runs",
    "_value_codes": "._runs",
    "_warn_absent": ".log",
    "heapq": ".log",
    "html": ".log",
    "np": ".log",
    "os": ".log",
    "pa": ".log",
    "partition_files": ".dataset",
    "pc": ".log",
    "re": ".log",
    "read_partition_files": ".dataset",
    "to_pandas": ".log",
    "types": ".log",
    "warnings": ".log",
}


def __getattr__(name: str) -> object:
    """Import the module behind a public name on first use; forward a moved name with a
    ReplayKitDeprecationWarning that names its new module."""
    if name in _EXPORTS:
        value = getattr(_importlib.import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value
        return value
    if name in _MOVED:
        new = f"{__name__}{_MOVED[name]}"
        _warnings.warn(f"{_OLD}.{name} moved to {new}.{name}: import it from there "
                       "(the old path goes in the next release)", _ReplayKitDeprecationWarning,
                       stacklevel=2)
        return getattr(_importlib.import_module(new), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
