"""Deprecated: ``replaykit._toh_api`` moved to ``replaykit.toh``.

This shim goes in the next release.
"""

from __future__ import annotations

import importlib as _importlib
import warnings as _warnings

from replaykit.errors import ReplayKitDeprecationWarning as _ReplayKitDeprecationWarning

_warnings.warn("replaykit._toh_api moved to replaykit.toh: "
               "import from there (the old path goes in the next release)",
               _ReplayKitDeprecationWarning, stacklevel=2)

_ALL = (
    "CHUNK_TYPES",
    "DerivationError",
    "OverrideError",
    "PlaceholderError",
    "PlaceholderNoMatchError",
    "PlaceholderPatternError",
    "PlaceholderUnterminatedError",
    "ScriptCallsExhaustedError",
    "ScriptHangError",
    "ScriptNotConsumedError",
    "ScriptPlayer",
    "ScriptSessionsExhaustedError",
    "SessionScript",
    "TohScriptError",
    "UnfinishedCallError",
    "entry_output",
    "load_override",
    "model_scripts",
    "resolve_placeholders",
    "unfinished_calls",
)
__all__ = list(_ALL)  # the names come from __getattr__

#: every name of the old module -> the module that holds it now.
_NEW: dict[str, str] = {
    "CHUNK_TYPES": "replaykit.toh",
    "DerivationError": "replaykit.toh",
    "OverrideError": "replaykit.toh",
    "PlaceholderError": "replaykit.toh",
    "PlaceholderNoMatchError": "replaykit.toh",
    "PlaceholderPatternError": "replaykit.toh",
    "PlaceholderUnterminatedError": "replaykit.toh",
    "ScriptCallsExhaustedError": "replaykit.toh",
    "ScriptHangError": "replaykit.toh",
    "ScriptNotConsumedError": "replaykit.toh",
    "ScriptPlayer": "replaykit.toh",
    "ScriptSessionsExhaustedError": "replaykit.toh",
    "SessionScript": "replaykit.toh",
    "TohScriptError": "replaykit.toh",
    "UnfinishedCallError": "replaykit.toh",
    "entry_output": "replaykit.toh",
    "load_override": "replaykit.toh",
    "model_scripts": "replaykit.toh",
    "resolve_placeholders": "replaykit.toh",
    "unfinished_calls": "replaykit.toh",
}


def __getattr__(name: str) -> object:
    if name in _NEW:
        return getattr(_importlib.import_module(_NEW[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
