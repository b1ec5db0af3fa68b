"""Shared reading of tracing-platform exports (LangSmith, Langfuse, Phoenix).

An export is a set of *records* (runs, observations, spans), each a JSON object, in one of:
a JSON document (an array, or an object holding the array under a known key), JSON Lines (one
record per line), CSV (one record per row, nested values as JSON text) or Parquet (one record
per row). :func:`records` yields ``(position, raw, record)`` for each, sending what cannot be
read to the quarantine with a reason; the format modules map records to rows.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._base.json import canonical_json
from ..errors import LoadError
from ._common import UNEXPECTED, Quarantine, compressed, each_file, unexpected_input, unreadable
from ._records import bad, decode_json, head_text, json_lines, raw_of

__all__ = ["DuplicateRecordWarning", "Item", "Record", "dedupe", "first_of", "raw_of",
           "read_traces", "records", "sniff_records"]

Record = tuple[int | None, str | None, dict[str, Any]]

_MAX_JSON = 1 << 31


def _decode_cell(v: Any) -> Any:
    """A CSV / Parquet cell: JSON text of an object or array is decoded; other values as is."""
    if isinstance(v, str):
        s = v.strip()
        if s[:1] in ("{", "[") and s[-1:] in ("}", "]"):
            try:
                return json.loads(s)
            except (ValueError, RecursionError):
                return v
        return v
    if hasattr(v, "isoformat"):
        return v.isoformat()
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    if isinstance(v, list):
        return [_decode_cell(x) for x in v]
    if isinstance(v, dict):
        return {k: _decode_cell(x) for k, x in v.items()}
    return v


def records(path: Path, fmt: str, quarantine: Quarantine,
            unwrap: Callable[[Any], list[Any] | None]) -> Iterator[Record]:
    """The records of one export file (JSON, JSONL/NDJSON, CSV or Parquet, by extension).

    ``unwrap`` turns a whole JSON document into its list of records (None: not this format's
    document). Bad records go to ``quarantine``: ``bad_json``, ``not_object``,
    ``bad_encoding`` (JSONL), ``bad_document`` (a JSON document ``unwrap`` rejects),
    ``bad_csv`` / ``bad_parquet`` (a file the reader rejects), ``unreadable``, ``compressed``.
    """
    suffix = path.suffix.lower()
    head = head_text(path, 8)
    if head is None:
        try:
            open(path, "rb").close()
        except OSError as exc:
            quarantine.bad(unreadable(str(path), exc))
        return
    if suffix != ".parquet":
        packed = compressed(str(path), head)
        if packed is not None:
            quarantine.bad(packed)
            return
    if suffix in (".jsonl", ".ndjson"):
        for lineno, raw, doc in json_lines(path, fmt, quarantine):
            nested = isinstance(doc.get("observations"), list) or isinstance(
                doc.get("spans"), list) or isinstance(doc.get("runs"), list)
            inner = unwrap(doc) if nested or not _looks_like_record(doc) else None
            if inner is not None:  # a line that is a whole document (a trace with its spans)
                for item in inner:
                    if isinstance(item, dict):
                        yield lineno, None, item
                    else:
                        quarantine.bad(bad(fmt, path, lineno, "not_object",
                                           f"holds a {type(item).__name__} record, not an "
                                           "object"), raw)
                continue
            yield lineno, raw.decode("utf-8", errors="replace"), doc
        return
    if suffix == ".json":
        try:
            doc = decode_json(path.read_bytes(), fmt, path, None)
        except OSError as exc:
            quarantine.bad(unreadable(str(path), exc))
            return
        except LoadError as exc:
            quarantine.bad(exc)
            return
        items = unwrap(doc)
        if items is None:
            quarantine.bad(bad(fmt, path, None, "bad_document",
                               f"is JSON but not a {fmt} export (no list of records found)",
                               fix=f"Point at a {fmt} export; see docs/formats/{fmt}.md."))
            return
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                quarantine.bad(bad(fmt, path, None, "not_object",
                                   f"record {i} is a {type(item).__name__}, not an object",
                                   field=f"[{i}]"))
                continue
            yield None, None, item
        return
    if suffix in (".csv", ".parquet"):
        import pyarrow as pa

        try:
            if suffix == ".csv":
                from pyarrow import csv as pacsv

                table = pacsv.read_csv(
                    path, convert_options=pacsv.ConvertOptions(strings_can_be_null=True))
            else:
                import pyarrow.parquet as pq

                table = pq.read_table(path)
            rows = _table_records(table)
        except OSError as exc:
            if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError)):
                quarantine.bad(unreadable(str(path), exc))
            else:
                quarantine.bad(bad(fmt, path, None, f"bad_{suffix[1:]}",
                                   f"cannot be read as {suffix[1:].upper()} ({str(exc)[:160]})"))
            return
        except (pa.ArrowException, ValueError, UnicodeDecodeError, OverflowError) as exc:
            quarantine.bad(bad(fmt, path, None, f"bad_{suffix[1:]}",
                               f"cannot be read as {suffix[1:].upper()} ({str(exc)[:160]})"))
            return
        first_line = 2 if suffix == ".csv" else None  # CSV line 1 is the header
        for i, rec in enumerate(rows):  # raw text only for a record that goes bad: raw_of
            yield (first_line + i if first_line is not None else None), None, rec
        return
    quarantine.bad(bad(fmt, path, None, "bad_extension",
                       f"has extension {path.suffix!r}; {fmt} exports are .json, .jsonl, "
                       ".csv or .parquet"))


def _table_records(table: Any) -> list[dict[str, Any]]:
    """The rows of a CSV / Parquet table as records, column by column: string cells that
    hold JSON objects or arrays are decoded (only those, found with Arrow), times become ISO
    text, nested values are walked; other columns are taken as they are."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    names = table.column_names
    cols: list[list[Any]] = []
    for name in names:
        arr = table.column(name).combine_chunks()
        t = arr.type
        if pa.types.is_dictionary(t):
            arr = arr.cast(t.value_type)
            t = arr.type
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            vals = arr.to_pylist()
            trimmed = pc.utf8_ltrim_whitespace(arr)
            json_like = pc.or_(pc.starts_with(trimmed, "{"), pc.starts_with(trimmed, "["))
            for i in np.flatnonzero(np.asarray(pc.fill_null(json_like, False))):
                vals[i] = _decode_cell(vals[i])
        elif pa.types.is_temporal(t) or pa.types.is_nested(t) or pa.types.is_binary(t) \
                or pa.types.is_large_binary(t):
            vals = [_decode_cell(v) for v in arr.to_pylist()]
        else:
            vals = arr.to_pylist()
        cols.append(vals)
    if not cols:
        return [{} for _ in range(table.num_rows)]
    return [dict(zip(names, v, strict=True)) for v in zip(*cols, strict=True)]


def _looks_like_record(doc: Mapping[str, Any]) -> bool:
    return "id" in doc or "span_id" in doc or "context.span_id" in doc or "context" in doc


def first_of(doc: Mapping[str, Any], *keys: str) -> Any:
    """The first non-null value of ``doc`` under one of ``keys`` (camelCase / snake_case
    spellings of one field)."""
    for k in keys:
        v = doc.get(k)
        if v is not None and v != "":
            return v
    return None


def sniff_records(path: Path, keys_any: tuple[tuple[str, ...], ...], fmt: str,
                  wrappers: tuple[str, ...] = ()) -> str | None:
    """None when the head of ``path`` shows a record holding all keys of one of the
    ``keys_any`` groups (quoted JSON keys or CSV header names; Parquet: column names)."""
    suffix = path.suffix.lower()
    if suffix not in (".json", ".jsonl", ".ndjson", ".csv", ".parquet"):
        return f"extension {path.suffix or '(none)'!r} is not .json/.jsonl/.csv/.parquet"
    if suffix == ".parquet":
        try:
            import pyarrow.parquet as pq

            names = set(pq.read_schema(path).names)
        except Exception:  # noqa: BLE001 - any unreadable Parquet is "not this format"
            return "is not a readable Parquet file"
        for group in keys_any:
            if all(k in names or k.replace("_", "") in names for k in group):
                return None
        return f"its columns are not those of a {fmt} export"
    head = head_text(path, 1 << 16)
    if head is None:
        return "cannot be read"
    text = head.decode("utf-8", errors="replace")
    if suffix == ".csv":
        header = {h.strip().strip('"') for h in text.split("\n", 1)[0].split(",")}
        for group in keys_any:
            if all(k in header for k in group):
                return None
        return f"its CSV header has none of the {fmt} column sets"
    stripped = text.lstrip("\ufeff \t\r\n")
    if not stripped.startswith(("{", "[")):
        return "does not start with JSON"
    for group in keys_any:
        if all(f'"{k}"' in text for k in group):
            return None
    for w in wrappers:
        if f'"{w}"' in text and all(f'"{k}"' in text for k in keys_any[0][:1]):
            return None
    return f"its first records have none of the {fmt} key sets"


def canonical(doc: Any) -> str:
    return canonical_json(doc)


class DuplicateRecordWarning(UserWarning):
    """A platform export record (Langfuse trace / observation, Phoenix span) was read more than
    once with identical content, from several files or twice from one: it is loaded once."""


#: ``(position, line, raw, record, file)`` of one record, as the loaders group them per trace
Item = tuple[int, int | None, str | None, dict[str, Any], Path]


def dedupe(groups: dict[str, list[Item]], key_of: Callable[[dict[str, Any]], Any], fmt: str,
           quarantine: Quarantine, what: str,
           merge: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any] | None] | None = None
           ) -> dict[str, list[Item]]:
    """One copy of each record per trace, across every file read.

    The same trace exported twice (two downloads in one folder, a JSON and a CSV export of the
    same observations) must not become one run with every event twice. Records of a trace
    are matched by ``key_of(record)`` (their id; None: the record has no id, and only an
    identical copy matches). Identical copies are kept once, with one
    :class:`DuplicateRecordWarning` per pair of files naming how many; copies whose content
    differs are all quarantined (``conflicting_record``: which one is right cannot be told),
    and under ``errors="raise"`` the first raises a LoadError naming both places.

    ``merge(first, later)``: for formats whose records are completed in parts (LangSmith's
    post, then a patch with the outputs and end time, possibly in another file), the one
    record the copies make, or None when they disagree (the same field with two values).
    """
    out: dict[str, list[Item]] = {}
    dropped: dict[tuple[str, str], int] = {}
    fix = (f"Load one export of each {fmt} trace, or remove the older copy; "
           'errors="quarantine" loads the rest.')
    for tid, items in groups.items():
        by_key: dict[Any, list[int]] = {}
        texts = [canonical_json(it[3]) for it in items]
        for i, it in enumerate(items):
            k = key_of(it[3])
            by_key.setdefault(("id", k) if k is not None else ("text", texts[i]), []).append(i)
        drop: set[int] = set()
        for k, idx in by_key.items():
            if len(idx) == 1:
                continue
            if len({texts[i] for i in idx}) == 1:
                for i in idx[1:]:
                    pair = (str(items[idx[0]][4]), str(items[i][4]))
                    dropped[pair] = dropped.get(pair, 0) + 1
                drop.update(idx[1:])
                continue
            if merge is not None:
                whole: dict[str, Any] | None = items[idx[0]][3]
                for i in idx[1:]:
                    whole = merge(whole, items[i][3]) if whole is not None else None
                if whole is not None:
                    first = items[idx[0]]
                    items[idx[0]] = (first[0], first[1], first[2], whole, first[4])
                    drop.update(idx[1:])
                    continue
            drop.update(idx)
            places = [f"{items[i][4]}:{items[i][1]}" for i in idx]
            for i in idx:
                here = f"{items[i][4]}:{items[i][1]}"
                others = ", ".join(p for p in places if p != here) or "this line"
                quarantine.bad(bad(fmt, items[i][4], items[i][1], "conflicting_record",
                                   f"{what} {k[1]!r} of trace {tid!r} is also read from "
                                   f"{others} with different content", field="id", fix=fix),
                               raw_of(items[i][2], items[i][3]))
        kept = [it for i, it in enumerate(items) if i not in drop]
        if kept:
            out[tid] = kept
    for (a, b), n in sorted(dropped.items()):
        where = f"both {a} and {b}" if a != b else f"{a} more than once"
        warnings.warn(f"{n} {fmt} record(s) appear in {where} with identical content; each is "
                      "loaded once", DuplicateRecordWarning, stacklevel=3)
    return out


def trace_runs(traces: dict[str, list[Item]], trace_rows: Callable[..., list[dict[str, Any]]],
               meta: Mapping[str, Any], fmt: str, quarantine: Quarantine, *,
               number: bool = True) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The event rows and the runs table rows of every trace (``trace_rows(tid, group,
    quarantine)`` per trace; a trace it fails on is one quarantine row naming its files);
    ``number``: give each trace's rows ``seq`` 0, 1, 2, ... in order."""
    rows: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    for tid, group in traces.items():
        try:
            trows = trace_rows(tid, group, quarantine)
        except UNEXPECTED as exc:  # a last-resort guard; specific checks come first
            quarantine.bad(unexpected_input(exc, sorted({str(it[4]) for it in group})))
            continue
        if number:
            for seq, r in enumerate(trows):
                r["seq"] = seq
        if trows:
            rows.extend(trows)
            runs.append({"run_id": tid, "format": fmt, "source": trows[0]["source"],
                         "created_at": trows[0]["ts"], "attrs": meta[tid]})
    return rows, runs


def read_traces(files: Sequence[Path], fmt: str, quarantine: Quarantine, *,
                progress: bool | None, unwrap: Callable[[Any], list[Any] | None],
                trace_of: Callable[[dict[str, Any]], Any], missing: tuple[str, str],
                note: Callable[[dict[str, Any], dict[str, Any]], None],
                key_of: Callable[[dict[str, Any]], Any], what: str,
                trace_rows: Callable[..., list[dict[str, Any]]],
                merge: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any] | None]
                | None = None, number: bool = True
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The event rows and the runs table rows of a platform export's files: one run per trace.

    The records of every file (:func:`records`, with the format's ``unwrap``) are grouped by
    trace (``trace_of(record)``), across files: a trace whose records sit in several files is
    one run. A record with no trace id is quarantined as ``missing_trace`` (``missing``: its
    detail and field). ``note(record, attrs)`` adds what a record says about its trace to the
    run's ``attrs`` (which start as ``{"format", "file"}``). Copies of one record are then
    kept once (:func:`dedupe` with ``key_of``, ``what`` and ``merge``) and each trace is
    mapped to rows by :func:`trace_runs` (``trace_rows``, ``number``).

    Raises:
        LoadError: under ``errors="raise"``, the first bad record or file.
    """
    traces: dict[str, list[Item]] = {}
    meta: dict[str, dict[str, Any]] = {}
    n = 0

    def read(p: Path) -> None:
        nonlocal n
        for line, raw, rec in records(p, fmt, quarantine, unwrap):
            n += 1
            tid = trace_of(rec)
            if not isinstance(tid, str) or not tid:
                quarantine.bad(bad(fmt, p, line, "missing_trace", missing[0], field=missing[1]),
                               raw_of(raw, rec))
                continue
            traces.setdefault(tid, []).append((n, line, raw, rec, p))
            note(rec, meta.setdefault(tid, {"format": fmt, "file": str(p)}))

    for _ in each_file(files, read, quarantine, desc=f"read_{fmt}", progress=progress):
        pass
    traces = dedupe(traces, key_of, fmt, quarantine, what, merge=merge)
    return trace_runs(traces, trace_rows, meta, fmt, quarantine, number=number)


class NativeTraces:
    """The files a native platform scanner read (``native/src/platform.rs``): which files it
    decided (``ok``; a file it declines, or one sharing a trace with another file, is the
    reference's), each file's first row and run, the runs ``(run_id, created_at, attrs JSON
    text)`` and every row's columns, in the reference's order."""

    def __init__(self, got: tuple[Any, ...]) -> None:
        import numpy as np
        import pyarrow as pa

        from .._base import native as _native

        ok, row_start, run_start, runs, seq, line, columns = got
        self.ok: list[bool] = ok
        self.row_start: list[int] = np.frombuffer(row_start, dtype=np.int64).tolist()
        self.run_start: list[int] = np.frombuffer(run_start, dtype=np.int64).tolist()
        self.runs: list[tuple[str, str | None, str]] = runs
        n = self.row_start[-1]
        self.cols: dict[str, Any] = {name: _native.to_arrow(c) for name, c in columns}
        self.cols["seq"] = _native.to_arrow(("int64", n, 0, None, seq, None))
        self.cols["source_line"] = _native.to_arrow(("int64", n, 0, None, line, None))
        self.cols["parent_run_id"] = pa.nulls(n, pa.string())
        self.cols["chunk_type"] = pa.nulls(n, pa.string())

    def part(self, start: int, stop: int) -> dict[str, Any]:
        """The columns of rows ``start:stop``."""
        return {name: c.slice(start, stop - start) for name, c in self.cols.items()}


def joined_log(files: Sequence[Path], scanned: NativeTraces, rows: list[dict[str, Any]],
               runs: list[dict[str, Any]], fmt: str, tenant: str,
               quarantine: Quarantine) -> Any:
    """One EventLog of the native rows and the reference's (``rows`` / ``runs``:
    :func:`read_traces` of the files the scanner declined), in the reference's order: runs
    by the file that first holds them (the native files' traces are in no other file), each
    run's rows together."""
    from itertools import groupby

    from ._records import arrays_to_log, row_arrays

    index = {str(p): k for k, p in enumerate(files)}
    by_file: dict[int, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    at = 0
    counts = [(rid, len(list(g))) for rid, g in groupby(r["run_id"] for r in rows)]
    for run, (rid, count) in zip(runs, counts, strict=True):
        assert run["run_id"] == rid
        part = by_file.setdefault(index[run["attrs"]["file"]], ([], []))
        part[0].extend(rows[at:at + count])
        part[1].append(run)
        at += count
    parts: list[dict[str, Any]] = []
    all_runs: list[dict[str, Any]] = []
    native_from: int | None = None
    for k, p in enumerate(files):
        if scanned.ok[k]:
            if native_from is None:
                native_from = scanned.row_start[k]
            for run_id, created_at, attrs in scanned.runs[scanned.run_start[k]:
                                                          scanned.run_start[k + 1]]:
                all_runs.append({"run_id": run_id, "format": fmt, "source": f"{fmt}:{p}",
                                 "created_at": created_at, "attrs": json.loads(attrs)})
            continue
        if native_from is not None:
            parts.append(scanned.part(native_from, scanned.row_start[k]))
            native_from = None
        if k in by_file:
            ref_rows, ref_runs = by_file[k]
            if ref_rows:
                parts.append(row_arrays(ref_rows))
            all_runs.extend(ref_runs)
    if native_from is not None:
        parts.append(scanned.part(native_from, scanned.row_start[-1]))
    return arrays_to_log(parts, all_runs, tenant, quarantine)
