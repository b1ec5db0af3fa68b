"""The command line's inputs: paths and globs expanded, logs read with the tenant options,
quarantined rows written."""

from __future__ import annotations

import argparse
import difflib
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ReplayKitError
from .files import atomic_write, check_input_path, terminal_safe
from .messages import cli_error_text

if TYPE_CHECKING:
    pass
from ._output import _EmptyAnswer, _progress, _UsageError

__all__ = []

# ---------------------------------------------------------------------------- loading
def _tenant_hint(wanted: str, present: Sequence[str]) -> str:
    listed = ", ".join(present) if present else "none"
    hint = f"tenants present: {listed}"
    folded = [t for t in present if t.casefold() == wanted.casefold()]
    near = folded or difflib.get_close_matches(wanted, list(present), n=1, cutoff=0.6)
    if near:
        hint += f"; did you mean --tenant {near[0]}?"
    return hint


def _expand_inputs(paths: Sequence[str], errors: str = "raise"
                   ) -> tuple[list[str | Path], list[dict[str, Any]]]:
    """Paths to read, plus one quarantine row per file found in a folder or by a glob that is
    of no known format or cannot be read, which is skipped (and counted), whatever ``errors``.

    The rule is :func:`replaykit.io.find_inputs`, the one ``read_events`` follows: a file
    named on the command line must be a log (the loaders say what is wrong with it, or
    quarantine it); a folder is walked, and so is every folder a glob matches; a Parquet
    dataset (``EventLog.to_parquet``) is read whole; side files (a format's, replaykit's own)
    are not logs.
    """
    from ..io import find_inputs

    del errors  # walked files of no known format are skipped under both error modes
    for item in paths:
        check_input_path(item)
    found = find_inputs(list(paths))
    named = {Path(item): item for item in paths}  # a named path as the user wrote it
    keep: list[str | Path] = [named.get(f, f) for f in found.paths]
    skipped = [{**err.as_record(), "raw": None} for err in found.skipped]
    return keep, skipped


#: Python warnings of the loaders that the command line says in its own words (or counts).
_DROPPED_ALL = "dropped all"


def _read(paths: Sequence[str | Path], fmt: str, tenant: str | None, *,
          owner: str | None = None, errors: str = "raise", progress: bool | None = None,
          dropped: list[int] | None = None, summary: bool = False) -> Any:
    """Read ``paths``; ``owner`` names the tenant of logs that record none, ``tenant``
    filters. The rows the filter leaves out are added to ``dropped`` (one number).

    ``summary``: only the runs table and summary line will be asked of the log, so pleach
    JSONL/Parquet files (only those, with the native core) are read by
    :func:`~replaykit.io.pleach._summary.read_pleach_runs`: the same rows, checks, quarantine
    and counts, without building the events table."""
    import re

    from ..eventlog.dataset import read_parquet
    from ..io import read_events

    if fmt == "parquet":
        logs = [read_parquet(p, tenant_id=tenant) for p in paths]
        from ..eventlog.log import concat

        return logs[0] if len(logs) == 1 else concat(logs)
    one = paths[0] if len(paths) == 1 else list(paths)
    kwargs: dict[str, Any] = {"errors": errors, "progress": progress}
    if owner is not None:
        kwargs["owner"] = owner
    if tenant is not None:
        kwargs["tenant_id"] = tenant
    files = None
    log: Any
    if summary and owner is None:
        files = _pleach_only(list(paths), fmt)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if files is not None:
            from ..io.pleach import read_pleach_runs

            # (read_events would also warn of files a --tenant filter emptied: the command
            # line does not print that warning)
            log = read_pleach_runs(files, **kwargs)
        else:
            log = read_events(one, format=fmt, **kwargs)
    n_dropped = 0
    counts = log.extras.get("pleach_counts")
    if tenant is not None and counts is not None and "filtered_out" in counts.column_names:
        n_dropped += sum(v or 0 for v in counts.column("filtered_out").to_pylist())
    for w in caught:
        text = str(w.message)
        if _DROPPED_ALL in text:
            m = re.search(r"dropped all ([\d,]+) rows of the \w+ logs owned by", text)
            if m:  # a whole untenanted log of another owner (pleach files are counted above)
                n_dropped += int(m.group(1).replace(",", ""))
            continue
        _note(cli_error_text(Exception(text)), kind="warning")
    if dropped is not None:
        dropped.append(n_dropped)
    return log


def _pleach_only(paths: list[str | Path], fmt: str) -> list[Path] | None:
    """The pleach files ``read_events(paths, format=fmt)`` would hand to ``read_pleach`` (in
    its order) when it would read nothing else, and the native core is on (the summary
    path's condition); None otherwise, or when unsure (the full read then decides)."""
    import pyarrow as pa

    from .._base import native as _native
    from ..io import _PATTERNS as patterns
    from ..io import FORMATS, detect_format, is_dataset
    from ..io._common import expand_paths
    from ..io.pleach import _PATTERNS as pleach_patterns
    from ..io.pleach import FORMAT

    if not _native.enabled() or fmt not in ("auto", FORMAT):
        return None
    try:
        if fmt == FORMAT:
            return expand_paths(list(paths), patterns=pleach_patterns)
        if any(is_dataset(p) for p in paths):
            return None
        files = []
        for f in expand_paths(list(paths), patterns=patterns):
            if any(getattr(m, "is_side_file", lambda _p: False)(f) for m in FORMATS.values()):
                continue
            if detect_format(f) != FORMAT:
                return None
            files.append(f)
        return files or None
    except (ReplayKitError, OSError, ValueError, pa.ArrowException):
        return None


def _note(text: str, *, kind: str = "note") -> None:
    """One line on stderr: ``replaykit: warning: ...`` (never Python's file:line form)."""
    print(f"replaykit: {kind}: {terminal_safe(text)}", file=sys.stderr)


def _load(args: argparse.Namespace, paths: Sequence[str], *, errors: str = "raise",
          summary: bool = False) -> tuple[Any, list[dict[str, Any]]]:
    """Load ``paths`` the command line's way; a --tenant matching nothing is an empty answer.
    Sets ``args.dropped_rows``: the rows the --tenant filter left out. ``summary``: see
    :func:`_read` (the log may then be a ``RunSummary``, not an EventLog)."""
    keep, skipped = _expand_inputs(paths, errors)
    if not keep:
        empty = _EmptyAnswer(f"none of the {len(skipped)} input file(s) is a log replaykit "
                             "reads (--quarantine-out FILE says why)")
        empty.skipped = skipped  # type: ignore[attr-defined]
        raise empty
    owner = getattr(args, "owner", None)
    dropped: list[int] = []
    log = _read(keep, args.format, args.tenant, owner=owner, errors=errors,
                progress=_progress(args), dropped=dropped, summary=summary)
    args.dropped_rows = sum(dropped)
    if args.tenant is not None and len(log) == 0 and log.num_runs == 0:
        everything = _read(keep, args.format, None, owner=owner,
                           errors="quarantine", progress=False, summary=summary) \
            if owner is not None or _all_tenanted(keep) else None
        present = everything.tenants if everything is not None else []
        raise _EmptyAnswer(f"no events of tenant {args.tenant!r} in the input; "
                           + _tenant_hint(args.tenant, present))
    return log, skipped


def _input_files(paths: Sequence[str]) -> list[Path]:
    """The existing files and folders ``paths`` name (globs expanded): what a command's
    output may not be."""
    import glob as _glob

    out: list[Path] = []
    for item in paths:
        p = Path(item)
        out.extend([p] if p.exists() else [Path(m) for m in _glob.glob(str(item),
                                                                       recursive=True)])
    found: list[Path] = []
    for p in out:
        found.append(p)
        if p.is_dir():
            found.extend(f for f in p.rglob("*") if f.is_file())
    return found


def _all_tenanted(paths: Sequence[str | Path]) -> bool:
    """True when every input carries its own tenants (so it can be read without --tenant)."""
    from ..io import _PATTERNS as patterns
    from ..io import UNTENANTED, detect_format, is_dataset
    from ..io._common import expand_paths

    for item in paths:
        if is_dataset(item):
            continue
        for f in expand_paths(item, patterns=patterns):
            try:
                if detect_format(f) in UNTENANTED:
                    return False
            except (ReplayKitError, OSError):
                return False
    return True


def _write_quarantine(table: Any, out: str) -> None:
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    p = Path(out)
    if p.suffix == ".parquet":
        atomic_write(p, lambda tmp: pq.write_table(table, tmp))
    elif p.suffix == ".csv":
        atomic_write(p, lambda tmp: pcsv.write_csv(table, tmp))
    else:
        raise _UsageError(f"--quarantine-out {out}: name a .parquet or a .csv file")
