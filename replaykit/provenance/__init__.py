"""Provenance of a log: reproducibility stamps (:mod:`.stamps`, rules in :mod:`.rules`) and
content-hash cache keys (:mod:`.cachekey`).
"""

from __future__ import annotations

import typing as _typing

from .._base.delegates import lazy_exports

if _typing.TYPE_CHECKING:
    from .cachekey import KEY_PREFIX, cache_key, derive_keys
    from .rules import STAMP_FIELDS
    from .stamps import run_stamps, stamp_diff, stamp_drift, stamps_changed, stamps_df

__all__ = [
    "KEY_PREFIX",
    "STAMP_FIELDS",
    "cache_key",
    "derive_keys",
    "run_stamps",
    "stamp_diff",
    "stamp_drift",
    "stamps_changed",
    "stamps_df",
]

#: where each public name lives (imported on first use, PEP 562).
_EXPORTS: dict[str, str] = {
    "KEY_PREFIX": ".cachekey",
    "STAMP_FIELDS": ".rules",
    "cache_key": ".cachekey",
    "derive_keys": ".cachekey",
    "run_stamps": ".stamps",
    "stamp_diff": ".stamps",
    "stamp_drift": ".stamps",
    "stamps_changed": ".stamps",
    "stamps_df": ".stamps",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
