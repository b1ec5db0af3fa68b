"""Checks of branch and fixture documents (parsed JSON) against the branch vocabulary.

Each check raises :class:`Invalid` naming the JSON path of the problem (``interventions[1]
.selector.targetRef``), a reason code, what is wrong and a fix; the readers turn it into a
:class:`~replaykit.errors.LoadError` for their file (:meth:`Invalid.to_load_error`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._base.json import canonical_json, json_type
from ..errors import LoadError
from .vocab import KIND_OPS, SELECTOR_KEYS

__all__ = [
    "Invalid", "check_operation", "check_patch", "check_pointer", "check_selector", "want_obj",
    "want_str",
]  # fmt: skip


class Invalid(Exception):
    """A problem in a branch or fixture document: (json path, reason, detail, fix)."""

    def __init__(self, path: str, reason: str, detail: str, fix: str) -> None:
        super().__init__(path, reason, detail, fix)
        self.path, self.reason, self.detail, self.fix = path, reason, detail, fix

    def to_load_error(self, source: str) -> LoadError:
        return LoadError(source=source, line=None, field=self.path, reason=self.reason,
                         detail=self.detail, fix=self.fix)


def want_str(obj: Mapping[str, Any], key: str, where: str, *, required: bool = True,
             empty_ok: bool = False) -> str | None:
    """``obj[key]`` as a non-empty string (or empty, with ``empty_ok``); None when optional and
    absent."""
    v = obj.get(key)
    if v is None:
        if required:
            raise Invalid(f"{where}{key}", "missing_field", "is required",
                          f"Add {key!r} (a string).")
        return None
    if not isinstance(v, str):
        raise Invalid(f"{where}{key}", "bad_type",
                      f"must be a non-empty string, got {json_type(v)}",
                      f"Give {key!r} as a string.")
    if not v and not empty_ok:  # a string, but empty: say that, not "give a string"
        raise Invalid(f"{where}{key}", "empty_value", "is an empty string; it must name "
                      "something", f"Give {key!r} a non-empty value.")
    return v


def want_obj(obj: Mapping[str, Any], key: str, where: str, *, required: bool = True
             ) -> dict[str, Any] | None:
    """``obj[key]`` as a JSON object, None when optional and absent."""
    v = obj.get(key)
    if v is None:
        if required:
            raise Invalid(f"{where}{key}", "missing_field", "is required (an object)",
                          f"Add {key!r}.")
        return None
    if not isinstance(v, dict):
        raise Invalid(f"{where}{key}", "bad_type", f"must be an object, got {json_type(v)}",
                      f"Give {key!r} as a JSON object.")
    return v


_POINTER_RE = re.compile(r"^(/([^~/]|~[01])*)*$")


def check_pointer(value: Any, where: str) -> None:
    """``value`` is a JSON pointer (RFC 6901)."""
    if not isinstance(value, str) or not _POINTER_RE.match(value):
        raise Invalid(where, "bad_patch_op",
                      f"must be a JSON pointer (RFC 6901) such as '/settings/temperature', "
                      f"got {json_type(value)}",
                      "Start the pointer with '/', escape '~' as '~0' and '/' as '~1'.")


def check_operation(op: Any, where: str, allowed: tuple[str, ...], kind: str) -> None:
    """One patch operation: an op of ``allowed`` with the fields it needs."""
    if not isinstance(op, dict):
        raise Invalid(where, "bad_patch_op", f"must be an object, got {json_type(op)}",
                      'Write operations as {"op": ..., "path": ..., ...}.')
    name = op.get("op")
    if name not in allowed:
        raise Invalid(f"{where}.op", "bad_patch_op",
                      f"must be one of {', '.join(allowed)} for a {kind} intervention, "
                      f"got {json_type(name)}",
                      "Use an RFC 6902 operation, replace_text or mask_span.")
    check_pointer(op.get("path"), f"{where}.path")
    value = op.get("value")
    if name in ("add", "replace", "test") and "value" not in op:
        raise Invalid(f"{where}.value", "bad_patch_op", f"is required by op {name!r}",
                      "Add the new value.")
    if name in ("move", "copy"):
        check_pointer(op.get("from"), f"{where}.from")
    if name == "replace_text":
        if not isinstance(value, dict) or not isinstance(value.get("search"), str) \
                or not value["search"] or not isinstance(value.get("replacement"), str):
            raise Invalid(f"{where}.value", "bad_patch_op",
                          "must be {search: non-empty string, replacement: string}, got "
                          f"{json_type(value)}",
                          'Write {"search": "old text", "replacement": "new text"}.')
    if name == "mask_span":
        ok = isinstance(value, dict)
        span: dict[str, Any] = value if isinstance(value, dict) else {}
        start = span.get("start")
        end = span.get("end")
        repl = span.get("replacement", "")
        ints = all(isinstance(x, int) and not isinstance(x, bool) for x in (start, end))
        if not (ok and ints and 0 <= start <= end and isinstance(repl, str)):  # type: ignore[operator]
            raise Invalid(f"{where}.value", "bad_patch_op",
                          "must be {start: int >= 0, end: int >= start, replacement?: string}, "
                          f"got {canonical_json(value) if ok else json_type(value)}",
                          'Write {"start": 20, "end": 55, "replacement": "[MASKED]"}.')


def check_patch(kind: str, patch: dict[str, Any], where: str) -> None:
    """An intervention's ``patch`` fits its ``kind`` (:data:`.vocab.KIND_OPS`)."""
    ops = patch.get("operations")
    if kind == "tool_args_patch":
        args = patch.get("args")
        if args is None and ops is None:
            raise Invalid(where, "bad_patch", "needs 'args' (the new arguments) or "
                          "'operations' (RFC 6902 on the arguments)",
                          'Write {"toolName": "...", "args": {...}}.')
        if args is not None and not isinstance(args, dict):
            raise Invalid(f"{where}.args", "bad_type",
                          f"must be an object, got {json_type(args)}",
                          "Give the complete new arguments as an object.")
        if patch.get("toolName") is not None:
            want_str(patch, "toolName", f"{where}.")
        mode = patch.get("mode", "replace")
        if mode not in ("replace", "merge"):
            raise Invalid(f"{where}.mode", "bad_value",
                          f"must be 'replace' or 'merge', got {json_type(mode)}",
                          "Use 'replace' (args are the complete new arguments, the default) "
                          "or 'merge' (only the members named change; null removes one).")
        if mode == "merge" and args is None:
            raise Invalid(f"{where}.args", "missing_field",
                          "is required with mode 'merge' (the members to change)",
                          'Write {"mode": "merge", "args": {"member": value}}.')
        if ops is None:
            return
    elif ops is None:
        raise Invalid(f"{where}.operations", "missing_field",
                      "is required (a non-empty array of operations)",
                      'Write {"operations": [{"op": ..., "path": ..., ...}]}.')
    if not isinstance(ops, list) or not ops:
        raise Invalid(f"{where}.operations", "bad_type",
                      f"must be a non-empty array, got {json_type(ops)}",
                      "List at least one operation.")
    for k, op in enumerate(ops):
        check_operation(op, f"{where}.operations[{k}]", KIND_OPS[kind], kind)


_SELECTOR_ALIASES = {
    "target": "target_ref",
    **{"".join(w.capitalize() if i else w for i, w in enumerate(k.split("_"))): k
       for k in SELECTOR_KEYS},
}


def check_selector(sel: dict[str, Any], where: str) -> dict[str, Any]:
    """The selector with snake-case keys (``target`` -> ``target_ref``); every key known."""
    out: dict[str, Any] = {}
    if not sel:
        raise Invalid(where, "empty_selector", "names no target",
                      f"Give at least one of {', '.join(SELECTOR_KEYS)}.")
    for key, value in sel.items():
        name = key
        if key == "target":
            name = "target_ref"
            if "target_ref" in sel:
                raise Invalid(f"{where}.target", "bad_selector",
                              "duplicates target_ref (target is its shortcut)",
                              "Keep one of target / target_ref.")
        elif key not in SELECTOR_KEYS:
            hint = _SELECTOR_ALIASES.get(key)
            raise Invalid(f"{where}.{key}", "unknown_selector_key",
                          "is not a selector key" + (f" (did you mean {hint!r}?)" if hint else ""),
                          f"Use one of: {', '.join(SELECTOR_KEYS)}.")
        if name == "target_event":
            ok = (isinstance(value, str) and value) or (
                isinstance(value, int) and not isinstance(value, bool) and value >= 0)
            if not ok:
                raise Invalid(f"{where}.{key}", "bad_type",
                              f"must be an event id or a seq >= 0, got {json_type(value)}",
                              "Name the event by id (or by seq on formats without ids).")
        elif name == "json_pointer":
            check_pointer(value, f"{where}.{key}")
        elif not isinstance(value, str) or not value:
            raise Invalid(f"{where}.{key}", "bad_type",
                          f"must be a non-empty string, got {json_type(value)}",
                          "Give the selector value as a string.")
        out[name] = value
    return out
