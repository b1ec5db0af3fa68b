"""Portable proofs: one run's chain as a self-contained document, and its check."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..eventlog.log import EventLog
from ..schema import DERIVED_COLUMNS
from .chain import GENESIS, _row_hash
from .content import _TS_TYPE, REDERIVED_FORMAT, _formats, _plain, _sealed_rows, row_content

__all__ = ["chain_proof", "verify_proof"]

_PROOF_VERSION = 2  # 2: steps of sealed-format rows carry their ``derived`` member
_PROOF_VERSIONS = (1, 2)


# --------------------------------------------------------------------------- proofs


def _proof_content(tenant_id: str, run_id: str, step: Mapping[str, Any]) -> bytes:
    derived = step.get("derived")
    if derived is not None and not isinstance(derived, Mapping):
        raise TypeError("a proof step's derived member must be an object")
    return row_content(
        {
            "payload": step["payload"],
            "run_id": run_id,
            "seq": step["seq"],
            "tenant_id": tenant_id,
            "ts": step["ts"],
            "type": step["type"],
            "derived": derived,
        }
    )


def chain_proof(
    log: EventLog, run_id: str, seq: int, *, tenant_id: str, head_seq: int | None = None
) -> dict[str, Any]:
    """A portable proof that event ``seq`` of a run is in that run's chain up to its head.

    The proof is a plain JSON-serialisable dict: the event's content and ``prev_hash``, the
    content of every later row up to the head (a hash chain has no shortcut: each link needs
    the next row's bytes), and the head ``(seq, row_hash)``. :func:`verify_proof` checks it
    with nothing but sha256; it convinces someone only if they trust the head hash (compare
    it with an anchored head).

    Args:
        head_seq: end the proof at this row instead of the run's last row.

    Raises:
        TypeError: ``tenant_id`` is missing or empty.
        KeyError: the tenant has no such run, or the run no row ``seq`` / ``head_seq``.
        ValueError: the stored chain between ``seq`` and the head does not verify (run
            :func:`verify_chain` to see where).

    >>> proof = chain_proof(log, "run-1", 17, tenant_id="acme")  # doctest: +SKIP
    >>> verify_proof(proof, expected_head=proof["head"]["row_hash"])  # doctest: +SKIP
    True
    """
    run = log.run(run_id, tenant_id=tenant_id)
    t = run.table
    seqs = t.column("seq").to_numpy()
    pos = np.flatnonzero(seqs == seq)
    if not len(pos):
        raise KeyError(f"run {run_id!r} of tenant {tenant_id!r} has no event with seq {seq}")
    end = len(seqs) - 1
    if head_seq is not None:
        hp = np.flatnonzero(seqs == head_seq)
        if not len(hp) or hp[0] < pos[0]:
            raise KeyError(f"head_seq {head_seq} is not a row at or after seq {seq}")
        end = int(hp[0])
    sub = t.slice(int(pos[0]), end - int(pos[0]) + 1)
    cols = {
        "seq": sub.column("seq").to_pylist(),
        "type": _plain(sub.column("type")).to_pylist(),
        "ts": pc.cast(sub.column("ts").combine_chunks().cast(_TS_TYPE), pa.int64()).to_pylist(),
        "payload": _plain(sub.column("payload")).to_pylist(),
        "prev_hash": sub.column("prev_hash").to_pylist(),
        "row_hash": sub.column("row_hash").to_pylist(),
    }
    steps = [
        {k: cols[k][i] for k in ("seq", "type", "ts", "payload", "row_hash")}
        for i in range(sub.num_rows)
    ]
    # rows of a sealed format (not pleach) hash their derived columns: the proof carries them
    formats = _formats(sub)
    if formats is not None and _sealed_rows(sub) is not None:
        present = [c for c in DERIVED_COLUMNS if c in sub.schema.names]
        values = {c: _plain(sub.column(c)).to_pylist() for c in present}
        for i, fmt in enumerate(formats.to_pylist()):
            if fmt != REDERIVED_FORMAT:
                d = {c: (values[c][i] if c in values else None) for c in DERIVED_COLUMNS}
                d["format"] = fmt
                steps[i]["derived"] = d
    event = dict(steps[0], prev_hash=cols["prev_hash"][0])
    proof = {
        "replaykit_chain_proof": _PROOF_VERSION,
        "algorithm": "sha256",
        "genesis": GENESIS,
        "tenant_id": tenant_id,
        "run_id": run_id,
        "event": event,
        "path": steps[1:],
        "head": {"seq": steps[-1]["seq"], "row_hash": steps[-1]["row_hash"]},
    }
    if not verify_proof(proof):
        raise ValueError(
            f"the stored chain of run {run_id!r} (tenant {tenant_id!r}) does not verify between "
            f"seq {seq} and seq {steps[-1]['seq']}; run verify_chain(log) to see where"
        )
    return proof


def verify_proof(proof: Mapping[str, Any], *, expected_head: Any = None) -> bool:
    """True when ``proof`` (from :func:`chain_proof`) links its event to its head.

    Recomputes the event's hash from its content and ``prev_hash``, then every later link,
    and checks the result against ``proof["head"]``. Pass ``expected_head`` (a row_hash
    string, or a mapping with ``row_hash`` and optionally ``seq``, e.g. one row of
    :func:`chain_heads` from a trusted copy) to also require that head: without it the
    proof is only internally consistent, which anyone could fabricate.

    Raises:
        ValueError: ``proof`` is not a replaykit chain proof (wrong version or missing keys).

    >>> verify_proof(proof, expected_head="9f2c…")  # doctest: +SKIP
    False
    """
    try:
        if (proof.get("replaykit_chain_proof") not in _PROOF_VERSIONS
                or proof["algorithm"] != "sha256"):
            raise ValueError(
                f"not a version-{_PROOF_VERSION} sha256 replaykit chain proof; "
                "build one with chain_proof(...)"
            )
        tenant, run = proof["tenant_id"], proof["run_id"]
        event, path, head = proof["event"], list(proof["path"]), proof["head"]
        h = _row_hash(str(event["prev_hash"]), _proof_content(tenant, run, event))
        if h != event["row_hash"]:
            return False
        last_seq = event["seq"]
        for step in path:
            if not isinstance(step["seq"], int) or step["seq"] <= last_seq:
                return False
            h = _row_hash(h, _proof_content(tenant, run, step))
            if h != step["row_hash"]:
                return False
            last_seq = step["seq"]
        if head["row_hash"] != h or head["seq"] != last_seq:
            return False
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"malformed chain proof: {exc!r}") from exc
    if expected_head is not None:
        if isinstance(expected_head, Mapping):
            if expected_head.get("row_hash") != h:
                return False
            want_seq = expected_head.get("seq")
            if want_seq is not None and not pd.isna(want_seq) and int(want_seq) != last_seq:
                return False
        elif expected_head != h:
            return False
    return True
