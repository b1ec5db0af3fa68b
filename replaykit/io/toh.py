"""Loader for the toh format (being written)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..eventlog import EventLog

FORMAT = "toh"


def sniff(path: Path) -> str | None:
    """None if ``path`` looks like a toh log, else why not."""
    return "not implemented yet"


def read_toh(path: Any, **kwargs: Any) -> EventLog:
    raise NotImplementedError("read_toh is being written")
