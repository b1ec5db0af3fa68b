"""Loader for isplay run exports, plus their branch, intervention and fixture side files.

isplay is a branch-and-replay CLI for agent runs. replaykit reads four JSON documents, each
tagged by a top-level ``"format"`` (field-by-field description: ``docs/formats.md``):

* ``isplay.run/v1`` -- one recorded run: ``run`` metadata, ``checkpoints`` and ``events``.
  A ``.json`` file holds one run (pretty-printed or not); a ``.jsonl``/``.ndjson`` file holds
  one run document per line. :func:`read_isplay` loads them into an :class:`~replaykit.EventLog`.
* ``isplay.branch/v1`` -- a branch from a checkpoint of a base run, with its interventions.
* ``isplay.fixtures/v1`` -- recorded or authored tool outputs used by replay.

Branch and fixture files are *side files* (:func:`is_side_file`): ``read_events`` skips them
when it scans a folder for logs. This loader only parses them (:func:`read_side_document`);
what they mean belongs to the branch layer, which checks them against its vocabulary and builds
its values: :func:`replaykit.read_isplay_branch` returns a
:class:`~replaykit.branch.types.IsplayBranch`, :func:`replaykit.read_isplay_fixtures` one row
per fixture (:mod:`replaykit.branch.types`, :mod:`replaykit.branch.fixtures`,
:mod:`replaykit.branch.vocab`).
"""

from __future__ import annotations

import os
from pathlib import Path

from ...eventlog.log import EventLog
from .._common import (
    ErrorPolicy,
    Paths,
    Progress,
    Quarantine,
    Tenants,
    expand_paths,
    keep_tenants,
    owner_and_filter,
)
from ._build import CHECKPOINTS_SCHEMA, TYPE_KINDS, _build
from ._documents import _read_file, _Runs, read_side_document
from ._format import (
    _PATTERNS,
    BRANCH_FORMAT,
    FIXTURES_FORMAT,
    FORMAT,
    RUN_FORMAT,
    is_side_file,
    sniff,
)

__all__ = [
    "BRANCH_FORMAT",
    "CHECKPOINTS_SCHEMA",
    "FIXTURES_FORMAT",
    "FORMAT",
    "RUN_FORMAT",
    "TYPE_KINDS",
    "is_side_file",
    "read_isplay",
    "read_side_document",
    "sniff",
]


def read_isplay(path: Paths, *, owner: str | None = None, tenant_id: Tenants = None,
                errors: ErrorPolicy = "raise", progress: bool | None = None) -> EventLog:
    """Load isplay run exports (``isplay.run/v1``) into an :class:`~replaykit.EventLog`.

    ``path`` is a file, a folder (searched recursively for ``*.json``/``*.jsonl``/``*.ndjson``;
    branch and fixture side files are skipped), a glob, or a list of those. A ``.json`` file
    holds one run document; a ``.jsonl``/``.ndjson`` file holds one run document per line.

    Mapping (details in docs/formats.md): run_id = ``run.runId``, parent_run_id =
    ``run.parentRunId``; seq = the event's ``seq`` when given, else its 0-based position in
    ``events``; event_id = ``eventId``; ref_id = ``modelCallId`` on model events,
    ``checkpointId`` on checkpoint events, else ``refId`` (the tool call id on tool events);
    args_hash = :func:`replaykit._base.json.args_hash` of ``args`` (a file's ``argsHash`` is
    verified against it; with no ``args`` -- e.g. only an ``argsArtifactId`` -- the file's
    ``argsHash`` is used as given); ``source_line`` = the line where the event's object starts.
    Run metadata goes to ``log.runs`` (``projectId``, ``agent``, ``metadata`` ... in
    ``attrs``); checkpoints to ``log.extras["checkpoints"]`` (:data:`CHECKPOINTS_SCHEMA`).
    Unknown fields stay in ``payload``, never dropped.

    Input rows are the events and checkpoint entries of each document, or 1 for a document
    whose envelope cannot be read (bad JSON/UTF-8, wrong ``format``, no ``runId``, a run
    already loaded). ``len(log) + log.extras["checkpoints"].num_rows + log.quarantine.num_rows``
    equals that count.

    Args:
        path: file(s), folder(s) or glob(s).
        owner: owner of the runs (isplay files carry no tenant); required.
        tenant_id: keep only these tenants' rows (one id or a list; None: all), as
            in every reader: the rows are all ``owner``'s, so all of them or none.
        errors: ``"raise"`` stops at the first bad row; ``"quarantine"`` keeps going and puts
            bad rows in ``log.quarantine`` with their reason.
        progress: show a progress bar over bytes (None: only when interactive).

    Raises:
        LoadError: ``reason="bad_tenant"``: ``owner`` is missing (also when only
            ``tenant_id=`` is given) or an id breaks the tenant-id rule
            (:mod:`replaykit.tenancy`).
        LoadError: (``errors="raise"``) a bad document or event, naming file:line, the JSON
            path of the field, a reason code (``bad_json``, ``missing_run_id``,
            ``duplicate_event_id``, ``args_hash_mismatch``, ``unknown_checkpoint_event``, ...)
            and a fix.
        FileNotFoundError: ``path`` matches nothing.

    Example:
        >>> log = read_isplay("data/isplay", owner="acme")  # doctest: +SKIP
        >>> log.extras["checkpoints"].column("checkpoint_id").to_pylist()  # doctest: +SKIP
        ['cp-intake', 'cp-before-decision', ...]
    """
    tenant, wanted = owner_and_filter(owner, tenant_id, fmt=FORMAT)
    quarantine = Quarantine(errors, tenant_id=tenant)
    explicit = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    files = expand_paths(explicit, patterns=_PATTERNS)
    named = {Path(p).resolve() for p in explicit if Path(p).is_file()}
    files = [f for f in files if f.resolve() in named or not is_side_file(f)]
    acc = _Runs()
    seen: dict[str, str] = {}
    total = sum(f.stat().st_size for f in files)
    with Progress(total, desc="isplay", enabled=progress) as bar:
        for i, f in enumerate(files, start=1):
            bar.next_file(f.name, i, len(files))
            _read_file(f, acc, seen, quarantine, bar)
    return keep_tenants(_build(acc, tenant, quarantine), tenant, wanted)
