"""Shared loader plumbing: error policy and quarantine, progress bars, paths, tenant checks."""

from __future__ import annotations

import glob as _glob
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import pyarrow as pa

from ..errors import LoadError, refuse_special_file, special_file_kind
from ..schema import quarantine_table
from ..tenancy import BadTenantError, check_tenant_id, check_tenant_ids

if TYPE_CHECKING:
    from ..eventlog.log import EventLog

__all__ = [
    "EPOCH_MS_MAX",
    "EPOCH_MS_MIN",
    "INT64_MAX",
    "INT64_MIN",
    "ErrorPolicy",
    "Paths",
    "Tenants",
    "Progress",
    "Quarantine",
    "SpecialFileWarning",
    "each_file",
    "expand_paths",
    "iter_lines",
    "keep_tenants",
    "owner_and_filter",
    "refuse_special_file",
    "require_tenant",
    "special_file_kind",
    "unexpected_input",
    "compressed",
    "unreadable",
]

ErrorPolicy = Literal["raise", "quarantine"]
#: what every ``read_*`` takes as ``path``: a file, a folder, a glob, or several of them
Paths = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]
#: what every ``read_*`` takes as ``tenant_id``: one tenant id, several, or None (all)
Tenants = str | Sequence[str] | None

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
#: epoch milliseconds accepted as event times: years 1 to 9999 (what a timestamp[us] holds and
#: Python's datetime can show); outside it a time is an error, never an overflowed value.
EPOCH_MS_MIN, EPOCH_MS_MAX = -62_135_596_800_000, 253_402_300_799_999


def is_int64(v: object) -> bool:
    """True for a Python int (not a bool) that fits a signed 64-bit column."""
    return type(v) is int and INT64_MIN <= v <= INT64_MAX


def is_epoch_ms(v: object) -> bool:
    """True for an int or float epoch-milliseconds value within years 1..9999."""
    return type(v) in (int, float) and EPOCH_MS_MIN <= v <= EPOCH_MS_MAX  # type: ignore[operator]


def times_in_years(ts: Any) -> tuple[Any, Any]:
    """``(ts, out)``: a timestamp[us, UTC] array with the times outside years 1 to 9999 made
    null, and the numpy mask of those rows (column-wise). Arrow and pandas parse year 0 and
    zone offsets that carry a time past either end, which no datetime can show."""
    import numpy as np
    import pyarrow.compute as pc

    us = ts.cast(pa.int64())
    lo, hi = EPOCH_MS_MIN * 1000, EPOCH_MS_MAX * 1000 + 999
    out = np.asarray(pc.fill_null(pc.or_(pc.less(us, lo), pc.greater(us, hi)), False))
    if out.any():
        ts = pc.if_else(pa.array(out), pa.scalar(None, ts.type), ts)
    return ts, out


def require_tenant(owner: object, *, fmt: str) -> str:
    """Check the owner a caller names for logs that record no tenant (never invented).

    The id must follow the one tenant-id rule (:mod:`replaykit.tenancy`).

    Raises:
        BadTenantError: (a ``LoadError``, ``reason="bad_tenant"``; also a ``TypeError``)
            ``owner`` is None, empty, not a string, too long or holds control characters.
    """
    if owner is None:
        raise BadTenantError(
            source=f"read_{fmt}(owner=...)", line=None, field="owner",
            reason="bad_tenant",
            detail=f"is required: {fmt} logs carry no tenant, so name their owner",
            fix=f"e.g. read_{fmt}(path, owner='acme')",
        )
    return check_tenant_id(owner, source=f"read_{fmt}(owner=...)")


def owner_and_filter(owner: object, tenant_id: object, *,
                     fmt: str) -> tuple[str, list[str] | None]:
    """The two tenant arguments of every reader of logs that record no tenant, with one
    meaning each (as in :func:`replaykit.read_events` and :func:`replaykit.read_pleach`):
    ``owner=`` names whose logs they are (every row gets it), ``tenant_id=`` filters.

    Returns:
        The checked owner, and the checked filter (None: no filter).

    Raises:
        BadTenantError: (a ``LoadError``, ``reason="bad_tenant"``; also a ``TypeError``) no
            ``owner`` -- naming ``owner=`` also when only ``tenant_id=`` was given (that
            argument filters; it never names the owner) -- or an id breaking the rule.
    """
    if owner is None and tenant_id is not None:
        raise BadTenantError(
            source=f"read_{fmt}(tenant_id=...)", line=None, field="owner",
            reason="bad_tenant",
            detail=(f"names no owner: {fmt} logs record no tenant, so their owner is named "
                    "with owner=; tenant_id= only filters rows by tenant"),
            fix=(f"read_{fmt}(path, owner={tenant_id!r})" if isinstance(tenant_id, str)
                 else f"e.g. read_{fmt}(path, owner='acme')"),
        )
    tenant = require_tenant(owner, fmt=fmt)
    if tenant_id is None:
        return tenant, None
    return tenant, check_tenant_ids(tenant_id, source=f"read_{fmt}(tenant_id=...)")


def keep_tenants(log: EventLog, owner: str, wanted: list[str] | None) -> EventLog:
    """``log`` (every row ``owner``'s) with only the rows of the tenants ``wanted`` (None: all):
    all of them or none."""
    return log if wanted is None or owner in wanted else log.filter(tenant_id=wanted)


#: what a last-resort guard converts: errors of Python and Arrow that bad input can still cause
#: in code that has no specific check for it (every known case has one, with its own reason)
UNEXPECTED = (TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError,
              RecursionError, pa.ArrowException)  # fmt: skip


def unexpected_input(exc: BaseException, sources: Iterable[str]) -> LoadError:
    """A LoadError (reason ``unexpected_input``) for an error no specific check caught.

    Used only as a narrow final guard around a loader's assembly step, in addition to the
    specific checks, so that a caller still gets a ``ReplayKitError`` naming the files.
    """
    names = sorted(set(sources))
    where = names[0] if len(names) == 1 else f"{names[0]} (and {len(names) - 1} more files)"
    return LoadError(
        source=where if names else "(no file)", line=None, reason="unexpected_input",
        detail=f"could not be loaded: {type(exc).__name__}: {str(exc)[:300]}",
        fix="This input hits a case replaykit does not check yet; please report it with the "
            "file. Loading the files one by one shows which one it is.",
    )


_T = TypeVar("_T")


def each_file(files: Sequence[Path], read: Callable[[Path], _T], quarantine: Quarantine, *,
              desc: str, progress: bool | None) -> Iterator[tuple[Path, _T]]:
    """``(path, read(path))`` for each file in turn, under a progress bar over the files.

    The readers' per-file guard: an error of :data:`UNEXPECTED` that no specific check of
    ``read`` caught is one quarantine row naming the file (:func:`unexpected_input`; raised
    under ``errors="raise"``) and the file yields nothing; what ``read`` had already done
    stays done. The caller's use of each result runs outside the guard.

    Example:
        >>> q = Quarantine("quarantine")
        >>> sizes = {"b.jsonl": 2}
        >>> [n for _, n in each_file([Path("a.jsonl"), Path("b.jsonl")],
        ...                          lambda p: sizes[p.name], q, desc="demo", progress=False)]
        [2]
        >>> q.rows[0]["reason"], q.rows[0]["source"]
        ('unexpected_input', 'a.jsonl')

    Raises:
        LoadError: under ``errors="raise"``, for a file ``read`` fails on unexpectedly.
    """
    with Progress(len(files), desc=desc, unit="file", enabled=progress) as bar:
        for k, p in enumerate(files, start=1):
            bar.next_file(p.name, k, len(files))
            try:
                out = read(p)
            except UNEXPECTED as exc:  # a last-resort guard; specific checks come first
                quarantine.bad(unexpected_input(exc, [str(p)]))
            else:
                yield p, out
            bar.update(1)


def unreadable(source: str, exc: OSError) -> LoadError:
    """The LoadError (reason ``unreadable``, ``line`` None) for a file the OS will not read."""
    why = exc.strerror or type(exc).__name__
    return LoadError(
        source=source, line=None, reason="unreadable", detail=f"cannot be read ({why})",
        fix="Make the file readable by this user (permissions, a broken mount or disk), or "
            'pass errors="quarantine" to load the other files.',
    )


#: magic numbers of compressed files (a JSON text file starts with none of them)
_COMPRESSED = ((b"\x1f\x8b", "gzip", "gunzip"), (b"\x28\xb5\x2f\xfd", "zstd", "unzstd"),
               (b"BZh", "bzip2", "bunzip2"), (b"\xfd7zXZ\x00", "xz", "unxz"),
               (b"PK\x03\x04", "zip", "unzip"))  # fmt: skip


def compressed(source: str, head: bytes) -> LoadError | None:
    """The LoadError (reason ``compressed``, ``line`` None) for a text log whose first bytes
    are those of a compressed file (a gzip file named ``.jsonl``, say), else None."""
    for magic, kind, tool in _COMPRESSED:
        if head.startswith(magic):
            return LoadError(
                source=source, line=None, reason="compressed",
                detail=f"is a {kind}-compressed file, not JSON text",
                fix=f"Decompress it first (e.g. `{tool}`), then load the result; or pass "
                    'errors="quarantine" to load the other files.',
            )
    return None


def check_errors_arg(errors: object) -> ErrorPolicy:
    if errors not in ("raise", "quarantine"):
        raise ValueError(f'errors must be "raise" or "quarantine", got {errors!r}')
    return errors  # type: ignore[return-value]


class Quarantine:
    """Collects bad rows under ``errors="quarantine"``; raises them under ``errors="raise"``.

    Every input row ends up either loaded or here, with its reason: the loaders' invariant is
    ``loaded + quarantined == input rows``. Each row records whose it is (``tenant_id``,
    ``run_id``): ``tenant_id`` is the caller's tenant for formats without tenants, or what
    :meth:`bad` is told for formats whose rows carry one (None: the tenant could not be read).
    """

    def __init__(self, errors: ErrorPolicy, *, tenant_id: str | None = None) -> None:
        self.errors = check_errors_arg(errors)
        self.tenant_id = tenant_id
        self.rows: list[dict[str, Any]] = []

    def bad(self, err: LoadError, raw: str | bytes | None = None, *,
            tenant_id: str | None = None, run_id: str | None = None) -> None:
        """Record (or raise) one bad row (``tenant_id`` defaults to the loader's tenant)."""
        if self.errors == "raise":
            raise err
        rec = err.as_record()
        if isinstance(raw, bytes):
            raw = raw.decode("utf-8", errors="replace")
        rec["raw"] = raw
        rec["tenant_id"] = self.tenant_id if tenant_id is None else tenant_id
        rec["run_id"] = run_id
        self.rows.append(rec)

    def __len__(self) -> int:
        return len(self.rows)

    def table(self, runs: pa.Table | None = None) -> pa.Table:
        """The quarantine table.

        With ``runs`` (a runs table with ``source``), a row without a run id takes the run of
        its tenant loaded from the same file, when that file holds exactly one run of the
        tenant (a file's bad lines belong to that file's run).
        """
        if runs is not None and self.rows and runs.num_rows and "source" in runs.schema.names:
            one: dict[tuple[Any, str], set[str]] = {}
            for t, r, src, fmt in zip(runs.column("tenant_id").to_pylist(),
                                      runs.column("run_id").to_pylist(),
                                      runs.column("source").to_pylist(),
                                      runs.column("format").to_pylist(), strict=True):
                if src is None:
                    continue
                prefix = f"{fmt}:"
                for key in {src, src[len(prefix):] if src.startswith(prefix) else src}:
                    one.setdefault((t, key), set()).add(r)
            for rec in self.rows:
                if rec.get("run_id") is None and rec.get("tenant_id") is not None:
                    found = one.get((rec["tenant_id"], rec["source"]))
                    if found is not None and len(found) == 1:
                        rec["run_id"] = next(iter(found))
        return quarantine_table(self.rows)


class Progress:
    """A progress bar over bytes or items that works in terminals and notebooks.

    Uses ``tqdm.auto`` when installed; otherwise a minimal stderr bar. Disabled when
    ``enabled`` is False, or when None and stderr is not a terminal and no notebook is running.
    """

    def __init__(
        self, total: int | None, *, desc: str, unit: str = "B", enabled: bool | None = None
    ) -> None:
        if enabled is None:
            enabled = _interactive()
        self.enabled = bool(enabled)
        self.total = total
        self.desc = desc
        self.unit = unit
        self.n = 0
        self._bar: Any = None
        self._last_print = -1
        self._file = ""
        if self.enabled:
            try:
                from tqdm.auto import tqdm

                self._bar = tqdm(
                    total=total,
                    desc=desc,
                    unit=unit,
                    # bytes as KiB/MiB; counts (parts, runs, files) as the integers they are,
                    # never tqdm's scaled "0.00/10.0 part"
                    unit_scale=unit == "B",
                    unit_divisor=1024 if unit == "B" else 1000,
                    leave=False,
                    file=sys.stderr,
                )
            except ImportError:  # pragma: no cover - fallback without the [fast] extra
                self._bar = None

    def update(self, n: int) -> None:
        self.n += n
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(n)
        elif self.total:  # pragma: no cover - fallback bar
            pct = int(100 * self.n / self.total)
            if pct != self._last_print and pct % 5 == 0:
                self._last_print = pct
                sys.stderr.write(f"\r{self.desc} {self._file}: {pct:3d}%")
                sys.stderr.flush()

    def set_description(self, desc: str) -> None:
        if self._bar is not None:
            self._bar.set_description(desc)

    def next_file(self, name: str, index: int, count: int) -> None:
        """Show which file is being read: ``<desc> [index/count] name`` (index is 1-based)."""
        self._file = f"[{index}/{count}] {name}"
        if self._bar is not None:
            self._bar.set_description(f"{self.desc} {self._file}")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self.enabled and self.total:  # pragma: no cover
            sys.stderr.write("\r" + " " * (len(self.desc) + 8) + "\r")

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _interactive() -> bool:
    """True in a running Jupyter kernel or when stderr is a terminal."""
    if "IPython" in sys.modules:
        try:
            from IPython import get_ipython

            shell = get_ipython()
        except ImportError:  # pragma: no cover
            shell = None
        if shell is not None and getattr(shell, "kernel", None) is not None:
            return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # pragma: no cover
        return False


class SpecialFileWarning(UserWarning):
    """Files in a folder (or matched by a glob) that are FIFOs, sockets or devices (or links
    to one) were skipped without being opened: reading one would block or never end. The
    message lists them; name regular files, or remove them from the folder."""


def _skip_special(found: Iterable[Path], where: str,
                  stats: dict[Path, os.stat_result] | None = None) -> list[Path]:
    """The regular files of ``found`` (a folder's or a glob's matches; folders among them are
    left out); the FIFOs, sockets and devices among them are left out with one
    :class:`SpecialFileWarning` listing them. One ``os.stat`` per path (through links), kept
    in ``stats`` when given (:func:`expand_paths` reuses it to drop duplicates)."""
    import stat as _stat

    from ..errors import special_mode_kind

    keep, special = [], []
    for f in found:
        try:
            st = os.stat(f)
        except (OSError, ValueError):
            continue  # gone since it was listed, or a link to nothing: nothing to read
        if _stat.S_ISREG(st.st_mode):
            keep.append(f)
            if stats is not None:
                stats[f] = st
        elif not _stat.S_ISDIR(st.st_mode):
            special.append(f"{f} ({special_mode_kind(st.st_mode).removeprefix('a ')})")
    if special:
        import warnings

        warnings.warn(
            f"{where}: skipped {len(special)} file(s) that are not regular files, without "
            f"opening them (reading one would block or never end): {'; '.join(special[:20])}"
            + (f"; and {len(special) - 20} more" if len(special) > 20 else ""),
            SpecialFileWarning, stacklevel=_user_stacklevel())
    return keep


def _user_stacklevel() -> int:
    """The ``stacklevel`` that attributes a warning to the first caller outside replaykit."""
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame = sys._getframe(1)
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(pkg):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def expand_paths(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    patterns: tuple[str, ...],
) -> list[Path]:
    """Expand files, directories (searched recursively for ``patterns``) and globs.

    A FIFO, socket or device is never opened: named, it is a LoadError saying what it is;
    in a folder or among a glob's matches it is skipped with a :class:`SpecialFileWarning`
    listing it.

    Raises:
        FileNotFoundError: a path or glob matches nothing.
        LoadError: ``reason="special_file"``: a path names a FIFO, socket or device.
    """
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    out: list[Path] = []
    stats: dict[Path, os.stat_result] = {}
    for item in items:
        p = Path(item)
        refuse_special_file(p)
        if p.is_dir():
            # one walk per pattern, each match stat-ed once (a folder of 10,000 files: four
            # stats and a realpath per file cost 2 s; sorted by parts as Path's order is)
            walked = {f for pat in patterns for f in p.rglob(pat)}
            found = _skip_special(sorted(walked, key=lambda f: f.parts), str(p), stats)
            if not found:
                raise FileNotFoundError(
                    f"{p}: directory holds no files matching {', '.join(patterns)}"
                )
            out.extend(found)
        elif p.is_file():
            out.append(p)
        else:
            matches = sorted(Path(m) for m in _glob.glob(str(item), recursive=True))
            files = _skip_special(matches, str(item), stats)
            if not files:
                raise FileNotFoundError(f"{item}: no such file, directory or glob match")
            out.extend(files)
    # keep order, drop duplicates: the same file named twice (a link, "..", a folder and a
    # file in it). Only names sharing a device and inode can be one file; only they are
    # resolved (hard links resolve apart and are both kept, as before).
    inodes: dict[tuple[int, int], int] = {}
    keys: list[tuple[int, int] | None] = []
    for f in out:
        st = stats.get(f)
        if st is None:
            try:
                st = os.stat(f)
            except OSError:
                keys.append(None)
                continue
        key = (st.st_dev, st.st_ino)
        keys.append(key)
        inodes[key] = inodes.get(key, 0) + 1
    seen: set[Path] = set()
    unique = []
    for f, ino in zip(out, keys, strict=True):
        if ino is not None and inodes[ino] == 1:
            unique.append(f)
            continue
        real = f.resolve()
        if real not in seen:
            seen.add(real)
            unique.append(f)
    return unique


def iter_lines(path: Path, progress: Progress | None = None) -> Iterator[tuple[int, bytes]]:
    """Yield (1-based line number, raw line bytes without the newline) for a file.

    Blank lines are yielded too (as empty bytes) so that line numbers stay exact; callers
    decide what a blank line means. The file is opened read-only and never modified.
    """
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if progress is not None:
                progress.update(len(raw))
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            yield lineno, raw
