"""Loaders: every supported log format into an :class:`~replaykit.EventLog`.

Each format module exposes ``FORMAT`` (its name), ``sniff(path) -> None | str`` (None when the
file looks like that format, otherwise the reason it does not) and a ``read_<format>`` loader.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..errors import (
    FormatDetectionError,
    MissingTenantError,
    ReplayKitError,
)
from ..eventlog.log import EventLog, concat
from ..schema import empty_events
from . import claude_code, codex, inspect, isplay, langfuse, langsmith, otel, phoenix, pleach, toh
from ._common import Quarantine, compressed, expand_paths, require_tenant, unreadable
from ._platform import DuplicateRecordWarning
from .claude_code import read_claude_code
from .codex import read_codex
from .inspect import read_inspect
from .isplay import read_isplay
from .langfuse import read_langfuse
from .langsmith import read_langsmith
from .otel import read_otel
from .phoenix import read_phoenix
from .pleach import read_pleach
from .toh import read_toh

__all__ = [
    "FORMATS",
    "DuplicateRecordWarning",
    "UNTENANTED",
    "detect_format",
    "is_dataset",
    "read_claude_code",
    "read_codex",
    "read_events",
    "read_inspect",
    "read_isplay",
    "read_langfuse",
    "read_langsmith",
    "read_otel",
    "read_phoenix",
    "read_pleach",
    "read_toh",
]

#: format name -> module, in the order read_events tries them.
FORMATS = {"toh": toh, "pleach": pleach, "isplay": isplay, "inspect": inspect, "otel": otel,
           "claude_code": claude_code, "codex": codex, "langsmith": langsmith,
           "langfuse": langfuse, "phoenix": phoenix}

_PATTERNS = ("*.jsonl", "*.json", "*.parquet", "*.ndjson", "*.eval", "*.csv",
             *(f"*{x}" for x in otel.PROTO_SUFFIXES))


def is_dataset(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a directory written by :meth:`EventLog.to_parquet`."""
    p = Path(path)
    return p.is_dir() and ((p / "_runs.parquet").exists()
                           or (p / "_quarantine_no_tenant.parquet").exists()
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


#: formats whose logs record no tenant: their rows get the owner the caller names.
UNTENANTED = ("toh", "isplay", "inspect", "otel", "claude_code", "codex", "langsmith",
              "langfuse", "phoenix")


def read_events(
    path: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    format: str = "auto",
    *,
    owner: str | None = None,
    tenant_id: str | Sequence[str] | None = None,
    **kwargs: Any,
) -> EventLog:
    """Load logs of any supported format; with ``format="auto"`` each file's format is sniffed.

    ``path`` may be a file, a directory (searched recursively), a glob or a list of those.
    Files of different formats are loaded with their own loaders and concatenated. Files that
    are side files of a format (isplay branch or fixture files, toh override sidecars) are
    picked up by that format's loader, not read as logs. Other keyword arguments go to the
    loaders (``errors=...``, ``progress=...``).

    Two tenant arguments, two meanings:

    * ``owner=`` names the tenant of the formats that record none (toh, isplay, inspect,
      otel, claude_code, codex, langsmith, langfuse, phoenix): every row of those files gets
      it. It is never guessed; pleach rows, which carry their own tenant, are not touched
      by it.
    * ``tenant_id=`` *filters* (one id or a list): only those tenants' rows are kept, in
      every format. A filter that drops every row of a file warns with the file, its row
      count and the tenants it does hold.

    A directory written by :meth:`EventLog.to_parquet` (``tenant_id=<id>/`` folders or a
    ``_runs.parquet``) is read back with :func:`~replaykit.read_parquet` (``tenant_id=``
    filters it and scopes its quarantine, ``errors=`` applies to its partition checks;
    other loader options do not apply).

    >>> log = read_events("data/", owner="demo")  # doctest: +SKIP
    >>> acme = read_events("data/pleach", tenant_id="acme")  # doctest: +SKIP

    With ``errors="quarantine"``, a file that matches no format (empty, binary, another
    format) becomes one quarantine row (reason ``unknown_format``, the formats tried and why
    each rejected it) and the other files load.

    Raises:
        MissingTenantError: a :class:`LoadError` (reason ``missing_tenant``, naming the first
            such file; also a ``TypeError``) when files that record no tenant are read
            without ``owner=``.
        LoadError: a bad row under ``errors="raise"``.
        FormatDetectionError: (``errors="raise"``) a file matches no format (says which
            formats were tried and why each was rejected).
        ValueError: ``format`` is not ``"auto"`` or a name in :data:`FORMATS`.
        LoadError: ``reason="bad_tenant"``: a format without tenants and no (or a bad)
            ``tenant_id``; the loaders' and read_parquet's own errors.
    """
    if owner is not None:
        require_tenant(owner, fmt="toh")  # the one tenant-id rule, before any file is read
    if format != "auto":
        if format not in FORMATS:
            raise ValueError(f"format must be 'auto' or one of {sorted(FORMATS)}, got {format!r}")
        named = [path] if isinstance(path, (str, os.PathLike)) else list(path)
        return _read_format(format, named, owner, tenant_id, kwargs)
    given = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    flags = [is_dataset(p) for p in given]
    datasets = [p for p, f in zip(given, flags, strict=True) if f]
    if datasets:
        from ..eventlog.dataset import read_parquet

        rest = [p for p, f in zip(given, flags, strict=True) if not f]
        errors = kwargs.get("errors", "raise")
        logs = [read_parquet(p, tenant_id=tenant_id, errors=errors) for p in datasets]
        if rest:
            logs.append(read_events(rest, owner=owner, tenant_id=tenant_id, **kwargs))
        return concat(logs)
    files = expand_paths(path, patterns=_PATTERNS)
    quarantine = Quarantine(kwargs.get("errors", "raise"))
    by_format: dict[str, list[Path]] = {}
    for f in files:
        if any(getattr(m, "is_side_file", lambda _p: False)(f) for m in FORMATS.values()):
            continue
        try:
            by_format.setdefault(detect_format(f), []).append(f)
        except FormatDetectionError as exc:  # raised under "raise"; one row under quarantine
            try:  # a file the OS will not read, or a compressed one: say so
                with open(f, "rb") as fh:
                    packed_err = compressed(str(f), fh.read(8))
            except OSError as os_exc:
                quarantine.bad(unreadable(str(f), os_exc))
                continue
            quarantine.bad(packed_err or exc)
    logs = []
    for name, paths in by_format.items():  # a loop, not a comprehension: warnings' stacklevel
        logs.append(_read_format(name, paths, owner, tenant_id, kwargs))
    if len(quarantine):
        logs.append(EventLog(empty_events(), quarantine=quarantine.table()))
    return concat(logs)


def _read_format(name: str, paths: list[Any], owner: str | None,
                 tenant_id: str | Sequence[str] | None, kwargs: dict[str, Any]) -> EventLog:
    """One format's files with the owner / filter split of :func:`read_events`."""
    loader = getattr(FORMATS[name], f"read_{name}")
    if name not in UNTENANTED:
        log = loader(paths, tenant_id=tenant_id, **kwargs) if tenant_id is not None \
            else loader(paths, **kwargs)
        _warn_emptied_files(log, tenant_id)
        return log
    if owner is None:
        first = expand_paths(paths, patterns=_PATTERNS)[0] if paths else "<no files>"
        given = "" if tenant_id is None else (
            f" (tenant_id={tenant_id!r} filters rows by tenant; it never names an owner)")
        raise MissingTenantError(
            source=str(first), line=None, reason="missing_tenant",
            detail=f"is a {name} log, which records no tenant, and no owner was named{given}",
            fix=f"Name the owner: read_events(path, owner='ID') or "
                f"read_{name}(path, owner='ID'); a tenant id is never guessed.")
    log = loader(paths, owner=owner, **kwargs)
    if tenant_id is not None:
        wanted = [tenant_id] if isinstance(tenant_id, str) else list(tenant_id)
        if owner not in wanted:
            if len(log):
                warnings.warn(
                    f"tenant_id={tenant_id!r} dropped all {len(log):,} rows of the {name} "
                    f"logs owned by {owner!r}", UserWarning, stacklevel=3)
            log = log.filter(tenant_id=wanted)
    return log


def _warn_emptied_files(log: EventLog, tenant_id: str | Sequence[str] | None) -> None:
    """Warn for each file whose rows a tenant filter dropped, all of them."""
    counts = log.extras.get("pleach_counts")
    if tenant_id is None or counts is None:
        return
    for row in counts.to_pylist():  # one row per file
        if row["input_rows"] and row["filtered_out"] == row["input_rows"]:
            src = str(row["source"]).split(":", 1)[-1]
            try:
                held = pleach.read_pleach(src, errors="quarantine", progress=False).tenants
            except (ReplayKitError, OSError):  # only to name the tenants in a warning
                held = []
            warnings.warn(
                f"tenant_id={tenant_id!r} dropped all {row['input_rows']:,} rows of {src} "
                f"(its tenants: {', '.join(held) or 'unknown'})", UserWarning, stacklevel=4)
