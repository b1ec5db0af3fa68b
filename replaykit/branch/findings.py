"""What a replay found, stated in sentences: the computed summary behind ``result.summary()``
and the findings box at the top of an RCA report.

Every sentence is derived from frames the result already holds (``diff_df``,
``annotations_df``, ``effects_df``, ``requirements_df``, ``metrics``), never templated from
fixed prose alone; docs/report.md shows the rule behind each one. :func:`json_changes` is the
structural JSON diff (paths, before, after) the report, the summary and the DiffExplorer share.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from .._base.envelope import (
    bookkeeping_group,
    bookkeeping_phrase,
    content_first,
    format_of,
    said_first,
    terminal_state,
)
from .._base.json import _has_long_int, gc_paused

__all__ = ["BOOKKEEPING_KEYS", "Summary", "UNSUPPORTED_COLUMNS", "changes_df",
           "content_changed", "fixture_spec", "json_changes", "summarize", "unsupported_df"]

#: Payload keys that record how the replay produced an event (not what the event says); a
#: change under them is shown in diffs but never named as a "key changed value". Each
#: format's own bookkeeping (working directory, ids, times, versions ...) is declared in
#: :data:`replaykit._base.envelope.BOOKKEEPING`, which these are part of.
BOOKKEEPING_KEYS = frozenset({"replayPatch", "argsHash", "argsArtifactId", "fixtureId",
                              "provenance", "executedBy", "blocked", "eventId", "ts"})

_MISSING = object()

#: Columns of :attr:`Summary.unsupported` (see :func:`unsupported_df`).
UNSUPPORTED_COLUMNS = ("step", "kind", "tool_name", "ref_id", "reason", "because_step",
                       "sentence")
#: unsupported findings stated one sentence each (the rest are counted in one sentence).
UNSUPPORTED_NAMED = 12

#: value changes named per event in a summary sentence.
VALUES_PER_EVENT = 3
#: events whose changed values a summary sentence names.
EVENTS_NAMED = 4


def _pointer_get(doc: Any, path: str) -> Any:
    import jsonpointer

    try:
        return jsonpointer.resolve_pointer(doc, path)
    except jsonpointer.JsonPointerException:
        return _MISSING


def json_changes(before: Any, after: Any) -> list[dict[str, Any]]:
    """The structural difference of two JSON values: one row per changed path.

    The rows of :func:`jsonpatch.make_patch` (two objects whose differences are only members
    added, removed or replaced are walked directly, with jsonpatch's order and comparisons;
    a changed list or a possible move goes through jsonpatch); each row has ``path`` (a JSON
    pointer), ``op`` (``changed``, ``added`` or ``removed``), ``before`` and ``after``
    (absent sides are None with ``op`` saying which). A move becomes a removal and an
    addition. Paths follow RFC 6902: within a list whose length changes, an index names the
    position in the list as changed by the rows before it (object keys are never
    renumbered).

    >>> for row in json_changes({"a": 1, "b": [1, 2]}, {"a": 2, "b": [1], "c": "x"}):
    ...     print(row)
    {'path': '/c', 'op': 'added', 'before': None, 'after': 'x'}
    {'path': '/a', 'op': 'changed', 'before': 1, 'after': 2}
    {'path': '/b/1', 'op': 'removed', 'before': 2, 'after': None}

    Raises:
        MissingExtraError: jsonpatch is not installed (``pip install "replaykit[replay]"``).
    """
    try:
        import jsonpatch  # noqa: F401 -- the extra's check, before any work
    except ImportError:  # pragma: no cover - jsonpatch ships with the replay extra
        from ..errors import MissingExtraError

        raise MissingExtraError("replaykit.branch.findings", "replay", "jsonpatch") from None
    return _json_changes(before, after)


def _json_changes(before: Any, after: Any, copy_values: bool = True
                  ) -> list[dict[str, Any]]:
    """:func:`json_changes`; ``copy_values=False`` lets the rows of an object pair walked
    directly hold the documents' own values (for documents decoded only to be diffed: no
    one else holds them, so a copy is wasted)."""
    import jsonpatch

    if before == after:
        return []
    if not isinstance(before, (dict, list)) or not isinstance(after, (dict, list)) \
            or type(before) is not type(after):
        return [{"path": "", "op": "changed", "before": before, "after": after}]
    if isinstance(before, dict) and type(before) is dict and isinstance(after, dict):
        # most replayed pairs: without jsonpatch
        fast = _dict_changes(before, after, copy_values)
        if fast is not None:
            return fast
    rows: list[dict[str, Any]] = []
    doc = copy.deepcopy(before)
    for op in jsonpatch.make_patch(before, after).patch:
        # RFC 6902 semantics: each path names a place in the document as patched so far,
        # so "before" is read there, then the operation is applied
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
        # in place on this call's own copy (apply_patch would copy the whole document per
        # operation: quadratic in a payload's changes); the operation is copied so a later
        # one never edits a value an earlier row holds
        doc = jsonpatch.apply_patch(doc, [copy.deepcopy(op)], in_place=True)
    return rows


def _none(v: Any) -> Any:
    return None if v is _MISSING else v


class _Unsure(Exception):
    """The documents hold something :func:`_dict_changes` leaves to jsonpatch (a list that
    differs, a member both removed and added somewhere, a value that is not plain JSON)."""


#: JSON leaves compared by ``==`` once their types match (a float by its text)
_LEAVES = (str, int, bool, type(None))
_JSON_TYPES = (*_LEAVES, float, dict, list)


def _json_equal(x: Any, y: Any) -> bool:
    """Whether jsonpatch sees no difference between two JSON values: equal as JSON text
    (``1``, ``1.0`` and ``true`` differ, and so do ``0.0`` and ``-0.0``; two NaNs are the
    same; object members in any order). Raises :class:`_Unsure` for a value that is not
    plain JSON (jsonpatch decides those)."""
    tx, ty = type(x), type(y)
    if tx not in _JSON_TYPES or ty not in _JSON_TYPES:
        raise _Unsure
    if tx is not ty:
        return False  # JSON values of different types never read the same
    if tx is float:
        return repr(x) == repr(y)  # json.dumps writes a float as its repr (NaN, Infinity)
    if tx in _LEAVES:
        return bool(x == y)
    if tx is dict:
        if any(type(k) is not str for k in x) or any(type(k) is not str for k in y):
            raise _Unsure
        return len(x) == len(y) and all(k in y and _json_equal(v, y[k]) for k, v in x.items())
    return len(x) == len(y) and all(_json_equal(a, b) for a, b in zip(x, y, strict=True))


try:  # the fast extra: JSON text in C, to tell equal values from merely == ones
    from orjson import OPT_SORT_KEYS as _SORT
    from orjson import dumps as _fast_dumps
except ImportError:  # pragma: no cover - orjson is in the fast extra
    _fast_dumps = None  # type: ignore[assignment]


def _same(x: Any, y: Any) -> bool:
    """:func:`_json_equal`, in C where it can be: values that are ``==`` are the same JSON
    when orjson writes them alike with sorted members (it tells ``1``, ``1.0``, ``true``,
    ``0.0`` and ``-0.0`` apart); values that are not ``==`` differ unless they hold a float
    (a NaN is unequal to itself); the walk decides the rest."""
    if x is y and type(x) in _JSON_TYPES:
        return True
    if x == y:
        if _fast_dumps is not None:
            try:
                return bool(_fast_dumps(x, option=_SORT) == _fast_dumps(y, option=_SORT))
            except (TypeError, ValueError):  # an integer beyond 64 bits, deep nesting ...
                pass
    elif not _holds_float(x):
        return False
    return _json_equal(x, y)


def _holds_float(v: Any) -> bool:
    t = type(v)
    if t is float:
        return True
    if t is dict:
        return any(_holds_float(x) for x in v.values())
    if t is list:
        return any(_holds_float(x) for x in v)
    return False


def _escape(key: str) -> str:
    """One object member's name in a JSON pointer (RFC 6901: ``~`` -> ``~0``, ``/`` ->
    ``~1``)."""
    return key.replace("~", "~0").replace("/", "~1")


def _as_is(v: Any) -> Any:
    return v


def _copy_json(v: Any) -> Any:
    """A copy of a JSON value (plain dicts, lists and leaves: what ``_dict_changes`` walks;
    ``copy.deepcopy`` without its generic dispatch)."""
    t = type(v)
    if t is dict:
        return {k: _copy_json(x) for k, x in v.items()}
    if t is list:
        return [_copy_json(x) for x in v]
    return v


#: the key types of an object whose members :func:`_dict_changes` walks (strings only)
_STR_KEYS = frozenset({str})


def _dict_changes(before: dict[str, Any], after: dict[str, Any], copy_values: bool = True
                  ) -> list[dict[str, Any]] | None:
    """:func:`json_changes` of two objects without jsonpatch, when the answer is certain
    to be jsonpatch's: every difference is a member added, a member removed (not both in one
    document: an added value equal to a removed one would be a move) or a value replaced,
    and no two lists differ (jsonpatch matches list items up). The rows come in jsonpatch's
    order: per object its removed members, its added members, then its common members
    depth first. None when that does not hold (the caller asks jsonpatch)."""
    rows: list[dict[str, Any]] = []
    seen = {"added": False, "removed": False}
    _copy = _copy_json if copy_values else _as_is

    def walk(path: str, src: dict[str, Any], dst: dict[str, Any]) -> None:
        # every key a str (not a subclass): the set of the key types, built in C
        if not (set(map(type, src)) <= _STR_KEYS and set(map(type, dst)) <= _STR_KEYS):
            raise _Unsure
        for k, v in src.items():
            if k not in dst:
                seen["removed"] = True
                rows.append({"path": f"{path}/{_escape(k)}", "op": "removed",
                             "before": _copy(v), "after": None})
        for k, v in dst.items():
            if k not in src:
                seen["added"] = True
                rows.append({"path": f"{path}/{_escape(k)}", "op": "added", "before": None,
                             "after": _copy(v)})
        if seen["added"] and seen["removed"]:
            raise _Unsure  # perhaps a move
        for k, x in src.items():
            if k not in dst:
                continue
            y = dst[k]
            tx, ty = type(x), type(y)
            if tx is dict and ty is dict:
                # two objects: equal ones are skipped, others walked (a walk that finds
                # nothing, e.g. NaN against NaN, adds no row, as jsonpatch's does not)
                if not (x is y or (x == y and _same(x, y))):
                    walk(f"{path}/{_escape(k)}", x, y)
            elif tx is list and ty is list:
                if not _same(x, y):
                    raise _Unsure  # jsonpatch matches list items up
            elif tx is ty and tx in _LEAVES:  # two leaves of one type (no float): by ==
                if x != y:
                    rows.append({"path": f"{path}/{_escape(k)}", "op": "changed",
                                 "before": x, "after": y})
            elif tx not in _JSON_TYPES or ty not in _JSON_TYPES:
                raise _Unsure  # not plain JSON: jsonpatch's call
            elif not _json_equal(x, y):  # a replaced value (of another type, or a leaf)
                rows.append({"path": f"{path}/{_escape(k)}", "op": "changed",
                             "before": _copy(x), "after": _copy(y)})

    try:
        walk("", before, after)
    except (_Unsure, RecursionError):
        return None
    return rows


try:  # the fast extra: the same values as json.loads wherever orjson accepts the text
    from orjson import JSONDecodeError as _FastError
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - orjson is in the fast extra
    _fast_loads = None  # type: ignore[assignment]


def _decode(payload: Any, long_int: bool | None = None) -> Any:
    """``json.loads(payload)``, or ``payload`` itself when it is not JSON text. orjson
    decodes first; text it refuses (NaN, lone surrogates, deep nesting, broken JSON) and text
    holding a run of 19 digits (an integer orjson would turn into a float) go to
    ``json.loads``, so the value is always json.loads'. ``long_int``: whether the text holds
    such a run, when the caller already knows (e.g. from one search over many texts)."""
    if not isinstance(payload, str) or not payload:
        return payload
    if _fast_loads is not None and not (_has_long_int(payload) if long_int is None
                                        else long_int):
        try:
            return _fast_loads(payload)
        except _FastError:
            pass
    try:
        return json.loads(payload)
    except ValueError:
        return payload


@functools.lru_cache(maxsize=8192)
def _is_bookkeeping(path: str, fmt: str | None = None) -> bool:
    """Whether a changed path is bookkeeping in format ``fmt``'s payloads (the replay's own
    keys, :data:`BOOKKEEPING_KEYS`, in every format; see :mod:`replaykit._base.envelope`)."""
    parts = [p for p in path.split("/") if p]
    if parts and (parts[0] in BOOKKEEPING_KEYS or parts[-1] in BOOKKEEPING_KEYS):
        return True
    return bookkeeping_group(path, fmt) is not None


def content_changed(before: Any, after: Any, fmt: str | None = None) -> bool:
    """Whether two event payloads (JSON text or values) differ outside bookkeeping members:
    the replay's keys (:data:`BOOKKEEPING_KEYS`) and, given the format ``fmt`` (the
    ``source`` column's prefix, e.g. ``"claude_code"``), that format's envelope (working
    directory, ids, times, versions ...: :data:`replaykit._base.envelope.BOOKKEEPING`).

    >>> content_changed('{"a": 1, "eventId": "x"}', '{"a": 1, "eventId": "y"}')
    False
    >>> content_changed('{"settings": {"temperature": 0.2}}', '{"settings": {"temperature": 0}}')
    True
    >>> content_changed({"cwd": "/a", "message": "hi"}, {"cwd": "/b", "message": "hi"},
    ...                 "claude_code")
    False
    """
    return _content_changes(before, after, fmt)[0]


def _content_changes(before: Any, after: Any, fmt: str | None = None,
                     long_ints: tuple[bool | None, bool | None] = (None, None),
                     on_after: Any = None) -> tuple[bool, list[dict[str, Any]]]:
    """:func:`content_changed`'s answer and the :func:`json_changes` rows it read (none
    when the decoded payloads are equal). ``long_ints``: whether each text holds a run of
    19 digits, when known (see :func:`_decode`); ``on_after``: called with the decoded
    ``after`` (what a caller reads from it besides the diff)."""
    b, a = _decode(before, long_ints[0]), _decode(after, long_ints[1])
    if on_after is not None:
        on_after(a)
    if b == a:
        return False, []
    # the decoded documents are this call's own: the rows may hold their values
    rows = _json_changes(b, a, copy_values=not (isinstance(before, str)
                                                and isinstance(after, str)))
    return any(not _is_bookkeeping(c["path"], fmt) for c in rows), rows


def _short(v: Any, limit: int = 60) -> str:
    text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True)
    if isinstance(v, str):
        text = json.dumps(v, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _label(path: str) -> str:
    """``/output/signals/1`` -> ``output.signals[1]``."""
    out = ""
    for p in (x for x in path.split("/") if x):
        p = p.replace("~1", "/").replace("~0", "~")
        out += f"[{p}]" if p.isdigit() else (f".{p}" if out else p)
    return out or "(value)"


def _count(v: Any) -> str:
    """An integer count with thousands separators (``20,766``); anything else as is."""
    try:
        return f"{int(v):,}"
    except (TypeError, ValueError):
        return str(v)


def _stamp_value(v: str) -> str:
    """A stamp value for a sentence: a run that switched value mid-run (``"a -> b"`` from
    :func:`replaykit.provenance.run_stamps`) reads ``"a, then b (switched within the run)"``."""
    steps = v.split(" -> ")
    return v if len(steps) == 1 else ", then ".join(steps) + " (switched within the run)"


def stamp_change_text(field: str, base: str, replay: str, limit: int = 40) -> str:
    """One controllable variable that differed, for the RCA summary.

    >>> stamp_change_text("temperature", "0.2", "0.0")
    'temperature 0.2 in the base, 0.0 in the replay'
    >>> stamp_change_text("model", "gpt-4o", "gpt-4o -> gpt-4.1")
    'model gpt-4o in the base, gpt-4o, then gpt-4.1 (switched within the run) in the replay'
    """
    if max(len(base), len(replay)) > limit:
        return f"{field} (text changed)"
    return f"{field} {_stamp_value(base)} in the base, {_stamp_value(replay)} in the replay"


def changes_df(result: Any) -> pd.DataFrame:
    """One row per changed JSON path of every changed aligned event of a replay.

    Rows of ``result.diff_df()`` with status ``changed`` (both sides exist) are diffed payload
    against payload with :func:`json_changes`; ``added`` / ``removed`` rows give one row with
    the whole event on one side. Columns: ``row`` (the diff_df row), ``step`` (position in the
    replayed run; for a removed event, in the base run), ``base_seq``, ``replay_seq``,
    ``kind``, ``tool_name``, ``ref_id``, ``origin`` (where the replayed event came from),
    ``status``, ``path``, ``label`` (``output.score``), ``op``, ``before``, ``after`` (JSON
    text), ``key`` (False for bookkeeping paths: the replay's own such as ``/argsHash``, see
    :data:`BOOKKEEPING_KEYS`, and the envelope the event's format declares, such as Claude
    Code's ``/cwd`` or Langfuse's ``/endTime``, see :data:`replaykit._base.envelope.BOOKKEEPING`),
    ``bookkeeping`` (the group of a bookkeeping path: ``ids``, ``times``, ``cwd`` ...; None
    for the agent's content), ``fixture_id`` and ``provenance`` (fixture-served events).

    Rows are in step order with the agent's content first: every content row (``key``), then
    every bookkeeping row, each part in step and path order. A whole event (added or
    removed) is one content row whose JSON lists the event's content members before its
    bookkeeping ones.

    Example:
        >>> ch = changes_df(done)  # doctest: +SKIP
        >>> ch.loc[ch.key, ["tool_name", "label", "before", "after"]]  # doctest: +SKIP
    """
    cols = ["row", "step", "base_seq", "replay_seq", "kind", "tool_name", "ref_id", "origin",
            "status", "path", "label", "op", "before", "after", "key", "bookkeeping",
            "fixture_id", "provenance"]
    diff = result.diff_df()
    diff = diff[diff["status"] != "same"]
    if diff.empty:
        return pd.DataFrame(columns=cols)
    base_t = _base_table(result)
    rep_t = result.events.table
    # both sides' seqs as plain ints (None: the side has no event), read column-wise
    b_seqs, r_seqs = _int_list(diff["base_seq"]), _int_list(diff["replay_seq"])
    b_have = [x for x in b_seqs if x is not None]
    r_have = [x for x in r_seqs if x is not None]
    pb = _positions_of(base_t, b_have)
    pr = _positions_of(rep_t, r_have)
    origin = _origins(result.annotations_df(), r_have)
    want_b = [pb[s] for s in b_have]
    want_r = [pr[s] for s in r_have]
    b_rows = _event_tuples(base_t, want_b)
    r_rows = _event_tuples(rep_t, want_r)
    # pairs the diff already decoded and diffed (ReplayResult._pair_changes): not again
    pair_changes = getattr(result, "_pair_changes", None) or {}
    out: dict[str, list[Any]] = {c: [] for c in cols}
    rows_k = diff.index.tolist()
    statuses = diff["status"].tolist()
    with gc_paused():  # no garbage among the rows: the cyclic collector waits
        _change_rows(out, zip(rows_k, statuses, b_seqs, r_seqs, strict=True), b_rows, r_rows,
                     pair_changes, pr, pb, origin)
    df = pd.DataFrame(out, columns=cols)
    # the agent's content first, then the envelope (a stable sort: step order within each)
    df = df.sort_values("key", ascending=False, kind="stable").reset_index(drop=True)
    return df.astype({"row": "int64", "step": "int64", "base_seq": "Int64",
                      "replay_seq": "Int64", "key": "bool", "bookkeeping": "object"})


#: the event columns :func:`_change_rows` reads, in the order of :func:`_event_tuples`' tuples
_EV_KIND, _EV_TOOL, _EV_REF, _EV_PAYLOAD, _EV_SOURCE = range(5)


def _event_tuples(t: Any, positions: list[int]) -> dict[Any, tuple[Any, ...]]:
    """``seq -> (kind, tool_name, ref_id, payload, source)`` of the events of ``t`` at
    ``positions``: one Python list per column, zipped (not a dict per row)."""
    import pyarrow as pa

    # typed positions: an empty list (only added, or only removed events) takes no rows
    sub = t.take(pa.array(positions, pa.int64())).select(
        ["seq", "kind", "tool_name", "ref_id", "payload", "source"])
    cols = []
    for col in sub.columns:  # dictionary columns decoded in Arrow (not a scalar per row)
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        cols.append(col.to_pylist())
    return {c[0]: c[1:] for c in zip(*cols, strict=True)} if cols[0] else {}


def _int_list(col: pd.Series) -> list[int | None]:
    """A column of integer values (any numeric dtype, missing values) as Python ints and
    None, without a Python step per pandas scalar."""
    import numpy as np

    missing = col.isna().to_numpy(dtype=bool)
    vals = col.fillna(0).to_numpy(dtype=np.int64).tolist()
    return [None if m else v for m, v in zip(missing.tolist(), vals, strict=True)]


def _origins(ann: pd.DataFrame, seqs: Sequence[int]) -> dict[int, str]:
    """``seq -> annotations_df().origin`` (as text) for the given replay seqs only (a seq
    annotated twice: its last row, as a dict built over every row would hold)."""
    import numpy as np

    if not len(ann) or not len(seqs):
        return {}
    keys = pd.Index(ann["seq"].to_numpy(dtype=np.int64))
    vals = ann["origin"].astype(str).to_numpy(dtype=object)
    if not keys.is_unique:
        keep = ~keys.duplicated(keep="last")
        keys, vals = keys[keep], vals[keep]
    want = np.unique(np.asarray(seqs, dtype=np.int64))
    idx = keys.get_indexer(want)
    ok = idx >= 0
    return dict(zip(want[ok].tolist(), vals[idx[ok]].tolist(), strict=True))


def _change_rows(out: dict[str, list[Any]], diff_rows: Any, b_rows: Mapping[Any, Any],
                 r_rows: Mapping[Any, Any], pair_changes: Mapping[Any, Any],
                 pr: Mapping[int, int], pb: Mapping[int, int],
                 origin: Mapping[Any, str]) -> None:
    """:func:`changes_df`'s rows, appended column-wise to ``out``: the changed paths' columns
    per change, the event's columns once per event and spread over its changes at the end
    (not appended per change); each value's JSON text once per distinct value
    (:class:`_ValueTexts`)."""
    group_of: dict[tuple[str, str | None], str | None] = {}  # per (path, format), once
    label_of: dict[str, str] = {}
    texts = _ValueTexts()
    heads: list[tuple[Any, ...]] = []
    counts: list[int] = []
    c_path, c_label, c_op = out["path"], out["label"], out["op"]
    c_before, c_after, c_key, c_group = out["before"], out["after"], out["key"], \
        out["bookkeeping"]
    c_fx, c_pv = out["fixture_id"], out["provenance"]
    for k, status, bs, rs in diff_rows:
        # changed events only (bounded by the divergence)
        b = b_rows.get(bs) if bs is not None else None
        r = r_rows.get(rs) if rs is not None else None
        ev = r if r is not None else b if b is not None else _NO_EVENT
        known = pair_changes.get((bs, rs)) if b is not None and r is not None else None
        # the replayed payload is read for its fixture id and provenance: a text that
        # cannot hold those members (no such name, no escape) is not decoded again
        rtext = r[_EV_PAYLOAD] if r is not None else None
        rp = _decode(rtext) if r is not None and (
            known is None or not isinstance(rtext, str) or "\\" in rtext
            or "fixtureId" in rtext or "provenance" in rtext) else None
        step = pr[rs] if rs is not None else pb[bs] if bs is not None else -1
        # the recording's format
        fmt = format_of((b if b is not None else ev)[_EV_SOURCE])
        fx = rp.get("fixtureId") if isinstance(rp, Mapping) else None
        pv = rp.get("provenance") if isinstance(rp, Mapping) else None
        if b is None or r is None:
            whole = rp if r is not None else _decode(b[_EV_PAYLOAD]) if b is not None \
                else None
            # (two levels: the event's members and a message's; a paused replay has a whole
            # removed event per step it did not reach)
            shown = _json(content_first(whole, fmt, depth=2), sort=False)
            c_path.append("")
            c_label.append("(whole event)")
            c_op.append("added" if r is not None else "removed")
            c_before.append(None if r is not None else shown)
            c_after.append(shown if r is not None else None)
            c_key.append(True)
            c_group.append(None)
            n = 1
        else:
            changes = known if known is not None else json_changes(_decode(b[_EV_PAYLOAD]),
                                                                    rp if rp is not None
                                                                    else _decode(rtext))
            n = len(changes)
            for c in sorted(changes, key=lambda c: c["path"]):  # reading order
                path, op = c["path"], c["op"]
                g = group_of.get((path, fmt), _MISSING)
                if g is _MISSING:
                    g = group_of[(path, fmt)] = _group(path, fmt)
                lab = label_of.get(path)
                if lab is None:
                    lab = label_of[path] = _label(path)
                c_path.append(path)
                c_label.append(lab)
                c_op.append(op)
                c_before.append(None if op == "added" else texts(c["before"], fmt, path))
                c_after.append(None if op == "removed" else texts(c["after"], fmt, path))
                c_key.append(g is None)
                c_group.append(g)
        if n:
            heads.append((int(k), step, bs, rs, ev[_EV_KIND], ev[_EV_TOOL], ev[_EV_REF],
                          origin.get(rs) if rs is not None else None, status))
            counts.append(n)
            c_fx.extend([fx] * n)
            c_pv.extend([pv] * n)
    # each event's columns, once per changed path of it
    for i, c in enumerate(_HEAD_COLS):
        col = out[c]
        for h, n in zip(heads, counts, strict=True):
            col.extend([h[i]] * n)


#: the columns of a diff row with no event on either side
_NO_EVENT = (None, None, None, None, None)


class _ValueTexts:
    """:func:`_value_json`, remembered per distinct value: a leaf by its type and value (not
    a zero float: ``0.0`` and ``-0.0`` are equal keys with different texts), an object or list by
    (format, path, its exact JSON text from orjson). Values orjson cannot write exactly (a
    NaN or infinity reads ``null`` there; integers beyond 64 bits, non-string keys) are not
    remembered, only computed."""

    def __init__(self) -> None:
        self._leaf: dict[tuple[type, Any], str] = {}
        self._tree: dict[tuple[str | None, str, bytes], str] = {}

    def __call__(self, v: Any, fmt: str | None, path: str) -> str:
        t = type(v)
        # (a float equal to another is the same float, and reads the same, unless it is a
        # zero: 0.0 == -0.0; a NaN never finds itself)
        if t is str or t is int or t is bool or v is None or (t is float and v != 0.0):
            lk = (t, v)
            got = self._leaf.get(lk)
            if got is None:
                got = self._leaf[lk] = _json(v)
            return got
        if (t is dict or t is list) and _fast_dumps is not None:
            try:
                raw = _fast_dumps(v)
            except (TypeError, ValueError):
                return _value_json(v, fmt, path)
            if b"null" in raw:  # perhaps a NaN or an infinity (orjson writes null)
                return _value_json(v, fmt, path)
            tk = (fmt, path, raw)
            got = self._tree.get(tk)
            if got is None:
                got = self._tree[tk] = _value_json(v, fmt, path)
            return got
        return _value_json(v, fmt, path)


_HEAD_COLS = ("row", "step", "base_seq", "replay_seq", "kind", "tool_name", "ref_id",
              "origin", "status")
_CHANGE_COLS = ("path", "label", "op", "before", "after", "key", "bookkeeping",
                "fixture_id", "provenance")


def _group(path: str, fmt: str | None) -> str | None:
    """The bookkeeping group of a changed path (None: the agent's content)."""
    parts = [p for p in path.split("/") if p]
    if parts and (parts[0] in BOOKKEEPING_KEYS or parts[-1] in BOOKKEEPING_KEYS):
        return bookkeeping_group(path, fmt) or "replay"
    return bookkeeping_group(path, fmt)


def _value_json(v: Any, fmt: str | None, path: str) -> str:
    """A changed value's JSON text: an object lists its content members first (sorted),
    its bookkeeping members after (see :func:`replaykit._base.envelope.content_first`)."""
    if isinstance(v, (dict, list)):
        return _json(content_first(v, fmt, path), sort=False)
    return _json(v)


#: ``json.dumps(v, ensure_ascii=False, sort_keys=...)``'s encoders, built once (dumps builds
#: one per call when given options)
_ENCODERS = {True: json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode,
             False: json.JSONEncoder(ensure_ascii=False, sort_keys=False).encode}


def _json(v: Any, sort: bool = True) -> str:
    return _ENCODERS[sort](v)


def _base_table(result: Any) -> Any:
    return _base_table_log(result).table


def _base_table_log(result: Any) -> Any:
    """The base run of ``result`` as an EventLog."""
    view = getattr(result, "_base_run", None)  # a ReplayResult's one view of it
    if callable(view):
        return view()
    b = result.branch
    return result.base.run(b.run_id, tenant_id=b.tenant_id) if b is not None else result.base


def _positions(t: Any) -> dict[int, int]:
    return {int(s): i for i, s in enumerate(t.column("seq").to_pylist())}


def _positions_of(t: Any, seqs: Any) -> dict[int, int]:
    """``_positions(t)`` for the given seqs only (those in ``t``), looked up column-wise."""
    import numpy as np

    want = np.asarray(seqs.to_numpy(dtype=np.int64) if isinstance(seqs, pd.Series)
                      else [int(s) for s in seqs], dtype=np.int64)
    idx = pd.Index(t.column("seq").to_numpy())
    if not idx.is_unique:  # a seq twice: the dict keeps its last position
        full = _positions(t)
        return {int(s): full[int(s)] for s in want if int(s) in full}
    pos = idx.get_indexer(want)
    return dict(zip(want[pos >= 0].tolist(), pos[pos >= 0].tolist(), strict=True))


def fixture_spec(result: Any, requirement: Mapping[str, Any]) -> dict[str, Any]:
    """An ``isplay.fixtures/v1`` entry that would satisfy one open requirement of a replay.

    Matched by the call's arguments hash and scoped to the branch; ``output`` is left for the
    author to fill in (``"<the tool's output>"``), provenance ``analyst``.

    Example:
        >>> req = paused.requirements_df().iloc[0]  # doctest: +SKIP
        >>> fixture_spec(paused, req)["matcher"]  # doctest: +SKIP
        {'argsHash': '87529baee44bed63b2c011e2e53c3540'}
    """
    branch = result.branch
    bdict = branch.to_dict() if branch is not None else (getattr(result, "branch_dict", None)
                                                          or {})
    spec: dict[str, Any] = {
        "fixtureId": f"fx-{requirement['requirement_id']}",
        "projectId": bdict.get("projectId") or "",
        "toolName": requirement["tool_name"],
    }
    if bdict.get("branchId"):
        spec["scope"] = {"branchId": bdict["branchId"]}
    spec["matcher"] = {"argsHash": requirement["args_hash"]}
    spec["output"] = "<the tool's output for these arguments>"
    spec["provenance"] = "analyst"
    spec["note"] = (f"answers call {requirement['ref_id']} with arguments "
                    f"{requirement['args']}")
    return spec


# ------------------------------------------------------------------------------- summary
class Summary:
    """The computed findings of a replay: sentences grouped as outcome, evidence, caveats
    and open requirements, each naming the report section that holds its evidence.

    ``text`` is the summary as plain text; :meth:`to_frame` one row per sentence (``kind``,
    ``sentence``, ``section``, ``derived_from``); ``values`` the key changed values the outcome
    names (a DataFrame, rows of :func:`changes_df`).

    Example:
        >>> s = done.summary()  # doctest: +SKIP
        >>> print(s.text)  # doctest: +SKIP
        >>> s.to_frame()  # doctest: +SKIP
    """

    KINDS = ("answer", "outcome", "unsupported", "evidence", "caveat", "requirement")
    TITLES = {"answer": "Answer", "outcome": "Outcome",
              "unsupported": "Unsupported by the replay", "evidence": "Strength of evidence",
              "caveat": "Caveats", "requirement": "Open requirements"}

    def __init__(self, rows: Sequence[Mapping[str, Any]], values: pd.DataFrame,
                 requirements: Sequence[Mapping[str, Any]] = (),
                 unsupported: pd.DataFrame | None = None) -> None:
        self.rows = [dict(r) for r in rows]
        self.values = values
        self.requirements = [dict(r) for r in requirements]
        self.unsupported = (unsupported if unsupported is not None
                            else pd.DataFrame(columns=list(UNSUPPORTED_COLUMNS)))

    @property
    def answer(self) -> str:
        """The one sentence that answers the replay's question (changed / unchanged /
        undetermined, and why); the first line of :attr:`text` and of the report's findings.
        """
        s = self.sentences("answer")
        return s[0] if s else ""

    @property
    def verdict(self) -> str:
        """``changed``, ``unchanged`` or ``undetermined`` (the answer's first word)."""
        return self.answer.split(":", 1)[0].strip().lower()

    @property
    def counts(self) -> dict[str, int]:
        """Findings per kind, e.g. ``{"unsupported": 5, "caveat": 1, ...}`` (every kind;
        ``unsupported`` counts every row of :attr:`unsupported`, also those a long replay
        summarises in one sentence)."""
        out = {k: len(self.sentences(k)) for k in self.KINDS}
        out["unsupported"] = max(out["unsupported"], len(self.unsupported))
        return out

    def sentences(self, kind: str) -> list[str]:
        """The sentences of one kind, in order."""
        return [r["sentence"] for r in self.rows if r["kind"] == kind]

    @property
    def text(self) -> str:
        parts = [self.answer] if self.answer else []
        for kind in self.KINDS[1:]:
            s = self.sentences(kind)
            if s:
                title = self.TITLES[kind] + (f" ({len(s):,})" if kind == "unsupported" else "")
                parts.append(f"{title}:\n" + "\n".join(f"  - {x}" for x in s))
        return "\n".join(parts)

    def to_frame(self) -> pd.DataFrame:
        """One row per sentence: kind, sentence, section (report anchor), derived_from."""
        return pd.DataFrame(self.rows, columns=["kind", "sentence", "section", "derived_from"])

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Summary({len(self.rows)} sentences)\n{self.text}"

    def _repr_html_(self) -> str:
        import html

        out = ["<div class='replaykit-summary'>"]
        if self.answer:
            out.append(f"<p class='rk-answer'><b>{html.escape(self.answer)}</b></p>")
        for kind in self.KINDS[1:]:
            s = self.sentences(kind)
            if s:
                title = self.TITLES[kind] + (f" ({len(s):,})" if kind == "unsupported" else "")
                out.append(f"<b>{title}</b><ul>"
                           + "".join(f"<li>{html.escape(x)}</li>" for x in s) + "</ul>")
        out.append("</div>")
        return "".join(out)


def _named(v: Any) -> Any:
    """A JSON object that names itself (a tool definition, a message) by its name."""
    if isinstance(v, Mapping) and isinstance(v.get("name"), str):
        return v["name"]
    return v


def _phrase_value(raw: str, limit: int) -> str:
    """One value of a changes_df row for a sentence: a named object by its name, another
    object or list as its JSON text cut (members in changes_df's order: content first),
    a scalar as JSON."""
    v = _named(json.loads(raw))
    return _cut_raw(raw, limit) if isinstance(v, (dict, list)) else _short(v, limit)


def _values_phrase(rows: pd.DataFrame, limit: int = 60, n: int = VALUES_PER_EVENT) -> str:
    parts = []
    for r in rows.head(n).itertuples(index=False):
        long_ = max(len(str(r.before or "")), len(str(r.after or ""))) > limit
        if long_ and limit < 60:  # a long text reads better named than cut
            parts.append(f"{r.label} ({'text ' if r.op == 'changed' else ''}{r.op})")
        elif r.path == "":  # a whole event: its JSON as changes_df orders it (content first)
            parts.append(f"{r.label} {_cut_raw(r.after if r.op == 'added' else r.before, limit)}"
                         f" {r.op}")
        elif r.op == "changed":
            parts.append(f"{r.label} {_phrase_value(r.before, limit)} \u2192 "
                         f"{_phrase_value(r.after, limit)}")
        elif r.op == "added":
            parts.append(f"{r.label} {_phrase_value(r.after, limit)} added")
        else:
            parts.append(f"{r.label} {_phrase_value(r.before, limit)} removed")
    more = len(rows) - n
    if more > 0:
        parts.append(f"{more} more")
    return ", ".join(parts)


def _said_first(vals: pd.DataFrame) -> pd.DataFrame:
    """``vals`` in :func:`replaykit._base.envelope.said_first` order (arguments, outputs and
    text first; new values before removed ones)."""
    if len(vals) < 2:
        return vals
    return vals.iloc[said_first(vals["path"].astype(str).tolist(),
                                vals["op"].astype(str).tolist())]


def _content_phrase(result: Any, ev: Any, vals: pd.DataFrame, limit: int = 60,
                    n: int = VALUES_PER_EVENT, where: bool = True) -> str:
    """What changed in one event, as the agent's content: its changed values (arguments,
    outputs and text first), or for a whole event only one side has, what it says (a call's
    arguments, a message's text), not its envelope."""
    whole = vals[vals["path"] == ""] if len(vals) else vals
    if not len(whole) or len(whole) < len(vals):
        return _values_phrase(_said_first(vals), limit, n)
    r = whole.iloc[0]
    seq = r["replay_seq"] if r["op"] == "added" else r["base_seq"]
    t = result.events.table if r["op"] == "added" else _base_table(result)
    text = None
    if not pd.isna(seq):
        pos = _positions_of(t, [int(seq)])
        if int(seq) in pos:
            text = t.column("text")[pos[int(seq)]].as_py()
    # a removed event's source phrase says "in the recording only" already
    tail = " (an event the recording does not have)" if where and r["op"] == "added" else ""
    if isinstance(text, str) and text.strip():
        return f"{_short(_decode(text), limit)}{tail}"
    return f"{_cut_raw(r['after'] if r['op'] == 'added' else r['before'], limit)}{tail}"


def _lead_value(result: Any, ev: Any, vals: pd.DataFrame, limit: int = 40) -> str:
    """The one value an answer line names: the event's first change of what the agent
    sent or got, its new value only (``output.score \u2192 0.34``)."""
    said = _said_first(vals)
    if not len(said) or said["path"].iloc[0] == "":  # a whole event: what it says, in full
        return _content_phrase(result, ev, vals, limit + 20, 1, where=False)
    r = said.iloc[0]
    if r["op"] == "changed":
        was = _phrase_value(r["before"], limit)  # a short old value is named too
        return (f"{r['label']} {was + ' ' if len(was) <= 20 else ''}\u2192 "
                f"{_phrase_value(r['after'], limit)}")
    if r["op"] == "added":
        return f"{r['label']} {_phrase_value(r['after'], limit)} added"
    return f"{r['label']} {_phrase_value(r['before'], limit)} removed"


def _cut_raw(text: Any, limit: int) -> str:
    """JSON text cut to ``limit`` characters as it is (its members keep their order: a whole
    event's JSON lists its content first)."""
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _source_phrase(result: Any, ev: Any, patched_by: Mapping[int, list[str]]) -> str:
    origin = ev.origin
    if origin == "fixture":
        fx = next((f for f in result.fixtures if f.fixture_id == ev.fixture_id), None)
        who = f", by {fx.created_by}" if fx is not None and fx.created_by else ""
        return (f"served by fixture {ev.fixture_id} (provenance {ev.provenance}{who}), not by "
                "the recording or a live tool")
    if origin == "patched":
        ivs = patched_by.get(int(ev.replay_seq), []) if not pd.isna(ev.replay_seq) else []
        return "patched by intervention " + ", ".join(ivs) if ivs else "patched"
    if origin == "executor":
        return f"from a live executor (policy {result.model_policy}/{result.tool_policy})"
    if origin == "blocked":
        return "an error result: execution blocked by the tool policy"
    if origin == "synthetic":
        return "a synthetic event the replay added"
    if origin in ("recorded", "copied"):
        return "recorded"
    if not isinstance(origin, str):
        return "in the recording only" if ev.status == "removed" else "not in the recording"
    return origin


class _PatchedBy(Mapping[int, list[str]]):
    """replay seq -> ids of the interventions applied to that event (from ``replayPatch``),
    read when asked: the findings name a few events, so a replay with many patched events
    decodes only the payloads of those."""

    def __init__(self, result: Any) -> None:
        ann = result.annotations_df()
        self._seqs = ann.loc[ann["origin"] == "patched", "seq"].astype("int64").tolist()
        self._known = set(self._seqs)
        self._t = result.events.table
        self._pos: dict[int, int] | None = None
        self._got: dict[int, list[str]] = {}

    def __getitem__(self, s: int) -> list[str]:
        from .patches import PATCH_RECORD_KEY

        if s not in self._known:
            raise KeyError(s)
        got = self._got.get(s)
        if got is None:
            if self._pos is None:
                self._pos = _positions_of(self._t, self._seqs)
            doc = _decode(self._t.column("payload")[self._pos[s]].as_py())
            recs = doc.get(PATCH_RECORD_KEY, []) if isinstance(doc, Mapping) else []
            got = self._got[s] = [str(r.get("interventionId")) for r in recs
                                  if r.get("status") == "applied"]
        return got

    def __iter__(self) -> Any:
        return iter(self._seqs)

    def __len__(self) -> int:
        return len(self._known)


def _patched_by(result: Any) -> Mapping[int, list[str]]:
    """replay seq -> ids of the interventions applied to that event (from ``replayPatch``),
    each decoded on first use."""
    return _PatchedBy(result)


#: Event kinds a run's terminal state is not read from when they trail its last agent event
#: (a Claude Code file-history snapshot, a Codex token count, a checkpoint): the format's
#: envelope, not how the agent ended. An error among them still counts.
ENVELOPE_KINDS = ("other", "checkpoint", "intervention", "step_end", "turn_start",
                  "step_start")


def _terminal(t: Any) -> tuple[str | None, Any]:
    """(how the run ended, in words; payload) from a run's last agent event: trailing
    envelope events (:data:`ENVELOPE_KINDS`, unless they record an error) are passed over;
    see :func:`replaykit._base.envelope.terminal_state`."""
    import numpy as np
    import pyarrow.compute as pc

    if not t.num_rows:
        return None, None
    kinds = pc.cast(t.column("kind"), "string")
    agent = pc.or_(pc.invert(pc.fill_null(pc.is_in(kinds, value_set=_ENV_SET), False)),
                   pc.fill_null(t.column("is_error"), False))
    hits = np.flatnonzero(np.asarray(agent, dtype=bool))
    at = int(hits[-1]) if len(hits) else t.num_rows - 1
    cols = [c for c in ("kind", "payload", "finish", "is_error", "tool_name", "text", "type",
                        "ref_id") if c in t.column_names]
    last = t.slice(at, 1).select(cols).to_pylist()[0]
    doc = _decode(last["payload"])
    raw = _raw_finish(doc)
    if raw is None and last.get("finish") and last.get("ref_id") is not None:
        # a streamed message records its stop reason on one of its lines (Claude Code):
        # the call's other rows, latest first
        same = np.flatnonzero(np.asarray(pc.fill_null(pc.equal(
            pc.cast(t.column("ref_id"), "string"), last["ref_id"]), False), dtype=bool))
        for p in same[::-1][:16].tolist():
            raw = _raw_finish(_decode(t.column("payload")[p].as_py()))
            if raw is not None:
                break
    return terminal_state(last.get("kind"), finish=last.get("finish"),
                          raw_finish=raw, is_error=bool(last.get("is_error")),
                          tool_name=last.get("tool_name"), text=last.get("text"),
                          type_=last.get("type"), payload=doc), doc


def _raw_finish(doc: Any) -> str | None:
    """The stop reason as the source spells it (``end_turn``), where the payload has one."""
    if not isinstance(doc, Mapping):
        return None
    for box in (doc, doc.get("message"), doc.get("output"), doc.get("data")):
        if isinstance(box, Mapping):
            for k in ("stop_reason", "finish_reason", "finishReason", "stopReason", "finish"):
                if isinstance(box.get(k), str) and box[k]:
                    return str(box[k])
    return None


def _envelope_set() -> Any:
    import pyarrow as pa

    return pa.array(list(ENVELOPE_KINDS), pa.string())


_ENV_SET = _envelope_set()


def _outcome_value(doc: Any) -> str | None:
    if isinstance(doc, Mapping):
        for k in ("outcome", "status", "result", "output"):
            if k in doc and isinstance(doc[k], (str, int, float, bool)):
                return f"{k} {_short(doc[k], 40)}"
    return None


def _offered_tools(doc: Any) -> list[str] | None:
    """Names of the tools a model request offers, or None when it does not say (no
    ``tools`` list at the top of the payload or under ``settings`` / ``request`` /
    ``data`` / ``params``). Entries may be names, ``{"name": ...}``, ``{"toolName": ...}`` or
    ``{"function": {"name": ...}}``.

    >>> _offered_tools({"tools": [{"name": "a"}, {"function": {"name": "b"}}, "c"]})
    ['a', 'b', 'c']
    >>> _offered_tools({"prompt": "hi"}) is None
    True
    """
    # (decoded JSON is plain dicts, lists and strings: exact type checks first, the abstract
    # Mapping check, which is slow, only for anything else)
    if type(doc) is not dict and not isinstance(doc, Mapping):
        return None
    listed = doc.get("tools")
    for k in ("settings", "request", "data", "params"):
        if not isinstance(listed, list) and isinstance(doc.get(k), Mapping):
            listed = doc[k].get("tools")
    if not isinstance(listed, list):
        return None
    names = []
    for t in listed:
        if isinstance(t, str):
            names.append(t)
        elif type(t) is dict or isinstance(t, Mapping):
            fn = t.get("function")
            name = t.get("name") or t.get("toolName") or (
                fn.get("name") if isinstance(fn, Mapping) else None)
            if isinstance(name, str):
                names.append(name)
    return names


def unsupported_df(result: Any, *, changes: pd.DataFrame | None = None) -> pd.DataFrame:
    """Conclusions the replay cannot support, one row per step (kind "unsupported").

    Three rules, from the frames the result holds:

    * ``copied_output``: a model output copied from the recording (provenance
      ``policy-copy``) after an earlier step of the replay changed -- its own request
      (inputs, parameters, offered tools) or anything the model had seen before it. The
      model was never asked again, so what it answered is the recording's, not evidence.
    * ``tool_not_offered``: a tool call to a tool that the model request before it (changed
      by the replay) no longer offers.
    * ``fixture_args``: a fixture matched on a subset of the arguments answered a call
      whose arguments hold more than that subset: it was not recorded for these arguments.

    Columns: :data:`UNSUPPORTED_COLUMNS` (``step`` is the position in the replayed run,
    ``because_step`` the changed step that makes it unsupported, when there is one).

    Example:
        >>> unsupported_df(done)[["step", "reason"]]  # doctest: +SKIP
    """
    import numpy as np
    import pyarrow as pa

    cols = list(UNSUPPORTED_COLUMNS)
    t = result.events.table
    n = t.num_rows
    if not n:
        return pd.DataFrame(columns=cols)
    diff = result.diff_df()
    at = diff["replay_seq"].astype("Float64").bfill()  # removed rows: the next replay step
    hot = diff["status"] != "same"
    changed_at = np.unique(at[hot & at.notna()].astype("int64").to_numpy())
    if not len(changed_at):
        return pd.DataFrame(columns=cols)
    ch = changes_df(result) if changes is None else changes
    ann = result.annotations_df()
    prov = np.full(n, "recorded", dtype=object)
    ok = ann["seq"].notna() & (ann["seq"] < n)
    prov[ann.loc[ok, "seq"].astype("int64").to_numpy()] = ann.loc[ok, "provenance"].astype(
        str).to_numpy()
    ev = t.select(["kind", "tool_name", "ref_id"]).to_pandas()
    kind = ev["kind"].astype(str).to_numpy()
    ref = ev["ref_id"].astype(object).to_numpy()
    tool = ev["tool_name"].astype(object).to_numpy()
    pos = np.arange(n)
    changed = np.zeros(n, dtype=bool)
    changed[changed_at[changed_at < n]] = True
    # the latest changed step strictly before each position (-1: none)
    before = np.r_[-1, np.maximum.accumulate(np.where(changed, pos, -1))[:-1]]
    mp = result.model_policy
    rows: list[dict[str, Any]] = []

    # each step's distinct labels of key changes, in order: one pass over the changes (a
    # mask over all of them per step made the report quadratic in the changed steps)
    labels_of: dict[int, dict[Any, None]] = {}
    if len(ch):
        key_rows = ch.loc[ch["key"], ["step", "label"]]
        for s_, lab_ in zip(key_rows["step"].tolist(), key_rows["label"].tolist(),
                            strict=True):
            labels_of.setdefault(s_, {})[lab_] = None

    def labels(step: int) -> str:
        lab = list(labels_of.get(step, ()))
        more = f", +{len(lab) - 3} more" if len(lab) > 3 else ""
        return ", ".join(lab[:3]) + more

    # 1. copied model outputs after a change (one row per model call)
    req_pos = pos[kind == "model_request"]
    req_of: dict[Any, list[int]] = {}
    for q in req_pos.tolist():
        req_of.setdefault(ref[q], []).append(q)
    cand = pos[(prov == "policy-copy") & (before >= 0)]
    seen: set[Any] = set()
    for p in cand.tolist():
        key = ref[p] if ref[p] is not None else ("pos", p)
        if key in seen:
            continue
        seen.add(key)
        qs = [q for q in req_of.get(ref[p], []) if q < p] if ref[p] is not None else []
        q = qs[-1] if qs else None
        if q is not None and changed[q]:
            said = labels(q)
            why = f"its request at step {q:,} changed" + (f" ({said})" if said else "")
            because = q
        else:
            because = int(before[p])
            why = f"step {because:,} ({kind[because]}) changed before it"
        call = f" of model call {ref[p]}" if ref[p] is not None else ""
        rows.append({"step": p, "kind": kind[p], "tool_name": None, "ref_id": ref[p],
                     "reason": "copied_output", "because_step": because,
                     "sentence": f"Step {p:,} ({kind[p]}{call}) is copied from the recording "
                                 f"under the {mp} model policy, but {why}: the model was not "
                                 "asked again, so the replay does not show what it would "
                                 "answer now."})

    # 2. tool calls to a tool the (changed) request before them no longer offers
    calls = pos[(kind == "tool_call") & (before >= 0)]
    if len(calls) and len(req_pos):
        last_req = np.searchsorted(req_pos, calls) - 1
        offered: dict[int, list[str] | None] = {}
        # the payload texts of the changed requests before a call, taken in one go (not a
        # scalar per request out of a chunked column)
        qs_ = np.unique(req_pos[last_req[last_req >= 0]])
        qs_ = qs_[changed[qs_]]
        # the diff decoded most of them already and kept their offered tools, by row
        known: Mapping[int, list[str] | None] = getattr(result, "_request_tools", None) or {}
        for q in qs_.tolist():
            if q in known:
                offered[q] = known[q]
        qs_ = qs_[[q not in offered for q in qs_.tolist()]] if len(qs_) else qs_
        texts = dict(zip(qs_.tolist(), t.column("payload").take(pa.array(
            qs_, pa.int64())).to_pylist(), strict=True))
        for p, k in zip(calls.tolist(), last_req.tolist(), strict=True):
            if k < 0 or not isinstance(tool[p], str):
                continue
            q = int(req_pos[k])
            if not changed[q]:
                continue  # the request is the recorded one: the recording offered the tool
            if q not in offered:
                offered[q] = _offered_tools(_decode(texts[q]))
            names = offered[q]
            if names is None or tool[p] in names:
                continue
            how = ("is copied from the recording" if prov[p] in ("recorded", "patched")
                   else f"came from the replay ({prov[p]})")
            rows.append({"step": p, "kind": "tool_call", "tool_name": tool[p], "ref_id": ref[p],
                         "reason": "tool_not_offered", "because_step": q,
                         "sentence": f"Step {p:,} calls {tool[p]}, which the replayed request "
                                     f"at step {q:,} no longer offers (it offers "
                                     f"{', '.join(names) or 'no tools'}); the call {how}, so "
                                     f"the replay does not show the model would still call "
                                     f"{tool[p]}."})

    # 3. fixtures matched on part of the arguments
    eff = result.effects_df()
    fx_rows = eff[eff["action"] == "fixture"] if len(eff) else eff
    by_id = {f.fixture_id: f for f in result.fixtures}
    for r in fx_rows.itertuples(index=False):
        fx = by_id.get(r.fixture_id)
        if fx is None or fx.args_subset is None:
            continue
        call_pos = pos[(kind == "tool_call") & (ref == r.ref_id)]
        if not len(call_pos):
            continue
        p = int(call_pos[-1])
        doc = _decode(t.column("payload")[p].as_py())
        args = None
        if isinstance(doc, Mapping):
            args = next((doc[k] for k in ("args", "arguments", "input") if k in doc), None)
            args = _decode(args) if isinstance(args, str) else args
        extra = sorted(set(args) - set(fx.args_subset)) if isinstance(args, Mapping) else []
        if isinstance(args, Mapping) and not extra:
            continue
        what = (f"also passes {', '.join(extra)}" if extra else "has arguments it cannot read")
        rows.append({"step": p + 1 if p + 1 < n else p, "kind": "tool_result",
                     "tool_name": r.tool_name, "ref_id": r.ref_id, "reason": "fixture_args",
                     "because_step": p,
                     "sentence": f"Fixture {fx.fixture_id} answered {r.tool_name} (call "
                                 f"{r.ref_id} at step {p:,}) matching only "
                                 f"{_short(dict(fx.args_subset), 60)}; the call {what}, for "
                                 "which the fixture was not recorded, so its output is not "
                                 "evidence for these arguments."})
    out = pd.DataFrame(rows, columns=cols)
    return out.sort_values("step", kind="stable").reset_index(drop=True).astype(
        {"step": "int64", "because_step": "Int64"})


def _answer(result: Any, *, stopped: bool, first: int, n_changed: int, same: bool | None,
            base_end: str, rep_end: str, uns: pd.DataFrame, lead: str = "") -> str:
    """The one-sentence answer (see docs/report.md, "The answer line"). ``lead``: the
    first change of the agent's content the findings name (a tool called with other
    arguments, a result, a message); the answer opens with it."""
    after = f"after {lead}, " if lead else ""
    if stopped:
        return (f"Undetermined: the replay {result.status} before the run ended, so it does "
                "not say whether the outcome changes (see the open requirements).")
    if n_changed == 0:
        return ("Unchanged: the replay reproduces the recording field for field; the "
                "interventions changed nothing observable under these policies.")
    if not same:
        tail = ""
        if len(uns):
            tail = (f", though {len(uns):,} step(s) after the change are not supported by "
                    "the replay (see below)")
        return (f"Changed: {after}the run ends differently ({rep_end} instead of {base_end} "
                f"in the recording){tail}.")
    if len(uns):
        tc = uns[uns["reason"] == "tool_not_offered"]
        cp = uns[uns["reason"] == "copied_output"]
        if len(tc):
            last = tc.iloc[-1]
            why = (f"the call to {last['tool_name']} at step {int(last['step']):,} is copied "
                   "from the recording although the replayed request no longer offers that "
                   f"tool; the replay does not show the model would still call it")
        elif len(cp):
            why = (f"the model output(s) after step {first:,} are copied from the recording "
                   "although their inputs changed; the replay does not show the model would "
                   "decide the same")
        else:
            why = f"{uns.iloc[0]['sentence'][0].lower()}{uns.iloc[0]['sentence'][1:-1]}"
        return (f"Undetermined: {after}the run ends as recorded ({rep_end}), but {why} "
                f"({len(uns):,} unsupported step(s)).")
    return (f"Unchanged outcome: {after}the run ends as recorded ({rep_end}), with "
            f"{n_changed:,} changed step(s) from step {first:,} on, all supported by the "
            "replay.")


def summarize(result: Any, *, changes: pd.DataFrame | None = None) -> Summary:
    """The findings of one replay (see :class:`Summary` and docs/report.md for each rule);
    of two recorded runs (``result.intervened`` False, a
    :class:`~replaykit.branch.runs.RunComparison`), :func:`~replaykit.branch.runs.summarize_runs`.

    ``changes``: ``changes_df(result)`` when the caller already has it (it is not recomputed).

    Raises:
        MissingExtraError: jsonpatch is missing (the ``replay`` extra).
    """
    if not getattr(result, "intervened", True):
        # two recorded runs (the Comparison protocol): their own findings
        # (replaykit.branch.runs.summarize_runs), asked of the result, not imported here
        out: Summary = result.summary(changes=changes)
        return out
    from .metrics import COMPARABILITY

    m = result.metrics
    step = int(m.get("first_divergence_step", -1))
    cls = str(m.get("comparability"))
    rows: list[dict[str, Any]] = []

    def add(kind: str, sentence: str, section: str, derived: str) -> None:
        rows.append({"kind": kind, "sentence": sentence, "section": section,
                     "derived_from": derived})

    ch = changes_df(result) if changes is None else changes
    key = ch[ch["key"]] if len(ch) else ch
    # the envelope: counted after the content, never named; the replay's own record (patch
    # record, argument hashes, fixture ids) is what the source phrase already says
    envelope = ch[~ch["key"] & (ch["bookkeeping"] != "replay")] if len(ch) else ch
    patched_by = _patched_by(result)
    effects = result.effects_df()
    ann = result.annotations_df()
    base_t = _base_table(result)
    rep_t = result.events.table

    # ---- outcome
    if result.status != "completed":
        reqs = result.requirements_df()
        open_reqs = reqs[reqs["status"] == "open"]
        where = (f" at step {int(open_reqs['step'].iloc[0]):,}" if len(open_reqs) else "")
        what = (f": no recorded output and no fixture for the divergent call of "
                f"{open_reqs['tool_name'].iloc[0]} (call {open_reqs['ref_id'].iloc[0]})"
                if len(open_reqs) else (f": {result.error}" if result.error else ""))
        add("outcome", f"The replay did not finish: it {result.status}{where}{what}. No "
            "outcome can be read from it yet; the open requirements below say what would "
            "let it finish.", "requirements", "status, requirements_df()")
    # every field counts (diff_df): the first changed step and how many changed
    diff = result.diff_df()
    hot = diff[diff["status"] != "same"]
    hot_at = hot["replay_seq"].dropna().astype("int64")
    n_changed = len(hot)
    first = int(hot_at.min()) if len(hot_at) else (step if n_changed else -1)
    if n_changed == 0:
        add("outcome", "The replay does not diverge from the recording: every event matches "
            "field for field, so this intervention changed nothing observable under these "
            "policies.", "first-divergence", "diff_df() has no row other than 'same'")
    else:
        div = ann[ann["seq"] == first]
        org = str(div["origin"].iloc[0]) if len(div) else "?"
        kind = rep_t.column("kind")[first].as_py() if 0 <= first < rep_t.num_rows else None
        tool = rep_t.column("tool_name")[first].as_py() if 0 <= first < rep_t.num_rows \
            else None
        kind = f"{kind} {tool}" if tool else kind  # the tool the agent called
        ivs = patched_by.get(first, [])
        how = (f"patched by {', '.join(ivs)}" if ivs else org)
        sig = ("" if step == first else
               " (no event signature differs: only request parameters or other payload "
               "members)" if step < 0 else
               f" (the first change in kind, tool, arguments or text is at step {step:,})")
        add("outcome", f"The replay first diverges from the recording at step {first:,} "
            f"({kind}, {how}){sig}; {n_changed - 1:,} later event(s) differ in some field "
            f"({_count(m.get('changed_descendants'))} in kind, tool, arguments or text).",
            "first-divergence", "diff_df() rows not 'same', annotations_df().origin, "
            "metrics.first_divergence_step, metrics.changed_descendants")
    stopped = result.status != "completed"
    if stopped and len(key):
        # after a pause the base events past the stop were never replayed: not "removed"
        last = rep_t.num_rows - 1
        unreached = key[(key["op"] == "removed") & (key["path"] == "")
                        & (key["step"] > last)]
        key = key[~key["row"].isin(unreached["row"])]
        if len(unreached):
            add("outcome", f"{unreached['row'].nunique():,} recorded event(s) after step {last:,} "
                "were not replayed: the replay stopped there.", "descendants",
                "diff_df() rows 'removed' past the replay's last event")
    lead = ""  # the first change the agent made or met, for the answer line
    if len(key):
        events = key.drop_duplicates("row")
        tools = events[events["kind"].isin(["tool_call", "tool_result"])]
        named = tools if len(tools) else events
        for ev in named.head(EVENTS_NAMED).itertuples(index=False):
            vals = key[key["row"] == ev.row]
            what = {"tool_call": "was called with", "tool_result": "returned"}.get(
                str(ev.kind), "changed")
            who = ev.tool_name if isinstance(ev.tool_name, str) and ev.tool_name else ev.kind
            said = _content_phrase(result, ev, vals)
            if not lead:
                lead = f"{who} {what} {_lead_value(result, ev, vals)} at step {int(ev.step):,}"
            bk = envelope[envelope["row"] == ev.row] if len(envelope) else envelope
            tail = f"; besides, {bookkeeping_phrase(bk['bookkeeping'])}" if len(bk) else ""
            add("outcome", f"{who} {what} {said} at step {int(ev.step):,} "
                f"({_source_phrase(result, ev, patched_by)}){tail}.", "changes",
                "changes_df() rows with key=True, origin, fixture_id/provenance; the "
                "bookkeeping rows (key=False) counted by group")
        rest = events[~events["row"].isin(named.head(EVENTS_NAMED)["row"])]
        for kind_, group in rest.groupby("kind", sort=False):
            vals = key[key["row"].isin(group["row"])].drop_duplicates(
                ["label", "op", "before", "after"])
            steps = group["step"].astype("int64").tolist()
            where = ", ".join(f"{x:,}" for x in steps[:8]) + (
                f" and {len(steps) - 8:,} more" if len(steps) > 8 else "")
            bk = envelope[envelope["row"].isin(group["row"])] if len(envelope) else envelope
            tail = f"; besides, {bookkeeping_phrase(bk['bookkeeping'])}" if len(bk) else ""
            add("outcome", f"{len(steps):,} {kind_} event(s) changed (step(s) {where}): "
                f"{_values_phrase(vals, 32, 5)} (see the changed-values table){tail}.",
                "changes", "changes_df() rows with key=True not named above, by kind")
    # events whose content did not change but whose envelope did (a changed finish or error
    # flag beside new ids and times): counted, after the content
    only_bk = envelope[~envelope["row"].isin(key["row"])] if len(envelope) else envelope
    if len(only_bk):
        add("outcome", f"{only_bk['row'].nunique():,} other changed event(s) differ in "
            f"bookkeeping only: {bookkeeping_phrase(only_bk['bookkeeping'])} (see the "
            "changed-values table).", "changes",
            "changes_df() rows with key=False of events without a key=True row")
    bk, bdoc = _terminal(base_t)
    rk_, rdoc = _terminal(rep_t)
    same = bk == rk_ and _outcome_value(bdoc) == _outcome_value(rdoc)
    val = _outcome_value(rdoc)
    base_end = f"{bk}{', ' + str(_outcome_value(bdoc)) if _outcome_value(bdoc) else ''}"
    rep_end = f"{rk_}{', ' + val if val else ''}"
    if result.status == "completed" and n_changed:
        if same:
            add("outcome", f"The run ends in the same terminal state as the recording "
                f"({rk_}{', ' + val if val else ''}).", "descendants",
                "last event of base and replay: kind and outcome field")
        else:
            add("outcome", f"The run ends differently: recording {bk}"
                f"{', ' + str(_outcome_value(bdoc)) if _outcome_value(bdoc) else ''}, replay "
                f"{rk_}{', ' + val if val else ''}.", "descendants",
                "last event of base and replay: kind and outcome field")

    # ---- unsupported conclusions
    uns = unsupported_df(result, changes=ch)
    for r in uns.head(UNSUPPORTED_NAMED).itertuples(index=False):
        add("unsupported", str(r.sentence), "transcript",
            f"unsupported_df() reason {r.reason}")
        rows[-1]["step"] = int(r.step)
    if len(uns) > UNSUPPORTED_NAMED:
        more = uns.iloc[UNSUPPORTED_NAMED:]
        add("unsupported", f"{len(more):,} more unsupported step(s): " + ", ".join(
            f"{int(n):,} {k}" for k, n in more["reason"].value_counts().items())
            + " (Summary.unsupported lists them all).", "transcript",
            "unsupported_df() rows not named above")
    rows.insert(0, {"kind": "answer", "sentence": _answer(
        result, stopped=result.status != "completed", first=first, n_changed=n_changed,
        same=same, base_end=base_end, rep_end=rep_end, uns=uns, lead=lead),
        "section": "findings",
        "derived_from": "status, diff_df(), the terminal events, unsupported_df()"})

    # ---- evidence
    adv = COMPARABILITY.get(cls, {"meaning": "unknown class", "advice": ""})
    if stopped:
        add("evidence", f"Comparability {cls}, because the replay {result.status}: make no "
            "causal claim until it finishes; supply what the open requirements name and "
            "re-run.", "comparability", "status != completed (rules in docs/metrics.md)")
    else:
        add("evidence", f"Comparability {cls}: {adv['meaning']} {adv['advice']}",
            "comparability", "metrics.comparability (rules in docs/metrics.md)")
    live_m = result.model_policy in ("pinned-live", "compatible-live")
    live_t = result.tool_policy in ("live-readonly", "live-explicit")
    ran = ("nothing was executed live" if not (live_m or live_t) else
           "live " + " and ".join(x for x, y in (("model calls", live_m),
                                                 ("tool calls", live_t)) if y)
           + " ran during the replay")
    add("evidence", f"Policies: model {result.model_policy}, tool {result.tool_policy}; "
        f"{ran}.", "interventions", "model_policy, tool_policy")
    # controllable variables (replaykit.provenance): which differed between base and replay,
    # which were pinned (recorded equal on both sides)
    try:
        from ..provenance.stamps import stamp_diff

        sd = stamp_diff(_base_table_log(result), result.events)
    except Exception:  # noqa: BLE001 -- stamps are evidence, never a reason to fail a report
        sd = None
    if sd is not None and len(sd):
        both = sd["a"].notna() & sd["b"].notna()
        differed = [stamp_change_text(str(r.field), str(r.a), str(r.b))
                    for r in sd[both & sd["changed"]].itertuples()]
        pinned = sd.loc[both & ~sd["changed"], "field"].astype(str).tolist()
        one_side = sd.loc[~both, "field"].astype(str).tolist()
        parts = []
        if differed:
            parts.append("differed between base and replay: " + "; ".join(differed)
                         + " (set by the interventions or by the replay's model; a "
                         "divergence is attributable to these)")
        if pinned:
            parts.append("pinned (the same on both sides): " + ", ".join(pinned))
        if one_side:
            parts.append("recorded on one side only: " + ", ".join(one_side))
        add("evidence", "Controllable variables " + "; ".join(parts) + ".", "repro",
            "stamp_diff(base run, result.events)")
    after = effects[effects["tool_name"].notna()] if len(effects) else effects
    fx = effects[effects["action"] == "fixture"] if len(effects) else effects
    if len(fx):
        ids = ", ".join(f"{r.fixture_id} ({r.provenance})" for r in fx.itertuples())
        add("evidence", f"Sensitive to fixture: {len(fx):,} of {len(after):,} tool call(s) after "
            f"the checkpoint were answered by fixture(s) {ids}; the conclusion holds only as "
            "far as those outputs are right.", "fixtures", "effects_df().action == 'fixture'")
    else:
        acts = after["action"].astype(str) if len(after) else pd.Series([], dtype=str)
        missing = int((acts == "missing").sum())
        blocked = int((acts == "blocked").sum())
        got = int(acts.isin(["recorded", "executed"]).sum())
        add("evidence", f"No fixture served a call: {got:,} of {len(after):,} tool call(s) after "
            "the checkpoint got their recorded (or executed) output"
            + (f"; {blocked} were blocked" if blocked else "")
            + (f"; {missing} got none (open requirement)" if missing else "") + ".",
            "fixtures", "effects_df().action")

    # ---- caveats
    step = first  # every field counts: the caveats start at the first changed step
    model_after = ann[(ann["seq"] > step)] if step >= 0 else ann.iloc[:0]
    if step >= 0 and len(model_after):
        kinds = rep_t.column("kind").to_pylist()
        copied = [s for s in model_after["seq"].astype("int64")
                  if kinds[s] == "model_response"]
        if result.model_policy in ("recorded-only", "blocked") and copied:
            add("caveat", f"Model outputs after step {int(step):,} ({len(copied):,} model "
                f"response(s)) were copied from the recording under the "
                f"{result.model_policy} model policy: the model never answered the changed "
                "inputs, so whatever the model decided afterwards"
                + ("" if stopped else " (including the same terminal state)")
                + " is guaranteed by the policy, not observed.", "interventions",
                "model_policy in (recorded-only, blocked), model_response rows after the "
                "first divergence")
        elif live_m and copied:
            add("caveat", f"Model outputs after step {int(step):,} came from a live model (policy "
                f"{result.model_policy}): another run of the same replay may answer "
                "differently.", "interventions", "model_policy is live")
        elif result.model_policy == "determinism-probe":
            add("caveat", "Under determinism-probe the recorded model outputs were kept; the "
                "probe only checks whether the model repeats itself.", "interventions",
                "model_policy == determinism-probe")
    if result.tool_policy == "blocked" and len(effects) \
            and (effects["action"] == "blocked").any():
        add("caveat", "Divergent tool calls were blocked (they got an error result) instead "
            "of being executed: what the tool would have returned is not known.", "fixtures",
            "effects_df().action == 'blocked'")

    # ---- requirements
    reqs = result.requirements_df()
    open_reqs = reqs[reqs["status"] == "open"] if len(reqs) else reqs
    specs = []
    for r in open_reqs.to_dict("records"):
        spec = fixture_spec(result, r)
        specs.append(r | {"fixture": spec})
        add("requirement", f"{r['requirement_id']}: tool {r['tool_name']}, call {r['ref_id']} "
            f"at step {r['step']}, arguments {_short(_decode(r['args']), 80)} (args hash "
            f"{r['args_hash']}) has no recorded output and no fixture. It is satisfied by a "
            f"fixture matched on toolName={r['tool_name']} and argsHash={r['args_hash']}; "
            "write it (the spec is in the requirements section) to a fixtures file and "
            "re-run with --fixtures FILE (in Python: result.resume(fixtures)).",
            "requirements", "requirements_df() rows with status open")
    return Summary(rows, key.reset_index(drop=True) if len(key) else key, specs, uns)
