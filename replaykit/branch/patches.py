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

from .._base.json import args_hash
from ..errors import MissingExtraError

__all__ = ["ARGS_MODES", "apply_operations", "apply_tool_args_patch", "merge_patch",
           "PATCH_RECORD_KEY", "PATCH_RECORD_KEYS", "patch_records", "patch_records_df"]

#: How a ``tool_args_patch``'s ``args`` apply (``patch["mode"]``): ``replace`` (the default,
#: as the isplay reference: ``args`` is the complete new arguments, members it does not name
#: are dropped, with a warning) or ``merge`` (RFC 7396 JSON Merge Patch: only the members
#: named change, ``null`` removes one, nested objects merge member by member).
ARGS_MODES = ("replace", "merge")

#: Payload key under which a replay records what an intervention did to an event (replaykit
#: writes this name).
PATCH_RECORD_KEY = "replayPatch"
#: Every name a patch record is read under: replaykit's own, and ``isplayPatch``, the name
#: the isplay replay code gives the record of a failed JSON-patch operation.
PATCH_RECORD_KEYS: tuple[str, ...] = (PATCH_RECORD_KEY, "isplayPatch")


def patch_records(payload: Any) -> list[dict[str, Any]]:
    """The patch records of one event payload, read under both names
    (:data:`PATCH_RECORD_KEYS`); each record gains ``recordKey`` (the name it was under).

    >>> patch_records({"isplayPatch": {"interventionId": "iv-1", "status": "failed"}})
    [{'interventionId': 'iv-1', 'status': 'failed', 'recordKey': 'isplayPatch'}]
    """
    out: list[dict[str, Any]] = []
    if not isinstance(payload, dict):
        return out
    for key in PATCH_RECORD_KEYS:
        recs = payload.get(key)
        if recs is None:
            continue
        for r in recs if isinstance(recs, list) else [recs]:
            if isinstance(r, dict):
                out.append({**r, "recordKey": key})
    return out


def patch_records_df(log: Any) -> Any:
    """One row per patch record in a log's payloads (a replaykit replay, or an isplay replay
    export): tenant_id, run_id, seq, intervention_id, status (``applied`` / ``failed``),
    failures (JSON text; null when none), record_key (``replayPatch`` or ``isplayPatch``).

    Column-wise: only payloads that contain one of the keys are decoded.

    >>> rk.branch.patches.patch_records_df(res.events)  # doctest: +SKIP
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    from .._base.json import canonical_json, loads

    t = log.table
    cols = ["tenant_id", "run_id", "seq", "intervention_id", "status", "failures",
            "record_key"]
    m = None
    for key in PATCH_RECORD_KEYS:
        hit = pc.match_substring(t.column("payload"), f'"{key}"')
        m = hit if m is None else pc.or_(m, hit)
    rows: list[dict[str, Any]] = []
    if m is not None and t.num_rows:
        sub = t.filter(pc.fill_null(m, False))
        for tenant, run, seq, text in zip(  # candidates only
                pc.cast(sub.column("tenant_id"), pa.string()).to_pylist(),
                pc.cast(sub.column("run_id"), pa.string()).to_pylist(),
                sub.column("seq").to_pylist(), sub.column("payload").to_pylist(), strict=True):
            try:
                doc = loads(text)
            except ValueError:
                continue
            for r in patch_records(doc):
                fails = r.get("failures")
                rows.append({"tenant_id": tenant, "run_id": run, "seq": seq,
                             "intervention_id": r.get("interventionId"),
                             "status": r.get("status") or ("failed" if fails else None),
                             "failures": canonical_json(fails) if fails else None,
                             "record_key": r["recordKey"]})
    return pd.DataFrame(rows, columns=cols).astype(
        {c: "string" for c in cols if c != "seq"} | {"seq": "Int64"})


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


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON Merge Patch: ``target`` with the members ``patch`` names changed
    (``null`` removes a member; an object merges into an object member by member; any other
    value replaces). ``target`` is not modified.

    >>> merge_patch({"model": "opus", "prompt": "hi", "opts": {"a": 1, "b": 2}},
    ...             {"model": "haiku", "opts": {"b": None}})
    {'model': 'haiku', 'prompt': 'hi', 'opts': {'a': 1}}
    """
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def apply_tool_args_patch(
    event: dict[str, Any], patch: dict[str, Any], *, where: str | None = None,
    stacklevel: int = 2,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A tool-call event with new arguments: ``patch["args"]`` replaces them (``"mode":
    "replace"``, the default) or is merged into them (``"mode": "merge"``: RFC 7396, only the
    members named change, ``null`` removes one: :func:`merge_patch`), and/or
    ``patch["operations"]`` (RFC 6902) edit them; ``patch["toolName"]`` renames the tool.
    Nothing else of the event changes.

    The result has ``args``, a recomputed ``argsHash`` and no ``argsArtifactId`` (it named the
    old arguments). Returns (new event, failures); ``event`` is not modified. A replacing
    patch that drops members the call had warns (``UserWarning``, naming them and ``where``:
    the intervention and call; attributed ``stacklevel`` frames up, the caller by default),
    since a patch meant to change one member would lose the rest.

    Example:
        >>> ev, bad = apply_tool_args_patch({"toolName": "t", "args": {"a": 1},
        ...     "argsHash": "x", "argsArtifactId": "art"}, {"args": {"a": 2}})
        >>> ev["args"], "argsArtifactId" in ev, bad
        ({'a': 2}, False, [])
        >>> apply_tool_args_patch({"toolName": "Task", "args": {"model": "opus", "prompt": "p"}},
        ...     {"args": {"model": "haiku"}, "mode": "merge"})[0]["args"]
        {'model': 'haiku', 'prompt': 'p'}
    """
    out = copy.deepcopy(event)
    failures: list[dict[str, Any]] = []
    mode = patch.get("mode", "replace")
    old = event.get("args")
    if patch.get("args") is None:
        args = out.get("args", {})
    elif mode == "merge":
        if isinstance(old, dict) or old is None:
            args = merge_patch(old or {}, patch["args"])
        else:
            args = old
            failures.append({"index": None, "op": "merge", "path": "",
                             "error": f"the call's arguments are {type(old).__name__}, not an "
                                      "object: a merge patch names members of an object"})
    else:
        args = patch["args"]
        dropped = sorted(set(old) - set(args)) if isinstance(old, dict) \
            and isinstance(args, dict) else []
        if dropped:
            import warnings

            shown = ", ".join(map(str, dropped[:8])) + (
                f" and {len(dropped) - 8} more" if len(dropped) > 8 else "")
            warnings.warn(
                f"tool_args_patch{' (' + where + ')' if where else ''} replaces the whole "
                f"arguments: the call had {shown}, which the patch's args do not name, so "
                f"they are dropped. To change only the members named, give \"mode\": "
                f"\"merge\" (command line: branch intervene --merge).", UserWarning,
                stacklevel=stacklevel)
    if patch.get("operations"):
        args, failures = apply_operations(args, patch["operations"])
    if patch.get("toolName"):
        out["toolName"] = patch["toolName"]
    if args != old or (patch.get("args") is not None and mode != "merge"):
        out["args"] = args
        out["argsHash"] = args_hash(args)
        out.pop("argsArtifactId", None)
    return out, failures
