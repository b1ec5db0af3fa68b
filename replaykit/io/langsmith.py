"""Loader for LangSmith run exports (runs with ``trace_id``, ``dotted_order``, ``run_type``).

LangSmith stores a trace as a tree of *runs* (``run_type`` ``llm``, ``chain``, ``tool``,
``retriever``, ``prompt``, ``parser``, ``embedding``), each with ``id``, ``trace_id``,
``parent_run_id``, ``dotted_order`` (``<start time>Z<id>`` per ancestor, joined by dots, so
sorting it orders a trace depth-first by start time), ``start_time`` / ``end_time``,
``inputs`` / ``outputs``, ``error``, ``extra`` (``metadata``, ``invocation_params``,
``runtime``) and token counts. Accepted files:

* JSON: an array of runs, ``{"runs": [...]}`` (``list_runs`` dumps, webhook payloads), one run
  object, or the SDK's ``{"post": [...], "patch": [...]}`` batches (a patch updates the posted
  run with the same ``id`` or ``dotted_order``);
* JSON Lines: one run per line; CSV / Parquet: one run per row (nested values as JSON text).

One replaykit run per LangSmith trace (``run_id`` = ``trace_id``). Rows follow ``dotted_order``:
an ``llm`` run is one model call (``model_response``), a ``tool`` run a ``tool_call`` row and a
``tool_result`` row, the root run a ``session`` row (and a ``turn_end`` row when it ended),
other run types ``other`` rows. Field by field: ``docs/formats/langsmith.md``. Exports record
no replaykit tenant (a LangSmith ``tenant_id`` is the workspace; it is kept in the payload):
the caller names the owner.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._base.json import canonical_json
from ..eventlog.log import EventLog
from ._common import (
    ErrorPolicy,
    Paths,
    Quarantine,
    Tenants,
    expand_paths,
    keep_tenants,
    owner_and_filter,
)
from ._messages import decode_arguments, read_reply, text_or_json
from ._platform import Item, canonical, first_of, read_traces, sniff_records
from ._records import (
    Row,
    epoch_to_iso,
    guard,
    payload_of,
    rows_to_log,
    tokens,
    tool_rows,
)

__all__ = ["FORMAT", "RUN_TYPES", "read_langsmith", "sniff"]

FORMAT = "langsmith"
_PATTERNS = ("*.json", "*.jsonl", "*.ndjson", "*.csv", "*.parquet")

#: LangSmith ``run_type`` -> canonical ``kind`` (a ``tool`` run also gets a ``tool_result``).
RUN_TYPES: dict[str, str] = {"llm": "model_response", "tool": "tool_call", "chain": "other",
                             "retriever": "other", "prompt": "other", "parser": "other",
                             "embedding": "other"}

_FINISH = {"stop": "stop", "end_turn": "stop", "tool_calls": "tool-calls",
           "tool_use": "tool-calls", "length": "max-tokens", "max_tokens": "max-tokens",
           "content_filter": "content-filter"}


def sniff(path: Path) -> str | None:
    """None when ``path`` looks like a LangSmith run export, otherwise why it does not
    (a record with ``run_type`` and ``dotted_order`` or ``trace_id``)."""
    return sniff_records(Path(path), (("run_type", "dotted_order"), ("run_type", "trace_id")),
                         FORMAT)


def _unwrap(doc: Any) -> list[Any] | None:
    if isinstance(doc, list):
        return doc
    if not isinstance(doc, dict):
        return None
    if isinstance(doc.get("runs"), list):
        return doc["runs"]
    if isinstance(doc.get("post"), list):
        return _merge_batches(doc.get("post") or [], doc.get("patch") or [])
    if "run_type" in doc:
        return [doc]
    return None


def _merge_batches(posts: list[Any], patches: list[Any]) -> list[Any]:
    """The SDK's batch ingest shape: each patch completes the post with its id (or, for
    patches without an id, its dotted_order)."""
    out = [dict(p) if isinstance(p, dict) else p for p in posts]
    by_key: dict[Any, dict[str, Any]] = {}
    for p in out:
        if isinstance(p, dict):
            for key in (p.get("id"), p.get("dotted_order")):
                if isinstance(key, str):
                    by_key.setdefault(key, p)
    for patch in patches if isinstance(patches, list) else []:
        if not isinstance(patch, dict):
            out.append(patch)
            continue
        target = by_key.get(patch.get("id")) or by_key.get(patch.get("dotted_order"))
        if target is None:
            out.append(patch)
        else:
            target.update(patch)
    return out


def _output_text(outputs: Any) -> str | None:
    """The text an llm / tool run produced, in any message shape
    (:func:`replaykit.io._messages.read_reply`: chat completions, LangChain generations and
    messages, ...); a value of no known shape as text (strings as they are, else JSON)."""
    reply = read_reply(outputs)
    if reply.known:
        return reply.text
    if isinstance(outputs, dict):
        for key in ("output", "answer"):
            if isinstance(outputs.get(key), str):
                return str(outputs[key])
    return text_or_json(outputs)


def _figures(run: dict[str, Any]) -> dict[str, Any]:
    """Cache-read, cache-write and reasoning tokens from the outputs' usage: LangChain's
    ``usage_metadata`` (``input_token_details.cache_read`` / ``.cache_creation``,
    ``output_token_details.reasoning``) or OpenAI's ``usage``
    (``prompt_tokens_details.cached_tokens``, ``completion_tokens_details.reasoning_tokens``);
    null where not recorded."""
    figs: dict[str, Any] = {"cache_read_tokens": None, "cache_write_tokens": None,
                            "reasoning_tokens": None}
    out = run.get("outputs")
    if not isinstance(out, dict):
        return figs

    def sub(d: Any, *path: str) -> Any:
        for k in path:
            d = d.get(k) if isinstance(d, dict) else None
        return d if isinstance(d, int) and not isinstance(d, bool) else None

    um, u = out.get("usage_metadata"), out.get("usage")
    figs["cache_read_tokens"] = sub(um, "input_token_details", "cache_read") if sub(
        um, "input_token_details", "cache_read") is not None else sub(
        u, "prompt_tokens_details", "cached_tokens")
    figs["cache_write_tokens"] = sub(um, "input_token_details", "cache_creation")
    figs["reasoning_tokens"] = sub(um, "output_token_details", "reasoning") if sub(
        um, "output_token_details", "reasoning") is not None else sub(
        u, "completion_tokens_details", "reasoning_tokens")
    return figs


def _usage(run: dict[str, Any]) -> tuple[Any, Any, str]:
    """(input tokens, output tokens, field) from the run's counts or its outputs' usage."""
    if run.get("prompt_tokens") is not None or run.get("completion_tokens") is not None:
        return run.get("prompt_tokens"), run.get("completion_tokens"), "prompt_tokens"
    out = run.get("outputs")
    if isinstance(out, dict):
        for key, i, o in (("usage_metadata", "input_tokens", "output_tokens"),
                          ("usage", "prompt_tokens", "completion_tokens"),
                          ("usage", "input_tokens", "output_tokens")):
            u = out.get(key)
            if isinstance(u, dict) and (u.get(i) is not None or u.get(o) is not None):
                return u.get(i), u.get(o), f"outputs.{key}"
        lo = out.get("llm_output")
        if isinstance(lo, dict) and isinstance(lo.get("token_usage"), dict):
            u = lo["token_usage"]
            return u.get("prompt_tokens"), u.get("completion_tokens"), \
                "outputs.llm_output.token_usage"
    return None, None, ""


def _finish(run: dict[str, Any]) -> str | None:
    if run.get("error"):
        return "error"
    out = run.get("outputs")
    if isinstance(out, dict):
        ch = out.get("choices")
        if isinstance(ch, list) and ch and isinstance(ch[0], dict):
            fr = ch[0].get("finish_reason")
            if isinstance(fr, str):
                return _FINISH.get(fr, fr)
        gens = out.get("generations")
        if isinstance(gens, list) and gens:
            g = gens[0][0] if isinstance(gens[0], list) and gens[0] else gens[0]
            info = g.get("generation_info") if isinstance(g, dict) else None
            if isinstance(info, dict) and isinstance(info.get("finish_reason"), str):
                return _FINISH.get(info["finish_reason"], info["finish_reason"])
    return None


def _ts(v: Any) -> Any:
    v = epoch_to_iso(v)
    return v if isinstance(v, str) else None


def _trace_rows(trace_id: str, runs: list[Item], quarantine: Quarantine) -> list[Row]:
    """The rows of one trace from its runs (read from one file or several)."""
    runs = sorted(runs, key=lambda r: (str(r[3].get("dotted_order") or ""),
                                       str(_ts(r[3].get("start_time")) or ""), r[0]))
    src = f"{FORMAT}:{runs[0][4]}" if runs else FORMAT
    rows: list[Row] = []
    step = 0
    root_end: tuple[Any, Any, bool] | None = None
    for _, line, raw, run, path in runs:
        src = f"{FORMAT}:{path}"
        with guard(quarantine, FORMAT, path, line, raw, run):  # per record
            rtype = run.get("run_type")
            rtype = rtype if isinstance(rtype, str) else "chain"
            rid = run.get("id") if isinstance(run.get("id"), str) else None
            name = run.get("name") if isinstance(run.get("name"), str) else None
            err = run.get("error")
            is_root = not run.get("parent_run_id") and (rid == trace_id or "." not in str(
                run.get("dotted_order") or ""))
            base = {"run_id": trace_id, "ts": _ts(run.get("start_time")), "event_id": rid,
                    "source": src, "source_line": line, "is_error": bool(err),
                    "turn": 1}
            doc = run
            if rtype == "llm":
                figs = _figures(run)
                if any(v is not None for v in figs.values()):
                    doc = {**run, "replaykitUsage": figs}  # what calls_df reads
            payload = payload_of(doc, FORMAT, path, line)
            if rtype == "llm":
                step += 1
                i, o, fld = _usage(run)
                rows.append({**base, "type": "llm", "kind": "model_response", "ref_id": rid,
                             "step": step, "finish": _finish(run) or "unknown",
                             "input_tokens": tokens(i, FORMAT, path, line, fld),
                             "output_tokens": tokens(o, FORMAT, path, line, fld),
                             "text": _output_text(run.get("outputs")) if not err else
                             str(err)[:2000], "payload": payload})
            elif rtype == "tool":
                result = {"id": rid, "part": "result", "name": name,
                          "end_time": run.get("end_time"), "outputs": run.get("outputs"),
                          "error": err}
                rows.extend(tool_rows(
                    {**base, "type": "tool"}, rid, name, decode_arguments(run.get("inputs")),
                    step=step or None, payload=payload, result=result,
                    ended=_ts(run.get("end_time")),
                    text=str(err) if err else _output_text(run.get("outputs")), fmt=FORMAT,
                    path=path, line=line))
            else:
                rows.append({**base, "type": rtype, "kind": "session" if is_root else "other",
                             "step": None if is_root else (step or None),
                             "text": name, "payload": payload})
                if is_root and run.get("end_time") is not None:
                    root_end = (run.get("end_time"), err, bool(err))
    if root_end is not None:
        end, err, failed = root_end
        rows.append({"run_id": trace_id, "ts": _ts(end), "type": "trace_end",
                     "kind": "turn_end", "turn": 1, "is_error": failed, "source": src,
                     "text": str(err) if err else None,
                     "payload": canonical_json({"part": "trace_end", "end_time": end,
                                                "error": err,
                                                "reason": "error" if failed else "completed"})})
    for k, r in enumerate(rows):
        r["seq"] = k
    return rows


def read_langsmith(path: Paths, *, owner: str | None = None, tenant_id: Tenants = None,
                   errors: ErrorPolicy = "raise", progress: bool | None = None) -> EventLog:
    """Load LangSmith run exports: one replaykit run per LangSmith trace.

    Args:
        owner: owner of the traces (the export records no replaykit tenant); required.
        tenant_id: keep only these tenants' rows (one id or a list; None: all), as
            in every reader: the rows are all ``owner``'s, so all of them or none.
        errors: ``"raise"`` (default) or ``"quarantine"``.
        progress: progress bar over files (None: when interactive).

    Raises:
        LoadError: ``bad_tenant``; under ``"raise"``: ``bad_json``, ``not_object``,
            ``bad_document``, ``bad_csv`` / ``bad_parquet``, ``missing_trace`` (a run with
            neither ``trace_id`` nor ``dotted_order``), ``bad_tokens``, ``too_deep``,
            ``unreadable``, ``compressed``.
        FileNotFoundError: nothing matches ``path``.

    Example:
        >>> log = rk.read_langsmith("tests/data/langsmith", owner="me")  # doctest: +SKIP
    """
    tenant, wanted = owner_and_filter(owner, tenant_id, fmt=FORMAT)
    quarantine = Quarantine(errors, tenant_id=tenant)
    files = expand_paths(path, patterns=_PATTERNS)
    # runs of each trace across every file: a trace split over files is one run, a run
    # exported twice is read once, a post and its patch in two files are one run (dedupe)
    rows, runs = read_traces(files, FORMAT, quarantine, progress=progress, unwrap=_unwrap,
                             trace_of=_trace_of, note=_note, key_of=_run_key, what="run",
                             merge=_merge_parts, number=False,
                             missing=("is a run with neither 'trace_id' nor 'dotted_order'",
                                      "trace_id"), trace_rows=_trace_rows)
    return keep_tenants(rows_to_log(rows, runs, tenant, quarantine), tenant, wanted)


def _trace_of(rec: dict[str, Any]) -> Any:
    """A run's trace: its ``trace_id``, else the root id that starts its ``dotted_order``."""
    tid = first_of(rec, "trace_id")
    if not isinstance(tid, str):
        dotted = rec.get("dotted_order")
        tid = dotted.split(".")[0][-36:] if isinstance(dotted, str) and len(dotted) >= 36 \
            else None
    return tid


def _note(rec: dict[str, Any], attrs: dict[str, Any]) -> None:
    """A root run's fields (and its ``extra.runtime``), in its trace's run attrs."""
    if not rec.get("parent_run_id"):
        for key in ("name", "session_id", "session_name", "status", "tags"):
            if rec.get(key) is not None:
                attrs.setdefault(key, rec[key])
        extra = rec.get("extra")
        if isinstance(extra, dict) and isinstance(extra.get("runtime"), dict):
            attrs.setdefault("runtime", extra["runtime"])


def _run_key(run: dict[str, Any]) -> Any:
    """A run's ``id`` (else its ``dotted_order``), which makes two records one run."""
    for key in ("id", "dotted_order"):
        if isinstance(run.get(key), str) and run[key]:
            return run[key]
    return None


def _is_patch(run: dict[str, Any]) -> bool:
    """An SDK patch: the end of a posted run (outputs, end time, updated extra), without the
    post's ``run_type`` / ``inputs`` / ``start_time``."""
    return not any(k in run for k in ("run_type", "inputs", "start_time"))


def _merge_parts(first: dict[str, Any], later: dict[str, Any]) -> dict[str, Any] | None:
    """Two records of one run: a post and its patch in two files are one run (the patch's
    values win, as within one batch file); two whole records are one run when no field has
    two different values, else None (a conflict)."""
    if _is_patch(later) != _is_patch(first):
        post, patch = (first, later) if _is_patch(later) else (later, first)
        return {**post, **{k: v for k, v in patch.items() if v is not None}}
    out = dict(first)
    for k, v in later.items():
        if v is None:
            continue
        if out.get(k) is not None and canonical(out[k]) != canonical(v):
            return None
        out[k] = v
    return out
