"""The stamp rules: which field of which format's events records each reproducibility stamp."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._base.json import JSONDecodeError, loads

__all__ = ["STAMP_FIELDS"]

#: The stamp fields, in column order, with what each one means.
STAMP_FIELDS: dict[str, str] = {
    "model": "model id requested",
    "model_version": "model id/version the provider reported back (response model)",
    "provider": "model provider (gen_ai.provider.name, provider, Inspect model prefix)",
    "transport": "how the provider is reached: native / router / byok (only when recorded)",
    "provider_sdk_version": "version of the provider SDK making the call",
    "harness_version": "agent / harness name and version",
    "package_versions": "package -> version (JSON object text)",
    "client_version": "client / host application version (e.g. OTel service.version)",
    "temperature": "sampling temperature",
    "top_p": "nucleus sampling top_p",
    "max_tokens": "output token limit",
    "stop_sequences": "stop sequences (JSON list text)",
    "seed": "sampling seed",
    "reasoning_effort": "reasoning effort setting",
    "system_prompt_hash": "sha256 (first 16 hex) of the system prompt text",
    "system_prompt": "the system prompt text, where recorded",
    "safety_policy": "approval / sandbox / permission / safety settings (JSON object text)",
    "tool_schema_hash": "sha256 (first 16 hex) of the canonical JSON of the tool definitions",
    "tools": "number of tool definitions",
    "plugins": "plugin names seen (JSON list text)",
    "plugin_versions": "plugin -> version (JSON object text), where recorded",
}

_FLOATS = ("temperature", "top_p")
#: Fields read from responses: they hold for the request that precedes them.
_RESPONSE_FIELDS = ("model_version",)
_INTS = ("max_tokens", "seed", "tools")
#: Fields whose value is assembled from several sub-fields (``safety_policy.sandbox``, ...).
_OBJECT_FIELDS = ("safety_policy", "package_versions", "plugin_versions")

_BAD_JSON: tuple[type[Exception], ...] = (*JSONDecodeError, ValueError)

_Getter = Callable[[Any], "tuple[Any, str] | None"]


def _hash16(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _placeholder(v: Any) -> bool:
    """Snapshot placeholders such as ``{{system}}`` stand for a value the log does not keep."""
    return isinstance(v, str) and v.startswith("{{") and v.endswith("}}")


def _at(doc: Any, path: Sequence[str]) -> Any:
    for key in path:
        if not isinstance(doc, Mapping):
            return None
        doc = doc.get(key)
    return doc


def _p(*paths: str | tuple[str, ...]) -> _Getter:
    """The first non-null value at one of ``paths`` (dotted text, or a tuple of keys for keys
    that contain dots, e.g. ``("attributes", "gen_ai.request.model")``)."""
    keyed = [(p.split(".") if isinstance(p, str) else list(p)) for p in paths]

    def get(doc: Any) -> tuple[Any, str] | None:
        for keys in keyed:
            v = _at(doc, keys)
            if v is not None and v != "" and not _placeholder(v):
                return v, ".".join(keys)
        return None

    get.paths = keyed  # type: ignore[attr-defined]  # read by the column-wise fast path
    return get


def _system_of_messages(*paths: str) -> _Getter:
    """Text of the first ``role == "system"`` message of a message list."""
    keyed = [p.split(".") for p in paths]

    def get(doc: Any) -> tuple[Any, str] | None:
        for keys in keyed:
            msgs = _at(doc, keys)
            if not isinstance(msgs, list):
                continue
            for m in msgs:
                if isinstance(m, Mapping) and m.get("role") == "system":
                    text = _content_text(m.get("content"))
                    if text:
                        return text, ".".join(keys) + "[role=system].content"
        return None

    get.paths = keyed  # type: ignore[attr-defined]
    return get


def _content_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [c.get("text") if isinstance(c, Mapping) else c for c in content]
        texts = [p for p in parts if isinstance(p, str)]
        return "".join(texts) if texts else None
    return None


def _maybe_json(v: Any) -> Any:
    """OTel keeps structured attributes as JSON text; decode it when it is."""
    if isinstance(v, str) and v[:1] in "[{":
        try:
            return loads(v)
        except _BAD_JSON:
            return v
    return v


def _inspect_provider(doc: Any) -> tuple[Any, str] | None:
    m = doc.get("model") if isinstance(doc, Mapping) else None
    if isinstance(m, str) and "/" in m:
        return m.split("/", 1)[0], "model (provider/ prefix)"
    return None


def _instructions(*paths: tuple[str, ...]) -> _Getter:
    """OTel system instructions: text, or the current conventions' parts (JSON text or a
    list) whose text parts are joined."""
    keyed = [list(p) for p in paths]

    def get(doc: Any) -> tuple[Any, str] | None:
        for keys in keyed:
            v = _maybe_json(_at(doc, keys))
            if isinstance(v, list) and v and all(isinstance(p, Mapping) for p in v):
                texts = [p.get("content") for p in v if p.get("type") == "text"]
                if texts and all(isinstance(t, str) for t in texts):
                    v = "".join(texts)
            if v is not None and v != "" and v != []:
                return v, ".".join(keys)
        return None

    get.paths = keyed  # type: ignore[attr-defined]
    return get


def _versioned(name: str, *paths: str) -> _Getter:
    """``"<name>@<version>"`` from the first of ``paths`` that holds a version string."""
    keyed = [p.split(".") for p in paths]

    def get(doc: Any) -> tuple[Any, str] | None:
        for keys in keyed:
            v = _at(doc, keys)
            if isinstance(v, str) and v:
                return f"{name}@{v}", ".".join(keys)
        return None

    return get  # no ``paths``: the column-wise reader would take the bare value


def _sdk_version(*paths: str) -> _Getter:
    """LangSmith's ``extra.runtime``: ``"<sdk>@<sdk_version>"``."""
    keyed = [p.split(".") for p in paths]

    def get(doc: Any) -> tuple[Any, str] | None:
        for keys in keyed:
            rt = _at(doc, keys)
            if isinstance(rt, Mapping) and isinstance(rt.get("sdk_version"), str):
                name = rt.get("sdk") or rt.get("library") or "langsmith"
                return f"{name}@{rt['sdk_version']}", ".".join(keys) + ".sdk_version"
        return None

    return get


def _json_param(field: str, *paths: tuple[str, ...]) -> _Getter:
    """A field of an invocation-parameters object that may be stored as JSON text (Phoenix's
    ``llm.invocation_parameters``)."""
    keyed = [list(p) for p in paths]

    def get(doc: Any) -> tuple[Any, str] | None:
        for keys in keyed:
            params = _maybe_json(_at(doc, keys))
            if isinstance(params, Mapping) and params.get(field) is not None:
                return params[field], ".".join(keys) + f".{field}"
        return None

    get.paths = keyed  # type: ignore[attr-defined]
    return get


def _otel_stamp(field: str, *paths: tuple[str, ...]) -> _Getter:
    """A field from its GenAI attribute(s), else the ``replaykit.stamp.<field>`` attribute
    that :func:`replaykit.to_otel` writes for fields the conventions have no name for."""
    return _p(*paths, ("attributes", f"replaykit.stamp.{field}"))


def _oi_param(*names: str) -> _Getter:
    """A sampling setting from OpenInference's ``llm.invocation_parameters`` (JSON text)."""
    keyed = [["attributes", "llm.invocation_parameters"]]

    def get(doc: Any) -> tuple[Any, str] | None:
        params = _maybe_json(_at(doc, keyed[0]))
        if isinstance(params, Mapping):
            for n in names:
                if params.get(n) is not None:
                    return params[n], f"attributes.llm.invocation_parameters.{n}"
        return None

    get.paths = keyed  # type: ignore[attr-defined]
    return get


def _either(*getters: _Getter) -> _Getter:
    """The first getter that finds a value."""
    def get(doc: Any) -> tuple[Any, str] | None:
        for g in getters:
            got = g(doc)
            if got is not None:
                return got
        return None

    get.paths = [p for g in getters for p in getattr(g, "paths", [])]  # type: ignore[attr-defined]
    return get


_OTEL_GETTERS: dict[str, _Getter] = {
    "model": _otel_stamp("model", ("attributes", "gen_ai.request.model"),
                         ("attributes", "llm.model_name")),
    "model_version": _otel_stamp("model_version", ("attributes", "gen_ai.response.model")),
    "provider": _otel_stamp("provider", ("attributes", "gen_ai.provider.name"),
                            ("attributes", "gen_ai.system"), ("attributes", "llm.provider"),
                            ("attributes", "llm.system")),
    "temperature": _either(_otel_stamp("temperature",
                                       ("attributes", "gen_ai.request.temperature")),
                           _oi_param("temperature")),
    "top_p": _either(_otel_stamp("top_p", ("attributes", "gen_ai.request.top_p")),
                     _oi_param("top_p")),
    "max_tokens": _either(_otel_stamp("max_tokens",
                                      ("attributes", "gen_ai.request.max_tokens")),
                          _oi_param("max_tokens", "max_completion_tokens")),
    "stop_sequences": _otel_stamp("stop_sequences",
                                  ("attributes", "gen_ai.request.stop_sequences")),
    "seed": _otel_stamp("seed", ("attributes", "gen_ai.request.seed")),
    "system_prompt": _instructions(("attributes", "gen_ai.system_instructions"),
                                   ("genai", "system_instructions")),
    "tool_defs": _p(("attributes", "gen_ai.tool.definitions"),
                    ("genai", "tool_definitions")),
    "client_version": _otel_stamp("client_version", ("resource", "service.version")),
    "harness_version": _otel_stamp("harness_version", ("resource", "gen_ai.agent.version")),
    **{f: _otel_stamp(f) for f in ("transport", "provider_sdk_version", "package_versions",
                                   "reasoning_effort", "system_prompt_hash", "safety_policy",
                                   "tool_schema_hash", "tools", "plugins", "plugin_versions")},
}

_LS = "extra.invocation_params"
_PX_PARAMS = (("attributes.llm.invocation_parameters",),
              ("attributes", "llm.invocation_parameters"),
              ("attributes", "llm", "invocation_parameters"))


# Rule: (match on column, values, {field: getter}). ``"type"`` matches the event's source type,
# ``"kind"`` its canonical kind. Later rules at the same event add fields; for one field the
# first getter that finds a value wins.
_Rule = tuple[str, tuple[str, ...], dict[str, _Getter]]

_CFG = "data.header.config"
_RULES: dict[str, list[_Rule]] = {
    "toh": [
        ("type", ("request/header",), {
            "model": _p(f"{_CFG}.model"), "provider": _p(f"{_CFG}.provider"),
            "transport": _p(f"{_CFG}.transport"),
            "temperature": _p(f"{_CFG}.temperature"), "top_p": _p(f"{_CFG}.topP"),
            "max_tokens": _p(f"{_CFG}.maxTokens"),
            "stop_sequences": _p(f"{_CFG}.stopSequences", f"{_CFG}.stop"),
            "seed": _p(f"{_CFG}.seed"), "reasoning_effort": _p(f"{_CFG}.reasoningEffort"),
            "system_prompt": _p("data.header.system"), "tool_defs": _p("data.header.tools"),
        }),
        ("type", ("request/context",), {"model": _p("data.model"),
                                         "provider": _p("data.provider")}),
        ("type", ("approval/policy",), {"safety_policy.approval": _p("data.policy")}),
        ("type", ("sandbox/mode",), {"safety_policy.sandbox": _p("data.mode")}),
        ("type", ("permission/preset",), {"safety_policy.permission": _p("data.preset")}),
    ],
    "pleach": [
        ("type", ("model.requested",), {
            "model": _p("model"), "provider": _p("provider"), "transport": _p("transport"),
            "temperature": _p("settings.temperature"),
            "top_p": _p("settings.top_p", "settings.topP"),
            "max_tokens": _p("settings.max_tokens", "settings.maxTokens"),
            "stop_sequences": _p("settings.stop_sequences", "settings.stopSequences",
                                 "settings.stop"),
            "seed": _p("settings.seed"),
            "reasoning_effort": _p("settings.reasoning_effort", "settings.reasoningEffort"),
            "system_prompt": _system_of_messages("messages"),
            "tool_defs": _p("tools", "settings.tools"),
        }),
        ("type", ("model.completed",), {"model_version": _p("model")}),
    ],
    "isplay": [
        ("type", ("model.call",), {
            "model": _p("settings.model", "model"), "provider": _p("settings.provider",
                                                                   "provider"),
            "transport": _p("settings.transport"),
            "temperature": _p("settings.temperature"),
            "top_p": _p("settings.topP", "settings.top_p"),
            "max_tokens": _p("settings.maxTokens", "settings.max_tokens"),
            "stop_sequences": _p("settings.stopSequences", "settings.stop"),
            "seed": _p("settings.seed"),
            "reasoning_effort": _p("settings.reasoningEffort"),
            "system_prompt": _p("prompt", "system"),
            "tool_defs": _p("tools"),
            "safety_policy.policy": _p("settings.safetyPolicy"),
        }),
        ("type", ("model.result",), {"model_version": _p("model", "output.model")}),
    ],
    "otel": [
        ("kind", ("model_response",), _OTEL_GETTERS),
        # a run's root span (replaykit's own export stamps it: runs without model calls)
        ("kind", ("session",), _OTEL_GETTERS),
    ],
    "inspect": [
        ("type", ("model",), {
            "model": _p("model"), "provider": _inspect_provider,
            "model_version": _p("output.model"),
            "temperature": _p("config.temperature"), "top_p": _p("config.top_p"),
            "max_tokens": _p("config.max_tokens"), "stop_sequences": _p("config.stop_seqs"),
            "seed": _p("config.seed"), "reasoning_effort": _p("config.reasoning_effort"),
            "system_prompt": _system_of_messages("input"),
            "tool_defs": _p("tools"),
        }),
    ],
    "claude_code": [
        ("type", ("assistant",), {"model": _p("message.model")}),
        ("type", ("user",), {"safety_policy.permission": _p("permissionMode")}),
    ],
    "codex": [
        ("type", ("session_meta",), {
            "provider": _p("payload.model_provider"),
            "harness_version": _versioned("codex", "payload.cli_version"),
            "system_prompt": _p("payload.instructions", "payload.base_instructions.text"),
        }),
        ("type", ("turn_context",), {
            "model": _p("payload.model"),
            "reasoning_effort": _p("payload.effort",
                                   "payload.collaboration_mode.settings.reasoning_effort"),
            "safety_policy.approval": _p("payload.approval_policy"),
            "safety_policy.sandbox": _p("payload.sandbox_policy"),
        }),
    ],
    "langsmith": [
        ("kind", ("model_response",), {
            "model": _p("extra.metadata.ls_model_name", f"{_LS}.model", f"{_LS}.model_name",
                        "inputs.model"),
            "model_version": _p("outputs.model", "outputs.llm_output.model_name"),
            "provider": _p("extra.metadata.ls_provider"),
            "temperature": _p(f"{_LS}.temperature", "extra.metadata.ls_temperature"),
            "top_p": _p(f"{_LS}.top_p"),
            "max_tokens": _p(f"{_LS}.max_tokens", "extra.metadata.ls_max_tokens"),
            "stop_sequences": _p(f"{_LS}.stop", "extra.metadata.ls_stop"),
            "seed": _p(f"{_LS}.seed"),
            "reasoning_effort": _p(f"{_LS}.reasoning_effort"),
            "harness_version": _sdk_version("extra.runtime"),
        }),
    ],
    "langfuse": [
        ("kind", ("model_response",), {
            "model": _p("model", "providedModelName", "provided_model_name"),
            "temperature": _p("modelParameters.temperature", "model_parameters.temperature"),
            "top_p": _p("modelParameters.top_p", "model_parameters.top_p"),
            "max_tokens": _p("modelParameters.max_tokens", "modelParameters.maxTokens",
                             "model_parameters.max_tokens"),
            "seed": _p("modelParameters.seed", "model_parameters.seed"),
        }),
    ],
    "phoenix": [
        ("kind", ("model_response",), {
            # llm.model_name (the response's model); a failed call has none, its request's
            # model is in the invocation parameters
            "model": _either(_p(("attributes.llm.model_name",),
                                ("attributes", "llm.model_name"),
                                ("attributes", "llm", "model_name")),
                             _json_param("model", *_PX_PARAMS)),
            "provider": _p(("attributes.llm.provider",), ("attributes", "llm.provider"),
                           ("attributes", "llm", "provider"), ("attributes.llm.system",),
                           ("attributes", "llm.system"), ("attributes", "llm", "system")),
            "temperature": _json_param("temperature", *_PX_PARAMS),
            "top_p": _json_param("top_p", *_PX_PARAMS),
            "max_tokens": _json_param("max_tokens", *_PX_PARAMS),
            "seed": _json_param("seed", *_PX_PARAMS),
        }),
    ],
}

# Run-level fields from ``log.runs.attrs`` (lower priority than the events of the run).
_RUN_RULES: dict[str, dict[str, _Getter]] = {
    "isplay": {"harness_version": lambda a: _name_version(a.get("agent"), "agent"),
               "client_version": _p("client.version", "metadata.clientVersion")},
    "otel": {"client_version": _p(("resource", "service.version")),
             "harness_version": _p(("resource", "gen_ai.agent.version"))},
    "inspect": {"model": _p("model"), "package_versions": _p("packages"),
                "temperature": _p("generate_config.temperature"),
                "top_p": _p("generate_config.top_p"),
                "max_tokens": _p("generate_config.max_tokens"),
                "stop_sequences": _p("generate_config.stop_seqs"),
                "seed": _p("generate_config.seed"),
                "harness_version": lambda a: _prefixed(a, "packages", "inspect_ai")},
    "toh": {"harness_version": _p("harnessVersion", "clientVersion")},
    "pleach": {},
    "claude_code": {"harness_version": _versioned("claude-code", "version")},
    "codex": {"harness_version": _versioned("codex", "cli_version"),
              "provider": _p("model_provider")},
    "langsmith": {"harness_version": _sdk_version("runtime")},
    "langfuse": {"client_version": _p("release", "version")},
    "phoenix": {},
}


def _name_version(v: Any, path: str) -> tuple[Any, str] | None:
    if isinstance(v, Mapping) and v.get("version") is not None:
        name = v.get("name")
        return (f"{name}@{v['version']}" if name else str(v["version"])), f"{path}.version"
    return None


def _prefixed(doc: Any, path: str, package: str) -> tuple[Any, str] | None:
    pk = doc.get(path) if isinstance(doc, Mapping) else None
    if isinstance(pk, Mapping) and pk.get(package):
        return f"{package}@{pk[package]}", f"{path}.{package}"
    return None
