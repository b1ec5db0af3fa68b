"""The one tenant-id rule, shared by every loader, writer and view.

A tenant id is the key of every isolation promise replaykit makes, so it has exactly one
definition, enforced everywhere a tenant id enters or leaves replaykit:

* a non-empty ``str``;
* at most :data:`TENANT_ID_MAX_LEN` characters;
* no control characters: nothing in Unicode category ``Cc`` (U+0000-U+001F, U+007F-U+009F),
  and no line or paragraph separators (U+2028, U+2029).

Anything else (spaces, ``/``, ``=``, ``%``, non-ASCII letters) is allowed: partition folders
encode the id reversibly with :func:`encode_partition_value`, so a folder name decodes to
exactly the same string (:func:`decode_partition_value`).

Loaders report a violation as ``LoadError(reason="bad_tenant")`` (or quarantine the row with that
reason); writers refuse with the same error. Comparisons of tenant ids are byte-exact (never
case-folded, never normalised).

Views (:meth:`EventLog.filter`, :meth:`EventLog.run`, ``read_parquet(..., tenant_id=...)``)
scope every side table with :func:`scope_side_table`: a table with ``tenant_id`` / ``run_id``
columns keeps only the rows of the view's tenants / runs (a null there belongs to no tenant);
a table without the column the view restricts on is dropped from the view.

Example:
    >>> from replaykit.tenancy import tenant_id_problem, encode_partition_value
    >>> tenant_id_problem("acme") is None
    True
    >>> tenant_id_problem("acme\\x00x")
    'contains control character U+0000'
    >>> encode_partition_value("a/b=c")
    'a%2Fb%3Dc'
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from urllib.parse import quote, unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import LoadError

__all__ = [
    "BAD_TENANT_PATTERN",
    "BadTenantError",
    "PARTITION_NAME_MAX_BYTES",
    "PARTITION_PREFIX",
    "TENANT_ID_MAX_LEN",
    "bad_tenant_mask",
    "check_tenant_column",
    "check_tenant_id",
    "check_tenant_ids",
    "compact_dictionaries",
    "decode_partition_value",
    "detached",
    "encode_partition_value",
    "partition_dir_name",
    "partition_dir_tenant",
    "scope_extras",
    "scope_side_table",
    "tenant_id_problem",
]

#: Prefix of a tenant's partition folder (hive layout): ``tenant_id=<encoded id>``.
PARTITION_PREFIX = "tenant_id="

#: Longest tenant id accepted, in characters.
TENANT_ID_MAX_LEN = 256

#: Longest partition folder name (``tenant_id=<encoded id>``) a dataset writer creates, in
#: bytes: the file-name limit of common file systems (ext4, XFS, APFS, NTFS).
PARTITION_NAME_MAX_BYTES = 255

#: Characters a tenant id may not contain (an RE2 character class, as Arrow's regex kernels
#: read it).
BAD_TENANT_PATTERN = "[\\x00-\\x1f\\x7f-\\x9f\\x{2028}\\x{2029}]"
_BAD = re.compile("[\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029]")


def tenant_id_problem(value: object) -> str | None:
    """What is wrong with ``value`` as a tenant id, in words, or None when it is a valid one."""
    if not isinstance(value, str):
        return f"is not a string (got {type(value).__name__})"
    if not value:
        return "is empty"
    if len(value) > TENANT_ID_MAX_LEN:
        return f"is {len(value)} characters long (at most {TENANT_ID_MAX_LEN})"
    m = _BAD.search(value)
    if m:
        return f"contains control character U+{ord(m.group()):04X}"
    return None


class BadTenantError(LoadError, TypeError):
    """A caller-supplied tenant id breaks the tenant-id rule (``reason="bad_tenant"``).

    A :class:`~replaykit.errors.LoadError` (so a ``ReplayKitError``); also a ``TypeError``,
    which a missing tenant id raised before the rule existed, so old handlers keep working.
    """


def check_tenant_id(value: object, *, source: str = "<argument>", line: int | None = None,
                    field: str = "tenant_id") -> str:
    """Return ``value`` if it is a valid tenant id, else raise ``LoadError(reason="bad_tenant")``.

    Raises:
        BadTenantError: (a ``LoadError``, ``reason="bad_tenant"``) ``value`` breaks the
            tenant-id rule (the message says which part).
    """
    problem = tenant_id_problem(value)
    if problem is None:
        return value  # type: ignore[return-value]
    raise BadTenantError(
        source=source, line=line, field=field, reason="bad_tenant",
        detail=f"tenant id {value!r} {problem}",
        fix=("a tenant id is a non-empty string of at most "
             f"{TENANT_ID_MAX_LEN} characters without control characters"),
    )


def bad_tenant_mask(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Column-wise rule check: a boolean numpy mask, True where a value breaks the rule.

    Nulls count as bad (a row without a tenant belongs to no tenant).
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if pa.types.is_dictionary(values.type):
        idx = values.indices
        dict_bad = bad_tenant_mask(values.dictionary)
        out = np.ones(len(values), dtype=bool)
        valid = idx.is_valid().to_numpy(zero_copy_only=False)
        out[valid] = dict_bad[idx.drop_null().to_numpy()]
        return out
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        return np.ones(len(values), dtype=bool)
    bad = pc.or_kleene(
        pc.match_substring_regex(values, BAD_TENANT_PATTERN),
        pc.or_kleene(pc.equal(pc.utf8_length(values), 0),
                     pc.greater(pc.utf8_length(values), TENANT_ID_MAX_LEN)),
    )
    return bad.fill_null(True).to_numpy(zero_copy_only=False)


def encode_partition_value(tenant_id: str) -> str:
    """The partition folder value for ``tenant_id``: percent-encoded, reversible.

    Every byte outside ``[A-Za-z0-9_.-~]`` is encoded (so ``/``, ``=``, ``%`` and non-ASCII text
    never reach the file system raw); a leading ``.`` is encoded too, so no folder is hidden.
    """
    out = quote(tenant_id, safe="")
    if out.startswith("."):
        out = "%2E" + out[1:]
    return out


def decode_partition_value(folder_value: str) -> str:
    """Inverse of :func:`encode_partition_value` (strict UTF-8)."""
    return unquote(folder_value, errors="strict")


def check_tenant_ids(value: object, *, source: str = "<argument>",
                     field: str = "tenant_id") -> list[str]:
    """A caller's tenant filter (one id or a sequence of ids) as a list, each id checked.

    Raises:
        LoadError: ``reason="bad_tenant"``: an id breaks the rule, or the sequence is empty.
    """
    if isinstance(value, str):
        return [check_tenant_id(value, source=source, field=field)]
    try:
        values = list(value)  # type: ignore[call-overload]
    except TypeError:
        values = [value]
    if not values:
        raise BadTenantError(source=source, line=None, field=field, reason="bad_tenant",
                        detail=f"is an empty list of tenant ids ({value!r})",
                        fix="pass a tenant id, a non-empty list of them, or None for all")
    return [check_tenant_id(v, source=source, field=field) for v in values]


def check_tenant_column(values: pa.Array | pa.ChunkedArray, *, source: str,
                        field: str = "tenant_id", nullable: bool = False) -> None:
    """Column-wise :func:`check_tenant_id` for a writer or reader of many rows.

    ``nullable=True`` lets nulls through (a quarantine row of no known tenant).

    Raises:
        LoadError: ``reason="bad_tenant"``, naming the first bad row (0-based) and its value.
    """
    bad = bad_tenant_mask(values)
    if nullable and bad.any():
        arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
        bad &= arr.is_valid().to_numpy(zero_copy_only=False)
    if not bad.any():
        return
    i = int(np.flatnonzero(bad)[0])
    value = values[i].as_py()
    problem = tenant_id_problem(value) or "is null"
    raise LoadError(
        source=source, line=None, field=field, reason="bad_tenant",
        detail=f"row {i}: tenant id {value!r} {problem} ({int(bad.sum())} bad row(s))",
        fix=("a tenant id is a non-empty string of at most "
             f"{TENANT_ID_MAX_LEN} characters without control characters; fix those rows"),
    )


def partition_dir_name(tenant_id: str) -> str:
    """The folder of ``tenant_id`` in a dataset: ``tenant_id=<encode_partition_value(id)>``.

    Raises:
        LoadError: ``reason="bad_tenant"``: ``tenant_id`` breaks the rule, or is valid but
            its folder name would be longer than :data:`PARTITION_NAME_MAX_BYTES` (file
            systems refuse longer names; percent-encoding takes up to 12 bytes a character).
    """
    check_tenant_id(tenant_id, source="<partition folder>")
    name = PARTITION_PREFIX + encode_partition_value(tenant_id)
    if len(name.encode("ascii")) > PARTITION_NAME_MAX_BYTES:
        raise BadTenantError(
            source="<partition folder>", line=None, field="tenant_id", reason="bad_tenant",
            detail=(f"tenant id {tenant_id!r} ({len(tenant_id)} characters) is valid, but its "
                    f"partition folder name would be {len(name)} bytes, more than the "
                    f"{PARTITION_NAME_MAX_BYTES} a file name may have"),
            fix=("store this tenant with write_sql, or use a shorter tenant id: its folder "
                 f"name is {PARTITION_PREFIX!r} plus the id percent-encoded (ASCII letters, "
                 "digits and _.-~ take 1 byte each, every other UTF-8 byte 3)"),
        )
    return name


def partition_dir_tenant(name: str) -> tuple[str | None, str | None]:
    """(tenant id, None) for a canonical partition folder name, else (decoded or None, problem).

    A folder is accepted only when its name is exactly :func:`partition_dir_name` of the id it
    decodes to: so every tenant has one folder (``tenant_id=acm%65`` is not a second folder of
    ``acme``), and names written raw by older versions stay readable when they are already
    canonical (``tenant_id=acme``).
    """
    if not name.startswith(PARTITION_PREFIX):
        return None, f"folder {name!r} is not a tenant_id=<id> partition folder"
    value = name[len(PARTITION_PREFIX):]
    try:
        tenant = decode_partition_value(value)
    except UnicodeDecodeError:
        return None, f"folder value {value!r} does not decode as percent-encoded UTF-8"
    problem = tenant_id_problem(tenant)
    if problem is not None:
        return tenant, f"folder {name!r} decodes to tenant id {tenant!r}, which {problem}"
    if encode_partition_value(tenant) != value:
        expected = PARTITION_PREFIX + encode_partition_value(tenant)
        return tenant, (f"folder {name!r} is not the canonical encoding of tenant id "
                        f"{tenant!r} (expected {expected!r})")
    return tenant, None


def _str_column(col: pa.ChunkedArray) -> pa.Array:
    arr = col.combine_chunks()
    return arr if arr.type == pa.string() else pc.cast(arr, pa.string())


def scope_side_table(table: pa.Table, *, tenants: Sequence[str] | None = None,
                     run_ids: Sequence[str] | None = None) -> pa.Table | None:
    """The rows of a side table (quarantine, ``extras`` entry) a view of ``tenants`` / ``run_ids``
    may hold, or None when the table cannot say whose rows it holds.

    ``tenants`` / ``run_ids`` None: no restriction on that column. With a restriction, the
    table must have the column (``tenant_id`` / ``run_id``), else None (drop it from the view);
    rows whose value is null or not in the set are left out, and so are rows of no known
    tenant in any restricted view. So a quarantined row whose tenant could not be read shows
    only in an unrestricted (all-tenants) log.

    Example:
        >>> import pyarrow as pa
        >>> t = pa.table({"tenant_id": ["acme", "globex", None], "x": [1, 2, 3]})
        >>> scope_side_table(t, tenants=["acme"]).column("x").to_pylist()
        [1]
        >>> scope_side_table(pa.table({"x": [1]}), tenants=["acme"]) is None
        True
    """
    mask = None
    for col, values in (("tenant_id", tenants), ("run_id", run_ids)):
        if values is None:
            continue
        if col not in table.schema.names:
            return None
        m = pc.is_in(_str_column(table.column(col)), value_set=pa.array(list(values), pa.string()),
                     skip_nulls=True)
        mask = m if mask is None else pc.and_(mask, m)
    if mask is None:
        return table
    if tenants is None and "tenant_id" in table.schema.names:
        # a run view of every tenant still shows no row of unknown tenant
        mask = pc.and_(mask, pc.is_valid(table.column("tenant_id")))
    return compact_dictionaries(table.filter(pc.fill_null(mask, False)))


def _compact_dictionary(arr: pa.Array) -> pa.Array:
    """``arr`` (a dictionary array) with a dictionary of only the values its rows use, in
    their dictionary order; ``arr`` itself when it already uses every entry."""
    d = arr.dictionary
    if len(d) <= 1 and (len(d) == 0 or len(arr) > arr.null_count):
        return arr
    if arr.null_count:
        used_np = np.unique(arr.indices.drop_null().to_numpy(zero_copy_only=False))
    else:
        codes = arr.indices.to_numpy()
        used_np = np.unique(codes)
    if len(used_np) == len(d):
        return arr
    if arr.null_count:
        remap = np.zeros(len(d), dtype=arr.type.index_type.to_pandas_dtype())
        remap[used_np] = np.arange(len(used_np))
        indices = pc.take(pa.array(remap), arr.indices)
    else:
        indices = pa.array(np.searchsorted(used_np, codes).astype(
            arr.type.index_type.to_pandas_dtype(), copy=False))
    return pa.DictionaryArray.from_arrays(indices, d.take(pa.array(used_np)))


def compact_dictionaries(table: pa.Table) -> pa.Table:
    """``table`` with every dictionary column's dictionary cut to the values its rows use.

    A filter or a slice of an Arrow table keeps the whole dictionary of each dictionary
    column, so a view of one tenant would still carry the other tenants' tenant ids, run
    ids, tool names and source paths there (and ``to_parquet`` would write them into the
    tenant's folder, pickling would send them along). Views and writers call this: a
    column whose dictionary is all in use is returned as is (no copy).
    """
    schema = table.schema
    cols = None
    for i, typ in enumerate(schema.types):
        if not pa.types.is_dictionary(typ):
            continue
        old = table.column(i).chunks
        chunks = [_compact_dictionary(c) for c in old]
        if any(a is not b for a, b in zip(chunks, old, strict=True)):
            cols = table.columns if cols is None else cols
            cols[i] = pa.chunked_array(chunks, typ)
    return table if cols is None else pa.Table.from_arrays(cols, schema=schema)


def scope_extras(extras: Mapping[str, pa.Table], *, tenants: Sequence[str] | None = None,
                 run_ids: Sequence[str] | None = None) -> dict[str, pa.Table]:
    """Every side table scoped with :func:`scope_side_table` (tables it drops are left out)."""
    out: dict[str, pa.Table] = {}
    for name, table in extras.items():
        scoped = scope_side_table(table, tenants=tenants, run_ids=run_ids)
        if scoped is not None:
            out[name] = scoped
    return out


def detached(value: object) -> object:
    """``value`` with every Arrow table or array in it copied out of the larger buffers it
    may be a zero-copy slice of, and its dictionaries cut to the values in use.

    pyarrow pickles (and IPC-writes) a slice with its parent's whole buffers and a filtered
    dictionary array with its whole dictionary, so a result computed from a one-tenant view
    (a run of a multi-tenant log) would carry the other tenants' payloads. Result objects
    call this in their ``__getstate__``. Walks lists, tuples, dicts and dataclass instances
    (copies; ``value`` itself is not changed); anything else is returned as is.

    Example:
        >>> import pickle, pyarrow as pa
        >>> big = pa.array(["acme-1", "globex-secret"])
        >>> b"globex" in pickle.dumps(detached(big.slice(0, 1)))
        False
    """
    import copy
    import dataclasses

    if isinstance(value, pa.Table):
        table = compact_dictionaries(value)
        cols = [pa.chunked_array([_detached_array(c) for c in col.chunks], col.type)
                for col in table.columns]
        return pa.Table.from_arrays(cols, schema=table.schema)
    if isinstance(value, pa.ChunkedArray):
        return pa.chunked_array([_detached_array(c) for c in value.chunks], value.type)
    if isinstance(value, pa.Array):
        return _detached_array(value)
    if isinstance(value, list):
        return [detached(v) for v in value]
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(detached(v) for v in value)
    if isinstance(value, dict):
        return {k: detached(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = copy.copy(value)
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            new = detached(v)
            if new is not v:
                object.__setattr__(out, f.name, new)
        return out
    return value


def _detached_array(arr: pa.Array) -> pa.Array:
    if pa.types.is_dictionary(arr.type):
        arr = _compact_dictionary(arr)
    return pa.concat_arrays([arr])
