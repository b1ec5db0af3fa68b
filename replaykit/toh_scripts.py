"""Deprecated: ``replaykit.toh_scripts`` moved to ``replaykit.toh.scripts``.

This shim goes in the next release.
"""

from __future__ import annotations

import importlib as _importlib
import warnings as _warnings

from replaykit.errors import ReplayKitDeprecationWarning as _ReplayKitDeprecationWarning

_warnings.warn("replaykit.toh_scripts moved to replaykit.toh.scripts: "
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
    "SessionScript",
    "TohScriptError",
    "UnfinishedCallError",
    "load_override",
    "model_scripts",
    "resolve_placeholders",
    "unfinished_calls",
)
__all__ = list(_ALL)  # the names come from __getattr__

#: every name of the old module -> the module that holds it now.
_NEW: dict[str, str] = {
    "Any": "replaykit.toh.scripts",
    "CHUNK_TYPES": "replaykit.toh.scripts",
    "DerivationError": "replaykit.toh.scripts",
    "Iterable": "replaykit.toh.scripts",
    "Mapping": "replaykit.toh.scripts",
    "OrphanRunWarning": "replaykit.toh.scripts",
    "OverrideError": "replaykit.toh.scripts",
    "Path": "replaykit.toh.scripts",
    "PlaceholderError": "replaykit.toh.scripts",
    "PlaceholderNoMatchError": "replaykit.toh.scripts",
    "PlaceholderPatternError": "replaykit.toh.scripts",
    "PlaceholderUnterminatedError": "replaykit.toh.scripts",
    "ReplayKitError": "replaykit.toh.scripts",
    "Sequence": "replaykit.toh.scripts",
    "SessionScript": "replaykit.toh.scripts",
    "TohScriptError": "replaykit.toh.scripts",
    "UnfinishedCallError": "replaykit.toh.scripts",
    "_CHILD_RE": "replaykit.toh.scripts",
    "_CLOSE": "replaykit.toh.scripts",
    "_Derived": "replaykit.toh.scripts",
    "_MAX_SAFE_INT": "replaykit.toh.scripts",
    "_NULL_KEY": "replaykit.toh.scripts",
    "_OPEN": "replaykit.toh.scripts",
    "_OVERRIDE_NAME": "replaykit.toh.scripts",
    "_PRIMARY_NAMES": "replaykit.toh.scripts",
    "_TENANT": "replaykit.toh.scripts",
    "_apply_patches": "replaykit.toh.scripts",
    "_derive_files": "replaykit.toh.scripts",
    "_has_open": "replaykit.toh.scripts",
    "_header_only": "replaykit.toh.scripts",
    "_is_int": "replaykit.toh.scripts",
    "_raise_if_bad": "replaykit.toh.scripts",
    "_read_chunks": "replaykit.toh.scripts",
    "_read_entry": "replaykit.toh.scripts",
    "_resolve_one": "replaykit.toh.scripts",
    "_scenario_files": "replaykit.toh.scripts",
    "_string_leaves": "replaykit.toh.scripts",
    "_sub_value": "replaykit.toh.scripts",
    "_substitute": "replaykit.toh.scripts",
    "copy": "replaykit.toh.scripts",
    "dataclass": "replaykit.toh.scripts",
    "field": "replaykit.toh.scripts",
    "json": "replaykit.toh.scripts",
    "load_override": "replaykit.toh.scripts",
    "loads": "replaykit.toh.scripts",
    "model_scripts": "replaykit.toh.scripts",
    "np": "replaykit.toh.scripts",
    "pa": "replaykit.toh.scripts",
    "pc": "replaykit.toh.scripts",
    "pd": "replaykit.toh.scripts",
    "re": "replaykit.toh.scripts",
    "read_toh": "replaykit.toh.scripts",
    "resolve_placeholders": "replaykit.toh.scripts",
    "unfinished_calls": "replaykit.toh.scripts",
    "warnings": "replaykit.toh.scripts",
}


def __getattr__(name: str) -> object:
    if name in _NEW:
        return getattr(_importlib.import_module(_NEW[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
