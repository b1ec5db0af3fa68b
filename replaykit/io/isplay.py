"""Loader for the isplay format (being written)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..eventlog import EventLog

FORMAT = "isplay"


def sniff(path: Path) -> str | None:
    """None if ``path`` looks like a isplay log, else why not."""
    return "not implemented yet"


def read_isplay(path: Any, **kwargs: Any) -> EventLog:
    raise NotImplementedError("read_isplay is being written")
