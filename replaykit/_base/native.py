"""The native core's Python face: whether it is used, its version, and its columns as Arrow.

replaykit's hot kernels (the pleach JSONL block scanner, canonical tool-argument JSON, SHA-256
of many rows) have two implementations that give identical results:

- the **native core**, the Rust crate in ``native/`` built by maturin into the private module
  ``replaykit._core`` (``make demo`` / ``make test`` / ``pip install .`` build it);
- the **reference path**, Arrow/numpy code in Python, which every native kernel falls back to
  for input it does not decide itself (a block with a bad row, say: the reference then finds
  and reports the bad rows exactly as before).

``REPLAYKIT_NATIVE=0`` in the environment selects the reference path everywhere (read at
import, and again by :func:`enabled` on every call, so tests can switch it).

**Threads.** One setting decides how many threads replaykit works on: :func:`threads` (the
cores the process may use, ``os.sched_getaffinity``, capped by ``REPLAYKIT_THREADS`` and by
a call's ``threads=``). The native kernels read it (:func:`core` hands it to the core before
every call), and the readers, ``verify_chain`` and ``fold`` run inside :func:`using_threads`,
which also sizes their own thread pools and Arrow's (``pa.set_cpu_count``) for the call.

Without the built extension (a checkout nobody built), replaykit works on the reference path
and warns once, saying how to build the core.

Columns cross from Rust without a copy: each buffer is a ``replaykit._core.NativeBuf`` (the
buffer protocol) wrapped by ``pa.py_buffer`` and assembled with ``pa.Array.from_buffers``.

>>> import replaykit._base.native as native
>>> isinstance(native.describe(), str)
True
"""

from __future__ import annotations

import importlib
import os
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import SettingError

__all__ = ["ENV_THREADS", "NativeCoreMissingWarning", "available", "core", "cores", "describe",
           "enabled", "threads", "using_threads", "version"]


class NativeCoreMissingWarning(UserWarning):
    """The native core is not built: replaykit runs on its (slower) reference path."""


_BUILD_HINT = (
    "replaykit's native core (replaykit._core) is not built, so replaykit runs on its "
    "reference path (same results, slower). Build it with `make demo` (or "
    "`pip install -e .` in the repository, which needs a Rust toolchain); set "
    "REPLAYKIT_NATIVE=0 to choose the reference path without this warning."
)

try:  # the compiled extension module (maturin puts it beside this file); imported by name,
    # as `from . import` would read as an import of the package itself to the layer check
    _core_module: Any = importlib.import_module("replaykit._core")
except ImportError as exc:  # pragma: no cover - exercised by tests/test_native.py in a subprocess
    _core_module = None
    _import_error: str | None = str(exc)
else:
    _import_error = None

_warned = False


def _switched_off() -> bool:
    return os.environ.get("REPLAYKIT_NATIVE", "").strip().lower() in ("0", "false", "no", "off")


def available() -> bool:
    """True when the extension module is built and importable."""
    return _core_module is not None


def enabled() -> bool:
    """True when native kernels are to be used: built, and not switched off with
    ``REPLAYKIT_NATIVE=0``. Warns once (:class:`NativeCoreMissingWarning`) when the core is
    not built and not switched off."""
    global _warned
    if _switched_off():
        return False
    if _core_module is None:
        if not _warned:
            _warned = True
            warnings.warn(_BUILD_HINT, NativeCoreMissingWarning, stacklevel=3)
        return False
    return True


def core() -> Any:
    """The extension module (only call when :func:`enabled` is True), its thread count set
    to :func:`threads`."""
    if _core_module is None:  # pragma: no cover - callers check enabled() first
        raise RuntimeError(_BUILD_HINT)
    n = threads()
    if n != _thread_state["native"]:
        _thread_state["native"] = n
        if hasattr(_core_module, "set_threads"):  # (a core built before the setting)
            _core_module.set_threads(n)
    return _core_module


# ----------------------------------------------------------------------------- threads
#: The environment variable capping replaykit's thread count (a whole number >= 1).
ENV_THREADS = "REPLAYKIT_THREADS"
_THREADS_FIX = (f"set {ENV_THREADS} to a whole number of threads >= 1 (e.g. "
                f"{ENV_THREADS}=4), or unset it to use every core this process may use")
_thread_lock = threading.Lock()
#: the caps of the :func:`using_threads` calls in progress; the thread count the core was
#: last given; Arrow's CPU count before the first of those calls
_thread_state: dict[str, Any] = {"caps": [], "native": None, "arrow": None}


def cores() -> int:
    """The cores this process may run on: its CPU affinity mask (``os.sched_getaffinity``,
    which ``taskset`` and container CPU sets narrow), else ``os.cpu_count()``."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _count(setting: str, value: object) -> int:
    """``value`` as a thread count (an int >= 1, or its decimal text), else SettingError."""
    fix = (_THREADS_FIX if setting == ENV_THREADS else
           "pass threads= a whole number >= 1, or None for the default")
    n = value
    if isinstance(value, str):
        text = value.strip()
        n = int(text) if text.isascii() and text.isdigit() else None
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise SettingError(setting, value, fix)
    return n


def threads(requested: int | None = None) -> int:
    """How many threads replaykit works on: the cores this process may use (:func:`cores`),
    capped by the ``REPLAYKIT_THREADS`` environment variable, by the ``threads=`` of the
    :func:`using_threads` calls in progress and by ``requested`` (a call's ``threads=``;
    None: no cap). Every native scan, gather and digest, the readers' block pools, Arrow's
    CPU pool (within :func:`using_threads`) and the fold engine's workers use it. The
    result never depends on it: only how the work is spread.

    >>> import replaykit._base.native as native
    >>> native.threads(1)
    1
    >>> 1 <= native.threads() <= native.cores()
    True

    Raises:
        SettingError: ``REPLAYKIT_THREADS`` or ``requested`` is not a whole number >= 1
            (the message names it and says what to set).
    """
    n = cores()
    env = os.environ.get(ENV_THREADS)
    if env is not None and env.strip():
        n = min(n, _count(ENV_THREADS, env))
    caps = _thread_state["caps"]
    if caps:
        n = min(n, min(caps))
    if requested is not None:
        n = min(n, _count("threads=", requested))
    return max(1, n)


@contextmanager
def using_threads(requested: int | None = None) -> Iterator[int]:
    """Run a block on :func:`threads` (``requested`` capping it) threads: native kernels,
    the thread pools sized by :func:`threads` and Arrow's CPU pool (``pa.set_cpu_count``,
    restored after the outermost call). Yields the count. Nested and concurrent calls are
    safe: the smallest cap in progress applies to all of them (a thread count never
    changes a result).

    >>> import replaykit._base.native as native
    >>> with native.using_threads(1) as n:
    ...     (n, native.threads())
    (1, 1)

    Raises:
        SettingError: as :func:`threads`.
    """
    import pyarrow as pa

    n = threads(requested)
    with _thread_lock:
        caps = _thread_state["caps"]
        if not caps:
            _thread_state["arrow"] = pa.cpu_count()
        caps.append(n)
        _set_arrow(pa, threads())
    try:
        yield n
    finally:
        with _thread_lock:
            caps.remove(n)
            if caps:
                _set_arrow(pa, threads())
            else:
                _set_arrow(pa, _thread_state["arrow"])
                _thread_state["arrow"] = None


def _set_arrow(pa: Any, n: int | None) -> None:
    if n is not None and pa.cpu_count() != n:
        pa.set_cpu_count(n)


def version() -> str | None:
    """The native core's version (its crate's), or None when it is not built."""
    return None if _core_module is None else str(_core_module.__version__)


def describe() -> str:
    """One line for ``replaykit --version``: the core's version and the CPU features it uses,
    or why the reference path is in use."""
    if _core_module is None:
        return "native core: not built (reference path; `make demo` builds it)"
    feats = ", ".join(_core_module.cpu_features()) or "none detected"
    state = "off (REPLAYKIT_NATIVE=0)" if _switched_off() else "on"
    return f"native core {_core_module.__version__} ({state}; CPU features: {feats})"


def panics() -> int:
    """Panics the core caught at its boundary since import (0 unless there is a bug)."""
    return 0 if _core_module is None else int(_core_module.panics())


# ----------------------------------------------------------------------------- to Arrow
def spans(arr: Any) -> tuple[Any, Any]:
    """``(offsets, data)`` of a large_string / large_binary Arrow array as the byte views the
    core's span kernels take (``sha256_many``, ``tool_args_many``, ``text_hashes``): the
    array's own n + 1 int64 offsets (slice offset applied) and its data buffer, no copy."""
    import numpy as np

    n = len(arr)
    offs = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
    data = arr.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    return offs.view(np.uint8), raw


def to_arrow(col: tuple[Any, ...]) -> Any:
    """One native column ``(kind, length, null_count, validity, buf1, buf2)`` as an Arrow
    array over the native buffers (no copy)."""
    import pyarrow as pa

    kind, n, nulls, valid, b1, b2 = col
    validity = None if valid is None else pa.py_buffer(valid)
    if kind == "string" or kind == "large_string":
        typ = pa.string() if kind == "string" else pa.large_string()
        return pa.Array.from_buffers(typ, n, [validity, pa.py_buffer(b1), pa.py_buffer(b2)],
                                     null_count=nulls)
    if kind == "int64":
        return pa.Array.from_buffers(pa.int64(), n, [validity, pa.py_buffer(b1)],
                                     null_count=nulls)
    if kind == "float64":
        return pa.Array.from_buffers(pa.float64(), n, [validity, pa.py_buffer(b1)],
                                     null_count=nulls)
    if kind == "bool":
        return pa.Array.from_buffers(pa.bool_(), n, [validity, pa.py_buffer(b1)],
                                     null_count=nulls)
    raise ValueError(f"unknown native column kind {kind!r}")  # pragma: no cover


def _validity(arr: Any) -> Any:
    """One byte per row (0 = null) of an Arrow array, or None when it has no nulls."""
    import numpy as np

    if not arr.null_count:
        return None
    return np.asarray(arr.is_valid()).view(np.uint8)


def chain_piece(arr: Any, *, member: bytes | None = None) -> tuple[Any, ...] | None:
    """One column of the hash chain's content (``chain_digests``) as the core reads it, or
    None for a column type it does not write (the caller then builds the content bytes with
    the reference code, which names the problem).

    Strings (plain or dictionary-encoded) are written as JSON strings, integers in decimal,
    booleans as ``true``/``false``, nulls as ``null``; ``member`` (the payload's ``"payload":``)
    writes the value verbatim after it with a ``,``, and nothing for a null.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    t = arr.type
    if member is not None:
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            return None
        arr = arr.cast(pa.large_string())
        return ("member", member, *spans(arr), _validity(arr))
    if pa.types.is_dictionary(t):
        vt = t.value_type
        if not (pa.types.is_string(vt) or pa.types.is_large_string(vt)):
            arr, t = arr.cast(vt), vt
        else:
            idx = arr.indices
            if idx.type != pa.int32():
                idx = idx.cast(pa.int32())
            idx_np = idx.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int32, copy=False)
            values = arr.dictionary.cast(pa.large_string())
            if values.null_count:
                return None
            return ("dict", np.ascontiguousarray(idx_np).view(np.uint8), _validity(arr),
                    *spans(values))
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        arr = arr.cast(pa.large_string())
        return ("str", *spans(arr), _validity(arr))
    if pa.types.is_null(t):
        return ("lit", b"null")
    if pa.types.is_boolean(t):
        vals = np.asarray(pc.fill_null(arr, False)).astype(np.uint8)
        return ("bool", vals, _validity(arr))
    if pa.types.is_integer(t):
        vals = pc.fill_null(arr.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
        return ("int", np.ascontiguousarray(vals).view(np.uint8), _validity(arr))
    return None


def chain_hex(head: list[Any], derived: list[Any], sealed: Any, tail: list[Any],
              prev: tuple[Any, ...], n: int) -> Any:
    """The lowercase hex sha256 of ``prev || content`` of each of ``n`` rows, as an Arrow
    string array over the core's buffer (``chain_digests``; see ``native/src/chain.rs``).
    Verification (``prev = ("stored", ...)``) runs on :func:`threads` threads."""
    import numpy as np
    import pyarrow as pa

    text = core().chain_digests(head, derived, sealed, tail, prev, n, threads())
    large = 64 * n > 2**31 - 1
    offsets = np.arange(0, 64 * (n + 1), 64, dtype=np.int64 if large else np.int32)
    return pa.Array.from_buffers(pa.large_string() if large else pa.string(), n,
                                 [None, pa.py_buffer(offsets), pa.py_buffer(text)])


# ----------------------------------------------------------------------------- take
def _layout(typ: Any) -> str | None:
    """The core's layout name of an Arrow type for ``take_columns`` (None: not handled)."""
    import pyarrow as pa

    if pa.types.is_string(typ) or pa.types.is_binary(typ):
        return "str32"
    if pa.types.is_large_string(typ) or pa.types.is_large_binary(typ):
        return "str64"
    if pa.types.is_boolean(typ):
        return "bool"
    if (pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_timestamp(typ)
            or pa.types.is_date(typ) or pa.types.is_duration(typ)):
        width = typ.bit_width // 8
        return f"fixed{width}" if width in (1, 2, 4, 8) else None
    return None


def take(columns: list[Any], order: Any, n_threads: int | None = None) -> list[Any]:
    """``[col.take(order) for col in columns]`` as single arrays (chunked columns joined), by
    the native core on ``n_threads`` threads (None: :func:`threads`) with the GIL released:
    the same values, types and dictionaries as Arrow's take. ``order``: int64 row numbers
    (numpy), in range. Columns the core does not handle (nested types, say) are taken by
    Arrow."""
    import numpy as np
    import pyarrow as pa

    order = np.ascontiguousarray(order, dtype=np.int64)
    n = len(order)
    out: list[Any] = [None] * len(columns)
    specs: list[tuple[str, list[tuple[Any, ...]]]] = []
    where: list[tuple[int, Any, Any]] = []  # (column, type of the values gathered, dictionary)
    for k, col in enumerate(columns):
        chunks = list(col.chunks) if isinstance(col, pa.ChunkedArray) else [col]
        typ, dictionary = col.type, None
        if not len(col):  # (then order is empty too)
            taken = col.take(pa.array(order, type=pa.int64()))
            out[k] = taken.combine_chunks() if isinstance(taken, pa.ChunkedArray) else taken
            continue
        chunks = [c for c in chunks if len(c)]
        if pa.types.is_null(typ) or (len(col) and col.null_count == len(col)):
            out[k] = pa.nulls(n, typ)
            continue
        if pa.types.is_dictionary(typ):
            if len(chunks) > 1:
                chunks = list(col.unify_dictionaries().chunks)
            if not chunks:
                out[k] = pa.nulls(n, typ)
                continue
            dictionary = chunks[0].dictionary
            chunks = [c.indices for c in chunks]
            typ = typ.index_type
        layout = _layout(typ)
        if layout is None:
            out[k] = pa.chunked_array(chunks, type=typ).take(pa.array(order)).combine_chunks() \
                if dictionary is None else col.take(pa.array(order)).combine_chunks()
            continue
        specs.append((layout, [(c.offset, len(c), *_bufs(c, layout)) for c in chunks]))
        where.append((k, typ, dictionary))
    if specs:
        got = core().take_columns(specs, order.view(np.uint8), threads(n_threads))
        for (k, typ, dictionary), (m, nulls, valid, b1, b2) in zip(where, got, strict=True):
            bufs = [None if valid is None else pa.py_buffer(valid), pa.py_buffer(b1)]
            if b2 is not None:
                bufs.append(pa.py_buffer(b2))
            arr = pa.Array.from_buffers(typ, m, bufs, null_count=nulls)
            if dictionary is not None:
                arr = pa.DictionaryArray.from_arrays(arr, dictionary, safe=False)
                if arr.type != columns[k].type:  # ordered flag and the like
                    arr = arr.cast(columns[k].type)
            out[k] = arr
    return out


def _bufs(chunk: Any, layout: str) -> tuple[Any, Any, Any]:
    """(validity, buffer1, buffer2) of an Arrow array for ``take_columns`` (None: absent)."""
    import numpy as np

    def u8(buf: Any) -> Any:
        return None if buf is None else np.frombuffer(buf, dtype=np.uint8)

    b = chunk.buffers()
    valid = u8(b[0]) if chunk.null_count else None
    if layout in ("str32", "str64"):
        return valid, u8(b[1]), u8(b[2])
    return valid, u8(b[1]), None


def take_freeing(chunks: list[Any], typ: Any, order: Any, n_threads: int | None = None
                 ) -> Any:
    """``pa.chunked_array(chunks).take(order)`` of a string column as one array, copied chunk
    by chunk into its place: each entry of ``chunks`` is set to None once copied, so with no
    other reference each source chunk is freed as the copy proceeds (peak memory: about one
    copy of the column, not two). ``order`` must not repeat a row (a sort's order, or a part
    of it); ``typ`` is the column's type (string or large_string). The same array as Arrow's
    take (values, validity)."""
    import numpy as np
    import pyarrow as pa

    order = np.ascontiguousarray(order, dtype=np.int64)
    n = len(order)
    large = pa.types.is_large_string(typ) or pa.types.is_large_binary(typ)
    layout = "str64" if large else "str32"
    sizes = [len(c) for c in chunks]
    firsts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    # output offsets, each source row's output position and the validity: one native pass
    specs = [(c.offset, len(c), *_bufs(c, layout)) for c in chunks if len(c)]
    offs_buf, dest_buf, valid_buf, nulls = core().take_plan(layout, specs, order.view(np.uint8))
    del specs
    out_offs = np.frombuffer(offs_buf, dtype=np.int64)
    dest = np.frombuffer(dest_buf, dtype=np.int64)
    size = int(out_offs[-1])
    if not large and size > 2**31 - 1:
        raise ValueError("take_freeing: string data beyond 2 GB")
    validity = None if valid_buf is None else pa.py_buffer(valid_buf)
    t = threads(n_threads) if n >= 65536 else 1
    splits = [int(out_offs[k * n // t]) for k in range(1, t)]
    out = core().out_buffer(size)
    for k in range(len(chunks)):
        c, chunks[k] = chunks[k], None
        if len(c):
            core().scatter_rows(out, layout, c.offset, len(c),
                                np.frombuffer(c.buffers()[1], dtype=np.uint8),
                                _u8(c.buffers()[2]),
                                dest[firsts[k]:firsts[k + 1]].view(np.uint8), splits)
        del c
    data = core().out_bytes(out)
    offs = pa.py_buffer(offs_buf) if large else pa.py_buffer(out_offs.astype(np.int32))
    return pa.Array.from_buffers(typ, n, [validity, offs, pa.py_buffer(data)],
                                 null_count=nulls)


def _u8(buf: Any) -> Any:
    import numpy as np

    return np.zeros(0, np.uint8) if buf is None else np.frombuffer(buf, dtype=np.uint8)
