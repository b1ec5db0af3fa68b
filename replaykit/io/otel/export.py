"""Write back to OpenTelemetry: any EventLog as OTLP/JSON GenAI traces, results as evaluations.

* :func:`to_otel` (also ``log.to_otel(path)``): one trace per run in the current GenAI
  semantic conventions -- an ``invoke_agent`` root span (``gen_ai.conversation.id`` = the run
  id), one ``chat`` span per model call (tokens, finish reason, output messages, the
  reproducibility stamps as ``gen_ai.request.*`` attributes), one ``execute_tool`` span per tool
  call (name, call id, arguments, result, error status). Other events are span events of the
  root span. :func:`replaykit.read_otel` reads the file back to the same runs, model calls,
  tool calls and stamps (``tests/test_otel_roundtrip.py`` checks it for every format).
* :func:`to_otel_evaluations`: divergence (``rk.compare``) and cohort (``Cohorts.compare``)
  results as ``gen_ai.evaluation.result`` events -- OTLP/JSON log records carrying the trace
  and span id of the run they judge -- so a platform that ingests OpenTelemetry shows
  replaykit's verdicts beside its own traces. ``to_otel(..., evaluations=frame)`` also puts
  them on the root spans as span events.

Ids: a run read from OpenTelemetry keeps its trace id; any other run gets a trace id derived
from (tenant, run id) -- the same run always gets the same trace id, so evaluations written
later attach to traces written earlier. Mapping and limits: ``docs/formats/otel.md``
("Writing OpenTelemetry").
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..._base.delegates import provide
from ..._base.json import canonical_json, loads
from ...eventlog.grain import calls_df, tools_df
from ...provenance.rules import STAMP_FIELDS
from ...provenance.stamps import stamps_df

__all__ = ["SEMCONV_STAMPS", "evaluation_records", "to_otel", "to_otel_evaluations",
           "trace_id_of"]

#: stamp field -> the GenAI attribute that carries it (every other field:
#: ``replaykit.stamp.<field>``)
SEMCONV_STAMPS = {
    "model": "gen_ai.request.model", "model_version": "gen_ai.response.model",
    "provider": "gen_ai.provider.name", "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p", "max_tokens": "gen_ai.request.max_tokens",
    "stop_sequences": "gen_ai.request.stop_sequences", "seed": "gen_ai.request.seed",
    "system_prompt": "gen_ai.system_instructions",
}
#: replaykit ``finish`` -> the conventions' finish reason (``unknown``: none written)
_FINISH = {"stop": "stop", "tool-calls": "tool_call", "max-tokens": "length",
           "content-filter": "content_filter", "error": "error"}
_SCOPE = {"name": "replaykit"}


def trace_id_of(tenant_id: str, run_id: str) -> str:
    """The trace id (32 hex digits) :func:`to_otel` gives a run that has none.

    >>> trace_id_of("acme", "run-1")
    '98a332f647788a417671f1cad0530f9d'
    """
    return hashlib.sha256(f"{tenant_id}\x1f{run_id}".encode()).hexdigest()[:32]


def _span_id(*parts: Any) -> str:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:16]


def _value(v: Any) -> dict[str, Any]:
    """A Python value as an OTLP ``AnyValue``."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, (int, np.integer)):
        return {"intValue": str(int(v))}
    if isinstance(v, (float, np.floating)):
        return {"doubleValue": float(v)}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [_value(x) for x in v]}}
    if isinstance(v, Mapping):
        return {"kvlistValue": {"values": [{"key": str(k), "value": _value(x)}
                                           for k, x in v.items()]}}
    return {"stringValue": str(v)}


def _attrs(d: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in d.items() if v is not None]


def _present(v: Any) -> bool:
    return v is not None and v is not pd.NA and not (isinstance(v, float) and v != v)


def _py(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _single_tenant(log: Any) -> str | None:
    tenants = list(log.tenants)
    if len(tenants) > 1:
        raise ValueError(f"to_otel writes one tenant's runs (OpenTelemetry records no tenant); "
                         f"this log holds {len(tenants)}: {tenants[:5]}. Write "
                         "log.filter(tenant_id=...) per tenant.")
    return tenants[0] if tenants else None


def _run_traces(log: Any) -> dict[str, tuple[str, str | None, str | None]]:
    """run id -> (trace id, parent run id, format)."""
    out: dict[str, tuple[str, str | None, str | None]] = {}
    runs = log.runs
    for tenant, run, parent, fmt, attrs in zip(
            runs.column("tenant_id").to_pylist(), runs.column("run_id").to_pylist(),
            runs.column("parent_run_id").to_pylist(), runs.column("format").to_pylist(),
            runs.column("attrs").to_pylist(), strict=True):
        trace = None
        if fmt == "otel" and attrs:
            try:
                ids = loads(attrs).get("trace_ids") or []
            except (ValueError, AttributeError):
                ids = []
            if len(ids) == 1 and isinstance(ids[0], str) and len(ids[0]) == 32:
                trace = ids[0]
        out[run] = (trace or trace_id_of(tenant, run), parent, fmt)
    return out


def _stamp_attrs(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in STAMP_FIELDS:
        v = row.get(f)
        if not _present(v):
            continue
        v = _py(v)
        if f == "stop_sequences":
            try:
                v = loads(v) if isinstance(v, str) else v
            except ValueError:
                pass
            out[SEMCONV_STAMPS[f]] = v if isinstance(v, list) and all(
                isinstance(x, str) for x in v) else canonical_json(v)
        elif f == "system_prompt":
            out[SEMCONV_STAMPS[f]] = json.dumps([{"type": "text", "content": v}])
        elif f in SEMCONV_STAMPS:
            out[SEMCONV_STAMPS[f]] = v
        elif f == "system_prompt_hash" and _present(row.get("system_prompt")):
            continue  # the reader derives it from the text
        else:
            out[f"replaykit.stamp.{f}"] = v
    return out


class _Stamps:
    """One run's stamp rows, looked up by seq (rows are sorted by ``from_seq``)."""

    def __init__(self, stamps: pd.DataFrame) -> None:
        self.rows = stamps.to_dict("records") if len(stamps) else []
        self.starts = stamps["from_seq"].to_numpy(dtype=np.int64) if len(stamps) else \
            np.zeros(0, np.int64)

    def at(self, seq: int) -> dict[str, Any]:
        i = int(np.searchsorted(self.starts, seq, side="right")) - 1
        return self.rows[i] if 0 <= i < len(self.rows) and seq <= self.rows[i]["to_seq"] \
            else {}


def _ts_ns(table: pa.Table) -> np.ndarray:
    """Unix nanoseconds of each row; a row without a time takes the time of the row before
    it in its run (else the run's first time, else 0)."""
    ts = pc.cast(table.column("ts"), pa.int64())
    valid = np.asarray(pc.is_valid(ts).to_numpy(zero_copy_only=False), dtype=bool)
    vals = np.asarray(pc.fill_null(ts, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
    if not valid.all() and valid.any():
        idx = np.where(valid, np.arange(len(vals)), 0)
        np.maximum.accumulate(idx, out=idx)
        first = int(np.argmax(valid))
        idx[:first] = first
        vals = vals[idx]
    return vals * 1000


def _spans_of_run(run: str, trace: str, parent_run: str | None, fmt: str | None,
                  t: pa.Table, ns: np.ndarray, calls: pd.DataFrame, tools: pd.DataFrame,
                  stamps: pd.DataFrame, evals: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seqs = t.column("seq").to_numpy()
    at = dict(zip(seqs.tolist(), ns.tolist(), strict=True))
    t0, t1 = int(ns.min()), int(ns.max())
    root = _span_id(trace, "root")
    stamp = _Stamps(stamps)
    first = stamp.at(int(seqs.min()))
    kinds = pc.cast(t.column("kind"), pa.string()).to_pylist()
    types_ = pc.cast(t.column("type"), pa.string()).to_pylist()
    texts = pc.cast(t.column("text"), pa.large_string()).to_pylist()
    modelled = {"model_request", "model_chunk", "model_response", "tool_call", "tool_result"}
    events = [{"name": f"replaykit.{k}", "timeUnixNano": str(at[s]), "attributes": _attrs({
        "replaykit.seq": s, "replaykit.type": ty, "replaykit.text": tx})}
        for s, k, ty, tx in zip(seqs.tolist(), kinds, types_, texts, strict=True)
        if k not in modelled and k != "session"]
    events += [{"name": "gen_ai.evaluation.result", "timeUnixNano": str(t1),
                "attributes": _attrs(e["attributes"])} for e in evals]
    spans = [{
        "traceId": trace, "spanId": root, "name": f"invoke_agent {run}", "kind": 1,
        "startTimeUnixNano": str(t0), "endTimeUnixNano": str(t1),
        "attributes": _attrs({"gen_ai.operation.name": "invoke_agent",
                              "gen_ai.conversation.id": run, "replaykit.run_id": run,
                              "replaykit.parent_run_id": parent_run,
                              "replaykit.source_format": fmt, **_stamp_attrs(first)}),
        "events": events, "status": {}}]
    for c in calls.itertuples(index=False):
        start, end = at[int(c.first_seq)], at[int(c.last_seq)]
        finish = c.finish if _present(c.finish) else None
        out_parts = [{"type": "text", "content": c.text}] if _present(c.text) and c.text else []
        a: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": out_parts}]),
            "gen_ai.usage.input_tokens": _py(c.input_tokens) if _present(c.input_tokens)
            else None,
            "gen_ai.usage.output_tokens": _py(c.output_tokens) if _present(c.output_tokens)
            else None,
            "gen_ai.usage.cache_read.input_tokens": _py(c.cache_read_tokens)
            if _present(c.cache_read_tokens) else None,
            "gen_ai.usage.cache_creation.input_tokens": _py(c.cache_write_tokens)
            if _present(c.cache_write_tokens) else None,
            "gen_ai.response.finish_reasons": [_FINISH.get(finish, finish)]
            if finish not in (None, "unknown") else None,
            "replaykit.ref_id": c.ref_id if _present(c.ref_id) else None,
            "replaykit.call.finished": False if not c.finished else None,
            **_stamp_attrs(stamp.at(int(c.first_seq))),
        }
        spans.append({"traceId": trace, "spanId": _span_id(trace, "call", c.first_seq),
                      "parentSpanId": root, "name": f"chat {a.get('gen_ai.request.model', '')}"
                      .strip(), "kind": 3, "startTimeUnixNano": str(start),
                      "endTimeUnixNano": str(max(start, end)), "attributes": _attrs(a),
                      "status": {"code": 2} if finish == "error" else {}})
    for tool in tools.itertuples(index=False):
        start = at[int(tool.call_seq)]
        has = bool(tool.has_result)
        end = at[int(tool.result_seq)] if has and _present(tool.result_seq) else start
        err = has and _present(tool.is_error) and bool(tool.is_error)
        a = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool.tool_name
             if _present(tool.tool_name) else None,
             "gen_ai.tool.call.id": tool.call_id,
             "gen_ai.tool.call.arguments": tool.arguments if _present(tool.arguments) else None,
             "gen_ai.tool.call.result": tool.result_text if has and _present(tool.result_text)
             else None,
             "replaykit.args_hash": tool.args_hash if _present(tool.args_hash) else None,
             "replaykit.tool.has_result": False if not has else None,
             "error.type": (tool.error_name if _present(tool.error_name) else "error")
             if err else None}
        spans.append({"traceId": trace, "spanId": _span_id(trace, "tool", tool.call_seq),
                      "parentSpanId": root, "name": f"execute_tool {a['gen_ai.tool.name'] or ''}"
                      .strip(), "kind": 1, "startTimeUnixNano": str(start),
                      "endTimeUnixNano": str(max(start, end)), "attributes": _attrs(a),
                      "status": {"code": 2, "message": tool.result_text
                                 if _present(tool.result_text) else "error"} if err else {}})
    return spans


def _by_run(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {str(k): g for k, g in df.groupby("run_id", sort=False)} if len(df) else {}


@provide("EventLog.to_otel")
def to_otel(log: Any, path: str | os.PathLike[str], *, overwrite: bool = False,
            evaluations: pd.DataFrame | None = None) -> Path:
    """Write ``log`` as one OTLP/JSON trace export in the current GenAI conventions.

    One trace per run (see the module docstring for the spans). The file opens in any OTel
    viewer (Jaeger, a collector's file receiver, the platforms that ingest OTLP/JSON) and
    :func:`replaykit.read_otel` reads it back to the same runs, calls, tools and stamps.
    ``evaluations``: a result frame of :func:`to_otel_evaluations` (``rk.compare`` or
    ``Cohorts.compare``): its verdicts become ``gen_ai.evaluation.result`` span events of
    the runs' root spans. Written atomically (a temporary file renamed into place).

    What OpenTelemetry cannot hold: the tenant (a resource attribute ``replaykit.tenant_id``
    says whose runs they are, but :func:`~replaykit.read_otel` takes the owner from the
    caller), input messages (not in the canonical table: written without, so the read-back
    calls are ``replayable: false``), events that are neither model nor tool events (span
    events of the root span, not rows, when read back), turns and streaming chunks.

    Example:
        >>> log.to_otel("replay.otel.json")  # doctest: +SKIP
        >>> rk.read_otel("replay.otel.json", owner="acme").run_ids  # doctest: +SKIP

    Raises:
        ValueError: the log holds more than one tenant (write one per tenant).
        FileExistsError: ``path`` exists and ``overwrite`` is False.
    """
    out = Path(path)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists; pass overwrite=True to replace it")
    tenant = _single_tenant(log)
    t = log.table
    traces = _run_traces(log)
    calls, tools = _by_run(calls_df(log)), _by_run(tools_df(log))
    stamps = _by_run(stamps_df(log).astype({"run_id": object}))
    evals = _by_run(_evaluation_rows(evaluations, log)) if evaluations is not None else {}
    spans: list[dict[str, Any]] = []
    if t.num_rows:
        runs = pc.cast(t.column("run_id"), pa.string()).to_numpy(zero_copy_only=False)
        bounds = np.flatnonzero(np.r_[True, runs[1:] != runs[:-1], True])
        empty = pd.DataFrame(columns=["run_id"])
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            run = str(runs[lo])
            trace, parent, fmt = traces.get(run, (trace_id_of(str(tenant), run), None, None))
            ev = evals.get(run)
            sub = t.slice(lo, hi - lo)
            spans += _spans_of_run(run, trace, parent, fmt, sub, _ts_ns(sub),
                                   calls.get(run, empty), tools.get(run, empty),
                                   stamps.get(run, empty),
                                   ev.to_dict("records") if ev is not None else [])
    doc = {"resourceSpans": [{
        "resource": {"attributes": _attrs({"service.name": "replaykit",
                                           "replaykit.tenant_id": tenant})},
        "scopeSpans": [{"scope": _SCOPE, "spans": spans}]}]}
    _write_atomic(out, doc)
    return out


def _write_atomic(out: Path, doc: Any) -> None:
    """Write to a new temporary file beside ``out`` (never an existing path or a symlink's
    target), then rename it into place."""
    from ..._base.files import temp_file_beside  # the mode open() would give it (umask), not 0600

    tmp = temp_file_beside(out)
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(canonical_json(doc))
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()


# --------------------------------------------------------------------------- evaluations

_COMPARE_SCORES = ("first_divergence_step", "tool_sequence_distance",
                   "tool_sequence_distance_norm", "tool_signature_distance",
                   "changed_descendants", "fixture_dependency_count")


def _evaluation_rows(result: Any, log: Any = None) -> pd.DataFrame:
    """One row per (run, evaluation): ``run_id``, ``tenant_id``, ``attributes`` (the event's
    ``gen_ai.evaluation.*`` attributes)."""
    df = result if isinstance(result, pd.DataFrame) else pd.DataFrame(result)
    rows: list[dict[str, Any]] = []
    if {"base_run_id", "replay_run_id"} <= set(df.columns):  # rk.compare
        for r in df.to_dict("records"):
            label = r.get("comparability")
            for name in _COMPARE_SCORES:
                if name not in r or not _present(r[name]):
                    continue
                rows.append({"run_id": r["replay_run_id"], "tenant_id": r.get("tenant_id"),
                             "attributes": {
                                 "gen_ai.evaluation.name": f"replaykit.{name}",
                                 "gen_ai.evaluation.score.value": float(_py(r[name])),
                                 "gen_ai.evaluation.score.label": label if _present(label)
                                 else None,
                                 "gen_ai.evaluation.explanation":
                                     f"{name} of replay {r['replay_run_id']} against base "
                                     f"{r['base_run_id']} (replaykit compare)",
                                 "replaykit.base_run_id": r["base_run_id"]}})
            if _present(label):
                rows.append({"run_id": r["replay_run_id"], "tenant_id": r.get("tenant_id"),
                             "attributes": {
                                 "gen_ai.evaluation.name": "replaykit.comparability",
                                 "gen_ai.evaluation.score.label": label,
                                 "gen_ai.evaluation.explanation":
                                     f"replay {r['replay_run_id']} vs base {r['base_run_id']}"
                                     + (f"; stamps changed: {r['stamps_changed']}"
                                        if _present(r.get("stamps_changed"))
                                        and r.get("stamps_changed") else ""),
                                 "replaykit.base_run_id": r["base_run_id"]}})
        return pd.DataFrame(rows, columns=["run_id", "tenant_id", "attributes"])
    if {"metric", "diff"} <= set(df.columns):  # Cohorts.compare: one verdict per run judged
        runs = _cohort_runs(df, log)
        for r in df.to_dict("records"):
            lo, hi = r.get("ci_low"), r.get("ci_high")
            sig = r.get("excludes_zero")
            if not _present(sig):
                sig = _present(lo) and _present(hi) and (float(lo) > 0 or float(hi) < 0)
            a, b = r.get("cohort_a"), r.get("cohort_b")
            expl = (f"{r.get('analysis', '')} {r['metric']}: {b} - {a} = {r['diff']}"
                    + (f" ({r.get('ci_level', '')} CI {lo} .. {hi})" if _present(lo) else ""))
            attrs = {"gen_ai.evaluation.name": f"replaykit.cohort.{r['metric']}",
                     "gen_ai.evaluation.score.value": float(r["diff"])
                     if _present(r["diff"]) else None,
                     "gen_ai.evaluation.score.label": "significant" if bool(sig)
                     else "not_significant",
                     "gen_ai.evaluation.explanation": expl.strip(),
                     "replaykit.cohort_a": a, "replaykit.cohort_b": b,
                     "replaykit.analysis": r.get("analysis")}
            for run, tenant, cohort in runs:
                if cohort is None or cohort in (a, b):
                    rows.append({"run_id": run, "tenant_id": tenant,
                                 "attributes": {**attrs, "replaykit.cohort": cohort}})
        return pd.DataFrame(rows, columns=["run_id", "tenant_id", "attributes"])
    if {"run_id", "gen_ai.evaluation.name"} <= set(df.columns):  # already in this shape
        for r in df.to_dict("records"):
            rows.append({"run_id": r["run_id"], "tenant_id": r.get("tenant_id"),
                         "attributes": {k: _py(v) for k, v in r.items()
                                        if k.startswith("gen_ai.evaluation.") and _present(v)}})
        return pd.DataFrame(rows, columns=["run_id", "tenant_id", "attributes"])
    raise ValueError("evaluations must be a frame of rk.compare (base_run_id, replay_run_id, "
                     "...), of Cohorts.compare (metric, diff, ...) or one row per run with "
                     f"run_id and gen_ai.evaluation.name; got columns {list(df.columns)}")


def _cohort_runs(df: pd.DataFrame, log: Any) -> list[tuple[str, Any, Any]]:
    """The runs a cohort comparison judges, with their cohort: the runs of its two cohorts
    (``log`` is the :class:`~replaykit.Cohorts` object), or every run of an EventLog (cohort
    unknown: None)."""
    if log is None:
        raise ValueError("a cohort comparison names no runs: pass the Cohorts it was computed "
                         "from (to_otel_evaluations(frame, path, log=cohorts))")
    if hasattr(log, "runs_df") and hasattr(log, "labels"):  # a Cohorts object
        r = log.runs_df()
        return list(zip(r["run_id"].astype(str), r["tenant_id"].astype(str),
                        r["cohort"].astype(str), strict=True))
    runs = log.runs
    return list(zip(runs.column("run_id").to_pylist(), runs.column("tenant_id").to_pylist(),
                    [None] * runs.num_rows, strict=True))


def evaluation_records(result: Any, log: Any = None) -> list[dict[str, Any]]:
    """The OTLP log records :func:`to_otel_evaluations` writes (one per run and verdict)."""
    rows = _evaluation_rows(result, log)
    base = getattr(log, "log", log)  # a Cohorts object: the log it groups
    traces = _run_traces(base) if base is not None and hasattr(base, "runs") else {}
    out = []
    for r in rows.to_dict("records"):
        run = str(r["run_id"])
        tenant = r["tenant_id"] if _present(r["tenant_id"]) else None
        if run not in traces and tenant is None:
            raise ValueError(f"the tenant of run {run!r} is unknown, so is its trace id: pass "
                             "log= (the log the result was computed from)")
        trace = traces[run][0] if run in traces else trace_id_of(str(tenant), run)
        out.append({"traceId": trace, "spanId": _span_id(trace, "root"),
                    "eventName": "gen_ai.evaluation.result",
                    "attributes": _attrs({"event.name": "gen_ai.evaluation.result",
                                          **r["attributes"]})})
    return out


def to_otel_evaluations(result: Any, path: str | os.PathLike[str], *, log: Any = None,
                        overwrite: bool = False) -> Path:
    """Write replaykit's verdicts as OTel ``gen_ai.evaluation.result`` events (OTLP/JSON logs).

    ``result``: the frame of :func:`replaykit.compare` (one event per replay run and score:
    ``replaykit.first_divergence_step``, ``replaykit.tool_sequence_distance``, ... with
    ``gen_ai.evaluation.score.value``; plus ``replaykit.comparability`` with the label), or of
    ``Cohorts.compare`` (one event per metric and run of the two cohorts compared:
    ``score.value`` = the difference b - a, ``score.label`` = ``significant`` when the
    confidence interval excludes 0; pass ``log=`` the :class:`~replaykit.Cohorts` object, or
    an EventLog to judge all its runs), or a frame of ``run_id`` + ``gen_ai.evaluation.*``
    columns. ``log`` also gives runs read from OpenTelemetry their own trace ids. Each record
    carries the trace id and root span id of the run it judges (:func:`trace_id_of`, or the
    run's own trace when read from OTel), so a platform that ingests OpenTelemetry attaches it
    to that trace -- the file written by :func:`to_otel`, or the original traces.

    Example:
        >>> rk.to_otel_evaluations(rk.compare(base, replays), "verdicts.otel.json",
        ...                        log=replays)  # doctest: +SKIP

    Raises:
        ValueError: ``result`` is none of these frames (the columns are named); a cohort
            comparison without ``log``; verdicts of more than one tenant; a run whose tenant
            neither the frame nor ``log`` names.
        FileExistsError: ``path`` exists and ``overwrite`` is False.
    """
    out = Path(path)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists; pass overwrite=True to replace it")
    records = evaluation_records(result, log)
    tenants = sorted({str(t) for t in _evaluation_rows(result, log)["tenant_id"].dropna()})
    base = getattr(log, "log", log)
    if base is not None and hasattr(base, "tenants"):
        tenants = sorted(set(tenants) | set(base.tenants))
    if len(tenants) > 1:
        raise ValueError(f"to_otel_evaluations writes one tenant's verdicts; these are of "
                         f"{len(tenants)} tenants: {tenants[:5]}. Write one file per tenant.")
    doc = {"resourceLogs": [{
        "resource": {"attributes": _attrs({"service.name": "replaykit",
                                           "replaykit.tenant_id": tenants[0]
                                           if len(tenants) == 1 else None})},
        "scopeLogs": [{"scope": _SCOPE, "logRecords": records}]}]}
    _write_atomic(out, doc)
    return out
