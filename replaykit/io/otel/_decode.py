"""Decoding OTLP documents: ``AnyValue``s, attributes, ids, times, spans and log records.

Every function here takes the plain JSON of an OTLP/JSON document (or a protobuf message as
``json_format.MessageToDict`` gives it) and returns plain values, raising ``ValueError``
(naming the field) on what the OTLP/JSON mapping does not allow; the loader turns those into
``bad_span`` / ``bad_log_record`` / ``bad_document`` rows.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from typing import Any

from ..._base.json import JSONDecodeError, canonical_json, loads

_BAD_JSON: tuple[type[Exception], ...] = (*JSONDecodeError, ValueError)

_SPAN_KIND = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER",
              5: "CONSUMER"}

def _any_value(v: Any) -> Any:
    """An OTLP ``AnyValue`` as a plain JSON value."""
    if not isinstance(v, dict):
        return v
    for key in ("stringValue", "string_value"):
        if key in v:
            return v[key]
    for key in ("intValue", "int_value"):
        if key in v:
            return _int64(v[key], "intValue")
    for key in ("doubleValue", "double_value"):
        if key in v:
            d = v[key]  # a JSON number, or its text as protobuf's JSON mapping allows
            if d is None:  # protobuf JSON: null is the default value
                return 0.0
            if type(d) is bool or not isinstance(d, (int, float, str)):
                raise ValueError(f"doubleValue must be a number, got {d!r}")
            return float(d)
    for key in ("boolValue", "bool_value"):
        if key in v:
            b = v[key]  # bool("false") would be True: only true/false are booleans
            if b is None:  # protobuf JSON: null is the default value
                return False
            if type(b) is not bool:
                raise ValueError(f"boolValue must be true or false, got {b!r}")
            return b
    for key in ("arrayValue", "array_value"):
        if key in v:
            return [_any_value(x) for x in (v[key] or {}).get("values", [])]
    for key in ("kvlistValue", "kvlist_value"):
        if key in v:
            return _attributes((v[key] or {}).get("values", []))
    for key in ("bytesValue", "bytes_value"):
        if key in v:
            return v[key]
    return None


def _int64(value: Any, what: str) -> int:
    """An OTLP int64 (a number or its decimal text); ValueError when it is not one."""
    n = int(value)  # ValueError/TypeError for text that is no integer
    if not -(2**63) <= n < 2**63 or (isinstance(value, float) and n != value):
        raise ValueError(f"{what} must be a 64-bit integer, got {value!r}")
    return n


def _nanos(value: Any) -> int:
    """Unix nanoseconds (0 when absent); ValueError beyond what a 64-bit time can hold."""
    n = _int64(value or 0, "a time in unix nanoseconds")
    if n < 0:
        raise ValueError(f"times in unix nanoseconds must be >= 0, got {value!r}")
    return n


def _attributes(items: Any, where: str = "attributes") -> dict[str, Any]:
    """OTLP ``[{key, value}, ...]`` as a dict; raises ValueError naming the bad entry."""
    if items is None:
        return {}
    if not isinstance(items, list):
        raise ValueError(f"{where} must be an array of {{key, value}}")
    out: dict[str, Any] = {}
    for i, a in enumerate(items):
        if not isinstance(a, dict):
            raise ValueError(f"{where}[{i}] must be a {{key, value}} object, got "
                             f"{type(a).__name__}")
        key = a.get("key")
        if not isinstance(key, str):
            raise ValueError(f"{where}[{i}].key must be a string, got {key!r}")
        try:
            out[key] = _any_value(a.get("value"))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{where}[{i}] ({key!r}): {exc}") from None
    return out


def _scalar_text(value: Any, name: str) -> str | None:
    """A string attribute that some producers write as a number: ``5`` -> ``"5"``.

    Strings pass; integers, floats and booleans become their JSON text; arrays and objects
    raise ValueError (no sensible id or name).
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return canonical_json(value)
    raise ValueError(f"attribute {name} must be a string, got a JSON {type(value).__name__}")


def _loose_text(value: Any) -> str | None:
    """A value inside free-form message content as text (no error: content is not checked)."""
    return value if value is None or isinstance(value, str) else canonical_json(value)


def _token_count(value: Any, name: str) -> int | None:
    """A token count: an integer, or a float with an integral value (``12.0``)."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if type(value) is not int or not 0 <= value < 2**63:
        raise ValueError(f"attribute {name} must be a non-negative integer, got {value!r}")
    return value


def _hex_id(value: Any, size: int) -> str | None:
    """OTLP/JSON ids are hex; protobuf's generic JSON mapping writes base64. Accept both."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError("must be a string")
    if len(value) == 2 * size and re.fullmatch(r"[0-9a-fA-F]+", value):
        return value.lower()
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"is neither {2 * size} hex digits nor base64") from None
    if len(raw) != size:
        raise ValueError(f"decodes to {len(raw)} bytes, expected {size}")
    return raw.hex()


def _maybe_json(value: Any) -> tuple[Any, str | None]:
    """(parsed value, raw text) of an attribute that may hold JSON text."""
    if isinstance(value, str):
        try:
            return loads(value), value
        except _BAD_JSON:
            return value, value
    if value is None:
        return None, None
    return value, canonical_json(value)


def _span_record(span: dict[str, Any], resource: dict[str, Any] | ValueError,
                 scope: dict[str, Any]) -> dict[str, Any]:
    """A span as plain JSON (the payload) plus its ids and times; raises ValueError."""
    if isinstance(resource, ValueError):
        raise resource
    trace = _hex_id(span.get("traceId", span.get("trace_id")), 16)
    sid = _hex_id(span.get("spanId", span.get("span_id")), 8)
    if trace is None or sid is None:
        raise ValueError("traceId and spanId are required")
    parent = _hex_id(span.get("parentSpanId", span.get("parent_span_id")), 8)
    start = _nanos(span.get("startTimeUnixNano", span.get("start_time_unix_nano")))
    end = _nanos(span.get("endTimeUnixNano", span.get("end_time_unix_nano"))) or start
    attrs = _attributes(span.get("attributes", []))
    op = attrs.get("gen_ai.operation.name")
    if op is not None and not isinstance(op, str):
        raise ValueError(f"attribute gen_ai.operation.name must be a string, got {op!r}")
    _scalar_text(attrs.get("gen_ai.conversation.id"), "gen_ai.conversation.id")
    kind = span.get("kind", 0)
    events = []
    for i, e in enumerate(span.get("events", []) or []):
        if not isinstance(e, dict):
            raise ValueError(f"events[{i}] must be an object")
        name = e.get("name")
        events.append({"name": name if isinstance(name, str) else None,
                       "timeUnixNano": _nanos(e.get("timeUnixNano", e.get("time_unix_nano"))),
                       "attributes": _attributes(e.get("attributes", []),
                                                 f"events[{i}].attributes")})
    status = span.get("status") or {}
    code = status.get("code", 0)
    if isinstance(code, str):  # protobuf JSON writes enum names
        code = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}.get(code, 0)
    message = status.get("message")
    name = span.get("name")
    return {
        "traceId": trace, "spanId": sid, "parentSpanId": parent,
        "name": name if name is None or isinstance(name, str) else canonical_json(name),
        "kind": _SPAN_KIND.get(kind, kind) if isinstance(kind, int) else
        str(kind).replace("SPAN_KIND_", ""),
        "startTimeUnixNano": start, "endTimeUnixNano": end, "attributes": attrs,
        "events": events, "status": {"code": int(code), "message": message if message is None
                                     or isinstance(message, str) else canonical_json(message)},
        "scope": scope.get("name"), "resource": resource,
    }


def _spans_of(doc: Any) -> Iterable[tuple[Any, dict[str, Any] | ValueError, dict[str, Any]]]:
    if not isinstance(doc, dict):
        raise ValueError("the document is not a JSON object")
    rs_list = doc.get("resourceSpans", doc.get("resource_spans"))
    if rs_list is None and ("resourceLogs" in doc or "resource_logs" in doc):
        return  # a log export: its records are read by _logs_of
    if not isinstance(rs_list, list):
        raise ValueError('has no "resourceSpans" array')
    for r, rs in enumerate(rs_list):
        if not isinstance(rs, dict):
            raise ValueError(f"resourceSpans[{r}] is not an object")
        # a bad resource fails its spans (each one a bad_span row), not the whole document
        try:
            resource: dict[str, Any] | ValueError = _attributes(
                (rs.get("resource") or {}).get("attributes", []),
                f"resourceSpans[{r}].resource.attributes")
        except (ValueError, AttributeError, TypeError) as exc:
            resource = ValueError(str(exc))
        for ss in rs.get("scopeSpans", rs.get("scope_spans", [])) or []:
            scope = ss.get("scope") or {}
            for span in ss.get("spans", []) or []:
                yield span, resource, scope


def _logs_of(doc: Any) -> Iterable[tuple[Any, dict[str, Any] | ValueError, dict[str, Any]]]:
    """The log records of an ``ExportLogsServiceRequest`` (none when the document has none)."""
    if not isinstance(doc, dict):
        raise ValueError("the document is not a JSON object")
    rl_list = doc.get("resourceLogs", doc.get("resource_logs"))
    if rl_list is None:
        return
    if not isinstance(rl_list, list):
        raise ValueError('"resourceLogs" is not an array')
    for r, rl in enumerate(rl_list):
        if not isinstance(rl, dict):
            raise ValueError(f"resourceLogs[{r}] is not an object")
        try:
            resource: dict[str, Any] | ValueError = _attributes(
                (rl.get("resource") or {}).get("attributes", []),
                f"resourceLogs[{r}].resource.attributes")
        except (ValueError, AttributeError, TypeError) as exc:
            resource = ValueError(str(exc))
        for sl in rl.get("scopeLogs", rl.get("scope_logs", [])) or []:
            scope = sl.get("scope") or {}
            for item in sl.get("logRecords", sl.get("log_records", [])) or []:
                yield item, resource, scope


def _log_record(item: Any, resource: dict[str, Any] | ValueError,
                scope: dict[str, Any]) -> dict[str, Any]:
    """A log record as plain JSON; raises ValueError naming the bad field."""
    if isinstance(resource, ValueError):
        raise resource
    if not isinstance(item, dict):
        raise ValueError("a log record must be an object")
    attrs = _attributes(item.get("attributes", []))
    name = item.get("eventName", item.get("event_name")) or attrs.get("event.name")
    body = item.get("body")
    return {
        "name": name if name is None or isinstance(name, str) else canonical_json(name),
        "traceId": _hex_id(item.get("traceId", item.get("trace_id")), 16),
        "spanId": _hex_id(item.get("spanId", item.get("span_id")), 8),
        "timeUnixNano": _nanos(item.get("timeUnixNano", item.get("time_unix_nano"))) or _nanos(
            item.get("observedTimeUnixNano", item.get("observed_time_unix_nano"))),
        "severityText": item.get("severityText", item.get("severity_text")),
        "body": _any_value(body) if isinstance(body, dict) else body,
        "attributes": attrs, "scope": scope.get("name"),
    }
