"""Small deterministic log generator for the integrity and SQL tests and benchmarks.

Builds canonical tables column-wise with numpy/Arrow (no file loaders involved): pleach-style
event types, canonical JSON payloads, timestamps with some nulls, tool rows with names and
args hashes, and ids that need JSON escaping (quotes, backslashes, control characters,
non-ASCII) so the canonical row bytes are exercised.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from replaykit import EventLog
from replaykit.schema import events_table

_TYPES = np.array(
    [
        ("turn.started", "turn_start"),
        ("message.user", "user_message"),
        ("model.requested", "model_request"),
        ("model.completed", "model_response"),
        ("tool.called", "tool_call"),
        ("tool.completed", "tool_result"),
        ("checkpoint.created", "checkpoint"),
        ("turn.completed", "turn_end"),
    ]
)
_TOOLS = np.array(["search", "read_file", "bash", "write_file"])
_WORDS = np.array(["alpha", "β-test", 'quote"d', "back\\slash", "new\nline", "tab\there", "😀 ok"])


def make_log(
    n_events: int,
    *,
    n_runs: int = 10,
    tenants: tuple[str, ...] = ("acme", "globex"),
    seed: int = 0,
    odd_ids: bool = True,
) -> EventLog:
    """An EventLog of ``n_events`` rows spread over ``n_runs`` runs and ``tenants``.

    Run ``r`` belongs to tenant ``tenants[r % len(tenants)]``; seqs are 0.. per run.
    """
    rng = np.random.default_rng(seed)
    n_runs = max(1, min(n_runs, max(n_events, 1)))
    run_of = np.sort(rng.integers(0, n_runs, size=n_events)) if n_events else np.zeros(0, int)
    run_of[: min(n_runs, n_events)] = np.arange(min(n_runs, n_events))
    run_of = np.sort(run_of)
    starts = np.searchsorted(run_of, np.arange(n_runs))
    seq = np.arange(n_events) - starts[run_of]
    tenant_names = np.array(tenants, dtype=object)
    tenant = tenant_names[run_of % len(tenants)]
    suffix = (
        np.array(['"q"', "\\b", "é", "\x01", "", "", "", ""], dtype=object) if odd_ids else [""]
    )
    run_ids = np.array(
        [f"run-{r:05d}{suffix[r % len(suffix)]}" for r in range(n_runs)], dtype=object
    )
    run = run_ids[run_of]
    which = seq % len(_TYPES)
    typ = _TYPES[which, 0]
    kind = _TYPES[which, 1]
    turn = (seq // len(_TYPES)).astype(np.int32)
    base = np.datetime64("2025-03-01T00:00:00", "us").astype(np.int64)
    ts_vals = base + run_of.astype(np.int64) * 3_600_000_000 + seq * 1_234_567
    ts = pa.array(ts_vals, pa.timestamp("us", tz="UTC"), mask=(rng.random(n_events) < 0.05))
    words = _WORDS[rng.integers(0, len(_WORDS), size=n_events)]
    amount = rng.integers(-(10**9), 10**9, size=n_events)
    tool = _TOOLS[rng.integers(0, len(_TOOLS), size=n_events)]
    is_tool = (kind == "tool_call") | (kind == "tool_result")
    call_id = pc.binary_join_element_wise(
        "c", pc.cast(pa.array(turn), pa.string()), "-", pc.cast(pa.array(run_of), pa.string()), ""
    )
    # payload: canonical JSON text, built column-wise
    words_json = pc.replace_substring(
        pc.replace_substring(
            pc.replace_substring(
                pc.replace_substring(pa.array(words, pa.string()), "\\", "\\\\"), '"', '\\"'
            ),
            "\n",
            "\\n",
        ),
        "\t",
        "\\t",
    )
    payload = pc.binary_join_element_wise(
        '{"amount":',
        pc.cast(pa.array(amount), pa.string()),
        ',"call_id":"',
        call_id,
        '","note":"',
        words_json,
        '","turn":',
        pc.cast(pa.array(turn), pa.string()),
        "}",
        "",
    )
    text = pa.array(words, pa.large_string(), mask=~np.isin(kind, ["user_message", "tool_result"]))
    tool_name = pa.array(tool, pa.string(), mask=~is_tool)
    ref_id = pa.array(call_id.to_pylist(), pa.string(), mask=~is_tool)
    table = events_table(
        {
            "tenant_id": pa.array(tenant, pa.string()),
            "run_id": pa.array(run, pa.string()),
            "seq": seq.astype(np.int64),
            "type": pa.array(typ, pa.string()),
            "kind": pa.array(kind, pa.string()),
            "ts": ts,
            "turn": pa.array(turn, pa.int32()),
            "ref_id": ref_id,
            "tool_name": tool_name,
            "is_error": (rng.random(n_events) < 0.03),
            "input_tokens": pa.array(amount % 5000, pa.int64(), mask=kind != "model_response"),
            "text": text,
            "payload": pa.array(payload.to_pylist(), pa.large_string()),
            "source": pa.array(np.full(n_events, "gen:memory", dtype=object), pa.string()),
            "source_line": np.arange(1, n_events + 1, dtype=np.int64),
        }
    )
    return EventLog(table)
