"""Patch operations applied by branch interventions to event payloads.

Three shapes are supported (``docs/metrics.md`` and the isplay branch files use the same):

* ``replace_text`` -- ``{"op": "replace_text", "path": <pointer>,
  "value": {"search", "replacement"}}`` replaces every occurrence of ``search`` in the
  string at ``path``;
* ``mask_span`` -- ``{"op": "mask_span", "path": <pointer>, "value": {"start", "end",
  "replacement"?}}`` replaces characters ``[start, end)`` of the string at ``path``;
* RFC 6902 operations (``add``, ``remove``, ``replace``, ``move``, ``copy``, ``test``), applied
  with the maintained `jsonpatch <https://pypi.org/project/jsonpatch/>`_ library.

A failing operation never raises: the value it would have changed is kept and the failure is
returned (the replay records it on the event).
"""

from __future__ import annotations

import copy
from typing import Any

from .._json import args_hash
from ..errors import MissingExtraError

__all__ = ["apply_operations", "apply_tool_args_patch", "PATCH_RECORD_KEY"]

#: Payload key under which a replay records what an intervention did to an event.
PATCH_RECORD_KEY = "replayPatch"


def _text_op(doc: Any, op: dict[str, Any]) -> Any:
    import jsonpointer

    ptr = jsonpointer.JsonPointer(op["path"])
    current = ptr.resolve(doc)
    if not isinstance(current, str):
        raise TypeError(f"{op['path']} holds {type(current).__name__}, not a string")
    value = op.get("value") or {}
    if op["op"] == "replace_text":
        search = value.get("search")
        if not isinstance(search, str) or not search:
            raise ValueError("replace_text needs a non-empty 'search' string")
        if search not in current:
            raise ValueError(f"search text {search[:40]!r} not found at {op['path']}")
        new = current.replace(search, str(value.get("replacement", "")))
    else:
        start, end = value.get("start"), value.get("end")
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end):
            raise ValueError("mask_span needs integers 0 <= start <= end")
        if end > len(current):
            raise ValueError(f"span end {end} is beyond the text length {len(current)}")
        new = current[:start] + str(value.get("replacement", "")) + current[end:]
    out = copy.deepcopy(doc)
    ptr.set(out, new)
    return out


def apply_operations(
    doc: Any, operations: list[dict[str, Any]]
) -> tuple[Any, list[dict[str, Any]]]:
    """Apply patch operations to a JSON value; returns (new value, failures).

    Operations are applied in order; each failing one leaves the value as it was before that
    operation and adds ``{"index", "op", "path", "error"}`` to the failures. ``doc`` is not
    modified.

    Example:
        >>> apply_operations({"a": "hi there"}, [{"op": "replace_text", "path": "/a",
        ...     "value": {"search": "hi ", "replacement": ""}}])
        ({'a': 'there'}, [])
        >>> apply_operations({"a": 1}, [{"op": "remove", "path": "/b"}])[1][0]["op"]
        'remove'
    """
    try:
        import jsonpatch
    except ImportError:  # pragma: no cover - the [replay] extra
        raise MissingExtraError("branch patches", "replay", "jsonpatch") from None
    cur = doc
    failures: list[dict[str, Any]] = []
    for i, op in enumerate(operations):
        try:
            if op.get("op") in ("replace_text", "mask_span"):
                cur = _text_op(cur, op)
            else:
                cur = jsonpatch.JsonPatch([op]).apply(cur, in_place=False)
        except Exception as exc:  # noqa: BLE001 - any failure is recorded, never raised
            failures.append({"index": i, "op": op.get("op"), "path": op.get("path"),
                             "error": f"{type(exc).__name__}: {exc}"})
    return cur, failures


def apply_tool_args_patch(
    event: dict[str, Any], patch: dict[str, Any]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A tool-call event with new arguments: ``patch["args"]`` replaces them and/or
    ``patch["operations"]`` (RFC 6902) edit them; ``patch["toolName"]`` renames the tool.

    The result has ``args``, a recomputed ``argsHash`` and no ``argsArtifactId`` (it named the
    old arguments). Returns (new event, failures); ``event`` is not modified.

    Example:
        >>> ev, bad = apply_tool_args_patch({"toolName": "t", "args": {"a": 1},
        ...     "argsHash": "x", "argsArtifactId": "art"}, {"args": {"a": 2}})
        >>> ev["args"], "argsArtifactId" in ev, bad
        ({'a': 2}, False, [])
    """
    out = copy.deepcopy(event)
    failures: list[dict[str, Any]] = []
    args = patch["args"] if patch.get("args") is not None else out.get("args", {})
    if patch.get("operations"):
        args, failures = apply_operations(args, patch["operations"])
    if patch.get("toolName"):
        out["toolName"] = patch["toolName"]
    if args != event.get("args") or patch.get("args") is not None:
        out["args"] = args
        out["argsHash"] = args_hash(args)
        out.pop("argsArtifactId", None)
    return out, failures
