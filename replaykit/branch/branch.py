"""Branch: an immutable value naming a base run, a checkpoint and the interventions to apply."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .._base.json import canonical_json
from ..errors import LoadError, ReplayError
from ..eventlog.log import EventLog
from ..io.isplay import BRANCH_FORMAT
from .types import IsplayBranch, IsplayIntervention, ReplayPolicy, read_isplay_branch

__all__ = ["Branch"]


def _default_id(run_id: str, checkpoint: str | int, name: str, parent: str | None) -> str:
    tag = canonical_json([run_id, checkpoint, name, parent])
    return "br-" + hashlib.sha256(tag.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Branch:
    """A branch of one base run from a checkpoint, with its interventions (an immutable value).

    ``checkpoint`` is a checkpoint id (a format's checkpoint side table, a ``checkpoint`` event's
    ``ref_id``, or an ``event_id``) or a seq (formats without ids). :meth:`intervene` returns a
    new branch; :meth:`to_dict` / :meth:`from_dict` use the ``isplay.branch/v1`` file shape.

    Example:
        >>> import replaykit as rk
        >>> log = rk.read_isplay("data/isplay", owner="acme")  # doctest: +SKIP
        >>> b = rk.Branch(base=log, run_id="run-claims-C-104", tenant_id="acme",
        ...               checkpoint="cp-intake", name="drop clause")  # doctest: +SKIP
        >>> b2 = b.intervene(kind="tool_args_patch", target="tc-104-2",
        ...                  patch={"args": {"claimId": "C-104"}})  # doctest: +SKIP
        >>> len(b.interventions), len(b2.interventions)  # doctest: +SKIP
        (0, 1)

    Raises:
        TypeError: ``tenant_id`` missing or empty (never defaulted).
        ReplayError: the tenant has no such run in ``base``.
    """

    base: EventLog = field(repr=False, compare=False)
    run_id: str
    tenant_id: str
    checkpoint: str | int
    name: str
    parent: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    interventions: tuple[IsplayIntervention, ...] = ()
    branch_id: str | None = None
    project_id: str | None = None
    replay_policy: ReplayPolicy | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.tenant_id, str) or not self.tenant_id:
            raise TypeError(f"tenant_id is required (a non-empty string), got {self.tenant_id!r}")
        if self.branch_id is None:
            object.__setattr__(self, "branch_id",
                               _default_id(self.run_id, self.checkpoint, self.name, self.parent))
        if self.project_id is None:
            object.__setattr__(self, "project_id", self._run_attr("projectId"))

    def __getstate__(self) -> dict[str, Any]:
        # a pickled branch carries its tenant's part of the base only (issue 30: a branch
        # of one tenant's run over a multi-tenant log must not ship the other tenants)
        state = dict(self.__dict__)
        state["base"] = self.base.filter(tenant_id=self.tenant_id)
        return state

    # ------------------------------------------------------------------ base run access
    def _run_attr(self, key: str) -> Any:
        runs = self.base.runs
        if not runs.num_rows:
            return None
        m = pc.and_(pc.equal(runs.column("run_id"), self.run_id),
                    pc.equal(runs.column("tenant_id"), self.tenant_id))
        sub = runs.filter(m)
        if not sub.num_rows or sub.column("attrs")[0].as_py() is None:
            return None
        return json.loads(sub.column("attrs")[0].as_py()).get(key)

    def base_run(self) -> EventLog:
        """The base run's events (this tenant only).

        Raises:
            ReplayError: the tenant has no such run.
        """
        try:
            return self.base.run(self.run_id, tenant_id=self.tenant_id)
        except KeyError:
            raise ReplayError(f"tenant {self.tenant_id!r} has no run {self.run_id!r} in the base "
                              "log", run_id=self.run_id, tenant_id=self.tenant_id) from None

    def checkpoint_seq(self) -> int:
        """The seq the checkpoint resolves to (events up to it are copied, not re-driven).

        An int checkpoint is a seq. A string is looked up, in order, in the log's
        ``checkpoints`` side table, then as the ``ref_id`` of a ``checkpoint`` event, then as an
        ``event_id``.

        Raises:
            ReplayError: the checkpoint names nothing in the base run.
        """
        t = self.base_run().table
        cp = self.checkpoint
        if isinstance(cp, int) and not isinstance(cp, bool):
            if not pc.any(pc.equal(t.column("seq"), cp)).as_py():
                raise ReplayError(f"run {self.run_id!r} has no event with seq {cp}",
                                  run_id=self.run_id, tenant_id=self.tenant_id)
            return cp
        side = self.base.extras.get("checkpoints")
        if side is not None and side.num_rows:
            m = pc.and_(pc.and_(pc.equal(side.column("run_id"), self.run_id),
                                pc.equal(side.column("tenant_id"), self.tenant_id)),
                        pc.equal(side.column("checkpoint_id"), cp))
            hit = side.filter(m)
            if hit.num_rows:
                return int(hit.column("seq")[0].as_py())
        kind = pc.cast(t.column("kind"), pa.string())
        for mask in (pc.and_(pc.equal(kind, "checkpoint"), pc.equal(t.column("ref_id"), cp)),
                     pc.equal(t.column("event_id"), cp)):
            hit = t.filter(pc.fill_null(mask, False))
            if hit.num_rows:
                return int(hit.column("seq")[0].as_py())
        raise ReplayError(f"checkpoint {cp!r} names no checkpoint or event of run "
                          f"{self.run_id!r}; pass a checkpoint id, an event id or a seq",
                          run_id=self.run_id, tenant_id=self.tenant_id)

    # ------------------------------------------------------------------ interventions
    def intervene(self, *, kind: str, patch: Mapping[str, Any],
                  selector: Mapping[str, Any] | None = None, description: str = "",
                  intervention_id: str | None = None, **selector_keys: Any) -> Branch:
        """A new branch with one more intervention (this branch is unchanged).

        Selector keys (``target_ref``, ``target_event``, ``target_type``, ``target_tool``,
        ``target_model_call``, ``target_artifact``, ``target_context``,
        ``target_context_path``, ``json_pointer``; ``target`` = ``target_ref``) may be given in
        ``selector`` or as keyword arguments. ``target_event`` takes an event id, or a seq on
        formats without event ids.

        Example:
            >>> b2 = b.intervene(kind="prompt_patch", target_event="ev-104-003",
            ...     patch={"operations": [{"op": "replace_text", "path": "/prompt",
            ...            "value": {"search": "Escalate suspected fraud.", "replacement": ""}}]}
            ...     )  # doctest: +SKIP

        Raises:
            ValueError: unknown kind, unknown selector key, empty selector, or a patch that
                does not fit its kind (the message names the field and a fix).
        """
        sel = dict(selector or {})
        sel.update(selector_keys)
        iid = intervention_id or f"iv-{len(self.interventions) + 1}"
        doc = {"interventionId": iid, "kind": kind, "selector": sel, "patch": dict(patch),
               "description": description}
        probe = {"format": BRANCH_FORMAT, "branchId": "b", "baseRunId": "r", "checkpointId": "c",
                 "name": "n", "interventions": [iv.to_dict() for iv in self.interventions]
                 + [doc]}
        try:
            parsed = IsplayBranch.from_dict(probe, source="intervene()")
        except LoadError as exc:
            raise ValueError(str(exc)) from None
        return replace(self, interventions=parsed.interventions)

    def with_policy(self, model: str = "recorded-only", tool: str = "pause-for-fixture"
                    ) -> Branch:
        """A new branch whose default replay policies are ``model`` / ``tool``."""
        return replace(self, replay_policy=ReplayPolicy(model=model, tool=tool))

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict[str, Any]:
        """The branch in ``isplay.branch/v1`` shape (a seq checkpoint adds ``checkpointSeq``)."""
        ib = IsplayBranch(
            branch_id=str(self.branch_id), base_run_id=self.run_id,
            checkpoint_id=str(self.checkpoint), name=self.name,
            interventions=self.interventions, parent_branch_id=self.parent,
            project_id=self.project_id, replay_policy=self.replay_policy,
            metadata=dict(self.metadata),
            extra={"checkpointSeq": self.checkpoint} if isinstance(self.checkpoint, int) else {},
        )
        return ib.to_dict()

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any] | IsplayBranch, *, base: EventLog,
                  tenant_id: str) -> Branch:
        """A branch from a branch document (or an :class:`IsplayBranch`) over ``base``.

        Raises:
            LoadError: the document is not a valid branch (field, reason and fix named).
            TypeError: ``tenant_id`` missing.
        """
        ib = obj if isinstance(obj, IsplayBranch) else IsplayBranch.from_dict(obj)
        seq = ib.extra.get("checkpointSeq")
        return cls(base=base, run_id=ib.base_run_id, tenant_id=tenant_id,
                   checkpoint=seq if isinstance(seq, int) else ib.checkpoint_id, name=ib.name,
                   parent=ib.parent_branch_id, metadata=dict(ib.metadata),
                   interventions=ib.interventions, branch_id=ib.branch_id,
                   project_id=ib.project_id, replay_policy=ib.replay_policy)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the branch as an ``isplay.branch/v1`` JSON file; returns the path."""
        p = Path(path)
        p.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=False) + "\n",
                     encoding="utf-8")
        return p

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, base: EventLog, tenant_id: str) -> Branch:
        """Read a branch file written by :meth:`save` (or by isplay).

        Raises:
            LoadError: a bad branch file. FileNotFoundError: no such file.
        """
        return cls.from_dict(read_isplay_branch(path), base=base, tenant_id=tenant_id)

