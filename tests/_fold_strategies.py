"""Hypothesis strategies: random canonical logs (tenants/runs interleaved, unknown types)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from replaykit import EventLog
from replaykit._base.json import canonical_json
from replaykit.io.pleach import EVENT_KINDS
from replaykit.schema import events_table

# The agreed pleach event types (and their kinds), plus an unknown type and a stream chunk.
TYPES = {**EVENT_KINDS, "x.unknown": "other", "chunk": "model_chunk"}
IDS = ["a", "b", "c"]


@st.composite
def event(draw: Any) -> dict[str, Any]:
    typ = draw(st.sampled_from(sorted(TYPES)))
    payload: dict[str, Any] = {}
    if typ == "export.created":
        payload = {"export_id": draw(st.sampled_from(IDS)), "format": "csv",
                   "uri": draw(st.sampled_from(["u1", "u2"]))}
    elif typ == "user_card.shown":
        payload = {"card_id": draw(st.sampled_from(IDS)), "title": draw(st.text(max_size=3))}
    elif typ == "interrupt.raised":
        payload = {"kind": draw(st.sampled_from(["approval", "input"])), "reason": "r"}
    elif typ == "subagent.spawned":
        payload = {"label": draw(st.sampled_from(["x", "y"]))}
    if draw(st.booleans()):
        payload["score"] = draw(st.integers(-5, 5))
    return {
        "tenant_id": draw(st.sampled_from(["t1", "t2"])),
        "run_id": draw(st.sampled_from(["r1", "r2", "r3"])),
        "type": typ,
        "kind": TYPES[typ],
        "turn": draw(st.one_of(st.none(), st.integers(1, 3))),
        "step": draw(st.one_of(st.none(), st.integers(0, 2))),
        "ref_id": draw(st.one_of(st.none(), st.sampled_from(IDS))),
        "tool_name": draw(st.one_of(st.none(), st.sampled_from(["search", "shell"]))),
        "is_error": draw(st.booleans()),
        "finish": draw(st.one_of(st.none(), st.sampled_from(["stop", "tool-calls"]))),
        "input_tokens": draw(st.one_of(st.none(), st.integers(0, 100))),
        "output_tokens": draw(st.one_of(st.none(), st.integers(0, 100))),
        "cache_key": draw(st.one_of(st.none(), st.sampled_from(["k1", "k2"]))),
        "payload": canonical_json(payload),
        "gap": draw(st.integers(1, 3)),
    }


def build_log(events: list[dict[str, Any]]) -> EventLog:
    """Give events increasing seqs per (tenant, run) in list order; build a canonical log."""
    seqs: dict[tuple[str, str], int] = {}
    cols: dict[str, list[Any]] = {}
    for ev in events:
        key = (ev["tenant_id"], ev["run_id"])
        seqs[key] = seqs.get(key, 0) + ev["gap"]
        row = {k: v for k, v in ev.items() if k != "gap"}
        row["seq"] = seqs[key]
        row["source"] = "test:mem"
        for k, v in row.items():
            cols.setdefault(k, []).append(v)
    if not cols:
        cols = {k: [] for k in ("tenant_id", "run_id", "seq", "type", "kind", "payload",
                                "source")}
    return EventLog(events_table(cols))


logs = st.lists(event(), min_size=0, max_size=40).map(build_log)
