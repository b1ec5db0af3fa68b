"""Loaders: every supported log format into an :class:`~replaykit.EventLog`.

Each format module exposes ``FORMAT`` (its name), ``sniff(path) -> None | str`` (None when the
file looks like that format, otherwise the reason it does not) and a ``read_<format>`` loader.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import FormatDetectionError
from ..eventlog import EventLog, concat
from ..schema import empty_events
from . import inspect, isplay, otel, pleach, toh
from ._common import Quarantine, expand_paths
from .inspect import read_inspect
from .isplay import read_isplay
from .otel import read_otel
from .pleach import read_pleach
from .toh import read_toh

__all__ = [
    "FORMATS",
    "detect_format",
    "is_dataset",
    "read_events",
    "read_inspect",
    "read_isplay",
    "read_otel",
    "read_pleach",
    "read_toh",
]

#: format name -> module, in the order read_events tries them.
FORMATS = {"toh": toh, "pleach": pleach, "isplay": isplay, "inspect": inspect, "otel": otel}

_PATTERNS = ("*.jsonl", "*.json", "*.parquet", "*.ndjson", "*.eval")


def is_dataset(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a directory written by :meth:`EventLog.to_parquet`."""
    p = Path(path)
    return p.is_dir() and ((p / "_runs.parquet").exists()
                           or any(d.is_dir() for d in p.glob("tenant_id=*")))


def detect_format(path: str | os.PathLike[str]) -> str:
    """The name of the format ``path`` (one file) is in.

    Raises:
        FormatDetectionError: no format accepts the file; the error lists, for each format
            tried, why it was rejected.
    """
    p = Path(path)
    attempts: dict[str, str] = {}
    for name, module in FORMATS.items():
        why = module.sniff(p)
        if why is None:
            return name
        attempts[name] = why
    raise FormatDetectionError(source=str(p), attempts=attempts)


def read_events(
    path: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    format: str = "auto",
    **kwargs: Any,
) -> EventLog:
    """Load logs of any supported format; with ``format="auto"`` each file's format is sniffed.

    ``path`` may be a file, a directory (searched recursively), a glob or a list of those.
    Keyword arguments go to the format's loader (``tenant_id=...``, ``errors=...``,
    ``progress=...``). Files of different formats are loaded with their own loaders and
    concatenated. Files that are side files of a format (isplay branch or fixture files, toh
    override sidecars) are picked up by that format's loader, not read as logs.

    A directory written by :meth:`EventLog.to_parquet` (``tenant_id=<id>/`` folders or a
    ``_runs.parquet``) is read back with :func:`~replaykit.read_parquet` (``tenant_id=``
    filters it; other loader options do not apply).

    >>> log = read_events("data/", tenant_id="demo")  # doctest: +SKIP

    With ``errors="quarantine"``, a file that matches no format (empty, binary, another
    format) becomes one quarantine row (reason ``unknown_format``, the formats tried and why
    each rejected it) and the other files load.

    Raises:
        FormatDetectionError: (``errors="raise"``) a file matches no format (says which
            formats were tried and why each was rejected).
        ValueError: ``format`` is not ``"auto"`` or a name in :data:`FORMATS`.
    """
    if format != "auto":
        if format not in FORMATS:
            raise ValueError(f"format must be 'auto' or one of {sorted(FORMATS)}, got {format!r}")
        return getattr(FORMATS[format], f"read_{format}")(path, **kwargs)
    given = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    flags = [is_dataset(p) for p in given]
    datasets = [p for p, f in zip(given, flags, strict=True) if f]
    if datasets:
        from ..eventlog import read_parquet

        rest = [p for p, f in zip(given, flags, strict=True) if not f]
        tenant = kwargs.get("tenant_id")
        logs = [read_parquet(p, tenant_id=tenant) for p in datasets]
        return concat([*logs, read_events(rest, **kwargs)] if rest else logs)
    files = expand_paths(path, patterns=_PATTERNS)
    quarantine = Quarantine(kwargs.get("errors", "raise"))
    by_format: dict[str, list[Path]] = {}
    for f in files:
        if any(getattr(m, "is_side_file", lambda _p: False)(f) for m in FORMATS.values()):
            continue
        try:
            by_format.setdefault(detect_format(f), []).append(f)
        except FormatDetectionError as exc:  # raised under "raise"; one row under quarantine
            quarantine.bad(exc)
    logs = [
        getattr(FORMATS[name], f"read_{name}")(paths, **_kwargs_for(name, kwargs))
        for name, paths in by_format.items()
    ]
    if len(quarantine):
        logs.append(EventLog(empty_events(), quarantine=quarantine.table()))
    return concat(logs)


def _kwargs_for(name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    # pleach rows carry their own tenant: tenant_id there is a filter, which is what the
    # caller of read_events(..., tenant_id=...) means for them too.
    return dict(kwargs)
