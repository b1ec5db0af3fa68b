"""Loader for the pleach format (being written)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..eventlog import EventLog

FORMAT = "pleach"


def sniff(path: Path) -> str | None:
    """None if ``path`` looks like a pleach log, else why not."""
    return "not implemented yet"


def read_pleach(path: Any, **kwargs: Any) -> EventLog:
    raise NotImplementedError("read_pleach is being written")
