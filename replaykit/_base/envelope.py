"""Envelope and content: which members of each format's event payload are bookkeeping, and
the words for how a run ended and for what an event is.

Every loader keeps the source's event as ``payload``, envelope included: a Claude Code line
carries its working directory, git branch, Claude Code version, uuids and timestamp beside the
message; a Langfuse observation its ids, start and end times, latency and costs beside its
input and output. None of that is what the agent asked, called, received or said. Diffs keep
those changes but count and show them after the agent's own content
(:func:`replaykit.branch.findings.changes_df`, the findings, the report, the explorers).

:data:`BOOKKEEPING` declares them, per format (the ``source`` column's prefix before ``:``),
as JSON-pointer patterns grouped by what they are (``ids``, ``times``, ``cwd`` ...); every
format also gets :data:`REPLAY_BOOKKEEPING` (what a replay itself writes: the patch record,
argument hashes, fixture ids). A pattern matches a changed path when it matches the path or
one of its prefixes (a change under ``/message/usage`` is usage); ``*`` inside a segment
matches any characters but ``/``, and a ``**`` segment any number of segments (``**/ts``:
a member ``ts`` at any depth). Patterns spell keys unescaped (``/gen_ai.usage.*``).

>>> is_bookkeeping("/cwd", "claude_code"), is_bookkeeping("/message/content/0/text", "claude_code")
(True, False)
>>> bookkeeping_group("/message/usage/output_tokens", "claude_code")
'usage'
>>> bookkeeping_group("/argsHash", None)  # what the replay writes: every format
'replay'
>>> terminal_state("model_response", finish="stop", raw_finish="end_turn")
'stopped: end_turn'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

__all__ = ["BOOKKEEPING", "BOOKKEEPING_GROUPS", "REPLAY_BOOKKEEPING", "SAID",
           "bookkeeping_group", "bookkeeping_phrase", "content_first", "event_words",
           "format_of", "is_bookkeeping", "said_first", "terminal_state"]

#: What a replay writes into the events it produces (every format): how it produced the
#: event, not what the event says.
REPLAY_BOOKKEEPING: dict[str, tuple[str, ...]] = {
    "replay": ("/replayPatch", "**/argsHash", "**/argsArtifactId", "**/fixtureId",
               "**/provenance", "/executedBy", "**/blocked", "**/replayPatch"),
    "ids": ("**/eventId", "/refId"),
    "times": ("**/ts",),
}

#: Bookkeeping members of each format's payloads, by group (see the module docstring).
BOOKKEEPING: dict[str, dict[str, tuple[str, ...]]] = {
    # a transcript line: {cwd, gitBranch, version, uuid, parentUuid, sessionId, timestamp,
    # requestId, userType, isSidechain, slug, message: {id, usage, ...}, toolUseResult ...}
    "claude_code": {
        "ids": ("/uuid", "/parentUuid", "/logicalParentUuid", "/leafUuid", "/sessionId",
                "/requestId", "/message/id", "/sourceToolAssistantUUID", "/messageId",
                "/toolUseID", "/parentToolUseID", "/agentId", "/promptId", "/contentPart",
                "/snapshot/messageId", "/message/content/*/id",
                "/message/content/*/tool_use_id"),
        "times": ("/timestamp", "**/timestamp"),
        "cwd": ("/cwd",),
        "git": ("/gitBranch",),
        "versions": ("/version",),
        "ui": ("/userType", "/isSidechain", "/slug", "/isMeta", "/permissionMode",
               "/thinkingMetadata", "/todos", "/isSnapshotUpdate", "/isVisibleInTranscriptOnly",
               "/isCompactSummary", "/level", "/message/type", "/message/stop_sequence"),
        "usage": ("/message/usage", "/costUSD"),
        "latency": ("/durationMs", "/toolUseResult/durationMs",
                    "/toolUseResult/durationSeconds"),
    },
    # a rollout line: {timestamp, type, payload: {...}}
    "codex": {
        "ids": ("/payload/id", "/payload/turn_id", "/payload/call_id"),
        "times": ("/timestamp", "/payload/timestamp"),
        "cwd": ("/payload/cwd",),
        "git": ("/payload/git",),
        "versions": ("/payload/cli_version", "/payload/originator", "/payload/source"),
        "usage": ("/payload/info", "/payload/rate_limits"),
    },
    # an Inspect event or message: {event, timestamp, working_start, uuid, span_id, ...}
    "inspect": {
        "ids": ("/uuid", "/span_id", "/id", "/message_id", "/part"),
        "times": ("/timestamp", "/working_start", "/completed", "/pending"),
        "usage": ("/output/usage", "/usage"),
        "latency": ("/working_time", "/output/time", "/time"),
    },
    # a Langfuse observation (or trace): ids, times, latency and costs beside input / output
    "langfuse": {
        "ids": ("/id", "/traceId", "/parentObservationId", "/projectId", "/sessionId",
                "/userId", "/promptId", "/internalModelId", "/part",
                "/metadata/attributes/gen_ai.response.id",
                "/metadata/attributes/gen_ai.tool.call.id"),
        "times": ("/startTime", "/endTime", "/completionStartTime", "/createdAt",
                  "/updatedAt", "/timestamp"),
        "latency": ("/latency", "/timeToFirstToken"),
        "usage": ("/usage", "/usageDetails", "/inputUsage", "/outputUsage", "/totalUsage",
                  "/costDetails", "/providedCostDetails", "/inputCost", "/outputCost",
                  "/totalCost", "/calculatedInputCost", "/calculatedOutputCost",
                  "/calculatedTotalCost", "/usagePricingTierId", "/usagePricingTierName",
                  "/metadata/attributes/gen_ai.usage.*", "/metadata/attributes/operation.cost"),
        "versions": ("/version", "/release", "/environment", "/promptVersion",
                     "/metadata/resourceAttributes", "/metadata/scope",
                     "/metadata/attributes/logfire.json_schema"),
        "ui": ("/bookmarked", "/public"),
    },
    # a LangSmith run: {id, trace_id, parent_run_id, dotted_order, start_time, end_time, ...}
    "langsmith": {
        "ids": ("/id", "/trace_id", "/parent_run_id", "/dotted_order", "/session_id",
                "/child_run_ids", "/reference_example_id", "/part", "/run_id"),
        "times": ("/start_time", "/end_time", "/first_token_time"),
        "usage": ("/prompt_tokens", "/completion_tokens", "/total_tokens", "/prompt_cost",
                  "/completion_cost", "/total_cost", "/outputs/llm_output/token_usage"),
        "versions": ("/extra/runtime", "/extra/metadata"),
    },
    # a Phoenix (OpenInference) span, flattened attribute keys
    "phoenix": {
        "ids": ("/context.span_id", "/context.trace_id", "/parent_id", "/span_id",
                "/attributes.session.id", "/part"),
        "times": ("/start_time", "/end_time"),
        "usage": ("/attributes.llm.token_count.*",),
    },
    # an OTel span: {traceId, spanId, parentSpanId, start/end time, resource, scope, ...}
    "otel": {
        "ids": ("/traceId", "/spanId", "/parentSpanId", "/of", "/part",
                "/attributes/gen_ai.response.id", "/attributes/gen_ai.conversation.id"),
        "times": ("/startTimeUnixNano", "/endTimeUnixNano", "**/timeUnixNano"),
        "usage": ("/attributes/gen_ai.usage.*",),
        "versions": ("/resource", "/scope"),
    },
    # isplay: eventId / ts / argsHash are the replay's (above); call ids link events
    "isplay": {
        "ids": ("/refId", "/modelCallId"),
        "versions": ("/agent/version",),
    },
    # pleach harness events: call ids and cache keys
    "pleach": {
        "ids": ("/call_id", "/message_id", "/interrupt_id", "/subagent_id", "/checkpoint_id"),
        "cache": ("/cacheKey",),
    },
    # toh session lines: {type, data: {...}, sourceEventSeqs, surfaceOp}
    "toh": {
        "ids": ("/data/callId", "/data/id", "/sourceEventSeqs", "/data/chunk/id"),
        "ui": ("/surfaceOp",),
        "versions": ("/data/version",),
    },
}

#: The groups a phrase names, in the order it names them.
BOOKKEEPING_GROUPS: tuple[str, ...] = ("ids", "times", "cwd", "git", "versions", "ui",
                                       "usage", "latency", "cache", "replay")


def format_of(source: Any) -> str | None:
    """The format of an event from its ``source`` column (``'claude_code:/x.jsonl'`` ->
    ``'claude_code'``); None when there is none.

    >>> format_of("langfuse:trace.json"), format_of(None)
    ('langfuse', None)
    """
    if not isinstance(source, str) or not source:
        return None
    return source.split(":", 1)[0] or None


def _segment(seg: str) -> str:
    seg = seg.replace("~", "~0")  # patterns spell keys unescaped; paths are RFC 6901
    return "[^/]*".join(re.escape(x) for x in seg.split("*"))


def _compile(patterns: Iterable[str]) -> re.Pattern[str] | None:
    alts = []
    for p in patterns:
        body = ""
        for seg in p.strip("/").split("/"):
            body += "(?:/[^/]*)*" if seg == "**" else "/" + _segment(seg)
        alts.append(body)
    return re.compile("^(?:" + "|".join(alts) + ")(?:/|$)") if alts else None


@lru_cache(maxsize=64)
def _rules(fmt: str | None) -> tuple[tuple[str, re.Pattern[str]], ...]:
    groups: dict[str, list[str]] = {g: list(p) for g, p in REPLAY_BOOKKEEPING.items()}
    for g, p in BOOKKEEPING.get(fmt or "", {}).items():
        groups.setdefault(g, []).extend(p)
    out = []
    for g in sorted(groups, key=lambda g: (BOOKKEEPING_GROUPS.index(g)
                                           if g in BOOKKEEPING_GROUPS else 99, g)):
        rx = _compile(groups[g])
        if rx is not None:
            out.append((g, rx))
    return tuple(out)


@lru_cache(maxsize=1 << 16)
def bookkeeping_group(path: str, fmt: str | None = None) -> str | None:
    """The bookkeeping group (``ids``, ``times``, ``cwd``, ...) a changed JSON pointer
    falls under in format ``fmt``'s payloads, or None when it is the agent's content.

    ``fmt`` is a key of :data:`BOOKKEEPING` (an unknown format or None: only what a replay
    writes counts as bookkeeping). The whole payload (``""``) is never bookkeeping.

    >>> bookkeeping_group("/endTime", "langfuse"), bookkeeping_group("/output", "langfuse")
    ('times', None)
    """
    if not path:
        return None
    for g, rx in _rules(fmt):
        if rx.match(path):
            return g
    return None


def is_bookkeeping(path: str, fmt: str | None = None) -> bool:
    """Whether a changed JSON pointer is bookkeeping in format ``fmt`` (see
    :func:`bookkeeping_group`)."""
    return bookkeeping_group(path, fmt) is not None


def bookkeeping_phrase(groups: Iterable[Any]) -> str:
    """``"12 bookkeeping changes (ids, times, cwd)"`` for the groups of some bookkeeping
    changes (one entry per change); ``""`` for none.

    >>> bookkeeping_phrase(["ids", "times", "ids"])
    '3 bookkeeping changes (ids, times)'
    >>> bookkeeping_phrase(["cwd"])
    '1 bookkeeping change (cwd)'
    """
    gs = [str(g) for g in groups]
    if not gs:
        return ""
    seen = sorted(set(gs), key=lambda g: (BOOKKEEPING_GROUPS.index(g)
                                          if g in BOOKKEEPING_GROUPS else 99, g))
    return (f"{len(gs):,} bookkeeping change{'s' if len(gs) != 1 else ''} "
            f"({', '.join(seen)})")


def content_first(doc: Any, fmt: str | None = None, path: str = "",
                  depth: int | None = None) -> Any:
    """``doc`` with the members of every object reordered: the agent's content first (in
    sorted order), bookkeeping members last (sorted), recursively. Values are unchanged; a
    display that keeps insertion order (``json.dumps`` without ``sort_keys``) then leads
    with what the event says. ``depth``: how many levels of objects to reorder (None: all;
    deeper values are kept as they are, for speed over many events).

    >>> list(content_first({"cwd": "/r", "uuid": "u", "message": {"content": "hi"}},
    ...                    "claude_code"))
    ['message', 'cwd', 'uuid']
    """
    if depth is not None and depth <= 0:
        return doc
    deeper = None if depth is None else depth - 1
    if isinstance(doc, dict):
        body: list[Any] = []
        tail: list[Any] = []
        for k in sorted(doc, key=str):
            ks = k if isinstance(k, str) and "~" not in k and "/" not in k else _esc(k)
            (tail if bookkeeping_group(f"{path}/{ks}", fmt) is not None else body).append(k)
        out = {}
        for k in body + tail:
            v = doc[k]
            out[k] = content_first(v, fmt, f"{path}/{_esc(k)}", deeper) \
                if type(v) in (dict, list) else v
        return out
    if isinstance(doc, list):
        return [content_first(v, fmt, f"{path}/{i}", deeper) if type(v) in (dict, list)
                else v for i, v in enumerate(doc)]
    return doc


def _esc(k: Any) -> str:
    return str(k).replace("~", "~0").replace("/", "~1")


#: Payload members that hold what the agent sent or got (arguments, outputs, text): a
#: sentence names their changes before an event's other content changes.
SAID = frozenset({"output", "outputs", "result", "args", "arguments", "input", "inputs",
                  "text", "content", "message", "messages", "prompt", "toolUseResult",
                  "error", "data", "attributes", "payload"})
_OP_RANK = {"changed": 0, "added": 1}


def said_first(paths: Iterable[str], ops: Iterable[str]) -> list[int]:
    """The order in which to name an event's content changes (positions into ``paths``):
    changes under :data:`SAID` members first, within each part what the event now says
    (changed, added) before what it no longer says (removed); stable otherwise.

    >>> said_first(["/isError", "/message", "/output"], ["added", "removed", "added"])
    [2, 1, 0]
    """
    keyed = []
    for i, (p, op) in enumerate(zip(paths, ops, strict=True)):
        top = p.split("/")[1] if p.count("/") else ""
        keyed.append(((top not in SAID) * 3 + _OP_RANK.get(op, 2), i))
    return [i for _, i in sorted(keyed)]


# ------------------------------------------------------------------------- terminal states
#: normalised ``finish`` values (and raw stop reasons) -> what a reader calls them.
_FINISH_WORDS = {
    "stop": "stopped: finished", "STOP": "stopped: finished",
    "tool-calls": "stopped: tool calls", "tool_calls": "stopped: tool calls",
    "tool_use": "stopped: tool calls", "function_call": "stopped: tool calls",
    "max-tokens": "max tokens", "max_tokens": "max tokens", "length": "max tokens",
    "model_length": "max tokens", "MAX_TOKENS": "max tokens",
    "content-filter": "stopped: content filter", "content_filter": "stopped: content filter",
    "refusal": "stopped: refusal", "SAFETY": "stopped: content filter",
    "error": "error: model call failed",
    "cancelled": "cancelled", "canceled": "cancelled", "aborted": "cancelled",
    "pause_turn": "paused", "interrupted": "interrupted",
}
_CANCEL = ("cancel", "abort", "interrupt")


def _short(v: Any, limit: int = 60) -> str:
    text = " ".join(str(v).split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _reason_text(v: Any) -> str | None:
    """A reason member as text: a string, or a mapping's ``kind`` / ``type``."""
    if isinstance(v, str) and v:
        return v
    if isinstance(v, Mapping):
        for k in ("kind", "type", "reason", "status"):
            if isinstance(v.get(k), str) and v[k]:
                return str(v[k])
    return None


def _message(v: Any) -> str | None:
    """An error value as text: a string, or a mapping's ``message`` / ``name`` / ``code``."""
    if isinstance(v, str) and v:
        return v
    if isinstance(v, Mapping):
        for k in ("message", "name", "code"):
            if isinstance(v.get(k), str) and v[k]:
                return str(v[k])
    return None


def _error_text(doc: Any) -> str | None:
    """The error message an event records (``error``, a status message, a turn end's
    ``reason.error``), or None."""
    if not isinstance(doc, Mapping):
        return None
    data = doc.get("data")
    box: Mapping[str, Any] = data if isinstance(data, Mapping) else doc
    for k in ("error", "statusMessage", "status_message", "message"):
        got = _message(box.get(k))
        if got:
            return got
    reason = box.get("reason")
    return _message(reason.get("error")) if isinstance(reason, Mapping) else None


#: each event kind in words a reviewer reads (``event_words``); a tool call and a tool's
#: result name the tool, and ``other`` names the source's own event type
_KIND_WORDS = {
    "session": "the session record", "user_message": "a user message",
    "model_request": "a model request", "model_chunk": "a streamed part of a model answer",
    "model_response": "a model answer", "turn_start": "the start of a turn",
    "turn_end": "the end of a turn", "step_start": "the start of a step",
    "step_end": "the end of a step", "approval_request": "a request for the user's approval",
    "approval_decision": "the user's answer to an approval request",
    "subagent_start": "a subagent starting", "subagent_end": "a subagent ending",
    "checkpoint": "a checkpoint", "intervention": "an intervention record",
    "error": "an error",
}


def event_words(kind: str | None, *, tool_name: str | None = None,
                type_: str | None = None, is_error: bool = False) -> str:
    """What one event is, in words a reviewer understands (where two runs part, say):
    the tool a call or result names, the source's own event type for an event no loader
    category fits (never the bare kind ``other``).

    >>> event_words("tool_call", tool_name="Bash")
    'a call to Bash'
    >>> event_words("tool_result", tool_name="Read", is_error=True)
    'a failed result of Read'
    >>> event_words("other", type_="file-history-snapshot")
    'a file-history-snapshot log entry'
    >>> event_words("model_response")
    'a model answer'
    """
    tool = tool_name if isinstance(tool_name, str) and tool_name else None
    if kind == "tool_call":
        return f"a call to {tool}" if tool else "a tool call (no tool named)"
    if kind == "tool_result":
        what = "a failed result" if is_error else "the result"
        return f"{what} of {tool}" if tool else f"{what} of a tool call"
    words = _KIND_WORDS.get(str(kind))
    if words is not None:
        return words
    typ = type_ if isinstance(type_, str) and type_ else None
    return f"a {typ} log entry" if typ else "a log entry of no known kind"


def terminal_state(kind: str | None, *, finish: str | None = None,
                   raw_finish: str | None = None, is_error: bool = False,
                   tool_name: str | None = None, text: str | None = None,
                   type_: str | None = None, payload: Any = None) -> str:
    """How a run ended, in words a reader knows, from its last agent event.

    ``kind``, ``finish``, ``is_error``, ``tool_name``, ``text`` and ``type_`` are the
    event's columns; ``raw_finish`` the stop reason as the source spells it (Anthropic's
    ``end_turn``), ``payload`` its decoded payload (reasons and error messages are read from
    it). Never a bare kind name such as ``other`` or ``checkpoint``.

    >>> terminal_state("model_response", finish="tool-calls")
    'stopped: tool calls'
    >>> terminal_state("tool_result", is_error=True, tool_name="Bash")
    'error: tool failed (Bash)'
    >>> terminal_state("approval_request")
    'asked the user'
    >>> terminal_state("turn_end", text="[Request interrupted by user]")
    'interrupted by the user'
    """
    doc: Mapping[str, Any] = payload if isinstance(payload, Mapping) else {}
    data = doc.get("data")
    box: Mapping[str, Any] = data if isinstance(data, Mapping) else doc
    low = (text or "").lower()
    if kind in ("model_response", "model_chunk"):
        # the source's own stop reason reads as it is spelled (end_turn), unless it names
        # one of the states above (tool calls, max tokens ...)
        word = _FINISH_WORDS.get(str(raw_finish)) if raw_finish else None
        if not word and (is_error or finish == "error"):
            word = "error: model call failed"
        if not word and raw_finish and str(raw_finish) not in ("stop", "STOP"):
            return f"stopped: {raw_finish}"
        word = word or _FINISH_WORDS.get(str(finish))
        if word:
            return word
        stop = raw_finish or finish
        return f"stopped: {stop}" if stop and stop != "unknown" else "the model answered"
    if kind == "tool_result":
        who = f" ({tool_name})" if tool_name else ""
        return f"error: tool failed{who}" if is_error else f"a tool returned{who}"
    if kind == "model_request":
        return "a model request, not answered"
    if kind == "tool_call":
        return f"stopped at a tool call{' (' + tool_name + ')' if tool_name else ''}"
    if kind == "approval_request":
        return "asked the user"
    if kind == "approval_decision":
        out = _reason_text(box.get("outcome")) or _reason_text(box.get("decision"))
        return f"the user answered{': ' + out if out else ''}"
    if kind == "user_message":
        if "interrupted by user" in low:
            return "interrupted by the user"
        return "a user message, not answered"
    if kind == "error":
        err = _error_text(doc) or text
        return f"error: {_short(err)}" if err else "error: no message recorded"
    if kind in ("turn_end", "session", "subagent_end", "step_end"):
        what = {"turn_end": "turn ended", "session": "run ended",
                "subagent_end": "subagent ended", "step_end": "step ended"}[kind]
        if "interrupted by user" in low:
            return "interrupted by the user"
        reason = (_reason_text(box.get("reason")) or _reason_text(box.get("status"))
                  or _reason_text(box.get("stop_reason")))
        marker = f"{type_ or ''} {reason or ''}".lower()
        if is_error or (reason or "").lower() in ("error", "failed", "failure"):
            err = _error_text(doc)
            return f"error: {_short(err)}" if err else f"error: {what.split()[0]} failed"
        if any(c in marker for c in _CANCEL):
            return "cancelled"
        if reason and reason.lower() not in ("end", "ended", "completed", "complete", "done",
                                             "success", "ok"):
            return f"{what}: {reason}"
        if kind == "session" and any(w in marker for w in ("complet", "finish", "end")):
            return "run completed"
        return what
    if is_error:
        err = _error_text(doc)
        return f"error: {_short(err)}" if err else f"error: {type_ or 'step'} failed"
    if kind == "checkpoint":
        return "a checkpoint was saved"
    return f"ended on a {type_} record" if type_ else "ended on a record the format keeps"
