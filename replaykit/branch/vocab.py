"""The names of branch and replay: replay policies, intervention kinds, selector keys, the
patch operations each kind may use, and fixture provenances.

One list for every user: the branch-file checks (:mod:`replaykit.branch.types`),
:func:`replaykit.replay`, fixtures, the findings and the command line's ``choices``. This module
imports nothing, so any layer may read it.

>>> "pinned-live" in MODEL_POLICIES and "pause-for-fixture" in TOOL_POLICIES
True
"""

from __future__ import annotations

__all__ = [
    "EXACT_MODEL_POLICIES",
    "EXACT_TOOL_POLICIES",
    "FIXTURE_PROVENANCES",
    "INTERVENTION_KINDS",
    "KIND_OPS",
    "LIVE_MODEL_POLICIES",
    "LIVE_TOOL_POLICIES",
    "MODEL_POLICIES",
    "RFC6902_OPS",
    "SELECTOR_KEYS",
    "TEXT_OPS",
    "TOOL_POLICIES",
]

#: Model replay policies (a branch's ``replayPolicy.model``, ``replay(model_policy=)``).
MODEL_POLICIES: tuple[str, ...] = (
    "recorded-only",
    "determinism-probe",
    "blocked",
    "pinned-live",
    "compatible-live",
)
#: Tool replay policies (a branch's ``replayPolicy.tool``, ``replay(tool_policy=)``).
TOOL_POLICIES: tuple[str, ...] = (
    "pause-for-fixture",
    "recorded-only",
    "blocked",
    "live-readonly",
    "live-explicit",
)
#: Model policies that need a ``model_executor`` (replay fails fast without one).
LIVE_MODEL_POLICIES = ("determinism-probe", "pinned-live", "compatible-live")
#: Tool policies that need a ``tool_executor``.
LIVE_TOOL_POLICIES = ("live-readonly", "live-explicit")
#: Policies under which a replay can be ``exact`` (nothing is executed live).
EXACT_MODEL_POLICIES = ("recorded-only", "blocked")
EXACT_TOOL_POLICIES = ("recorded-only", "pause-for-fixture", "blocked")

#: Intervention kinds of a branch.
INTERVENTION_KINDS: tuple[str, ...] = ("prompt_patch", "tool_args_patch", "json_patch", "mask")
#: Selector keys of an intervention (the CLI's ``--target-*`` flags in snake case).
SELECTOR_KEYS: tuple[str, ...] = (
    "target_ref",
    "target_event",
    "target_type",
    "target_tool",
    "target_model_call",
    "target_artifact",
    "target_context",
    "target_context_path",
    "json_pointer",
)

#: RFC 6902 operations (applied by jsonpatch, :mod:`replaykit.branch.patches`).
RFC6902_OPS: tuple[str, ...] = ("add", "remove", "replace", "move", "copy", "test")
#: replaykit's text operations on the string at a JSON pointer.
TEXT_OPS: tuple[str, ...] = ("replace_text", "mask_span")
#: Patch operations each intervention kind's ``patch.operations`` may use.
KIND_OPS: dict[str, tuple[str, ...]] = {
    "prompt_patch": TEXT_OPS + RFC6902_OPS,
    "json_patch": RFC6902_OPS + TEXT_OPS,
    "mask": ("mask_span", "replace_text", "replace", "remove"),
    "tool_args_patch": RFC6902_OPS,
}

#: Where a fixture's output came from.
FIXTURE_PROVENANCES: tuple[str, ...] = ("analyst", "ai", "simulator", "live")
