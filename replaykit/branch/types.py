"""Branch values: a branch's replay policies, its interventions and the branch document.

:class:`IsplayBranch` is a branch of a base run from one checkpoint with its
:class:`IsplayIntervention` list and optional :class:`ReplayPolicy`, in the shape of an
``isplay.branch/v1`` file (``docs/formats.md``); :meth:`IsplayBranch.from_dict` checks a parsed
document against the branch vocabulary (:mod:`replaykit.branch.vocab`) and
:func:`read_isplay_branch` reads a file (the isplay loader only parses it).
:class:`~replaykit.Branch` builds on these values.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .._base.json import json_type
from ..io.isplay import BRANCH_FORMAT, read_side_document
from ._validate import Invalid, check_patch, check_selector, want_obj, want_str
from .vocab import INTERVENTION_KINDS, MODEL_POLICIES, TOOL_POLICIES

__all__ = ["IsplayBranch", "IsplayIntervention", "ReplayPolicy", "read_isplay_branch"]


@dataclass(frozen=True)
class ReplayPolicy:
    """A branch's default replay policies (``replayPolicy`` in a branch file)."""

    model: str = "recorded-only"
    tool: str = "pause-for-fixture"

    def to_dict(self) -> dict[str, str]:
        return {"model": self.model, "tool": self.tool}


@dataclass(frozen=True)
class IsplayIntervention:
    """One targeted change of a branch: ``kind`` applied by ``patch`` where ``selector`` matches.

    ``selector`` and ``patch`` are plain JSON values (treat them as read-only); ``extra`` keeps
    fields the file had beyond the documented ones.
    """

    intervention_id: str
    kind: Literal["prompt_patch", "tool_args_patch", "json_patch", "mask"]
    selector: dict[str, Any]
    patch: dict[str, Any]
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The intervention in branch-file shape."""
        out: dict[str, Any] = {
            "interventionId": self.intervention_id,
            "kind": self.kind,
            "selector": dict(self.selector),
            "patch": self.patch,
            "description": self.description,
        }
        out.update(self.extra)
        return out


_BRANCH_KEYS = ("format", "branchId", "baseRunId", "checkpointId", "parentBranchId", "name",
                "projectId", "replayPolicy", "metadata", "interventions")
_INTERVENTION_KEYS = ("interventionId", "kind", "selector", "patch", "description")


@dataclass(frozen=True)
class IsplayBranch:
    """A branch of a base run from one checkpoint, with its interventions (immutable).

    Built by :func:`read_isplay_branch` or :meth:`from_dict`; :meth:`to_dict` gives the file
    shape back (``from_dict(b.to_dict()) == b``).

    Example:
        >>> b = IsplayBranch.from_dict({"format": "isplay.branch/v1", "branchId": "br-1",
        ...     "baseRunId": "run-1", "checkpointId": "cp-1", "name": "demo",
        ...     "interventions": []})
        >>> b.base_run_id, b.replay_policy
        ('run-1', None)
    """

    branch_id: str
    base_run_id: str
    checkpoint_id: str
    name: str
    interventions: tuple[IsplayIntervention, ...] = ()
    parent_branch_id: str | None = None
    project_id: str | None = None
    replay_policy: ReplayPolicy | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    source: str | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The branch in ``isplay.branch/v1`` file shape (optional fields only when set)."""
        out: dict[str, Any] = {
            "format": BRANCH_FORMAT,
            "branchId": self.branch_id,
            "baseRunId": self.base_run_id,
            "checkpointId": self.checkpoint_id,
            "name": self.name,
        }
        if self.parent_branch_id is not None:
            out["parentBranchId"] = self.parent_branch_id
        if self.project_id is not None:
            out["projectId"] = self.project_id
        if self.replay_policy is not None:
            out["replayPolicy"] = self.replay_policy.to_dict()
        if self.metadata:
            out["metadata"] = self.metadata
        out["interventions"] = [iv.to_dict() for iv in self.interventions]
        out.update(self.extra)
        return out

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any], *, source: str = "<dict>") -> IsplayBranch:
        """Validate a branch document (already parsed JSON) and build the branch.

        Raises:
            LoadError: naming the JSON path, e.g. ``interventions[1].selector.targetRef``, with
                reason ``unknown_kind``, ``unknown_selector_key``, ``bad_patch_op``,
                ``bad_patch``, ``unknown_policy``, ``missing_field``, ``bad_type``,
                ``duplicate_intervention_id`` or ``bad_format``.
        """
        try:
            return cls._from_dict(obj, source)
        except Invalid as exc:
            raise exc.to_load_error(source) from None

    @classmethod
    def _from_dict(cls, obj: Mapping[str, Any], source: str) -> IsplayBranch:
        if obj.get("format") != BRANCH_FORMAT:
            raise Invalid("format", "bad_format",
                          f"must be {BRANCH_FORMAT!r}, got {json_type(obj.get('format'))}",
                          f'Set "format": "{BRANCH_FORMAT}".')
        branch_id = want_str(obj, "branchId", "")
        base = want_str(obj, "baseRunId", "")
        cp = want_str(obj, "checkpointId", "")
        name = want_str(obj, "name", "")
        parent = want_str(obj, "parentBranchId", "", required=False)
        project = want_str(obj, "projectId", "", required=False)
        metadata = want_obj(obj, "metadata", "", required=False) or {}
        pol = want_obj(obj, "replayPolicy", "", required=False)
        policy = None
        if pol is not None:
            model = pol.get("model", "recorded-only")
            tool = pol.get("tool", "pause-for-fixture")
            if model not in MODEL_POLICIES:
                raise Invalid("replayPolicy.model", "unknown_policy",
                              f"must be one of {', '.join(MODEL_POLICIES)}, got "
                              f"{json_type(model)}", "Pick a model policy from the list.")
            if tool not in TOOL_POLICIES:
                raise Invalid("replayPolicy.tool", "unknown_policy",
                              f"must be one of {', '.join(TOOL_POLICIES)}, got "
                              f"{json_type(tool)}", "Pick a tool policy from the list.")
            unknown = sorted(set(pol) - {"model", "tool"})
            if unknown:
                raise Invalid(f"replayPolicy.{unknown[0]}", "unknown_field",
                              "is not a replay policy field", "Use 'model' and 'tool'.")
            policy = ReplayPolicy(model=model, tool=tool)
        ivs = obj.get("interventions", [])
        if not isinstance(ivs, list):
            raise Invalid("interventions", "bad_type", f"must be an array, got {json_type(ivs)}",
                          "List the interventions (may be empty).")
        out: list[IsplayIntervention] = []
        ids: set[str] = set()
        for k, iv in enumerate(ivs):
            where = f"interventions[{k}]"
            if not isinstance(iv, dict):
                raise Invalid(where, "not_object", f"must be an object, got {json_type(iv)}",
                              "Write each intervention as an object.")
            iid = want_str(iv, "interventionId", f"{where}.")
            assert iid is not None
            if iid in ids:
                raise Invalid(f"{where}.interventionId", "duplicate_intervention_id",
                              f"{iid!r} repeats an earlier intervention id",
                              "Give each intervention its own id.")
            ids.add(iid)
            kind = iv.get("kind")
            if kind not in INTERVENTION_KINDS:
                raise Invalid(f"{where}.kind", "unknown_kind",
                              f"must be one of {', '.join(INTERVENTION_KINDS)}, got "
                              f"{json_type(kind)}", "Pick an intervention kind from the list.")
            sel = want_obj(iv, "selector", f"{where}.")
            assert sel is not None
            selector = check_selector(sel, f"{where}.selector")
            patch = want_obj(iv, "patch", f"{where}.")
            assert patch is not None
            check_patch(kind, patch, f"{where}.patch")
            desc = want_str(iv, "description", f"{where}.", required=False, empty_ok=True) or ""
            extra = {key: v for key, v in iv.items() if key not in _INTERVENTION_KEYS}
            out.append(IsplayIntervention(iid, kind, selector, patch, desc, extra))
        assert branch_id and base and cp and name
        return cls(
            branch_id=branch_id,
            base_run_id=base,
            checkpoint_id=cp,
            name=name,
            interventions=tuple(out),
            parent_branch_id=parent,
            project_id=project,
            replay_policy=policy,
            metadata=metadata,
            extra={key: v for key, v in obj.items() if key not in _BRANCH_KEYS},
            source=source,
        )


def read_isplay_branch(path: str | os.PathLike[str]) -> IsplayBranch:
    """Read and validate an ``isplay.branch/v1`` file (a branch and its interventions).

    Every intervention is checked: ``kind`` is one of :data:`.vocab.INTERVENTION_KINDS`,
    selector keys are :data:`.vocab.SELECTOR_KEYS` (``target`` is accepted as the shortcut of
    ``target_ref``), and the patch fits its kind (RFC 6902 operations with valid JSON pointers,
    ``replace_text`` with search/replacement, ``mask_span`` with start <= end,
    ``tool_args_patch`` with ``args`` and an optional ``toolName``). Branch files are
    all-or-nothing: the first problem raises.

    Raises:
        LoadError: naming the file, the JSON path of the problem, a reason code and a fix.
        FileNotFoundError: no such file.

    Example:
        >>> b = read_isplay_branch("data/isplay/branch-drop-fraud-clause.json")  # doctest: +SKIP
        >>> [iv.kind for iv in b.interventions]  # doctest: +SKIP
        ['prompt_patch', 'mask', 'json_patch', 'tool_args_patch']
    """
    src, obj = read_side_document(path, BRANCH_FORMAT)
    return IsplayBranch.from_dict(obj, source=src)
