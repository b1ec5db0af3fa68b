"""Which isplay document a file holds: the format tags, and sniffing by extension and the
``"format"`` tag near the start (or end) of the file, without parsing the whole document."""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["BRANCH_FORMAT", "FIXTURES_FORMAT", "FORMAT", "RUN_FORMAT", "is_side_file", "sniff"]

FORMAT = "isplay"
RUN_FORMAT = "isplay.run/v1"
BRANCH_FORMAT = "isplay.branch/v1"
FIXTURES_FORMAT = "isplay.fixtures/v1"

_SUFFIXES = (".json", ".jsonl", ".ndjson")
_LINE_SUFFIXES = (".jsonl", ".ndjson")
_PATTERNS = ("*.json", "*.jsonl", "*.ndjson")
_FORMAT_RE = re.compile(rb'"format"\s*:\s*"(isplay\.[a-z]+/v[0-9]+)"')
_HEAD = 64 * 1024


def _read_head(path: Path) -> tuple[bytes, bytes] | None:
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(_HEAD)
            tail = b""
            if size > _HEAD:
                fh.seek(max(size - 4096, _HEAD))
                tail = fh.read()
    except OSError:
        return None
    return head, tail


def _format_tag(path: Path) -> tuple[str | None, str]:
    """(format tag found in the file or None, reason when None)."""
    p = Path(path)
    if p.suffix.lower() not in _SUFFIXES:
        return None, f"extension {p.suffix or '(none)'!r} is not .json/.jsonl/.ndjson"
    got = _read_head(p)
    if got is None:
        return None, "cannot be read"
    head, tail = got
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not start.startswith(b"{"):
        return None, "does not start with a JSON object"
    if p.suffix.lower() in _LINE_SUFFIXES:
        first = start.split(b"\n", 1)[0]
        m = _FORMAT_RE.search(first) or (
            _FORMAT_RE.search(head) if len(first) >= len(start) - 1 else None
        )
    else:
        m = _FORMAT_RE.search(head) or _FORMAT_RE.search(tail)
    if m is None:
        return None, 'has no top-level "format": "isplay.<kind>/v1" tag'
    return m.group(1).decode("ascii"), ""


def sniff(path: Path) -> str | None:
    """None when ``path`` looks like an isplay run export, otherwise why it does not.

    Looks at the extension and at the ``"format"`` tag near the start (or end) of the file;
    does not parse the whole document.

    >>> sniff(Path("data/isplay/claims-triage-C-104.json")) is None  # doctest: +SKIP
    True
    """
    tag, why = _format_tag(Path(path))
    if tag is None:
        return why
    if tag in (BRANCH_FORMAT, FIXTURES_FORMAT):
        return f"is an isplay side file ({tag}), not a run export"
    if tag != RUN_FORMAT:
        return f"format tag {tag!r} is not {RUN_FORMAT!r}"
    return None


def is_side_file(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is an isplay branch or fixtures file (not a log of events).

    ``read_events`` uses this to skip such files when it scans a folder.

    >>> is_side_file("data/isplay/branch-drop-fraud-clause.json")  # doctest: +SKIP
    True
    """
    tag, _ = _format_tag(Path(path))
    return tag in (BRANCH_FORMAT, FIXTURES_FORMAT)
