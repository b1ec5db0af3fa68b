"""Generator of pleach ``harness_event_log`` exports (JSONL or Parquet)."""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from .._base.json import canonical_json, loads
from ..integrity.chain import GENESIS
from ._words import sentence, tool_args, tool_output

__all__ = ["generate_pleach"]

_BASE_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
_MODELS = (("gpt-5-mini", "openai"), ("claude-sonnet-5", "anthropic"), ("gemini-3-pro", "google"))
_TOOLS = ("read_file", "bash", "grep", "write_file", "web_search", "list_dir")
_ERR_CODES = ("RATE_LIMIT", "TIMEOUT", "CONTEXT_WINDOW_EXCEEDED", "INTERNAL")


def _iso(ms: int) -> str:
    secs, milli = divmod(ms, 1000)
    import datetime as _dt

    t = _dt.datetime.fromtimestamp(secs, tz=_dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + f".{milli:03d}Z"


class _Chat:
    """Builds the events of one chat, in order, within an event budget."""

    def __init__(
        self,
        rng: random.Random,
        tenant: str,
        chat_id: str,
        budget: int,
        children: list[str],
        start_ms: int,
    ) -> None:
        self.rng = rng
        self.tenant = tenant
        self.chat_id = chat_id
        self.budget = budget
        self.children = list(children)
        self.ms = start_ms
        self.rows: list[tuple[str, dict[str, Any], int]] = []
        self.n_ids = 0

    def _id(self, prefix: str) -> str:
        self.n_ids += 1
        return f"{prefix}_{self.chat_id[-6:]}_{self.n_ids:05d}"

    def emit(self, event_type: str, payload: dict[str, Any]) -> bool:
        if len(self.rows) >= self.budget:
            return False
        self.ms += self.rng.randint(5, 4000)
        self.rows.append((event_type, payload, self.ms))
        return True

    def build(self) -> list[tuple[str, dict[str, Any], int]]:
        rng = self.rng
        turn = 0
        while len(self.rows) < self.budget:
            turn += 1
            msg_id = self._id("msg")
            self.emit("turn.started", {"turn": turn, "message_id": msg_id})
            self.emit("message.user", {"message_id": msg_id, "text": sentence(rng, 4, 30)})
            model, provider = rng.choice(_MODELS)
            for _step in range(rng.randint(1, 5)):
                call_id = self._id("mc")
                req: dict[str, Any] = {"call_id": call_id, "model": model, "provider": provider}
                if rng.random() < 0.3:
                    req["settings"] = {"temperature": round(rng.random(), 2), "max_tokens": 4096}
                if rng.random() < 0.2:
                    req["messages"] = [{"role": "user", "content": sentence(rng, 3, 12)}]
                self.emit("model.requested", req)
                r = rng.random()
                finish = "tool-calls" if r < 0.6 else "stop" if r < 0.93 else (
                    "max-tokens" if r < 0.97 else "error"
                )
                done: dict[str, Any] = {
                    "call_id": call_id,
                    "model": model,
                    "finish": finish,
                    "usage": {
                        "input_tokens": rng.randint(200, 60_000),
                        "output_tokens": rng.randint(5, 3_000),
                    },
                }
                if finish != "tool-calls" or rng.random() < 0.4:
                    done["text"] = sentence(rng, 3, 60)
                if rng.random() < 0.25:
                    done["cacheKey"] = f"ck_{rng.randrange(16**10):010x}"
                self.emit("model.completed", done)
                if finish == "error":
                    self.emit(
                        "error.raised",
                        {"code": rng.choice(_ERR_CODES), "message": sentence(rng, 3, 10)},
                    )
                    break
                if finish != "tool-calls":
                    break
                for _k in range(rng.randint(1, 3)):
                    self._tool_call()
            if self.children and rng.random() < 0.5:
                self._subagent(self.children.pop(0))
            r = rng.random()
            if r < 0.05:
                self.emit("checkpoint.created", {"checkpoint_id": self._id("ckpt")})
            elif r < 0.08:
                self.emit(
                    "export.created",
                    {
                        "export_id": self._id("exp"),
                        "format": rng.choice(["pdf", "csv", "md"]),
                        "uri": f"s3://exports/{self.tenant}/{self._id('f')}",
                    },
                )
            elif r < 0.11:
                self.emit(
                    "user_card.shown",
                    {"card_id": self._id("card"), "title": sentence(rng, 2, 5)},
                )
            done_turn: dict[str, Any] = {"turn": turn, "message_id": msg_id}
            if rng.random() < 0.3:
                done_turn["cacheKey"] = f"tk_{rng.randrange(16**10):010x}"
            self.emit("turn.completed", done_turn)
        return self.rows

    def _tool_call(self) -> None:
        rng = self.rng
        call_id = self._id("tc")
        tool = rng.choice(_TOOLS)
        self.emit("tool.called", {"call_id": call_id, "tool": tool, "args": tool_args(rng, tool)})
        if tool in ("bash", "write_file") and rng.random() < 0.15:
            intr = self._id("int")
            self.emit(
                "interrupt.raised",
                {"interrupt_id": intr, "kind": "approval", "reason": f"{tool} needs approval"},
            )
            outcome = "approved" if rng.random() < 0.8 else "rejected"
            self.emit("interrupt.resolved", {"interrupt_id": intr, "outcome": outcome})
            if outcome == "rejected":
                self.emit(
                    "tool.completed",
                    {
                        "call_id": call_id,
                        "tool": tool,
                        "result": "rejected by user",
                        "is_error": True,
                        "error": {"name": "ApprovalError", "code": "REJECTED",
                                  "message": "the user rejected the call"},
                    },
                )
                return
        failed = rng.random() < 0.07
        res: dict[str, Any] = {
            "call_id": call_id,
            "tool": tool,
            "result": tool_output(rng, tool, failed),
            "is_error": failed,
        }
        if failed:
            res["error"] = {"name": "ToolError", "code": "EXIT_1", "message": "command failed"}
        if rng.random() < 0.3:
            res["cacheKey"] = f"tr_{rng.randrange(16**10):010x}"
        self.emit("tool.completed", res)

    def _subagent(self, child: str) -> None:
        sid = self._id("sub")
        self.emit(
            "subagent.spawned",
            {"subagent_id": sid, "label": sentence(self.rng, 1, 3), "child_chat_id": child},
        )
        self.emit("subagent.completed", {"subagent_id": sid, "outcome": "completed"})


def _row_hash(prev: str, row: dict[str, Any], ms: int) -> str:
    """The row's hash under the chain defined in replaykit.integrity (docs/integrity.md)."""
    from ..integrity.content import row_content

    content = row_content(
        {
            "payload": canonical_json(row["payload"]),
            "run_id": row["chat_id"],
            "seq": row["sequence_number"],
            "tenant_id": row["tenant_id"],
            "ts": ms * 1000,
            "type": row["event_type"],
        }
    )
    return hashlib.sha256(prev.encode("ascii") + content).hexdigest()


def _iter_rows(
    *,
    events: int,
    runs: int,
    tenants: Sequence[str],
    seed: int,
    timestamps: str,
    hashes: bool,
) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed)
    runs = max(1, min(runs, events)) if events else 0
    base, extra = divmod(events, runs) if runs else (0, 0)
    chats = []
    for i in range(runs):
        tenant = tenants[i % len(tenants)]
        chats.append((tenant, f"chat_{seed:x}_{i:06d}", base + (1 if i < extra else 0)))
    # some chats are subagent children of an earlier chat of the same tenant
    children: dict[int, list[str]] = {}
    for i in range(len(tenants), runs):
        if rng.random() < 0.12:
            parent = i - len(tenants) * rng.randint(1, max(1, min(5, i // len(tenants))))
            children.setdefault(max(parent, 0), []).append(chats[i][1])
    for i, (tenant, chat_id, budget) in enumerate(chats):
        if budget == 0:
            continue
        chat = _Chat(
            random.Random(rng.getrandbits(64)),
            tenant,
            chat_id,
            budget,
            children.get(i, []),
            _BASE_MS + i * 60_000,
        )
        prev: str = GENESIS
        style = timestamps
        if timestamps == "mixed":
            style = "epoch_ms" if tenants.index(tenant) % 3 == 2 else "iso"
        for seq, (event_type, payload, ms) in enumerate(chat.build()):
            # Key-sorted payload: written as-is it is its own canonical JSON, so the text the
            # loader keeps is exactly what the hash chain covers.
            payload = loads(canonical_json(payload))
            row: dict[str, Any] = {
                "tenant_id": tenant,
                "chat_id": chat_id,
                "sequence_number": seq,
                "event_type": event_type,
                "payload": payload,
                "created_at": ms if style == "epoch_ms" else _iso(ms),
                "prev_hash": prev,
                "row_hash": None,
            }
            if hashes:
                row["row_hash"] = _row_hash(prev, row, ms)
                prev = row["row_hash"]
            else:
                row["prev_hash"] = None
            yield row


def generate_pleach(
    path: str | os.PathLike[str],
    *,
    events: int,
    runs: int,
    tenants: Sequence[str] = ("acme", "globex", "initech"),
    seed: int = 0,
    format: Literal["jsonl", "parquet"] = "jsonl",
    timestamps: Literal["iso", "epoch_ms", "mixed"] = "iso",
    hashes: bool = True,
) -> Path:
    """Write a realistic pleach ``harness_event_log`` export; deterministic from ``seed``.

    Exactly ``events`` rows over ``runs`` chats (tenants assigned round-robin). Chats hold
    turns of model calls with tool calls (some failing, some behind an approval interrupt),
    subagent children (``subagent.spawned`` names the child chat), checkpoints, exports,
    user cards, error events and ``cacheKey``s; a chat whose event budget runs out stops
    mid-turn, as a cut-off export would. Rows are written chat by chat, in sequence order.

    ``created_at`` is ISO-8601 (``"iso"``), epoch milliseconds (``"epoch_ms"``) or, with
    ``"mixed"``, epoch ms for every third tenant (a file mixing both loads through the
    loader's slower per-line path; real exports use one representation per file).
    With ``hashes=True`` rows carry the hash chain defined in
    :mod:`replaykit.integrity` (``docs/integrity.md``), so the loaded log verifies intact;
    otherwise ``prev_hash``/``row_hash`` are null.

    In Parquet, ``payload`` is a string column of JSON text and ``created_at`` keeps the
    JSONL representation (string or int64 column; ``"mixed"`` is written as strings).

    Returns the path written.

    Raises:
        ValueError: ``events``/``runs`` negative, ``tenants`` empty, or an unknown ``format``.

    >>> from replaykit.datasets import generate_pleach
    >>> p = generate_pleach("/tmp/demo.jsonl", events=100, runs=4)  # doctest: +SKIP
    """
    if events < 0 or runs < 0:
        raise ValueError(f"events and runs must be >= 0, got events={events}, runs={runs}")
    tenants = list(tenants)
    if not tenants or not all(isinstance(t, str) and t for t in tenants):
        raise ValueError(f"tenants must be non-empty strings, got {tenants!r}")
    if format not in ("jsonl", "parquet"):
        raise ValueError(f'format must be "jsonl" or "parquet", got {format!r}')
    if timestamps not in ("iso", "epoch_ms", "mixed"):
        raise ValueError(f"timestamps must be iso, epoch_ms or mixed, got {timestamps!r}")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = _iter_rows(
        events=events, runs=runs, tenants=tenants, seed=seed, timestamps=timestamps, hashes=hashes
    )
    if format == "jsonl":
        _write_jsonl(out, rows)
    else:
        _write_parquet(out, rows, string_ts=timestamps != "epoch_ms")
    return out


def _write_jsonl(out: Path, rows: Iterator[dict[str, Any]]) -> None:
    try:
        import orjson

        def enc(r: dict[str, Any]) -> bytes:
            return orjson.dumps(r)
    except ImportError:  # pragma: no cover
        import json

        def enc(r: dict[str, Any]) -> bytes:
            return json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    buf: list[bytes] = []
    with open(out, "wb") as fh:
        for r in rows:
            buf.append(enc(r))
            if len(buf) >= 20_000:
                fh.write(b"\n".join(buf) + b"\n")
                buf.clear()
        if buf:
            fh.write(b"\n".join(buf) + b"\n")


def _write_parquet(out: Path, rows: Iterator[dict[str, Any]], *, string_ts: bool) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [
            ("tenant_id", pa.string()),
            ("chat_id", pa.string()),
            ("sequence_number", pa.int64()),
            ("event_type", pa.string()),
            ("payload", pa.string()),
            ("created_at", pa.string() if string_ts else pa.int64()),
            ("prev_hash", pa.string()),
            ("row_hash", pa.string()),
        ]
    )
    cols: dict[str, list[Any]] = {n: [] for n in schema.names}

    def flush(writer: Any) -> None:
        writer.write_table(pa.table(cols, schema=schema))
        for v in cols.values():
            v.clear()

    with pq.ParquetWriter(out, schema) as writer:
        for r in rows:
            for n in schema.names:
                v = r[n]
                if n == "payload":
                    v = canonical_json(v)
                elif n == "created_at" and string_ts:
                    v = str(v)
                cols[n].append(v)
            if len(cols["tenant_id"]) >= 50_000:
                flush(writer)
        if cols["tenant_id"]:
            flush(writer)
