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

import typing as _typing

from .._base.delegates import lazy_exports

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


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

