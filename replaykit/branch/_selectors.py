"""Which recorded events an intervention or a policy selects: selectors, refs, slots."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._base.json import canonical_json

__all__ = []

_MODEL_KINDS = ("model_request", "model_response", "model_chunk")
_ARGS_KEYS = ("args", "arguments", "input")
_TOOL_KEYS = ("toolName", "tool", "tool_name")


# ------------------------------------------------------------------------- intervention matching


def _str(col: Any) -> pa.Array:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return pc.cast(arr, pa.string())


def _selector_mask(t: pa.Table, kind: str, sel: Mapping[str, Any]) -> np.ndarray:
    """Events of one run that an intervention's selector names (all keys ANDed), column-wise."""
    n = t.num_rows
    m = np.ones(n, dtype=bool)
    k = _str(t.column("kind"))
    payload = t.column("payload")

    def eq(col: str, v: Any) -> np.ndarray:
        return np.asarray(pc.fill_null(pc.equal(_str(t.column(col)), str(v)), False))

    def contains(text: str) -> np.ndarray:
        return np.asarray(pc.fill_null(pc.match_substring(payload, text), False))

    for key, v in sel.items():
        if key == "target_ref":
            m &= eq("ref_id", v)
        elif key == "target_event":
            if isinstance(v, int):
                m &= np.asarray(pc.equal(t.column("seq"), v))
            else:
                m &= eq("event_id", v)
        elif key == "target_type":
            m &= eq("type", v) | eq("kind", v)
        elif key == "target_tool":
            m &= eq("tool_name", v)
        elif key == "target_model_call":
            m &= eq("ref_id", v) & np.isin(k.to_numpy(zero_copy_only=False), _MODEL_KINDS)
        elif key == "target_artifact":
            m &= contains(canonical_json(v))
        elif key == "target_context":
            m &= contains(canonical_json({"contextId": v})[1:-1])
        elif key == "target_context_path":
            m &= contains(canonical_json({"path": v})[1:-1])
        # json_pointer is checked per candidate (below): the pointer must resolve.
    kinds = k.to_numpy(zero_copy_only=False)
    if kind == "tool_args_patch":
        m &= kinds == "tool_call"
    elif kind in ("prompt_patch", "mask") and "target_event" not in sel:
        # a prompt or mask edit aims at the request of a model call, not its result
        m &= (kinds == "model_request") | (kinds == "user_message") | ~np.isin(kinds, _MODEL_KINDS)
    ptr = sel.get("json_pointer")
    exact_refs = any(key in sel for key in _REF_SELECTORS)
    if ptr is not None or exact_refs:
        # The text tests above are a column-wise pre-filter; the few candidates left are
        # checked exactly against their parsed payload.
        import jsonpointer

        for i in np.flatnonzero(m):  # candidates only
            doc = json.loads(payload[int(i)].as_py())
            if exact_refs and not _refs_match(doc, sel):
                m[i] = False
                continue
            if ptr is not None:
                try:
                    jsonpointer.resolve_pointer(doc, ptr)
                except jsonpointer.JsonPointerException:
                    m[i] = False
    return m


_REF_SELECTORS = ("target_artifact", "target_context", "target_context_path")


def _refs_match(doc: Mapping[str, Any], sel: Mapping[str, Any]) -> bool:
    """Exact artifact / context selector semantics on one event payload.

    ``target_artifact`` matches an entry of ``artifactRefs`` (by ``artifactId``, or the entry
    itself when it is a string) or the event's ``argsArtifactId``. ``target_context`` and
    ``target_context_path`` match an entry of ``contextRefs`` by ``contextId`` and ``path``;
    given together, one entry must satisfy both.
    """
    if "target_artifact" in sel:
        want = sel["target_artifact"]
        refs = doc.get("artifactRefs") or []
        ids = {r.get("artifactId") if isinstance(r, Mapping) else r for r in refs}
        if want not in ids and doc.get("argsArtifactId") != want:
            return False
    if "target_context" in sel or "target_context_path" in sel:
        refs = [r for r in doc.get("contextRefs") or [] if isinstance(r, Mapping)]
        ok = any(
            ("target_context" not in sel or r.get("contextId") == sel["target_context"])
            and ("target_context_path" not in sel or r.get("path") == sel["target_context_path"])
            for r in refs
        )
        if not ok:
            return False
    return True


def _find(obj: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    for key in keys:
        if key in obj:
            return key, obj[key]
    return None, None


#: Codex rollout ``response_item`` types that are tool calls (their ``payload`` holds the call)
_CODEX_CALLS = ("function_call", "custom_tool_call", "local_shell_call")


def _call_block(payload: dict[str, Any], ref: Any) -> dict[str, Any] | None:
    """The object a coding-agent transcript keeps one tool call in: a Claude Code line's
    ``tool_use`` content block (``message.content[k]``, the block whose ``id`` is the row's
    ``ref_id``: one line may hold several) or a Codex rollout line's ``payload`` (a
    ``function_call`` / ``custom_tool_call`` / ``local_shell_call``). None for other
    payloads."""
    msg = payload.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if isinstance(content, list):
        uses = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
        for b in uses:
            if ref is not None and b.get("id") == ref:
                return b
        return uses[0] if len(uses) == 1 and ref is None else None
    inner = payload.get("payload")
    if isinstance(inner, dict) and inner.get("type") in _CODEX_CALLS:
        return inner
    return None


def _slot(
    payload: dict[str, Any], keys: tuple[str, ...], nested_keys: tuple[str, ...] = (),
    ref: Any = None,
) -> tuple[dict[str, Any], str | None, Any]:
    """Where a tool call keeps a field: the payload itself (pleach, isplay), its ``data``
    object (harness session logs, whose tool name is ``data.name``), or the call's block in a
    coding-agent transcript line (Claude Code ``tool_use`` blocks keep ``input`` / ``name``,
    Codex calls ``arguments`` or ``input`` / ``name``; see :func:`_call_block`, ``ref`` = the
    row's ``ref_id``). Returns (container, key, value); key is None when the field is absent
    everywhere."""
    key, value = _find(payload, keys)
    if key is not None:
        return payload, key, value
    data = payload.get("data")
    if isinstance(data, dict):
        key, value = _find(data, keys + nested_keys)
        if key is not None:
            return data, key, value
    block = _call_block(payload, ref)
    if block is not None:
        key, value = _find(block, keys + nested_keys)
        if key is not None:
            return block, key, value
    return payload, None, None


def _decoded_args(value: Any) -> tuple[Any, bool]:
    """Arguments as a JSON value, and whether the source kept them as JSON text."""
    if isinstance(value, str):
        try:
            return json.loads(value), True
        except ValueError:
            return value, False
    return value, False
