"""GenAI content in every form instrumentations write it, as the current conventions' messages.

The current conventions keep messages as ``{"role", "parts": [...]}`` lists in
``gen_ai.input.messages`` / ``gen_ai.output.messages``. Older generations (and other
producers) keep the same facts as:

* ``gen_ai.prompt`` / ``gen_ai.completion``: JSON text of provider-style messages
  (``{"role", "content", "tool_calls", "tool_call_id"}``), as attributes or as the attributes of
  ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` span events (Langtrace: the
  assistant's tool calls as OpenAI ``{"id", "type": "function", "function"}`` objects in
  ``content``);
* numbered attributes ``gen_ai.prompt.{i}.role`` / ``.content`` / ``.tool_call_id`` /
  ``.tool_calls.{j}.{id,name,arguments}`` (or ``.tool_calls.{j}.function.{name,arguments}``)
  and ``gen_ai.completion.{i}.*`` with ``.finish_reason`` (OpenLLMetry), LiteLLM's
  ``gen_ai.completion.{i}.function_call.{name,arguments}``;
* one event per message, as span events or OTLP log records: ``gen_ai.system.message``,
  ``gen_ai.user.message``, ``gen_ai.assistant.message``, ``gen_ai.tool.message`` (body
  ``{"content", "tool_calls", "id"}``) and ``gen_ai.choice`` (body ``{"index",
  "finish_reason", "message"}``);
* one ``gen_ai.client.inference.operation.details`` event (log record or span event) whose
  attributes are the current conventions' (``gen_ai.input.messages`` etc. as structured values).

:func:`content` turns whichever of these a span has into ``(input, output, finish reasons,
system instructions)`` in the current shape. Nothing here raises on content: content is kept,
not checked (ids and names become text).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from ..._base.json import JSONDecodeError, canonical_json, loads

__all__ = ["MESSAGE_EVENTS", "OPERATION_DETAILS", "content", "is_genai_event", "to_parts"]

_BAD_JSON: tuple[type[Exception], ...] = (*JSONDecodeError, ValueError)

#: per-message event name -> the role it carries
MESSAGE_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                  "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}
OPERATION_DETAILS = "gen_ai.client.inference.operation.details"
_NUMBERED = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")
_NUMBERED_CALL = re.compile(r"^tool_calls\.(\d+)\.(.+)$")


def is_genai_event(name: Any) -> bool:
    """True for the event names this module reads (messages, choices, operation details)."""
    return isinstance(name, str) and (name in MESSAGE_EVENTS or name in (
        "gen_ai.choice", OPERATION_DETAILS, "gen_ai.content.prompt",
        "gen_ai.content.completion"))


def _text(value: Any) -> str | None:
    return value if value is None or isinstance(value, str) else canonical_json(value)


def _json(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return loads(value)
        except _BAD_JSON:
            return value
    return value


def _content_parts(content: Any) -> list[dict[str, Any]]:
    """Provider-style ``content`` (text, or a list of ``{"type": "text", "text"}`` blocks)."""
    if content is None or content == "":
        return []
    if isinstance(content, list):
        out: list[dict[str, Any]] = []
        for c in content:
            if isinstance(c, dict) and isinstance(c.get("parts"), list):
                out.extend(p for p in c["parts"] if isinstance(p, dict))
            elif isinstance(c, dict) and c.get("type") in ("text", "input_text", "output_text"):
                out.append({"type": "text", "content": _text(c.get("text", c.get("content")))})
            elif (isinstance(c, dict) and c.get("type") == "function"
                  and isinstance(c.get("function"), dict)):
                # an OpenAI tool call kept as content (Langtrace's gen_ai.completion)
                fn = c["function"]
                out.append({"type": "tool_call", "id": _text(c.get("id")),
                            "name": _text(fn.get("name")),
                            "arguments": _json(fn.get("arguments"))})
            elif isinstance(c, dict) and "type" in c:
                out.append(dict(c))
            else:
                out.append({"type": "text", "content": _text(c)})
        return out
    return [{"type": "text", "content": _text(content)}]


def to_parts(msg: Any, role: str | None = None) -> dict[str, Any] | None:
    """One message (provider-style, event body, or already the current shape) as
    ``{"role", "parts"}``; None for a value that is no message."""
    msg = _json(msg)
    if isinstance(msg, str):
        return {"role": role, "parts": [{"type": "text", "content": msg}]}
    if not isinstance(msg, dict):
        return None
    r = msg.get("role") if isinstance(msg.get("role"), str) else role
    if isinstance(msg.get("parts"), list):
        return {"role": r, "parts": [p for p in msg["parts"] if isinstance(p, dict)]}
    parts: list[dict[str, Any]] = []
    call_id = msg.get("tool_call_id", msg.get("id") if r == "tool" else None)
    if r == "tool":  # without an id: _fill_tool_ids may tell it from the calls before it
        parts.append({"type": "tool_call_response", "id": _text(call_id),
                      "response": msg.get("content"),
                      **({"name": _text(msg["name"])} if msg.get("name") is not None else {})})
    else:
        parts.extend(_content_parts(msg.get("content")))
    calls = msg.get("tool_calls")
    if isinstance(calls, dict):  # numbered attributes: {index: call}
        calls = [calls[k] for k in sorted(calls)]
    for c in calls if isinstance(calls, list) else []:
        if not isinstance(c, dict):
            continue
        fn: dict[str, Any] = c["function"] if isinstance(c.get("function"), dict) else {}
        # numbered attributes spell the nested function as ``function.name`` keys (LiteLLM)
        name = c.get("name", fn.get("name", c.get("function.name")))
        args = c.get("arguments", fn.get("arguments", c.get("function.arguments")))
        parts.append({"type": "tool_call", "id": _text(c.get("id")), "name": _text(name),
                      "arguments": _json(args)})
    fc = msg.get("function_call")
    if isinstance(fc, dict) and fc.get("name") is not None:  # OpenAI's legacy function call
        parts.append({"type": "tool_call", "id": _text(fc.get("id")),
                      "name": _text(fc.get("name")), "arguments": _json(fc.get("arguments"))})
    return {"role": r, "parts": parts}


def _fill_tool_ids(msgs: list[dict[str, Any]] | None) -> None:
    """Tool results that name no call (OpenLLMetry's ``gen_ai.tool.message`` events drop the
    id) answer, in order, the calls of the assistant message before them that no other
    result answers; marked ``"idFrom": "position"``. Left without an id when the calls are
    fewer than the results (nothing is guessed)."""
    if not msgs:
        return
    pending: list[str] = []
    block: list[dict[str, Any]] = []

    def settle() -> None:
        if block and len(block) <= len(pending):
            for part, cid in zip(block, pending, strict=False):
                part["id"], part["idFrom"] = cid, "position"
        block.clear()

    for i, m in enumerate(msgs):
        parts = m.get("parts") or []
        if m.get("role") != "tool":
            settle()
            _name_calls(msgs, i, parts)
            calls = [p.get("id") for p in parts if p.get("type") == "tool_call"]
            if calls:
                pending = [c for c in calls if isinstance(c, str)]
            continue
        for p in parts:
            if p.get("type") != "tool_call_response":
                continue
            if p.get("id") is None:
                block.append(p)
            elif p["id"] in pending:
                pending.remove(p["id"])
    settle()


def _name_calls(msgs: list[dict[str, Any]], i: int, parts: list[dict[str, Any]]) -> None:
    """Tool calls that carry no id (OpenLLMetry's Ollama spans: Ollama's API has none) get
    one made from the conversation up to and including their message, so the same call
    repeated in every later call's input history gets the same id, and a call of another
    conversation another; marked ``"idFrom": "history"``."""
    todo = [p for p in parts if p.get("type") == "tool_call" and p.get("id") is None]
    if not todo:
        return
    digest = hashlib.sha256(canonical_json(
        [{"role": m.get("role"), "parts": [{k: v for k, v in p.items()
                                             if k not in ("id", "idFrom")}
                                            for p in m.get("parts") or []]}
         for m in msgs[:i + 1]]).encode()).hexdigest()[:16]
    for j, p in enumerate(todo):
        p["id"], p["idFrom"] = f"history-{digest}-{j}", "history"


def _messages(value: Any, role: str | None = None) -> list[dict[str, Any]] | None:
    value = _json(value)
    if value is None:
        return None
    if not isinstance(value, list):
        value = [value]
    out = [m for m in (to_parts(v, role) for v in value) if m is not None]
    return out


def _numbered(attrs: dict[str, Any]) -> dict[str, dict[int, dict[str, Any]]]:
    found: dict[str, dict[int, dict[str, Any]]] = {"prompt": {}, "completion": {}}
    for key, value in attrs.items():
        if not key.startswith("gen_ai.p") and not key.startswith("gen_ai.c"):
            continue
        m = _NUMBERED.match(key)
        if m is None:
            continue
        msg = found[m.group(1)].setdefault(int(m.group(2)), {})
        rest = m.group(3)
        tc = _NUMBERED_CALL.match(rest)
        if tc is not None:
            msg.setdefault("tool_calls", {}).setdefault(int(tc.group(1)), {})[tc.group(2)] = value
        elif rest.startswith("function_call."):  # LiteLLM: gen_ai.completion.{i}.function_call.*
            msg.setdefault("function_call", {})[rest[len("function_call."):]] = value
        else:
            msg[rest] = value
    return found


def _body_of(event: dict[str, Any]) -> Any:
    """An event's body: a log record's ``body``, or a span event's attributes (pydantic-ai's
    first format kept the body as ``event_body`` JSON text)."""
    if "body" in event and event["body"] is not None:
        return _json(event["body"])
    attrs = event.get("attributes") or {}
    if "event_body" in attrs:
        return _json(attrs["event_body"])
    if "gen_ai.event.content" in attrs:  # Azure AI Inference's span events: the body as JSON
        return _json(attrs["gen_ai.event.content"])
    return attrs


def content(attrs: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Any]:
    """The content of a span whichever form holds it, in the current conventions' shape.

    ``events``: the span's events and the log records joined to it (``name``,
    ``attributes``, and for log records ``body``), in time order.

    Returns ``{"inp", "out", "reasons", "system", "tools", "forms"}``: input / output message
    lists or None, finish reasons or None, the system instructions and tool definitions or
    None, and the names of the forms read (for ``payload.contentForms``).
    """
    inp = attrs.get("gen_ai.input.messages")
    out = attrs.get("gen_ai.output.messages")
    system = attrs.get("gen_ai.system_instructions")
    tools = attrs.get("gen_ai.tool.definitions")
    reasons = attrs.get("gen_ai.response.finish_reasons")
    forms: list[str] = []
    inp = _messages(inp)
    out = _messages(out)
    if inp is not None or out is not None:
        forms.append("attributes")
    for e in events:  # the current conventions' event: its attributes are the span's
        if e.get("name") == OPERATION_DETAILS:
            a = e.get("attributes") or {}
            if inp is None and a.get("gen_ai.input.messages") is not None:
                inp = _messages(a["gen_ai.input.messages"])
            if out is None and a.get("gen_ai.output.messages") is not None:
                out = _messages(a["gen_ai.output.messages"])
            system = system if system is not None else a.get("gen_ai.system_instructions")
            tools = tools if tools is not None else a.get("gen_ai.tool.definitions")
            reasons = reasons if reasons is not None else a.get(
                "gen_ai.response.finish_reasons")
            forms.append(OPERATION_DETAILS)
    if out is not None and not any(p.get("type") == "tool_call" for m in out
                                   for p in m.get("parts") or []):
        # LiteLLM writes the current attributes with empty parts and the call it made as
        # numbered gen_ai.completion.{i}.function_call.* / .tool_calls.{j}.* attributes
        num = _numbered(attrs)
        extra = [p for _, v in sorted(num["completion"].items())
                 if (m := to_parts({k: x for k, x in v.items() if k != "content"},
                                   "assistant")) is not None
                 for p in m["parts"] if p.get("type") == "tool_call"]
        if extra:
            out = [*out[:-1], {**out[-1], "parts": [*out[-1].get("parts", []), *extra]}] \
                if out else [{"role": "assistant", "parts": extra}]
            forms.append("numbered")
    if inp is None and out is None:
        prompt, completion = attrs.get("gen_ai.prompt"), attrs.get("gen_ai.completion")
        for e in events:
            a = e.get("attributes") or {}
            if e.get("name") == "gen_ai.content.prompt" and prompt is None:
                prompt = a.get("gen_ai.prompt")
            if e.get("name") == "gen_ai.content.completion" and completion is None:
                completion = a.get("gen_ai.completion")
        if prompt is not None or completion is not None:
            inp, out = _messages(prompt, "user"), _messages(completion, "assistant")
            forms.append("gen_ai.prompt")
    if inp is None and out is None:
        num = _numbered(attrs)
        if num["prompt"] or num["completion"]:
            inp = [m for _, v in sorted(num["prompt"].items())
                   if (m := to_parts(v)) is not None] or None
            out = [m for _, v in sorted(num["completion"].items())
                   if (m := to_parts(v, "assistant")) is not None] or None
            if reasons is None:
                got = [v.get("finish_reason") for _, v in sorted(num["completion"].items())]
                reasons = [r for r in got if r is not None] or None
            forms.append("numbered")
    if inp is None and out is None:
        ins: list[dict[str, Any]] = []
        outs: list[tuple[int, dict[str, Any]]] = []
        got_reasons: list[Any] = []
        for e in events:
            name = e.get("name")
            if name in MESSAGE_EVENTS:
                m = to_parts(_body_of(e), MESSAGE_EVENTS[name])
                if m is not None:
                    m["role"] = m["role"] or MESSAGE_EVENTS[name]
                    ins.append(m)
            elif name == "gen_ai.choice":
                body = _body_of(e)
                body = body if isinstance(body, dict) else {"message": body}
                message = body.get("message")
                if isinstance(message, dict) and body.get("tool_calls") is not None \
                        and message.get("tool_calls") is None:  # OpenLLMetry puts them here
                    message = {**message, "tool_calls": body["tool_calls"]}
                m = to_parts(message, "assistant")
                if m is not None:
                    idx = body.get("index")
                    outs.append((idx if isinstance(idx, int) else len(outs), m))
                if body.get("finish_reason") is not None:
                    got_reasons.append(body["finish_reason"])
        if ins or outs:
            inp = ins or None
            out = [m for _, m in sorted(outs, key=lambda x: x[0])] or None
            reasons = reasons if reasons is not None else (got_reasons or None)
            forms.append("message events")
    _fill_tool_ids(inp)
    if out:  # output calls without an id: the id the same call gets in a later history
        whole = [*(inp or []), *out]
        for i in range(len(inp or []), len(whole)):
            _name_calls(whole, i, whole[i].get("parts") or [])
    if system is None and inp:
        sys_msgs = [m for m in inp if m.get("role") == "system"]
        if sys_msgs and "attributes" not in forms:
            system = [p for m in sys_msgs for p in m["parts"]]
    return {"inp": inp, "out": out, "reasons": reasons, "system": system, "tools": tools,
            "forms": forms}
