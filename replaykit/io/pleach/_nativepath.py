"""The native JSONL path: a block scanned by the Rust core (``replaykit._core``) into the
same ``_Part`` that the column-wise path (``_fastpath._fast_block`` then ``_derive._slim``)
builds, or None when the block must be read by the reference code.

The core reads a block in one pass per line (strict JSON validation, the envelope's typed
fields, the payload's verbatim span, the typed payload fields, the canonical columns, the
tool-call arguments as canonical JSON and their hash) with the GIL released, so the loader's
two reading threads scan two blocks at once. It refuses every block the column-wise path would
not read (and a few more it leaves to the reference: see ``native/src/pleach.rs``), so the
rows it returns are exactly the reference's, and bad rows are still found and reported by the
reference's robust path.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..._base import native as _native
from ..._base.json import args_hash, loads
from ._shapes import _Part

_ENV = ("tenant_id", "chat_id", "sequence_number", "event_type", "prev_hash", "row_hash")
_TYPED = ("turn", "event_id", "ref_id", "tool_name", "args_hash", "cache_key", "is_error",
          "finish", "input_tokens", "output_tokens", "_child")


def native_block(block: bytes | bytearray | memoryview
                 ) -> tuple[int, np.ndarray, _Part | None] | None:
    """``(newline-terminated lines, 0-based line of each row, the rows' _Part)`` of a block,
    read by the native core; None when the reference path must read it (or the core is off).

    The part's ``line`` holds the 0-based lines within the block (the reader adds the
    block's first line number, as for the column-wise path).
    """
    if not _native.enabled():
        return None
    got = _native.core().scan_pleach_block(block)
    if got is None:
        return None
    n_lines, line_buf, hash_rows_buf, columns, clean = got
    cols = {name: _native.to_arrow(c) for name, c in columns}
    line = np.frombuffer(line_buf, dtype=np.int64)
    if not len(line):
        return n_lines, line, None
    hashes = cols["args_hash"]
    py_rows = np.frombuffer(hash_rows_buf, dtype=np.int64)
    if len(py_rows):
        # arguments given as a JSON string: hashed by the value the string holds, if any
        # (the reference's args_hash decides; rare, so row by row)
        values = hashes.to_pylist()
        args = cols["args"]
        for i in py_rows.tolist():
            values[i] = args_hash(loads(args[i].as_py()))
        hashes = cols["args_hash"] = pa.array(values, type=pa.string())
    env = pa.table({name: cols[name] for name in _ENV})
    typed = pa.table({name: cols[name] for name in _TYPED})
    part = _Part(
        env=env,
        created_at=cols["created_at"],
        payload=cols["payload"],
        typed=typed,
        line=line,
        raw=None,
        args=cols["args"],
        hashes=hashes,
        text=cols["text"],
        checked=bool(clean),
        native=True,
    )
    return n_lines, line, part
