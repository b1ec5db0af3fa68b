"""Deprecated: ``replaykit.script_player`` moved to ``replaykit.toh.player``.

This shim goes in the next release.
"""

from __future__ import annotations

import importlib as _importlib
import warnings as _warnings

from replaykit.errors import ReplayKitDeprecationWarning as _ReplayKitDeprecationWarning

_warnings.warn("replaykit.script_player moved to replaykit.toh.player: "
               "import from there (the old path goes in the next release)",
               _ReplayKitDeprecationWarning, stacklevel=2)

_ALL = (
    "ScriptCallsExhaustedError",
    "ScriptHangError",
    "ScriptNotConsumedError",
    "ScriptPlayer",
    "ScriptSessionsExhaustedError",
    "entry_output",
)
__all__ = list(_ALL)  # the names come from __getattr__

#: every name of the old module -> the module that holds it now.
_NEW: dict[str, str] = {
    "Any": "replaykit.toh.player",
    "Callable": "replaykit.toh.player",
    "Mapping": "replaykit.toh.player",
    "Path": "replaykit.toh.player",
    "ScriptCallsExhaustedError": "replaykit.toh.player",
    "ScriptHangError": "replaykit.toh.player",
    "ScriptNotConsumedError": "replaykit.toh.player",
    "ScriptPlayer": "replaykit.toh.player",
    "ScriptSessionsExhaustedError": "replaykit.toh.player",
    "Sequence": "replaykit.toh.player",
    "SessionScript": "replaykit.toh.player",
    "TohScriptError": "replaykit.toh.player",
    "_ANON": "replaykit.toh.player",
    "_messages_of": "replaykit.toh.player",
    "entry_output": "replaykit.toh.player",
    "model_scripts": "replaykit.toh.player",
    "pd": "replaykit.toh.player",
    "resolve_placeholders": "replaykit.toh.player",
}


def __getattr__(name: str) -> object:
    if name in _NEW:
        return getattr(_importlib.import_module(_NEW[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
