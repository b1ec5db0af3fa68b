"""The native toh path: a whole file scanned by the Rust core (``replaykit._core``,
``native/src/toh.rs``) into its events' columns, or None when the reference must read it.

The core reads a file in one pass (the line split, strict JSON validation of every line, the
session header's span, each event line's canonical payload and typed fields, packed rows
validated and expanded into their members, the sequence numbers) with the GIL released. It
refuses every file of which the reference would quarantine a line (and a few more it is not
sure about), so the events it returns are exactly the reference's; a refused file is read by
the reference path, which finds and reports its bad lines. The session header is checked here,
by the reference's own check, on the span the core found.

``REPLAYKIT_NATIVE=0`` (or :data:`NATIVE` = False) reads every file with the reference.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._base import native as _native
from ..._base.json import args_hash

#: read files with the native core when it is built and enabled (False: the reference only)
NATIVE = True

#: the columns of the events handed to ``_assemble._finish`` and their types
_TYPES = {
    "time_ms": pa.float64(), "type": pa.string(), "turn": pa.int32(), "step": pa.int32(),
    "chunk_type": pa.string(), "text": pa.large_string(), "payload": pa.large_string(),
    "is_error": pa.bool_(), "ref_id": pa.string(), "tool_name": pa.string(),
    "event_id": pa.string(), "args_hash": pa.string(), "cache_key": pa.string(),
    "finish": pa.string(), "input_tokens": pa.int64(), "output_tokens": pa.int64(),
    "call_ids": pa.string(),
}  # fmt: skip
_DICTS = ("type", "chunk_type")


def native_file(data: bytes) -> tuple[dict[str, Any], bytes] | None:
    """``(columns, header line)`` of a file's bytes read by the native core, or None when the
    reference must read it (or the core is off). ``columns``: ``line`` (1-based) and ``seq``
    (numpy) and the Arrow columns of :data:`_TYPES`, one value per event in file order."""
    if not NATIVE or not _native.enabled():
        return None
    got = _native.core().scan_toh_file(data)
    if got is None:
        return None
    h_start, h_end, line_buf, seq_buf, hash_rows_buf, columns = got
    cols: dict[str, Any] = {name: _native.to_arrow(c) for name, c in columns}
    cols["time_ms"] = cols.pop("time")
    py_rows = np.frombuffer(hash_rows_buf, dtype=np.int64)
    if len(py_rows):
        # tool-call arguments given as a JSON string: hashed by the value the string holds,
        # if any (the reference's args_hash decides; rare, so row by row)
        texts = cols["text"].take(pa.array(py_rows)).to_pylist()
        mask = np.zeros(len(cols["text"]), dtype=bool)
        mask[py_rows] = True
        cols["args_hash"] = pc.replace_with_mask(
            cols["args_hash"], pa.array(mask), pa.array([args_hash(t) for t in texts],
                                                        pa.string()))  # fmt: skip
    cols["line"] = np.frombuffer(line_buf, dtype=np.int64)
    cols["seq"] = np.frombuffer(seq_buf, dtype=np.int64)
    return cols, bytes(data[h_start:h_end])


def native_events(parts: list[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
    """The events of the files read natively (``(file index, columns)``, in file order) as the
    columns ``_assemble._finish`` takes (the same the reference gives for those files)."""
    ev: dict[str, Any] = {
        "fi": np.concatenate([np.full(len(c["line"]), f, dtype=np.int64) for f, c in parts]),
        "line": np.concatenate([c["line"] for _, c in parts]),
        "seq": np.concatenate([c["seq"] for _, c in parts]),
    }
    for name, typ in _TYPES.items():
        arrs = [c[name] if c[name].type == typ else c[name].cast(typ) for _, c in parts]
        ev[name] = arrs[0] if len(arrs) == 1 else pa.concat_arrays(arrs)
    for name in _DICTS:  # dictionary in order of first appearance, as the reference's
        ev[name] = ev[name].dictionary_encode()
    return ev


def merge_events(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The events of two sets of files (each in (file, line, member) order) in one order."""
    order = np.argsort(np.concatenate([a["fi"], b["fi"]]), kind="stable")
    ev: dict[str, Any] = {name: np.concatenate([a[name], b[name]])[order]
                          for name in ("fi", "line", "seq")}  # fmt: skip
    take = pa.array(order)
    for name, typ in _TYPES.items():
        x, y = a[name], b[name]
        if pa.types.is_dictionary(x.type):
            x = x.cast(typ)
        if pa.types.is_dictionary(y.type):
            y = y.cast(typ)
        ev[name] = pa.concat_arrays([x.cast(typ), y.cast(typ)]).take(take)
    for name in _DICTS:
        ev[name] = ev[name].dictionary_encode()
    return ev
