"""A vectorised generator of realistic pleach-like canonical logs (for benchmarks, demos, tests).

Every run repeats one turn template (user message, model call asking for a tool, the tool call
and its result, an interrupt raised and resolved, a subagent, a final model call, an export or a
user card, the turn end), with random tool names, token counts, errors and cache keys, all
drawn column-wise with numpy. Deterministic for a given ``seed``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..eventlog.log import EventLog
from ..schema import events_table

__all__ = ["synthetic_log"]

# (type, kind) of each event of one turn
_TEMPLATE = [
    ("turn.started", "turn_start"),
    ("message.user", "user_message"),
    ("model.requested", "model_request"),
    ("model.completed", "model_response"),  # finish tool-calls
    ("tool.called", "tool_call"),
    ("tool.completed", "tool_result"),
    ("interrupt.raised", "approval_request"),
    ("interrupt.resolved", "approval_decision"),
    ("subagent.spawned", "subagent_start"),
    ("subagent.completed", "subagent_end"),
    ("model.requested", "model_request"),
    ("model.completed", "model_response"),  # finish stop
    ("export.created", "other"),
    ("user_card.shown", "other"),
    ("turn.completed", "turn_end"),
    ("custom.unknown", "other"),
]
_TOOLS = np.array(["search", "read_file", "write_file", "shell", "browse"])


_NONE = np.array(None, dtype=object)  # a null in np.where over strings

def _join(*parts: object) -> pa.Array:
    arrays = [p if isinstance(p, (pa.Array, pa.ChunkedArray)) else p for p in parts]
    return pc.binary_join_element_wise(*arrays, "")


def synthetic_log(
    n_events: int = 10_000,
    n_runs: int = 100,
    *,
    tenants: tuple[str, ...] = ("acme", "globex"),
    seed: int = 0,
    cache_every: int = 3,
) -> EventLog:
    """A generated log of about ``n_events`` events in ``n_runs`` runs (pleach event types).

    Runs are split round-robin over ``tenants``; run lengths vary (+-50 %). Every
    ``cache_every``-th tool result carries a ``cache_key``. Column-wise: fast for millions
    of events.

    >>> log = synthetic_log(1_000, 10)
    >>> log.num_runs
    10
    """
    rng = np.random.default_rng(seed)
    weights = rng.uniform(0.5, 1.5, n_runs)
    lengths = np.maximum(1, np.floor(weights / weights.sum() * n_events)).astype(np.int64)
    lengths[-1] += max(0, n_events - int(lengths.sum()))
    n = int(lengths.sum())
    run_of = np.repeat(np.arange(n_runs), lengths)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    pos = np.arange(n) - starts[run_of]
    tpl = pos % len(_TEMPLATE)
    turn = (pos // len(_TEMPLATE) + 1).astype(np.int32)
    types = np.array([t for t, _ in _TEMPLATE])
    kinds = np.array([k for _, k in _TEMPLATE])
    tenant_of_run = np.array(tenants)[np.arange(n_runs) % len(tenants)]
    run_names = pa.array([f"run-{i:06d}" for i in range(n_runs)])
    run_id = run_names.take(pa.array(run_of))
    run_str = run_id
    turn_str = pc.cast(pa.array(turn), pa.string())
    tool = _TOOLS[rng.integers(0, len(_TOOLS), n)]
    is_tool = (tpl == 4) | (tpl == 5)
    is_model_done = (tpl == 3) | (tpl == 11)
    finish = np.where(tpl == 3, "tool-calls", np.where(tpl == 11, "stop", _NONE))
    err = (tpl == 5) & (rng.random(n) < 0.1)
    in_tok = np.where(is_model_done, rng.integers(100, 2000, n), 0)
    out_tok = np.where(is_model_done, rng.integers(10, 500, n), 0)
    # ids
    ref = pc.if_else(
        pa.array(is_tool), _join(run_str, ".t", turn_str, ".call"),
        pc.if_else(pa.array((tpl == 6) | (tpl == 7)), _join(run_str, ".t", turn_str, ".int"),
                   pc.if_else(pa.array((tpl == 8) | (tpl == 9)),
                              _join(run_str, ".t", turn_str, ".sub"),
                              pc.if_else(pa.array((tpl == 2) | (tpl == 3) | (tpl == 10)
                                                  | (tpl == 11)),
                                         _join(run_str, ".t", turn_str, ".m",
                                               pc.cast(pa.array(tpl // 8), pa.string())),
                                         pc.if_else(pa.array(tpl == 14),
                                                    _join(run_str, ".t", turn_str, ".msg"),
                                                    pa.scalar(None, pa.string()))))))
    cache_hit_row = (tpl == 5) & (turn % cache_every == 0)
    cache_key = pc.if_else(pa.array(cache_hit_row), _join("ck-", run_str, ".t", turn_str),
                           pa.scalar(None, pa.string()))
    payload = pc.if_else(
        pa.array(tpl == 12), _join('{"export_id":"', run_str, ".e", turn_str,
                                   '","format":"csv","uri":"s3://x/', turn_str, '"}'),
        pc.if_else(pa.array(tpl == 13), _join('{"card_id":"', run_str, ".u", turn_str,
                                              '","title":"card ', turn_str, '"}'),
                   pc.if_else(pa.array(tpl == 6), pa.scalar('{"kind":"approval","reason":"x"}'),
                              pc.if_else(pa.array(tpl == 8), pa.scalar('{"label":"helper"}'),
                                         pa.scalar("{}")))))
    tok_mask = ~is_model_done
    table = events_table(
        {
            "tenant_id": pa.array(tenant_of_run[run_of]),
            "run_id": run_id,
            "seq": (pos + 1).astype(np.int64),
            "type": pa.array(types[tpl]),
            "kind": pa.array(kinds[tpl]),
            "turn": turn,
            "step": np.where((tpl >= 2) & (tpl <= 11), 1 + (tpl >= 10), 0).astype(np.int32),
            "ref_id": ref,
            "tool_name": pa.array(np.where(is_tool, tool, _NONE)),
            "cache_key": cache_key,
            "is_error": err,
            "finish": pa.array(finish),
            "input_tokens": pa.array(in_tok, mask=tok_mask),
            "output_tokens": pa.array(out_tok, mask=tok_mask),
            "payload": payload,
            "source": pa.array(np.full(n, "synthetic:mem")),
        }
    )
    return EventLog(table, sort=False)
