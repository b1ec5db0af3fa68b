"""``replaykit.branch.findings.json_changes`` as it was before issue 44 item 4 (commit
5b2e269): every pair through ``jsonpatch.make_patch``, each operation applied to a copy to
read the value it replaces. Kept here only as the reference the faster one is tested
against (``test_json_changes_fast.py``)."""

from __future__ import annotations

import copy
from typing import Any

_MISSING = object()


def _pointer_get(doc: Any, path: str) -> Any:
    import jsonpointer

    try:
        return jsonpointer.resolve_pointer(doc, path)
    except jsonpointer.JsonPointerException:
        return _MISSING


def _none(v: Any) -> Any:
    return None if v is _MISSING else v


def old_json_changes(before: Any, after: Any) -> list[dict[str, Any]]:
    import jsonpatch

    if before == after:
        return []
    if not isinstance(before, (dict, list)) or not isinstance(after, (dict, list)) \
            or type(before) is not type(after):
        return [{"path": "", "op": "changed", "before": before, "after": after}]
    rows: list[dict[str, Any]] = []
    doc = copy.deepcopy(before)
    for op in jsonpatch.make_patch(before, after).patch:
        kind, path = op["op"], op["path"]
        if kind == "replace":
            rows.append({"path": path, "op": "changed",
                         "before": _none(_pointer_get(doc, path)), "after": op["value"]})
        elif kind == "add":
            rows.append({"path": path, "op": "added", "before": None, "after": op["value"]})
        elif kind == "remove":
            rows.append({"path": path, "op": "removed",
                         "before": _none(_pointer_get(doc, path)), "after": None})
        elif kind == "move":
            moved = _none(_pointer_get(doc, op["from"]))
            rows.append({"path": op["from"], "op": "removed", "before": moved, "after": None})
            rows.append({"path": path, "op": "added", "before": None, "after": moved})
        elif kind == "copy":
            rows.append({"path": path, "op": "added", "before": None,
                         "after": _none(_pointer_get(doc, op["from"]))})
        doc = jsonpatch.apply_patch(doc, [copy.deepcopy(op)], in_place=True)
    return rows
