"""The native OTLP/JSON path: a file's documents decoded by the Rust core
(``replaykit._core.scan_otlp_json``, ``native/src/otlp.rs``) into span and log records of
the reference's shape, or handed back to the reference one document at a time.

The core validates each document (UTF-8, strict JSON, depth) and walks the OTLP envelope
with the GIL released, writing every span and log record as :func:`._decode._span_record` /
:func:`._decode._log_record` build them (ids lower-cased hex, times as integers, attributes
as one object, span kinds by name) as compact JSON text, which is decoded here in one call
per document. It declines every document the reference would quarantine (and a few more
shapes it does not decide: snake_case fields, base64 ids, integers beyond 18 digits ...);
those are read by the reference, which reports what is wrong with them. The mapping from
records to events (``_view``, ``_build``) is the reference's for both paths.

``REPLAYKIT_NATIVE=0`` (or :data:`NATIVE` = False) reads every document with the reference.
"""

from __future__ import annotations

from typing import Any

from ..._base import native as _native

try:
    import orjson as _json_module
except ImportError:  # pragma: no cover - orjson is a dependency
    import json as _json_module  # type: ignore[no-redef]

#: decode documents with the native core when it is built and enabled (False: reference)
NATIVE = True


class Records:
    """A document's span and log records as the native core decoded them."""

    __slots__ = ("logs", "spans")

    def __init__(self, text: bytes) -> None:
        self.spans, self.logs = _json_module.loads(text)


def use_native() -> bool:
    """True when documents are to be decoded by the native core (built, enabled, NATIVE)."""
    return NATIVE and _native.enabled()


def native_documents(data: bytes, lines: bool) -> list[tuple[int, int, int, Any]] | None:
    """``(line, start, end, records)`` of every document of a file's bytes (``lines``: one
    per non-blank line, else the whole file): ``records`` is a :class:`Records`, or None
    when the reference must read ``data[start:end]``. None: the core is off (or failed)."""
    if not NATIVE or not _native.enabled():
        return None
    got = _native.core().scan_otlp_json(data, lines)
    if got is None:
        return None
    return [(line, a, b, None if text is None else Records(text))
            for line, a, b, text in got]
