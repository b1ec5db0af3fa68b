"""Shared plumbing of the record-shaped loaders (coding-agent transcripts, tracing exports).

These formats are read one record at a time (a JSONL line, a JSON array item, a CSV or Parquet
row) into row dicts; :func:`rows_to_log` turns the row dicts of every file into one canonical
:class:`~replaykit.EventLog` column by column. Bad records go to the loader's
:class:`~replaykit.io._common.Quarantine` (or raise) with a reason naming file, line and field.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC
from pathlib import Path
from typing import Any

import pyarrow as pa

from .._base.json import (
    JSONDecodeError,
    JSONLoneSurrogate,
    JSONTooDeep,
    args_hash,
    canonical_json,
    loads,
    lone_surrogate_line,
)
from ..errors import LoadError
from ..eventlog.log import RUNS_SCHEMA, EventLog
from ..schema import empty_events, events_table
from ._common import UNEXPECTED, Quarantine, compressed, is_int64, iter_lines, unreadable

__all__ = ["Row", "arrays_to_log", "bad", "decode_json", "first_line", "guard", "head_text",
           "json_lines", "jsonl_head", "line_error", "payload_of", "raw_of", "row_arrays",
           "rows_to_log", "text_of", "tool_rows"]

Row = dict[str, Any]

_ROW_COLUMNS = ("run_id", "parent_run_id", "seq", "type", "kind", "turn", "step", "event_id",
                "ref_id", "tool_name", "args_hash", "is_error", "finish", "input_tokens",
                "output_tokens", "chunk_type", "text", "payload", "source", "source_line")


_NOT_JSON: tuple[type[BaseException], ...] = (*JSONDecodeError, ValueError, RecursionError)

_STR_COLUMNS = ("run_id", "parent_run_id", "type", "kind", "event_id", "ref_id", "tool_name",
                "args_hash", "finish", "chunk_type", "text", "payload", "source")


def _as_text(v: Any) -> str | None:
    try:
        return canonical_json(v)
    except (JSONTooDeep, TypeError, ValueError):
        return None


def bad(fmt: str, path: Path | str, line: int | None, reason: str, detail: str, *,
        field: str | None = None, fix: str | None = None) -> LoadError:
    """A LoadError of format ``fmt`` naming the file, line and field, with a fix."""
    return LoadError(source=str(path), line=line, field=field, reason=reason,
                     detail=detail,
                     fix=fix or f'Fix or remove that record of the {fmt} file, or pass '
                                'errors="quarantine" to load the other records.')


def head_text(path: Path, n: int = 8192) -> bytes | None:
    """The first ``n`` bytes of ``path`` (None when it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(n)
    except OSError:
        return None


def first_line(head: bytes) -> tuple[bytes, dict[str, Any] | None] | None:
    r"""The first non-blank line of a JSON Lines file's head (a byte-order mark skipped) and
    the object it holds: None for the object when the line is not one (not JSON, cut short
    by the head read, or another JSON value); None when the head holds no line at all.

    For the transcript readers' ``sniff``, which look at line 1 only.

    Example:
        >>> first_line(b'\n{"type": "user"}\n{"type": "assistant"}')
        (b'{"type": "user"}', {'type': 'user'})
        >>> first_line(b'{"type": "us'), first_line(b"  \n")
        ((b'{"type": "us', None), None)
    """
    for raw in head.lstrip(b"\xef\xbb\xbf").split(b"\n"):
        if not raw.strip():
            continue
        try:
            doc = json.loads(raw)
        except (ValueError, RecursionError):
            return raw, None
        return raw, doc if isinstance(doc, dict) else None
    return None


def jsonl_head(path: Path | str) -> tuple[bytes, tuple[bytes, dict[str, Any] | None] | None] | str:
    """The head (64 KiB) of a ``.jsonl`` file and its line 1 (:func:`first_line`), or why
    the file is not looked at: its extension is not ``.jsonl``, or it cannot be read. For the
    transcript readers' ``sniff``.

    Example:
        >>> jsonl_head("notes.txt")
        "extension '.txt' is not .jsonl"
    """
    p = Path(path)
    if p.suffix.lower() != ".jsonl":
        return f"extension {p.suffix or '(none)'!r} is not .jsonl"
    head = head_text(p, 1 << 16)
    if head is None:
        return "cannot be read"
    return head, first_line(head)


def json_lines(path: Path, fmt: str, quarantine: Quarantine
               ) -> Iterator[tuple[int, bytes, dict[str, Any]]]:
    """``(line number, raw bytes, object)`` for each JSON-object line of a JSONL file.

    Blank lines are skipped; a line that is not JSON (``bad_json``), not an object
    (``not_object``) or not UTF-8 (``bad_encoding``) goes to ``quarantine`` with its reason.
    A file the OS will not read, or a compressed one, is one bad record (``unreadable`` /
    ``compressed``).
    """
    head = head_text(path, 8)
    if head is not None:
        packed = compressed(str(path), head)
        if packed is not None:
            quarantine.bad(packed)
            return
    try:
        for lineno, raw in iter_lines(path):
            if not raw.strip():
                continue
            try:
                doc = decode_json(raw, fmt, path, lineno)
            except LoadError as exc:
                quarantine.bad(exc, raw)
                continue
            if not isinstance(doc, dict):
                quarantine.bad(bad(fmt, path, lineno, "not_object",
                                   f"is a JSON {type(doc).__name__}, not an object"), raw)
                continue
            yield lineno, raw, doc
    except OSError as exc:
        quarantine.bad(unreadable(str(path), exc))


def decode_json(raw: bytes | str, fmt: str, path: Path | str, line: int | None) -> Any:
    """Strict JSON decoding (:func:`replaykit._base.json.loads`) with the loaders' reasons:
    ``bad_encoding`` (not UTF-8), ``too_deep``, ``bad_json`` (also an unpaired surrogate
    escape, as for every loader)."""
    try:
        if isinstance(raw, bytes):
            raw.decode("utf-8")
        return loads(raw)
    except UnicodeDecodeError:
        raise bad(fmt, path, line, "bad_encoding", "is not UTF-8 text") from None
    except JSONTooDeep as exc:
        raise bad(fmt, path, line, "too_deep", str(exc)) from None
    except JSONLoneSurrogate as exc:
        raise bad(fmt, path, line, "bad_json", str(exc)) from None
    except _NOT_JSON as exc:
        text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
        if lone_surrogate_line(text) is not None:  # orjson says only "invalid"
            raise bad(fmt, path, line, "bad_json", "a string holds an unpaired UTF-16 "
                      "surrogate escape (\\ud800-\\udfff without its pair), which is not "
                      "Unicode text") from None
        if "depth limit" in str(exc) or "recursion" in str(exc).lower():  # orjson's limit
            raise bad(fmt, path, line, "too_deep", "is nested too deep to decode") from None
        raise bad(fmt, path, line, "bad_json", f"is not valid JSON ({str(exc)[:120]})"
                  ) from None


def line_error(exc: BaseException, fmt: str, path: Path | str, line: int | None) -> LoadError:
    """The LoadError for an error no specific check caught while mapping one record: nesting
    too deep for the JSON encoder (``too_deep``), else ``unexpected_input`` (the narrow last
    guard of :func:`replaykit.io._common.unexpected_input`, per record)."""
    if isinstance(exc, (JSONTooDeep, RecursionError)):
        return bad(fmt, path, line, "too_deep", "nests too deep to encode as JSON")
    return bad(fmt, path, line, "unexpected_input",
               f"could not be mapped: {type(exc).__name__}: {str(exc)[:200]}",
               fix="This record hits a case replaykit does not check yet; please report it. "
                   'Pass errors="quarantine" to load the other records.')


def _json_default(v: Any) -> Any:
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return str(v)


def raw_of(raw: str | bytes | None, rec: dict[str, Any]) -> str | bytes | None:
    """The raw text of a record for a quarantine row: the line as read, or (for CSV / Parquet
    rows, read without one) the record as JSON."""
    if raw is not None:
        return raw
    try:
        return json.dumps(rec, default=_json_default)
    except (TypeError, ValueError, RecursionError):
        return None


class guard:  # noqa: N801 - used as a statement: ``with guard(...):``
    """One record mapped whole or quarantined whole: the readers' per-record guard.

    ``with guard(quarantine, fmt, path, line, raw):`` around the mapping of one record (a
    transcript line, an export's run / observation / span): a :class:`LoadError` it raises (a
    specific check), or an error of :data:`~replaykit.io._common.UNEXPECTED` (the last-resort
    guard: :func:`line_error`), becomes one quarantine row with the record's raw text (under
    ``errors="raise"`` the LoadError is raised) and the reading goes on with the next record.
    ``rec``: the record, whose JSON is the raw text when ``raw`` is None (CSV / Parquet rows;
    encoded only when the record goes bad). ``undo``: called first, to take back what the
    record's mapping changed (counters, rows already made), so a bad record leaves no trace.

    Example:
        >>> q = Quarantine("quarantine")
        >>> with guard(q, "demo", "f.jsonl", 3, b"{}"):
        ...     raise KeyError("type")
        >>> q.rows[0]["reason"], q.rows[0]["line"]
        ('unexpected_input', 3)

    Raises:
        LoadError: under ``errors="raise"``, the record's error (:meth:`Quarantine.bad`).
    """

    __slots__ = ("fmt", "line", "path", "quarantine", "raw", "rec", "undo")

    def __init__(self, quarantine: Quarantine, fmt: str, path: Path | str, line: int | None,
                 raw: str | bytes | None, rec: dict[str, Any] | None = None,
                 undo: Callable[[], object] | None = None) -> None:
        self.quarantine, self.fmt, self.path, self.line = quarantine, fmt, path, line
        self.raw, self.rec, self.undo = raw, rec, undo

    def __enter__(self) -> guard:
        return self

    def __exit__(self, typ: type[BaseException] | None, exc: BaseException | None,
                 tb: object) -> bool:
        if exc is None:
            return False
        if isinstance(exc, LoadError):
            err = exc
        elif isinstance(exc, UNEXPECTED):  # a last-resort guard; specific checks come first
            err = line_error(exc, self.fmt, self.path, self.line)
        else:
            return False
        if self.undo is not None:
            self.undo()
        raw = self.raw if self.rec is None else raw_of(self.raw, self.rec)
        self.quarantine.bad(err, raw)
        return True


def payload_of(doc: Any, fmt: str, path: Path, line: int | None) -> str:
    """The canonical JSON text of ``doc`` (raises ``too_deep`` when it nests too deep)."""
    try:
        return canonical_json(doc)
    except JSONTooDeep as exc:
        raise bad(fmt, path, line, "too_deep", str(exc)) from None
    except (TypeError, ValueError) as exc:
        raise bad(fmt, path, line, "bad_value", f"holds a value JSON cannot encode ({exc})"
                  ) from None


def tool_rows(base: Row, ref: str | None, name: str | None, args: Any, *, step: int | None,
              payload: str, result: dict[str, Any], ended: str | None, text: str | None,
              fmt: str, path: Path, line: int | None) -> list[Row]:
    """The two rows of one recorded tool execution (a platform export's tool span or run):
    its ``tool_call`` (``args``, None read as ``{}``: ``args_hash`` and canonical JSON text;
    ``payload``: the record's) and its ``tool_result`` (at ``ended``, else the call's time;
    ``text``; its payload the ``result`` document). Both take ``base``'s columns, share
    ``ref_id`` and ``tool_name``, and sit at ``step``; the result has no event id of its own.

    Raises:
        LoadError: ``too_deep`` / ``bad_value`` when ``result`` cannot be encoded as JSON.
    """
    args = args if args is not None else {}
    return [{**base, "kind": "tool_call", "ref_id": ref, "tool_name": name, "step": step,
             "is_error": False, "args_hash": args_hash(args), "text": canonical_json(args),
             "payload": payload},
            {**base, "kind": "tool_result", "ref_id": ref, "tool_name": name, "step": step,
             "event_id": None, "ts": ended or base["ts"], "text": text,
             "payload": payload_of(result, fmt, path, line)}]


def text_of(content: Any) -> str | None:
    """A message / result content as text: strings as is, the text of content parts joined."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for p in content:
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, dict):
                t = p.get("text")
                if t is None:
                    t = p.get("thinking") if isinstance(p.get("thinking"), str) else None
                if isinstance(t, str):
                    parts.append(t)
        return "".join(parts)
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    try:
        return canonical_json(content)
    except (JSONTooDeep, TypeError, ValueError):
        return None


def tokens(value: Any, fmt: str, path: Path, line: int | None, field: str) -> int | None:
    """A token count: None when absent; an int that fits 64 bits; else ``bad_tokens``."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not is_int64(value) or value < 0:
        raise bad(fmt, path, line, "bad_tokens",
                  f"has a token count that is not a non-negative 64-bit integer: {value!r}",
                  field=field)
    return int(value)


def _timestamps(values: Any) -> pa.Array:
    import pandas as pd

    from ._common import times_in_years

    if isinstance(values, pd.Series):  # text or None already (arrays_to_log)
        ser = values.astype("object")
    else:
        ser = pd.Series([v if isinstance(v, str) else None for v in values], dtype="object")
    parsed = pd.to_datetime(ser, utc=True, format="ISO8601", errors="coerce")
    arr = pa.array(parsed.dt.as_unit("us"), type=pa.timestamp("us", tz="UTC"))
    return times_in_years(arr)[0]


def epoch_to_iso(v: Any) -> Any:
    """Epoch seconds / milliseconds / nanoseconds (by magnitude) as ISO text; text as is."""
    from datetime import datetime

    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return v
    x = float(v)
    if abs(x) > 1e17:
        x /= 1e9
    elif abs(x) > 1e11:
        x /= 1e3
    try:
        return datetime.fromtimestamp(x, tz=UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


def rows_to_log(rows: list[Row], runs: list[dict[str, Any]], tenant: str,
                quarantine: Quarantine) -> EventLog:
    """One EventLog from row dicts (any order within a run: ``seq`` orders them) and run
    headers (``run_id``, ``parent_run_id``, ``format``, ``source``, ``created_at``, ``attrs``
    as a dict). Rows hold ``ts`` as ISO text (or None)."""
    runs_table = _runs_table(runs, tenant)
    if not rows:
        return EventLog(empty_events(), runs=runs_table,
                        quarantine=quarantine.table(runs_table))
    cols = _row_lists(rows)
    cols["tenant_id"] = pa.array([tenant] * len(rows), pa.string()).dictionary_encode()
    cols["ts"] = _timestamps([r.get("ts") for r in rows])
    table = events_table(cols)
    return EventLog(table, runs=runs_table, quarantine=quarantine.table(runs_table))


def _row_lists(rows: list[Row]) -> dict[str, Any]:
    """The row dicts' values column by column, as :func:`rows_to_log` keeps them."""
    cols: dict[str, Any] = {name: [r.get(name) for r in rows] for name in _ROW_COLUMNS}
    for name in _STR_COLUMNS:  # ids a source spells as numbers are kept as their text
        cols[name] = [v if v is None or isinstance(v, str) else _as_text(v)
                      for v in cols[name]]
    for name in ("turn", "step"):
        cols[name] = [v if type(v) is int and 0 <= v < 2**31 else None for v in cols[name]]
    cols["is_error"] = [bool(v) for v in cols["is_error"]]
    return cols


def _value_type(name: str) -> pa.DataType:
    """The Arrow type a row column is gathered in before :func:`events_table` casts it (a
    dictionary column's value type)."""
    from ..schema import EVENTS_SCHEMA

    t = EVENTS_SCHEMA.field(name).type
    return pa.string() if pa.types.is_dictionary(t) else t


def row_arrays(rows: list[Row]) -> dict[str, pa.Array]:
    """Row dicts as the Arrow columns :func:`arrays_to_log` joins (``ts`` as ISO text): the
    same values :func:`rows_to_log` would build from them."""
    cols = _row_lists(rows)
    out = {name: pa.array(cols[name], type=_value_type(name)) for name in _ROW_COLUMNS}
    out["ts"] = pa.array([r.get("ts") if isinstance(r.get("ts"), str) else None for r in rows],
                         pa.string())
    return out


def arrays_to_log(parts: list[dict[str, Any]], runs: list[dict[str, Any]], tenant: str,
                  quarantine: Quarantine) -> EventLog:
    """One EventLog from parts of rows already in columns (:func:`row_arrays`, or a native
    scanner's columns of the same names and types), in file order: the same table
    :func:`rows_to_log` makes from the same rows as dicts."""
    runs_table = _runs_table(runs, tenant)
    n = sum(len(p["seq"]) for p in parts)
    if not n:
        return EventLog(empty_events(), runs=runs_table,
                        quarantine=quarantine.table(runs_table))
    cols: dict[str, Any] = {}
    for name in (*_ROW_COLUMNS, "ts"):
        typ = pa.string() if name == "ts" else _value_type(name)
        chunks = [p[name] if p[name].type == typ else p[name].cast(typ) for p in parts]
        cols[name] = pa.concat_arrays(chunks)
    ts = cols.pop("ts")
    cols["tenant_id"] = pa.array([tenant] * n, pa.string()).dictionary_encode()
    cols["ts"] = _timestamps(ts.to_pandas())
    table = events_table(cols)
    return EventLog(table, runs=runs_table, quarantine=quarantine.table(runs_table))


def _runs_table(runs: list[dict[str, Any]], tenant: str) -> pa.Table:
    if not runs:
        return RUNS_SCHEMA.empty_table()
    seen: dict[str, dict[str, Any]] = {}
    for r in runs:  # one header per run: the first file's
        seen.setdefault(r["run_id"], r)
    runs = list(seen.values())
    cols: dict[str, Any] = {
        "tenant_id": [tenant] * len(runs),
        "run_id": [r["run_id"] for r in runs],
        "parent_run_id": [r.get("parent_run_id") for r in runs],
        "format": [r["format"] for r in runs],
        "source": [r.get("source") for r in runs],
        "created_at": _timestamps([r.get("created_at") for r in runs]),
        "attrs": [canonical_json(r.get("attrs") or {}) for r in runs],
    }
    return pa.table(cols, schema=RUNS_SCHEMA)
