"""What the recording holds for a replay: shared sources, content status, recorded tool output
and model chunks."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._base.json import canonical_json, gc_paused
from ._selectors import _ARGS_KEYS, _TOOL_KEYS, _find, _str

__all__ = []

def _shared_sources(t: pa.Table) -> pa.Table:
    """``t`` with its ``source`` values naming files relative to the folder that holds all
    of them (``isplay:/home/ana/runs/a.json`` -> ``isplay:runs/a.json``), as written results
    are shared; values that name no file stay."""
    import os.path

    from ._shared import shared_source

    if "source" not in t.column_names or not t.num_rows:
        return t
    col = t.column("source").combine_chunks()
    enc = col if pa.types.is_dictionary(col.type) else col.dictionary_encode()
    values = enc.dictionary.to_pylist()
    paths = [v.split(":", 1)[1] for v in values
             if isinstance(v, str) and ":" in v and v.split(":", 1)[1].startswith("/")]
    root = os.path.dirname(os.path.commonpath(paths)) if paths else None
    if paths and len(set(paths)) == 1:
        root = os.path.dirname(paths[0])
    new = pa.array([shared_source(v, root) for v in values], pa.string())
    out = pa.DictionaryArray.from_arrays(enc.indices, new)
    field = t.schema.field("source")
    return t.set_column(t.schema.get_field_index("source"), field,
                        out.cast(field.type))


def _content_status(status: np.ndarray, b: pa.Table, r: pa.Table, i: np.ndarray,
                    j: np.ndarray, *,
                    changes: dict[tuple[int, int], list[dict[str, Any]]] | None = None,
                    offered: dict[int, list[str] | None] | None = None
                    ) -> np.ndarray:
    """``status`` with every ``same`` pair whose events differ in any field turned
    ``changed``: the signature alignment sees kind, tool, arguments and text only, so a
    request whose parameters were patched (temperature, tools, system prompt, any payload
    member) or an output with another finish or error flag would read ``same``.

    Column-wise: the payload texts and the other compared columns of the aligned pairs are
    compared in Arrow; only pairs whose payload texts differ are decoded, and a difference
    under a bookkeeping key only (:data:`replaykit.branch.findings.BOOKKEEPING_KEYS`: the
    patch record, ids, times; and the envelope the recording's format declares,
    :data:`replaykit._base.envelope.BOOKKEEPING`: working directory, uuids, timestamps ...) does
    not count. ``changes``, when given, receives each decoded
    pair's :func:`~replaykit.branch.findings.json_changes` rows by ``(base_seq, replay_seq)``
    (``changes_df`` reuses them); ``offered``, when given, the tools each decoded replayed
    payload offers (``findings._offered_tools``), by its row in ``r`` (``unsupported_df``
    reuses them instead of decoding those payloads again).
    """
    from .._base.envelope import format_of
    from .findings import _content_changes, _offered_tools

    out = status.copy()
    pair = np.flatnonzero((status == "same") & (i >= 0) & (j >= 0))
    if not len(pair):
        return out
    bi = pa.array(i[pair], pa.int64())
    rj = pa.array(j[pair], pa.int64())
    differs = np.zeros(len(pair), dtype=bool)
    for col in _CONTENT_COLUMNS:
        if col not in b.column_names or col not in r.column_names:
            continue
        x, y = b.column(col).take(bi), r.column(col).take(rj)
        if x.type != y.type or pa.types.is_dictionary(x.type):
            x, y = _str(x), _str(y)
        nx, ny = pc.is_null(x), pc.is_null(y)
        ne = pc.if_else(pc.or_(nx, ny), pc.xor(nx, ny), pc.not_equal(x, y))
        differs |= np.asarray(ne, dtype=bool)
    bp = _str(b.column("payload").take(bi))
    rp = _str(r.column("payload").take(rj))
    text_ne = np.asarray(pc.fill_null(pc.not_equal(bp, rp), True), dtype=bool) & ~differs
    todo = np.flatnonzero(text_ne)  # payload texts differ: decode those pairs only
    b_seq = b.column("seq").take(bi).to_pylist() if len(todo) else []
    r_seq = r.column("seq").take(rj).to_pylist() if len(todo) else []
    # each pair's format (the recording's source prefix) says which members are its envelope
    b_src = _str(b.column("source").take(bi)).to_pylist() \
        if len(todo) and "source" in b.column_names else []
    # the pairs' texts as Python strings once (not a scalar per pair and side)
    todo_arr = pa.array(todo, pa.int64())
    b_take, r_take = bp.take(todo_arr), rp.take(todo_arr)
    b_text, r_text = b_take.to_pylist(), r_take.to_pylist()
    # which texts hold a run of 19 digits (an integer orjson would not keep: those decode
    # with json.loads), searched column-wise once instead of per text
    b_long = _long_int_runs(b_take)
    r_long = _long_int_runs(r_take)
    # (the decoded documents and the rows kept are no garbage: the cyclic collector, which
    # would walk the whole heap again and again while they are allocated, waits)
    r_rows = j[pair].tolist() if offered is not None else []
    lists: dict[tuple[str, ...], list[str]] = {}  # one list per distinct tool set

    def keep_tools(doc: Any, row: int) -> None:
        names = _offered_tools(doc)
        if names is not None:
            names = lists.setdefault(tuple(names), names)
        assert offered is not None
        offered[row] = names

    with gc_paused():
        for n, k in enumerate(todo.tolist()):  # (content_changed's answer and its rows)
            differs[k], rows = _content_changes(
                b_text[n], r_text[n], format_of(b_src[k]) if b_src else None,
                (b_long[n], r_long[n]),
                (lambda doc, row=r_rows[k]: keep_tools(doc, row)) if offered is not None
                else None)
            if rows and changes is not None and b_seq[k] is not None \
                    and r_seq[k] is not None:
                changes[(int(b_seq[k]), int(r_seq[k]))] = rows
    out[pair[differs]] = "changed"
    return out


def _long_int_runs(texts: pa.Array) -> list[bool]:
    """Per text: whether it holds a run of 19 ASCII digits (``_base.json._has_long_int``'s
    test, as one regular-expression pass in Arrow); null texts read False."""
    if not len(texts):
        return []
    hit = pc.match_substring_regex(texts, "[0-9]{19}")
    return np.asarray(pc.fill_null(hit, False), dtype=bool).tolist()


#: Event columns besides the payload whose difference makes an aligned pair ``changed``.
_CONTENT_COLUMNS = ("finish", "is_error", "chunk_type")


# ------------------------------------------------------------------------------------ replay


def _tool_output(value: Any) -> tuple[Any, bool]:
    """(output, is_error) from what a tool executor returned."""
    if isinstance(value, Mapping) and set(value) <= {"output", "isError"} and "output" in value:
        return value["output"], bool(value.get("isError", False))
    return value, False


def _live_tool_calls(output: Any, model_ref: str) -> list[tuple[str, Any, Any]] | None:
    """(call id, tool name, args) of each tool call a live model output asks for, or None
    when the output does not say (no ``toolCalls``/``tool_calls`` list).

    Each entry is a mapping with the tool's name (``toolName``/``name``/``tool``), its
    arguments (``args``/``arguments``/``input``; a JSON string is kept as given) and
    optionally its id (``toolCallId``/``id``/``refId``; default ``<model call>~live-<k>``).

    Raises:
        ValueError: an entry without a tool name.
    """
    if not isinstance(output, Mapping):
        return None
    _, listed = _find(output, ("toolCalls", "tool_calls"))
    if not isinstance(listed, list):
        return None
    calls = []
    for k, c in enumerate(listed):
        _, tool = _find(c, _TOOL_KEYS + ("name",)) if isinstance(c, Mapping) else (None, None)
        if not isinstance(tool, str) or not tool:
            raise ValueError(f"live output of model call {model_ref!r}: tool call {k} has no "
                             f"tool name (toolName/name/tool): {c!r}")
        _, args = _find(c, _ARGS_KEYS)
        _, cid = _find(c, ("toolCallId", "id", "refId"))
        calls.append((str(cid) if cid else f"{model_ref}~live-{k}", tool, args))
    return calls


class _Recorded:
    """The base run's tool calls by the model call that names them (``modelCallId``), and
    each call's first result; built once per replay, when a live output first names tool
    calls (one payload decode per tool call, not one per live model call)."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        self.by_model: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        self.results: dict[str, dict[str, Any]] = {}
        for k, x in enumerate(rows):
            if x["kind"] == "tool_call":
                payload = json.loads(x["payload"])
                model = payload.get("modelCallId") if isinstance(payload, dict) else None
                if isinstance(model, str):
                    self.by_model.setdefault(model, []).append((k, x))
            elif x["kind"] == "tool_result" and x["ref_id"] is not None:
                self.results.setdefault(x["ref_id"], x)

    def calls_of(self, i: int, model_ref: str) -> list[dict[str, Any]]:
        """The recorded tool calls made by model call ``model_ref`` whose response is row
        ``i``: those after it whose payload names it or, when none does, the tool calls after
        the response up to the next model request or turn end."""
        named = [x for k, x in self.by_model.get(model_ref, []) if k > i]
        if named:
            return named
        calls = []
        for x in self.rows[i + 1:]:
            if x["kind"] in ("model_request", "turn_end", "session_end") or (
                    x["kind"] in ("model_chunk", "model_response")
                    and x["ref_id"] is not None and x["ref_id"] != model_ref):
                break  # the next model call begins
            if x["kind"] == "tool_call":
                calls.append(x)
        return calls


_CONVO_ROLES = {"user_message": "user", "model_response": "assistant", "tool_call": "assistant",
                "tool_result": "tool"}


def _chunk_row(like: dict[str, Any], chunk: Any) -> dict[str, Any] | None:
    """A model_chunk row for one live chunk, shaped like the recorded chunk ``like`` (toh:
    ``payload.data.chunk``); None when the recorded rows have another shape."""
    from ..io.toh import CHUNK_TYPES

    payload = json.loads(like["payload"])
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, dict) or "chunk" not in data or not isinstance(chunk, Mapping):
        return None
    data["chunk"] = chunk
    typ = str(chunk.get("type"))
    text = (chunk.get("text", chunk.get("delta", chunk.get("argumentsDelta")))
            if typ.endswith("-delta") else None)
    reason = chunk.get("reason") if typ == "finish" else None
    usage = chunk.get("usage") if typ == "usage" and isinstance(chunk.get("usage"),
                                                                 Mapping) else {}
    r = dict(like)
    r.update(payload=canonical_json(payload), chunk_type=CHUNK_TYPES.get(typ, typ),
             text=text if isinstance(text, str) else None,
             finish=(reason.get("kind") if isinstance(reason, Mapping) else reason),
             input_tokens=usage.get("inputTokens") if usage else None,
             output_tokens=usage.get("outputTokens") if usage else None,
             event_id=None, source_line=None, inherited=False)
    return r


def _text_of(output: Any) -> str | None:
    if output is None:
        return None
    if isinstance(output, str):
        return output
    if isinstance(output, Mapping) and "text" in output and (
            output["text"] is None or isinstance(output["text"], str)):
        return output["text"]  # an output that says it has no text has none
    return canonical_json(output)
