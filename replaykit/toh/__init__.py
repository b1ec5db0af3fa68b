"""``rk.toh``: per-session model-call scripts (:mod:`replaykit.toh.scripts`) and their player
(:mod:`replaykit.toh.player`) under one name.

The player builds on the scripts, so the scripts module cannot re-export it without an import
cycle; this façade, above both, is what ``import replaykit as rk; rk.toh`` names.

Example:
    >>> import replaykit as rk
    >>> rk.toh.ScriptPlayer.__module__, rk.toh.model_scripts.__module__
    ('replaykit.toh.player', 'replaykit.toh.scripts')
"""

from __future__ import annotations

from .player import (
    ScriptCallsExhaustedError,
    ScriptHangError,
    ScriptNotConsumedError,
    ScriptPlayer,
    ScriptSessionsExhaustedError,
    entry_output,
)
from .scripts import (
    CHUNK_TYPES,
    DerivationError,
    OverrideError,
    PlaceholderError,
    PlaceholderNoMatchError,
    PlaceholderPatternError,
    PlaceholderUnterminatedError,
    SessionScript,
    TohScriptError,
    UnfinishedCallError,
    load_override,
    model_scripts,
    resolve_placeholders,
    unfinished_calls,
)

__all__ = [
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
]
