"""The rows of JSON-lines transcripts the native core scanned (Claude Code, Codex), as Arrow
columns sliced per file range: what the transcript readers share of their native path."""

from __future__ import annotations

from typing import Any

from .._base import native as _native

__all__ = ["Scanned"]


class Scanned:
    """The transcripts the native core read (``native/src/transcripts.rs``, ``codex.rs``):
    which files it read (``ok``), each file's first row and run, the runs, and every row's
    columns (zero-copy Arrow arrays over the core's buffers)."""

    def __init__(self, got: tuple[Any, ...]) -> None:
        import numpy as np

        ok, row_start, run_start, runs, run, seq, line, columns = got
        self.ok: list[bool] = ok
        self.row_start = np.frombuffer(row_start, dtype=np.int64).tolist()
        self.run_start = np.frombuffer(run_start, dtype=np.int64).tolist()
        self.runs: list[tuple[Any, ...]] = runs
        self.run = np.frombuffer(run, dtype=np.int64)
        self.seq_local = np.frombuffer(seq, dtype=np.int64)
        self.cols: dict[str, Any] = {name: _native.to_arrow(c) for name, c in columns}
        self.cols["source_line"] = _native.to_arrow(("int64", len(self.run), 0, None, line,
                                                     None))
        self.seq: Any = None
        self._parts: list[dict[str, Any]] = []

    def seq_base(self, entry_base: list[int]) -> None:
        """Each row's seq: its seq in its file plus its run's rows in earlier files."""
        import numpy as np
        import pyarrow as pa

        base = np.asarray(entry_base, dtype=np.int64)
        self.seq = pa.array(self.seq_local + base[self.run])
        for part in self._parts:
            part["seq"] = self.seq.slice(part["_start"], part["_stop"] - part["_start"])
            del part["_start"], part["_stop"]

    def part(self, start: int, stop: int) -> dict[str, Any]:
        """The columns of rows ``start:stop`` (``seq`` is filled in by :meth:`seq_base`)."""
        part: dict[str, Any] = {name: c.slice(start, stop - start)
                                for name, c in self.cols.items()}
        part["_start"], part["_stop"] = start, stop
        self._parts.append(part)
        return part
