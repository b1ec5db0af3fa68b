"""What a model produced, read from every message shape the tracing platforms record.

A platform export keeps a model call's output (and the history it was given) in whichever
shape the instrumentation wrote: Anthropic content blocks, OpenAI chat messages and
completions, OpenAI Responses output items, the GenAI semantic conventions' ``{"role",
"parts"}`` messages, Gemini / Google ADK ``candidates`` / ``content.parts``, Microsoft Agent
Framework ``contents``, the Vercel AI SDK's ``ai.response.*`` attributes, LangChain /
LangGraph messages (serialized ``kwargs`` or dicts), LlamaIndex chat responses and blocks,
pydantic-ai model responses (``part_kind``), Koog's tool calls kept as ``content`` items.
One reader for all of them, used by every platform loader (Langfuse, LangSmith, Phoenix,
OTel):

* :func:`read_reply` -> :class:`Reply` (``text`` the model wrote, ``reasoning``, tool
  ``calls``), never the envelope as text and never the string ``"None"``;
* :func:`results_in` -> the tool results a history hands back to the model;
* :func:`decode_arguments` -> tool arguments decoded once (JSON text of an object or array
  becomes the value; any other string stays a string);
* :func:`tool_name` -> a tool's name without an operation prefix (``execute_tool x`` -> ``x``).

Nothing here raises on content: content that is no known shape is text (a string) or not
read (None).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .._base.json import JSONDecodeError, canonical_json, loads

__all__ = ["Call", "Reply", "decode_arguments", "message_text", "read_reply", "result_text",
           "results_in", "text_or_json", "tool_name"]

_BAD_JSON: tuple[type[Exception], ...] = (*JSONDecodeError, ValueError, RecursionError)

#: roles whose messages are not the model's own (skipped when a list mixes roles)
_NOT_MODEL = frozenset({"user", "system", "developer", "tool", "human", "function", "ipython"})
#: operation prefixes instrumentations put before a tool's name
_PREFIXES = ("execute_tool ", "running tool: ", "running tool ", "tool: ")


class Call(NamedTuple):
    """One tool call the model asked for: its id (None when the source gives none), the
    tool's name and the arguments (decoded once, see :func:`decode_arguments`)."""

    id: str | None
    name: str | None
    arguments: Any


@dataclass
class Reply:
    """What one model call produced: ``text`` (None when it wrote none), ``reasoning``
    (None when none was recorded) and its tool ``calls`` in order."""

    text: str | None = None
    reasoning: str | None = None
    calls: list[Call] = field(default_factory=list)
    #: whether any known shape was recognised (False: the value was not read)
    known: bool = False

    def _add_text(self, t: Any) -> None:
        if isinstance(t, str) and t != "None":
            self.text = t if self.text is None else self.text + t
        self.known = True

    def _add_reasoning(self, t: Any) -> None:
        if isinstance(t, str) and t:
            self.reasoning = t if self.reasoning is None else self.reasoning + "\n" + t
        self.known = True

    def _add_call(self, cid: Any, name: Any, args: Any) -> None:
        cid = _id_text(cid)
        if cid is not None and any(c.id == cid for c in self.calls):
            return
        self.calls.append(Call(cid, name if isinstance(name, str) else None,
                               decode_arguments(args)))
        self.known = True


def decode_arguments(value: Any) -> Any:
    """Tool arguments as the model produced them, decoded once: JSON text of an object or
    array becomes that value; any other value (a free-form string too) is returned as is.

    >>> decode_arguments('{"input": {"city": "Berlin"}}')
    {'input': {'city': 'Berlin'}}
    >>> decode_arguments("ls -la")
    'ls -la'
    """
    if isinstance(value, str):
        s = value.strip()
        if s[:1] in ("{", "[") and s[-1:] in ("}", "]"):
            try:
                return loads(s)
            except _BAD_JSON:
                return value
    return value


def tool_name(name: Any) -> str | None:
    """A tool's name as the tool is called: without the operation prefixes instrumentations
    add (``execute_tool say_hello`` -> ``say_hello``, ``running tool: x`` -> ``x``).

    >>> tool_name("execute_tool say_hello")
    'say_hello'
    """
    if not isinstance(name, str):
        return None
    for p in _PREFIXES:
        if name.startswith(p) and len(name) > len(p):
            return name[len(p):].strip()
    return name


def _id_text(v: Any) -> str | None:
    if isinstance(v, str):
        return v or None
    if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
        return v[-1]  # Agent Framework: [run id, call id]
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    return None


def read_reply(value: Any) -> Reply:
    """What a model call produced, from its recorded output in any supported shape.

    >>> r = read_reply({"content": [{"type": "thinking", "thinking": "hm"},
    ...                             {"type": "text", "text": "Hi"},
    ...                             {"type": "tool_use", "id": "t1", "name": "ls",
    ...                              "input": {"path": "."}}]})
    >>> (r.text, r.reasoning, r.calls[0].arguments)
    ('Hi', 'hm', {'path': '.'})
    """
    out = Reply()
    _read(value, out, 0)
    return out


def _read(v: Any, out: Reply, depth: int, skip: frozenset[str] = _NOT_MODEL) -> None:
    """Read ``v`` into ``out``; messages of the roles in ``skip`` are left out of a list."""
    if depth > 12 or v is None:
        return
    if isinstance(v, str):
        decoded = decode_arguments(v)
        if decoded is not v and isinstance(decoded, (dict, list)):
            probe = Reply()
            _read(decoded, probe, depth + 1, skip)
            if probe.known:
                _merge(out, probe)
                return
        out._add_text(v)
        return
    if isinstance(v, list):
        for item in v:
            if _is_part(item):
                _part(item, out, depth)
            elif not (isinstance(item, dict)
                      and str(item.get("role", "")).lower() in skip):
                _read(item, out, depth + 1, skip)
        return
    if not isinstance(v, dict):
        return
    _message(v, out, depth)


def _merge(out: Reply, other: Reply) -> None:
    if other.text is not None:
        out._add_text(other.text)
    if other.reasoning is not None:
        out._add_reasoning(other.reasoning)
    for c in other.calls:
        if c.id is None or all(c.id != x.id for x in out.calls):
            out.calls.append(c)
    out.known = out.known or other.known


_PART_TYPES = frozenset({
    "text", "output_text", "input_text", "reasoning", "thinking", "redacted_thinking",
    "tool_use", "tool_call", "function_call", "function", "tool-call", "text_reasoning",
    "summary_text", "refusal"})


def _is_part(item: Any) -> bool:
    """A content part / output item (as opposed to a message holding parts)."""
    if isinstance(item, str):
        return True
    if not isinstance(item, dict):
        return False
    if "part_kind" in item:
        return True
    t = item.get("type")
    if isinstance(t, str) and t in _PART_TYPES and "role" not in item:
        return True
    if t == "function_call" and "call_id" in item:  # a Responses item may carry a role
        return True
    return "role" not in item and any(k in item for k in (
        "function_call", "functionCall", "thought")) or (
        "role" not in item and "text" in item and len(item) <= 3
        and isinstance(item.get("text"), str) and "type" not in item)


def _part(p: Any, out: Reply, depth: int) -> None:
    """One content part / output item."""
    if isinstance(p, str):
        out._add_text(p)
        return
    if not isinstance(p, dict):
        return
    kind = p.get("part_kind")
    if isinstance(kind, str):  # pydantic-ai
        if kind == "text":
            out._add_text(p.get("content"))
        elif kind == "thinking":
            out._add_reasoning(p.get("content"))
        elif kind == "tool-call":
            out._add_call(p.get("tool_call_id"), p.get("tool_name"), p.get("args"))
        return
    t = p.get("type")
    if t in ("text", "output_text", "input_text"):
        out._add_text(p.get("text", p.get("content")))
    elif t == "refusal":
        out._add_text(p.get("refusal", p.get("content")))
    elif t in ("reasoning", "thinking", "text_reasoning", "summary_text"):
        got = p.get("thinking", p.get("text", p.get("content")))
        if isinstance(got, list):  # Responses reasoning: content / summary parts
            got = _texts(got)
        if got is None and isinstance(p.get("summary"), list):
            got = _texts(p["summary"])
        out._add_reasoning(got)
    elif t == "redacted_thinking":
        out.known = True
    elif t == "tool_use":  # Anthropic
        out._add_call(p.get("id"), p.get("name"), p.get("input"))
    elif t == "tool_call":  # GenAI semantic conventions
        out._add_call(p.get("id"), p.get("name"), p.get("arguments"))
    elif t == "function_call":  # OpenAI Responses item, Agent Framework content
        out._add_call(p.get("call_id", p.get("id")), p.get("name"), p.get("arguments"))
    elif t == "function" and isinstance(p.get("function"), dict):  # OpenAI call in content
        fn = p["function"]
        out._add_call(p.get("id"), fn.get("name"), fn.get("arguments"))
    elif t == "tool-call":  # Vercel AI SDK
        out._add_call(p.get("toolCallId"), p.get("toolName"), p.get("args", p.get("input")))
    elif t == "message":  # a Responses output message
        _read(p.get("content"), out, depth + 1)
    else:
        fc = p.get("function_call", p.get("functionCall"))
        if isinstance(fc, dict):  # Gemini
            out._add_call(fc.get("id"), fc.get("name"), fc.get("args"))
        elif isinstance(p.get("text"), str):
            if p.get("thought") is True:
                out._add_reasoning(p["text"])
            else:
                out._add_text(p["text"])


def _texts(items: list[Any]) -> str | None:
    """The ``text`` of a list of parts joined by newlines (None when none has text)."""
    return "\n".join(str(x["text"]) for x in items
                     if isinstance(x, dict) and isinstance(x.get("text"), str)) or None


def _message(m: dict[str, Any], out: Reply, depth: int) -> None:
    """One message or response envelope."""
    # LangChain serialized ({"lc": 1, "kwargs": {...}}), LangChain generations
    if isinstance(m.get("kwargs"), dict) and m.get("lc") is not None:
        _message(m["kwargs"], out, depth + 1)
        return
    gens = m.get("generations")
    if isinstance(gens, list) and gens:
        first = gens[0][0] if isinstance(gens[0], list) and gens[0] else gens[0]
        if isinstance(first, dict):
            msg = first.get("message")
            if isinstance(msg, dict):
                _message(msg, out, depth + 1)
            else:
                out._add_text(first.get("text"))
        return
    # Vercel AI SDK attributes
    if any(k in m for k in ("ai.response.text", "ai.response.toolCalls",
                            "ai.response.reasoning")):
        out._add_text(m.get("ai.response.text"))
        if m.get("ai.response.reasoning") is not None:
            out._add_reasoning(m.get("ai.response.reasoning"))
        calls = decode_arguments(m.get("ai.response.toolCalls"))
        for c in calls if isinstance(calls, list) else []:
            if isinstance(c, dict):
                out._add_call(c.get("toolCallId"), c.get("toolName"),
                              c.get("args", c.get("input")))
        return
    # OpenAI chat completion, gen_ai.choice event body, LlamaIndex ChatResponse
    ch = m.get("choices")
    if isinstance(ch, list):
        out.known = True
        if ch and isinstance(ch[0], dict):
            c0 = ch[0]
            if isinstance(c0.get("message"), dict):
                _message(c0["message"], out, depth + 1)
            elif isinstance(c0.get("text"), str):
                out._add_text(c0["text"])
        return
    # Gemini GenerateContentResponse
    cand = m.get("candidates")
    if isinstance(cand, list):
        out.known = True
        if cand and isinstance(cand[0], dict):
            _read(cand[0].get("content"), out, depth + 1)
        return
    # OpenAI Responses object
    if m.get("object") == "response" or (isinstance(m.get("output"), list) and any(
            isinstance(i, dict) and i.get("type") in ("message", "function_call", "reasoning")
            for i in m["output"])):
        out.known = True
        for item in m.get("output") or []:
            _part(item, out, depth + 1)
        return
    if m.get("type") == "message" or (m.get("type") == "function_call" and "call_id" in m):
        _part(m, out, depth)
        return
    if isinstance(m.get("message"), dict) and ("index" in m or "finish_reason" in m
                                               or "raw" in m or "event.name" in m):
        _message(m["message"], out, depth + 1)
        return
    # messages / parts
    parts = m.get("parts")
    if isinstance(parts, list):  # GenAI semconv, Gemini Content, pydantic-ai ModelResponse
        out.known = True
        for p in parts:
            _part(p, out, depth + 1)
        return
    contents = m.get("contents")
    if isinstance(contents, list):  # Microsoft Agent Framework
        out.known = True
        for p in contents:
            _part(p, out, depth + 1)
        return
    blocks = m.get("blocks")
    if isinstance(blocks, list):  # LlamaIndex ChatMessage
        out.known = True
        for b in blocks:
            if isinstance(b, dict) and b.get("block_type") == "text":
                out._add_text(b.get("text"))
            elif isinstance(b, dict) and b.get("block_type") == "thinking":
                out._add_reasoning(b.get("content"))
    seen = False
    if "content" in m:
        seen = True
        c = m["content"]
        if isinstance(c, dict) and (isinstance(c.get("parts"), list) or "role" in c):
            _read(c, out, depth + 1)  # Google ADK LlmResponse: content = Gemini Content
        elif isinstance(c, list):
            for p in c:
                _part(p, out, depth + 1)
        elif isinstance(c, str):
            out._add_text(c)
        else:
            out.known = True
    elif "text" in m and isinstance(m.get("text"), str):  # LlamaIndex CompletionResponse
        seen = True
        out._add_text(m["text"])
    for key in ("reasoning_content", "reasoning"):
        r = m.get(key)
        if isinstance(r, str):
            seen = True
            out._add_reasoning(r)
    kw: dict[str, Any] = m["additional_kwargs"] if isinstance(m.get("additional_kwargs"),
                                                              dict) else {}
    if isinstance(kw.get("reasoning_content"), str):
        out._add_reasoning(kw["reasoning_content"])
    calls = m.get("tool_calls")
    if not (isinstance(calls, list) and calls) and isinstance(kw.get("tool_calls"), list):
        calls = kw["tool_calls"]
    for c in calls if isinstance(calls, list) else []:
        if not isinstance(c, dict):
            continue
        seen = True
        fn: dict[str, Any] = c["function"] if isinstance(c.get("function"), dict) else {}
        out._add_call(c.get("id"), c.get("name", fn.get("name")),
                      c["args"] if "args" in c else c.get("arguments", fn.get("arguments")))
    fc = m.get("function_call")
    if isinstance(fc, dict):  # OpenAI's legacy function call
        seen = True
        out._add_call(fc.get("id"), fc.get("name"), fc.get("arguments"))
    if seen:
        out.known = True
        return
    # wrappers: {"output": ...}, {"completion": ...}, {"response": ...}, {"message": {...}}
    for key in ("output", "completion", "response", "message", "messages", "result"):
        if key in m:
            probe = Reply()
            _read(m[key], probe, depth + 1)
            if probe.known:
                _merge(out, probe)
                return


def results_in(history: Any) -> list[tuple[str, str | None, Any]]:
    """``(call id, tool name or None, result)`` of the tool results a model was handed, in
    its input history (any supported shape; results without a call id are skipped).

    >>> results_in([{"role": "tool", "tool_call_id": "c1", "content": "42"}])
    [('c1', None, '42')]
    """
    found: list[tuple[str, str | None, Any]] = []
    _results(decode_arguments(history), found, 0)
    seen: set[str] = set()
    out = []
    for cid, name, res in found:
        if cid not in seen:
            seen.add(cid)
            out.append((cid, name, res))
    return out


def _results(v: Any, found: list[tuple[str, str | None, Any]], depth: int) -> None:
    if depth > 8:
        return
    if isinstance(v, list):
        for item in v:
            _results(item, found, depth + 1)
        return
    if not isinstance(v, dict):
        return
    if isinstance(v.get("kwargs"), dict) and v.get("lc") is not None:
        v = v["kwargs"]
    t = v.get("type")
    kind = v.get("part_kind")
    cid: Any = None
    res: Any = None
    name: Any = None
    if t == "tool_result":  # Anthropic
        cid, res = v.get("tool_use_id"), v.get("content")
    elif t == "tool_call_response":
        cid, res, name = v.get("id"), v.get("response", v.get("result")), v.get("name")
    elif t == "function_call_output":
        cid, res = v.get("call_id"), v.get("output")
    elif t == "function_result":  # Agent Framework
        cid, res = v.get("call_id"), v.get("result")
    elif t == "tool-result":  # Vercel AI SDK
        cid, name, res = v.get("toolCallId"), v.get("toolName"), v.get(
            "result", v.get("output"))
    elif kind == "tool-return":  # pydantic-ai
        cid, name, res = v.get("tool_call_id"), v.get("tool_name"), v.get("content")
    elif isinstance(v.get("function_response", v.get("functionResponse")), dict):  # Gemini
        fr = v.get("function_response", v.get("functionResponse"))
        cid, name, res = fr.get("id"), fr.get("name"), fr.get("response")
    elif (v.get("role") == "tool" or t == "tool") and v.get("tool_call_id") is not None:
        cid, name, res = v.get("tool_call_id"), v.get("name"), v.get("content")
    if _id_text(cid) is not None:
        found.append((_id_text(cid) or "", name if isinstance(name, str) else None, res))
        return
    for key in ("parts", "contents", "content", "messages", "input"):
        if isinstance(v.get(key), list):
            _results(v[key], found, depth + 1)


def message_text(value: Any) -> str | None:
    """The text of any message value, whoever wrote it (a trace's input, a tool's output):
    JSON text decoded once (a JSON string literal gives its string), the text of messages of
    any role in any supported shape, else the value as text (:func:`text_or_json`).

    >>> message_text('"What is the weather?"')
    'What is the weather?'
    >>> message_text([{"role": "user", "content": "hi"}])
    'hi'
    """
    v = value
    if isinstance(v, str):
        s = v.strip()
        if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
            try:
                inner = loads(s)
            except _BAD_JSON:
                inner = None
            if isinstance(inner, str):
                v = inner  # a string encoded once more; its JSON (if any) is read below
        v = decode_arguments(v)
        if isinstance(v, str):
            return v
    out = Reply()
    _read(v, out, 0, frozenset())
    if out.known and out.text:
        return out.text
    return text_or_json(v)


def result_text(value: Any) -> str | None:
    """A tool result as the model was handed it: a string as it is (a JSON string literal,
    text encoded once more, gives its string), content blocks' text joined, any other value
    as canonical JSON.

    >>> result_text('"sunny"'), result_text({"temp": 14})
    ('sunny', '{"temp":14}')
    """
    if isinstance(value, str):
        s = value.strip()
        if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
            try:
                inner = loads(s)
            except _BAD_JSON:
                return value
            return inner if isinstance(inner, str) else value
        return value
    return text_or_json(value)


def text_or_json(value: Any) -> str | None:
    """A tool result as text: strings as they are, the text of content blocks joined, any
    other value as canonical JSON (None stays None)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(
            isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
            for b in value):
        return "".join(b["text"] for b in value)
    try:
        return canonical_json(value)
    except (TypeError, ValueError, RecursionError):
        return None
