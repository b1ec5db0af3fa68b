"""Chain manifests: the anchored record of a log (every run of every tenant with its head),
sealed by one digest."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa

from ..errors import ReplayKitError
from ..eventlog.log import EventLog
from ..tenancy import tenant_id_problem
from .chain import chain_heads
from .content import _MAX_SAFE_INT, canonical_json

__all__ = ["ChainManifest", "ManifestError", "RunHead", "chain_manifest"]

# --------------------------------------------------------------------------- manifest

_MANIFEST_VERSION = 1
_HEX64 = re.compile("[0-9a-fA-F]{64}")
_MANIFEST_KEY = "replaykit_chain_manifest"


class ManifestError(ReplayKitError, ValueError):
    """A chain manifest is malformed, or its digest does not match its content.

    A manifest whose digest disagrees with its runs was edited after it was made (or
    damaged): it is refused rather than trusted. Make a fresh one from a trusted copy of
    the log with :func:`chain_manifest`.
    """


@dataclass(frozen=True)
class RunHead:
    """The anchored head of one run: its last row's ``seq`` and ``row_hash``."""

    seq: int
    row_hash: str


def _manifest_body(tenants: Mapping[str, Mapping[str, RunHead]]) -> dict[str, Any]:
    return {
        _MANIFEST_KEY: _MANIFEST_VERSION,
        "algorithm": "sha256",
        "tenants": {
            t: {r: {"seq": h.seq, "row_hash": h.row_hash} for r, h in runs.items()}
            for t, runs in tenants.items()
        },
    }


def _manifest_digest(tenants: Mapping[str, Mapping[str, RunHead]]) -> str:
    body = canonical_json(_manifest_body(tenants)).encode("utf-8")
    return hashlib.sha256(body).hexdigest()


@dataclass(frozen=True)
class ChainManifest:
    """The anchored record of a log: for each tenant, every run and its head, plus a digest.

    ``tenants`` maps tenant id -> run id -> :class:`RunHead`. ``digest`` is the lowercase hex
    SHA-256 of the canonical JSON (:func:`canonical_json`) of the manifest without its
    ``digest`` member, so the whole manifest is anchored (signed, published, mailed) by that
    one value. Passed to :func:`verify_chain` as ``expected_heads``, a run in the log that
    the manifest does not list is ``unexpected_run``, a listed run that is not in the log
    is ``missing_run``, and each listed run's last row must be its head (``head_mismatch``
    otherwise). Build one with :func:`chain_manifest`; store it with :meth:`to_json`.

    Raises:
        ManifestError: the digest does not match the content (the manifest was edited), or
            the content is malformed (a non-string id, a non-integer seq, a bad hash).

    >>> m = chain_manifest(chained)  # doctest: +SKIP
    >>> ChainManifest.from_json(m.to_json()) == m  # doctest: +SKIP
    True
    """

    tenants: Mapping[str, Mapping[str, RunHead]]
    digest: str

    def __post_init__(self) -> None:
        if not isinstance(self.tenants, Mapping) or not isinstance(self.digest, str):
            raise ManifestError("chain manifest needs a tenants mapping and a digest string")
        for t, runs in self.tenants.items():
            if not isinstance(t, str) or not isinstance(runs, Mapping):
                raise ManifestError(f"manifest tenant {t!r}: expected a string id and its runs")
            problem = tenant_id_problem(t)
            if problem is not None:
                raise ManifestError(f"manifest tenant {t!r}: the tenant id {problem}")
            for r, h in runs.items():
                ok = (
                    isinstance(r, str)
                    and isinstance(h, RunHead)
                    and type(h.seq) is int
                    and isinstance(h.row_hash, str)
                    and len(h.row_hash) == 64
                    and _HEX64.fullmatch(h.row_hash) is not None
                )
                if not ok:
                    raise ManifestError(
                        f"manifest run {r!r} of tenant {t!r}: expected a string run id with an "
                        "integer seq and a 64-character hex row_hash"
                    )
                if not 0 <= h.seq <= _MAX_SAFE_INT:
                    # no event has it (seqs are >= 0), and beyond 2**53 - 1 canonical JSON
                    # cannot write it (nor can the int64 seq column hold more than 2**63 - 1)
                    raise ManifestError(
                        f"manifest run {r!r} of tenant {t!r}: seq {h.seq} is out of range "
                        f"(0 to {_MAX_SAFE_INT}); no event has such a seq"
                    )
        want = _manifest_digest(self.tenants)
        if self.digest != want:
            raise ManifestError(
                f"manifest digest {self.digest!r} does not match its content (sha256 "
                f"{want!r}): the manifest was changed after it was made; make a new one from "
                "a trusted copy of the log with replaykit.integrity.chain_manifest(log)"
            )

    @classmethod
    def build(cls, tenants: Mapping[str, Mapping[str, RunHead]]) -> ChainManifest:
        """A manifest of ``tenants`` with its digest computed."""
        frozen = {t: dict(runs) for t, runs in tenants.items()}
        return cls(frozen, _manifest_digest(frozen))

    @property
    def n_runs(self) -> int:
        """How many runs the manifest lists (over all tenants)."""
        return sum(len(runs) for runs in self.tenants.values())

    def heads(self) -> pd.DataFrame:
        """The listed runs as a frame: tenant_id, run_id, seq, row_hash (as chain_heads)."""
        recs = [
            {"tenant_id": t, "run_id": r, "seq": h.seq, "row_hash": h.row_hash}
            for t, runs in self.tenants.items()
            for r, h in runs.items()
        ]
        df = pd.DataFrame.from_records(recs, columns=["tenant_id", "run_id", "seq", "row_hash"])
        df["seq"] = pd.array(df["seq"], dtype="Int64")
        return df

    def for_tenants(self, tenants: Iterable[str]) -> ChainManifest:
        """The part of the manifest that covers ``tenants`` (with its own digest)."""
        keep = set(tenants)
        return ChainManifest.build({t: r for t, r in self.tenants.items() if t in keep})

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (the body plus ``digest``)."""
        return {**_manifest_body(self.tenants), "digest": self.digest}

    def to_json(self) -> str:
        """The manifest as canonical JSON text (what :meth:`from_json` reads)."""
        return canonical_json(self.to_dict())

    @classmethod
    def from_dict(cls, obj: Any, *, expected_digest: str | None = None) -> ChainManifest:
        """Read a manifest from :meth:`to_dict` output; the digest is checked.

        The digest matching the content only shows the manifest was not edited *by hand*:
        whoever can rewrite the manifest can recompute its digest. Pass the digest you
        anchored (signed, published) as ``expected_digest`` to refuse any other manifest.

        Raises:
            ManifestError: not a manifest, a malformed one, one whose digest does not
                match its content, or (``expected_digest``) not the anchored manifest.
        """
        manifest = cls._from_dict(obj)
        if expected_digest is not None and manifest.digest != expected_digest.strip().lower():
            raise ManifestError(
                f"manifest digest {manifest.digest!r} is not the anchored digest "
                f"{expected_digest!r}: this is not the manifest that was anchored (it was "
                "replaced and re-digested); use the anchored manifest"
            )
        return manifest

    @classmethod
    def _from_dict(cls, obj: Any) -> ChainManifest:
        if not isinstance(obj, Mapping) or obj.get(_MANIFEST_KEY) is None:
            raise ManifestError(
                f"not a replaykit chain manifest (no {_MANIFEST_KEY!r} member); make one with "
                "replaykit.integrity.chain_manifest(log).to_json()"
            )
        if obj.get(_MANIFEST_KEY) != _MANIFEST_VERSION or obj.get("algorithm") != "sha256":
            raise ManifestError(
                f"unsupported chain manifest (version {obj.get(_MANIFEST_KEY)!r}, algorithm "
                f"{obj.get('algorithm')!r}); this replaykit reads version {_MANIFEST_VERSION}, "
                "sha256"
            )
        extra = sorted(set(obj) - {_MANIFEST_KEY, "algorithm", "tenants", "digest"})
        if extra:
            raise ManifestError(f"chain manifest has unknown members {extra}")
        tenants = obj.get("tenants")
        digest = obj.get("digest")
        if not isinstance(tenants, Mapping) or not isinstance(digest, str):
            raise ManifestError("chain manifest needs a 'tenants' object and a 'digest' string")
        out: dict[str, dict[str, RunHead]] = {}
        for t, runs in tenants.items():
            if not isinstance(runs, Mapping):
                raise ManifestError(f"manifest tenant {t!r}: its runs must be an object")
            out[t] = {}
            for r, h in runs.items():
                if not isinstance(h, Mapping) or set(h) != {"seq", "row_hash"}:
                    raise ManifestError(
                        f"manifest run {r!r} of tenant {t!r} must be {{'seq': int, "
                        "'row_hash': str}}"
                    )
                out[t][r] = RunHead(h["seq"], h["row_hash"])
        return cls(out, digest)

    @classmethod
    def from_json(cls, text: str | bytes, *, expected_digest: str | None = None
                  ) -> ChainManifest:
        """Read a manifest from :meth:`to_json` text; the digest is checked (and compared
        with ``expected_digest``, the anchored one, when given: see :meth:`from_dict`).

        Raises:
            ManifestError: not JSON, not a manifest, a digest that does not match, or
                (``expected_digest``) not the anchored manifest.
        """
        try:
            obj = json.loads(text)
        except ValueError as exc:  # also a number of more digits than Python parses
            raise ManifestError(f"chain manifest is not valid JSON: {exc}") from exc
        except RecursionError:
            raise ManifestError("chain manifest is nested too deeply to be one (a manifest "
                                "is three objects deep)") from None
        return cls.from_dict(obj, expected_digest=expected_digest)


def chain_manifest(log: EventLog | pa.Table) -> ChainManifest:
    """The :class:`ChainManifest` of ``log``: every run of every tenant with its head.

    Anchor the manifest (or just its ``digest``) somewhere the log's writer cannot change;
    ``verify_chain(log, expected_heads=manifest)`` then also detects runs added to the log
    (``unexpected_run``), runs removed from it (``missing_run``) and rows cut from or added
    to the end of a run (``head_mismatch``).

    >>> manifest = chain_manifest(chained)  # doctest: +SKIP
    >>> open("manifest.json", "w").write(manifest.to_json())  # doctest: +SKIP
    >>> verify_chain(chained, expected_heads=manifest).empty  # doctest: +SKIP
    True
    """
    heads = chain_heads(log)
    tenants: dict[str, dict[str, RunHead]] = {}
    for t, r, s, h in zip(
        heads["tenant_id"].tolist(), heads["run_id"].tolist(), heads["seq"].tolist(),
        heads["row_hash"].tolist(), strict=True,
    ):
        if not isinstance(h, str):
            raise ValueError(
                f"run {r!r} of tenant {t!r} has no row_hash on its last row: stamp the log "
                "with stamp_chain before making its manifest"
            )
        tenants.setdefault(t, {})[r] = RunHead(int(s), h)
    return ChainManifest.build(tenants)
