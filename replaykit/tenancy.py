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
from urllib.parse import quote, unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "BAD_TENANT_PATTERN",
    "TENANT_ID_MAX_LEN",
    "bad_tenant_mask",
    "check_tenant_id",
    "decode_partition_value",
    "encode_partition_value",
    "tenant_id_problem",
]

#: Longest tenant id accepted, in characters.
TENANT_ID_MAX_LEN = 256

#: Characters a tenant id may not contain (an RE2 character class, as Arrow's regex kernels read it).
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


def check_tenant_id(value: object, *, source: str = "<argument>", line: int | None = None,
                    field: str = "tenant_id") -> str:
    """Return ``value`` if it is a valid tenant id, else raise ``LoadError(reason="bad_tenant")``.

    Raises:
        LoadError: ``value`` breaks the tenant-id rule (the message says which part).
    """
    problem = tenant_id_problem(value)
    if problem is None:
        return value  # type: ignore[return-value]
    from .errors import LoadError

    raise LoadError(
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
