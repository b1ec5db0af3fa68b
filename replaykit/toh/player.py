"""ScriptPlayer: recorded toh model-call scripts served as a model executor.

``rk.toh.model_scripts(scenario)`` gives one script per recorded session (primary first, then
the subagent children by ``createdAt``). A :class:`ScriptPlayer` serves them to *live*
sessions, the way the harness's replay plugin does:

* live session ids never equal the recorded ones, so a live session is bound to a script the
  first time it calls the model: the first calling session takes the first script, the next
  new session the next script, and so on; each session then advances its own cursor;
* a call without a session id belongs to the anonymous session, which is the primary's: it
  uses (and advances) the primary script's cursor;
* more distinct live sessions than scripts raise :class:`ScriptSessionsExhaustedError`; more
  calls in a session than its script has raise :class:`ScriptCallsExhaustedError`;
* each call gets its entry's chunks with every ``{{fromRequest:<regex>}}`` resolved against
  the live request's messages (:func:`replaykit.toh.scripts.resolve_placeholders`);
* :meth:`ScriptPlayer.assert_consumed` raises :class:`ScriptNotConsumedError` when a script
  (or some of its calls) was never served; :meth:`ScriptPlayer.unconsumed_df` lists them.

Used as the ``model_executor`` of ``rk.replay(..., model_policy="pinned-live")``, a call
returns an output mapping (``text``, ``reasoning``, ``toolCalls``, ``finish``, ``usage``,
``chunks``): the replay puts it in place of the recorded output (docs/toh_scripts.md,
"Playing scripts").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from .scripts import SessionScript, TohScriptError, model_scripts, resolve_placeholders

__all__ = [
    "ScriptCallsExhaustedError",
    "ScriptHangError",
    "ScriptNotConsumedError",
    "ScriptPlayer",
    "ScriptSessionsExhaustedError",
    "entry_output",
]

_ANON = object()  # the key of calls without a session id


class ScriptSessionsExhaustedError(TohScriptError):
    """More distinct live sessions called the model than the scenario recorded scripts."""


class ScriptCallsExhaustedError(TohScriptError):
    """A live session made more model calls than its script holds."""


class ScriptNotConsumedError(TohScriptError):
    """Scripts (or calls of scripts) were never served (:meth:`ScriptPlayer.assert_consumed`).

    Attributes:
        unconsumed: the rows of :meth:`ScriptPlayer.unconsumed_df`.
    """

    def __init__(self, message: str, unconsumed: pd.DataFrame) -> None:
        self.unconsumed = unconsumed
        super().__init__(message)


class ScriptHangError(TohScriptError):
    """A ``hang`` entry: the recorded stream stalled until cancelled; a batch replay cannot
    wait for a cancellation, so the call raises instead."""


def entry_output(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A model output mapping from one (resolved) script entry.

    ``text`` / ``reasoning``: the text of the ``block-end`` text / reasoning blocks (else the
    joined deltas); ``toolCalls``: one ``{toolCallId, toolName, args}`` per tool-call block;
    ``finish``: the ``finish`` chunk's kind (``"error"`` for a ``throw`` entry, which also
    gets ``error: {message, code}``); ``usage``: the last ``usage`` chunk's; ``chunks``: the
    chunks as served.

    >>> entry_output({"kind": "chunks", "chunks": [
    ...     {"type": "text-delta", "index": 0, "text": "hi"},
    ...     {"type": "finish", "reason": {"kind": "stop"}}]})["text"]
    'hi'

    Raises:
        ScriptHangError: a ``hang`` entry.
    """
    if entry.get("kind") == "hang":
        raise ScriptHangError("the script entry is a 'hang' (a stream that stalls until "
                              "cancelled); a replay cannot serve it -- patch the scenario's "
                              "sidecar, or stop the replay before this call")
    chunks = list(entry.get("chunks") or [])
    blocks: dict[str, list[str]] = {"text": [], "reasoning": []}
    deltas: dict[str, list[str]] = {"text": [], "reasoning": []}
    calls: list[dict[str, Any]] = []
    finish = None
    usage = None
    for c in chunks:
        if not isinstance(c, Mapping):
            continue
        typ = c.get("type")
        if typ in ("text-delta", "reasoning-delta"):
            part = c.get("text", c.get("delta"))
            if isinstance(part, str):
                deltas["text" if typ == "text-delta" else "reasoning"].append(part)
        elif typ == "block-end" and isinstance(c.get("block"), Mapping):
            b = c["block"]
            if b.get("type") in ("text", "reasoning") and isinstance(b.get("text"), str):
                blocks[b["type"]].append(b["text"])
            elif b.get("type") == "tool-call":
                calls.append({"toolCallId": b.get("id"), "toolName": b.get("name"),
                              "args": b.get("arguments", b.get("input"))})
        elif typ == "usage":
            usage = c.get("usage")
        elif typ == "finish":
            reason = c.get("reason")
            finish = reason.get("kind") if isinstance(reason, Mapping) else reason
    out: dict[str, Any] = {
        "text": "".join(blocks["text"]) if blocks["text"] else ("".join(deltas["text"])
                                                              or None),
        "reasoning": "".join(blocks["reasoning"]) if blocks["reasoning"] else (
            "".join(deltas["reasoning"]) or None),
        "finish": finish, "usage": usage, "chunks": chunks,
    }
    if calls:
        out["toolCalls"] = calls
    if entry.get("kind") == "throw":
        out["finish"] = "error"
        out["error"] = {"message": entry.get("message"), "code": entry.get("code")}
    return out


def _messages_of(request: Any) -> Any:
    if isinstance(request, Mapping):
        for key in ("messages", "input", "prompt"):
            if key in request:
                return request[key]
    return request if isinstance(request, list) else []


class ScriptPlayer:
    """Serve recorded toh scripts to live sessions in first-call order (module docstring).

    Args:
        scripts: the output of :func:`replaykit.toh.scripts.model_scripts`, or a scenario
            folder / primary log (then ``model_scripts(scripts, **kwargs)`` is called).

    Example:
        >>> player = rk.toh.ScriptPlayer("corpus/toh/.../subagent-multi")  # doctest: +SKIP
        >>> res = rk.replay(parent_branch, model_policy="pinned-live",
        ...                 model_executor=player.executor("live-parent"))  # doctest: +SKIP
        >>> player.assert_consumed()  # doctest: +SKIP

    Raises:
        ValueError: no scripts.
    """

    def __init__(self, scripts: Sequence[SessionScript] | str | Path, **kwargs: Any) -> None:
        if isinstance(scripts, (str, Path)):
            scripts = model_scripts(scripts, **kwargs)
        self.scripts: tuple[SessionScript, ...] = tuple(scripts)
        if not self.scripts:
            raise ValueError("ScriptPlayer needs at least one script")
        self._bound: dict[Any, int] = {}  # live session -> script index
        self._cursor = [0] * len(self.scripts)
        primary = [i for i, s in enumerate(self.scripts) if s.primary]
        self._primary = primary[0] if primary else 0
        self.served: list[dict[str, Any]] = []

    # ------------------------------------------------------------------ binding
    def _bind(self, session: Any) -> int:
        if session in self._bound:
            return self._bound[session]
        if session is _ANON:  # the anonymous session is the primary's
            idx = self._primary
        else:
            taken = set(self._bound.values())
            free = [i for i in range(len(self.scripts)) if i not in taken]
            if not free:
                raise ScriptSessionsExhaustedError(
                    f"live session {session!r} is a new session calling the model, but the "
                    f"scenario recorded {len(self.scripts)} script(s), all bound "
                    f"({self.bindings()}). The live run delegates more than the recording "
                    "did; record the scenario again or check the agent's routing.")
            idx = free[0]
        self._bound[session] = idx
        return idx

    def bindings(self) -> dict[str, str | None]:
        """Live session -> recorded session id of its script (anonymous: ``"<anonymous>"``)."""
        return {("<anonymous>" if k is _ANON else str(k)): self.scripts[v].session_id
                for k, v in self._bound.items()}

    # ------------------------------------------------------------------ serving
    def call(self, request: Any = None, *, session_id: str | None = None) -> dict[str, Any]:
        """Serve the next call of ``session_id``'s script (binding it on its first call):
        the entry with placeholders resolved against ``request``'s messages.

        ``request`` is the live request (a mapping with ``messages`` / ``input``, or the
        message list); ``session_id`` defaults to the request's ``sessionId`` / ``session_id``.

        Raises:
            ScriptSessionsExhaustedError / ScriptCallsExhaustedError: see the module docstring.
            PlaceholderError: a placeholder that does not resolve against the request.
        """
        if session_id is None and isinstance(request, Mapping):
            session_id = request.get("sessionId", request.get("session_id"))
        key: Any = _ANON if session_id is None else session_id
        idx = self._bind(key)
        script = self.scripts[idx]
        k = self._cursor[idx]
        if k >= len(script.calls):
            raise ScriptCallsExhaustedError(
                f"live session {('<anonymous>' if key is _ANON else key)!r} (script of recorded "
                f"session {script.session_id!r}) made call {k + 1}, but the script has "
                f"{len(script.calls)} call(s). The live run diverged from the recording.")
        entry = resolve_placeholders(script.calls[k], _messages_of(request))
        self._cursor[idx] = k + 1
        self.served.append({"session": None if key is _ANON else key, "script": idx,
                            "recorded_session": script.session_id, "call": k})
        return dict(entry)

    def __call__(self, request: Any = None, *, session_id: str | None = None,
                 **_: Any) -> dict[str, Any]:
        """Model-executor protocol (``executor(request, policy=...)``): the next call's output
        (:func:`entry_output`). Extra keyword arguments (``policy``) are ignored."""
        return entry_output(self.call(request, session_id=session_id))

    def executor(self, session_id: str) -> Callable[..., dict[str, Any]]:
        """A model executor bound to one live session (for replaying one run of a scenario:
        every call of that replay belongs to ``session_id``)."""
        def run(request: Any = None, **_: Any) -> dict[str, Any]:
            return self(request, session_id=session_id)

        return run

    # ------------------------------------------------------------------ accounting
    def unconsumed_df(self) -> pd.DataFrame:
        """One row per script with calls left: script index, recorded session_id, primary,
        calls, served, left, bound (whether a live session took it)."""
        rows = []
        bound = set(self._bound.values())
        for i, s in enumerate(self.scripts):
            left = len(s.calls) - self._cursor[i]
            if left > 0:
                rows.append({"script": i, "session_id": s.session_id, "primary": s.primary,
                             "calls": len(s.calls), "served": self._cursor[i], "left": left,
                             "bound": i in bound})
        cols = ["script", "session_id", "primary", "calls", "served", "left", "bound"]
        return pd.DataFrame(rows, columns=cols).astype(
            {"script": "Int64", "session_id": "string", "primary": "boolean", "calls": "Int64",
             "served": "Int64", "left": "Int64", "bound": "boolean"})

    def assert_consumed(self) -> None:
        """Raise :class:`ScriptNotConsumedError` unless every call of every script was served.

        Raises:
            ScriptNotConsumedError: listing each script with calls left.
        """
        left = self.unconsumed_df()
        if len(left):
            parts = []
            for r in left.itertuples():
                how = "never bound" if not r.bound else f"{int(r.served)} of {int(r.calls)} served"
                parts.append(f"script {int(r.script)} (session {r.session_id}, {how})")
            raise ScriptNotConsumedError(
                f"{len(left)} script(s) not fully consumed: {'; '.join(parts)}. The live run "
                "made fewer model calls (or delegated to fewer subagents) than the recording.",
                left)

    def __repr__(self) -> str:
        return (f"ScriptPlayer({len(self.scripts)} scripts, bound={len(self._bound)}, "
                f"served={len(self.served)})")
