"""One error hierarchy for replaykit.

Every error raised on purpose by replaykit derives from :class:`ReplayKitError`, so
``except ReplayKitError`` catches them all. Messages say what went wrong *and* what to do next.

Hierarchy::

    ReplayKitError
    ├── SchemaError            a table does not match the canonical events schema
    ├── LoadError              one bad input row/file (source, line, field, reason, fix)
    │   └── FormatDetectionError   read_events could not tell the format
    └── MissingExtraError      an optional dependency is not installed (also an ImportError)
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "FormatDetectionError",
    "LoadError",
    "MissingExtraError",
    "ReplayKitError",
    "SchemaError",
]


class ReplayKitError(Exception):
    """Root of every error replaykit raises on purpose."""


class SchemaError(ReplayKitError):
    """A table does not follow the canonical events schema.

    Attributes:
        problems: one human-readable line per problem (missing column, wrong type, ...).
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        lines = "\n  - ".join(self.problems)
        super().__init__(
            f"table does not match the canonical events schema:\n  - {lines}\n"
            "Build tables with replaykit.schema.events_table(...) or a replaykit loader."
        )


class LoadError(ReplayKitError):
    """A row or file could not be loaded.

    Attributes:
        source: the file (or table) the row came from.
        line: 1-based line number in ``source`` (None when not line-based).
        field: the offending field, when one field is to blame.
        reason: a short machine-readable reason code (``bad_json``, ``missing_tenant``, ...).
        fix: what to do about it.
        detail: the specific problem, in words.
    """

    def __init__(
        self,
        *,
        source: str,
        line: int | None,
        reason: str,
        detail: str,
        field: str | None = None,
        fix: str | None = None,
    ) -> None:
        self.source = source
        self.line = line
        self.field = field
        self.reason = reason
        self.detail = detail
        self.fix = fix or 'Fix the row or pass errors="quarantine" to keep loading.'
        where = f"{source}:{line}" if line is not None else source
        what = f"field '{field}' {detail}" if field else detail
        super().__init__(f"{where}: {what} (reason={reason}). {self.fix}")

    def as_record(self) -> dict[str, Any]:
        """The error as a quarantine row (without the raw text)."""
        return {
            "source": self.source,
            "line": self.line,
            "field": self.field,
            "reason": self.reason,
            "message": str(self),
        }


class FormatDetectionError(LoadError):
    """``read_events(format="auto")`` could not tell which format a file is in.

    Attributes:
        attempts: format name -> why that format was rejected.
    """

    def __init__(self, *, source: str, attempts: dict[str, str]) -> None:
        self.attempts = dict(attempts)
        tried = "; ".join(f"{name}: {why}" for name, why in self.attempts.items())
        super().__init__(
            source=source,
            line=None,
            reason="unknown_format",
            detail=f"matches no known format (tried {tried})",
            fix="Pass format=... explicitly (one of: " + ", ".join(self.attempts) + ").",
        )


class MissingExtraError(ReplayKitError, ImportError):
    """An optional dependency is needed for this feature but is not installed."""

    def __init__(self, feature: str, extra: str, module: str) -> None:
        self.feature = feature
        self.extra = extra
        self.module = module
        super().__init__(
            f"{feature} needs the optional dependency '{module}', which is not installed. "
            f'Install it with: pip install "replaykit[{extra}]"'
        )
