"""Parquet datasets of event logs: the partition files of a tenant/run layout,
:func:`read_parquet`."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._base.delegates import lazy_module
from ..errors import LoadError, refuse_special_file
from ..schema import EVENTS_SCHEMA, QUARANTINE_SCHEMA, empty_events
from ..tenancy import (
    PARTITION_PREFIX,
    check_tenant_column,
    check_tenant_ids,
    partition_dir_name,
    partition_dir_tenant,
    scope_side_table,
    tenant_id_problem,
)
from .log import RUNS_SCHEMA, TENANT_KEY, EventLog, _as_quarantine

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow.dataset as ds
else:  # imported on first use (pandas is about half of the command line's start-up)
    pd = lazy_module("pandas")
    ds = lazy_module("pyarrow.dataset")

__all__ = ["read_parquet"]

#: Side files of a dataset (:meth:`EventLog.to_parquet`): ``_runs.parquet`` and
#: ``_quarantine.parquet`` inside each ``tenant_id=<id>/`` folder (that tenant's rows, with
#: their ``tenant_id`` column), and at the root only the quarantined rows of no known tenant.
RUNS_FILE = "_runs.parquet"
QUARANTINE_FILE = "_quarantine.parquet"
NO_TENANT_QUARANTINE_FILE = "_quarantine_no_tenant.parquet"


class LegacyDatasetWarning(UserWarning):
    """A Parquet dataset in the layout before replaykit 0.x issue 30: its ``_runs.parquet``
    and ``_quarantine.parquet`` at the root hold every tenant's rows, so per-folder file
    permissions do not isolate tenants. It still reads; rewrite it with
    ``rk.read_parquet(old).to_parquet(new)``."""


def _partition_error(errors: str, bad: list[dict[str, Any]], *, owner: str | None = None,
                     **kw: Any) -> None:
    err = LoadError(**kw)
    if errors == "raise":
        raise err
    rec = err.as_record()
    rec.update(raw=None, tenant_id=owner, run_id=None)
    bad.append(rec)


def partition_files(root: Path, tenants: Sequence[str] | None = None, *, errors: str = "raise",
                    bad: list[dict[str, Any]] | None = None,
                    pins: dict[str, Path] | None = None) -> list[tuple[str, Path]]:
    """(tenant id, file) for every ``*.parquet`` file under the ``tenant_id=<id>/`` folders of
    a dataset (``tenants``: only those tenants' folders), in (tenant, path) order.

    A folder must be the canonical encoding of a valid tenant id
    (:func:`replaykit.tenancy.partition_dir_tenant`). Under ``errors="raise"`` a bad one is a
    LoadError (``bad_tenant``: the id it decodes to breaks the rule; ``bad_partition``: the
    name is not canonical or not UTF-8); under ``"quarantine"`` its files are skipped and
    one row per folder is appended to ``bad``. With ``tenants``, other tenants' folders are
    not opened, and a bad folder matters only when it decodes to a requested tenant.

    ``pins`` (folder name -> the folder to list, :func:`pin_folders`): the files are listed
    in, and named by, the pinned folder (a dataset written by :func:`replaykit.ingest`, whose
    tenant folders are links that a commit swaps: one read then sees one generation).
    """
    wanted = None if tenants is None else set(tenants)
    found: list[tuple[str, Path]] = []
    sink: list[dict[str, Any]] = [] if bad is None else bad
    for d in _partition_dirs(root, tenants):
        tenant, problem = partition_dir_tenant(d.name)
        if problem is not None:
            if wanted is not None and tenant not in wanted:
                continue  # not a folder of the requested tenants: never opened
            valid = tenant is not None and tenant_id_problem(tenant) is None
            _partition_error(
                errors, sink, source=str(d), line=None, field="tenant_id",
                reason="bad_partition" if tenant is None or valid else "bad_tenant",
                detail=problem, owner=tenant if valid else None,
                fix=("partition folders are written by EventLog.to_parquet as "
                     "tenant_id=<percent-encoded tenant id>; rename or remove the folder"))
            continue
        if wanted is not None and tenant not in wanted:
            continue
        base = d if pins is None else pins.get(d.name, d)
        for f in sorted(base.rglob("*.parquet")):
            if f.is_file() and not any(part.startswith(("_", "."))
                                       for part in f.relative_to(base).parts):
                found.append((tenant, f))  # type: ignore[arg-type]
    return found


def pin_folders(root: Path, tenants: Sequence[str] | None = None) -> dict[str, Path]:
    """Folder name -> the folder itself, or for a tenant folder that is a symbolic link (a
    dataset written by :func:`replaykit.ingest`) the generation it points to now, resolved
    once: a read that lists and opens files through these sees one generation of each tenant,
    whatever commit happens meanwhile."""
    return {d.name: Path(os.path.realpath(d)) if d.is_symlink() else d
            for d in _partition_dirs(root, tenants)}


def _partition_dirs(root: Path, tenants: Sequence[str] | None) -> list[Path]:
    """The ``tenant_id=`` folders of a dataset (with ``tenants``, at least theirs). A reader
    allowed into its tenant's folder only may not list the root: then the requested tenants'
    folders are taken by name."""
    try:
        return sorted(p for p in root.iterdir()
                      if p.name.startswith(PARTITION_PREFIX) and p.is_dir())
    except PermissionError:
        if tenants is None:
            raise
        return sorted(d for d in (root / partition_dir_name(t) for t in tenants) if d.is_dir())


def _side_file(path: Path, tenant: str | None, errors: str,
               bad: list[dict[str, Any]]) -> pa.Table | None:
    """A tenant folder's side file (runs, quarantine), or None when there is none. Each row
    must be the folder's tenant's (a planted file of another tenant is
    ``partition_mismatch``: raised, or its rows left out and one quarantine row added)."""
    import pyarrow.parquet as pq

    if not path.is_file():
        return None
    table = pq.read_table(path)
    if tenant is None:
        return table
    if "tenant_id" not in table.schema.names:
        problem = "has no tenant_id column"
        keep = None
    else:
        col = table.column("tenant_id")
        col = col.cast(pa.string()) if col.type != pa.string() else col
        keep = pc.fill_null(pc.equal(col, tenant), False)
        n_bad = table.num_rows - pc.sum(keep).as_py() if table.num_rows else 0
        if not n_bad:
            return table
        problem = f"holds {n_bad} row(s) of another tenant (or of none)"
    _partition_error(
        errors, bad, source=str(path), line=None, field="tenant_id",
        reason="partition_mismatch", owner=tenant,
        detail=f"side file of the folder of tenant {tenant!r} {problem}",
        fix=("a tenant folder's side files hold that tenant's rows only (EventLog.to_parquet "
             "writes them so); remove the file or write the dataset again"))
    return table.schema.empty_table() if keep is None else table.filter(keep)


_UTF8_FIX = ("Arrow reads any bytes as text and replaykit never writes such values: the file "
             "was damaged or written by another tool. Restore it from a trusted copy, or "
             "remove it (errors=\"quarantine\" reads the other rows).")


def _utf8_rows_out(batch: pa.RecordBatch, path: str, tenant: str | None, errors: str,
                   malformed: list[tuple[str, pa.Table]]) -> pa.RecordBatch:
    """``batch`` without its rows whose text is not UTF-8 (any string column, dictionary
    ones included). Under ``errors="raise"`` such a row is a LoadError
    (``malformed_value``) naming the file, the column and the value with its bytes shown
    escaped; under ``"quarantine"`` each goes to ``malformed`` as a quarantine row of the
    folder's tenant (raw: the payload, escaped). Column-wise: one Arrow validation of the
    batch, and the rows located only when it fails."""
    from ..schema import (
        escape_invalid_utf8,
        escape_table_utf8,
        invalid_utf8_columns,
        shown_bytes,
        text_is_utf8,
    )

    if text_is_utf8(batch):
        return batch
    found = invalid_utf8_columns(batch)
    table = pa.Table.from_batches([batch])
    if not found:  # only dictionary entries no row uses: shown escaped, no row is bad
        return escape_table_utf8(table)[0].to_batches()[0]
    first_col = np.full(batch.num_rows, -1, np.int64)
    for k, rows in enumerate(found.values()):
        first_col[rows] = np.where(first_col[rows] < 0, k, first_col[rows])
    names = list(found)
    rows_bad = np.flatnonzero(first_col >= 0)
    if errors == "raise":
        name = names[int(first_col[rows_bad[0]])]
        value = shown_bytes(table.column(name), rows_bad[:1])[0]
        raise LoadError(
            source=path, line=None, field=name, reason="malformed_value",
            detail=(f"holds text that is not UTF-8 in {len(rows_bad)} row(s) (first: "
                    f"{value})"),
            fix=_UTF8_FIX)
    shown = table.take(pa.array(rows_bad))
    for name in ("payload", "run_id", *names):
        i = shown.schema.get_field_index(name)
        shown = shown.set_column(i, shown.schema.field(i), escape_invalid_utf8(shown.column(i)))
    fields = [names[k] for k in first_col[rows_bad].tolist()]
    text = {name: shown_bytes(table.column(name), rows_bad) for name in names}
    values = [text[f][j] for j, f in enumerate(fields)]
    n = len(rows_bad)
    msgs = [f"{path}: field {f!r} holds text that is not UTF-8 ({v}) "
            f"(reason=malformed_value). {_UTF8_FIX}" for f, v in zip(fields, values, strict=True)]
    malformed.append((path, pa.table({
        "source": pa.array([path] * n, pa.string()),
        "line": pa.nulls(n, pa.int64()),
        "field": pa.array(fields, pa.string()),
        "reason": pa.array(["malformed_value"] * n, pa.string()),
        "message": pa.array(msgs, pa.string()),
        "raw": pc.cast(shown.column("payload"), pa.large_string()),
        "tenant_id": pa.array([tenant] * n, pa.string()),
        "run_id": pc.cast(shown.column("run_id"), pa.string()),
    }, schema=QUARANTINE_SCHEMA)))
    keep = np.ones(batch.num_rows, bool)
    keep[rows_bad] = False
    # the rows kept are UTF-8; dictionaries may still hold the bad rows' entries: escaped
    kept = escape_table_utf8(table.filter(pa.array(keep)))[0].combine_chunks()
    return kept.to_batches()[0] if kept.num_rows else batch.slice(0, 0)


def _readable_side(path: Path, tenant: str, errors: str, bad: list[dict[str, Any]],
                   schema: pa.Schema) -> pa.Table | None:
    """A tenant folder's side file (:func:`_side_file`) in ``schema`` (runs or quarantine),
    or None when there is none. A side file that is not Parquet or whose columns are not
    the side table's is :func:`_bad_file` (raised, or one quarantine row and the file left
    out): one bad side file never fails the tenant."""
    try:
        t = _side_file(path, tenant, errors, bad)
        if t is None:
            return None
        return t.cast(schema) if schema is RUNS_SCHEMA else _as_quarantine(t).cast(schema)
    except (pa.ArrowException, OSError, ValueError, KeyError, TypeError) as exc:
        _bad_file(str(path), tenant, errors, bad, None,
                  f"is not a {path.name} replaykit writes ({type(exc).__name__}: "
                  f"{str(exc)[:200]})", exc)
        return None


def _utf8_headers(runs: pa.Table, path: Path, tenant: str | None, errors: str,
                  bad: list[dict[str, Any]]) -> pa.Table:
    """A ``_runs.parquet`` table without its header rows whose text is not UTF-8: a
    LoadError (``malformed_value``, the value shown escaped) under ``errors="raise"``, else
    one quarantine row per header row (of the folder's tenant) and the row left out."""
    from ..schema import escape_table_utf8, shown_bytes

    escaped, found = escape_table_utf8(runs)
    if not found:
        return runs
    bad_rows = np.unique(np.concatenate(list(found.values())))
    for name, rows in found.items():
        value = shown_bytes(runs.column(name), rows[:1])[0]
        detail = f"holds text that is not UTF-8 in {len(rows)} header row(s) (first: {value})"
        if errors == "raise":
            raise LoadError(source=str(path), line=None, field=name, reason="malformed_value",
                            detail=detail, fix=_UTF8_FIX)
    field_of: dict[int, str] = {}
    for name, rows in reversed(found.items()):  # a row's first column that holds any
        field_of.update(dict.fromkeys(rows.tolist(), name))
    for r, rec in zip(bad_rows.tolist(), escaped.take(pa.array(bad_rows)).to_pylist(),
                      strict=True):
        name = field_of[r]
        err = LoadError(source=str(path), line=None, field=name, reason="malformed_value",
                        detail=(f"header row of run {rec['run_id']!r} (its text shown "
                                "escaped) holds text that is not UTF-8: "
                                f"{shown_bytes(runs.column(name), [r])[0]}"), fix=_UTF8_FIX)
        row = err.as_record()
        row.update(raw=rec["attrs"], tenant_id=tenant, run_id=rec["run_id"])
        bad.append(row)
    keep = np.ones(runs.num_rows, bool)
    keep[bad_rows] = False
    return runs.filter(pa.array(keep))


def read_partition_files(files: Sequence[tuple[str, Path | str]], *, filter: Any = None,
                         errors: str = "raise",
                         bad: list[dict[str, Any]] | None = None) -> pa.Table:
    """The events of dataset files, each checked against its partition folder's tenant.

    ``files``: (folder tenant, file) pairs (:func:`partition_files`); ``filter``: a
    ``pyarrow.dataset`` expression pushed into the scan. A file belongs to its folder's
    tenant: the tenant its footer names (:data:`TENANT_KEY`, written by
    :meth:`EventLog.to_parquet`) and every value of a ``tenant_id`` column it has must be
    that tenant. A file where either disagrees is a ``LoadError`` naming the file (reason
    ``partition_mismatch``) under ``errors="raise"``; under ``"quarantine"`` all its
    (scanned) rows go to ``bad`` as quarantine rows of no known tenant (raw: the payload),
    plus one row for the folder's tenant without raw content. A file that names no tenant
    (no footer key, no tenant_id column, or nulls there: written by older versions or by
    other tools) takes its folder's tenant. Checked once per file and per record batch on
    the dictionary of the column (no per-row Python).

    Returns:
        a table in :data:`~replaykit.schema.EVENTS_SCHEMA` (not sorted).
    """
    if not files:
        return empty_events()
    sink: list[dict[str, Any]] = [] if bad is None else bad
    tenant_of = {str(f): t for t, f in files}
    paths = _readable_files([str(f) for _, f in files], tenant_of, errors, sink)
    if not paths:
        return empty_events()
    # a tenant_id column (foreign files) straight from the Parquet dictionary pages
    fmt = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(
        dictionary_columns={"tenant_id"}))
    # the canonical columns, whatever the first file holds (absent ones read as nulls)
    schema = pa.schema([f.with_nullable(True) for f in EVENTS_SCHEMA])
    names = list(EVENTS_SCHEMA.names)
    tenant_dict = pa.array(sorted(set(tenant_of.values())), pa.string())
    code_of = {t: i for i, t in enumerate(tenant_dict.to_pylist())}
    t_pos = names.index("tenant_id")
    batches: list[tuple[str, pa.RecordBatch]] = []
    tainted: dict[str, int] = {}
    damaged: dict[str, tuple[str, int]] = {}  # file -> (first column with nulls, rows)
    claims: dict[str, bytes | None] = {}
    malformed: list[tuple[str, pa.Table]] = []  # (file, quarantine rows): text not UTF-8
    required = [(i, f.name) for i, f in enumerate(EVENTS_SCHEMA)
                if not f.nullable and f.name != "tenant_id"]  # tenant_id: from the folder

    def _mismatch(path: str, want: str, rows: int) -> None:
        if errors == "raise":
            raise LoadError(
                source=path, line=None, field="tenant_id", reason="partition_mismatch",
                detail=(f"{rows} row(s) are another tenant's than their partition folder's "
                        f"({want!r}): the file's tenant_id column or its footer says so; rows "
                        "are never relabelled"),
                fix=("the file is not this tenant's: move it to its own tenant's folder or "
                     "remove it (or pass errors=\"quarantine\")"))
        tainted[path] = tainted.get(path, 0) + rows

    def _damaged(path: str, batch: pa.RecordBatch) -> None:
        """A file with nulls in a column no replaykit dataset leaves null: bad_parquet."""
        for i, name in required:
            nulls = batch.column(i).null_count
            if not nulls:
                continue
            if errors == "raise":
                raise LoadError(
                    source=path, line=None, field=name, reason="bad_parquet",
                    detail=(f"{nulls} row(s) have a null {name!r}, which a replaykit dataset "
                            "never holds: the file was damaged or not written by replaykit"),
                    fix=("rewrite the dataset with EventLog.to_parquet, or remove the file "
                         "(or pass errors=\"quarantine\")"))
            field, rows = damaged.get(path, (name, 0))
            damaged[path] = (field, rows + nulls)
            return

    for tagged in _scan_files(paths, fmt, schema, names, filter, tenant_of, errors, sink):
        batch = tagged.record_batch
        if batch.num_rows == 0:
            continue
        path = tagged.fragment.path
        want = tenant_of[path]
        batch = _utf8_rows_out(batch, path, want, errors, malformed)
        if batch.num_rows == 0:
            continue
        if path not in claims:  # once per file: the tenant its footer names, if any
            meta = tagged.fragment.physical_schema.metadata or {}
            claims[path] = meta.get(TENANT_KEY)
        claim = claims[path]
        if claim is not None and claim != want.encode("utf-8"):
            _mismatch(path, want, batch.num_rows)
        col = batch.column(t_pos)
        if col.null_count < len(col):
            if pa.types.is_dictionary(col.type):  # the few dictionary entries in use
                seen = pc.unique(col.dictionary.take(pc.unique(col.indices.drop_null())))
            else:
                seen = pc.unique(col.drop_null())
            if len(seen) != 1 or seen[0].as_py() != want:
                _mismatch(path, want, int(pc.sum(pc.fill_null(pc.not_equal(
                    pc.cast(col, pa.string()), want), False)).as_py() or 0))
        _damaged(path, batch)
        code = np.full(batch.num_rows, code_of[want], dtype=np.int32)
        tenant = pa.DictionaryArray.from_arrays(pa.array(code), tenant_dict)
        batches.append((path, batch.set_column(t_pos, "tenant_id", tenant)))
    out: list[pa.RecordBatch] = []
    if bad is not None:
        for path, rows in malformed:  # a file of another tenant: its rows are no tenant's
            if path in tainted:
                rows = rows.set_column(rows.schema.get_field_index("tenant_id"), "tenant_id",
                                       pa.nulls(rows.num_rows, pa.string()))
            bad.extend(rows.to_pylist())
        for path, count in tainted.items():  # what the folder's tenant may see: no raw rows
            bad.append({
                "source": path, "line": None, "field": "tenant_id",
                "reason": "partition_mismatch", "raw": None, "tenant_id": tenant_of[path],
                "run_id": None,
                "message": (f"{path}: {count} row(s) of this file carry a tenant_id other than "
                            "their partition folder's (reason=partition_mismatch); the file's "
                            "rows are quarantined (shown only in an all-tenants read). Move "
                            "the file to its own tenant's folder or remove it.")})
        for path, (field, count) in damaged.items():
            if path not in tainted:  # the folder's own file: its tenant may see the report
                bad.append({
                    "source": path, "line": None, "field": field, "reason": "bad_parquet",
                    "raw": None, "tenant_id": tenant_of[path], "run_id": None,
                    "message": (f"{path}: {count} row(s) of this file have a null {field!r} "
                                "(reason=bad_parquet); the file's rows are quarantined. "
                                "Rewrite the dataset with EventLog.to_parquet or remove "
                                "the file.")})
    for path, batch in batches:
        if path not in tainted and path not in damaged:
            out.append(batch)
            continue
        if bad is None:
            continue
        n = batch.num_rows
        payload = batch.column(names.index("payload"))
        if path in tainted:
            field, reason = "tenant_id", "partition_mismatch"
            msg = (f"{path}: field 'tenant_id' {tainted[path]} row(s) of this file carry a "
                   f"tenant_id other than their partition folder's (reason="
                   "partition_mismatch). The whole file is quarantined: move it to its own "
                   "tenant's folder or remove it.")
        else:
            field, reason = damaged[path][0], "bad_parquet"
            msg = (f"{path}: field {field!r} {damaged[path][1]} row(s) of this file are null "
                   "(reason=bad_parquet). The whole file is quarantined: rewrite the dataset "
                   "with EventLog.to_parquet or remove the file.")
        bad_rows = pa.table({
            "source": pa.array([path] * n, pa.string()),
            "line": pa.nulls(n, pa.int64()),
            "field": pa.array([field] * n, pa.string()),
            "reason": pa.array([reason] * n, pa.string()),
            "message": pa.array([msg] * n, pa.string()),
            "raw": pc.cast(payload, pa.large_string()),
            "tenant_id": pa.nulls(n, pa.string()),
            "run_id": pa.nulls(n, pa.string()),
        }, schema=QUARANTINE_SCHEMA)
        bad.extend(bad_rows.to_pylist())
    if not out:
        return empty_events()
    table = pa.Table.from_batches(out)
    return pa.Table.from_arrays(table.columns, schema=EVENTS_SCHEMA).unify_dictionaries() \
        .combine_chunks()


_BAD_FILE_FIX = ("the file is not one EventLog.to_parquet writes (planted, damaged or "
                 "written by another tool): remove it or rewrite the dataset with "
                 "EventLog.to_parquet (errors=\"quarantine\" reads the other files)")


def _type_family(t: pa.DataType) -> str:
    """What a column holds, whatever its encoding: text (plain, large or dictionary),
    integers (any width), floats, times, booleans; other types by name."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "text"
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_boolean(t):
        return "boolean"
    return str(t)


def _bad_file(path: str, tenant: str, errors: str, bad: list[dict[str, Any]],
              field: str | None, detail: str, exc: BaseException | None = None) -> None:
    """One dataset file that cannot be read as events: a LoadError naming it under
    ``errors="raise"``; else one quarantine row of its folder's tenant (no raw content)
    and the file is left out: the tenant's other files still read."""
    err = LoadError(source=path, line=None, field=field, reason="bad_parquet", detail=detail,
                    fix=_BAD_FILE_FIX)
    if errors == "raise":
        raise err from exc
    rec = err.as_record()
    rec.update(raw=None, tenant_id=tenant, run_id=None)
    bad.append(rec)


def _readable_files(paths: list[str], tenant_of: dict[str, str], errors: str,
                    bad: list[dict[str, Any]]) -> list[str]:
    """The files whose footer reads and whose canonical columns hold what the canonical
    schema says (text, integers, times, ...: any width or encoding Arrow casts); each other
    file is :func:`_bad_file`. One footer read per file, no data."""
    import pyarrow.parquet as pq

    canon = {f.name: f.type for f in EVENTS_SCHEMA}
    good = []
    for path in paths:
        try:
            schema = pq.read_schema(path)
        except (pa.ArrowException, OSError) as exc:
            _bad_file(path, tenant_of[path], errors, bad, None,
                      f"is not readable Parquet ({type(exc).__name__}: {str(exc)[:200]})", exc)
            continue
        wrong = [(f.name, f.type) for f in schema
                 if f.name in canon and _type_family(f.type) != _type_family(canon[f.name])]
        twice = sorted({n for n in schema.names if schema.names.count(n) > 1})
        if twice:
            _bad_file(path, tenant_of[path], errors, bad, twice[0],
                      f"is a column name the file holds more than once ({twice})")
        elif wrong:
            name, typ = wrong[0]
            _bad_file(path, tenant_of[path], errors, bad, name,
                      f"has type {typ} in this file where events hold {canon[name]}"
                      + (f" (and {len(wrong) - 1} more column(s) of a wrong type: "
                         f"{[n for n, _ in wrong[1:]]})" if len(wrong) > 1 else ""))
        else:
            good.append(path)
    return good


def _scan_files(paths: list[str], fmt: Any, schema: pa.Schema, names: list[str], filter: Any,
                tenant_of: dict[str, str], errors: str,
                bad: list[dict[str, Any]]) -> list[Any]:
    """The tagged batches of the files (one scan of them all). When that scan fails (a
    file whose data cannot be read or cast), the files are scanned one by one and each that
    fails is :func:`_bad_file`: one bad file never fails the others."""
    def scan(ps: list[str]) -> list[Any]:
        dataset = ds.dataset(ps, format=fmt, schema=schema)
        return list(dataset.scanner(columns=names, filter=filter).scan_batches())

    try:
        return scan(paths)
    except (pa.ArrowException, OSError) as exc:
        if len(paths) == 1:
            _bad_file(paths[0], tenant_of[paths[0]], errors, bad, None,
                      f"cannot be read as events ({type(exc).__name__}: {str(exc)[:200]})", exc)
            return []
    out: list[Any] = []
    for path in paths:
        out.extend(_scan_files([path], fmt, schema, names, filter, tenant_of, errors, bad))
    return out


def utc_time(value: Any) -> Any:
    """A time bound (``since`` / ``until``) as a UTC ``pandas.Timestamp``: a naive time or
    text without an offset is read as UTC, an aware one (or text with an offset) converted.

    Example:
        >>> import datetime as dt
        >>> str(utc_time(dt.datetime(2025, 1, 1, 2, tzinfo=dt.timezone(dt.timedelta(hours=2)))))
        '2025-01-01 00:00:00+00:00'
        >>> str(utc_time("2025-01-01"))
        '2025-01-01 00:00:00+00:00'

    Raises:
        ValueError: not a time pandas can read.
    """
    import pandas as pd

    ts = pd.Timestamp(value)
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


def read_parquet(
    path: str | os.PathLike[str],
    *,
    tenant_id: str | Sequence[str] | None = None,
    run_ids: str | Sequence[str] | None = None,
    types: str | Sequence[str] | None = None,
    kinds: str | Sequence[str] | None = None,
    since: Any = None,
    until: Any = None,
    errors: str = "raise",
) -> EventLog:
    """Read a dataset written by :meth:`EventLog.to_parquet`, pushing filters down.

    ``tenant_id`` prunes partitions (other tenants' files are never opened); ``run_ids``,
    ``types``, ``kinds`` (as in :meth:`EventLog.filter`) and the ``since``/``until`` time
    bounds (inclusive; anything pandas can turn into a UTC timestamp) are pushed into the
    Parquet scan so row groups that cannot match are skipped.

    Tenancy checks (:mod:`replaykit.tenancy`): each ``tenant_id=<id>`` folder must be the
    canonical percent-encoding of a valid tenant id and decodes to exactly that id; each
    row's own ``tenant_id`` must equal its folder's (a file where one does not is never
    relabelled: ``partition_mismatch``); a row without one (files written by older versions,
    which dropped the column) takes its folder's tenant. The log is a view of the requested
    tenants / runs: ``runs`` and ``quarantine`` hold only theirs (quarantined rows of no
    known tenant show only when ``tenant_id`` is None).

    Args:
        errors: ``"raise"``: a bad folder or file is a LoadError; ``"quarantine"``: its rows
            (or one row per bad folder) go to ``log.quarantine`` with the reason, and reading
            goes on.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        LoadError: ``special_file``: ``path`` is a FIFO, socket or device.
        LoadError: ``bad_tenant`` (a ``tenant_id`` argument, a folder or a ``_runs.parquet``
            row breaks the tenant-id rule), ``bad_partition`` (a folder name that is not the
            canonical encoding), ``partition_mismatch`` (a file's rows are another tenant's),
            under ``errors="raise"``.
        LoadError: a file of the dataset is not readable Parquet or not a replaykit table
            (reason ``bad_parquet``, naming the dataset folder).
    """
    root = Path(path)
    refuse_special_file(root)  # a FIFO or device: said as such, never opened
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such Parquet dataset")
    if errors not in ("raise", "quarantine"):
        raise ValueError(f'errors must be "raise" or "quarantine", got {errors!r}')
    for bound in (since, until):  # a bad bound is the caller's error: raised as itself, here
        if bound is not None:
            utc_time(bound)
    try:
        return _read_dataset(root, tenant_id, run_ids, types, since, until, errors, kinds)
    except (pa.ArrowException, OSError, KeyError, ValueError) as exc:
        from ..errors import LoadError

        raise LoadError(
            source=str(root), line=None, reason="bad_parquet",
            detail=f"is not a readable replaykit Parquet dataset ({type(exc).__name__}: "
                   f"{str(exc)[:300]})",
            fix="Write it again with EventLog.to_parquet, or remove the damaged file.",
        ) from exc


def _read_dataset(root: Path, tenant_id: str | Sequence[str] | None,
                  run_ids: str | Sequence[str] | None, types: str | Sequence[str] | None,
                  since: Any, until: Any, errors: str,
                  kinds: str | Sequence[str] | None = None) -> EventLog:  # fmt: skip

    def _values(v: str | Sequence[str]) -> list[str]:
        return [v] if isinstance(v, str) else list(v)

    tenants = None if tenant_id is None else check_tenant_ids(
        tenant_id, source="read_parquet(tenant_id=...)")
    runs_wanted = None if run_ids is None else _values(run_ids)
    expr = None

    def _and(e: ds.Expression) -> None:
        nonlocal expr
        expr = e if expr is None else (expr & e)

    if runs_wanted is not None:
        _and(ds.field("run_id").isin(runs_wanted))
    if types is not None:
        _and(ds.field("type").isin(_values(types)))
    if kinds is not None:
        _and(ds.field("kind").isin(_values(kinds)))
    if since is not None:
        _and(ds.field("ts") >= pa.scalar(utc_time(since).as_unit("us"),
                                          type=pa.timestamp("us", tz="UTC")))
    if until is not None:
        _and(ds.field("ts") <= pa.scalar(utc_time(until).as_unit("us"),
                                          type=pa.timestamp("us", tz="UTC")))
    bad: list[dict[str, Any]] = []
    pins = pin_folders(root, tenants)  # side files and parts of the same generation
    files = partition_files(root, tenants, errors=errors, bad=bad, pins=pins)
    table = read_partition_files(files, filter=expr, errors=errors, bad=bad)
    import pyarrow.parquet as pq

    legacy = [f for f in (RUNS_FILE, QUARANTINE_FILE) if (root / f).exists()]
    runs: pa.Table | None
    quarantine: pa.Table | None = None
    if legacy:  # the layout before issue 30: every tenant's side rows in one root file
        warnings.warn(
            f"{root} is a dataset in the older layout: {' and '.join(legacy)} at its root "
            "hold every tenant's rows, so folder permissions do not isolate tenants. It "
            "reads as before; rewrite it in the current layout (side files inside each "
            "tenant_id=<id>/ folder) with rk.read_parquet(old).to_parquet(new)",
            LegacyDatasetWarning, stacklevel=3)
        runs = None
        if (root / RUNS_FILE).exists():
            runs = _utf8_headers(pq.read_table(root / RUNS_FILE).cast(RUNS_SCHEMA),
                                 root / RUNS_FILE, None, errors, bad)
        if (root / QUARANTINE_FILE).exists():
            quarantine = _as_quarantine(pq.read_table(root / QUARANTINE_FILE))
    else:
        runs_parts, quar_parts = [], []
        for d in (root / name for name in pins):  # the folders the parts were listed from
            tenant, problem = partition_dir_tenant(d.name)
            if problem is not None or tenant is None or (tenants is not None
                                                         and tenant not in tenants):
                continue  # (a bad folder was reported by partition_files)
            here = pins.get(d.name, d)
            r = _readable_side(here / RUNS_FILE, tenant, errors, bad, RUNS_SCHEMA)
            if r is not None:
                runs_parts.append(_utf8_headers(r, here / RUNS_FILE, tenant, errors, bad))
            q = _readable_side(here / QUARANTINE_FILE, tenant, errors, bad, QUARANTINE_SCHEMA)
            if q is not None:
                quar_parts.append(q)
        if tenants is None and (root / NO_TENANT_QUARANTINE_FILE).is_file():
            quar_parts.append(_as_quarantine(pq.read_table(root / NO_TENANT_QUARANTINE_FILE)))
        runs = pa.concat_tables(runs_parts) if runs_parts else None
        quarantine = pa.concat_tables(quar_parts) if quar_parts else None
    if runs is not None and tenants is not None:
        runs = runs.filter(pc.is_in(runs.column("tenant_id"), pa.array(tenants, pa.string())))
    if runs is not None and runs_wanted is not None:
        runs = runs.filter(pc.is_in(runs.column("run_id"), pa.array(runs_wanted, pa.string())))
    if runs is not None and runs.num_rows:
        try:
            check_tenant_column(runs.column("tenant_id"), source=str(root / "_runs.parquet"))
        except LoadError as err:
            if errors == "raise":
                raise
            from ..tenancy import bad_tenant_mask

            _partition_error("quarantine", bad, source=err.source, line=None,
                             field="tenant_id", reason="bad_tenant", detail=err.detail,
                             fix=err.fix)
            runs = runs.filter(pa.array(~bad_tenant_mask(runs.column("tenant_id"))))
    if quarantine is not None:
        quarantine = scope_side_table(quarantine, tenants=tenants, run_ids=runs_wanted)
    if bad:
        found = pa.Table.from_pylist(bad, schema=QUARANTINE_SCHEMA)
        if tenants is not None:  # rows of no known tenant: only in an all-tenants read
            found = scope_side_table(found, tenants=tenants)
        if found is not None and found.num_rows:
            quarantine = found if quarantine is None else pa.concat_tables([quarantine, found])
    return EventLog(table, runs=runs, quarantine=quarantine)
