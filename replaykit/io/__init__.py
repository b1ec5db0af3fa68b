"""Loaders: every supported log format into an :class:`~replaykit.EventLog`.

Each format module exposes ``FORMAT`` (its name), ``sniff(path) -> None | str`` (None when the
file looks like that format, otherwise the reason it does not) and a ``read_<format>`` loader.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa

from ..errors import (
    FormatDetectionError,
    LoadError,
    MissingTenantError,
    ReplayKitError,
    refuse_special_file,
    special_file_kind,
)
from ..eventlog.log import EventLog, concat
from ..schema import empty_events
from . import claude_code, codex, inspect, isplay, langfuse, langsmith, otel, phoenix, pleach, toh
from ._common import (
    Quarantine,
    SpecialFileWarning,
    compressed,
    expand_paths,
    require_tenant,
    unreadable,
)
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
    "Inputs",
    "SkippedFilesWarning",
    "UNTENANTED",
    "detect_format",
    "find_inputs",
    "is_dataset",
    "is_own_side_file",
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


#: side files replaykit itself writes beside or inside logs: never logs, never "unknown".
#: By name: a Parquet dataset's run index and quarantine (EventLog.to_parquet).
OWN_SIDE_FILES = ("_runs.parquet", "_quarantine.parquet", "_quarantine_no_tenant.parquet")
#: By content: a chain manifest (ChainManifest.to_json) or a replay result's manifest.json.
_OWN_JSON_MARKERS = (b'"replaykit_chain_manifest"', b'"format": "replaykit.',
                     b'"format":"replaykit.')


def is_own_side_file(path: str | os.PathLike[str]) -> bool:
    """True for a file replaykit writes that is not a log: a dataset's ``_runs.parquet`` /
    ``_quarantine*.parquet``, a provider cache (``ParquetCache``: Parquet with exactly the
    columns ``key`` and ``value``, e.g. the ``cache.parquet`` of ``generate cohorts``), a chain
    manifest, or a replay result folder's files (``manifest.json`` of format
    ``replaykit.replay/v1`` and what is written beside it).

    >>> is_own_side_file("ds/tenant_id=acme/_runs.parquet")
    True
    """
    p = Path(path)
    if p.name in OWN_SIDE_FILES:
        return True
    try:
        manifest = p.parent / "manifest.json"
        if p.name != manifest.name and manifest.is_file() and _own_json(manifest):
            return True  # events.parquet, metrics.json, ... of a replay result folder
        if p.suffix == ".parquet":
            import pyarrow.parquet as pq

            return sorted(pq.read_schema(p).names) == ["key", "value"]
        return p.suffix == ".json" and _own_json(p)
    except (OSError, ValueError, pa.ArrowException):
        return False


def _own_json(p: Path) -> bool:
    """A JSON file replaykit wrote: its marker sits in the first or last 4 KiB (a chain
    manifest's canonical JSON sorts its key last; a replay manifest starts with its format)."""
    with open(p, "rb") as fh:
        head = fh.read(4096)
        fh.seek(max(0, p.stat().st_size - 4096))
        tail = fh.read(4096)
    return any(m in head or m in tail for m in _OWN_JSON_MARKERS)


class SkippedFilesWarning(UserWarning):
    """Files found in a folder (or by a glob) that are of no known format, or unreadable,
    were skipped: ``files`` holds one :class:`LoadError` per file (its ``source``,
    ``reason`` -- ``unknown_format``, ``compressed`` or ``unreadable`` -- and why)."""

    def __init__(self, message: str, files: list[LoadError]) -> None:
        super().__init__(message)
        self.files = files


class Inputs(NamedTuple):
    """What :func:`find_inputs` found: ``paths`` to read (files and datasets, in order),
    the format of each file found by walking (named files are left to the reader), and the
    files skipped."""

    paths: list[Path]
    formats: dict[Path, str]
    skipped: list[LoadError]


def _why_not_a_log(f: Path, exc: FormatDetectionError) -> LoadError:
    """Why a file of no known format is not read: the OS will not read it (``unreadable``),
    it is compressed (``compressed``), or ``exc`` (no format recognised)."""
    try:
        with open(f, "rb") as fh:
            packed = compressed(str(f), fh.read(8))
    except OSError as os_exc:
        return unreadable(str(f), os_exc)
    return packed or exc


def _special_files(paths: Iterable[Path]) -> list[LoadError]:
    """One skipped-file error (reason ``special_file``) per FIFO, socket or device (or link to
    one) among ``paths``: never opened (reading one blocks or never ends), and counted and
    named with the other skipped files, never dropped silently."""
    out = []
    for f in paths:
        kind = special_file_kind(f)
        if kind is not None:
            out.append(LoadError(source=str(f), line=None, reason="special_file",
                                 detail=f"is {kind}, not a log file (skipped without opening it)",
                                 fix="Remove it from the folder, or name regular log files."))
    return out


def find_inputs(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> Inputs:
    """The one rule for naming inputs, in :func:`read_events` and the command line.

    * A file named explicitly is read as a log: its reader (or ``detect_format``) says what is
      wrong with it.
    * A folder is walked (every file under it), and so is every folder a glob matches; a
      Parquet dataset (:meth:`EventLog.to_parquet`) found on the way is read whole.
    * A walked file (or one a glob matched) is skipped when it is a side file: of a format
      (isplay branch / fixture files, toh override sidecars; read with the log beside them)
      or replaykit's own (:func:`is_own_side_file`). One of no known format, compressed or
      unreadable is skipped too, and is returned in ``skipped`` (one ``LoadError`` each) for
      the caller to count and name.

    >>> found = find_inputs("data/toh")  # doctest: +SKIP
    >>> len(found.paths), found.skipped  # doctest: +SKIP
    (3, [])

    Raises:
        FileNotFoundError: a path or glob matches nothing, or a folder holds no files.
    """
    import glob as _glob

    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    keep: list[Path] = []
    formats: dict[Path, str] = {}
    skipped: list[LoadError] = []
    seen: set[Path] = set()

    def add(f: Path) -> bool:
        key = f.resolve()
        if key in seen:
            return False
        seen.add(key)
        keep.append(f)
        return True

    for item in items:
        p = Path(item)
        refuse_special_file(p)  # a FIFO, socket or device named: say what it is, never open
        if is_dataset(p) or p.is_file():
            add(p)
            continue
        if p.is_dir():
            roots, files = [p], []
        else:
            matches = sorted(Path(m) for m in _glob.glob(str(item), recursive=True))
            if not matches:
                raise FileNotFoundError(f"{item}: no such file, directory or glob match")
            roots = [m for m in matches if m.is_dir()]
            files = [m for m in matches if m.is_file()]
            skipped += _special_files(matches)
        for root in roots:
            skipped += _special_files(root.rglob("*"))
            if is_dataset(root):
                add(root)
                continue
            inner = sorted(d for d in root.rglob("*") if d.is_dir() and is_dataset(d))
            inner = [d for d in inner if not any(o in d.parents for o in inner)]  # top-most
            for d in inner:
                add(d)
            files += sorted(f for f in root.rglob("*") if f.is_file()
                            and not any(o in f.parents for o in inner))
        before = (len(keep), len(skipped))
        for f in files:
            if f.resolve() in seen:
                continue
            if is_own_side_file(f) or any(
                    getattr(m, "is_side_file", lambda _p: False)(f) for m in FORMATS.values()):
                continue  # not a log: read with the log beside it, or replaykit's own
            try:
                name = detect_format(f)
            except FormatDetectionError as exc:
                skipped.append(_why_not_a_log(f, exc))
                continue
            except (OSError, ValueError, pa.ArrowException) as exc:  # sniffing cannot open it
                skipped.append(unreadable(str(f), exc if isinstance(exc, OSError)
                                          else OSError(str(exc))))
                continue
            if add(f):
                formats[f] = name
        if (len(keep), len(skipped)) == before and not files:
            raise FileNotFoundError(f"{item}: holds no files")
    return Inputs(keep, formats, skipped)


def skipped_message(skipped: list[LoadError], *, shown: int = 10) -> str:
    """One line naming the skipped files (the first ``shown``) and why."""
    names = [f"{e.source} ({e.reason})" for e in skipped[:shown]]
    more = f" and {len(skipped) - shown} more" if len(skipped) > shown else ""
    return (f"{len(skipped)} file(s) of no known format skipped: {', '.join(names)}{more}; "
            "name a file explicitly to see why it is not read")


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
    Files of different formats are loaded with their own loaders and concatenated. Which
    files are read follows the command line's rule (:func:`find_inputs`): a file named
    explicitly must be a log; in a folder (or a glob's matches), side files of a format
    (isplay branch or fixture files, toh override sidecars: picked up by that format's
    loader) and replaykit's own (a dataset's ``_runs.parquet``, a ``cache.parquet``, chain
    and replay manifests) are not logs, and files of no known format are skipped and
    counted: one :class:`SkippedFilesWarning` names them (its ``files``: one ``LoadError``
    each). Other keyword arguments go to the loaders (``errors=...``, ``progress=...``).

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

    With ``errors="quarantine"``, a named file that matches no format (empty, binary, another
    format) becomes one quarantine row (reason ``unknown_format``, the formats tried and why
    each rejected it) and the other files load.

    Raises:
        MissingTenantError: a :class:`LoadError` (reason ``missing_tenant``, naming the first
            such file; also a ``TypeError``) when files that record no tenant are read
            without ``owner=``.
        LoadError: a bad row under ``errors="raise"``.
        FormatDetectionError: (``errors="raise"``) a file named explicitly matches no format
            (says which formats were tried and why each was rejected).
        FileNotFoundError: a path or glob matches nothing, or a folder holds no files.
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
    found = find_inputs(path)
    special = [e for e in found.skipped if e.reason == "special_file"]
    other = [e for e in found.skipped if e.reason != "special_file"]
    if special:  # the readers' own warning for FIFOs, sockets and devices in a folder
        warnings.warn(SpecialFileWarning(
            f"skipped {len(special)} file(s) that are not regular files, without opening "
            "them (reading one would block or never end): "
            + "; ".join(f"{e.source} ({e.detail.removeprefix('is a ').split(',')[0]})"
                        for e in special[:20])
            + (f"; and {len(special) - 20} more" if len(special) > 20 else "")), stacklevel=2)
    if other:
        warnings.warn(SkippedFilesWarning(skipped_message(other), other), stacklevel=2)
    quarantine = Quarantine(kwargs.get("errors", "raise"))
    logs = []
    by_format: dict[str, list[Path]] = {}
    for f in found.paths:
        if is_dataset(f):
            from ..eventlog.dataset import read_parquet

            logs.append(read_parquet(f, tenant_id=tenant_id,
                                     errors=kwargs.get("errors", "raise")))
            continue
        if f not in found.formats and any(
                getattr(m, "is_side_file", lambda _p: False)(f) for m in FORMATS.values()):
            continue  # a format's side file named with its log: that loader reads it
        try:
            name = found.formats.get(f) or detect_format(f)
        except FormatDetectionError as exc:  # a named file: raised, or one quarantine row
            quarantine.bad(_why_not_a_log(f, exc))
            continue
        by_format.setdefault(name, []).append(f)
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
