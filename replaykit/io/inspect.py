"""Loader for Inspect AI eval logs (``.eval`` and ``.json``), read through Inspect's own API.

Inspect (the ``inspect_ai`` package, optional extra ``inspect``) records one eval per log file;
each *sample* (one dataset item in one epoch) becomes one replaykit run:

* ``run_id = f"{eval_id}:{sample_id}:{epoch}"`` (``eval_id`` from the log header);
* every transcript event of the sample becomes one row, in the order Inspect recorded them,
  with the event's own JSON (``model_dump(mode="json")``) as ``payload`` -- so ``state`` and
  ``store`` events keep their JSON-patch ``changes``;
* a ``tool`` event (one event in Inspect: call *and* result) becomes two rows: a ``tool_call``
  at the event's place and a ``tool_result`` after the tool's own span has closed (so store
  changes the tool made land between the two);
* scores, the final store, the sample error, limits and the sample's ids go to the runs table
  (``log.runs.attrs``).

:func:`replaykit.fold.inspect.inspect_state` (``rk.inspect_state``) is a projection that
applies the recorded JSON patches, so ``rk.fold(log, projections=inspect_state())`` gives the
sample's state and store at every step (it lives with the folds: a loader only parses).
Field-by-field mapping: ``docs/formats/inspect.md``.
"""

from __future__ import annotations

import hashlib
import os
import re
import warnings
import zipfile
from pathlib import Path
from typing import Any

import pyarrow as pa

from .._base.json import JSONTooDeep, args_hash, canonical_json
from ..errors import LoadError, MissingExtraError
from ..eventlog.log import RUNS_SCHEMA, EventLog
from ..schema import empty_events, events_table
from ._common import (
    ErrorPolicy,
    Paths,
    Progress,
    Quarantine,
    Tenants,
    expand_paths,
    is_int64,
    keep_tenants,
    owner_and_filter,
)

__all__ = ["FORMAT", "TYPE_KINDS", "DuplicateLogWarning", "read_inspect", "sniff"]

FORMAT = "inspect"
_PATTERNS = ("*.eval", "*.json")
_HEAD = 4096
_JSON_HEAD_RE = re.compile(rb'"version"\s*:\s*\d+\s*,\s*"status"\s*:\s*"[a-z_]+"')

#: Inspect event type (``event`` field) -> canonical ``kind``; any other type is ``"other"``.
TYPE_KINDS: dict[str, str] = {
    "sample_init": "session",
    "model": "model_response",
    "tool": "tool_call",  # the tool_result row split from it is kind tool_result
    "approval": "approval_decision",
    "input": "user_message",
    "error": "error",
    "state": "other",
    "store": "other",
    "score": "other",
    "span_begin": "other",
    "span_end": "other",
}

#: Inspect ``stop_reason`` -> replaykit ``finish``.
FINISH: dict[str, str] = {
    "stop": "stop",
    "tool_calls": "tool-calls",
    "max_tokens": "max-tokens",
    "model_length": "max-tokens",
    "content_filter": "content-filter",
    "unknown": "unknown",
}


class DuplicateLogWarning(UserWarning):
    """The same eval log was found more than once (a ``.eval`` and its ``.json`` export, or a
    copied file): its samples are loaded once, from the first file."""


def _inspect_log_api() -> Any:
    try:
        from inspect_ai import log as inspect_log
    except ImportError:
        raise MissingExtraError("read_inspect", "inspect", "inspect_ai") from None
    return inspect_log


# ------------------------------------------------------------------------------------ sniffing


def sniff(path: Path) -> str | None:
    """None when ``path`` looks like an Inspect eval log, otherwise why it does not.

    ``.eval``: a zip archive holding ``header.json`` or ``_journal/start.json``. ``.json``: the
    document opens with Inspect's ``"version": <n>, "status": "..."`` header. Does not need
    ``inspect_ai``.

    >>> sniff(Path("logs/2025-01-01T00-00-00_task_abc.eval"))  # doctest: +SKIP
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".eval":
        try:
            with zipfile.ZipFile(p) as zf:
                names = set(zf.namelist())
        except (OSError, zipfile.BadZipFile):
            return "is a .eval file but not a readable zip archive"
        if "header.json" in names or "_journal/start.json" in names:
            return None
        return "is a zip archive without Inspect's header.json / _journal/start.json"
    if suffix != ".json":
        return f"extension {p.suffix or '(none)'!r} is not .eval/.json"
    try:
        with open(p, "rb") as fh:
            head = fh.read(_HEAD)
    except OSError:
        return "cannot be read"
    if not head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        return "does not start with a JSON object"
    if _JSON_HEAD_RE.search(head) is None:
        return 'has no Inspect log header ("version": <n>, "status": "...") at the start'
    return None


# ------------------------------------------------------------------------------------ loading


def _dump(obj: Any) -> Any:
    return obj.model_dump(mode="json", exclude_none=True)


def _text_of(value: Any) -> str | None:
    """A result / message content as text: strings as is, content parts' text joined."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [p.get("text") or p.get("reasoning") or "" for p in value if isinstance(p, dict)]
        return "".join(parts)
    return canonical_json(value)


def _input_tokens(usage: dict[str, Any]) -> Any:
    """Every prompt token the call read. Inspect's ``input_tokens`` is the uncached
    remainder (its providers subtract ``input_tokens_cache_read`` / ``_write``, and
    ``total_tokens`` is their sum with the output), so the cache figures are added; logs of
    older Inspect versions whose ``total_tokens`` is ``input_tokens + output_tokens`` already
    counted the cached tokens in ``input_tokens`` and are taken as written. Null when
    ``input_tokens`` is not recorded."""
    inp: Any = usage.get("input_tokens")
    if not is_int64(inp):
        return inp  # None, or a bad value the row check reports
    cache: list[Any] = [usage.get(k) for k in ("input_tokens_cache_read",
                                                "input_tokens_cache_write")]
    extra = sum(int(c) for c in cache if is_int64(c))
    out: Any = usage.get("output_tokens")
    total: Any = usage.get("total_tokens")
    if extra == 0 or (is_int64(out) and is_int64(total) and total == inp + out):
        return inp
    return int(inp) + extra


def _answer_text(content: Any) -> str:
    """The text parts of a message's content (not its reasoning, tool calls or images)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text") or "" for p in content
                       if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _completion(out: dict[str, Any]) -> str | None:
    """The model's answer text: the text parts of the first choice's message (attachments
    resolved; ``output.completion`` can still hold an ``attachment://`` reference), else
    ``output.completion``; null, not ``""``, when it gave none."""
    choices = out.get("choices")
    msg = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(
        choices[0], dict) else None
    text = _answer_text(msg.get("content")) if isinstance(msg, dict) else ""
    completion = out.get("completion")
    if not text and isinstance(completion, str):
        text = completion
    return text or None


def _reasoning_of(part: dict[str, Any]) -> str | None:
    """A reasoning content part's readable text (``reasoning``, else its ``summary``); null
    when it is redacted (encrypted)."""
    if part.get("redacted"):
        summary = part.get("summary")
        return summary if isinstance(summary, str) and summary else None
    text = part.get("reasoning")
    return text if isinstance(text, str) else None


def _tool_span_end(events: list[dict[str, Any]], i: int) -> int:
    """Index after which the result of the tool event ``events[i]`` goes.

    Inspect opens a span of type ``tool`` just before the tool event and closes it when the
    tool returns; the result row goes after that span's end. Without such a span: right after
    the call.
    """
    ev = events[i]
    j = i - 1
    span = None
    while j >= 0 and events[j].get("event") == "span_begin":
        if events[j].get("type") == "tool" and events[j].get("name") == ev.get("function"):
            span = events[j].get("id")
            break
        j -= 1
    if span is None:
        return i
    for k in range(i + 1, len(events)):
        e = events[k]
        if e.get("event") == "span_end" and e.get("id") == span:
            return k
    return i


def _bad_sample(src: str, run_id: str, reason: str, fld: str, detail: str) -> LoadError:
    return LoadError(source=src.removeprefix(f"{FORMAT}:"), line=None, field=fld, reason=reason,
                     detail=f"(sample run {run_id}) {detail}",
                     fix='Fix the sample in the log, or pass errors="quarantine" to skip it.')


def _message_rows(messages: list[dict[str, Any]], run_id: str, src: str
                  ) -> list[dict[str, Any]]:
    """Rows of a sample recorded without transcript events: one per message (and one
    ``tool_call`` per tool call an assistant message makes), in message order; no ``ts``."""
    rows: list[dict[str, Any]] = []

    def add(msg: dict[str, Any], kind: str, payload: dict[str, Any], **cols: Any) -> None:
        rows.append({"run_id": run_id, "seq": len(rows), "type": "message", "kind": kind,
                     "ts": None, "event_id": msg.get("id"), "payload": canonical_json(payload),
                     "source": src, "is_error": False, **cols})

    for k, msg in enumerate(messages):
        role = msg.get("role")
        payload = {"event": "message", **msg}
        text = _text_of(msg.get("content"))
        if role == "user":
            add(msg, "user_message", payload, text=text)
        elif role == "assistant":  # one model call (the log records no finish reason)
            add(msg, "model_response", payload, ref_id=msg.get("id") or f"message{k}",
                finish="unknown", text=_answer_text(msg.get("content")) or None)
            parts = msg.get("content")
            for part in parts if isinstance(parts, list) else []:
                if isinstance(part, dict) and part.get("type") == "reasoning":
                    add(msg, "model_chunk", {"event": "message", "part": "reasoning",
                                             "id": msg.get("id"), "content": part},
                        event_id=None, ref_id=msg.get("id") or f"message{k}",
                        chunk_type="reasoning", text=_reasoning_of(part))
            for call in msg.get("tool_calls") or []:
                if not isinstance(call, dict):
                    continue
                args = call.get("arguments") or {}
                add(msg, "tool_call", {"event": "message", "part": "tool_call", **call},
                    event_id=None, ref_id=call.get("id"), tool_name=call.get("function"),
                    args_hash=args_hash(args), text=canonical_json(args))
        elif role == "tool":
            err = msg.get("error")
            add(msg, "tool_result", payload, ref_id=msg.get("tool_call_id"),
                tool_name=msg.get("function"), is_error=bool(err),
                text=(err or {}).get("message") if err else text)
        else:
            add(msg, "other", payload, text=text)
    return rows


def _sample_rows(sample: Any, run_id: str, src: str) -> tuple[list[dict[str, Any]], dict]:
    """Canonical rows of one sample (in order) and its runs-table attrs.

    A sample without transcript events (written without them, or by an older Inspect) is
    its messages, one row each (see :func:`_message_rows`)."""
    events = [_dump(e) for e in sample.events]
    after: dict[int, list[int]] = {}
    for i, ev in enumerate(events):
        if ev.get("event") == "tool":
            after.setdefault(_tool_span_end(events, i), []).append(i)
    rows: list[dict[str, Any]] = []
    model_k = 0

    def add(ev: dict[str, Any], kind: str, payload: dict[str, Any], **cols: Any) -> None:
        for name in ("input_tokens", "output_tokens"):
            if cols.get(name) is not None and not is_int64(cols[name]):
                raise _bad_sample(src, run_id, "bad_tokens", f"events[{i}].output.usage",
                                  f"{name} must be an integer that fits in 64 bits, got "
                                  f"{cols[name]!r}")
        try:
            text = canonical_json(payload)
        except JSONTooDeep as exc:
            raise _bad_sample(src, run_id, "too_deep", f"events[{i}]", str(exc)) from None
        row = {"run_id": run_id, "seq": len(rows), "type": ev.get("event") or "unknown",
               "kind": kind, "ts": ev.get("timestamp"), "event_id": ev.get("uuid"),
               "payload": text, "source": src, "is_error": False}
        row.update(cols)
        rows.append(row)

    for i, ev in enumerate(events):
        typ = ev.get("event")
        kind = TYPE_KINDS.get(typ, "other")
        if typ == "sample_init":
            add(ev, kind, ev)
            state = ev.get("state")
            msgs = state.get("messages") if isinstance(state, dict) else None
            for msg in msgs if isinstance(msgs, list) else []:
                if isinstance(msg, dict) and msg.get("role") in ("user", "system"):
                    add({"event": "message", "timestamp": ev.get("timestamp")},
                        "user_message" if msg.get("role") == "user" else "other",
                        {"event": "message", **msg}, event_id=msg.get("id"),
                        text=_text_of(msg.get("content")))
        elif typ == "model":
            model_k += 1
            out = ev.get("output") or {}
            choices = out.get("choices") or []
            stop = choices[0].get("stop_reason") if choices else None
            err = ev.get("error")
            finish = "error" if err else FINISH.get(stop or "", stop)
            usage = out.get("usage") or {}
            ref = ev.get("uuid") or f"m{model_k}"
            add(ev, kind, ev, ref_id=ref, finish=finish,
                is_error=bool(err), input_tokens=_input_tokens(usage),
                output_tokens=usage.get("output_tokens"), text=_completion(out))
            msg = choices[0].get("message") if choices and isinstance(choices[0], dict) \
                else None
            parts = msg.get("content") if isinstance(msg, dict) else None
            for k, part in enumerate(parts if isinstance(parts, list) else []):
                if isinstance(part, dict) and part.get("type") == "reasoning":
                    add(ev, "model_chunk", {"event": "model", "part": "reasoning",
                                            "uuid": ev.get("uuid"), "content_index": k,
                                            "content": part},
                        event_id=None, ref_id=ref, chunk_type="reasoning",
                        text=_reasoning_of(part))
        elif typ == "tool":
            args = ev.get("arguments") or {}
            add(ev, "tool_call", ev, ref_id=ev.get("id"), tool_name=ev.get("function"),
                args_hash=args_hash(args), text=canonical_json(args))
        elif typ == "approval":
            add(ev, kind, ev, ref_id=(ev.get("call") or {}).get("id"))
        elif typ in ("span_begin", "span_end", "state", "store", "score", "input", "error"):
            add(ev, kind, ev, is_error=typ == "error",
                text=_text_of((ev.get("error") or {}).get("message")) if typ == "error" else None)
        else:
            add(ev, kind, ev, is_error=bool(ev.get("error")))
        for t in after.get(i, []):
            tev = events[t]
            err = tev.get("error")
            result = {"event": "tool", "part": "result", "id": tev.get("id"),
                      "function": tev.get("function"), "result": tev.get("result"),
                      "error": err, "completed": tev.get("completed"),
                      "message_id": tev.get("message_id")}
            add({"event": "tool", "timestamp": tev.get("completed") or tev.get("timestamp"),
                 "uuid": None}, "tool_result", {k: v for k, v in result.items() if v is not None},
                ref_id=tev.get("id"), tool_name=tev.get("function"), is_error=bool(err),
                text=_text_of(tev.get("result")) if not err else (err or {}).get("message"))
    if not events:
        rows = _message_rows([_dump(m) for m in sample.messages or []], run_id, src)
    scores = {name: _dump(s) for name, s in (sample.scores or {}).items()}
    attrs = {
        "sample_id": sample.id,
        "epoch": sample.epoch,
        "sample_uuid": sample.uuid,
        "scores": scores,
        "store": sample.store,
        "error": _dump(sample.error) if sample.error else None,
        "limit": _dump(sample.limit) if getattr(sample, "limit", None) else None,
        "target": sample.target,
        "metadata": sample.metadata,
        "messages": len(sample.messages or []),
        "total_time": sample.total_time,
        "model_usage": {k: _dump(v) for k, v in (sample.model_usage or {}).items()},
    }
    return rows, attrs


def read_inspect(path: Paths, *, owner: str | None = None, tenant_id: Tenants = None,
                 errors: ErrorPolicy = "raise", progress: bool | None = None) -> EventLog:
    """Load Inspect AI eval logs (``.eval`` or ``.json``): one run per sample and epoch.

    Logs are read with ``inspect_ai.log.read_eval_log`` (attachments resolved). Run ids are
    ``"{eval_id}:{sample_id}:{epoch}"``; run attributes (``log.runs.attrs``) hold the task,
    model, eval status, the sample's scores, final store, error, target and uuid. ``path``
    may be a file, a folder (``*.eval``, ``*.json``), a glob or a list.

    The same log found twice is loaded once, with a :class:`DuplicateLogWarning`: files with
    the same bytes (copies) are recognised before they are read (the reader fills fields a
    file lacks, such as an eval id or event timestamps, anew on every read, so two reads of
    one file can differ), and a ``.eval`` and its ``.json`` export by their content.

    Args:
        owner: owner of the runs (Inspect logs carry no tenant); required.
        tenant_id: keep only these tenants' rows (one id or a list; None: all), as
            in every reader: the rows are all ``owner``'s, so all of them or none.
        errors: ``"raise"`` (default) or ``"quarantine"``: a log Inspect cannot read becomes
            one quarantine row (reason ``bad_log``).
        progress: show a progress bar over files (None: when interactive).

    Raises:
        LoadError: ``reason="bad_tenant"``: ``owner`` is missing (also when only
            ``tenant_id=`` is given) or an id breaks the tenant-id rule
            (:mod:`replaykit.tenancy`).
        MissingExtraError: ``inspect_ai`` is not installed (``pip install "replaykit[inspect]"``).
        LoadError: a file Inspect cannot read (reason ``bad_log``) or that has no samples
            (reason ``no_samples``, e.g. a header-only log).
        FileNotFoundError: nothing matches ``path``.

    Example:
        >>> log = rk.read_inspect("logs/", owner="acme")  # doctest: +SKIP
        >>> log.tools_df().tool_name.value_counts().to_dict()  # doctest: +SKIP
        {'add': 4}
    """
    tenant, wanted = owner_and_filter(owner, tenant_id, fmt=FORMAT)
    quarantine = Quarantine(errors, tenant_id=tenant)
    api = _inspect_log_api()
    files = expand_paths(path, patterns=_PATTERNS)
    # one entry per readable log: (file, eval id, head, [(sample id, epoch, rows, attrs,
    # started)], fingerprint of its content)
    loaded: list[tuple[Path, str, dict[str, Any], list[tuple[Any, ...]], str]] = []
    # files with the same bytes (copies of one log) are read once: the reader fills some
    # fields in at read time (a missing eval id, event timestamps), so two reads of one
    # file need not give the same content
    by_bytes: dict[str, Path] = {}
    with Progress(len(files), desc="read_inspect", unit="file", enabled=progress) as bar:
        for k, f in enumerate(files, start=1):
            bar.next_file(f.name, k, len(files))
            src = f"{FORMAT}:{f}"
            raw = _file_digest(f)
            if raw is not None and raw in by_bytes:
                warnings.warn(f"{f} holds the same eval log as {by_bytes[raw]} (the same "
                              "bytes); its samples are loaded once, from the first",
                              DuplicateLogWarning, stacklevel=2)
                bar.update(1)
                continue
            try:
                log = api.read_eval_log(str(f), resolve_attachments=True)
            except Exception as exc:  # noqa: BLE001 - Inspect raises many kinds; all are bad input
                quarantine.bad(LoadError(source=str(f), line=None, reason="bad_log",
                                         detail=f"Inspect cannot read it ({type(exc).__name__}: "
                                         f"{str(exc)[:200]})",
                                         fix="Check the file with `inspect log dump`; re-run the "
                                         'eval, or pass errors="quarantine" to skip it.'))
                bar.update(1)
                continue
            if not log.samples:
                quarantine.bad(LoadError(source=str(f), line=None, reason="no_samples",
                                         detail="holds no samples (header-only or empty log)",
                                         fix="Point at the complete log, or pass "
                                         'errors="quarantine" to skip it.'))
                bar.update(1)
                continue
            spec = log.eval
            head = {"format": FORMAT, "task": spec.task, "task_id": spec.task_id,
                    "eval_id": spec.eval_id, "eval_run_id": spec.run_id, "model": spec.model,
                    "status": log.status,
                    # reproducibility stamps (replaykit.provenance): versions and sampling config
                    "packages": dict(getattr(spec, "packages", None) or {}),
                    "generate_config": _dump(spec.model_generate_config)
                    if getattr(spec, "model_generate_config", None) is not None else None}
            samples = []
            digest = hashlib.sha256(canonical_json(head).encode())
            for sample in log.samples:
                run_id = f"{spec.eval_id}:{sample.id}:{sample.epoch}"
                try:
                    srows, attrs = _sample_rows(sample, run_id, src)
                    attrs_json = canonical_json(attrs)
                    rows_json = canonical_json([_stable(r) for r in srows])
                except JSONTooDeep as exc:
                    quarantine.bad(_bad_sample(src, run_id, "too_deep", "sample", str(exc)))
                    continue
                except LoadError as exc:  # one bad sample: the others of the log still load
                    quarantine.bad(exc)
                    continue
                if not srows:
                    quarantine.bad(LoadError(
                        source=str(f), line=None, field=f"samples[{sample.id}:{sample.epoch}]",
                        reason="empty_sample", detail="has neither transcript events nor "
                        "messages, so there is nothing to load for it",
                        fix='Re-run the sample, or pass errors="quarantine" to skip it.'))
                    continue
                started = getattr(sample, "started_at", None) or spec.created
                samples.append((sample.id, sample.epoch, srows, attrs, started))
                digest.update(rows_json.encode())
                digest.update(attrs_json.encode())
            loaded.append((f, spec.eval_id, head, samples, digest.hexdigest()))
            if raw is not None:
                by_bytes[raw] = f
            bar.update(1)
    rows: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    for f, suffix, head, samples in _distinct_logs(loaded):
        src = f"{FORMAT}:{f}"
        for sample_id, epoch, srows, attrs, started in samples:
            run_id = f"{head['eval_id']}:{sample_id}:{epoch}{suffix}"
            for r in srows:
                r["run_id"] = run_id
            rows.extend(srows)
            runs.append({"tenant_id": tenant, "run_id": run_id, "parent_run_id": None,
                         "format": FORMAT, "source": src, "created_at": started,
                         "attrs": canonical_json({**head, "log": str(f), **attrs})})
    runs_table = _runs_table(runs)
    if not rows:
        log = EventLog(empty_events(), runs=runs_table,
                       quarantine=quarantine.table(runs_table))
        return keep_tenants(log, tenant, wanted)
    cols = {name: [r.get(name) for r in rows] for name in (
        "run_id", "seq", "type", "kind", "event_id", "ref_id", "tool_name", "args_hash",
        "is_error", "finish", "input_tokens", "output_tokens", "chunk_type", "text", "payload",
        "source")}
    cols["tenant_id"] = [tenant] * len(rows)
    cols["ts"] = _timestamps([r.get("ts") for r in rows])
    table = events_table(cols)
    log = EventLog(table, runs=runs_table, quarantine=quarantine.table(runs_table))
    return keep_tenants(log, tenant, wanted)


#: row fields and payload members the Inspect reader (or the writer of one format but not
#: the other) fills with new values: event uuids, message ids, the clock-relative
#: ``working_start``; the content fingerprint of a log leaves them out, so an ``.eval`` and
#: its ``.json`` (or one eval written twice) are recognised as one log
_VOLATILE_ROW = ("source", "event_id", "ref_id")
_VOLATILE_KEYS = ("uuid", "working_start")


def _stable(row: dict[str, Any]) -> Any:
    """A row as the content fingerprint sees it: without the fields the reader or writer
    fills anew (:data:`_VOLATILE_ROW`, :data:`_VOLATILE_KEYS`, a message's ``id``)."""
    import json

    def strip(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in _VOLATILE_KEYS
                    and not (k == "id" and "role" in v)}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v

    out = {k: v for k, v in row.items() if k not in _VOLATILE_ROW}
    if isinstance(out.get("payload"), str):
        out["payload"] = strip(json.loads(out["payload"]))
    return out


def _file_digest(f: Path) -> str | None:
    """SHA-256 of the file's bytes, or None when it cannot be read (the Inspect reader then
    reports it)."""
    try:
        with open(f, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError:
        return None


def _distinct_logs(loaded: list[tuple[Path, str, dict[str, Any], list[tuple[Any, ...]], str]]
                   ) -> list[tuple[Path, str, dict[str, Any], list[tuple[Any, ...]]]]:
    """The logs to load, each with its run-id suffix.

    Files with the same content (same eval id, same samples and events: a ``.eval`` and its
    ``.json`` export) are loaded once, from the first file, with a
    :class:`DuplicateLogWarning` (copies with the same bytes never get here: see
    :func:`read_inspect`). Distinct logs that share an eval id (a re-run written to
    another file) keep apart: their run ids get ``"@<path relative to their common folder>"``,
    so the same set of files always gives the same ids.
    """
    seen: dict[str, Path] = {}
    keep: list[tuple[Path, str, dict[str, Any], list[tuple[Any, ...]], str]] = []
    for item in loaded:
        f, _, _, _, fp = item
        if fp in seen:
            warnings.warn(f"{f} holds the same eval log as {seen[fp]}; its samples are loaded "
                          "once, from the first", DuplicateLogWarning, stacklevel=3)
            continue
        seen[fp] = f
        keep.append(item)
    by_eval: dict[str, list[Path]] = {}
    for f, eval_id, _, _, _ in keep:
        by_eval.setdefault(eval_id, []).append(f)
    out = []
    for f, eval_id, head, samples, _ in keep:
        group = by_eval[eval_id]
        suffix = ""
        if len(group) > 1:
            root = Path(os.path.commonpath([str(g.resolve().parent) for g in group]))
            suffix = "@" + f.resolve().relative_to(root).as_posix()
        out.append((f, suffix, head, samples))
    return out


def _timestamps(values: list[Any]) -> pa.Array:
    import pandas as pd

    parsed = pd.to_datetime(pd.Series(values, dtype="object"), utc=True, format="ISO8601",
                            errors="coerce")
    return pa.array(parsed.dt.as_unit("us"), type=pa.timestamp("us", tz="UTC"))


def _runs_table(runs: list[dict[str, Any]]) -> pa.Table:
    if not runs:
        return RUNS_SCHEMA.empty_table()
    cols: dict[str, Any] = {f.name: [r[f.name] for r in runs] for f in RUNS_SCHEMA}
    cols["created_at"] = _timestamps([None if v is None else str(v) for v in cols["created_at"]])
    return pa.table(cols, schema=RUNS_SCHEMA)
