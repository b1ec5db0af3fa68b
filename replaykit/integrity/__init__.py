"""Tamper-evident logs (``rk.stamp_chain``, ``rk.verify_chain``, ...).

This package owns the per-run hash chain (full definition in ``docs/integrity.md``):

* :mod:`.content` -- the canonical content bytes of a row;
* :mod:`.chain` -- ``stamp_chain`` and ``chain_heads``: the chain itself;
* :mod:`.manifest` -- ``ChainManifest``: the anchored record of a log;
* :mod:`.derived` -- the derived check of pleach rows;
* :mod:`.verify` -- ``verify_chain``: every check, one problem row each;
* :mod:`.proofs` -- ``chain_proof`` / ``verify_proof``: portable proofs;
* :mod:`._dask` -- ``verify_chain(engine="dask")``'s kernel.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing
import warnings as _warnings
from typing import Any

from replaykit.errors import ReplayKitDeprecationWarning as _ReplayKitDeprecationWarning

if _typing.TYPE_CHECKING:
    from .chain import GENESIS, chain_heads, stamp_chain
    from .content import (
        CONTENT_COLUMNS,
        REDERIVED_FORMAT,
        SEALED_MEMBERS,
        canonical_json,
        row_content,
        source_format,
    )
    from .manifest import ChainManifest, ManifestError, RunHead, chain_manifest
    from .problems import PROBLEM_KINDS
    from .proofs import chain_proof, verify_proof
    from .verify import verify_chain

__all__ = [
    "CONTENT_COLUMNS",
    "ChainManifest",
    "GENESIS",
    "ManifestError",
    "PROBLEM_KINDS",
    "REDERIVED_FORMAT",
    "RunHead",
    "SEALED_MEMBERS",
    "canonical_json",
    "chain_heads",
    "chain_manifest",
    "chain_proof",
    "row_content",
    "source_format",
    "stamp_chain",
    "verify_chain",
    "verify_proof",
]

#: where each public name lives (imported on first use, PEP 562).
_EXPORTS: dict[str, str] = {
    "CONTENT_COLUMNS": ".content",
    "ChainManifest": ".manifest",
    "GENESIS": ".chain",
    "ManifestError": ".manifest",
    "PROBLEM_KINDS": ".problems",
    "REDERIVED_FORMAT": ".content",
    "RunHead": ".manifest",
    "SEALED_MEMBERS": ".content",
    "canonical_json": ".content",
    "chain_heads": ".chain",
    "chain_manifest": ".manifest",
    "chain_proof": ".proofs",
    "row_content": ".content",
    "source_format": ".content",
    "stamp_chain": ".chain",
    "verify_chain": ".verify",
    "verify_proof": ".proofs",
}
#: names the old module had that moved to a module of this package: they still resolve
#: here, with a ReplayKitDeprecationWarning naming the new path, for one release.
_OLD = "replaykit.integrity"
_MOVED: dict[str, str] = {
    "Callable": ".chain",
    "Future": ".chain",
    "Iterable": ".derived",
    "Iterator": ".chain",
    "Mapping": ".content",
    "ThreadPoolExecutor": ".chain",
    "_ARGS_COLUMNS": ".derived",
    "_CONTROL_BYTES": ".content",
    "_ESCAPED_BYTES": ".content",
    "_ESCAPES": ".content",
    "_HASH_BLOCK_ROWS": ".chain",
    "_HEX64": ".manifest",
    "_LS": ".content",
    "_MANIFEST_KEY": ".manifest",
    "_MANIFEST_VERSION": ".manifest",
    "_MAX_SAFE_INT": ".content",
    "_PROBLEM_SCHEMA": ".problems",
    "_PROOF_VERSION": ".proofs",
    "_PROOF_VERSIONS": ".proofs",
    "_Pieces": ".content",
    "_SWITCH_INTERVAL_S": ".verify",
    "_TS_TYPE": ".content",
    "_as_manifest": ".verify",
    "_as_table": ".chain",
    "_blocks_ahead": ".chain",
    "_chain_problems": ".verify",
    "_chain_spec": ".content",
    "_compare_derived": ".derived",
    "_content_column": ".content",
    "_derived_member": ".content",
    "_derived_member_pieces": ".content",
    "_derived_rest": ".derived",
    "_derived_scalar": ".content",
    "_derived_side": ".derived",
    "_digests": ".chain",
    "_escape_strings": ".content",
    "_formats": ".content",
    "_hashable_ranges": ".content",
    "_head_problems": ".verify",
    "_hex_column": ".chain",
    "_holds_any": ".content",
    "_json_number": ".content",
    "_json_string": ".content",
    "_json_string_column": ".content",
    "_json_value_column": ".content",
    "_manifest_body": ".manifest",
    "_manifest_digest": ".manifest",
    "_manifest_problems": ".verify",
    "_normalise_heads": ".verify",
    "_offsets": ".content",
    "_parsed_of": ".derived",
    "_plain": ".content",
    "_pleach_rows": ".derived",
    "_problem_frame": ".problems",
    "_problems": ".problems",
    "_proof_content": ".proofs",
    "_quoted": ".content",
    "_row_hash": ".chain",
    "_sealed_rows": ".content",
    "_short_switches": ".verify",
    "_switch_lock": ".verify",
    "_switch_saved": ".verify",
    "_switch_users": ".verify",
    "_text_mismatch": ".derived",
    "_ts_micros": ".content",
    "_typed_of": ".derived",
    "_verify_hashes": ".chain",
    "contextmanager": ".verify",
    "dataclass": ".manifest",
    "deque": ".chain",
    "hashlib": ".chain",
    "json": ".manifest",
    "math": ".content",
    "np": ".chain",
    "pa": ".chain",
    "pc": ".chain",
    "pd": ".chain",
    "re": ".manifest",
    "sys": ".verify",
    "threading": ".verify",
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
    return _former_getattr(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def _former_getattr(name: str) -> Any:
    """``verify_chain_command`` moved to the command line's layer (integrity reads no inputs)."""
    if name == "verify_chain_command":
        raise AttributeError("replaykit.integrity.verify_chain_command moved to "
                             "replaykit.cli.verify.verify_chain_command (the command line "
                             "reads the inputs; run it as `replaykit verify-chain`)",
                             name=name, obj=None)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
