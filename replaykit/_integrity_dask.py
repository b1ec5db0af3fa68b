"""Deprecated: ``replaykit._integrity_dask`` moved to ``replaykit.integrity._dask``.

This shim goes in the next release.
"""

from __future__ import annotations

import importlib as _importlib
import warnings as _warnings

from replaykit.errors import ReplayKitDeprecationWarning as _ReplayKitDeprecationWarning

_warnings.warn("replaykit._integrity_dask moved to replaykit.integrity._dask: "
               "import from there (the old path goes in the next release)",
               _ReplayKitDeprecationWarning, stacklevel=2)

_ALL = (
    "dask_verify_chain",
)
__all__ = list(_ALL)  # the names come from __getattr__

#: every name of the old module -> the module that holds it now.
_NEW: dict[str, str] = {
    "Any": "replaykit.integrity._dask",
    "DEFAULT_PARTITION_EVENTS": "replaykit.integrity._dask",
    "EventLog": "replaykit.integrity._dask",
    "PROBLEM_KINDS": "replaykit.integrity._dask",
    "Partition": "replaykit.integrity._dask",
    "_normalise_heads": "replaykit.integrity._dask",
    "_verify_part": "replaykit.integrity._dask",
    "concat_frames": "replaykit.integrity._dask",
    "dask_verify_chain": "replaykit.integrity._dask",
    "empty_events": "replaykit.integrity._dask",
    "implements": "replaykit.integrity._dask",
    "np": "replaykit.integrity._dask",
    "pa": "replaykit.integrity._dask",
    "pc": "replaykit.integrity._dask",
    "pd": "replaykit.integrity._dask",
    "require_dask": "replaykit.integrity._dask",
    "run_partitions": "replaykit.integrity._dask",
    "source_partitions": "replaykit.integrity._dask",
    "verify_chain": "replaykit.integrity._dask",
}


def __getattr__(name: str) -> object:
    if name in _NEW:
        return getattr(_importlib.import_module(_NEW[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
