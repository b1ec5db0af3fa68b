"""The run as a reviewer reads it: a transcript (messages, tool calls with arguments and
results, collapsible payloads) and a run tree (runs, parent and child runs, turns, model and
tool calls, durations and a waterfall where timestamps exist). Used by ``rk.report.rca`` and
``rk.widgets.Transcript``; all text is escaped by the templates (Jinja2, autoescape)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .._base.envelope import content_first, format_of
from ..branch.vocab import PROVENANCE_BADGES, PROVENANCES
from ._template import render

__all__ = ["MAX_TRANSCRIPT_EVENTS", "provenance_legend_html", "run_tree", "run_tree_html",
           "turn_numbers",
           "transcript_items", "transcript_html"]

#: events a transcript shows (a longer run keeps its first ones and says so).
MAX_TRANSCRIPT_EVENTS = 2_000
#: characters of a payload shown in a collapsible block.
PAYLOAD_CHARS = 4_000
#: calls per run the run tree lists.
MAX_TREE_NODES = 2_000

_WHO = {"user_message": "user", "model_request": "model request",
        "model_response": "model", "model_chunk": "model (stream chunk)",
        "tool_call": "tool call", "tool_result": "tool result"}


def _pretty(payload: Any, limit: int = PAYLOAD_CHARS, fmt: str | None = None) -> str:
    """The payload as pretty JSON: every object's content members first (sorted), the
    format's bookkeeping members (ids, times, working directory ...) after them."""
    try:
        text = json.dumps(content_first(json.loads(payload), fmt), indent=2,
                          ensure_ascii=False)
    except (TypeError, ValueError):
        text = "" if payload is None else str(payload)
    if len(text) > limit:
        text = text[:limit] + f"\n\u2026 ({len(text) - limit:,} more characters)"
    return text


def _args(payload: Any, limit: int = PAYLOAD_CHARS) -> str | None:
    try:
        doc = json.loads(payload)
    except (TypeError, ValueError):
        return None
    if not isinstance(doc, Mapping):
        return None
    data = doc.get("data")
    box: Mapping[str, Any] = data if isinstance(data, Mapping) else doc
    for k in ("args", "arguments", "input", "output", "result"):
        if k in box:
            v = box[k]
            if isinstance(v, str):
                try:
                    v = json.loads(v)
                except ValueError:
                    return v[:limit]
            return json.dumps(v, indent=2, sort_keys=True, ensure_ascii=False)[:limit]
    return None


def provenance_legend_html(present: Sequence[str] | None = None) -> str:
    """The legend of the provenance badges (those in ``present``, default all), with the
    "unsupported" flag: what each badge on a replayed step means."""
    keys = [k for k in PROVENANCES if present is None or k in set(present)]
    return str(render("legend.html", items=[
        {"key": k, "badge": PROVENANCE_BADGES[k], "meaning": PROVENANCES[k]} for k in keys]))


def transcript_items(table: pa.Table, *, origins: Mapping[int, str] | None = None,
                     max_events: int = MAX_TRANSCRIPT_EVENTS,
                     payload_chars: int = PAYLOAD_CHARS,
                     steps: Sequence[int] | None = None,
                     flags: Mapping[int, str] | None = None) -> list[dict[str, Any]]:
    """One item per event of a one-run table: step, seq, kind, who, tool, ref, text, the
    arguments or output (pretty JSON), the whole payload and where it came from.

    ``origins``: seq -> provenance (:data:`replaykit.branch.vocab.PROVENANCES`; a replay
    origin such as ``copied`` is accepted too): every step of a replay gets its badge.
    ``flags``: seq -> the sentence of an unsupported finding on that step (a flag badge).
    ``steps``: the positions to show (ascending; default the first ``max_events``); a jump
    between two shown positions gives an item ``{"gap": k, "step": first skipped}`` first."""
    cols = ["seq", "kind", "tool_name", "ref_id", "text", "payload", "is_error", "source"]
    if steps is None:
        pos = list(range(min(table.num_rows, max_events)))
        t = table.slice(0, max_events).select(cols)
    else:
        pos = [p for p in steps if 0 <= p < table.num_rows]
        t = table.take(pa.array(pos, pa.int64())).select(cols)
    out: list[dict[str, Any]] = []
    last = -1
    for i, r in zip(pos, t.to_pylist(), strict=True):  # one run, display only, bounded
        if i > last + 1:
            out.append({"gap": i - last - 1, "step": last + 1, "message": False})
        last = i
        kind = str(r["kind"])
        out.append({"step": i, "seq": r["seq"], "kind": kind, "who": _WHO.get(kind, kind),
                    "tool": r["tool_name"], "ref": r["ref_id"],
                    "text": (r["text"] or "")[:payload_chars],
                    "detail": _args(r["payload"], payload_chars)
                    if kind in ("tool_call", "tool_result") else None,
                    "payload": _pretty(r["payload"], payload_chars, format_of(r["source"])),
                    "error": bool(r["is_error"]),
                    "origin": _badge_key((origins or {}).get(int(r["seq"]))),
                    "unsupported": (flags or {}).get(int(r["seq"])),
                    "message": kind in _WHO})
    for it in out:
        if it.get("origin"):
            it["badge"] = PROVENANCE_BADGES.get(it["origin"], it["origin"])
            it["meaning"] = PROVENANCES.get(it["origin"], "")
    return out


def _badge_key(origin: str | None) -> str | None:
    """A provenance for a badge: replay origins map to the provenance a reader sees."""
    if origin is None:
        return None
    return {"copied": "recorded", "executor": "live"}.get(origin, origin)


def transcript_html(table: pa.Table, *, origins: Mapping[int, str] | None = None,
                    max_events: int = MAX_TRANSCRIPT_EVENTS,
                    payload_chars: int = PAYLOAD_CHARS,
                    steps: Sequence[int] | None = None,
                    flags: Mapping[int, str] | None = None) -> str:
    """The transcript of one run as escaped HTML (see :func:`transcript_items`); a run
    longer than what is shown says how many of its events are shown. With ``origins`` each
    step carries its provenance badge and the transcript opens with their legend."""
    items = transcript_items(table, origins=origins, max_events=max_events,
                             payload_chars=payload_chars, steps=steps, flags=flags)
    shown = sum(1 for it in items if "gap" not in it)
    last = max((it["step"] for it in items if "gap" not in it), default=-1)
    more = max(0, table.num_rows - last - 1)
    present = sorted({it["origin"] for it in items if it.get("origin")},
                     key=lambda k: list(PROVENANCES).index(k) if k in PROVENANCES else 99)
    legend = provenance_legend_html(present) if present else ""
    return legend + str(render("transcript.html", items=items, more=more, shown=shown,
                               total=table.num_rows,
                               windowed=any("gap" in it for it in items)))


def _ts_seconds(table: pa.Table) -> np.ndarray:
    ts = table.column("ts")
    us = pc.cast(ts, pa.int64()).to_numpy(zero_copy_only=False) if ts.null_count < len(ts) \
        else None
    if us is None:
        return np.full(table.num_rows, np.nan)
    valid = np.asarray(pc.is_valid(ts))
    out = np.where(valid, us.astype(np.float64) / 1e6, np.nan)
    return out


def turn_numbers(table: pa.Table) -> np.ndarray:
    """The turn of each event of one run (int64), the one numbering the report's scrubber and
    run tree and the notebook Scrubber show: the log's ``turn`` where it records one, else the
    number of turns begun so far (``turn_start`` events, or user messages when the run has no
    turn events), 0 before the first. Never missing: a log without turns (isplay, OTel) still
    reads "turn 1", not "turn (none)".

    >>> t = pa.table({"kind": ["user_message", "tool_call", "user_message"],
    ...               "turn": pa.array([None, None, None], pa.int64())})
    >>> turn_numbers(t).tolist()
    [1, 1, 2]
    """
    kinds = np.asarray(pc.cast(table.column("kind"), pa.string()).to_numpy(
        zero_copy_only=False), dtype=object)
    opener = "turn_start" if (kinds == "turn_start").any() else "user_message"
    derived = np.cumsum(kinds == opener)
    turn = table.column("turn")
    valid = np.asarray(pc.is_valid(turn).to_numpy(zero_copy_only=False), dtype=bool)
    recorded = np.asarray(pc.fill_null(pc.cast(turn, pa.int64()), 0).to_numpy(
        zero_copy_only=False), dtype=np.int64)
    return np.where(valid, recorded, derived).astype(np.int64)


def run_tree(tables: Sequence[pa.Table], *, max_nodes: int = MAX_TREE_NODES
             ) -> list[dict[str, Any]]:
    """Runs as a tree: each node has run_id, parent_run_id, start, duration (seconds, None
    without timestamps), turns (each with its model and tool calls: name, ref, start offset,
    duration) and children (runs whose parent_run_id names it). A run lists its first
    ``max_nodes`` calls (``listed``); ``model_calls`` / ``tool_calls`` count them all."""
    nodes: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for t in tables:
        run_ids = pc.unique(pc.cast(t.column("run_id"), pa.string())).to_pylist()
        for run_id in run_ids:
            # a table of one run is its own filter (a report's base run and its replay): the
            # filter would copy every column, payloads included, to the same rows
            sub = t if len(run_ids) == 1 and run_id is not None else \
                t.filter(pc.equal(pc.cast(t.column("run_id"), pa.string()), run_id))
            nodes[run_id] = _run_node(sub, run_id, max_nodes)
            order.append(run_id)
    roots = []
    for rid in order:
        parent = nodes[rid]["parent_run_id"]
        if parent and parent in nodes and parent != rid:
            nodes[parent]["children"].append(nodes[rid])
        else:
            roots.append(nodes[rid])
    return roots


def _run_node(t: pa.Table, run_id: str, max_nodes: int = MAX_TREE_NODES) -> dict[str, Any]:
    secs = _ts_seconds(t)
    kind = pc.cast(t.column("kind"), pa.string())
    parent = pc.cast(t.column("parent_run_id"), pa.string())[0].as_py() if t.num_rows else None
    t0 = np.nanmin(secs) if np.isfinite(secs).any() else np.nan
    t1 = np.nanmax(secs) if np.isfinite(secs).any() else np.nan
    total = float(t1 - t0) if np.isfinite(t0) else None
    # column-wise: call starts (model requests, tool calls with a ref), their ends (the first
    # response / result with the same ref after the start) by a join; only the first
    # MAX_TREE_NODES calls are listed, the totals count every call
    ref = pc.cast(t.column("ref_id"), pa.string())
    has_ref = np.asarray(pc.is_valid(ref))

    def of(name: str) -> np.ndarray:
        return np.asarray(pc.fill_null(pc.equal(kind, name), False)) & has_ref

    is_model, is_tool = of("model_request"), of("tool_call")
    n_model, n_tool = int(is_model.sum()), int(is_tool.sum())
    start_pos = np.flatnonzero(is_model | is_tool)[:max_nodes]
    ctype = np.where(is_tool[start_pos], "tool", "model")
    refs = ref.take(pa.array(start_pos, pa.int64())).to_pylist()
    # only the end events of the listed calls' refs take part in the join
    is_end = (of("tool_result") | of("model_response")) \
        & np.asarray(pc.fill_null(pc.is_in(ref, value_set=pa.array(refs, pa.string())), False))
    end_rows = np.flatnonzero(is_end)
    ends = pd.DataFrame({"type": np.where(of("tool_result")[end_rows], "tool", "model"),
                         "ref": ref.take(pa.array(end_rows, pa.int64())).to_pylist(),
                         "end_pos": end_rows})
    starts = pd.DataFrame({"type": ctype, "ref": refs, "pos": start_pos})
    # no end event at all (a replay paused at its only call): keep the join keys one dtype
    ends = ends.astype({"ref": starts["ref"].dtype})
    # a call's end: the first end event of its (type, ref) after the call (an as-of join:
    # O(n log n) even when many events share a ref)
    j = pd.merge_asof(starts.sort_values("pos"), ends.sort_values("end_pos"),
                      left_on="pos", right_on="end_pos", by=["type", "ref"],
                      direction="forward", allow_exact_matches=False)
    end_pos = j.set_index("pos")["end_pos"].reindex(start_pos).to_numpy(dtype=float)
    sub = t.take(pa.array(start_pos, pa.int64())).select(["tool_name"])
    tool = pc.cast(sub.column("tool_name"), pa.string()).to_pylist()
    turn = turn_numbers(t)[start_pos].tolist()  # derived where the log records none
    listed: list[dict[str, Any]] = []
    for i, p in enumerate(start_pos.tolist()):  # at most MAX_TREE_NODES calls: view data
        e = end_pos[i]
        listed.append({"type": str(ctype[i]), "name": tool[i] if ctype[i] == "tool"
                       else "model call", "ref": refs[i], "turn": turn[i], "step": p,
                       "start": secs[p], "end": secs[int(e)] if e == e else np.nan})
    turns: dict[Any, dict[str, Any]] = {}
    for c in listed:
        d = c["end"] - c["start"]
        c["duration"] = float(d) if np.isfinite(d) else None
        c["offset"] = float(c["start"] - t0) if np.isfinite(c["start"]) and total else None
        c["left"] = round(100 * c["offset"] / total, 2) if c["offset"] is not None and total \
            else None
        c["width"] = round(max(100 * (c["duration"] or 0) / total, 0.4), 2) \
            if total and c["duration"] is not None else None
        del c["start"], c["end"]
        turns.setdefault(c["turn"], {"turn": c["turn"], "calls": []})["calls"].append(c)
    for tn in turns.values():
        ds = [c for c in tn["calls"] if c["left"] is not None]
        tn["left"] = min(c["left"] for c in ds) if ds else None
        tn["width"] = (max(c["left"] + (c["width"] or 0) for c in ds) - tn["left"]) if ds \
            else None
        durs = [c["duration"] for c in tn["calls"] if c["duration"] is not None]
        tn["duration"] = None
        if ds and total:
            tn["duration"] = round((tn["width"] or 0) / 100 * total, 3)
        elif durs:
            tn["duration"] = sum(durs)
    return {"run_id": run_id, "parent_run_id": parent, "events": t.num_rows,
            "duration": total, "turns": list(turns.values()), "children": [],
            "model_calls": n_model, "tool_calls": n_tool, "listed": len(listed)}


def run_tree_html(tables: Sequence[pa.Table], *, max_nodes: int = MAX_TREE_NODES) -> str:
    """The run tree of :func:`run_tree` as escaped HTML with a waterfall per call."""
    return str(render("runtree.html", roots=run_tree(tables, max_nodes=max_nodes)))
