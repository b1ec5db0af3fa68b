"""One error hierarchy for replaykit.

Every error raised on purpose by replaykit derives from :class:`ReplayKitError`, so
``except ReplayKitError`` catches them all. Messages say what went wrong *and* what to do next.

Hierarchy::

    ReplayKitError
    ├── SchemaError            a table does not match the canonical events schema
    ├── LoadError              one bad input row/file (source, line, field, reason, fix)
    │   ├── FormatDetectionError   read_events could not tell the format
    │   └── MissingTenantError     no owner named for logs that record no tenant
    ├── MissingExtraError      an optional dependency is not installed (also an ImportError)
    ├── SQLError               a database refused a read or write (table, operation, reason, fix)
    ├── SettingError           a setting (environment variable or argument) cannot be used
    └── ReplayError            a replay (handle, fork, aggregate) failed (run_id, tenant_id)
        ├── ReplayDivergenceError      the recorded world and the replay disagree
        │   └── ReplayCacheMissError   a provider-cache read failed (key, mode, seq)
        └── ReplayUnknownEventError    a row the stepper cannot progress past (event_type, seq)

Every error pickles and unpickles with all its attributes and the same message (so it crosses
a ``multiprocessing`` / ``concurrent.futures`` / joblib / Dask process boundary): the base class
rebuilds the instance from its message and attribute dict without calling ``__init__``. An
attribute that cannot be pickled (say, a worker's exception holding a lock) crosses as a
representation: an exception becomes ``RuntimeError("<module.Type>: <message>")``, anything
else its ``repr``.

Python's own ``NotImplementedError`` marks an unfinished surface; it is deliberately *not* a
``ReplayError``, so ``except ReplayError`` never hides an implementation gap.
"""

from __future__ import annotations

import os
import pickle
from typing import Any

__all__ = [
    "FormatDetectionError",
    "LoadError",
    "MissingExtraError",
    "MissingTenantError",
    "ReplayCacheMissError",
    "ReplayDivergenceError",
    "ReplayError",
    "ReplayKitError",
    "ReplayUnknownEventError",
    "SQLError",
    "SchemaError",
    "SettingError",
]


def _picklable(value: Any) -> Any:
    """``value`` if it pickles, else a representation that does (see the module docstring)."""
    try:
        pickle.loads(pickle.dumps(value))  # some exceptions pickle but do not unpickle
        return value
    except Exception:  # noqa: BLE001 - any pickling failure: fall back to a representation
        if isinstance(value, BaseException):
            kind = f"{type(value).__module__}.{type(value).__qualname__}"
            return RuntimeError(f"{kind}: {value}")
        return repr(value)


def _rebuild(cls: type[ReplayKitError], args: tuple[Any, ...], state: dict[str, Any],
             cause: BaseException | None) -> ReplayKitError:
    """Unpickle a :class:`ReplayKitError` without calling its ``__init__``."""
    err = cls.__new__(cls, *args)
    err.args = args
    err.__dict__.update(state)
    if cause is not None:
        err.__cause__ = cause
    return err


class ReplayKitError(Exception):
    """Root of every error replaykit raises on purpose.

    Every subclass pickles with all its attributes and the same message, with no code of its
    own (:meth:`__reduce__` is generic).

    >>> import pickle
    >>> err = LoadError(source="a.jsonl", line=3, reason="bad_json", detail="is not JSON")
    >>> back = pickle.loads(pickle.dumps(err))
    >>> (type(back).__name__, back.line, back.reason, str(back) == str(err))
    ('LoadError', 3, 'bad_json', True)
    """

    def __reduce__(self) -> tuple[Any, ...]:
        state = {k: _picklable(v) for k, v in self.__dict__.items()}
        cause = self.__cause__
        return (_rebuild, (type(self), tuple(self.args), state,
                           None if cause is None else _picklable(cause)))


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


class MissingTenantError(LoadError, TypeError):
    """Logs of a format that records no tenant were read without naming their owner.

    A :class:`LoadError` with ``reason="missing_tenant"`` naming the file; also a
    ``TypeError``, which is what a missing tenant raised before (code catching that keeps
    working).
    """


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


class SettingError(ReplayKitError, ValueError):
    """A replaykit setting (an environment variable or an argument) has a value replaykit
    cannot use.

    Attributes:
        setting: the variable or argument (``"REPLAYKIT_THREADS"``, ``"threads="``).
        value: the value given.
        fix: what to set instead.

    >>> err = SettingError("REPLAYKIT_THREADS", "many", "set it to a whole number >= 1")
    >>> err.setting, isinstance(err, ValueError)
    ('REPLAYKIT_THREADS', True)
    """

    def __init__(self, setting: str, value: Any, fix: str) -> None:
        self.setting = setting
        self.value = value
        self.fix = fix
        super().__init__(f"{setting}={value!r} cannot be used: {fix}")


class SQLError(ReplayKitError):
    """A database refused a read or a write (the driver's own error, translated).

    Attributes:
        table: the table read or written.
        operation: ``"read"`` or ``"write"``.
        reason: a short machine-readable code: ``rls_denied`` (a row-level-security policy
            refused the rows), ``permission_denied``, ``duplicate_key``, ``bad_value``,
            ``unsupported``, ``connection``, ``database_error``, ``no_database`` (read_sql of
            a SQLite file that does not exist).
        detail: the database's message.
        fix: what to do about it.
        sqlstate: the SQLSTATE code when the driver gave one (PostgreSQL), else None.
    """

    def __init__(self, *, table: str, operation: str, reason: str, detail: str, fix: str,
                 sqlstate: str | None = None) -> None:
        self.table = table
        self.operation = operation
        self.reason = reason
        self.detail = detail
        self.fix = fix
        self.sqlstate = sqlstate
        state = f", SQLSTATE {sqlstate}" if sqlstate else ""
        super().__init__(
            f"{operation} of table {table!r} failed: {detail} (reason={reason}{state}). {fix}"
        )


class ReplayError(ReplayKitError):
    """A replay failed: opening a handle, stepping, forking or aggregating.

    Attributes:
        run_id: the run being replayed.
        tenant_id: the tenant the caller passed (never inferred).
    """

    def __init__(self, message: str, *, run_id: str | None, tenant_id: str | None) -> None:
        self.run_id = run_id
        self.tenant_id = tenant_id
        super().__init__(f"[tenant={tenant_id!r} run={run_id!r}] {message}")


class ReplayDivergenceError(ReplayError):
    """The replay cannot reproduce what the recorded log says happened."""


class ReplayCacheMissError(ReplayDivergenceError):
    """A provider-cache read failed under the handle's cache read mode.

    Attributes:
        key: the cache key (``payload.cacheKey``) that was looked up.
        mode: the read mode fixed when the handle was opened.
        seq: the ``seq`` of the row that carried the key.
    """

    def __init__(
        self,
        *,
        run_id: str | None,
        tenant_id: str | None,
        key: str,
        mode: str,
        seq: int,
    ) -> None:
        self.key = key
        self.mode = mode
        self.seq = seq
        if mode == "strict-mode":
            why = "strict-mode forbids every cache read (hit or miss)"
            fix = 'open the handle with cache=None to replay from the log alone'
        else:
            why = "the cache has no entry for it"
            fix = 'fill the cache, or open the handle with cache_mode="best-effort" to continue'
        super().__init__(
            f"cache read for key {key!r} at seq {seq} failed: {why} (mode={mode}). "
            f"To go on, {fix}.",
            run_id=run_id,
            tenant_id=tenant_id,
        )


class ReplayUnknownEventError(ReplayError):
    """A row the stepper cannot progress past (it has no usable event type).

    Rows whose type no projection models are *not* errors: they fold as no-ops.

    Attributes:
        event_type: the row's type (None or empty when missing).
        seq: the row's ``seq``.
    """

    def __init__(
        self, *, run_id: str | None, tenant_id: str | None, event_type: Any, seq: int
    ) -> None:
        self.event_type = event_type
        self.seq = seq
        super().__init__(
            f"row at seq {seq} has no usable event type ({event_type!r}); the stepper cannot "
            "progress past it. Fix the row in the source (or its loader's type mapping), or "
            "open the handle with up_to_seq below it.",
            run_id=run_id,
            tenant_id=tenant_id,
        )


# --------------------------------------------------------------------------- special files
# One rule for paths that exist but are neither regular files nor folders (the loaders'
# input expansion, read_parquet, the command line): named, a LoadError saying what they are;
# in a folder, skipped with a warning (replaykit.io._common). Never opened.


def special_file_kind(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it exists (through symbolic links) but is neither a regular
    file nor a folder: ``"a FIFO (named pipe)"``, ``"a socket"`` or ``"a device"``; None for
    regular files, folders and paths that do not exist. Never opens the path (only
    ``os.stat``): opening a FIFO for reading blocks until a writer comes.

    >>> special_file_kind("/dev/null")
    'a device'
    """
    import stat

    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return special_mode_kind(mode)


def special_mode_kind(mode: int) -> str:
    """The words for a file mode that is neither a regular file nor a folder (the one
    vocabulary of :func:`special_file_kind` and the command line's file checks).

    >>> import stat
    >>> special_mode_kind(stat.S_IFIFO)
    'a FIFO (named pipe)'
    """
    import stat

    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def refuse_special_file(path: str | os.PathLike[str]) -> None:
    """Raise when a path named by the caller is a FIFO, socket or device.

    Raises:
        LoadError: ``reason="special_file"``, naming the path and what it is.
    """
    kind = special_file_kind(path)
    if kind is not None:
        raise LoadError(
            source=str(path), line=None, reason="special_file",
            detail=f"is {kind}, not a log file or folder (it is never opened: reading one "
                   "would block or never end)",
            fix="Name a regular log file, a folder of logs or a glob of them.")
