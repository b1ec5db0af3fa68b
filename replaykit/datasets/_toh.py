"""Generator of toh session logs (the agent-harness session-log format; see docs/formats.md)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

from ._words import sentence, tool_args, tool_output

__all__ = ["generate_toh"]

_BASE_MS = 1_767_225_600_000
_TOOLS = ("read_file", "bash", "grep", "write_file", "list_dir")


def _words(rng: random.Random, n: int) -> list[str]:
    """``n`` stream pieces, as a model streams them (leading spaces, word fragments)."""
    out = []
    for i in range(n):
        w = sentence(rng, 1, 1)
        out.append(w if i == 0 else " " + w)
    return out


class _Session:
    def __init__(self, rng: random.Random, budget: int) -> None:
        self.rng = rng
        self.budget = budget
        self.seq = 0  # implicit sequence number of the next event
        self.lines: list[str] = []

    def line(self, obj: dict[str, Any], events: int = 1) -> None:
        self.lines.append(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))
        self.seq += events

    def chunk(self, turn: int, step: int, chunk: dict[str, Any]) -> None:
        self.line({"type": "assistant/chunk", "data": {"turn": turn, "step": step,
                                                       "chunk": chunk}})

    def packed(self, kind: str, turn: int, step: int, index: int, pieces: list[str],
               extra: dict[str, Any] | None = None) -> list[int]:
        seqs = list(range(self.seq, self.seq + len(pieces)))
        dt = [self.rng.choice((0, 0, 0, 1, 20, 27, 31)) for _ in pieces[1:]]
        data: dict[str, Any] = {"turn": turn, "step": step, "index": index, "dt": dt}
        if extra:
            data.update(extra)
        data["args" if kind == "tool-call-chunks" else "texts"] = pieces
        self.line({"type": kind, "data": data}, events=len(pieces))
        return seqs

    def build(self) -> list[str]:
        rng = self.rng
        turn = 0
        while self.seq < self.budget:
            turn += 1
            prompt = sentence(rng, 4, 25)
            self.line({"type": "turn/start", "data": {"turn": turn}})
            step = 0
            while True:
                step += 1
                self.line({"type": "step/start", "data": {"turn": turn, "step": step}})
                if step == 1:
                    self.line({"type": "user/message", "data": {"message": {
                        "content": [{"type": "text", "text": prompt}], "role": "user",
                        "id": f"u-{turn}"}, "surfaceOp": "append"}})
                self.line({"type": "request/header", "data": {"header": {"config": {
                    "provider": "deepseek-official", "model": "deepseek-v4-flash"}},
                    "reason": "initial" if step == 1 else "tool-results"}})
                call_seqs: list[int] = []
                content: list[dict[str, Any]] = []
                self.chunk(turn, step, {"type": "block-start", "index": 0,
                                        "blockType": "reasoning"})
                reasoning = _words(rng, rng.randint(5, 60))
                call_seqs += self.packed("reasoning-chunks", turn, step, 0, reasoning)
                content.append({"type": "reasoning", "text": "".join(reasoning)})
                use_tool = step < 4 and rng.random() < 0.6
                calls = []
                if use_tool:
                    tool = rng.choice(_TOOLS)
                    call_id = f"call_{turn:02d}_{step:02d}_{rng.randrange(16**8):08x}"
                    arguments = json.dumps(tool_args(rng, tool))
                    self.chunk(turn, step, {"type": "block-start", "index": 1,
                                            "blockType": "tool-call"})
                    cut = [arguments[i:i + 7] for i in range(0, len(arguments), 7)]
                    call_seqs += self.packed("tool-call-chunks", turn, step, 1, ["", *cut],
                                             {"id": call_id, "name": tool})
                    calls.append((call_id, tool, arguments))
                    content.append({"type": "tool-call", "id": call_id, "name": tool,
                                    "arguments": arguments})
                else:
                    self.chunk(turn, step, {"type": "block-start", "index": 1,
                                            "blockType": "text"})
                    text = _words(rng, rng.randint(3, 80))
                    call_seqs += self.packed("text-chunks", turn, step, 1, text)
                    content.append({"type": "text", "text": "".join(text)})
                self.chunk(turn, step, {"type": "usage", "usage": {
                    "inputTokens": rng.randint(100, 50_000),
                    "outputTokens": rng.randint(5, 2_000),
                    "cacheReadTokens": rng.choice((0, 0, 2816)),
                    "reasoningTokens": len(reasoning)}})
                finish = "tool-calls" if use_tool else "stop"
                self.chunk(turn, step, {"type": "finish", "reason": {"kind": finish}})
                self.line({"type": "assistant/message", "data": {"turn": turn, "step": step,
                           "message": {"role": "assistant", "content": content}},
                           "sourceEventSeqs": call_seqs})
                for call_id, tool, arguments in calls:
                    call_seq = self.seq
                    self.line({"type": "tool/call", "data": {"turn": turn, "step": step,
                               "callId": call_id, "name": tool, "arguments": arguments}})
                    failed = rng.random() < 0.07
                    self.line({"type": "tool/result", "data": {"turn": turn, "step": step,
                               "message": {"source": {"kind": "tool", "callId": call_id},
                                           "content": [{"type": "tool-result",
                                                        "toolCallId": call_id,
                                                        "content": [{"type": "text",
                                                                     "text": tool_output(
                                                                         rng, tool, failed)}],
                                                        "isError": failed}],
                                           "role": "user"}},
                               "sourceEventSeqs": [call_seq], "surfaceOp": "append"})
                self.line({"type": "step/end", "data": {"turn": turn, "step": step}})
                if not use_tool or self.seq >= self.budget:
                    break
            self.line({"type": "turn/end", "data": {"turn": turn,
                                                     "reason": {"kind": "completed"}}})
        return self.lines


def generate_toh(
    path: str | os.PathLike[str], *, events: int, seed: int = 0
) -> Path:
    """Write a realistic toh session log (``session.jsonl``) of about ``events`` events.

    The log follows the corpus format (documented in docs/formats.md): a ``session`` header
    line, then lines without a ``seq`` (sequence numbers are implicit), turns of steps with
    ``request/header``, streamed reasoning/text/tool-call chunks packed as
    ``reasoning-chunks`` / ``text-chunks`` / ``tool-call-chunks`` rows (one event per member,
    ``len(dt) == members - 1``), ``usage`` and ``finish`` chunks, an ``assistant/message``
    whose ``sourceEventSeqs`` lists the call's chunk events, ``tool/call`` (arguments as a
    JSON string) and ``tool/result`` (pointing at its call), ``step/start|end`` and
    ``turn/start|end``. Deterministic from ``seed``. The log stops at the end of the first
    turn that reaches ``events``, so it holds at least ``events`` events (a few more).

    Returns the path written.

    Raises:
        ValueError: ``events`` is negative.

    >>> from replaykit.datasets import generate_toh
    >>> generate_toh("/tmp/rk/session.jsonl", events=500)  # doctest: +SKIP
    """
    if events < 0:
        raise ValueError(f"events must be >= 0, got {events}")
    rng = random.Random(seed)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    header = {"type": "session", "version": 0,
              "id": f"sess-{seed:08x}-{rng.randrange(16**12):012x}",
              "createdAt": _BASE_MS + seed, "cwd": "/workspace", "delegationDepth": 0}
    session = _Session(rng, events)
    lines = session.build() if events else []
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(header, separators=(",", ":")) + "\n")
        for i in range(0, len(lines), 50_000):
            fh.write("\n".join(lines[i:i + 50_000]) + "\n")
    return out
