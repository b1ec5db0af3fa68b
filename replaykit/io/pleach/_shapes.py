"""read_pleach's constants and intermediate shapes: the event kinds, the envelope and typed
payload fields, a block's rows (``_Part``) and the per-file row counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

FORMAT = "pleach"

#: pleach event type -> canonical ``kind`` (anything else maps to ``"other"``).
EVENT_KINDS: dict[str, str] = {
    "turn.started": "turn_start",
    "turn.completed": "turn_end",
    "message.user": "user_message",
    "model.requested": "model_request",
    "model.completed": "model_response",
    "tool.called": "tool_call",
    "tool.completed": "tool_result",
    "interrupt.raised": "approval_request",
    "interrupt.resolved": "approval_decision",
    "subagent.spawned": "subagent_start",
    "subagent.completed": "subagent_end",
    "checkpoint.created": "checkpoint",
    "error.raised": "error",
    "export.created": "other",
    "user_card.shown": "other",
}

_REQUIRED_COLUMNS = ("tenant_id", "chat_id", "sequence_number", "event_type", "payload")
_PATTERNS = ("*.jsonl", "*.ndjson", "*.json", "*.parquet")
_BLOCK = 16 << 20

_STR = pa.string()
_ENVELOPE_FIELDS = [
    ("tenant_id", _STR),
    ("chat_id", _STR),
    ("sequence_number", pa.int64()),
    ("event_type", _STR),
    ("prev_hash", _STR),
    ("row_hash", _STR),
]
#: Typed payload fields read column-wise; everything else stays in ``payload`` only.
_TYPED = pa.schema(
    [
        ("turn", pa.int64()),
        ("message_id", _STR),
        ("call_id", _STR),
        ("tool", _STR),
        ("finish", _STR),
        ("text", _STR),
        ("result", _STR),
        ("is_error", pa.bool_()),
        ("usage", pa.struct([("input_tokens", pa.int64()), ("output_tokens", pa.int64())])),
        ("cacheKey", _STR),
        ("interrupt_id", _STR),
        ("reason", _STR),
        ("subagent_id", _STR),
        ("child_chat_id", _STR),
        ("checkpoint_id", _STR),
        ("export_id", _STR),
        ("card_id", _STR),
        ("message", _STR),
    ]
)

_FIX_TENANT = (
    "Every pleach row must name its tenant: fix the export, or pass errors=\"quarantine\" "
    "to load the other rows."
)


class _FastPathFailed(Exception):
    """The block cannot be read column-wise; use the robust per-line path."""


# ----------------------------------------------------------------------------- results
@dataclass
class _Part:
    """Rows of one block in an intermediate, format-neutral shape."""

    env: pa.Table  # tenant_id, chat_id, sequence_number, event_type, prev_hash, row_hash
    created_at: pa.Array  # string, integer or timestamp values (null allowed)
    payload: pa.Array  # large_string, JSON object text
    typed: pa.Table  # _TYPED columns; after _slim: the canonical columns (_canonical_columns)
    line: np.ndarray  # 1-based line (or row) number
    raw: pa.Array | None = None  # the row's raw text (for quarantine), or None
    # set by _slim once the rows are final: tool-call arguments, their hash, the text column
    args: pa.Array | None = None
    hashes: pa.Array | None = None
    text: pa.Array | None = None
    # the native core found every row passing _check_rows' checks but the timestamp's
    checked: bool = False
    # read by the native core, which checked the block's bytes are UTF-8: every text column
    # of the part is (slices of them, or text it decoded or wrote; see _read_pleach)
    native: bool = False


@dataclass
class _Counts:
    input_rows: int = 0
    filtered_out: int = 0
    quarantined: int = 0
    extra: dict[str, int] = field(default_factory=dict)
