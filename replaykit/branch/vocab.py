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
    "MODEL_OUTPUT_KINDS",
    "PROVENANCES",
    "PROVENANCE_BADGES",
    "RFC6902_OPS",
    "SELECTOR_KEYS",
    "TEXT_OPS",
    "TOOL_POLICIES",
    "provenance_of",
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

#: Where a replayed step's content came from (``result.annotations_df().provenance``, the
#: ``replay_provenance`` column of ``result.events``, the badges of the transcript, Scrubber,
#: DiffExplorer and report), with the sentence the legend shows.
PROVENANCES: dict[str, str] = {
    "recorded": "taken from the recording: before the checkpoint, or a step whose inputs the "
                "replay reproduced exactly",
    "patched": "an intervention edited this step",
    "fixture": "a fixture answered this tool call, not the recording or a live tool",
    "policy-copy": "a model output copied from the recording because the model policy "
                   "replays recorded outputs; the model was not asked again",
    "live": "produced during the replay by a live model or tool executor",
    "blocked": "execution was blocked by the policy; the step holds an error result",
    "synthetic": "an event the replay added (an unmatched intervention, a fixture request)",
}

#: Short badge text for each provenance (what a reader sees on the step).
PROVENANCE_BADGES: dict[str, str] = {
    "recorded": "recorded", "patched": "patched", "fixture": "fixture",
    "policy-copy": "copied by policy", "live": "live", "blocked": "blocked",
    "synthetic": "added by replay",
}

#: Event kinds whose content a model produces (copied under a non-live model policy).
MODEL_OUTPUT_KINDS: tuple[str, ...] = ("model_response", "model_chunk")


def provenance_of(origin: str | None, kind: str | None) -> str:
    """The provenance of one replayed step from its replay origin and kind.

    >>> provenance_of("recorded", "model_response"), provenance_of("executor", "tool_result")
    ('policy-copy', 'live')
    >>> provenance_of("copied", "model_response")
    'recorded'
    """
    if origin == "recorded" and kind in MODEL_OUTPUT_KINDS:
        return "policy-copy"
    return {"copied": "recorded", "recorded": "recorded", "executor": "live"}.get(
        str(origin), str(origin) if origin in PROVENANCES else "recorded")
