"""Reading a file line by line: the session header, packed-row rules, envelope checks, and each
bad line's quarantine report; good lines are gathered as rows or packed members.
"""

from __future__ import annotations

import importlib
import itertools
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..._base.json import (
    _DIGITS_B,
    _LONG_B,
    HAVE_ORJSON,
    JSONDecodeError,
    JSONTooDeep,
    canonical_json,
    loads,
)
from ...errors import LoadError
from .._common import (
    Progress,
    compressed,
    is_epoch_ms,
    is_int64,
    unreadable,
)
from ._events import _decode_event, _int_or_none, _tokens_ok
from ._packed import PACKED_PREFIXES, PackedColumns, prove_packed
from ._shapes import _NO_RARE, _PACKED, _PACKED_TOP, _FileCtx, _Rows
from ._templates import ROW_PREFIXES, prove_rows

if HAVE_ORJSON:
    import orjson as _orjson

    def _dump(obj: Any) -> bytes | str:
        try:
            return _orjson.dumps(obj, option=_orjson.OPT_SORT_KEYS)
        except TypeError:  # an integer beyond 64 bits: written with every digit
            return canonical_json(obj).encode("utf-8")

else:  # pragma: no cover
    _dump = canonical_json


def _bad_json(raw: bytes, exc: Exception) -> tuple[str, str]:
    if isinstance(exc, JSONTooDeep):
        return "too_deep", f"is not accepted: {exc}"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        return "bad_utf8", f"is not valid UTF-8 ({bad.reason} at byte {bad.start})"
    if not isinstance(exc, json.JSONDecodeError):  # replaykit's own checks: NaN, long integers
        return "bad_json", f"is not valid JSON ({exc})"
    return "bad_json", "is not valid JSON (truncated or malformed line)"


def _shown(value: Any) -> str:
    """A header value for an error message, cut short: the message is repeated on every
    later line of a headerless file (a 40 MB ``type`` must not become 40 MB per line)."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text):,} characters)"


def _check_header(ctx: _FileCtx, obj: Any, lineno: int) -> LoadError | None:
    if not isinstance(obj, dict):
        return ctx.err(lineno, "missing_header", "line 1 must be the session header object "
                       '{"type": "session", "id": ...}, got a JSON ' + type(obj).__name__,
                       fix="Every toh log starts with its session header line.")
    if obj.get("type") != "session":
        return ctx.err(lineno, "missing_header",
                       "must be 'session' on line 1 (the session header), got "
                       f"{_shown(obj.get('type'))}",
                       field="type", fix="Every toh log starts with its session header line; "
                       "restore it or load the file with another format.")  # fmt: skip
    if not isinstance(obj.get("id"), str) or not obj["id"]:
        return ctx.err(lineno, "bad_header",
                       f"must be a non-empty string, got {_shown(obj.get('id'))}", field="id",
                       fix="The session header needs the session id.")
    ps = obj.get("parentSession")
    if ps is not None and not isinstance(ps, str):
        return ctx.err(lineno, "bad_header", f"must be a string, got {_shown(ps)}",
                       field="parentSession")
    sl = obj.get("seedLength")
    if sl is not None and (not is_int64(sl) or sl < 0):
        return ctx.err(lineno, "bad_header", f"must be an integer >= 0, got {_shown(sl)}",
                       field="seedLength")
    ca = obj.get("createdAt")
    if ca is not None and not is_epoch_ms(ca):
        return ctx.err(lineno, "bad_header", "must be epoch milliseconds (years 1 to 9999), "
                       f"got {_shown(ca)}", field="createdAt")
    return None


def _packed_problem(obj: dict, t: str) -> tuple[str, str] | None:
    """(field, rule) of the first packed-row rule ``obj`` breaks, or None when it is valid."""
    code, key, allowed = _PACKED[t]
    extra = obj.keys() - _PACKED_TOP
    if extra:
        return sorted(extra)[0], (f"packed row has unexpected top-level keys {sorted(extra)} "
                                  "(allowed: type, data, seq0, time0)")
    data = obj.get("data")
    if type(data) is not dict:
        return "data", "must be an object"
    if data.keys() != allowed:
        missing = sorted(allowed - data.keys())
        unexpected = sorted(data.keys() - allowed)
        return "data", f"must hold exactly {sorted(allowed)} (missing {missing}, unexpected " \
                       f"{unexpected})"
    members = data[key]
    if type(members) is not list or not members or set(map(type, members)) != {str}:
        return f"data.{key}", "must be a non-empty array of strings"
    dt = data["dt"]
    if type(dt) is not list or (dt and not set(map(type, dt)) <= {int}):
        return "data.dt", "must be an array of integer gaps (milliseconds)"
    if dt and not (is_int64(min(dt)) and is_int64(max(dt))):
        return "data.dt", "gaps must fit in 64 bits"
    if len(dt) != len(members) - 1:
        return "data.dt", (f"must have len({key}) - 1 = {len(members) - 1} entries, "
                           f"got {len(dt)}")
    for f in ("turn", "step", "index"):
        if _int_or_none(data[f]) is None:
            return f"data.{f}", f"must be an integer, got {data[f]!r}"
    if code == 2:
        for f in ("id", "name"):
            if type(data[f]) is not str:
                return f"data.{f}", f"must be a string, got {data[f]!r}"
    for f in ("seq0", "time0"):
        v = obj.get(f)
        if v is not None and (type(v) is not int or (f == "seq0" and v < 0)):
            return f, "must be an integer" + (" >= 0" if f == "seq0" else "") + f", got {v!r}"
    seq0 = obj.get("seq0")
    if seq0 is not None and not is_int64(seq0 + len(members) - 1):
        return "seq0", f"seq0 + members - 1 must fit in 64 bits, got seq0={seq0!r}"
    time0 = obj.get("time0")
    if time0 is not None:
        if not is_epoch_ms(time0):
            return "time0", f"must be epoch milliseconds (years 1 to 9999), got {time0!r}"
        if dt and not all(map(is_epoch_ms, itertools.accumulate(dt, initial=time0))):
            return "data.dt", "member times time0 + sum(gaps) must stay within years 1 to 9999"
    return None


#: prove lines column-wise where possible (False: every line is read row-wise, the reference
#: the column-wise reading is tested against)
COLUMNWISE = True


def _read_file(ctx: _FileCtx, acc: _Rows, prog: Progress) -> None:
    """Read one file into ``acc``; bad lines go to the file's quarantine.

    Packed rows and event lines of the frequent simple shapes, written in the harness's
    layout, are proven column-wise (:func:`prove_packed`, :func:`prove_rows`) on a second
    thread while this one decodes the other lines; then the lines are checked in order, the
    proven ones only for the file's envelope mode (they carry no seq).
    """
    try:
        with open(ctx.path, "rb") as fh:
            data = fh.read()
    except OSError as exc:  # the file's only row; the other files load
        ctx.quarantine.bad(unreadable(ctx.src, exc))
        return
    packed_err = compressed(ctx.src, data[:8])
    if packed_err is not None:
        ctx.quarantine.bad(packed_err)
        return
    if COLUMNWISE and _read_natively(ctx, data, acc):
        prog.update(len(data))
        return
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()  # the newline ending the last line
    long_ints = _LONG_B in data.translate(_DIGITS_B)  # else lines skip the per-line check
    found = _with_prefixes(data, len(lines), [*PACKED_PREFIXES, *ROW_PREFIXES]) \
        if COLUMNWISE else {}  # fmt: skip
    del data
    packed = sorted(i for pre in PACKED_PREFIXES for i in found.get(pre, ()))
    row_cand = {t: found[pre] for pre, t in ROW_PREFIXES.items() if found.get(pre)}
    if not packed and not row_cand:
        _scan(ctx, lines, [_TODO] * len(lines), long_ints, acc, prog, frozenset(), [])
        return

    pool = ThreadPoolExecutor(1)
    proof_f = pool.submit(prove_packed, lines, packed, True)
    pool.shutdown(wait=False)
    cands = set(packed)
    for c in row_cand.values():
        cands.update(c)
    pre = _predecode(lines, cands, long_ints)  # meanwhile, the other lines
    row_proofs = [r for r in (prove_rows(lines, c, t) for t, c in row_cand.items())
                  if r is not None]  # fmt: skip
    proof = proof_f.result()
    proven: set[int] = set()
    for part in ([proof] if proof is not None else []) + row_proofs:
        proven.update(part.line.tolist())
    used: list[int] = []
    _scan(ctx, lines, pre, long_ints, acc, prog, frozenset(proven), used)
    if not used:
        return
    used_a = np.asarray(used, dtype=np.int64)
    for part in ([proof] if proof is not None else []) + row_proofs:
        keep = np.flatnonzero(np.isin(part.line, used_a))
        if not len(keep):
            continue
        sel = part if len(keep) == len(part.line) else part.select(keep)
        sel.line = sel.line + 1  # line numbers are 1-based
        (acc.p_cols if isinstance(sel, PackedColumns) else acc.r_cols).append((ctx.fi, sel))


def _nativepath() -> Any:
    """The module ``_nativepath``, imported by name at run time (an import statement here
    reorders mypy's analysis of the package graph, which then misreads ``rk.compare`` and
    ``rk.replay`` in ``replaykit/__init__`` as the submodules of ``branch``)."""
    return importlib.import_module("replaykit.io.toh._nativepath")


def _read_natively(ctx: _FileCtx, data: bytes, acc: _Rows) -> bool:
    """Read the file's bytes with the native core (:func:`native_file`); False when the
    reference must read them (the core refused the file, or its header is invalid)."""
    got = _nativepath().native_file(data)
    if got is None:
        return False
    cols, head = got
    try:
        header = loads(head)
    except JSONDecodeError:  # pragma: no cover - the core validated the line
        return False
    if _check_header(ctx, header, 1) is not None:
        return False  # the reference reports it
    ctx.header = header
    acc.n_parts.append((ctx.fi, cols))
    return True


def _with_prefixes(data: bytes, n_lines: int, prefixes: list[bytes]) -> dict[bytes, list[int]]:
    """Indices of the lines (of ``data`` split at newlines) starting with each prefix, found
    column-wise: the bytes at each line start compared with numpy, one prefix byte at a time.
    """
    common = b'{"type":"'  # every prefix starts so
    assert all(p.startswith(common) for p in prefixes)
    longest = max(map(len, prefixes))
    buf = np.frombuffer(data + b"\n" * (longest + 1), dtype=np.uint8)
    starts = np.concatenate([[0], np.flatnonzero(buf[: len(data)] == 10) + 1])[:n_lines]
    lines = np.arange(n_lines)
    for j, byte in enumerate(common):
        keep = buf[starts + j] == byte
        starts, lines = starts[keep], lines[keep]
    out: dict[bytes, list[int]] = {}
    for p in prefixes:
        s, ln = starts, lines
        for j in range(len(common), len(p)):
            keep = buf[s + j] == p[j]
            s, ln = s[keep], ln[keep]
        out[p] = ln.tolist()
    return out


class _Failed:
    """A line's decoding error, kept to be raised where the line is checked."""

    __slots__ = ("exc",)

    def __init__(self, exc: Exception) -> None:
        self.exc = exc


_TODO: Any = object()  # a line not decoded beforehand


def _predecode(lines: list[bytes], skip: set[int], long_ints: bool) -> list[Any]:
    """Each line's decoded value (or :class:`_Failed`), except the lines in ``skip``."""
    out: list[Any] = [_TODO] * len(lines)
    for i, raw in enumerate(lines):
        if i in skip:
            continue
        if i == 0 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        try:
            out[i] = loads(raw, long_ints=long_ints)
        except JSONDecodeError as exc:
            out[i] = _Failed(exc)
    return out


def _scan(ctx: _FileCtx, lines: list[bytes], pre: list[Any], long_ints: bool, acc: _Rows,
          prog: Progress, proven: frozenset[int], used: list[int]) -> None:  # fmt: skip
    """The line-by-line reading of one file (``pre``: lines decoded beforehand); a line
    index in ``proven`` was proven column-wise: only its envelope is checked here, and its
    index is appended to ``used`` when it is kept."""
    q = ctx.quarantine
    fi = ctx.fi
    rows = acc.rows
    rows_append = rows.append
    rare_append = acc.rare.append
    header_line: int | None = None
    headless_reason: str | None = None
    # the reference forbids mixing projected lines (no seq envelope) and full persisted lines
    # (seq / packed seq0) in one file: the first event line sets the mode
    env_line: int | None = None
    env_full = False
    if True:
        last = 0
        for lineno, raw in enumerate(lines, start=1):
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]  # a UTF-8 byte order mark (as editors on Windows write)
            if lineno & 4095 == 0:
                prog.update(sum(map(len, lines[last:lineno])) + lineno - last)
                last = lineno
            if headless_reason is not None:
                if raw.strip():
                    q.bad(ctx.err(lineno, "no_header", f"cannot be loaded: {headless_reason}",
                                  fix="Fix the session header (line 1) of this file."),
                          raw.rstrip(b"\r\n"))  # fmt: skip
                continue
            if not env_full and header_line is not None and lineno - 1 in proven:
                # a proven packed row (no seq0): only the file's envelope mode is checked (a
                # mismatch is reported by the line-by-line code below)
                if env_line is None:
                    env_line = lineno
                used.append(lineno - 1)
                continue
            try:
                obj = pre[lineno - 1]
                if obj is _TODO:
                    obj = loads(raw, long_ints=long_ints)
                elif type(obj) is _Failed:
                    raise obj.exc
            except JSONDecodeError as exc:
                raw = raw.rstrip(b"\r\n")
                if not raw.strip():
                    continue  # blank lines are skipped (line numbers stay exact)
                reason, detail = _bad_json(raw, exc)
                err = ctx.err(lineno, reason, detail)
                if header_line is None:
                    headless_reason = f"its session header (line {lineno}) {detail}"
                else:
                    acc.phantoms.append((fi, lineno, 1))
                q.bad(err, raw)
                continue
            if header_line is None:
                herr = _check_header(ctx, obj, lineno)
                if herr is not None:
                    headless_reason = f"its header (line {lineno}) is invalid: {herr.detail}"
                    q.bad(herr, raw.rstrip(b"\r\n"))
                    continue
                header_line = lineno
                ctx.header = obj
                continue
            if type(obj) is not dict:
                acc.phantoms.append((fi, lineno, 1))
                q.bad(ctx.err(lineno, "not_object",
                              f"must be a JSON object (an event), got a JSON {type(obj).__name__}"),
                      raw.rstrip(b"\r\n"))
                continue
            t = obj.get("type")
            if type(t) is not str or not t:
                acc.phantoms.append((fi, lineno, 1))
                q.bad(ctx.err(lineno, "missing_type", f"must be a non-empty string, got {t!r}",
                              field="type"), raw.rstrip(b"\r\n"))
                continue
            if t in _PACKED:
                problem = _packed_problem(obj, t)
                if problem is not None:
                    d = obj.get("data")
                    mem = d.get(_PACKED[t][1]) if type(d) is dict else None
                    acc.phantoms.append((fi, lineno, len(mem) if type(mem) is list and mem else 1))
                    q.bad(ctx.err(lineno, "bad_packed_row", f"{problem[1]} ({t} row)",
                                  field=problem[0]), raw.rstrip(b"\r\n"))
                    continue
                full = obj.get("seq0") is not None
                if env_line is None:
                    env_line, env_full = lineno, full
                elif full != env_full:
                    acc.phantoms.append((fi, lineno, len(obj["data"][_PACKED[t][1]])))
                    q.bad(_mixed(ctx, lineno, env_line, env_full, "seq0"), raw.rstrip(b"\r\n"))
                    continue
                _add_packed(acc, fi, lineno, t, obj)
                continue
            seq = obj.get("seq")
            if seq is not None and (not is_int64(seq) or seq < 0):
                acc.phantoms.append((fi, lineno, 1))
                q.bad(ctx.err(lineno, "bad_seq", f"must be an integer >= 0, got {seq!r}",
                              field="seq"), raw.rstrip(b"\r\n"))
                continue
            tm = obj.get("time")
            if tm is not None and not is_epoch_ms(tm):
                acc.phantoms.append((fi, lineno, 1))
                q.bad(ctx.err(lineno, "bad_time", "must be epoch milliseconds (years 1 to 9999), "
                              f"got {tm!r}", field="time"), raw.rstrip(b"\r\n"))
                continue
            if env_line is None:
                env_line, env_full = lineno, seq is not None
            elif (seq is not None) != env_full:
                acc.phantoms.append((fi, lineno, 1))
                q.bad(_mixed(ctx, lineno, env_line, env_full, "seq"), raw.rstrip(b"\r\n"))
                continue
            turn, step, ctype, text, rare = _decode_event(obj, t)
            if rare is not None and not (_tokens_ok(rare[6]) and _tokens_ok(rare[7])):
                acc.phantoms.append((fi, lineno, 1))
                q.bad(ctx.err(lineno, "bad_tokens", "must be integers that fit in 64 bits, got "
                              f"{rare[6]!r}, {rare[7]!r}", field="data.chunk.usage"),
                      raw.rstrip(b"\r\n"))
                continue
            if rare is not None or seq is not None or tm is not None:
                rare_append((len(rows), seq, tm) + (rare or _NO_RARE))
            rows_append((fi, lineno, t, _dump(obj), turn, step, ctype, text))
        prog.update(sum(map(len, lines[last:])) + len(lines) - last)
    if header_line is None and headless_reason is None:
        q.bad(ctx.err(None, "empty_file", "holds no lines (a toh log starts with its session "
                      "header)", fix="Remove the empty file or restore its content."))


def _mixed(ctx: _FileCtx, lineno: int, env_line: int, env_full: bool, key: str) -> LoadError:
    """The error for a line whose envelope (seq or none) differs from the file's first event."""
    if env_full:
        detail = (f"has no {key}, but line {env_line} carries a seq envelope: a log is either "
                  "all full persisted lines or all projected lines")
    else:
        detail = (f"carries a {key}, but line {env_line} has none: a log is either all full "
                  "persisted lines or all projected lines")
    return ctx.err(lineno, "mixed_envelope", detail, field=key,
                   fix="Re-export the log with one line shape (drop every seq/time envelope, or "
                   "keep them on every line); replaykit does not guess an order between them.")


def _add_packed(acc: _Rows, fi: int, lineno: int, t: str, obj: dict) -> None:
    code, key, _ = _PACKED[t]
    data = obj["data"]
    members = data[key]
    tc_id = tc_name = ""
    if code == 2:
        tc_id = canonical_json(data["id"])
        tc_name = canonical_json(data["name"])
    acc.p_meta.append((fi, lineno, code, data["turn"], data["step"], data["index"],
                       obj.get("seq0"), obj.get("time0"), len(members), tc_id, tc_name))
    acc.p_texts.extend(members)
    acc.p_dt.append(0)
    acc.p_dt.extend(data["dt"])
