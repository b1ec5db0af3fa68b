"""Projections for Inspect AI eval logs (:mod:`replaykit.io.inspect`): :func:`inspect_state`.

Inspect records a sample's task state and store as JSON-patch ``changes`` on ``state`` and
``store`` events; :func:`inspect_state` applies them, so
``rk.fold(log, projections=inspect_state())`` gives the state and store at every step. It
lives with the folds (it is one), above the loader, which only parses the log.
"""

from __future__ import annotations

from typing import Any

from ._frozen import thaw
from .projection import Projection, projection, reducer

__all__ = ["inspect_state"]


def _patched(previous: Any, event: dict[str, Any], key: str) -> Any:
    """Apply one Inspect ``state``/``store`` event's JSON patch (or take sample_init's state)."""
    import jsonpatch

    from .._base.json import loads

    data = loads(event["payload"])
    if event["type"] == "sample_init":
        state = data.get("state") or {}
        return (state.get("store") or {}) if key == "store" else state
    doc = thaw(previous) if previous is not None else {}
    changes = data.get("changes") or []
    ops = [{k: v for k, v in op.items() if k != "replaced"} for op in changes]
    try:
        return jsonpatch.JsonPatch(ops).apply(doc, in_place=True)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
        raise ValueError(
            f"inspect_state: the {event['type']} event at seq {event['seq']} of run "
            f"{event['run_id']!r} does not apply to the state folded so far ({exc}); the log "
            "is missing events before it (fold the whole sample, not a slice)"
        ) from None


def _state_fn(previous: Any, event: dict[str, Any]) -> Any:
    return _patched(previous, event, "state")


def _store_fn(previous: Any, event: dict[str, Any]) -> Any:
    return _patched(previous, event, "store")


def inspect_state() -> Projection:
    """The Inspect sample's task state and store, rebuilt from the recorded JSON patches.

    Fields: ``state`` (the TaskState snapshot Inspect diffs: ``messages``, ``tools``,
    ``tool_choice``, ``store``, ``output``, ``completed``, ``metadata``; starts from the
    ``sample_init`` event's state, then each ``state`` event's ``changes`` are applied) and
    ``store`` (starts from ``sample_init``'s store, then each ``store`` event's ``changes``).
    Both are None before ``sample_init``. Uses ``jsonpatch`` (a dependency of ``inspect_ai``).

    Example:
        >>> frame = rk.fold(log, projections=inspect_state())  # doctest: +SKIP
        >>> frame.final(run_id)["store"]  # doctest: +SKIP
        {'total': 10}

    Raises (when folded):
        ValueError: a patch does not apply (the log lacks earlier events of the sample).
    """
    return projection(
        "inspect",
        state=reducer(_state_fn, types=("sample_init", "state")),
        store=reducer(_store_fn, types=("sample_init", "store")),
    )
