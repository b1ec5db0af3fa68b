"""Deprecated: ``replaykit.stamps`` moved to ``replaykit.provenance``.

This shim goes in the next release.
"""

from __future__ import annotations

import importlib as _importlib
import warnings as _warnings

from replaykit.errors import ReplayKitDeprecationWarning as _ReplayKitDeprecationWarning

_warnings.warn("replaykit.stamps moved to replaykit.provenance: "
               "import from there (the old path goes in the next release)",
               _ReplayKitDeprecationWarning, stacklevel=2)

_ALL = (
    "STAMP_FIELDS",
    "run_stamps",
    "stamp_diff",
    "stamp_drift",
    "stamps_changed",
    "stamps_df",
)
__all__ = list(_ALL)  # the names come from __getattr__

#: every name of the old module -> the module that holds it now.
_NEW: dict[str, str] = {
    "Any": "replaykit.provenance.stamps",
    "Callable": "replaykit.provenance.stamps",
    "JSONDecodeError": "replaykit._json",
    "Mapping": "replaykit.provenance.stamps",
    "STAMP_FIELDS": "replaykit.provenance.rules",
    "Sequence": "replaykit.provenance.stamps",
    "_BAD_JSON": "replaykit.provenance.rules",
    "_CFG": "replaykit.provenance.rules",
    "_DIGESTS": "replaykit.provenance.stamps",
    "_DIGESTS_SIZE": "replaykit.provenance.stamps",
    "_FLOATS": "replaykit.provenance.rules",
    "_Getter": "replaykit.provenance.rules",
    "_INTS": "replaykit.provenance.rules",
    "_LS": "replaykit.provenance.rules",
    "_OBJECT_FIELDS": "replaykit.provenance.rules",
    "_OBJECT_VALUED": "replaykit.provenance.stamps",
    "_OTEL_GETTERS": "replaykit.provenance.rules",
    "_PX_PARAMS": "replaykit.provenance.rules",
    "_RESPONSE_FIELDS": "replaykit.provenance.rules",
    "_RULES": "replaykit.provenance.rules",
    "_RUN_RULES": "replaykit.provenance.rules",
    "_Rule": "replaykit.provenance.rules",
    "_SCALAR_TYPES": "replaykit.provenance.stamps",
    "_SET_RULES": "replaykit.provenance.stamps",
    "_STAMPS_MEMO": "replaykit.provenance.stamps",
    "_STAMPS_MEMO_SIZE": "replaykit.provenance.stamps",
    "_assemble_objects": "replaykit.provenance.stamps",
    "_at": "replaykit.provenance.rules",
    "_content_text": "replaykit.provenance.rules",
    "_distinct_objects": "replaykit.provenance.stamps",
    "_either": "replaykit.provenance.rules",
    "_event_stamps": "replaykit.provenance.stamps",
    "_extract": "replaykit.provenance.stamps",
    "_fast_getters": "replaykit.provenance.stamps",
    "_fill_runs": "replaykit.provenance.stamps",
    "_finish": "replaykit.provenance.stamps",
    "_fmt_of": "replaykit.provenance.stamps",
    "_has_long_int": "replaykit._json",
    "_hash16": "replaykit.provenance.rules",
    "_inspect_provider": "replaykit.provenance.rules",
    "_instructions": "replaykit.provenance.rules",
    "_json_param": "replaykit.provenance.rules",
    "_log_digest": "replaykit.provenance.stamps",
    "_map_distinct_objects": "replaykit.provenance.stamps",
    "_maybe_json": "replaykit.provenance.rules",
    "_name_version": "replaykit.provenance.rules",
    "_oi_param": "replaykit.provenance.rules",
    "_otel_stamp": "replaykit.provenance.rules",
    "_p": "replaykit.provenance.rules",
    "_placeholder": "replaykit.provenance.rules",
    "_prefixed": "replaykit.provenance.rules",
    "_rule_values": "replaykit.provenance.stamps",
    "_run_level": "replaykit.provenance.stamps",
    "_s": "replaykit.provenance.stamps",
    "_sdk_version": "replaykit.provenance.rules",
    "_set_fields": "replaykit.provenance.stamps",
    "_side": "replaykit.provenance.stamps",
    "_source_format": "replaykit.provenance.stamps",
    "_stamps_df": "replaykit.provenance.stamps",
    "_summary": "replaykit.provenance.stamps",
    "_system_of_messages": "replaykit.provenance.rules",
    "_table_digest": "replaykit.provenance.stamps",
    "_typed": "replaykit.provenance.stamps",
    "_versioned": "replaykit.provenance.rules",
    "annotations": "__future__",
    "canonical_json": "replaykit._json",
    "gc_paused": "replaykit._json",
    "hashlib": "replaykit.provenance.stamps",
    "loads": "replaykit._json",
    "np": "replaykit.provenance.stamps",
    "pa": "replaykit.provenance.stamps",
    "pc": "replaykit.provenance.stamps",
    "pd": "replaykit.provenance.stamps",
    "provide": "replaykit._delegates",
    "rows_holding_any": "replaykit._json",
    "run_stamps": "replaykit.provenance.stamps",
    "stamp_diff": "replaykit.provenance.stamps",
    "stamp_drift": "replaykit.provenance.stamps",
    "stamps_changed": "replaykit.provenance.stamps",
    "stamps_df": "replaykit.provenance.stamps",
    "weakref": "replaykit.provenance.stamps",
}


def __getattr__(name: str) -> object:
    if name in _NEW:
        return getattr(_importlib.import_module(_NEW[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
