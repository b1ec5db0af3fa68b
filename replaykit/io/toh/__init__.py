"""Loader for toh session logs (the agent harness's persisted ``session.jsonl`` files).

A toh log is JSONL: line 1 is the session header (``{"type": "session", "id", "createdAt", ...}``),
every other line is one event ``{"type", "data", ...}`` or a *packed row* (``text-chunks``,
``reasoning-chunks``, ``tool-call-chunks``) that stands for one ``assistant/chunk`` event per
member. A scenario folder holds the primary ``session.jsonl`` plus ``session.N.jsonl`` subagent
children linked to it through ``parentSession``; ``session.expected.jsonl`` files are logs too;
``replay.override.json`` sidecars are side files, not logs.

The field-by-field mapping to the canonical schema is documented in ``docs/formats.md``.

How a file is read: packed rows and event lines of the frequent simple shapes (step and turn
start/end, ``request/header``, block/usage/finish chunks), written in the harness's layout, are
found by their byte prefix and *proven* column-wise: Arrow's JSON reader parses them, and a
line counts as proven only when it is byte for byte the JSON rebuilt from the parsed values
(so it is valid JSON with exactly the expected keys and value types); their canonical payloads
and typed fields are then written column-wise. Packed rows are proven on a second thread while
this one decodes the other lines (orjson); then all lines are checked in order, proven ones
only for the file's envelope mode. Every line not proven is read row-wise (decoded, checked,
its few typed fields picked), exactly as before: the column-wise reading gives the same
table, runs and quarantine (``tests/io/test_toh_columnwise.py``; ``_lines.COLUMNWISE = False``
reads every line row-wise). Sequence numbers, packed-row expansion, model-call ids,
inheritance and joins are numpy/Arrow column operations over all files at once.

With the native core (``replaykit._core``, ``_nativepath``), a file is first scanned whole in
Rust (the same checks, payloads, fields, packed members, seqs and model-call ids); a file of
which the reference would quarantine any line is refused there and read as above, so the
result is the same either way (``tests/test_toh_native.py``; ``REPLAYKIT_NATIVE=0`` reads
every file as above).

The package, one story per module: ``_shapes`` (constants, the gathered columns, a file's
context), ``_lines`` (reading a file: candidates, proofs, the line-by-line checks), ``_events``
(one event line's typed fields), ``_packed`` (packed rows proven and expanded column-wise),
``_templates`` (simple event lines proven column-wise), ``_nativepath`` (a file read by the
native core) and ``_assemble`` (the table of all files, column-wise); this module holds the
public entry points and re-exports every name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..._base import native as _native
from ..._base.json import JSONDecodeError, gc_paused, loads
from ...eventlog.log import EventLog
from .._common import (
    ErrorPolicy,
    Progress,
    Quarantine,
    expand_paths,
    keep_tenants,
    owner_and_filter,
)
from ._assemble import (  # noqa: F401 (the old module's names, re-exported)
    _assemble,
    _call_ids,
    _fill_tool_result_names,
    _run_ids,
    _runs_table,
)
from ._events import (  # noqa: F401 (the old module's names, re-exported)
    _decode_event,
    _int_or_none,
    _str_or_none,
    _text_parts,
    _tokens_ok,
    _tool_result_fields,
)
from ._lines import (  # noqa: F401 (the old module's names, re-exported)
    _add_packed,
    _bad_json,
    _check_header,
    _dump,
    _mixed,
    _packed_problem,
    _read_file,
)
from ._packed import (  # noqa: F401 (the old module's names, re-exported)
    _ESCAPES,
    _NEEDS_ESCAPE,
    _json_strings,
    _member_payloads,
)
from ._shapes import (  # noqa: F401 (the old module's names, re-exported)
    _CHUNK_OF_CODE,
    _I32_MAX,
    _I32_MIN,
    _INT32,
    _NO_RARE,
    _PACKED,
    _PACKED_TOP,
    _PATTERNS,
    _RARE_FIELDS,
    _ROW_FIELDS,
    _SIDE_FILES,
    CHUNK_TYPES,
    FORMAT,
    KIND_OF_TYPE,
    OrphanRunWarning,
    _FileCtx,
    _Rows,
)

__all__ = ["FORMAT", "OrphanRunWarning", "is_side_file", "read_toh", "sniff"]


def is_side_file(path: str | os.PathLike[str]) -> bool:
    """True for toh side files that are not logs (``replay.override.json`` sidecars).

    >>> is_side_file("scenario/replay.override.json"), is_side_file("scenario/session.jsonl")
    (True, False)
    """
    return Path(path).name in _SIDE_FILES


def sniff(path: Path) -> str | None:
    """None when ``path`` looks like a toh log (first line is a session header), else why not.

    Reads at most the first megabyte of the file; never raises for unreadable content.
    """
    p = Path(path)
    if is_side_file(p):
        return "a replay.override.json sidecar is a toh side file, not a log"
    try:
        with open(p, "rb") as fh:
            head = fh.readline(1 << 20)
            if head.startswith(b"\xef\xbb\xbf"):
                head = head[3:]
            while head and not head.strip():
                head = fh.readline(1 << 20)
    except OSError as exc:
        return f"cannot read the file ({exc})"
    if not head:
        return "the file is empty"
    try:
        obj = loads(head)
    except JSONDecodeError:
        if re.match(rb'\s*\{\s*"type"\s*:\s*"session"', head):
            return None
        return "line 1 is not a JSON object"
    if not isinstance(obj, dict):
        return "line 1 is not a JSON object"
    if obj.get("type") != "session":
        return f"line 1 is not a session header (type={obj.get('type')!r}, expected 'session')"
    if not isinstance(obj.get("id"), str):
        return "line 1 is a session header without a string 'id'"
    return None


def read_toh(
    path: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    owner: str | None = None,
    tenant_id: str | Sequence[str] | None = None,
    errors: ErrorPolicy = "raise",
    progress: bool | None = None,
    threads: int | None = None,
) -> EventLog:
    """Load toh session logs into an :class:`~replaykit.EventLog`.

    ``path`` is a ``session*.jsonl`` file, a scenario folder (the primary log plus its
    ``session.N.jsonl`` children), a tree of scenarios (searched recursively for ``*.jsonl``),
    a glob, or a list of those. ``replay.override.json`` sidecars are skipped.

    Rules (details in docs/formats.md):

    * line 1 is the session header: ``run_id`` = its ``id`` (qualified as
      ``"<id>@<relative path>"`` when several loaded files share one id, as test snapshots
      do), ``parent_run_id`` = the run of its ``parentSession`` (resolved in the same folder
      first); the header goes to ``log.runs`` (``createdAt`` -> ``created_at``, every other
      field as JSON in ``attrs``);
    * ``seq`` = the line's own ``seq`` (packed rows: ``seq0`` + member index) when present,
      else the implicit counter: 0 after the header, advancing by the number of events each
      line decodes to (a quarantined line keeps its slots so later numbers do not shift);
    * packed rows expand to one ``assistant/chunk`` event per member, strictly validated;
    * events of a fork child with ``seq < seedLength`` get ``inherited=True``;
    * a model call's rows share ``ref_id = "t{turn}.s{step}.c{k}"`` (k-th call of that step;
      a call ends with its ``finish`` chunk); ``assistant/message`` gets the id of the call it
      closes; tool calls/results get ``ref_id`` = ``callId``.

    Args:
        path: file(s), folder(s) or glob(s).
        owner: owner of these logs (toh logs carry none; never invented).
        tenant_id: keep only these tenants' rows (one id or a list; None: all), as
            in every reader: the rows are all ``owner``'s, so all of them or none.
        errors: ``"raise"`` stops at the first bad line with :class:`LoadError`;
            ``"quarantine"`` puts each bad line in ``log.quarantine`` with its reason
            (a file-level problem such as an empty file is one row with ``line`` null).
        progress: show a progress bar over bytes (None: only in terminals/notebooks).
        threads: scan on at most this many threads (None: every core the process may use,
            capped by ``REPLAYKIT_THREADS``; see ``replaykit._base.native.threads``). The result
            is the same on any count.

    Returns:
        The events, sorted by (tenant_id, run_id, seq), with ``runs`` holding one row per
        loaded header.

    Raises:
        LoadError: ``reason="bad_tenant"``: ``owner`` is missing (also when only
            ``tenant_id=`` is given) or an id breaks the tenant-id rule
            (:mod:`replaykit.tenancy`).
        ValueError: ``errors`` is not "raise" or "quarantine".
        SettingError: ``threads`` or ``REPLAYKIT_THREADS`` is not a whole number >= 1.
        FileNotFoundError: a path matches nothing.
        LoadError: (``errors="raise"``) a bad line: truncated JSON, invalid UTF-8, a line that
            is not an object, a missing/invalid header, a bad packed row, a bad or duplicate
            ``seq``, an empty file.

    Warns:
        OrphanRunWarning: a child log's ``parentSession`` is not among the loaded logs.

    Example:
        >>> import replaykit as rk
        >>> log = rk.read_toh("data/toh", owner="demo")  # doctest: +SKIP
        >>> log.calls_df()[["run_id", "turn", "step", "finish", "finished"]]  # doctest: +SKIP
    """
    tenant, wanted = owner_and_filter(owner, tenant_id, fmt=FORMAT)
    q = Quarantine(errors, tenant_id=tenant)
    files = [f for f in expand_paths(path, patterns=_PATTERNS) if not is_side_file(f)]
    acc = _Rows()
    ctxs = [_FileCtx(i, f, q) for i, f in enumerate(files)]
    total = sum(f.stat().st_size for f in files)
    # Decoding creates millions of short-lived containers; the cyclic GC would rescan them
    # over and over (about a third of the load time) while none of them can form a cycle.
    with _native.using_threads(threads), gc_paused(), \
            Progress(total, desc="toh", unit="B", enabled=progress) as prog:
        for i, ctx in enumerate(ctxs, start=1):
            prog.next_file(ctx.path.name, i, len(ctxs))
            _read_file(ctx, acc, prog)
        # every file read by the native scan (it checks each file's bytes are UTF-8; every
        # text column is made of them or written by it or by Python): the table's UTF-8 pass
        # is left out (tests/io/test_pleach_native_utf8.py)
        text_checked = bool(acc.n_parts) and not (acc.rows or acc.p_meta or acc.phantoms
                                                   or acc.p_cols or acc.r_cols)
        table, runs = _assemble(ctxs, acc, tenant, q)
    log = EventLog._loaded(table, runs=runs, quarantine=q.table(runs), extras=None,
                           text_checked=text_checked, sort=True)
    return keep_tenants(log, tenant, wanted)
