"""Provider-cache backends, read modes, and column-wise cache coverage of a whole log."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..eventlog.log import EventLog, to_pandas

__all__ = [
    "CACHE_MODES",
    "CacheBackend",
    "CacheLookup",
    "CacheMode",
    "InMemoryCache",
    "ParquetCache",
    "cache_coverage",
]

CacheMode = Literal["cross-mode-readable", "strict-mode", "best-effort"]
#: The read modes, fixed when a handle opens.
CACHE_MODES: tuple[str, ...] = ("cross-mode-readable", "strict-mode", "best-effort")


@runtime_checkable
class CacheBackend(Protocol):
    """What a provider cache must offer: ``get(key) -> value or None``.

    Backends may also offer ``contains_many(keys: pa.Array) -> numpy bool array`` so
    :func:`cache_coverage` can answer a whole log in one column operation.
    """

    def get(self, key: str) -> Any | None: ...


@dataclass(frozen=True)
class CacheLookup:
    """How one keyed row was served.

    ``via`` is ``"cache"`` on a hit and ``"live"`` on a best-effort miss.
    """

    key: str
    hit: bool
    via: Literal["cache", "live"]
    value: Any = None


class InMemoryCache:
    """A cache backed by a dict (key -> cached value).

    >>> InMemoryCache({"k1": "v"}).get("k1")
    'v'
    """

    def __init__(self, entries: Mapping[str, Any] | None = None) -> None:
        self._entries = dict(entries or {})
        self._keys: pa.Array | None = None

    def get(self, key: str) -> Any | None:
        return self._entries.get(key)

    def __len__(self) -> int:
        return len(self._entries)

    def contains_many(self, keys: pa.Array) -> np.ndarray:
        if self._keys is None:
            self._keys = pa.array(list(self._entries), pa.string())
        return np.asarray(pc.is_in(keys, value_set=self._keys).fill_null(False))


class ParquetCache:
    """A cache stored as a Parquet file with columns ``key`` (string) and ``value`` (string).

    Write one with :meth:`write`. Keys are loaded once; values are read on demand.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: the file has no ``key`` column.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        import pyarrow.parquet as pq

        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"{self.path}: no such Parquet cache file")
        table = pq.read_table(self.path)
        if "key" not in table.column_names:
            raise ValueError(f"{self.path}: a ParquetCache file needs a 'key' column")
        self._table = table
        self._keys = pc.cast(table.column("key").combine_chunks(), pa.string())
        self._index: dict[str, int] | None = None

    @staticmethod
    def write(path: str | os.PathLike[str], entries: Mapping[str, Any]) -> ParquetCache:
        """Write ``entries`` (key -> value; values stored as strings) and open the result."""
        import pyarrow.parquet as pq

        keys = list(entries)
        vals = [None if v is None else str(v) for v in entries.values()]
        pq.write_table(pa.table({"key": pa.array(keys, pa.string()),
                                 "value": pa.array(vals, pa.large_string())}), path)
        return ParquetCache(path)

    def get(self, key: str) -> Any | None:
        if self._index is None:
            self._index = {k: i for i, k in enumerate(self._keys.to_pylist())}
        i = self._index.get(key)
        if i is None:
            return None
        if "value" not in self._table.column_names:
            return True
        return self._table.column("value")[i].as_py()

    def __len__(self) -> int:
        return len(self._keys)

    def contains_many(self, keys: pa.Array) -> np.ndarray:
        return np.asarray(pc.is_in(keys, value_set=self._keys).fill_null(False))


def _contains_many(cache: Any, keys: pa.Array) -> np.ndarray:
    if hasattr(cache, "contains_many"):
        return np.asarray(cache.contains_many(keys), dtype=bool)
    # generic backend: one get() per *distinct* key, then broadcast column-wise
    enc = keys.dictionary_encode()
    hits = np.array([cache.get(k) is not None for k in enc.dictionary.to_pylist()], dtype=bool)
    return hits[enc.indices.to_numpy(zero_copy_only=False)] if len(hits) else np.zeros(0, bool)


def cache_coverage(
    log: EventLog, cache: Any, *, mode: CacheMode = "best-effort", derive: bool = False
) -> pd.DataFrame:
    """One row per event carrying a ``cache_key``: would a replay's cache read hit?

    Column-wise over the whole log. Columns: tenant_id, run_id, seq, type, kind, cache_key,
    ``hit`` (the cache holds the key), ``via`` (``"cache"`` on a hit; ``"live"`` on a
    best-effort miss; null where the read would raise) and ``raises`` (a handle in ``mode``
    would raise :class:`~replaykit.ReplayCacheMissError` here: every miss in
    cross-mode-readable, every read in strict-mode, never in best-effort) and ``derived``.

    With ``derive=True``, model requests that carry no ``cache_key`` but record their
    messages get the content-hash key :func:`replaykit.cache_key` would give them
    (:func:`replaykit.provenance.cachekey.derive_keys`); their rows have ``derived=True`` and say
    whether a cache filled under those keys would hit.

    >>> cov = cache_coverage(log, InMemoryCache({"k": "v"}))  # doctest: +SKIP
    >>> cov.groupby("run_id")["hit"].mean()  # doctest: +SKIP

    Raises:
        ValueError: ``mode`` is not one of :data:`CACHE_MODES`.
    """
    if mode not in CACHE_MODES:
        raise ValueError(f"mode must be one of {CACHE_MODES}, got {mode!r}")
    t = log.table
    keyed = t.filter(pc.is_valid(t.column("cache_key")))
    cols = ["tenant_id", "run_id", "seq", "type", "kind"]
    keyed = pa.table({c: pc.cast(keyed.column(c), pa.string()) if c != "seq"
                      else keyed.column(c) for c in cols + ["cache_key"]})
    derived = np.zeros(keyed.num_rows, bool)
    if derive:
        from ..provenance.cachekey import derive_keys

        d = derive_keys(log, unkeyed_only=True)
        if len(d):
            extra = pa.Table.from_pandas(d, preserve_index=False).cast(keyed.schema)
            keyed = pa.concat_tables([keyed, extra])
            derived = np.r_[derived, np.ones(len(d), bool)]
            order = np.lexsort((keyed.column("seq").to_numpy(),
                                keyed.column("run_id").to_numpy(zero_copy_only=False),
                                keyed.column("tenant_id").to_numpy(zero_copy_only=False)))
            keyed = keyed.take(pa.array(order))
            derived = derived[order]
    keys = (
        keyed.column("cache_key").combine_chunks() if keyed.num_rows
        else pa.array([], pa.string())
    )
    hit = _contains_many(cache, keys) if cache is not None else np.zeros(len(keys), bool)
    if mode == "best-effort":
        raises = np.zeros(len(keys), bool)
    elif mode == "strict-mode":
        raises = np.ones(len(keys), bool) if cache is not None else np.zeros(len(keys), bool)
    else:
        raises = ~hit if cache is not None else np.zeros(len(keys), bool)
    via_vals = pa.array(np.where(hit, "cache", "live"), pa.string()) if len(keys) else pa.array(
        [], pa.string())
    via = pc.if_else(pa.array(raises), pa.scalar(None, pa.string()), via_vals)
    out = pa.table(
        {
            "tenant_id": keyed.column("tenant_id"),
            "run_id": keyed.column("run_id"),
            "seq": keyed.column("seq"),
            "type": keyed.column("type"),
            "kind": keyed.column("kind"),
            "cache_key": keys,
            "hit": pa.array(hit, pa.bool_()),
            "via": via,
            "raises": pa.array(raises, pa.bool_()),
            "derived": pa.array(derived, pa.bool_()),
        }
    )
    df = to_pandas(out)
    for c in cols:  # the log's categoricals, as before
        if c != "seq":
            df[c] = df[c].astype("category")
    return df
