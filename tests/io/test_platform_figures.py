"""Every figure, text and tool call of the real tracing-platform samples, against a reading of
each file written here with plain ``json`` (tests/data/README.md names the sources).

For each real file of the platform formats (Langfuse framework traces, OTel captures and
recordings, Phoenix and LangSmith exports) the test below reads the file itself, following
each framework's documented output shape in a few lines, and checks what replaykit loads:

* counts: model calls (``calls_df`` rows) and tool executions (``tools_df`` rows, each with
  its result when the file records one);
* tokens: ``input_tokens`` (every prompt token, cached or not), ``output_tokens`` (every
  generated token, reasoning included), ``cache_read_tokens``, ``reasoning_tokens`` -- null
  where the file records nothing;
* text: the model's own text, never a message envelope nor ``'None'``; reasoning;
* arguments: the JSON object the model produced, decoded once; tool names without an
  operation prefix.

:data:`EXCEPTIONS` names the files where a rule does not hold, with the reason. A Hypothesis
property then encodes text, reasoning and tool arguments in every message shape
:mod:`replaykit.io._messages` reads and reads them back, through the extractor and through a
whole Langfuse export.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit.io._messages import (
    decode_arguments,
    message_text,
    read_reply,
    result_text,
    results_in,
    tool_name,
)

DATA = Path(__file__).resolve().parents[1] / "data"
FRAMEWORKS = DATA / "langfuse" / "framework-traces"
ENVELOPE = re.compile(r'^\s*[\[{]\s*"(content|role|parts|candidates|choices|output|id|lc)"')

# ------------------------------------------------------------------ Langfuse: reading


def _attrs(o: dict[str, Any]) -> dict[str, Any]:
    meta = o.get("metadata")
    a = meta.get("attributes") if isinstance(meta, dict) else None
    return a if isinstance(a, dict) else {}


def _model_calls(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """GENERATION observations in time order, leaving out those inside another GENERATION
    (Agno: its ``OpenAIChat.invoke`` generation wraps the OpenAI instrumentation's ``chat``
    generation of the same request: one model call instrumented twice)."""
    by_id = {o["id"]: o for o in doc["observations"]}

    def nested(o: dict[str, Any]) -> bool:
        p = by_id.get(o.get("parentObservationId"))
        while p is not None:
            if p["type"] == "GENERATION":
                return True
            p = by_id.get(p.get("parentObservationId"))
        return False

    gens = [o for o in doc["observations"] if o["type"] == "GENERATION" and not nested(o)]
    # BeeAI exports its emitter's events: <name>.start-<n> is the call, <name>.success-<n> /
    # .finish-<n> are events of that same call
    names = {o["name"] for o in gens}
    gens = [o for o in gens if not re.match(r".*\.(success|finish|error)-\d+$", o["name"])
            or re.sub(r"\.(success|finish|error)-", ".start-", o["name"]) not in names]
    return sorted(gens, key=lambda o: o["startTime"])


def _beeai_text(doc: dict[str, Any], start: dict[str, Any]) -> str:
    """BeeAI: the call's text is what its .success-<n> event streamed, one
    ``llm.output_messages.<i>.message.content`` attribute per delta."""
    name = start["name"].replace(".start-", ".success-")
    for o in doc["observations"]:
        if o["name"] == name:
            a = _attrs(o)
            idx = sorted(int(k.split(".")[2]) for k in a
                         if k.startswith("llm.output_messages.") and k.endswith(".content"))
            return "".join(a[f"llm.output_messages.{i}.message.content"] for i in idx)
    return ""


def _langfuse_tokens(o: dict[str, Any]) -> dict[str, Any]:
    """Langfuse ``usageDetails``: its SDKs move provider details out of ``input`` /
    ``output`` into ``input_<detail>`` / ``output_<detail>`` keys (and subtract them), so the
    whole prompt is ``input`` plus those; OTel-ingested details (``prompt_details.*``,
    ``completion_details.*``) are parts of ``input`` / ``output``. LangChain generations
    without usageDetails: ``output.usage_metadata`` (totals, details inside)."""
    u = o.get("usageDetails") or {}
    if not u:
        um = (o.get("output") or {}).get("usage_metadata") if isinstance(
            o.get("output"), dict) else None
        if um:
            return {"input": um["input_tokens"], "output": um["output_tokens"],
                    "cache_read": um.get("input_token_details", {}).get("cache_read"),
                    "reasoning": um.get("output_token_details", {}).get("reasoning")}
        return {"input": None, "output": None, "cache_read": None, "reasoning": None}
    ins = [v for k, v in u.items() if k.startswith("input_")]
    outs = [v for k, v in u.items() if k.startswith("output_")]
    cache = next((u[k] for k in ("input_cache_read", "prompt_details.cache_read") if k in u),
                 None)
    reasoning = next((u[k] for k in ("output_reasoning", "completion_details.reasoning")
                      if k in u), None)
    return {"input": u["input"] + sum(ins) if "input" in u else None,
            "output": u["output"] + sum(outs) if "output" in u else None,
            "cache_read": cache, "reasoning": reasoning}


def _openai_message(m: dict[str, Any]) -> tuple[str, list[tuple[str, str, Any]]]:
    """OpenAI chat message: ``content`` text, ``tool_calls`` (``function.arguments`` JSON
    text, or an object when the instrumentation decoded it)."""
    calls = m.get("tool_calls") or (m.get("additional_kwargs") or {}).get("tool_calls") or []
    out = []
    for c in calls:
        args = c["function"]["arguments"]
        out.append((c["id"], c["function"]["name"],
                    json.loads(args) if isinstance(args, str) else args))
    return m.get("content") or "", out


def _read_output(stem: str, out: Any) -> tuple[str, list[tuple[str, str, Any]]]:
    """(text, tool calls) of one generation's output, per framework (its documented shape)."""
    if stem.startswith(("autogen", "llamaindex", "openai-assistants")):
        return out, []  # the completion text as a string
    if stem.startswith("ag2"):  # a list of OpenAI chat messages
        text, calls = "", []
        for m in out:
            t, c = _openai_message(m)
            text, calls = text + t, calls + c
        return text, calls
    if stem.startswith("agno"):  # an OpenAI ChatCompletion object
        return _openai_message(out["choices"][0]["message"])
    if stem.startswith(("langgraph", "google-vertex")):  # LangChain AIMessage dict
        return _openai_message(out)
    if stem.startswith("google-adk"):  # ADK LlmResponse: content = Gemini Content
        parts = out["content"]["parts"]
        return ("".join(p["text"] for p in parts if "text" in p),
                [(None, p["function_call"]["name"], p["function_call"]["args"])
                 for p in parts if "function_call" in p])
    if stem.startswith("google-gemini"):  # GenerateContentResponse
        parts = out["candidates"][0]["content"]["parts"]
        return "".join(p["text"] for p in parts if "text" in p and not p.get("thought")), []
    if stem.startswith("koog"):  # OpenAI messages, tool calls as content items
        text, calls = "", []
        for m in out:
            if isinstance(m["content"], str):
                text += m["content"]
            else:
                calls += [(c["id"], c["function"]["name"], c["function"]["arguments"])
                          for c in m["content"] if c.get("type") == "function"]
        return text, calls
    if stem.startswith(("microsoft-agent", "pydantic-ai-tools")):  # GenAI semconv parts
        parts = [p for m in out for p in m["parts"]]
        return ("".join(p["content"] for p in parts if p["type"] == "text"),
                [(p["id"][-1] if isinstance(p["id"], list) else p["id"], p["name"],
                  p["arguments"]) for p in parts if p["type"] == "tool_call"])
    if stem.startswith("openai-agents"):  # a Responses API object
        text = "".join(c["text"] for i in out["output"] if i["type"] == "message"
                       for c in i["content"] if c["type"] == "output_text")
        return text, [(i["call_id"], i["name"], i["arguments"]) for i in out["output"]
                      if i["type"] == "function_call"]
    if stem.startswith("beeai"):  # outputs are null: the text is read by _beeai_text
        return "", []
    if stem.startswith("pydantic-ai-trace"):  # the gen_ai.choice event body
        return out["message"]["content"], []
    raise AssertionError(f"no reading written for {stem}")


def _langfuse_reading(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_text())
    stem = path.stem
    gens = _model_calls(doc)
    texts, calls = [], []
    for g in gens:
        text, c = _read_output(stem, g["output"])
        texts.append(_beeai_text(doc, g) if stem.startswith("beeai") else text)
        calls += c
    # tool executions recorded as observations: TOOL ones, and spans naming a tool (Koog's
    # tool.<name>, Agno's tool span): their call id attribute, else the call of their name
    tools = [o for o in doc["observations"] if o["type"] == "TOOL" or (
        o["type"] == "SPAN" and (_attrs(o).get("gen_ai.tool.call.id")
                                 or _attrs(o).get("tool.name")))]
    results: dict[str, Any] = {}
    for t in tools:
        cid = _attrs(t).get("gen_ai.tool.call.id")
        cid = cid[-1] if isinstance(cid, list) else cid
        name = _attrs(t).get("gen_ai.tool.name") or _attrs(t).get("tool.name") or t["name"]
        match = [i for i, c in enumerate(calls) if c[0] == cid or (
            c[0] is None or cid is None) and c[1] == name and c[0] not in results]
        if match:
            i = match[0]
            calls[i] = (cid or calls[i][0], calls[i][1], calls[i][2])
        else:
            calls.append((cid or t["id"], name, t["input"]))
        results[cid or calls[match[0]][0] if match else t["id"]] = t["output"]
    # results handed back in a later generation's input (OpenAI role: tool messages)
    for g in gens:
        for m in g["input"] if isinstance(g["input"], list) else []:
            if isinstance(m, dict) and m.get("role") == "tool" and m.get("tool_call_id"):
                results.setdefault(m["tool_call_id"], m["content"])
    return {"calls": len(gens), "tokens": [_langfuse_tokens(g) for g in gens],
            "texts": texts, "tools": calls, "results": results}


# ------------------------------------------------------------------ exceptions

#: (file stem, rule) -> why the rule does not hold for that real file
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("beeai-2025-08-01", "tools"): (
        "BeeAI's ReAct agent asks for tools in its text ('Function Name: ...'), not as API "
        "tool calls, and its tool runs are exported as tool.<name>.start-N / .finish-N / "
        ".success-N SPANs that name no tool (no gen_ai.tool.name / tool.name attribute): no "
        "tool_call rows are made for them"),
}


def _holds(stem: str, rule: str) -> bool:
    return (stem, rule) not in EXCEPTIONS


def _na(v: Any) -> Any:
    return None if v is None or pd.isna(v) else int(v)


LANGFUSE = sorted(FRAMEWORKS.glob("*.json"))


@pytest.mark.parametrize("path", LANGFUSE, ids=lambda p: p.stem)
def test_langfuse_framework_trace_figures(path: Path) -> None:
    stem = path.stem
    log = rk.read_langfuse(path, owner="acme")
    calls, tools = log.calls_df(), log.tools_df()
    assert len(log.quarantine) == 0
    # text is never an envelope nor a missing value printed as 'None'
    for t in calls.text.dropna():
        assert not ENVELOPE.match(t), (stem, t[:80])
        assert t != "None"
    assert not tools.tool_name.fillna("").str.match(r"^(execute_tool |running tool)").any()
    if not _holds(stem, "counts"):
        return
    want = _langfuse_reading(path)
    assert len(calls) == want["calls"]
    for got, w in zip(calls.itertuples(), want["tokens"], strict=True):
        assert _na(got.input_tokens) == w["input"]
        assert _na(got.output_tokens) == w["output"]
        assert _na(got.cache_read_tokens) == w["cache_read"]
        assert _na(got.reasoning_tokens) == w["reasoning"]
    if _holds(stem, "text"):
        assert [t or "" for t in calls.text.fillna("")] == want["texts"]
    # tool calls: one row each, named as called, arguments decoded once
    if not _holds(stem, "tools"):
        assert tools.empty
        return
    assert len(tools) == len(want["tools"])
    by_name = sorted((r.tool_name, json.loads(r.arguments)) for r in tools.itertuples())
    assert by_name == sorted((n, a) for _, n, a in want["tools"])
    ids = [c for c, _, _ in want["tools"] if c is not None]
    assert set(ids) <= set(tools.call_id)
    assert tools.call_id.is_unique
    for cid, res in want["results"].items():
        row = tools.set_index("call_id").loc[cid]
        assert row.has_result
        if isinstance(res, str):
            assert row.result_text == res


def test_langfuse_gemini_reasoning_and_agno_nested_generation() -> None:
    """Gemini's thinking tokens (completion_details.reasoning) are part of ``output``; Agno's
    nested ``chat`` generation is not a second call (its text was the string 'None')."""
    gem = rk.read_langfuse(FRAMEWORKS / "google-gemini-2025-08-01.json", owner="a")
    c = gem.calls_df().iloc[0]
    doc = json.loads((FRAMEWORKS / "google-gemini-2025-08-01.json").read_text())
    u = doc["observations"][0]["usageDetails"]
    assert (c.output_tokens, c.reasoning_tokens) == (u["output"], u["completion_details.reasoning"])
    assert c.input_tokens + c.output_tokens == u["total"]
    agno = rk.read_langfuse(FRAMEWORKS / "agno-2025-06-11.json", owner="a")
    assert "None" not in agno.calls_df().text.fillna("").tolist()
    assert agno.tools_df().result_text.iloc[0].startswith('[{"body":')


# ------------------------------------------------------------------ OTel, Phoenix, LangSmith

INTERLINGUA = DATA / "otel" / "interlingua"


def _otlp_attrs(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(span name, attributes as plain values) of every span of an OTLP/JSON file."""
    doc = json.loads(path.read_text())
    out = []
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                a = {}
                for kv in sp.get("attributes", []):
                    v = kv["value"]
                    a[kv["key"]] = next(iter(v.values())) if v else None
                out.append((sp["name"], a))
    return out


def _int(v: Any) -> int | None:
    return None if v is None else int(v)


def _otel_reading(path: Path) -> dict[str, Any]:
    """One model call per span whose operation is a model call -- ``gen_ai.operation.name``
    chat, OpenInference kind LLM, Vercel ``ai.*.doGenerate`` -- with its tokens; its tool
    call from the form that instrumentation documents."""
    calls, tools = [], []
    for _name, a in _otlp_attrs(path):
        if a.get("gen_ai.operation.name") == "chat":
            out = json.loads(a["gen_ai.output.messages"])
            parts = [p for m in out for p in m["parts"]]
            found = [(p["id"], p["name"], p["arguments"]) for p in parts
                     if p["type"] == "tool_call"]
            if "gen_ai.completion.0.function_call.name" in a:  # LiteLLM: no id
                found.append((None, a["gen_ai.completion.0.function_call.name"],
                              json.loads(a["gen_ai.completion.0.function_call.arguments"])))
            tools += found
            # the conventions' cache attribute; OpenLLMetry spells reasoning without .output
            calls.append({"input": _int(a["gen_ai.usage.input_tokens"]),
                          "output": _int(a["gen_ai.usage.output_tokens"]),
                          "cache_read": _int(a.get("gen_ai.usage.cache_read.input_tokens")),
                          "reasoning": _int(a.get("gen_ai.usage.reasoning.output_tokens",
                                                  a.get("gen_ai.usage.reasoning_tokens"))),
                          "text": "".join(p["content"] for p in parts if p["type"] == "text")})
        elif a.get("openinference.span.kind") == "LLM":
            tools.append((a["llm.output_messages.0.message.tool_calls.0.tool_call.id"],
                          a["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"],
                          json.loads(a["llm.output_messages.0.message.tool_calls.0.tool_call."
                                       "function.arguments"])))
            calls.append({"input": _int(a["llm.token_count.prompt"]),
                          "output": _int(a["llm.token_count.completion"]),
                          "cache_read": _int(a["llm.token_count.prompt_details.cache_read"]),
                          "reasoning": _int(a["llm.token_count.completion_details.reasoning"]),
                          "text": ""})
        elif a.get("ai.operationId") == "ai.generateText.doGenerate":
            for c in json.loads(a["ai.response.toolCalls"]):  # input is JSON text (SDK 5)
                tools.append((c["toolCallId"], c["toolName"], json.loads(c["input"])))
            calls.append({"input": _int(a["gen_ai.usage.input_tokens"]),
                          "output": _int(a["gen_ai.usage.output_tokens"]),
                          "cache_read": None, "reasoning": None,
                          "text": a.get("ai.response.text") or ""})
    return {"calls": calls, "tools": tools}


#: LiteLLM keeps cached and reasoning tokens only in ``metadata.usage_object`` (a Python
#: repr of the provider's usage): 256 and 8 in this capture
_LITELLM_USAGE = {"cache_read": 256, "reasoning": 8}


@pytest.mark.parametrize("path", sorted(INTERLINGUA.glob("*.json")), ids=lambda p: p.stem)
def test_otel_captured_instrumentations(path: Path) -> None:
    want = _otel_reading(path)
    if path.stem == "litellm.otlp":
        want["calls"][0].update(_LITELLM_USAGE)
    log = rk.read_otel(path, owner="acme")
    calls, tools = log.calls_df(), log.tools_df()
    assert len(calls) == len(want["calls"])
    for got, w in zip(calls.itertuples(), want["calls"], strict=True):
        assert (_na(got.input_tokens), _na(got.output_tokens)) == (w["input"], w["output"])
        assert (_na(got.cache_read_tokens), _na(got.reasoning_tokens)) == (
            w["cache_read"], w["reasoning"])
        assert (got.text if isinstance(got.text, str) else "") == w["text"]
    assert len(tools) == len(want["tools"])
    assert [(r.tool_name, json.loads(r.arguments)) for r in tools.itertuples()] == [
        (n, a) for _, n, a in want["tools"]]
    for cid, _, _ in want["tools"]:
        if cid is not None:
            assert cid in set(tools.call_id)
    if path.stem == "openllmetry.otlp":  # the workflow span is the run, not a model call
        kinds = log.table.column("kind").to_pylist()
        assert kinds.count("model_response") == 1 and kinds[0] == "session"
    if path.stem == "vercel.otlp":  # the ai.toolCall span is the execution, with its result
        attrs = dict(_otlp_attrs(path))["ai.toolCall"]
        assert tools.result_text.tolist() == [attrs["ai.toolCall.result"]]


def _recorded() -> list[tuple[str, Path]]:
    out = [("otel", p) for p in sorted((DATA / "otel").glob("*/*.otlp.json"))
           if p.parent.name != "interlingua"]
    out += [("phoenix", p) for p in sorted((DATA / "phoenix" / "recorded").iterdir())]
    out += [("langsmith", p) for p in sorted((DATA / "langsmith" / "sdk").glob("*.json"))]
    return out


def _openai_text_calls(resp: dict[str, Any]) -> tuple[str, list[tuple[str, str, Any]]]:
    return _openai_message(resp["choices"][0]["message"])


@pytest.mark.parametrize("fmt,path", _recorded(), ids=lambda x: getattr(x, "name", x))
def test_recorded_platform_exports_text_and_arguments(fmt: str, path: Path) -> None:
    """Recorded OTel (Langtrace, OpenLIT), Phoenix and LangSmith exports: text is text
    (never an envelope nor 'None'), arguments objects decoded once, tool names as called,
    and each tool execution one row."""
    log = getattr(rk, f"read_{fmt}")(path, owner="acme")
    calls, tools = log.calls_df(), log.tools_df()
    for t in calls.text.dropna():
        assert not ENVELOPE.match(t) and t != "None", t[:80]
    for r in tools.itertuples():
        assert isinstance(json.loads(r.arguments), dict)
        assert r.tool_name == "get_weather"
    assert tools.call_id.is_unique
    if fmt == "otel":  # cache figures of the model spans (counts and input/output tokens:
        # tests/io/test_otel_recorded_samples.py reads them the same way)
        chats = [a for _, a in _otlp_attrs(path) if "gen_ai.usage.input_tokens" in a]
        read = [_int(a.get("gen_ai.usage.cache_read.input_tokens",
                           a.get("gen_ai.usage.cached_tokens"))) for a in chats]  # Langtrace
        used = calls[calls.input_tokens.notna()]  # the failed call recorded no usage

        def figures(col: str) -> list[str]:
            return sorted(str(_na(v)) for v in used[col])

        assert figures("cache_read_tokens") == sorted(map(str, read))
        if "cache_write_tokens" in calls:  # the column grain adds (another branch)
            write = [_int(a.get("gen_ai.usage.cache_creation.input_tokens")) for a in chats]
            assert figures("cache_write_tokens") == sorted(map(str, write))
    if fmt == "langsmith":  # the run batches: every llm run's text and usage, read here
        doc = json.loads(path.read_text())
        runs = {r["dotted_order"]: dict(r) for r in doc.get("post", [])}
        for p in doc.get("patch", []):  # a patch completes its post (same dotted_order)
            runs.setdefault(p["dotted_order"], {}).update(p)
        llm = [r for r in runs.values() if r.get("run_type") == "llm"]
        assert len(calls) == len(llm)
        for got, r in zip(calls.itertuples(), llm, strict=True):
            out = r["outputs"]
            um = out.get("usage_metadata") or {}
            u = out.get("usage") or {}
            text = _openai_text_calls(out)[0] if "choices" in out else None
            if text is not None:
                assert got.text == text
            # LangChain's usage_metadata details, else OpenAI's usage details
            reasoning = [(um.get("output_token_details") or {}).get("reasoning"),
                         (u.get("completion_tokens_details") or {}).get("reasoning_tokens")]
            cached = [(um.get("input_token_details") or {}).get("cache_read"),
                      (u.get("prompt_tokens_details") or {}).get("cached_tokens")]
            assert _na(got.reasoning_tokens) == next(
                (v for v in reasoning if v is not None), None)
            assert _na(got.cache_read_tokens) == next((v for v in cached if v is not None),
                                                      None)


# ------------------------------------------------------------------ the extractor, by shape

_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40).filter(
    lambda s: s != "None" and s.strip()[:1] not in ("{", "["))
_KEY = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
_SCALAR = st.one_of(st.integers(-1000, 1000), st.booleans(), st.none(), _TEXT)
_OBJ = st.dictionaries(_KEY, st.one_of(_SCALAR, st.lists(_SCALAR, max_size=3),
                                       st.dictionaries(_KEY, _SCALAR, max_size=3)),
                       max_size=4)
#: a free-form string input (a shell command, a patch): stays a string
_FREE = _TEXT


@st.composite
def _replies(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(0, 3))
    names = draw(st.lists(_KEY, min_size=n, max_size=n))
    return {"text": draw(_TEXT), "reasoning": draw(st.none() | _TEXT),
            "calls": [(f"call_{i}_{draw(_KEY)}", nm, draw(_OBJ)) for i, nm in
                      enumerate(names)],
            "free": draw(st.none() | _FREE)}


def _oa_calls(calls: list[tuple[str, str, Any]]) -> list[dict[str, Any]]:
    return [{"id": i, "type": "function", "function": {
        "name": n, "arguments": a if isinstance(a, str) else json.dumps(a)}} for i, n, a in calls]


def _encode(shape: str, r: dict[str, Any]) -> Any:
    """``r`` (text, reasoning, calls) in one message shape, as its producers write it."""
    t, rs, calls = r["text"], r["reasoning"], r["calls"]
    if shape == "anthropic":
        return {"role": "assistant", "stop_reason": "end_turn", "content": [
            *([{"type": "thinking", "thinking": rs, "signature": "x"}] if rs else []),
            {"type": "text", "text": t},
            *({"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls)]}
    if shape == "openai_chat":
        return {"role": "assistant", "content": t, "tool_calls": _oa_calls(calls),
                **({"reasoning_content": rs} if rs else {})}
    if shape == "openai_completion":
        return {"object": "chat.completion", "choices": [
            {"index": 0, "finish_reason": "stop", "message": _encode("openai_chat", r)}]}
    if shape == "responses":
        return {"object": "response", "output": [
            *([{"type": "reasoning", "summary": [{"type": "summary_text", "text": rs}]}]
              if rs else []),
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": t, "annotations": []}]},
            *({"type": "function_call", "call_id": i, "name": n,
               "arguments": a if isinstance(a, str) else json.dumps(a)} for i, n, a in calls)]}
    if shape == "genai":
        return [{"role": "assistant", "finish_reason": "stop", "parts": [
            *([{"type": "reasoning", "content": rs}] if rs else []),
            {"type": "text", "content": t},
            *({"type": "tool_call", "id": i, "name": n, "arguments": a} for i, n, a in calls)]}]
    if shape in ("gemini", "adk"):
        content = {"role": "model", "parts": [
            *([{"text": rs, "thought": True}] if rs else []), {"text": t},
            *({"function_call": {"id": i, "name": n, "args": a}} for i, n, a in calls)]}
        return {"candidates": [{"content": content, "finish_reason": "STOP"}]} \
            if shape == "gemini" else {"content": content, "finish_reason": "STOP"}
    if shape == "agent_framework":
        return {"role": "assistant", "contents": [
            *([{"type": "text_reasoning", "text": rs}] if rs else []),
            {"type": "text", "text": t},
            *({"type": "function_call", "call_id": i, "name": n, "arguments": a}
              for i, n, a in calls)]}
    if shape == "vercel":
        return {"ai.response.text": t, **({"ai.response.reasoning": rs} if rs else {}),
                "ai.response.toolCalls": json.dumps([
                    {"toolCallId": i, "toolName": n,
                     "input": a if isinstance(a, str) else json.dumps(a)}
                    for i, n, a in calls])}
    if shape == "langchain_serialized":
        return {"lc": 1, "type": "constructor",
                "id": ["langchain", "schema", "messages", "AIMessage"],
                "kwargs": {"content": t, "type": "ai",
                           "tool_calls": [{"id": i, "name": n, "args": a, "type": "tool_call"}
                                          for i, n, a in calls],
                           "additional_kwargs": {"reasoning_content": rs} if rs else {}}}
    if shape == "langchain_dict":
        return {"role": "assistant", "content": t,
                "additional_kwargs": {"tool_calls": _oa_calls(calls),
                                      **({"reasoning_content": rs} if rs else {})}}
    if shape == "llamaindex":
        return {"message": {"role": "assistant", "blocks": [
            *([{"block_type": "thinking", "content": rs}] if rs else []),
            {"block_type": "text", "text": t}],
            "additional_kwargs": {"tool_calls": _oa_calls(calls)}}, "raw": {}}
    if shape == "pydantic_ai":
        return {"kind": "response", "parts": [
            *([{"part_kind": "thinking", "content": rs}] if rs else []),
            {"part_kind": "text", "content": t},
            *({"part_kind": "tool-call", "tool_name": n, "args": a, "tool_call_id": i}
              for i, n, a in calls)]}
    if shape == "koog":
        return [{"role": "assistant", "content": t},
                *({"role": "assistant", "content": [
                    {"type": "function", "id": i, "function": {"name": n, "arguments": a}}]}
                  for i, n, a in calls)]
    raise AssertionError(shape)


SHAPES = ("anthropic", "openai_chat", "openai_completion", "responses", "genai", "gemini",
          "adk", "agent_framework", "vercel", "langchain_serialized", "langchain_dict",
          "llamaindex", "pydantic_ai", "koog")
#: shapes that carry reasoning text (the others have no reasoning member)
_REASONS = set(SHAPES) - {"koog"}
#: shapes whose tool input may be a free-form string (JSON-text arguments, or any value)
_FREE_OK = {"openai_chat", "openai_completion", "responses", "genai", "agent_framework",
            "vercel", "langchain_dict", "llamaindex", "pydantic_ai", "koog"}


def _with_free(shape: str, r: dict[str, Any]) -> dict[str, Any]:
    if r["free"] is not None and shape in _FREE_OK:
        return {**r, "calls": [*r["calls"], ("call_free", "bash", r["free"])]}
    return r


@pytest.mark.parametrize("shape", SHAPES)
@given(r=_replies(), as_text=st.booleans())
@settings(max_examples=30, deadline=None)
def test_every_shape_reads_back_text_reasoning_and_arguments(shape: str, r: dict[str, Any],
                                                             as_text: bool) -> None:
    r = _with_free(shape, r)
    value = _encode(shape, r)
    got = read_reply(json.dumps(value) if as_text else value)  # JSON text of it reads the same
    assert got.text == r["text"]
    assert got.reasoning == (r["reasoning"] if shape in _REASONS else None)
    assert [(c.id, c.name, c.arguments) for c in got.calls] == r["calls"]


@pytest.mark.parametrize("shape", SHAPES)
@given(r=_replies())
@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_every_shape_through_a_langfuse_export(tmp_path: Path, shape: str,
                                               r: dict[str, Any]) -> None:
    """The same values as a generation's output in a Langfuse export: calls_df's text and
    reasoning, tools_df's arguments (JSON text of the value, decoded once) and names."""
    r = _with_free(shape, r)
    doc = {"trace": {"id": "t1", "timestamp": "2026-01-01T00:00:00Z", "name": "p"},
           "observations": [{"id": "g1", "traceId": "t1", "type": "GENERATION",
                             "name": "chat", "startTime": "2026-01-01T00:00:01Z",
                             "input": [{"role": "user", "content": "hi"}],
                             "output": _encode(shape, r),
                             "usageDetails": {"input": 10, "output": 3}}]}
    path = tmp_path / f"{shape}.json"
    path.write_text(json.dumps(doc))
    log = rk.read_langfuse(path, owner="acme")
    c = log.calls_df().iloc[0]
    assert c.text == r["text"]
    want_reasoning = r["reasoning"] if shape in _REASONS else None
    assert (None if pd.isna(c.reasoning) else c.reasoning) == want_reasoning
    assert (c.input_tokens, c.output_tokens) == (10, 3)
    tools = log.tools_df()
    assert [(t.call_id, t.tool_name, json.loads(t.arguments)) for t in tools.itertuples()] \
        == [(i, n, a) for i, n, a in r["calls"]]


def test_arguments_decode_once_and_names_lose_operation_prefixes() -> None:
    assert decode_arguments('{"input":{"city":"Berlin"}}') == {"input": {"city": "Berlin"}}
    assert decode_arguments('"{\\"a\\": 1}"') == '"{\\"a\\": 1}"'  # a JSON string: as is
    assert decode_arguments("ls -la") == "ls -la"
    assert decode_arguments("{not json") == "{not json"
    assert tool_name("execute_tool say_hello") == "say_hello"
    assert tool_name("running tool: get_pun") == "get_pun"
    assert tool_name("execute_tool") == "execute_tool"
    assert read_reply("None").text is None
    # a trace's input / a tool's result: JSON text decoded once, any role's text
    assert message_text('"[{\\"role\\": \\"user\\", \\"content\\": \\"hi\\"}]"') == "hi"
    assert message_text([{"role": "user", "parts": [{"type": "text", "content": "q"}]}]) == "q"
    assert message_text({"user_id": "u", "x": 1}) == '{"user_id":"u","x":1}'
    assert result_text('"sunny"') == "sunny"
    assert result_text('{"a": 1}') == '{"a": 1}'  # the string the tool returned, as is
    assert result_text({"a": 1}) == '{"a":1}'
    assert result_text([{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]) == "xy"
    assert results_in([{"role": "tool", "tool_call_id": "c1", "content": "ok"},
                       {"type": "function_call_output", "call_id": "c2", "output": "x"},
                       {"role": "user", "content": [{"type": "tool_result",
                                                     "tool_use_id": "c3", "content": "y"}]},
                       {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c4",
                                                   "response": {"v": 1}}]}]) == [
        ("c1", None, "ok"), ("c2", None, "x"), ("c3", None, "y"), ("c4", None, {"v": 1})]


def _span(sid: str, name: str, start: int, end: int, attrs: dict[str, Any],
          parent: str | None = "0000000000000001") -> dict[str, Any]:
    return {"traceId": "ab" * 16, "spanId": sid, "name": name,
            **({"parentSpanId": parent} if parent else {}),
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
            "attributes": [{"key": k, "value": {"stringValue": v} if isinstance(v, str)
                            else {"intValue": str(v)}} for k, v in attrs.items()],
            "status": {}}


def test_otel_tool_span_without_call_id_is_the_call_a_later_history_gives(
        tmp_path: Path) -> None:
    """openai-agents' shape: the execute_tool span names the tool but no call id, the first
    response's output records no parts, the next request's history holds the call and its
    result with the id: one execution is one call row and one result row."""
    call = {"type": "tool_call", "id": "call_1", "name": "get_weather",
            "arguments": {"city": "Tokyo"}}
    history = [{"role": "user", "parts": [{"type": "text", "content": "weather?"}]},
               {"role": "assistant", "parts": [call]},
               {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1",
                                           "response": "sunny"}]}]
    spans = [
        _span("0000000000000001", "invoke_agent a", 0, 100,
              {"gen_ai.operation.name": "invoke_agent"}, parent=None),
        _span("0000000000000002", "chat", 10, 20,
              {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 5,
               "gen_ai.input.messages": json.dumps(history[:1])}),
        _span("0000000000000003", "execute_tool get_weather", 21, 30,
              {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
               "gen_ai.tool.call.arguments": '{"city": "Tokyo"}',
               "gen_ai.tool.call.result": "sunny"}),
        _span("0000000000000004", "chat", 31, 40,
              {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 9,
               "gen_ai.input.messages": json.dumps(history),
               "gen_ai.output.messages": json.dumps(
                   [{"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}]}])}),
    ]
    path = tmp_path / "agents.json"
    path.write_text(json.dumps({"resourceSpans": [{"resource": {"attributes": []},
                                                   "scopeSpans": [{"spans": spans}]}]}))
    log = rk.read_otel(path, owner="acme")
    tools = log.tools_df()
    assert tools[["call_id", "tool_name", "result_text"]].values.tolist() == [
        ["call_1", "get_weather", "sunny"]]
    assert json.loads(tools.arguments.iloc[0]) == {"city": "Tokyo"}
    kinds = log.table.column("kind").to_pylist()
    assert kinds.count("tool_call") == 1 and kinds.count("tool_result") == 1
