"""Content-hash cache keys: a provider-cache key derived from what a model call sends.

:func:`cache_key` hashes a canonical form of the messages and the call configuration, so two
calls that send the same content under the same settings get the same key, whatever the
spelling of the settings (``maxTokens`` / ``max_tokens``) or the key order of the JSON.
:func:`derive_keys` derives the key of every model request of a log that records its messages
(isplay ``model.call``, pleach ``model.requested``, Inspect ``model``, OTel chat spans with
``gen_ai.input.messages``); :func:`replaykit.cache_coverage` uses it (``derive=True``) for
rows that carry no key.

The canonical form (version 1; docs/fold.md, "Content-hash cache keys")::

    {"v": 1, "messages": [...], "config": {...}}

* ``messages``: each message keeps ``role``, ``content``, ``name``, ``tool_calls`` and
  ``tool_call_id`` (others -- ids, timestamps, provider metadata -- are dropped); a content
  that is a list of parts that are all text (``{"type": "text", "text": ...}``) becomes the
  joined text, so ``"hi"`` and ``[{"type": "text", "text": "hi"}]`` hash alike.
* ``config``: known settings under one name each -- ``model``, ``provider``, ``temperature``,
  ``top_p``, ``max_tokens``, ``stop`` (a string becomes a one-element list), ``seed``,
  ``reasoning_effort``, ``system`` (the system prompt), ``tools`` (the tool definitions);
  camelCase and common aliases are accepted (``topP``, ``maxTokens``, ``stopSequences``,
  ``stop_seqs``, ``reasoningEffort``, ``prompt`` for ``system``); other keys are kept as
  given; null values are dropped; integral floats (``1.0``) become integers.
* the key is ``"rk1:"`` + the first 32 hex characters of the sha256 of the canonical JSON
  (sorted keys, compact, UTF-8: :func:`replaykit._base.json.canonical_json`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .._base.json import JSONDecodeError, canonical_json, map_distinct_documents

__all__ = ["KEY_PREFIX", "cache_key", "derive_keys"]

#: Prefix of a derived key (the version of the canonical form).
KEY_PREFIX = "rk1:"

_ALIASES = {
    "topP": "top_p", "maxTokens": "max_tokens", "max_output_tokens": "max_tokens",
    "maxOutputTokens": "max_tokens", "stopSequences": "stop", "stop_sequences": "stop",
    "stop_seqs": "stop", "reasoningEffort": "reasoning_effort", "prompt": "system",
    "system_prompt": "system", "systemPrompt": "system",
}
_MESSAGE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")
_BAD_JSON: tuple[type[Exception], ...] = (*JSONDecodeError, ValueError)


def _num(v: Any) -> Any:
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, Mapping):
        return {k: _num(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_num(x) for x in v]
    return v


def _content(c: Any) -> Any:
    if isinstance(c, list) and c and all(
            isinstance(p, Mapping) and p.get("type") == "text" and isinstance(p.get("text"), str)
            and set(p) <= {"type", "text"} for p in c):
        return "".join(p["text"] for p in c)
    return c


def _canonical(messages: Sequence[Any], config: Mapping[str, Any]) -> dict[str, Any]:
    msgs = []
    for m in messages:
        if isinstance(m, Mapping):
            mm = {k: m[k] for k in _MESSAGE_KEYS if m.get(k) is not None}
            if "content" in mm:
                mm["content"] = _content(mm["content"])
            msgs.append(mm)
        else:
            msgs.append(m)
    cfg: dict[str, Any] = {}
    for k, v in config.items():
        if v is None:
            continue
        name = _ALIASES.get(k, k)
        if name == "stop" and isinstance(v, str):
            v = [v]
        cfg.setdefault(name, v)
    return {"v": 1, "messages": _num(msgs), "config": _num(cfg)}


def cache_key(messages: Sequence[Any], config: Mapping[str, Any] | None = None) -> str:
    """The content-hash cache key of a model call (canonical form: module docstring).

    ``messages`` is the list the call sends (role/content mappings); ``config`` its settings
    (model, provider, sampling parameters, system prompt, tool definitions).

    >>> a = cache_key([{"role": "user", "content": "hi"}], {"model": "m", "maxTokens": 5})
    >>> b = cache_key([{"role": "user", "content": [{"type": "text", "text": "hi"}],
    ...                 "id": "msg-9"}], {"max_tokens": 5.0, "model": "m", "seed": None})
    >>> a == b, a[:4]
    (True, 'rk1:')

    Raises:
        TypeError: ``messages`` is not a list (or tuple), or ``config`` not a mapping.
    """
    if not isinstance(messages, list | tuple):
        raise TypeError(f"messages must be a list of messages, got {type(messages).__name__}")
    if config is not None and not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping, got {type(config).__name__}")
    text = canonical_json(_canonical(messages, config or {}))
    return KEY_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


# Where a model request keeps its messages, per format (the settings come from the same
# getters as the reproducibility stamps, before they are turned into identities).
_MESSAGES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    # format: (match column, values, path of the message list)
    "isplay": ("type", ("model.call",), ("messages",)),
    "pleach": ("type", ("model.requested",), ("messages",)),
    "inspect": ("type", ("model",), ("input",)),
    "otel": ("kind", ("model_response",), ("attributes", "gen_ai.input.messages")),
}
_CONFIG_NAMES = {"system_prompt": "system", "tool_defs": "tools"}
_CONFIG_FIELDS = ("model", "provider", "temperature", "top_p", "max_tokens", "stop_sequences",
                  "seed", "reasoning_effort", "system_prompt", "tool_defs")


def _request_key(doc: Any, fmt: str, path: tuple[str, ...]) -> str | None:
    from .rules import _RULES, _at, _maybe_json

    msgs = _maybe_json(_at(doc, path))
    if not isinstance(msgs, list):
        return None
    rule = _RULES[fmt][0][2]
    config: dict[str, Any] = {}
    for f in _CONFIG_FIELDS:
        get = rule.get(f)
        got = get(doc) if get is not None else None
        if got is not None:
            config[_CONFIG_NAMES.get(f, f)] = _maybe_json(got[0])
    if fmt == "inspect" or fmt == "pleach":
        # the system prompt is already one of the messages
        config.pop("system", None)
    return cache_key(msgs, config)


def derive_keys(log: Any, *, unkeyed_only: bool = False) -> pd.DataFrame:
    """The content-hash key of every model request of ``log`` that records its messages.

    Columns: tenant_id, run_id, seq, type, kind, cache_key (derived; see :func:`cache_key`).
    Requests whose payload has no message list are left out (and, with
    ``unkeyed_only=True``, requests that already carry a ``cache_key``). The requests are selected
    column-wise; each distinct payload is decoded and hashed once.

    >>> keys = derive_keys(rk.read_isplay("data/isplay", owner="t"))  # doctest: +SKIP
    """
    t = log.table
    cols = ["tenant_id", "run_id", "seq", "type", "kind", "cache_key"]
    frames = []
    if t.num_rows:
        fmt = pc.replace_substring_regex(pc.cast(t.column("source"), pa.string()), r":.*$", "")
        for name, (match, values, path) in _MESSAGES.items():
            col = pc.cast(t.column(match), pa.string())
            m = pc.and_(pc.equal(fmt, name), pc.is_in(col, value_set=pa.array(values)))
            if unkeyed_only:
                m = pc.and_(m, pc.is_null(t.column("cache_key")))
            sub = t.filter(pc.fill_null(m, False))
            if not sub.num_rows:
                continue
            keys, idx = map_distinct_documents(
                sub.column("payload"), lambda doc, n=name, q=path: _request_key(doc, n, q))
            key_col = pa.array(keys, pa.string()).take(idx)
            part = pa.table({c: pc.cast(sub.column(c), pa.string()) if c not in ("seq",)
                             else sub.column(c) for c in cols[:-1]}).append_column(
                                 "cache_key", key_col)
            frames.append(part.filter(pc.is_valid(key_col)))
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype="Int64" if c == "seq" else "string")
                             for c in cols})
    out = pa.concat_tables(frames).to_pandas()
    out = out.astype({c: "string" for c in cols if c != "seq"} | {"seq": "Int64"})
    return out.sort_values(["tenant_id", "run_id", "seq"], ignore_index=True)
