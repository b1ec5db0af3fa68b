"""OTLP protobuf files: ``ExportTraceServiceRequest`` / ``ExportLogsServiceRequest`` messages.

A file is one serialized message (what an OTLP/HTTP exporter posts, saved to a file), or a
sequence of messages each preceded by its length as a 4-byte big-endian integer (the
collector's file exporter with ``format: proto``). Each message becomes the same plain
document the OTLP/JSON reader reads (``google.protobuf.json_format.MessageToDict``: ids in
base64, enums by name), so both encodings share one mapping. Needs ``opentelemetry-proto``
(the ``otel`` extra).

Traces and logs requests are the same bytes at the top level (field 1, repeated): a message is
read as traces when every span in it has a 16-byte trace id and an 8-byte span id, else as logs
when it holds log records; anything else is no OTLP export.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...errors import LoadError, MissingExtraError

__all__ = ["SUFFIXES", "documents", "sniff"]

#: file name endings read as OTLP protobuf
SUFFIXES = (".pb", ".binpb", ".otlp", ".protobuf")
_FIX = ("Export the traces as OTLP protobuf (ExportTraceServiceRequest / "
        "ExportLogsServiceRequest), or as OTLP/JSON.")


def _classes() -> tuple[Any, Any, Any]:
    try:
        from google.protobuf import json_format
        from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    except ImportError:
        raise MissingExtraError("Reading OTLP protobuf files", "otel",
                                "opentelemetry-proto") from None
    return (trace_service_pb2.ExportTraceServiceRequest,
            logs_service_pb2.ExportLogsServiceRequest, json_format)


def _chunks(data: bytes) -> list[bytes] | None:
    """The messages of a length-prefixed file, or None when ``data`` is not one."""
    out, i = [], 0
    while i < len(data):
        if i + 4 > len(data):
            return None
        n = int.from_bytes(data[i:i + 4], "big")
        if n == 0 or i + 4 + n > len(data):
            return None
        out.append(data[i + 4:i + 4 + n])
        i += 4 + n
    return out or None


def sniff(path: Path) -> str | None:
    """None when ``path`` looks like an OTLP protobuf export, otherwise why it does not."""
    p = Path(path)
    if p.suffix.lower() not in SUFFIXES:
        return f"extension {p.suffix or '(none)'!r} is not one of {', '.join(SUFFIXES)}"
    try:
        with open(p, "rb") as fh:
            head = fh.read(8)
    except OSError:
        return "cannot be read"
    # a message opens with field 1 (length-delimited): 0x0a; a length prefix with 0x00
    if head[:1] == b"\x0a" or (len(head) > 4 and head[:1] == b"\x00" and head[4:5] == b"\x0a"):
        return None
    return "does not open like an OTLP protobuf message (field 1, or a length prefix)"


def _decode(chunk: bytes, source: str, n: int) -> dict[str, Any]:
    traces_cls, logs_cls, json_format = _classes()
    from google.protobuf.message import DecodeError

    _DECODE_ERRORS = (DecodeError, ValueError, RuntimeError, TypeError)
    errors = []
    try:
        msg = traces_cls.FromString(chunk)
        spans = [sp for rs in msg.resource_spans for ss in rs.scope_spans for sp in ss.spans]
        if spans and all(len(sp.trace_id) == 16 and len(sp.span_id) == 8 for sp in spans):
            return json_format.MessageToDict(msg)
    except _DECODE_ERRORS as exc:
        errors.append(str(exc))
    try:
        lmsg = logs_cls.FromString(chunk)
        records = [r for rl in lmsg.resource_logs for sl in rl.scope_logs
                   for r in sl.log_records]
        if records:
            return json_format.MessageToDict(lmsg)
    except _DECODE_ERRORS as exc:
        errors.append(str(exc))
    raise LoadError(source=source, line=n, reason="bad_document",
                    detail="is not an OTLP protobuf trace or log export"
                    + (f" ({errors[0]})" if errors else " (no spans or log records)"),
                    fix=_FIX)


def documents(data: bytes, source: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(message number from 1, document) of a protobuf file; LoadError when it is none."""
    if not data:
        raise LoadError(source=source, line=None, reason="bad_document",
                        detail="is empty", fix=_FIX)
    chunks = [data] if data[:1] == b"\x0a" else _chunks(data)
    if chunks is None:
        raise LoadError(source=source, line=None, reason="bad_document",
                        detail="is neither one OTLP protobuf message nor length-prefixed ones",
                        fix=_FIX)
    docs = [(n, _decode(c, source, n)) for n, c in enumerate(chunks, start=1)]
    yield from docs
