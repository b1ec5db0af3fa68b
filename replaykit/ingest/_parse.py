"""First pass of an ingest: find the sources, decide which changed, parse those into staging.

Every source is parsed by the format's own reader (``read_events(..., format=name)``), so rows,
checks and quarantine are the readers'. A pleach JSONL file larger than the chunk size is cut
at line boundaries and each chunk read on its own (the source and line numbers are then put
back), so the memory of the pass follows the chunk size, not the file; the per-run columns a
chunk cannot see whole (``turn`` carried forward, ``parent_run_id`` from
``subagent.spawned``, duplicate keys) are settled by the merge (:mod:`._merge`), over whole
runs. Files of the other formats are read in batches of at most the chunk size (a batch is at
least one file).

Each parsed unit's events go to ``staging/ev-<k>.parquet``, sorted by (tenant, run, seq) with
small row groups, so the merge reads any run range back from every chunk with Parquet's
statistics (an external range-partitioned merge; nothing holds more than one range).
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .._base import native
from ..errors import FormatDetectionError, LoadError
from ..eventlog.log import EventLog
from ..io import _PATTERNS as PATTERNS
from ..io import FORMATS, detect_format, read_events
from ..io._common import compressed, expand_paths, unreadable
from ..schema import QUARANTINE_SCHEMA, quarantine_table

#: staging row group: small, so a range read skips most of every chunk by its statistics
STAGING_ROW_GROUP = 4_096
#: staging files are read back only by (tenant, run) range: statistics on those two columns
#: alone, dictionary pages for the columns that repeat (as the part files)
STAGING_STATISTICS = ["tenant_id", "run_id"]
PLEACH = "pleach"
SPAWN_TYPE = "subagent.spawned"


def _pmap(fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    """``[fn(x) for x in items]``, on :func:`replaykit._base.native.threads` threads when
    there are many: the per-file steps (stat, side-file check, format sniffing, digest) wait
    on opening and reading each file more than they compute, so a folder of many small
    files is read with those waits overlapped. Results in order; the first error raised."""
    n = native.threads()
    if n <= 1 or len(items) < 16:
        return [fn(x) for x in items]
    from concurrent.futures import ThreadPoolExecutor

    # a few slices per thread (one task per file would cost more than a file's own work)
    k = min(len(items), 4 * n)
    slices = [items[len(items) * i // k:len(items) * (i + 1) // k] for i in range(k)]
    with ThreadPoolExecutor(n, thread_name_prefix="replaykit-files") as pool:
        done = list(pool.map(lambda part: [fn(x) for x in part], slices))
    return [y for part in done for y in part]


class CopyWarning(UserWarning):
    """A source holds the same bytes as one already ingested under another path: skipped."""


@dataclass
class Source:
    """One input file: where it is, what the manifest knows, what this ingest does to it."""

    key: str  # the path relative to what the user passed (the manifest key)
    path: Path  # as expanded (what the readers name in ``source``)
    size: int
    mtime_ns: int
    status: str = "new"  # new | changed | unchanged | copy
    digest: str | None = None
    format: str | None = None
    names: set[str] = field(default_factory=set)  # ``source`` strings of its rows
    input_rows: int = 0
    loaded: int = 0
    quarantined: int = 0


def discover(sources: list[str | os.PathLike[str]], into: Path | None = None,
             known: dict[str, dict[str, Any]] | None = None) -> list[Source]:
    """The files of ``sources`` (files, directories searched recursively, globs), as
    :func:`replaykit.read_events` finds them, minus the formats' side files. A file the
    manifest (``known``) holds with the same size and mtime was not a side file when it was
    ingested and is not checked again.

    Raises:
        FileNotFoundError: a path or glob matches nothing.
        ValueError: two inputs give the same relative path (name them from one folder), or
            a source is a Parquet dataset.
    """
    from ..io import is_dataset

    found: dict[str, Source] = {}
    inside = None if into is None else into.resolve()
    side_checks = [m.is_side_file for m in FORMATS.values() if hasattr(m, "is_side_file")]
    for arg in sources:
        base = Path(arg)
        if is_dataset(base) or (inside is not None and base.resolve() == inside):
            raise ValueError(
                f"{base} is a Parquet dataset, not logs: ingest reads log files (read a "
                "dataset with rk.read_parquet or rk.open_dataset)")
        # a file is resolved only when the dataset may lie inside this source
        is_dir = base.is_dir()
        may_hold = inside is not None and (not is_dir or inside.is_relative_to(base.resolve()))
        files = expand_paths(arg, patterns=PATTERNS)
        if may_hold:  # the dataset's own files, when it lies inside a source folder
            files = [f for f in files
                     if not f.resolve().is_relative_to(inside)]  # type: ignore[arg-type]

        def look(f: Path, base: Path = base, is_dir: bool = is_dir
                 ) -> tuple[str, os.stat_result] | None:
            """The file's manifest key and stat, or None for a side file of a format."""
            key = f.relative_to(base).as_posix() if is_dir else f.name
            st = f.stat()
            old = known.get(key) if known else None
            if old is not None and old["size"] == st.st_size \
                    and old["mtime_ns"] == st.st_mtime_ns:
                return key, st  # ingested as a log, unchanged since
            if any(check(f) for check in side_checks):
                return None
            return key, st

        for f, got in zip(files, _pmap(look, files), strict=True):
            if got is None:
                continue
            key, st = got
            if key in found and found[key].path.resolve() != f.resolve():
                raise ValueError(
                    f"{f} and {found[key].path} are both {key!r} relative to the paths given; "
                    "pass their common folder instead (the manifest keys sources by the path "
                    "relative to what was passed)")
            found[key] = Source(key=key, path=f, size=st.st_size, mtime_ns=st.st_mtime_ns)
    return list(found.values())


def digest(path: Path) -> str:
    """blake2b (128 bits) of the file's bytes, read in 1 MB blocks."""
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def classify(found: list[Source], known: dict[str, dict[str, Any]]) -> None:
    """Set each source's status against the manifest: unchanged (same size and mtime, or the
    same digest), changed, new, or a copy of another source (same digest elsewhere)."""
    by_digest = {e["digest"]: k for k, e in known.items() if e.get("digest")}
    fresh = [s for s in found if (old := known.get(s.key)) is None
             or old["size"] != s.size or old["mtime_ns"] != s.mtime_ns]
    digests = dict(zip([id(s) for s in fresh], _pmap(lambda s: digest(s.path), fresh),
                       strict=True))
    for s in found:
        old = known.get(s.key)
        if old is not None and old["size"] == s.size and old["mtime_ns"] == s.mtime_ns:
            s.status, s.digest = "unchanged", old["digest"]
            continue
        s.digest = digests[id(s)]
        if old is not None and old.get("digest") == s.digest:
            s.status = "unchanged"
            continue
        other = by_digest.get(s.digest)
        if other is not None and other != s.key:
            s.status = "copy"
            warnings.warn(f"{s.path} holds the same bytes as {other!r}, already ingested: "
                          "skipped (a copy is not read twice)", CopyWarning, stacklevel=4)
            continue
        s.status = "changed" if old is not None else "new"
        by_digest[s.digest] = s.key


@dataclass
class Staged:
    """What the first pass produced: the events in staging files, or kept in memory
    (``tables``) while their bytes stay under ``mem_budget`` (on a Dask worker: always)."""

    files: list[Path] = field(default_factory=list)
    #: per staging file: tenant -> (first, last) run id it holds
    spans: list[dict[str, tuple[str, str]]] = field(default_factory=list)
    keys: list[pa.Table] = field(default_factory=list)  # tenant_id, run_id, rows
    quarantine: list[pa.Table] = field(default_factory=list)  # + ingest_source
    headers: list[pa.Table] = field(default_factory=list)  # non-pleach runs rows + ingest_source
    spawns: list[pa.Table] = field(default_factory=list)  # tenant_id, run_id, seq, child, source
    tables: list[pa.Table] = field(default_factory=list)  # events kept in memory
    table_spans: list[dict[str, tuple[str, str]]] = field(default_factory=list)
    disk_bytes: int = 0  # bytes of the staging files
    mem_bytes: int = 0  # bytes of ``tables``
    mem_budget: int = 0  # keep a unit in memory while mem_bytes stays under this
    remote: bool = False  # the events are on Dask workers (not in files nor tables)


@dataclass
class Unit:
    """One piece of the first pass: a batch of files of one format, or one line-aligned byte
    range ``[start, end)`` of a large pleach JSONL file (its first line is ``line_off + 1``)."""

    fmt: str
    sources: list[Source]
    start: int = 0
    end: int = -1  # >= 0: a pleach chunk
    line_off: int = 0

    @property
    def nbytes(self) -> int:
        return self.end - self.start if self.end >= 0 else sum(s.size for s in self.sources)


def plan_units(todo: list[Source], out: Staged, *, errors: str, chunk_bytes: int,
               ranges: bool) -> list[Unit]:
    """Sniff each file's format and cut the work into units (files whose format is not known
    are quarantined into ``out`` here, or raise under ``errors="raise"``). ``ranges``: cut
    large pleach files into byte ranges now (the Dask engine; the local pass streams them)."""
    units: list[Unit] = []
    by_format: dict[str, list[Source]] = {}

    def sniff(s: Source) -> str | FormatDetectionError:
        try:
            return detect_format(s.path)
        except FormatDetectionError as exc:
            return exc

    for s, fmt in zip(todo, _pmap(sniff, todo), strict=True):
        try:
            if isinstance(fmt, FormatDetectionError):
                raise fmt
            s.format = fmt
        except FormatDetectionError as exc:
            try:
                with open(s.path, "rb") as fh:
                    err: LoadError = compressed(str(s.path), fh.read(8)) or exc
            except OSError as os_exc:
                err = unreadable(str(s.path), os_exc)
            if errors == "raise":
                raise err from None
            rec = err.as_record()
            rec.update(raw=None, tenant_id=None, run_id=None)
            _add_quarantine(out, quarantine_table([rec]), {str(s.path): s}, s)
            s.input_rows = s.quarantined = 1
            continue
        by_format.setdefault(s.format, []).append(s)
    for fmt, group in by_format.items():
        if fmt == PLEACH:
            for s in group:
                if s.size > chunk_bytes and s.path.suffix != ".parquet":
                    if ranges:
                        with open(s.path, "rb") as fh:
                            units.extend(Unit(fmt, [s], a, a + len(d), off)
                                         for a, d, off in _line_blocks(fh, chunk_bytes))
                    else:
                        units.append(Unit(fmt, [s], 0, s.size))  # streamed by parse
                else:
                    units.append(Unit(fmt, [s]))
            continue
        units.extend(Unit(fmt, batch) for batch in _batches(group, chunk_bytes))
    return units


def parse(todo: list[Source], staging: Path, *, owner: str | None, errors: str,
          chunk_bytes: int, on_bytes: Callable[[int, int, int], None],
          mem_budget: int = 0) -> Staged:
    """Parse ``todo`` into ``staging`` (the first ``mem_budget`` bytes of events kept in
    memory); ``on_bytes(bytes, rows, files)`` reports progress."""
    out = Staged(mem_budget=mem_budget)
    units = plan_units(todo, out, errors=errors, chunk_bytes=chunk_bytes, ranges=False)
    for s in todo:
        if s.format is None:
            on_bytes(s.size, 0, 1)
    with _StagingWriter(out, native.threads() > 1) as writer:
        for u in units:
            if u.end >= 0:  # a large pleach file, streamed chunk by chunk
                s = u.sources[0]
                with open(s.path, "rb") as fh:
                    for _, data, off in _line_blocks(fh, chunk_bytes):
                        n = len(data)
                        log = _read_chunk(s, staging / "chunk.jsonl", data, off, errors)
                        del data
                        _stage(out, staging, log, [s], u.fmt, writer=writer)
                        on_bytes(n, len(log), 0)
                        del log
                on_bytes(0, 0, 1)
                continue
            log = read_unit(u, owner=owner, errors=errors, tmp=staging)
            _stage(out, staging, log, u.sources, u.fmt, writer=writer)
            on_bytes(u.nbytes, len(log), len(u.sources))
            del log
    for s in todo:
        s.input_rows = s.loaded + s.quarantined
    return out


class _StagingWriter:
    """Writes staging files, on a thread of its own when ``background`` (the next unit is
    parsed meanwhile; at most one write is in flight, so one parsed unit more is held);
    leaving the block waits for the last write (and re-raises its error)."""

    def __init__(self, out: Staged, background: bool) -> None:
        self.out = out
        self.pool: Any = None
        if background:
            from concurrent.futures import ThreadPoolExecutor

            self.pool = ThreadPoolExecutor(1, thread_name_prefix="replaykit-staging")
        self.pending: Any = None

    def write(self, table: pa.Table, path: Path) -> None:
        self.wait()
        if self.pool is None:
            self.out.disk_bytes += _write_staging(table, path)
        else:
            self.pending = self.pool.submit(_write_staging, table, path)

    def wait(self) -> None:
        if self.pending is not None:
            fut, self.pending = self.pending, None
            self.out.disk_bytes += fut.result()

    def __enter__(self) -> _StagingWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if exc[0] is None:
                self.wait()
        finally:
            if self.pool is not None:
                self.pool.shutdown(wait=True)


def _write_staging(table: pa.Table, path: Path) -> int:
    """One staging file (sorted by tenant, run: small row groups, statistics on those two
    columns); returns its size."""
    pq.write_table(table, path, row_group_size=STAGING_ROW_GROUP,
                   write_statistics=STAGING_STATISTICS,
                   use_dictionary=[f.name for f in table.schema
                                   if f.name in STAGING_STATISTICS
                                   or pa.types.is_dictionary(f.type)
                                   or not (pa.types.is_string(f.type)
                                           or pa.types.is_large_string(f.type))])
    size = path.stat().st_size
    pa.default_memory_pool().release_unused()
    return size


def read_unit(u: Unit, *, owner: str | None, errors: str, tmp: Path | None) -> EventLog:
    """A unit read by its format's reader (a pleach byte range through a temporary file in
    ``tmp``, or the system's temporary folder)."""
    if u.end >= 0:
        s = u.sources[0]
        with open(s.path, "rb") as fh:
            fh.seek(u.start)
            data = fh.read(u.end - u.start)
        if tmp is None:
            import tempfile

            with tempfile.TemporaryDirectory(prefix="replaykit-ingest-") as d:
                return _read_chunk(s, Path(d) / "chunk.jsonl", data, u.line_off, errors)
        return _read_chunk(s, tmp / "chunk.jsonl", data, u.line_off, errors)
    paths = [s.path for s in u.sources]
    if u.fmt == PLEACH:
        return read_events(paths, format=u.fmt, errors=errors, progress=False)
    return read_events(paths, format=u.fmt, owner=owner, errors=errors, progress=False)


def parse_unit(u: Unit, *, owner: str | None, errors: str) -> tuple[Staged, list[Any]]:
    """One unit parsed where it runs (a Dask worker): its staged pieces with the events kept
    in memory, and per source (key, loaded, quarantined, names)."""
    from dataclasses import replace

    # fresh counters (the threaded scheduler shares the client's Source objects)
    u = replace(u, sources=[replace(s, loaded=0, quarantined=0, names=set())
                            for s in u.sources])
    out = Staged()
    log = read_unit(u, owner=owner, errors=errors, tmp=None)
    _stage(out, None, log, u.sources, u.fmt)
    return out, [(s.key, s.loaded, s.quarantined, sorted(s.names)) for s in u.sources]


def _batches(group: list[Source], budget: int) -> Iterator[list[Source]]:
    batch: list[Source] = []
    size = 0
    for s in sorted(group, key=lambda s: str(s.path)):
        if batch and size + s.size > budget:
            yield batch
            batch, size = [], 0
        batch.append(s)
        size += s.size
    if batch:
        yield batch


def _line_blocks(fh: Any, chunk_bytes: int) -> Iterator[tuple[int, Any, int]]:
    """A file read in line-aligned blocks of about ``chunk_bytes``: (offset, bytes (or a
    memoryview of them), lines before it). Each block is read once into one buffer (the
    next read starts after its last newline), not copied."""
    line_off = 0
    pos = 0
    data = b""
    while True:
        fh.seek(pos)
        del data  # (the previous block: freed before the next is read)
        data = fh.read(chunk_bytes)
        if not data:
            return
        cut = data.rfind(b"\n") if len(data) == chunk_bytes else len(data) - 1
        while cut < 0:  # a line longer than the chunk: read on to its end
            more = fh.read(chunk_bytes)
            data += more
            cut = data.rfind(b"\n") if len(more) == chunk_bytes else len(data) - 1
        end = cut + 1
        yield pos, (data if end == len(data) else memoryview(data)[:end]), line_off
        pos += end
        line_off += data.count(b"\n", 0, end)


def _read_chunk(s: Source, tmp: Path, data: bytes, line_off: int, errors: str) -> EventLog:
    tmp.write_bytes(data)
    tmp_name, name = str(tmp), str(s.path)
    try:
        log = read_events([tmp], format=PLEACH, errors=errors, progress=False)
    except LoadError as err:
        line = None if err.line is None else err.line + line_off
        raise LoadError(source=name, line=line, field=err.field, reason=err.reason,
                        detail=err.detail.replace(tmp_name, name), fix=err.fix) from None
    finally:
        tmp.unlink(missing_ok=True)
    t = log.table
    src_i = t.schema.get_field_index("source")
    src = t.column("source").combine_chunks()
    values = [name if v == tmp_name else v.replace(tmp_name, name)
              for v in src.dictionary.to_pylist()]
    src = pa.DictionaryArray.from_arrays(src.indices, pa.array(values, pa.string()))
    t = t.set_column(src_i, t.schema.field(src_i), src)
    li = t.schema.get_field_index("source_line")
    t = t.set_column(li, t.schema.field(li), pc.add(t.column(li), line_off))
    rows = log.quarantine.to_pylist()
    for r in rows:  # the chunk's few bad rows: their file and line in the source's terms
        src_old = r["source"] or ""
        src_new = src_old.replace(tmp_name, name)
        old_where = f"{src_old}:{r['line']}" if r["line"] is not None else src_old
        if r["line"] is not None:
            r["line"] += line_off
        new_where = f"{src_new}:{r['line']}" if r["line"] is not None else src_new
        r["source"] = src_new if r["source"] is not None else None
        if r["message"] and r["message"].startswith(old_where):
            r["message"] = new_where + r["message"][len(old_where):]
        if r["message"]:
            r["message"] = r["message"].replace(tmp_name, name)
    quarantine = pa.Table.from_pylist(rows, schema=QUARANTINE_SCHEMA)
    runs = log.runs
    if runs.num_rows:
        runs = runs.set_column(runs.schema.get_field_index("source"), "source",
                               pc.replace_substring(runs.column("source"), tmp_name, name))
    return EventLog(t, runs=runs, quarantine=quarantine, sort=False)


def _owner_of(names: dict[str, Source], value: str | None, first: Source) -> Source:
    if value is None:
        return first
    hit = names.get(value)
    if hit is None and ":" in value:
        hit = names.get(value.split(":", 1)[1])
    return hit if hit is not None else first


def _add_quarantine(out: Staged, q: pa.Table, names: dict[str, Source], first: Source) -> None:
    if not q.num_rows:
        return
    owners = [_owner_of(names, v, first) for v in q.column("source").to_pylist()]
    for o in owners:
        o.quarantined += 1
    out.quarantine.append(q.append_column("ingest_source",
                                          pa.array([o.key for o in owners], pa.string())))


def _stage(out: Staged, staging: Path | None, log: EventLog, batch: list[Source],
           fmt: str, writer: _StagingWriter | None = None) -> None:
    """One parsed unit into staging: events file (kept in ``out.tables`` when ``staging`` is
    None), key counts, quarantine, headers, spawns."""
    names: dict[str, Source] = {}
    for s in batch:
        names[str(s.path)] = s
        names[f"{fmt}:{s.path}"] = s
    _add_quarantine(out, log.quarantine, names, batch[0])
    t = log.table
    if t.num_rows:
        src = t.column("source").combine_chunks()
        values = src.dictionary.to_pylist()
        counts = np.bincount(src.indices.to_numpy(zero_copy_only=False),
                             minlength=len(values))
        for v, c in zip(values, counts.tolist(), strict=True):
            if c:
                o = _owner_of(names, v, batch[0])
                o.loaded += c
                o.names.add(v)
        st = t.set_column(0, "tenant_id", t.column("tenant_id").cast(pa.string())) \
              .set_column(1, "run_id", t.column("run_id").cast(pa.string()))
        keys = st.select(["tenant_id", "run_id"]).group_by(
            ["tenant_id", "run_id"], use_threads=False).aggregate([([], "count_all")])
        out.keys.append(keys.rename_columns(["tenant_id", "run_id", "rows"]))
        span = keys.group_by("tenant_id", use_threads=False).aggregate(
            [("run_id", "min"), ("run_id", "max")])
        spans = {t: (lo, hi) for t, lo, hi in zip(
            span.column("tenant_id").to_pylist(), span.column("run_id_min").to_pylist(),
            span.column("run_id_max").to_pylist(), strict=True)}
        if staging is None or out.mem_bytes + st.nbytes <= out.mem_budget:
            # kept in memory: no staging write and read back (the small ingests' case)
            out.tables.append(st)
            out.table_spans.append(spans)
            out.mem_bytes += st.nbytes
        else:
            f = staging / f"ev-{len(out.files)}.parquet"
            out.files.append(f)
            out.spans.append(spans)
            if writer is None:
                out.disk_bytes += _write_staging(st, f)
            else:
                writer.write(st, f)
        if fmt == PLEACH:
            out.spawns.append(spawns_of(t))
    pa.default_memory_pool().release_unused()  # the unit's buffers back to the OS
    if fmt != PLEACH and log.runs.num_rows:
        owners = [_owner_of(names, v, batch[0]).key for v in log.runs.column("source").to_pylist()]
        out.headers.append(log.runs.append_column("ingest_source", pa.array(owners, pa.string())))


SPAWNS_SCHEMA = pa.schema([("tenant_id", pa.string()), ("run_id", pa.string()),
                           ("seq", pa.int64()), ("child", pa.string()), ("source", pa.string())])


def spawns_of(t: pa.Table) -> pa.Table:
    """The ``subagent.spawned`` rows of pleach events: (tenant, run, seq, child chat, source).
    Only those few rows' payloads are decoded."""
    typ = t.column("type")
    mask = pc.equal(pc.cast(typ, pa.string()), SPAWN_TYPE)
    rows = t.filter(mask)
    if not rows.num_rows:
        return SPAWNS_SCHEMA.empty_table()
    import json

    children = []
    for p in rows.column("payload").to_pylist():
        try:
            v = json.loads(p).get("child_chat_id") if p else None
        except (ValueError, AttributeError):
            v = None
        children.append(v if isinstance(v, str) and v else None)
    return pa.table({"tenant_id": rows.column("tenant_id").cast(pa.string()),
                     "run_id": rows.column("run_id").cast(pa.string()),
                     "seq": rows.column("seq"),
                     "child": pa.array(children, pa.string()),
                     "source": rows.column("source").cast(pa.string())},
                    schema=SPAWNS_SCHEMA)
