"""read_toh's constants and shapes: the type -> kind map, chunk types, packed-row rules, the
columns gathered while reading and a file's context.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import LoadError
from .._common import (
    Quarantine,
)

FORMAT = "toh"

_PATTERNS = ("*.jsonl",)
_SIDE_FILES = ("replay.override.json",)

#: source ``type`` -> canonical ``kind``; anything else is ``"other"`` (kept, never dropped).
KIND_OF_TYPE: dict[str, str] = {
    "session": "session",
    "session/title": "session",
    "session/end-seed": "session",
    "sandbox/mode": "session",
    "permission/preset": "session",
    "approval/policy": "session",
    "user/message": "user_message",
    "request/header": "model_request",
    "assistant/chunk": "model_chunk",
    "assistant/message": "model_response",
    "tool/call": "tool_call",
    "tool/result": "tool_result",
    "turn/start": "turn_start",
    "turn/end": "turn_end",
    "step/start": "step_start",
    "step/end": "step_end",
    "approval/asked": "approval_request",
    "approval/decided": "approval_decision",
    "subagent/descriptor": "subagent_start",
    "tool-workflow/agent-start": "subagent_start",
    "tool-workflow/agent-end": "subagent_end",
}

#: StreamChunk ``type`` -> canonical ``chunk_type``.
CHUNK_TYPES: dict[str, str] = {
    "text-delta": "text",
    "reasoning-delta": "reasoning",
    "tool-call-delta": "tool-call",
}

# packed row type -> (code, member array key, keys allowed in data)
_PACKED: dict[str, tuple[int, str, frozenset[str]]] = {
    "text-chunks": (0, "texts", frozenset({"turn", "step", "index", "dt", "texts"})),
    "reasoning-chunks": (1, "texts", frozenset({"turn", "step", "index", "dt", "texts"})),
    "tool-call-chunks": (
        2,
        "args",
        frozenset({"turn", "step", "index", "dt", "id", "name", "args"}),
    ),
}
_PACKED_TOP = frozenset({"type", "data", "seq0", "time0"})
_CHUNK_OF_CODE = ("text", "reasoning", "tool-call")
_INT32 = (-(2**31), 2**31 - 1)


class OrphanRunWarning(UserWarning):
    """A child log names a ``parentSession`` that is not among the loaded logs.

    The child is loaded anyway and keeps ``parent_run_id`` = the named parent id; load the
    parent's folder too to link them.
    """


class _Rows:
    """Column lists gathered while reading lines (one entry per non-packed event line)."""

    def __init__(self) -> None:
        self.rows: list[tuple] = []  # see _ROW_FIELDS
        self.rare: list[tuple] = []  # (row index, seq, time, *_RARE_FIELDS)
        self.p_meta: list[tuple] = []  # packed lines: (fi, lineno, code, turn, step, index,
        #                                 seq0, time0, n, id_json, name_json)
        self.p_texts: list[str] = []  # every packed member's text / argumentsDelta
        self.p_dt: list[int] = []  # per packed line: 0 followed by its dt gaps
        self.phantoms: list[tuple[int, int, int]] = []  # quarantined lines: (fi, lineno, slots)
        self.p_cols: list[tuple[int, Any]] = []  # packed rows proven column-wise: (fi, columns)
        self.r_cols: list[tuple[int, Any]] = []  # event lines proven column-wise: (fi, columns)
        self.n_parts: list[tuple[int, Any]] = []  # files read by the native core: (fi, columns)


_ROW_FIELDS = ("fi", "line", "type", "payload", "turn", "step", "chunk_type", "text")
#: fields most lines lack: gathered sparsely, as (row index, seq, time, *_RARE_FIELDS)
_RARE_FIELDS = (
    "ref_id", "tool_name", "args_hash", "cache_key", "is_error", "finish", "input_tokens",
    "output_tokens", "event_id",
)  # fmt: skip
_NO_RARE = (None, None, None, None, False, None, None, None, None)
_I32_MIN, _I32_MAX = _INT32


class _FileCtx:
    __slots__ = ("fi", "path", "src", "header", "quarantine")

    def __init__(self, fi: int, path: Path, quarantine: Quarantine) -> None:
        self.fi = fi
        self.path = path
        self.src = str(path)
        self.header: dict | None = None
        self.quarantine = quarantine

    def err(self, line: int | None, reason: str, detail: str, field: str | None = None,
            fix: str | None = None) -> LoadError:  # fmt: skip
        return LoadError(source=self.src, line=line, reason=reason, detail=detail, field=field,
                         fix=fix)  # fmt: skip
