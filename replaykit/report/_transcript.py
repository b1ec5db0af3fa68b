"""The run as a reviewer reads it: a transcript (messages, tool calls with arguments and
results, collapsible payloads) and a run tree (runs, parent and child runs, turns, model and
tool calls, durations and a waterfall where timestamps exist). Used by ``rk.report.rca`` and
``rk.widgets.Transcript``; all text is escaped by the templates (Jinja2, autoescape)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._template import render

__all__ = ["MAX_TRANSCRIPT_EVENTS", "run_tree", "run_tree_html", "transcript_items",
           "transcript_html"]

#: events a transcript shows (a longer run keeps its first ones and says so).
MAX_TRANSCRIPT_EVENTS = 2_000
#: characters of a payload shown in a collapsible block.
PAYLOAD_CHARS = 4_000
#: calls per run the run tree lists.
MAX_TREE_NODES = 2_000

_WHO = {"user_message": "user", "model_request": "model request",
        "model_response": "model", "model_chunk": "model (stream chunk)",
        "tool_call": "tool call", "tool_result": "tool result"}


def _pretty(payload: Any, limit: int = PAYLOAD_CHARS) -> str:
    try:
        text = json.dumps(json.loads(payload), indent=2, sort_keys=True, ensure_ascii=False)
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


def transcript_items(table: pa.Table, *, origins: Mapping[int, str] | None = None,
                     max_events: int = MAX_TRANSCRIPT_EVENTS,
                     payload_chars: int = PAYLOAD_CHARS) -> list[dict[str, Any]]:
    """One item per event of a one-run table: step, seq, kind, who, tool, ref, text, the
    arguments or output (pretty JSON), the whole payload and where it came from."""
    t = table.slice(0, max_events).select(
        ["seq", "kind", "tool_name", "ref_id", "text", "payload", "is_error"])
    out = []
    for i, r in enumerate(t.to_pylist()):  # one run, display only, bounded
        kind = str(r["kind"])
        out.append({"step": i, "seq": r["seq"], "kind": kind, "who": _WHO.get(kind, kind),
                    "tool": r["tool_name"], "ref": r["ref_id"],
                    "text": (r["text"] or "")[:payload_chars],
                    "detail": _args(r["payload"], payload_chars)
                    if kind in ("tool_call", "tool_result") else None,
                    "payload": _pretty(r["payload"], payload_chars),
                    "error": bool(r["is_error"]),
                    "origin": (origins or {}).get(int(r["seq"])),
                    "message": kind in _WHO})
    return out


def transcript_html(table: pa.Table, *, origins: Mapping[int, str] | None = None,
                    max_events: int = MAX_TRANSCRIPT_EVENTS,
                    payload_chars: int = PAYLOAD_CHARS) -> str:
    """The transcript of one run as escaped HTML (see :func:`transcript_items`)."""
    items = transcript_items(table, origins=origins, max_events=max_events,
                             payload_chars=payload_chars)
    more = max(0, table.num_rows - max_events)
    return str(render("transcript.html", items=items, more=more))


def _ts_seconds(table: pa.Table) -> np.ndarray:
    ts = table.column("ts")
    us = pc.cast(ts, pa.int64()).to_numpy(zero_copy_only=False) if ts.null_count < len(ts) \
        else None
    if us is None:
        return np.full(table.num_rows, np.nan)
    valid = np.asarray(pc.is_valid(ts))
    out = np.where(valid, us.astype(np.float64) / 1e6, np.nan)
    return out


def run_tree(tables: Sequence[pa.Table]) -> list[dict[str, Any]]:
    """Runs as a tree: each node has run_id, parent_run_id, start, duration (seconds, None
    without timestamps), turns (each with its model and tool calls: name, ref, start offset,
    duration) and children (runs whose parent_run_id names it)."""
    nodes: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for t in tables:
        for run_id in pc.unique(pc.cast(t.column("run_id"), pa.string())).to_pylist():
            sub = t.filter(pc.equal(pc.cast(t.column("run_id"), pa.string()), run_id))
            nodes[run_id] = _run_node(sub, run_id)
            order.append(run_id)
    roots = []
    for rid in order:
        parent = nodes[rid]["parent_run_id"]
        if parent and parent in nodes and parent != rid:
            nodes[parent]["children"].append(nodes[rid])
        else:
            roots.append(nodes[rid])
    return roots


def _run_node(t: pa.Table, run_id: str) -> dict[str, Any]:
    secs = _ts_seconds(t)
    kind = pc.cast(t.column("kind"), pa.string()).to_pylist()
    ref = t.column("ref_id").to_pylist()
    tool = pc.cast(t.column("tool_name"), pa.string()).to_pylist()
    turn = t.column("turn").to_pylist()
    parent = pc.cast(t.column("parent_run_id"), pa.string())[0].as_py() if t.num_rows else None
    t0 = np.nanmin(secs) if np.isfinite(secs).any() else np.nan
    t1 = np.nanmax(secs) if np.isfinite(secs).any() else np.nan
    total = float(t1 - t0) if np.isfinite(t0) else None
    calls: dict[tuple[str, str], dict[str, Any]] = {}
    listed: list[dict[str, Any]] = []
    starts = {"model_request": "model", "tool_call": "tool"}
    ends = {"model_response": "model", "tool_result": "tool"}
    for i, k in enumerate(kind):  # one run: per-event view data, bounded below
        if k in starts and ref[i] is not None and len(listed) < MAX_TREE_NODES:
            c = {"type": starts[k], "name": tool[i] if k == "tool_call" else "model call",
                 "ref": ref[i], "turn": turn[i], "step": i, "start": secs[i], "end": np.nan}
            calls[(starts[k], ref[i])] = c
            listed.append(c)
        elif k in ends and ref[i] is not None and (ends[k], ref[i]) in calls:
            calls[(ends[k], ref[i])]["end"] = secs[i]
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
            "model_calls": sum(1 for c in listed if c["type"] == "model"),
            "tool_calls": sum(1 for c in listed if c["type"] == "tool")}


def run_tree_html(tables: Sequence[pa.Table]) -> str:
    """The run tree of :func:`run_tree` as escaped HTML with a waterfall per call."""
    return str(render("runtree.html", roots=run_tree(tables)))
