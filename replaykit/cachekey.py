"""Deprecated: ``replaykit.cachekey`` moved to ``replaykit.provenance.cachekey``.

This shim goes in the next release.
"""

from __future__ import annotations

import importlib as _importlib
import warnings as _warnings

from replaykit.errors import ReplayKitDeprecationWarning as _ReplayKitDeprecationWarning

_warnings.warn("replaykit.cachekey moved to replaykit.provenance.cachekey: "
               "import from there (the old path goes in the next release)",
               _ReplayKitDeprecationWarning, stacklevel=2)

_ALL = (
    "KEY_PREFIX",
    "cache_key",
    "derive_keys",
)
__all__ = list(_ALL)  # the names come from __getattr__

#: every name of the old module -> the module that holds it now.
_NEW: dict[str, str] = {
    "Any": "replaykit.provenance.cachekey",
    "JSONDecodeError": "replaykit.provenance.cachekey",
    "KEY_PREFIX": "replaykit.provenance.cachekey",
    "Mapping": "replaykit.provenance.cachekey",
    "Sequence": "replaykit.provenance.cachekey",
    "_ALIASES": "replaykit.provenance.cachekey",
    "_BAD_JSON": "replaykit.provenance.cachekey",
    "_CONFIG_FIELDS": "replaykit.provenance.cachekey",
    "_CONFIG_NAMES": "replaykit.provenance.cachekey",
    "_MESSAGES": "replaykit.provenance.cachekey",
    "_MESSAGE_KEYS": "replaykit.provenance.cachekey",
    "_canonical": "replaykit.provenance.cachekey",
    "_content": "replaykit.provenance.cachekey",
    "_num": "replaykit.provenance.cachekey",
    "_request_key": "replaykit.provenance.cachekey",
    "cache_key": "replaykit.provenance.cachekey",
    "canonical_json": "replaykit.provenance.cachekey",
    "derive_keys": "replaykit.provenance.cachekey",
    "hashlib": "replaykit.provenance.cachekey",
    "map_distinct_documents": "replaykit.provenance.cachekey",
    "pa": "replaykit.provenance.cachekey",
    "pc": "replaykit.provenance.cachekey",
    "pd": "replaykit.provenance.cachekey",
}


def __getattr__(name: str) -> object:
    if name in _NEW:
        return getattr(_importlib.import_module(_NEW[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
